"""Spatial data structure benchmark: simkit vs warp-lang's CPU backend, side by side in one run.

    python benchmarks/spatial.py [--quick] [--threads N] [--only hash_grid,marching_cubes]
                                 [--markdown out.md] [--json out.json]

Sections (each a function registered with ``@section``; add a structure by adding one):

1. hash_grid: 64k random points (about 32 neighbours each), a 128^3 grid with the cell width
   equal to the query radius. ``build``, and a kernel counting every point's neighbours within
   the radius (``benchmarks/spatial_kernels.py``: one source, compiled by both libraries).
2. marching_cubes: ``surface()`` of 128^3 fields: a sphere SDF and a gyroid (many triangles).

simkit runs with all cores and with one; warp-lang's CPU backend runs each kernel on one
thread. Contenders are timed in alternating blocks (``common.bench_interleaved``) so that
background load hits them alike, and every result is checked against the other library's
before it is timed. Target: warp time / simkit time >= 3 for every operation. Ratios are given
for median times and for the fastest samples (on a loaded machine, multi-threaded medians
suffer most: a parallel region waits for its slowest thread).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import simkit as sk  # noqa: E402

try:
    import warp as wp
except Exception:  # warp-lang is optional
    wp = None

TARGET = 3.0  # warp-lang time / simkit time, simkit on all cores
HERE = os.path.dirname(os.path.abspath(__file__))
SECTIONS: list = []  # (name, function(Context) -> list of common.Table)


def section(name: str):
    """Register a benchmark section: ``fn(ctx)`` returns tables and adds ``ctx.results`` rows."""

    def deco(fn):
        SECTIONS.append((name, fn))
        return fn

    return deco


def load(backend, name: str):
    """Import benchmarks/spatial_kernels.py with ``wp`` bound to ``backend`` (simkit or warp)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "spatial_kernels.py"))
    mod = importlib.util.module_from_spec(spec)
    mod.wp = backend
    spec.loader.exec_module(mod)
    return mod


