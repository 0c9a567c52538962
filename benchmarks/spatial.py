"""Spatial data structure benchmark: simkit vs warp-lang's CPU backend, side by side in one run.

    python benchmarks/spatial.py [--quick] [--threads N] [--only hash_grid,marching_cubes,mesh,bvh,surface_nets,...]
                                 [--markdown out.md] [--json out.json]

Sections (each a function registered with ``@section``; add a structure by adding one):

1. hash_grid: 64k random points (about 32 neighbours each), a 128^3 grid with the cell width
   equal to the query radius. ``build``, and a kernel counting every point's neighbours within
   the radius (``benchmarks/spatial_kernels.py``: one source, compiled by both libraries).
2. marching_cubes: ``surface()`` of 128^3 fields: a sphere SDF and a gyroid (many triangles).
3. mesh: an 81920-triangle icosphere: ``Mesh`` build, ``refit``, 64k closest-point queries (no sign and
   with the default ray-vote sign) uniform in [-1.5, 1.5]^3, 64k camera rays (all hit) and 64k random
   rays (about a quarter hit).
4. bvh: ``Bvh`` over the same 81920 face boxes: build, 64k box queries near the surface, 64k ray
   queries (counting every box each ray meets).
5. surface_nets: ``IsoSurfaceNets.surface()`` of the marching-cubes fields.
6. sparse_marching_cubes: ``sparse_marching_cubes`` of a sphere SDF (a kernel over the points) on 129^3 and
   257^3 grids.
7. swept_volume: ``swept_volume_mesh`` of an icosphere through 16 poses (winding-number sign).

simkit runs with all cores and with one; warp-lang's CPU backend runs each kernel on one
thread. Contenders are timed in alternating blocks (``common.bench_interleaved``) so that
background load hits them alike, and every result is checked against the other library's
before it is timed. Target (issue 5): warp time / simkit time >= 3 for every query (neighbour
counts, closest points, rays, box queries, marching cubes); builds, refits and the extractors of sections
5-7 (Warp 1.19's ``warp.geometry``) are reported beside them with no target. Ratios are given for median
times and for the fastest samples (on a loaded machine, multi-threaded medians suffer most: a parallel
region waits for its slowest thread).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's idle BLAS threads spin on the timed cores
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

    def compare(self, title: str, sk_fn, wp_fn, rounds: int, block: int = 1, note: str = "",
                build: bool = False, no_target: bool = False) -> common.Table:
        """Time simkit (all cores, one core) against warp-lang; returns the table, records the ratio.
        ``build``: a build or refit, ``no_target``: a whole extraction (Warp 1.19's geometry), reported beside the
        queries but outside the 3x target."""
        build = build or no_target
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
               "warp_s": wt.median if wt else None, "warp_min_s": wt.min if wt else None, "build": build}
        if wt is not None:
            row["ratio"] = wt.median / main.median
            row["ratio_min"] = wt.min / main.min
            row["ratio_1thread"] = wt.median / one.median
            if not build:
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
    return [ctx.compare(f"HashGrid.build, {n} points, {dims}^3 cells", sbuild, wbuild, ctx.rounds(30), block=3,
                        build=True),
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


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _icosphere(ctx):
    import trimesh

    sub = 5 if ctx.quick else 6
    tm = trimesh.creation.icosphere(subdivisions=sub)
    return np.asarray(tm.vertices, np.float32), np.asarray(tm.faces, np.int32)


def _queries(n: int, seed: int) -> dict:
    """Closest-point queries uniform in the cube [-1.5, 1.5]^3 around the unit sphere; camera rays
    (from a sphere of radius 3 to a random point of the unit ball: every ray hits); random rays
    (random origins in the cube and directions: about a quarter hit)."""
    rng = np.random.default_rng(seed)
    origins = _unit(rng.normal(size=(n, 3))) * 3.0
    targets = _unit(rng.normal(size=(n, 3))) * rng.uniform(0.0, 1.0, (n, 1)) ** (1.0 / 3.0)
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
    return {"points": f32(rng.uniform(-1.5, 1.5, (n, 3))), "cam_o": f32(origins),
            "cam_d": f32(_unit(targets - origins)),
            "rnd_o": f32(rng.uniform(-1.5, 1.5, (n, 3))), "rnd_d": f32(_unit(rng.normal(size=(n, 3))))}


@section("mesh")
def mesh(ctx: Context) -> list:
    V, F = _icosphere(ctx)
    n = 16384 if ctx.quick else 65536
    q = _queries(n, seed=1)
    common.progress(f"mesh: icosphere of {len(F)} triangles, {n} queries")
    K, W = ctx.sk_k, ctx.warp
    sa = {k: sk.array(v, dtype=sk.vec3, device="cpu") for k, v in q.items()}
    sp, si = sk.array(V, dtype=sk.vec3, device="cpu"), sk.array(F.ravel(), dtype=sk.int32, device="cpu")
    smesh = sk.Mesh(sp, si)
    s_out, s_sign, s_t = (sk.zeros(n, dtype=sk.vec3, device="cpu"), sk.zeros(n, dtype=float, device="cpu"),
                          sk.zeros(n, dtype=float, device="cpu"))
    sfn = {
        "build": lambda: sk.Mesh(sp, si),
        "refit": smesh.refit,
        "closest": lambda: sk.launch(K.mesh_closest, n, inputs=[smesh.id, sa["points"], s_out], device="cpu"),
        "signed": lambda: sk.launch(K.mesh_closest_signed, n, inputs=[smesh.id, sa["points"], s_out, s_sign],
                                    device="cpu"),
        "camera": lambda: sk.launch(K.mesh_raycast, n, inputs=[smesh.id, sa["cam_o"], sa["cam_d"], s_t], device="cpu"),
        "random": lambda: sk.launch(K.mesh_raycast, n, inputs=[smesh.id, sa["rnd_o"], sa["rnd_d"], s_t], device="cpu"),
    }
    wfn = dict.fromkeys(sfn)
    if W is not None:
        WK = ctx.wp_k
        wa = {k: W.array(v, dtype=W.vec3, device="cpu") for k, v in q.items()}
        wpts, widx = W.array(V, dtype=W.vec3, device="cpu"), W.array(F.ravel(), dtype=W.int32, device="cpu")
        wmesh = W.Mesh(wpts, widx)
        w_out, w_sign, w_t = (W.zeros(n, dtype=W.vec3, device="cpu"), W.zeros(n, dtype=float, device="cpu"),
                              W.zeros(n, dtype=float, device="cpu"))
        wfn = {
            "build": lambda: W.Mesh(wpts, widx),
            "refit": wmesh.refit,
            "closest": lambda: W.launch(WK.mesh_closest, n, inputs=[wmesh.id, wa["points"], w_out], device="cpu"),
            "signed": lambda: W.launch(WK.mesh_closest_signed, n, inputs=[wmesh.id, wa["points"], w_out, w_sign],
                                       device="cpu"),
            "camera": lambda: W.launch(WK.mesh_raycast, n, inputs=[wmesh.id, wa["cam_o"], wa["cam_d"], w_t],
                                       device="cpu"),
            "random": lambda: W.launch(WK.mesh_raycast, n, inputs=[wmesh.id, wa["rnd_o"], wa["rnd_d"], w_t],
                                       device="cpu"),
        }
        # same answers before timing: distances, signs, hit parameters
        for key in ("closest", "signed"):
            sfn[key]()
            wfn[key]()
            ds = np.linalg.norm(s_out.numpy() - q["points"], axis=1)
            dw = np.linalg.norm(w_out.numpy() - q["points"], axis=1)
            if np.abs(ds - dw).max() > 1e-5:
                raise AssertionError(f"closest-point distances differ from warp-lang's by {np.abs(ds - dw).max():.3g}")
        if (s_sign.numpy() != w_sign.numpy()).mean() > 1e-3:
            raise AssertionError("inside/outside signs differ from warp-lang's")
        for key in ("camera", "random"):
            sfn[key]()
            wfn[key]()
            ts, tw = s_t.numpy(), w_t.numpy()
            both = (ts >= 0) & (tw >= 0)
            if ((ts >= 0) != (tw >= 0)).mean() > 1e-3 or np.abs(ts[both] - tw[both]).max() > 1e-4:
                raise AssertionError(f"{key} ray hits differ from warp-lang's")
    else:
        for f in sfn.values():
            f()
    tri = f"{len(F)}-triangle icosphere"
    r = ctx.rounds
    return [ctx.compare(f"Mesh build (binned SAH BVH), {tri}", sfn["build"], wfn["build"], r(9), block=2, build=True),
            ctx.compare(f"Mesh.refit, {tri}", sfn["refit"], wfn["refit"], r(30), block=5, build=True),
            ctx.compare(f"mesh_query_point_no_sign, {n} points in [-1.5, 1.5]^3", sfn["closest"], wfn["closest"], r(6)),
            ctx.compare(f"mesh_query_point (ray-vote sign), {n} points", sfn["signed"], wfn["signed"], r(6)),
            ctx.compare(f"mesh_query_ray, {n} camera rays (all hit)", sfn["camera"], wfn["camera"], r(12), block=2),
            ctx.compare(f"mesh_query_ray, {n} random rays (~27% hit)", sfn["random"], wfn["random"], r(12), block=2)]


@section("bvh")
def bvh(ctx: Context) -> list:
    V, F = _icosphere(ctx)
    tri = V[F]
    lo, hi = np.ascontiguousarray(tri.min(1)), np.ascontiguousarray(tri.max(1))
    n = 16384 if ctx.quick else 65536
    rng = np.random.default_rng(2)
    c = _unit(rng.normal(size=(n, 3))) * rng.uniform(0.9, 1.1, (n, 1))
    half = 2.0 * float(np.mean(hi - lo))  # query boxes of a few face sizes near the surface
    qlo, qhi = (c - half).astype(np.float32), (c + half).astype(np.float32)
    q = _queries(n, seed=3)
    common.progress(f"bvh: {len(lo)} face boxes, {n} box and {n} ray queries")
    K, W = ctx.sk_k, ctx.warp
    s = {k: sk.array(v, dtype=sk.vec3, device="cpu") for k, v in
         dict(lo=lo, hi=hi, qlo=qlo, qhi=qhi, o=q["rnd_o"], d=q["rnd_d"]).items()}
    sbvh = sk.Bvh(s["lo"], s["hi"])
    sc = sk.zeros(n, dtype=int, device="cpu")
    sfn = {"build": lambda: sk.Bvh(s["lo"], s["hi"]),
           "aabb": lambda: sk.launch(K.bvh_count_aabb, n, inputs=[sbvh.id, s["qlo"], s["qhi"], sc], device="cpu"),
           "ray": lambda: sk.launch(K.bvh_count_ray, n, inputs=[sbvh.id, s["o"], s["d"], sc], device="cpu")}
    wfn = dict.fromkeys(sfn)
    if W is not None:
        WK = ctx.wp_k
        w = {k: W.array(v.numpy(), dtype=W.vec3, device="cpu") for k, v in s.items()}
        wbvh = W.Bvh(w["lo"], w["hi"])
        wc = W.zeros(n, dtype=int, device="cpu")
        wfn = {"build": lambda: W.Bvh(w["lo"], w["hi"]),
               "aabb": lambda: W.launch(WK.bvh_count_aabb, n, inputs=[wbvh.id, w["qlo"], w["qhi"], wc], device="cpu"),
               "ray": lambda: W.launch(WK.bvh_count_ray, n, inputs=[wbvh.id, w["o"], w["d"], wc], device="cpu")}
        for key in ("aabb", "ray"):
            sfn[key]()
            wfn[key]()
            if (sc.numpy() != wc.numpy()).mean() > 1e-3:
                raise AssertionError(f"Bvh {key} query counts differ from warp-lang's")
    mean = float(sc.numpy().mean())
    r = ctx.rounds
    return [ctx.compare(f"Bvh build, {len(lo)} boxes", sfn["build"], wfn["build"], r(9), block=2, build=True),
            ctx.compare(f"bvh_query_aabb, {n} boxes near the surface", sfn["aabb"], wfn["aabb"], r(12), block=2),
            ctx.compare(f"bvh_query_ray, {n} random rays ({mean:.1f} boxes each)", sfn["ray"], wfn["ray"], r(12),
                        block=2)]


@section("surface_nets")
def surface_nets(ctx: Context) -> list:
    n = 64 if ctx.quick else 128
    tables = []
    W = ctx.warp
    if W is not None:
        import warp.geometry  # noqa: F401
    for name, f in _fields(n).items():
        f = np.ascontiguousarray(f, dtype=np.float32)
        common.progress(f"surface nets: {name}, {n}^3")
        box = dict(lower=(-1.2, -1.2, -1.2), upper=(1.2, 1.2, 1.2))
        sfield = sk.array(f, dtype=float, device="cpu")
        snets = sk.geometry.IsoSurfaceNets(n, n, n, **box)
        sv, si = snets.surface(sfield, 0.0)
        wrun = None
        if W is not None:
            wfield = W.array(f, dtype=float, device="cpu")
            wnets = W.geometry.IsoSurfaceNets(n, n, n, **box)
            wnets.surface(wfield, 0.0)
            if (len(wnets.verts), len(wnets.indices)) != (len(sv), len(si)):
                raise AssertionError(f"surface nets output differs from warp-lang's: {len(sv)} vs {len(wnets.verts)} "
                                     f"vertices, {len(si)} vs {len(wnets.indices)} indices")
            wrun = lambda: wnets.surface(wfield, 0.0)  # noqa: E731
        tables.append(ctx.compare(f"IsoSurfaceNets.surface, {name}, {n}^3, {len(si) // 3} triangles",
                                  lambda: snets.surface(sfield, 0.0), wrun, ctx.rounds(9), no_target=True))
    return tables


def _sdf_field(backend, kernels, radius: float):
    """A sphere's signed distance as the callable the sparse extractors take (one launch over the points)."""
    def field(points):
        values = backend.empty(points.shape[0], dtype=float, device=points.device)
        backend.launch(kernels.sphere_sdf, points.shape[0], inputs=[points, radius], outputs=[values],
                       device=points.device)
        return values
    return field


@section("sparse_marching_cubes")
def sparse_marching_cubes(ctx: Context) -> list:
    W = ctx.warp
    if W is not None:
        import warp.geometry  # noqa: F401
    tables = []
    for n in ((65, 129) if ctx.quick else (129, 257)):
        common.progress(f"sparse marching cubes: sphere SDF, {n}^3 nodes")
        box = dict(lower=(-1.0, -1.0, -1.0), upper=(1.0, 1.0, 1.0))
        sfield = _sdf_field(sk, ctx.sk_k, 0.8)
        sv, si, sstats = sk.geometry.sparse_marching_cubes(sfield, n, n, n, **box, device="cpu", return_stats=True)
        wrun = None
        if W is not None:
            wfield = _sdf_field(W, ctx.wp_k, 0.8)
            wv, wi, wstats = W.geometry.sparse_marching_cubes(wfield, n, n, n, **box, device="cpu", return_stats=True)
            if (len(wv), len(wi), wstats["leaf_cells"]) != (len(sv), len(si), sstats["leaf_cells"]):
                raise AssertionError(f"sparse marching cubes differs from warp-lang's: {len(sv)} vs {len(wv)} "
                                     f"vertices, {sstats['leaf_cells']} vs {wstats['leaf_cells']} cells")
            wrun = lambda: W.geometry.sparse_marching_cubes(wfield, n, n, n, **box, device="cpu")  # noqa: E731
        tables.append(ctx.compare(
            f"sparse_marching_cubes, sphere SDF, {n}^3 nodes, {sstats['leaf_cells']} cells, {len(si) // 3} triangles",
            lambda: sk.geometry.sparse_marching_cubes(sfield, n, n, n, **box, device="cpu"), wrun, ctx.rounds(9),
            no_target=True))
    return tables


@section("swept_volume")
def swept_volume(ctx: Context) -> list:
    import trimesh

    tm = trimesh.creation.icosphere(subdivisions=3, radius=0.3)
    V, F = np.asarray(tm.vertices, np.float32), np.asarray(tm.faces, np.int32).reshape(-1)
    samples = 8 if ctx.quick else 16
    xf = np.zeros((1, samples, 7), np.float32)
    xf[0, :, 0] = np.linspace(-0.5, 0.5, samples)
    xf[0, :, 1] = 0.2 * np.sin(np.linspace(0.0, np.pi, samples))
    xf[0, :, 6] = 1.0
    voxel = 0.04 if ctx.quick else 0.02
    lower, upper = np.array([-0.9, -0.4, -0.4]), np.array([0.9, 0.6, 0.4])  # (one grid for both: their voxel_size
    box = dict(resolution=tuple(int(r) for r in np.round((upper - lower) / voxel) + 1),  # padding rules may differ
               lower=tuple(lower), upper=tuple(upper))                                  # by a cell)
    common.progress(f"swept volume: {len(F) // 3} triangles, {samples} poses, {box['resolution']} nodes")
    smesh = sk.Mesh(sk.array(V, dtype=sk.vec3, device="cpu"), sk.array(F, dtype=int, device="cpu"),
                    support_winding_number=True)
    sxf = sk.array(xf, dtype=sk.transform, device="cpu")
    sv, si = sk.geometry.swept_volume_mesh([smesh], sxf, **box)
    wrun = None
    W = ctx.warp
    if W is not None:
        import warp.geometry  # noqa: F401

        wmesh = W.Mesh(W.array(V, dtype=W.vec3, device="cpu"), W.array(F, dtype=int, device="cpu"),
                       support_winding_number=True)
        wxf = W.array(xf, dtype=W.transform, device="cpu")
        wv, wi = W.geometry.swept_volume_mesh([wmesh], wxf, **box)
        # (the fields agree to float32 rounding, tests/test_swept_volume.py; a node that rounds to the other
        # side of the level set moves a few triangles)
        if abs(len(wi) - len(si)) > 0.002 * len(si):
            raise AssertionError(f"swept volume mesh differs from warp-lang's: {len(si) // 3} vs {len(wi) // 3} "
                                 f"triangles")
        wrun = lambda: W.geometry.swept_volume_mesh([wmesh], wxf, **box)  # noqa: E731
    srun = lambda: sk.geometry.swept_volume_mesh([smesh], sxf, **box)  # noqa: E731
    return [ctx.compare(f"swept_volume_mesh, sphere of {len(F) // 3} triangles, {samples} poses, "
                        f"{'x'.join(map(str, box['resolution']))} nodes, {len(si) // 3} triangles", srun, wrun,
                        ctx.rounds(6), no_target=True)]


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
    queries = [r for r in ctx.results if "ratio" in r and not r["build"]]
    builds = [r for r in ctx.results if "ratio" in r and r["build"]]
    for key, what in (("ratio", "median times"), ("ratio_min", "fastest samples")):
        if queries:
            worst = min(queries, key=lambda r: r[key])
            ok = all(r[key] >= TARGET for r in queries)
            print(f"target warp/simkit >= {TARGET:.0f}x on every query, by {what}: {'met' if ok else 'NOT met'} "
                  f"(lowest {worst[key]:.2f}x: {worst['section']})")
        if builds:
            worst = min(builds, key=lambda r: r[key])
            print(f"builds, refits, extractions (no target), by {what}: lowest {worst[key]:.2f}x "
                  f"({worst['section']})")
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
