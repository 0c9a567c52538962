"""Array algorithms (``sk.utils``, Warp's ``wp.utils``) vs numpy and warp-lang, in one run.

    python benchmarks/array_algorithms.py [--quick] [--no-warp] [--n N] [--only sort,scan,sum] [--markdown out.md]

For N elements (default 1M): a stable sort of (key, value) pairs (``radix_sort_pairs`` against numpy's
stable argsort plus the gather of the values, and warp-lang's CPU ``radix_sort_pairs``), an inclusive
scan (``array_scan`` against ``np.cumsum``) and a sum (``array_sum`` against ``np.sum``). The sorts
re-upload the unsorted keys before each call, in every contender alike. Every result is checked
against numpy before it is timed; samples of all contenders interleave, in blocks of 3 calls (sorts) or
20 (scans and sums).
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


def sort_contenders(n: int, warp: bool) -> dict:
    rng = np.random.default_rng(0)
    keys_np = rng.integers(-2 ** 31, 2 ** 31 - 1, size=n).astype(np.int32)
    doubled = np.concatenate([keys_np, keys_np])  # (the sorts use [n:2n] as scratch)
    ids = np.arange(2 * n, dtype=np.int32)
    order = np.argsort(keys_np, kind="stable")
    keys, vals = sk.zeros(2 * n, dtype=sk.int32), sk.zeros(2 * n, dtype=sk.int32)

    def simkit_sort():
        keys.assign(doubled)
        vals.assign(ids)
        sk.utils.radix_sort_pairs(keys, vals, n)
        return vals

    fns = {"numpy (argsort stable + gather)": lambda: ids[:n][np.argsort(keys_np, kind="stable")],
           "simkit": simkit_sort}
    if warp and wp is not None:
        wkeys, wvals = wp.zeros(2 * n, dtype=wp.int32, device="cpu"), wp.zeros(2 * n, dtype=wp.int32, device="cpu")

        def warp_sort():
            wkeys.assign(doubled)
            wvals.assign(ids)
            wp.utils.radix_sort_pairs(wkeys, wvals, n)
            return wvals

        fns["warp-lang"] = warp_sort
    for name, fn in fns.items():  # check each result (this also compiles)
        got = fn()
        got = got if isinstance(got, np.ndarray) else got.numpy()[:n]
        np.testing.assert_array_equal(got, order, err_msg=name)
    return fns


def _then(_, result):
    return result


def scan_sum_contenders(n: int, warp: bool) -> tuple[dict, dict]:
    rng = np.random.default_rng(1)
    x_np = rng.integers(-100, 100, size=n).astype(np.float64)
    x, out = sk.array(x_np, dtype=sk.float64), sk.zeros(n, dtype=sk.float64)
    total = sk.zeros(1, dtype=sk.float64)
    scans = {"numpy (cumsum)": lambda: np.cumsum(x_np), "simkit": lambda: _then(sk.utils.array_scan(x, out), out)}
    sums = {"numpy (sum)": lambda: x_np.sum(), "simkit": lambda: _then(sk.utils.array_sum(x, out=total), total)}
    if warp and wp is not None:
        wx, wout = wp.array(x_np, dtype=wp.float64, device="cpu"), wp.zeros(n, dtype=wp.float64, device="cpu")
        wtotal = wp.zeros(1, dtype=wp.float64, device="cpu")
        scans["warp-lang"] = lambda: _then(wp.utils.array_scan(wx, wout), wout)
        sums["warp-lang"] = lambda: _then(wp.utils.array_sum(wx, out=wtotal), wtotal)
    for name, fn in scans.items():
        got = fn()
        np.testing.assert_array_equal(got if isinstance(got, np.ndarray) else got.numpy(), np.cumsum(x_np),
                                      err_msg=name)
    for name, fn in sums.items():
        got = fn()
        assert float(np.asarray(got if np.ndim(got) == 0 else got.numpy()).ravel()[0]) == x_np.sum(), name
    return scans, sums


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples")
    ap.add_argument("--no-warp", action="store_true", help="leave warp-lang out")
    ap.add_argument("--n", type=int, default=1 << 20, help="elements (default 1M)")
    ap.add_argument("--only", default="sort,scan,sum", help="comma-separated subset of sort, scan, sum (default all)")
    ap.add_argument("--markdown", help="also write the tables to this file")
    args = ap.parse_args(argv)
    rounds = 3 if args.quick else 9
    warp = not args.no_warp
    lines = ["| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in common.machine_info(sk.config.cpu_threads or os.cpu_count())]
    only = set(args.only.split(","))
    if not only or only - {"sort", "scan", "sum"}:
        ap.error(f"--only takes sort, scan and/or sum, got {args.only!r}")
    scans, sums = scan_sum_contenders(args.n, warp) if only & {"scan", "sum"} else ({}, {})
    for key, title, make in (
            ("sort", f"radix_sort_pairs, {args.n:,} int32 keys and int32 values",
             lambda: sort_contenders(args.n, warp)),
            ("scan", f"array_scan (inclusive), {args.n:,} float64", lambda: scans),
            ("sum", f"array_sum, {args.n:,} float64", lambda: sums)):
        if key not in only:
            continue
        common.progress(title)
        fns = make()
        # blocks of 20 calls for the scan and the sum (a few ms at most): the steady state of a call in a loop,
        # not the first call after another contender evicted its data from the caches
        block = 3 if key == "sort" else 20
        lines += common.ratio_table(title, common.bench_interleaved(fns, rounds=rounds, block=block))
    common.write_report(lines, args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
