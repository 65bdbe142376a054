#!/usr/bin/env python3
"""A steady GPU load for gpuwatt's recorded runs: bf16 matrix products for a fixed time.

Prints one line: the seconds spent in the loop and the TFLOP/s reached, so a wrapper's
overhead can be read off the command's own timing.
"""
import argparse
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=5.0)
ap.add_argument("--n", type=int, default=8192)
ap.add_argument("--iters", type=int, default=0, help="fixed number of products instead of --seconds")
a = ap.parse_args()

x = torch.randn(a.n, a.n, device="cuda", dtype=torch.bfloat16)
y = torch.randn(a.n, a.n, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    z = x @ y
torch.cuda.synchronize()

t0 = time.perf_counter()
done = 0
while True:
    for _ in range(10):
        z = x @ y
    done += 10
    torch.cuda.synchronize()
    el = time.perf_counter() - t0
    if (a.iters and done >= a.iters) or (not a.iters and el >= a.seconds):
        break
flops = 2 * a.n**3 * done
print(f"matmul: {done} products of {a.n}^3 bf16 in {el:.4f} s = {flops/el/1e12:.1f} TFLOP/s", flush=True)
