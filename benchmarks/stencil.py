"""A 2D launch: the damped Jacobi iteration of warp-lang's checkpointed fluid example, in one run.

    python benchmarks/stencil.py [--quick] [--markdown out.md]

``i, j = tid()`` over an N x N periodic grid (N = 512, the example's, and 2048; a ``constant``), each element a
weighted sum of its four neighbours (indices wrapped with ``% N`` in a @func, the example's ``cyclic_index``),
the same source under simkit and warp-lang: simkit on all cores and
on one thread, hand-written C (``benchmarks/native/stencil.c``, simkit's flags, the same threads), numpy
(``np.roll``, one thread) and warp-lang's CPU backend (one thread) when installed. Every result is checked
against numpy's first; samples of all contenders interleave. What it watches: the cost of a multi-index
``tid()`` per thread (runtime and docs/internals.md: the range loop steps the indices instead of dividing).
"""
from __future__ import annotations

import argparse
import ctypes
import os
import sys
import tempfile

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402

try:
    import warp as wp
except Exception:  # warp-lang is optional
    wp = None

SIZES = (512, 2048)
W = 2.0 / 3.0


def kernels(K, n: int):
    """The stencil's @func and @kernel in framework ``K`` (simkit or warp-lang: the same source), for N = ``n``."""
    N = K.constant(n)

    @K.func
    def cyclic(idx: int):
        r = idx % N
        if r < 0:
            r += N
        return r

    @K.kernel
    def jacobi(div: K.array2d(dtype=float), p0: K.array2d(dtype=float), p1: K.array2d(dtype=float), h2: float):
        i, j = K.tid()
        p1[i, j] = (1.0 - 2.0 / 3.0) * p0[i, j] + 0.25 * (2.0 / 3.0) * (
            -h2 * div[i, j] + p0[cyclic(i - 1), j] + p0[cyclic(i + 1), j] + p0[i, cyclic(j - 1)]
            + p0[i, cyclic(j + 1)])

    return jacobi


def numpy_jacobi(div, p0, h2):
    nb = np.roll(p0, 1, 0) + np.roll(p0, -1, 0) + np.roll(p0, 1, 1) + np.roll(p0, -1, 1)
    return np.float32(1.0 - W) * p0 + np.float32(0.25 * W) * (np.float32(-h2) * div + nb)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples")
    ap.add_argument("--markdown", metavar="FILE", help="also write the report as markdown")
    args = ap.parse_args(argv)
    threads = common.core_count()
    tmp = tempfile.mkdtemp(prefix="simkit_stencil_")
    clib = common.build_c("stencil.c", tmp)
    for n in SIZES:
        getattr(clib, f"jacobi{n}").argtypes = [ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                                ctypes.c_int]
    if wp is not None:
        wp.config.quiet = True
        wp.init()
    lines = ["# A 2D stencil launch", "", common.kv_markdown(common.machine_info(threads)), ""]
    table = common.Table("Jacobi iteration, periodic N x N float32 grid (time per launch)",
                         ["N", f"simkit ({threads} threads)", "simkit (1 thread)", f"C ({threads} threads)",
                          "C (1 thread)", "warp-lang (1 thread)", "numpy", "simkit 1 thread / C 1 thread"],
                         note="Medians of interleaved blocks.")
    rng = np.random.default_rng(0)
    for n in SIZES:
        common.progress(f"stencil {n}x{n}")
        h2 = (1.0 / n) ** 2
        div_n, p0_n = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
        want = numpy_jacobi(div_n, p0_n, h2)
        div, p0, p1 = sk.array(div_n, device="cpu"), sk.array(p0_n, device="cpu"), sk.zeros((n, n), device="cpu")
        c_out = np.zeros((n, n), np.float32)
        sk_jacobi = kernels(sk, n)
        wp_jacobi = kernels(wp, n) if wp is not None else None
        c_jacobi = getattr(clib, f"jacobi{n}")

        def simkit_on(nthreads):
            def run():
                saved, sk.config.cpu_threads = sk.config.cpu_threads, nthreads
                try:
                    sk.launch(sk_jacobi, (n, n), inputs=[div, p0, p1, h2], device="cpu")
                finally:
                    sk.config.cpu_threads = saved
            return run

        def c_on(nthreads):
            return lambda: c_jacobi(h2, div_n.ctypes.data, p0_n.ctypes.data, c_out.ctypes.data, nthreads)

        fns = {"simkit": simkit_on(None), "simkit1": simkit_on(1), "c": c_on(threads), "c1": c_on(1),
               "numpy": lambda: numpy_jacobi(div_n, p0_n, h2)}
        checks = {"simkit": lambda: p1.numpy(), "simkit1": lambda: p1.numpy(), "c": lambda: c_out,
                  "c1": lambda: c_out}
        if wp_jacobi is not None:
            wdiv, wp0 = wp.array(div_n, device="cpu"), wp.array(p0_n, device="cpu")
            wp1 = wp.zeros((n, n), dtype=float, device="cpu")
            fns["warp"] = lambda: wp.launch(wp_jacobi, (n, n), inputs=[wdiv, wp0, wp1, h2], device="cpu")
            checks["warp"] = wp1.numpy
        for key, check in checks.items():
            fns[key]()
            np.testing.assert_allclose(check(), want, rtol=2e-6, atol=1e-6, err_msg=key)
        rounds, block = (3, 5) if args.quick else (7, 10)
        t = common.bench_interleaved(fns, rounds=rounds, block=block, warmup=1)
        med = {k: v.median for k, v in t.items()}
        table.add(n, *(common.fmt_time(med[k]) if k in med else "-" for k in
                       ("simkit", "simkit1", "c", "c1", "warp", "numpy")), f"{med['simkit1'] / med['c1']:.2f}x")
    lines += [table.markdown(2)]
    common.write_report(lines, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
