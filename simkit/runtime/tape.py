"""``Tape``: record launches, copies and callbacks; run their adjoints backward.

Example::

    x = sk.array(np.ones(4), dtype=float, requires_grad=True)
    y = sk.zeros(1, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(sum_squares, dim=4, inputs=[x], outputs=[y])
    tape.backward(loss=y)          # x.grad == 2 * x

Gradients are never silently wrong: an array that a recorded launch read and
that was overwritten afterwards (by a later launch, a copy, ``fill_`` or
``assign``) makes ``backward()`` raise, naming the array and the launch. A
kernel that reads an array and then writes it (``a[i] = a[i] * x[i]``,
``a[i] += a[i] * a[i]``) is recorded with a copy of that array's values from
before the launch, which its adjoint reads instead (memory for exactness, as
PyTorch saves tensors for backward); one that also reads after writing is
refused before it runs (see ``analysis.load_order``).
The adjoints of stores and copies consume (zero) the gradient of what they
overwrote, so an array a recorded launch wrote may be overwritten by later
recorded operations; an overwrite the tape did not see raises.
"""
from __future__ import annotations

import contextlib
import copy as _copy
import weakref
from collections.abc import Mapping

import numpy as np

from ..kernels import analysis
from . import access_check, handles

_active: list = []


class TapeError(RuntimeError):
    """A recorded computation cannot be differentiated correctly."""


def _where(kernel) -> str:
    src = kernel.source()
    return f"{src.filename}:{src.first_line}"


class _Launch:
    def __init__(self, kernel, spec, dims, args, device, tape, before, reads, stores):
        """``reads`` / ``stores``: the launch's arrays, [(path, label, array)] (``_resolved``)."""
        self.kernel, self.spec, self.dims, self.args, self.device = kernel, spec, dims, args, device
        self.tape = weakref.ref(tape) if tape is not None else None   # (no cycle: tapes free on del)
        self.before = before = before or {}  # {path: copy of that array from before the launch} (inplace_inputs)
        # (a read of an array copied before the launch reads the launch's own copy)
        self.reads = [(label, a, a._version) for path, label, a in reads if path not in before]
        self.stores = [(label, a, a._wversion) for _, label, a in stores]
        # HashGrid / Bvh / Mesh ids among the arguments: kept alive, and checked at backward time
        lookup = handles.lookup
        self.structures = [(s, *handles.record(s)) for s in (lookup(args[i]) for i in _plan(kernel, spec)[2])
                           if s is not None]

    def _structure_error(self, s, what):
        return TapeError(
            f"{type(s).__name__} {s.id:#x} queried by kernel '{self.kernel.key}' ({_where(self.kernel)}) {what} "
            f"after that launch was recorded; its gradient would be wrong. Give each step its own point arrays, "
            f"or rebuild the HashGrid / refit the Mesh inside the Tape (backward then restores it).")

    def check(self, restored=None):
        """``restored``: see ``handles.problem`` (given in the check before any adjoint runs)."""
        for s, st, stale in self.structures:
            why = handles.problem(s, st, stale, restored)
            if why is not None:
                raise self._structure_error(s, why)
        for name, a, version in self.reads:
            if a._version != version:
                raise TapeError(
                    f"array '{name}' read by kernel '{self.kernel.key}' ({_where(self.kernel)}) was modified "
                    f"after that launch was recorded (by a later launch, copy, fill_ or assign); its gradient "
                    f"would be wrong. Give each step its own arrays, or clone the array before changing it.")
        for name, a, version in self.stores:
            tape = self.tape() if self.tape is not None else None
            if a._wversion != version and not (tape is not None and tape.consumed(a, version)):
                raise TapeError(
                    f"array '{name}' written by kernel '{self.kernel.key}' ({_where(self.kernel)}) was "
                    f"overwritten by an operation the tape did not record (outside `with tape:`, "
                    f"record_tape=False, fill_ or assign) before backward(); the gradient of the values it wrote "
                    f"is lost. Give each step its own output arrays, or record the overwrite.")

    def backward(self):
        self.check()
        from .launch import launch_backward

        args = list(self.args)
        by_name = dict(zip(self.kernel.param_names, self.args))
        for path, snap in self.before.items():
            a = analysis.resolve(path, by_name)
            snap.grad = a.grad  # (the array's gradient now: it may have been replaced since, as in Warp)
            snap._retain = a._retain
            _substitute(args, self.kernel.param_names, path, snap)
        launch_backward(self.kernel, self.spec, self.dims, args, self.device)

    def arrays(self):
        """The launch's arrays, those inside struct arguments included."""
        from ..kernels import types as T
        from .array import array

        out = []
        for a in self.args:
            if isinstance(a, array):
                out.append(a)
            elif T.is_struct(type(a)):
                out += [v for _, v in type(a)._simkit_struct.arrays(a) if isinstance(v, array)]
        return out


