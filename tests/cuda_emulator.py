"""A CUDA GPU emulated on the CPU, for the tests: a fake ``cuda.bindings.driver`` that runs the CUDA code.

:class:`FakeDriver` stands in for cuda-python's driver module (``driver._api``):
device memory is host memory, streams run their work at once (or record it while a
graph is captured), and a launch runs the kernel's CUDA entry point, compiled for the
host (``cuda_emulator_build.py``, ``simkit/kernels/native/cuda_emu.h``), once per
emulated thread. So the GPU code paths (grid-stride loops, the per-thread adjoint
stack, the device error state, the ``SK_CUDA`` branches of the spatial queries,
the strided fill/copy runtime kernels) run in CI without a GPU. NVRTC compiles the
same sources in other tests (``conftest.py`` verifies every module for sm_80/sm_90);
what the emulator cannot check: real concurrency (threads run one at a time),
device-only intrinsics' exact rounding, timing.

Where the NVIDIA driver library is absent, every call is also handed to the real
binding first, which type-checks the arguments before failing to load libcuda: a
wrong argument type fails here, not on the first GPU.

:class:`~cuda_emulator_world.EmulatedWorld` (tests/cuda_emulator_world.py) swaps the emulator in and out of
the process, so one emulated GPU can persist across tests while other tests still see a machine without one.
"""
from __future__ import annotations

import bisect
import collections
import ctypes
import hashlib
import itertools
import re
import threading
import types

import numpy as np
from cuda_emulator_build import emulated_library
from cuda_emulator_fake import _fake, _real_driver, _real_libcuda_missing  # noqa: F401  (re-exported)
from cuda_emulator_graphs import GraphCalls


FAKE_ARCH = "sm_87"  # the architecture of test_cuda_backend's fake GPUs
STACK_BASE = b"_ZN2sk13sk_stack_baseE"
STACK_CAP = b"_ZN2sk17sk_stack_capacityE"
GLOBAL_SIZES = {b"_ZN2sk14sk_error_stateE": 32, STACK_BASE: 8, STACK_CAP: 8, b"_ZN2sk11sk_det_keysE": 8,
                b"_ZN2sk11sk_det_valsE": 8, b"_ZN2sk11sk_det_spanE": 8, b"_ZN2sk13sk_det_countsE": 8,
                b"_ZN2sk14sk_det_offsetsE": 8, b"_ZN2sk12sk_det_tableE": 8, b"_ZN2sk13sk_det_ntableE": 8,
                b"_ZN2sk11sk_det_failE": 8}


class _Span:
    """A device range that is not a host buffer of the fake (a module's ``__device__`` variable)."""

    def __init__(self, size: int):
        self.size = size

    def __len__(self):
        return self.size


# ---------------------------------------------------------------------------
# The fake driver


class _FStream:
    def __init__(self, ctx, flags=0, priority=0):
        self.ctx = ctx
        self.flags = flags
        self.priority = priority
        self.capture = None  # list of ops while capturing (shared with the streams that joined the capture)
        self.invalidated = False
        self.joined = False  # in another stream's capture (through an event recorded in it)


