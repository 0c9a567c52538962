"""Shared helpers for simkit benchmarks: timing, machine description, tables, native C builds.

Used by ``benchmarks/cpu_core.py``; later benchmarks import it the same way::

    import os, sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import common
"""
from __future__ import annotations

import ctypes
import gc
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NATIVE_DIR = os.path.join(HERE, "native")


# ---------------------------------------------------------------------------
# Timing


class Timing:
    """Per-call wall times of one measured function (seconds)."""

    def __init__(self, samples: list):
        self.samples = sorted(samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return self.samples[0]

    @property
    def n(self) -> int:
        return len(self.samples)

    def __repr__(self):
        return f"Timing(median={fmt_time(self.median)}, min={fmt_time(self.min)}, n={self.n})"


def bench(fn, *, repeat: int, warmup: int = 1, min_time: float = 0.0, max_time: float = float("inf"),
          inner: int = 1) -> Timing:
    """Call ``fn`` ``warmup`` times, then time ``repeat`` samples (more while under ``min_time`` s total,
    stop early past ``max_time`` s, at least 1). Each sample runs ``fn`` ``inner`` times and records the
    mean per call (use ``inner`` > 1 for calls in the microsecond range)."""
    for _ in range(warmup):
        fn()
    samples = []
    clock = time.perf_counter
    start = clock()
    while True:
        t0 = clock()
        for _ in range(inner):
            fn()
        samples.append((clock() - t0) / inner)
        elapsed = clock() - start
        if len(samples) >= repeat and elapsed >= min_time:
            break
        if elapsed >= max_time:
            break
    return Timing(samples)


def bench_interleaved(fns: dict, *, rounds: int, block: int = 1, warmup: int = 1) -> dict:
    """Time several functions in alternating blocks: each round runs every function ``warmup`` times
    (untimed), then ``block`` timed calls back to back, in an order that rotates from round to round.
    Blocks keep each contender in its steady state (warm caches, OpenMP threads awake); alternating
    them spreads background load (other processes on a small machine) over every contender alike.
    Garbage collection is off inside the timed blocks. Returns {name: Timing} with rounds*block
    samples."""
    samples = {k: [] for k in fns}
    clock = time.perf_counter
    enabled = gc.isenabled()
    names = list(fns)
    try:
        for r in range(rounds):
            # the order rotates every round: what ran just before a call (one contender leaves caches and
            # threads in a state the next one inherits) then falls on every contender alike
            for k in names[r % len(names):] + names[:r % len(names)]:
                fn = fns[k]
                for _ in range(warmup):
                    fn()
                # as timeit does: no cyclic garbage collection inside a timed call (a collection of the
                # whole heap, kernels' compiled IR included, would land on whichever call triggered it).
                # No gc.collect() before each block either: in a large heap a full collection costs up to a
                # second (the test suite's smoke runs spent 135 s in them), and between blocks Python's own
                # collections run as usual
                gc.disable()
                for _ in range(block):
                    t0 = clock()
                    fn()
                    samples[k].append(clock() - t0)
                if enabled:
                    gc.enable()
    finally:
        if enabled:
            gc.enable()
    return {k: Timing(v) for k, v in samples.items()}


def fmt_time(s: float | None) -> str:
    if s is None:
        return "n/a"
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.2f} us"


