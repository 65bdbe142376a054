"""gpuwatt for Python: the energy of windows of your program, and markers for `gpuwatt measure`.

In-process (docs/python.md): a Monitor starts gpuwatt's recorder (the `gpuwatt` binary,
`gpuwatt record`) and gives each window its energy per GPU with a 95 % interval, and the
CPU packages' and DRAM's energy where the host's RAPL counters can be read::

    import torch, gpuwatt
    with gpuwatt.Monitor(gpus=[0], sync=torch.cuda.synchronize) as mon:
        for batch in loader:
            with mon.window("step") as w:
                train_step(batch)
            print(w.measurement)

The energy of one call of your own code, to a per cent (docs/call.md)::

    res = gpuwatt.measure_call(lambda: a @ b, sync=torch.cuda.synchronize, target=0.01)

Markers (docs/markers.md): under `gpuwatt measure -- python3 train.py`, gpuwatt.begin,
gpuwatt.end and gpuwatt.region mark regions that measure gives their energy; a no-op
otherwise.
"""

from .call import CallResult, measure_call
from .markers import ENV, begin, enabled, end, region, set_sync
from .monitor import (
    PROTOCOL_VERSION,
    GPUEnergy,
    HostEnergy,
    Measurement,
    Monitor,
    RecorderError,
    SimulatedError,
)

__all__ = [
    "begin", "end", "region", "set_sync", "enabled", "ENV",
    "Monitor", "Measurement", "GPUEnergy", "HostEnergy", "RecorderError", "SimulatedError",
    "PROTOCOL_VERSION", "measure_call", "CallResult",
]
