"""Load NVRTC-compiled module source into a GPU context and launch its kernels.

``load_unit`` compiles (or takes from the disk cache) the CUBIN of a generated
module for the device's architecture, loads it with ``cuModuleLoadData`` and
returns a :class:`Unit`. ``Unit.launch`` runs a kernel entry

    extern "C" __global__ void <cname>_cuda_fwd(<cname>_args a, sk::launch_bounds_t b)

Kernel arguments are passed through ``kernelParams``: an array of two pointers,
one to the packed argument struct and one to the launch bounds. The driver reads
each parameter's size and offset from the CUBIN, so no alignment arithmetic is
done here, and it copies the parameter values during the ``cuLaunchKernel``
call (and into the graph node during capture), so the host buffers only need to
live for the call. cuda-python takes ``kernelParams`` as a plain integer
address of a ``void*[2]`` array (its documented "already configured void**"
form), which avoids its ctypes-type conversion path; ``extra`` is passed as 0.
Where it can be built, ``native_launch`` does the same in one C call (the context
made current only when it is not), which is the path every real GPU takes.

Launches are asynchronous. The module's ``sk::sk_error_state`` is read back (one
stream synchronization) only in debug mode, for kernels that report errors in
release mode (``expect_*``), and for adjoint kernels with loop stacks, whose
``sk_stack_base``/``sk_stack_capacity`` are pointed at a per-stream scratch buffer
before the launch. A unit is loaded lazily into every device that launches it
(pass ``device=`` to :meth:`Unit.launch`).
"""
from __future__ import annotations

import ctypes
import re
import struct as _struct

from .... import config
from ... import interleave
from . import driver, native_launch, nvrtc, timing

# Device globals live in namespace sk: their symbols are mangled (Itanium ABI)
_ERROR_SYMBOLS = (b"_ZN2sk14sk_error_stateE", b"sk_error_state")
_STACK_BASE = b"_ZN2sk13sk_stack_baseE"  # char*: per-thread adjoint loop stacks (native/stack.h)
_STACK_CAP = b"_ZN2sk17sk_stack_capacityE"  # int64: bytes per CUDA thread, 16-byte header included
_DET_KEYS = b"_ZN2sk11sk_det_keysE"  # int64*, double*: the slots of a recording launch (native/det_record.h)
_DET_VALS = b"_ZN2sk11sk_det_valsE"
_DET_SPAN = b"_ZN2sk11sk_det_spanE"
_DET_COUNTS = b"_ZN2sk13sk_det_countsE"
_DET_OFFSETS = b"_ZN2sk14sk_det_offsetsE"
_DET_TABLE = b"_ZN2sk12sk_det_tableE"  # a backward recording variant's gradient arrays (native/det_grad.h)
_DET_NTABLE = b"_ZN2sk13sk_det_ntableE"
_DET_FAIL = b"_ZN2sk11sk_det_failE"
_ERROR = _struct.Struct("<iiqqq")  # code, line, a, b, c (32 bytes)
_ARGV = ctypes.c_void_p * 2  # kernelParams: the packed arguments, the launch bounds

#: Adjoint loop stacks: bytes per CUDA thread and the most memory all threads of one launch may use
#: (launches are given fewer blocks to stay under it; the grid-stride loop covers the rest).
#: ``simkit.config.cuda_stack_bytes`` / ``cuda_stack_budget`` override these when set.
STACK_BYTES = 16 * 1024
STACK_BUDGET = 1 << 30

_supported: list | None = None


def supported_archs() -> list:
    """Compute capabilities NVRTC can compile for, e.g. [75, 80, 86, 89, 90, ...]."""
    global _supported
    if _supported is None:
        try:
            from cuda.bindings import nvrtc as nv

            r = nv.nvrtcGetSupportedArchs()
            _supported = sorted(int(a) for a in r[1]) if int(r[0]) == 0 else []
        except Exception:  # pragma: no cover - very old NVRTC
            _supported = []
    return _supported


