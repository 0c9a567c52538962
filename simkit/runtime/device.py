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
        self.arch = arch  # "cpu" or "sm_90"
        self.is_cpu = alias == "cpu"
        self.is_cuda = not self.is_cpu
        self.kind = "cpu" if self.is_cpu else arch  # what compiled code is keyed by
        self.context = None  # CUDA context handle (cuda backend)

    def __repr__(self):
        return f'Device("{self.alias}")'

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
