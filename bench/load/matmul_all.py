#!/usr/bin/env python3
"""bf16 matrix products on every GPU of the host at once (issue 36's power-cap load).

    python3 bench/load/matmul_all.py --seconds 30 [--n 8192] [--duty 1,1,1,0.5]
        [--span 0,1] [--out ranks.jsonl]

One process per GPU (torch.multiprocessing, no NCCL: the boards work independently, as
data-parallel GEMMs do between their all-reduces), each running n x n bf16 products back to
back for --seconds. --duty gives each GPU's share of busy time in 100 ms periods (1 = always
busy, drives an H100/H200 to its 700 W cap; 0.5 = 50 ms busy, 50 ms idle), so one board can be
held below the others: the per-GPU skew check. --span A,B makes the process of GPU A also
drive GPU B (one process spanning two GPUs, for serve's per-process energy); GPU B then gets
no process of its own. Each process prints one line per GPU it drove and, with --out, one
JSON line: {"gpu": i, "pid": ..., "products": ..., "seconds": ..., "tflops": ...}.
NVLink multicast is not used (no collectives at all).
"""
import argparse
import json
import os
import time

import torch
import torch.multiprocessing as mp


def drive(gpus, args, duties, q):
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    mats = []
    for g in gpus:
        with torch.cuda.device(g):
            x = torch.randn(args.n, args.n, device=f"cuda:{g}", dtype=torch.bfloat16)
            y = torch.randn(args.n, args.n, device=f"cuda:{g}", dtype=torch.bfloat16)
            for _ in range(3):
                x @ y
            mats.append((g, x, y))
    for g, _, _ in mats:
        torch.cuda.synchronize(g)
    done = {g: 0 for g in gpus}
    t0 = time.perf_counter()
    period = 0.1
    while True:
        el = time.perf_counter() - t0
        if el >= args.seconds:
            break
        phase = el % period
        for g, x, y in mats:
            if phase < duties[g] * period:
                with torch.cuda.device(g):
                    for _ in range(2):
                        x @ y
                done[g] += 2
        for g, _, _ in mats:
            torch.cuda.synchronize(g)
        if all(phase >= duties[g] * period for g in gpus):
            time.sleep(min(period - phase, 0.005))
    el = time.perf_counter() - t0
    for g in gpus:
        tf = 2 * args.n**3 * done[g] / el / 1e12
        print(f"gpu {g} (pid {os.getpid()}): {done[g]} products of {args.n}^3 bf16 in {el:.2f} s = {tf:.1f} TFLOP/s, duty {duties[g]}", flush=True)
        q.put({"gpu": g, "pid": os.getpid(), "products": done[g], "seconds": el, "tflops": tf, "duty": duties[g]})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--duty", default="", help="per-GPU busy share, comma-separated (default all 1)")
    ap.add_argument("--span", default="", help="A,B: GPU A's process also drives GPU B")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    n = torch.cuda.device_count()
    if n < 1:
        raise SystemExit("no CUDA device")
    duties = [1.0] * n
    if args.duty:
        for i, d in enumerate(args.duty.split(",")[:n]):
            duties[i] = float(d)
    groups = [[g] for g in range(n)]
    if args.span:
        a, b = (int(v) for v in args.span.split(","))
        groups = [g for g in groups if g[0] != b]
        for g in groups:
            if g[0] == a:
                g.append(b)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=drive, args=(g, args, duties, q)) for g in groups]
    for p in ps:
        p.start()
    rows = [q.get() for g in groups for _ in g]
    for p in ps:
        p.join()
    if args.out:
        with open(args.out, "w") as f:
            for r in sorted(rows, key=lambda r: r["gpu"]):
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
