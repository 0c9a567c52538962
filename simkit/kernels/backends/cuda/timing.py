"""Timing of CUDA activities (as Warp's ``timing_begin`` / ``timing_end``): what each kernel, copy, fill and graph
launch took on the GPU, measured between two CUDA events recorded around it on its stream.

    sk.timing_begin(cuda_filter=sk.TIMING_KERNEL | sk.TIMING_MEMCPY)
    simulate()
    results = sk.timing_end()          # [TimingResult(device, name, filter, elapsed ms), ...] in issue order
    sk.timing_print(results)           # a timeline, then totals per activity and per device

or ``with sk.ScopedTimer("frame", cuda_filter=sk.TIMING_ALL): ...`` (its ``timing_results``). While timing is off
the launch and copy paths only test ``FILTER``. Work issued during a graph capture is not timed (a capture records,
it does not run); a replayed graph is one activity (``TIMING_GRAPH``).
"""
from __future__ import annotations

from . import driver

TIMING_KERNEL = 1  # kernels of the user's modules (forward and adjoint)
TIMING_KERNEL_BUILTIN = 2  # simkit's runtime kernels (strided fills and copies)
TIMING_MEMCPY = 4
TIMING_MEMSET = 8
TIMING_GRAPH = 16
TIMING_ALL = 0xFFFFFFFF

#: the activities being timed (0: timing is off); read by the launch and copy paths
FILTER = 0
_records: list = []  # [ordinal, name, flag, start event, end event]


class TimingResult:
    """One timed activity: its ``device``, ``name`` (e.g. "forward kernel step", "memcpy DtoD"), ``filter`` (its
    ``TIMING_*`` flag) and ``elapsed`` milliseconds."""

    def __init__(self, device, name: str, filter: int, elapsed: float):
        self.device = device
        self.name = name
        self.filter = filter
        self.elapsed = elapsed

    def __repr__(self):
        return f"TimingResult({self.device.alias}, {self.name!r}, {self.filter}, {self.elapsed:.6f} ms)"


def start(st, stream: int, flag: int, name: str):
    """Record the start of an activity on ``stream`` if ``flag`` is being timed; returns what :func:`stop` takes."""
    if not FILTER & flag or st.capturing:
        return None
    api = st.api
    st.make_current()
    ev = driver.check(api.cuEventCreate(0), "cuEventCreate")
    driver.check(api.cuEventRecord(ev, stream), "cuEventRecord")
    rec = [st.ordinal, name, flag, ev, None, stream]
    _records.append(rec)
    return rec


def stop(rec) -> None:
    if rec is None:
        return
    st = driver.state(rec[0])
    api = st.api
    st.make_current()
    ev = driver.check(api.cuEventCreate(0), "cuEventCreate")
    driver.check(api.cuEventRecord(ev, rec[5]), "cuEventRecord")
    rec[4] = ev


def timing_begin(cuda_filter: int = TIMING_ALL, synchronize: bool = True) -> None:
    """Start timing the CUDA activities ``cuda_filter`` selects (``TIMING_*`` flags, or-ed). ``synchronize``: wait
    for the GPUs first, so earlier work is not counted."""
    global FILTER
    if synchronize:
        driver.synchronize_all()
    _discard()
    FILTER = int(cuda_filter) & TIMING_ALL


def timing_end(synchronize: bool = True) -> list:
    """Stop timing; the :class:`TimingResult` of each activity timed since :func:`timing_begin`, in issue order.
    ``synchronize``: wait for the GPUs first (the results need the activities finished; without it, call only
    after synchronizing). A CUDA error from the outstanding work ends timing and is raised."""
    global FILTER
    FILTER = 0
    try:
        if synchronize:
            driver.synchronize_all()
        results = []
        for ordinal, name, flag, ev0, ev1, _stream in _records:
            if ev1 is None:
                continue
            st = driver.state(ordinal)
            st.make_current()
            ms = driver.check(st.api.cuEventElapsedTime(ev0, ev1), "cuEventElapsedTime")
            results.append(TimingResult(driver.resolve_device(f"cuda:{ordinal}"), name, flag, float(ms)))
        return results
    finally:
        _discard()


def _discard() -> None:
    for ordinal, _name, _flag, ev0, ev1, _stream in _records:
        st = driver.state(ordinal)
        with st.pushed():
            for ev in (ev0, ev1):
                if ev is not None:
                    st.api.cuEventDestroy(ev)
    _records.clear()


def timing_print(results: list, indent: str = "") -> None:
    """Print ``results`` (of :func:`timing_end`): the timeline, then the totals per activity and per device."""
    if not results:
        print(f"{indent}No activity")
        return
    width = max(len("Activity"), *(len(r.name) for r in results)) + 1
    rule = f"{indent}----------------+---------+{'-' * width}"

    def table(title, head, rows):
        print(f"{indent}{title}:")
        print(rule)
        print(f"{indent}{head}")
        print(rule)
        for row in rows:
            print(f"{indent}{row}")

    table("CUDA timeline", "Time            | Device  | Activity",
          [f"{r.elapsed:12.6f} ms | {r.device.alias:7s} | {r.name}" for r in results])
    for title, head, key in (("CUDA activity summary", "Total time      | Count   | Activity", lambda r: r.name),
                             ("CUDA device summary", "Total time      | Count   | Device", lambda r: r.device.alias)):
        totals: dict = {}
        for r in results:
            t = totals.setdefault(key(r), [0.0, 0])
            t[0] += r.elapsed
            t[1] += 1
        print()
        table(title, head, [f"{ms:12.6f} ms | {count:7d} | {name}" for name, (ms, count) in totals.items()])
