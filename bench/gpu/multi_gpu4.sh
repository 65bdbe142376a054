#!/usr/bin/env bash
# Every GPU of one host at once (issue 36): on the GPU machine (2 or 4 GPUs), from the
# repository root, with the binary built elsewhere by
# `CGO_ENABLED=0 go build -buildvcs=true -o .gpu/gpuwatt ./cmd/gpuwatt`:
#
#   bash bench/gpu/multi_gpu4.sh OUTDIR            # everything, about 480 s of wall time
#   PARTS=load bash bench/gpu/multi_gpu4.sh OUTDIR # only 2-4, about 150 s
#   GPUS=0,1 bash bench/gpu/multi_gpu4.sh OUTDIR   # only those GPUs (default all)
#
# 1. characterize: `gpuwatt characterize --quick --gpu $GPUS` (every card at once, each in a
#    gpuwatt process of its own), which writes OUT/characterize/gpu-N, report.html and
#    compare.json: the cards compared, a difference named only beyond the intervals, the
#    spread across the boards.
# 2. cap: `gpuwatt measure --gpu "$GPUS"` of bf16 GEMMs on every GPU at once (bench/load/matmul_all.py,
#    one process a GPU, every board at its power cap), SECONDS_RUN seconds.
# 3. skew: the same with the last GPU at 50 % duty (50 ms busy, 50 ms idle): its energy,
#    clocks and throttle reasons must differ from the capped boards'.
# 4. serve: `gpuwatt serve --gpu "$GPUS"` scraped every second while the GEMMs run with GPU 0's
#    process also driving GPU 1 (one process spanning two GPUs): per-process energy per GPU,
#    scrape latency, serve's CPU.
# Environment: GPUWATT (default .gpu/gpuwatt), SECONDS_RUN (default 30), PARTS (default
# "characterize load"). NVLink multicast is off (NCCL_NVLS_ENABLE=0); no collective is used.
set -u
OUT=${1:?usage: multi_gpu4.sh OUTDIR}
B=${GPUWATT:-.gpu/gpuwatt}
RUN=${SECONDS_RUN:-30}
PARTS=${PARTS:-characterize load}
GPUS=${GPUS:-all}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUDA_DEVICE_ORDER=PCI_BUS_ID
{ date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi --query-gpu=index,uuid,name,driver_version,power.limit,clocks.max.sm --format=csv; } > "$OUT/env.txt" 2>&1
"$B" version > "$OUT/version.txt" 2>&1
if [ "$GPUS" = all ]; then
	NG=$(nvidia-smi -L | grep -c '^GPU ')
else
	NG=$(echo "$GPUS" | tr ',' '\n' | grep -c .)
	# torch's devices 0..NG-1 are the GPUs named, in bus order as gpuwatt's indices are
	export CUDA_VISIBLE_DEVICES=$GPUS
fi
echo "gpus=$NG ($GPUS)" >> "$OUT/steps.txt"
step() { # name, command...
	local name=$1; shift
	local t0; t0=$(date +%s.%N)
	"$@" > "$OUT/$name.stdout" 2> "$OUT/$name.stderr"
	local rc=$?
	echo "$name rc=$rc wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s" >> "$OUT/steps.txt"
}
case " $PARTS " in *" characterize "*)
	step characterize "$B" characterize --quick --gpu "$GPUS" --out "$OUT/characterize"
	rm -f "$OUT"/characterize/gpu-*/trace.csv
	;;
esac
case " $PARTS " in *" load "*)
	step cap "$B" measure --gpu "$GPUS" --out "$OUT/cap" -- python3 bench/load/matmul_all.py --seconds "$RUN" --out "$OUT/cap-ranks.jsonl"
	duty=$(python3 -c "n=$NG; print(','.join(['1']*(n-1)+['0.5']))")
	step skew "$B" measure --gpu "$GPUS" --out "$OUT/skew" -- python3 bench/load/matmul_all.py --seconds "$RUN" --duty "$duty" --out "$OUT/skew-ranks.jsonl"
	"$B" serve --gpu "$GPUS" --listen 127.0.0.1:9464 > "$OUT/serve.stdout" 2> "$OUT/serve.stderr" &
	spid=$!
	sleep 3
	scpu0=$(awk '{print $14+$15}' /proc/$spid/stat); st0=$(date +%s.%N)
	python3 - "$OUT/scrapes.jsonl" <<'PY' &
import json, sys, time, urllib.request
out = open(sys.argv[1], "w")
keep = ("gpuwatt_gpu_energy_joules_total", "gpuwatt_gpu_power_watts", "gpuwatt_gpu_up",
        "gpuwatt_process_gpu_energy_joules_total", "gpuwatt_gpu_unattributed_energy_joules_total",
        "gpuwatt_sampler")
t_end = time.time() + 120
while time.time() < t_end:
    t0 = time.time()
    try:
        body = urllib.request.urlopen("http://127.0.0.1:9464/metrics", timeout=2).read().decode()
    except Exception as e:
        out.write(json.dumps({"t": t0, "error": str(e)}) + "\n"); out.flush(); time.sleep(1); continue
    dt = time.time() - t0
    lines = [l for l in body.splitlines() if l.startswith(keep)]
    out.write(json.dumps({"t": t0, "latency_s": dt, "bytes": len(body), "lines": lines}) + "\n"); out.flush()
    time.sleep(max(0, 1 - dt))
PY
	cpid=$!
	step serve_load "$B" measure --gpu "$GPUS" --out "$OUT/serve_load" -- python3 bench/load/matmul_all.py --seconds "$RUN" --span 0,1 --out "$OUT/serve-ranks.jsonl"
	sleep 3
	scpu1=$(awk '{print $14+$15}' /proc/$spid/stat)
	echo "serve cpu $(awk -v a="$scpu0" -v b="$scpu1" -v t0="$st0" -v t1="$(date +%s.%N)" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.2f %% of one core over %.1f s", 100*(b-a)/hz/(t1-t0), t1-t0}') (whole process, scraped every second, under load)" >> "$OUT/steps.txt"
	kill -TERM $spid; t0=$(date +%s.%N); wait $spid; echo "serve exit=$? after SIGTERM in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}') s" >> "$OUT/steps.txt"
	kill $cpid 2> /dev/null; wait $cpid 2> /dev/null
	gzip -9 "$OUT/scrapes.jsonl"
	gzip -9 "$OUT"/{cap,skew,serve_load}/trace.csv 2> /dev/null
	;;
esac
exit 0
