"""CPU core benchmark: simkit vs hand-written C (OpenMP), numpy and warp-lang, in one run.

    python benchmarks/cpu_core.py [--quick] [--threads N] [--markdown out.md] [--json out.json]

Sections (see docs/benchmarks.md for results and targets):

1. saxpy, 4M float32 (y = a*x + y): time per call, GB/s (12 bytes moved per element), ratio to C.
2. O(N^2) softened-gravity n-body, 8192 vec3 bodies: time per step, ratio to C.
3. launch overhead: a dim=1 kernel with two arguments, median of many launches (us/launch); also 9
   arguments (3 arrays, 3 floats, 3 vec3) and one struct of those 9 fields.
4. cold compile of a generated 7-kernel module (fresh token, fresh cache dir, new process),
   first launch = frontend + codegen + C++ compile + load, vs warp-lang.
5. cached load: a new process imports the already-compiled module; time of the first launch
   (frontend + hash + dlopen).
6. cold compile of a large module (the 7 kernels 16 times over): simkit as one C++ unit and as
   several compiled at once (kernels/backends/cpu_units.py), vs warp-lang.
7. cold ``force_load`` of 6 separate 7-kernel modules: one after another and several at once
   (runtime/loading.py), vs warp-lang's ``force_load`` both ways.

Hand-written C is built at benchmark time with the flags simkit uses for its own CPU modules
(``gcc -O3 -march=native -fopenmp -fno-math-errno``) and runs with simkit's thread count;
simkit and C are also compared on one thread (a comparison that background load on a small
shared machine cannot distort). numpy runs on one thread; warp-lang's CPU backend runs each
kernel on one thread. Every implementation's result is checked before it is timed.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's idle BLAS threads spin on the timed cores
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import compile_worker  # noqa: E402

import simkit as sk  # noqa: E402
from simkit.runtime.launch import bounds_bytes  # noqa: E402

try:
    import warp as wp
except Exception:  # warp-lang is optional
    wp = None

SAXPY_N = 4 * 1024 * 1024
NBODY_N = 8192
NBODY_EPS = 0.01

LARGE_COPIES = 16  # the large-module compile: the 7 kernels 16 times over
LOAD_MODULES = 6  # force_load: this many separate 7-kernel modules

TARGETS = {
    "saxpy": 1.3,  # simkit/C time ratio
    "nbody": 1.3,
    "launch_us": 5.0,
    "cached_ms": 20.0,
}

# ---------------------------------------------------------------------------
# Kernels


@sk.kernel
def sk_saxpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def sk_nbody(pos: sk.array(dtype=sk.vec3), acc: sk.array(dtype=sk.vec3), n: int, eps: float):
    i = sk.tid()
    pi = pos[i]
    a = sk.vec3(0.0, 0.0, 0.0)
    for j in range(n):
        d = pos[j] - pi
        r2 = sk.dot(d, d) + eps
        a = a + d * (1.0 / (r2 * sk.sqrt(r2)))
    acc[i] = a


@sk.kernel
def sk_tiny(a: float, x: sk.array(dtype=float)):
    x[0] = a


@sk.kernel
def sk_tiny_any(a: Any, x: sk.array(dtype=Any)):    # generic: specialised by the launch's argument types
    x[0] = a


@sk.struct
class SkArgs9:  # warp-lang's benchmark_launches.py "Sz": 3 arrays, 3 floats, 3 vec3
    a: sk.array(dtype=float)
    b: sk.array(dtype=float)
    c: sk.array(dtype=float)
    x: float
    y: float
    z: float
    u: sk.vec3
    v: sk.vec3
    w: sk.vec3


@sk.kernel
def sk_tiny_struct(s: SkArgs9):
    s.a[0] = s.x


@sk.kernel
def sk_tiny_9(a: sk.array(dtype=float), b: sk.array(dtype=float), c: sk.array(dtype=float), x: float, y: float,
              z: float, u: sk.vec3, v: sk.vec3, w: sk.vec3):
    a[0] = x


@sk.kernel(module="cpu_core_ctypes_entries")  # a module of its own, loaded with config.native_calls = False
def sk_tiny_ctypes(a: float, x: sk.array(dtype=float)):
    x[0] = a


if wp is not None:

    @wp.kernel
    def wp_saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    @wp.kernel
    def wp_nbody(pos: wp.array(dtype=wp.vec3), acc: wp.array(dtype=wp.vec3), n: int, eps: float):
        i = wp.tid()
        pi = pos[i]
        a = wp.vec3(0.0, 0.0, 0.0)
        for j in range(n):
            d = pos[j] - pi
            r2 = wp.dot(d, d) + eps
            a = a + d * (1.0 / (r2 * wp.sqrt(r2)))
        acc[i] = a

    @wp.kernel
    def wp_tiny(a: float, x: wp.array(dtype=float)):
        x[0] = a

    @wp.kernel
    def wp_tiny_any(a: Any, x: wp.array(dtype=Any)):
        x[0] = x.dtype(a)

    @wp.struct
    class WpArgs9:
        a: wp.array(dtype=float)
        b: wp.array(dtype=float)
        c: wp.array(dtype=float)
        x: float
        y: float
        z: float
        u: wp.vec3
        v: wp.vec3
        w: wp.vec3

    @wp.kernel
    def wp_tiny_struct(s: WpArgs9):
        s.a[0] = s.x

    @wp.kernel
    def wp_tiny_9(a: wp.array(dtype=float), b: wp.array(dtype=float), c: wp.array(dtype=float), x: float,
                  y: float, z: float, u: wp.vec3, v: wp.vec3, w: wp.vec3):
        a[0] = x


def nine_args(K, struct_cls) -> tuple:
    """(the 9 arguments of *_tiny_9, a struct holding the same) of framework ``K``."""
    arrays = [K.zeros(1, dtype=float, device="cpu") for _ in range(3)]
    vecs = [K.vec3(1.0, 2.0, 3.0), K.vec3(10.0, 20.0, 30.0), K.vec3(100.0, 200.0, 300.0)]
    args = [*arrays, 17.0, 42.0, 99.0, *vecs]
    s = struct_cls()
    for name, value in zip("abcxyzuvw", args):
        setattr(s, name, value)
    return args, s


def numpy_nbody(pos: np.ndarray, eps: float, chunk: int = 256) -> np.ndarray:
    """Vectorised n-body in row chunks: peak temporary memory is chunk*N*3 floats (25 MB at N=8192)."""
    n = len(pos)
    acc = np.empty_like(pos)
    for i0 in range(0, n, chunk):
        d = pos[None, :, :] - pos[i0:i0 + chunk, None, :]  # (c, N, 3)
        r2 = np.einsum("ijk,ijk->ij", d, d)
        r2 += eps
        inv = r2 * np.sqrt(r2)
        np.reciprocal(inv, out=inv)
        acc[i0:i0 + chunk] = np.einsum("ij,ijk->ik", inv, d)
    return acc


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


# ---------------------------------------------------------------------------
# Sections


class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.threads = args.threads or common.core_count()
        sk.config.cpu_threads = self.threads
        self.tmp = tempfile.mkdtemp(prefix="simkit_bench_")
        sk.config.cache_dir = os.path.join(self.tmp, "simkit_cache")
        self.clib = common.build_c("cpu_core.c", self.tmp)
        self.clib.saxpy.argtypes = [ctypes.c_int64, ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
        self.clib.saxpy.restype = None
        self.clib.nbody.argtypes = [ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_float, ctypes.c_int]
        self.clib.nbody.restype = None
        self.clib.tiny.argtypes = [ctypes.c_float, ctypes.c_void_p]
        self.clib.tiny.restype = None
        self.warp_ok = False
        if wp is not None and not args.no_warp:
            try:
                wp.config.kernel_cache_dir = os.path.join(self.tmp, "warp_cache")
                if hasattr(wp, "LOG_WARNING"):
                    wp.config.log_level = wp.LOG_WARNING
                wp.config.quiet = True
                wp.init()
                self.warp_ok = True
            except Exception as e:  # pragma: no cover
                common.progress(f"warp-lang unavailable: {e}")
        self.tables: list = []
        self.results: dict = {}

    def close(self):
        if self.args.keep:
            print(f"temporary files kept in {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _ratio_table(self, title, rows, rate_col, rate, note=""):
        """rows: name -> (threads, Timing); ratios are to the C row with the same thread count."""
        c_rows = {th: tm for name, (th, tm) in rows.items() if name.startswith("C")}
        t = common.Table(title, ["implementation", "threads", "time (median)", "min", rate_col,
                                 "median / C", "min / C"], note=note)
        for name, (th, tm) in rows.items():
            c = c_rows.get(th) or c_rows[max(c_rows)]
            t.add(name, th, common.fmt_time(tm.median), common.fmt_time(tm.min), rate(tm.median),
                  f"{tm.median / c.median:.2f}x", f"{tm.min / c.min:.2f}x")
        self.tables.append(t)

    def _thread_counts(self):
        """simkit and C run with all threads, and with one (a comparison that background load on the
        other cores of a small shared machine cannot distort)."""
        return [self.threads] + ([1] if self.threads > 1 else [])

    def _sk_launch(self, threads, kernel, dim, inputs):
        def run():
            sk.config.cpu_threads = threads
            sk.launch(kernel, dim, inputs=inputs, device="cpu")
        return run

    # -- 1. saxpy ---------------------------------------------------------
    def saxpy(self):
        """All implementations work on the same two buffers (simkit CPU arrays' .numpy() are zero-copy views),
        so every contender sees the same memory and cache state."""
        n, a = SAXPY_N, np.float32(0.5)
        rng = np.random.default_rng(0)
        x0 = rng.random(n, dtype=np.float32)
        y0 = rng.random(n, dtype=np.float32)
        expected = a * x0 + y0
        rounds, block = (3, 10) if self.quick else (10, 20)
        fns, threads = {}, {}
        x = sk.array(x0.copy(), device="cpu")
        y = sk.array(y0.copy(), device="cpu")
        xn, yn = x.numpy(), y.numpy()

        def check(name, fn):
            yn[:] = y0
            fn()
            if not np.allclose(yn, expected, rtol=1e-6, atol=1e-6):
                raise AssertionError(f"saxpy: {name} gives a wrong result")

        common.progress("saxpy: build + check simkit, C, numpy, warp-lang")
        cfn, px, py = self.clib.saxpy, _ptr(xn), _ptr(yn)
        for th in self._thread_counts():
            fns[f"simkit, {th}T"] = self._sk_launch(th, sk_saxpy, n, [float(a), x, y])
            fns[f"C (OpenMP), {th}T"] = lambda th=th: cfn(n, a, px, py, th)
            threads[f"simkit, {th}T"] = threads[f"C (OpenMP), {th}T"] = th

        tmp = np.empty_like(y0)

        def np_saxpy():
            np.multiply(xn, a, out=tmp)
            np.add(tmp, yn, out=yn)

        fns["numpy"] = np_saxpy
        threads["numpy"] = 1

        if self.warp_ok:
            wx = wp.array(xn, dtype=float, device="cpu", copy=False)
            wy = wp.array(yn, dtype=float, device="cpu", copy=False)
            assert wy.ptr == yn.ctypes.data
            fns["warp-lang"] = lambda: wp.launch(wp_saxpy, n, inputs=[float(a), wx, wy], device="cpu")
            threads["warp-lang"] = 1
        for name, fn in fns.items():
            check(name, fn)

        common.progress(f"saxpy: timing, {rounds} rounds of {block} calls per implementation")
        timings = common.bench_interleaved(fns, rounds=rounds, block=block, warmup=2)
        sk.config.cpu_threads = self.threads
        rows = {k: (threads[k], timings[k]) for k in fns}
        self._ratio_table(f"saxpy, {n // 2**20}M float32 (y = a*x + y)", rows, "GB/s",
                          lambda t: f"{12 * n / t / 1e9:.1f}",
                          note="Ratios are to C with the same thread count. GB/s counts 12 bytes per element (read x, read y, write y), at the median time. "
                               f"{rounds} rounds of {block} back-to-back calls per implementation, alternating, "
                               "all on the same x and y buffers (32 MiB together).")
        self.results["saxpy"] = {k: {"threads": th, "median_s": tm.median, "min_s": tm.min}
                                 for k, (th, tm) in rows.items()}
        self.results["saxpy_ratio"] = {th: rows[f"simkit, {th}T"][1].median / rows[f"C (OpenMP), {th}T"][1].median
                                       for th in self._thread_counts()}

    # -- 2. n-body --------------------------------------------------------
    def nbody(self):
        n, eps = NBODY_N, np.float32(NBODY_EPS)
        rng = np.random.default_rng(1)
        pos_np = rng.random((n, 3), dtype=np.float32)
        rounds, block = (2, 2) if self.quick else (5, 3)
        fns, threads = {}, {}

        common.progress("n-body: build + check simkit, C, warp-lang")
        acc_c = np.zeros_like(pos_np)
        cfn, pp, pa = self.clib.nbody, _ptr(pos_np), _ptr(acc_c)
        cfn(n, pp, pa, eps, self.threads)
        ref = acc_c.copy()
        scale = np.abs(ref).max()

        def check(name, acc):
            err = np.abs(acc - ref).max() / scale
            if not err < 1e-3:
                raise AssertionError(f"n-body: {name} differs from C by {err:.2e} (relative to max |acc|)")

        pos = sk.array(pos_np, dtype=sk.vec3, device="cpu")
        acc = sk.zeros(n, dtype=sk.vec3, device="cpu")
        sk.launch(sk_nbody, n, inputs=[pos, acc, n, float(eps)], device="cpu")
        check("simkit", acc.numpy())
        for th in self._thread_counts():
            fns[f"simkit, {th}T"] = self._sk_launch(th, sk_nbody, n, [pos, acc, n, float(eps)])
            fns[f"C (OpenMP), {th}T"] = lambda th=th: cfn(n, pp, pa, eps, th)
            threads[f"simkit, {th}T"] = threads[f"C (OpenMP), {th}T"] = th

        if self.warp_ok:
            wpos = wp.array(pos_np, dtype=wp.vec3, device="cpu")
            wacc = wp.zeros(n, dtype=wp.vec3, device="cpu")
            wp.launch(wp_nbody, n, inputs=[wpos, wacc, n, float(eps)], device="cpu")
            check("warp", wacc.numpy())
            fns["warp-lang"] = lambda: wp.launch(wp_nbody, n, inputs=[wpos, wacc, n, float(eps)], device="cpu")
            threads["warp-lang"] = 1

        common.progress(f"n-body: timing, {rounds} rounds of {block} steps per implementation")
        timings = common.bench_interleaved(fns, rounds=rounds, block=block, warmup=1)
        sk.config.cpu_threads = self.threads
        rows = {k: (threads[k], timings[k]) for k in fns}

        np_repeat = 1 if self.quick else 3
        common.progress(f"n-body: numpy, {np_repeat} run(s) (slow)")
        check("numpy", numpy_nbody(pos_np, eps))
        rows["numpy (chunks of 256 rows)"] = (1, common.bench(lambda: numpy_nbody(pos_np, eps), repeat=np_repeat,
                                                              warmup=0))
        self._ratio_table(f"n-body O(N^2), {n} vec3 bodies (softened gravity, one acceleration pass)", rows,
                          "G interactions/s", lambda t: f"{n * n / t / 1e9:.2f}",
                          note="Ratios are to C with the same thread count. "
                               f"simkit, C and warp-lang: {rounds} rounds of {block} back-to-back steps per "
                               "implementation, alternating.")
        self.results["nbody"] = {k: {"threads": th, "median_s": tm.median, "min_s": tm.min}
                                 for k, (th, tm) in rows.items()}
        self.results["nbody_ratio"] = {th: rows[f"simkit, {th}T"][1].median / rows[f"C (OpenMP), {th}T"][1].median
                                       for th in self._thread_counts()}

    # -- 3. launch overhead ----------------------------------------------
    def launch_overhead(self):
        launches = 2000 if self.quick else 20000
        rows = {}
        common.progress(f"launch overhead: simkit ({launches} launches)")
        x = sk.zeros(16, device="cpu")
        sk.launch(sk_tiny, 1, inputs=[1.0, x], device="cpu")
        rows["simkit `sk.launch`"] = common.bench(lambda: sk.launch(sk_tiny, 1, inputs=[1.0, x], device="cpu"),
                                                  repeat=launches, warmup=200)
        rows["simkit `sk.launch`, generic kernel (`Any`)"] = common.bench(
            lambda: sk.launch(sk_tiny_any, 1, inputs=[1.0, x], device="cpu"), repeat=launches, warmup=200)
        args9, s9 = nine_args(sk, SkArgs9)
        for kernel, args, label in ((sk_tiny_9, args9, "9 arguments: 3 arrays, 3 floats, 3 vec3"),
                                    (sk_tiny_struct, [s9], "one struct of those 9 fields")):
            sk.launch(kernel, 1, inputs=args, device="cpu")
            rows[f"simkit `sk.launch`, {label}"] = common.bench(
                lambda k=kernel, a=args: sk.launch(k, 1, inputs=a, device="cpu"), repeat=launches, warmup=200)
        cmd = sk.launch(sk_tiny, 1, inputs=[1.0, x], device="cpu", record_cmd=True)
        rows["simkit `Launch.launch()` (`record_cmd=True`)"] = common.bench(cmd.launch, repeat=launches, warmup=200)
        if self.warp_ok:
            common.progress(f"launch overhead: warp-lang ({launches} launches)")
            wx = wp.zeros(16, dtype=float, device="cpu")
            wp.launch(wp_tiny, 1, inputs=[1.0, wx], device="cpu")
            rows["warp-lang `wp.launch`"] = common.bench(
                lambda: wp.launch(wp_tiny, 1, inputs=[1.0, wx], device="cpu"), repeat=launches, warmup=200)
            rows["warp-lang `wp.launch`, generic kernel (`Any`)"] = common.bench(
                lambda: wp.launch(wp_tiny_any, 1, inputs=[1.0, wx], device="cpu"), repeat=launches, warmup=200)
            wargs9, ws9 = nine_args(wp, WpArgs9)
            for kernel, args, label in ((wp_tiny_9, wargs9, "9 arguments: 3 arrays, 3 floats, 3 vec3"),
                                        (wp_tiny_struct, [ws9], "one struct of those 9 fields")):
                wp.launch(kernel, 1, inputs=args, device="cpu")
                rows[f"warp-lang `wp.launch`, {label}"] = common.bench(
                    lambda k=kernel, a=args: wp.launch(k, 1, inputs=a, device="cpu"), repeat=launches, warmup=200)
            wcmd = wp.launch(wp_tiny, 1, inputs=[1.0, wx], device="cpu", record_cmd=True)
            rows["warp-lang `Launch.launch()` (`record_cmd=True`)"] = common.bench(
                wcmd.launch, repeat=launches, warmup=200)
        saved = sk.config.native_calls
        sk.config.native_calls = False  # (read when sk_tiny_ctypes's module is loaded, at its first launch)
        try:
            sk.launch(sk_tiny_ctypes, 1, inputs=[1.0, x], device="cpu")
        finally:
            sk.config.native_calls = saved
        rows["simkit `sk.launch`, entries called through ctypes (`config.native_calls = False`)"] = common.bench(
            lambda: sk.launch(sk_tiny_ctypes, 1, inputs=[1.0, x], device="cpu"), repeat=launches, warmup=200)
        common.progress("launch overhead: replayed from CPU graphs")
        per = 100   # launches per graph: a replay's time / per is one launch's share
        with sk.ScopedCapture("cpu") as cap:
            for _ in range(per):
                sk.launch(sk_tiny, 1, inputs=[1.0, x], device="cpu")
        replay = common.bench(lambda: sk.capture_launch(cap.graph), repeat=max(20, launches // per), warmup=5)
        rows[f"simkit, replayed from a CPU graph (`ScopedCapture`, {per} launches; per launch)"] = \
            common.Timing([t / per for t in replay.samples])
        if self.warp_ok:
            with wp.ScopedCapture("cpu") as wcap:
                for _ in range(per):
                    wp.launch(wp_tiny, 1, inputs=[1.0, wx], device="cpu")
            wreplay = common.bench(lambda: wp.capture_launch(wcap.graph), repeat=max(20, launches // per), warmup=5)
            rows[f"warp-lang, replayed from a CPU graph ({per} launches; per launch)"] = \
                common.Timing([t / per for t in wreplay.samples])
        common.progress("launch overhead: the calls alone")
        spec = sk_tiny.specs[None]
        entry = spec.native[sk.get_device("cpu").kind][0]
        packed, bounds = spec.packer([1.0, x], sk.get_device("cpu"))[0], bounds_bytes((1,))[0]
        rows["simkit's kernel entry alone (packed arguments, fast call)"] = common.bench(
            lambda: entry(packed, bounds, 1, 1), repeat=launches, warmup=200)
        buf = np.zeros(16, dtype=np.float32)
        fn, pb = self.clib.tiny, _ptr(buf)
        rows["C function via ctypes"] = common.bench(lambda: fn(1.0, pb), repeat=launches, warmup=200)

        t = common.Table("Launch overhead (dim=1 kernel, 2 arguments: a float and an array)",
                         ["implementation", "median", "min", "p90"],
                         note=f"{launches} launches, each timed individually.")
        for name, tm in rows.items():
            p90 = tm.samples[int(0.9 * (tm.n - 1))]
            t.add(name, common.fmt_time(tm.median), common.fmt_time(tm.min), common.fmt_time(p90))
        self.tables.append(t)
        self.results["launch"] = {k: {"median_s": tm.median, "min_s": tm.min} for k, tm in rows.items()}
        self.results["launch_us"] = rows["simkit `sk.launch`"].median * 1e6
        self.array_creation(launches)

    def array_creation(self, n: int):
        """Per-call cost of making a small CPU array (16 vec3): what a step that allocates its state pays."""
        common.progress(f"array creation ({n} arrays each way)")
        rows = {}
        for lib, tag in ((sk, "simkit `sk`"), (wp if self.warp_ok else None, "warp-lang `wp`")):
            if lib is None:
                continue
            for label, fn in (("zeros", lambda m=lib: m.zeros(16, dtype=m.vec3, device="cpu")),
                              ("empty", lambda m=lib: m.empty(16, dtype=m.vec3, device="cpu")),
                              ("zeros, requires_grad", lambda m=lib: m.zeros(16, dtype=m.vec3, device="cpu",
                                                                            requires_grad=True))):
                rows[f"{tag}.{label}"] = common.bench(fn, repeat=n, warmup=100)
        rows["numpy `np.zeros((16, 3), np.float32)`"] = common.bench(lambda: np.zeros((16, 3), np.float32),
                                                                      repeat=n, warmup=100)
        t = common.Table("Array creation (16 vec3 on the CPU)", ["implementation", "median", "min"],
                         note=f"{n} arrays each, each timed individually (freeing the previous one included).")
        for name, tm in rows.items():
            t.add(name, common.fmt_time(tm.median), common.fmt_time(tm.min))
        self.tables.append(t)
        self.results["array_creation"] = {k: {"median_s": tm.median, "min_s": tm.min} for k, tm in rows.items()}

    # -- 4 + 5. compile times --------------------------------------------
    def _worker_env(self) -> dict:
        """Environment of the compile worker processes: bytecode caching on, as in a normal install (some
        sandboxes and CI images set PYTHONDONTWRITEBYTECODE, which would recompile every simkit module from
        source at each import); the .pyc files go to the temp dir, never into the source tree."""
        env = dict(os.environ)
        env.pop("SIMKIT_CACHE_DIR", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(self.tmp, "pycache")
        env["SIMKIT_CPU_THREADS"] = str(self.threads)
        return env

    def _warm_bytecode(self):
        code = "import simkit, simkit.kernels.backends.cpu\ntry:\n    import warp\nexcept Exception:\n    pass\n"
        subprocess.run([sys.executable, "-c", code], capture_output=True, env=self._worker_env())

    def _worker(self, framework, mod_dir, mod_name, cache_dir, copies: int = 1, jobs: int | None = None,
                load: int | None = None) -> dict:
        """One measurement in a new process; ``jobs``: simkit's SIMKIT_CPU_JOBS there (default: its own);
        ``load``: ``force_load`` the ``copies`` modules named (comma-separated) that many at a time."""
        cmd = [sys.executable, os.path.join(common.HERE, "compile_worker.py"), framework, mod_dir, mod_name,
               cache_dir, str(copies) if load is None else f"load:{load}"]
        env = self._worker_env()
        if jobs is not None:
            env["SIMKIT_CPU_JOBS"] = str(jobs)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            raise RuntimeError(f"compile worker failed ({' '.join(cmd)}):\n{proc.stdout}\n{proc.stderr}")
        res = json.loads(lines[-1])
        if res["compiled"] != compile_worker.NUM_KERNELS * copies:
            raise AssertionError(f"{framework}: first launch compiled {res['compiled']} of "
                                 f"{compile_worker.NUM_KERNELS * copies} kernels")
        return res

    def large_module(self):
        """Cold compile of the 7 kernels 16 times over (112 kernels, about 450 KB of C++): simkit as one unit and
        as several compiled at once (kernels/backends/cpu_units.py), and warp-lang."""
        copies, reps = LARGE_COPIES, 1 if self.quick else 2
        mod_dir = os.path.join(self.tmp, "modules")
        os.makedirs(mod_dir, exist_ok=True)
        ways = [("simkit", 1, "simkit, one unit (SIMKIT_CPU_JOBS=1)"),
                ("simkit", None, f"simkit, units compiled at once (jobs: {os.cpu_count()} cores, at most 8)")]
        if self.warp_ok:
            ways += [("warp", None, "warp-lang (default: forward + adjoint)"),
                     ("warp-nobwd", None, "warp-lang, enable_backward=False (forward only)")]
        times = {label: [] for _, _, label in ways}
        for r in range(reps):
            for f, jobs, label in ways:  # interleaved
                common.progress(f"large module {r + 1}/{reps}: {label}")
                token = secrets.token_hex(4)
                name = compile_worker.write_module(mod_dir, f, token, copies)
                cache = os.path.join(self.tmp, f"large_{f}_{token}")
                times[label].append(self._worker(f, mod_dir, name, cache, copies, jobs)["first_launch_s"])
        n = compile_worker.NUM_KERNELS * copies
        t = common.Table(f"Cold compile, {n}-kernel module (new process, empty cache)",
                         ["implementation", "first launch (median)", "min", "runs", "time / one unit"],
                         note=f"The {compile_worker.NUM_KERNELS} kernels above, {copies} times over.")
        base = common.Timing(times[ways[0][2]]).median
        for _, _, label in ways:
            tm = common.Timing(times[label])
            t.add(label, common.fmt_time(tm.median), common.fmt_time(tm.min), tm.n, f"{tm.median / base:.2f}x")
        self.tables.append(t)
        self.results["large_module_s"] = {label: common.Timing(v).median for label, v in times.items()}

    def force_load(self):
        """Cold ``force_load`` of several 7-kernel modules: one after another and several at once
        (runtime/loading.py), simkit and warp-lang."""
        n_mods, reps = LOAD_MODULES, 1 if self.quick else 2
        mod_dir = os.path.join(self.tmp, "modules")
        os.makedirs(mod_dir, exist_ok=True)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        ways = [("simkit", 0, "simkit, max_workers=0 (one after another)"),
                ("simkit", min(cores, 8), f"simkit, max_workers={min(cores, 8)} (its default: the cores)")]
        if self.warp_ok:
            ways += [("warp", 0, "warp-lang, max_workers=0 (its default)"),
                     ("warp", min(cores, 8), f"warp-lang, max_workers={min(cores, 8)}")]
        times = {label: [] for _, _, label in ways}
        for r in range(reps):
            for f, workers, label in ways:  # interleaved
                common.progress(f"force_load {r + 1}/{reps}: {label}")
                token = secrets.token_hex(4)
                names = [compile_worker.write_module(mod_dir, f, f"{token}{m:x}") for m in range(n_mods)]
                cache = os.path.join(self.tmp, f"load_{f}_{token}")
                times[label].append(self._worker(f, mod_dir, ",".join(names), cache, n_mods, load=workers)
                                    ["first_launch_s"])
        t = common.Table(f"Cold `force_load` of {n_mods} modules of {compile_worker.NUM_KERNELS} kernels (new "
                         "process, empty cache)", ["implementation", "force_load (median)", "min", "runs",
                                                   "time / simkit one after another"],
                         note="warp-lang compiles forward and adjoint kernels (its default).")
        base = common.Timing(times[ways[0][2]]).median
        for _, _, label in ways:
            tm = common.Timing(times[label])
            t.add(label, common.fmt_time(tm.median), common.fmt_time(tm.min), tm.n, f"{tm.median / base:.2f}x")
        self.tables.append(t)
        self.results["force_load_s"] = {label: common.Timing(v).median for label, v in times.items()}

    def compile_times(self):
        frameworks = ["simkit"] + (["warp", "warp-nobwd"] if self.warp_ok else [])
        cold_reps = 1 if self.quick else 3
        cached_reps = 3 if self.quick else 7
        mod_dir = os.path.join(self.tmp, "modules")
        os.makedirs(mod_dir, exist_ok=True)
        common.progress("compile: writing Python bytecode caches (untimed)")
        self._warm_bytecode()
        cold = {f: [] for f in frameworks}
        last = {}
        for r in range(cold_reps):
            for f in frameworks:  # interleaved, so background load hits every framework alike
                common.progress(f"cold compile {r + 1}/{cold_reps}: {f}")
                token = secrets.token_hex(4)
                name = compile_worker.write_module(mod_dir, f, token)
                cache = os.path.join(self.tmp, f"cold_{f}_{token}")
                cold[f].append(self._worker(f, mod_dir, name, cache))
                last[f] = (name, cache)
        cached = {f: [] for f in frameworks}
        misses = {f: 0 for f in frameworks}
        for r in range(cached_reps):
            for f in frameworks:
                common.progress(f"cached load {r + 1}/{cached_reps}: {f}")
                name, cache = last[f]
                for _ in range(5):
                    res = self._worker(f, mod_dir, name, cache)
                    if not res["built"]:
                        break
                    # a cache miss: the framework's own sources changed since the cold build (e.g. simkit
                    # edited during the run). Discard the sample; the rebuilt cache serves the next try.
                    misses[f] += 1
                    common.progress(f"cached load: {f} missed the cache (sources changed?); sample discarded")
                cached[f].append(res)

        labels = {"simkit": "simkit (g++ -O3)", "warp": "warp-lang (default: forward + adjoint)",
                  "warp-nobwd": "warp-lang, enable_backward=False (forward only)"}

        def med(rs, key):
            return common.Timing([x[key] for x in rs])

        t = common.Table(f"Cold compile, {compile_worker.NUM_KERNELS}-kernel module (new process, empty cache)",
                         ["implementation", "first launch (median)", "min", "runs", "time / simkit"],
                         note="First launch = parse + codegen + native compile of all 7 kernels + load. "
                              "Framework import and module import are not included.")
        sk_cold = med(cold["simkit"], "first_launch_s").median
        for f in frameworks:
            tm = med(cold[f], "first_launch_s")
            t.add(labels[f], common.fmt_time(tm.median), common.fmt_time(tm.min), tm.n,
                  f"{tm.median / sk_cold:.2f}x")
        self.tables.append(t)

        note = ("First launch = frontend + hash + cache lookup + dlopen (the targeted number). "
                "Module import (decorators) and `import simkit`/`import warp; wp.init()` are shown for context. "
                "Python bytecode caching is on in these processes, as in a normal install.")
        if any(misses.values()):
            note += (" Discarded cache misses (framework sources changed during the run): "
                     + ", ".join(f"{f}: {m}" for f, m in misses.items() if m) + ".")
        t2 = common.Table("Cached load (new process, module already compiled)",
                          ["implementation", "first launch (median)", "min", "module import", "framework import",
                           "runs"], note=note)
        for f in frameworks:
            tm = med(cached[f], "first_launch_s")
            t2.add(labels[f], common.fmt_time(tm.median), common.fmt_time(tm.min),
                   common.fmt_time(med(cached[f], "import_module_s").median),
                   common.fmt_time(med(cached[f], "import_lib_s").median), tm.n)
        self.tables.append(t2)
        self.results["cold"] = {f: [x["first_launch_s"] for x in cold[f]] for f in frameworks}
        self.results["cached"] = {f: [x["first_launch_s"] for x in cached[f]] for f in frameworks}
        self.results["cold_s"] = {f: med(cold[f], "first_launch_s").median for f in frameworks}
        self.results["cached_ms"] = med(cached["simkit"], "first_launch_s").median * 1e3

    # -- targets ----------------------------------------------------------
    def targets(self):
        r = self.results
        t = common.Table("Targets (automatic check of this run, median ratios)", ["target", "measured", "met"])

        def row(label, measured, ok):
            t.add(label, measured, "yes" if ok else "**no**")

        for key, label in (("saxpy", "saxpy"), ("nbody", "n-body")):
            if f"{key}_ratio" in r:
                for th, ratio in r[f"{key}_ratio"].items():
                    row(f"{label} within {TARGETS[key]}x of C ({th} thread{'s' if th > 1 else ''})",
                        f"{ratio:.2f}x", ratio <= TARGETS[key])
        if "launch_us" in r:
            row("launch overhead <= 5 us", f"{r['launch_us']:.2f} us", r["launch_us"] <= TARGETS["launch_us"])
        if "cached_ms" in r:
            row("cached module load <= 20 ms", f"{r['cached_ms']:.1f} ms", r["cached_ms"] <= TARGETS["cached_ms"])
        if "cold_s" in r and "warp" in r["cold_s"]:
            c = r["cold_s"]
            row("cold compile no slower than warp-lang", f"simkit {c['simkit']:.2f} s vs warp {c['warp']:.2f} s "
                f"(forward-only warp {c['warp-nobwd']:.2f} s)", c["simkit"] <= c["warp"])
        self.tables.append(t)
        r["targets"] = t.rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions (about a minute)")
    p.add_argument("--threads", type=int, default=0, help="threads for simkit and C (default: all cores)")
    p.add_argument("--markdown", metavar="FILE", help="also write the results as markdown")
    p.add_argument("--json", metavar="FILE", help="also write the raw results as JSON")
    p.add_argument("--no-warp", action="store_true", help="skip warp-lang even when it is installed")
    p.add_argument("--only", default="saxpy,nbody,launch,compile,large,load",
                   help="comma-separated sections to run (saxpy,nbody,launch,compile,large,load)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (builds, caches)")
    args = p.parse_args(argv)

    b = Bench(args)
    machine = common.machine_info(b.threads)
    print(common.kv_text(machine))
    print(f"{'C flags'.ljust(15)} : {common.c_flags_text()}")
    print(flush=True)
    sections = {"saxpy": b.saxpy, "nbody": b.nbody, "launch": b.launch_overhead, "compile": b.compile_times,
                "large": b.large_module, "load": b.force_load}
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    start = time.perf_counter()
    try:
        for i, s in enumerate(only):
            print(f"[{i + 1}/{len(only)}] {s} ...", file=sys.stderr, flush=True)
            first = len(b.tables)
            sections[s]()
            for t in b.tables[first:]:
                print(t.text() + "\n", flush=True)
        b.targets()
        print(b.tables[-1].text())
    finally:
        b.close()
    elapsed = time.perf_counter() - start
    print(f"\n(total {elapsed:.0f} s{', --quick' if args.quick else ''})")

    if args.markdown:
        md = ["### Measured results", "",
              f"Generated by `python benchmarks/cpu_core.py{' --quick' if args.quick else ''}` "
              f"({time.strftime('%Y-%m-%d')}).", "",
              common.kv_markdown(machine + [("C flags", f"`{common.c_flags_text()}`")]), ""]
        for t in b.tables:
            md += [t.markdown(4), ""]
        with open(args.markdown, "w") as f:
            f.write("\n".join(md))
        print(f"markdown written to {args.markdown}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": dict(machine), "quick": args.quick, **b.results}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
