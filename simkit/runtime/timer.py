"""``ScopedTimer``: time a block of host code, as Warp's examples do around each frame.

    with sk.ScopedTimer("step"):              # prints "step took 1.23 ms"
        simulate()
    times = {}
    with sk.ScopedTimer("grid", dict=times, print=False, synchronize=True):
        grid.build(x, 0.1)                    # times["grid"] == [elapsed ms, ...]

``synchronize=True`` waits for every device before and after the block, so work a GPU runs
asynchronously is counted. Nested timers indent their lines. ``detailed=True`` also profiles the
block (cProfile) and prints the functions that took longest. ``cuda_filter`` (``sk.TIMING_*`` flags)
times the block's CUDA activities (kernels, copies, fills, graph launches: ``timing_results``, printed
by ``report_func``, default ``sk.timing_print``; kernels/backends/cuda/timing.py). Warp's ``use_nvtx``,
``color`` and ``skip_tape`` are accepted for source compatibility: simkit records no NVTX ranges.
"""
from __future__ import annotations

import threading
import time


class ScopedTimer:
    """Time the ``with`` block; ``elapsed`` holds the time in milliseconds afterwards."""

    #: set to False to turn every timer off (e.g. in benchmarks that time otherwise)
    enabled = True
    _depth = threading.local()

    def __init__(self, name: str, active: bool = True, print: bool = True, detailed: bool = False,
                 dict: dict | None = None, use_nvtx: bool = False, color=None, synchronize: bool = False,
                 cuda_filter: int = 0, report_func=None, skip_tape: bool = False):
        self.name = name
        self.active = bool(active) and ScopedTimer.enabled
        self.print = print
        self.detailed = detailed
        self.dict = dict
        self.synchronize = synchronize
        self.cuda_filter = int(cuda_filter or 0)
        self.report_func = report_func
        self.elapsed = 0.0
        self.extra_msg = ""          # appended to the printed line
        self.timing_results = []     # the block's CUDA activities (with cuda_filter)
        if dict is not None:
            dict.setdefault(name, [])

    def _sync(self):
        if self.synchronize:
            from .. import synchronize
            synchronize()

    def __enter__(self):
        if self.active:
            self._sync()
            depth = getattr(ScopedTimer._depth, "n", 0)
            ScopedTimer._depth.n = depth + 1
            self._indent = "  " * depth
            if self.cuda_filter:
                from ..kernels.backends.cuda import timing
                timing.timing_begin(self.cuda_filter, synchronize=not self.synchronize)
            self._profile = None
            if self.detailed:
                import cProfile
                self._profile = cProfile.Profile()
                self._profile.enable()
            self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if not self.active:
            return False
        if self._profile is not None:
            self._profile.disable()  # (the block only)
        self._sync()
        self.elapsed = (time.perf_counter() - self._t0) * 1e3
        ScopedTimer._depth.n -= 1
        if self.cuda_filter:
            from ..kernels.backends.cuda import timing
            self.timing_results = timing.timing_end(synchronize=not self.synchronize)
        if self._profile is not None:
            import pstats
            pstats.Stats(self._profile).sort_stats("cumulative").print_stats(20)
        if self.dict is not None:
            self.dict[self.name].append(self.elapsed)
        if self.print:
            print(f"{self._indent}{self.name} took {self.elapsed:.2f} ms{self.extra_msg}")
            if self.timing_results:
                from ..kernels.backends.cuda import timing
                (self.report_func or timing.timing_print)(self.timing_results, indent=self._indent + "    ")
        return False
