#!/usr/bin/env python3
"""Load shapes for checking region energies and their intervals (bench/gpu/intervals_shapes.sh,
issue 28): compute and memory bursts, square waves at 80/100/200 ms periods (near the sensors'
100 ms update period: loads locked in phase with the sensor), a ramp, and back-to-back regions.

    python3 bench/load/shapes.py --out shapes.jsonl [--rounds 2] [--gap 1.6] [--gap-jitter 0.4]
        [--seed 1] [--n 4096] [--dry-run]

Each round runs every shape once, in an order shuffled with --seed, each after an idle gap of
--gap plus a uniform random extra of up to --gap-jitter seconds (so that shapes fall at other
phases of the sensors' updates from round to round). Shapes:

- compute-0.2s, compute-2.5s: bf16 matrix products (n x n) back to back;
- memory-0.2s, memory-2.5s: copies of a 1 GiB tensor back to back (DRAM-bound);
- square-20ms, square-80ms, square-100ms, square-200ms: 3 s of compute for the first half of
  each period and idle for the second; the periods are kept on a fixed schedule (a
  phase-locked load: 20 ms is the ring's period, 100 ms the other channels');
- ramp-3s: 3 s in 20 ms slots whose busy share rises linearly from 0 to 1 (the slots are
  locked to the ring's 20 ms samples: on an H200 it read one such ramp -9 %, another -0.6 %);
- ramp13-3s: the same in 13 ms slots, locked to no sensor's period (a ramp, not a lock);
- b2b: compute 0.5 s, memory 0.5 s, a 100 ms square wave 1 s, back to back, no gap.

Every shape is one JSON line (a window padded into idle, "pad_s" absent: the check's --pad);
shapes of 2 s and more also give a 0.5 s window in their middle ("pad_s": 0: edges inside the
load), and b2b each of its three parts ("pad_s": 0):

    {"name": "r0-square-100ms", "shape": "square-100ms", "length_s": 3.0, "start_unix_s": ...,
     "end_unix_s": ..., "gpu_uuid": "GPU-..."}

Times are time.time() taken after torch.cuda.synchronize(). --dry-run prints the schedule
and its length without torch. Prints one summary line on stdout.
"""
import argparse
import json
import random
import sys
import time

SHAPES = ["compute-0.2s", "compute-2.5s", "memory-0.2s", "memory-2.5s", "square-20ms", "square-80ms", "square-100ms",
          "square-200ms", "ramp-3s", "ramp13-3s", "b2b"]
LENGTH = {"compute-0.2s": 0.2, "compute-2.5s": 2.5, "memory-0.2s": 0.2, "memory-2.5s": 2.5, "square-20ms": 3.0,
          "square-80ms": 3.0, "square-100ms": 3.0, "square-200ms": 3.0, "ramp-3s": 3.0, "ramp13-3s": 3.0, "b2b": 2.0}
RAMP_SLOT = {"ramp-3s": 0.02, "ramp13-3s": 0.013}
INNER_S = 0.5  # the short window inside a long shape


def schedule(rounds, seed):
    """The shapes in the order they run, round by round."""
    rng = random.Random(seed)
    out = []
    for r in range(rounds):
        order = list(SHAPES)
        rng.shuffle(order)
        out += [(r, s) for s in order]
    return out


def inner(start, end, L=INNER_S):
    """A window of length L in the middle of [start, end]."""
    mid = (start + end) / 2
    return mid - L / 2, mid + L / 2


class Load:
    """The GPU side: products and copies, timed on the wall clock."""

    def __init__(self, n):
        import torch  # here, so that --help and --dry-run work without torch
        self.torch = torch
        self.x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        self.y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        self.a = torch.empty(1 << 29, device="cuda", dtype=torch.bfloat16)  # 1 GiB
        self.b = torch.empty_like(self.a)
        for _ in range(3):
            self.x @ self.y
            self.b.copy_(self.a)
        torch.cuda.synchronize()

    def sync(self):
        self.torch.cuda.synchronize()

    def busy_until(self, t_end, kind="compute"):
        """Runs kind back to back until the wall clock passes t_end; returns the operations."""
        n = 0
        while time.time() < t_end:
            if kind == "compute":
                self.x @ self.y
            else:
                self.b.copy_(self.a)
            n += 1
            self.sync()
        return n

    def square(self, start, length, period):
        """Compute for the first half of each period on the fixed grid start + k*period."""
        k = 0
        while True:
            t = start + k * period
            if t >= start + length:
                break
            self.busy_until(min(t + period / 2, start + length))
            nxt = min(t + period, start + length)
            rest = nxt - time.time()
            if rest > 0:
                time.sleep(rest)
            k += 1

    def ramp(self, start, length, slot=0.02):
        k = 0
        while start + k * slot < start + length:
            t = start + k * slot
            share = (k + 0.5) * slot / length
            self.busy_until(t + share * slot)
            rest = t + slot - time.time()
            if rest > 0:
                time.sleep(rest)
            k += 1


