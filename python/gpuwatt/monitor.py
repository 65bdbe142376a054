"""Monitor: windows of a Python program measured in-process by gpuwatt's recorder.

The Monitor starts `gpuwatt record` as a child process and talks to it over its stdin and
stdout with JSON lines (protocol version 1, docs/python.md). Every figure is gpuwatt's own
estimator's, the one `gpuwatt measure` gives a region marked over the same span: the GPUs'
energy counter where it resolves the window, else the 20 ms sample ring calibrated to the
counter, else a power channel with its sensor's lag or window undone, always with its
95 % interval.

The recorder ends with the Monitor (close, the with block, the interpreter's exit) and
with the process that started it: at the end of its input (the pipe closes when this
process dies, even by SIGKILL) or when it is re-parented, so no recorder is left behind.
"""

import atexit
import contextlib
import functools
import json
import os
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time

PROTOCOL_VERSION = 1
BINARY_ENV = "GPUWATT_BIN"

__all__ = ["Monitor", "Measurement", "GPUEnergy", "HostEnergy", "RecorderError", "SimulatedError", "PROTOCOL_VERSION"]


class RecorderError(RuntimeError):
    """The recorder could not be started, or refused or failed a request."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class SimulatedError(RecorderError):
    """The recorder fell back to the sim device where a real GPU was asked for."""


def _clock():
    try:
        return time.clock_gettime(time.CLOCK_MONOTONIC)
    except AttributeError:  # not on this platform: time.monotonic is the nearest
        return time.monotonic()


class GPUEnergy:
    """A window's energy on one GPU.

    energy_j is the estimate; low_j and high_j its 95 % interval on the board's own scale
    (what repeats on this board); absolute_low_j and absolute_high_j add the board's gain
    error (the bounds of the true energy). ok is False where no figure could be given
    (warnings say why): the figures are then None, never 0.
    """

    __slots__ = ("index", "uuid", "ok", "energy_j", "low_j", "high_j", "absolute_low_j", "absolute_high_j",
                 "mean_power_w", "method", "channel", "partial", "warnings", "raw")

    def __init__(self, d):
        self.raw = d
        self.index = d.get("index")
        self.uuid = d.get("uuid", "")
        self.ok = not d.get("no_figure", False)
        get = (lambda k: d.get(k)) if self.ok else (lambda k: None)
        self.energy_j = get("energy_j")
        self.low_j = get("energy_low_j")
        self.high_j = get("energy_high_j")
        self.absolute_low_j = get("absolute_low_j")
        self.absolute_high_j = get("absolute_high_j")
        self.mean_power_w = get("mean_power_w")
        self.method = d.get("method", "")
        self.channel = d.get("channel", "")
        self.partial = bool(d.get("partial", False))
        self.warnings = [w.get("message", "") for w in d.get("warnings") or []]

    def __repr__(self):
        if not self.ok:
            return "GPUEnergy(gpu=%s, no figure: %s)" % (self.index, "; ".join(self.warnings))
        return "GPUEnergy(gpu=%s, %.3f J, 95 %%: %.3f to %.3f J, %s)" % (
            self.index, self.energy_j, self.low_j, self.high_j, self.method)


class HostEnergy:
    """A window's energy on one of the host's RAPL domains (kind "package", "dram" or
    "psys"), with its 95 % interval."""

    __slots__ = ("name", "kind", "energy_j", "low_j", "high_j", "mean_power_w", "warnings", "raw")

    def __init__(self, d):
        self.raw = d
        self.name = d.get("name", "")
        self.kind = d.get("kind", "")
        self.energy_j = d.get("energy_j")
        self.low_j = d.get("energy_low_j")
        self.high_j = d.get("energy_high_j")
        self.mean_power_w = d.get("mean_power_w")
        self.warnings = [w.get("message", "") for w in d.get("warnings") or []]

    def __repr__(self):
        return "HostEnergy(%s, %.3f J, 95 %%: %.3f to %.3f J)" % (self.name, self.energy_j, self.low_j, self.high_j)


class Measurement:
    """One window's figures.

    time is the window's duration in seconds; gpus the energy on each GPU (GPUEnergy, with
    intervals); gpu_energy the estimates as {index: joules}; cpu_energy and dram_energy
    the RAPL package and DRAM energy as {domain: joules}, or None where the host's
    counters could not be read (host_unavailable says why); node_energy_j the GPUs, CPU
    packages and DRAM together, only where every part was read (else None). simulated
    is True when every figure is the sim device's: never a measurement. final is True for
    the figures close() gives, computed over the whole recording as measure computes its
    regions.
    """

    def __init__(self, d):
        self.raw = d
        self.window_id = d.get("id")
        self.name = d.get("name", "")
        self.instance = d.get("instance", 0)
        self.depth = d.get("depth", 0)
        self.start_s = d.get("start_s")
        self.end_s = d.get("end_s")
        self.time = d.get("duration_s")
        self.simulated = bool(d.get("simulated", False))
        self.final = bool(d.get("final", False))
        self.gpus = [GPUEnergy(g) for g in d.get("gpus") or []]
        self.host = [HostEnergy(h) for h in d.get("host") or []]
        self.host_unavailable = d.get("host_unavailable", "")
        node = d.get("node")
        self.node_energy_j = node.get("energy_j") if node else None
        self.node_low_j = node.get("energy_low_j") if node else None
        self.node_high_j = node.get("energy_high_j") if node else None
        self.warnings = [w.get("message", "") for w in d.get("warnings") or []]
        for g in self.gpus:
            self.warnings += ["GPU %s: %s" % (g.index, w) for w in g.warnings]
        for h in self.host:
            self.warnings += ["%s: %s" % (h.name, w) for w in h.warnings]

    @property
    def gpu_energy(self):
        """{GPU index: joules} (None for a GPU without a figure)."""
        return {g.index: g.energy_j for g in self.gpus}

    def _host(self, kind):
        if not self.host:
            return None
        got = {h.name: h.energy_j for h in self.host if h.kind == kind}
        return got or None

    @property
    def cpu_energy(self):
        """{RAPL package domain: joules}, or None where not read."""
        return self._host("package")

    @property
    def dram_energy(self):
        """{RAPL DRAM domain: joules}, or None where not read."""
        return self._host("dram")

    def __repr__(self):
        return "<Measurement %s>" % self

    def __str__(self):
        parts = ["%s #%d: %.3f s" % (self.name, self.instance, self.time or 0.0)]
        for g in self.gpus:
            if g.ok:
                parts.append("GPU%s %.1f J (95 %%: %.1f to %.1f J)" % (g.index, g.energy_j, g.low_j, g.high_j))
            else:
                parts.append("GPU%s no figure" % g.index)
        for h in self.host:
            parts.append("%s %.1f J (95 %%: %.1f to %.1f J)" % (h.name, h.energy_j, h.low_j, h.high_j))
        if self.host_unavailable:
            parts.append("host: %s" % self.host_unavailable)
        if self.node_energy_j is not None:
            parts.append("node %.1f J" % self.node_energy_j)
        s = ", ".join(parts)
        if self.simulated:
            s = "SIMULATED (sim device, not a measurement): " + s
        return s


class _Window:
    """What Monitor.window yields: measurement is set when the block ends."""

    __slots__ = ("name", "measurement")

    def __init__(self, name):
        self.name = name
        self.measurement = None


def _find_binary(binary):
    if binary:
        return binary
    env = os.environ.get(BINARY_ENV)
    if env:
        return env
    found = shutil.which("gpuwatt")
    if not found:
        raise RecorderError("gpuwatt binary not found: put it on PATH, set $%s, or pass Monitor(binary=...)" % BINARY_ENV)
    return found


class Monitor:
    """Measures windows of this program: begin_window(name) ... end_window(name).

    device: "auto" (the NVIDIA and AMD GPUs), "nvml", "amdsmi", or "sim"/"sim:PRESET" (the
    sim device: every figure simulated, Measurement.simulated True). With "auto" or
    "nvml", a recorder that finds no GPU and falls back to the sim raises SimulatedError
    unless allow_simulated=True: simulated figures never pass for measured ones.
    gpus: the GPU indices to record (None: all). sync: a callable run before every edge
    (torch.cuda.synchronize), so an edge is taken after the GPU's queued work ended.
    binary: the gpuwatt executable (default $GPUWATT_BIN, else gpuwatt on PATH). out: a
    directory the recording is saved to on close (trace.csv, trace.json with the windows
    as marks: `gpuwatt energy --region NAME#K out` gives close()'s figures again).
    poll: as measure's --poll. timeout: seconds to wait for any one answer.
    connect: the unix socket of a running `gpuwatt record --socket PATH` to talk to instead
    of starting a recorder (device, gpus, binary, out, poll are then the recorder's own).
    """

    def __init__(self, device="auto", gpus=None, sync=None, binary=None, out=None, poll=None,
                 allow_simulated=False, timeout=120.0, extra_args=(), connect=None):
        if sync is not None and not callable(sync):
            raise TypeError("gpuwatt.Monitor: sync wants a callable or None, got %r" % (sync,))
        self._sync = sync
        self._timeout = timeout
        self._lock = threading.Lock()
        self._closed = False
        self._final = None
        self._proc = self._sock = None
        if connect is not None:
            self._connect(str(connect), device, allow_simulated)
            return
        argv = [_find_binary(binary), "record", "--device", device]
        if gpus is not None:
            idx = [int(g) for g in gpus]
            if not idx:
                raise ValueError("gpuwatt.Monitor: gpus is empty; None records every GPU")
            argv += ["--gpu", ",".join(str(g) for g in idx)]
        if out:
            argv += ["--out", str(out)]
        if poll:
            argv += ["--poll", str(poll)]
        argv += list(extra_args)
        self.argv = argv
        self._stderr = tempfile.TemporaryFile()
        try:
            # A session of its own: a Ctrl-C at the terminal reaches this program, which may
            # still end its windows, and not the recorder.
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                          start_new_session=True, close_fds=True)
        except OSError as e:
            self._stderr.close()
            raise RecorderError("cannot start the recorder %s: %s" % (argv[0], e))
        self._in, self._out = self._proc.stdin, self._proc.stdout
        self._start(device, allow_simulated)

    def _connect(self, path, device, allow_simulated):
        """Talks to a running recorder on its unix socket."""
        self.argv = []
        self._stderr = None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
        except OSError as e:
            sock.close()
            raise RecorderError("cannot connect to the recorder at %s (start one with gpuwatt record --socket %s): %s" % (path, path, e))
        self._sock = sock
        self._in, self._out = sock.makefile("wb"), sock.makefile("rb")
        self._start(device if device != "auto" else "", allow_simulated)

    def _start(self, device, allow_simulated):
        self._lines = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="gpuwatt-recorder-reader", daemon=True)
        self._reader.start()
        atexit.register(self._atexit)
        try:
            hello = self._receive()
        except RecorderError:
            self._kill()
            raise
        if not hello.get("ok") or hello.get("op") != "hello":
            self._kill()
            raise RecorderError("the recorder did not say hello: %r" % (hello,))
        self.hello = hello.get("hello") or {}
        self.device = self.hello.get("device", "")
        self.simulated = bool(self.hello.get("simulated"))
        self.gpus = self.hello.get("gpus") or []
        self.warnings = [w.get("message", "") for w in self.hello.get("warnings") or []]
        asked_sim = device.strip().lower().startswith("sim")
        if self._sock is not None and device == "":
            asked_sim = True  # connected: the recorder's own --device; hello says simulated
        if self.simulated and not asked_sim and not allow_simulated:
            self.close()
            raise SimulatedError("gpuwatt found no GPU for --device %s and recorded on the sim device (%s): "
                                 "its figures are simulated, not measured; pass device=\"sim\" or allow_simulated=True "
                                 "to accept that" % (device, self.device))

    # The transport.

    def _read(self):
        try:
            for line in self._out:
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        self._lines.put(None)

    def _stderr_tail(self):
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            text = self._stderr.read()[-2000:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return text

    def _receive(self):
        try:
            line = self._lines.get(timeout=self._timeout)
        except queue.Empty:
            raise RecorderError("the recorder gave no answer within %.0f s" % self._timeout)
        if line is None:
            if self._proc is None:
                raise RecorderError("the recorder closed the connection")
            code = self._proc.wait()
            raise RecorderError("the recorder exited (status %s): %s" % (code, self._stderr_tail() or "no message"))
        try:
            resp = json.loads(line)
        except ValueError:
            raise RecorderError("the recorder wrote a line that is not JSON: %r" % line[:200])
        if resp.get("v") != PROTOCOL_VERSION:
            raise RecorderError("the recorder speaks protocol version %r, this package %d: use a gpuwatt binary and a "
                                "package of one version" % (resp.get("v"), PROTOCOL_VERSION))
        return resp

    def request(self, op, **fields):
        """Sends one request of the line protocol and returns its response (a dict);
        a refused request raises RecorderError with the recorder's code and message."""
        if self._closed:
            raise RecorderError("the Monitor is closed")
        req = {"v": PROTOCOL_VERSION, "op": op}
        req.update(fields)
        data = (json.dumps(req) + "\n").encode()
        with self._lock:
            try:
                self._in.write(data)
                self._in.flush()
            except (BrokenPipeError, OSError) as e:
                raise RecorderError("the recorder is gone (%s): %s" % (e, self._stderr_tail() or "no message"))
            resp = self._receive()
        if not resp.get("ok"):
            raise RecorderError("gpuwatt recorder: %s" % resp.get("error", resp), resp.get("code"))
        return resp

    def _edge(self, sync):
        fn = self._sync if sync is None else sync
        if fn:
            fn()
        return _clock()

    # The windows.

    def begin_window(self, name, sync=None):
        """Begins window name now (after sync(), or the Monitor's sync, returns); windows
        may nest and names repeat. Returns the window's id."""
        t = self._edge(sync)
        return self.request("begin", name=name, t=t)["window"]["id"]

    def end_window(self, name, sync=None, wait=True):
        """Ends the innermost open window named name (after sync returns) and returns its
        Measurement, once the sensors have published readings after its end (up to 1.5
        update periods of the slowest channel, 1 s at most). wait=False returns the window's
        id at once; result(id) gives its Measurement later."""
        t = self._edge(sync)
        resp = self.request("end", name=name, t=t, no_wait=not wait)
        if not wait:
            return resp["window"]["id"]
        return Measurement(resp["window"])

    def result(self, window_id):
        """The Measurement of a window ended with end_window(..., wait=False)."""
        return Measurement(self.request("result", window=int(window_id))["window"])

    @contextlib.contextmanager
    def window(self, name, sync=None):
        """with mon.window("step") as w: ...; w.measurement holds the figures after the
        block. The window ends even when the block raises."""
        w = _Window(name)
        self.begin_window(name, sync)
        try:
            yield w
        finally:
            w.measurement = self.end_window(name, sync)

    def measure(self, name=None, sync=None, sink=None):
        """A decorator: every call of the function is a window (named name, default the
        function's name); its Measurement goes to sink(measurement) if given, and is kept
        as the wrapper's .last."""
        def deco(fn):
            wname = name or fn.__name__

            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                with self.window(wname, sync) as w:
                    result = fn(*args, **kwargs)
                wrapper.last = w.measurement
                if sink is not None:
                    sink(w.measurement)
                return result
            wrapper.last = None
            return wrapper
        return deco

    def close(self):
        """Ends the recording and returns every ended window's final Measurement, computed
        over the whole recording as measure computes its regions (saved to out, if given).
        A second close returns the same list."""
        if self._closed:
            return self._final or []
        try:
            resp = self.request("close")
        finally:
            self._closed = True
            try:
                self._in.close()
            except OSError:
                pass
            if self._proc is not None:
                try:
                    self._proc.wait(timeout=self._timeout)
                except subprocess.TimeoutExpired:
                    self._kill()
            self._release()
        self.saved = resp.get("saved", "")
        self.close_warnings = [w.get("message", "") for w in resp.get("warnings") or []]
        self._final = [Measurement(w) for w in resp.get("windows") or []]
        return self._final

    def _kill(self):
        self._closed = True
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait()
        elif self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._release()

    def _release(self):
        """Closes the pipes, socket and files of an ended recorder."""
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        self._reader.join(timeout=5)
        for f in (self._in, self._out, self._stderr, self._sock):
            if f is None:
                continue
            try:
                f.close()
            except (OSError, ValueError):
                pass
        atexit.unregister(self._atexit)

    def _atexit(self):
        if not self._closed:
            try:
                self.close()
            except RecorderError:
                self._kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self._closed:
            self.close()
        return False
