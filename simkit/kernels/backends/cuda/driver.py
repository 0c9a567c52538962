"""CUDA driver API (cuda-python ``cuda.bindings.driver``): devices, contexts, memory, copies.

Everything is lazy: nothing touches the driver until a CUDA device is used, and
a machine without the NVIDIA driver or a GPU gets ``[]`` from
:func:`enumerate_devices` and a ``RuntimeError`` (never a crash) from anything
that needs a GPU.

Design
------
* One *primary* context per device (``cuDevicePrimaryCtxRetain``), shared with
  every other library that uses the runtime API (PyTorch, CuPy, ...). It is made
  current (``cuCtxSetCurrent``) before each driver call that needs it.
* Each device has a *default stream*, created by simkit (blocking with respect
  to the legacy NULL stream, so that graph capture works on it). Work goes to
  the device's *current stream* (the default one unless changed with
  ``simkit.set_stream`` / ``ScopedStream``, see ``stream.py``).
* Memory comes from the device's default stream-ordered pool
  (``cuMemAllocAsync`` on the current stream; the release threshold is raised
  so freed blocks stay cached). Frees go to the legacy NULL stream, which is
  ordered after the work of every blocking stream of the context: memory used
  on any simkit stream is never recycled while a kernel may still read it.
  While a graph is being captured on a device, frees are deferred (the legacy
  stream must not be touched during capture) and handed to the captured graph,
  and allocations are made outside the capture (so the graph holds plain
  pointers; the graph keeps those allocations alive).
* Fills with a repeating pattern use ``cuMemsetD8/16/32``; other patterns and
  strided (non-contiguous) arrays use two small runtime kernels compiled once
  per architecture with NVRTC (``RUNTIME_SOURCE``).
"""
from __future__ import annotations

import ctypes
import struct as _struct
import sys
import threading

import numpy as np

from ... import types as T

_api = None  # the cuda.bindings.driver module once imported (tests may substitute a fake)
_lock = threading.RLock()
_init_done = False
_init_error: str | None = None
_devices: list | None = None  # [(ordinal, name, arch)]
_states: dict = {}  # ordinal -> _DeviceState

GRID_CAP = 65536  # blocks per launch; kernels use grid-stride loops
_UINT64_MAX = 0xFFFFFFFFFFFFFFFF


class CudaError(RuntimeError):
    """A CUDA driver call failed. ``code`` is the ``CUresult`` value."""

    def __init__(self, msg: str, code: int = -1):
        super().__init__(msg)
        self.code = code


# ---------------------------------------------------------------------------
# Binding access and error checking


def cu():
    """The ``cuda.bindings.driver`` module (RuntimeError when cuda-python is missing)."""
    global _api
    if _api is None:
        try:
            from cuda.bindings import driver as mod
        except ImportError as e:
            raise RuntimeError("CUDA support needs cuda-python: pip install 'simkit[cuda]' "
                               "(cuda-python with cuda.bindings)") from e
        _api = mod
    return _api


def error_name(err) -> str:
    try:
        r = cu().cuGetErrorName(err)
        name = r[1].decode() if int(r[0]) == 0 else str(err)
        r = cu().cuGetErrorString(err)
        desc = r[1].decode() if int(r[0]) == 0 else ""
        return f"{name} ({desc})" if desc else name
    except Exception:  # pragma: no cover - the error string itself is best effort
        return str(err)


_STICKY = {700, 701, 702, 714, 715, 716, 717, 718, 719}  # illegal address, launch failed, ... (context is lost)


def check(result, what: str):
    """Raise CudaError unless ``result[0]`` is CUDA_SUCCESS; return the remaining value(s)."""
    if isinstance(result, tuple):
        err, vals = result[0], result[1:]
    else:
        err, vals = result, ()
    code = int(err)
    if code != 0:
        msg = f"CUDA {what} failed: {error_name(err)}"
        if code in _STICKY:
            msg += (". The CUDA context is now unusable (restart the process); an out-of-bounds array access is "
                    "the usual cause: run with simkit.config.mode = 'debug' to locate it")
        elif code == 2:
            msg += ". The GPU is out of memory"
        raise CudaError(msg, code)
    if not vals:
        return None
    return vals[0] if len(vals) == 1 else vals


