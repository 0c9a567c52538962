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
* Each device has a *default stream* created by simkit: a real stream, so it can
  be captured into graphs (the legacy NULL stream cannot), and blocking with
  respect to the legacy stream (see frees below). Work goes to
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
* Destructors (memory, streams, events, graphs) keep the driver API and device
  state they were created with and push/pop the context, so they can run from
  the garbage collector between any two driver calls of other code.
* Fills and copies (``memset``, ``fill``, ``copy_htod``, ``copy_dtoh``, ``copy``)
  live in ``memops.py`` and are re-exported here.
* This layer cannot import ``simkit.runtime``: the runtime installs
  :func:`set_runtime_hooks` so that ``stream.py`` can resolve "cuda:0".
"""
from __future__ import annotations

import sys
import threading

import numpy as np


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


# Hooks installed by simkit.runtime (this layer may not import it): resolve a device identifier
# ("cuda:0", None for the default device, a Device) and make a device the default inside a with-block.
_runtime_get_device = None
_runtime_scoped_device = None


def set_runtime_hooks(get_device, scoped_device=None) -> None:
    """Called once by ``simkit.runtime.device``: ``get_device(ident) -> Device`` and ``ScopedDevice``."""
    global _runtime_get_device, _runtime_scoped_device
    _runtime_get_device, _runtime_scoped_device = get_device, scoped_device


def resolve_device(ident=None):
    """The runtime Device for ``ident`` (a Device passes through)."""
    if _runtime_get_device is not None:
        return _runtime_get_device(ident)
    if hasattr(ident, "ordinal") and hasattr(ident, "is_cuda"):
        return ident
    raise RuntimeError("device names cannot be resolved before simkit.runtime is imported "
                       "(import simkit first, or pass a Device)")


# ---------------------------------------------------------------------------
# Per-device state: primary context, default stream, pool, capture bookkeeping


class _DeviceState:
    def __init__(self, ordinal: int):
        api = self.api = cu()  # bound: objects freed late still talk to the driver that made them
        self.ordinal = ordinal
        self.dev = check(api.cuDeviceGet(ordinal), "cuDeviceGet")
        self.ctx = check(api.cuDevicePrimaryCtxRetain(self.dev), "cuDevicePrimaryCtxRetain")
        check(api.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        A = api.CUdevice_attribute

        def attr(a):
            return int(check(api.cuDeviceGetAttribute(a, self.dev), "cuDeviceGetAttribute"))

        self.sm_count = attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        try:
            self.max_shared_memory_per_block = attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
        except CudaError:
            self.max_shared_memory_per_block = 48 * 1024  # (every GPU since Kepler)
        try:  # threads one SM holds at once: a launch of sm_count x this fills the GPU
            self.resident_threads = attr(A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
        except CudaError:
            self.resident_threads = 2048
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
        self.rt_funcs: dict = {}  # their functions, and conditional.py's setter kernel, by name
        self.scratch: dict = {}  # stream handle -> DeviceAllocation (adjoint loop stacks)
        self.launcher = False  # native_launch.Launcher once looked up (None: launches through cuda-python)
        self.lock = threading.RLock()
        self.allocator = None  # a user's allocator of this device's memory (allocators.py), None: built-in

    def make_current(self):
        check(self.api.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def pushed(self):
        """Context manager making this context current and restoring the previous one after (for
        destructors, which may run between any two driver calls of other code)."""
        return _Pushed(self)

    def stream(self) -> int:
        """Handle of the device's current stream."""
        s = self.current
        return s.handle if s is not None else self.default_stream


class _Pushed:
    __slots__ = ("st",)

    def __init__(self, st):
        self.st = st

    def __enter__(self):
        check(self.st.api.cuCtxPushCurrent(self.st.ctx), "cuCtxPushCurrent")

    def __exit__(self, *exc):
        check(self.st.api.cuCtxPopCurrent(), "cuCtxPopCurrent")
        return False


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

    __slots__ = ("ptr", "nbytes", "state", "pooled", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, st: _DeviceState, pooled: bool):
        self.ptr = ptr
        self.nbytes = nbytes
        self.state = st
        self.pooled = pooled

    @property
    def ordinal(self) -> int:
        return self.state.ordinal

    def free(self):
        ptr, self.ptr = self.ptr, 0
        if ptr:
            _free(self.state, ptr, self.pooled)

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


