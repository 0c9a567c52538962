"""``@struct``: user-defined aggregate types, usable as kernel parameters and locals.

Example (a field's value in the class body is its default)::

    @sk.struct
    class Particles:
        x: sk.array(dtype=sk.vec3)
        mass: float = 1.0

    p = Particles()
    p.x = sk.zeros(10, dtype=sk.vec3)
    p.mass = 2.0
"""
from __future__ import annotations

import sys

import numpy as np

from . import types as T
from .decorators import _sanitize, stable_hash


class StructInfo:
    """Fields, C++ name and native layout of a struct type."""

    def __init__(self, cls, fields: dict):
        self.cls = cls
        self.fields = fields
        tag = stable_hash(cls.__module__, cls.__qualname__, [(n, T.type_name(t)) for n, t in fields.items()])[:8]
        self.cname = f"{_sanitize(cls.__name__)}_{tag}"
        off, self.offsets, self.align = 0, {}, 1
        for name, t in fields.items():
            a = T.alignof(t)
            self.align = max(self.align, a)
            off = (off + a - 1) // a * a
            self.offsets[name] = off
            off += T.sizeof(t)
        self.size = max(1, (off + self.align - 1) // self.align * self.align)

    def default(self, t):
        if T.is_scalar(t):
            return t._np.type(0)
        if T.is_value(t):
            return t()
        if T.is_struct(t):
            return t()
        return None  # arrays

    def pack(self, value) -> bytes:
        if not isinstance(value, self.cls):
            raise TypeError(f"expected a {self.cls.__name__} instance, got {type(value).__name__}")
        buf = bytearray(self.size)
        for name, t in self.fields.items():
            b = T.pack_value(t, getattr(value, name))
            o = self.offsets[name]
            buf[o:o + len(b)] = b
        return bytes(buf)

    def numpy_dtype(self) -> np.dtype:
        """The numpy structured dtype of this layout (array fields: their descriptor's bytes)."""
        formats = []
        for t in self.fields.values():
            if isinstance(t, T.ArrayType):
                formats.append(("u1", T.sizeof(t)))
            elif T.is_struct(t):
                formats.append(t._simkit_struct.numpy_dtype())
            elif T.is_value(t):
                formats.append((t._dtype._np, tuple(t._shape)))
            else:
                formats.append(t._np)
        return np.dtype({"names": list(self.fields), "formats": formats,
                         "offsets": [self.offsets[n] for n in self.fields], "itemsize": self.size})

    def unpack(self, record):
        """A struct instance from a numpy record of this layout (array fields, which hold device
        pointers, come back as None)."""
        out = self.cls()
        for name, t in self.fields.items():
            if isinstance(t, T.ArrayType):
                continue
            v = record[name]
            if T.is_struct(t):
                v = t._simkit_struct.unpack(v)
            elif T.is_value(t):
                v = t(*np.asarray(v).reshape(-1))
            object.__setattr__(out, name, v)
        return out

    def arrays(self, value):
        """Every array held by ``value`` (recursively), for contiguity and device checks."""
        for name, t in self.fields.items():
            v = getattr(value, name)
            if isinstance(t, T.ArrayType) and v is not None:
                yield name, v
            elif T.is_struct(t):
                for sub, a in t._simkit_struct.arrays(v):
                    yield f"{name}.{sub}", a


def _checked_field(cls, name: str, ft, value):
    """``value`` as struct field ``name`` of type ``ft``, or a TypeError naming the field."""
    if isinstance(ft, T.ArrayType):
        indexed = isinstance(ft, T.IndexedArrayType)
        ok = value is None or (getattr(value, "is_type", True) is False and value.dtype is ft.dtype
                               and value.ndim == ft.ndim and (indexed or not hasattr(value, "indices")))
        if not ok:
            got = T.type_name(getattr(value, "__simkit_type__", lambda: None)()) if hasattr(
                value, "__simkit_type__") else type(value).__name__
            raise TypeError(f"struct {cls.__name__}: field '{name}' expects {T.type_name(ft)} (or None), got {got}")
        return value
    if T.is_value(ft) and not isinstance(value, ft):
        if value is None:  # zero-initialized, as Warp
            return ft(*np.zeros(ft._length))
        if np.ndim(value) == 0 and ft._length > 1:  # (as Warp: vec3 fields take no single number)
            raise TypeError(f"struct {cls.__name__}: field '{name}' expects {T.type_name(ft)} but got a single value "
                            f"({value!r}); give all {ft._length} components")
        return ft(*np.asarray(value).reshape(-1))
    return value


def struct(cls):
    """Decorate an annotated class as a simkit struct."""
    for base in cls.__mro__[1:]:
        if getattr(base, "_simkit_struct", None) is not None:
            raise RuntimeError(f"struct {cls.__name__} derives from struct {base.__name__}: simkit structs must be "
                               f"defined as base classes (a field of the other struct's type composes them)")
    raw = dict(cls.__dict__.get("__annotations__", {}))
    mod = sys.modules.get(cls.__module__)
    scope = dict(vars(mod)) if mod is not None else {}
    fields = {}
    for name, ann in raw.items():
        if isinstance(ann, str):
            ann = eval(ann, scope)  # noqa: S307
        try:
            fields[name] = T.as_kernel_type(ann)
            if isinstance(fields[name], T.LocalArrayType):
                raise TypeError("a fixed-size array cannot be a struct field (it is made in kernels); "
                                "use an array field")
        except TypeError as e:
            raise TypeError(f"struct {cls.__name__}: field '{name}': {e}") from None
    info = StructInfo(cls, fields)
    cls._simkit_struct = info

    defaults = {n: cls.__dict__[n] for n in fields if n in cls.__dict__}  # `qp_index: int = -1`

    def __init__(self, **kwargs):
        for fname, ft in fields.items():
            value = info.default(ft)
            if fname in defaults:
                d = defaults[fname]
                value = ft._np.type(d) if T.is_scalar(ft) else _checked_field(cls, fname, ft, d)
            object.__setattr__(self, fname, value)
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __setattr__(self, name, value):
        if name not in fields:
            raise AttributeError(f"struct {cls.__name__} has no field '{name}' (fields: {', '.join(fields)})")
        object.__setattr__(self, name, _checked_field(cls, name, fields[name], value))

    def __repr__(self):
        return f"{cls.__name__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in fields) + ")"

    def numpy_dtype(_cls):
        """The numpy structured dtype of this struct's layout (the dtype of a struct array's ``numpy()``)."""
        return info.numpy_dtype()

    def numpy_value(self):
        """This instance as a numpy record of :meth:`numpy_dtype`."""
        return np.frombuffer(info.pack(self), dtype=info.numpy_dtype())[0]

    def to(self, device):
        """A copy of this instance whose array fields (in nested structs too) are on ``device`` (as Warp's
        ``Struct.to``); other fields are copied as they are."""
        out = cls()
        for fname in fields:
            v = getattr(self, fname)
            if v is not None and hasattr(v, "to") and (hasattr(v, "device") or hasattr(type(v), "_simkit_struct")):
                v = v.to(device)
            object.__setattr__(out, fname, v)
        return out

    cls.numpy_dtype = classmethod(numpy_dtype)
    cls.numpy_value = numpy_value
    cls.to = to
    cls.__init__ = __init__
    cls.__setattr__ = __setattr__
    cls.__repr__ = __repr__
    return cls
