"""Kernel value types: scalars, vectors, matrices, quaternions, transforms.

Every type is a Python class. Scalar classes construct numpy scalars; vector
and matrix classes are small ``numpy.ndarray`` subclasses, so they work in
Python code as well as in kernels::

    >>> import simkit as sk
    >>> v = sk.vec3(1.0, 2.0, 3.0)
    >>> float(v.y)
    2.0
    >>> sk.vector(3, float) is sk.vec3
    True

Generic markers (``Any``, ``Scalar``, ``Float``, ``Int``) and generic
vector/matrix specs (``vector(length=Any, dtype=Float)``) describe builtin
overloads and generic ``@func`` arguments.
"""
from __future__ import annotations

import builtins as _py
import ctypes
from typing import Any as _PyAny

import typing

import numpy as np

from . import types_bf16 as _BF16
from . import types_scalar as _types_scalar
from . import types_value as _TV
from .types_scalar import ScalarMeta, numpy_attributes, value_numpy_attributes

# ---------------------------------------------------------------------------
# Generic markers


class _Generic:
    """A type pattern; never a concrete type."""

    _name = "generic"

    def __repr__(self) -> str:
        return self._name


class _AnyType(_Generic):
    _name = "Any"


class _ScalarMarker(_Generic):
    _name = "Scalar"


class _FloatMarker(_Generic):
    _name = "Float"


class _IntMarker(_Generic):
    _name = "Int"


Any = _AnyType()
Scalar = _ScalarMarker()
Float = _FloatMarker()
Int = _IntMarker()

# ---------------------------------------------------------------------------
# Scalars


class scalar_base(metaclass=ScalarMeta):
    """Base of the scalar type classes; ``float32(1.5)`` gives ``np.float32(1.5)``, an instance of
    ``float32`` as ``isinstance`` sees it; ``np.dtype(float32)`` is numpy's float32 (types_scalar.py)."""

    _type_name = ""
    _ctype = ""
    _np: np.dtype
    _ctypes_type = None
    _size = 0
    _kind = ""  # 'f', 'i', 'u', 'b'

    def __new__(cls, value=0):
        if cls._kind in ("i", "u") and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            bits = 8 * cls._np.itemsize  # integers wrap, as a C cast (and as in kernels and Warp): uint32(-1)
            value = int(value) & ((1 << bits) - 1)
            if cls._kind == "i" and value >> (bits - 1):
                value -= 1 << bits
        return cls._np.type(value)


def _scalar(name, np_dtype, ctypes_type, kind, cname=None):
    dt = np.dtype(np_dtype)
    cls = type(
        name,
        (scalar_base,),
        {
            "_type_name": name,
            "_ctype": "sk::" + (cname or name),
            "_np": dt,
            "_ctypes_type": ctypes_type,
            "_type_": ctypes_type,  # (Warp's name for it)
            "_size": dt.itemsize,
            "_kind": kind,
            "__doc__": f"{name} scalar type.",
            **numpy_attributes(dt),
        },
    )
    return cls


bool = _scalar("bool", np.bool_, ctypes.c_bool, "b", cname="bool_t")  # noqa: A001
int8 = _scalar("int8", np.int8, ctypes.c_int8, "i")
uint8 = _scalar("uint8", np.uint8, ctypes.c_uint8, "u")
int16 = _scalar("int16", np.int16, ctypes.c_int16, "i")
uint16 = _scalar("uint16", np.uint16, ctypes.c_uint16, "u")
int32 = _scalar("int32", np.int32, ctypes.c_int32, "i")
uint32 = _scalar("uint32", np.uint32, ctypes.c_uint32, "u")
int64 = _scalar("int64", np.int64, ctypes.c_int64, "i")
uint64 = _scalar("uint64", np.uint64, ctypes.c_uint64, "u")
float16 = _scalar("float16", np.float16, ctypes.c_uint16, "f")
float32 = _scalar("float32", np.float32, ctypes.c_float, "f")
float64 = _scalar("float64", np.float64, ctypes.c_double, "f")
# bfloat16: host dtype ml_dtypes.bfloat16, or raw uint16 bits without ml_dtypes (types_bf16.py). Made with
# uint16's attributes, replaced on first use (ml_dtypes is imported then: types_bf16.host)
bfloat16 = _scalar("bfloat16", np.uint16, ctypes.c_uint16, "f")
bfloat16.__new__ = staticmethod(lambda cls, value=0: _BF16.scalar(value))


