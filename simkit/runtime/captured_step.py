"""``CapturedStep``: one frame's launches, replayed as a graph (a CUDA graph on a GPU, a CPU graph
on the CPU: kernels/backends/cpu_graph.py).

A frame of a simulation is tens to hundreds of small launches (substeps times the solver's
kernels). On a GPU each costs the host a launch; captured once into a CUDA graph, the whole frame
is one ``cuGraphLaunch``. On the CPU a replay skips what Python does per launch (checks, packing):
an 8x8-cell XPBD cloth frame of 188 launches takes 0.68 ms instead of 1.36. Warp's examples do
this by hand (``ScopedCapture`` around ``simulate()``, then ``capture_launch`` per frame);
``CapturedStep`` is that pattern, with the warm-up it needs:

    step = sk.CapturedStep(simulate, device)   # simulate(): issues one frame's launches
    for frame in range(frames):
        step()

The first call runs ``simulate()`` as it is: kernels compile and load, and solvers fill the caches
they read back once per model (a capture cannot read back). The second call captures
``simulate()`` into a graph and launches it; later calls launch the graph. With ``enabled=False``
every call is ``simulate()``. On the CPU a graph is not always faster (a solver may take a path
with more work inside a capture: XPBD's padded contact colours), so by default the second call
runs directly, timed; the third captures, and it and the fourth replay the graph, timed; the
graph is kept only if its replays were faster. In deterministic mode, a capture that would put a launch
on one GPU thread that runs on the whole GPU outside a capture (atomics in a loop, backward launches:
utils/deterministic_gpu.py, deterministic_grad.py) is discarded before it runs: every call is then
``simulate()``.

A graph replays the same work on the same arrays, with the values its launches were given at
capture time. So ``simulate()`` must end where it started: alternating two states through an even
number of substeps (or copying back), reading nothing back to the host, taking no new per-frame
values from Python. (A state swapped an odd number of times would make every replay read the
state the capture first read.)
"""
from __future__ import annotations

import time
from typing import Callable

from ..kernels.backends.cuda.stream import ScopedCapture, capture_launch
from .device import get_device
from .launch import probing_capture


class CapturedStep:
    """Call ``fn`` (no arguments) per step, as a captured graph from the second call on (see the module
    docstring). ``enabled``: None (default) captures on a GPU, and on the CPU keeps the graph only if
    replaying it is faster than calling ``fn``; True always captures; False never does. ``graph`` is
    the captured graph (None until captured, or when not kept)."""

    def __init__(self, fn: Callable[[], object], device=None, enabled: bool | None = None):
        if not callable(fn):
            raise TypeError(f"CapturedStep: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.device = get_device(device)
        if enabled is not None and not isinstance(enabled, bool):
            raise TypeError(f"CapturedStep: enabled must be None, True or False, got {enabled!r}")
        self.enabled = enabled is not False
        # on the CPU (enabled=None): call 2 is timed, calls 3 and 4 replay timed, then the faster way stays
        self._trial = enabled is None and self.device.is_cpu
        self._times = {"direct": [], "graph": []}
        self.graph = None
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if not self.enabled or self.calls == 1:
            self.fn()
            return
        if self._trial and self.calls == 2:
            t0 = time.perf_counter()
            self.fn()
            self._times["direct"].append(time.perf_counter() - t0)
            return
        if self.graph is None:
            with probing_capture() as serial, ScopedCapture(self.device) as capture:
                self.fn()
            if serial[0]:  # (deterministic mode: a launch that runs on the whole GPU only outside a capture)
                self.enabled = False
                self.fn()
                return
            self.graph = capture.graph
        if not self._trial:
            capture_launch(self.graph)
            return
        t0 = time.perf_counter()
        capture_launch(self.graph)
        self._times["graph"].append(time.perf_counter() - t0)
        if len(self._times["graph"]) == 2:
            self._trial = False
            if min(self._times["graph"]) >= min(self._times["direct"]):
                self.enabled, self.graph = False, None      # (calling it is faster: no graph)

    def __repr__(self):
        mode = "captured" if self.graph is not None else ("to capture" if self.enabled else "not captured")
        return f"CapturedStep({getattr(self.fn, '__name__', 'fn')}, {self.device.alias}, {mode})"
