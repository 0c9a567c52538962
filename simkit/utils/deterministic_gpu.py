"""Deterministic mode on a GPU in parallel: record the order-dependent atomics, sort, apply in launch order.

In deterministic mode a launch whose float atomics make its result depend on the order of threads gives the
result of a sequential loop over its launch indices (kernels/deterministic.py). One GPU thread running them in
turn is how any such kernel gets there, and slow. For the common case, a kernel that scatters sums
(``f[i] += ...``: springs, contacts, particle-to-grid), this module gets the same bits with the whole GPU:

1. the kernel runs in parallel as a variant in which each ``atomic_add``/``atomic_sub`` writes its contribution
   into slots of its own (native/det_record.h): slot ``index * per_thread + site + component`` holds the key
   ``target * span + scalar offset`` (``span``: the scalars of the largest target) and the value; slots of
   atomics a launch index skipped keep the key past the last (``targets * span``);
2. a stable radix sort by key (utils/sort.py, on the key's bits only: a few 8-bit passes) lists the
   contributions to each scalar in slot order, which is launch-index order, and within a launch index
   statement order (atomics outside loops run at most once each);
3. the values are gathered into that order, and one thread per scalar that was added to starts from the
   array's value and adds its contributions in that order, as the sequential loop does, in the array's
   precision (a scalar's contributions are added one after another, as they must be for those bits: a
   contended element costs one dependent addition per contribution).

An atomic in a loop runs any number of times per launch index: such a kernel (which must then write nothing
but its targets) is launched twice, first counting each launch index's contributions, then writing them from
the index's first slot (an exclusive prefix sum of the counts), in the order it makes them; the slot count is
read back in between, so such launches are not recorded inside a graph capture.

The result is bit for bit the sequential one, on every GPU and the CPU. Which kernels qualify:
deterministic.record_plan (float32/float64 atomic_add/atomic_sub in the kernel's body, on parameter arrays it
reads nowhere else, old values unused); at launch, the targets must also be contiguous,
overlap no other array argument (a view of the same memory would be read there), and the slots be fewer
than 2**31. Others keep the launch on one GPU thread (and its warning).
Backward launches are recorded by utils/deterministic_grad.py (their gradient accumulations happen inside native
code); ``record_cmd`` launches are recorded as ``launch`` is.
"""
from __future__ import annotations

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..kernels.deterministic import record_plan
from ..runtime import array, empty, handles, is_capturing, launch, zeros
from ..runtime.launch import IN_CAPTURE
from ..runtime.tape import paused
from .scan import array_scan
from .sort import radix_sort_pairs

MAX_SLOTS = (1 << 31) - 1  # the sort's values are int32 slot numbers


@kernel(enable_backward=False)
def _fill_slots(keys: array(dtype=T.int64), slots: array(dtype=T.int32), empty_key: T.int64):
    # (a slot no atomic writes keeps the key past the last target's)
    i = sk.tid()
    keys[i] = empty_key
    slots[i] = i


@kernel(enable_backward=False)
def _gather_runs(keys: array(dtype=T.int64), slots: array(dtype=T.int32), values: array(dtype=T.float64),
                 count: int, empty_key: T.int64, sorted_values: array(dtype=T.float64), ends: array(dtype=T.int32)):
    # the values in sorted order (the adding loops then stream them), and where each key's run ends
    p = sk.tid()
    key = keys[p]
    sorted_values[p] = values[slots[p]]
    if key != empty_key:
        if p == count - 1:
            ends[key] = p + 1
        elif keys[p + 1] != key:
            ends[key] = p + 1


@kernel(enable_backward=False)
def _apply(keys: array(dtype=T.int64), sorted_values: array(dtype=T.float64), ends: array(dtype=T.int32),
           first: T.int64, dest: array(dtype=T.Any)):
    # one thread per sorted slot: the first of each run of equal keys of this target adds the run's values in
    # order, from the element's value, in its precision (as the sequential loop)
    p = sk.tid()
    key = keys[p]
    off = key - first
    if off < T.int64(0) or off >= T.int64(dest.shape[0]):
        return
    if p > 0:
        if keys[p - 1] == key:
            return
    acc = dest[off]
    for q in range(p, ends[key]):
        acc = acc + dest.dtype(sorted_values[q])
    dest[off] = acc


@kernel(enable_backward=False)
def _total(counts: array(dtype=T.int64), offsets: array(dtype=T.int64), last: int, fail: array(dtype=T.int32),
           out: array(dtype=T.int64)):
    out[0] = offsets[last] + counts[last]
    out[1] = T.int64(fail[0])


def slot_count(counts, offsets, fail=None) -> tuple:
    """(slots, failed) of a counted launch: the exclusive prefix sum ``offsets`` of its ``counts`` per launch index
    ends at its total; ``fail``: a one-element int32 flag the launch may have set (one read back for both)."""
    device = counts.device
    out = empty(2, dtype=T.int64, device=device)
    launch(_total, 1, inputs=[counts, offsets, counts.shape[0] - 1, fail if fail is not None else zeros(1, dtype=T.int32,
           device=device), out], device=device, record_tape=False)
    n, failed = out.numpy()
    return int(n), bool(failed)


def _length(dtype) -> int:
    """Scalars in one element of ``dtype``."""
    return T.sizeof(dtype) // T.sizeof(T.scalar_of(dtype))