class _NpScalars(dict):
    """numpy dtype -> scalar type; a miss first resolves the lazy dtypes (bfloat16's)."""

    def __missing__(self, key):
        if not _types_scalar._lazy:
            raise KeyError(key)
        _types_scalar.resolve_lazy()
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key) -> _py.bool:
        return self.get(key) is not None


def _resolve_bfloat16() -> None:
    has, dt = _BF16.host()
    bfloat16._np = dt
    if has:
        for name, value in numpy_attributes(dt).items():
            setattr(bfloat16, name, value)
        _np_to_scalar[dt] = bfloat16
        scalar_base._numpy_instances = tuple(_np_to_scalar)
    else:  # pragma: no cover - (np.dtype(sk.bfloat16) is then object, as in Warp)
        for name in ("__numpy_dtype__", "_numpy_instances", "dtype"):
            if name in bfloat16.__dict__:
                delattr(bfloat16, name)


float_types = (float16, bfloat16, float32, float64)
int_types = (int8, uint8, int16, uint16, int32, uint32, int64, uint64)
scalar_types = (bool,) + int_types + float_types
_np_to_scalar = _NpScalars({t._np: t for t in scalar_types if t is not bfloat16})
scalar_base._numpy_instances = tuple(_np_to_scalar)
_types_scalar.lazy_dtype(bfloat16, _resolve_bfloat16)
handle = uint64  # (Warp's name for the uint64 ids of meshes, BVHs and hash grids)


def is_scalar(t) -> _py.bool:
    return isinstance(t, type) and issubclass(t, scalar_base) and t is not scalar_base


def is_float(t) -> _py.bool:
    return t in float_types


def is_int(t) -> _py.bool:
    return t in int_types


def scalar_from_numpy(dtype) -> type:
    """The scalar type of a numpy dtype (``np.float32`` -> ``float32``)."""
    try:
        return _np_to_scalar[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"numpy dtype {np.dtype(dtype)} has no simkit scalar type") from None


def type_of_value(v):
    """The kernel type of a Python value: a vector/matrix/struct instance's class, bool, a numpy
    scalar's type, int32 for an int, float32 for a float; None for anything else."""
    t = _py.type(v)
    if is_value(t) or is_struct(t):
        return t
    if isinstance(v, (_py.bool, np.bool_)):
        return bool
    if isinstance(v, np.generic):
        return scalar_from_numpy(v.dtype)
    if isinstance(v, _py.int):
        return int32
    if isinstance(v, _py.float):
        return float32
    return None


# ---------------------------------------------------------------------------
# Vectors, matrices, quaternions, transforms


def normalize_dtype(dtype):
    """Map Python annotations to simkit types: float -> float32, int -> int32, bool -> bool."""
    if dtype is _py.float:
        return float32
    if dtype is _py.int:
        return int32
    if dtype is _py.bool:
        return bool
    if dtype is _PyAny:  # typing.Any
        return Any
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        return scalar_from_numpy(dtype)
    return dtype


def _transform_parts(args, kw) -> tuple:
    """A transform's constructor arguments as (p, q), Warp's forms: ``(p)``, ``(p, q)``, ``p=``, ``q=``
    (q defaults to the identity, p to zero), ``(scalar)`` (a fill) and ``(transform)`` (a copy)."""
    for k in kw:
        if k not in ("p", "q"):
            raise TypeError(f"got an unexpected keyword argument '{k}'")
    if len(args) == 1 and not kw and (np.ndim(args[0]) == 0 or np.size(args[0]) == 7):
        return args
    if len(args) > 2:
        raise TypeError(f"multiple values for argument '{next(iter(kw))}'")
    parts = dict(zip(("p", "q"), args))
    for k, v in kw.items():
        if k in parts:
            raise TypeError(f"multiple values for argument '{k}'")
        parts[k] = v
    for k, v in parts.items():
        if np.ndim(v) == 0:
            raise TypeError(f"Invalid argument '{k}' in transformation constructor: expected a sequence, "
                            f"got {type(v).__name__}")
    return parts.get("p", (0, 0, 0)), parts.get("q", (0, 0, 0, 1))


