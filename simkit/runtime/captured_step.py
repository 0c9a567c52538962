"""``CapturedStep``: one frame's launches, replayed as a graph (a CUDA graph on a GPU, a CPU graph
on the CPU: kernels/backends/cpu_graph.py).

A frame of a simulation is tens to hundreds of small launches (substeps times the solver's
kernels). On a GPU each costs the host a launch; captured once into a CUDA graph, the whole frame
is one ``cuGraphLaunch``. On the CPU a replay skips what Python does per launch (checks, packing):
a 9x9-particle XPBD cloth frame of 188 launches takes 0.7 ms instead of 1.35. Warp's examples do this by hand (``ScopedCapture`` around ``simulate()``,
then ``capture_launch`` per frame); ``CapturedStep`` is that pattern, with the warm-up it needs:

    step = sk.CapturedStep(simulate, device)   # simulate(): issues one frame's launches
    for frame in range(frames):
        step()

The first call runs ``simulate()`` as it is: kernels compile and load, and solvers fill the caches
they read back once per model (a capture cannot read back). The second call captures
``simulate()`` into a graph and launches it; later calls launch the graph. With ``enabled=False``
every call is ``simulate()``.

A graph replays the same work on the same arrays, with the values its launches were given at
capture time. So ``simulate()`` must end where it started: alternating two states through an even
number of substeps (or copying back), reading nothing back to the host, taking no new per-frame
values from Python. (A state swapped an odd number of times would make every replay read the
state the capture first read.)
"""
from __future__ import annotations

from typing import Callable

from ..kernels.backends.cuda.stream import ScopedCapture, capture_launch
from .device import get_device


class CapturedStep:
    """Call ``fn`` (no arguments) per step, as a captured graph from the second call on (see the module
    docstring). ``enabled``: None or True (default) captures; False never does. ``graph`` is the
    captured graph (None until captured)."""

    def __init__(self, fn: Callable[[], object], device=None, enabled: bool | None = None):
        if not callable(fn):
            raise TypeError(f"CapturedStep: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.device = get_device(device)
        if enabled is not None and not isinstance(enabled, bool):
            raise TypeError(f"CapturedStep: enabled must be None, True or False, got {enabled!r}")
        self.enabled = True if enabled is None else enabled
        self.graph = None
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if not self.enabled or self.calls == 1:
            self.fn()
            return
        if self.graph is None:
            with ScopedCapture(self.device) as capture:
                self.fn()
            self.graph = capture.graph
        capture_launch(self.graph)

    def __repr__(self):
        mode = "captured" if self.graph is not None else ("to capture" if self.enabled else "not captured")
        return f"CapturedStep({getattr(self.fn, '__name__', 'fn')}, {self.device.alias}, {mode})"
