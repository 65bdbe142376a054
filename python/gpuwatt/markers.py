"""Region markers for `gpuwatt measure`, with no dependencies.

`gpuwatt measure -- python3 train.py` names a file in the environment variable
GPUWATT_MARKS; this module appends one line per marker to it::

    begin NAME T
    end NAME T

where T is the host's CLOCK_MONOTONIC in seconds (time.monotonic() on Linux), the clock
gpuwatt's recording runs on, so a marker's time needs no mapping. gpuwatt gives each
begin/end pair its energy per GPU, with a 95 % interval. Regions may nest and names may
repeat. Without GPUWATT_MARKS (not run under gpuwatt) every call does nothing.

GPU work is asynchronous: a marker written when the work was queued, not when it ran,
puts the region's edge in the wrong place. Pass a synchronising callable, once for all
markers or per call, so that each marker is written after the GPU's queued work ended::

    import torch, gpuwatt
    gpuwatt.set_sync(torch.cuda.synchronize)
    for step, batch in enumerate(loader):
        with gpuwatt.region("step"):
            loss = model(batch).sum(); loss.backward(); opt.step()

gpuwatt flags a region whose end the power shows the work ran past (docs/markers.md).
This module has no dependencies on the rest of the package: copy it next to your program
as gpuwatt.py, put the repository's python/ on PYTHONPATH, or pip install python/ (which
also gives gpuwatt.Monitor, the energy of each window in-process: docs/python.md).
"""

import contextlib
import os
import time

__all__ = ["begin", "end", "region", "set_sync", "enabled", "ENV"]

ENV = "GPUWATT_MARKS"

_fd = None
_path = None
_sync = None


def _clock():
    try:
        return time.clock_gettime(time.CLOCK_MONOTONIC)
    except AttributeError:  # not on this platform: time.monotonic is the nearest
        return time.monotonic()


def enabled():
    """True when run under `gpuwatt measure` (GPUWATT_MARKS is set)."""
    return bool(os.environ.get(ENV))


def set_sync(fn):
    """Call fn (e.g. torch.cuda.synchronize) before every marker; None: no sync."""
    global _sync
    if fn is not None and not callable(fn):
        raise TypeError("gpuwatt.set_sync: want a callable or None, got %r" % (fn,))
    _sync = fn


def _check(name):
    if not isinstance(name, str) or not name:
        raise ValueError("gpuwatt: a region needs a name (a non-empty str), got %r" % (name,))
    if len(name.encode()) > 200 or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in name):
        raise ValueError("gpuwatt: region name %r: want one word without blanks or control characters, at most 200 bytes" % (name,))


def _write(verb, name, sync):
    global _fd, _path
    _check(name)
    path = os.environ.get(ENV)
    if not path:
        return
    fn = _sync if sync is None else sync
    if fn:
        fn()
    t = _clock()
    if _fd is None or _path != path:
        # O_APPEND: each line lands whole at the end, whoever else appends (other
        # processes, threads, a shell).
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        _path = path
    os.write(_fd, ("%s %s %.9f\n" % (verb, name, t)).encode())


def begin(name, sync=None):
    """Mark the start of region name (after sync(), or set_sync's callable, returns)."""
    _write("begin", name, sync)


def end(name, sync=None):
    """Mark the end of region name (after sync(), or set_sync's callable, returns)."""
    _write("end", name, sync)


@contextlib.contextmanager
def region(name, sync=None):
    """with gpuwatt.region("step"): ... marks the block as region name.

    The end is written even when the block raises."""
    begin(name, sync)
    try:
        yield
    finally:
        end(name, sync)
