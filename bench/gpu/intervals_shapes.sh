#!/usr/bin/env bash
# Issue 28 on a real GPU: the load shapes of the issue (compute and memory bursts, 80/100/200 ms
# square waves locked in phase, 20 ms too (the ring's period), a ramp in 20 ms slots (locked to
# the ring) and one in 13 ms slots (locked to nothing), back-to-back regions) against NVML's energy counter
# logged by an independent poller, for gpuwatt's default and every channel, by --method
# inversion and by name alone (`energy --channel C`, its headline), on windows padded into
# idle (the shapes: 0.2-3 s) and 0.5 s windows inside the loads. On the GPU machine, from the
# repository root, with the binary at .gpu/gpuwatt and python3 with torch and pynvml:
#
#   bash bench/gpu/intervals_shapes.sh OUTDIR
#
# Needs one GPU (GPU=N picks it, default 0); works on an H100 and an H200.
# Time budget: about 138 s of load (ROUNDS=3 rounds of 11 shapes, bench/load/shapes.py --dry-run
# --rounds 3 says 137.4 s), 10 s of start-up, 5-20 s of analysis (gpuwatt energy per window and
# channel, 8 at a time): <= 180 s wall, well inside 300 s (the 2026-11-28 run of 2 rounds took
# 111 s in all on an H200).
#
# 1. bench/gpu/energy_poller.py logs the counter (OUTDIR/poller.csv);
# 2. gpuwatt measure --out OUTDIR/measure -- python3 bench/load/shapes.py --out OUTDIR/shapes.jsonl;
# 3. bench/gpu/crosscheck.py --named: every window against every channel (crosscheck.{json,md});
# 4. bench/gpu/intervals_table.py: the issue's table and checks (intervals.{json,md});
# 5. OUTDIR/README.md: the command lines, gpuwatt's version, driver, GPU name and UUID, date.
#
# Environment: GPUWATT (default .gpu/gpuwatt), GPU (default 0), ROUNDS (rounds of every shape,
# default 3: 27 windows of 2 s and more), SHAPES_ARGS (more arguments for shapes.py, e.g. "--seed 2"), SENSOR (gpuwatt energy --sensor; default auto), JOBS
# (gpuwatt energy runs at a time, default 8), COUNTER_EVERY (e.g. 100ms: measure reads the
# energy counter that often, `measure --counter-every`, beside the independent poller; the
# recording then holds a dense counter that a test can thin to the default's spacing: issue
# 28's run -7; default: unset, measure's lean default). The analysis can be re-run anywhere on the
# recorded files with another binary: python3 bench/gpu/crosscheck.py OUTDIR/measure
# OUTDIR/poller.csv OUTDIR/shapes.jsonl --named --gpuwatt PATH --out DIR.
set -u
OUT=${1:?usage: intervals_shapes.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
GPU=${GPU:-0}
JOBS=${JOBS:-8}
SHAPES_ARGS=${SHAPES_ARGS:-}
ROUNDS=${ROUNDS:-3}
SENSOR=${SENSOR:-}
COUNTER_EVERY=${COUNTER_EVERY:-}
if [ ! -x "$B" ]; then
  echo "intervals_shapes.sh: no gpuwatt binary at $B (build it: CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt)" >&2
  exit 2
fi
if [ -e "$OUT/measure" ]; then
  echo "intervals_shapes.sh: $OUT/measure exists: give a new OUTDIR" >&2
  exit 2
fi
mkdir -p "$OUT" || exit 2
for m in torch pynvml; do
  python3 -c "import $m" 2>/dev/null || { echo "intervals_shapes.sh: python3 has no $m" >&2; exit 2; }
done
T_ALL=$(date +%s)
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
  echo "intervals_shapes.sh: the poller did not start:" >&2
  cat "$OUT/poller-stderr.txt" >&2
  kill "$POLLER" 2>/dev/null
  exit 1
fi
sleep 1

# CUDA numbers GPUs fastest first unless told; in PCI order its index is NVML's.
# shellcheck disable=SC2086
MCMD=("$B" measure --channels all --gpu "$GPU" ${COUNTER_EVERY:+--counter-every "$COUNTER_EVERY"} --out "$OUT/measure" -- env CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES="$GPU"
  python3 bench/load/shapes.py --out "$OUT/shapes.jsonl" --rounds "$ROUNDS" $SHAPES_ARGS)
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
CCMD=(python3 bench/gpu/crosscheck.py "$OUT/measure" "$OUT/poller.csv" "$OUT/shapes.jsonl" --gpuwatt "$B"
  --gpu "$GPU" --pad 0.15 --named --jobs "$JOBS" --out "$OUT" ${SENSOR:+--sensor "$SENSOR"})
"${CCMD[@]}" >/dev/null 2>"$OUT/crosscheck-stderr.txt"
CRC=$?
echo "crosscheck: exit $CRC after $(( $(date +%s) - S )) s" | tee -a "$OUT/steps.txt"
TCMD=(python3 bench/gpu/intervals_table.py "$OUT/crosscheck.json" --out "$OUT")
"${TCMD[@]}" >/dev/null 2>"$OUT/intervals-stderr.txt"
TRC=$?
echo "intervals_table: exit $TRC; all steps $(( $(date +%s) - T_ALL )) s" | tee -a "$OUT/steps.txt"

# The README: what ran where, then the tables.
GPU="$GPU" SHAPES_ARGS="$SHAPES_ARGS" SENSOR="$SENSOR" COUNTER_EVERY="$COUNTER_EVERY" \
  python3 - "$OUT" "$DATE" "$MRC" "$CRC" "${MCMD[*]}" "${CCMD[*]}" "${TCMD[*]}" <<'EOF' >"$OUT/README.md"
import csv, json, os, sys
out, date, mrc, crc, mcmd, ccmd, tcmd = sys.argv[1:8]
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
print(f"# Issue 28's shapes: gpuwatt's region energies and intervals against an independent poller of NVML's energy counter\n")
print(f"- date: {date}")
print(f"- GPU: {gpu.get('name', '?')} ({gpu.get('uuid', '?')}), driver {driver}")
print(f"- gpuwatt: {version}")
print(f"- command: `bash bench/gpu/intervals_shapes.sh {out}` (GPU={os.environ.get('GPU', '0')}"
      f"{', SHAPES_ARGS=' + os.environ['SHAPES_ARGS'] if os.environ.get('SHAPES_ARGS') else ''}"
      f"{', SENSOR=' + os.environ['SENSOR'] if os.environ.get('SENSOR') else ''}"
      f"{', COUNTER_EVERY=' + os.environ['COUNTER_EVERY'] if os.environ.get('COUNTER_EVERY') else ''}), which ran")
print(f"  - `{mcmd}` (exit {mrc}) while `python3 bench/gpu/energy_poller.py` logged the counter,")
print(f"  - `{ccmd}` (exit {crc}),")
print(f"  - `{tcmd}`.")
wins = [l for l in read("shapes.jsonl").splitlines() if l.strip()]
said = next((l for l in (read("measure.txt") + read("measure-stderr.txt")).splitlines() if l.startswith("shapes:")), "?")
print(f"- {len(wins)} windows; the workload said: {said}")
print("- How to read the tables: docs/energy.md, \"Cross-check against an independent poller\"; named:C is "
      "`energy --channel C` alone (its headline), C is `--method inversion`.\n")
print(read("intervals.md", "(no intervals.md: see intervals-stderr.txt)\n"))
print("## The cross-check's own tables\n")
print(read("crosscheck.md", "(no crosscheck.md: see crosscheck-stderr.txt)\n"))
EOF
echo "wrote $OUT/README.md"
exit $(( MRC != 0 || CRC != 0 || TRC != 0 ))
