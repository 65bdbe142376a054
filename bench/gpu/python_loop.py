"""A PyTorch loop measured per step in-process with gpuwatt.Monitor, with a marker for
`gpuwatt measure` around the same spans (bench/gpu/python_loop.sh runs it under measure).

Every edge: torch.cuda.synchronize(), then the marker (its own CLOCK_MONOTONIC time), then
the Monitor's edge (its sync is then a no-op: the two edges lie microseconds apart). Steps:
bf16 matmuls of three sizes in turn (energies that differ by their work), first with
end_window waiting for each figure (blocking), then back to back with wait=False.
Writes --out (JSON): each window's live figure (end_window / result), its final figure
(close), and the powercap line the recorder gave.

    --device sim   runs without a GPU (no torch needed): the analysis is checked on it
"""

import argparse
import json
import os
import sys
import time

import gpuwatt

ap = argparse.ArgumentParser()
ap.add_argument("--out", required=True)
ap.add_argument("--device", default="nvml")
ap.add_argument("--gpu", type=int, default=0)
ap.add_argument("--steps", type=int, default=18, help="blocking steps (end_window waits)")
ap.add_argument("--async-steps", type=int, default=12, help="back-to-back steps (end_window(wait=False))")
ap.add_argument("--sizes", default="4096,8192,12288", help="matrix sizes, in turn")
ap.add_argument("--reps", type=int, default=40, help="matmuls per step")
a = ap.parse_args()

sim = a.device.startswith("sim")
if not sim:
    import torch
    dev = torch.device("cuda", a.gpu)
    torch.manual_seed(0)
    sizes = [int(s) for s in a.sizes.split(",")]
    mats = {n: (torch.randn(n, n, device=dev, dtype=torch.bfloat16), torch.randn(n, n, device=dev, dtype=torch.bfloat16)) for n in sizes}

    def sync():
        torch.cuda.synchronize(dev)

    def step(i):
        x, y = mats[sizes[i % len(sizes)]]
        for _ in range(a.reps):
            x = torch.tanh(x @ y)
else:
    sizes = [1, 2, 3]

    def sync():
        pass

    def step(i):
        time.sleep(0.05 * (1 + i % 3))

meta = {"argv": sys.argv, "gpuwatt_package": os.path.dirname(gpuwatt.__file__), "python": sys.version}
if not sim:
    meta.update(torch=torch.__version__, cuda=torch.version.cuda, gpu=torch.cuda.get_device_name(dev))

mon = gpuwatt.Monitor(device=a.device, gpus=[a.gpu], sync=sync, binary=os.environ.get("GPUWATT_BIN"))
meta["hello"] = mon.hello
if not sim:
    step(0)  # warm-up: cuBLAS handles, clocks
    sync()
live, cost = [], []


def edge_begin(name):
    sync()
    gpuwatt.begin(name)
    mon.begin_window(name)


def edge_end(name, wait=True):
    sync()
    gpuwatt.end(name)
    t0 = time.monotonic()
    r = mon.end_window(name, wait=wait)
    cost.append(time.monotonic() - t0)
    return r


for i in range(a.steps):
    name = "step%d" % sizes[i % len(sizes)]
    edge_begin(name)
    step(i)
    m = edge_end(name)
    live.append(m.raw)
    g = m.gpus[0]
    print("%-10s #%d %.3f s  %8.2f J (95 %%: %.2f to %.2f, %s)%s" % (name, m.instance, m.time, g.energy_j or 0, g.low_j or 0, g.high_j or 0, g.method,
                                                               "  SIMULATED" if m.simulated else ""), flush=True)
ids = []
for i in range(a.async_steps):
    name = "async%d" % sizes[i % len(sizes)]
    edge_begin(name)
    step(i)
    ids.append(edge_end(name, wait=False))
for wid in ids:
    live.append(mon.result(wid).raw)
final = [m.raw for m in mon.close()]
meta["end_window_s"] = cost
with open(a.out, "w") as f:
    json.dump({"meta": meta, "live": live, "final": final}, f, indent=1)
print("%d windows; end_window took %.3f s median (blocking), %.6f s median (wait=False)" % (
    len(final), sorted(cost[:a.steps])[len(cost[:a.steps]) // 2] if a.steps else 0,
    sorted(cost[a.steps:])[len(cost[a.steps:]) // 2] if a.async_steps else 0))
