#!/usr/bin/env python3
"""Each call measured twice by `gpuwatt call`, minutes apart, on one GPU, and once by a
reference run of the counter alone (issue 34: run-to-run spread; bench/gpu/call_repeat.sh).

    python3 bench/gpu/call_repeat.py --out OUTDIR --items "name op batch;..." [--passes 2]
        [--gpuwatt .gpu/gpuwatt] [--gpu 0] [--target 1%] [--budget 270] [--replay 10] [--idle 2]
        [--sensor MODEL] [--extra "ARGS"]

One process sets every call up once (torch, bf16 on cuda:0 = the GPU of --gpu through
CUDA_VISIBLE_DEVICES) and warms each up, and polls NVML's energy counter in a thread of its
own (call_worker.Poller: no gpuwatt code), paused while gpuwatt measures. Then, in passes
(pass 1: every item; pass 2: every item again, in the same order, so the two runs of an
item are a pass apart: minutes), for each item it starts `gpuwatt call --stdio --out
OUTDIR/<item>-run<pass>` and answers its protocol itself (`call N`: N calls back to back
between two torch.cuda.synchronize(), `done T0 T1` with time.monotonic()). After the last
pass's run of an item it replays that run's calls with its own waits for --replay s (the
reference, as call_worker.py --replay does). Between runs, --idle s of active idle with the
poller on (the idle after one run and before the next). Each run's OUTDIR/<item>-run<pass>/
reference.json has the counter's changes around it and both figures of
bench/gpu/call_reference.py (`reference`: the counter over that gpuwatt run;
`replay_reference`: the replay, after the last pass only).

Each run's --max-time is its share of what is left of --budget (wall seconds for every
run, replay and idle), less the run's fixed cost (lead, tail, idle gaps, idle, replay).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import call_reference  # noqa: E402
from call_worker import Poller, make_op, replay  # noqa: E402

FIXED_S = 6.0  # per run besides its --max-time (which holds the idle gaps): gpuwatt's start, lead 2 s, tail 2 s, writing
REPLAY_EXTRA_S = 2.0  # a replay's idle before it (its --idle after is the run's own)


def run_gpuwatt(argv, op, torch, log):
    """One `gpuwatt call --stdio` run, its protocol answered here: the spans [t0, t1, n],
    when its first request came, its exit code."""
    spans, first = [], None
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
    try:
        proc.stdin.write("ready\n")
        proc.stdin.flush()
        for line in proc.stdout:
            f = line.split()
            if len(f) != 2 or f[0] != "call":
                continue
            if first is None:
                first = time.monotonic()
            n = int(f[1])
            torch.cuda.synchronize()
            s = time.monotonic()
            for _ in range(n):
                op()
            torch.cuda.synchronize()
            e = time.monotonic()
            spans.append([s, e, n])
            proc.stdin.write("done %.9f %.9f\n" % (s, e))
            proc.stdin.flush()
    except BrokenPipeError:
        pass
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            code = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
    return spans, first, code


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--items", required=True, help='"name op batch;name op batch;..."')
    ap.add_argument("--passes", type=int, default=2)
    ap.add_argument("--gpuwatt", default=".gpu/gpuwatt")
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--target", default="1%")
    ap.add_argument("--budget", type=float, default=270.0, help="wall seconds for every run, replay and idle (default 270)")
    ap.add_argument("--max-time", type=float, default=30.0, help="at most this many seconds of calls per run (default 30)")
    ap.add_argument("--replay", type=float, default=10.0)
    ap.add_argument("--min-calls", type=int, default=20, help="gpuwatt call --min-calls: its first check, and an idle gap (default 20: 3-4 gaps in a run of ~10 s)")
    ap.add_argument("--idle", type=float, default=2.0)
    ap.add_argument("--sensor", default="rc:tau=14ms,period=20ms,delay=4ms")
    ap.add_argument("--extra", default="", help="more gpuwatt call flags")
    a = ap.parse_args()

    items = []
    for part in a.items.split(";"):
        f = part.split()
        if len(f) == 3:
            items.append((f[0], f[1], int(f[2])))
    if not items:
        sys.exit("call_repeat.py: no items in %r" % a.items)
    import pynvml
    import torch
    ops = {}
    for name, spec, _ in items:
        op, flops = make_op(spec)
        for _ in range(20):
            op()
        torch.cuda.synchronize()
        ops[name] = (op, flops, spec)
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(a.gpu)
    board = {"gpu": a.gpu, "name": str(pynvml.nvmlDeviceGetName(h)), "uuid": str(pynvml.nvmlDeviceGetUUID(h))}
    poll = Poller(pynvml, h)
    poll.start()
    os.makedirs(a.out, exist_ok=True)
    t_start = time.monotonic()
    order = [(p, it) for p in range(1, a.passes + 1) for it in items]
    runs = []
    time.sleep(a.idle)
    for k, (p, (name, spec, batch)) in enumerate(order):
        op, flops, _ = ops[name]
        last_pass = p == a.passes
        # this run's share of what is left: the runs left each cost FIXED_S and an idle, the
        # last pass's a replay too
        left = order[k:]
        fixed = sum(FIXED_S + a.idle + (a.replay + REPLAY_EXTRA_S if q == a.passes else 0) for q, _ in left)
        share = (a.budget - (time.monotonic() - t_start) - fixed) / len(left)
        mt = int(max(5, min(a.max_time, share)))
        d = os.path.join(a.out, "%s-run%d" % (name, p))
        argv = [a.gpuwatt, "call", "--stdio", "--quiet", "--gpu", str(a.gpu), "--target", a.target, "--max-time", "%ds" % mt,
                "--batch", str(batch), "--min-calls", str(a.min_calls), "--warmup", "0", "--sensor", a.sensor, "--lead", "2s", "--tail", "2s", "--out", d]
        argv += shlex.split(a.extra)
        raw = dict(board, op=spec, flops=flops, item=name, run=p, idle_s=a.idle, argv=argv)
        raw["idle_before"] = [time.monotonic() - a.idle, None]
        print("== %s pass %d: %s" % (name, p, " ".join(argv)), flush=True)
        poll.pause(True)
        raw["paused"] = [time.monotonic(), None]
        with open(os.path.join(a.out, "%s-run%d.stderr.txt" % (name, p)), "w") as log:
            s0 = time.monotonic()
            spans, first, code = run_gpuwatt(argv, op, torch, log)
        t_end = time.monotonic()
        poll.pause(False)
        raw["paused"][1] = t_end
        raw["exit"] = code
        print("   exit %d in %.1f s, %d repetitions" % (code, t_end - s0, len(spans)), flush=True)
        if last_pass and a.replay > 0 and len(spans) >= 3:
            raw["replay_idle_before"] = [t_end, None]
            time.sleep(a.idle)
            raw["replay_idle_before"][1] = time.monotonic()
            raw["replay_spans"] = replay(op, torch, spans, a.replay)
            t_end = time.monotonic()
        raw["idle_after"] = [t_end, None]
        time.sleep(a.idle)
        raw["idle_after"][1] = time.monotonic()
        raw["spans"] = spans
        # the counter's changes around this run only (a lattice fitted over minutes of them
        # would drift)
        lo, hi = raw["idle_before"][0] - 0.2, raw["idle_after"][1] + 0.2
        ch = [c for c in list(poll.changes) if lo <= c[0] <= hi]
        if ch and len(ch[0]) == 3:
            ch[0] = ch[0] + ["first"]  # its bracket began before this run's window
        raw["changes"] = ch
        raw["reference"] = call_reference.reference(raw)
        if raw.get("replay_spans"):
            raw["replay_reference"] = call_reference.replay_reference(raw)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "reference.json"), "w") as fh:
            json.dump(raw, fh, indent=0)
        print("   same run: %s" % call_reference.summary(raw["reference"]), flush=True)
        if raw.get("replay_reference"):
            print("   reference: %s" % call_reference.summary(raw["replay_reference"]), flush=True)
        runs.append(d)
    poll.stop = True
    poll.join()
    print("done in %.1f s (%d counter reads)" % (time.monotonic() - t_start, poll.reads), flush=True)


if __name__ == "__main__":
    main()
