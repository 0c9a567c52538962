"""Host-side helpers of ``simkit.array``: aligned (and pinned) CPU buffers, the numpy storage of each element
type, dtype inference from data, and the shape check."""
from __future__ import annotations

import math

import numpy as np

from ..kernels import types as T
from ..kernels import types_bf16 as _BF16


#: Byte alignment of CPU array data (a cache line): 128-byte BVH nodes then span two lines, not three,
#: and vector loads of aligned rows never split a line.
CPU_ALIGN = 64


def _host_buffer(shape, nd, zero: bool) -> np.ndarray:
    """A C-contiguous numpy array of ``shape``/``nd`` whose data starts at a multiple of CPU_ALIGN."""
    return host_buffer_at(shape, nd, zero)[0]


def host_buffer_at(shape, nd, zero: bool) -> tuple:
    """(_host_buffer, the address of its data): array creation's hot path reads the address once."""
    dt = np.dtype(nd)
    nbytes = math.prod(shape) * dt.itemsize  # (Python ints: np.prod costs ~4 us a call)
    return _aligned_at((np.zeros if zero else np.empty)(nbytes + CPU_ALIGN, np.uint8), shape, dt, nbytes)


def _aligned(raw: np.ndarray, shape, dt: np.dtype, nbytes: int) -> np.ndarray:
    """The ``shape``/``dt`` view of ``raw`` (bytes, CPU_ALIGN spare) that starts at a multiple of CPU_ALIGN."""
    return _aligned_at(raw, shape, dt, nbytes)[0]


def _aligned_at(raw: np.ndarray, shape, dt: np.dtype, nbytes: int) -> tuple:
    """(_aligned, the address of its data)."""
    addr = raw.__array_interface__["data"][0]  # (~1.5 us: read once)
    off = (-addr) % CPU_ALIGN
    return raw[off:off + nbytes].view(dt).reshape(shape), addr + off


def _pinned_buffer(shape, nd, zero: bool) -> np.ndarray | None:
    """Like _host_buffer, in page-locked memory (``cuMemHostAlloc``); None without a GPU."""
    from .device import is_cuda_available

    if not is_cuda_available():
        return None
    from ..kernels.backends.cuda import driver

    dt = np.dtype(nd)
    nbytes = math.prod(shape) * dt.itemsize
    # (the driver's allocations are page-aligned; be sure of CPU_ALIGN all the same)
    buf = _aligned(driver.alloc_pinned(nbytes + CPU_ALIGN), shape, dt, nbytes)
    if zero:
        buf.fill(0)
    return buf


def np_dtype_of(dtype):
    """(numpy scalar dtype, trailing element shape) that stores ``dtype``."""
    if T.is_scalar(dtype):
        return dtype._np, ()
    if T.is_value(dtype):
        return dtype._dtype._np, tuple(dtype._shape)
    if T.is_struct(dtype):
        return dtype._simkit_struct.numpy_dtype(), ()
    raise TypeError(f"{T.type_name(dtype)} cannot be an array element type")


def _is_bf16(dtype) -> bool:
    return (T.is_scalar(dtype) or (T.is_value(dtype) and not dtype._generic)) and T.scalar_of(dtype) is T.bfloat16


def _host_data(dtype, data, nd) -> np.ndarray:
    """``data`` as numpy elements of ``nd`` for an array of ``dtype``; bfloat16 (and its vectors) convert
    numbers through float32, rounded to nearest even, and take uint16 data as bit patterns (types_bf16.py)."""
    return _BF16.host_data(data) if _is_bf16(dtype) else np.asarray(data, dtype=nd)


def _infer_dtype(data):
    if isinstance(data, np.ndarray):
        return T.scalar_from_numpy(data.dtype)
    arr = np.asarray(data)
    if arr.dtype == np.float64:
        return T.float32  # Python floats default to float32, as in kernels
    if arr.dtype == np.int64:
        return T.int32
    return T.scalar_from_numpy(arr.dtype)


INT32_MAX = 2**31 - 1


def check_shape(shape) -> None:
    """Each axis of an array is indexed with int32 in kernels (its descriptor's shape): refuse longer ones."""
    if not shape or (0 <= min(shape) and max(shape) <= INT32_MAX):
        return
    if any(int(s) < 0 for s in shape):
        raise ValueError(f"Array shapes must be non-negative, got {tuple(shape)}")
    if any(int(s) > INT32_MAX for s in shape):
        raise ValueError(f"Array shapes must not exceed the maximum representable value of a signed 32-bit integer "
                         f"({INT32_MAX}), got {tuple(int(s) for s in shape)}: kernels index each axis with int32; "
                         f"use more dimensions")