def _components(a, np_dt, scalar=None) -> np.ndarray:
    """``a`` as a flat array of ``np_dt``; an integer out of an integer type's range wraps, as a C cast (and Warp's
    ctypes) does: ``vec3ub(1, -2, 3)`` holds 254. bfloat16 components round through float32 (types_bf16.py)."""
    if scalar is bfloat16:
        return _BF16.host_data(a).reshape(-1)
    return _TV.cast(a, np_dt).reshape(-1)


class value_base(np.ndarray):
    """Base of vector/matrix/quaternion/transform classes (fixed-shape numpy arrays)."""

    _kind = ""  # 'vector', 'matrix', 'quaternion', 'transformation'
    _shape: tuple = ()
    _dtype = float32
    _length = 0
    _generic = False

    def __new__(cls, *args, **kw):
        if cls._generic:
            raise TypeError(f"cannot construct a value of generic type {cls.__name__}")
        n = cls._length
        np_dt = cls._dtype._np
        if cls._kind == "transformation" and (kw or 1 <= len(args) <= 2):
            args = _transform_parts(args, kw)
        elif kw:
            raise TypeError(f"got an unexpected keyword argument '{next(iter(kw))}'")
        if len(args) == 0:
            flat = np.zeros(n, dtype=np_dt)
            if cls._kind == "transformation":  # as in Warp: transform() is the identity
                flat[6] = 1
        elif len(args) == 1 and np.ndim(args[0]) == 0:
            if not isinstance(args[0], (_py.int, _py.float, np.generic)):
                raise TypeError(f"Invalid argument in {cls._kind} constructor: expected a scalar value, "
                                f"got {type(args[0]).__name__}")
            flat = np.full(n, _components(args[0], np_dt, cls._dtype)[0], dtype=np_dt)
        else:
            if cls._kind == "matrix" and len(args) == cls._shape[0] > 1 and _py.all(np.ndim(a) > 0 for a in args):
                for a in args:  # one argument per row
                    if np.size(a) != cls._shape[1]:
                        raise TypeError(f"{cls.__name__}: Invalid argument in matrix constructor, expected row of "
                                        f"length {cls._shape[1]}, got {a!r}")
            parts = [_components(a, np_dt, cls._dtype) for a in args]
            flat = np.concatenate(parts) if len(parts) > 1 else parts[0].copy()
            if flat.size != n:
                raise ValueError(f"{cls.__name__} needs {n} values, got {flat.size}")
        return flat.reshape(cls._shape).view(cls)

    def __array_finalize__(self, obj):
        pass

    # v[i], m[i, j], m[i] (a row: a vector view), slices; invalid keys and values raise as in Warp
    def __getitem__(self, key):
        return _TV.get_item(self, key)

    def __setitem__(self, key, value):
        _TV.set_item(self, key, value)

    from_ptr = classmethod(_TV.from_ptr)  # (a copy of the value at a native address)

    def __array_wrap__(self, out, context=None, return_scalar=False):
        # results of numpy ufuncs keep the class only when the shape still fits
        if out.shape == type(self)._shape:
            return out.view(type(self))
        return out.view(np.ndarray)

    def __reduce__(self):
        return (type(self), (np.asarray(self).reshape(-1).tolist(),))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(x) for x in np.asarray(self).reshape(-1).tolist())})"

    def __str__(self) -> str:  # as Warp prints values: [1.0, 2.0, 3.0]; a matrix one row per line
        if self._dtype is bfloat16:  # components print as their scalars do (ml_dtypes: 2, 3.14062)
            rows = [[str(x) for x in r] for r in np.atleast_2d(np.asarray(self))]
            rows = [("[" + ", ".join(r) + "]") for r in rows]
            return "[" + ",\n ".join(rows) + "]" if np.ndim(self) == 2 else rows[0]
        rows = np.asarray(self).tolist()
        if np.ndim(self) == 2:
            return "[" + ",\n ".join(str(r) for r in rows) + "]"
        return str(rows)

    # == compares whole values, as in Warp (``v == w`` is one bool; numpy's np.equal stays elementwise)
    def __eq__(self, other):
        try:
            o = np.asarray(other)
        except Exception:  # pragma: no cover - objects numpy cannot take
            return NotImplemented
        if o.dtype == object or o.size != self.size:
            return False
        return _py.bool(np.array_equal(np.asarray(self).reshape(-1), o.reshape(-1)))

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    # * and @ between two values (and / between them) mean what they mean in kernels, as in Warp: matrix
    # products, the Hamilton product of quaternions, composed transforms. With a scalar, or a plain
    # numpy array, they stay numpy's.
    def _scope(self, key, a, b, fallback):
        if isinstance(b if a is self else a, value_base):
            from .api import PYTHON_SCOPE

            if PYTHON_SCOPE is None:  # pragma: no cover - simkit.runtime is imported with simkit
                raise RuntimeError("products of values need simkit.runtime")
            return PYTHON_SCOPE(key, (a, b))
        return fallback(self, b if a is self else a)

    def __mul__(self, other):
        return self._scope("mul", self, other, np.ndarray.__mul__)

    def __rmul__(self, other):
        return self._scope("mul", other, self, np.ndarray.__rmul__)

    def __matmul__(self, other):
        return self._scope("mul", self, other, np.ndarray.__matmul__)

    def __rmatmul__(self, other):
        return self._scope("mul", other, self, np.ndarray.__rmatmul__)

    def __truediv__(self, other):
        return self._scope("div", self, other, np.ndarray.__truediv__)

    def __rtruediv__(self, other):
        return self._scope("div", other, self, np.ndarray.__rtruediv__)

    def __imul__(self, other):
        return self * other if isinstance(other, value_base) else np.ndarray.__imul__(self, other)

    def __itruediv__(self, other):
        return self / other if isinstance(other, value_base) else np.ndarray.__itruediv__(self, other)

    # rows and columns of a matrix (copies), as Warp's Python matrices give and take them
    def _matrix_axis(self, axis: int, index: int):
        if self._kind != "matrix":
            raise AttributeError(f"{type(self).__name__} is not a matrix: it has no rows or columns")
        rows, cols = self._shape
        if not -(rows, cols)[axis] <= index < (rows, cols)[axis]:
            raise IndexError(f"{('row', 'column')[axis]} {index} out of range for {type(self).__name__}")
        return vector((cols, rows)[axis], self._dtype)

    def get_row(self, r: int):
        return self._matrix_axis(0, r)(np.asarray(self)[r])

    def get_col(self, c: int):
        return self._matrix_axis(1, c)(np.asarray(self)[:, c])

    def set_row(self, r: int, value) -> None:
        self[r] = self._matrix_axis(0, r)(value)

    def set_col(self, c: int, value) -> None:
        self[:, c] = self._matrix_axis(1, c)(value)

    # component names (an AttributeError past the end: a vec2 has no .z), and no assigning swizzles (v.xy = ...)
    x, y, z, w = (_TV.component(i, c) for i, c in enumerate("xyzw"))
    # a transform's translation and rotation (copies), as Warp's t.p and t.q
    p = _TV.transform_part("p", 0, 3, lambda dt: vector(3, dt))
    q = _TV.transform_part("q", 3, 7, lambda dt: quaternion(dt))

    def __setattr__(self, name, value):
        _TV.check_attribute(self, name)
        super().__setattr__(name, value)


