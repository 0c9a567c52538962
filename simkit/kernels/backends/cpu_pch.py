"""Precompiled headers for CPU builds (GCC).

Every generated module starts with the same ``#include`` lines (``simkit.h``, and the collision
headers when it uses them); parsing them is most of a small module's compile time (0.20 of 0.32 s
measured for a one-kernel module on a Xeon with g++ 13). The first build with a given set of
include lines compiles them once into a ``.gch`` in the cache; later builds ``-include`` it
(0.13 s for the same module). The header compiles in the background (about 1.5 s for simkit.h and the
collision headers): with more than one core the build that asked for it compiles without it meanwhile,
and the builds after it wait for it.

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
_lock = threading.Lock()  # one thread starts a PCH's build; the others (force_load's) wait for it
_building: dict = {}  # key -> _Build of a PCH compiling now


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
    from .cpu_units import jobs

    if key in _failed:
        return []
    d = os.path.join(cache_root(), "pch", key)
    header = os.path.join(d, "skpch.h")
    gch = header + ".gch"
    if os.path.exists(gch):
        return ["-include", header]
    job = _building.get(key)
    if job is None:
        _atomic_write(header, ("\n".join(includes) + "\n").encode())
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp_", suffix=".gch")
        os.close(fd)
        cmd = [cxx, *[f for f in flags if f != "-shared"], "-x", "c++-header", "-o", tmp, header]
        job = _building[key] = _Build(key, cmd, tmp, gch)
        job.start()
        if jobs() > 1:  # (the build asking compiles without it, beside the header's: the first build's time)
            return []
    job.wait()
    return ["-include", header] if os.path.exists(gch) else []


class _Build(threading.Thread):
    """A PCH compiling in the background; moved into place when done (even if nobody waits for it: a
    non-daemon thread, so a short script's exit waits for the header its next run will use)."""

    def __init__(self, key: str, cmd: list, tmp: str, gch: str):
        super().__init__(name="simkit-pch")
        self.key, self.cmd, self.tmp, self.gch = key, cmd, tmp, gch

    def run(self):
        ok = False
        try:
            ok = subprocess.run(self.cmd, capture_output=True).returncode == 0
            if ok:
                os.replace(self.tmp, self.gch)
        except OSError:
            ok = False
        finally:
            if os.path.exists(self.tmp):
                os.unlink(self.tmp)
            if not ok:
                _failed.add(self.key)
            _building.pop(self.key, None)

    def wait(self) -> None:
        self.join()
