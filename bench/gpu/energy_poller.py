#!/usr/bin/env python3
"""An independent log of NVML's energy counter, for checking gpuwatt against a reference it
did not make (bench/gpu/crosscheck.sh).

    python3 bench/gpu/energy_poller.py --out poller.csv [--gpu 0] [--interval 0]

Reads nvmlDeviceGetTotalEnergyConsumption (mJ since the driver loaded) of one GPU as fast as
it goes (one call takes about 3 ms on an H200) until SIGINT or SIGTERM, and writes one CSV row
per call:

    t_before_unix_s,t_after_unix_s,energy_mj

t_before/t_after are time.time() (the wall clock, the same one Python's and Go's time use)
just before and just after the call: the counter was read somewhere between them. Every call
is logged, repeats included; the counter's updates (every ~100 ms on Hopper) are the rows
where the value changes. A JSON file beside the CSV (OUT.meta.json) names the GPU (index,
name, UUID), the driver, the NVML version and the number of calls.

Standard library and pynvml (nvidia-ml-py) only: no gpuwatt code, so that the reference is
independent of what it checks.
"""
import argparse
import json
import os
import signal
import sys
import time

import pynvml


def text(x):
    return x.decode() if isinstance(x, bytes) else str(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the CSV to write")
    ap.add_argument("--gpu", type=int, default=0, help="NVML index of the GPU (default 0)")
    ap.add_argument("--interval", type=float, default=0.0,
                    help="seconds to sleep between calls (default 0: as fast as it goes)")
    ap.add_argument("--seconds", type=float, default=0.0,
                    help="stop after this long (default 0: run until SIGINT or SIGTERM)")
    a = ap.parse_args()

    stop = False

    def on_signal(signum, frame):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(a.gpu)
    meta = {
        "gpu": a.gpu,
        "name": text(pynvml.nvmlDeviceGetName(h)),
        "uuid": text(pynvml.nvmlDeviceGetUUID(h)),
        "driver_version": text(pynvml.nvmlSystemGetDriverVersion()),
        "nvml_version": text(pynvml.nvmlSystemGetNVMLVersion()),
        "interval_s": a.interval,
        "started_unix_s": time.time(),
    }
    calls, errors, failing, last_error = 0, 0, 0, ""
    t_end = time.time() + a.seconds if a.seconds > 0 else float("inf")
    with open(a.out, "w", buffering=1 << 20) as f:
        f.write("t_before_unix_s,t_after_unix_s,energy_mj\n")
        while not stop:
            t0 = time.time()
            try:
                mj = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
            except pynvml.NVMLError as e:  # counted; fatal only when every call fails for long
                errors, failing, last_error = errors + 1, failing + 1, str(e)
                if failing >= 1000:
                    print(f"energy_poller: 1000 calls in a row failed: {e}", file=sys.stderr)
                    break
                time.sleep(0.001)
                continue
            failing = 0
            t1 = time.time()
            f.write(f"{t0:.6f},{t1:.6f},{mj}\n")
            calls += 1
            if calls == 1:
                f.flush()  # the first row at once: a wrapper waits for it to know the poller runs
            if t1 >= t_end:
                break
            if a.interval > 0:
                time.sleep(a.interval)
    meta.update(stopped_unix_s=time.time(), calls=calls, errors=errors, last_error=last_error)
    with open(a.out + ".meta.json", "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    pynvml.nvmlShutdown()
    print(f"energy_poller: {calls} calls ({errors} errors) of GPU {a.gpu} {meta['uuid']} in "
          f"{meta['stopped_unix_s'] - meta['started_unix_s']:.1f} s -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