_value_cache: dict = {}


def _value_type(kind, shape, dtype, name=None):
    dtype = normalize_dtype(dtype)
    shape = tuple(Any if s is _PyAny else s for s in shape)  # (typing.Any, as Warp takes it)
    key = (kind, shape, dtype)
    cls = _value_cache.get(key)
    if cls is not None:
        return cls
    generic = isinstance(dtype, _Generic) or any(isinstance(s, _Generic) for s in shape)
    length = 1
    if not generic:
        for s in shape:
            length *= s
    if name is None:
        dn = dtype._type_name if not isinstance(dtype, _Generic) else repr(dtype)
        sn = "x".join(repr(s) if isinstance(s, _Generic) else str(s) for s in shape)
        name = f"{kind}_{sn}_{dn}"
    cls = type(
        name,
        (value_base,),
        {"_kind": kind, "_shape": shape, "_dtype": dtype, "_length": length, "_generic": generic,
         # Warp's names for the same facts, which code written for Warp reads
         "_shape_": shape, "_length_": length, "_wp_scalar_type_": dtype, "_type_": getattr(dtype, "_type_", None),
         **({} if generic else value_numpy_attributes(dtype._np, shape))},
    )
    _value_cache[key] = cls
    return cls


def vector(length=Any, dtype=Float):
    """The vector type of ``length`` components of ``dtype`` (cached: same args, same class)."""
    return _value_type("vector", (length,), dtype)


