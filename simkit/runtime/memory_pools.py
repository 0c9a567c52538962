"""CUDA memory pools and peer access (Warp's ``wp.is_mempool_enabled`` ... ``wp.set_peer_access_enabled``).

simkit allocates GPU memory from each device's default stream-ordered pool where the device supports
pools (``kernels/backends/cuda/driver.py``). These functions query and change that, and let one GPU
access another's memory::

    sk.is_mempool_enabled("cuda:0")          # True on a GPU with pools, always False for the CPU
    sk.set_mempool_release_threshold("cuda:0", 0.5)   # keep up to half the GPU's memory cached
    if sk.is_peer_access_supported("cuda:0", "cuda:1"):
        sk.set_peer_access_enabled("cuda:0", "cuda:1", True)   # cuda:1 may read cuda:0's memory

As in Warp, ``target_device`` owns the memory and ``peer_device`` accesses it; asking about the CPU
answers False, disabling something the CPU cannot do is a no-op, and enabling it raises ``ValueError``.
"""
from __future__ import annotations

from ..kernels.backends.cuda import driver
from .device import get_device

_peer_enabled: dict = {}  # (target alias, peer alias) -> what set_peer_access_enabled last set


def _state(device):
    return driver.state(device)


def _pool_supported(device) -> bool:
    st = _state(device)
    api = st.api
    try:
        attr = api.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
        return int(driver.check(api.cuDeviceGetAttribute(attr, st.dev), "cuDeviceGetAttribute")) != 0
    except driver.CudaError:
        return False


def is_mempool_supported(device=None) -> bool:
    """Does ``device`` support stream-ordered memory pools? (False for the CPU.)"""
    d = get_device(device)
    return d.is_cuda and _pool_supported(d)


def is_mempool_enabled(device=None) -> bool:
    """Does ``device`` allocate from its memory pool? (False for the CPU.)"""
    d = get_device(device)
    return d.is_cuda and bool(_state(d).pools)


def set_mempool_enabled(device, enable: bool) -> None:
    """Allocate from ``device``'s memory pool (``enable``) or with plain ``cuMemAlloc``. Memory already
    allocated is freed the way it was allocated."""
    d = get_device(device)
    if not d.is_cuda:
        if enable:
            raise ValueError(f"memory pools are only supported on CUDA devices, not on {d.alias}")
        return
    if enable and not _pool_supported(d):
        raise RuntimeError(f"device {d.alias} does not support memory pools")
    st = _state(d)
    with st.lock:
        st.pools = bool(enable)


def _default_pool(device, what: str):
    d = get_device(device)
    if not d.is_cuda:
        raise ValueError(f"{what}: memory pools are only supported on CUDA devices, not on {d.alias}")
    if not _pool_supported(d):
        raise RuntimeError(f"{what}: device {d.alias} does not support memory pools")
    st = _state(d)
    return st, driver.check(st.api.cuDeviceGetDefaultMemPool(st.dev), "cuDeviceGetDefaultMemPool")


def _pool_attribute(device, name: str, what: str) -> int:
    st, pool = _default_pool(device, what)
    attr = getattr(st.api.CUmemPool_attribute, name)
    return int(driver.check(st.api.cuMemPoolGetAttribute(pool, attr), "cuMemPoolGetAttribute"))


def set_mempool_release_threshold(device, threshold) -> None:
    """Bytes the pool of ``device`` keeps cached at a synchronization instead of returning them to the
    system; a float in (0, 1] is a fraction of the device's memory, a negative value is 0."""
    st, pool = _default_pool(device, "set_mempool_release_threshold")
    api = st.api
    if threshold < 0:
        threshold = 0
    elif 0 < threshold <= 1 and isinstance(threshold, float):
        total = int(driver.check(api.cuDeviceTotalMem(st.dev), "cuDeviceTotalMem"))
        threshold = int(threshold * total)
    attr = api.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
    driver.check(api.cuMemPoolSetAttribute(pool, attr, api.cuuint64_t(int(threshold))), "cuMemPoolSetAttribute")


def get_mempool_release_threshold(device=None) -> int:
    """The release threshold of ``device``'s memory pool in bytes (simkit raises it to the maximum)."""
    return _pool_attribute(device, "CU_MEMPOOL_ATTR_RELEASE_THRESHOLD", "get_mempool_release_threshold")


def get_mempool_used_mem_current(device=None) -> int:
    """Bytes of ``device``'s memory pool in use now."""
    return _pool_attribute(device, "CU_MEMPOOL_ATTR_USED_MEM_CURRENT", "get_mempool_used_mem_current")


def get_mempool_used_mem_high(device=None) -> int:
    """The most bytes of ``device``'s memory pool in use at once so far."""
    return _pool_attribute(device, "CU_MEMPOOL_ATTR_USED_MEM_HIGH", "get_mempool_used_mem_high")


