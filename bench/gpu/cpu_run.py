#!/usr/bin/env python3
"""Run one command and measure its own process's CPU from /proc (issue 35).

    python3 bench/gpu/cpu_run.py --name NAME --out FILE.json --window A B [--stop-after S]
        [--gpus N] [--stdout F] [--stderr F] -- CMD ...

The CPU (user + system) of the process CMD starts, its own threads only (/proc/PID/stat
utime and stime: a child it runs and waits for is not counted, unlike wait4's rusage), over
the window from A to B seconds after its start, as % of one core; and over its whole life,
read from its last /proc entry (the zombie, before it is reaped). With --stop-after S the
process gets SIGTERM at S seconds (serve); otherwise it is waited for. The per-thread CPU
over the window (the driver's own threads show there, not in a Go profile) goes in the JSON
too. --gpus N: the GPUs it records, for the per-GPU figure.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

TCK = os.sysconf("SC_CLK_TCK")


def stat(pid, tid=None):
    """(state, utime + stime in ticks) of a process or one of its threads, or None."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        with open(path) as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(")") + 2:].split()  # fields from the 3rd (state) on
    return rest[0], int(rest[11]) + int(rest[12])


def threads(pid):
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        st = stat(pid, t)
        if st is None:
            continue
        try:
            with open(f"/proc/{pid}/task/{t}/comm") as f:
                comm = f.read().strip()
        except OSError:
            comm = "?"
        out[t] = (comm, st[1])
    return out


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--window", nargs=2, type=float, required=True)
    ap.add_argument("--stop-after", type=float, default=0)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--stdout", default=os.devnull)
    ap.add_argument("--stderr", default=os.devnull)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if not cmd:
        ap.error("no command")
    t_a, t_b = a.window
    if not 0 <= t_a < t_b:
        ap.error("--window A B: want 0 <= A < B")
    with open(a.stdout, "wb") as so, open(a.stderr, "wb") as se:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=so, stderr=se)

        def sleep_until(t):
            while True:
                left = t0 + t - time.monotonic()
                if left <= 0 or p.poll() is not None:
                    return
                time.sleep(min(left, 0.05))

        res = {"name": a.name, "cmd": cmd, "gpus": a.gpus, "window_s": [t_a, t_b], "ticks_per_s": TCK}
        sleep_until(t_a)
        s0, w0, th0 = stat(p.pid), time.monotonic(), threads(p.pid)
        sleep_until(t_b)
        s1, w1, th1 = stat(p.pid), time.monotonic(), threads(p.pid)
        if s0 and s1 and s0[0] != "Z" and s1[0] != "Z" and w1 > w0:
            res["window_wall_s"] = w1 - w0
            res["window_cpu_s"] = (s1[1] - s0[1]) / TCK
            res["window_cpu_pct"] = 100 * res["window_cpu_s"] / res["window_wall_s"]
            res["window_cpu_pct_per_gpu"] = res["window_cpu_pct"] / max(a.gpus, 1)
            res["threads"] = sorted(
                ([tid, c, (th1[tid][1] - th0.get(tid, (c, 0))[1]) / TCK] for tid, (c, _) in th1.items()),
                key=lambda x: -x[2])
        else:
            res["window_error"] = "the process ended before the window did"
        if a.stop_after:
            sleep_until(a.stop_after)
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        # The last /proc entry: the zombie's utime and stime, before it is reaped.
        last = None
        while True:
            st = stat(p.pid)
            if st is None:
                break
            last = st
            if st[0] == "Z":
                break
            time.sleep(0.02)
        rc = p.wait()
        res["exit"] = rc
        res["life_wall_s"] = time.monotonic() - t0
        if last is not None:
            res["life_cpu_s"] = last[1] / TCK
            res["life_cpu_pct"] = 100 * res["life_cpu_s"] / res["life_wall_s"]
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"{a.name}: exit {rc}, window {res.get('window_cpu_pct', float('nan')):.2f} % of a core"
          f" ({res.get('window_cpu_pct_per_gpu', float('nan')):.2f} % per GPU), life {res.get('life_cpu_pct', float('nan')):.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
