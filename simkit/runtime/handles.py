"""Handles of spatial structures (the uint64 ``id`` of a HashGrid, Bvh or Mesh that kernels take).

A kernel receives a structure only as a number, so the Tape looks recorded integer arguments up here:
it keeps each structure a launch queried alive until ``backward()`` (no dangling ids), and checks
that the structure is in the state the launch saw when that launch's adjoint runs. A structure's
state (``_tape_state``) names the arrays it was last built or refit from, their versions then, and
build parameters (a HashGrid's cell width).
"""
from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np

_live: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()


class State(NamedTuple):
    sources: tuple  # the arrays the structure was built from
    versions: tuple  # their versions at that build
    extra: tuple = ()  # build parameters


EMPTY = State((), ())


def state_of(sources, *extra) -> State:
    sources = tuple(a for a in sources if a is not None)
    return State(sources, tuple(a._version for a in sources), tuple(extra))


def stale_source(st: State) -> int | None:
    """Index of the first source array written since the state was taken (None: all unchanged)."""
    for k, (a, v) in enumerate(zip(st.sources, st.versions)):
        if a._version != v:
            return k
    return None


def same(a: State, b: State) -> bool:
    return (len(a.sources) == len(b.sources) and all(x is y for x, y in zip(a.sources, b.sources))
            and a.versions == b.versions and a.extra == b.extra)


def register(obj, handle: int) -> None:
    """Make ``obj`` findable by its handle (weakly: registration does not keep it alive)."""
    _live[int(handle)] = obj


def lookup(value):
    """The live structure whose handle is ``value`` (an integer kernel argument), else None."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return _live.get(int(value))
    return None