def is_peer_access_supported(target_device, peer_device) -> bool:
    """Can ``peer_device`` access memory of ``target_device`` directly? (False unless both are GPUs.)"""
    t, p = get_device(target_device), get_device(peer_device)
    if not (t.is_cuda and p.is_cuda):
        return False
    if t == p:
        return True
    ts, ps = _state(t), _state(p)
    return bool(driver.check(ts.api.cuDeviceCanAccessPeer(ps.dev, ts.dev), "cuDeviceCanAccessPeer"))


def is_peer_access_enabled(target_device, peer_device) -> bool:
    """Is peer access from ``peer_device`` to ``target_device`` enabled? (A GPU always reaches its own
    memory; the CPU never takes part.)"""
    t, p = get_device(target_device), get_device(peer_device)
    if not (t.is_cuda and p.is_cuda):
        return False
    return t == p or _peer_enabled.get((t.alias, p.alias), False)


def _refuse(enable: bool, exc, msg: str) -> None:
    if enable:
        raise exc(msg)


def set_peer_access_enabled(target_device, peer_device, enable: bool) -> None:
    """Let ``peer_device`` access memory of ``target_device`` (allocated without the pool; see
    :func:`set_mempool_access_enabled` for pooled memory), or stop it."""
    t, p = get_device(target_device), get_device(peer_device)
    if not (t.is_cuda and p.is_cuda):
        return _refuse(enable, ValueError, f"peer access is only supported between CUDA devices, not "
                                           f"{t.alias} and {p.alias}")
    if not is_peer_access_supported(t, p):
        return _refuse(enable, RuntimeError, f"device {p.alias} cannot access the memory of {t.alias}")
    if t == p:
        return None
    ts, ps = _state(t), _state(p)
    api = ps.api
    with ps.lock, ps.pushed():  # the peer's context gets access to the target's
        if enable:
            err = api.cuCtxEnablePeerAccess(ts.ctx, 0)
            ok = (int(api.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED),)
        else:
            err = api.cuCtxDisablePeerAccess(ts.ctx)
            ok = (int(api.CUresult.CUDA_ERROR_PEER_ACCESS_NOT_ENABLED),)
        code = int(err[0] if isinstance(err, tuple) else err)
        if code not in ok:
            driver.check(err, "cuCtxEnablePeerAccess" if enable else "cuCtxDisablePeerAccess")
    _peer_enabled[(t.alias, p.alias)] = bool(enable)
    return None


def is_mempool_access_supported(target_device, peer_device) -> bool:
    """Can ``peer_device`` be given access to the memory pool of ``target_device``?"""
    return is_mempool_supported(target_device) and is_peer_access_supported(target_device, peer_device)


def _access_location(api, device):
    loc = api.CUmemLocation()
    loc.type = api.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    loc.id = device.ordinal
    return loc


def is_mempool_access_enabled(target_device, peer_device) -> bool:
    """May ``peer_device`` access memory allocated from the pool of ``target_device``?"""
    t, p = get_device(target_device), get_device(peer_device)
    if not (t.is_cuda and p.is_cuda) or not _pool_supported(t):
        return False
    if t == p:
        return True
    st, pool = _default_pool(t, "is_mempool_access_enabled")
    api = st.api
    flags = driver.check(api.cuMemPoolGetAccess(pool, _access_location(api, p)), "cuMemPoolGetAccess")
    return int(flags) == int(api.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE)


def set_mempool_access_enabled(target_device, peer_device, enable: bool) -> None:
    """Let ``peer_device`` access memory allocated from the pool of ``target_device``, or stop it."""
    t, p = get_device(target_device), get_device(peer_device)
    if not (t.is_cuda and p.is_cuda):
        return _refuse(enable, ValueError, f"memory pool access is only supported between CUDA devices, not "
                                           f"{t.alias} and {p.alias}")
    if not _pool_supported(t):
        return _refuse(enable, RuntimeError, f"device {t.alias} does not support memory pools")
    if not is_peer_access_supported(t, p):
        return _refuse(enable, RuntimeError, f"device {p.alias} cannot access the memory of {t.alias}")
    if t == p:
        return None
    st, pool = _default_pool(t, "set_mempool_access_enabled")
    api = st.api
    desc = api.CUmemAccessDesc()
    desc.location = _access_location(api, p)
    desc.flags = (api.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE if enable
                  else api.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_NONE)
    driver.check(api.cuMemPoolSetAccess(pool, [desc], 1), "cuMemPoolSetAccess")
    return None


__all__ = ["is_mempool_supported", "is_mempool_enabled", "set_mempool_enabled", "set_mempool_release_threshold",
           "get_mempool_release_threshold", "get_mempool_used_mem_current", "get_mempool_used_mem_high",
           "is_peer_access_supported", "is_peer_access_enabled", "set_peer_access_enabled",
           "is_mempool_access_supported", "is_mempool_access_enabled", "set_mempool_access_enabled"]
