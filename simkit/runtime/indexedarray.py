"""Indexed arrays (Warp's ``indexedarray``): an array seen through index arrays on some of its axes.

``a[idx]`` with an int32 array ``idx``, ``a[idx, :]`` or ``indexedarray(a, [idx, None])`` views the
elements ``a[idx[i], j]``: kernels that take ``sk.indexedarray(dtype=float, ndim=2)`` read, write and add
into ``a`` through it (gradients flow into ``a.grad``), without copying. In Python, ``numpy()`` gathers
the elements, ``fill_``/``zero_``/``assign`` write them and ``copy`` copies into or out of one::

    a = sk.array(np.arange(10.0), dtype=float)
    view = a[sk.array([1, 5, 8], dtype=sk.int32)]
    view.fill_(0.0)                       # a[1], a[5], a[8] are now 0
    sk.launch(scale, 3, inputs=[view])    # def scale(v: sk.indexedarray(dtype=float)): v[tid()] *= 2.0

A plain array may be passed for an indexed-array parameter (every axis as it is).
"""
from __future__ import annotations

import struct
import typing

import numpy as np

from ..kernels import types as T
from .array import array


class indexedarray:
    """``indexedarray(data, indices)``: ``indices`` has one entry per leading axis of ``data``, each an
    int32 array (the elements taken along that axis, in that order) or None (the whole axis).
    ``indexedarray(dtype=float, ndim=2)`` without data is the type of a kernel parameter."""

    def __init__(self, data: array | None = None, indices=None, dtype=typing.Any, ndim: int | None = None):
        if data is None:  # a type annotation
            self.dtype = T.Any if dtype is typing.Any else T.normalize_dtype(dtype)
            self.ndim, self.is_type, self.data, self.indices, self.shape = ndim or 1, True, None, None, None
            return
        if not isinstance(data, array) or data.is_type:
            raise TypeError(f"indexedarray: data must be a simkit array, got {type(data).__name__}")
        indices = list(indices) if indices is not None else []
        if len(indices) > data.ndim:
            raise ValueError(f"indexedarray: {len(indices)} index arrays for a {data.ndim}D array")
        if ndim is not None and ndim != data.ndim:
            raise ValueError(f"indexedarray: ndim={ndim} for a {data.ndim}D array")
        self.data, self.dtype, self.ndim, self.is_type = data, data.dtype, data.ndim, False
        self.indices = [_index_array(ix, data, d) for d, ix in enumerate(indices)]
        self.indices += [None] * (data.ndim - len(self.indices))
        self.shape = tuple(data.shape[d] if ix is None else ix.size for d, ix in enumerate(self.indices))

    def __simkit_type__(self):
        return T.IndexedArrayType(self.dtype, self.ndim)

    def __class_getitem__(cls, item):  # indexedarray[float], indexedarray[float, Literal[2]]
        dtype, ndim = T.subscript_args(item)
        return cls(dtype=dtype, ndim=ndim)

    @property
    def device(self):
        return self.data.device if self.data is not None else None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 0

    def __len__(self) -> int:
        return self.shape[0]

    is_contiguous = False

    @property
    def requires_grad(self) -> bool:
        return self.data.requires_grad

    @property
    def pinned(self) -> bool:
        return self.data.pinned

    @property
    def grad(self):
        """The gradient seen through the same indices (None without one)."""
        g = self.data.grad
        return None if g is None else indexedarray(g, self.indices)

    def _descriptor(self) -> bytes:
        ptrs = [ix.ptr if ix is not None else 0 for ix in self.indices] + [0] * (4 - self.ndim)
        return self.data._descriptor() + _TAIL.pack(*ptrs, *(list(self.shape) + [0] * (4 - self.ndim)))

    # ------------------------------------------------------------------ Python-side reads and writes

    def contiguous(self) -> array:
        """The elements, gathered into a new contiguous array on the same device."""
        from .array_create import empty
        from .indexed_copy import gather

        out = empty(self.shape, dtype=self.dtype, device=self.device)
        gather(out, self)
        return out

    def numpy(self) -> np.ndarray:
        return self.contiguous().numpy()

    def to(self, device) -> indexedarray:
        """The elements on ``device``, gathered into a new array there, as an indexed array without indices (as
        Warp's); itself when it is on ``device`` already."""
        from .device import get_device

        if get_device(device) == self.device:
            return self
        return indexedarray(self.contiguous().to(device))

    def list(self) -> list:
        return self.contiguous().list()

    def fill_(self, value):
        from .indexed_copy import fill

        fill(self, value)
        return self

    def zero_(self):
        return self.fill_(0)

    def assign(self, src):
        """Write the elements of ``src`` (an array, indexed array or numpy data of this shape)."""
        from .array_copy import copy

        if not isinstance(src, (array, indexedarray)):
            src = array(np.asarray(src), dtype=self.dtype, device=self.device)
        copy(self, src)
        return self

    def __repr__(self):
        if self.is_type:
            return f"indexedarray(dtype={T.type_name(self.dtype)}, ndim={self.ndim})"
        return f"indexedarray({self.numpy()!r}, dtype={T.type_name(self.dtype)})"


