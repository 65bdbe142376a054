"""A small PyTorch training loop (an MLP on random data) with a region per step, for
`gpuwatt measure -- python3 train.py`: steps of three batch sizes (so their energies
differ by about their work), each marked through python/gpuwatt/markers.py.

    --sync     torch.cuda.synchronize() at every marker (the region ends when its work ends)
    --no-sync  markers written when the work is queued: gpuwatt flags the regions that the
               power shows the work ran past

No .item() or other implicit sync inside the loop.
"""
import argparse
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
for p in (here, os.path.join(here, "..", "..", "..", "python")):
    if os.path.exists(os.path.join(p, "gpuwatt.py")) or os.path.exists(os.path.join(p, "gpuwatt", "__init__.py")):
        sys.path.insert(0, p)
        break
import gpuwatt  # noqa: E402
import torch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--sync", dest="sync", action="store_true", default=True)
ap.add_argument("--no-sync", dest="sync", action="store_false")
ap.add_argument("--steps", type=int, default=24)
ap.add_argument("--sizes", default="1024,4096,16384", help="batch sizes, in turn")
ap.add_argument("--hidden", type=int, default=8192)
ap.add_argument("--layers", type=int, default=4)
ap.add_argument("--pause", type=float, default=0.5, help="idle seconds between warm-up and training")
a = ap.parse_args()

torch.backends.cuda.matmul.allow_tf32 = False  # plain FP32: steps long enough to resolve
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
torch.manual_seed(0)
layers = []
for _ in range(a.layers):
    layers += [torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
sizes = [int(s) for s in a.sizes.split(",")]
data = {b: torch.randn(b, a.hidden, device=dev) for b in sizes}
gpuwatt.set_sync(torch.cuda.synchronize if a.sync else None)


def step(b):
    out = model(data[b])
    loss = out.pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


with gpuwatt.region("warmup"):
    for b in sizes:
        step(b)
torch.cuda.synchronize()
time.sleep(a.pause)

t0 = time.monotonic()
host = []
with gpuwatt.region("train"):
    for i in range(a.steps):
        b = sizes[i % len(sizes)]
        s = time.monotonic()
        with gpuwatt.region("step_b%d" % b):
            step(b)
        host.append((b, time.monotonic() - s))
queued = time.monotonic() - t0
torch.cuda.synchronize()
done = time.monotonic() - t0
flops = {b: 6 * b * a.layers * a.hidden * a.hidden for b in sizes}
print(json.dumps({"sync": a.sync, "steps": a.steps, "sizes": sizes, "hidden": a.hidden, "layers": a.layers,
                  "flops_per_step": flops, "train_host_s": queued, "train_done_s": done,
                  "step_host_s": host, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}))