# ---------------------------------------------------------------------------
# Initialisation and device enumeration


def _init() -> None:
    """cuInit once; records why CUDA is unavailable instead of raising."""
    global _init_done, _init_error
    if _init_done:
        return
    with _lock:
        if _init_done:
            return
        try:
            api = cu()
        except RuntimeError as e:  # no cuda-python
            _init_error = str(e)
            _init_done = True
            return
        try:
            err = api.cuInit(0)[0]
            code = int(err)
            if code == 100:  # CUDA_ERROR_NO_DEVICE
                _init_error = "the NVIDIA driver reports no CUDA-capable GPU"
            elif code != 0:
                _init_error = f"cuInit failed: {error_name(err)}"
        except Exception as e:  # the driver library (libcuda.so) cannot be loaded
            _init_error = f"the NVIDIA driver library (libcuda.so) could not be loaded ({type(e).__name__}: {e})"
        _init_done = True


def unavailable_reason() -> str | None:
    """Why CUDA cannot be used here (None when at least one device is present)."""
    _init()
    if _init_error:
        return _init_error
    return None if enumerate_devices() else "no CUDA devices found"


def driver_version() -> int:
    """The driver's CUDA version as an int (12040 for 12.4); 0 when unavailable."""
    _init()
    if _init_error:
        return 0
    return int(check(cu().cuDriverGetVersion(), "cuDriverGetVersion"))


def enumerate_devices() -> list:
    """[(ordinal, name, arch)] for every visible GPU, e.g. ``[(0, "NVIDIA H200", "sm_90")]``.

    Returns [] when cuda-python, the driver or a GPU is missing (see :func:`unavailable_reason`).
    """
    global _devices
    if _devices is not None:
        return list(_devices)
    _init()
    if _init_error:
        _devices = []
        return []
    api = cu()
    out = []
    count = int(check(api.cuDeviceGetCount(), "cuDeviceGetCount"))
    A = api.CUdevice_attribute
    for i in range(count):
        dev = check(api.cuDeviceGet(i), "cuDeviceGet")
        name = check(api.cuDeviceGetName(256, dev), "cuDeviceGetName")
        name = bytes(name).split(b"\0", 1)[0].decode(errors="replace").strip()
        major = int(check(api.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "attr"))
        minor = int(check(api.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "attr"))
        out.append((i, name, f"sm_{major}{minor}"))
    _devices = out
    return list(out)


def is_available() -> bool:
    return bool(enumerate_devices())


# ---------------------------------------------------------------------------
# Per-device state: primary context, default stream, pool, capture bookkeeping


