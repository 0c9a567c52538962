"""One CPU thread or all of them, measured per kernel: launches of kernels whose atomics contend.

x86 has no floating-point fetch-add, so a float ``atomic_add`` (``a[i] += v``) on several cores is a
compare-and-swap loop, and threads that hit the same elements take turns owning its cache line. A
scatter of 1M floats into 4 bins ran 23x slower on two cores than on one (41 ms vs 1.8 ms; one thread
adds with plain loads and stores, ``atomic.h``), into 65,536 bins 4.5x slower. Kernels that do more
than scatter (the cloth solver's) still gain from the cores. Which one wins depends on the data, so
it is measured: the first launches of such a kernel (``KernelSpec.ordered_atomic``: float atomics,
exchanges, atomics whose result is used) alternate between all threads and one, ``ROUNDS`` of each,
per kernel and launch size (its power of two), and the faster keeps the launches that follow. Both
ways give the same results up to the order of float additions, which several threads never fix
anyway (``config.deterministic`` fixes it).

``config.cpu_atomic_tuning = False`` (``SIMKIT_CPU_ATOMIC_TUNING=0``) keeps every launch on all threads.
"""
from __future__ import annotations

ROUNDS = 2  # timed launches of each kind before the choice


class Tuning:
    """The measurements of one kernel at one launch size; ``serial`` once chosen (None before)."""

    __slots__ = ("parallel", "serial_time", "serial", "runs")

    def __init__(self):
        self.parallel = self.serial_time = float("inf")  # fastest time of each kind so far
        self.serial = None  # True: one thread is faster; False: all threads
        self.runs = 0

    def threads(self, all_threads: int) -> int:
        """The thread count of the next launch: the choice, or, while measuring, all threads and one in turn."""
        if self.serial is not None:
            return 1 if self.serial else all_threads
        return all_threads if self.runs % 2 == 0 else 1

    def record(self, threads: int, seconds: float) -> None:
        if threads == 1:
            self.serial_time = min(self.serial_time, seconds)
        else:
            self.parallel = min(self.parallel, seconds)
        self.runs += 1
        if self.runs >= 2 * ROUNDS:
            self.serial = self.serial_time < self.parallel


_tunings: dict = {}


def tuning(spec, size: int, adjoint: bool = False) -> Tuning:
    """The tuning of ``spec``'s launches of about ``size`` threads (forward or adjoint)."""
    key = (spec, size.bit_length(), adjoint)
    t = _tunings.get(key)
    if t is None:
        t = _tunings[key] = Tuning()
    return t


def choices() -> list:
    """What was measured and chosen: (kernel name, adjoint, launch size rounded down to a power of two, best
    time on all threads, on one, whether one thread was chosen: None while measuring) per kernel and size."""
    return [(spec.kernel.key, adj, 1 << (bits - 1) if bits else 0, t.parallel, t.serial_time, t.serial)
            for (spec, bits, adj), t in _tunings.items()]


def reset() -> None:
    """Forget every choice (they are measured again)."""
    _tunings.clear()