def matrix(shape=(Any, Any), dtype=Float):
    """The row-major matrix type of ``shape`` = (rows, cols)."""
    return _value_type("matrix", tuple(shape), dtype)


def quaternion(dtype=Float):
    """Quaternion type (x, y, z, w)."""
    return _value_type("quaternion", (4,), dtype)


def transformation(dtype=Float):
    """Rigid transform type: translation p (3) then rotation q (4)."""
    return _value_type("transformation", (7,), dtype)


def is_value(t) -> _py.bool:
    return isinstance(t, type) and issubclass(t, value_base) and t is not value_base


def is_vector(t) -> _py.bool:
    return is_value(t) and t._kind == "vector"


def is_matrix(t) -> _py.bool:
    return is_value(t) and t._kind == "matrix"


def is_quat(t) -> _py.bool:
    return is_value(t) and t._kind == "quaternion"


def is_transform(t) -> _py.bool:
    return is_value(t) and t._kind == "transformation"


_suffix = {"h": float16, "f": float32, "d": float64, "b": int8, "ub": uint8, "s": int16,
           "us": uint16, "i": int32, "ui": uint32, "l": int64, "ul": uint64}
_aliases: dict[str, type] = {}
for _n in (2, 3, 4):
    _aliases[f"vec{_n}"] = vector(_n, float32)
    for _s, _t in _suffix.items():
        _aliases[f"vec{_n}{_s}"] = vector(_n, _t)
    _aliases[f"mat{_n}{_n}"] = matrix((_n, _n), float32)
    for _s in ("h", "f", "d"):
        _aliases[f"mat{_n}{_n}{_s}"] = matrix((_n, _n), _suffix[_s])
for _s in ("h", "f", "d"):
    _aliases[f"quat{_s}"] = quaternion(_suffix[_s])
    _aliases[f"transform{_s}"] = transformation(_suffix[_s])
    _aliases[f"spatial_vector{_s}"] = vector(6, _suffix[_s])
    _aliases[f"spatial_matrix{_s}"] = matrix((6, 6), _suffix[_s])
_aliases["quat"] = quaternion(float32)
_aliases["transform"] = transformation(float32)
_aliases["spatial_vector"] = vector(6, float32)
_aliases["spatial_matrix"] = matrix((6, 6), float32)
for _n in (5, 6):
    _aliases[f"vec{_n}"] = vector(_n, float32)
_aliases["mat66"] = matrix((6, 6), float32)
globals().update(_aliases)
for _name, _cls in sorted(_aliases.items(), key=lambda kv: len(kv[0])):
    # the first alias registered for a class gives it its display name
    if _cls.__name__.startswith(("vector_", "matrix_", "quaternion_", "transformation_")):
        _cls.__name__ = _cls.__qualname__ = _name

vec2, vec3, vec4 = _aliases["vec2"], _aliases["vec3"], _aliases["vec4"]
mat22, mat33, mat44 = _aliases["mat22"], _aliases["mat33"], _aliases["mat44"]
quat, transform = _aliases["quat"], _aliases["transform"]
spatial_vector, spatial_matrix = _aliases["spatial_vector"], _aliases["spatial_matrix"]


# ---------------------------------------------------------------------------
# Arrays (as kernel parameter types) and structs live in their own modules;
# here only the protocol the compiler uses to recognise them.


class ArrayType:
    """The kernel-side type of an array parameter: element dtype and ndim."""

    __slots__ = ("dtype", "ndim")

    def __init__(self, dtype, ndim: int = 1):
        self.dtype = normalize_dtype(dtype)
        self.ndim = ndim

    def __eq__(self, other):
        return type(other) is type(self) and other.dtype is self.dtype and other.ndim == self.ndim

    def __hash__(self):
        return hash((type(self), id(self.dtype), self.ndim))

    def __repr__(self):
        return f"array(dtype={type_name(self.dtype)}, ndim={self.ndim})"

    @property
    def generic(self) -> _py.bool:
        return isinstance(self.dtype, _Generic) or is_generic(self.dtype)