def target_arch(arch: str) -> str:
    """NVRTC target for a GPU ``arch`` ("sm_90"): itself when NVRTC supports it (CUBIN), else PTX for the
    newest older ``compute_XX`` (the driver JIT-compiles it)."""
    cc = int(arch.split("_", 1)[1].rstrip("af"))
    sup = supported_archs()
    if not sup or cc in sup:
        return arch
    older = [a for a in sup if a <= cc]
    if not older:
        raise RuntimeError(f"GPU architecture {arch} is older than the oldest one NVRTC {nvrtc.version()} supports "
                           f"(sm_{sup[0]})")
    return f"compute_{older[-1]}"


def _image_for(source: str, target: str, name: str, level: int | None = None) -> bytes:
    """CUBIN (or NUL-terminated PTX) bytes of ``source`` for ``target`` (cached on disk); ``level``: the module's
    ``optimization_level`` (nvrtc.options)."""
    path = nvrtc.compile_cached(source, target, name, level)
    with open(path, "rb") as f:
        data = f.read()
    if target.startswith("compute_") and not data.endswith(b"\0"):
        data += b"\0"
    return data


def device_target(device) -> str:
    """The NVRTC target (``sm_90``...) that loads run on ``device`` compile for."""
    return target_arch(driver.enumerate_devices()[driver.state(device).ordinal][2])


def precompile(source: str, name: str, target: str, level: int | None = None) -> None:
    """Compile ``source`` for ``target`` into the disk cache, without loading it (any thread may run it: NVRTC
    releases the GIL; a failed compile is left for the load to raise)."""
    try:
        _image_for(source, target, name, level)
    except Exception:  # noqa: BLE001 - (the load compiles it again and raises the error where it is expected)
        pass


def load_module(device, source: str, name: str, ptx: bool = False, level: int | None = None):
    """Compile ``source`` for ``device`` (a Device or ordinal) and load it into its context; returns a CUmodule.
    ``ptx``: as PTX, which the driver compiles at load (and links against its device runtime); ``level``: the
    module's ``optimization_level``."""
    st = driver.state(device)
    arch = driver.enumerate_devices()[st.ordinal][2]
    target = target_arch(arch)
    if ptx and target.startswith("sm_"):
        target = "compute_" + target[3:]
    image = _image_for(source, target, name, level)
    st.make_current()
    try:
        return driver.check(driver.cu().cuModuleLoadData(image), f"cuModuleLoadData({name}, {arch})")
    except driver.CudaError as e:
        raise driver.CudaError(f"{e} [driver CUDA {driver.driver_version()}, NVRTC {nvrtc.version()}: a driver "
                               "older than NVRTC may reject its binaries; update the NVIDIA driver]", e.code) from None


def _global(module, symbol: bytes) -> int:
    """Device address of a ``__device__`` variable of ``module`` (0 when the module has none)."""
    r = driver.cu().cuModuleGetGlobal(module, symbol)
    return int(r[1]) if int(r[0]) == 0 else 0


def _set_global64(addr: int, value: int, s: int) -> None:
    """Set a module's 64-bit ``__device__`` variable at ``addr``, ordered on stream ``s`` (two 32-bit memsets: so
    a graph capture records it too)."""
    api = driver.cu()
    driver.check(api.cuMemsetD32Async(addr, value & 0xFFFFFFFF, 1, s), "cuMemsetD32Async")
    driver.check(api.cuMemsetD32Async(addr + 4, (value >> 32) & 0xFFFFFFFF, 1, s), "cuMemsetD32Async")


def _cu_result(api, code: int):
    """The CUresult of an error code returned from C (the plain int if the binding has no such value)."""
    try:
        return api.CUresult(code)
    except ValueError:
        return code


class Entry:
    """A kernel entry point of a unit (resolved per device on first use there)."""

    __slots__ = ("cname", "which", "name", "activity")

    def __init__(self, cname: str, which: str):
        self.cname = cname
        self.which = which
        self.name = f"{cname}_cuda_{which}"
        key = re.sub(r"_[0-9a-f]{8}$", "", cname)  # (the kernel's name, without the hash of its source)
        self.activity = f"{'forward' if which == 'fwd' else 'backward'} kernel {key}"  # (its name in timings)

    def __repr__(self):
        return f"Entry({self.name})"


