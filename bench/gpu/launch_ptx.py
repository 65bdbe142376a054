#!/usr/bin/env python3
"""Launch gpuwatt's kernels once each from the PTX that `gpuwatt micro --ptx DIR` wrote
(DIR/kernels.json says the grid and the parameters), so that Nsight Compute can profile
them: bench/gpu/micro_verify.sh runs it under ncu. Needs cupy.

    python3 bench/gpu/launch_ptx.py DIR [NAME,NAME,...]

Prints one JSON line per kernel: its name, entry, and whether the launch succeeded.
"""
import json
import sys

import cupy as cp
import numpy as np


def main():
    d = sys.argv[1]
    names = set(sys.argv[2].split(",")) if len(sys.argv) > 2 and sys.argv[2] else None
    m = json.load(open(f"{d}/kernels.json"))
    for k in m["kernels"]:
        if names is not None and k["name"] not in names:
            continue
        try:
            mod = cp.RawModule(path=f"{d}/{k['file']}")
            f = mod.get_function(k["entry"])
            args, keep = [], []
            for p in k["params"]:
                t, v = p["type"], p.get("value", 0)
                if t == "buffer":
                    b = cp.zeros(int(p["size"]), dtype=cp.uint8)
                    keep.append(b)
                    args.append(b)
                elif t == "u32":
                    args.append(np.uint32(int(v)))
                elif t == "u64":
                    args.append(np.uint64(int(v)))
                elif t == "f32":
                    args.append(np.float32(v))
                elif t == "f64":
                    args.append(np.float64(v))
                else:
                    raise ValueError(f"parameter {p['name']}: type {t}")
            f((k["blocks"],), (k["threads"],), tuple(args), shared_mem=int(k.get("shared_bytes", 0)))
            cp.cuda.Device().synchronize()
            print(json.dumps({"name": k["name"], "entry": k["entry"], "ok": True}), flush=True)
            del keep
        except Exception as e:  # keep going: one kernel's failure is recorded
            print(json.dumps({"name": k["name"], "entry": k["entry"], "ok": False, "error": str(e)}), flush=True)


if __name__ == "__main__":
    main()
