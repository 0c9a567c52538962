"""Prefix sums: ``array_scan`` (Warp's ``wp.utils.array_scan``), inclusive or exclusive.

Three passes over contiguous chunks: each block sums its chunk, the block sums are scanned (recursively),
then each block scans its chunk from its offset. Vectors are scanned component-wise.
"""
from __future__ import annotations

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty
from ._common import blocks, run, scalar_type, type_repr, types_equal

SCAN_SCALARS = (T.int32, T.int64, T.float32, T.float64)


@kernel(_parallel_min=1)
def _scan_block_sums(values: array(dtype=T.Any), sums: array(dtype=T.Any), n: int, chunk: int):
    b = sk.tid()
    s = values.dtype(0)
    for i in range(b * chunk, sk.min(n, b * chunk + chunk)):
        s = s + values[i]
    sums[b] = s


@kernel(_parallel_min=1)
def _scan_blocks(values: array(dtype=T.Any), offsets: array(dtype=T.Any), out: array(dtype=T.Any), n: int,
                 chunk: int, inclusive: int):
    # values and out may be the same array: each value is read before its slot is written
    b = sk.tid()
    s = offsets[b]
    for i in range(b * chunk, sk.min(n, b * chunk + chunk)):
        v = values[i]
        if inclusive == 0:
            out[i] = s
        s = s + v
        if inclusive != 0:
            out[i] = s


@kernel
def _scan_serial(values: array(dtype=T.Any), out: array(dtype=T.Any), n: int, inclusive: int):
    s = values.dtype(0)
    for i in range(n):
        v = values[i]
        if inclusive == 0:
            out[i] = s
        s = s + v
        if inclusive != 0:
            out[i] = s


def scan_1d(values: array, out: array, inclusive: bool) -> None:
    """Scan the 1D array ``values`` into ``out`` (same dtype and length; may be the same array)."""
    n = values.shape[0]
    if n == 0:
        return
    dev = values.device
    nb, chunk = blocks(n, dev, cpu_chunk=32768)
    if nb == 1:
        run(_scan_serial, 1, [values, out, n, int(inclusive)], dev)
        return
    sums = empty(nb, dtype=values.dtype, device=dev)
    run(_scan_block_sums, nb, [values, sums, n, chunk], dev)
    scan_1d(sums, sums, False)
    run(_scan_blocks, nb, [values, sums, out, n, chunk, int(inclusive)], dev)


def exclusive_scan(values: array, out: array) -> int:
    """``out[i] = values[0] + ... + values[i - 1]`` for 1D arrays of one length and dtype (not the same array), and
    the sum of all values, read back: the offsets and the count of a compaction."""
    n = values.shape[0]
    if n == 0:
        return 0
    scan_1d(values, out, False)
    return int(out[n - 1:n].numpy()[0] + values[n - 1:n].numpy()[0])


def array_scan(in_array: array, out_array: array, inclusive: bool = True) -> None:
    """Prefix sum of ``in_array`` into ``out_array``, as Warp's ``wp.utils.array_scan``.

    ``inclusive=True``: ``out[i] = in[0] + ... + in[i]``; else ``out[0] = 0``, ``out[i] = in[0] + ... + in[i-1]``.
    Scalar or vector dtypes of ``int32``, ``int64``, ``float32`` or ``float64``; vectors component-wise.
    The arrays must match in device, size and dtype, and be contiguous or 1D (strided 1D views are fine).
    Not recorded on a Tape (as in Warp).

    >>> import simkit as sk
    >>> out = sk.zeros(4, dtype=int)
    >>> sk.utils.array_scan(sk.array([1, 2, 3, 4], dtype=int), out, inclusive=False)
    >>> out.numpy().tolist()
    [0, 1, 3, 6]
    """
    if in_array.device != out_array.device:
        raise RuntimeError(f"In and out array storage devices do not match ({in_array.device} vs {out_array.device})")
    if in_array.size != out_array.size:
        raise RuntimeError(f"In and out array storage sizes do not match ({in_array.size} vs {out_array.size})")
    if not types_equal(in_array.dtype, out_array.dtype):
        raise RuntimeError(f"In and out array data types do not match ({type_repr(in_array.dtype)} vs "
                           f"{type_repr(out_array.dtype)})")
    if in_array.size == 0:
        return
    if not in_array.is_contiguous and in_array.ndim != 1:
        raise RuntimeError("Input array must be contiguous or one-dimensional")
    if not out_array.is_contiguous and out_array.ndim != 1:
        raise RuntimeError("Output array must be contiguous or one-dimensional")
    dt = in_array.dtype
    if not (T.is_scalar(dt) or T.is_vector(dt)) or scalar_type(dt) not in SCAN_SCALARS:
        raise RuntimeError(f"Unsupported data type: {type_repr(dt)}")
    src = in_array if in_array.ndim == 1 else in_array.flatten()
    dst = out_array if out_array.ndim == 1 else out_array.flatten()
    scan_1d(src, dst, inclusive)
