#!/usr/bin/env bash
# The real-GPU cross-check of issue 12: gpuwatt's region energies against NVML's energy
# counter logged by an independent poller. On the GPU machine, from the repository root,
# with the binary built elsewhere by
# `CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt` and python3 with
# torch and pynvml there:
#
#   bash bench/gpu/crosscheck.sh OUTDIR
#
# 1. starts bench/gpu/energy_poller.py (NVML's energy counter, as fast as it reads, to
#    OUTDIR/poller.csv) and waits for its first reading;
# 2. `gpuwatt measure --out OUTDIR/measure -- python3 bench/load/bursts.py ...`: bf16 matmul
#    bursts of 0.05-3 s between idle gaps, their wall-clock times to OUTDIR/bursts.jsonl;
# 3. stops the poller a second after measure ends;
# 4. bench/gpu/crosscheck.py: every burst's counter-aligned reference window against each
#    power channel's corrected energy (gpuwatt energy --method inversion) and gpuwatt's
#    default estimate: OUTDIR/crosscheck.{json,md};
# 5. OUTDIR/README.md: the command, gpuwatt's version, the driver, the GPU's name and UUID,
#    the date, then the tables.
#
# Environment: GPUWATT (the binary, default .gpu/gpuwatt), GPU (NVML index, default 0),
# BURSTS_ARGS (more arguments for bursts.py, e.g. "--repeats 5 --gap 2.5"), SENSOR (passed to
# gpuwatt energy --sensor, e.g. a sensor.json from `gpuwatt sensor`; default its auto), PAD
# (seconds of idle either side of a burst, default 0.15), CHANNELS (measure's --channels:
# default all, every channel; CHANNELS=default is measure's lean default, the sample ring
# and the counter: issue 35's check that its figures do not move). About 80 s of GPU time
# with the defaults (21 bursts), then a minute of analysis.
set -u
OUT=${1:?usage: crosscheck.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
GPU=${GPU:-0}
PAD=${PAD:-0.15}
BURSTS_ARGS=${BURSTS_ARGS:-}
SENSOR=${SENSOR:-}
CHANNELS=${CHANNELS:-all}
if [ ! -x "$B" ]; then
  echo "crosscheck.sh: no gpuwatt binary at $B (build it: CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt)" >&2
  exit 2
fi
if [ -e "$OUT/measure" ]; then
  echo "crosscheck.sh: $OUT/measure exists: give a new OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT" || exit 2
for m in torch pynvml; do
  python3 -c "import $m" 2>/dev/null || { echo "crosscheck.sh: python3 has no $m" >&2; exit 2; }
done

DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
{ echo "date: $DATE"; "$B" version; nvidia-smi; } >"$OUT/env.txt" 2>&1
"$B" devices --json >"$OUT/devices.json" 2>"$OUT/devices-stderr.txt"
nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv >"$OUT/nvidia-smi.csv" 2>&1

lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
python3 bench/gpu/energy_poller.py --gpu "$GPU" --out "$OUT/poller.csv" 2>"$OUT/poller-stderr.txt" &
POLLER=$!
for _ in $(seq 300); do  # up to 30 s for pynvml to load and the first reading to land
  [ "$(lines "$OUT/poller.csv")" -ge 2 ] && break
  kill -0 "$POLLER" 2>/dev/null || break
  sleep 0.1
done
if ! kill -0 "$POLLER" 2>/dev/null || [ "$(lines "$OUT/poller.csv")" -lt 2 ]; then
  echo "crosscheck.sh: the poller did not start:" >&2
  cat "$OUT/poller-stderr.txt" >&2
  kill "$POLLER" 2>/dev/null
  exit 1
fi
sleep 1

# CUDA numbers GPUs fastest first unless told; in PCI order its index is NVML's.
# shellcheck disable=SC2086
MCMD=("$B" measure --channels "$CHANNELS" --gpu "$GPU" --out "$OUT/measure" -- env CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES="$GPU"
  python3 bench/load/bursts.py --out "$OUT/bursts.jsonl" $BURSTS_ARGS)
S=$(date +%s)
"${MCMD[@]}" >"$OUT/measure.txt" 2>"$OUT/measure-stderr.txt"
MRC=$?
echo "measure: exit $MRC after $(( $(date +%s) - S )) s" | tee "$OUT/steps.txt"
sleep 1
kill -INT "$POLLER"
wait "$POLLER"
echo "poller: exit $?" | tee -a "$OUT/steps.txt"

S=$(date +%s)
# shellcheck disable=SC2086
CCMD=(python3 bench/gpu/crosscheck.py "$OUT/measure" "$OUT/poller.csv" "$OUT/bursts.jsonl" --gpuwatt "$B"
  --gpu "$GPU" --pad "$PAD" --out "$OUT" ${SENSOR:+--sensor "$SENSOR"})
"${CCMD[@]}" >/dev/null 2>"$OUT/crosscheck-stderr.txt"
CRC=$?
echo "crosscheck: exit $CRC after $(( $(date +%s) - S )) s" | tee -a "$OUT/steps.txt"

# The README: what ran where, then the tables.
GPU="$GPU" BURSTS_ARGS="$BURSTS_ARGS" SENSOR="$SENSOR" CHANNELS="$CHANNELS" \
  python3 - "$OUT" "$DATE" "$MRC" "$CRC" "${MCMD[*]}" "${CCMD[*]}" <<'EOF' >"$OUT/README.md"
import csv, json, os, sys
out, date, mrc, crc, mcmd, ccmd = sys.argv[1:7]
def read(p, default=""):
    try:
        return open(os.path.join(out, p)).read()
    except OSError:
        return default
version = next((l for l in read("env.txt").splitlines() if l.startswith("gpuwatt")), "?")
gpu, driver = {}, "?"
try:
    d = json.loads(read("devices.json", "{}"))
    driver = d.get("driver_version", "?")
    idx = int(os.environ.get("GPU", "0"))
    gpu = next((g for g in d.get("gpus", []) if g.get("index") == idx), {})
except ValueError:
    pass
if not gpu:  # gpuwatt could not say: nvidia-smi's line
    rows = list(csv.reader(read("nvidia-smi.csv").splitlines()))
    for r in rows[1:]:
        if r and r[0].strip() == os.environ.get("GPU", "0"):
            gpu = {"name": r[1].strip(), "uuid": r[2].strip()}
            driver = r[3].strip()
print(f"# Cross-check: gpuwatt's region energies against an independent poller of NVML's energy counter\n")
print(f"- date: {date}")
print(f"- GPU: {gpu.get('name', '?')} ({gpu.get('uuid', '?')}), driver {driver}")
print(f"- gpuwatt: {version}")
print(f"- command: `bash bench/gpu/crosscheck.sh {out}` (GPU={os.environ.get('GPU', '0')}"
      f"{', BURSTS_ARGS=' + os.environ['BURSTS_ARGS'] if os.environ.get('BURSTS_ARGS') else ''}"
      f"{', SENSOR=' + os.environ['SENSOR'] if os.environ.get('SENSOR') else ''}"
      f"{', CHANNELS=' + os.environ['CHANNELS'] if os.environ.get('CHANNELS', 'all') != 'all' else ''}), which ran")
print(f"  - `{mcmd}` (exit {mrc}) while `python3 bench/gpu/energy_poller.py` logged the counter,")
print(f"  - `{ccmd}` (exit {crc}).")
bursts = [l for l in read("bursts.jsonl").splitlines() if l.strip()]
said = next((l for l in (read("measure.txt") + read("measure-stderr.txt")).splitlines() if l.startswith("bursts:")), "?")
print(f"- {len(bursts)} bursts; the workload said: {said}")
print("- How to read the tables: docs/energy.md, \"Cross-check against an independent poller\".\n")
print(read("crosscheck.md", "(no crosscheck.md: see crosscheck-stderr.txt)\n"))
EOF
echo "wrote $OUT/README.md"
exit $(( MRC != 0 || CRC != 0 ))
