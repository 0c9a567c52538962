"""Deterministic float scatter-adds on a GPU: atomics in any order (the default), deterministic mode recorded and
applied in launch order (utils/deterministic_gpu.py), deterministic mode on one GPU thread (what any kernel that
cannot be recorded gets), and warp-lang's deterministic mode (record and sort) where installed, in one run.
Run by tools/gpu_check.sh.

    python benchmarks/gpu_deterministic.py [--quick] [--markdown out.md]

``out[idx[i]] += d[i]`` over ``N`` float32 values into 4 bins (contended) and into 65536 (spread). The recorded
result is checked bit for bit against numpy's ``add.at`` (the sequential loop), and so is the one-thread one
(timed on ``N_SERIAL`` values: it is a thousand times slower). Each row: milliseconds per launch (median), and
the time of atomics in any order over it. Without a GPU it prints a notice and exits 0.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from gpu import median_synced, run_report  # noqa: E402

import simkit as sk  # noqa: E402
from simkit.kernels.deterministic import DeterminismWarning  # noqa: E402

N = 1 << 22
N_SERIAL = 1 << 14
BINS = (4, 65536)
_launch = importlib.import_module("simkit.runtime.launch")


@sk.kernel
def scatter(d: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, idx[i], d[i])


def _time(fn, device, rounds: int) -> float:
    fn()  # (compiles, loads, allocates)
    return median_synced(fn, device, rounds)


def _inputs(n: int, bins: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    d = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    return d, rng.integers(0, bins, n).astype(np.int32)


@contextlib.contextmanager
def _mode(mode, recorded: bool = True):
    """``config.deterministic = mode`` inside; ``recorded=False``: as a kernel that cannot be recorded (one GPU
    thread, its warning silenced)."""
    old, recorder = sk.config.deterministic, _launch.recorded_launch
    sk.config.deterministic = mode
    if not recorded:
        _launch.recorded_launch = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeterminismWarning)
            yield
    finally:
        sk.config.deterministic, _launch.recorded_launch = old, recorder


def simkit_rows(device, n: int, bins: int, rounds: int) -> dict:
    d, idx = _inputs(n, bins)
    out = sk.zeros(bins, device=device)

    def scatter_rows(count: int, mode, recorded: bool = True, rounds: int = rounds) -> float:
        """Seconds per launch over the first ``count`` values, checked against the sequential sum."""
        dd, di = sk.array(d[:count], device=device), sk.array(idx[:count], device=device)

        def go():
            out.zero_()
            with _mode(mode, recorded):
                sk.launch(scatter, count, inputs=[dd, di, out], device=device)

        t = _time(go, device, rounds)
        if mode != sk.DeterministicMode.NOT_GUARANTEED:
            ref = np.zeros(bins, np.float32)
            np.add.at(ref, idx[:count], d[:count])
            if not np.array_equal(out.numpy(), ref):
                raise AssertionError(f"the deterministic scatter ({'recorded' if recorded else 'one GPU thread'}) "
                                     "differs from the sequential sum")
        return t

    det = sk.DeterministicMode.RUN_TO_RUN
    serial = scatter_rows(N_SERIAL, det, recorded=False, rounds=max(1, rounds // 3))
    return {"atomics in any order (default)": scatter_rows(n, sk.DeterministicMode.NOT_GUARANTEED),
            "deterministic, recorded (whole GPU)": scatter_rows(n, det),
            f"deterministic, one GPU thread (per {n} values, timed on {N_SERIAL})": serial * n / N_SERIAL}


def warp_row(n: int, bins: int, rounds: int) -> float | None:
    try:
        import warp as wp
    except ImportError:
        return None
    wp.config.quiet = True
    wp.init()
    if not wp.is_cuda_available() or not hasattr(wp, "DeterministicMode"):
        return None

    @wp.kernel(module_options={"deterministic": wp.DeterministicMode.RUN_TO_RUN}, module="unique")
    def wscatter(d: wp.array(dtype=float), idx: wp.array(dtype=int), out: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(out, idx[i], d[i])

    d, idx = _inputs(n, bins)
    dd, di = wp.array(d, device="cuda:0"), wp.array(idx, device="cuda:0")
    out = wp.zeros(bins, dtype=float, device="cuda:0")

    def go():
        out.zero_()
        wp.launch(wscatter, n, inputs=[dd, di, out], device="cuda:0")

    go()
    samples = []
    for _ in range(rounds):
        wp.synchronize_device("cuda:0")
        t0 = time.perf_counter()
        go()
        wp.synchronize_device("cuda:0")
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def report(device, quick: bool) -> list:
    rounds = 3 if quick else 9
    lines = []
    for bins in BINS:
        common.progress(f"simkit on {device.name}: {N} values into {bins} bins")
        rows = simkit_rows(device, N, bins, rounds)
        w = warp_row(N, bins, rounds)
        if w is not None:
            rows["warp-lang deterministic (RUN_TO_RUN)"] = w
        base = rows["atomics in any order (default)"]
        lines += ["", f"{N} float32 values into {bins} bins", "", "| launch | ms | vs atomics in any order |",
                  "|---|---|---|"]
        lines += [f"| {name} | {sec * 1e3:.3f} | {sec / base:.1f}x |" for name, sec in rows.items()]
    return lines


def main(argv=None):
    return run_report(argv, __doc__, "gpu_deterministic.py", report)


if __name__ == "__main__":
    sys.exit(main())
