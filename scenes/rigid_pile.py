"""Boxes, spheres and capsules tumble down a ramp onto the ground and pile up (rigid bodies), exported to USD.

    simkit run rigid_pile --steps 180 --usd pile.usda
    python scenes/rigid_pile.py --rows 4 [--solver xpbd]

``rows`` layers of 3 x 3 bodies (a mix of the three shapes, random orientations and spins) start
above a static ramp (a box tilted by 20 degrees) and fall under gravity; ``sk.RigidBodySolver``
steps them with penalty contacts between every pair of shapes, the ramp and the ground (40
substeps per frame), or ``--solver xpbd``: ``sk.XPBDSolver`` with hard contacts (two steps per frame of 2
substeps of 2 sweeps each). The stage holds each body as a transform (time-sampled) over its shapes' meshes.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import simkit as sk

RAMP_ANGLE = math.radians(20.0)
SIZE = 0.1         # [m], the bodies' typical half size


def build(rows: int = 3, device: str = "cpu", seed: int = 0):
    """The model: ``rows`` x 9 bodies above the ramp and the ground."""
    rng = np.random.default_rng(seed)
    b = sk.ModelBuilder()
    material = dict(ke=2.0e4, kd=100.0, kf=200.0, mu=0.6)
    # the ramp: a static box tilted about z, its top face rising towards -x
    half = math.sin(RAMP_ANGLE / 2.0)
    b.add_shape_box(-1, hx=1.0, hy=0.05, hz=0.6, pos=(0.0, 0.3, 0.0), rot=(0.0, 0.0, -half, math.cos(RAMP_ANGLE / 2)),
                    **material)
    for layer in range(rows):
        for i in range(3):
            for k in range(3):
                axis = rng.normal(size=3)
                axis /= np.linalg.norm(axis)
                angle = rng.uniform(0.0, math.pi)
                rot = tuple(axis * math.sin(angle / 2)) + (math.cos(angle / 2),)
                body = b.add_body(pos=(-0.5 + 0.3 * i, 1.0 + 0.3 * layer, -0.3 + 0.3 * k), rot=rot,
                                  ang_vel=tuple(rng.normal(scale=2.0, size=3)))
                kind = (layer + i + k) % 3
                if kind == 0:
                    b.add_shape_box(body, hx=SIZE, hy=0.6 * SIZE, hz=0.8 * SIZE, density=500.0, **material)
                elif kind == 1:
                    b.add_shape_sphere(body, radius=SIZE, density=500.0, **material)
                else:
                    b.add_shape_capsule(body, radius=0.5 * SIZE, half_height=SIZE, density=500.0, **material)
    b.add_ground_plane()
    return b.finalize(device=device)


def run(steps: int = 180, usd: str | None = None, device: str = "cpu", progress=None, *, rows: int = 3,
        fps: float = 60.0, substeps: int | None = None, solver: str = "penalty", graph: bool = True) -> np.ndarray:
    """Simulate ``steps`` frames; write ``usd`` when given. Returns the final body frames (n, 7).
    ``solver``: "penalty" (``RigidBodySolver``, 40 substeps per frame by default) or "xpbd"
    (``XPBDSolver``, ``substeps`` substeps of 2 sweeps per frame, 4 by default: two steps of half of
    them, an odd number in one step). ``graph``: replay each frame as a graph (CUDA on a GPU)."""
    model = build(rows, device)
    if solver not in ("penalty", "xpbd"):
        raise ValueError(f"rigid_pile: solver must be 'penalty' or 'xpbd', got {solver!r}")
    if solver == "xpbd":
        sub = substeps or 4   # (two steps of half: a frame of an even number of steps replays as a graph)
        solver, substeps = sk.XPBDSolver(iterations=2, substeps=sub // 2 if sub % 2 == 0 else sub), \
            2 if sub % 2 == 0 else 1
    else:
        solver, substeps = sk.RigidBodySolver(), substeps or 40
    dt = 1.0 / fps / substeps
    if isinstance(solver, sk.RigidBodySolver) and dt > solver.max_time_step(model):
        raise ValueError(f"rigid_pile: {substeps} substeps per frame are too few for stable contacts")
    s0, s1 = model.state(), model.state()
    out = None
    if usd:
        out = sk.io.UsdExporter(usd, fps=fps, up_axis="Y")
        out.render_rigid_shapes(model)
        g = 2.0
        out.render_mesh("ground", [[-g, 0, -g], [g, 0, -g], [g, 0, g], [-g, 0, g]], [0, 3, 2, 0, 2, 1],
                        color=(0.5, 0.5, 0.5))
        out.begin_frame(0.0)
        out.render_bodies(s0)
        out.end_frame()
    def simulate():  # one frame
        nonlocal s0, s1
        for _ in range(substeps):
            solver.step(model, s0, s1, None, dt)
            s0, s1 = s1, s0

    # A frame of an even number of steps replays as a graph (an odd number would leave
    # the states swapped: every replay would read the state the capture read)
    step = sk.CapturedStep(simulate, device, enabled=None if graph and substeps % 2 == 0 else False)
    for frame in range(steps):
        step()
        if out:
            out.begin_frame((frame + 1) / fps)
            out.render_bodies(s0)
            out.end_frame()
        if progress:
            progress(frame + 1, steps)
    if out:
        out.close()
    return s0.body_q.numpy()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=180, help="frames at 60 fps")
    p.add_argument("--usd", default="pile.usda")
    p.add_argument("--device", default="cpu")
    p.add_argument("--rows", type=int, default=3)
    p.add_argument("--solver", choices=("penalty", "xpbd"), default="penalty")
    a = p.parse_args(argv)
    start = time.perf_counter()
    q = run(a.steps, a.usd, a.device, rows=a.rows, solver=a.solver)
    print(f"{len(q)} bodies, {a.steps} frames in {time.perf_counter() - start:.1f} s; highest body at "
          f"y = {q[:, 1].max():.2f} m; wrote {a.usd}")


if __name__ == "__main__":
    main()
