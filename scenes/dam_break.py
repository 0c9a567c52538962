"""A dam break: a column of water collapses in a tank and runs along its floor (SPH), exported to USD.

    simkit run dam_break --steps 120 --usd dam_break.usda
    python scenes/dam_break.py --spacing 0.01 --steps 240
    python scenes/dam_break.py --no-surface          # particles only

The water starts as a square column ``COLUMN`` [m] wide and high against the tank's left wall
(x = 0), as deep as the tank (a quasi-2D dam break, as in Martin & Moyce's experiments); it is
simulated with ``sk.SPHSolver`` (weakly compressible SPH, the tank's walls are mirrors) and written
as points, with the tank's floor and walls as a static mesh, and (``surface``, on by default when
writing USD) the water's free surface as a mesh re-extracted every frame (``sk.solvers.sph.FluidSurface``
on a grid of half the particle spacing; time-sampled topology). ``front(q)`` is the surge front's
position: Martin & Moyce measured it at z / a = 3.0 at T = t sqrt(2 g / a) = 2.5 for a column of
width a.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import simkit as sk
from simkit.solvers.sph import FluidSurface

COLUMN = 0.2                       # [m], width and height of the water column (a)
TANK = (0.8, 0.5, 0.1)             # [m], the tank's size along x (the run), y (up), z (depth)
GRAVITY = 9.81                     # [m/s^2]


def build(spacing: float = 0.02, device: str = "cpu", requires_grad: bool = False):
    """The model: a column of water particles ``spacing`` [m] apart. Returns (model, solver)."""
    b = sk.ModelBuilder(gravity=-GRAVITY)
    n = max(1, round(COLUMN / spacing))
    b.add_fluid_block(pos=(spacing / 2, spacing / 2, spacing / 2), dim_x=n, dim_y=n,
                      dim_z=max(1, round(TANK[2] / spacing)), spacing=spacing)
    model = b.finalize(device=device, requires_grad=requires_grad)
    solver = sk.SPHSolver(bounds=((0.0, 0.0, 0.0), TANK), viscosity=1.0)
    return model, solver


def tank_mesh():
    """The tank's floor and four walls (no lid) as quads split into triangles."""
    x, y, z = TANK
    points = np.array([[0, 0, 0], [x, 0, 0], [x, 0, z], [0, 0, z], [0, y, 0], [x, y, 0], [x, y, z], [0, y, z]],
                      dtype=np.float32)
    quads = [(0, 1, 2, 3), (0, 4, 5, 1), (1, 5, 6, 2), (2, 6, 7, 3), (3, 7, 4, 0)]
    return points, np.array([[a, b, c, a, c, d] for a, b, c, d in quads]).reshape(-1)


def water_surface(spacing: float, device: str = "cpu") -> FluidSurface:
    """The surface extractor for particles ``spacing`` [m] apart: a grid of nodes ``spacing / 2``
    apart over the tank, one particle spacing wider on every side (the surface of water against a
    wall lies on the wall, half a spacing from the particle centres)."""
    margin = np.full(3, spacing)
    return FluidSurface(-margin, np.asarray(TANK) + margin, spacing / 2, device=device, particle_spacing=spacing)


def front(q: np.ndarray) -> float:
    """The surge front [m]: the 99th percentile of the particles' x (a lone splash does not count)."""
    return float(np.percentile(q[:, 0], 99.0))


def run(steps: int = 120, usd: str | None = None, device: str = "cpu", progress=None, *, spacing: float = 0.02,
        fps: float = 60.0, surface: bool | None = None, graph: bool = True) -> np.ndarray:
    """Simulate ``steps`` frames at ``fps``; write ``usd`` when given, with the water's surface mesh
    (``water_surface``) per frame unless ``surface`` is False (None: on when writing USD). Returns the
    final particle positions [m], shape (particles, 3). ``graph``: replay each frame as a graph (CUDA on a
    GPU)."""
    model, solver = build(spacing, device)
    max_speed = 2.0 * math.sqrt(GRAVITY * COLUMN)       # the shallow-water surge speed bound (Ritter)
    substeps = math.ceil(1.0 / fps / solver.max_time_step(model, max_speed=max_speed))
    substeps += substeps % 2  # even: a frame ends in s0, as a graph's replay needs
    dt = 1.0 / fps / substeps
    s0, s1 = model.state(), model.state()
    radius = spacing / 2
    out = mesher = None
    if usd:
        out = sk.io.UsdExporter(usd, fps=fps, up_axis="Y")
        out.render_mesh("tank", *tank_mesh(), color=(0.6, 0.6, 0.6))
        if surface is None or surface:
            mesher = water_surface(spacing, device)

    def export(frame):
        out.begin_frame(frame / fps)
        out.render_points("water", s0.particle_q.numpy(), radius=radius)
        if mesher is not None:
            verts, indices = mesher.extract(s0.particle_q)
            out.render_mesh("water_surface", verts.numpy(), indices.numpy(), color=(0.2, 0.45, 0.9))
        out.end_frame()

    if out:
        export(0)
    def simulate():  # one frame; captured once into a graph
        nonlocal s0, s1
        for _ in range(substeps):
            solver.step(model, s0, s1, None, dt)
            s0, s1 = s1, s0

    step = sk.CapturedStep(simulate, device, enabled=None if graph else False)
    for frame in range(steps):
        step()
        if out:
            export(frame + 1)
        if progress:
            progress(frame + 1, steps)
    if out:
        out.close()
    return s0.particle_q.numpy()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=120, help="frames at 60 fps")
    p.add_argument("--usd", default="dam_break.usda")
    p.add_argument("--device", default="cpu")
    p.add_argument("--spacing", type=float, default=0.02, help="particle spacing [m]")
    p.add_argument("--surface", action=argparse.BooleanOptionalAction, default=None,
                   help="write the water's surface mesh per frame (default: on, as --usd is written)")
    a = p.parse_args(argv)
    start = time.perf_counter()
    q = run(a.steps, a.usd, a.device, spacing=a.spacing, surface=a.surface)
    T = a.steps / 60.0 * math.sqrt(2.0 * GRAVITY / COLUMN)
    print(f"{len(q)} particles, {a.steps} frames in {time.perf_counter() - start:.1f} s; surge front at "
          f"z/a = {front(q) / COLUMN:.2f} at T = {T:.2f}; wrote {a.usd}")


if __name__ == "__main__":
    main()
