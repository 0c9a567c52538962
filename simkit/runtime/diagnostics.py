"""``print_diagnostics()``: what simkit runs on, for bug reports (Warp's ``wp.print_diagnostics``).

It prints the software versions, the compilers, the build options and the devices, and returns them as a
dict. The dict uses Warp's key names where they mean the same thing (``warp_python`` and ``warp_native`` hold
simkit's version: simkit has no separate native library; ``warp_clang``, ``llvm``, ``libmathdx`` and
``nanovdb`` are None: simkit uses none of them), plus ``simkit``.
"""
from __future__ import annotations

import importlib.metadata
import platform
import sys

import numpy as np


def _host_compiler() -> str:
    from ..kernels.backends import cpu

    try:
        return cpu.identity().split("|")[0]
    except Exception as e:  # (no compiler: the CPU backend is unavailable; say why)
        return f"unavailable ({e})"


def _cuda() -> dict:
    out = {"cuda_enabled": False, "cuda_toolkit": None, "cuda_driver": None, "nvrtc": None,
           "cuda_compatibility": None}
    try:
        from ..kernels.backends.cuda import driver, nvrtc
    except ImportError:  # (cuda-python is not installed)
        return out
    if nvrtc.is_available():
        v = tuple(int(x) for x in nvrtc.version().split("."))
        out["nvrtc"] = out["cuda_toolkit"] = v
    d = driver.driver_version()
    if d:
        out["cuda_driver"] = (d // 1000, d % 1000 // 10)
        out["cuda_enabled"] = bool(driver.enumerate_devices())
        if out["nvrtc"] is not None:
            out["cuda_compatibility"] = out["cuda_driver"] >= out["nvrtc"]
    return out


def _devices() -> list:
    from .device import get_devices

    out = []
    for d in get_devices():
        entry = {"alias": d.alias, "name": d.name, "arch": d.kind}
        if d.is_cuda:
            entry.update(sm_count=d.sm_count, memory_gb=d.total_memory / 1024**3,
                         mempool_enabled=d.is_mempool_enabled, pci_bus_id=d.pci_bus_id,
                         **{key: getattr(d, key) for key in _ACCESS})
        out.append(entry)
    return out


_ACCESS = {"is_cpu_memory_access_from_gpu_supported": "GPU->CPU mem", "is_gpu_memory_access_from_cpu_supported":
           "CPU->GPU mem", "is_cpu_gpu_atomic_supported": "CPU/GPU atomics"}


def diagnostics() -> dict:
    """The facts :func:`print_diagnostics` prints, as a dict."""
    from .. import config
    from ..version import __version__

    info = {"simkit": __version__, "warp_python": __version__, "warp_native": __version__, "warp_clang": None,
            "llvm": None, "numpy": np.__version__, "python": platform.python_version(),
            "platform": platform.platform(), **_cuda(), "mathdx_enabled": False, "libmathdx": None,
            "cubql_enabled": False, "nanovdb": None, "host_compiler": _host_compiler(),
            "debug": config.mode == "debug", "verify_fp": bool(getattr(config, "verify_fp", False)),
            "fast_math": False, "devices": _devices()}
    for pkg in ("torch", "jax", "jaxlib"):
        try:
            info[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            pass
    return info


def print_diagnostics(file=None) -> dict:
    """Print the software versions, compilers, build options and devices simkit sees; return them as a dict
    (``diagnostics()``)."""
    info = diagnostics()
    out = file or sys.stdout

    def line(label, value):
        print(f"  {label:<16}{'-' if value is None else value}", file=out)

    print("Software", file=out)
    for label, key in (("simkit", "simkit"), ("Python", "python"), ("numpy", "numpy"), ("Platform", "platform"),
                       ("Host compiler", "host_compiler"), ("NVRTC", "nvrtc"), ("CUDA driver", "cuda_driver")):
        value = info[key]
        line(label, ".".join(map(str, value)) if isinstance(value, tuple) else value)
    for pkg in ("torch", "jax", "jaxlib"):
        if pkg in info:
            line(pkg, info[pkg])
    print("Options", file=out)
    line("mode", "debug" if info["debug"] else "release")
    line("verify_fp", info["verify_fp"])
    print("Devices", file=out)
    for d in info["devices"]:
        extra = f" ({d['arch']}, {d['sm_count']} SMs, {d['memory_gb']:.0f} GiB, memory pool " \
                f"{'on' if d['mempool_enabled'] else 'off'}, PCI {d['pci_bus_id']})" if "sm_count" in d else ""
        line(d["alias"], f"{d['name']}{extra}")
        if "sm_count" in d:
            print("    " + ", ".join(f"{label}: {'yes' if d[key] else 'no'}" for key, label in _ACCESS.items()),
                  file=out)
    return info


__all__ = ["print_diagnostics"]
