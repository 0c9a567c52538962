"""Array types of thread-local memory: fixed-size arrays made in kernels and views of them
(kernels/fixed_arrays.py)."""
from __future__ import annotations

import builtins as _py

from . import types as _T
from .types import ArrayType


class LocalArrayType(ArrayType):
    """An array in the thread's own memory: a view of a fixed-size array made in the kernel (``a[0]`` of
    one, a slice of one, a @func parameter that receives one). The same C++ type as any array; writes to
    it are replayed in adjoint code, where it is rebuilt (kernels/fixed_arrays.py)."""

    __slots__ = ()

    def __repr__(self):
        return f"array(dtype={_T.type_name(self.dtype)}, ndim={self.ndim}, local)"


class FixedArrayType(LocalArrayType):
    """A fixed-size array made in a kernel or @func (``zeros(shape=(2, 3), dtype=float)``; Warp's
    ``fixedarray``): its elements live in the variable (native/fixed_array.h). Types are interned:
    one object per (dtype, shape)."""

    __slots__ = ("shape",)
    _interned: dict = {}

    def __new__(cls, dtype, shape):
        dtype, shape = _T.normalize_dtype(dtype), _py.tuple(_py.int(d) for d in shape)
        key = (id(dtype), shape)
        t = cls._interned.get(key)
        if t is None:
            t = cls._interned[key] = object.__new__(cls)
            ArrayType.__init__(t, dtype, len(shape))
            t.shape = shape
        return t

    def __init__(self, dtype, shape):
        pass  # (set up once, in __new__)

    def __eq__(self, other):
        return other is self

    def __hash__(self):
        return hash((FixedArrayType, id(self.dtype), self.shape))

    def __repr__(self):
        return f"fixedarray(dtype={_T.type_name(self.dtype)}, shape={self.shape})"

    @property
    def size(self) -> _py.int:
        n = 1
        for d in self.shape:
            n *= d
        return n


def local_array_type(dtype, ndim: int) -> LocalArrayType:
    """The (interned) type of an ``ndim``-dimensional view into thread-local memory."""
    key = (id(_T.normalize_dtype(dtype)), ndim)
    t = _LOCAL_TYPES.get(key)
    if t is None:
        t = _LOCAL_TYPES[key] = LocalArrayType(dtype, ndim)
    return t


_LOCAL_TYPES: dict = {}


def view_type(a: ArrayType, ndim: int) -> ArrayType:
    """The type of an ``ndim``-dimensional view of an array of type ``a`` (local when ``a`` is)."""
    if isinstance(a, LocalArrayType):
        return local_array_type(a.dtype, ndim)
    return ArrayType(a.dtype, ndim)
