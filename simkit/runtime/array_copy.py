"""``copy(dest, src, dest_offset, src_offset, count)``: elements between arrays on any pair of devices.

As in Warp: ``count`` elements (all of ``src`` by default) from ``src``'s element ``src_offset`` on to
``dest``'s element ``dest_offset`` on, in row-major order. ``dest`` may be larger than the range. Offsets
and counts on arrays that are not contiguous need one-dimensional arrays (a range of a strided 2-d view
is not a view), and whole such arrays one shape; so do indexed arrays (copied by gather and scatter,
runtime/indexed_copy.py). Element types must have one size; of different types, the bits are copied.
"""
from __future__ import annotations

import operator

from ..kernels import types as T
from ..kernels.backends import cpu_graph
from .array import _element_bytes, _record_store, array
from .indexedarray import indexedarray


class CopyError(ValueError, RuntimeError):
    """A copy that cannot be done: a ValueError (as numpy's) and a RuntimeError (as Warp's)."""


def _range(dest: array, src: array, dest_offset, src_offset, count):
    """The (dest, src) pair of equal size that the copy moves between."""
    if not isinstance(dest, array) or not isinstance(src, array):
        raise CopyError(f"copy: source and destination must be simkit arrays, got {type(dest).__name__} and "
                        f"{type(src).__name__}")
    try:
        dest_offset, src_offset, count = (operator.index(v) for v in (dest_offset, src_offset, count))
    except TypeError:
        raise CopyError("copy: src_offset, dest_offset and count must be integers") from None
    for what, v in (("Source offset", src_offset), ("Destination offset", dest_offset), ("count", count)):
        if v < 0:
            raise CopyError(f"copy: {what} must be non-negative, got {v}")
    if dest.itemsize != src.itemsize:
        raise CopyError(f"copy: element sizes differ (destination dtype={T.type_name(dest.dtype)}, "
                        f"source dtype={T.type_name(src.dtype)})")
    count = count or src.size
    if src_offset + count > src.size:
        raise CopyError(f"copy: {count} element(s) from source offset {src_offset} exceeds the source size "
                        f"({src.size})")
    if dest_offset + count > dest.size:
        raise CopyError(f"copy: {count} element(s) to destination offset {dest_offset} exceeds the destination "
                        f"size ({dest.size})")
    if dest_offset == 0 and src_offset == 0 and count == src.size == dest.size:
        if dest.shape != src.shape and not (dest.is_contiguous and src.is_contiguous):
            raise CopyError(f"copy: arrays that are not contiguous need one shape: destination shape={dest.shape}, "
                            f"source shape={src.shape}")
        return dest, src  # the whole arrays (contiguous ones of any shapes of one size)
    if not (dest.is_contiguous and src.is_contiguous) and (dest.ndim != 1 or src.ndim != 1):
        raise CopyError("copy: dest_offset, src_offset and count are only supported for 1-D arrays when an array "
                        "is not contiguous")
    flat_dest, flat_src = (a if a.ndim == 1 else a.flatten() for a in (dest, src))
    return flat_dest[dest_offset:dest_offset + count], flat_src[src_offset:src_offset + count]


def _copy_indexed(dest, src, dest_offset, src_offset, count):
    """A copy into or out of indexed arrays (whole arrays of one shape, on one device), by kernels."""
    from .indexed_copy import gather, scatter

    if dest_offset or src_offset or count:
        raise CopyError("copy: dest_offset, src_offset and count are not supported for indexed arrays")
    if dest.shape != src.shape or dest.dtype is not src.dtype:
        raise CopyError(f"copy: an indexed array copies to or from one of its shape and dtype: destination "
                        f"{T.type_name(dest.dtype)} {dest.shape}, source {T.type_name(src.dtype)} {src.shape}")
    if isinstance(src, indexedarray) and not isinstance(dest, indexedarray) and src.device == dest.device:
        gather(dest, src)
        return
    if isinstance(src, indexedarray):
        src = src.contiguous()
    if src.device != dest.device:
        src = src.to(dest.device)
    if isinstance(dest, indexedarray):
        scatter(dest, src)
    else:
        copy(dest, src)


def copy(dest: array, src: array, dest_offset: int = 0, src_offset: int = 0, count: int = 0, stream=None) -> None:
    """Copy ``count`` elements (0: all of ``src``) from ``src[src_offset:]`` to ``dest[dest_offset:]``; a GPU copy
    runs on ``stream`` when given (without waiting for the device's current stream, as in Warp), else on the
    current stream of the GPU involved."""
    if stream is not None:
        from ..kernels.backends.cuda.stream import ScopedStream

        with ScopedStream(stream, sync_enter=False):
            copy(dest, src, dest_offset, src_offset, count)
        return
    if isinstance(dest, indexedarray) or isinstance(src, indexedarray):
        _copy_indexed(dest, src, dest_offset, src_offset, count)
        return
    dest, src = _range(dest, src, dest_offset, src_offset, count)
    if dest.size == 0:
        return
    if dest.device.is_cpu and src.device.is_cpu:
        if dest._np.dtype == src._np.dtype and dest._np.shape[dest.ndim:] == src._np.shape[src.ndim:]:
            to, frm = dest._np, src._np.reshape(dest._np.shape)
        else:  # different element types of one size: copy the bits, as on the GPU (and in Warp)
            to, frm = _element_bytes(dest), _element_bytes(src).reshape(dest.shape + (dest.itemsize,))
        if cpu_graph.active:
            _record_store(to, frm)
        else:
            to[...] = frm
    else:
        from ..kernels.backends.cuda import driver

        driver.copy(dest, src)
    dest._overwritten()
    from .tape import _record_copy

    _record_copy(dest, src)
