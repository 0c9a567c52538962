"""Allocation tracking (as Warp's ``ScopedMemoryTracker`` / ``print_memory_report``): which arrays hold memory, on
which device, made where, in which named scope.

    with sk.ScopedMemoryTracker("step"):          # prints a summary on exit
        with sk.ScopedMemoryTracker("collision"):
            grid = sk.HashGrid(128, 128, 128, device="cuda:0")
            ...
    sk.config.track_memory = True                 # or track everything, then at any time:
    sk.print_memory_report(sort="size", max_items=10)

Each array that allocates memory (CPU, pinned or GPU; gradients and the arrays spatial structures keep included)
is recorded with its size, device, the scope path of the trackers around it (``step/collision``), a label
(``array[float32, 32]``) and the first line outside simkit that made it; it stays live until its memory is freed.
Views allocate nothing and are not recorded. While nothing is tracked, an allocation pays a call that tests two flags.
"""
from __future__ import annotations

import itertools
import os
import sys
import threading
import weakref

from .. import config

#: a tracker is active (the allocation paths test this, then ``config.track_memory``)
enabled = False
_scopes = threading.local()
_lock = threading.Lock()
_ids = itertools.count()
_live: dict = {}  # id -> record
_totals = {"count": 0, "bytes": 0, "peak": 0, "live_bytes": 0}
_SIMKIT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tracking() -> bool:
    """Are allocations being recorded (a tracker is active, or ``config.track_memory``)?"""
    return enabled or bool(config.track_memory)


def _scope_path() -> str:
    return "/".join(getattr(_scopes, "names", [])) or "(no scope)"


def _call_site() -> str:
    f = sys._getframe(2)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_SIMKIT_DIR):
        f = f.f_back
    if f is None:
        return "(simkit)"
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno} ({f.f_code.co_name})"


def allocated(arr, nbytes: int, lifetime) -> None:
    """Record ``arr``'s new memory (``nbytes``), live until ``lifetime`` (the object owning it) is collected,
    while allocations are tracked."""
    if nbytes <= 0 or not (enabled or config.track_memory):
        return
    shape = "x".join(str(s) for s in arr.shape)
    rec = {"id": next(_ids), "bytes": int(nbytes), "device": arr.device.alias, "scope": _scope_path(),
           "label": f"array[{getattr(arr.dtype, '__name__', arr.dtype)}, {shape}]", "site": _call_site()}
    with _lock:
        _live[rec["id"]] = rec
        _totals["count"] += 1
        _totals["bytes"] += rec["bytes"]
        _totals["live_bytes"] += rec["bytes"]
        _totals["peak"] = max(_totals["peak"], _totals["live_bytes"])
    try:
        weakref.finalize(lifetime, _freed, rec["id"])
    except TypeError:  # (an owner without weak references: counted, never seen freed)
        pass


def _freed(key: int) -> None:
    with _lock:
        rec = _live.pop(key, None)
        if rec is not None:
            _totals["live_bytes"] -= rec["bytes"]


def clear() -> None:
    """Forget every record and total."""
    with _lock:
        _live.clear()
        _totals.update(count=0, bytes=0, peak=0, live_bytes=0)


def stats() -> dict:
    """``{"total_count", "total_bytes", "live_count", "live_bytes", "peak_bytes"}`` since the last ``clear``."""
    with _lock:
        return {"total_count": _totals["count"], "total_bytes": _totals["bytes"], "live_count": len(_live),
                "live_bytes": _totals["live_bytes"], "peak_bytes": _totals["peak"]}


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n} B"  # pragma: no cover


def report_text(sort: str = "size", max_items: int = 10) -> str:
    """The report :func:`print_memory_report` prints."""
    if sort not in ("size", "chronological"):
        raise ValueError(f"invalid sort order {sort!r}; expected 'size' or 'chronological'")
    with _lock:
        live = list(_live.values())
        totals = dict(_totals)
    lines = ["Allocation Tracking Report", "=" * 26,
             f"Total allocations: {totals['count']} ({_size(totals['bytes'])})",
             f"Live allocations: {len(live)} ({_size(totals['live_bytes'])})",
             f"Peak live memory: {_size(totals['peak'])}"]
    for title, key in (("Live memory by scope", "scope"), ("Live memory by device", "device")):
        groups: dict = {}
        for r in live:
            g = groups.setdefault(r[key], [0, 0])
            g[0] += 1
            g[1] += r["bytes"]
        lines += ["", f"{title}:"]
        lines += [f"  {name}: {count} allocation(s), {_size(nbytes)}"
                  for name, (count, nbytes) in sorted(groups.items(), key=lambda kv: -kv[1][1])]
    order = sorted(live, key=lambda r: -r["bytes"]) if sort == "size" else sorted(live, key=lambda r: r["id"])
    lines += ["", f"Live allocations ({'largest' if sort == 'size' else 'oldest'} first, at most {max_items}):"]
    lines += [f"  {_size(r['bytes']):>10}  {r['device']:7s}  {r['scope']}  {r['label']}  {r['site']}"
              for r in order[:max_items]]
    return "\n".join(lines) + "\n"


def print_memory_report(file=None, sort: str = "size", max_items: int = 10) -> None:
    """Print the live allocations and the totals (needs ``config.track_memory`` or an active
    :class:`ScopedMemoryTracker`)."""
    if not tracking():
        raise RuntimeError("allocation tracking is not active: set simkit.config.track_memory = True, or use "
                           "simkit.ScopedMemoryTracker as a context manager")
    print(report_text(sort, max_items), end="", file=file or sys.stdout)


class ScopedMemoryTracker:
    """Track the allocations made inside the block under the scope ``name`` (nested trackers make the path
    ``outer/inner``); on exit print the report (``print=False``: don't; ``report_func(text)``: hand it over)."""

    def __init__(self, name: str = "root", active: bool = True, print: bool = True, report_func=None):
        self.name = name
        self.active = active
        self.print = print
        self.report_func = report_func

    _count = 0  # active trackers, all threads

    def __enter__(self):
        global enabled
        if self.active:
            names = getattr(_scopes, "names", None)
            if names is None:
                names = _scopes.names = []
            names.append(self.name)
            with _lock:
                ScopedMemoryTracker._count += 1
                enabled = True
        return self

    def __exit__(self, *exc):
        global enabled
        if not self.active:
            return False
        text = report_text() if (self.print or self.report_func) else None
        _scopes.names.pop()
        with _lock:
            ScopedMemoryTracker._count -= 1
            enabled = ScopedMemoryTracker._count > 0
        if self.report_func is not None:
            self.report_func(text)
        elif self.print:
            print(text, end="")
        return False

    def report(self, file=None, sort: str = "size", max_items: int = 10) -> None:
        """Print the report now (also after the block)."""
        print(report_text(sort, max_items), end="", file=file or sys.stdout)

    def clear(self) -> None:
        clear()
