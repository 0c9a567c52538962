"""CPU backend: the system C++ compiler builds one shared library per compile unit.

Compiler search order: ``$SIMKIT_CXX``, then ``c++``, ``g++``, ``clang++``.
Libraries are optimised for the host CPU (``-march=native``); the CPU model is
part of the cache key. Kernels run on all cores through OpenMP.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import tempfile

from ... import config
from ...logger import log_verbose
from . import cpu_pch, cpu_units
from ..errors import CompilerNotFoundError, NativeCompileError

NATIVE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "native")

_compiler: str | None = None
_identity: str | None = None


def find_compiler() -> str:
    """Path of the C++ compiler, or raise CompilerNotFoundError saying how to get one."""
    global _compiler
    if _compiler is not None:
        return _compiler
    env = os.environ.get("SIMKIT_CXX")
    if env:
        path = shutil.which(env)
        if path is None:
            raise CompilerNotFoundError(f"SIMKIT_CXX={env!r} is not an executable C++ compiler")
        _compiler = path
        return path
    for name in ("c++", "g++", "clang++"):
        path = shutil.which(name)
        if path:
            _compiler = path
            return path
    raise CompilerNotFoundError(
        "simkit's CPU backend needs a C++17 compiler and none was found (looked for $SIMKIT_CXX, c++, g++, "
        "clang++). Install one, e.g. `apt-get install g++` (Debian/Ubuntu), `dnf install gcc-c++` (Fedora), "
        "`xcode-select --install` (macOS), or set SIMKIT_CXX to its path.")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read(65536)
        model = flags = ""
        for line in text.splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            elif line.startswith(("flags", "Features")) and not flags:
                flags = hashlib.sha256(line.encode()).hexdigest()[:16]
            if model and flags:
                break
        return f"{model}|{flags}"
    except OSError:
        return platform.processor() or platform.machine()


def identity() -> str:
    """Compiler version + host CPU: a compile for another target never hits this cache entry (the optimisation
    flags are part of each module's key: :func:`opt_flags`)."""
    global _identity
    if _identity is not None:
        return _identity
    cxx = find_compiler()
    st = os.stat(cxx)
    key = f"{cxx}|{st.st_mtime_ns}|{st.st_size}"
    memo = os.path.join(cache_root(), "compilers.json")
    known = {}
    try:
        with open(memo) as f:
            known = json.load(f)
    except (OSError, ValueError):
        pass
    version = known.get(key)
    if version is None:
        try:
            out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30)
            version = out.stdout.splitlines()[0] if out.stdout else "unknown"
        except (OSError, subprocess.SubprocessError):
            version = "unknown"
        known[key] = version
        _atomic_write(memo, json.dumps(known).encode())
    _identity = f"{version}|{platform.machine()}|{_cpu_model()}"
    return _identity


def cache_root() -> str:
    from ...version import __version__

    root = config.cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "simkit", __version__)
    os.makedirs(root, exist_ok=True)
    return root


def _atomic_write(path: str, data: bytes):
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp_")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


_link: list | None = None


def link_flags() -> list:
    """``["-fuse-ld=gold"]`` where the compiler links a shared OpenMP library with gold, else ``[]``.

    A generated module's library is small and links against libgomp and libstdc++: GNU ld spends ~50 ms on
    each, gold ~25 (of ~230 ms for a one-kernel module's whole build, measured on gcc 12; the test suite
    builds ~1400). The linker changes no code, so it is not part of the cache key. Probed once per compiler
    (remembered in the cache's compilers.json); ``SIMKIT_CXX_LINKER=default`` keeps the compiler's own."""
    global _link
    if _link is not None:
        return _link
    _link = []
    if os.environ.get("SIMKIT_CXX_LINKER", "gold") != "gold" or platform.system() != "Linux":
        return _link
    cxx = find_compiler()
    st = os.stat(cxx)
    key = f"gold|{cxx}|{st.st_mtime_ns}|{st.st_size}"
    memo = os.path.join(cache_root(), "compilers.json")
    try:
        with open(memo) as f:
            known = json.load(f)
    except (OSError, ValueError):
        known = {}
    ok = known.get(key)
    if ok is None:
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "probe.cpp")
            with open(src, "w") as f:
                f.write('extern "C" int probe(int n) { int s = 0;\n#pragma omp parallel for reduction(+:s)\n'
                        'for (int i = 0; i < n; ++i) s += i; return s; }\n')
            try:
                ok = subprocess.run([cxx, "-fuse-ld=gold", "-shared", "-fPIC", "-fopenmp", "-o",
                                     os.path.join(d, "probe.so"), src], capture_output=True, timeout=60).returncode == 0
            except (OSError, subprocess.SubprocessError):
                ok = False
        known[key] = ok
        _atomic_write(memo, json.dumps(known).encode())
    if ok:
        _link = ["-fuse-ld=gold"]
    return _link


