"""Compiling modules ahead of their first launch: ``load_module`` and ``force_load`` (Warp's names).

A kernel compiles on its first launch, with the module's other pending kernels (kernels/module.py). A program
that knows which modules it will run can compile them before, all at once::

    sk.force_load(device="cpu")                  # every module with kernels, compiled 8 at a time at most
    sk.load_module(my_sim, recursive=True)       # my_sim and its submodules

Several modules compile in parallel: each module's source is generated in this thread, then threads run the C++
compiler (or NVRTC, which releases the GIL) into the disk cache, ``max_workers`` at a time
(``config.load_module_max_workers``), and the libraries are loaded from there in this thread, in order. A module's
error is raised as its first launch would raise it, after the other modules have loaded.
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

from .. import config
from ..kernels import module as _module
from .device import get_device, get_devices

#: the most threads ``max_workers=None`` starts (each compiler holds a module's whole source in memory)
MAX_WORKERS = 8


def force_load(device=None, modules=None, block_dim=None, max_workers: int | None = None) -> None:
    """Compile (or fetch from the cache) and load ``modules`` on ``device`` now, instead of at their kernels'
    first launches, as Warp's ``force_load``.

    ``device``: a device or list of devices (None: every device). ``modules``: a list of ``sk.Module`` objects,
    Python modules or module names (None: every module with kernels). ``max_workers``: modules compiled at
    once (None: ``config.load_module_max_workers``; 0 or 1: one after another). What loads is each module's
    non-generic kernels and the specialisations of its generic kernels made so far. ``block_dim`` changes
    nothing (accepted for Warp compatibility)."""
    mods = [m for m in _module._modules.values() if m.kernels] if modules is None else [_resolve(m) for m in modules]
    _load(mods, _devices(device), max_workers)


def load_module(module=None, device=None, recursive: bool = False, block_dim=None,
                max_workers: int | None = None) -> None:
    """Compile (or fetch from the cache) the kernels of ``module`` (an ``sk.Module``, a Python module or its
    name; None: the calling module) for ``device`` (a device or list of devices; None: every device) now,
    instead of at their first launch, as Warp's ``load_module``: its non-generic kernels and the
    specialisations made so far. ``recursive``: also every module whose name is below it (``pkg`` loads
    ``pkg.sub``...), compiled ``max_workers`` at a time (see :func:`force_load`). ``block_dim`` changes
    nothing."""
    if module is None:
        module = sys._getframe(1).f_globals.get("__name__", "__main__")
    m = _resolve(module)
    mods = [m]
    if recursive:
        mods += [o for name, o in sorted(_module._modules.items()) if name.startswith(m.name + ".") and o.kernels]
    if not any(o.kernels for o in mods) and not isinstance(module, _module.Module):
        _check_imported(m.name)
    _load(mods, _devices(device), max_workers)


def _resolve(module) -> _module.Module:
    if isinstance(module, _module.Module):
        return module
    if isinstance(module, str):
        return _module.get_module(module)
    name = getattr(module, "__name__", None)
    if not isinstance(name, str):
        raise TypeError(f"expected an sk.Module, a Python module or a module name, got {type(module).__name__}")
    return _module.get_module(name)


def _devices(device) -> list:
    if device is None:
        return get_devices()
    return [get_device(d) for d in device] if isinstance(device, (list, tuple)) else [get_device(device)]


def workers(max_workers: int | None = None) -> int:
    """How many modules compile at once for ``max_workers`` (None: ``config.load_module_max_workers``, whose
    None is the cores this process may use, at most :data:`MAX_WORKERS`)."""
    n = config.load_module_max_workers if max_workers is None else max_workers
    if n is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        n = min(cores, MAX_WORKERS)
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"max_workers must be None or an int >= 0, got {n!r}")
    return max(n, 1)


def _load(mods: list, devices: list, max_workers) -> None:
    pairs = [(m, d) for d in devices for m in mods]
    n = workers(max_workers)
    if n > 1 and len(pairs) > 1:
        jobs = [job for job in (m.prebuild(d) for m, d in pairs) if job is not None]
        if len(jobs) > 1:  # (one compile gains nothing from a thread: load compiles it)
            with ThreadPoolExecutor(max_workers=min(n, len(jobs)), thread_name_prefix="simkit-load") as pool:
                for _ in pool.map(lambda job: job(), jobs):
                    pass
    errors = []
    for m, d in pairs:  # (every module loads that can: the first error is raised after, as Warp's force_load)
        try:
            m.load(d)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    if errors:
        raise errors[0]


def _check_imported(name: str) -> None:
    """A module named in ``load_module`` must at least be imported (a misspelt name raises)."""
    if name not in sys.modules:
        raise RuntimeError(f"load_module: module '{name}' does not contain any kernels, functions or structs (no "
                           f"module of that name is imported); pass an imported module, or its name")


__all__ = ["force_load", "load_module"]