def run_shape(load, shape, uuid, r):
    """Runs one shape; returns its JSON records."""
    load.sync()
    start = time.time()
    recs = []
    L = LENGTH[shape]
    if shape.startswith("compute"):
        load.busy_until(start + L, "compute")
    elif shape.startswith("memory"):
        load.busy_until(start + L, "memory")
    elif shape.startswith("square"):
        load.square(start, L, int(shape.split("-")[1][:-2]) / 1000)
    elif shape.startswith("ramp"):
        load.ramp(start, L, RAMP_SLOT[shape])
    elif shape == "b2b":
        parts = [("compute", 0.5), ("memory", 0.5), ("square", 1.0)]
        t = start
        for kind, d in parts:
            if kind == "square":
                load.square(t, d, 0.1)
            else:
                load.busy_until(t + d, kind)
            load.sync()
            e = time.time()
            recs.append({"name": f"r{r}-b2b-{kind}", "shape": f"b2b-{kind}", "length_s": round(e - t, 6),
                         "start_unix_s": round(t, 6), "end_unix_s": round(e, 6), "pad_s": 0})
            t = e
    load.sync()
    end = time.time()
    out = [{"name": f"r{r}-{shape}", "shape": shape, "length_s": round(end - start, 6),
            "start_unix_s": round(start, 6), "end_unix_s": round(end, 6)}]
    if L >= 2 and shape != "b2b":
        a, b = inner(start, end)
        out.append({"name": f"r{r}-{shape}-inner", "shape": shape + "-inner", "length_s": round(b - a, 6),
                    "start_unix_s": round(a, 6), "end_unix_s": round(b, 6), "pad_s": 0})
    out += recs
    for o in out:
        if uuid:
            o["gpu_uuid"] = uuid
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="JSON lines file of the windows")
    ap.add_argument("--rounds", type=int, default=2, help="times every shape runs (default 2)")
    ap.add_argument("--gap", type=float, default=1.6,
                    help="idle seconds before each shape and after the last (default 1.6; at least 1.5: "
                         "a 1 s averaging sensor needs about 1.1 s to settle)")
    ap.add_argument("--gap-jitter", type=float, default=0.4, help="a random extra of up to this many seconds (default 0.4)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the order and the gaps (default 1)")
    ap.add_argument("--n", type=int, default=4096, help="matrix size (default 4096: ~0.2-0.3 ms a product on Hopper)")
    ap.add_argument("--dry-run", action="store_true", help="print the schedule and its length, run nothing")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds: want at least 1")
    if a.gap < 1.5:
        ap.error(f"--gap {a.gap}: want at least 1.5 s, so that the sensors settle between shapes")
    if a.gap_jitter < 0:
        ap.error("--gap-jitter: want >= 0")
    order = schedule(a.rounds, a.seed)
    total = sum(LENGTH[s] for _, s in order) + (len(order) + 1) * (a.gap + a.gap_jitter / 2)
    if a.dry_run:
        print(json.dumps({"shapes": [f"r{r}-{s}" for r, s in order], "expected_s": round(total, 1)}))
        return 0
    load = Load(a.n)
    import torch
    uuid = ""
    try:
        u = getattr(torch.cuda.get_device_properties(0), "uuid", None)
        if u is not None:
            uuid = str(u) if str(u).startswith("GPU-") else "GPU-" + str(u)
    except Exception:
        uuid = ""
    rng = random.Random(a.seed + 1)
    n = 0
    t_all = time.time()
    with open(a.out, "w") as f:
        for r, s in order:
            time.sleep(a.gap + rng.uniform(0, a.gap_jitter))
            for rec in run_shape(load, s, uuid, r):
                f.write(json.dumps(rec) + "\n")
                n += 1
            f.flush()
        time.sleep(a.gap)
    print(f"shapes: {len(order)} shapes in {a.rounds} rounds, {n} windows, {time.time() - t_all:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
