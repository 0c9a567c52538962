"""``@struct``: user-defined aggregate types, usable as kernel parameters and locals.

Example::

    @sk.struct
    class Particles:
        x: sk.array(dtype=sk.vec3)
        mass: float

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
                formats.append(("u1", T.ARRAY_DESCRIPTOR_SIZE))
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


def struct(cls):
    """Decorate an annotated class as a simkit struct."""
    raw = dict(cls.__dict__.get("__annotations__", {}))
    mod = sys.modules.get(cls.__module__)
    scope = dict(vars(mod)) if mod is not None else {}
    fields = {}
    for name, ann in raw.items():
        if isinstance(ann, str):
            ann = eval(ann, scope)  # noqa: S307
        try:
            fields[name] = T.as_kernel_type(ann)
        except TypeError as e:
            raise TypeError(f"struct {cls.__name__}: field '{name}': {e}") from None
    info = StructInfo(cls, fields)
    cls._simkit_struct = info

    def __init__(self, **kwargs):
        for fname, ft in fields.items():
            object.__setattr__(self, fname, info.default(ft))
        for k, v in kwargs.items():
            setattr(self, k, v)

    def __setattr__(self, name, value):
        if name not in fields:
            raise AttributeError(f"struct {cls.__name__} has no field '{name}' (fields: {', '.join(fields)})")
        ft = fields[name]
        if T.is_value(ft) and not isinstance(value, ft):
            value = ft(*np.asarray(value).reshape(-1))
        object.__setattr__(self, name, value)

    def __repr__(self):
        return f"{cls.__name__}(" + ", ".join(f"{f}={getattr(self, f)!r}" for f in fields) + ")"

    def numpy_dtype(_cls):
        """The numpy structured dtype of this struct's layout (the dtype of a struct array's ``numpy()``)."""
        return info.numpy_dtype()

    def numpy_value(self):
        """This instance as a numpy record of :meth:`numpy_dtype`."""
        return np.frombuffer(info.pack(self), dtype=info.numpy_dtype())[0]

    cls.numpy_dtype = classmethod(numpy_dtype)
    cls.numpy_value = numpy_value
    cls.__init__ = __init__
    cls.__setattr__ = __setattr__
    cls.__repr__ = __repr__
    return cls