class Context:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.threads = args.threads or common.core_count()
        sk.config.cpu_threads = self.threads
        self.sk_k = load(sk, "spatial_kernels_simkit")
        self.wp_k = None
        self.tmp = tempfile.mkdtemp(prefix="sk_spatial_")
        if wp is not None and not args.no_warp:
            try:
                wp.config.quiet = True
                wp.config.kernel_cache_dir = os.path.join(self.tmp, "warp_cache")
                wp.init()
                self.wp_k = load(wp, "spatial_kernels_warp")
            except Exception as e:  # pragma: no cover
                common.progress(f"warp-lang unavailable: {e}")
        self.results: list = []  # dicts for --json

    @property
    def warp(self):
        return wp if self.wp_k is not None else None

    def rounds(self, full: int) -> int:
        return max(2, full // 3) if self.quick else full

    def simkit_fn(self, threads: int, fn):
        def run():
            sk.config.cpu_threads = threads
            fn()

        return run

    def compare(self, title: str, sk_fn, wp_fn, rounds: int, block: int = 1, note: str = "") -> common.Table:
        """Time simkit (all cores, one core) against warp-lang; returns the table, records the ratio."""
        fns = {f"simkit ({self.threads} threads)": self.simkit_fn(self.threads, sk_fn)}
        if self.threads > 1:
            fns["simkit (1 thread)"] = self.simkit_fn(1, sk_fn)
        if wp_fn is not None:
            fns["warp-lang (1 thread)"] = wp_fn
        times = common.bench_interleaved(fns, rounds=rounds, block=block)
        sk.config.cpu_threads = self.threads
        table = common.Table(title, ["implementation", "time (median)", "min", "warp / this (median)",
                                     "warp / this (min)"], note)
        wt = times.get("warp-lang (1 thread)")
        for name, t in times.items():
            r_med = f"{wt.median / t.median:.2f}x" if wt is not None else "n/a"
            r_min = f"{wt.min / t.min:.2f}x" if wt is not None else "n/a"
            table.add(name, common.fmt_time(t.median), common.fmt_time(t.min), r_med, r_min)
        main = times[f"simkit ({self.threads} threads)"]
        one = times.get("simkit (1 thread)", main)
        row = {"section": title, "simkit_s": main.median, "simkit_min_s": main.min, "simkit_1thread_s": one.median,
               "warp_s": wt.median if wt else None, "warp_min_s": wt.min if wt else None}
        if wt is not None:
            row["ratio"] = wt.median / main.median
            row["ratio_min"] = wt.min / main.min
            row["ratio_1thread"] = wt.median / one.median
            row["target_met"] = row["ratio"] >= TARGET
        self.results.append(row)
        return table


# ---------------------------------------------------------------------------
# Sections


@section("hash_grid")
def hash_grid(ctx: Context) -> list:
    n = 16384 if ctx.quick else 65536
    dims = 128
    radius = float((32.0 / (n * 4.0 / 3.0 * np.pi)) ** (1.0 / 3.0))  # ~32 neighbours in the unit cube
    pts = np.random.default_rng(0).random((n, 3)).astype(np.float32)
    common.progress(f"hash grid: {n} points, {dims}^3 cells, radius {radius:.4f}")
    sp = sk.array(pts, dtype=sk.vec3, device="cpu")
    sc = sk.zeros(n, dtype=int, device="cpu")
    sgrid = sk.HashGrid(dims, dims, dims, device="cpu")
    sgrid.build(sp, radius)
    sk.launch(ctx.sk_k.count_neighbors, dim=n, inputs=[sgrid.id, sp, radius, sc], device="cpu")
    w = ctx.warp
    wbuild = wquery = None
    if w is not None:
        wpts = w.array(pts, dtype=w.vec3, device="cpu")
        wc = w.zeros(n, dtype=int, device="cpu")
        wgrid = w.HashGrid(dims, dims, dims, device="cpu")
        wgrid.build(wpts, radius)
        w.launch(ctx.wp_k.count_neighbors, dim=n, inputs=[wgrid.id, wpts, radius, wc], device="cpu")
        diff = int((sc.numpy() != wc.numpy()).sum())
        if diff > n * 1e-4:  # float rounding at exactly the radius may differ on a handful of pairs
            raise AssertionError(f"neighbour counts differ from warp-lang's for {diff} of {n} points")

        def _wbuild():
            wgrid.build(wpts, radius)

        def _wquery():
            w.launch(ctx.wp_k.count_neighbors, dim=n, inputs=[wgrid.id, wpts, radius, wc], device="cpu")

        wbuild, wquery = _wbuild, _wquery

    def sbuild():
        sgrid.build(sp, radius)

    def squery():
        sk.launch(ctx.sk_k.count_neighbors, dim=n, inputs=[sgrid.id, sp, radius, sc], device="cpu")

    mean = float(sc.numpy().mean())
    return [ctx.compare(f"HashGrid.build, {n} points, {dims}^3 cells", sbuild, wbuild, ctx.rounds(30), block=3),
            ctx.compare(f"hash grid neighbour count, {n} points, {mean:.1f} neighbours each", squery, wquery,
                        ctx.rounds(12))]


def _fields(n: int) -> dict:
    x = np.linspace(-1.2, 1.2, n, dtype=np.float32)
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    g = 3.0 * np.pi * (X + 1.2) / 2.4 * 2.0
    h = 3.0 * np.pi * (Y + 1.2) / 2.4 * 2.0
    k = 3.0 * np.pi * (Z + 1.2) / 2.4 * 2.0
    return {"sphere SDF": np.sqrt(X * X + Y * Y + Z * Z) - 1.0,
            "gyroid": np.sin(g) * np.cos(h) + np.sin(h) * np.cos(k) + np.sin(k) * np.cos(g)}


@section("marching_cubes")
def marching_cubes(ctx: Context) -> list:
    n = 64 if ctx.quick else 128
    tables = []
    w = ctx.warp
    for name, f in _fields(n).items():
        f = np.ascontiguousarray(f, dtype=np.float32)
        common.progress(f"marching cubes: {name}, {n}^3")
        sfield = sk.array(f, dtype=float, device="cpu")
        smc = sk.MarchingCubes(n, n, n, device="cpu")
        sv, si = smc.surface(sfield, 0.0)
        wrun = None
        if w is not None:
            wfield = w.array(f, dtype=float, device="cpu")
            wmc = w.MarchingCubes(n, n, n)
            wmc.surface(wfield, 0.0)
            if (len(wmc.verts), len(wmc.indices)) != (len(sv), len(si)):
                raise AssertionError(f"marching cubes output differs from warp-lang's: {len(sv)} vs "
                                     f"{len(wmc.verts)} vertices, {len(si)} vs {len(wmc.indices)} indices")

            def _wrun():
                wmc.surface(wfield, 0.0)

            wrun = _wrun

        def srun():
            smc.surface(sfield, 0.0)

        tables.append(ctx.compare(f"MarchingCubes.surface, {name}, {n}^3, {len(si) // 3} triangles", srun, wrun,
                                  ctx.rounds(9)))
    return tables


# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller problems, fewer repeats")
    ap.add_argument("--threads", type=int, default=0, help="simkit CPU threads (default: all cores)")
    ap.add_argument("--only", default="", help="comma-separated sections: " + ", ".join(n for n, _ in SECTIONS))
    ap.add_argument("--no-warp", action="store_true", help="skip warp-lang")
    ap.add_argument("--markdown", help="also write the tables as markdown here")
    ap.add_argument("--json", help="also write the ratios as JSON here")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    unknown = only - {n for n, _ in SECTIONS}
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))}")
    ctx = Context(args)
    info = common.machine_info(ctx.threads)
    print(common.kv_text(info) + "\n")
    tables = []
    for name, fn in SECTIONS:
        if only and name not in only:
            continue
        for t in fn(ctx):
            tables.append(t)
            print(t.text() + "\n", flush=True)
    met = [r for r in ctx.results if "ratio" in r]
    if met:
        for key, what in (("ratio", "median times"), ("ratio_min", "fastest samples")):
            worst = min(met, key=lambda r: r[key])
            ok = all(r[key] >= TARGET for r in met)
            print(f"target warp/simkit >= {TARGET:.0f}x on every operation, by {what}: {'met' if ok else 'NOT met'} "
                  f"(lowest {worst[key]:.2f}x: {worst['section']})")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("### Machine\n\n" + common.kv_markdown(info) + "\n\n")
            f.write("\n\n".join(t.markdown() for t in tables) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": dict(info), "results": ctx.results, "target": TARGET}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
