#!/usr/bin/env python3
"""Bursts of GPU load between idle gaps, for checking region energies (bench/gpu/crosscheck.sh).

    python3 bench/load/bursts.py --out bursts.jsonl [--lengths 0.05,0.1,0.2,0.5,1,2,3]
        [--repeats 3] [--gap 2] [--gap-jitter 0.5] [--seed 1] [--n 8192]

Each burst is bf16 matrix products (n x n, as bench/load/matmul.py) run back to back for
its length; the lengths, each --repeats times, run in an order shuffled with --seed, and
every burst is preceded by an idle gap of --gap plus a uniform random extra of up to
--gap-jitter seconds (so that bursts fall at every phase of the sensors' update periods).
A last gap follows the last burst. A burst's start is time.time() (the wall clock) taken after
torch.cuda.synchronize() just before its first product, its end the same after its last
product has finished; each burst is one JSON line in --out:

    {"name": "burst-03-0.2s", "length_s": 0.2, "start_unix_s": ..., "end_unix_s": ...,
     "products": 97, "gpu_uuid": "GPU-..."}

(gpu_uuid when torch can tell it.) A burst overshoots its length by at most one product
(about 2 ms at n = 8192 on an H200). Prints one summary line on stdout.
"""
import argparse
import json
import random
import sys
import time


def parse_lengths(s):
    out = []
    for x in s.split(","):
        x = x.strip()
        if not x:
            continue
        v = float(x)
        if not v > 0:
            raise argparse.ArgumentTypeError(f"--lengths: {x} is not a positive number of seconds")
        out.append(v)
    if not out:
        raise argparse.ArgumentTypeError("--lengths: no length given")
    return out


def schedule(lengths, repeats, seed):
    """The bursts' lengths in the order they run: each length repeats times, shuffled."""
    order = [L for L in lengths for _ in range(repeats)]
    random.Random(seed).shuffle(order)
    return order


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="JSON lines file of the bursts' times")
    ap.add_argument("--lengths", type=parse_lengths, default=parse_lengths("0.05,0.1,0.2,0.5,1,2,3"),
                    help="burst lengths in seconds, comma separated (default 0.05,0.1,0.2,0.5,1,2,3)")
    ap.add_argument("--repeats", type=int, default=3, help="times each length runs (default 3)")
    ap.add_argument("--gap", type=float, default=2.0,
                    help="idle seconds before each burst and after the last (default 2; at least 1.5: "
                         "a 1 s averaging sensor needs about 1.1 s to settle, and the check pads each "
                         "burst by 0.15 s plus up to one counter period on either side)")
    ap.add_argument("--gap-jitter", type=float, default=0.5,
                    help="a random extra of up to this many seconds added to each gap (default 0.5)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the order and the gaps (default 1)")
    ap.add_argument("--n", type=int, default=8192, help="matrix size (default 8192)")
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error("--repeats: want at least 1")
    if a.gap < 1.5:
        ap.error(f"--gap {a.gap}: want at least 1.5 s, so that the sensors settle between bursts")
    if a.gap_jitter < 0:
        ap.error("--gap-jitter: want >= 0")

    import torch  # here, so that --help and argument errors work without torch

    rng = random.Random(a.seed + 1)
    order = schedule(a.lengths, a.repeats, a.seed)
    x = torch.randn(a.n, a.n, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(a.n, a.n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):  # cuBLAS's set-up and the first launches, before any gap
        z = x @ y
    torch.cuda.synchronize()
    uuid = ""
    try:
        u = getattr(torch.cuda.get_device_properties(0), "uuid", None)
        if u is not None:
            uuid = "GPU-" + str(u) if not str(u).startswith("GPU-") else str(u)
    except Exception:  # an older torch: the check of the GPU falls back on the trace's
        uuid = ""

    products = 0
    busy = 0.0
    with open(a.out, "w") as f:
        for i, L in enumerate(order):
            time.sleep(a.gap + rng.uniform(0, a.gap_jitter))
            torch.cuda.synchronize()
            start = time.time()
            n = 0
            while True:
                z = x @ y
                n += 1
                torch.cuda.synchronize()
                end = time.time()
                if end - start >= L:
                    break
            products += n
            busy += end - start
            rec = {"name": f"burst-{i:02d}-{L:g}s", "length_s": L, "start_unix_s": round(start, 6),
                   "end_unix_s": round(end, 6), "products": n}
            if uuid:
                rec["gpu_uuid"] = uuid
            f.write(json.dumps(rec) + "\n")
            f.flush()
        time.sleep(a.gap)
    del z
    flops = 2 * a.n**3 * products
    print(f"bursts: {len(order)} bursts, {products} products of {a.n}^3 bf16 in {busy:.3f} s of bursts = "
          f"{flops / busy / 1e12:.1f} TFLOP/s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
