"""A heap of particles poured onto one end of a seesaw (a plank on a hinge), exported to USD.

    simkit run seesaw --steps 120 --usd seesaw.usda
    python scenes/seesaw.py --steps 120

``XPBDSolver`` steps the particles and the plank together: the particles land on the plank and
push it (their contacts with its box become a wrench in the body step:
``simkit/solvers/particle/kernels_xpbd_coupling.py``), the loaded end goes down until it meets the
ground, and the heap slides slowly down the plank. The plank turns on a revolute joint to the world.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import simkit as sk

PIVOT = (0.0, 0.25, 0.0)     # [m], the hinge (about z)
HALF_LENGTH = 0.5            # [m], the plank's half length along x
RADIUS = 0.02                # [m], particle radius


def build(device: str = "cpu", heap: int = 6):
    """The model: ground, plank on its hinge, and a ``heap`` x ``heap`` x ``heap`` block of
    particles (4 cm apart, 20 g each) above the plank's +x end."""
    b = sk.ModelBuilder()
    b.add_ground_plane(mu=0.5)
    plank = b.add_body(pos=PIVOT)
    b.add_shape_box(plank, hx=HALF_LENGTH, hy=0.02, hz=0.15, density=200.0, mu=0.5)     # 2.4 kg
    b.add_joint_revolute(-1, plank, anchor=PIVOT, axis=(0.0, 0.0, 1.0))
    side = (heap - 1) * 2 * RADIUS
    b.add_particle_grid(pos=(0.35 - side / 2, 0.45, -side / 2), dim_x=heap, dim_y=heap, dim_z=heap,
                        cell_x=2 * RADIUS, cell_y=2 * RADIUS, cell_z=2 * RADIUS, mass=0.02, radius_mean=RADIUS)
    b.particle_mu = 0.5
    return b.finalize(device=device)


def plank_angle(body_q: np.ndarray) -> float:
    """The plank's angle [rad] about z (negative: the +x end down)."""
    x, y, z, w = body_q[0, 3:]
    return 2.0 * math.atan2(z, w)


def run(steps: int = 120, usd: str | None = None, device: str = "cpu", progress=None, *, heap: int = 6,
        fps: float = 60.0, substeps: int = 4, graph: bool = True) -> tuple:
    """Simulate ``steps`` frames of ``substeps`` steps; write ``usd`` when given. Returns the final
    (particle positions (n, 3), plank frame (7,))."""
    model = build(device, heap)
    solver = sk.XPBDSolver(iterations=8)
    s0, s1 = model.state(), model.state()
    dt = 1.0 / fps / substeps
    out = None
    if usd:
        out = sk.io.UsdExporter(usd, fps=fps, up_axis="Y")
        out.render_rigid_shapes(model)
        g = 1.5
        out.render_mesh("ground", [[-g, 0, -g], [g, 0, -g], [g, 0, g], [-g, 0, g]], [0, 3, 2, 0, 2, 1],
                        color=(0.5, 0.5, 0.5))

    def export(frame):
        out.begin_frame(frame / fps)
        out.render_bodies(s0.body_q)
        out.render_points("heap", s0.particle_q.numpy(), radius=RADIUS)
        out.end_frame()

    def simulate():  # one frame; captured once into a graph (even substeps)
        nonlocal s0, s1
        for _ in range(substeps):
            solver.step(model, s0, s1, None, dt)
            s0, s1 = s1, s0

    if out:
        export(0)
    step = sk.CapturedStep(simulate, device, enabled=None if graph and substeps % 2 == 0 else False)
    for frame in range(steps):
        step()
        if out:
            export(frame + 1)
        if progress:
            progress(frame + 1, steps)
    if out:
        out.close()
    return s0.particle_q.numpy(), s0.body_q.numpy()[0]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=120, help="frames at 60 fps")
    p.add_argument("--usd", default="seesaw.usda")
    p.add_argument("--device", default="cpu")
    p.add_argument("--heap", type=int, default=6, help="particles per side of the heap")
    a = p.parse_args(argv)
    start = time.perf_counter()
    q, plank = run(a.steps, a.usd, a.device, heap=a.heap)
    print(f"{len(q)} particles, {a.steps} frames in {time.perf_counter() - start:.1f} s; plank at "
          f"{math.degrees(plank_angle(plank[None])):.1f} degrees; wrote {a.usd}")


if __name__ == "__main__":
    main()
