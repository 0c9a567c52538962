"""A square cloth dropped onto a sphere (a static triangle-mesh collider) above the ground, exported to USD.

    simkit run cloth_on_sphere --steps 120 --usd cloth.usda
    python scenes/cloth_on_sphere.py --size 64 --solver euler

The cloth is a grid of membrane triangles with bending springs (``ModelBuilder.add_cloth_grid``),
the sphere an icosphere mesh (``trimesh.creation.icosphere`` through ``sk.io.mesh_arrays``), the
solver XPBD (default; two substeps per frame) or semi-implicit Euler (stiff contacts need ~40
substeps per frame). The stage holds the sphere and the ground as static meshes and the cloth as a
deforming mesh, one time sample per frame.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import simkit as sk

SPHERE_CENTER = (0.0, 0.6, 0.0)   # [m]
SPHERE_RADIUS = 0.35             # [m]
CLOTH_HEIGHT = 1.1               # [m], the cloth starts flat (x-z plane) at this height
CLOTH_WIDTH = 1.0                # [m]
PARTICLE_RADIUS = 0.01           # [m], the cloth's collision thickness


def sphere_mesh(radius: float | None = None, subdivisions: int = 3):
    """Icosphere vertices (n, 3) float32 and triangle indices (3m,) int32."""
    import trimesh

    return sk.io.mesh_arrays(trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius or SPHERE_RADIUS))


def build(size: int = 32, device: str = "cpu", solver: str = "xpbd", requires_grad: bool = False):
    """The model: a ``size`` x ``size`` cloth, the sphere and the ground. Returns (model, sphere)."""
    cell = CLOTH_WIDTH / size
    b = sk.ModelBuilder()
    sphere = sphere_mesh()
    b.add_shape_mesh(sphere, pos=SPHERE_CENTER, ke=1.0e3, kd=5.0, kf=1.0, mu=0.5)
    b.add_ground_plane(ke=1.0e3, kd=5.0, kf=1.0, mu=0.5)
    # rotate the grid's x-y plane onto x-z (-90 degrees about x), centred over the sphere
    b.add_cloth_grid(pos=(-CLOTH_WIDTH / 2, CLOTH_HEIGHT, CLOTH_WIDTH / 2), rot=(-0.7071068, 0.0, 0.0, 0.7071068),
                     dim_x=size, dim_y=size, cell_x=cell, cell_y=cell, mass=1.0 / (size + 1) ** 2,
                     tri_ke=1.0e2, tri_ka=1.0e2, tri_kd=0.5, edge_ke=1.0, particle_radius=PARTICLE_RADIUS)
    b.particle_contact = False  # cloth self-contact is off: membrane + bending keep it apart enough here
    b.particle_damping = 2.0    # [1/s], air drag: the hanging cloth stops swinging after ~3 s
    return b.finalize(device=device, requires_grad=requires_grad), sphere


SOLVERS = {
    # name: (solver factory, substeps per frame)
    "xpbd": (lambda: sk.XPBDSolver(iterations=10), 2),
    "euler": (lambda: sk.SemiImplicitEulerSolver(), 40),
}


def run(steps: int = 120, usd: str | None = None, device: str = "cpu", progress=None, *, size: int = 32,
        solver: str = "xpbd", fps: float = 60.0, substeps: int | None = None, graph: bool = True) -> np.ndarray:
    """Simulate ``steps`` frames at ``fps``; write ``usd`` when given. Returns the final cloth
    positions [m], shape (particles, 3). ``graph``: replay each frame as a graph (CUDA on a GPU)."""
    make, default_substeps = SOLVERS[solver]
    substeps = substeps or default_substeps
    model, (sphere_points, sphere_indices) = build(size, device, solver)
    integrator = make()
    s0, s1 = model.state(), model.state()
    dt = 1.0 / fps / substeps
    cloth_indices = model.tri_indices.numpy()
    usd_out = None
    if usd:
        usd_out = sk.io.UsdExporter(usd, fps=fps, up_axis="Y")
        usd_out.render_mesh("sphere", sphere_points, sphere_indices, pos=SPHERE_CENTER, color=(0.8, 0.3, 0.2))
        g = 2.0
        usd_out.render_mesh("ground", [[-g, 0, -g], [g, 0, -g], [g, 0, g], [-g, 0, g]], [0, 3, 2, 0, 2, 1],
                            color=(0.5, 0.5, 0.5))
    if usd_out:  # frame 0: the initial state
        usd_out.begin_frame(0.0)
        usd_out.render_mesh("cloth", s0.particle_q.numpy(), cloth_indices, color=(0.2, 0.4, 0.8))
        usd_out.end_frame()

    def simulate():  # one frame; captured once into a graph (even substeps: s0 ends as s0)
        nonlocal s0, s1
        for _ in range(substeps):
            integrator.step(model, s0, s1, None, dt)
            s0, s1 = s1, s0

    step = sk.CapturedStep(simulate, device, enabled=None if graph and substeps % 2 == 0 else False)
    for frame in range(steps):
        step()
        if usd_out:
            usd_out.begin_frame((frame + 1) / fps)
            usd_out.render_mesh("cloth", s0.particle_q.numpy(), cloth_indices, color=(0.2, 0.4, 0.8))
            usd_out.end_frame()
        if progress:
            progress(frame + 1, steps)
    if usd_out:
        usd_out.close()
    return s0.particle_q.numpy()


def clearance(q: np.ndarray, sphere=None) -> float:
    """Smallest gap [m] between a cloth particle's collision sphere (radius PARTICLE_RADIUS) and the
    sphere mesh, measured to the mesh's inscribed sphere (its faces' closest approach to the centre),
    so a negative value is a certain penetration of the collider."""
    points, indices = sphere if sphere is not None else sphere_mesh()
    a, b, c = (points[indices.reshape(-1, 3)[:, k]].astype(np.float64) for k in range(3))
    n = np.cross(b - a, c - a)
    inscribed = np.abs(np.einsum("ij,ij->i", n / np.linalg.norm(n, axis=1, keepdims=True), a)).min()
    return float(np.linalg.norm(q - np.asarray(SPHERE_CENTER), axis=1).min() - inscribed - PARTICLE_RADIUS)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=120)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--solver", choices=sorted(SOLVERS), default="xpbd")
    p.add_argument("--usd", default="cloth.usda")
    p.add_argument("--device", default="cpu")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    q = run(a.steps, usd=a.usd, device=a.device, size=a.size, solver=a.solver)
    print(f"{a.steps} frames in {time.perf_counter() - t0:.1f} s; lowest cloth point y={q[:, 1].min():.3f} m, "
          f"clearance to the sphere {clearance(q) * 1000:.1f} mm; wrote {a.usd}")


if __name__ == "__main__":
    main()
