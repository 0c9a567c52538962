"""Elementwise array functions: ``sk.map`` and array operators vs numpy and warp-lang, in one run.

    python benchmarks/map_ops.py [--quick] [--no-warp] [--markdown out.md]

1. Large arrays (4M float32): ``z = 2 * x + y`` as one mapped lambda (one kernel, one new array), as
   array operators (two kernels, two new arrays) and as numpy expressions (one thread); time per call
   and ratio to numpy. warp-lang's ``wp.map`` and operators run on its CPU backend (one thread per
   kernel) when it is installed.
2. Call overhead: the same lambda mapped over 16 elements (Python-side work: lookup of the cached
   kernel, broadcasting, output allocation, launch), per call.

Every result is checked against numpy before it is timed; samples of all contenders interleave.
"""
from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402

try:
    import warp as wp
except Exception:  # warp-lang is optional
    wp = None

N_LARGE = 4 * 1024 * 1024
N_SMALL = 16


def contenders(n: int, warp: bool) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(0)
    xn = rng.random(n, dtype=np.float32)
    yn = rng.random(n, dtype=np.float32)
    want = 2.0 * xn + yn
    x, y = sk.array(xn, dtype=sk.float32), sk.array(yn, dtype=sk.float32)
    fns = {
        "numpy": lambda: 2.0 * xn + yn,
        "simkit map": lambda: sk.map(lambda a, b: 2.0 * a + b, x, y),
        "simkit operators": lambda: 2.0 * x + y,
    }
    if warp and wp is not None:
        wx, wy = wp.array(xn, dtype=wp.float32, device="cpu"), wp.array(yn, dtype=wp.float32, device="cpu")
        fns["warp-lang map"] = lambda: wp.map(lambda a, b: 2.0 * a + b, wx, wy)
        fns["warp-lang operators"] = lambda: wp.float32(2.0) * wx + wy
    for name, fn in fns.items():  # check each result (this also compiles)
        got = fn()
        got = got if isinstance(got, np.ndarray) else got.numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=name)
    return fns, want


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples")
    ap.add_argument("--no-warp", action="store_true", help="leave warp-lang out")
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args(argv)
    rounds = 4 if args.quick else 12
    lines = ["| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in common.machine_info(sk.config.cpu_threads or os.cpu_count())]
    for title, n, block in ((f"z = 2 * x + y, {N_LARGE:,} float32", N_LARGE, 3),
                            (f"call overhead, {N_SMALL} elements", N_SMALL, 200)):
        common.progress(title)
        fns, _ = contenders(n, not args.no_warp)
        lines += common.ratio_table(title, common.bench_interleaved(fns, rounds=rounds, block=block))
    common.write_report(lines, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
