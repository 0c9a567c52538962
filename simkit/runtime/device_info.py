"""What a :class:`~simkit.runtime.device.Device` reports beyond its name (Warp's ``Device`` attributes).

Memory (``total_memory``, ``free_memory``), what a GPU supports (unified addressing, memory pools, CUBIN
from this NVRTC, access to host memory), its identity (``uuid``, ``pci_bus_id``), its current stream and
capture state, and which devices' memory it can reach (``can_access``). Every function takes the Device;
the Device's properties call them, so this module may import the CUDA backend lazily while ``device.py``
stays free of it.

Example::

    >>> import simkit as sk
    >>> cpu = sk.get_device("cpu")
    >>> cpu.total_memory > 0, cpu.is_uva, cpu.can_access(cpu)
    (True, False, True)
"""
from __future__ import annotations

import os


def _driver():
    from ..kernels.backends.cuda import driver

    return driver


def _attribute(device, name: str, default: int = 0) -> int:
    """A CUDA device attribute (``CU_DEVICE_ATTRIBUTE_<name>``), ``default`` where the driver lacks it."""
    driver = _driver()
    st = driver.state(device)
    try:
        attr = getattr(st.api.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(driver.check(st.api.cuDeviceGetAttribute(attr, st.dev), "cuDeviceGetAttribute"))
    except (AttributeError, driver.CudaError):
        return default


def memory_info(device) -> tuple:
    """(free, total) bytes: the GPU's (``cuMemGetInfo``), or the host's physical memory for the CPU."""
    if device.is_cpu:
        try:
            page = os.sysconf("SC_PAGE_SIZE")
            return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
        except (AttributeError, ValueError, OSError):  # (not a POSIX system: unknown, as Warp without psutil)
            return 0, 0
    driver = _driver()
    st = driver.state(device)
    with st.lock, st.pushed():
        free, total = driver.check(st.api.cuMemGetInfo(), "cuMemGetInfo")
    return int(free), int(total)


def is_uva(device) -> bool:
    return device.is_cuda and _attribute(device, "UNIFIED_ADDRESSING", 1) != 0


def is_cpu_memory_access_from_gpu_supported(device) -> bool:
    """Can kernels of this GPU read pageable host memory (HMM or ATS)?"""
    return device.is_cuda and _attribute(device, "PAGEABLE_MEMORY_ACCESS", 0) != 0


def is_gpu_memory_access_from_cpu_supported(device) -> bool:
    """Can host code touch managed memory resident on this GPU without migration?"""
    return device.is_cuda and _attribute(device, "DIRECT_MANAGED_MEM_ACCESS_FROM_HOST", 0) != 0


def is_cpu_gpu_atomic_supported(device) -> bool:
    """Are atomics between host and this GPU native (NVLink-C2C systems)?"""
    return device.is_cuda and _attribute(device, "HOST_NATIVE_ATOMIC_SUPPORTED", 0) != 0


def is_cubin_supported(device) -> bool:
    """Does this NVRTC compile CUBIN for the GPU's architecture (else PTX for an older one, JIT-compiled)?"""
    if device.is_cpu:
        return False
    from ..kernels.backends.cuda import module as cmodule

    return cmodule.target_arch(device.kind) == device.kind


def is_mempool_supported(device) -> bool:
    return device.is_cuda and _attribute(device, "MEMORY_POOLS_SUPPORTED", 0) != 0


def is_mempool_enabled(device) -> bool:
    return device.is_cuda and bool(_driver().state(device).pools)


def uuid(device) -> str | None:
    """``GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`` (as ``nvidia-smi -L`` prints it), None for the CPU."""
    if device.is_cpu:
        return None
    driver = _driver()
    st = driver.state(device)
    get = getattr(st.api, "cuDeviceGetUuid_v2", None) or st.api.cuDeviceGetUuid
    raw = bytes(driver.check(get(st.dev), "cuDeviceGetUuid").bytes)
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def pci_bus_id(device) -> str | None:
    """``domain:bus:device`` in hex (e.g. ``0000:65:00``), None for the CPU."""
    if device.is_cpu:
        return None
    driver = _driver()
    st = driver.state(device)
    raw = driver.check(st.api.cuDeviceGetPCIBusId(32, st.dev), "cuDeviceGetPCIBusId")
    text = (raw.decode() if isinstance(raw, bytes) else str(raw)).split("\0", 1)[0]
    return text.rsplit(".", 1)[0]  # (the driver adds ".function")


def stream(device):
    """The GPU's current stream; Warp's RuntimeError for the CPU."""
    if device.is_cpu:
        raise RuntimeError(f"Device {device} is not a CUDA device (it has no stream)")
    from ..kernels.backends.cuda import stream as cstream

    return cstream.get_stream(device)


def set_stream(device, stream, sync: bool = True) -> None:
    if device.is_cpu:
        raise RuntimeError(f"Device {device} is not a CUDA device (it has no stream)")
    from ..kernels.backends.cuda import stream as cstream

    cstream.set_stream(stream, device, sync=sync)


def is_capturing(device) -> bool:
    from ..kernels.backends.cuda import stream as cstream

    return cstream.is_capturing(device)


def can_access(device, other) -> bool:
    """Can kernels on ``device`` reach memory allocated on ``other`` (its current allocator)? A device reaches its
    own; a GPU reaches host memory where it supports pageable access; the CPU reaches no GPU's memory; GPUs reach
    each other's where pool access (pooled memory) or peer access (the rest) is enabled."""
    from .device import get_device

    other = get_device(other)
    if other == device:
        return True
    if device.is_cpu:
        return False
    if other.is_cpu:
        return is_cpu_memory_access_from_gpu_supported(device)
    from . import memory_pools as mp

    if mp.is_mempool_enabled(other):
        return mp.is_mempool_access_enabled(other, device)
    return mp.is_peer_access_enabled(other, device)