#: the C++ compiler's -O level when neither a module nor ``config.optimization_level`` sets one (config.py: why not
#: Warp's -O2)
DEFAULT_LEVEL = 3
#: ... and in debug mode (``config.mode``), where a build's bounds checks, not its speed, are the point: the test
#: files that use debug mode (11, two workers, empty cache) took 96 s of CPU with -O3, 72 s with -O1 and 71 s with
#: -O0, whose code runs slowest
DEBUG_LEVEL = 1


def opt_flags(level: int | None = None) -> list:
    """The optimisation flags of a module's build: ``config.cpu_opt`` when set, else ``-O<level>``; ``level``: the
    module's ``optimization_level`` option, None for ``config.optimization_level`` (read at each call), and
    when that is None too, :data:`DEFAULT_LEVEL` (:data:`DEBUG_LEVEL` in debug mode)."""
    if config.cpu_opt:
        return shlex.split(config.cpu_opt)
    if level is None:
        level = config.optimization_level
    if level is None and config.mode == "debug":
        level = DEBUG_LEVEL
    return [f"-O{DEFAULT_LEVEL if level is None else level}"]


def compile_flags(level: int | None = None) -> list:
    """The C++ compiler's flags for a generated module (``level``: as :func:`opt_flags`)."""
    flags = [*opt_flags(level), "-std=c++17", "-shared", "-fPIC", "-fopenmp", "-fvisibility=hidden",
             "-fno-math-errno", "-w", f"-I{NATIVE_DIR}"]
    if platform.machine() in ("x86_64", "AMD64", "aarch64", "arm64"):
        flags.append("-march=native" if platform.machine() in ("x86_64", "AMD64") else "-mcpu=native")
    return flags


def build(source: str, lib_path: str, flags: list | None = None, precompiled: bool | None = None,
          level: int | None = None) -> None:
    """Compile ``source`` into the shared library ``lib_path`` (atomically: temp file + rename).

    ``flags`` replaces :func:`compile_flags` (the tests' CUDA emulator builds with its own); ``level``: the
    module's ``optimization_level`` (:func:`opt_flags`).
    ``precompiled``: use a precompiled header of the source's leading includes (cpu_pch.py); by default
    only with the default flags (generated modules, not the small helper libraries built with their own).
    A generated module with large kernels compiles as several units at once (cpu_units.py).

    A failed compile leaves nothing at ``lib_path``; the source and log are kept beside it
    for inspection and the error carries the compiler's log.
    """
    cxx = find_compiler()
    d = os.path.dirname(lib_path)
    os.makedirs(d, exist_ok=True)
    src_path = os.path.join(d, "module.cpp")
    _atomic_write(src_path, source.encode())
    fd, tmp_lib = tempfile.mkstemp(dir=d, prefix=".tmp_", suffix=".so")
    os.close(fd)
    base = compile_flags(level) if flags is None else flags
    precompiled = flags is None if precompiled is None else precompiled
    pch = cpu_pch.flags_for(source, base, cxx, identity()) if precompiled else []
    units = cpu_units.split(source) if flags is None else [source]
    temps = [tmp_lib]
    try:
        link = link_flags() if flags is None else []
        if len(units) == 1:
            _run([cxx, *pch, *base, *link, "-o", tmp_lib, src_path], pch + link, d, src_path)
        else:
            objs = _compile_units(cxx, units, base, pch, d, temps)
            _run([cxx, "-shared", "-fopenmp", *link, "-o", tmp_lib, *objs], link, d, src_path)
        os.replace(tmp_lib, lib_path)
    finally:
        for t in temps:
            if os.path.exists(t):
                os.unlink(t)


