"""CUDA backend: driver (memory, copies), module loading/launch, streams, events, graphs.

Three kinds of tests:

* ``backend``-parametrized tests run twice: on a real GPU (``gpu``, skipped without
  one) and on ``fake``: a CPU simulation of ``cuda.bindings.driver`` where device
  memory is host memory, kernels run through the CPU build of the same generated
  source, and streams/graphs are queues of operations. Where the NVIDIA driver is
  absent, every call the backend makes is also passed to the real cuda-python
  binding first, which converts (type-checks) the arguments before it fails to
  load libcuda: a wrong argument type fails the test here, not on the first GPU.
* tests that check behaviour without a GPU (clear errors, no crash);
* NVRTC compilation of representative modules for sm_80 and sm_90.
"""
from __future__ import annotations

import collections
import ctypes
import gc
import hashlib
import itertools
import re
import threading

import numpy as np
import pytest

import simkit as sk
from simkit.kernels import codegen
from simkit.kernels import module as kmodule
from simkit.kernels import types as T
from simkit.kernels.backends import cpu as cpu_backend
from simkit.kernels.backends.cuda import driver, memops, nvrtc
from simkit.kernels.backends.cuda import module as cmodule
from simkit.kernels.backends.cuda import stream as cstream
from simkit.runtime import device as devmod
from simkit.version import __version__

if driver._runtime_get_device is None:  # until simkit.runtime.device installs the hooks itself
    driver.set_runtime_hooks(devmod.get_device, devmod.ScopedDevice)

HAS_GPU = sk.is_cuda_available()
HAS_NVRTC = nvrtc.is_available()
try:
    cpu_backend.find_compiler()
    HAS_CXX = True
except Exception:  # pragma: no cover
    HAS_CXX = False

FAKE_ARCH = "sm_87"  # the fake GPU's architecture (real NVRTC compiles for it)


# ---------------------------------------------------------------------------
# Kernels


