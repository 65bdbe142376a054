#!/usr/bin/env python3
"""NCCL all-reduce across every GPU of the host (issue 18's workload).

One process per GPU (torch.multiprocessing), NCCL backend, a float32 tensor of --mib MiB
all-reduced back to back for --seconds. NVLink multicast (NVLS) is kept off, as the
device docs require: NCCL_NVLS_ENABLE=0 is set before NCCL starts. With one GPU NCCL runs
a single rank (no traffic), which exercises the script and gpuwatt's per-GPU paths.
Each rank prints its iterations and bus bandwidth (NCCL's busBw: 2(n-1)/n x bytes / time).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, n, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=n)
    x = torch.ones(args.mib * 1024 * 1024 // 4, device="cuda")
    for _ in range(3):  # warm-up: NCCL's rings and buffers
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.time()
    it = 0
    while True:
        dist.all_reduce(x)
        it += 1
        if it % 8 == 0:
            torch.cuda.synchronize()
            # every rank stops at the same iteration: rank 0 decides
            stop = torch.tensor([1 if time.time() - t0 >= args.seconds else 0], device="cuda")
            dist.broadcast(stop, 0)
            if stop.item():
                break
    torch.cuda.synchronize()
    dt = time.time() - t0
    nbytes = x.numel() * 4
    bus = 2 * (n - 1) / n * nbytes * it / dt / 1e9 if n > 1 else 0.0
    print(f"rank {rank}: {it} all-reduces of {args.mib} MiB in {dt:.2f} s, busBw {bus:.1f} GB/s", flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--port", type=int, default=29511)
    args = ap.parse_args()
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    n = torch.cuda.device_count()
    if n < 1:
        raise SystemExit("no CUDA device")
    mp.spawn(worker, args=(n, args), nprocs=n, join=True)


if __name__ == "__main__":
    main()
