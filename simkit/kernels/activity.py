"""Activity analysis for the adjoint: which values can carry a gradient to an output.

A value is *varied* when it is computed, through differentiable operations, from a parameter or
an array element that can carry a gradient; *useful* when it flows, through differentiable
operations, into an array write or atomic, or into a func's return value. Only a value both
varied and useful has an adjoint that can reach anything. A loop that defines no such value
(a binary search over a sorted array, a golden-section search of a distance, an iteration
count) adds nothing to any adjoint: the adjoint runs it once in the replay, for the values after
it, and skips its reverse pass (``AdjointEmitter.inactive``) -- nothing is pushed per iteration.

The adjoint also skips the reverse statements of values that are not active (their adjoints are
zero): a distance only compared, a velocity image the caller never uses.

Conservative: a func call counts as writing arrays when its body (or a func it calls) writes
one, and then everything it receives is useful; int (except uint64 handles), bool and opaque
values never carry a gradient.
"""
from __future__ import annotations

from . import ir
from . import types as T
from .analysis import WRITE_KEYS


def carries_gradient(t) -> bool:
    """Can a value of type ``t`` have a gradient (floats, vectors, matrices, structs; arrays of them)?
    A ``uint64`` counts: it may be a structure's handle (a Mesh id), whose points have gradients
    that builtins such as ``mesh_eval_position`` read and accumulate through it."""
    if isinstance(t, T.ArrayType):
        return carries_gradient(t.dtype)
    if t is T.uint64:
        return True
    return not (T.is_int(t) or t is T.bool or T.is_opaque(t))


def _stmts(body):
    """Every statement of ``body``, nested blocks and while conditions included."""
    return list(ir.walk(body))


def writes_arrays(fn: ir.Function) -> bool:
    """Does ``fn`` (or a func it calls) write an array, add atomically or print? (Kept on ``fn``.)"""
    memo = fn.__dict__
    if "_writes_arrays" not in memo:
        memo["_writes_arrays"] = True  # (recursion guard: assume the worst)
        memo["_writes_arrays"] = any(_side_effect(s) for s in _stmts(fn.body))
    return memo["_writes_arrays"]


def _side_effect(s) -> bool:
    if not isinstance(s, ir.Call):
        return False
    if s.kind == "printf":
        return True
    if s.kind == "func":
        return s.func is None or s.func.ir is None or writes_arrays(s.func.ir)
    return s.kind == "builtin" and s.builtin is not None and not s.builtin.replay


def _outputs(s) -> list:
    """The variables statement ``s`` assigns: its results, and the arguments a differentiable builtin updates
    in place (Warp's older output-argument forms of the mesh queries: ``mesh_query_ray(..., t, u, v, ...)``)."""
    outs = ir.defines(s)
    b = s.builtin if isinstance(s, ir.Call) and s.kind == "builtin" else None
    if b is not None and b.inout and b.differentiable:
        outs = outs + [a for name, a in zip(b.input_types, s.args) if name in b.inout and not a.is_const]
    return outs


def _differentiable(s) -> bool:
    if isinstance(s, ir.Call):
        if s.kind == "builtin":
            return s.builtin is not None and s.builtin.differentiable
        return s.kind in ("func", "make")
    return isinstance(s, (ir.Copy, ir.GetField, ir.SetField))


class Activity:
    """Varied and useful variable names of one function (fixpoints over its statements). ``returns``:
    for a func, which of its results the caller uses (None: all)."""

    def __init__(self, fn: ir.Function, returns: tuple | None = None):
        stmts = _stmts(fn.body)
        # a kernel hands gradients out through arrays only (its scalar, vector... arguments' adjoints
        # are discarded, as in Warp): those seed nothing; a func's parameters all do (the caller's)
        self.varied = {p.name for p in fn.params if carries_gradient(p.type) and (
            not fn.is_kernel or isinstance(p.type, T.ArrayType) or T.is_struct(p.type) or p.type is T.uint64)}
        # thread-local arrays (fixed_arrays.py) take what is stored in them; their views alias one another
        self.varied |= {v.name for v in fn.vars if isinstance(v.type, T.LocalArrayType) and carries_gradient(v.type)}
        changed = True
        while changed:  # forward: from the parameters through differentiable operations
            changed = False
            for s in stmts:
                if not _differentiable(s) or not any(a.name in self.varied for a in ir.reads(s) if a is not None):
                    continue
                for o in _outputs(s):
                    if o.name not in self.varied and carries_gradient(o.type):
                        self.varied.add(o.name)
                        changed = True
        self.useful: set = set()
        for s in stmts:  # the sinks: writes (and what a writing func receives), return values
            if _side_effect(s):
                self.useful.update(a.name for a in ir.reads(s) if a is not None)
            elif isinstance(s, ir.Return):
                self.useful.update(v.name for k, v in enumerate(s.values) if returns is None or returns[k])
        changed = True
        while changed:  # backward: into the inputs of differentiable operations with useful results
            changed = False
            for s in stmts:
                if not _differentiable(s) or not any(o.name in self.useful for o in _outputs(s)):
                    continue
                for a in ir.reads(s):
                    if a is not None and a.name not in self.useful:
                        self.useful.add(a.name)
                        changed = True

    def active(self, v) -> bool:
        return v.name in self.varied and v.name in self.useful

    def dead(self, s) -> bool:
        """A value statement (call, copy, field access) with results, none of them active, and no side
        effect: its adjoint statement would only add zeros."""
        outs = _outputs(s)
        return (isinstance(s, (ir.Call, ir.Copy, ir.GetField, ir.SetField)) and bool(outs) and not _side_effect(s)
                and not any(self.active(o) for o in outs))

    def inactive_loop(self, s) -> bool:
        """A loop none of whose statements (condition included) defines an active value."""
        blocks = [s.body] + ([s.cond_block] if isinstance(s, ir.While) else [])
        return not any(self.active(o) for b in blocks for t in _stmts(b) for o in _outputs(t))


