"""A PyTorch training loop measured per step, in-process (docs/python.md).

    python3 train_loop.py                    # the GPUs of this machine
    python3 train_loop.py --device sim       # no GPU (or no torch): simulated figures

Each step's energy on GPU 0 with its 95 % interval; the loop's total at the end, from
close()'s final figures (the ones `gpuwatt measure` gives the same spans).
"""

import argparse
import time

import gpuwatt

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="auto", help="gpuwatt's --device: auto, nvml, sim, sim:h200")
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--batch", type=int, default=4096)
args = ap.parse_args()

try:
    import torch
    cuda = torch.cuda.is_available() and not args.device.startswith("sim")
except ImportError:
    torch, cuda = None, False

if cuda:
    dev = torch.device("cuda:0")
    model = torch.nn.Sequential(torch.nn.Linear(4096, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 4096)).to(dev, torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, 4096, device=dev, dtype=torch.bfloat16)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(x).float().square().mean()
        loss.backward()
        opt.step()
    sync = torch.cuda.synchronize
else:
    def step():  # on the sim device the GPU's load is the sim's own: this only takes time
        time.sleep(0.05)
    sync = None

with gpuwatt.Monitor(device=args.device, gpus=[0], sync=sync) as mon:
    for i in range(args.steps):
        with mon.window("step") as w:
            step()
        m = w.measurement
        g = m.gpus[0]
        print("step %3d: %.4f s  %8.2f J  (95 %%: %.2f to %.2f J, %s)%s" % (
            i, m.time, g.energy_j, g.low_j, g.high_j, g.method, "  SIMULATED" if m.simulated else ""))
    final = mon.close()
steps = [m for m in final if m.name == "step"]
total = sum(m.gpus[0].energy_j for m in steps)
print("%d steps: %.1f J on GPU 0 (final figures, as measure gives them)%s" % (len(steps), total, ", SIMULATED" if steps and steps[0].simulated else ""))
