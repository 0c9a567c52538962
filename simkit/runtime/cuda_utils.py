"""Warp's small CUDA utilities: driver and toolkit versions, profiler control, scoped memory-pool and peer-access
settings, and the occupancy-based block size and register use of a kernel.

    with sk.ScopedCudaProfiler():              # Nsight Systems: --capture-range=cudaProfilerApi
        simulate()
    block, min_grid = sk.get_suggested_block_size(step, "cuda:0")
    sk.launch(step, n, inputs=[...], block_dim=block)
    sk.get_cuda_kernel_properties(step, "cuda:0")   # {"register_count": 40, "local_memory_size": 0}
"""
from __future__ import annotations

import numpy as np

from ..kernels.backends.cuda import driver
from . import memory_pools
from .device import get_device


def get_cuda_driver_version() -> tuple | None:
    """The CUDA driver's version as ``(major, minor)`` (``(12, 4)``); None without a driver."""
    v = driver.driver_version()
    return (v // 1000, v % 1000 // 10) if v else None


def get_cuda_toolkit_version() -> tuple | None:
    """The CUDA toolkit simkit compiles with (its NVRTC) as ``(major, minor)``; None without NVRTC."""
    from ..kernels.backends.cuda import nvrtc

    if not nvrtc.is_available():
        return None
    return tuple(int(v) for v in nvrtc.version().split(".")[:2])


def _cuda_state(device, what: str):
    dev = get_device(device)
    if not dev.is_cuda:
        raise RuntimeError(f"{what} needs a CUDA device, got '{dev.alias}'")
    return driver.state(dev)


def cuda_profiler_start(device=None) -> None:
    """Start the attached CUDA profiler's collection (``cuProfilerStart``) for ``device``'s context (default: the
    current device); nothing happens without a profiler attached."""
    st = _cuda_state(device, "cuda_profiler_start")
    with st.pushed():
        driver.check(st.api.cuProfilerStart(), "cuProfilerStart")


def cuda_profiler_stop(device=None) -> None:
    """Stop the attached CUDA profiler's collection (``cuProfilerStop``) for ``device``'s context."""
    st = _cuda_state(device, "cuda_profiler_stop")
    with st.pushed():
        driver.check(st.api.cuProfilerStop(), "cuProfilerStop")


class ScopedCudaProfiler:
    """``cuda_profiler_start`` on entry, ``cuda_profiler_stop`` on exit, for the device given (resolved now)."""

    def __init__(self, device=None):
        self.device = get_device(device)

    def __enter__(self):
        cuda_profiler_start(self.device)
        return self

    def __exit__(self, *exc):
        cuda_profiler_stop(self.device)
        return False


class _ScopedSetting:
    """Set a boolean device setting inside the block; restore what it was on exit."""

    def __init__(self, get, set_, args, enable: bool):
        self._get, self._set, self._args, self.enable = get, set_, args, bool(enable)

    def __enter__(self):
        self._saved = self._get(*self._args)
        self._set(*self._args, self.enable)
        return self

    def __exit__(self, *exc):
        self._set(*self._args, self._saved)
        return False


class ScopedMempool(_ScopedSetting):
    """``with sk.ScopedMempool(device, enable):`` allocations on ``device`` use (or not) its memory pool."""

    def __init__(self, device, enable: bool):
        super().__init__(memory_pools.is_mempool_enabled, memory_pools.set_mempool_enabled, (device,), enable)


class ScopedMempoolAccess(_ScopedSetting):
    """``peer_device`` may (or may not) access ``target_device``'s memory-pool allocations inside the block."""

    def __init__(self, target_device, peer_device, enable: bool = True):
        super().__init__(memory_pools.is_mempool_access_enabled, memory_pools.set_mempool_access_enabled,
                         (target_device, peer_device), enable)


class ScopedPeerAccess(_ScopedSetting):
    """``peer_device`` may (or may not) access ``target_device``'s memory directly inside the block."""

    def __init__(self, target_device, peer_device, enable: bool = True):
        super().__init__(memory_pools.is_peer_access_enabled, memory_pools.set_peer_access_enabled,
                         (target_device, peer_device), enable)


def _forward_function(kernel, dev, what: str):
    """The loaded forward entry (kernels/backends/cuda/module.py's _Function) of ``kernel`` on CUDA device ``dev``."""
    if kernel.generic:
        raise RuntimeError(f"{what}: kernel '{kernel.key}' is generic: it requires a concrete overload, and its "
                           "specialisations are chosen at launch (query a kernel with concrete parameter types)")
    from ..kernels.module import native_key

    spec = kernel.specs[None]
    key = native_key(dev, False)
    if key not in spec.native:
        kernel.module.load_spec(spec, dev)
    entry, unit = spec.native[key]
    return unit._function(dev.ordinal, entry.name)


def get_suggested_block_size(kernel, device=None) -> tuple:
    """``(block_size, min_grid_size)``: the CUDA occupancy calculator's block size for ``kernel``'s forward entry on
    ``device`` (compiled and loaded if needed; at most its ``launch_bounds``), and the fewest blocks that fill the
    GPU with it. ``(1, 1)`` on the CPU."""
    dev = get_device(device)
    if dev.is_cpu:
        return (1, 1)
    f = _forward_function(kernel, dev, "get_suggested_block_size")
    limit = kernel.launch_bounds[0] if isinstance(kernel.launch_bounds, tuple) else kernel.launch_bounds
    limit = min(int(limit or f.maxt), f.maxt)
    st = driver.state(dev)
    with st.pushed():
        min_grid, block = driver.check(st.api.cuOccupancyMaxPotentialBlockSize(f.func, None, 0, limit),
                                       "cuOccupancyMaxPotentialBlockSize")
    return int(block), int(min_grid)


def get_cuda_kernel_properties(kernel, device=None, block_dim: int | None = None) -> dict:
    """``{"register_count": registers per thread, "local_memory_size": bytes of local memory per thread}`` of
    ``kernel``'s forward entry compiled for CUDA ``device`` (one variant for every ``block_dim``)."""
    if block_dim is not None and (not isinstance(block_dim, (int, np.integer)) or isinstance(block_dim, bool)
                                  or block_dim <= 0):
        raise ValueError(f"get_cuda_kernel_properties: block_dim must be a positive integer, got {block_dim!r}")
    dev = get_device(device)
    if not dev.is_cuda:
        raise RuntimeError(f"get_cuda_kernel_properties needs a CUDA device, got '{dev.alias}'")
    f = _forward_function(kernel, dev, "get_cuda_kernel_properties")
    st = driver.state(dev)
    A = st.api.CUfunction_attribute
    with st.pushed():
        return {key: int(driver.check(st.api.cuFuncGetAttribute(attr, f.func), "cuFuncGetAttribute"))
                for key, attr in (("register_count", A.CU_FUNC_ATTRIBUTE_NUM_REGS),
                                  ("local_memory_size", A.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES))}


def get_kernel_resource_usage(kernel, arch: str = "sm_90", adjoint: bool = False, types=None) -> dict:
    """What one thread of ``kernel`` uses on a GPU of architecture ``arch``, as the GPU assembler reports it when
    NVRTC compiles the kernel (``ptxas -v``); no GPU needed::

        sk.get_kernel_resource_usage(step)   # {"registers": 40, "stack": 0, "spill_stores": 0, ...}

    Keys: ``registers`` (per thread; a multiprocessor holds 65536), ``stack`` (bytes of local memory: thread-local
    arrays and spills), ``spill_stores``/``spill_loads`` (bytes of registers spilled to local memory), ``smem``
    (static shared memory per block). ``adjoint``: the backward entry. ``types``: a generic kernel's concrete
    parameter types, in order (as ``Kernel.add_overload``)."""
    from ..kernels.backends.cuda import nvrtc

    if kernel.generic:
        if types is None:
            raise RuntimeError(f"get_kernel_resource_usage: kernel '{kernel.key}' is generic: pass types=[...] "
                               "(one concrete type per parameter)")
        spec = kernel.add_overload(list(types)).specs[None]
    else:
        spec = kernel.specs[None]
    if adjoint and kernel.enable_backward is False:
        raise RuntimeError(f"get_kernel_resource_usage: kernel '{kernel.key}' has no adjoint (enable_backward=False)")
    source = kernel.module.spec_source(spec, adjoint)
    entry = f"{spec.cname}_cuda_{'bwd' if adjoint else 'fwd'}"
    return nvrtc.resource_usage(source, arch, name=kernel.key)[entry]