class FakeDriver(GraphCalls):
    """Simulates the parts of ``cuda.bindings.driver`` that simkit uses, on the CPU.

    Device pointers are addresses of host buffers; operations on a stream run at once
    unless the stream is capturing (then they are recorded into the graph). Kernels run
    their CUDA entry points compiled for the host (:func:`emulated_library`). It enforces
    the rules the real driver enforces that matter here: work on a stream of another
    context, the legacy stream or a synchronization during capture, use of freed or
    unallocated memory, launches over the function's thread limit.
    """

    MAX_THREADS = 768  # per block (below 1024 to exercise the backend's clamping)
    FREED_KEEP = 64 << 20  # bytes of freed buffers kept (poisoned) to catch use after free

    def __init__(self, ndev: int = 1, arch: str = FAKE_ARCH, validate: bool | None = None,
                 reverse_threads: bool = False, native_launch: bool = False, resident_threads: int = 2048):
        self.real = _real_driver()
        self.resident_threads = resident_threads  # per SM (4 SMs): launches of 4x this fill the fake GPU
        self.native_launch = native_launch  # cuGetProcAddress gives C entry points (simkit's native launch)
        self.c_entry_points: dict | None = None
        self.reverse_threads = reverse_threads  # run each launch's threads last to first
        self.ndev = ndev
        self.arch = arch
        self.validate = _real_libcuda_missing() if validate is None else validate
        self.lock = threading.RLock()
        self.validating = threading.local()
        self.tls = threading.local()
        self.calls = collections.Counter()
        self.pool_attrs: dict = {}  # (pool, attribute) -> value (cuMemPoolSetAttribute)
        self.pool_access: dict = {}  # (pool, peer ordinal) -> granted (cuMemPoolSetAccess)
        self.validated: set = set()
        self.violations: list = []  # every rule broken (checked when the fixture ends)
        self.ids = itertools.count(0x10000, 0x10)
        self.mem: dict = {}  # base address -> (ctypes buffer, ordinal)
        self.bases: list = []  # self.mem's keys, sorted (a range's allocation is found by bisection)
        self.freed: dict = {}
        self.freed_bytes = 0
        self.host: dict = {}
        legacy = _FStream(None)  # handles 0 and CU_STREAM_LEGACY (1); 2 is CU_STREAM_PER_THREAD
        self.streams = {0: legacy, 1: legacy, 2: _FStream(None)}
        self.events: dict = {}
        self.modules: dict = {}
        self.functions: dict = {}
        self.graphs: dict = {}
        self.execs: dict = {}
        self.handles: list = []  # conditional handles' values and body-graph arrays (cuda_emulator_graphs.py)
        self.sources: dict = {}  # image bytes -> source (filled by image_for)
        self.clock = 0
        self.launches = collections.deque(maxlen=4096)  # the latest (function name, grid, block, stream)

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

    def add_memory(self, base: int, buf, ordinal: int) -> None:
        self.mem[base] = (buf, ordinal)
        bisect.insort(self.bases, base)

    def remove_memory(self, base: int):
        del self.bases[bisect.bisect_left(self.bases, base)]
        return self.mem.pop(base)

    def _base(self, ptr) -> int | None:
        """Base address of the allocation holding ``ptr`` (None when there is none)."""
        ptr = int(ptr)
        k = bisect.bisect_right(self.bases, ptr) - 1
        if k >= 0 and ptr < self.bases[k] + len(self.mem[self.bases[k]][0]):
            return self.bases[k]
        return None

    def check_range(self, ptr, n):
        ptr = int(ptr)
        base = self._base(ptr)
        if base is not None and ptr + n <= base + len(self.mem[base][0]):
            return True
        for fbase, (buf, _o) in self.freed.items():
            if fbase <= ptr < fbase + len(buf):
                raise AssertionError(f"use of freed device memory at 0x{ptr:x}")
        raise AssertionError(f"device range 0x{ptr:x}+{n} is not allocated")

    def enqueue(self, s, op):
        """0 on success, else an error code, as the real driver would return."""
        s = int(s)
        st = self.streams.get(s)
        if st is None:
            return 400  # CUDA_ERROR_INVALID_HANDLE
        if s in (0, 1):
            if any(x.capture is not None for x in self.streams.values()):
                for x in self.streams.values():
                    if x.capture is not None:
                        x.invalidated = True
                return 906  # CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
        elif st.ctx is not None and st.ctx != self.ctx():
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

    def image_for(self, source: str, target: str, name: str, level=None) -> bytes:
        """Stands in for ``cuda.module._image_for``: an ELF-tagged token of the source (NVRTC is checked apart; the
        emulated code builds with the emulator's flags, whatever the module's ``optimization_level``)."""
        image = b"\x7fELF" + hashlib.sha256(f"{target}\n{source}".encode()).digest()
        self.sources[image] = source
        return image

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
        return self.ok(f"Emulated GPU {int(dev)}".encode().ljust(n, b"\0"))

    @_fake
    def cuDeviceGetAttribute(self, attr, dev):
        A = self.real.CUdevice_attribute
        cc = int(self.arch[3:])
        values = {A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: cc // 10,
                  A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: cc % 10,
                  A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 4,
                  A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: 48 * 1024,
                  A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: self.resident_threads,
                  A.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: 1}
        return self.ok(values[attr]) if attr in values else self.err(1, 1)

    TOTAL_MEMORY = 16 << 30  # what cuMemGetInfo reports as each emulated GPU's memory

    @_fake
    def cuMemGetInfo(self):
        ordinal = (self.ctx() or 0xC000) - 0xC000
        used = sum(len(buf) for buf, o in self.mem.values() if o == ordinal)
        return self.ok(self.TOTAL_MEMORY - used, self.TOTAL_MEMORY)

    @_fake
    def cuDeviceTotalMem(self, dev):
        return self.ok(self.TOTAL_MEMORY)

    @_fake
    def cuDeviceGetPCIBusId(self, n, dev):
        return self.ok(f"0000:{0x65 + int(dev):02X}:00.0".encode().ljust(n, b"\0"))

    @_fake
    def cuDeviceGetUuid(self, dev):
        return self.ok(types.SimpleNamespace(bytes=bytes([0xE0 + int(dev)] * 16)))

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
        self.pool_attrs[(int(pool), int(attr))] = int(value)
        return self.ok()

    @_fake
    def cuMemPoolGetAttribute(self, pool, attr):
        A = self.real.CUmemPool_attribute
        if attr in (A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT, A.CU_MEMPOOL_ATTR_USED_MEM_HIGH):
            ordinal = int(pool) - 0xF000
            used = sum(len(buf) for buf, o in self.mem.values() if o == ordinal)
            self.pool_attrs[(int(pool), "high")] = max(used, self.pool_attrs.get((int(pool), "high"), 0))
            return self.ok(self.real.cuuint64_t(used if attr == A.CU_MEMPOOL_ATTR_USED_MEM_CURRENT
                                                else self.pool_attrs[(int(pool), "high")]))
        return self.ok(self.real.cuuint64_t(self.pool_attrs.get((int(pool), int(attr)), 0)))

    @_fake
    def cuDeviceCanAccessPeer(self, dev, peer):
        return self.ok(1)  # (the emulated GPUs share the host's memory)

    @_fake
    def cuMemPoolGetAccess(self, pool, location):
        granted = self.pool_access.get((int(pool), int(location.id)), False)
        flags = self.real.CUmemAccess_flags
        return self.ok(flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE if granted else flags.CU_MEM_ACCESS_FLAGS_PROT_NONE)

    @_fake
    def cuMemPoolSetAccess(self, pool, descs, count):
        for d in descs[:count]:
            granted = int(d.flags) == int(self.real.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            self.pool_access[(int(pool), int(d.location.id))] = granted
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
        ev = self.events.get(int(e))
        if ev is None:
            return self.err(400)
        st = self.streams.get(int(s))
        ops = ev.get("capture")
        if st is not None and st.capture is None and ops is not None and any(x.capture is ops for x in
                                                                             self.streams.values()):
            # a stream waiting on an event recorded in a capture joins it (CUDA's cross-stream capture): its
            # work goes into the same graph, in issue order (which respects every dependency)
            st.capture, st.invalidated, st.joined = ops, False, True
            return self.ok()
        return self.err(self.enqueue(s, lambda: None))

    @_fake
    def cuStreamIsCapturing(self, s):
        st = self.streams[int(s)]
        return self.ok(self.real.CUstreamCaptureStatus(1 if st.capture is not None else 0))

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
        st = self.streams.get(int(s))
        ev["capture"] = st.capture if st is not None else None  # (recorded in a capture: a fork or join point)

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
        self.add_memory(ctypes.addressof(buf), buf, ordinal)
        return self.ok(self.real.CUdeviceptr(ctypes.addressof(buf)))

    @_fake
    def cuMemAllocAsync(self, n, s):
        st = self.streams.get(int(s))
        if st is None or (st.ctx is not None and st.ctx != self.ctx()):
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
            buf, o = self.remove_memory(ptr)
            ctypes.memset(buf, 0xDD, len(buf))
            self.freed[ptr] = (buf, o)
            self.freed_bytes += len(buf)
            while self.freed_bytes > self.FREED_KEEP:  # the oldest go back to the host allocator
                old = self.freed.pop(next(iter(self.freed)))
                self.freed_bytes -= len(old[0])

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
        src = int(src)
        if any(base <= src and src + n <= base + len(buf) for base, buf in self.host.items()):
            return self.err(self.enqueue(s, lambda: ctypes.memmove(int(dst), src, n)))  # pinned: read when run
        st = self.streams.get(int(s))
        if st is not None and st.capture is not None:
            st.invalidated = True
            return self.err(900)  # CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: a graph cannot read pageable memory
        data = ctypes.string_at(src, n)  # pageable memory is staged at the call
        return self.err(self.enqueue(s, lambda: ctypes.memmove(int(dst), data, n)))

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

    # -- modules and launches --------------------------------------------------

    @_fake
    def cuModuleLoadData(self, image):
        image = bytes(image)
        assert image[:4] == b"\x7fELF", "expected a CUBIN (ELF) image"
        source = self.sources[image]
        lib, kernels = emulated_library(source, (self.ctx() or 0xC000) - 0xC000)
        h = next(self.ids)
        self.modules[h] = {"lib": lib, "kernels": kernels, "source": source, "globals": {}, "ctx": self.ctx()}
        return self.ok(self.real.CUmodule(h))

    @_fake
    def cuModuleGetGlobal(self, mod, name):
        m = self.modules[int(mod)]
        name = bytes(name)
        try:
            addr = ctypes.addressof(ctypes.c_char.in_dll(m["lib"], name.decode()))
        except ValueError:
            return self.err(500, 2)  # CUDA_ERROR_NOT_FOUND
        size = GLOBAL_SIZES[name]
        if addr not in self.mem:  # device memory of the module's context
            self.add_memory(addr, _Span(size), (m["ctx"] or 0xC000) - 0xC000)
        m["globals"][name] = addr
        return self.ok(self.real.CUdeviceptr(addr), size)

    @_fake
    def cuModuleGetFunction(self, mod, name):
        m = self.modules.get(int(mod))
        name = bytes(name).decode()
        if m is None:
            return self.err(400, 1)
        if name not in m["kernels"]:
            return self.err(500, 1)
        h = next(self.ids)
        self.functions[h] = (m, name)
        return self.ok(self.real.CUfunction(h))

    @_fake
    def cuFuncGetAttribute(self, attr, f):
        A = self.real.CUfunction_attribute
        values = {A.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: self.MAX_THREADS, A.CU_FUNC_ATTRIBUTE_NUM_REGS: 32,
                  A.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: 0}
        assert attr in values, attr
        return self.ok(values[attr])

    @_fake
    def cuOccupancyMaxPotentialBlockSize(self, f, size_fn, shmem, limit):
        assert int(f) in self.functions and size_fn is None
        block = (min(int(limit) or self.MAX_THREADS, self.MAX_THREADS, self.resident_threads) // 32) * 32 or 32
        return self.ok(4 * max(1, self.resident_threads // block), block)  # (min grid: every SM full)

    @_fake
    def cuProfilerStart(self):
        self.profiling = True
        return self.ok()

    @_fake
    def cuProfilerStop(self):
        self.profiling = False
        return self.ok()

    @_fake
    def cuFuncGetParamInfo(self, f, i):
        m, name = self.functions[int(f)]
        params = m["kernels"][name].params
        if i >= len(params):
            return self.err(1, 2)
        offset = 0
        for size, align in params[:i + 1]:
            offset = (offset + align - 1) // align * align + size
        return self.ok(offset - params[i][0], params[i][0])

    @_fake
    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra):
        m, name = self.functions[int(f)]
        assert extra == 0 and isinstance(params, int) and params, "kernelParams must be a void** address"
        if m["ctx"] != self.ctx():
            raise AssertionError(f"{name}: launched while another context is current")
        if not (1 <= gx and gy == gz == by == bz == 1 and 1 <= bx <= self.MAX_THREADS):
            return self.err(1)  # CUDA_ERROR_INVALID_VALUE
        kernel = m["kernels"][name]
        sizes = [size for size, _align in kernel.params]
        ptrs = (ctypes.c_void_p * len(sizes)).from_address(params)
        # the driver copies the parameter values now (so may the caller free its buffers)
        copies = [ctypes.create_string_buffer(ctypes.string_at(ptrs[k], n), n) for k, n in enumerate(sizes)]
        argv = (ctypes.c_void_p * len(copies))(*[ctypes.addressof(c) for c in copies])
        ordinal = self.ctx() - 0xC000
        for word in np.frombuffer(copies[0].raw[: sizes[0] // 8 * 8], dtype=np.uint64).tolist():
            if word in self.mem and self.mem[word][1] != ordinal:  # an array argument of another device
                raise AssertionError(f"{name}: launched on device {ordinal} with memory of device "
                                     f"{self.mem[word][1]}")
        self.launches.append((name, gx, bx, int(s)))
        g = m["globals"]

        def op(copies=copies):  # (the parameter copies live as long as a graph that holds this launch)
            if name.endswith("_cuda_bwd") and "sk::push(" in m["source"]:  # the backend must have set the stack
                base = ctypes.c_uint64.from_address(g[STACK_BASE]).value
                cap = ctypes.c_int64.from_address(g[STACK_CAP]).value
                assert cap >= 64 and cap % 16 == 0, cap
                self.check_range(base, gx * bx * cap)
            kernel.launch(argv, gx, bx, self.reverse_threads)

        return self.err(self.enqueue(s, op))

    # -- C entry points (simkit's native launch calls these from C) ---------------

    @_fake
    def cuGetProcAddress(self, symbol, version, flags):
        fn = self._entry_points().get(bytes(symbol).decode()) if self.native_launch else None
        if fn is None:
            return self.err(500, 2)  # CUDA_ERROR_NOT_FOUND
        return self.ok(ctypes.cast(fn, ctypes.c_void_p).value,
                       self.real.CUdriverProcAddressQueryResult.CU_GET_PROC_ADDRESS_SUCCESS)

    def _entry_points(self) -> dict:
        """ctypes callbacks with the C signatures of the driver functions native_launch calls."""
        if self.c_entry_points is None:
            def result(fn, *args) -> int:
                try:
                    return int(fn(*args)[0])
                except Exception as e:  # an exception cannot cross C: recorded, and an error returned
                    self.violations.append(f"{fn.__name__} (from C): {e!r}")
                    return 999  # CUDA_ERROR_UNKNOWN

            def launch(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra):
                return result(self.cuLaunchKernel, self.real.CUfunction(f or 0), gx, gy, gz, bx, by, bz, shmem,
                              s or 0, params, extra or 0)

            def get_current(out):
                self.calls["cuCtxGetCurrent"] += 1
                out[0] = self.ctx() or None
                return 0

            u = ctypes.c_uint
            self.c_entry_points = {
                "cuLaunchKernel": ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, u, u, u, u, u, u, u,
                                                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(launch),
                "cuCtxGetCurrent": ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p))(get_current),
                "cuCtxSetCurrent": ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(
                    lambda c: result(self.cuCtxSetCurrent, self.real.CUcontext(c or 0))),
            }
        return self.c_entry_points
