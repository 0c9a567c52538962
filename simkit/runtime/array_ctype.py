"""``array_t``: the array descriptor simkit kernels receive, as a ctypes structure (Warp's ``array_t``).

``from_torch(t, return_ctype=True)`` returns one instead of a :class:`simkit.array`: its ``data`` and
``grad`` (addresses, 0 for none), ``shape``, ``strides`` (bytes) and ``ndim`` describe the tensor's memory
exactly as a kernel sees it (``native/array.h``), for native code that takes an ``array_t`` by value.
A launch also takes it for an array parameter of the element type it was made for: it then
stands for an array over that memory (and gradient). The descriptor keeps its tensor (and gradient)
alive while it exists.
"""
from __future__ import annotations

import ctypes

from ..kernels import types as T


class array_t(ctypes.Structure):
    """``array_t(data, grad, ndim, shape, strides)``: the kernel-side descriptor of an array (up to 4 dims).

    Layout (``native/array.h``): data, grad (uint64 addresses), shape (4 int32), strides (4 int64, bytes),
    ndim (int32), flags (int32: 1 keeps the gradient through a backward pass, as ``retain_grad``).
    """

    _fields_ = [("data", ctypes.c_uint64), ("grad", ctypes.c_uint64), ("shape", ctypes.c_int32 * 4),
                ("strides", ctypes.c_int64 * 4), ("ndim", ctypes.c_int32), ("flags", ctypes.c_int32)]

    def __init__(self, data=0, grad=0, ndim=0, shape=(), strides=(), flags=0):
        shape, strides = tuple(int(s) for s in shape), tuple(int(s) for s in strides)
        if not 0 <= int(ndim) <= 4 or len(shape) != int(ndim) or len(strides) != int(ndim):
            raise ValueError(f"array_t: ndim {ndim} needs that many (at most 4) sizes and strides, got shape "
                             f"{shape} and strides {strides}")
        super().__init__(int(data or 0), int(grad or 0), (ctypes.c_int32 * 4)(*shape),
                         (ctypes.c_int64 * 4)(*strides), int(ndim), int(flags))
        self.dtype = None  # the element type it was made for (None: unknown; a launch then refuses it)
        self.device = None
        self._ref = self._gradref = None  # the owners of the memory it describes

    @classmethod
    def of(cls, a, keep=None, keep_grad=None) -> "array_t":
        """The descriptor of simkit array ``a`` (its gradient's address where it requires grad). ``keep`` and
        ``keep_grad``: what to keep alive (default ``a`` and its gradient)."""
        g = a.grad if a.requires_grad and a.grad is not None else None
        d = cls(a.ptr, g.ptr if g is not None else 0, a.ndim, a.shape, a.strides, 1 if a.retain_grad else 0)
        d.dtype, d.device = a.dtype, a.device
        d._ref = a if keep is None else keep
        d._gradref = g if keep_grad is None else keep_grad
        return d

    def __repr__(self):
        n = self.ndim
        return (f"array_t(data=0x{self.data:x}, grad=0x{self.grad:x}, shape={tuple(self.shape[:n])}, "
                f"strides={tuple(self.strides[:n])}, dtype={T.type_name(self.dtype) if self.dtype else None})")


def to_array(d: array_t, t, device):
    """The simkit array (sharing memory, gradient included) that descriptor ``d`` stands for, as an argument of
    array type ``t`` on ``device``."""
    from .array import array

    if d.dtype is None or d.device is None:
        raise TypeError("this array_t does not say its element type and device (only descriptors made by "
                        "from_torch(..., return_ctype=True) or array_t.of() can be launch arguments)")
    if d.dtype is not t.dtype or d.ndim != t.ndim:
        raise TypeError(f"expected {T.type_name(t)}, got an array_t of {d.ndim}D {T.type_name(d.dtype)}")
    if d.device != device:
        raise ValueError(f"the array_t describes memory on {d.device.alias}, the launch is on {device.alias}")
    n = d.ndim
    shape, strides = tuple(d.shape[:n]), tuple(d.strides[:n])
    a = array(ptr=d.data, dtype=d.dtype, shape=shape, strides=strides, device=d.device, _owner=d)
    if d.grad:
        a.grad = array(ptr=d.grad, dtype=d.dtype, shape=shape, strides=strides, device=d.device, _owner=d)
        a.retain_grad = bool(d.flags & 1)
    return a
