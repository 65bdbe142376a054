#!/usr/bin/env python3
"""Where the run-to-run spread of a call's energy comes from (issue 34): the same GEMMs read
by NVML's energy counter alone (no gpuwatt), run after run, changing one thing at a time.

    python3 bench/gpu/call_spread.py --out OUTDIR --round R --seed S [--items "name op batch;..."]
        [--seconds 8] [--idle 2] [--wait 0.19] [--gpu 0] [--rounds-here 1]

One process: sets the GEMMs up with torch.manual_seed(S) operands, warms them up, and for
each of --rounds-here rounds (numbered from --round) runs every item for --seconds: repetitions
of `batch` calls back to back, each after --wait s (as gpuwatt call places them, ~0.19 s),
with --idle s of idle between items; a thread of its own polls the counter every ~20 ms
(call_worker.Poller). --reseed S2 re-creates the operands with manual_seed(S2) before the
last round here (fresh data, same process). Writes OUTDIR/round<R>.json per round: per item
the spans, the counter's changes around them, the temperature before and after, and
bench/gpu/call_reference.py's figure (E/N above the idle before and after: per call above
active idle ± 95 %). bench/gpu/call_spread_table.py compares the rounds.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import call_reference  # noqa: E402
from call_worker import Poller, make_op, replay  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--round", type=int, required=True)
    ap.add_argument("--rounds-here", type=int, default=1)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--reseed", type=int, default=0, help="re-create the operands with this seed before the last round here (0: no)")
    ap.add_argument("--items", required=True)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--idle", type=float, default=2.0)
    ap.add_argument("--wait", type=float, default=0.19)
    ap.add_argument("--gpu", type=int, default=0)
    a = ap.parse_args()
    items = [tuple(p.split()) for p in a.items.split(";") if len(p.split()) == 3]
    import pynvml
    import torch

    def build(seed):
        torch.manual_seed(seed)
        ops = {}
        for name, spec, _ in items:
            op, _ = make_op(spec)
            for _ in range(20):
                op()
            torch.cuda.synchronize()
            ops[name] = op
        return ops

    t_setup = time.monotonic()
    ops = build(a.seed)
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(a.gpu)
    temp = lambda: pynvml.nvmlDeviceGetTemperature(h, 0)
    poll = Poller(pynvml, h)
    poll.start()
    os.makedirs(a.out, exist_ok=True)
    time.sleep(a.idle)
    for k in range(a.rounds_here):
        rnd, seed = a.round + k, a.seed
        if a.reseed and k == a.rounds_here - 1:
            del ops
            torch.cuda.empty_cache()
            ops = build(a.reseed)
            seed = a.reseed
            time.sleep(a.idle)
        out = {"round": rnd, "seed": seed, "pid": os.getpid(), "uuid": str(pynvml.nvmlDeviceGetUUID(h)), "items": {}}
        for name, spec, batch in items:
            b = int(batch)
            spans = [[0.0, 0.045, b], [0.045 + a.wait, 0.09 + a.wait, b]]  # replay() takes the waits and batches from these
            rec = {"op": spec, "batch": b, "temp_before": temp(), "idle_before": [time.monotonic() - a.idle, None]}
            rs = replay(ops[name], torch, spans, a.seconds)
            t_end = time.monotonic()
            rec["idle_after"] = [t_end, None]
            time.sleep(a.idle)
            rec["idle_after"][1] = time.monotonic()
            rec["temp_after"] = temp()
            lo, hi = rec["idle_before"][0] - 0.2, rec["idle_after"][1] + 0.2
            ch = [c for c in list(poll.changes) if lo <= c[0] <= hi]
            if ch and len(ch[0]) == 3:
                ch[0] = ch[0] + ["first"]
            raw = {"changes": ch, "spans": rs, "idle_before": rec["idle_before"], "idle_after": rec["idle_after"]}
            rec["spans"], rec["changes"] = rs, ch
            rec["figure"] = call_reference.reference(raw)
            out["items"][name] = rec
            print("round %d seed %d %s: %s; %d->%d C" % (rnd, seed, name, call_reference.summary(rec["figure"]), rec["temp_before"], rec["temp_after"]), flush=True)
        with open(os.path.join(a.out, "round%d.json" % rnd), "w") as fh:
            json.dump(out, fh)
    poll.stop = True
    poll.join()
    print("done in %.1f s" % (time.monotonic() - t_setup), flush=True)


if __name__ == "__main__":
    main()
