"""Fills and copies of CUDA arrays (re-exported by ``driver``: ``memset``, ``fill``, ``copy_htod``,
``copy_dtoh``, ``copy``).

Contiguous data uses the driver's memset/memcpy; patterns memset cannot write and
strided (non-contiguous) views use two small runtime kernels (``RUNTIME_SOURCE``),
compiled once per architecture with NVRTC. Host copies of strided device views are
staged through a contiguous temporary on the device.
"""
from __future__ import annotations

import ctypes
import struct as _struct

import numpy as np

from ... import types as T
from . import timing
from .driver import GRID_CAP, PinnedBuffer, _capture_mode_relaxed, _DeviceState, _no_capture, alloc, check, cu, state

# ---------------------------------------------------------------------------
# Runtime kernels: strided fill and copy (compiled once per arch with NVRTC)

RUNTIME_SOURCE = r"""
// simkit runtime kernels: fill with a byte pattern and copy between strided views.
// (NVRTC; tests compile it for the host with cuda_emu.h included first, see tests/cuda_emulator.py)
#define SK_RT_KERNEL(name, T) extern "C" __global__ void name(T a)
#define SK_RT_LOOP(n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
                           i += (long long)blockDim.x * gridDim.x)

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

__device__ inline unsigned char* sk_rt_at(const sk_rt_view& v, long long i) {
    long long off = 0;
    for (int d = v.ndim - 1; d >= 0; --d) {
        long long k = i % v.shape[d];
        i /= v.shape[d];
        off += k * v.strides[d];
    }
    return (unsigned char*)v.ptr + off;
}

SK_RT_KERNEL(sk_rt_fill, sk_rt_fill_args) {
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
    _op(st, stream, timing.TIMING_KERNEL_BUILTIN, f"builtin kernel {name}", api.cuLaunchKernel, f, grid, 1, 1, block, 1,
        1, 0, stream, ctypes.addressof(argv), 0)


def _op(st: _DeviceState, stream: int, flag: int, name: str, fn, *args) -> None:
    """``fn(*args)`` (a driver call on ``stream``), checked; timed as activity ``name`` while timing is on."""
    t = timing.start(st, stream, flag, name) if timing.FILTER else None
    check(fn(*args), f"{fn.__name__} ({name})")
    if t is not None:
        timing.stop(t)


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
            _op(st, s, timing.TIMING_MEMSET, "memset", api.cuMemsetD8Async, arr.ptr, value, arr.size * arr.itemsize, s)
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
                _op(st, s, timing.TIMING_MEMSET, "memset", api.cuMemsetD8Async, arr.ptr, pattern[0], nbytes, s)
                return
            if len(pattern) % 4 == 0 and arr.ptr % 4 == 0 and pattern == pattern[:4] * (len(pattern) // 4):
                word = int.from_bytes(pattern[:4], "little")
                _op(st, s, timing.TIMING_MEMSET, "memset", api.cuMemsetD32Async, arr.ptr, word, nbytes // 4, s)
                return
            if len(pattern) % 2 == 0 and arr.ptr % 2 == 0 and pattern == pattern[:2] * (len(pattern) // 2):
                half = int.from_bytes(pattern[:2], "little")
                _op(st, s, timing.TIMING_MEMSET, "memset", api.cuMemsetD16Async, arr.ptr, half, nbytes // 2, s)
                return
        if arr.itemsize <= PATTERN_MAX:
            _strided_fill(st, arr.ptr, arr.shape, arr.strides, arr.itemsize, pattern, s)
        else:
            _staged_fill(st, arr, pattern, s)


def _staged_fill(st, arr, pattern: bytes, s: int) -> None:
    """Large elements: build the data on the host and copy it (into a temporary when strided)."""
    host = np.frombuffer(pattern * arr.size, dtype=np.uint8)
    _htod(st, arr.ptr, arr.shape, arr.strides, arr.itemsize, host, s, SNAPSHOT)


# ---------------------------------------------------------------------------
# Copies


def _nbytes(arr) -> int:
    return arr.size * arr.itemsize


SNAPSHOT = "snapshot"  # ``_htod``'s ``source`` for data that a captured graph re-uploads on every replay


def _host_for_capture(st, host: np.ndarray, source) -> np.ndarray:
    """Host memory that a CUDA graph being captured may copy from on every replay.

    A graph's copy reads its host memory when the graph runs, so the memory must be page-locked and
    outlive the graph. ``source`` is a pinned simkit array whose memory ``host`` is: it is read live,
    as in Warp (the graph keeps it alive). :data:`SNAPSHOT` (an array made from data, a fill): the data
    is copied into page-locked memory that the graph keeps, so every replay writes it again. Any other
    host memory raises: a replay would otherwise read whatever is there by then."""
    if source is SNAPSHOT:
        with _capture_mode_relaxed():  # (cuMemHostAlloc is not a stream operation)
            buf = PinnedBuffer(host.nbytes)
        staged = np.asarray(buf)[:host.nbytes]
        staged[...] = host.reshape(-1).view(np.uint8)
        st.capture_keep.append(buf)
        return staged
    if source is None:
        raise RuntimeError(f"copying from pageable host memory is not possible while a CUDA graph is being "
                           f"captured on cuda:{st.ordinal} (a replay reads the host memory when it runs): copy "
                           "from a pinned array (sk.array(..., pinned=True)), or before capture_begin()")
    st.capture_keep.append(source)
    return host


def _htod(st, ptr, shape, strides, itemsize, host: np.ndarray, s: int, source=None) -> None:
    api = cu()
    n = int(np.prod(shape)) if len(shape) else 1
    nbytes = n * itemsize
    if host.nbytes != nbytes:
        raise ValueError(f"copy: host data has {host.nbytes} bytes, the device array {nbytes}")
    if not host.flags.c_contiguous:
        host = np.ascontiguousarray(host)
    if nbytes == 0:
        return
    if st.capturing:
        host = _host_for_capture(st, host, source)
    st.make_current()
    if tuple(strides) == _contig_strides(shape, itemsize):
        _op(st, s, timing.TIMING_MEMCPY, "memcpy HtoD", api.cuMemcpyHtoDAsync, ptr, host.ctypes.data, nbytes, s)
        return
    tmp_ptr, tmp_owner = alloc(st.ordinal, nbytes)
    _op(st, s, timing.TIMING_MEMCPY, "memcpy HtoD", api.cuMemcpyHtoDAsync, tmp_ptr, host.ctypes.data, nbytes, s)
    _strided_copy(st, (ptr, shape, strides), (tmp_ptr, (n,), (itemsize,)), n, itemsize, s)
    del tmp_owner  # freed on the legacy stream: after the copy kernel


def _dtoh(st, host: np.ndarray, ptr, shape, strides, itemsize, s: int, sync: bool = True) -> None:
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
    _op(st, s, timing.TIMING_MEMCPY, "memcpy DtoH", api.cuMemcpyDtoHAsync, host.ctypes.data, ptr, nbytes, s)
    if sync:
        check(api.cuStreamSynchronize(s), "cuStreamSynchronize")
    del tmp_owner  # (freed on the legacy stream: after the copy)


def copy_htod(arr, host: np.ndarray, source=None) -> None:
    """Copy host data (``host.nbytes`` must equal the array's bytes) into the CUDA array ``arr``.
    ``source``: what a CUDA graph being captured reads on replay (see :func:`_host_for_capture`)."""
    st = state(arr.device)
    with st.lock:
        _htod(st, arr.ptr, arr.shape, arr.strides, arr.itemsize, np.asarray(host), st.stream(), source)


WRITE_WORDS_MAX = 256  # bytes


def write_words(arr, data: bytes) -> None:
    """Write ``data`` (a multiple of 4 bytes, at most WRITE_WORDS_MAX) to the start of the contiguous CUDA
    array ``arr`` with one 32-bit memset per word, on the current stream: unlike a copy from host memory,
    this may be captured into a CUDA graph, which then writes these values on every launch (the
    descriptors of spatial structures rebuilt inside a captured step)."""
    if len(data) % 4 or len(data) > WRITE_WORDS_MAX or len(data) > _nbytes(arr) or arr.ptr % 4:
        raise ValueError(f"write_words: {len(data)} bytes into a {_nbytes(arr)}-byte array at 0x{arr.ptr:x}")
    st = state(arr.device)
    api = cu()
    with st.lock:
        st.make_current()
        s = st.stream()
        for k, word in enumerate(np.frombuffer(data, dtype=np.uint32).tolist()):
            check(api.cuMemsetD32Async(arr.ptr + 4 * k, word, 1, s), "cuMemsetD32Async")


def copy_dtoh(host: np.ndarray, arr, sync: bool = True) -> None:
    """Copy the CUDA array ``arr`` into the C-contiguous numpy array ``host``; returns when done, or at once
    with ``sync=False`` (pinned ``host`` memory: the copy completes in order on the device's current stream)."""
    st = state(arr.device)
    with st.lock:
        _dtoh(st, host, arr.ptr, arr.shape, arr.strides, arr.itemsize, st.stream(), sync)


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
        sv = _host_view(src)
        # pinned memory can be copied from during a graph capture: replays read it live, as in Warp
        copy_htod(dest, np.ascontiguousarray(sv), src if src.pinned and sv.flags.c_contiguous else None)
        return
    if dest.device.is_cpu:  # device -> host
        dv = _host_view(dest)
        if dv.flags.c_contiguous:
            copy_dtoh(dv, src, sync=not dest.pinned)  # into pinned memory: asynchronous, as in Warp
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
                _op(sd, s, timing.TIMING_MEMCPY, "memcpy DtoD", api.cuMemcpyDtoDAsync, dest.ptr, src.ptr, n * itemsize, s)
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
    _op(sd, sd.stream(), timing.TIMING_MEMCPY, "memcpy PtoP", api.cuMemcpyPeerAsync, dst_ptr, sd.ctx, src_ptr, ss.ctx,
        nbytes, sd.stream())
    if dst_tmp is not None:
        _strided_copy(sd, (dest.ptr, dest.shape, dest.strides), (dst_ptr, (n,), (itemsize,)), n, itemsize,
                      sd.stream())
    _stream_wait_stream(ss, ss.stream(), sd, sd.stream())
    del src_tmp, dst_tmp


def _stream_wait_stream(waiter_st, waiter: int, other_st, other: int) -> None:
    """Make stream ``waiter`` wait for the work issued so far on ``other`` (any devices)."""
    api = cu()
    other_st.make_current()
    ev = check(api.cuEventCreate(int(api.CUevent_flags.CU_EVENT_DISABLE_TIMING)), "cuEventCreate")
    try:
        check(api.cuEventRecord(ev, other), "cuEventRecord")
        waiter_st.make_current()
        check(api.cuStreamWaitEvent(waiter, ev, 0), "cuStreamWaitEvent")
    finally:
        check(api.cuEventDestroy(ev), "cuEventDestroy")  # released once the wait is satisfied
