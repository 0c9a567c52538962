"""Deterministic execution (Warp's ``deterministic`` option): bit-identical results from run to run.

Threads of a launch have no order, so atomics whose effect depends on the order in which threads
arrive give results that change from run to run: floating-point sums (addition does not associate),
``atomic_min``/``atomic_max`` of floats (signed zeros, NaN), exchanges, and any atomic whose returned
old value is used (a counter handing out slots). With a mode other than ``NOT_GUARANTEED``, a launch of
a kernel holding such an atomic, and every backward launch (gradients of array reads are accumulated
with atomics), runs its threads one after another, in launch-index order:

- the result is the one of a sequential loop over the launch indices: the same in every run and on
  every machine, and the same on the CPU and the GPU (Warp's canonical order for ``GPU_TO_GPU``);
- kernels without such atomics (most of them) keep every CPU core or the whole GPU;
- on the CPU, one core runs the launch; on a GPU, one GPU thread does (a grid-stride loop of one
  thread): slow, and meant for reproducibility checks and debugging rather than speed. simkit warns
  once per kernel when that happens on a GPU.

Integer atomics whose old value is not used (``atomic_add(count, i, 1)``, ``atomic_or``...) give the
same result in any order, so they keep the parallel launch. Atomics on a thread's own fixed-size
array (``sk.zeros(shape=...)`` in a kernel) are never shared.
"""
from __future__ import annotations

import enum

from .. import config
from . import ir
from . import types as T
from .analysis import value_uses
from .types_local import LocalArrayType


class DeterministicMode(enum.IntEnum):
    """Warp's ``deterministic`` option: the ordering guarantee of atomic updates (``config.deterministic``,
    or the module option of that name).

    ``NOT_GUARANTEED`` (the default): threads update in whatever order they arrive. ``RUN_TO_RUN`` and
    ``GPU_TO_GPU``: launches whose atomics depend on that order run their threads in launch-index order,
    so both give the result of a sequential loop (simkit/kernels/deterministic.py)."""

    NOT_GUARANTEED = 0
    RUN_TO_RUN = 1
    GPU_TO_GPU = 2


class DeterminismWarning(UserWarning):
    """A launch made deterministic at a cost in speed: it runs on one GPU thread."""


def check_mode(mode, who: str) -> None:
    """The ``deterministic`` option must be a DeterministicMode member."""
    if not isinstance(mode, enum.IntEnum) or type(mode).__name__ != "DeterministicMode":
        raise ValueError(f"{who}: deterministic must be a simkit.DeterministicMode value, got {mode!r}")


def mode_of(kernel) -> int:
    """The mode a launch of ``kernel`` runs under: its module's option, else ``config.deterministic``."""
    mode = kernel.module.options.get("deterministic")
    return int(config.deterministic if mode is None else mode)


def ordered(kernel, spec, adjoint: bool = False) -> bool:
    """Does a launch of ``spec`` (its backward pass: ``adjoint``) run its threads in launch-index order? (The
    forward launch in runtime/launch.py inlines this test: its cost counts on every launch.)"""
    return (adjoint or spec.ordered_atomic is not None) and mode_of(kernel) != 0


_ORDER_FREE_INT = {"atomic_add", "atomic_sub", "atomic_and", "atomic_or", "atomic_xor", "atomic_min",
                   "atomic_max"}


def _order_dependent(s: ir.Call, used: set) -> bool:
    a = s.args[0] if s.args else None
    if a is None or not isinstance(a.type, T.ArrayType) or isinstance(a.type, LocalArrayType):
        return False
    if s.out is not None and s.out.name in used:
        return True  # the old value: which one a thread gets depends on the order
    value = s.args[-1].type
    return not (s.builtin.key in _ORDER_FREE_INT and T.is_int(T.scalar_of(value)))


def ordered_atomic(fn: ir.Function) -> int | None:
    """The Python line of the first atomic in kernel ``fn`` (or a function it calls) whose effect depends
    on the order in which threads run it; None if it has none."""
    seen = set()

    def find(f):
        used = None
        for s in ir.walk(f.body):
            if not isinstance(s, ir.Call):
                continue
            if s.builtin is not None and s.builtin.key.startswith("atomic_"):
                used = value_uses(f) if used is None else used
                if _order_dependent(s, used):
                    return s.line or 0
            elif s.kind == "func" and id(s.func) not in seen:
                seen.add(id(s.func))
                line = find(s.func.ir)
                if line is not None:
                    return line
        return None

    return find(fn)
