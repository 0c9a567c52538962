"""``simkit.array``: typed n-D arrays (1-4 dims) on a device, with optional gradients.

CPU arrays are numpy views (``.numpy()`` shares memory, zero copy); CUDA arrays
hold device memory. ``array(dtype=float)`` without data is a kernel parameter
annotation. Basic indexing follows numpy on every device: slices and partial
integer indices give views (``a[2:8:2]``, ``m[:, 1]``; their gradients are views
too), a full integer index gives the element (copied back from a GPU), and
``a[key] = value`` writes through the view. Example::

    >>> import numpy as np, simkit as sk
    >>> a = sk.array(np.arange(6, dtype=np.float32).reshape(2, 3), dtype=sk.vec3, device="cpu")
    >>> a.shape, a.dtype is sk.vec3
    ((2,), True)
    >>> a.numpy()[1].tolist()
    [3.0, 4.0, 5.0]
"""
from __future__ import annotations

import math
import struct as _struct
import typing

import numpy as np

from ..kernels import types as T
from ..kernels import types_bf16 as _BF16
from ..kernels.backends import cpu_graph
from . import memory_tracker as _mt
from .device import Device, get_device

_DESC = _struct.Struct("<QQ4i4qii")


from .array_host import (CPU_ALIGN, INT32_MAX, _aligned, _aligned_at, _host_buffer, _host_data,  # noqa: F401
                         _infer_dtype, _is_bf16, _pinned_buffer, check_shape, host_buffer_at, np_dtype_of)