class _DeviceState:
    def __init__(self, ordinal: int):
        api = cu()
        self.ordinal = ordinal
        self.dev = check(api.cuDeviceGet(ordinal), "cuDeviceGet")
        self.ctx = check(api.cuDevicePrimaryCtxRetain(self.dev), "cuDevicePrimaryCtxRetain")
        check(api.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        A = api.CUdevice_attribute

        def attr(a):
            return int(check(api.cuDeviceGetAttribute(a, self.dev), "cuDeviceGetAttribute"))

        self.sm_count = attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        try:
            self.pools = attr(A.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED) != 0
        except CudaError:
            self.pools = False
        if self.pools:
            try:
                pool = check(api.cuDeviceGetDefaultMemPool(self.dev), "cuDeviceGetDefaultMemPool")
                check(api.cuMemPoolSetAttribute(pool, api.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                                                api.cuuint64_t(_UINT64_MAX)), "cuMemPoolSetAttribute")
            except CudaError:
                pass  # the pool still works, it just returns memory to the OS at each synchronization
        # the device's default stream: blocking w.r.t. the legacy stream (CU_STREAM_DEFAULT = 0)
        self.default_stream = int(check(api.cuStreamCreate(0), "cuStreamCreate"))
        self.side_stream = 0  # non-blocking stream for allocations made during graph capture (lazy)
        self.current = None  # Stream object (stream.py) when set_stream() changed it
        self.capturing = 0
        self.capture_stream = 0
        self.capture_keep: list = []  # allocations made while capturing (kept alive by the graph)
        self.deferred: list = []  # frees requested while capturing
        self.rt_module = None  # runtime kernels (fill, strided copy)
        self.rt_funcs: dict = {}
        self.lock = threading.RLock()

    def make_current(self):
        check(cu().cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def stream(self) -> int:
        """Handle of the device's current stream."""
        s = self.current
        return s.handle if s is not None else self.default_stream


def state(device) -> _DeviceState:
    """The per-device state of a CUDA ``Device`` (or ordinal), creating its context on first use."""
    ordinal = device if isinstance(device, int) else getattr(device, "ordinal", -1)
    st = _states.get(ordinal)
    if st is not None:
        return st
    if isinstance(device, int) or getattr(device, "is_cuda", False):
        devs = enumerate_devices()
        if not devs:
            raise RuntimeError(f"no CUDA GPU is available ({unavailable_reason()}); use device='cpu'")
        if not 0 <= ordinal < len(devs):
            raise ValueError(f"CUDA device {ordinal} does not exist; {len(devs)} present")
    else:
        raise ValueError(f"{device!r} is not a CUDA device")
    with _lock:
        st = _states.get(ordinal)
        if st is None:
            st = _states[ordinal] = _DeviceState(ordinal)
            if not isinstance(device, int):
                device.context = int(st.ctx)
    return st


def current_stream(device) -> int:
    """Handle of ``device``'s current stream (its default stream unless changed)."""
    return state(device).stream()


def default_stream(device) -> int:
    return state(device).default_stream


# ---------------------------------------------------------------------------
# Memory


class DeviceAllocation:
    """Owns ``nbytes`` of device memory at ``ptr``; frees it when garbage collected."""

    __slots__ = ("ptr", "nbytes", "ordinal", "pooled", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, ordinal: int, pooled: bool):
        self.ptr = ptr
        self.nbytes = nbytes
        self.ordinal = ordinal
        self.pooled = pooled

    def free(self):
        ptr, self.ptr = self.ptr, 0
        if ptr:
            _free(self.ordinal, ptr, self.pooled)

    def __del__(self):
        try:
            self.free()
        except Exception:  # pragma: no cover - interpreter shutdown or a dead context
            pass

    def __repr__(self):
        return f"DeviceAllocation(ptr=0x{self.ptr:x}, nbytes={self.nbytes}, device=cuda:{self.ordinal})"


def _capture_mode_relaxed():
    """Context manager: let this thread make driver calls that thread-local capture would forbid."""
    api = cu()

    class _Relaxed:
        def __enter__(self):
            self.old = check(api.cuThreadExchangeStreamCaptureMode(
                api.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED), "cuThreadExchangeStreamCaptureMode")

        def __exit__(self, *exc):
            check(api.cuThreadExchangeStreamCaptureMode(self.old), "cuThreadExchangeStreamCaptureMode")

    return _Relaxed()


def alloc(device, nbytes: int):
    """Allocate ``nbytes`` on ``device``: returns ``(ptr, owner)``; the owner frees the memory on GC."""
    nbytes = int(nbytes)
    if nbytes <= 0:
        return 0, None
    st = state(device)
    api = cu()
    with st.lock:
        st.make_current()
        if st.capturing:
            # Outside the graph: a non-captured stream, synchronized so the memory is valid everywhere.
            with _capture_mode_relaxed():
                if st.pools:
                    if not st.side_stream:
                        st.side_stream = int(check(api.cuStreamCreate(api.CUstream_flags.CU_STREAM_NON_BLOCKING),
                                                   "cuStreamCreate"))
                    ptr = int(check(api.cuMemAllocAsync(nbytes, st.side_stream), "cuMemAllocAsync"))
                    check(api.cuStreamSynchronize(st.side_stream), "cuStreamSynchronize")
                else:
                    ptr = int(check(api.cuMemAlloc(nbytes), "cuMemAlloc"))
            owner = DeviceAllocation(ptr, nbytes, st.ordinal, st.pools)
            st.capture_keep.append(owner)
            return ptr, owner
        if st.pools:
            ptr = int(check(api.cuMemAllocAsync(nbytes, st.stream()), f"cuMemAllocAsync({nbytes} bytes)"))
        else:
            ptr = int(check(api.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes} bytes)"))
    return ptr, DeviceAllocation(ptr, nbytes, st.ordinal, st.pools)


def _free(ordinal: int, ptr: int, pooled: bool) -> None:
    if sys.is_finalizing():
        return
    st = _states.get(ordinal)
    if st is None:
        return
    with st.lock:
        if st.capturing:
            st.deferred.append((ptr, pooled))
            return
        _free_now(st, ptr, pooled)


def _free_now(st: _DeviceState, ptr: int, pooled: bool) -> None:
    api = cu()
    st.make_current()
    if pooled:
        # legacy NULL stream (0): ordered after all work on the context's blocking streams
        check(api.cuMemFreeAsync(ptr, 0), "cuMemFreeAsync")
    else:
        check(api.cuMemFree(ptr), "cuMemFree")


class PinnedBuffer:
    """Page-locked host memory (``cuMemHostAlloc``), freed on GC; view it with ``numpy.asarray``."""

    def __init__(self, nbytes: int):
        api = cu()
        devs = enumerate_devices()
        if not devs:
            raise RuntimeError(f"pinned memory needs a CUDA GPU ({unavailable_reason()})")
        state(0).make_current()
        self.nbytes = max(1, int(nbytes))
        flags = api.CU_MEMHOSTALLOC_PORTABLE  # pinned for every context
        self.ptr = int(check(api.cuMemHostAlloc(self.nbytes, flags), "cuMemHostAlloc"))

    @property
    def __array_interface__(self):
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False), "version": 3}

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if ptr and not sys.is_finalizing():
            try:
                cu().cuMemFreeHost(ptr)
            except Exception:  # pragma: no cover
                pass


