"""Contended atomics on the CPU: a float scatter-add with atomics on every core, as simkit chooses by default
(``config.cpu_atomic_tuning``: one thread or all, measured per kernel), and ordered (``config.deterministic``: one
core, launch-index order), against numpy's sequential ``add.at`` and warp-lang, in one run.

    python benchmarks/deterministic.py [--quick] [--no-warp] [--markdown out.md]

``out[idx[i]] += d[i]`` over 1M float32 values, into 4 bins (every thread adds to the same few elements:
the atomics contend) and into 65536 bins (they rarely meet). The ordered result is checked bit for bit
against ``numpy.add.at`` (a sequential loop in index order), the others to rounding. warp-lang's CPU
backend runs every launch on one thread (its default ``NOT_GUARANTEED`` mode). Samples interleave.
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
from simkit.runtime import cpu_tuning  # noqa: E402

try:
    import warp as wp
except Exception:  # warp-lang is optional
    wp = None

N = 1 << 20
BINS = (4, 65536)


@sk.kernel
def scatter(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, idx[i], d[i])


if wp is not None:
    @wp.kernel
    def warp_scatter(d: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(out, idx[i], d[i])


def _simkit(d, idx, out, mode, tuning: bool = True):
    def run():
        sk.config.deterministic, sk.config.cpu_atomic_tuning = mode, tuning
        try:
            out.zero_()
            sk.launch(scatter, len(d), inputs=[d, idx, out])
        finally:
            sk.config.deterministic, sk.config.cpu_atomic_tuning = sk.DeterministicMode.NOT_GUARANTEED, True
        return out.numpy()
    return run


def contenders(n: int, bins: int, warp: bool) -> dict:
    rng = np.random.default_rng(0)
    dn = rng.standard_normal(n).astype(np.float32)
    ixn = rng.integers(0, bins, n).astype(np.int32)
    ref = np.zeros(bins, np.float32)

    def numpy_add_at():
        ref[:] = 0.0
        np.add.at(ref, ixn, dn)
        return ref

    d, idx, out = sk.array(dn), sk.array(ixn), sk.zeros(bins, dtype=float)
    fns = {"numpy add.at (sequential)": numpy_add_at,
           "simkit, atomics on every core (cpu_atomic_tuning=False)":
               _simkit(d, idx, out, sk.DeterministicMode.NOT_GUARANTEED, tuning=False),
           "simkit, default (one thread or all, measured)": _simkit(d, idx, out, sk.DeterministicMode.NOT_GUARANTEED),
           "simkit, deterministic (ordered)": _simkit(d, idx, out, sk.DeterministicMode.RUN_TO_RUN)}
    if warp and wp is not None:
        wd, wi = wp.array(dn, device="cpu"), wp.array(ixn, device="cpu")
        wout = wp.zeros(bins, dtype=wp.float32, device="cpu")

        def warp_lang():
            wout.zero_()
            wp.launch(warp_scatter, n, inputs=[wd, wi, wout], device="cpu")
            return wout.numpy()
        fns["warp-lang (CPU, one thread)"] = warp_lang
    want = numpy_add_at().copy()
    for name, fn in fns.items():  # check each result (this also compiles, and makes simkit's measured choice)
        for _ in range(2 * cpu_tuning.ROUNDS if "measured" in name else 1):
            got = fn()
        if "ordered" in name:
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=name)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-2, err_msg=name)
    return fns


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples")
    ap.add_argument("--no-warp", action="store_true", help="leave warp-lang out")
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args(argv)
    rounds = 3 if args.quick else 10
    lines = ["| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in common.machine_info(sk.config.cpu_threads or os.cpu_count())]
    for bins in BINS:
        title = f"out[idx[i]] += d[i], {N:,} float32 into {bins:,} bins"
        common.progress(title)
        lines += common.ratio_table(title, common.bench_interleaved(contenders(N, bins, not args.no_warp),
                                                                    rounds=rounds, block=3))
    common.write_report(lines, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
