"""A large module compiled as several translation units at once (CPU backend).

gcc optimises one translation unit on one core (warp-lang's test_vec_scalar_ops module, 224 kernels: 12.1 s
with ``g++ -O3``; 5.9 s as two units on two cores. simkit's rigid-body adjoints, 600 KB of C++ in 3 kernels:
4.7 s, 3.7 s as two). A large module is split: every unit gets the module's common head (the includes,
structs and @funcs, which only cost where a kernel of the unit calls them: inlined there) and a share of its
kernels, dealt biggest first to the lightest unit. The units compile in parallel to objects and are linked
into the module's one library, so nothing else changes: the library, its cache key and its entry points.

The kernels are found by the first line ``codegen.args_struct`` writes for each (``// file.py:N: @kernel
name``): a kernel's code runs from it to the next kernel's, and the module's head ends at the first.
Anything a unit defines that the library holds once is ``inline`` (C++17: merged at link time) or weak
(``sk_get_error``, error.h).
"""
from __future__ import annotations

import math
import os
import re

from ... import config

_KERNEL = re.compile(r"^// [^\n]*: @kernel \w+$", re.M)

#: module source per unit (bytes of C++): about 1 s of ``g++ -O3`` on a 2-core CI machine; a module of less
#: than twice this compiles as one unit (each unit parses the module's head again)
UNIT_BYTES = 150_000
#: the most units of one module (each g++ holds the whole head in memory)
MAX_UNITS = 8


def jobs() -> int:
    """Units compiled at once: ``config.cpu_compile_jobs``, or (0) the cores this process may run on."""
    n = config.cpu_compile_jobs
    if n <= 0:
        n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(n, MAX_UNITS))


def split(source: str, units: int | None = None) -> list[str]:
    """``source`` as the sources of its units (``[source]`` when it is not worth splitting). ``units``:
    how many (default: one per ``UNIT_BYTES`` of source, at most :func:`jobs`)."""
    marks = [m.start() for m in _KERNEL.finditer(source)]
    if len(marks) < 2:
        return [source]
    head = source[:marks[0]]
    chunks = [source[a:b] for a, b in zip(marks, marks[1:] + [len(source)])]
    if units is None:  # (by the whole source: a kernel's compile time is mostly the @funcs inlined into it)
        units = min(jobs(), math.floor(len(source) / UNIT_BYTES))
    units = min(units, len(chunks))
    if units < 2:
        return [source]
    bins = [[0, []] for _ in range(units)]
    for k in sorted(range(len(chunks)), key=lambda k: -len(chunks[k])):
        b = min(bins, key=lambda b: b[0])
        b[0] += len(chunks[k])
        b[1].append(k)
    return [head + "".join(chunks[k] for k in sorted(ks)) for _, ks in bins]