def _arrays(args):
    """The arrays among a launch's arguments, those its struct arguments hold, and the points of each Mesh whose
    handle it takes (``mesh_get`` reads them)."""
    for a in args:
        if isinstance(a, array):
            yield a
        elif hasattr(type(a), "_simkit_struct"):
            yield from (v for _name, v in type(a)._simkit_struct.arrays(a) if isinstance(v, array))
        else:
            points = getattr(handles.lookup(a), "points", None)
            if isinstance(points, array):
                yield points


def _span(a) -> tuple:
    """[low, high) bytes an array may touch (both ways from its pointer where a stride is negative)."""
    if a.ptr is None or a.size == 0:
        return (0, 0)
    if any(st < 0 for st in a.strides):
        return (a.ptr - a.capacity, a.ptr + a.capacity)
    return (a.ptr, a.ptr + a.capacity)


def _plan(spec):
    """The spec's record plan, or the reason it has none (cached)."""
    plan = spec.__dict__.get("_record", False)
    if plan is False:
        why = []
        plan = spec.__dict__["_record"] = record_plan(spec.ir, why) or (why[0] if why else "no atomic to record")
    return plan


def recorded_launch(kernel, spec, device, args, packed, bounds, size: int, block_dim: int, stream,
                    max_blocks: int):
    """Run an ordered launch of ``spec`` on CUDA ``device`` in parallel, recorded (see the module's text).
    Returns the reason when it cannot (a string: the caller then runs the threads in turn), else the launch's
    error or False. Its own launches and copies stay off the Tape."""
    with paused():
        return _recorded_launch(kernel, spec, device, args, packed, bounds, size, block_dim, stream, max_blocks)


def _recorded_launch(kernel, spec, device, args, packed, bounds, size: int, block_dim: int, stream,
                     max_blocks: int):
    plan = _plan(spec)
    if isinstance(plan, str):
        return plan
    if stream is not None:
        return "launched on an explicit stream"
    names = kernel.param_names
    targets = [args[k] for k in plan.targets]
    for k, t in zip(plan.targets, targets):
        if not isinstance(t, array) or not t.is_contiguous or T.scalar_of(t.dtype) not in (T.float32, T.float64):
            return f"'{names[k]}' is not a contiguous array of float32 or float64 values"
    spans = [_span(a) for a in _arrays(args)]
    for k, t in zip(plan.targets, targets):  # no other argument's memory may overlap a target's: it is read there
        lo, hi = _span(t)
        if sum(a_lo < hi and lo < a_hi for a_lo, a_hi in spans) > 1:
            return f"another argument's memory overlaps '{names[k]}', which its atomics add to"
    if plan.counted and is_capturing(device):
        return IN_CAPTURE + ": its atomics run in a loop, whose records are counted and the count read back"
    span = max(t.size * _length(t.dtype) for t in targets)
    empty_key = len(targets) * span
    entry, unit = kernel.module.load_recording(spec, device, plan)
    counts = offsets = None
    if plan.counted:  # a first launch counts each launch index's contributions; it writes nothing else
        counts = zeros(size, dtype=T.int64, device=device)
        unit.set_record_slots(device, 0, 0, span, counts.ptr, 0)
        err = unit.launch(entry, packed, bounds, size, block_dim, None, device, max_blocks)
        if err is not None:
            return err
        offsets = empty(size, dtype=T.int64, device=device)
        array_scan(counts, offsets, inclusive=False)
        n = slot_count(counts, offsets)[0]
        if n == 0:
            return False
        counts.zero_()
    else:
        n = size * plan.per_thread
    if n > MAX_SLOTS:
        return f"{n} records, over {MAX_SLOTS}"  # (the counting launch changed nothing)
    keys = empty(2 * n, dtype=T.int64, device=device)
    slots = empty(2 * n, dtype=T.int32, device=device)
    values = empty(n, dtype=T.float64, device=device)
    launch(_fill_slots, n, inputs=[keys, slots, T.int64(empty_key)], device=device, record_tape=False)
    unit.set_record_slots(device, keys.ptr, values.ptr, span, *((counts.ptr, offsets.ptr) if plan.counted else ()))
    err = unit.launch(entry, packed, bounds, size, block_dim, None, device, max_blocks)
    if err is not None:
        return err
    flats = [array(ptr=t.ptr, dtype=T.scalar_of(t.dtype), shape=(t.size * _length(t.dtype),), device=device, _owner=t)
             for t in targets]
    apply_in_order(keys, slots, values, n, empty_key, span, flats)
    return False


def apply_in_order(keys, slots, values, n: int, empty_key: int, span: int, flats: list) -> None:
    """Sort the ``n`` recorded slots stably by key and add each scalar's contributions, in slot order, to its value
    in ``flats[k]`` (the flat scalars of target ``k``, whose keys start at ``k * span``; None: a target that takes
    none). ``keys``/``slots`` hold 2n entries: the upper half is scratch."""
    device = keys.device
    radix_sort_pairs(keys, slots, n, 0, max(1, empty_key.bit_length()))
    ends = empty(empty_key, dtype=T.int32, device=device)
    launch(_gather_runs, n, inputs=[keys, slots, values, n, T.int64(empty_key), keys[n:].view(T.float64), ends],
           device=device, record_tape=False)
    for k, flat in enumerate(flats):
        if flat is not None:
            launch(_apply, n, inputs=[keys, keys[n:].view(T.float64), ends, T.int64(k * span), flat], device=device,
                   record_tape=False)


def _register() -> None:
    import importlib

    # (the module: simkit.runtime's attribute `launch` is the function)
    importlib.import_module("..runtime.launch", __package__).recorded_launch = recorded_launch


_register()
