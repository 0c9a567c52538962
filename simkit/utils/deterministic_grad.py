"""Deterministic mode on a GPU, backward launches: gradients accumulated in parallel, in launch-index order.

A backward launch adds the adjoints of a kernel's array reads into the arrays' gradients. Where several threads
read one element, their additions meet there, and with atomics they come in any order. In deterministic mode the
result must be the one of a sequential loop over the launch indices (kernels/deterministic.py); this module gets
those bits with the whole GPU, as utils/deterministic_gpu.py does for a forward launch's float atomics:

1. the adjoint kernel's recording variant (native/det_grad.h) runs once to count: each launch index counts the
   accumulations it would share with other threads, and checks that each lands in a gradient array of the launch
   that the kernel does not also write (an output's gradient is read, and consumed, by the same launch). This
   launch changes nothing: it consumes no output gradient and makes no plain adds;
2. an exclusive prefix sum of the counts gives each launch index its first slot;
3. the variant runs again, for real: it consumes the output gradients and makes the plain adds no other thread
   shares (a thread's own element: adjoint.unique_arrays; its local arrays) as the plain backward launch does,
   and writes each shared accumulation, component by component, into the next slot of its launch index: the key
   (gradient array's row * span + scalar offset) and the value (as a double);
4. the slots are sorted stably by key, and one thread per gradient scalar adds its contributions, in slot order
   (launch-index order, then the order the adjoint made them), to the value it had, in its precision.

A launch that cannot be recorded runs on one GPU thread, as before, with the reason in its warning: a kernel
calling code simkit does not generate (kernels/deterministic.grad_record_refusal), a launch on an explicit stream
or inside a graph capture (the slot count is read back between the launches), or a contribution that lands
elsewhere (a gradient of float16 or struct values, or the gradient of an array the kernel also writes: any array,
when it writes one it cannot trace to its arguments, through a struct it made or ``mesh_get``; found by the
counting launch, which changed nothing).
"""
from __future__ import annotations

import numpy as np

from ..kernels import types as T
from ..kernels.analysis import resolve
from ..kernels.deterministic import grad_record_refusal
from ..runtime import array, empty, handles, is_capturing, launch, zeros
from ..runtime.launch import IN_CAPTURE
from ..runtime.tape import paused, spec_access
from .deterministic_gpu import MAX_SLOTS, _fill_slots, _span, apply_in_order, slot_count
from .scan import array_scan

_RECORDED = (T.float32, T.float64)


def _refusal(spec):
    """Why the spec's backward launches cannot be recorded, or None (cached)."""
    why = spec.__dict__.get("_grad_record", False)
    if why is False:
        why = spec.__dict__["_grad_record"] = grad_record_refusal(spec.ir)
    return why


def _gradients(kernel, spec, args, adj):
    """(gradient array, written) for each array argument (struct-held and indexed arrays included) whose
    gradient the launch may add to: its explicit adjoint (``adj``) or its own .grad, and the points of each Mesh
    whose handle it takes; ``written``: the kernel writes the array, so the launch reads that gradient."""
    by_name = dict(zip(kernel.param_names, args))
    written = {id(a) for a in (resolve(p, by_name) for p in spec_access(spec).writes) if a is not None}
    for k, (t, v) in enumerate(zip(spec.types, args)):
        if v is None:
            continue
        points = getattr(handles.lookup(v), "points", None) if t is T.uint64 else None
        if isinstance(points, array) and points.requires_grad and points.grad is not None:
            yield points.grad, False  # (mesh queries read the points; mesh_get's arrays may write: _table)
        if isinstance(t, T.IndexedArrayType):
            v = v.data
        if isinstance(v, array):
            g = adj[k] if adj is not None and adj[k] is not None else (v.grad if v.requires_grad else None)
            if isinstance(g, array):  # (another kind of explicit adjoint: its contributions fail the count)
                yield g, id(args[k]) in written
        elif T.is_struct(t):
            for _name, a in type(v)._simkit_struct.arrays(v):
                if isinstance(a, array) and a.requires_grad and a.grad is not None:
                    yield a.grad, id(a) in written


