#!/usr/bin/env python3
"""One call for `gpuwatt call` (docs/call.md), and the board's energy counter over the same
run as an independent reference (issue 34).

    python3 bench/gpu/call_worker.py --op gemm:4096x4096x4096 --reference REF.json [--idle 2] [--steady 0]

Sets the call up (torch, bf16 on cuda:0) and warms it up. A thread of its own polls NVML's
energy counter (pynvml; no gpuwatt code) from then to the end and logs every change of it
with the host times that bracket it. The worker then waits --idle s (active idle: this
process's context open, nothing running), says `ready` and speaks gpuwatt call's protocol on
stdin/stdout: for each `call N`, N calls back to back between two torch.cuda.synchronize(),
answered `done T0 T1` (time.monotonic() after the first and after the second sync), each
span logged. At the end of its stdin it waits --idle s more and writes REF.json: the counter's
changes, every span, the idle stretches, and the reference that bench/gpu/call_reference.py
computes from them (the counter's energy over the calls' run less the active idle between the
calls, per call: the same calls at the same duty cycle, clocks and temperature as gpuwatt's
measurement, read by another sensor and another method).

--steady S (default 0: none) also measures the call back to back for S s before `ready` (the
2026-11-28 run's reference: on an H200 that is the board at its 700 W cap, another operating
point of the call; kept as a figure beside the reference, not as the reference).

Ops: gemm:MxNxK (torch.matmul of bf16 M×K by K×N), sdpa:B,H,S,D (scaled_dot_product_attention,
bf16), softmax:R,C (torch.softmax over the last dimension of a bf16 R×C tensor).
"""
import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import call_reference  # noqa: E402


def make_op(spec):
    import torch
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
    """NVML's energy counter, read every ~20 ms (a read takes 3-8 ms): at each change,
    [t_lo, t_hi, mJ], the change having happened after the previous read began (t_lo) and
    before this read ended (t_hi)."""

    def __init__(self, nvml, handle):
        super().__init__(daemon=True)
        self.nvml, self.h, self.changes, self.stop, self.reads = nvml, handle, [], False, 0

    def run(self):
        last, prev_t0 = None, None
        while not self.stop:
            t0 = time.monotonic()
            e = self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.h)
            t1 = time.monotonic()
            self.reads += 1
            if e != last and prev_t0 is not None:
                self.changes.append([prev_t0, t1, e])
            elif last is None:
                self.changes.append([t0, t1, e])  # the first reading: not a change
            last, prev_t0 = e, t0
            # every ~20 ms, not back to back (a read took ~8 ms on an H200 host, and the ring
            # lost readings while the worker read it back to back: 2026-11-28-call-2); the
            # lattice fitted to the changes gives their times to well under that
            time.sleep(0.02)


def steady_run(op, torch, seconds):
    """The call back to back for seconds (synchronised every ~50 ms): (t0, t1, calls)."""
    torch.cuda.synchronize()
    t0 = time.monotonic()
    n, k = 0, 1
    while True:
        for _ in range(k):
            op()
        n += k
        torch.cuda.synchronize()
        now = time.monotonic()
        if now - t0 >= seconds:
            return t0, now, n
        k = max(1, int(0.05 / ((now - t0) / n)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", required=True)
    ap.add_argument("--reference", required=True, help="the JSON file to write the reference to")
    ap.add_argument("--idle", type=float, default=2.0, help="seconds of active idle before ready and after the last call (default 2)")
    ap.add_argument("--steady", type=float, default=0.0, help="seconds of back-to-back calls before ready (default 0: none)")
    ap.add_argument("--gpu", type=int, default=0, help="the NVML index of the board (CUDA's device 0 must be it: CUDA_VISIBLE_DEVICES)")
    a = ap.parse_args()

    import pynvml
    import torch
    op, flops = make_op(a.op)
    for _ in range(20):
        op()
    torch.cuda.synchronize()
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(a.gpu)
    poll = Poller(pynvml, h)
    poll.start()
    raw = {"op": a.op, "flops": flops, "gpu": a.gpu, "name": str(pynvml.nvmlDeviceGetName(h)),
           "uuid": str(pynvml.nvmlDeviceGetUUID(h)), "idle_s": a.idle}
    if a.steady > 0:
        time.sleep(0.5)
        s0, s1, n = steady_run(op, torch, a.steady)
        raw["steady"] = {"t0": s0, "t1": s1, "calls": n}
        time.sleep(0.5)
    raw["idle_before"] = [time.monotonic(), None]
    time.sleep(a.idle)

    spans = []
    print("ready", flush=True)
    rc = 0
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
            msg = str(ex).splitlines()[0][:200] if str(ex) else type(ex).__name__
            print("error " + msg, flush=True)
            rc = 1
            break
        spans.append([s, e, m])
        print("done %.9f %.9f" % (s, e), flush=True)
    t_end = time.monotonic()
    raw["idle_after"] = [t_end, None]
    time.sleep(a.idle)
    raw["idle_after"][1] = time.monotonic()
    poll.stop = True
    poll.join()
    raw["spans"], raw["changes"], raw["counter_reads"] = spans, poll.changes, poll.reads
    raw["reference"] = call_reference.reference(raw)
    with open(a.reference, "w") as fh:
        json.dump(raw, fh, indent=0)
    r = raw["reference"]
    print("reference: %s" % call_reference.summary(r), file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