class _Copy:
    def __init__(self, dest, src):
        self.dest, self.src = dest, src

    def check(self):
        """Nothing to check: a copy's adjoint reads no values of its source (an overwrite of the source
        after the copy leaves its gradient exact; an earlier writer of the source checks its own)."""

    def backward(self):
        if not self.dest.requires_grad:
            return
        # src.grad += dest.grad (element counts match; copies may cross devices and shapes), and the
        # copy consumes dest.grad (runtime/copy_adjoint.py: on a GPU without leaving it)
        from .copy_adjoint import copy_adjoint

        with paused():
            copy_adjoint(self.dest, self.src)

    def arrays(self):
        return [self.dest, self.src]


class _Func:
    def __init__(self, fn, arrays):
        self.fn, self._arrays = fn, list(arrays or [])

    def check(self):
        pass

    def backward(self):
        self.fn()

    def arrays(self):
        return self._arrays


class _Restore(_Func):
    """Puts a structure back into an earlier state (a Mesh refit inside the Tape; see runtime/handles.py)."""

    def __init__(self, structure, state):
        super().__init__(lambda: structure._tape_restore(state), ())
        self.structure, self.state = structure, state


def spec_access(spec):
    acc = getattr(spec, "_access", None)
    if acc is None:
        acc = spec._access = analysis.analyze(spec.ir)
    return acc


def _plan(kernel, spec) -> tuple:
    """What recording a launch of ``spec`` reads from its arguments, worked out once per specialisation:
    (reads, stores) as [(path, label, argument index, struct fields)], and the indices of the integer arguments
    (a HashGrid's, Bvh's or Mesh's handle)."""
    plan = spec.__dict__.get("_rec_plan")
    if plan is None:
        from ..kernels import types as T

        acc, names = spec_access(spec), kernel.param_names

        def located(paths):
            return [(p, ".".join(p), names.index(p[0]), p[1:]) for p in paths if p[0] in names]

        ints = [i for i, t in enumerate(spec.types) if T.is_scalar(t) and T.is_int(t)]
        plan = spec._rec_plan = (located(acc.reads), located(acc.stores), ints)
    return plan


def _resolved(kernel, spec, args) -> tuple:
    """The arrays a launch of ``spec`` with ``args`` reads and overwrites: ([(path, label, array)], same)."""
    reads, stores, _ = _plan(kernel, spec)
    return _arrays(reads, args), _arrays(stores, args)


def _arrays(located, args) -> list:
    out = []
    for path, label, idx, fields in located:
        v = _field(args[idx], fields)
        if v is not None:
            out.append((path, label, v))
    return out


def _field(v, fields):
    """``v.f1.f2...`` along ``fields`` (a struct argument's array), None where a link is missing."""
    for f in fields:
        if v is None:
            return None
        v = getattr(v, f, None)
    return v


def inplace_inputs(kernel, spec, args) -> dict | None:
    """Before a recorded launch runs: copies of the arrays it loads before writing them, {path: copy}
    (its adjoint replays those loads from the copies, with the arrays' own gradients). A kernel whose
    loads of one array both precede and follow its writes of it is refused."""
    order = getattr(spec, "_order", None)
    if order is None:
        order = spec._order = analysis.load_order(spec.ir)
    if not order:
        return None
    by_name = dict(zip(kernel.param_names, args))
    out = {}
    for path, (kind, line) in order.items():
        a = analysis.resolve(path, by_name)
        if a is None or kind == analysis.AFTER:
            continue
        if kind == analysis.MIXED:
            src = kernel.source()
            raise TapeError(
                f"{src.filename}:{line}: kernel '{kernel.key}' reads array '{'.'.join(path)}' both before and "
                f"after writing it (or in a loop that writes it); its adjoint cannot replay those reads. Read "
                f"each element once into a local before writing it, or write to a separate output array.")
        out[path] = _snapshot(a, kernel)
    return out