def alloc_pinned(nbytes: int, dtype=np.uint8, shape=None) -> np.ndarray:
    """A numpy array in pinned host memory (fast, truly asynchronous host<->device copies)."""
    dt = np.dtype(dtype)
    if shape is None:
        shape = (int(nbytes) // dt.itemsize,)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    n = int(np.prod(shape)) * dt.itemsize
    raw = np.asarray(PinnedBuffer(n))  # .base keeps the PinnedBuffer alive
    return raw[:n].view(dt).reshape(shape)


# ---------------------------------------------------------------------------
# Runtime kernels: strided fill and copy (compiled once per arch with NVRTC)

RUNTIME_SOURCE = r"""
// simkit runtime kernels: fill with a byte pattern and copy between strided views.
#ifdef __CUDACC_RTC__
#define SK_RT_KERNEL(name, T) extern "C" __global__ void name(T a_)
#define SK_RT_ARGS const auto& a = a_;
#define SK_RT_LOOP(n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                           i += (long long)blockDim.x * gridDim.x)
#else
#define SK_RT_KERNEL(name, T) extern "C" void name(const T* a_)
#define SK_RT_ARGS const auto& a = *a_;
#define SK_RT_LOOP(n) for (long long i = 0; i < (n); ++i)
#endif

struct sk_rt_view {
    unsigned long long ptr;
    long long shape[4];
    long long strides[4];  // bytes
    int ndim;
    int pad_;
};

struct sk_rt_fill_args {
    sk_rt_view dst;
    long long n;
    int itemsize;
    int unit;  // 4: copy 32-bit words (aligned), 1: bytes
    unsigned char pattern[256];
};

struct sk_rt_copy_args {
    sk_rt_view dst;
    sk_rt_view src;
    long long n;
    int itemsize;
    int unit;
};

static_assert(sizeof(sk_rt_view) == 80, "view layout");
static_assert(sizeof(sk_rt_fill_args) == 352, "fill layout");
static_assert(sizeof(sk_rt_copy_args) == 176, "copy layout");

#ifdef __CUDACC_RTC__
__device__
#endif
inline unsigned char* sk_rt_at(const sk_rt_view& v, long long i) {
    long long off = 0;
    for (int d = v.ndim - 1; d >= 0; --d) {
        long long k = i % v.shape[d];
        i /= v.shape[d];
        off += k * v.strides[d];
    }
    return (unsigned char*)v.ptr + off;
}

SK_RT_KERNEL(sk_rt_fill, sk_rt_fill_args) {
    SK_RT_ARGS
    SK_RT_LOOP(a.n) {
        unsigned char* p = sk_rt_at(a.dst, i);
        if (a.unit == 4) {
            for (int b = 0; b < a.itemsize; b += 4)
                *(unsigned int*)(p + b) = *(const unsigned int*)(a.pattern + b);
        } else {
            for (int b = 0; b < a.itemsize; ++b) p[b] = a.pattern[b];
        }
    }
}

SK_RT_KERNEL(sk_rt_copy, sk_rt_copy_args) {
    SK_RT_ARGS
    SK_RT_LOOP(a.n) {
        unsigned char* d = sk_rt_at(a.dst, i);
        const unsigned char* s = sk_rt_at(a.src, i);
        if (a.unit == 4) {
            for (int b = 0; b < a.itemsize; b += 4) *(unsigned int*)(d + b) = *(const unsigned int*)(s + b);
        } else {
            for (int b = 0; b < a.itemsize; ++b) d[b] = s[b];
        }
    }
}
"""

_VIEW = _struct.Struct("<Q4q4qii")
_FILL_TAIL = _struct.Struct("<qii256s")
_COPY_TAIL = _struct.Struct("<qii")
PATTERN_MAX = 256


def _view_bytes(ptr: int, shape, strides) -> bytes:
    nd = len(shape)
    if not 1 <= nd <= 4:
        raise ValueError(f"strided views have 1 to 4 dimensions, got {nd}")
    return _VIEW.pack(int(ptr), *(list(shape) + [1] * (4 - nd)), *(list(strides) + [0] * (4 - nd)), nd, 0)


def _rt_function(st: _DeviceState, name: str):
    f = st.rt_funcs.get(name)
    if f is None:
        with st.lock:
            if st.rt_module is None:
                from . import module as cuda_module

                st.rt_module = cuda_module.load_module(st.ordinal, RUNTIME_SOURCE, "simkit_runtime")
            f = st.rt_funcs[name] = check(cu().cuModuleGetFunction(st.rt_module, name.encode()),
                                          f"cuModuleGetFunction({name})")
    return f


def _launch_rt(st: _DeviceState, name: str, params: bytes, n: int, stream: int) -> None:
    api = cu()
    f = _rt_function(st, name)
    buf = ctypes.create_string_buffer(params, len(params))
    argv = (ctypes.c_void_p * 1)(ctypes.addressof(buf))
    block = 256
    grid = max(1, min((n + block - 1) // block, GRID_CAP))
    st.make_current()
    check(api.cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, stream, ctypes.addressof(argv), 0),
          f"cuLaunchKernel({name})")


def _unit(itemsize: int, *ptrs_and_strides) -> int:
    if itemsize % 4:
        return 1
    return 4 if all(int(v) % 4 == 0 for v in ptrs_and_strides) else 1


def _strided_fill(st, ptr, shape, strides, itemsize, pattern: bytes, stream) -> None:
    n = int(np.prod(shape)) if len(shape) else 1
    if n == 0:
        return
    unit = _unit(itemsize, ptr, *strides)
    params = _view_bytes(ptr, shape, strides) + _FILL_TAIL.pack(n, itemsize, unit, pattern.ljust(PATTERN_MAX, b"\0"))
    _launch_rt(st, "sk_rt_fill", params, n, stream)


def _strided_copy(st, dst, src, n, itemsize, stream) -> None:
    """dst/src: (ptr, shape, strides) on the same device; copies ``n`` elements in row-major order."""
    if n == 0:
        return
    unit = _unit(itemsize, dst[0], src[0], *dst[2], *src[2])
    params = _view_bytes(*dst) + _view_bytes(*src) + _COPY_TAIL.pack(n, itemsize, unit)
    _launch_rt(st, "sk_rt_copy", params, n, stream)


# ---------------------------------------------------------------------------
# memset / fill


def _contig_strides(shape, itemsize) -> tuple:
    out, s = [], itemsize
    for d in reversed(shape):
        out.append(s)
        s *= d
    return tuple(reversed(out))


def _is_contiguous(arr) -> bool:
    return tuple(arr.strides) == _contig_strides(arr.shape, arr.itemsize)


def _no_capture(st, what: str):
    if st.capturing:
        raise RuntimeError(f"{what} is not possible while a CUDA graph is being captured on cuda:{st.ordinal} "
                           "(it needs host memory or a synchronization); do it before capture_begin()")


def memset(arr, value: int = 0) -> None:
    """Set every byte of ``arr``'s elements to ``value`` (0-255) on its device's current stream."""
    value = int(value) & 0xFF
    if arr.size == 0:
        return
    st = state(arr.device)
    api = cu()
    with st.lock:
        st.make_current()
        s = st.stream()
        if _is_contiguous(arr):
            check(api.cuMemsetD8Async(arr.ptr, value, arr.size * arr.itemsize, s), "cuMemsetD8Async")
        elif arr.itemsize <= PATTERN_MAX:
            _strided_fill(st, arr.ptr, arr.shape, arr.strides, arr.itemsize, bytes([value]) * arr.itemsize, s)
        else:
            _staged_fill(st, arr, bytes([value]) * arr.itemsize, s)


def fill_pattern(dtype, value, itemsize: int) -> bytes:
    """Bytes of one element of ``dtype`` holding ``value`` (a scalar broadcasts over vector/matrix components)."""
    if T.is_struct(dtype):
        if isinstance(value, dtype):
            b = T.pack_value(dtype, value)
        elif np.ndim(value) == 0 and value == 0:
            b = bytes(itemsize)
        else:
            raise TypeError(f"fill value for a {dtype.__name__} array must be a {dtype.__name__} instance or 0")
    elif T.is_value(dtype):
        b = np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype=dtype._dtype._np), tuple(dtype._shape)))
        b = b.tobytes()
    elif T.is_scalar(dtype):
        b = np.asarray(value, dtype=dtype._np).reshape(()).tobytes()
    else:
        raise TypeError(f"cannot fill an array of {T.type_name(dtype)}")
    if len(b) != itemsize:
        raise ValueError(f"fill value has {len(b)} bytes, elements have {itemsize}")
    return b


