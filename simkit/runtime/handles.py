"""Handles of spatial structures (the uint64 ``id`` of a HashGrid, Bvh or Mesh that kernels take).

A kernel receives a structure only as a number, so the Tape looks recorded integer arguments up here:
it keeps each structure a launch queried alive until ``backward()`` (no dangling ids), and checks
that the structure is in the state the launch saw when that launch's adjoint runs. A structure's
state (``_tape_state``) names the arrays it was last built or refit from, their versions then, and
build parameters (a HashGrid's cell width).

A structure whose source arrays are rewritten in place between refits (a Mesh: the user writes new
vertex positions into the same ``points`` array and calls ``refit()``) names each refit by a
``Snapshot`` token in ``extra``. A launch that a Tape records against a refit whose sources are
unchanged since clones them into the token (once per token), and a refit inside the Tape records a
restore (``Tape._record_restore``) that writes the clone back and refits before the adjoints of the
earlier launches run. Such a launch is then right exactly when, at its adjoint, the structure carries
the same token and its sources were not written since that refit or restore (``problem``): a token
stands for one set of source values, and a restore writes back a bit-exact clone of them.
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


class Snapshot:
    """Token naming one refit; ``values``: clones of the sources, taken by the first fresh record."""

    __slots__ = ("values",)

    def __init__(self):
        self.values = None


def token(st: State):
    """The Snapshot token of a state (None: a structure that is never refit in place)."""
    return st.extra[0] if st.extra and isinstance(st.extra[0], Snapshot) else None


def record(s) -> tuple:
    """What a launch recorded now keeps of the structure ``s``: (its state, the index of a source written
    since that state was taken, or None). The first fresh record of a Snapshot state clones its sources."""
    st = s._tape_state
    k = stale_source(st)
    tok = token(st)
    if tok is not None and k is None and tok.values is None:
        from .array import clone
        from .tape import paused

        with paused():  # the clones are not operations of the Tape
            tok.values = tuple(clone(a, requires_grad=False) for a in st.sources)
    return st, k


def restore(st: State) -> State:
    """Write the clones of a Snapshot state back into its sources (the caller refits); the state they are in now."""
    from .array import copy
    from .tape import paused

    with paused():
        for a, c in zip(st.sources, token(st).values):
            copy(a, c)
    return state_of(st.sources, *st.extra)


def problem(s, st: State, stale, restored=None) -> str | None:
    """Why the adjoint of a launch that recorded ``(st, stale)`` of the structure ``s`` would be wrong (None:
    it is right). ``restored``, in the check before any adjoint runs: {id(structure): state} that restores
    recorded later on the Tape will have put the structures in by then; None: check ``s`` as it is now."""
    if stale is not None:
        return f"was built from an array (source {stale}) that was modified"
    tok, live = token(st), s._tape_state
    if tok is None:  # its sources must be unchanged (a HashGrid rebuilt inside the Tape is rebuilt from them)
        k = stale_source(st)
        if k is not None:
            return f"was built from an array (source {k}) that was modified"
        return None if restored is not None or same(live, st) else _REFIT
    now = live if restored is None else restored.get(id(s), live)
    if token(now) is not tok:
        return _REFIT
    k = stale_source(now) if now is live else None  # (a pending restore leaves its sources fresh)
    return None if k is None else f"was built from an array (source {k}) that was modified"


_REFIT = "was rebuilt or refit from other data (outside the Tape)"


def register(obj, handle: int) -> None:
    """Make ``obj`` findable by its handle (weakly: registration does not keep it alive)."""
    _live[int(handle)] = obj


def lookup(value):
    """The live structure whose handle is ``value`` (an integer kernel argument), else None."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return _live.get(int(value))
    return None
