"""Per-segment sorts: ``segmented_sort_pairs`` (Warp's ``wp.utils.segmented_sort_pairs``).

One radix sort of all ``count`` pairs on a 64-bit key: the start of the element's segment (or, outside
every segment, its own index) above the 32 key bits. Segments are disjoint ranges, so sorting by start
keeps each group in its own range: segments come out sorted, other elements stay where they were.
"""
from __future__ import annotations

import operator

import numpy as np

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, copy, empty
from ._common import capturing, run, type_repr
from .sort import sort_bits

_INT32_MAX = (1 << 31) - 1


@kernel
def _seg_iota(groups: array(dtype=int)):
    i = sk.tid()
    groups[i] = i


@kernel
def _seg_groups(starts: array(dtype=int), ends: array(dtype=int), groups: array(dtype=int), count: int):
    # one thread per segment; an invalid range (possible only on a GPU, where it is not reported) is skipped
    s = sk.tid()
    a = starts[s]
    b = ends[s]
    if a >= 0 and a <= b and b <= count:
        for i in range(a, b):
            groups[i] = a


@kernel
def _seg_keys(keys: array(dtype=T.uint32), groups: array(dtype=int), composite: array(dtype=T.uint64),
              index: array(dtype=int), mode: int):
    # mode 1: int32 keys, 2: float32 keys (as their bits); mapped to unsigned order as in radix_sort_pairs
    i = sk.tid()
    u = keys[i]
    sign = T.uint32(0x80000000)
    if mode == 1:
        u = u ^ sign
    elif (u & sign) != T.uint32(0):
        u = ~u
    else:
        u = u ^ sign
    composite[i] = (T.uint64(groups[i]) << T.uint64(32)) | T.uint64(u)
    index[i] = i


@kernel
def _seg_gather(keys: array(dtype=T.uint32), values: array(dtype=T.uint32), index: array(dtype=int),
                count: int):
    # sorted pairs into the scratch halves: [count + j] = [index[j]]
    j = sk.tid()
    k = index[j]
    keys[count + j] = keys[k]
    values[count + j] = values[k]


def _check_count(count) -> int:
    if isinstance(count, bool):
        raise TypeError("count must be an integer")
    try:
        count = operator.index(count)
    except TypeError as e:
        raise TypeError("count must be an integer") from e
    if count < 0:
        raise ValueError(f"count must be non-negative, got {count}")
    if count > _INT32_MAX:
        raise ValueError(f"count must not exceed {_INT32_MAX}, got {count}")
    return count


def _check_index_array(a: array, name: str) -> None:
    if a.dtype != T.int32:
        raise RuntimeError(f"{name} array must be of type int32")
    if a.ndim != 1:
        raise RuntimeError(f"{name} must be one-dimensional")
    if not a.is_contiguous:
        raise RuntimeError(f"segmented_sort_pairs() requires a contiguous {name} array")


def segmented_sort_pairs(keys: array, values: array, count: int, segment_start_indices: array,
                         segment_end_indices: array | None = None) -> None:
    """Sort ``keys`` (``int32`` or ``float32``) with their ``int32`` ``values`` within each segment, in place
    and stably (Warp's ``wp.utils.segmented_sort_pairs``).

    Segment ``s`` is ``[segment_start_indices[s], segment_end_indices[s])``; without end indices, adjacent
    starts bound the segments (N starts: N - 1 segments). Ranges must satisfy ``0 <= start <= end <= count``
    and not overlap; elements outside every segment are left alone. ``keys`` and ``values`` hold
    ``2 * count`` elements (the second half is scratch). On the CPU an invalid range raises ``ValueError``
    before anything is written; on a GPU it is skipped.

    >>> import simkit as sk
    >>> keys = sk.array([3, 1, 4, 2, 0, 0, 0, 0], dtype=int)
    >>> values = sk.array([30, 10, 40, 20, 0, 0, 0, 0], dtype=int)
    >>> sk.utils.segmented_sort_pairs(keys, values, 4, sk.array([0, 2, 4], dtype=int))
    >>> keys.numpy()[:4].tolist()
    [1, 3, 2, 4]
    """
    count = _check_count(count)
    same = segment_start_indices.device == keys.device
    if segment_end_indices is not None:
        same = same and segment_end_indices.device == keys.device
    if keys.device != values.device or not same:
        raise RuntimeError("Keys, values, and segment index array storage devices must match")
    if count == 0:
        return
    if keys.size < 2 * count or values.size < 2 * count:
        raise RuntimeError("Array storage must be large enough to contain 2*count elements")
    if not keys.is_contiguous:
        raise RuntimeError("segmented_sort_pairs() requires a contiguous keys array")
    if not values.is_contiguous:
        raise RuntimeError("segmented_sort_pairs() requires a contiguous values array")
    _check_index_array(segment_start_indices, "segment_start_indices")
    if segment_end_indices is None:
        if segment_start_indices.size < 2:
            return
        starts, ends = segment_start_indices[:-1], segment_start_indices[1:]
    else:
        _check_index_array(segment_end_indices, "segment_end_indices")
        if segment_start_indices.size != segment_end_indices.size:
            raise RuntimeError("segment_start_indices and segment_end_indices must have the same size "
                               f"({segment_start_indices.size} vs {segment_end_indices.size})")
        starts, ends = segment_start_indices, segment_end_indices
    nseg = starts.size
    if nseg == 0:
        return
    if keys.dtype not in (T.int32, T.float32) or values.dtype != T.int32:
        raise RuntimeError(f"Unsupported data type: {type_repr(keys.dtype)}")
    dev = keys.device
    if dev.is_cpu and not capturing(dev):  # (while capturing, invalid ranges are skipped, as on a GPU)
        s, e = starts.numpy(), ends.numpy()
        bad = np.flatnonzero((s < 0) | (e < s) | (e > count))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"Invalid segment range at index {k}: [{s[k]}, {e[k]}) with count {count}")
    groups = empty(count, dtype=int, device=dev)
    run(_seg_iota, count, [groups], dev)
    run(_seg_groups, nseg, [starts, ends, groups, count], dev)
    composite = empty(2 * count, dtype=T.uint64, device=dev)
    index = empty(2 * count, dtype=int, device=dev)
    k32 = keys.flatten()[:2 * count].view(T.uint32)
    v32 = values.flatten()[:2 * count].view(T.uint32)
    run(_seg_keys, count, [k32, groups, composite, index, 1 if keys.dtype == T.int32 else 2], dev)
    sort_bits(composite[:count], index[:count], composite[count:], index[count:], count, 0,
              32 + max(1, (count - 1).bit_length()))
    run(_seg_gather, count, [k32, v32, index, count], dev)
    copy(k32, k32[count:], count=count)
    copy(v32, v32[count:], count=count)
