#!/usr/bin/env python3
"""One call for `gpuwatt call` (docs/call.md), and its long steady reference (issue 34).

    python3 bench/gpu/call_worker.py --op gemm:4096x4096x4096 --reference REF.json [--steady 10] [--idle 3]

Sets the call up (torch, bf16 on cuda:0), warms it up, then measures the reference with
NVML's energy counter polled by a thread of its own (pynvml; no gpuwatt code): --idle s of
active idle (this process's context open, nothing running), then --steady s of the call
back to back. The energy per call of the steady run is the counter's increase between its
first change after the first second and its last change before the end, over the time
between those changes, times the time per call (the run's time over its calls); above
active idle, the same less the idle power. REF.json holds every figure and the counter's
changes used. Then it speaks gpuwatt call's protocol on stdin/stdout: `ready`; for each
`call N`, N calls back to back between two torch.cuda.synchronize(), answered
`done T0 T1` (time.monotonic() after the first and after the second sync); it exits at
the end of its stdin.

Ops: gemm:MxNxK (torch.matmul of bf16 M×K by K×N), sdpa:B,H,S,D (scaled_dot_product_attention,
bf16), softmax:R,C (torch.softmax over the last dimension of a bf16 R×C tensor).
"""
import argparse
import json
import sys
import threading
import time

import pynvml
import torch


def make_op(spec):
    kind, _, arg = spec.partition(":")
    dev, dt = "cuda", torch.bfloat16
    if kind == "gemm":
        m, n, k = (int(x) for x in arg.split("x"))
        a = torch.randn(m, k, device=dev, dtype=dt)
        b = torch.randn(k, n, device=dev, dtype=dt)
        c = torch.empty(m, n, device=dev, dtype=dt)
        return (lambda: torch.matmul(a, b, out=c)), 2.0 * m * n * k
    if kind == "sdpa":
        bsz, h, s, d = (int(x) for x in arg.split(","))
        q, k_, v = (torch.randn(bsz, h, s, d, device=dev, dtype=dt) for _ in range(3))
        return (lambda: torch.nn.functional.scaled_dot_product_attention(q, k_, v)), 4.0 * bsz * h * s * s * d
    if kind == "softmax":
        r, c = (int(x) for x in arg.split(","))
        x = torch.randn(r, c, device=dev, dtype=dt)
        return (lambda: torch.softmax(x, dim=-1)), 0.0
    raise SystemExit("call_worker.py: unknown op %r (gemm:MxNxK, sdpa:B,H,S,D, softmax:R,C)" % spec)


class Poller(threading.Thread):
    """NVML's energy counter as fast as it reads: (t_mid monotonic s, mJ) at each change."""

    def __init__(self, handle):
        super().__init__(daemon=True)
        self.h, self.changes, self.stop, self.calls = handle, [], False, 0

    def run(self):
        last = None
        while not self.stop:
            t0 = time.monotonic()
            e = pynvml.nvmlDeviceGetTotalEnergyConsumption(self.h)
            t1 = time.monotonic()
            self.calls += 1
            if e != last:
                # the change happened between the previous call's end and this one's
                self.changes.append(((t0 + t1) / 2, e))
                last = e


def rate(changes, a, b):
    """The counter's mean power (W) between its first change at or after a and its last
    change at or before b, and those changes."""
    inside = [c for c in changes if a <= c[0] <= b]
    if len(inside) < 3:
        return None, inside
    (t0, e0), (t1, e1) = inside[0], inside[-1]
    return (e1 - e0) / 1000.0 / (t1 - t0), [inside[0], inside[-1]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", required=True)
    ap.add_argument("--reference", required=True, help="the JSON file to write the steady reference to")
    ap.add_argument("--steady", type=float, default=10.0, help="seconds of back-to-back calls (default 10)")
    ap.add_argument("--idle", type=float, default=3.0, help="seconds of active idle measured first (default 3)")
    ap.add_argument("--gpu", type=int, default=0)
    a = ap.parse_args()

    torch.cuda.set_device(a.gpu)
    op, flops = make_op(a.op)
    for _ in range(20):
        op()
    torch.cuda.synchronize()
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(a.gpu)
    poll = Poller(h)
    poll.start()

    t_idle0 = time.monotonic()
    time.sleep(a.idle)
    t_idle1 = time.monotonic()
    p_idle, idle_edges = rate(poll.changes, t_idle0 + 0.2, t_idle1)

    # Steady: back to back, synchronised every ~50 ms so the queue stays short.
    torch.cuda.synchronize()
    t0 = time.monotonic()
    n, k = 0, 1
    while True:
        for _ in range(k):
            op()
        n += k
        torch.cuda.synchronize()
        now = time.monotonic()
        if now - t0 >= a.steady:
            break
        per = (now - t0) / n
        k = max(1, int(0.05 / per))
    t1 = time.monotonic()
    time.sleep(0.3)  # the counter's last change inside the run is logged
    poll.stop = True
    poll.join()
    t_call = (t1 - t0) / n
    p_steady, steady_edges = rate(poll.changes, t0 + 1.0, t1)
    ref = {
        "op": a.op, "flops": flops, "gpu": a.gpu,
        "name": str(pynvml.nvmlDeviceGetName(h)), "uuid": str(pynvml.nvmlDeviceGetUUID(h)),
        "steady_s": t1 - t0, "steady_calls": n, "seconds_per_call": t_call,
        "tflops": flops / t_call / 1e12 if flops else None,
        "idle_w": p_idle, "idle_edges": idle_edges, "steady_w": p_steady, "steady_edges": steady_edges,
        "energy_per_call_j": p_steady * t_call if p_steady else None,
        "active_per_call_j": (p_steady - p_idle) * t_call if p_steady and p_idle else None,
        "counter_calls": poll.calls, "counter_changes": len(poll.changes),
    }
    with open(a.reference, "w") as f:
        json.dump(ref, f, indent=1)
    print("reference: %.4g s per call, %.1f W steady, %.1f W idle, %.5g J per call (%.5g above idle)" % (
        t_call, p_steady or 0, p_idle or 0, ref["energy_per_call_j"] or 0, ref["active_per_call_j"] or 0), file=sys.stderr)

    print("ready", flush=True)
    for line in sys.stdin:
        f = line.split()
        if len(f) != 2 or f[0] != "call":
            continue
        try:
            m = int(f[1])
            torch.cuda.synchronize()
            s = time.monotonic()
            for _ in range(m):
                op()
            torch.cuda.synchronize()
            e = time.monotonic()
        except Exception as ex:  # tell gpuwatt, then stop
            print("error %s" % str(ex).splitlines()[0][:200] if str(ex) else "error " + type(ex).__name__, flush=True)
            return 1
        print("done %.9f %.9f" % (s, e), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
