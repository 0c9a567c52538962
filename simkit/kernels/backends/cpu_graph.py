"""Graph capture on the CPU, as Warp has it: between ``capture_begin("cpu")`` and ``capture_end``
(or inside ``ScopedCapture()`` on a machine whose default device is the CPU), launches and array
operations on the CPU are recorded, not run; ``capture_launch(graph)`` runs them again, in order.

    with sk.ScopedCapture("cpu") as cap:      # nothing runs here
        for _ in range(substeps):
            sk.launch(step, dim=n, inputs=[x, v])
    for _ in range(frames):
        sk.capture_launch(cap.graph)          # each replay runs every recorded launch

What is recorded: kernel launches (forward, and adjoints that a Tape's backward pass launches),
``fill_``/``zero_``, ``assign`` (from another array, or from host data snapshotted at capture),
``copy`` between CPU arrays, and the zeroing of arrays made with ``zeros``/``full`` during the
capture (a CUDA graph zeroes them on every replay too). A replay skips everything Python does per
launch (argument checks and packing): the recorded calls go straight to the compiled kernels.

As in a CUDA capture, nothing may be read back while recording: ``.numpy()`` and reading an
element raise (the values are not computed until the graph runs), and so does writing an element
from Python. Arrays a graph uses stay alive as long as the graph.
"""
from __future__ import annotations

#: the captures in progress on the CPU (innermost last); launch and array code check it
active: list = []


class CpuGraph:
    """Recorded CPU work (from ``capture_end``); replay it with ``capture_launch(graph)``."""

    def __init__(self, device, ops: list):
        self.device = device
        self.ops = ops          # callables, in order

    def launch(self, stream=None) -> None:
        for op in self.ops:
            op()

    def __len__(self) -> int:
        return len(self.ops)

    def __repr__(self):
        return f"CpuGraph({len(self.ops)} operations)"


class CpuCapture:
    def __init__(self, device):
        self.device = device
        self.ops = []


def record(op) -> None:
    """Append ``op`` (a callable taking no arguments) to the innermost capture."""
    active[-1].ops.append(op)


def begin(device) -> None:
    if active:
        raise RuntimeError("a graph capture is already in progress on the CPU (captures do not nest)")
    active.append(CpuCapture(device))


def end() -> CpuGraph:
    if not active:
        raise RuntimeError("capture_end: no graph capture is active on cpu")
    cap = active.pop()
    return CpuGraph(cap.device, cap.ops)


def pause() -> CpuCapture:
    """Suspend the innermost capture (``capture_pause``): work runs at once until :func:`resume`."""
    if not active:
        raise RuntimeError("capture_pause: no graph capture is active on cpu")
    return active.pop()


def resume(capture: CpuCapture) -> None:
    if active:
        raise RuntimeError("capture_resume: a graph capture is already in progress on the CPU")
    active.append(capture)


def refuse_read(what: str) -> None:
    """Raise: ``what`` would read (or write) values that a CPU capture has not computed."""
    raise RuntimeError(f"{what} during a graph capture on the CPU: the capture records work without running "
                       f"it, so the values are not there yet; read them after capture_launch()")
