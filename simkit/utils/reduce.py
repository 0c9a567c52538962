"""Reductions: ``array_sum`` and ``array_inner`` (Warp's ``wp.utils`` names), whole-array or along an axis.

Every reduction is one shape: the input seen as (outer, axis, inner), reduced over the middle axis into
(outer, inner) (the inner product of vectors and matrices: ``dot``/``ddot`` per element). The reduced axis is
split into ``nb`` chunks when there are few outputs: partial sums (outer, inner, nb), then their sum (one
launch when a single chunk does). A whole-array CPU reduction of scalars not recorded on a Tape takes the
vectorized path of reduce_lanes.py instead.

Unlike Warp's, these are recorded on a Tape when an input requires a gradient: ``tape.backward`` gives
``values.grad`` (``array_sum``), ``a.grad`` and ``b.grad`` (``array_inner``).
"""
from __future__ import annotations

import math
import operator

from .. import config
from ..kernels import func, kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty
from . import reduce_lanes as lanes
from ._common import NCPU, no_host_result, run, scalar_type, type_repr, types_equal

REDUCE_SCALARS = (T.float32, T.float64)

# Each thread keeps four accumulators: independent chains of adds that the processor overlaps (with one, every
# add waits for the previous one). On a GPU, thread b of nb reads entries b, b + nb, ... (neighbouring threads
# read neighbouring addresses). A whole-array CPU sum of scalars takes the vectorized path of reduce_lanes.py.