class array:
    """A typed array. See the module docstring."""

    pinned = False  # page-locked host memory (``pinned=True`` on a CPU array, where a GPU is present)

    def __init__(self, data=None, dtype=T.Any, shape=None, strides=None, ptr=None, device=None,
                 requires_grad: bool = False, copy: bool = True, ndim: int | None = None, pinned: bool = False,
                 retain_grad: bool = False, *, _np_view=None, _owner=None, _grad=None, _zero: bool = True):
        dtype = T.Any if dtype is typing.Any else T.normalize_dtype(dtype)  # array(dtype=typing.Any): generic
        self._desc = None
        # [all modifications, overwrites, read by a recorded launch]: shared by views of the same memory
        # (see runtime/tape.py and runtime/access_check.py)
        self._ver = _owner._ver if isinstance(_owner, array) else [0, 0, False]
        self._grad = None
        self._requires_grad = False
        if isinstance(_owner, array) and _owner._retain:  # a view of an array that keeps its gradient keeps it
            self._retain = True
        if data is None and shape is None and ptr is None and _np_view is None:
            # a type annotation: array(dtype=float, ndim=2)
            self.dtype = dtype
            self.ndim = ndim or 1
            self.shape = None
            self.device = None
            self.is_type = True
            return
        self.is_type = False
        self.device = get_device(device) if device is not None else None
        if _np_view is not None:  # internal: a view of existing CPU memory
            self.dtype = dtype
            self.device = self.device or get_device("cpu")
            self._set_cpu(_np_view)
            self._owner = _owner
            if getattr(_owner, "pinned", False):  # a view of pinned memory is pinned memory
                self.pinned = True
            if _grad is not None:
                self._grad = _grad
                self._requires_grad = True
            return
        if isinstance(data, array):
            data = data.numpy()
        if ptr is not None:
            self._init_from_ptr(ptr, dtype, shape, strides, _owner)
        elif data is not None:
            if dtype is T.Any:
                dtype = _infer_dtype(data)
            self.dtype = dtype
            self._init_from_data(data, copy, pinned, shape)
        else:
            if dtype is T.Any:
                dtype = T.float32
            self.dtype = dtype
            shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
            check_shape(shape)
            nd, esh = np_dtype_of(dtype)
            self._alloc(shape, nd, esh, zero=_zero, pinned=pinned)  # (_zero=False: every element is written next)
        if ndim is not None and ndim != self.ndim:
            raise ValueError(f"array has {self.ndim} dims, expected ndim={ndim}")
        if requires_grad:
            self.requires_grad = True
        if retain_grad:
            self.retain_grad = True

    # ------------------------------------------------------------------ construction helpers

    def _target_device(self) -> Device:
        if self.device is None:
            self.device = get_device(None)
        return self.device

    def _init_from_data(self, data, copy, pinned: bool, shape=None):
        nd, esh = np_dtype_of(self.dtype)
        if T.is_struct(self.dtype) and not isinstance(data, np.ndarray):
            data = _struct_records(self.dtype, data)
        src = data if isinstance(data, np.ndarray) and data.dtype == nd else _host_data(self.dtype, data, nd)
        if esh:
            k = len(esh)
            while src.ndim > 1 and src.shape[-1] == 1 and src.shape[-k:] != esh:  # (n, 3, 1) of vec3, as Warp
                src = src.reshape(src.shape[:-1])
            if src.shape[-k:] != esh:
                if src.ndim == 1 and src.size % int(np.prod(esh)) == 0:  # flat data, as Warp takes it
                    src = src.reshape(-1, *esh)
                elif src.ndim > 1 and src.shape[-1] % int(np.prod(esh)) == 0:  # (4, 6) of vec3: (4, 2);
                    n = src.shape[-1] // int(np.prod(esh))                       # (3, 4) of mat22: (3,)
                    src = src.reshape(*src.shape[:-1], *((n,) if n > 1 else ()), *esh)
                else:
                    raise ValueError(f"data of shape {src.shape} cannot hold {T.type_name(self.dtype)} elements "
                                     f"(trailing shape must be {esh})")
        if shape is not None:       # array(data, shape=...): the data laid out in that shape
            want = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(x) for x in shape)
            if int(np.prod(want)) * int(np.prod(esh)) != src.size:
                raise ValueError(f"data of {src.size // max(1, int(np.prod(esh)))} elements cannot take shape {want}")
            src = src.reshape(want + esh)
        shape = src.shape[: src.ndim - len(esh)] if esh else src.shape
        if len(shape) == 0:
            shape = (1,)
            src = src.reshape((1,) + esh)
        if len(shape) > 4:
            raise ValueError(f"arrays have at most 4 dimensions, got shape {shape}")
        check_shape(shape)
        dev = self._target_device()
        if dev.is_cpu:
            if not copy:
                if not (src is data or (isinstance(data, np.ndarray) and np.shares_memory(src, data))):
                    raise ValueError("copy=False needs a numpy array of exactly the element dtype "
                                     f"({np.dtype(nd)}); got {getattr(data, 'dtype', type(data).__name__)}")
                self._set_cpu(src)
                self._owner = data
            else:
                buf, ptr = self._cpu_buffer(src.shape, src.dtype, False, pinned)
                np.copyto(buf, src)
                self._set_cpu(buf, None, ptr)
                self._owner = None
                _mt.allocated(self, buf.nbytes, buf)
                if cpu_graph.active:   # (made during a graph capture: every replay makes it again)
                    _record_store(buf, src.copy())
        else:
            self._alloc(shape, nd, esh, zero=False)
            from ..kernels.backends.cuda import driver

            # (made during a CUDA graph capture: every replay makes it again, from this data)
            driver.copy_htod(self, np.ascontiguousarray(src), driver.SNAPSHOT)

    def _alloc(self, shape, nd, esh, zero: bool, pinned: bool = False):
        if len(shape) > 4 or len(shape) == 0:
            raise ValueError(f"arrays have 1 to 4 dimensions, got shape {shape}")
        dev = self._target_device()
        if dev.is_cpu:
            buf, ptr = self._cpu_buffer(tuple(shape) + esh, nd, zero, pinned)
            self._set_cpu(buf, esh, ptr)
            self._owner = None
            _mt.allocated(self, buf.nbytes, buf)
            if zero and cpu_graph.active:   # (as a CUDA graph does, every replay zeroes it again)
                _record_store(self._np, 0)
        else:
            from ..kernels.backends.cuda import driver

            itemsize = np.dtype(nd).itemsize * math.prod(esh)
            self.shape = tuple(int(s) for s in shape)
            self.ndim = len(self.shape)
            self.size = math.prod(self.shape)
            self.strides = _contiguous_strides(self.shape, itemsize)
            self.itemsize = itemsize
            self.ptr, self._owner = driver.alloc(dev, self.size * itemsize)
            self._np = None
            if self._owner is not None:
                _mt.allocated(self, self.size * itemsize, self._owner)
            if zero:
                driver.memset(self, 0)

    def _cpu_buffer(self, shape, nd, zero: bool, pinned: bool) -> tuple:
        """Host memory for a new CPU array: page-locked if ``pinned`` and a GPU is present (copies to and
        from it are then asynchronous), else ordinary aligned memory. (buffer, its address or None)."""
        buf = _pinned_buffer(shape, nd, zero) if pinned else None
        if buf is None:
            return host_buffer_at(shape, nd, zero)
        self.pinned = True
        return buf, None

    def _init_from_ptr(self, ptr, dtype, shape, strides, owner):
        self.dtype = dtype
        nd, esh = np_dtype_of(dtype)
        itemsize = np.dtype(nd).itemsize * math.prod(esh)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.shape = shape
        self.ndim = len(shape)
        self.size = math.prod(shape)
        self.itemsize = itemsize
        self.strides = tuple(strides) if strides is not None else _contiguous_strides(shape, itemsize)
        self.ptr = int(ptr)
        self._owner = owner
        dev = self._target_device()
        self._np = None
        if dev.is_cpu:
            buf = (np.ctypeslib.as_array((np.ctypeslib.ctypes.c_char * max(1, _extent(shape, self.strides, itemsize)))
                                         .from_address(self.ptr)))
            base = np.frombuffer(buf, dtype=nd)
            esh_strides = _contiguous_strides(esh, np.dtype(nd).itemsize)
            view = np.lib.stride_tricks.as_strided(base, shape=tuple(shape) + esh, strides=self.strides + esh_strides)
            self._set_cpu(view)
            self._owner = (owner, buf)

    def _set_cpu(self, view: np.ndarray, esh: tuple | None = None, ptr: int | None = None):
        """Describe the numpy ``view`` holding this array's elements (``esh``: each element's trailing shape,
        ``ptr``: its data's address, if the caller knows them). Array creation's hot path: Python ints
        throughout (np.prod costs ~4 us a call)."""
        if esh is None:
            esh = np_dtype_of(self.dtype)[1]
        self._np = view
        if esh:
            k = len(esh)
            self.shape = view.shape[:-k]
            self.strides = view.strides[:-k]
            self.itemsize = view.itemsize * math.prod(esh)
        else:
            self.shape = view.shape
            self.strides = view.strides
            self.itemsize = view.itemsize
        self.ndim = len(self.shape)
        self.size = math.prod(self.shape)
        if not view.size:
            self.ptr = 0
        else:
            self.ptr = view.__array_interface__["data"][0] if ptr is None else ptr

    # ------------------------------------------------------------------ versions

    @property
    def _version(self) -> int:
        """Bumped by every write through simkit (launches, copies, fill_, assign)."""
        return self._ver[0]

    @_version.setter
    def _version(self, v: int):
        self._ver[0] = v

    @property
    def _wversion(self) -> int:
        """Bumped by overwriting writes only (stores, fill_, assign, copy), not by atomic accumulation."""
        return self._ver[1]

    def _overwritten(self):
        self._ver[0] += 1
        self._ver[1] += 1

    @property
    def _is_read(self) -> bool:
        """Read by a launch recorded on a Tape whose ``backward()`` has not yet run (tracked with
        ``config.verify_autograd_array_access``; shared by views of the same memory)."""
        return bool(self._ver[2])

    def mark_read(self):
        """Flag this array (and its views) as read by a recorded launch (runtime/access_check.py)."""
        self._ver[2] = True

    def mark_write(self, arg_name: str | None = None, kernel_name: str | None = None, filename: str | None = None,
                   lineno: int | None = None):
        """This array is about to be written by a recorded operation: warns (``ArrayAccessWarning``) when
        a recorded launch read it before (runtime/access_check.py)."""
        from .access_check import mark_write

        where = f" ({filename}:{lineno})" if filename else ""
        subject = f"array '{arg_name}' of kernel '{kernel_name}'{where}" if arg_name else "array"
        mark_write(self, subject)

    # ------------------------------------------------------------------ properties

    def __simkit_type__(self):
        return T.ArrayType(self.dtype, self.ndim)

    def __class_getitem__(cls, item):  # array[float], array[float, Literal[2]]
        dtype, ndim = T.subscript_args(item)
        return cls(dtype=dtype, ndim=ndim)

    @property
    def capacity(self) -> int:  # Warp's: bytes addressable from ptr (what it spans; from_torch: to storage's end)
        c = self.__dict__.get("_capacity")
        return _extent(self.shape, self.strides, self.itemsize) if c is None else c

    @property
    def is_contiguous(self) -> bool:
        c = self.__dict__.get("_contig")
        if c is None:
            c = self._contig = self.size == 0 or self.strides == _contiguous_strides(self.shape, self.itemsize)
        return c

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        if value and self._grad is None:
            self._grad = zeros_like_layout(self)
        self._requires_grad = bool(value)
        if not value:
            self._retain = False
        self._desc = None

    _retain = False

    @property
    def retain_grad(self) -> bool:
        """Keep this array's gradient through a backward pass (as Warp's). Otherwise a backward pass
        consumes the gradient of what a kernel stored or a copy wrote here (the adjoint of the store
        zeroes it: the overwritten value had no influence), so after ``tape.backward()`` the gradients
        of intermediate and output arrays are zero. Needs ``requires_grad``."""
        return self._retain

    @retain_grad.setter
    def retain_grad(self, value: bool):
        if value and not self._requires_grad:
            raise ValueError("retain_grad=True needs requires_grad=True")
        self._retain = bool(value)
        self._desc = None

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, g):
        if g is not None and (not isinstance(g, array) or g.shape != self.shape or g.dtype is not self.dtype
                              or g.strides != self.strides):
            raise ValueError("grad must be an array of the same shape, dtype and strides")
        self._grad = g
        self._requires_grad = g is not None
        self._desc = None

    def _descriptor(self) -> bytes:
        """The packed descriptor kernels receive (cached); also caches ``_contig``, which the launch
        packers read directly once ``_desc`` is set (runtime/packer.py)."""
        d = self._desc
        if d is None:
            self.is_contiguous  # noqa: B018  (sets self._contig)
            shape = list(self.shape) + [0] * (4 - self.ndim)
            strides = list(self.strides) + [0] * (4 - self.ndim)
            gptr = self._grad.ptr if (self._grad is not None and self._requires_grad) else 0
            d = self._desc = _DESC.pack(self.ptr, gptr, *shape, *strides, self.ndim, 1 if self._retain else 0)
        return d

    def _descriptor_with_grad(self, grad) -> bytes:
        """Descriptor whose gradient pointer is ``grad``'s data (explicit adjoint launches)."""
        if grad.shape != self.shape or grad.strides != self.strides:
            raise ValueError("an adjoint array must have the shape and strides of its primal array")
        shape = list(self.shape) + [0] * (4 - self.ndim)
        strides = list(self.strides) + [0] * (4 - self.ndim)
        own = self._requires_grad and self._grad is not None and self._grad.ptr == grad.ptr  # else not consumed
        return _DESC.pack(self.ptr, grad.ptr, *shape, *strides, self.ndim, 1 if self._retain or not own else 0)

    # ------------------------------------------------------------------ numpy interop

    def numpy(self) -> np.ndarray:
        """A numpy view (CPU: shares memory) or copy (GPU) of the data; vector dtypes add trailing dims."""
        if self.device.is_cpu:
            if cpu_graph.active:
                cpu_graph.refuse_read("array.numpy()")
            return self._np
        from ..kernels.backends.cuda import driver

        nd, esh = np_dtype_of(self.dtype)
        out = np.empty(self.shape + esh, dtype=nd)
        driver.copy_dtoh(out, self)
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a.astype(dtype) if dtype is not None else a

    @property
    def __array_interface__(self):
        if not self.device.is_cpu:
            raise AttributeError("__array_interface__ is only available for CPU arrays; use .numpy()")
        if self._np.dtype.kind == "V" and not T.is_struct(self.dtype):  # (numpy then reads __array__)
            raise AttributeError("bfloat16 arrays have no __array_interface__ (no typestr names ml_dtypes.bfloat16); "
                                 "np.asarray() reads them through __array__")
        return self._np.__array_interface__

    @property
    def __cuda_array_interface__(self):  # GPU arrays only (AttributeError on the CPU); see runtime/interop.py
        from .interop import cuda_array_interface

        return cuda_array_interface(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export, zero copy (vector/matrix dtypes become trailing dims); see runtime/interop.py."""
        from .interop import array_dlpack

        return array_dlpack(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        from .interop import dlpack_device

        return dlpack_device(self)

    def list(self):
        """The elements, flattened, as Python objects: numbers, vector/matrix values, struct instances."""
        flat = self.numpy().reshape((-1,) + np_dtype_of(self.dtype)[1])
        if T.is_scalar(self.dtype):
            return flat.tolist()
        return [_element(self.dtype, e) for e in flat]

    # ------------------------------------------------------------------ views

    def __getitem__(self, key):
        """Basic indexing: slices and partial integer indices give views (any device); a full integer
        index gives the element (on a GPU: copied back, which waits for the device). Index arrays
        (``a[idx]``, ``a[idx, :]``) give an indexed array (runtime/indexedarray.py)."""
        from .indexedarray import index_view

        view = index_view(self, key)
        if view is not None:
            return view
        if not self.device.is_cpu:
            v, element = self._device_view(key)
            if not element:
                return v
            return _element(self.dtype, v.numpy()[0])
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) > self.ndim:
            raise IndexError(f"too many indices for a {self.ndim}D array")
        if all(isinstance(k, (int, np.integer)) for k in key) and len(key) == self.ndim:
            if cpu_graph.active:
                cpu_graph.refuse_read("reading an array element")
            return _element(self.dtype, self._np[key])
        view = self._np[key]
        gview = self._grad._np[key] if self._grad is not None else None
        esh = np_dtype_of(self.dtype)[1]
        if view.ndim - len(esh) == 0:
            view = view.reshape((1,) + esh)
            gview = gview.reshape((1,) + esh) if gview is not None else None
        g = None
        if gview is not None:   # (its own versions: the gradient's, not the data's)
            g = array(dtype=self.dtype, device=self.device, _np_view=gview, _owner=self._grad)
        out = array(dtype=self.dtype, device=self.device, _np_view=view, _owner=self, _grad=g)
        out._requires_grad = self._requires_grad
        return out

    def __setitem__(self, key, value):
        if self.device.is_cpu:
            if cpu_graph.active:
                cpu_graph.refuse_read("writing array elements from Python")
            self._np[key] = np.asarray(value)
            self._overwritten()
            return
        v, _ = self._device_view(key)
        if isinstance(value, array) or np.shape(value) not in ((), np_dtype_of(self.dtype)[1]):
            v.assign(value)
        else:
            v.fill_(value)

    def _device_view(self, key):
        """(view, whether ``key`` picked one element) of a GPU array: the index arithmetic is numpy's, done
        on a stand-in that has this array's layout and no memory behind it."""
        keys = key if isinstance(key, tuple) else (key,)
        for k in keys:
            if not (k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice))):
                raise IndexError(f"GPU arrays take basic indices (integers, slices, ...), not {type(k).__name__}; "
                                 "gather with a kernel or index .numpy()")
        probe = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=np.dtype((np.void, self.itemsize))),
                                                shape=self.shape, strides=self.strides)
        if not any(k is Ellipsis for k in keys):
            keys = keys + (Ellipsis,)  # (a full index then gives a 0-d view, not a copied scalar)
        try:
            v = probe[keys]
        except IndexError as e:
            raise IndexError(f"{e} (array of shape {self.shape})") from None
        offset = v.__array_interface__["data"][0] - probe.__array_interface__["data"][0]
        element = v.ndim == 0
        shape, strides = ((1,), (self.itemsize,)) if element else (v.shape, v.strides)
        if len(shape) > 4:
            raise IndexError(f"arrays have at most 4 dimensions; the index gives shape {shape}")
        out = array(ptr=self.ptr + offset, dtype=self.dtype, shape=shape, strides=strides, device=self.device,
                    _owner=self)
        if self._grad is not None:
            out._grad = array(ptr=self._grad.ptr + offset, dtype=self.dtype, shape=shape, strides=strides,
                              device=self.device, _owner=self._grad)
            out._requires_grad = self._requires_grad
        return out, element

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        if self.is_type:
            return f"array(dtype={T.type_name(self.dtype)}, ndim={self.ndim})"
        return f"array({self.numpy()!r}, dtype={T.type_name(self.dtype)}, device={self.device.alias})"

    def __str__(self):
        """The values, as numpy prints them (as Warp's ``print(arr)``)."""
        return repr(self) if self.is_type else str(self.numpy())

    # ------------------------------------------------------------------ in-place ops

    def fill_(self, value):
        """Set every element to ``value`` (scalar, or a vector/matrix for value dtypes: nested or flat)."""
        esh = np_dtype_of(self.dtype)[1]
        if esh and np.ndim(value) and np.shape(value) != esh and np.size(value) == int(np.prod(esh)):
            value = np.asarray(value).reshape(esh)          # a matrix's values given flat
        if _is_bf16(self.dtype):
            value = _BF16.host_data(value)
        if self.device.is_cpu:
            if T.is_struct(self.dtype) and isinstance(value, self.dtype):
                value = _struct_records(self.dtype, value)
            value = np.asarray(value, dtype=self._np.dtype) if not T.is_struct(self.dtype) else value
            if cpu_graph.active:
                _record_store(self._np, value)
            else:
                self._np[...] = value
        else:
            from ..kernels.backends.cuda import driver

            driver.fill(self, value)
        self._overwritten()
        return self

    def zero_(self):
        return self.fill_(0)

    def assign(self, src):
        """Copy ``src`` (array, numpy array or list) into this array."""
        if isinstance(src, array):
            copy(self, src)
            return self
        nd, esh = np_dtype_of(self.dtype)
        data = _host_data(self.dtype, src, nd).reshape(self.shape + esh)
        if self.device.is_cpu:
            if cpu_graph.active:
                _record_store(self._np, data.copy())
            else:
                self._np[...] = data
        else:
            from ..kernels.backends.cuda import driver

            driver.copy_htod(self, np.ascontiguousarray(data))
        self._overwritten()
        return self

    def reshape(self, shape):
        if isinstance(shape, int):
            shape = (shape,)
        shape = list(shape)
        if -1 in shape:
            known = int(np.prod([s for s in shape if s != -1]))
            shape[shape.index(-1)] = self.size // max(known, 1)
        if int(np.prod(shape)) != self.size:
            raise ValueError(f"cannot reshape array of shape {self.shape} (size {self.size}) into shape "
                             f"{tuple(shape)} (size {int(np.prod(shape))})")
        if not self.is_contiguous and tuple(shape) != self.shape:
            raise ValueError("reshape needs a contiguous array; use .contiguous() first")
        if self.device.is_cpu:
            esh = np_dtype_of(self.dtype)[1]
            g = self._grad.reshape(shape) if self._grad is not None else None
            out = array(dtype=self.dtype, device=self.device, _np_view=self._np.reshape(tuple(shape) + esh),
                        _owner=self, _grad=g)
            out._requires_grad = self._requires_grad
            return out
        out = array(ptr=self.ptr, dtype=self.dtype, shape=tuple(shape), device=self.device, _owner=self)
        if self._grad is not None:
            out._grad = self._grad.reshape(shape)
            out._requires_grad = self._requires_grad
        return out

    def flatten(self):
        return self.reshape((self.size,))

    def view(self, dtype):
        """Reinterpret the memory as another element type of the same size, sharing it.

        As in Warp, a vector/matrix array viewed as its scalar type (or another scalar of that
        size) gains the element's dimensions: ``zeros(4, dtype=vec3).view(float)`` has shape (4, 3); and
        a scalar array whose last axes hold an element's components loses them: ``zeros((4, 3)).view(vec3)``
        has shape (4,).
        """
        dtype = T.normalize_dtype(dtype)
        nd, esh = np_dtype_of(dtype)
        snd, sesh = np_dtype_of(self.dtype)
        size = np.dtype(nd).itemsize * (int(np.prod(esh)) if esh else 1)
        shape, strides = self.shape, self.strides
        if T.is_scalar(dtype) and sesh and size == np.dtype(snd).itemsize and not T.is_struct(self.dtype):
            shape, strides = shape + sesh, strides + _contiguous_strides(sesh, size)  # scalars of each element
            if len(shape) > 4:
                raise ValueError(f"view: {self.ndim}D array of {T.type_name(self.dtype)} would have {len(shape)} "
                                 "dimensions (at most 4)")
        elif (T.is_scalar(self.dtype) and T.is_value(dtype) and np.dtype(nd).itemsize == self.itemsize
              and self.ndim >= len(esh) and shape[-len(esh):] == esh
              and strides[-len(esh):] == _contiguous_strides(esh, self.itemsize)):
            shape, strides = shape[:-len(esh)], strides[:-len(esh)]   # the last axes hold each element
            if not shape:                                           # one element: a 1D array of it
                shape, strides = (1,), (size,)
        elif size != self.itemsize:
            src, dst = f"source dtype has size {self.itemsize}", f"target dtype has size {size}"
            if T.is_scalar(dtype) and sesh:            # (compared with the source's scalar, as Warp says)
                src = f"source scalar dtype {T.type_name(T.scalar_of(self.dtype))} has size {np.dtype(snd).itemsize}"
            elif T.is_scalar(self.dtype) and esh:
                dst = f"target scalar dtype {T.type_name(T.scalar_of(dtype))} has size {np.dtype(nd).itemsize}"
            raise TypeError(f"cannot create an array view with dtype {T.type_name(dtype)} from source dtype "
                            f"{T.type_name(self.dtype)}: {src} bytes, but {dst} bytes")
        if self.device.is_cpu:
            if np.dtype(nd).itemsize == np.dtype(snd).itemsize and not T.is_struct(self.dtype) \
                    and not T.is_struct(dtype):
                base = self._np.view(nd)  # same scalar size: any strides
            elif self.is_contiguous:
                base = self._np.view(np.uint8).reshape(-1).view(nd)
            else:
                raise ValueError("view: a non-contiguous array can only be viewed as a type of the same scalar size")
            v = np.lib.stride_tricks.as_strided(base, shape=shape + esh,
                                                strides=strides + _contiguous_strides(esh, np.dtype(nd).itemsize))
            return array(dtype=dtype, device=self.device, _np_view=v, _owner=self)
        return array(ptr=self.ptr, dtype=dtype, shape=shape, strides=strides, device=self.device, _owner=self)

    def contiguous(self):
        return self if self.is_contiguous else clone(self)

    def transpose(self, axes=None):
        """A view with the dimensions permuted (``axes``; default: reversed), sharing memory and its
        gradient, as Warp's (kernels take the strided view; ``contiguous()`` copies it)."""
        axes = tuple(reversed(range(self.ndim))) if axes is None else tuple(int(a) for a in axes)
        if sorted(axes) != list(range(self.ndim)):
            raise ValueError(f"transpose: axes {axes} are not a permutation of the {self.ndim} dimensions")
        g = self._grad.transpose(axes) if self._grad is not None else None
        if self.device.is_cpu:
            esh = np_dtype_of(self.dtype)[1]
            view = self._np.transpose(axes + tuple(range(self.ndim, self.ndim + len(esh))))
            out = array(dtype=self.dtype, device=self.device, _np_view=view, _owner=self, _grad=g)
        else:
            out = array(ptr=self.ptr, dtype=self.dtype, shape=tuple(self.shape[a] for a in axes),
                        strides=tuple(self.strides[a] for a in axes), device=self.device, _owner=self)
            out._grad = g
        out._requires_grad = self._requires_grad
        return out

    def to(self, device):
        device = get_device(device)
        if device == self.device:
            return self
        out = empty(self.shape, dtype=self.dtype, device=device, requires_grad=self.requires_grad)
        copy(out, self)
        return out

    def clone(self):
        return clone(self)


