# Bursts of bf16 matmul with pauses, ~50 s of GPU work, for gpuwatt serve's H200 run.
import json, sys, time
import torch
out = sys.argv[1]
t_start = time.time()
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
torch.cuda.synchronize()
pattern = [(3, 2), (1, 2), (5, 3), (0.5, 1.5), (2, 2), (8, 4), (0.2, 1.8), (4, 3), (6, 3), (1, 2)]
bursts = []
for on, off in pattern:
    s = time.time()
    n = 0
    while time.time() - s < on:
        for _ in range(4):
            c = a @ b
        torch.cuda.synchronize()
        n += 4
    e = time.time()
    bursts.append({"start_unix": s, "end_unix": e, "matmuls": n})
    time.sleep(off)
json.dump({"start_unix": t_start, "end_unix": time.time(), "bursts": bursts}, open(out, "w"), indent=1)
