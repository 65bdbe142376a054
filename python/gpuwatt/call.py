"""The energy of one call of your own code: gpuwatt.measure_call (docs/call.md).

    import torch, gpuwatt
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    res = gpuwatt.measure_call(lambda: a @ a, sync=torch.cuda.synchronize, target=0.01)
    print(res.active_j, res.active_low_j, res.active_high_j, res.calls)

gpuwatt (`gpuwatt call --stdio`) records the GPU and tells this process when to run the
call: each repetition starts at a phase spread over the power sensor's update cycle, and
the calls' energies are averaged until the 95 % interval is as tight as `target` asks. This
process runs the call where gpuwatt says `call N` (N times back to back), synchronises, and
answers `done T0 T1` with time.monotonic() around the work; the result is read from the
call.json gpuwatt writes.
"""

import json
import os
import shutil
import subprocess
import tempfile
import time

from .monitor import RecorderError, SimulatedError, _find_binary


class CallResult:
    """The energy of one call: every key of gpuwatt's call.json (docs/call.md) as `raw`, and
    the main figures as attributes: seconds, energy_j (over the call's own span, active idle
    included) and active_j (above the power between calls), each with _low/_high (95 %, the
    figure's scale) and active_abs_low_j/active_abs_high_j (the board's ±5 % gain error
    added); calls, batch, calls_needed, reached, rel_half_width, channel, scale (the energy
    counter's over the whole run where it resolves the calls to ±2 %, else the channel's
    own), run_to_run_j (the interval's run-to-run part, J per call; 0: none), simulated,
    warnings, incomplete."""

    def __init__(self, raw):
        self.raw = raw
        t, e, a = raw["time_s"], raw["energy_j"], raw["active_j"]
        self.seconds, self.seconds_low, self.seconds_high = t["value"], t["low"], t["high"]
        self.energy_j, self.energy_low_j, self.energy_high_j = e["value"], e["low"], e["high"]
        self.active_j, self.active_low_j, self.active_high_j = a["value"], a["low"], a["high"]
        self.active_abs_low_j = a.get("absolute_low", 0.0)
        self.active_abs_high_j = a.get("absolute_high", 0.0)
        self.active_idle_w = raw["active_idle_w"]["value"]
        self.calls, self.batch = raw["calls"], raw["batch"]
        self.calls_needed, self.reached = raw["calls_needed"], raw["reached"]
        self.rel_half_width, self.target = raw["rel_half_width"], raw["target"]
        self.channel, self.simulated = raw["channel"], raw["simulated"]
        self.scale = raw.get("scale", self.channel)
        self.run_to_run_j = (raw.get("run_to_run") or {}).get("half_width_j", 0.0)
        self.warnings = [w.get("message", "") for w in raw.get("warnings") or []]
        self.incomplete = raw.get("incomplete", False)

    def __repr__(self):
        return "CallResult(%.6g J above active idle ±%.2g %%, %.6g s per call, %d calls of %d)" % (
            self.active_j, 100 * self.rel_half_width, self.seconds, self.calls, self.batch)


def measure_call(fn, sync=None, target=0.02, calls=0, batch=1, device="auto", gpu=0, sensor=None,
                 max_calls=0, max_time=None, binary=None, out=None, allow_simulated=False, extra_args=()):
    """Measure the energy of one call of fn (no arguments; its result is ignored).

    sync: a callable that waits for the GPU's queued work (torch.cuda.synchronize); called
    before and after each repetition, whose times are taken around it. target: the relative
    half-width of the 95 % interval to stop at (0.01: ±1 %); calls: a fixed number instead;
    batch: calls back to back per repetition (the figures are per call). device, gpu, sensor
    (a sensor.json of `gpuwatt sensor`, or a model string), max_calls, max_time (seconds):
    as `gpuwatt call`'s flags. out: a directory for call.json and the recording (default: a
    temporary one, removed). device="auto" on a machine without a GPU driver raises
    RecorderError naming the libraries looked for (gpuwatt call exits 2: auto never falls
    back to the sim); a result on the sim device raises SimulatedError unless device starts
    with "sim" or allow_simulated is True. An exception from fn ends
    the measurement and is raised again."""
    if not callable(fn):
        raise TypeError("gpuwatt.measure_call: fn wants a callable, got %r" % (fn,))
    if sync is not None and not callable(sync):
        raise TypeError("gpuwatt.measure_call: sync wants a callable or None, got %r" % (sync,))
    own = out is None
    out_dir = tempfile.mkdtemp(prefix="gpuwatt-call-") if own else str(out)
    res_dir = os.path.join(out_dir, "call") if own else out_dir
    argv = [_find_binary(binary), "call", "--stdio", "--quiet", "--out", res_dir, "--device", device,
            "--gpu", str(int(gpu)), "--target", repr(float(target)), "--batch", str(int(batch))]
    if calls:
        argv += ["--calls", str(int(calls))]
    if max_calls:
        argv += ["--max-calls", str(int(max_calls))]
    if max_time:
        argv += ["--max-time", "%gs" % float(max_time)]
    if sensor:
        argv += ["--sensor", str(sensor)]
    argv += list(extra_args)
    stderr = tempfile.TemporaryFile()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                close_fds=True, text=True, bufsize=1)
    except OSError as e:
        stderr.close()
        raise RecorderError("cannot start %s: %s" % (argv[0], e))
    raised = None
    try:
        proc.stdin.write("ready\n")
        proc.stdin.flush()
        for line in proc.stdout:
            f = line.split()
            if len(f) != 2 or f[0] != "call":
                continue
            n = int(f[1])
            try:
                if sync is not None:
                    sync()
                t0 = time.monotonic()
                for _ in range(n):
                    fn()
                if sync is not None:
                    sync()
                t1 = time.monotonic()
            except BaseException as e:  # the call failed: tell gpuwatt, then raise it here
                raised = e
                proc.stdin.write("error %s\n" % (str(e).splitlines() or [type(e).__name__])[0][:200])
                proc.stdin.flush()
                break
            proc.stdin.write("done %.9f %.9f\n" % (t0, t1))
            proc.stdin.flush()
    except BrokenPipeError:
        pass
    finally:
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        proc.stdout.close()
        stderr.seek(0)
        err = stderr.read().decode("utf-8", "replace").strip()[-2000:]
        stderr.close()
    if raised is not None:
        if own:
            shutil.rmtree(out_dir, ignore_errors=True)
        raise raised
    path = os.path.join(res_dir, "call.json")
    if not os.path.exists(path):
        if own:
            shutil.rmtree(out_dir, ignore_errors=True)
        raise RecorderError("gpuwatt call exited %d without a result: %s" % (code, err))
    with open(path) as fh:
        raw = json.load(fh)
    if own:
        shutil.rmtree(out_dir, ignore_errors=True)
    res = CallResult(raw)
    if res.simulated and not device.strip().lower().startswith("sim") and not allow_simulated:
        raise SimulatedError("gpuwatt found no GPU for device %s and measured on the sim device: its figures "
                             "are simulated, not measured; pass device=\"sim\" or allow_simulated=True" % device)
    return res