def _element(dtype, e):
    """One element read from an array's numpy storage, as Python sees it: a value type's instance, a
    struct instance, or the numpy scalar."""
    if T.is_value(dtype):
        return dtype(e)
    if T.is_struct(dtype):
        return dtype._simkit_struct.unpack(e)
    return e


def _struct_records(dtype, data):
    """Struct instances (one, or nested lists of them) as numpy records of the struct's layout."""
    nd = np_dtype_of(dtype)[0]
    if isinstance(data, dtype):
        return np.frombuffer(dtype._simkit_struct.pack(data), dtype=nd)[0]
    if isinstance(data, (list, tuple)):
        return np.array([_struct_records(dtype, d) for d in data], dtype=nd)
    return data


def _contiguous_strides(shape, itemsize) -> tuple:
    strides, s = [], itemsize
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return tuple(reversed(strides))


def _element_bytes(a: array) -> np.ndarray:
    """A uint8 view of a CPU array, shape ``a.shape + (itemsize,)`` (elements are contiguous bytes)."""
    flat = a._np.reshape(a._np.shape[:a.ndim] + (-1,))  # element dims are contiguous: no copy
    return np.lib.stride_tricks.as_strided(flat[..., :1].view(np.uint8), shape=a.shape + (a.itemsize,),
                                           strides=a.strides + (1,))


