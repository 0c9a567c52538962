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
- on the CPU, one core runs the launch; on a GPU, a kernel that scatters float sums (record_plan) runs on
  the whole GPU, its atomics recorded, sorted and applied in launch-index order (utils/deterministic_gpu.py:
  the same bits), as do backward launches (grad_record_refusal, utils/deterministic_grad.py), and any other
  runs on one GPU thread (a grid-stride loop of one thread): slow, and meant for reproducibility checks and
  debugging rather than speed. simkit warns once per kernel when that happens on a GPU.

Integer atomics whose old value is not used (``atomic_add(count, i, 1)``, ``atomic_or``...) give the
same result in any order, so they keep the parallel launch. Atomics on a thread's own fixed-size
array (``sk.zeros(shape=...)`` in a kernel) are never shared.
"""
from __future__ import annotations

import enum

from .. import config
from . import ir
from . import types as T
from .analysis import analyze, has_side_effects, value_uses
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
    """A launch made deterministic at a cost in speed: it runs on one GPU thread (its atomics cannot be recorded)."""


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


#: the atomics a GPU launch can record instead of running its threads in turn (utils/deterministic_gpu.py)
_RECORDABLE = {"atomic_add", "atomic_sub"}


class RecordPlan:
    """How a recording GPU launch of a kernel replaces its order-dependent atomics (record_plan)."""

    def __init__(self, sites: dict, per_thread: int, targets: list, counted: bool = False):
        self.sites = sites            # id(Call) -> (offset of its first slot within a thread's, target number)
        self.per_thread = per_thread  # slots per launch index: the scalar components of every site
        self.targets = targets        # parameter index of each target array, by target number
        # an atomic in a loop: each launch index's contributions are counted by a first launch, then written
        # from its first slot (per_thread and the offsets do not apply)
        self.counted = counted


def record_plan(fn: ir.Function, why: list | None = None) -> RecordPlan | None:
    """A plan for kernel ``fn`` when each of its order-dependent atomics can be recorded and applied in launch
    order after the launch, else None (the launch then runs its threads in turn; ``why`` receives the reason,
    naming the line). Each must be an ``atomic_add`` or ``atomic_sub`` of float32/float64 values (scalars,
    vectors, matrices, quaternions, transforms) in the kernel's own body, with its old value unused, on an array
    parameter that the kernel reads or writes nowhere else (what it reads would not yet hold the recorded sums),
    and no function it calls holds one. Outside loops each runs at most once per launch index, in statement
    order: fixed slots. In a loop, the kernel is launched twice (counting, then recording: plan.counted), so it
    may write nothing but its targets, nor print."""
    used = value_uses(fn)
    params = {p.name: k for k, p in enumerate(fn.params)}
    sites, targets, offset, looped = {}, [], 0, False
    reasons = why if why is not None else []

    def refuse(s, text: str) -> bool:
        reasons.append(f"line {s.line}: {text}")
        return False

    def visit(stmts, in_loop: bool) -> bool:
        nonlocal offset, looped
        for s in stmts:
            if isinstance(s, ir.If):
                if not (visit(s.body, in_loop) and visit(s.orelse, in_loop)):
                    return False
            elif isinstance(s, (ir.For, ir.While)):
                body = (s.cond_block if isinstance(s, ir.While) else []) + s.body
                if not visit(body, True):
                    return False
            elif isinstance(s, ir.Call) and s.kind == "func":
                if ordered_atomic(s.func.ir) is not None:
                    return refuse(s, f"the @func '{_func_name(s)}' holds an order-dependent atomic")
            elif isinstance(s, ir.Call) and s.builtin is not None and s.builtin.key.startswith("atomic_"):
                if not _order_dependent(s, used):
                    continue
                target = s.args[0]
                value = T.scalar_of(s.args[-1].type)
                if s.builtin.key not in _RECORDABLE or value not in (T.float32, T.float64):
                    return refuse(s, f"{s.builtin.key} of {T.type_name(s.args[-1].type)} (only atomic_add and "
                                     "atomic_sub of float32/float64 values are recorded)")
                if s.out is not None and s.out.name in used:
                    return refuse(s, f"the old value {s.builtin.key} returns is used")
                if any(a.is_const and a.type is T.Any for a in s.args) or \
                        T.type_name(s.args[-1].type) != T.type_name(target.type.dtype):
                    return refuse(s, "it adds to a part of an element (a component or a row)")
                if target.name not in params or type(target.type) is not T.ArrayType:
                    return refuse(s, "its array is not a plain array parameter of the kernel")
                looped = looped or in_loop
                if params[target.name] not in targets:
                    targets.append(params[target.name])
                sites[id(s)] = (offset, targets.index(params[target.name]))
                offset += T.sizeof(s.args[-1].type) // T.sizeof(value)
        return True

    if not visit(fn.body, False) or not sites:
        return None
    for k in targets:  # the targets: used by the recorded atomics alone
        name = fn.params[k].name
        for s in used.get(name, ()):
            if id(s) not in sites or s.args[0].name != name or name in (a.name for a in s.args[1:]):
                refuse(s, f"the kernel also reads or writes '{fn.params[k].label}', which its atomics add to")
                return None
    if looped and not _writes_only(fn, {fn.params[k].label for k in targets}):
        reasons.append("its atomics run in a loop (it is then launched twice: counting, then recording), and it "
                       "writes other arrays or prints")
        return None
    return RecordPlan(sites, offset, targets, counted=looped)


def _func_name(s: ir.Call) -> str:
    """The Python name of the @func a call calls."""
    return getattr(s.func.function, "key", s.callee)


def _writes_only(fn: ir.Function, targets: set) -> bool:
    """Does kernel ``fn`` write no array but ``targets`` (parameter names), and print nothing (its first, counting
    launch then changes nothing)?"""
    if any(path[0] not in targets for path in analyze(fn).writes):
        return False
    seen = set()

    def prints(f) -> bool:
        for s in ir.walk(f.body):
            if isinstance(s, ir.Call) and s.kind == "printf":
                return True
            if isinstance(s, ir.Call) and s.kind == "func" and id(s.func) not in seen:
                seen.add(id(s.func))
                if prints(s.func.ir):
                    return True
        return False

    return not prints(fn)


def grad_record_refusal(fn: ir.Function) -> str | None:
    """Why the backward launches of kernel ``fn`` cannot be recorded on a GPU (utils/deterministic_grad.py), or
    None. Its recording variant runs twice, the first time changing nothing, and hands every shared gradient
    accumulation to native/det_grad.h; code simkit does not generate could do anything in either launch: a
    @func_native it calls, and a custom adjoint (@func_grad) or replay (@func_replay) that writes arrays or prints."""
    seen = set()

    def find(f):
        for s in ir.walk(f.body):
            if not (isinstance(s, ir.Call) and s.kind == "func") or id(s.func) in seen:
                continue
            seen.add(id(s.func))
            if getattr(s.func.ir, "native", None) is not None:
                return f"line {s.line}: it calls the @func_native '{_func_name(s)}', whose adjoint code is its own"
            for what, custom in (("@func_grad", s.func.grad_ir), ("@func_replay", s.func.replay_ir)):
                if custom is not None and has_side_effects(custom):
                    return f"line {s.line}: the {what} of '{_func_name(s)}' writes arrays or prints"
            why = find(s.func.ir)
            if why is not None:
                return why
        return None

    return find(fn)