def _table(kernel, spec, args, adj):
    """The launch's gradient arrays: rows (first byte, end byte, bytes of a scalar: 0 where contributions must not
    land) and the flat scalar array over each row's bytes (None for a row that takes none)."""
    spans, taken = [], []
    untraced = spec_access(spec).untraced  # (written through a struct it made or mesh_get: any gradient may be read)
    for g, written in _gradients(kernel, spec, args, adj):
        written = written or untraced
        lo, hi = _span(g)
        if hi > lo:
            spans.append((lo, hi, g, written))
            if written:
                taken.append((lo, hi))
    rows, flats = [], []
    for lo, hi, g, _written in spans:
        if any(r[0] == lo and r[1] == hi for r in rows):
            continue  # (the same gradient twice: one row)
        scalar = T.scalar_of(g.dtype) if not T.is_struct(g.dtype) else None
        ok = scalar in _RECORDED and all(st >= 0 for st in g.strides)
        ok = ok and not any(t_lo < hi and lo < t_hi for t_lo, t_hi in taken)  # (its elements are read there)
        ok = ok and not any(o_lo < hi and lo < o_hi and (o_lo, o_hi) != (lo, hi) for o_lo, o_hi, _g, _w in spans)
        size = T.sizeof(scalar) if ok else 0
        rows.append((lo, hi, size))
        flats.append(array(ptr=lo, dtype=scalar, shape=((hi - lo) // size,), device=g.device, _owner=g) if ok else None)
    return rows, flats


def recorded_backward(kernel, spec, device, args, adj, packed, bounds, size: int, block_dim: int, stream,
                      max_blocks: int):
    """Run an ordered backward launch of ``spec`` on CUDA ``device`` in parallel, recorded (see the module's
    text). Returns the reason when it cannot (a string: the caller then runs the threads in turn; nothing was
    changed), else the launch's error or False. Its own launches and copies stay off any Tape."""
    with paused():
        return _recorded_backward(kernel, spec, device, args, adj, packed, bounds, size, block_dim, stream,
                                  max_blocks)


def _recorded_backward(kernel, spec, device, args, adj, packed, bounds, size: int, block_dim: int, stream,
                       max_blocks: int):
    why = _refusal(spec)
    if why is not None:
        return why
    if stream is not None:
        return "launched on an explicit stream"
    if is_capturing(device):
        return IN_CAPTURE + ": its gradient accumulations are counted and the count read back in between"
    rows, flats = _table(kernel, spec, args, adj)
    span = max([(hi - lo) // s for lo, hi, s in rows if s] or [1])
    empty_key = max(1, len(rows)) * span
    entry, unit = kernel.module.load_recording(spec, device, True, adjoint=True)
    table = array(np.array(rows or [(0, 0, 0)], dtype=np.int64).reshape(-1), dtype=T.int64, device=device)
    counts = zeros(size, dtype=T.int64, device=device)
    fail = zeros(1, dtype=T.int32, device=device)
    grads = (table.ptr, len(rows), fail.ptr)
    unit.set_record_slots(device, 0, 0, span, counts.ptr, 0, *grads)
    err = unit.launch(entry, packed, bounds, size, block_dim, None, device, max_blocks)  # (counting: changes nothing)
    if err is not None:
        return err
    offsets = empty(size, dtype=T.int64, device=device)
    array_scan(counts, offsets, inclusive=False)
    n, failed = slot_count(counts, offsets, fail)
    if failed:
        return ("a gradient it accumulates is not one it can record (of float16 or struct values, of an array "
                "the kernel also writes, or of memory not passed to it)")
    if n > MAX_SLOTS:
        return f"{n} records, over {MAX_SLOTS}"
    counts.zero_()
    keys = empty(2 * max(n, 1), dtype=T.int64, device=device)
    slots = empty(2 * max(n, 1), dtype=T.int32, device=device)
    values = empty(max(n, 1), dtype=T.float64, device=device)
    if n:
        launch(_fill_slots, n, inputs=[keys, slots, T.int64(empty_key)], device=device, record_tape=False)
    unit.set_record_slots(device, keys.ptr, values.ptr, span, counts.ptr, offsets.ptr, *grads)
    err = unit.launch(entry, packed, bounds, size, block_dim, None, device, max_blocks)
    if err is not None or not n:
        return err or False
    apply_in_order(keys, slots, values, n, empty_key, span, flats)
    return False


def _register() -> None:
    import importlib

    importlib.import_module("..runtime.launch", __package__).recorded_backward = recorded_backward


_register()