_WRITES = WRITE_KEYS - {"atomic_cas"}  # (writes whose last argument is the value written)


def _atomic_result(s) -> bool:
    """An atomic on shared memory whose returned old value is kept (the adjoint's replay does not run it)."""
    return (isinstance(s, ir.Call) and s.builtin is not None and s.builtin.key.startswith("atomic_")
            and s.out is not None and bool(s.args) and not isinstance(s.args[0].type, T.LocalArrayType))


def _tainted(fn: ir.Function, seen: set) -> set:
    """Names of the values of ``fn`` computed from an atomic's returned value (or from a call whose result
    is one)."""
    stmts = _stmts(fn.body)
    tainted = set()
    for s in stmts:
        if _atomic_result(s):
            tainted.add(s.out.name)
        elif isinstance(s, ir.Call) and s.kind == "func" and s.func.ir is not None and s.func.replay_ir is None \
                and id(s.func) not in seen:  # (a @func_replay gives the replay its results)
            inner = _tainted(s.func.ir, seen | {id(s.func)})
            if any(isinstance(t, ir.Return) and any(v.name in inner for v in t.values)
                   for t in _stmts(s.func.ir.body)):
                tainted.update(o.name for o in ir.defines(s))
    changed = bool(tainted)
    while changed:  # what is computed from those values
        changed = False
        for s in stmts:
            if any(a is not None and a.name in tainted for a in ir.reads(s)):
                for o in ir.defines(s):
                    if o.name not in tainted:
                        tainted.add(o.name)
                        changed = True
    return tainted


def unreplayed_atomic(fn: ir.Function) -> int | None:
    """The Python line where the adjoint of ``fn`` would use the value an atomic returned (a slot from a
    counter: ``s = atomic_add(count, 0, 1); out[s] = x[i]``), or None. The adjoint's replay does not run
    atomics (it writes no memory), so that value is not there: the gradient would go to the wrong element.
    Such a use is one that reaches an active value, an array carrying gradients (an index) or a branch."""
    stmts = _stmts(fn.body)
    tainted = _tainted(fn, set())
    if not tainted:
        return None
    act = Activity(fn)

    def grad_array(s) -> bool:
        return any(a is not None and isinstance(a.type, T.ArrayType) and carries_gradient(a.type) for a in ir.reads(s))

    def matters(s) -> bool:  # the adjoint of ``s`` depends on the values it reads
        if not isinstance(s, ir.Call) or s.kind == "make":  # copies, fields, constructors: linear in the values
            return False
        return grad_array(s) or any(act.active(o) for o in _outputs(s))

    def uses(s) -> list:  # what ``s`` reads that its adjoint needs: a write's index, not the value written
        args = [a for a in ir.reads(s) if a is not None]
        if isinstance(s, ir.Call) and s.builtin is not None and s.builtin.key in _WRITES and grad_array(s):
            return args[:-1]
        return args

    for s in stmts:
        if _atomic_result(s) or not any(a.name in tainted for a in uses(s)):
            continue
        if isinstance(s, (ir.If, ir.While, ir.For)):  # a branch or loop: what it runs
            blocks = [s.body] + [getattr(s, b) for b in ("orelse", "cond_block") if getattr(s, b, None)]
            if any(matters(t) for b in blocks for t in _stmts(b)):
                return s.line
        elif matters(s):
            return s.line
    return None
