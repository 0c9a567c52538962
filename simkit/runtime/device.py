"""Devices: ``"cpu"`` and ``"cuda:N"`` (discovered through the CUDA driver API when present).

Example::

    >>> import simkit as sk
    >>> sk.get_device("cpu").is_cpu
    True
"""
from __future__ import annotations

import os


class Device:
    """A place where arrays live and kernels run."""

    def __init__(self, alias: str, ordinal: int = -1, name: str = "", arch: str = "cpu"):
        self.alias = alias
        self.ordinal = ordinal
        self.name = name or alias
        self.is_cpu = alias == "cpu"
        self.is_cuda = not self.is_cpu
        self.kind = "cpu" if self.is_cpu else arch  # what compiled code is keyed by: "cpu" or "sm_90"
        # Warp's number: 10 * major + minor of the compute capability (90 for sm_90), 0 for the CPU
        self.arch = 0 if self.is_cpu else int(arch[3:])
        self.context = None  # CUDA context handle (cuda backend)

    def __repr__(self):
        return f'Device("{self.alias}")'

    # Warp's Device attributes (runtime/device_info.py computes them)

    @property
    def total_memory(self) -> int:
        """Bytes of the GPU's memory (the host's physical memory for the CPU)."""
        return _info().memory_info(self)[1]

    @property
    def free_memory(self) -> int:
        """Bytes free now on the GPU (the host's available physical memory for the CPU)."""
        return _info().memory_info(self)[0]

    is_uva = property(lambda self: _info().is_uva(self), doc="Unified addressing (False for the CPU).")
    is_cubin_supported = property(lambda self: _info().is_cubin_supported(self),
                                  doc="NVRTC makes CUBIN for this GPU (else PTX of an older architecture).")
    is_mempool_supported = property(lambda self: _info().is_mempool_supported(self),
                                    doc="Stream-ordered memory pools (cuMemAllocAsync) are supported.")
    is_mempool_enabled = property(lambda self: _info().is_mempool_enabled(self),
                                  doc="simkit allocates this GPU's arrays from its memory pool.")
    is_cpu_memory_access_from_gpu_supported = property(
        lambda self: _info().is_cpu_memory_access_from_gpu_supported(self),
        doc="GPU kernels can read pageable host memory (HMM/ATS).")
    is_gpu_memory_access_from_cpu_supported = property(
        lambda self: _info().is_gpu_memory_access_from_cpu_supported(self),
        doc="Host code can touch managed memory resident on this GPU without migration.")
    is_cpu_gpu_atomic_supported = property(lambda self: _info().is_cpu_gpu_atomic_supported(self),
                                           doc="Host/GPU atomics are native (NVLink-C2C).")
    is_primary = property(lambda self: self.is_cuda, doc="simkit uses each GPU's primary context.")
    uuid = property(lambda self: _info().uuid(self), doc="GPU-... as nvidia-smi -L prints it (None: CPU).")
    pci_bus_id = property(lambda self: _info().pci_bus_id(self), doc="domain:bus:device (None: CPU).")
    is_capturing = property(lambda self: _info().is_capturing(self), doc="A graph capture is active.")

    @property
    def default_allocator(self):
        """A GPU's plain ``cuMemAlloc`` allocator, the CPU's ``HostAllocator`` (runtime/allocators.py)."""
        from . import allocators

        if self.is_cpu:
            return allocators.get_device_allocator(self)
        from ..kernels.backends.cuda.allocators import builtin

        return builtin(self.ordinal, pooled=False)

    @property
    def mempool_allocator(self):
        """A GPU's allocator from its stream-ordered memory pool (``cuMemAllocAsync``; RuntimeError for the CPU
        and for a GPU without pools)."""
        if not self.is_mempool_supported:
            raise RuntimeError(f"device {self.alias} has no stream-ordered memory pool")
        from ..kernels.backends.cuda.allocators import builtin

        return builtin(self.ordinal, pooled=True)

    def get_allocator(self):
        """The allocator this device's arrays use now (``sk.get_device_allocator``)."""
        from .allocators import get_device_allocator

        return get_device_allocator(self)

    @property
    def has_context(self) -> bool:
        return self.is_cuda

    @property
    def stream(self):
        """The GPU's current stream (RuntimeError for the CPU)."""
        return _info().stream(self)

    @stream.setter
    def stream(self, stream):
        _info().set_stream(self, stream)

    @property
    def null_stream(self):
        """The legacy NULL stream of the GPU's context (RuntimeError for the CPU)."""
        if self.is_cpu:
            raise RuntimeError(f"Device {self} is not a CUDA device (it has no stream)")
        from ..kernels.backends.cuda import stream as cstream

        return cstream.null_stream(self)

    @property
    def has_stream(self) -> bool:
        return self.is_cuda

    def set_stream(self, stream, sync: bool = True) -> None:
        """Make ``stream`` this GPU's current stream (``sync``: it first waits for the previous one)."""
        _info().set_stream(self, stream, sync)

    def can_access(self, other) -> bool:
        """Can kernels on this device reach memory allocated on ``other``? (runtime/device_info.py)"""
        return _info().can_access(self, other)

    def make_current(self) -> None:
        """Make this GPU's context current on the calling thread (nothing for the CPU)."""
        if self.is_cuda:
            _driver_state(self).make_current()

    def get_cuda_compile_arch(self) -> int | None:
        """The architecture NVRTC compiles for on this GPU (90 for sm_90), None for the CPU."""
        if self.is_cpu:
            return None
        from ..kernels.backends.cuda import module as cmodule

        return int(cmodule.target_arch(self.kind).split("_", 1)[1].rstrip("af"))

    def get_cuda_output_format(self, preferred_cuda_output: str | None = None) -> str | None:
        """``"cubin"`` or ``"ptx"``: what NVRTC makes for this GPU (None for the CPU; a preference is not
        taken: simkit makes CUBIN wherever its NVRTC knows the architecture)."""
        if self.is_cpu:
            return None
        return "cubin" if self.is_cubin_supported else "ptx"

    @property
    def sm_count(self) -> int:
        """Streaming multiprocessors of a GPU (0 for the CPU)."""
        return 0 if self.is_cpu else _driver_state(self).sm_count

    @property
    def max_shared_memory_per_block(self) -> int:
        """Bytes of shared memory one block may use on a GPU (0 for the CPU)."""
        return 0 if self.is_cpu else _driver_state(self).max_shared_memory_per_block

    def __str__(self):
        return self.alias

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = get_device(other)
            except (ValueError, RuntimeError):
                return False
        return isinstance(other, Device) and other.alias == self.alias

    def __hash__(self):
        return hash(self.alias)