class IndexedArrayType(ArrayType):
    """An indexed array (Warp's indexedarray): an array seen through an index array on some axes.
    Kernels index it with all its indices; the frontend maps them (frontend/builder.py)."""

    __slots__ = ()

    def __repr__(self):
        return f"indexedarray(dtype={type_name(self.dtype)}, ndim={self.ndim})"


from .types_local import FixedArrayType, LocalArrayType, local_array_type, view_type  # noqa: E402

class TupleType:
    """A tuple of values as a @func parameter: ``tuple[vec3, float]`` (fixed types), ``tuple[int, ...]``
    (any length, each value an int: ``repeat``), bare ``tuple`` (any values). A compile-time group: a
    func takes its values one by one (frontend/builder.py), so each tuple type specialises the func."""

    __slots__ = ("types", "repeat")

    def __init__(self, types=(), repeat=None):
        self.types = _py.tuple(types)
        self.repeat = repeat

    def __eq__(self, other):
        return type(other) is TupleType and other.types == self.types and other.repeat == self.repeat

    def __hash__(self):
        return hash((TupleType, self.types, self.repeat))

    def __repr__(self):
        if self.repeat is not None:
            return f"tuple[{type_name(self.repeat)}, ...]"
        return "tuple[" + ", ".join(type_name(t) for t in self.types) + "]"

    @property
    def generic(self) -> _py.bool:
        return self.repeat is not None or _py.any(is_generic(t) for t in self.types)


def tuple_type(annotation) -> TupleType:
    """The TupleType of a ``tuple[...]`` / ``typing.Tuple[...]`` annotation (bare ``tuple``: any values)."""
    if annotation is _py.tuple or annotation is typing.Tuple:
        return TupleType(repeat=Any)
    args = typing.get_args(annotation)
    if args == ((),):  # tuple[()]: the empty tuple
        return TupleType(())
    if len(args) == 2 and args[1] is Ellipsis:
        return TupleType(repeat=as_kernel_type(args[0]))
    if Ellipsis in args:
        raise TypeError(f"{annotation!r}: '...' may only follow the one element type (tuple[int, ...])")
    return TupleType(as_kernel_type(a) for a in args)


def as_kernel_type(annotation):
    """Normalise a Python annotation to a compiler type (or raise TypeError)."""
    t = getattr(annotation, "__simkit_type__", None)
    if t is not None:
        return t() if callable(t) else t
    if annotation is _py.tuple or annotation is typing.Tuple or typing.get_origin(annotation) is _py.tuple:
        return tuple_type(annotation)
    t = normalize_dtype(annotation)
    if is_scalar(t) or is_value(t) or isinstance(t, (ArrayType, _Generic)) or is_struct(t) or is_opaque(t):
        return t
    raise TypeError(f"{annotation!r} is not a simkit type")


def is_struct(t) -> _py.bool:
    return getattr(t, "_simkit_struct", None) is not None


def is_opaque(t) -> _py.bool:
    """A native value type known to the compiler only by its C++ name (class attribute ``_simkit_opaque``),
    e.g. a geometry query state declared in a collision header; a plain aggregate with a default constructor."""
    return isinstance(t, type) and getattr(t, "_simkit_opaque", None) is not None


def is_generic(t) -> _py.bool:
    if isinstance(t, _Generic):
        return True
    if is_value(t):
        return t._generic
    if isinstance(t, (ArrayType, TupleType)):
        return t.generic
    return False


def type_name(t) -> str:
    """A readable name for error messages: 'float32', 'vec3', 'array(dtype=float32, ndim=1)'."""
    if t is None:
        return "None"
    if isinstance(t, (_Generic, ArrayType, TupleType)):
        return repr(t)
    if is_scalar(t):
        return t._type_name
    if isinstance(t, type):
        return t.__name__
    if isinstance(t, tuple):
        return "tuple(" + ", ".join(type_name(x) for x in t) + ")"
    return repr(t)


def scalar_of(t):
    """The scalar type of a scalar, vector, matrix, quaternion or transform type."""
    if is_scalar(t):
        return t
    if is_value(t):
        return t._dtype
    raise TypeError(f"{type_name(t)} has no scalar type")


