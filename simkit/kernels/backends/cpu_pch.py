"""Precompiled headers for CPU builds (GCC).

Every generated module starts with the same ``#include`` lines (``simkit.h``, and the collision
headers when it uses them); parsing them is most of a small module's compile time (0.20 of 0.32 s
measured for a one-kernel module on a Xeon with g++ 13). The first build with a given set of
include lines compiles them once into a ``.gch`` in the cache; later builds ``-include`` it
(0.13 s for the same module).

The cache key holds the include lines, the compile flags, the compiler identity and the contents
of every native header (``generator_hash``), so an edited header never reuses a stale PCH. GCC
itself refuses a ``.gch`` built with other flags and then reads the header text. Clang names its
PCH differently; it compiles without one.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import threading

from ... import config

_failed: set = set()  # keys whose PCH did not build: compile those without one
_lock = threading.Lock()  # one thread builds a PCH; the others (force_load's) wait for it


def leading_includes(source: str) -> list[str]:
    """The ``#include`` lines before the first line of code (comments and blank lines skipped)."""
    lines = []
    for line in source.splitlines():
        s = line.strip()
        if s.startswith("#include"):
            lines.append(s)
        elif s and not s.startswith("//"):
            break
    return lines


def flags_for(source: str, flags: list, cxx: str, identity: str) -> list[str]:
    """``["-include", header]`` to compile ``source`` with a precompiled header of its leading includes
    (built now if needed), or ``[]`` when there is none to use."""
    if not config.cpu_precompiled_headers or "clang" in identity.lower():
        return []
    includes = leading_includes(source)
    if not includes:
        return []
    from ..module import generator_hash

    key = hashlib.sha256("\n".join(includes + flags + [identity, generator_hash()]).encode()).hexdigest()[:24]
    with _lock:
        return _ensure(key, includes, flags, cxx)


def _ensure(key: str, includes: list, flags: list, cxx: str) -> list[str]:
    from .cpu import _atomic_write, cache_root

    if key in _failed:
        return []
    d = os.path.join(cache_root(), "pch", key)
    header = os.path.join(d, "skpch.h")
    gch = header + ".gch"
    if not os.path.exists(gch):
        _atomic_write(header, ("\n".join(includes) + "\n").encode())
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp_", suffix=".gch")
        os.close(fd)
        cmd = [cxx, *[f for f in flags if f != "-shared"], "-x", "c++-header", "-o", tmp, header]
        try:
            ok = subprocess.run(cmd, capture_output=True).returncode == 0
            if ok:
                os.replace(tmp, gch)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        if not ok:
            _failed.add(key)
            return []
    return ["-include", header]