_cpu = Device("cpu", name=os.uname().machine if hasattr(os, "uname") else "cpu")
_cuda_devices: list | None = None
_default: Device | None = None


def _info():
    from . import device_info

    return device_info


def _driver_state(device):
    from ..kernels.backends.cuda import driver

    return driver.state(device)


def _register_hooks():
    """Let the CUDA backend (a lower layer) resolve device names through this module."""
    try:
        from ..kernels.backends.cuda import driver
    except ImportError:
        return
    driver.set_runtime_hooks(get_device, ScopedDevice)


def cuda_devices() -> list:
    """CUDA devices visible through the driver API ([] without a driver or GPU)."""
    global _cuda_devices
    if _cuda_devices is None:
        try:
            from ..kernels.backends.cuda import driver

            _cuda_devices = [Device(f"cuda:{i}", i, name, arch) for i, name, arch in driver.enumerate_devices()]
        except Exception:  # no cuda-python, no driver, no GPU: CPU only
            _cuda_devices = []
    return _cuda_devices


def is_cuda_available() -> bool:
    return bool(cuda_devices())


def get_devices() -> list:
    """Every available device, CPU first."""
    return [_cpu] + cuda_devices()


def get_cuda_device_count() -> int:
    return len(cuda_devices())


def get_device(ident=None) -> Device:
    """Resolve ``None`` (the default device), ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a Device."""
    if ident is None:
        return get_default_device()
    if isinstance(ident, Device):
        return ident
    if not isinstance(ident, str):
        raise TypeError(f"a device is a string like 'cpu' or 'cuda:0' or a Device, got {type(ident).__name__}")
    if ident == "cpu":
        return _cpu
    if ident.startswith("cuda"):
        devs = cuda_devices()
        if not devs:
            why = ""
            try:
                from ..kernels.backends.cuda import driver

                why = f" ({driver.unavailable_reason()})" if driver.unavailable_reason() else ""
            except Exception:
                pass
            raise RuntimeError(f"device '{ident}' was requested but no CUDA GPU is available{why}: no NVIDIA "
                               "driver, no GPU, or cuda-python missing (pip install 'simkit[cuda]'); use "
                               "device='cpu'")
        if ident == "cuda":
            return devs[0]
        try:
            i = int(ident.split(":", 1)[1])
        except (IndexError, ValueError):
            raise ValueError(f"invalid device '{ident}'; expected 'cuda:N'") from None
        if not 0 <= i < len(devs):
            raise ValueError(f"device '{ident}' does not exist; {len(devs)} CUDA device(s) present")
        return devs[i]
    raise ValueError(f"unknown device '{ident}'; expected 'cpu', 'cuda' or 'cuda:N'")


def get_default_device() -> Device:
    global _default
    if _default is None:
        devs = cuda_devices()
        _default = devs[0] if devs else _cpu
    return _default


def set_device(ident) -> None:
    """Make ``ident`` the default device for arrays and launches."""
    global _default
    _default = get_device(ident)


class ScopedDevice:
    """``with ScopedDevice("cpu"):`` makes a device the default inside the block."""

    def __init__(self, ident):
        self.device = get_device(ident)

    def __enter__(self):
        global _default
        self._saved = _default
        _default = self.device
        return self.device

    def __exit__(self, *exc):
        global _default
        _default = self._saved


_register_hooks()
