#!/usr/bin/env bash
# The Python package on a real GPU (issue 31): a PyTorch loop measured per step in-process
# with gpuwatt.Monitor (torch.cuda.synchronize as its sync), run under `gpuwatt measure`
# with a marker around each same span; python_compare.py sets each step's in-process figure
# beside measure's. Also says whether the host exposes powercap (RAPL) and what of it the
# recorder could read.
#
#   bench/gpu/python_loop.sh OUT [GPU]      (from the repository root; one GPU, default 0)
#
# Needs: .gpu/gpuwatt (CGO_ENABLED=0 go build -o .gpu/gpuwatt ./cmd/gpuwatt), python3 with
# torch, one NVIDIA GPU (H100 or H200). No internet: the package is installed offline with
# `pip install --no-build-isolation --no-deps --no-index --target OUT/site python/` and used
# from there (PYTHONPATH=OUT/site); where that install fails (no setuptools with
# bdist_wheel) the script says so and uses the source tree instead (PYTHONPATH=python).
# Time budget: ~90 s wall per card (pip ~10 s, measure's 1 s baseline, the loop ~60 s).
set -uo pipefail
out=${1:?usage: bench/gpu/python_loop.sh OUT [GPU]}
gpu=${2:-0}
gw=$PWD/.gpu/gpuwatt
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
log=$out/commands.txt
: >"$log"
run() { echo "+ $*" >>"$log"; "$@"; }

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  "$gw" version
  git rev-parse HEAD 2>/dev/null || true
  nvidia-smi -q | sed -n '1,12p'
  nvidia-smi --query-gpu=index,name,uuid,driver_version,power.limit --format=csv
  python3 --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  python3 -c 'import setuptools; print("setuptools", setuptools.__version__)' 2>&1
  python3 -c 'import wheel; print("wheel", wheel.__version__)' 2>&1 | tail -1
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

# powercap: what the host exposes, as files (one line says so where none).
{
  if [ -d /sys/class/powercap ] && ls /sys/class/powercap | grep -q rapl; then
    echo "powercap: present"
    for z in /sys/class/powercap/*rapl*; do
      n=$(cat "$z/name" 2>/dev/null || echo '?')
      e=$(cat "$z/energy_uj" 2>&1 | head -1)
      m=$(cat "$z/max_energy_range_uj" 2>&1 | head -1)
      echo "$z name=$n energy_uj=$e max_energy_range_uj=$m"
    done
  else
    echo "powercap: absent (no /sys/class/powercap RAPL zones on this host: a VM or a kernel without intel_rapl)"
  fi
  grep -m1 'model name' /proc/cpuinfo
  systemd-detect-virt 2>/dev/null || true
} >"$out/powercap.txt" 2>&1
cat "$out/powercap.txt"

# The package, installed offline.
if run python3 -m pip install --no-build-isolation --no-deps --no-index --target "$out/site" "$PWD/python" >"$out/pip.txt" 2>&1; then
  export PYTHONPATH=$out/site
  echo "package: pip install --no-build-isolation --no-deps --no-index --target $out/site python/ (used from there)" | tee -a "$out/env.txt"
else
  export PYTHONPATH=$PWD/python
  echo "package: the offline pip install failed (see pip.txt); used from the source tree, PYTHONPATH=python" | tee -a "$out/env.txt"
fi
rm -rf "$PWD/python/build" "$PWD/python/gpuwatt.egg-info"
export GPUWATT_BIN=$gw

# The loop under measure (markers for the same spans) and in-process (its own recorder).
run timeout 300 "$gw" measure --gpu "$gpu" --out "$out/measure" --json -- \
  python3 "$here/python_loop.py" --out "$out/loop.json" --gpu "$gpu" >"$out/measure.json" 2>"$out/loop.txt"
echo "measure exit $?" | tee -a "$log"
tail -25 "$out/loop.txt"
run python3 "$here/python_compare.py" "$out/loop.json" "$out/measure/summary.json" --gpu "$gpu" | tee "$out/compare.txt"
# Any recorder left behind would show here.
pgrep -a -f 'gpuwatt record' >"$out/leftover.txt" 2>&1 && echo "LEFTOVER recorder processes: see leftover.txt" || echo "no recorder left behind" | tee -a "$out/leftover.txt"
date -u +%Y-%m-%dT%H:%M:%SZ >>"$out/env.txt"