class _Loaded:
    """A unit's module loaded on one device: module handle, functions, error-state address."""

    __slots__ = ("module", "funcs", "err_ptr", "stack", "det")

    def __init__(self, module, err_ptr, stack, det=None):
        self.module = module
        self.funcs: dict = {}  # entry name -> _Function
        self.err_ptr = err_ptr
        self.stack = stack  # (address of sk_stack_base, address of sk_stack_capacity) or None
        self.det = det  # (addresses of sk_det_keys, _vals, _span, _counts, _offsets) of a recording variant, or None


class _Function:
    """A kernel entry resolved on one device: what each launch needs, looked up once."""

    __slots__ = ("func", "handle", "maxt", "sizes", "ctx", "native", "driver", "stack", "checked", "ways", "full")

    def __init__(self, func, maxt: int, sizes, st, rec: _Loaded, entry_name: str, may_error: bool, ways: int):
        self.func = func  # CUfunction (cuda-python)
        self.handle = int(func)
        self.maxt = maxt  # max threads per block
        self.sizes = sizes  # (bytes of the packed arguments, bytes of the bounds), None if unknown
        self.ctx = int(st.ctx)
        if st.launcher is False:
            st.launcher = native_launch.launcher(st.api)
        # the one-call C launch and its driver table, or None (through cuda-python)
        self.native, self.driver = (st.launcher.fn, st.launcher.driver) if st.launcher else (None, 0)
        self.stack = rec.stack if entry_name.endswith("_bwd") else None
        self.checked = self.stack is not None or may_error  # read the error state after launches
        self.ways = ways  # launch indices per CUDA thread the entry interleaves (kernels/interleave.py)
        self.full = st.sm_count * st.resident_threads * ways  # from this launch size on: `ways` per thread