def types_match(spec, t) -> _py.bool:
    """Does concrete type ``t`` match the (possibly generic) type spec?"""
    if spec is t or spec is Any:
        return True
    if spec is Scalar:
        return is_scalar(t) and t is not bool
    if spec is Float:
        return t in float_types
    if spec is Int:
        return t in int_types
    if is_value(spec) and spec._generic:
        if not is_value(t) or t._kind != spec._kind or len(t._shape) != len(spec._shape):
            return False
        for a, b in zip(spec._shape, t._shape):
            if not (a is Any or a == b):
                return False
        return types_match(spec._dtype, t._dtype)
    if isinstance(spec, ArrayType) and isinstance(t, ArrayType):
        return spec.ndim == t.ndim and types_match(spec.dtype, t.dtype)
    if isinstance(spec, TupleType) and isinstance(t, TupleType) and t.repeat is None:
        if spec.repeat is not None:
            return _py.all(types_match(spec.repeat, x) for x in t.types)
        return len(spec.types) == len(t.types) and _py.all(types_match(a, b) for a, b in zip(spec.types, t.types))
    return False


def sizeof(t) -> int:
    """Size in bytes of a value of type ``t`` in native code."""
    if is_scalar(t):
        return t._size
    if is_value(t):
        return t._length * t._dtype._size
    if isinstance(t, IndexedArrayType):
        return INDEXED_DESCRIPTOR_SIZE
    if isinstance(t, ArrayType):
        return ARRAY_DESCRIPTOR_SIZE
    if is_struct(t):
        return t._simkit_struct.size
    raise TypeError(f"{type_name(t)} has no size")


def alignof(t) -> int:
    if is_scalar(t):
        return t._size
    if is_value(t):
        return t._dtype._size
    if isinstance(t, ArrayType):
        return 8
    if is_struct(t):
        return t._simkit_struct.align
    raise TypeError(f"{type_name(t)} has no alignment")


# array_t<T>: data, grad (pointers), shape[4] int32, strides[4] int64 (bytes), ndim int32, pad
ARRAY_DESCRIPTOR_SIZE = 8 + 8 + 16 + 32 + 8
INDEXED_DESCRIPTOR_SIZE = ARRAY_DESCRIPTOR_SIZE + 4 * 8 + 4 * 4  # (native/array.h, indexedarray_t)


def pack_value(t, value) -> bytes:
    """Bytes of ``value`` laid out as native type ``t`` (kernel arguments, struct fields)."""
    if is_scalar(t):
        if t is float16:
            return np.float16(value).tobytes()
        if t is bfloat16:
            return _BF16.to_bytes(value)
        return t._np.type(value).tobytes()
    if is_value(t):
        arr = _components(value, t._dtype._np, t._dtype) if t._dtype is bfloat16 else np.asarray(value, t._dtype._np)
        if arr.size != t._length:
            raise TypeError(f"expected {type_name(t)} ({t._length} values), got {arr.size} values")
        return arr.tobytes()
    if isinstance(t, ArrayType):
        if value is None:
            return bytes(sizeof(t))
        d = value._descriptor()
        if isinstance(t, IndexedArrayType) and len(d) == ARRAY_DESCRIPTOR_SIZE:  # a plain array: no indices
            d += bytes(32) + np.array(list(value.shape) + [0] * (4 - len(value.shape)), dtype=np.int32).tobytes()
        return d
    if is_struct(t):
        return t._simkit_struct.pack(value)
    raise TypeError(f"cannot pack {type_name(t)}")


check_constant = _TV.check_constant  # (what ``constant(x)`` accepts)


def subscript_args(item) -> tuple:
    """(dtype, ndim) of ``array[float]`` or ``array[float, Literal[2]]`` (Warp's annotation style)."""
    if not isinstance(item, tuple):
        return item, None
    if len(item) != 2:
        raise TypeError(f"expected [dtype] or [dtype, Literal[ndim]], got {len(item)} arguments")
    ndim = typing.get_args(item[1])
    if len(ndim) != 1 or not isinstance(ndim[0], _py.int):
        raise TypeError(f"the number of dimensions is written Literal[n], got {item[1]!r}")
    return item[0], ndim[0]


__all__ = [
    "Any", "Scalar", "Float", "Int", "bool", "handle", "int8", "uint8", "int16", "uint16", "int32",
    "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64", "vector", "matrix",
    "quaternion", "transformation", "ArrayType", "LocalArrayType", "FixedArrayType", *sorted(_aliases),
]
_ = _PyAny
