"""An inference server's loop measured per request, in-process (docs/python.md).

    python3 serve_loop.py                    # the GPUs of this machine
    python3 serve_loop.py --device sim       # no GPU (or no torch): simulated figures

Requests of different sizes arrive from a queue; each is a window, ended without waiting
for the sensors (end_window(wait=False)) so the loop serves the next request at once; the
figures are collected afterwards with result(). Energy per request and per token.
"""

import argparse
import random
import time

import gpuwatt

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="auto")
ap.add_argument("--requests", type=int, default=20)
args = ap.parse_args()

try:
    import torch
    cuda = torch.cuda.is_available() and not args.device.startswith("sim")
except ImportError:
    torch, cuda = None, False

if cuda:
    dev = torch.device("cuda:0")
    w1 = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)

    def infer(tokens):
        x = torch.randn(tokens, 4096, device=dev, dtype=torch.bfloat16)
        for _ in range(8):
            x = torch.tanh(x @ w1)
        return x
    sync = torch.cuda.synchronize
else:
    def infer(tokens):
        time.sleep(tokens / 20000.0)
    sync = None

rng = random.Random(1)
pending = []
with gpuwatt.Monitor(device=args.device, gpus=[0], sync=sync) as mon:
    for i in range(args.requests):
        tokens = rng.choice([256, 1024, 4096])
        mon.begin_window("request")
        infer(tokens)
        pending.append((tokens, mon.end_window("request", wait=False)))
        time.sleep(0.02)  # the next request's arrival
    for tokens, wid in pending:
        m = mon.result(wid)
        g = m.gpus[0]
        print("request %2d (%4d tokens): %.4f s  %7.2f J (95 %%: %.2f to %.2f)  %.2f mJ/token%s" % (
            m.instance, tokens, m.time, g.energy_j, g.low_j, g.high_j, 1e3 * g.energy_j / tokens, "  SIMULATED" if m.simulated else ""))
