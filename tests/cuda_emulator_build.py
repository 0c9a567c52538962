"""CUDA sources compiled for the host, for the emulated GPU of tests/cuda_emulator.py.

A generated module (or the runtime's fill/copy kernels) is compiled by the host compiler with
``-DSK_CUDA_EMU``: ``native/core.h`` then includes ``native/cuda_emu.h`` and the unit takes its CUDA
code paths. For each ``extern "C" __global__`` entry a launcher is appended that runs the entry once
per (block, thread) of a grid, and a function giving each parameter's size and alignment (what
``cuFuncGetParamInfo`` reports from a CUBIN).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil

from simkit.kernels.backends import cpu as cpu_backend

# extern "C" __global__ entries: generated kernels and the runtime's fill/copy kernels
_USER_ENTRY = re.compile(r'extern "C" __global__ void (\w+_cuda_(?:fwd|bwd))\((\w+) a, sk::launch_bounds_t b\)')
_RT_ENTRY = re.compile(r"^SK_RT_KERNEL\((\w+), (\w+)\)", re.M)
_EXPORT = 'extern "C" __attribute__((visibility("default")))'


def emulation_flags() -> list:
    return ["-O1", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden",
            "-fno-math-errno", "-w", "-DSK_CUDA_EMU", f"-I{cpu_backend.NATIVE_DIR}"]


def entries(source: str) -> dict:
    """{entry name: [parameter C++ types]} of a CUDA source's kernels."""
    found = {name: [t, "sk::launch_bounds_t"] for name, t in _USER_ENTRY.findall(source)}
    found.update({name: [t] for name, t in _RT_ENTRY.findall(source)})
    return found


def emulated_source(source: str) -> str:
    """``source`` with, for each kernel, a host launcher running every (block, thread) of a grid, and the
    size and alignment of each parameter."""
    out = ['#include "cuda_emu.h"', source]
    for name, types in entries(source).items():
        call = ", ".join(f"*({t}*)p[{k}]" for k, t in enumerate(types))
        cases = " ".join(f"case {k}: return (long long)sizeof({t}) << 8 | alignof({t});" for k, t in enumerate(types))
        out.append(f"{_EXPORT} void {name}_emu_launch(void** p, unsigned gx, unsigned bx, int reverse) "
                   f"{{ sk_emu_run_grid(gx, bx, reverse, [&] {{ {name}({call}); }}); }}")
        out.append(f"{_EXPORT} long long {name}_emu_param(int i) {{ switch (i) {{ {cases} }} return -1; }}")
    return "\n".join(out) + "\n"


class _Kernel:
    """An emulated kernel: its parameters' (size, alignment) and a launcher."""

    def __init__(self, lib, name: str, nparams: int):
        info = getattr(lib, f"{name}_emu_param")
        info.argtypes, info.restype = [ctypes.c_int], ctypes.c_longlong
        self.params = [(int(info(k)) >> 8, int(info(k)) & 0xFF) for k in range(nparams)]
        self._launch = getattr(lib, f"{name}_emu_launch")
        self._launch.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_int]
        self._launch.restype = None

    def launch(self, argv, gx: int, bx: int, reverse: bool = False):
        self._launch(ctypes.addressof(argv), gx, bx, int(reverse))


_libraries: dict = {}


def emulated_library(source: str, ordinal: int):
    """(ctypes library, {entry name: _Kernel}) of ``source`` compiled for the host (cached on disk).
    Each device gets its own copy of the library: its own ``__device__`` globals, as a CUDA context would."""
    key = (source, ordinal)
    if key not in _libraries:
        host = emulated_source(source)
        flags = emulation_flags()
        from simkit.kernels.module import generator_hash  # (the native headers the source includes)

        key = host + " ".join(flags) + cpu_backend.identity() + generator_hash()
        digest = hashlib.sha256(key.encode()).hexdigest()
        d = os.path.join(cpu_backend.cache_root(), "cuda_emu", digest[:24])
        path = os.path.join(d, "module.so")
        if not os.path.exists(path):
            cpu_backend.build(host, path, flags, precompiled=True)  # (its headers: parsed once)
        if ordinal:
            copy = os.path.join(d, f"module_dev{ordinal}.so")
            if not os.path.exists(copy):
                shutil.copyfile(path, copy + ".tmp")
                os.replace(copy + ".tmp", copy)
            path = copy
        lib = ctypes.CDLL(path)
        _libraries[key] = (lib, {name: _Kernel(lib, name, len(t)) for name, t in entries(source).items()})
    return _libraries[key]


