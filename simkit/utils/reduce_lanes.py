"""The CPU path of a whole-array ``array_sum`` / ``array_inner`` of float32 or float64 (reduce.py).

Why a separate path: a kernel that adds scalars one by one cannot be vectorized by the C++ compiler (integer
index arithmetic wraps in simkit, so the compiler cannot prove that ``values[t + 1]`` follows ``values[t]``),
and runs one scalar add (or two) per cycle. Here the values are read as vectors of ``LANE_BYTES`` (8 float64
or 16 float32): every add covers a whole vector register, and a sum of 8 MB runs at the speed of the memory.

Two launches: each of a few blocks (a few per CPU thread) sums its run of vectors component-wise; then one
thread adds the blocks' vectors, the vector's lanes, and the values past the last full vector. Not recorded
on a Tape: a reduction that needs a gradient takes the generic kernels of reduce.py.
"""
from __future__ import annotations

import threading

from ..kernels import func, kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty
from ._common import blocks, capturing, run

LANE_BYTES = 64  # (measured on the 2-core AVX-512 test machine: 32 and 128 bytes were slower)
LANES_MIN = 8192  # fewer values: the generic kernels (no faster here, and one launch fewer when they fit one block)


@kernel(_parallel_min=1)
def _sum_lanes_partial(lanes: array(dtype=T.Any), partial: array(dtype=T.Any), count: int, chunk: int):
    b = sk.tid()
    start = b * chunk
    n = sk.min(count - start, chunk)
    s0 = lanes.dtype(0)
    s1 = lanes.dtype(0)
    for q in range(n // 2):
        s0 = s0 + lanes[start + 2 * q]
        s1 = s1 + lanes[start + 2 * q + 1]
    if n % 2 == 1:
        s0 = s0 + lanes[start + n - 1]
    partial[b] = s0 + s1


@kernel(_parallel_min=1)
def _inner_lanes_partial(a: array(dtype=T.Any), b: array(dtype=T.Any), partial: array(dtype=T.Any), count: int,
                         chunk: int):
    k = sk.tid()
    start = k * chunk
    n = sk.min(count - start, chunk)
    s0 = a.dtype(0)
    s1 = a.dtype(0)
    for q in range(n // 2):
        t = start + 2 * q
        s0 = s0 + sk.cw_mul(a[t], b[t])
        s1 = s1 + sk.cw_mul(a[t + 1], b[t + 1])
    if n % 2 == 1:
        s0 = s0 + sk.cw_mul(a[start + n - 1], b[start + n - 1])
    partial[k] = s0 + s1


@func
def _lanes_total(partial: array(dtype=T.Any)):
    p = partial[0]
    for b in range(1, partial.shape[0]):
        p = p + partial[b]
    s = p[0]
    for j in range(1, len(p)):
        s = s + p[j]
    return s


@kernel
def _sum_lanes(partial: array(dtype=T.Any), values: array(dtype=T.Any), start: int, count: int,
               out: array(dtype=T.Any)):
    s = _lanes_total(partial)
    for t in range(start, count):
        s = s + values[t]
    out[0] = s


@kernel
def _inner_lanes(partial: array(dtype=T.Any), a: array(dtype=T.Any), b: array(dtype=T.Any), start: int,
                 count: int, out: array(dtype=T.Any)):
    s = _lanes_total(partial)
    for t in range(start, count):
        s = s + a[t] * b[t]
    out[0] = s


_KERNELS = {False: (_sum_lanes_partial, _sum_lanes), True: (_inner_lanes_partial, _inner_lanes)}
_LANE_TYPES: dict = {}
_local = threading.local()


def applies(inputs: list, count: int, axis) -> bool:
    """Whether this path reduces ``inputs`` (what it does not record on a Tape: the caller checks)."""
    x = inputs[0]
    return (x.device.is_cpu and count >= LANES_MIN and T.is_scalar(x.dtype)
            and (axis is None or x.size == x.shape[axis]) and all(v.is_contiguous for v in inputs))


def _lane_type(dtype, w: int):
    vt = _LANE_TYPES.get(dtype)
    if vt is None:
        vt = _LANE_TYPES[dtype] = T.vector(length=w, dtype=dtype)
    return vt


def _as_lanes(flat: array, m: int, w: int) -> array:
    """The first ``m * w`` values of the contiguous 1D CPU array ``flat`` as ``m`` vectors of ``w``, sharing its
    memory: ``flat[:m * w].reshape((m, w)).view(vector type)``, built as one array instead of three (each
    costs microseconds, against about 100 us for the whole sum of 8 MB)."""
    return array(dtype=_lane_type(flat.dtype, w), device=flat.device, _np_view=flat._np[:m * w].reshape(m, w),
                 _owner=flat)


def _scratch(dtype, n: int, device) -> array:
    """``n`` partial sums: reused from call to call by each Python thread (CPU launches finish before they
    return), fresh while a graph is being captured (its replays own them)."""
    if capturing(device):
        return empty(n, dtype=dtype, device=device)
    cache = _local.__dict__.setdefault("partials", {})
    a = cache.get((dtype, n))
    if a is None:
        a = cache[(dtype, n)] = empty(n, dtype=dtype, device=device)
    return a


def reduce(inner: bool, inputs: list, out: array, count: int) -> None:
    """The sum (``inner``: the inner product) of the first ``count`` values of ``inputs`` into ``out`` (one
    element)."""
    dev = out.device
    flat = [x if x.ndim == 1 else x.reshape((x.size,)) for x in inputs]
    w = LANE_BYTES // flat[0].itemsize
    m = count // w  # full vectors; the values after them are added one by one
    nb, chunk = blocks(m, dev, cpu_chunk=512)
    partial = _scratch(_lane_type(flat[0].dtype, w), nb, dev)
    partial_kernel, total_kernel = _KERNELS[inner]
    run(partial_kernel, nb, [*[_as_lanes(x, m, w) for x in flat], partial, m, chunk], dev)
    target = out if out.ndim == 1 else out.reshape((1,)) if out.is_contiguous else None
    tmp = target is None
    if tmp:
        target = empty(1, dtype=out.dtype, device=dev)
    run(total_kernel, 1, [partial, *flat, m * w, count, target], dev)
    if tmp:
        out.assign(target.reshape(out.shape))