def alloc(device, nbytes: int, stream: int | None = None):
    """Allocate ``nbytes`` on ``device``: returns ``(ptr, owner)``; the owner frees the memory on GC.

    The allocation is ordered on ``stream`` (default: the device's current stream); use it there, or after
    synchronizing with that stream.
    """
    nbytes = int(nbytes)
    if nbytes <= 0:
        return 0, None
    st = state(device)
    api = cu()
    with st.lock:
        st.make_current()
        if st.allocator is not None:  # a user's allocator (allocators.py), outside any capture
            from .allocators import allocate

            if not st.capturing:
                return allocate(st, st.allocator, nbytes)
            with _capture_mode_relaxed():
                ptr, owner = allocate(st, st.allocator, nbytes)
            st.capture_keep.append(owner)
            return ptr, owner
        if st.capturing:
            # Outside the graph: a non-captured stream, synchronized so the memory is valid everywhere.
            with _capture_mode_relaxed():
                if st.pools:
                    if not st.side_stream:
                        st.side_stream = int(check(api.cuStreamCreate(int(api.CUstream_flags.CU_STREAM_NON_BLOCKING)),
                                                   "cuStreamCreate"))
                    ptr = int(check(api.cuMemAllocAsync(nbytes, st.side_stream), "cuMemAllocAsync"))
                    check(api.cuStreamSynchronize(st.side_stream), "cuStreamSynchronize")
                else:
                    ptr = int(check(api.cuMemAlloc(nbytes), "cuMemAlloc"))
            owner = DeviceAllocation(ptr, nbytes, st, st.pools)
            st.capture_keep.append(owner)
            return ptr, owner
        if st.pools:
            s = st.stream() if stream is None else stream
            ptr = int(check(api.cuMemAllocAsync(nbytes, s), f"cuMemAllocAsync({nbytes} bytes)"))
        else:
            ptr = int(check(api.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes} bytes)"))
    return ptr, DeviceAllocation(ptr, nbytes, st, st.pools)


def scratch(device, stream: int, nbytes: int) -> int:
    """A scratch buffer of at least ``nbytes`` for work on ``stream`` (reused by later calls on that stream)."""
    st = state(device)
    with st.lock:
        cur = st.scratch.get(stream)
        if cur is None or cur.nbytes < nbytes:
            cur = None  # the old buffer is freed after the work already issued
            _ptr, cur = alloc(st.ordinal, max(int(nbytes), 1), stream)
            st.scratch[stream] = cur
        return cur.ptr


def _free(st: _DeviceState, ptr: int, pooled: bool) -> None:
    if sys.is_finalizing():
        return
    with st.lock:
        if st.capturing:
            st.deferred.append((ptr, pooled))
            return
        _free_now(st, ptr, pooled)


def _free_now(st: _DeviceState, ptr: int, pooled) -> None:
    """Free ``ptr``: ``pooled`` says how (True: to the pool; False: cuMemFree; a function: it frees, a user's
    allocator's deallocate: allocators.py)."""
    api = st.api
    with st.pushed():  # called from destructors: leave the thread's current context as it was
        if callable(pooled):
            pooled()
        elif pooled:
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
        self._api = api
        self.nbytes = max(1, int(nbytes))
        flags = int(api.CU_MEMHOSTALLOC_PORTABLE)  # pinned for every context
        self.ptr = int(check(api.cuMemHostAlloc(self.nbytes, flags), "cuMemHostAlloc"))

    @property
    def __array_interface__(self):
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False), "version": 3}

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if ptr and not sys.is_finalizing():
            try:
                # an asynchronous copy from or to this memory may still be queued: let every device finish
                # first (a destructor: the thread's current context is left as it was; never during a
                # capture, which a synchronization would end, and which copies no host memory)
                states = list(_states.values())
                if not any(st.capturing for st in states):
                    for st in states:
                        with st.pushed():
                            st.api.cuCtxSynchronize()
            except Exception:  # pragma: no cover - a context already lost: free the memory all the same
                pass
            try:
                self._api.cuMemFreeHost(ptr)
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
# Synchronization


def _no_capture(st, what: str):
    if st.capturing:
        raise RuntimeError(f"{what} is not possible while a CUDA graph is being captured on cuda:{st.ordinal} "
                           "(it needs host memory or a synchronization); do it before capture_begin()")


def refuse_sync_in_capture(st, what: str) -> None:
    """Warp's error for a synchronization (``what``: "device", "stream", "event") during a graph capture."""
    if st.capturing:
        raise RuntimeError(f"Cannot synchronize {what} while a CUDA graph is being captured on cuda:{st.ordinal} "
                           "(the capture would be invalidated); synchronize before capture_begin() or after "
                           "capture_end()")


def synchronize_device(device=None) -> None:
    """Wait for all work on one CUDA device (every stream of its context)."""
    st = state(device)
    refuse_sync_in_capture(st, "device")
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


def release_deferred(st: _DeviceState, deferred: list) -> None:
    """Free memory whose release was postponed (called when a captured graph is destroyed)."""
    if not deferred or sys.is_finalizing():
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


# ---------------------------------------------------------------------------
# Fills and copies live in memops.py; they are re-exported here (the interface array.py uses).

_MEMOPS = ("memset", "fill", "fill_pattern", "copy", "copy_htod", "copy_dtoh", "write_words", "RUNTIME_SOURCE",
           "SNAPSHOT")


def __getattr__(name):
    if name in _MEMOPS:
        from . import memops

        value = getattr(memops, name)
        globals()[name] = value  # later lookups are plain attribute reads
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