def fill(arr, value) -> None:
    """Set every element of ``arr`` to ``value`` (scalar, vector/matrix value, or struct instance)."""
    if arr.size == 0:
        return
    pattern = fill_pattern(arr.dtype, value, arr.itemsize)
    st = state(arr.device)
    api = cu()
    with st.lock:
        st.make_current()
        s = st.stream()
        contiguous = _is_contiguous(arr)
        nbytes = arr.size * arr.itemsize
        if contiguous:
            if pattern == pattern[:1] * len(pattern):
                check(api.cuMemsetD8Async(arr.ptr, pattern[0], nbytes, s), "cuMemsetD8Async")
                return
            if len(pattern) % 4 == 0 and arr.ptr % 4 == 0 and pattern == pattern[:4] * (len(pattern) // 4):
                word = int.from_bytes(pattern[:4], "little")
                check(api.cuMemsetD32Async(arr.ptr, word, nbytes // 4, s), "cuMemsetD32Async")
                return
            if len(pattern) % 2 == 0 and arr.ptr % 2 == 0 and pattern == pattern[:2] * (len(pattern) // 2):
                half = int.from_bytes(pattern[:2], "little")
                check(api.cuMemsetD16Async(arr.ptr, half, nbytes // 2, s), "cuMemsetD16Async")
                return
        if arr.itemsize <= PATTERN_MAX:
            _strided_fill(st, arr.ptr, arr.shape, arr.strides, arr.itemsize, pattern, s)
        else:
            _staged_fill(st, arr, pattern, s)


def _staged_fill(st, arr, pattern: bytes, s: int) -> None:
    """Large elements: build the data on the host and copy it (into a temporary when strided)."""
    _no_capture(st, "filling an array with elements larger than 256 bytes")
    host = np.frombuffer(pattern * arr.size, dtype=np.uint8)
    _htod(st, arr.ptr, arr.shape, arr.strides, arr.itemsize, host, s)


# ---------------------------------------------------------------------------
# Copies


def _nbytes(arr) -> int:
    return arr.size * arr.itemsize


def _htod(st, ptr, shape, strides, itemsize, host: np.ndarray, s: int) -> None:
    api = cu()
    n = int(np.prod(shape)) if len(shape) else 1
    nbytes = n * itemsize
    if host.nbytes != nbytes:
        raise ValueError(f"copy: host data has {host.nbytes} bytes, the device array {nbytes}")
    if not host.flags.c_contiguous:
        host = np.ascontiguousarray(host)
    if nbytes == 0:
        return
    _no_capture(st, "copying from host memory")
    st.make_current()
    if tuple(strides) == _contig_strides(shape, itemsize):
        check(api.cuMemcpyHtoDAsync(ptr, host.ctypes.data, nbytes, s), "cuMemcpyHtoDAsync")
        return
    tmp_ptr, tmp_owner = alloc(st.ordinal, nbytes)
    check(api.cuMemcpyHtoDAsync(tmp_ptr, host.ctypes.data, nbytes, s), "cuMemcpyHtoDAsync")
    _strided_copy(st, (ptr, shape, strides), (tmp_ptr, (n,), (itemsize,)), n, itemsize, s)
    del tmp_owner  # freed on the legacy stream: after the copy kernel


def _dtoh(st, host: np.ndarray, ptr, shape, strides, itemsize, s: int) -> None:
    api = cu()
    n = int(np.prod(shape)) if len(shape) else 1
    nbytes = n * itemsize
    if host.nbytes != nbytes:
        raise ValueError(f"copy: host buffer has {host.nbytes} bytes, the device array {nbytes}")
    if not host.flags.c_contiguous:
        raise ValueError("copy: the host buffer must be C-contiguous")
    if nbytes == 0:
        return
    _no_capture(st, "copying to host memory")
    st.make_current()
    tmp_owner = None
    if tuple(strides) != _contig_strides(shape, itemsize):
        tmp_ptr, tmp_owner = alloc(st.ordinal, nbytes)
        _strided_copy(st, (tmp_ptr, (n,), (itemsize,)), (ptr, shape, strides), n, itemsize, s)
        ptr = tmp_ptr
    check(api.cuMemcpyDtoHAsync(host.ctypes.data, ptr, nbytes, s), "cuMemcpyDtoHAsync")
    check(api.cuStreamSynchronize(s), "cuStreamSynchronize")
    del tmp_owner


def copy_htod(arr, host: np.ndarray) -> None:
    """Copy host data (``host.nbytes`` must equal the array's bytes) into the CUDA array ``arr``."""
    st = state(arr.device)
    with st.lock:
        _htod(st, arr.ptr, arr.shape, arr.strides, arr.itemsize, np.asarray(host), st.stream())


def copy_dtoh(host: np.ndarray, arr) -> None:
    """Copy the CUDA array ``arr`` into the C-contiguous numpy array ``host``; returns when done."""
    st = state(arr.device)
    with st.lock:
        _dtoh(st, host, arr.ptr, arr.shape, arr.strides, arr.itemsize, st.stream())


def _host_view(arr) -> np.ndarray:
    """The numpy array of a CPU simkit array (elements' trailing dims included)."""
    return arr._np


def copy(dest, src) -> None:
    """Copy ``src`` into ``dest`` (same number of elements and element size) between any two devices."""
    n = src.size
    if dest.size != n:
        raise ValueError(f"copy: sizes differ ({dest.size} vs {n})")
    if dest.itemsize != src.itemsize:
        raise ValueError("copy: element types differ in size")
    if n == 0:
        return
    itemsize = src.itemsize
    if dest.device.is_cpu and src.device.is_cpu:
        _host_view(dest)[...] = _host_view(src).reshape(_host_view(dest).shape)
        return
    if src.device.is_cpu:  # host -> device
        copy_htod(dest, np.ascontiguousarray(_host_view(src)))
        return
    if dest.device.is_cpu:  # device -> host
        dv = _host_view(dest)
        if dv.flags.c_contiguous:
            copy_dtoh(dv, src)
        else:
            tmp = np.empty(dv.shape, dtype=dv.dtype)
            copy_dtoh(tmp, src)
            dv[...] = tmp
        return
    sd, ss = state(dest.device), state(src.device)
    api = cu()
    d_contig, s_contig = _is_contiguous(dest), _is_contiguous(src)
    if sd is ss:
        with sd.lock:
            sd.make_current()
            s = sd.stream()
            if d_contig and s_contig:
                check(api.cuMemcpyDtoDAsync(dest.ptr, src.ptr, n * itemsize, s), "cuMemcpyDtoDAsync")
            else:
                _strided_copy(sd, (dest.ptr, dest.shape, dest.strides), (src.ptr, src.shape, src.strides),
                              n, itemsize, s)
        return
    # peer copy between two GPUs
    if sd.capturing or ss.capturing:
        raise RuntimeError("copies between two GPUs are not supported during CUDA graph capture")
    nbytes = n * itemsize
    src_ptr, src_tmp = src.ptr, None
    if not s_contig:  # gather on the source device first
        src_ptr, src_tmp = alloc(ss.ordinal, nbytes)
        with ss.lock:
            _strided_copy(ss, (src_ptr, (n,), (itemsize,)), (src.ptr, src.shape, src.strides), n, itemsize,
                          ss.stream())
    dst_ptr, dst_tmp = dest.ptr, None
    if not d_contig:
        dst_ptr, dst_tmp = alloc(sd.ordinal, nbytes)
    # destination stream waits for the source's current stream; the source stream waits for the copy
    _stream_wait_stream(sd, sd.stream(), ss, ss.stream())
    sd.make_current()
    check(api.cuMemcpyPeerAsync(dst_ptr, sd.ctx, src_ptr, ss.ctx, nbytes, sd.stream()), "cuMemcpyPeerAsync")
    if dst_tmp is not None:
        _strided_copy(sd, (dest.ptr, dest.shape, dest.strides), (dst_ptr, (n,), (itemsize,)), n, itemsize,
                      sd.stream())
    _stream_wait_stream(ss, ss.stream(), sd, sd.stream())
    del src_tmp, dst_tmp


def _stream_wait_stream(waiter_st, waiter: int, other_st, other: int) -> None:
    """Make stream ``waiter`` wait for the work issued so far on ``other`` (any devices)."""
    api = cu()
    other_st.make_current()
    ev = check(api.cuEventCreate(api.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
    try:
        check(api.cuEventRecord(ev, other), "cuEventRecord")
        waiter_st.make_current()
        check(api.cuStreamWaitEvent(waiter, ev, 0), "cuStreamWaitEvent")
    finally:
        check(api.cuEventDestroy(ev), "cuEventDestroy")  # released once the wait is satisfied


# ---------------------------------------------------------------------------
# Synchronization


def synchronize_device(device=None) -> None:
    """Wait for all work on one CUDA device (every stream of its context)."""
    st = state(device)
    _no_capture(st, "synchronizing the device")
    st.make_current()
    check(cu().cuCtxSynchronize(), f"cuCtxSynchronize(cuda:{st.ordinal})")


def synchronize_all() -> None:
    """Wait for all work on every CUDA device simkit has used."""
    for ordinal in sorted(_states):
        synchronize_device(ordinal)


def synchronize_stream_handle(device, handle: int) -> None:
    st = state(device)
    st.make_current()
    check(cu().cuStreamSynchronize(handle), "cuStreamSynchronize")


# ---------------------------------------------------------------------------
# Capture bookkeeping (used by stream.py)


def _capture_started(st: _DeviceState, stream: int) -> None:
    with st.lock:
        st.capturing += 1
        st.capture_stream = stream


def _capture_finished(st: _DeviceState) -> tuple:
    """Returns (allocations made during capture, frees deferred during capture)."""
    with st.lock:
        st.capturing = max(0, st.capturing - 1)
        keep, deferred = st.capture_keep, st.deferred
        if st.capturing == 0:
            st.capture_keep, st.deferred = [], []
            st.capture_stream = 0
        else:  # nested/concurrent capture still active: keep collecting
            keep, deferred = list(keep), []
        return keep, deferred


def release_deferred(ordinal: int, deferred: list) -> None:
    """Free memory whose release was postponed (called when a captured graph is destroyed)."""
    st = _states.get(ordinal)
    if st is None or sys.is_finalizing():
        return
    with st.lock:
        if st.capturing:
            st.deferred.extend(deferred)
            return
        for ptr, pooled in deferred:
            try:
                _free_now(st, ptr, pooled)
            except Exception:  # pragma: no cover
                pass