class Unit:
    """One compiled module for one GPU architecture; loaded lazily into each device's context that uses it."""

    def __init__(self, source: str, name: str, device, specs=(), options=None):
        self.source = source
        self.name = name
        self.device = device
        self.specs = list(specs)
        self.options = dict(options or {})
        self.device_kind = device.kind
        self.uses_stack = "sk::push(" in source  # adjoint code with dynamic loops
        # kernels that report errors even in release mode (expect_*): their error state is read after launch
        self._may_error = {s.cname for s in self.specs if getattr(s, "may_error", False)}
        # kernels whose forward entry runs several launch indices per CUDA thread
        self._interleaved = {s.cname for s in self.specs if interleave.eligible(getattr(s, "ir", None))}
        self._loaded: dict = {}
        self._load(device.ordinal)  # compile + load now: errors surface at build time

    # -- loading ------------------------------------------------------------

    def _load(self, ordinal: int) -> _Loaded:
        rec = self._loaded.get(ordinal)
        if rec is None:
            mod = load_module(ordinal, self.source, self.name, level=self.options.get("optimization_level"))
            err_ptr = 0
            for sym in _ERROR_SYMBOLS:
                err_ptr = _global(mod, sym)
                if err_ptr:
                    break
            stack = None
            if self.uses_stack:
                base, cap = _global(mod, _STACK_BASE), _global(mod, _STACK_CAP)
                stack = (base, cap) if base and cap else None
            det = None
            if "sk::det_record_" in self.source or "#define SK_DET_GRAD 1" in self.source:
                det = tuple(_global(mod, g) for g in (_DET_KEYS, _DET_VALS, _DET_SPAN, _DET_COUNTS, _DET_OFFSETS,
                                                      _DET_TABLE, _DET_NTABLE, _DET_FAIL))
            rec = self._loaded[ordinal] = _Loaded(mod, err_ptr, stack, det)
        return rec

    def set_record_slots(self, device, keys: int, vals: int, span: int, counts: int = 0, offsets: int = 0,
                         table: int = 0, ntable: int = 0, fail: int = 0) -> None:
        """Point a recording variant's ``sk_det_keys``/``sk_det_vals`` (and, for counted plans,
        ``sk_det_counts``/``sk_det_offsets``; for a backward kernel's, its gradient arrays' ``sk_det_table`` of
        ``sk_det_ntable`` rows and its ``sk_det_fail`` flag) at these device buffers and set its key ``sk_det_span``
        for its next launch on the device's current stream (memsets ordered on it, so graph capture records them
        too). Variables the variant does not have are skipped."""
        s = driver.state(device.ordinal).stream()
        values = (keys, vals, span, counts, offsets, table, ntable, fail)
        for addr, value in zip(self._load(device.ordinal).det, values):
            if addr:
                _set_global64(addr, value, s)

    def _function(self, ordinal: int, name: str) -> _Function:
        rec = self._load(ordinal)
        f = rec.funcs.get(name)
        if f is None:
            api = driver.cu()
            func = driver.check(api.cuModuleGetFunction(rec.module, name.encode()), f"cuModuleGetFunction({name})")
            maxt = int(driver.check(api.cuFuncGetAttribute(
                api.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, func), "cuFuncGetAttribute"))
            sizes = None
            if hasattr(api, "cuFuncGetParamInfo"):  # CUDA >= 12.4: lets launch() check the argument layout
                try:
                    sizes = tuple(int(driver.check(api.cuFuncGetParamInfo(func, i), "cuFuncGetParamInfo")[1])
                                  for i in range(2))
                except Exception:
                    sizes = None
            cname, which = name.rsplit("_cuda_", 1)
            ways = interleave.WAYS if which == "fwd" and cname in self._interleaved else 1
            f = rec.funcs[name] = _Function(func, maxt, sizes, driver.state(ordinal), rec, name,
                                            cname in self._may_error, ways)
        return f

    def entry(self, cname: str, which: str = "fwd") -> Entry:
        e = Entry(cname, which)
        self._function(self.device.ordinal, e.name)  # fails now if the entry is missing
        return e

    # -- launching ----------------------------------------------------------

    def _resolve(self, stream, device):
        """(ordinal, stream handle) for a launch on an explicit ``stream`` (launch() handles None itself)."""
        if hasattr(stream, "handle"):  # a simkit Stream
            ordinal = stream.device.ordinal
            if device is not None and device.ordinal != ordinal:
                raise ValueError(f"stream is on {stream.device.alias}, launch is on {device.alias}")
            return ordinal, stream.handle
        ordinal = device.ordinal if device is not None else self.device.ordinal
        if hasattr(stream, "cuda_stream"):  # e.g. torch.cuda.Stream
            return ordinal, int(stream.cuda_stream)
        return ordinal, int(stream)  # a raw CUstream handle (int or cuda-python CUstream)

    def launch(self, entry: Entry, packed: bytes, bounds: bytes, size: int, block_dim: int = 256, stream=None,
               device=None, max_blocks: int = 0):
        """Launch ``entry`` over ``size`` threads in blocks of ``block_dim``, at most ``max_blocks`` of
        them (0: ``driver.GRID_CAP``; a grid-stride loop covers the rest); returns None, or
        (code, line, a, b, c) in debug mode."""
        if size <= 0:
            return None
        if stream is None:  # the common case, kept short: launch overhead is a target (benchmarks/gpu.py)
            ordinal = (device or self.device).ordinal
            st = driver._states.get(ordinal) or driver.state(ordinal)
            cur = st.current
            s = cur.handle if cur is not None else st.default_stream
        else:
            ordinal, s = self._resolve(stream, device)
            st = driver.state(ordinal)
        rec = self._loaded.get(ordinal)
        f = rec.funcs.get(entry.name) if rec is not None else None
        if f is None:
            f = self._function(ordinal, entry.name)
        nb = len(packed)
        sizes = f.sizes
        if sizes is not None and (nb != sizes[0] or len(bounds) != sizes[1]):
            raise RuntimeError(f"kernel {entry.cname}: argument layout mismatch (packed {nb} bytes, "
                               f"bounds {len(bounds)} bytes; the kernel expects {sizes[0]} and {sizes[1]})")
        block = block_dim if block_dim.__class__ is int and 0 < block_dim <= f.maxt else \
            max(1, min(int(block_dim) if block_dim else 256, f.maxt, 1024))
        per_block = block * f.ways if size >= f.full else block  # (small launches: more blocks, more SMs)
        grid = (size + per_block - 1) // per_block
        cap = max_blocks if max_blocks > 0 else driver.GRID_CAP
        if grid > cap:
            grid = cap
        if f.stack is not None:
            st.make_current()
            grid = self._setup_stack(st, f.stack, s, grid, block)
        timed = timing.start(st, s, timing.TIMING_KERNEL, entry.activity) if timing.FILTER else None
        go = f.native
        if go is not None:  # one C call: the context check and cuLaunchKernel
            r = go(f.driver, f.ctx, f.handle, grid, block, s, packed, bounds)
            if r:
                driver.check((_cu_result(st.api, r),), f"launch of kernel {entry.cname} on cuda:{ordinal}")
        else:
            api = st.api
            r = api.cuCtxSetCurrent(st.ctx)
            if int(r[0]):
                driver.check(r, "cuCtxSetCurrent")
            # one buffer holds both parameters (the driver copies them during the call)
            off = (nb + 15) & ~15
            buf = ctypes.create_string_buffer(packed.ljust(off, b"\0") + bounds)
            addr = ctypes.addressof(buf)
            argv = _ARGV(addr, addr + off)
            r = api.cuLaunchKernel(f.func, grid, 1, 1, block, 1, 1, 0, s, ctypes.addressof(argv), 0)
            if int(r[0]):
                driver.check(r, f"launch of kernel {entry.cname} on cuda:{ordinal}")
        if timed is not None:
            timing.stop(timed)
        if f.checked or config.mode == "debug":
            return self._read_error(st, ordinal, s)  # (a stack overflow must never pass silently)
        return None

    def _setup_stack(self, st, stack, s: int, grid: int, block: int) -> int:
        """Point the module's sk_stack_base/sk_stack_capacity at a scratch buffer for this launch (ordered on
        stream ``s`` with memsets, so it also works inside graph capture); returns the grid to use."""
        cap = int(getattr(config, "cuda_stack_bytes", None) or STACK_BYTES)
        cap = max(64, (cap + 15) // 16 * 16)
        budget = int(getattr(config, "cuda_stack_budget", None) or STACK_BUDGET)
        grid = max(1, min(grid, budget // (cap * block)))
        base = driver.scratch(st.ordinal, s, grid * block * cap)
        for addr, value in ((stack[0], base), (stack[1], cap)):
            _set_global64(addr, value, s)
        return grid

    def _read_error(self, st, ordinal: int, s: int):
        """Synchronize ``s`` and read (then clear) the module's error state; None when no error was reported."""
        rec = self._loaded[ordinal]
        if not rec.err_ptr or st.capturing:
            return None  # no checks compiled in, or cannot synchronize inside a graph capture
        api = driver.cu()
        buf = ctypes.create_string_buffer(_ERROR.size)
        driver.check(api.cuMemcpyDtoHAsync(ctypes.addressof(buf), rec.err_ptr, _ERROR.size, s), "cuMemcpyDtoHAsync")
        driver.check(api.cuStreamSynchronize(s), "cuStreamSynchronize")
        code, line, a, b, c = _ERROR.unpack(buf.raw)
        if code == 0:
            return None
        driver.check(api.cuMemsetD8Async(rec.err_ptr, 0, _ERROR.size, s), "cuMemsetD8Async")
        driver.check(api.cuStreamSynchronize(s), "cuStreamSynchronize")
        return (code, line, a, b, c)

    def error(self, device=None):
        """(code, line, a, b, c) of a reported error on ``device`` (default: the unit's), or None."""
        ordinal = device.ordinal if device is not None else self.device.ordinal
        st = driver.state(ordinal)
        return self._read_error(st, ordinal, st.stream())


def load_unit(source: str, name: str, device, specs=(), options=None) -> Unit:
    """Compile ``source`` with NVRTC for ``device`` (cached) and load it; see :class:`Unit`."""
    return Unit(source, name, device, specs, options)