@sk.kernel
def saxpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def grid2d(out: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    out[i, j] = float(i) * 10.0 + float(j)


@sk.kernel
def vec_kernel(v: sk.array(dtype=sk.vec3), m: sk.array(dtype=sk.mat33), out: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    out[i] = m[i] @ v[i] + sk.vec3(1.0, 2.0, 3.0)


@sk.kernel
def heavy_write(n: int, value: float, out: sk.array(dtype=float)):
    i = sk.tid()
    s = float(0.0)
    for k in range(n):
        s = s * 0.5 + value
    out[i] = s * 0.0 + value


@sk.kernel
def copy_kernel(src: sk.array(dtype=float), dst: sk.array(dtype=float)):
    i = sk.tid()
    dst[i] = src[i]


@sk.kernel
def integrate(x: sk.array(dtype=float), v: sk.array(dtype=float), dt: float):
    i = sk.tid()
    x[i] = x[i] + v[i] * dt


@sk.kernel
def out_of_bounds(a: sk.array(dtype=float)):
    i = sk.tid()
    a[i + 1] = 1.0


@sk.kernel
def expect_zero(a: sk.array(dtype=int)):
    i = sk.tid()
    sk.expect_eq(a[i], 0)


@sk.kernel
def prod_loop(x: sk.array(dtype=sk.float64), n: int, out: sk.array(dtype=sk.float64)):
    i = sk.tid()
    p = sk.float64(1.0)
    for k in range(n):
        p = p * x[i]
    out[i] = p


# ---------------------------------------------------------------------------
# A CPU simulation of cuda.bindings.driver


def _real_driver():
    from cuda.bindings import driver as real

    return real


def _real_libcuda_missing() -> bool:
    try:
        _real_driver().cuDriverGetVersion()
        return False
    except Exception as e:
        return type(e).__name__ == "DynamicLibNotFoundError"


def _fake(fn):
    """A fake driver entry point: counts the call and type-checks the arguments with cuda-python."""
    name = fn.__name__

    def wrapper(self, *args):
        self.calls[name] += 1
        if self.validate:
            try:
                getattr(self.real, name)(*args)
            except Exception as e:  # conversion passed when only the library load fails
                if type(e).__name__ != "DynamicLibNotFoundError":
                    raise AssertionError(f"{name}{args!r}: cuda-python rejects these arguments: {e!r}") from None
        with self.lock:
            try:
                return fn(self, *args)
            except AssertionError as e:  # recorded too: a destructor may swallow it
                self.violations.append(f"{name}: {e}")
                raise

    wrapper.__name__ = name
    return wrapper


class _FStream:
    def __init__(self, ctx, flags=0, priority=0):
        self.ctx = ctx
        self.flags = flags
        self.priority = priority
        self.capture = None  # list of ops while capturing
        self.invalidated = False


class FakeDriver:
    """Simulates the parts of ``cuda.bindings.driver`` that simkit uses, on the CPU.

    Device pointers are addresses of host buffers; operations on a stream run at once
    unless the stream is capturing (then they are recorded into the graph). It enforces
    the rules the real driver enforces that matter here: work on a stream of another
    context, the legacy stream or a synchronization during capture, use of freed or
    unallocated memory, launches over the function's thread limit.
    """

    MAX_THREADS = 768  # per block (below 1024 to exercise the backend's clamping)

    def __init__(self, ndev: int = 1, arch: str = FAKE_ARCH, validate: bool | None = None):
        self.real = _real_driver()
        self.ndev = ndev
        self.arch = arch
        self.validate = _real_libcuda_missing() if validate is None else validate
        self.lock = threading.RLock()
        self.tls = threading.local()
        self.calls = collections.Counter()
        self.violations: list = []  # every rule broken (checked when the fixture ends)
        self.ids = itertools.count(0x10000, 0x10)
        self.mem: dict = {}  # base address -> (ctypes buffer, ordinal)
        self.freed: dict = {}
        self.host: dict = {}
        self.streams = {0: _FStream(None)}
        self.events: dict = {}
        self.modules: dict = {}
        self.functions: dict = {}
        self.graphs: dict = {}
        self.execs: dict = {}
        self.sources: dict = {}  # image bytes -> source (filled by the test's _image_for hook)
        self.clock = 0
        self.launches = []  # (function name, grid, block, stream)

    def __getattr__(self, name):
        if re.match(r"cu[A-Z]", name):
            raise AttributeError(f"FakeDriver does not implement {name}")
        return getattr(self.real, name)  # enums, handle types, constants

    # -- helpers -------------------------------------------------------------

    def ok(self, *vals):
        return (self.real.CUresult.CUDA_SUCCESS, *vals)

    def err(self, code, nvals=0):
        return (self.real.CUresult(code),) + (None,) * nvals

    def ctx(self):
        return getattr(self.tls, "ctx", None)

    def mode(self):
        return getattr(self.tls, "mode", 0)

    def new_buffer(self, nbytes, fill=0xCD):
        buf = ctypes.create_string_buffer(max(1, nbytes))
        ctypes.memset(buf, fill, max(1, nbytes))
        return buf

    def check_range(self, ptr, n):
        ptr = int(ptr)
        for base, (buf, _o) in self.mem.items():
            if base <= ptr and ptr + n <= base + len(buf):
                return True
        for base, (buf, _o) in self.freed.items():
            if base <= ptr < base + len(buf):
                raise AssertionError(f"use of freed device memory at 0x{ptr:x}")
        raise AssertionError(f"device range 0x{ptr:x}+{n} is not allocated")

    def enqueue(self, s, op):
        """0 on success, else an error code, as the real driver would return."""
        s = int(s)
        st = self.streams.get(s)
        if st is None:
            return 400  # CUDA_ERROR_INVALID_HANDLE
        if s == 0:
            if any(x.capture is not None for x in self.streams.values()):
                for x in self.streams.values():
                    if x.capture is not None:
                        x.invalidated = True
                return 906  # CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
        elif st.ctx != self.ctx():
            return 201  # CUDA_ERROR_INVALID_CONTEXT: stream of another context
        if st.capture is not None:
            st.capture.append(op)
            return 0
        op()
        return 0

    def capturing_any(self):
        return any(x.capture is not None for x in self.streams.values())

    def view(self, ptr, n, ctype):
        return (ctype * n).from_address(int(ptr))

    # -- init / devices ------------------------------------------------------

    @_fake
    def cuInit(self, flags):
        return self.ok()

    @_fake
    def cuDriverGetVersion(self):
        return self.ok(13000)

    @_fake
    def cuDeviceGetCount(self):
        return self.ok(self.ndev)

    @_fake
    def cuDeviceGet(self, i):
        return self.ok(self.real.CUdevice(i)) if 0 <= i < self.ndev else self.err(101, 1)

    @_fake
    def cuDeviceGetName(self, n, dev):
        return self.ok(f"Fake GPU {int(dev)}".encode().ljust(n, b"\0"))

    @_fake
    def cuDeviceGetAttribute(self, attr, dev):
        A = self.real.CUdevice_attribute
        cc = int(self.arch[3:])
        values = {A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: cc // 10,
                  A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: cc % 10,
                  A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 4,
                  A.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: 1}
        return self.ok(values[attr]) if attr in values else self.err(1, 1)

    @_fake
    def cuDevicePrimaryCtxRetain(self, dev):
        return self.ok(self.real.CUcontext(0xC000 + int(dev)))

    @_fake
    def cuCtxSetCurrent(self, ctx):
        self.tls.ctx = int(ctx)
        return self.ok()

    @_fake
    def cuCtxPushCurrent(self, ctx):
        self.tls.__dict__.setdefault("stack", []).append(self.ctx())
        self.tls.ctx = int(ctx)
        return self.ok()

    @_fake
    def cuCtxPopCurrent(self):
        stack = self.tls.__dict__.get("stack")
        if not stack:
            raise AssertionError("cuCtxPopCurrent without a matching push")
        popped, self.tls.ctx = self.tls.ctx, stack.pop()
        return self.ok(self.real.CUcontext(popped))

    @_fake
    def cuCtxSynchronize(self):
        if any(x.capture is not None and x.ctx == self.ctx() for x in self.streams.values()):
            return self.err(900)  # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
        return self.ok()

    @_fake
    def cuCtxGetStreamPriorityRange(self):
        return self.ok(0, -5)

    @_fake
    def cuDeviceGetDefaultMemPool(self, dev):
        return self.ok(self.real.CUmemoryPool(0xF000 + int(dev)))

    @_fake
    def cuMemPoolSetAttribute(self, pool, attr, value):
        assert isinstance(value, self.real.cuuint64_t)
        return self.ok()

    @_fake
    def cuGetErrorName(self, e):
        return self.ok(self.real.CUresult(int(e)).name.encode())

    @_fake
    def cuGetErrorString(self, e):
        return self.ok(b"simulated error")

    @_fake
    def cuThreadExchangeStreamCaptureMode(self, mode):
        old = self.mode()
        self.tls.mode = int(mode)
        return self.ok(self.real.CUstreamCaptureMode(old))

    # -- streams and events ----------------------------------------------------

    def _new_stream(self, flags, prio):
        h = next(self.ids)
        self.streams[h] = _FStream(self.ctx(), flags, prio)
        return self.ok(self.real.CUstream(h))

    @_fake
    def cuStreamCreate(self, flags):
        return self._new_stream(flags, 0)

    @_fake
    def cuStreamCreateWithPriority(self, flags, prio):
        return self._new_stream(flags, prio)

    @_fake
    def cuStreamGetFlags(self, s):
        return self.ok(self.streams[int(s)].flags)

    @_fake
    def cuStreamGetPriority(self, s):
        return self.ok(self.streams[int(s)].priority)

    @_fake
    def cuStreamDestroy(self, s):
        return self.ok() if self.streams.pop(int(s), None) is not None else self.err(400)

    @_fake
    def cuStreamSynchronize(self, s):
        st = self.streams.get(int(s))
        if st is None:
            return self.err(400)
        if st.capture is not None:
            return self.err(900)
        return self.ok()

    @_fake
    def cuStreamQuery(self, s):
        return self.ok()

    @_fake
    def cuStreamWaitEvent(self, s, e, flags):
        if int(e) not in self.events:
            return self.err(400)
        return self.err(self.enqueue(s, lambda: None))

    @_fake
    def cuStreamIsCapturing(self, s):
        st = self.streams[int(s)]
        return self.ok(self.real.CUstreamCaptureStatus(1 if st.capture is not None else 0))

    @_fake
    def cuStreamBeginCapture(self, s, mode):
        st = self.streams.get(int(s))
        if int(s) == 0 or st is None or st.capture is not None:
            return self.err(1)
        st.capture, st.invalidated = [], False
        return self.ok()

    @_fake
    def cuStreamEndCapture(self, s):
        st = self.streams.get(int(s))
        if st is None or st.capture is None:
            return self.err(1, 1)
        ops, st.capture = st.capture, None
        if st.invalidated:
            return self.err(901, 1)  # CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
        h = next(self.ids)
        self.graphs[h] = ops
        return self.ok(self.real.CUgraph(h))

    @_fake
    def cuEventCreate(self, flags):
        h = next(self.ids)
        self.events[h] = {"timing": not (int(flags) & 2), "time": None}
        return self.ok(self.real.CUevent(h))

    @_fake
    def cuEventDestroy(self, e):
        return self.ok() if self.events.pop(int(e), None) is not None else self.err(400)

    @_fake
    def cuEventRecord(self, e, s):
        ev = self.events.get(int(e))
        if ev is None:
            return self.err(400)

        def op():
            self.clock += 1
            ev["time"] = self.clock

        return self.err(self.enqueue(s, op))

    @_fake
    def cuEventQuery(self, e):
        return self.ok()

    @_fake
    def cuEventSynchronize(self, e):
        return self.ok()

    @_fake
    def cuEventElapsedTime(self, a, b):
        ea, eb = self.events.get(int(a)), self.events.get(int(b))
        if ea is None or eb is None or not (ea["timing"] and eb["timing"]):
            return self.err(400, 1)
        if ea["time"] is None or eb["time"] is None:
            return self.err(600, 1)
        return self.ok(float(eb["time"] - ea["time"]) * 0.01)

    # -- memory ----------------------------------------------------------------

    def _alloc(self, n):
        buf = self.new_buffer(n)
        ordinal = (self.ctx() or 0xC000) - 0xC000
        self.mem[ctypes.addressof(buf)] = (buf, ordinal)
        return self.ok(self.real.CUdeviceptr(ctypes.addressof(buf)))

    @_fake
    def cuMemAllocAsync(self, n, s):
        st = self.streams.get(int(s))
        if st is None or (int(s) and st.ctx != self.ctx()):
            return self.err(201, 1)
        if st.capture is not None:  # simkit never makes graph allocations
            raise AssertionError("cuMemAllocAsync on a capturing stream (a graph allocation)")
        if self.capturing_any() and self.mode() != 2:
            raise AssertionError("allocation during capture without relaxed capture mode")
        return self._alloc(n)

    @_fake
    def cuMemAlloc(self, n):
        return self._alloc(n)

    def _free(self, ptr):
        ptr = int(ptr)
        if ptr not in self.mem:
            raise AssertionError(f"free of unknown device pointer 0x{ptr:x}")
        if self.mem[ptr][1] != (self.ctx() or 0) - 0xC000:
            raise AssertionError(f"0x{ptr:x} freed while another device's context is current")

        def op():
            buf, o = self.mem.pop(ptr)
            ctypes.memset(buf, 0xDD, len(buf))
            self.freed[ptr] = (buf, o)

        return op

    @_fake
    def cuMemFreeAsync(self, ptr, s):
        return self.err(self.enqueue(s, self._free(ptr)))

    @_fake
    def cuMemFree(self, ptr):
        if self.capturing_any():
            return self.err(900)
        self._free(ptr)()
        return self.ok()

    @_fake
    def cuMemHostAlloc(self, n, flags):
        buf = self.new_buffer(n, 0)
        self.host[ctypes.addressof(buf)] = buf
        return self.ok(ctypes.addressof(buf))

    @_fake
    def cuMemFreeHost(self, p):
        return self.ok() if self.host.pop(int(p), None) is not None else self.err(1)

    def _memset(self, ptr, value, n, ctype, s):
        self.check_range(ptr, n * ctypes.sizeof(ctype))

        def op():
            arr = self.view(ptr, n, ctype)
            for_np = np.ctypeslib.as_array(arr)
            for_np[...] = value

        return self.err(self.enqueue(s, op))

    @_fake
    def cuMemsetD8Async(self, ptr, value, n, s):
        return self._memset(ptr, value, n, ctypes.c_uint8, s)

    @_fake
    def cuMemsetD16Async(self, ptr, value, n, s):
        assert int(ptr) % 2 == 0
        return self._memset(ptr, value, n, ctypes.c_uint16, s)

    @_fake
    def cuMemsetD32Async(self, ptr, value, n, s):
        assert int(ptr) % 4 == 0
        return self._memset(ptr, value, n, ctypes.c_uint32, s)

    @_fake
    def cuMemcpyHtoDAsync(self, dst, src, n, s):
        self.check_range(dst, n)
        data = ctypes.string_at(int(src), n)  # pageable memory is staged at the call

        def op():
            ctypes.memmove(int(dst), data, n)

        return self.err(self.enqueue(s, op))

    @_fake
    def cuMemcpyDtoHAsync(self, dst, src, n, s):
        self.check_range(src, n)
        return self.err(self.enqueue(s, lambda: ctypes.memmove(int(dst), int(src), n)))

    @_fake
    def cuMemcpyDtoDAsync(self, dst, src, n, s):
        self.check_range(dst, n)
        self.check_range(src, n)
        return self.err(self.enqueue(s, lambda: ctypes.memmove(int(dst), int(src), n)))

    @_fake
    def cuMemcpyPeerAsync(self, dst, dctx, src, sctx, n, s):
        self.check_range(dst, n)
        self.check_range(src, n)
        assert self.mem[self._base(dst)][1] == int(dctx) - 0xC000, "peer copy: destination context mismatch"
        assert self.mem[self._base(src)][1] == int(sctx) - 0xC000, "peer copy: source context mismatch"
        return self.err(self.enqueue(s, lambda: ctypes.memmove(int(dst), int(src), n)))

    def _base(self, ptr):
        ptr = int(ptr)
        for base, (buf, _o) in self.mem.items():
            if base <= ptr < base + len(buf):
                return base
        raise AssertionError(f"0x{ptr:x} is not device memory")

    # -- modules and launches --------------------------------------------------

    @_fake
    def cuModuleLoadData(self, image):
        image = bytes(image)
        assert image[:4] == b"\x7fELF", "expected a CUBIN (ELF) image"
        source = self.sources[image]
        if source is memops.RUNTIME_SOURCE:
            host_src = _host_runtime_source()
            kind = "rt"
        else:
            kind = "user"
            extra = []
            for cname, which in re.findall(r'extern "C" __global__ void (\w+)_cuda_(fwd|bwd)\(', source):
                extra.append(f'extern "C" __attribute__((visibility("default"))) long long '
                             f'{cname}_{which}_fake_args_size() {{ return sizeof({cname}_args); }}')
            host_src = source + "\n#if !SK_CUDA\n" + "\n".join(extra) + "\n#endif\n"
        key = hashlib.sha256((host_src + cpu_backend.identity()).encode()).hexdigest()
        lib = cpu_backend.load_or_build(host_src, key, f"fakecuda_{kind}")
        h = next(self.ids)
        self.modules[h] = {"lib": lib, "kind": kind, "source": source, "globals": {}, "ctx": self.ctx()}
        return self.ok(self.real.CUmodule(h))

    @_fake
    def cuModuleGetGlobal(self, mod, name):
        m = self.modules[int(mod)]
        name = bytes(name)
        sizes = {b"_ZN2sk14sk_error_stateE": 32}
        if "sk::stack_reset" in m["source"]:
            sizes.update({b"_ZN2sk13sk_stack_baseE": 8, b"_ZN2sk17sk_stack_capacityE": 8})
        if m["kind"] != "user" or name not in sizes:
            return self.err(500, 2)  # CUDA_ERROR_NOT_FOUND
        if name not in m["globals"]:
            buf = self.new_buffer(sizes[name], 0)
            self.mem[ctypes.addressof(buf)] = (buf, (self.ctx() or 0xC000) - 0xC000)
            m["globals"][name] = ctypes.addressof(buf)
        return self.ok(self.real.CUdeviceptr(m["globals"][name]), sizes[name])

    @_fake
    def cuModuleGetFunction(self, mod, name):
        m = self.modules.get(int(mod))
        name = bytes(name).decode()
        if m is None:
            return self.err(400, 1)
        if m["kind"] == "rt":
            found = name in ("sk_rt_fill", "sk_rt_copy")
        else:
            found = f'extern "C" __global__ void {name}(' in m["source"]
        if not found:
            return self.err(500, 1)
        h = next(self.ids)
        self.functions[h] = (m, name)
        return self.ok(self.real.CUfunction(h))

    @_fake
    def cuFuncGetAttribute(self, attr, f):
        assert attr == self.real.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        return self.ok(self.MAX_THREADS)

    def _param_sizes(self, m, name):
        if m["kind"] == "rt":
            return [352 if name == "sk_rt_fill" else 176]
        cname, which = re.match(r"(\w+)_cuda_(fwd|bwd)$", name).groups()
        fn = getattr(m["lib"].lib, f"{cname}_{which}_fake_args_size")
        fn.restype = ctypes.c_longlong
        return [int(fn()), 32]

    @_fake
    def cuFuncGetParamInfo(self, f, i):
        m, name = self.functions[int(f)]
        sizes = self._param_sizes(m, name)
        if i >= len(sizes):
            return self.err(1, 2)
        return self.ok(sum(sizes[:i]), sizes[i])

    @_fake
    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra):
        m, name = self.functions[int(f)]
        assert extra == 0 and isinstance(params, int) and params, "kernelParams must be a void** address"
        if m["ctx"] != self.ctx():
            raise AssertionError(f"{name}: launched while another context is current")
        if not (1 <= gx and gy == gz == by == bz == 1 and 1 <= bx <= self.MAX_THREADS):
            return self.err(1)  # CUDA_ERROR_INVALID_VALUE
        sizes = self._param_sizes(m, name)
        ptrs = (ctypes.c_void_p * len(sizes)).from_address(params)
        # the driver copies the parameter values now (so may the caller free its buffers)
        copies = [ctypes.create_string_buffer(ctypes.string_at(ptrs[k], n), n) for k, n in enumerate(sizes)]
        ordinal = self.ctx() - 0xC000
        for word in np.frombuffer(copies[0].raw[: sizes[0] // 8 * 8], dtype=np.uint64).tolist():
            if word in self.mem and self.mem[word][1] != ordinal:  # an array argument of another device
                raise AssertionError(f"{name}: launched on device {ordinal} with memory of device "
                                     f"{self.mem[word][1]}")
        self.launches.append((name, gx, bx, int(s)))
        lib = m["lib"]
        if m["kind"] == "rt":
            fn = getattr(lib.lib, name)
            fn.argtypes, fn.restype = [ctypes.c_void_p], None

            def op():
                fn(ctypes.addressof(copies[0]))
        else:
            cname, which = re.match(r"(\w+)_cuda_(fwd|bwd)$", name).groups()
            fn = getattr(lib.lib, f"{cname}_cpu_{which}")
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
            fn.restype = None
            g = m["globals"]

            def op():
                if which == "bwd" and "sk::push(" in m["source"]:  # the backend must have set up the stack
                    base = ctypes.c_uint64.from_address(g[b"_ZN2sk13sk_stack_baseE"]).value
                    cap = ctypes.c_int64.from_address(g[b"_ZN2sk17sk_stack_capacityE"]).value
                    assert cap >= 64 and cap % 16 == 0, cap
                    self.check_range(base, gx * bx * cap)
                fn(ctypes.addressof(copies[0]), ctypes.addressof(copies[1]), 1, 0)
                e = lib.error()
                ep = g.get(b"_ZN2sk14sk_error_stateE")
                if e is not None and ep and ctypes.c_int32.from_address(ep).value == 0:
                    ctypes.memmove(ep, np.array(e[:2], np.int32).tobytes() + np.array(e[2:], np.int64).tobytes(),
                                   32)

        return self.err(self.enqueue(s, op))

    # -- graphs ----------------------------------------------------------------

    @_fake
    def cuGraphInstantiate(self, g, flags):
        h = next(self.ids)
        self.execs[h] = list(self.graphs[int(g)])
        return self.ok(self.real.CUgraphExec(h))

    @_fake
    def cuGraphLaunch(self, e, s):
        ops = self.execs.get(int(e))
        if ops is None:
            return self.err(400)

        def run():
            for op in ops:
                op()

        return self.err(self.enqueue(s, run))

    @_fake
    def cuGraphExecDestroy(self, e):
        return self.ok() if self.execs.pop(int(e), None) is not None else self.err(400)

    @_fake
    def cuGraphDestroy(self, g):
        return self.ok() if self.graphs.pop(int(g), None) is not None else self.err(400)

    @_fake
    def cuGraphDebugDotPrint(self, g, path, flags):
        with open(bytes(path).decode(), "w") as f:
            f.write(f"digraph G {{ // {len(self.graphs[int(g)])} nodes\n}}\n")
        return self.ok()


def _host_runtime_source() -> str:
    """memops.RUNTIME_SOURCE as a host library (exported entry points taking a pointer to the arguments)."""
    return ("#pragma GCC visibility push(default)\n" + memops.RUNTIME_SOURCE
            + '\nextern "C" int sk_get_error(long long* out) { return 0; }\n')


def _drop_native(arch: str) -> dict:
    """Remove (and return) every kernel's compiled units for ``arch`` (forward and adjoint)."""
    saved = {}
    for m in list(kmodule._modules.values()):
        for k in m.kernels:
            for s in k.specs.values():
                for kind in [kd for kd in s.native if re.split(r"[:/]", kd)[0] == arch]:
                    saved[(id(s), kind)] = (s, s.native.pop(kind))
    return saved


@pytest.fixture
def fake_cuda(monkeypatch):
    """Install a FakeDriver with 2 devices; restores the real driver state afterwards."""
    if not (HAS_NVRTC and HAS_CXX):
        pytest.skip("the fake CUDA backend needs NVRTC and a C++ compiler")
    fake = FakeDriver(ndev=2)
    saved = _drop_native(FAKE_ARCH)
    for mod, name, value in [(driver, "_api", fake), (driver, "_init_done", False), (driver, "_init_error", None),
                             (driver, "_devices", None), (driver, "_states", {}),
                             (cstream, "_default_streams", {}), (cstream, "_captures", {}),
                             (devmod, "_cuda_devices", None), (devmod, "_default", None)]:
        monkeypatch.setattr(mod, name, value)
    real_image_for = cmodule._image_for

    def image_for(source, target, name):
        img = real_image_for(source, target, name)
        fake.sources[img] = source
        return img

    monkeypatch.setattr(cmodule, "_image_for", image_for)
    try:
        yield fake
        for st in list(driver._states.values()):  # drop what the fake devices hold, while the fake is installed
            st.current = None
            st.scratch.clear()
        cstream._default_streams.clear()
        gc.collect()
        assert not fake.violations, "driver rules broken:\n" + "\n".join(fake.violations)
    finally:
        _drop_native(FAKE_ARCH)
        for (s, kind), (spec, native) in saved.items():
            spec.native[kind] = native


@pytest.fixture(params=["gpu", "fake"])
def backend(request):
    """'cuda:0' on a real GPU, or on the fake driver."""
    if request.param == "gpu":
        if not HAS_GPU:
            pytest.skip("no CUDA GPU")
        yield "cuda:0"
        sk.synchronize()
    else:
        request.getfixturevalue("fake_cuda")
        yield "cuda:0"


def _fake_of(_backend):
    """The FakeDriver when ``backend`` runs on it, else None."""
    return driver._api if isinstance(driver._api, FakeDriver) else None


# ---------------------------------------------------------------------------
# Memory and copies


DTYPES = [sk.bool, sk.int8, sk.uint8, sk.int16, sk.uint16, sk.int32, sk.uint32, sk.int64, sk.uint64, sk.float16,
          sk.float32, sk.float64, sk.vec3, sk.vec2d, sk.vec4h, sk.mat22, sk.mat33, sk.mat44d, sk.quat, sk.transform,
          sk.spatial_vector]


def _random(dtype, n, rng):
    from simkit.runtime.array import np_dtype_of

    nd, esh = np_dtype_of(dtype)
    shape = (n,) + esh
    if nd == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(nd, np.integer):
        info = np.iinfo(nd)
        return rng.integers(info.min, info.max, shape, dtype=nd, endpoint=True)
    return rng.standard_normal(shape).astype(nd)


@pytest.mark.parametrize("dtype", DTYPES, ids=T.type_name)
def test_roundtrip_each_dtype(backend, dtype):
    rng = np.random.default_rng(0)
    host = _random(dtype, 37, rng)
    a = sk.array(host, dtype=dtype, device=backend)
    assert a.device == backend
    np.testing.assert_array_equal(a.numpy(), host)
    z = sk.zeros(37, dtype=dtype, device=backend)
    assert not np.asarray(z.numpy(), dtype=np.float64).any()
    # device -> device, device -> host array, host array -> device
    b = sk.clone(a)
    np.testing.assert_array_equal(b.numpy(), host)
    c = a.to("cpu")
    np.testing.assert_array_equal(c.numpy(), host)
    d = sk.zeros(37, dtype=dtype, device=backend)
    sk.copy(d, c)
    np.testing.assert_array_equal(d.numpy(), host)
    host2 = _random(dtype, 37, rng)
    d.assign(host2)
    np.testing.assert_array_equal(d.numpy(), host2)


@pytest.mark.parametrize("dtype,value", [(sk.float32, 1.5), (sk.float64, -2.25), (sk.int16, -3), (sk.uint8, 7),
                                         (sk.int64, 1 << 40), (sk.vec3, (1.0, 2.0, 3.0)), (sk.vec3, 0.5),
                                         (sk.mat22, ((1.0, 2.0), (3.0, 4.0))), (sk.bool, True), (sk.float16, 0.5),
                                         (sk.vec3h, (1.0, -1.0, 2.0))])
def test_fill(backend, dtype, value):
    a = sk.zeros(101, dtype=dtype, device=backend)
    a.fill_(value)
    ref = sk.zeros(101, dtype=dtype, device="cpu")
    ref.fill_(value)
    np.testing.assert_array_equal(a.numpy(), ref.numpy())
    b = sk.full(5, value, dtype=dtype, device=backend)
    np.testing.assert_array_equal(b.numpy(), ref.numpy()[:5])


def _strided(base, step):
    """A non-contiguous 1D view of every ``step``-th element of a contiguous CUDA array."""
    n = (base.shape[0] + step - 1) // step
    return sk.array(ptr=base.ptr, dtype=base.dtype, shape=(n,), strides=(base.strides[0] * step,),
                    device=base.device, _owner=base)


@pytest.mark.parametrize("dtype", [sk.float32, sk.vec3, sk.uint8, sk.float64])
def test_strided_copies_and_fill(backend, dtype):
    rng = np.random.default_rng(1)
    host = _random(dtype, 20, rng)
    base = sk.array(host, dtype=dtype, device=backend)
    view = _strided(base, 3)  # elements 0, 3, 6, ...
    assert not view.is_contiguous
    np.testing.assert_array_equal(view.numpy(), host[::3])  # strided -> host
    contiguous = sk.clone(view)  # strided -> contiguous on the device
    assert contiguous.is_contiguous
    np.testing.assert_array_equal(contiguous.numpy(), host[::3])
    new = _random(dtype, view.shape[0], rng)
    view.assign(new)  # host -> strided
    expect = host.copy()
    expect[::3] = new
    np.testing.assert_array_equal(base.numpy(), expect)
    src = sk.array(_random(dtype, view.shape[0], rng), dtype=dtype, device=backend)
    sk.copy(view, src)  # contiguous -> strided on the device
    expect[::3] = src.numpy()
    np.testing.assert_array_equal(base.numpy(), expect)
    view.zero_()  # strided fill
    expect[::3] = 0
    np.testing.assert_array_equal(base.numpy(), expect)
    cpu_strided = sk.array(host, dtype=dtype, device="cpu")[::2]
    dst = sk.zeros(cpu_strided.shape[0], dtype=dtype, device=backend)
    sk.copy(dst, cpu_strided)  # strided host -> device
    np.testing.assert_array_equal(dst.numpy(), host[::2])


def test_copy_between_devices(fake_cuda):
    host = np.arange(50, dtype=np.float32)
    a = sk.array(host, device="cuda:0")
    b = sk.zeros(50, device="cuda:1")
    sk.copy(b, a)
    np.testing.assert_array_equal(b.numpy(), host)
    c = _strided(b, 2)  # strided on the destination device, gathered from a strided source
    sk.copy(c, _strided(a, 2))
    np.testing.assert_array_equal(c.numpy(), host[::2])
    assert fake_cuda.calls["cuMemcpyPeerAsync"] == 2


@pytest.mark.skipif(not (HAS_GPU and sk.get_cuda_device_count() > 1), reason="needs two GPUs")
def test_copy_between_gpus():
    host = np.arange(1000, dtype=np.float32)
    b = sk.array(host, device="cuda:0").to("cuda:1")
    np.testing.assert_array_equal(b.numpy(), host)


def test_unit_loads_lazily_on_a_second_device(fake_cuda):
    from simkit.runtime.launch import bounds_bytes

    x0, y0 = sk.ones(8, device="cuda:0"), sk.zeros(8, device="cuda:0")
    sk.launch(saxpy, dim=8, inputs=[2.0, x0, y0], device="cuda:0")
    entry, unit = saxpy.specs[None].native[FAKE_ARCH]
    loads = fake_cuda.calls["cuModuleLoadData"]
    dev1 = sk.get_device("cuda:1")
    x1, y1 = sk.ones(8, device=dev1), sk.zeros(8, device=dev1)
    assert unit.launch(entry, _packed_saxpy(x1, y1), bounds_bytes((8,))[0], 8, 256, None, device=dev1) is None
    assert fake_cuda.calls["cuModuleLoadData"] == loads + 1  # the same CUBIN, loaded into cuda:1's context
    np.testing.assert_array_equal(y1.numpy(), np.full(8, 1.0, np.float32))  # _packed_saxpy: a = 1


def test_launch_on_two_devices_of_one_arch(fake_cuda):
    try:
        for dev in ("cuda:0", "cuda:1"):
            x, y = sk.ones(8, device=dev), sk.zeros(8, device=dev)
            sk.launch(saxpy, dim=8, inputs=[2.0, x, y], device=dev)
            np.testing.assert_array_equal(y.numpy(), np.full(8, 2.0, np.float32))
    finally:
        fake_cuda.violations.clear()


def test_pinned_memory(backend):
    buf = driver.alloc_pinned(0, dtype=np.float32, shape=(64,))
    buf[:] = np.arange(64)
    a = sk.array(buf, dtype=float, device=backend)
    out = driver.alloc_pinned(256, dtype=np.float32)
    sk.synchronize()
    driver.copy_dtoh(out, a)
    np.testing.assert_array_equal(out, np.arange(64))


def test_allocations_are_freed(fake_cuda):
    a = sk.zeros(1000, device="cuda:0")
    ptr = a.ptr
    assert ptr in fake_cuda.mem
    del a
    gc.collect()
    assert ptr in fake_cuda.freed and ptr not in fake_cuda.mem


# ---------------------------------------------------------------------------
# Launches


def test_launch_matches_numpy(backend):
    n = 1000
    x = sk.array(np.arange(n, dtype=np.float32), device=backend)
    y = sk.ones(n, device=backend)
    sk.launch(saxpy, dim=n, inputs=[2.0, x, y], device=backend)
    np.testing.assert_allclose(y.numpy(), 2 * np.arange(n) + 1)
    g = sk.zeros((7, 9), device=backend)
    sk.launch(grid2d, dim=(7, 9), inputs=[g], device=backend)
    np.testing.assert_allclose(g.numpy(), np.arange(7)[:, None] * 10.0 + np.arange(9)[None, :])
    rng = np.random.default_rng(2)
    v, m = rng.standard_normal((33, 3)).astype(np.float32), rng.standard_normal((33, 3, 3)).astype(np.float32)
    out = sk.zeros(33, dtype=sk.vec3, device=backend)
    sk.launch(vec_kernel, dim=33, inputs=[sk.array(v, dtype=sk.vec3, device=backend),
                                          sk.array(m, dtype=sk.mat33, device=backend), out], device=backend)
    np.testing.assert_allclose(out.numpy(), np.einsum("nij,nj->ni", m, v) + [1, 2, 3], rtol=1e-5, atol=1e-5)


def test_launch_block_and_grid(backend):
    n = 5000
    y = sk.zeros(n, device=backend)
    x = sk.ones(n, device=backend)
    sk.launch(saxpy, dim=n, inputs=[1.0, x, y], device=backend, block_dim=1024)  # clamped to the kernel limit
    sk.launch(saxpy, dim=n, inputs=[1.0, x, y], device=backend, block_dim=32)
    np.testing.assert_array_equal(y.numpy(), np.full(n, 2.0, np.float32))
    fake = _fake_of(backend)
    if fake is not None:
        blocks = [(g, b) for name, g, b, _s in fake.launches if name.startswith("saxpy")]
        assert blocks[-2] == ((n + 767) // 768, 768) and blocks[-1] == ((n + 31) // 32, 32)


def test_grid_is_capped(fake_cuda):
    from simkit.runtime.launch import bounds_bytes

    x, y = sk.ones(8, device="cuda:0"), sk.zeros(8, device="cuda:0")
    sk.launch(saxpy, dim=8, inputs=[1.0, x, y], device="cuda:0")
    entry, unit = saxpy.specs[None].native[FAKE_ARCH]
    # more threads than the cap: the grid is capped, the grid-stride loop covers the rest (the bounds passed
    # to the kernel say 8, so the simulated run stays inside the arrays)
    unit.launch(entry, _packed_saxpy(x, y), bounds_bytes((8,))[0], driver.GRID_CAP * 256 + 1000, 256, None)
    assert fake_cuda.launches[-1][1:3] == (driver.GRID_CAP, 256)
    np.testing.assert_array_equal(y.numpy(), np.full(8, 2.0, np.float32))


def _packed_saxpy(x, y):
    from simkit.runtime.launch import _check_and_pack

    packed, _ = _check_and_pack(saxpy, saxpy.specs[None], [1.0, x, y], x.device)
    return packed


def test_debug_mode_bounds_error_raises_index_error(backend, monkeypatch):
    monkeypatch.setattr(sk.config, "mode", "debug")
    a = sk.zeros(16, device=backend)
    with pytest.raises(IndexError, match="out of bounds"):
        sk.launch(out_of_bounds, dim=16, inputs=[a], device=backend)
    # the error state was cleared: an in-bounds launch of the same unit passes
    x, y = sk.ones(4, device=backend), sk.zeros(4, device=backend)
    sk.launch(saxpy, dim=4, inputs=[3.0, x, y], device=backend)
    np.testing.assert_array_equal(y.numpy(), [3, 3, 3, 3])


def test_expect_reports_in_release_mode(backend):
    a = sk.zeros(8, dtype=int, device=backend)
    sk.launch(expect_zero, dim=8, inputs=[a], device=backend)
    a.fill_(3)
    with pytest.raises(RuntimeError, match="expect"):
        sk.launch(expect_zero, dim=8, inputs=[a], device=backend)
    a.zero_()
    sk.launch(expect_zero, dim=8, inputs=[a], device=backend)  # the error state was reset


def test_release_launches_do_not_synchronize(fake_cuda):
    x, y = sk.ones(64, device="cuda:0"), sk.zeros(64, device="cuda:0")
    sk.launch(saxpy, dim=64, inputs=[2.0, x, y], device="cuda:0")  # compiles and loads
    before = dict(fake_cuda.calls)
    for _ in range(3):
        sk.launch(saxpy, dim=64, inputs=[2.0, x, y], device="cuda:0")
    new = {k: v - before.get(k, 0) for k, v in fake_cuda.calls.items() if v != before.get(k, 0)}
    assert new.get("cuLaunchKernel") == 3
    assert not {"cuStreamSynchronize", "cuCtxSynchronize", "cuMemcpyDtoHAsync"} & set(new), new


def test_adjoint_loop_on_gpu(backend):
    x = sk.array(np.array([2.0, 3.0, 0.5]), dtype=sk.float64, requires_grad=True, device=backend)
    out = sk.zeros(3, dtype=sk.float64, requires_grad=True, device=backend)
    tape = sk.Tape()
    with tape:
        sk.launch(prod_loop, dim=3, inputs=[x, 4], outputs=[out], device=backend)
    tape.backward(grads={out: np.ones(3)})
    xv = np.array([2.0, 3.0, 0.5])
    np.testing.assert_allclose(out.numpy(), xv ** 4)
    np.testing.assert_allclose(x.grad.numpy(), 4 * xv ** 3)


# ---------------------------------------------------------------------------
# Streams and events


def test_streams_and_events_ordering(backend):
    n = 1 << 16
    s1, s2 = cstream.Stream(backend), cstream.Stream(backend, priority=-1)
    a, b = sk.zeros(n, device=backend), sk.zeros(n, device=backend)
    sk.synchronize()
    start, end = cstream.Event(backend, enable_timing=True), cstream.Event(backend, enable_timing=True)
    with cstream.ScopedStream(s1):
        assert cstream.get_stream(backend) == s1
        s1.record_event(start)
        sk.launch(heavy_write, dim=n, inputs=[2000, 5.0, a], device=backend)  # slow writer on s1
        s1.record_event(end)
    assert cstream.get_stream(backend) != s1
    s2.wait_stream(s1)  # s2 must see a == 5 everywhere
    sk.launch(copy_kernel, dim=n, inputs=[a, b], device=backend, stream=s2)
    s2.synchronize()
    assert s2.is_complete and s1.is_complete and s1.is_blocking
    assert s1.__cuda_stream__() == (0, s1.cuda_stream) and s2.priority <= s1.priority
    np.testing.assert_array_equal(b.numpy(), np.full(n, 5.0, np.float32))
    assert cstream.get_event_elapsed_time(start, end) >= 0.0
    ev = cstream.record_event()
    cstream.wait_event(ev)
    ev.synchronize()
    assert ev.is_complete


def test_set_stream_and_sync(backend):
    s = cstream.Stream(backend)
    default = cstream.get_stream(backend)
    cstream.set_stream(s, sync=True)
    try:
        x = sk.full(100, 2.0, device=backend)  # allocated and filled on s
        assert cstream.get_stream(backend) == s
    finally:
        cstream.set_stream(default)
    cstream.wait_stream(s)
    np.testing.assert_array_equal(x.numpy(), np.full(100, 2.0, np.float32))
    with pytest.raises(ValueError, match="timing"):
        cstream.get_event_elapsed_time(cstream.Event(backend), cstream.Event(backend))


# ---------------------------------------------------------------------------
# Graph capture


def test_graph_capture_replays_a_step(backend):
    n = 256
    x = sk.zeros(n, device=backend)
    v = sk.array(np.linspace(0, 1, n, dtype=np.float32), device=backend)
    sk.launch(integrate, dim=n, inputs=[x, v, 0.0], device=backend)  # compile/load before capture
    sk.synchronize()
    with cstream.ScopedCapture(backend) as cap:
        assert cstream.is_capturing(backend)
        tmp = sk.zeros(n, device=backend)  # allocated outside the graph, zeroed inside it
        sk.launch(integrate, dim=n, inputs=[tmp, v, 1.0], device=backend)
        sk.launch(integrate, dim=n, inputs=[x, tmp, 0.5], device=backend)
    assert not cstream.is_capturing(backend) and cap.graph is not None
    del tmp  # the graph keeps its allocations alive
    gc.collect()
    np.testing.assert_array_equal(x.numpy(), np.zeros(n, np.float32))  # capturing does not execute
    for _ in range(4):
        cstream.capture_launch(cap.graph)
    sk.synchronize()
    np.testing.assert_allclose(x.numpy(), 4 * 0.5 * np.linspace(0, 1, n), rtol=1e-6)


def test_graph_capture_rules(backend, tmp_path):
    a = sk.ones(64, device=backend)
    before = sk.ones(64, device=backend)
    sk.launch(copy_kernel, dim=64, inputs=[a, before], device=backend)
    sk.synchronize()
    cstream.capture_begin(backend)
    try:
        with pytest.raises(RuntimeError, match="graph"):
            a.numpy()  # device -> host needs a synchronization
        with pytest.raises(RuntimeError, match="graph"):
            a.assign(np.zeros(64))
        with pytest.raises(RuntimeError, match="graph"):
            sk.synchronize()
        del before  # freed during capture: deferred, the graph owns it
        gc.collect()
        sk.launch(copy_kernel, dim=64, inputs=[a, a], device=backend)
    finally:
        graph = cstream.capture_end(backend)
    cstream.capture_launch(graph)
    cstream.capture_debug_dot_print(graph, str(tmp_path / "g.dot"))
    assert (tmp_path / "g.dot").exists()
    del graph
    gc.collect()
    sk.synchronize()
    np.testing.assert_array_equal(a.numpy(), np.ones(64, np.float32))


def test_scoped_capture_error_inside_block_ends_capture(backend):
    a = sk.ones(8, device=backend)
    sk.synchronize()
    with pytest.raises(ZeroDivisionError):
        with cstream.ScopedCapture(backend):
            1 / 0
    assert not cstream.is_capturing(backend)
    np.testing.assert_array_equal(a.numpy(), np.ones(8, np.float32))


def test_invalidated_capture_is_reported_and_cleaned_up(fake_cuda):
    a = sk.ones(16, device="cuda:0")
    doomed = sk.ones(16, device="cuda:0")
    doomed_ptr = doomed.ptr
    cstream.capture_begin("cuda:0")
    del doomed  # deferred while capturing
    gc.collect()
    fake_cuda.cuMemsetD8Async(a.ptr, 0, 4, 0)  # other code touches the legacy stream: invalidates the capture
    with pytest.raises(driver.CudaError, match="INVALIDATED"):
        cstream.capture_end("cuda:0")
    assert not cstream.is_capturing("cuda:0") and not driver.state(0).deferred
    assert doomed_ptr in fake_cuda.freed  # released once the capture was over
    sk.synchronize()
    np.testing.assert_array_equal(a.numpy(), np.ones(16, np.float32))


# ---------------------------------------------------------------------------
# Without a GPU: clear errors, never a crash


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
def test_cuda_device_without_gpu_raises_runtime_error():
    with pytest.raises(RuntimeError, match="CUDA"):
        sk.get_device("cuda:0")
    with pytest.raises(RuntimeError, match="CUDA"):
        sk.zeros(4, device="cuda:0")
    with pytest.raises(RuntimeError):
        driver.alloc(0, 16)
    with pytest.raises(RuntimeError, match="CUDA"):
        cstream.Stream("cuda:0")


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
def test_enumerate_devices_without_gpu():
    assert driver.enumerate_devices() == []
    reason = driver.unavailable_reason()
    assert isinstance(reason, str) and reason
    assert not driver.is_available()
    sk.synchronize()  # a no-op, not an error


def test_nvrtc_target_arch():
    if not HAS_NVRTC:
        pytest.skip("NVRTC is not installed")
    assert cmodule.target_arch("sm_90") == "sm_90"
    newest = max(cmodule.supported_archs())
    assert cmodule.target_arch("sm_999") == f"compute_{newest}"  # future GPU: PTX, JIT-compiled by the driver
    with pytest.raises(RuntimeError, match="older"):
        cmodule.target_arch("sm_30")


def _module_source(kernels, mode="release", adjoint=False):
    options = dict(kmodule.compile_options(), mode=mode)
    specs = [k.specs[None] for k in kernels]
    for s in specs:
        s.build_ir(options)
    funcs, structs = kmodule.collect(specs)
    return codegen.gen_module("test_cuda_backend", [s.ir for s in specs], funcs, structs, options, __version__,
                              adjoint=adjoint)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_nvrtc_compiles_representative_module(arch):
    if not HAS_NVRTC:
        pytest.skip("NVRTC is not installed")
    kernels = [saxpy, grid2d, vec_kernel, heavy_write, integrate, out_of_bounds, expect_zero, prod_loop]
    for mode, adjoint in [("release", False), ("debug", False), ("release", True)]:
        src = _module_source(kernels, mode, adjoint)
        image = nvrtc.compile_source(src, arch, "test_cuda_backend")
        assert image[:4] == b"\x7fELF"
        for k in kernels:
            assert f"{k.specs[None].cname}_cuda_{'bwd' if adjoint else 'fwd'}".encode() in image
        if mode == "debug":
            assert b"_ZN2sk14sk_error_stateE" in image  # read by Unit after debug launches
        if adjoint:
            assert b"_ZN2sk13sk_stack_baseE" in image and b"_ZN2sk17sk_stack_capacityE" in image
    rt = nvrtc.compile_source(memops.RUNTIME_SOURCE, arch, "simkit_runtime")
    assert rt[:4] == b"\x7fELF" and b"sk_rt_fill" in rt and b"sk_rt_copy" in rt


def test_runtime_kernels_layout_matches_python():
    """RUNTIME_SOURCE's static_asserts hold on the host compiler too (sizes packed by driver.py)."""
    if not HAS_CXX:
        pytest.skip("no C++ compiler")
    src = _host_runtime_source()
    key = hashlib.sha256((src + cpu_backend.identity()).encode()).hexdigest()
    cpu_backend.load_or_build(src, key, "fakecuda_rt")
    assert memops._VIEW.size == 80 and memops._VIEW.size + memops._FILL_TAIL.size == 352
    assert 2 * memops._VIEW.size + memops._COPY_TAIL.size == 176


def test_fake_driver_type_checks_arguments():
    """The fake rejects calls cuda-python would reject (only meaningful without libcuda)."""
    fake = FakeDriver(validate=True)
    if not fake.validate or not _real_libcuda_missing():
        pytest.skip("needs cuda-python without the NVIDIA driver")
    with pytest.raises(AssertionError, match="rejects"):
        fake.cuMemFreeAsync("not a pointer", 0)
