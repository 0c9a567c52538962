"""Python-side access to vector/matrix/quaternion/transform values: indexing, assignment, ``from_ptr``,
and what ``constant()`` takes.

Values are numpy arrays (types.py, ``value_base``); these rules add what a Warp user expects on top of
numpy's indexing::

    >>> import simkit as sk
    >>> m = sk.mat22(1.0, 2.0, 3.0, 4.0)
    >>> type(m[1]).__name__, float(m[1, 0])       # a row is a vector (a view of the matrix)
    ('vec2', 3.0)
    >>> v = sk.vec3ub(0, 0, 0); v[0] = -1; int(v[0])  # integers wrap, as a C cast does
    255

Keys that are neither an int nor a slice (nor numpy's tuple/array keys) raise ``KeyError``; a value that
is not a number (``v[0] = "1"``, or a vector where a component goes) raises ``TypeError``; a sequence of
the wrong length raises ``ValueError``.
"""
from __future__ import annotations

import ctypes
import numbers

import numpy as np


def _name(v) -> str:
    return type(v).__name__


def _key_atom_ok(k, in_tuple: bool) -> bool:
    if k is Ellipsis or isinstance(k, slice):
        return True
    if k is None:  # (numpy's newaxis: only inside a tuple key, as numpy's own functions index)
        return in_tuple
    if isinstance(k, (str, bytes)):
        return False
    if hasattr(k, "__index__") or isinstance(k, (list, np.ndarray)):  # ints; numpy's index arrays
        return True
    return False


def _expected(ndim: int) -> str:
    return "int or slice" if ndim <= 1 else "int or pair of ints"


def check_key(value, key) -> None:
    """Raise KeyError for a key that indexes no component of ``value``."""
    atoms = key if isinstance(key, tuple) else (key,)
    for k in atoms:
        if not _key_atom_ok(k, isinstance(key, tuple)):
            raise KeyError(f"Invalid key {key!r}, expected {_expected(value.ndim)} (indexing a {_name(value)})")
    n = sum(1 for k in atoms if k is not None and k is not Ellipsis)
    if n > value.ndim:
        if value.ndim == 2:
            raise KeyError(f"Invalid key, expected one or two indices, got {n} (indexing a {_name(value)})")
        raise KeyError(f"Invalid key {key!r}, expected {_expected(value.ndim)} (indexing a {_name(value)})")


_part_types: dict = {}  # (kind, shape, numpy dtype) -> the class of such a part (or np.ndarray)


def _part_type(kind: str, shape: tuple, dt: np.dtype):
    from . import types as T

    dtype = T._np_to_scalar.get(dt)
    if dtype is not None and len(shape) == 1 and shape[0] > 0:
        return T.vector(shape[0], dtype)
    if dtype is not None and len(shape) == 2 and kind == "matrix" and 0 not in shape:
        return T.matrix(shape, dtype)
    return np.ndarray


def _retype(value, out: np.ndarray):
    """A part of ``value`` as the value type of its shape: a matrix row or column, or a vector's slice,
    is a vector; a block of a matrix is a matrix; anything else a plain numpy array."""
    cls = type(value)
    if out.shape == cls._shape and out.dtype == value.dtype:
        return out
    key = (cls._kind, out.shape, out.dtype)
    part = _part_types.get(key)
    if part is None:
        part = _part_types[key] = _part_type(*key)
    return out.view(part)


def get_item(value, key):
    if type(key) is not int:
        check_key(value, key)
    out = np.ndarray.__getitem__(value, key)
    return _retype(value, out) if isinstance(out, np.ndarray) else out


def _is_number(x) -> bool:
    if isinstance(x, np.ndarray):
        return x.ndim == 0 and x.dtype.kind in "biuf"
    if isinstance(x, np.generic):
        return x.dtype.kind in "biuf"
    if isinstance(x, numbers.Number):
        return not isinstance(x, numbers.Complex) or isinstance(x, numbers.Real)
    return not isinstance(x, (str, bytes)) and np.ndim(x) == 0 and (hasattr(x, "__float__") or
                                                                      hasattr(x, "__index__"))


def cast(a, np_dt: np.dtype) -> np.ndarray:
    """``a`` as an array of ``np_dt``, integers out of range wrapping as in a C cast (``uint8(-1)`` = 255)."""
    try:
        return np.asarray(a, dtype=np_dt)
    except OverflowError:
        if np_dt.kind not in "iu":
            raise
        bits = 8 * np_dt.itemsize

        def wrap(x):
            x = int(x) % (1 << bits)
            return x - (1 << bits) if np_dt.kind == "i" and x >> (bits - 1) else x

        return np.vectorize(wrap, otypes=[np_dt])(np.asarray(a, dtype=object))


def _first_composite(seq):
    """The first item of ``seq`` that is itself a sequence (what a component cannot hold), or ``seq``."""
    try:
        return next(x for x in seq if np.ndim(x) > 0)
    except (TypeError, StopIteration):
        return seq