def _extent(shape, strides, itemsize) -> int:
    if not shape or min(shape) == 0:
        return 0
    return sum((n - 1) * s for n, s in zip(shape, strides)) + itemsize


def zeros_like_layout(a: array) -> array:
    """A zeroed array with exactly ``a``'s shape, dtype, device and strides (gradient storage)."""
    if not a.device.is_cpu:
        return zeros(a.shape, dtype=a.dtype, device=a.device)
    if a.is_contiguous:
        return _zeros_cpu_like(a)
    raise ValueError("gradients of non-contiguous arrays come from their parent array's gradient")


def _zeros_cpu_like(a: array) -> array:
    """A new zeroed CPU array of contiguous ``a``'s layout, set up as the constructor would set it up (the same
    attributes: tests/test_array_grad_storage.py) from what ``a`` already knows. Every array made with
    ``requires_grad`` makes one: 25 -> 10 us on the CI-size machine (AMD EPYC, family 23)."""
    g = object.__new__(array)
    g._desc = None
    g._ver = [0, 0, False]
    g._grad = None
    g._requires_grad = False
    g.is_type = False
    g.device, g.dtype = a.device, a.dtype
    host = a._np
    buf, ptr = _aligned_at(np.zeros(host.nbytes + CPU_ALIGN, np.uint8), host.shape, host.dtype, host.nbytes)
    g._np, g.shape, g.strides, g.itemsize, g.ndim, g.size = buf, a.shape, a.strides, a.itemsize, a.ndim, a.size
    g.ptr = ptr if a.size else 0
    g._owner = None
    _mt.allocated(g, buf.nbytes, buf)
    if cpu_graph.active:  # (as the constructor: every replay of the graph zeroes it again)
        _record_store(buf, 0)
    return g


