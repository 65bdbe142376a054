#!/usr/bin/env python3
"""One call for `gpuwatt call` (docs/call.md), and the board's energy counter over the same
run as an independent reference (issue 34).

    python3 bench/gpu/call_worker.py --op gemm:4096x4096x4096 --reference REF.json [--idle 2] [--steady 0]

Sets the call up (torch, bf16 on cuda:0) and warms it up. A thread of its own polls NVML's
energy counter (pynvml; no gpuwatt code) every ~20 ms and logs every change of it with the
host times that bracket it, except while gpuwatt measures (--poll-during 0, the default:
gpuwatt reads the counter itself, and the ring lost readings in half the windows while this
poller read it back to back, results/nvidia-h200/2026-11-28-call-2). The worker waits --idle s
(active idle: this process's context open, nothing running), says `ready` and speaks gpuwatt
call's protocol on stdin/stdout: for each `call N`, N calls back to back between two
torch.cuda.synchronize(), answered `done T0 T1` (time.monotonic() after the first and after
the second sync), each span logged.

At the end of its stdin (gpuwatt is done), the reference run (--replay S, default 10): --idle s
of idle, then the calls again, each repetition after the same wait as gpuwatt's before it
(gpuwatt's waits in its order, cycled) for S s, then --idle s more, with only this process's
poller reading the board. It writes REF.json: the counter's changes, the spans of both runs,
the idle stretches, and the two figures of bench/gpu/call_reference.py: `replay_reference`
(the reference: E/N over the replay less the active idle before and after it) and `reference`
(the counter over gpuwatt's own run, idle before and after that run).

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
        self.paused = threading.Event()

    def pause(self, on):
        """Stops reading (on) or reads again; the first read after a pause is not a change
        (its bracket would span the pause)."""
        if on:
            self.paused.set()
        else:
            self.paused.clear()

    def run(self):
        last, prev_t0 = None, None
        while not self.stop:
            if self.paused.is_set():
                prev_t0 = None
                time.sleep(0.005)
                continue
            t0 = time.monotonic()
            e = self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.h)
            t1 = time.monotonic()
            self.reads += 1
            if e != last and prev_t0 is not None:
                self.changes.append([prev_t0, t1, e])
            elif last is None or prev_t0 is None:
                # the first reading, or the first after a pause: a value at [t0, t1] (its
                # bracket is the read itself: it may be up to one update old)
                self.changes.append([t0, t1, e, "resume" if last is not None else "first"])
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


def replay(op, torch, spans, seconds):
    """The reference run: the calls as gpuwatt ran them, each repetition (the same batch)
    after the same wait as gpuwatt's before it (the time from the end of one span to the
    start of the next, in gpuwatt's order, cycled), until seconds have passed: the same
    calls at the same duty cycle, with nothing but this process's counter poller reading
    the board. Returns the spans [t0, t1, calls]."""
    waits = [b[0] - a[1] for a, b in zip(spans, spans[1:])]
    batches = [m for _, _, m in spans[1:]]
    out, t_start, i = [], time.monotonic(), 0
    while not waits or time.monotonic() - t_start < seconds:
        if not waits:
            break
        time.sleep(max(0.0, waits[i % len(waits)] - 0.0002))
        m = batches[i % len(batches)]
        torch.cuda.synchronize()
        s = time.monotonic()
        for _ in range(m):
            op()
        torch.cuda.synchronize()
        out.append([s, time.monotonic(), m])
        i += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", required=True)
    ap.add_argument("--reference", required=True, help="the JSON file to write the reference to")
    ap.add_argument("--idle", type=float, default=2.0, help="seconds of active idle before ready, and before and after the replay (default 2)")
    ap.add_argument("--steady", type=float, default=0.0, help="seconds of back-to-back calls before ready (default 0: none)")
    ap.add_argument("--replay", type=float, default=10.0, help="seconds of the reference run after gpuwatt's calls: the same waits replayed (default 10; 0: none)")
    ap.add_argument("--poll-during", type=int, default=0, help="1: poll the counter during gpuwatt's calls too (default 0: paused then, gpuwatt reads it)")
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
    if not a.poll_during:
        poll.pause(True)  # gpuwatt reads the counter itself; the ring lost readings while
        # this poller read it back to back (results/nvidia-h200/2026-11-28-call-2)
    raw["paused"] = [time.monotonic(), None]
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
    poll.pause(False)
    raw["paused"][1] = t_end
    sys.stdout.close()  # gpuwatt has its answers: it writes its files while the replay runs
    if a.replay > 0 and len(spans) >= 3:
        raw["replay_idle_before"] = [t_end, None]
        time.sleep(a.idle)
        raw["replay_idle_before"][1] = time.monotonic()
        raw["replay_spans"] = replay(op, torch, spans, a.replay)
        t_end = time.monotonic()
    raw["idle_after"] = [t_end, None]
    time.sleep(a.idle)
    raw["idle_after"][1] = time.monotonic()
    poll.stop = True
    poll.join()
    raw["spans"], raw["changes"], raw["counter_reads"] = spans, poll.changes, poll.reads
    raw["reference"] = call_reference.reference(raw)
    if raw.get("replay_spans"):
        raw["replay_reference"] = call_reference.replay_reference(raw)
    with open(a.reference, "w") as fh:
        json.dump(raw, fh, indent=0)
    print("same run: %s" % call_reference.summary(raw["reference"]), file=sys.stderr)
    if raw.get("replay_reference"):
        print("reference: %s" % call_reference.summary(raw["replay_reference"]), file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
