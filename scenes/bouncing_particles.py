"""Particles falling under gravity and bouncing on the ground plane (y = 0), exported to USD.

    python -m scenes.bouncing_particles --steps 240 --usd bouncing.usda
"""
from __future__ import annotations

import argparse

import numpy as np

import simkit as sk


@sk.kernel
def integrate(x: sk.array(dtype=sk.vec3), v: sk.array(dtype=sk.vec3), gravity: sk.vec3, dt: float,
              restitution: float, radius: float):
    i = sk.tid()
    vel = v[i] + gravity * dt
    pos = x[i] + vel * dt
    if pos[1] < radius:  # ground contact: reflect the normal velocity
        pos[1] = radius
        vel[1] = -vel[1] * restitution
    x[i] = pos
    v[i] = vel


def run(steps: int = 240, count: int = 256, usd: str | None = None, device: str = "cpu", fps: float = 60.0,
        substeps: int = 4, progress=None, graph: bool = True):
    """Simulate ``steps`` frames; write ``usd`` when given. Returns the final positions (count, 3).
    ``graph``: replay each frame as a graph (CUDA on a GPU)."""
    rng = np.random.default_rng(0)
    x = sk.array(rng.uniform([-1, 0.5, -1], [1, 2.5, 1], size=(count, 3)), dtype=sk.vec3, device=device)
    v = sk.zeros(count, dtype=sk.vec3, device=device)
    writer = sk.io.UsdaPointsWriter(usd, fps=fps) if usd else None
    dt = 1.0 / fps / substeps

    def simulate():  # one frame (in place); captured once into a graph
        for _ in range(substeps):
            sk.launch(integrate, dim=count, inputs=[x, v, sk.vec3(0.0, -9.81, 0.0), dt, 0.6, 0.02], device=device)

    step = sk.CapturedStep(simulate, device, enabled=None if graph else False)
    for frame in range(steps):
        step()
        if writer:
            writer.add_frame(x.numpy(), radius=0.02)
        if progress:
            progress(frame + 1, steps)
    if writer:
        writer.close()
    return x.numpy()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=240)
    p.add_argument("--usd", default="bouncing.usda")
    p.add_argument("--device", default="cpu")
    a = p.parse_args(argv)
    final = run(a.steps, usd=a.usd, device=a.device)
    print(f"simulated {a.steps} frames; lowest particle at y={final[:, 1].min():.3f}; wrote {a.usd}")


if __name__ == "__main__":
    main()
