"""Launches that only declare the specialisations they would use, so that they compile together.

A generic kernel (``Any`` parameters) gets a specialisation per argument types at its first launch, and that
launch compiles it: a solver's first step of N generic kernels ran the C++ compiler N times, one after another.
Inside ``with declaring():`` a launch picks (and type-checks) its kernel's specialisation and returns without
compiling or running anything, so a dry run of a step declares every specialisation the step will use; the
first real launch then compiles them all as one library (``Module.load_spec`` takes every pending kernel of its
module). The README's cloth scene: 7 compiles of the XPBD kernels, 3.0 s, became one (docs/benchmarks.md, "Cold start").

A dry run must not depend on what the kernels would have computed (nothing runs: arrays keep their values).
"""
from __future__ import annotations

import contextlib

#: True inside :func:`declaring` (read by ``launch``)
active: bool = False


@contextlib.contextmanager
def declaring():
    """Launches inside only declare their kernels' specialisations (nothing compiles, runs or is taped)."""
    global active
    saved, active = active, True
    try:
        yield
    finally:
        active = saved
