"""Interop: DLPack both ways, ``__cuda_array_interface__``, zero-copy views of foreign arrays.

Every conversion here shares memory; nothing copies behind your back. Example::

    >>> import numpy as np, simkit as sk
    >>> n = np.zeros((4, 3), dtype=np.float32)
    >>> a = sk.from_dlpack(n, dtype=sk.vec3)          # numpy -> simkit, zero copy
    >>> a.shape, a.dtype is sk.vec3
    ((4,), True)
    >>> back = np.from_dlpack(a)                       # simkit -> numpy, zero copy
    >>> back[1, 2] = 7.0; float(n[1, 2])
    7.0

Layout rules (all frameworks): vector and matrix dtypes are exported as extra
trailing dimensions of their scalar type (an array of 10 ``vec3`` is a
(10, 3) float32 tensor); importing regroups trailing dimensions when ``dtype=``
names a vector/matrix type (they must then be contiguous). Strides are kept,
so transposed and sliced views stay views. ``from_dlpack(x, dtype=...)`` also views
integers as the other sign of their size and bool bytes as int8/uint8 (as Warp);
other element types must match (``ViewError``: a TypeError and a RuntimeError).

CUDA streams: exporting (``__dlpack__(stream=s)``) makes the consumer's stream
``s`` wait (an event, no host sync) for the work queued so far on simkit's
current stream of that device; importing passes simkit's current stream to the
producer, and ``__cuda_array_interface__`` imports make simkit's current stream
wait for the producer's ``stream`` entry. Exports carry simkit's current stream
in their ``__cuda_array_interface__["stream"]``.

The DLPack capsule is implemented with ctypes (``DLManagedTensor`` and, when the
consumer asks for ``max_version >= (1, 0)``, ``DLManagedTensorVersioned``).
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..kernels import types as T
from .array import array, clone
from .array_ctype import array_t, to_array
from .device import get_device

# ---------------------------------------------------------------------------
# DLPack C structures (dlpack.h, v1.0)

kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged = 1, 2, 3, 13
kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLBool = 0, 1, 2, 4, 6
FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2
DLPACK_VERSION = (1, 0)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# Private prototypes of the capsule C API (ctypes.pythonapi's shared function objects are left untouched).
_P = ctypes.PYFUNCTYPE
_capsule_new = _P(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_is_valid = _P(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))
_capsule_get_pointer = _P(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_capsule_set_name = _P(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(("PyCapsule_SetName", ctypes.pythonapi))
# raw-pointer variants for the capsule destructor (the capsule is being freed: no new references to it)
_raw_is_valid = _P(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))
_raw_get_pointer = _P(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))

# capsule names must outlive the capsules: static buffers
_NAMES = {n: ctypes.create_string_buffer(n) for n in
          (b"dltensor", b"dltensor_versioned", b"used_dltensor", b"used_dltensor_versioned")}

_live: dict = {}  # address of an exported managed tensor -> _Export (what keeps its memory alive)
_DeleterT = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _make_callbacks():
    """The C callbacks (DLPack deleter, capsule destructor). Consumers may call them as late as the final garbage
    collection at interpreter exit, after this module's globals are cleared: they only use what they close over,
    and are made immortal below (a freed ctypes thunk would crash the process)."""
    live, is_valid, get_pointer = _live, _raw_is_valid, _raw_get_pointer
    names = (b"dltensor", b"dltensor_versioned")

    def deleter(ptr):
        live.pop(ptr, None)

    def destructor(cap):  # an unconsumed capsule is freed (consumers rename it, then call the deleter)
        for name in names:
            if is_valid(cap, name):
                live.pop(get_pointer(cap, name), None)
                return

    fns = (_DeleterT(deleter), _DeleterT(destructor))
    for f in fns:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(f))  # immortal: never freed, even at exit
    return fns


_deleter, _capsule_destructor = _make_callbacks()
_DELETER_ADDR = ctypes.cast(_deleter, ctypes.c_void_p).value
_DESTRUCTOR_ADDR = ctypes.cast(_capsule_destructor, ctypes.c_void_p).value
_destructor = 0  # the capsule destructor in use, once resolved (dlpack_native)


def _native_destructor() -> int:
    """The compiled capsule destructor (built on the first export), else the Python one."""
    global _destructor
    from .dlpack_native import capsule_destructor

    _destructor = capsule_destructor(_DELETER_ADDR, _DESTRUCTOR_ADDR)
    return _destructor


class _Export:
    __slots__ = ("managed", "shape", "strides", "keep")


class ViewError(TypeError, RuntimeError):
    """Foreign memory that cannot be viewed as asked without a copy (wrong element type, element dims not
    contiguous...): a TypeError, and the RuntimeError Warp raises."""


class DeviceError(TypeError, BufferError):
    """A DLPack producer on a device simkit cannot use (a TypeError, as Warp's; a BufferError, as DLPack's)."""


# ---------------------------------------------------------------------------
# dtypes


def dl_dtype(scalar) -> tuple:
    """(code, bits) of a simkit scalar type."""
    if scalar is T.bool:
        return kDLBool, 8
    if scalar is T.bfloat16:
        return kDLBfloat, 16
    code = kDLFloat if T.is_float(scalar) else kDLUInt if scalar._np.kind == "u" else kDLInt
    return code, 8 * np.dtype(scalar._np).itemsize


_FROM_DL = {dl_dtype(s): s for s in T.scalar_types}


def aliases(have, want) -> bool:
    """Whether ``have`` data may be viewed as ``want`` elements without a copy (as Warp allows for DLPack and
    PyTorch): integers of one size whatever their sign (int64 data as uint64), and bool bytes as int8/uint8."""
    if have is T.bool:
        return want is T.int8 or want is T.uint8
    return (have._np.kind in "iu" and T.is_scalar(want) and want is not T.bool and want._np.kind in "iu"
            and have._np.itemsize == want._np.itemsize)


def _bits_as_bf16(scalar, dtype):
    """uint16 data taken as a bfloat16 array (``dtype`` bfloat16, or a vector/matrix of it) is its bit
    patterns, as Warp takes it: the scalar to view it as."""
    if scalar is T.uint16 and dtype is not None and dtype is not T.Any:
        want = T.normalize_dtype(dtype)
        if (T.is_scalar(want) or T.is_value(want)) and T.scalar_of(want) is T.bfloat16:
            return T.bfloat16
    return scalar


def _typestr(scalar) -> str:
    """The array-interface typestr of a scalar type: bfloat16 data is described as its uint16 bits (as
    Warp does; no typestr names a bfloat16), others by their numpy dtype."""
    return "<u2" if scalar is T.bfloat16 else np.dtype(scalar._np).str


def scalar_from_dl(code: int, bits: int, lanes: int = 1):
    s = _FROM_DL.get((code, bits))
    if s is None or lanes != 1:
        names = {kDLInt: "int", kDLUInt: "uint", kDLFloat: "float", kDLBool: "bool", kDLBfloat: "bfloat",
                 5: "complex"}
        raise TypeError(f"DLPack dtype {names.get(code, f'code {code}')}{bits}"
                        f"{f'x{lanes}' if lanes != 1 else ''} has no simkit scalar type")
    return s


def _element_layout(dtype):
    """(scalar type, trailing element shape) of a simkit scalar/vector/matrix dtype."""
    if T.is_scalar(dtype):
        return dtype, ()
    if T.is_value(dtype) and not T.is_generic(dtype):
        return dtype._dtype, tuple(dtype._shape)
    raise TypeError(f"{T.type_name(dtype)} arrays cannot be exchanged with other frameworks "
                    "(only scalar, vector and matrix element types)")


def regroup(shape, strides, scalar, dtype=None, max_dims: int = 4, reinterpret: bool = False):
    """Map a foreign (shape, byte strides, scalar type) to simkit (shape, byte strides, dtype).

    ``dtype`` (a vector/matrix type) consumes that many trailing dims, which must have exactly the element's
    shape and be contiguous (else a copy would be needed: ViewError, a TypeError). A scalar ``dtype`` must
    equal ``scalar`` (``reinterpret``: or be one it :func:`aliases`, e.g. uint64 for int64 data).
    """
    dtype = scalar if dtype is None or dtype is T.Any else T.normalize_dtype(dtype)
    want, esh = _element_layout(dtype)
    if want is not scalar and not (reinterpret and aliases(scalar, want)):
        of = f" (of {T.type_name(want)})" if want is not dtype else ""
        raise ViewError(f"{T.type_name(scalar)} data does not match element type {T.type_name(dtype)}{of}; "
                        "converting would copy")
    shape, strides = tuple(int(s) for s in shape), tuple(int(s) for s in strides)
    if esh:
        k = len(esh)
        contig = _contiguous(esh, np.dtype(scalar._np).itemsize)
        if len(shape) <= k or shape[-k:] != esh:
            raise ViewError(f"a {T.type_name(dtype)} array needs trailing dimensions {esh}, got shape {shape}")
        if any(n != 1 and s != c for n, s, c in zip(esh, strides[-k:], contig)):  # size-1 dims: any stride
            raise ViewError(f"the trailing {esh} dimensions of a {T.type_name(dtype)} array must be contiguous "
                            f"(strides {strides[-k:]} bytes, need {contig}); a copy would be needed "
                            "(make it contiguous first, e.g. np.ascontiguousarray)")
        shape, strides = shape[:-k], strides[:-k]
    if not 1 <= len(shape) <= max_dims:
        raise ViewError(f"simkit arrays have 1 to 4 dimensions; shape {shape} of {T.type_name(dtype)} has "
                        f"{len(shape)}")
    return shape, strides, dtype


def _contiguous(shape, itemsize) -> tuple:
    out, s = [], itemsize
    for d in reversed(shape):
        out.append(s)
        s *= d
    return tuple(reversed(out))


# ---------------------------------------------------------------------------
# Export: simkit -> DLPack


def dlpack_device(a: array) -> tuple:
    """``(device_type, device_id)`` as ``__dlpack_device__`` returns it."""
    return (kDLCPU, 0) if a.device.is_cpu else (kDLCUDA, a.device.ordinal)


def to_dlpack(a: array, stream=None, versioned: bool = False, _flags: int = 0):
    """A DLPack capsule sharing ``a``'s memory (``versioned``: a DLPack 1.0 ``dltensor_versioned`` capsule)."""
    if not isinstance(a, array) or a.is_type:
        raise TypeError(f"to_dlpack needs a simkit array, got {type(a).__name__}")
    scalar, esh = _element_layout(a.dtype)
    ssize = np.dtype(scalar._np).itemsize
    if any(s % ssize for s in a.strides):
        raise BufferError(f"strides {a.strides} are not multiples of the {T.type_name(scalar)} size; "
                          "DLPack cannot describe this view")
    shape = tuple(a.shape) + esh
    strides = tuple(s // ssize for s in a.strides) + tuple(s // ssize for s in _contiguous(esh, ssize))
    if a.device.is_cuda:
        _producer_sync(a.device, stream)
    h = _Export()
    n = len(shape)
    h.shape = (ctypes.c_int64 * max(n, 1))(*shape)
    h.strides = (ctypes.c_int64 * max(n, 1))(*strides)
    m = h.managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = m.dl_tensor
    t.data = a.ptr or None
    t.device = DLDevice(*dlpack_device(a))
    t.ndim = n
    code, bits = dl_dtype(scalar)
    t.dtype = DLDataType(code, bits, 1)
    t.shape = ctypes.cast(h.shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(h.strides, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _DELETER_ADDR
    if versioned:
        m.version = DLPackVersion(*DLPACK_VERSION)
        m.flags = _flags
    h.keep = a
    addr = ctypes.addressof(m)
    _live[addr] = h
    name = _NAMES[b"dltensor_versioned" if versioned else b"dltensor"]
    destructor = _destructor or _native_destructor()
    return _capsule_new(addr, ctypes.addressof(name), destructor)


def array_dlpack(a: array, stream=None, max_version=None, dl_device=None, copy=None):
    """``array.__dlpack__``: the Python array API / DLPack protocol."""
    _check_stream(a, stream)
    if dl_device is not None and tuple(int(x) for x in dl_device) != dlpack_device(a):
        raise BufferError(f"cannot export a {a.device.alias} array to DLPack device {tuple(dl_device)} "
                          "without a copy")
    if copy:
        a = clone(a)
    versioned = max_version is not None and int(max_version[0]) >= DLPACK_VERSION[0]
    return to_dlpack(a, stream=stream, versioned=versioned, _flags=FLAG_IS_COPIED if copy else 0)


def _check_stream(a: array, stream) -> None:
    """A consumer's ``stream`` argument: None or -1 for CPU memory (nothing to order), else None or an integer
    handle >= -1 (TypeError otherwise, as the array API asks)."""
    if stream is None or (type(stream) is int and stream == -1):
        return
    if a.device.is_cpu:
        raise TypeError(f"__dlpack__(stream={stream!r}) of a CPU array: CPU memory takes stream None (or -1)")
    if not isinstance(stream, int) or isinstance(stream, bool) or stream < -1:
        raise TypeError(f"__dlpack__(stream={stream!r}): a stream is None, -1 or a CUDA stream handle (an int)")


def _producer_sync(device, stream) -> None:
    """The consumer's ``stream`` (DLPack convention: None = legacy default, -1 = none) waits for ours."""
    if stream == -1:
        return
    from ..kernels.backends.cuda import stream as sk_stream

    ours = sk_stream.get_stream(device)
    consumer = 1 if stream is None else int(stream)  # 1: CU_STREAM_LEGACY, 2: per-thread default
    if consumer == 0:
        raise BufferError("DLPack stream 0 is ambiguous and not allowed; pass 1 for the legacy default stream")
    if consumer != ours.handle:
        sk_stream.Stream(device, cuda_stream=consumer).wait_stream(ours)


def cuda_array_interface(a: array) -> dict:
    """``array.__cuda_array_interface__`` (version 3) of a GPU array."""
    if a.device is None or a.device.is_cpu:
        raise AttributeError("__cuda_array_interface__ is only available for CUDA arrays "
                             "(CPU arrays have __array_interface__)")
    scalar, esh = _element_layout(a.dtype)
    ssize = np.dtype(scalar._np).itemsize
    from ..kernels.backends.cuda import driver

    typestr = _typestr(scalar)
    return {"shape": tuple(a.shape) + esh, "typestr": typestr, "descr": [("", typestr)],
            "data": (a.ptr if a.size else 0, False),
            "strides": None if a.is_contiguous else tuple(a.strides) + _contiguous(esh, ssize),
            "version": 3, "stream": driver.current_stream(a.device) or 1}  # 0 (NULL stream) is spelled 1


# ---------------------------------------------------------------------------
# Import: DLPack / __cuda_array_interface__ / numpy -> simkit


class _Imported:
    """Owns a consumed DLPack tensor: calls its deleter when the last simkit/numpy view is gone."""

    _fn = _DeleterT  # a class attribute: still there while module globals are cleared at exit

    def __init__(self, ptr: int, deleter: int, versioned: bool):
        self.ptr, self.deleter, self.versioned = ptr, deleter, versioned

    def __del__(self):
        if self.deleter:
            d, self.deleter = self.deleter, 0
            self._fn(d)(self.ptr)


class _HostBuffer:
    """Exposes foreign CPU memory as ``__array_interface__`` so numpy views keep its owner alive."""

    def __init__(self, ptr, shape, strides, typestr, readonly, owner):
        self.__array_interface__ = {"data": (ptr, readonly), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}
        self.owner = owner


def _host_view(ptr, shape, strides, scalar, readonly, owner) -> np.ndarray:
    nd = np.dtype(scalar._np)
    if 0 in shape or not ptr:
        return np.zeros(shape, dtype=nd)
    # (a typestr cannot name ml_dtypes.bfloat16: its bits are read as uint16, then viewed)
    return np.asarray(_HostBuffer(ptr, tuple(shape), tuple(strides), _typestr(scalar), readonly, owner)).view(nd)


def _wrap(ptr, shape, strides, scalar, dtype, device, readonly, owner, reinterpret: bool = False) -> array:
    """A simkit array over foreign memory (shape/strides in bytes include the element dims)."""
    oshape, ostrides, dtype = regroup(shape, strides, scalar, dtype, reinterpret=reinterpret)
    scalar = _element_layout(dtype)[0]  # (another of the data's size, where reinterpreted)
    if ptr % np.dtype(scalar._np).itemsize:
        raise TypeError(f"data at 0x{ptr:x} is not aligned for {T.type_name(scalar)}; a copy would be needed")
    if device.is_cpu:
        view = _host_view(ptr, shape, strides, scalar, readonly, owner)
        return array(dtype=dtype, device=device, _np_view=view, _owner=view)
    return array(ptr=ptr, dtype=dtype, shape=oshape, strides=ostrides, device=device, _owner=owner)


def _is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"


def _consume(capsule):
    """(managed struct, owner) of a DLPack capsule, marking it used."""
    for raw, versioned in ((b"dltensor_versioned", True), (b"dltensor", False)):
        if _capsule_is_valid(capsule, raw):
            ptr = _capsule_get_pointer(capsule, raw)
            m = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(ptr)
            if versioned and m.version.major > DLPACK_VERSION[0]:
                raise BufferError(f"DLPack {m.version.major}.{m.version.minor} tensors are not supported "
                                  f"(simkit reads DLPack {DLPACK_VERSION[0]}.x)")
            _capsule_set_name(capsule, ctypes.addressof(_NAMES[b"used_" + raw]))
            return m, _Imported(ptr, m.deleter or 0, versioned)
    if not _is_capsule(capsule):
        raise TypeError(f"__dlpack__ must return a DLPack capsule, got {type(capsule).__name__}")
    raise BufferError("not a DLPack capsule (or it was already consumed)")


def from_dlpack(obj, dtype=None, device=None, *, _reinterpret: bool = True) -> array:
    """A simkit array sharing the memory of ``obj`` (anything with ``__dlpack__``, or a DLPack capsule).

    ``dtype``: a vector/matrix type regroups trailing dims (``from_dlpack(t, dtype=sk.vec3)`` on an (n, 3)
    tensor gives n vec3); a scalar type must match, or be one the data :func:`aliases` (integers of one size
    whatever their sign, bool bytes as int8/uint8): anything else raises :class:`ViewError`.
    """
    if isinstance(obj, array):
        return obj if dtype is None or T.normalize_dtype(dtype) is obj.dtype else obj.view(dtype)
    stream = None
    if _is_capsule(obj):
        capsule = obj
    elif hasattr(obj, "__dlpack__"):
        dev_type, dev_id = (int(x) for x in obj.__dlpack_device__())
        dl_to_device(dev_type, dev_id)  # an unusable device is refused before the producer exports anything
        if dev_type in (kDLCUDA, kDLCUDAManaged):
            from ..kernels.backends.cuda import driver

            stream = driver.current_stream(get_device(f"cuda:{dev_id}")) or 1  # DLPack: 1 = legacy default
        try:
            capsule = obj.__dlpack__(stream=stream, max_version=DLPACK_VERSION)
        except TypeError:  # a producer older than the DLPack 1.0 keyword arguments
            capsule = obj.__dlpack__(stream=stream) if stream is not None else obj.__dlpack__()
    else:
        raise TypeError(f"from_dlpack needs an object with __dlpack__ (or a DLPack capsule), "
                        f"got {type(obj).__name__}")
    m, owner = _consume(capsule)
    t = m.dl_tensor
    readonly = bool(getattr(m, "flags", 0) & FLAG_READ_ONLY)
    scalar = scalar_from_dl(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    ssize = np.dtype(scalar._np).itemsize
    n = t.ndim
    shape = tuple(t.shape[i] for i in range(n))
    strides = (tuple(t.strides[i] * ssize for i in range(n)) if t.strides else _contiguous(shape, ssize))
    dev = dl_to_device(t.device.device_type, t.device.device_id)
    if device is not None and get_device(device) != dev:
        raise ValueError(f"the tensor is on {dev.alias}, not {get_device(device).alias} (from_dlpack never copies)")
    ptr = (t.data or 0) + t.byte_offset
    return _wrap(ptr, shape, strides, scalar, dtype, dev, readonly, owner, reinterpret=_reinterpret)


def from_cuda_array_interface(obj, dtype=None, device=None) -> array:
    """A simkit CUDA array sharing the memory of an object with ``__cuda_array_interface__`` (CuPy, Numba,
    PyTorch...). If the interface names a ``stream``, simkit's current stream waits for it."""
    iface = obj.__cuda_array_interface__
    if iface.get("mask") is not None:
        raise TypeError("masked __cuda_array_interface__ arrays are not supported")
    nd = np.dtype(iface["typestr"])
    scalar = _bits_as_bf16(T.scalar_from_numpy(nd), dtype)
    shape = tuple(int(s) for s in iface["shape"])
    strides = iface.get("strides") or _contiguous(shape, nd.itemsize)
    ptr, readonly = iface["data"]
    dev = get_device(device) if device is not None else _pointer_device(int(ptr or 0))
    if dev.is_cpu:
        raise ValueError("__cuda_array_interface__ memory cannot be used on the CPU")
    s = iface.get("stream")
    if s is not None and ptr:
        from ..kernels.backends.cuda import stream as sk_stream

        ours = sk_stream.get_stream(dev)
        if int(s) != ours.handle:
            ours.wait_stream(sk_stream.Stream(dev, cuda_stream=int(s)))
    return _wrap(int(ptr or 0), shape, strides, scalar, dtype, dev, bool(readonly), obj)


def _pointer_device(ptr: int):
    """The CUDA device owning ``ptr`` (the default CUDA device if the driver cannot tell)."""
    from ..kernels.backends.cuda import driver
    from .device import cuda_devices

    devs = cuda_devices()
    if not devs:
        raise RuntimeError("a CUDA array was given but no CUDA device is available")
    if ptr:
        try:
            api = driver.cu()
            attr = api.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
            ordinal = int(driver.check(api.cuPointerGetAttribute(attr, ptr), "cuPointerGetAttribute"))
            return get_device(f"cuda:{ordinal}")
        except Exception:  # noqa: BLE001 - fall back to the default CUDA device
            pass
    dev = get_device(None)
    return dev if dev.is_cuda else devs[0]


def from_numpy_view(arr, dtype=None) -> array:
    """A simkit CPU array viewing ``arr`` (numpy, or anything with ``__array_interface__``) without a copy."""
    if not isinstance(arr, np.ndarray):
        arr = np.asarray(arr)  # zero copy for __array_interface__ / buffer objects
    if not arr.flags.aligned:
        raise TypeError("the numpy array is not aligned; a copy would be needed")
    scalar = _bits_as_bf16(T.scalar_from_numpy(arr.dtype), dtype)
    if arr.dtype.byteorder == ">":
        raise TypeError("big-endian numpy arrays are not supported; a copy would be needed")
    _, _, dtype = regroup(arr.shape, arr.strides, scalar, dtype)
    if scalar is T.bfloat16:
        arr = arr.view(T.bfloat16._np)
    return array(dtype=dtype, device=get_device("cpu"), _np_view=arr, _owner=arr)


def _has(obj, name: str) -> bool:
    try:  # torch raises RuntimeError (not AttributeError) for __cuda_array_interface__ of grad tensors
        return hasattr(obj, name)
    except Exception:  # noqa: BLE001
        return False


def _not_foreign(obj) -> bool:
    # simkit arrays, Python scalars, numpy scalars and simkit vector/matrix values (numpy subclasses)
    return isinstance(obj, (array, int, float, bool, np.generic, T.value_base)) or obj is None


def dl_to_device(device_type: int, device_id: int):
    """The simkit device of a DLPack ``(device_type, device_id)`` (CPU and CUDA only)."""
    if device_type in (kDLCPU, kDLCUDAHost):
        return get_device("cpu")
    if device_type in (kDLCUDA, kDLCUDAManaged):
        return get_device(f"cuda:{device_id}")
    raise DeviceError(f"DLPack device type {device_type} (device id {device_id}) is not supported: simkit "
                      "reads CPU, CUDA, CUDA host and CUDA managed memory")


def foreign_device(obj):
    """The device of a foreign array object (None if ``obj`` is not one)."""
    if _not_foreign(obj):
        return None
    if isinstance(obj, array_t):
        return obj.device
    if isinstance(obj, np.ndarray):
        return get_device("cpu")
    if _has(obj, "__cuda_array_interface__"):
        return _pointer_device(int(obj.__cuda_array_interface__["data"][0] or 0))
    if _has(obj, "__dlpack_device__") and _has(obj, "__dlpack__"):  # a CPU torch tensor, say
        return dl_to_device(*(int(x) for x in obj.__dlpack_device__()))
    if _has(obj, "__array_interface__"):
        return get_device("cpu")
    return None


def foreign_type(obj):
    """The kernel type ``ArrayType(scalar, ndim)`` of a foreign array (for generic kernels), else None."""
    if _not_foreign(obj):
        return None
    if isinstance(obj, array_t):
        return T.ArrayType(obj.dtype, int(obj.ndim)) if obj.dtype is not None else None
    try:
        if isinstance(obj, np.ndarray) or _has(obj, "__array_interface__"):
            a = obj if isinstance(obj, np.ndarray) else np.asarray(obj)
            return T.ArrayType(T.scalar_from_numpy(a.dtype), a.ndim)
        if _has(obj, "__cuda_array_interface__"):
            iface = obj.__cuda_array_interface__
            return T.ArrayType(T.scalar_from_numpy(np.dtype(iface["typestr"])), len(iface["shape"]))
        if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            a = from_dlpack(obj)
            return T.ArrayType(a.dtype, a.ndim)
    except (TypeError, ValueError, BufferError, RuntimeError):
        return None
    return None


def as_array(obj, t, device=None, what: str = "argument") -> array:
    """Zero-copy simkit view of ``obj`` for a kernel parameter of type ``t`` (an ``ArrayType``).

    Accepts simkit arrays, numpy arrays (and ``__array_interface__`` objects), ``__cuda_array_interface__``
    objects (CuPy, Numba, PyTorch CUDA tensors), DLPack producers (PyTorch, JAX) and the ``array_t``
    descriptors of ``from_torch(..., return_ctype=True)`` (gradient included). Raises ``TypeError``
    starting with ``what`` when a view is impossible (wrong dtype, element dims not contiguous...):
    launch arguments are never copied silently.
    """
    if isinstance(obj, array):
        return obj
    try:
        if _not_foreign(obj):
            raise TypeError(f"expected {T.type_name(t)}, got {type(obj).__name__}")
        if isinstance(obj, array_t):
            return to_array(obj, t, obj.device if device is None else get_device(device))
        if not isinstance(obj, np.ndarray) and _has(obj, "__cuda_array_interface__"):
            a = from_cuda_array_interface(obj, dtype=t.dtype)
        elif isinstance(obj, np.ndarray) or hasattr(obj, "__array_interface__"):
            a = from_numpy_view(obj, dtype=t.dtype)
        elif hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            a = from_dlpack(obj, dtype=t.dtype, _reinterpret=False)  # (launch arguments match exactly)
        else:
            raise TypeError(f"expected {T.type_name(t)}, got {type(obj).__name__}")
    except (TypeError, ValueError, BufferError, RuntimeError) as e:
        msg = str(e)
        if not msg.startswith("expected"):
            shape = getattr(obj, "shape", None)
            desc = f"{type(obj).__name__} of shape {tuple(shape)}" if shape is not None else type(obj).__name__
            msg = f"expected {T.type_name(t)}, got a {desc}: {msg}"
        raise TypeError(f"{what}: {msg}") from None
    if a.ndim != t.ndim:
        raise TypeError(f"{what}: expected {T.type_name(t)}, got a {type(obj).__name__} holding a "
                        f"{a.ndim}D array of {T.type_name(a.dtype)}")
    return a