def progress(msg: str):
    """One progress line on stderr (keeps stdout for the results)."""
    print(f"  .. {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Machine description


def cpu_model() -> str:
    """Model name from /proc/cpuinfo, with family/model numbers (VMs often report a generic name) and
    the widest SIMD extension."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # first processor only
                k, _, v = line.partition(":")
                info.setdefault(k.strip(), v.strip())
    except OSError:
        return platform.processor() or platform.machine()
    name = info.get("model name") or info.get("Model") or info.get("cpu model") or platform.machine()
    extra = []
    if "cpu family" in info:
        extra.append(f"family {info['cpu family']}, model {info.get('model', '?')}")
    flags = set(info.get("flags", "").split())
    simd = next((x for x in ("avx512f", "avx2", "avx", "sse4_2") if x in flags), None)
    if simd:
        extra.append(simd.upper().replace("AVX512F", "AVX-512"))
    return f"{name} ({'; '.join(extra)})" if extra else name


def git_revision() -> str:
    """Short commit of the repository holding the benchmarks, with '+dirty' for local changes."""
    root = os.path.dirname(HERE)
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) if rev else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def core_count() -> int:
    """CPUs available to this process (affinity-aware)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def compiler_version(cc: str = "gcc") -> str:
    path = shutil.which(cc)
    if not path:
        return f"{cc}: not found"
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
        return out.splitlines()[0] if out else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def package_version(name: str) -> str:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return "not installed"


def machine_info(threads: int) -> list:
    """(key, value) rows describing the machine and the software under test."""
    import numpy as np

    try:
        import simkit

        sk_version = simkit.__version__
    except Exception as e:  # pragma: no cover
        sk_version = f"import failed: {e}"
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        mem = f"{kb / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    try:
        load = "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        load = "unknown"
    return [
        ("CPU", cpu_model()),
        ("cores available", str(core_count())),
        ("threads used", str(threads)),
        ("memory", mem or "unknown"),
        ("load average at start (1/5/15 min)", load),
        ("OS", f"{platform.system()} {platform.release()} ({platform.machine()})"),
        ("C compiler", compiler_version("gcc")),
        ("Python", platform.python_version()),
        ("numpy", np.__version__),
        ("simkit", f"{sk_version} (git {git_revision()})"),
        ("warp-lang", package_version("warp-lang")),
    ]


# ---------------------------------------------------------------------------
# Tables


class Table:
    """A titled table printed as aligned text and rendered as markdown."""

    def __init__(self, title: str, columns: list, note: str = ""):
        self.title = title
        self.columns = columns
        self.rows: list = []
        self.note = note

    def add(self, *cells):
        self.rows.append([str(c) for c in cells])

    def text(self) -> str:
        widths = [max(len(self.columns[i]), *(len(r[i]) for r in self.rows)) if self.rows else len(self.columns[i])
                  for i in range(len(self.columns))]
        sep = "  "
        lines = [self.title, "-" * len(self.title),
                 sep.join(c.ljust(w) for c, w in zip(self.columns, widths)),
                 sep.join("-" * w for w in widths)]
        lines += [sep.join(c.ljust(w) for c, w in zip(r, widths)) for r in self.rows]
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def markdown(self, level: int = 4) -> str:
        lines = [f"{'#' * level} {self.title}", "",
                 "| " + " | ".join(self.columns) + " |",
                 "|" + "|".join("---" for _ in self.columns) + "|"]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)


def ratio_table(title: str, times: dict) -> list:
    """Markdown lines of a titled table of ``times`` ({name: Timing}; the first is the baseline, numpy): time per
    call and the baseline's time over each one's."""
    base = next(iter(times.values())).median
    lines = ["", title, "", "| implementation | time per call | numpy time / this |", "|---|---|---|"]
    return lines + [f"| {k} | {fmt_time(t.median)} | {base / t.median:.3g}x |" for k, t in times.items()]


def write_report(lines: list, markdown_path: str | None) -> None:
    """Print the report, and write it to ``markdown_path`` too when given."""
    text = "\n".join(lines)
    print(text)
    if markdown_path:
        with open(markdown_path, "w") as f:
            f.write(text + "\n")


def kv_markdown(rows: list) -> str:
    return "\n".join(f"- **{k}**: {v}" for k, v in rows)


def kv_text(rows: list) -> str:
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(w)} : {v}" for k, v in rows)


# ---------------------------------------------------------------------------
# Native C reference code

C_FLAGS = ["-O3", "-march=native", "-fopenmp", "-fno-math-errno", "-shared", "-fPIC"]


def build_c(source_name: str, out_dir: str, cc: str = "gcc", extra_flags: tuple = ()) -> ctypes.CDLL:
    """Compile ``benchmarks/native/<source_name>`` into a shared library in ``out_dir`` and load it."""
    src = os.path.join(NATIVE_DIR, source_name)
    lib = os.path.join(out_dir, os.path.splitext(source_name)[0] + ".so")
    compiler = shutil.which(cc)
    if compiler is None:
        raise RuntimeError(f"C compiler {cc!r} not found")
    cmd = [compiler, *C_FLAGS, *extra_flags, "-o", lib, src, "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building {src} failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return ctypes.CDLL(lib)


def c_flags_text() -> str:
    return "gcc " + " ".join(f for f in C_FLAGS if f not in ("-shared", "-fPIC"))