# ---------------------------------------------------------------------------
# Constructors


def _record_store(view: np.ndarray, value) -> None:
    """Record ``view[...] = value`` in the CPU graph being captured (kernels/backends/cpu_graph.py)."""
    def store():
        view[...] = value

    cpu_graph.record(store)


class _FixedDimArray:
    """``array1d`` ... ``array4d``: ``array2d(dtype=float)`` or ``array2d[float]`` in annotations (an
    array type of that many dimensions), ``array2d(data, ...)`` at runtime (an array made with ``ndim``)."""

    def __init__(self, ndim: int):
        self.ndim = ndim
        self.__name__ = self.__qualname__ = f"array{ndim}d"

    def __call__(self, *args, **kw):
        return array(*args, ndim=self.ndim, **kw)

    def __getitem__(self, dtype):
        return array(dtype=dtype, ndim=self.ndim)

    def __repr__(self):
        return f"simkit.{self.__name__}"


array1d, array2d, array3d, array4d = (_FixedDimArray(n) for n in range(1, 5))


# the constructors (zeros, full, clone...) live in array_create.py; imported last: they build arrays
from .array_copy import CopyError, copy  # noqa: E402
from .array_create import (clone, empty, empty_like, from_numpy, full, full_like, ones,  # noqa: E402
                           ones_like, zeros, zeros_like)