def _one_component(value, key) -> bool:
    if type(key) is int:
        return value.ndim == 1
    return type(key) is tuple and len(key) == value.ndim and all(type(k) is int for k in key)


def set_item(value, key, item) -> None:
    t = type(item)
    if (t is float or t is int or t is bool) and _one_component(value, key):  # the common case, fast
        try:
            np.ndarray.__setitem__(value, key, item)
            return
        except OverflowError:  # an int out of the type's range: wrapped below
            pass
    check_key(value, key)
    target = np.ndarray.__getitem__(value, key)
    scalar_name = value.dtype.name
    if not isinstance(target, np.ndarray) or target.ndim == 0:  # one component
        if not _is_number(item):
            raise TypeError(f"Expected to assign a `{scalar_name}` value but got `{type(item).__name__}` instead "
                            f"({_name(value)}[{key!r}] is one component)")
        np.ndarray.__setitem__(value, key, cast(item, value.dtype))
        return
    if _is_number(item):  # a number fills the part, as in numpy
        np.ndarray.__setitem__(value, key, cast(item, value.dtype))
        return
    try:
        arr = np.asarray(item)
    except ValueError:  # ragged: some item is a sequence of another length
        arr = np.asarray(item, dtype=object)
    if arr.dtype.kind not in "biuf" or arr.ndim > target.ndim:
        bad = _first_composite(item) if arr.ndim > target.ndim or arr.dtype == object else item
        raise TypeError(f"Expected to assign a slice from a sequence of `{scalar_name}` values but got "
                        f"`{type(bad).__name__}` instead ({_name(value)}[{key!r}] holds {target.size} components)")
    if arr.shape != target.shape:
        if arr.ndim == target.ndim or not _broadcasts(arr.shape, target.shape):
            raise ValueError(f"Can only assign sequence of same size: {_name(value)}[{key!r}] holds "
                             f"{target.size} components {tuple(target.shape)}, got {tuple(arr.shape)}")
    np.ndarray.__setitem__(value, key, cast(arr, value.dtype))


def _broadcasts(src: tuple, dst: tuple) -> bool:
    try:
        return np.broadcast_shapes(src, dst) == tuple(dst)
    except ValueError:
        return False


def from_ptr(cls, ptr):
    """A new value of type ``cls`` holding a copy of the native value at address ``ptr`` (an int)."""
    if cls._generic:
        raise TypeError(f"{cls.__name__}.from_ptr(): {cls.__name__} is a generic type; use a concrete one")
    if not ptr:
        raise RuntimeError(f"{cls.__name__}.from_ptr(): NULL pointer exception (the address is 0)")
    raw = ctypes.string_at(int(ptr), cls._length * cls._dtype._size)
    return np.frombuffer(raw, dtype=cls._dtype._np).reshape(cls._shape).copy().view(cls)


def check_constant(x):
    """``x`` if it can be a kernel constant (a number, a numpy scalar, a vector/matrix/quaternion/transform
    value or a struct instance); TypeError otherwise."""
    from . import types as T

    t = type(x)
    if isinstance(x, (bool, int, float)) or T.is_value(t) or T.is_struct(t):
        return x
    if isinstance(x, np.generic) and x.dtype in T._np_to_scalar:
        return x
    raise TypeError(f"constant(): a constant is a number, a simkit scalar, vector, matrix, quaternion or "
                    f"transform value, or a struct instance. Invalid constant type: {t}")


def component(i: int, letter: str) -> property:
    """The property ``v.x`` (``letter``) = ``v[i]``; an AttributeError on a value with fewer components."""

    def check(v):
        if i >= len(v):
            raise AttributeError(f"'{_name(v)}' object has no attribute '{letter}'")

    def get(v):
        check(v)
        return v[i]

    def set(v, item):  # noqa: A001
        check(v)
        v[i] = item

    return property(get, set, doc=f"Component {i} (``v[{i}]``).")


def transform_part(name: str, start: int, stop: int, make) -> property:
    """The property ``t.p`` (``name``, components ``start:stop``) of a transform, a copy of type ``make(dtype)``
    (Warp's ``transform.p`` / ``.q``); an AttributeError on values of other kinds."""

    def check(v):
        if v._kind != "transformation":
            raise AttributeError(f"'{_name(v)}' object has no attribute '{name}'")

    def get(v):
        check(v)
        return make(v._dtype)(v[start:stop])

    def set(v, item):  # noqa: A001
        check(v)
        v[start:stop] = make(v._dtype)(item)

    return property(get, set, doc=f"A transform's components {start}:{stop} (a copy; assigning sets them).")


def check_attribute(v, name: str) -> None:
    """Refuse to set a swizzle (``v.xy = ...``): a name of several component letters is no attribute."""
    if len(name) > 1 and not name.strip("xyzw"):
        raise AttributeError(f"'{_name(v)}' object has no attribute '{name}'")  # (no swizzles in Python)