def _run(cmd: list, pch: list, d: str, src_path: str) -> None:
    """Run a compiler command; without the flags ``pch`` (a precompiled header, the linker choice: they never
    decide a build) if it fails with them; raise NativeCompileError with the log, also written to
    ``d/error.log``."""
    log_verbose("simkit: " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 and pch:
        proc = subprocess.run([c for c in cmd if c not in pch], capture_output=True, text=True)
    if proc.returncode != 0:
        log = (proc.stderr or proc.stdout)[-20000:]
        _atomic_write(os.path.join(d, "error.log"), log.encode())
        raise NativeCompileError(f"C++ compilation failed for {src_path}:\n{log}")


def _compile_units(cxx: str, units: list, base: list, pch: list, d: str, temps: list) -> list:
    """Compile the units to objects, ``cpu_units.jobs()`` at a time; their paths."""
    flags = [f for f in base if f != "-shared"] + ["-c"]
    paths, objs = [], []
    for i, text in enumerate(units):
        path = os.path.join(d, f"unit{i}.cpp")
        _atomic_write(path, text.encode())
        fd, obj = tempfile.mkstemp(dir=d, prefix=".tmp_", suffix=".o")
        os.close(fd)
        temps.append(obj)
        paths.append(path)
        objs.append(obj)
    cmds = [[cxx, *pch, *flags, "-o", obj, path] for path, obj in zip(paths, objs)]
    running, failed, pending = [], [], list(range(len(cmds)))
    while pending or running:
        while pending and len(running) < cpu_units.jobs():
            k = pending.pop(0)
            log_verbose("simkit: " + " ".join(cmds[k]))
            running.append((k, subprocess.Popen(cmds[k], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        k, proc = running.pop(0)
        proc.communicate()
        if proc.returncode != 0:
            failed.append(k)
    for k in failed:  # (again one by one, without the precompiled header if there was one: the log)
        _run(cmds[k], pch, d, paths[k])
    return objs


class Library:
    """A loaded module library and its kernel entry points."""

    def __init__(self, path: str):
        self.path = path
        self.lib = ctypes.CDLL(path)
        self._get_error = self.lib.sk_get_error
        self._get_error.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        self._get_error.restype = ctypes.c_int
        self._err = (ctypes.c_int64 * 4)()

    def entry(self, name: str):
        """``f(args: bytes, bounds: bytes, threads, contiguous)``: a fast-call builtin (native_call.py), or
        the ctypes function where that is unavailable."""
        fn = getattr(self.lib, name)
        fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        fn.restype = None
        from . import native_call

        fast = native_call.cpu_entry(ctypes.cast(fn, ctypes.c_void_p).value)
        return fast if fast is not None else fn

    def error(self):
        """(code, line, a, b, c) of the first error reported since the last call, or None."""
        code = self._get_error(self._err)
        if code == 0:
            return None
        return (code, *list(self._err))


def library_path(key: str, unit_name: str) -> str:
    """Where the cache keeps the library of a unit."""
    return os.path.join(cache_root(), "cpu", f"{unit_name[:60]}_{key[:20]}", "module.so")


def precompile(source: str, key: str, unit_name: str, level: int | None = None) -> None:
    """Build the unit's library into the cache unless it is there (without loading it: any thread may run it;
    a failed build leaves nothing, so loading it builds again and raises its error)."""
    lib_path = library_path(key, unit_name)
    if not os.path.exists(lib_path):
        try:
            build(source, lib_path, level=level)
        except NativeCompileError:
            pass


def load_or_build(source: str, key: str, unit_name: str, level: int | None = None) -> Library:
    lib_path = library_path(key, unit_name)
    if not os.path.exists(lib_path):
        build(source, lib_path, level=level)
    else:
        log_verbose(f"simkit: cache hit {lib_path}")
    return Library(lib_path)