def _snapshot(a, kernel):
    """A copy of ``a``'s values laid out as ``a`` (same strides: it takes ``a``'s gradient in backward)."""
    with paused():
        if a.is_contiguous:
            from .array_create import clone

            snap = clone(a, requires_grad=False)
        elif a.device.is_cpu:
            from .array import array

            src = a.numpy()
            span = src.itemsize + sum((n - 1) * st for n, st in zip(src.shape, src.strides))
            buf = np.empty(-(-span // src.itemsize), src.dtype)
            view = np.lib.stride_tricks.as_strided(buf, src.shape, src.strides)
            view[...] = src
            snap = array(dtype=a.dtype, device=a.device, _np_view=view, _owner=buf)
        elif all(st >= 0 for st in a.strides):  # a GPU view: a buffer spanning it, viewed with its strides
            from .array import array, copy
            from .array_create import empty

            span = a.itemsize + sum((n - 1) * st for n, st in zip(a.shape, a.strides))
            buf = empty(-(-span // a.itemsize), dtype=a.dtype, device=a.device)
            snap = array(ptr=buf.ptr, dtype=a.dtype, shape=a.shape, strides=a.strides, device=a.device, _owner=buf)
            copy(snap, a)
        else:
            raise TapeError(f"kernel '{kernel.key}' reads and then writes a GPU array view with negative strides; "
                            f"the tape cannot keep a copy of it: pass a contiguous array")
    return snap


def _substitute(args: list, names, path: tuple, value):
    """Replace the array at ``path`` among a launch's arguments (copying the structs on the way)."""
    i = list(names).index(path[0])
    if len(path) == 1:
        args[i] = value
        return
    outer = _copy.copy(args[i])
    args[i] = obj = outer
    for field in path[1:-1]:
        inner = _copy.copy(getattr(obj, field))
        setattr(obj, field, inner)
        obj = inner
    setattr(obj, path[-1], value)


class Tape:
    """Records differentiable operations inside ``with tape:``; ``backward()`` runs their adjoints."""

    def __init__(self):
        self.ops: list = []
        self.loss = None
        self.scopes: list = []  # (op count, name, metadata) opening a scope; (op count, None, None) closing one
        # id(array._ver) -> (that list, the overwrite versions made by recorded stores and copies): their
        # adjoints consume the overwritten values' gradient, so an earlier store into the array stays exact
        self._overwrites: dict = {}
        self._flagged = False  # whether a recording flagged arrays as read (config.verify_autograd_array_access)

    def __enter__(self):
        if any(t is not None for t in _active):
            raise RuntimeError("a Tape is already recording: tapes cannot be nested (the outer one would miss "
                               "what the inner one records). Record on one tape, or use sk.checkpoint() for a "
                               "segment to recompute in backward().")
        _active.append(self)
        return self

    def __exit__(self, *exc):
        _active.remove(self)

    # ------------------------------------------------------------------ recording

    def record_launch(self, kernel, spec, dims, inputs, outputs, device, before=None):
        """``before``: what ``inplace_inputs`` returned before the launch ran."""
        args = list(inputs) + list(outputs)
        reads, stores = _resolved(kernel, spec, args)
        for spath, slabel, w in stores:
            for rpath, rlabel, r in reads:
                if w._ver is r._ver and rpath != spath:
                    src = kernel.source()
                    raise TapeError(
                        f"{src.filename}:{spec_access(spec).writes[spath]}: kernel '{kernel.key}' overwrites array "
                        f"'{slabel}', which is the same memory as the array '{rlabel}' it reads; its gradient "
                        f"cannot be computed from the overwritten values. Pass separate arrays.")
        op = _Launch(kernel, spec, dims, args, device, self, before, reads, stores)
        if access_check.enabled():
            self._flagged = True
            access_check.launch(kernel, spec, spec_access(spec), args)
        for _, a, version in op.stores:
            self._recorded_overwrite(a, version)
        self.ops.append(op)

    def record_copy(self, dest, src):
        if access_check.enabled():
            self._flagged = True
            access_check.copy(dest, src)
        self._recorded_overwrite(dest, dest._wversion)
        self.ops.append(_Copy(dest, src))

    def _recorded_overwrite(self, a, version):
        self._overwrites.setdefault(id(a._ver), (a._ver, set()))[1].add(version)

    def consumed(self, a, version) -> bool:
        """Were all overwrites of ``a`` after ``version`` made by operations on this tape? Their adjoints
        then take (and zero) the gradient of what they overwrote before the earlier store's adjoint runs."""
        made = self._overwrites.get(id(a._ver), (None, ()))[1]
        return all(v in made for v in range(version + 1, a._wversion + 1))

    def record_func(self, backward, arrays=None):
        """Record a Python callback run during ``backward()`` (e.g. a custom adjoint)."""
        self.ops.append(_Func(backward, arrays))

    @property
    def launches(self) -> list:
        """The recorded operations (Warp's name)."""
        return self.ops

    def record_scope_begin(self, name: str, metadata: dict | None = None):
        """Open a named scope around the operations recorded next (drawn as a cluster by ``visualize``)."""
        self.scopes.append((len(self.ops), name, metadata if metadata is not None else {}))

    def record_scope_end(self, remove_scope_if_empty: bool = True):
        """Close the innermost open scope; one that recorded nothing is dropped."""
        open_scopes = sum(1 if name is not None else -1 for _, name, _ in self.scopes)
        if open_scopes <= 0:
            raise RuntimeError("ended tape scope, but scope not present: record_scope_end() without a matching "
                               "record_scope_begin()")
        if remove_scope_if_empty and self.scopes[-1][1] is not None and self.scopes[-1][0] == len(self.ops):
            self.scopes.pop()
        else:
            self.scopes.append((len(self.ops), None, None))

    def visualize(self, filename: str | None = None, simplify_graph: bool = True, hide_readonly_arrays: bool = False,
                  array_labels: dict | None = None, ignore_graph_scopes: bool = False,
                  graph_direction: str = "LR") -> str:
        """The recorded operations as GraphViz dot source (written to ``filename`` if given); see
        ``runtime/tape_graph.py``."""
        from .tape_graph import to_dot

        return to_dot(self, filename, simplify_graph, hide_readonly_arrays, array_labels, ignore_graph_scopes,
                      graph_direction)

    def _record_restore(self, structure, state):
        """``backward()`` calls ``structure._tape_restore(state)`` here (before the earlier ops' adjoints)."""
        self.ops.append(_Restore(structure, state))

    # ------------------------------------------------------------------ backward

    def backward(self, loss=None, grads: dict | None = None):
        """Propagate adjoints from ``loss`` (seeded with 1), from ``grads`` {array: grad values} (an array
        without a gradient gets one), or, with neither, from what the arrays' ``.grad`` already hold (set
        them before, as in Warp)."""
        if loss is not None:
            if not loss.requires_grad:
                raise ValueError("the loss array was created without requires_grad=True")
            if loss.size != 1:
                raise ValueError(f"loss must have one element (got shape {loss.shape}); use grads= otherwise")
            loss.grad.fill_(1.0)
            self.loss = loss
        for a, g in (grads or {}).items():
            if not a.requires_grad:  # (as in Warp: seeding an array gives it a gradient)
                a.requires_grad = True
            a.grad.assign(g)
        restored = {}  # {id(structure): state} that the restores checked so far will have put it in
        for op in reversed(self.ops):
            if isinstance(op, _Launch):
                op.check(restored)
            else:
                op.check()
                if isinstance(op, _Restore):
                    restored[id(op.structure)] = op.state
        for op in reversed(self.ops):
            op.backward()
        self._clear_read_flags()  # (the reads are consumed: config.verify_autograd_array_access)

    def _clear_read_flags(self):
        if self._flagged:
            access_check.clear(a for op in self.ops for a in op.arrays())

    @property
    def gradients(self) -> "_Gradients":
        """{array: its grad} for every array touched by a recorded operation that has a gradient; also
        looks up any array with a gradient, and a struct argument (as in Warp): a struct of the same
        type whose arrays are the gradients of its arrays."""
        return _Gradients(self)

    def get_adjoint(self, a):
        """The gradient array of ``a`` (Warp's name for ``a.grad``; None when it has none)."""
        return a.grad

    def zero(self):
        """Zero the gradients of every array the tape touched."""
        for g in self.gradients.values():
            g.zero_()

    def reset(self):
        """Forget the recorded operations and zero their gradients."""
        self.zero()
        self._clear_read_flags()
        self.ops = []
        self.scopes = []
        self._overwrites = {}


class _Gradients(Mapping):
    def __init__(self, tape):
        self._touched = {}
        for op in tape.ops:
            for a in op.arrays():
                if a.requires_grad and a.grad is not None:
                    self._touched[a] = a.grad

    def __getitem__(self, key):
        from ..kernels import types as T
        from .array import array

        if isinstance(key, array) and key.requires_grad:
            return key.grad
        if T.is_struct(type(key)):
            return _struct_grad(key)
        raise KeyError(f"no gradient for {type(key).__name__} (an array created without requires_grad, or "
                       f"not an array or struct)")

    def __iter__(self):
        return iter(self._touched)

    def __len__(self):
        return len(self._touched)


def _struct_grad(s):
    """A struct like ``s`` whose array fields are the gradients of ``s``'s (None without one)."""
    from ..kernels import types as T
    from .array import array

    g = type(s)()
    for name, t in type(s)._simkit_struct.fields.items():
        v = getattr(s, name)
        if isinstance(v, array):
            setattr(g, name, v.grad if v.requires_grad else None)
        elif T.is_struct(t) and v is not None:
            setattr(g, name, _struct_grad(v))
    return g


def active_tape():
    """The Tape recording right now (None outside ``with tape:`` and inside ``checkpoint``)."""
    return _active[-1] if _active else None


@contextlib.contextmanager
def paused():
    """Record nothing inside (copies made for the Tape's own bookkeeping)."""
    _active.append(None)
    try:
        yield
    finally:
        _active.pop()


def _record_copy(dest, src):
    if _active and _active[-1] is not None:
        _active[-1].record_copy(dest, src)


class _Segment:
    """A checkpointed piece of computation: only its inputs and outputs are kept."""

    def __init__(self, fn, inputs, outputs):
        self.fn, self.inputs, self.outputs = fn, inputs, outputs
        self.versions = [getattr(a, "_version", None) for a in inputs]

    def check(self):
        for k, (a, v) in enumerate(zip(self.inputs, self.versions)):
            if v is not None and a._version != v:
                raise TapeError(f"input {k} of a checkpointed segment ({getattr(self.fn, '__name__', 'fn')}) was "
                                f"overwritten after it was recorded; its gradient would be wrong")

    def backward(self):
        self.check()
        inner = Tape()
        _active.append(inner)  # (not `with inner:`: backward() may run while another tape records)
        try:
            again = _as_tuple(self.fn(*self.inputs))
        finally:
            _active.remove(inner)
        seeds = {}
        for new, old in zip(again, self.outputs):
            if getattr(old, "requires_grad", False) and getattr(new, "requires_grad", False):
                seeds[new] = old.grad.numpy().copy()
                if not old.retain_grad:  # consumed, as the stores that wrote the output consume theirs
                    old.grad.zero_()
        if seeds:
            inner.backward(grads=seeds)

    def arrays(self):
        from .array import array

        return [a for a in list(self.inputs) + list(self.outputs) if isinstance(a, array)]


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def checkpoint(fn, *inputs):
    """Run ``fn(*inputs)`` without keeping its intermediate arrays; recompute them in ``backward()``.

    Use it for long rollouts: wrap each segment of k steps so that the tape holds
    one state per segment instead of one per step (memory O(N/k + k) for N steps,
    at the cost of one extra forward pass). ``fn`` must allocate its outputs with
    ``requires_grad=True`` and be deterministic.
    """
    _active.append(None)  # nothing inside is recorded
    try:
        out = fn(*inputs)
    finally:
        _active.pop()
    if _active and _active[-1] is not None:
        _active[-1].ops.append(_Segment(fn, inputs, _as_tuple(out)))
    return out


def bump_written(spec, kernel, args):
    """Advance the versions of every array the launch writes (overwrites also bump _wversion)."""
    steps = spec.__dict__.get("_bump_steps")
    if steps is None:
        acc = spec_access(spec)
        names = kernel.param_names
        steps = spec._bump_steps = [(names.index(p[0]), p, p in acc.stores) for p in acc.writes]
    for idx, path, overwrite in steps:
        a = _field(args[idx], path[1:])
        if a is not None:
            v = a._ver  # [all modifications, overwrites] (array._overwritten, inlined: every launch comes here)
            v[0] += 1
            if overwrite:
                v[1] += 1


_ = np
