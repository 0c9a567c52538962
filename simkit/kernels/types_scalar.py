"""How the scalar type objects (``simkit.float32``, ...) meet numpy and ``isinstance``.

A scalar type names its numpy dtype, so numpy takes the simkit type wherever it takes a dtype::

    >>> import numpy as np, simkit as sk
    >>> np.zeros(3, dtype=sk.float16).dtype
    dtype('float16')
    >>> np.dtype([("x", sk.int32), ("flag", sk.bool)])
    dtype([('x', '<i4'), ('flag', '?')])

numpy >= 2.4 reads the class attribute ``__numpy_dtype__``; older numpy reads a ``dtype`` class
attribute instead, which the types then carry too.

A scalar constructor returns a numpy scalar (``sk.float32(1.5)`` is ``np.float32(1.5)``), and
``isinstance`` agrees with it: a numpy scalar is an instance of the simkit type of its dtype::

    >>> isinstance(sk.int16(3), sk.int16), isinstance(np.float64(1.0), sk.float32)
    (True, False)
"""
from __future__ import annotations

import threading

import numpy as np

# numpy 2.4 added the ``__numpy_dtype__`` protocol (and deprecates reading a ``dtype`` attribute)
NUMPY_DTYPE_PROTOCOL = np.lib.NumpyVersion(np.__version__) >= "2.4.0"


class ScalarMeta(type):
    """Metaclass of the scalar types. ``isinstance(x, T)`` is also True for a numpy scalar whose dtype is
    one ``T`` stands for: its own dtype for a concrete scalar type (not for a user's subclass of one),
    any simkit scalar dtype for the base class."""

    def __instancecheck__(cls, obj) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        if not isinstance(obj, np.generic):
            return False
        if obj.dtype.kind == "V":  # (a scalar of a dtype from outside numpy: bfloat16 may still be lazy)
            resolve_lazy()
        dtypes = cls.__dict__.get("_numpy_instances")
        if isinstance(dtypes, LazyDtypeAttr):  # (still lazy: only a scalar of an outside dtype could be one)
            return False
        return dtypes is not None and obj.dtype in dtypes


#: scalar types whose numpy dtype comes from another package, imported on first use (types_bf16.py):
#: functions that give each its dtype attributes
_lazy: list = []


class LazyDtypeAttr:
    """A class attribute of such a type (``_np``, ``__numpy_dtype__``, ...): reading it first gives the type
    its dtype attributes, which replace these."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, obj, cls):
        resolve_lazy()
        return getattr(cls, self.name)


def lazy_dtype(cls, resolve) -> None:
    """Make ``cls``'s dtype attributes lazy: ``resolve()`` sets them, when one is first read (or a numpy
    scalar of an outside dtype meets ``isinstance``, or a dtype lookup misses: types.py)."""
    for name in ("_np", "__numpy_dtype__", "_numpy_instances", "dtype"):
        if name in cls.__dict__ or name == "_np":
            setattr(cls, name, LazyDtypeAttr(name))
    _lazy.append(resolve)


_lazy_lock = threading.Lock()  # (a thread that meets a type being resolved waits for its attributes)


def resolve_lazy() -> None:
    with _lazy_lock:
        while _lazy:
            _lazy.pop()()


def numpy_attributes(dt: np.dtype) -> dict:
    """The class attributes that make numpy read a scalar type as ``dt``."""
    attrs = {"__numpy_dtype__": dt, "_numpy_instances": (dt,)}
    if not NUMPY_DTYPE_PROTOCOL:  # pragma: no cover - numpy < 2.4
        attrs["dtype"] = dt
    return attrs


def value_numpy_attributes(np_dt: np.dtype, shape: tuple) -> dict:
    """A vector/matrix type reads as numpy's subarray dtype of its components: ``np.dtype(vec3)`` is
    ``('<f4', (3,))``, ``np.dtype(mat22d)`` ``('<f8', (2, 2))`` (numpy >= 2.4; an ndarray subclass cannot
    carry the older ``dtype`` class attribute)."""
    return {"__numpy_dtype__": np.dtype((np_dt, shape))} if NUMPY_DTYPE_PROTOCOL else {}