@kernel(_parallel_min=1)
def _sum_partial(values: array(dtype=T.Any, ndim=3), partial: array(dtype=T.Any, ndim=3), count: int,
                 chunk: int, first: int, step: int):
    o, i, b = sk.tid()
    t0 = b * first
    n = sk.min(chunk, (count - t0 + step - 1) // step)
    s0 = values.dtype(0)
    s1 = values.dtype(0)
    s2 = values.dtype(0)
    s3 = values.dtype(0)
    for q in range(n // 4):
        t = t0 + 4 * q * step
        s0 = s0 + values[o, t, i]
        s1 = s1 + values[o, t + step, i]
        s2 = s2 + values[o, t + 2 * step, i]
        s3 = s3 + values[o, t + 3 * step, i]
    for k in range(n - n % 4, n):
        s0 = s0 + values[o, t0 + k * step, i]
    partial[o, i, b] = (s0 + s1) + (s2 + s3)


@func
def _inner(a: T.Float, b: T.Float):
    return a * b


@func
def _inner(a: T.vector(length=T.Any, dtype=T.Float), b: T.vector(length=T.Any, dtype=T.Float)):  # noqa: F811
    return sk.dot(a, b)


@func
def _inner(a: T.matrix(shape=(T.Any, T.Any), dtype=T.Float),  # noqa: F811
           b: T.matrix(shape=(T.Any, T.Any), dtype=T.Float)):
    return sk.ddot(a, b)


@kernel(_parallel_min=1)
def _inner_partial(a: array(dtype=T.Any, ndim=3), b: array(dtype=T.Any, ndim=3),
                   partial: array(dtype=T.Any, ndim=3), count: int, chunk: int, first: int, step: int):
    o, i, k = sk.tid()
    t0 = k * first
    n = sk.min(chunk, (count - t0 + step - 1) // step)
    s0 = partial.dtype(0)
    s1 = partial.dtype(0)
    s2 = partial.dtype(0)
    s3 = partial.dtype(0)
    for q in range(n // 4):
        t = t0 + 4 * q * step
        s0 = s0 + _inner(a[o, t, i], b[o, t, i])
        s1 = s1 + _inner(a[o, t + step, i], b[o, t + step, i])
        s2 = s2 + _inner(a[o, t + 2 * step, i], b[o, t + 2 * step, i])
        s3 = s3 + _inner(a[o, t + 3 * step, i], b[o, t + 3 * step, i])
    for j in range(n - n % 4, n):
        s0 = s0 + _inner(a[o, t0 + j * step, i], b[o, t0 + j * step, i])
    partial[o, i, k] = (s0 + s1) + (s2 + s3)


@kernel
def _sum_partials(partial: array(dtype=T.Any, ndim=3), out: array(dtype=T.Any, ndim=2)):
    o, i = sk.tid()
    s = partial.dtype(0)
    for b in range(partial.shape[2]):
        s = s + partial[o, i, b]
    out[o, i] = s




def _normalize_axis(operation: str, axis, ndim: int) -> int:
    axis = operator.index(axis)
    if axis < -ndim or axis >= ndim:
        raise IndexError(f"{operation}() axis {axis} is out of bounds for an array with {ndim} dimensions")
    return axis % ndim


def _split(shape: tuple, axis: int | None) -> tuple[int, int, int]:
    """(outer, axis, inner) sizes of ``shape`` around ``axis`` (None: all of it on the axis)."""
    if axis is None:
        return 1, math.prod(shape), 1
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def _chunks(outputs: int, count: int, device) -> tuple[int, int]:
    """(nb, chunk): how to split the reduced axis so that outputs * nb threads keep the device busy."""
    want = 4 * (config.cpu_threads or NCPU) if device.is_cpu else 65536
    min_chunk = 4096 if device.is_cpu else 256
    nb = max(1, min(math.ceil(count / min_chunk), math.ceil(want / max(outputs, 1))))
    chunk = max(1, math.ceil(count / nb))
    return max(1, math.ceil(count / chunk)), chunk


def _contiguous(a: array) -> array:
    return a if a.is_contiguous else a.contiguous()


def _output(operation, out, shape, dtype, device):
    """(out, whether the result goes back to the host)."""
    if out is None:
        no_host_result(operation, device, "an out array")
        return empty(shape, dtype=dtype, device=device), True
    if out.device != device:
        raise RuntimeError("out storage device should match values array")
    if out.dtype != dtype:
        raise RuntimeError(f"out array should have type {type_repr(dtype)}")
    if out.shape != shape:
        raise RuntimeError(f"out array should have shape {shape}")
    return out, False


def _finish(partial_kernel, inputs, out, count, tape):
    """Reduce ``inputs`` (one (outer, axis, inner) array for a sum, two for an inner product) into ``out``."""
    dev = out.device
    o, _, i = inputs[0].shape[:3]
    target = out if out.is_contiguous else empty(out.shape, dtype=out.dtype, device=dev)
    nb, chunk = _chunks(o * i, count, dev)
    first, step = (chunk, 1) if dev.is_cpu else (1, nb)  # a contiguous run per block, or interleaved blocks
    if nb == 1:  # one block per output: it writes the output itself
        run(partial_kernel, (o, i, 1), [*inputs, target.reshape((o, i, 1)), count, chunk, first, step], dev,
            tape=tape)
    else:
        partial = empty((o, i, nb), dtype=out.dtype, device=dev, requires_grad=tape)
        run(partial_kernel, (o, i, nb), [*inputs, partial, count, chunk, first, step], dev, tape=tape)
        run(_sum_partials, (o, i), [partial, target.reshape((o, i))], dev, tape=tape)
    if target is not out:
        out.assign(target)


def _reduce(partial_kernel, inner: bool, inputs, out, count, axis, tape):
    """``inputs`` (one array, or the two of an inner product) reduced into ``out`` over ``axis``."""
    if not tape and lanes.applies(inputs, count, axis):
        lanes.reduce(inner, inputs, out, count)
        return
    split = _split(inputs[0].shape, axis)
    _finish(partial_kernel, [_contiguous(x).reshape(split) for x in inputs], out, count, tape)


def _count_shape(a: array, count, axis, what: str) -> tuple[int, tuple]:
    if count is None:
        count = a.size if axis is None else a.shape[axis]
    limit = a.size if axis is None else a.shape[axis]
    if count > limit:
        raise RuntimeError(f"{what} ({count}) exceeds the {'array size' if axis is None else 'axis length'} "
                           f"({limit})")
    if axis is None:
        return count, (1,)
    shape = list(a.shape)
    shape[axis] = 1
    return count, tuple(shape)


def _needs_grad(*arrays) -> bool:
    from ..runtime.tape import active_tape  # noqa: PLC0415 - a runtime lookup
    return active_tape() is not None and any(x.requires_grad for x in arrays)


def array_sum(values: array, out: array | None = None, value_count: int | None = None, axis: int | None = None):
    """Sum of the elements of ``values`` (Warp's ``wp.utils.array_sum``).

    Scalar type ``float32`` or ``float64`` (vectors and matrices sum per component). ``axis=None``: the sum of
    the first ``value_count`` elements (default all), returned as a number (a numpy array for composite
    dtypes) unless ``out`` (shape (1,)) is given. With ``axis`` (negative counts from the end): ``out`` has
    ``values``' shape with that axis 1, holds the sums of the first ``value_count`` entries along it, and is
    returned.

    >>> import simkit as sk
    >>> float(sk.utils.array_sum(sk.array([1.0, 2.0, 3.0])))
    6.0
    """
    if axis is not None:
        axis = _normalize_axis("array_sum", axis, values.ndim)
    value_count, shape = _count_shape(values, value_count, axis, "value_count")
    out, host = _output("array_sum", out, shape, values.dtype, values.device)
    if value_count == 0 or 0 in shape:
        out.zero_()
        return out.numpy()[0] if axis is None and host else out
    dt = values.dtype
    if scalar_type(dt) not in REDUCE_SCALARS or not (T.is_scalar(dt) or T.is_vector(dt) or T.is_matrix(dt)):
        raise RuntimeError(f"Unsupported data type: {type_repr(dt)}")
    _reduce(_sum_partial, False, [values], out, value_count, axis, _needs_grad(values))
    return out.numpy()[0] if axis is None and host else out


def array_inner(a: array, b: array, out: array | None = None, count: int | None = None, axis: int | None = None):
    """Inner product of ``a`` and ``b`` (Warp's ``wp.utils.array_inner``): the sum of the products of all
    their scalar components.

    Same shape and dtype (scalar type ``float32`` or ``float64``; vectors and matrices dot per element).
    ``axis=None``: over the first ``count`` elements (default all), returned as a number unless ``out``
    (shape (1,), the scalar type) is given; with ``axis``, ``out`` has the inputs' shape with that axis 1.

    >>> import simkit as sk
    >>> float(sk.utils.array_inner(sk.array([1.0, 2.0]), sk.array([3.0, 4.0])))
    11.0
    """
    if a.shape != b.shape:
        raise ValueError(f"array_inner() arguments must have the same shape, got {a.shape} and {b.shape}")
    if a.device != b.device:
        raise RuntimeError(f"A and b array storage devices do not match ({a.device} vs {b.device})")
    if not types_equal(a.dtype, b.dtype):
        raise RuntimeError(f"A and b array data types do not match ({type_repr(a.dtype)} vs {type_repr(b.dtype)})")
    if axis is not None:
        axis = _normalize_axis("array_inner", axis, a.ndim)
    count, shape = _count_shape(a, count, axis, "count")
    st = scalar_type(a.dtype)
    out, host = _output("array_inner", out, shape, st, a.device)
    if count == 0 or 0 in shape:
        if axis is None and host:
            return 0.0
        out.zero_()
        return out
    if st not in REDUCE_SCALARS or not (T.is_scalar(a.dtype) or T.is_vector(a.dtype) or T.is_matrix(a.dtype)):
        raise RuntimeError(f"Unsupported data type: {type_repr(a.dtype)}")
    _reduce(_inner_partial, True, [a, b], out, count, axis, _needs_grad(a, b))
    return out.numpy()[0] if axis is None and host else out
