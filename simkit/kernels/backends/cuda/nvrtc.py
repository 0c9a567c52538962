"""NVRTC: compile generated module source to CUBIN for a GPU architecture (no GPU needed).

Results are cached on disk beside the CPU libraries, keyed by source, arch and
NVRTC version, written atomically.
"""
from __future__ import annotations

import hashlib
import os
import re

from .... import config
from ...errors import NativeCompileError
from ..cpu import NATIVE_DIR, _atomic_write, cache_root

_version: str | None = None


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as e:  # pragma: no cover - depends on the install
        raise RuntimeError("NVRTC is not available: pip install 'simkit[cuda]' (cuda-python[all])") from e
    return nvrtc


def is_available() -> bool:
    try:
        version()
        return True
    except Exception:
        return False


def _check(result, what: str):
    err = result[0]
    if int(err) != 0:
        raise RuntimeError(f"NVRTC {what} failed: {err}")
    return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)


def version() -> str:
    global _version
    if _version is None:
        nv = _nvrtc()
        major, minor = _check(nv.nvrtcVersion(), "version")
        _version = f"{major}.{minor}"
    return _version


def options(arch: str, debug: bool = False, level: int | None = None) -> list:
    """simkit's NVRTC options for ``arch``. ``level``: a module's ``optimization_level``, None for
    ``config.optimization_level``; a level set either way becomes the GPU assembler's ``-O<level>`` (NVRTC takes
    no ``-O``; unset, ptxas' own default: ``-O3``)."""
    opts = [f"--gpu-architecture={arch}", "--std=c++17", f"-I{NATIVE_DIR}", "-default-device", "-ftz=false"]
    if debug:
        opts.append("-lineinfo")
    if level is None:
        level = config.optimization_level
    if level is not None:
        opts.append(f"--ptxas-options=-O{level}")
    return opts


def _compile(source: str, name: str, opts: list, what: str):
    """Compile with NVRTC under ``opts``; returns (program, log). The caller destroys the program."""
    nv = _nvrtc()
    prog = _check(nv.nvrtcCreateProgram(source.encode(), f"{name}.cu".encode(), 0, [], []), "create")
    err = nv.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])[0]
    size = _check(nv.nvrtcGetProgramLogSize(prog), "log size")
    log = b" " * size
    nv.nvrtcGetProgramLog(prog, log)
    log = log.rstrip(b"\0 ").decode(errors="replace")
    if int(err) != 0:
        nv.nvrtcDestroyProgram(prog)
        raise NativeCompileError(f"NVRTC compilation for {what} failed ({name}):\n{log[-20000:]}")
    return prog, log


def check(source: str, arch: str, name: str = "module", extra=()) -> None:
    """Compile with NVRTC under ``extra`` and keep nothing: raises NativeCompileError with NVRTC's log if it
    fails (verification: its options decide how far NVRTC goes)."""
    prog, _log = _compile(source, name, options(arch) + list(extra), arch)
    _nvrtc().nvrtcDestroyProgram(prog)


def compile_source(source: str, arch: str, name: str = "module", extra=(), level: int | None = None) -> bytes:
    """Compile with NVRTC; returns CUBIN bytes (``sm_XX``) or PTX (``compute_XX``).

    ``extra``: more NVRTC options (verification adds ``-pch``: its worker reuses the parsed header); ``level``: as
    :func:`options`."""
    nv = _nvrtc()
    prog, _log = _compile(source, name, options(arch, level=level) + list(extra), arch)
    try:
        if arch.startswith("sm_"):
            size = _check(nv.nvrtcGetCUBINSize(prog), "cubin size")
            out = b" " * size
            _check(nv.nvrtcGetCUBIN(prog, out) + (None,), "cubin")
        else:
            size = _check(nv.nvrtcGetPTXSize(prog), "ptx size")
            out = b" " * size
            _check(nv.nvrtcGetPTX(prog, out) + (None,), "ptx")
        return out
    finally:
        nv.nvrtcDestroyProgram(prog)


_ENTRY = re.compile(r"Compiling entry function '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def resource_usage(source: str, arch: str = "sm_90", opts=None, name: str = "module") -> dict:
    """What each kernel of ``source`` uses per thread on ``arch`` (an ``sm_XX``), as the GPU assembler
    reports it (``ptxas -v``), without a GPU: ``{entry name: {"registers", "stack", "spill_stores",
    "spill_loads", "smem"}}`` (bytes but registers). ``opts``: the NVRTC options, simkit's by default
    (another library's source needs its own)."""
    if not arch.startswith("sm_"):
        raise ValueError(f"resource_usage needs a GPU architecture (sm_XX), not '{arch}'")
    opts = options(arch) if opts is None else [f"--gpu-architecture={arch}", *opts]
    prog, log = _compile(source, name, opts + ["-Xptxas", "-v"], arch)
    _nvrtc().nvrtcDestroyProgram(prog)
    out, entry, frame = {}, None, (0, 0, 0)
    for line in log.splitlines():
        m = _ENTRY.search(line)
        if m:
            entry, frame = m.group(1), (0, 0, 0)
        elif (m := _FRAME.search(line)) is not None:
            frame = tuple(int(g) for g in m.groups())
        elif (m := _USED.search(line)) is not None and entry is not None:
            out[entry] = {"registers": int(m.group(1)), "stack": frame[0], "spill_stores": frame[1],
                          "spill_loads": frame[2], "smem": int(m.group(2) or 0)}
            entry = None
    return out


def compile_cached(source: str, arch: str, name: str = "module", level: int | None = None) -> str:
    """Compile (or reuse) ``source`` for ``arch``; returns the path of the cached binary. ``level``: as
    :func:`options`."""
    opts = " ".join(options(arch, level=level))
    key = hashlib.sha256("\0".join([source, arch, version(), opts]).encode()).hexdigest()
    from ...module import generator_hash

    key = hashlib.sha256((key + generator_hash()).encode()).hexdigest()
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:60]
    ext = "cubin" if arch.startswith("sm_") else "ptx"
    path = os.path.join(cache_root(), "cuda", f"{safe}_{key[:20]}", f"module.{arch}.{ext}")
    if not os.path.exists(path):
        data = compile_source(source, arch, name, level=level)
        _atomic_write(path, data)
    return path