_TAIL = struct.Struct("<4Q4i")


def _index_array(ix, data: array, axis: int):
    if ix is None:
        return None
    if not isinstance(ix, array):
        ix = array(np.asarray(ix), dtype=T.int32, device=data.device)
    if ix.dtype is not T.int32 or ix.ndim != 1:
        raise TypeError(f"indexedarray: the indices of axis {axis} must be a 1D int32 array, got "
                        f"array(dtype={T.type_name(ix.dtype)}, ndim={ix.ndim})")
    if ix.device != data.device:
        raise ValueError(f"indexedarray: the indices of axis {axis} are on {ix.device.alias}, the data on "
                         f"{data.device.alias}")
    if not ix.is_contiguous:
        ix = ix.contiguous()
    if ix.device.is_cpu and ix.size:
        values = ix.numpy()
        bad = (values < 0) | (values >= data.shape[axis])
        if bad.any():
            raise IndexError(f"indexedarray: index {int(values[bad][0])} of axis {axis} is out of range for an "
                             f"axis of {data.shape[axis]} elements")
    return ix


def index_view(a: array, key) -> indexedarray | None:
    """``a[key]`` when ``key`` holds index arrays (``a[idx]``, ``a[idx, :]``, ``a[1:4, idx]``), else None."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(isinstance(k, array) for k in items):
        return None
    if len(items) > a.ndim:
        raise IndexError(f"too many indices for a {a.ndim}D array")
    if not all(isinstance(k, (array, slice)) for k in items):
        bad = next(k for k in items if not isinstance(k, (array, slice)))
        raise IndexError(f"index arrays combine only with slices in one subscript; got {bad!r}")
    if any(isinstance(k, slice) and k != slice(None) for k in items):  # the slices first, as a view
        a = a[tuple(slice(None) if isinstance(k, array) else k for k in items)]
    return indexedarray(a, [k if isinstance(k, array) else None for k in items])


class _FixedDimIndexed:
    """``indexedarray1d`` ... ``indexedarray4d``: ``indexedarray2d(dtype=float)`` in annotations, or
    ``indexedarray2d(data, indices)``."""

    def __init__(self, ndim: int):
        self.ndim = ndim
        self.__name__ = self.__qualname__ = f"indexedarray{ndim}d"

    def __call__(self, data=None, indices=None, dtype=typing.Any):
        return indexedarray(data, indices, dtype=dtype, ndim=self.ndim)

    def __getitem__(self, dtype):
        return indexedarray(dtype=dtype, ndim=self.ndim)


indexedarray1d, indexedarray2d, indexedarray3d, indexedarray4d = (_FixedDimIndexed(n) for n in range(1, 5))
