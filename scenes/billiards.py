"""Trajectory optimization through rigid-body contacts: the cue ball's initial velocity that sends
the object ball to a target, by gradient descent through the whole simulation.

    simkit optimize billiards --iters 60 --plot billiards.png
    python scenes/billiards.py --iters 60 --plot billiards.png --usd billiards.usda

Two balls (rigid spheres, radius 5 cm) on the ground: the cue ball slides, starts rolling (ground
friction), hits the object ball off-centre, and both roll on. The loss is the squared distance
between the object ball and the target (in the ground plane) after ``STEPS`` steps; its gradient
with respect to the cue ball's initial velocity comes from a ``Tape`` through every step, the
collision and the friction included. The target is where a reference shot sends the ball.
"""
from __future__ import annotations

import dataclasses

import numpy as np

import simkit as sk
from simkit.cli import optimization_main

RADIUS = 0.05                        # [m]
CUE, OBJECT = (0.0, RADIUS, 0.0), (0.6, RADIUS, 0.06)    # [m], start positions
DT = 1.0e-3                          # [s]
STEPS = 1200                         # 1.2 s
REFERENCE_VELOCITY = (2.0, 0.0, 0.35)   # [m/s], the shot that defines the target
INITIAL_GUESS = (1.5, 0.0, 0.0)         # [m/s]
MATERIAL = dict(ke=1.0e4, kd=5.0, kf=50.0, mu=0.3)


@sk.kernel
def set_shot(v: sk.array(dtype=sk.vec3), qd: sk.array(dtype=sk.spatial_vector)):
    # the cue ball starts with velocity v along the ground, not spinning; the object ball at rest
    qd[0] = sk.spatial_vector(sk.vec3(0.0, 0.0, 0.0), sk.vec3(v[0][0], 0.0, v[0][2]))
    qd[1] = sk.spatial_vector()


@sk.kernel
def distance_sq(q: sk.array(dtype=sk.transform), target: sk.vec3, loss: sk.array(dtype=float)):
    d = sk.transform_get_translation(q[1]) - target
    loss[0] = d[0] * d[0] + d[2] * d[2]


def build(device: str = "cpu"):
    b = sk.ModelBuilder()
    for pos in (CUE, OBJECT):
        body = b.add_body(pos=pos)
        b.add_shape_sphere(body, radius=RADIUS, density=1000.0, **MATERIAL)
    b.add_ground_plane()
    return b.finalize(device=device, requires_grad=True)


def shoot(model, velocity, solver, steps: int = STEPS, frames=None):
    """Simulate a shot with ``velocity`` (a (1, 3) vec3 array, taped); every step writes a new state.
    Returns the final state; ``frames``, a list, collects the body frames of every step."""
    state = model.state()
    sk.launch(set_shot, 1, inputs=[velocity], outputs=[state.body_qd], device=model.device)
    for _ in range(steps):
        nxt = model.state()
        solver.step(model, state, nxt, None, DT)
        state = nxt
        if frames is not None:
            frames.append(state.body_q.numpy())
    return state


def final_position(velocity, device: str = "cpu") -> np.ndarray:
    """Where the object ball ends for a cue ball velocity (no gradients)."""
    model = build(device)
    v = sk.array(np.asarray(velocity, dtype=np.float32).reshape(1, 3), dtype=sk.vec3, device=device)
    with sk.Tape():
        return shoot(model, v, sk.RigidBodySolver()).body_q.numpy()[1, :3]


@dataclasses.dataclass
class Result:
    velocity: np.ndarray           # optimized cue ball velocity [m/s]
    distance: float                # final distance of the object ball to the target [m]
    iterations: int
    distances: list                # per iteration [m]
    target: np.ndarray             # [m]

    def summary(self) -> str:
        v = ", ".join(f"{c:.3f}" for c in self.velocity)
        return (f"cue ball velocity ({v}) m/s: the object ball ends {self.distance * 100:.2f} cm from the target "
                f"after {self.iterations} iterations (start: {self.distances[0] * 100:.1f} cm)")


def optimize(iters: int = 60, plot: str | None = None, device: str = "cpu", progress=None, *, lr: float = 0.05,
             tol: float = 5.0e-3, initial_velocity=INITIAL_GUESS) -> Result:
    """Adam on the cue ball's velocity until the object ball ends within ``tol`` [m] of the target
    or ``iters`` iterations are done; ``plot``: an image of the distance per iteration. Small steps
    matter: a shot that misses the object ball has no gradient (SGD at lr 0.3 missed and stalled)."""
    target = final_position(REFERENCE_VELOCITY, device)
    model = build(device)
    solver = sk.RigidBodySolver()
    velocity = sk.array(np.asarray(initial_velocity, dtype=np.float32).reshape(1, 3), dtype=sk.vec3,
                        device=device, requires_grad=True)
    opt = sk.optim.Adam([velocity], lr=lr, betas=(0.5, 0.9))   # less momentum: default betas zig-zag here
    loss = sk.zeros(1, dtype=float, device=device, requires_grad=True)

    def forward():
        final = shoot(model, velocity, solver)
        sk.launch(distance_sq, 1, inputs=[final.body_q, sk.vec3(*target)], outputs=[loss], device=device)
        return loss, lambda: np.sqrt(loss.numpy()[0])   # (read after the step: on a GPU, a CUDA graph)

    distances = sk.optim.minimize(forward, opt, iters, tol=tol, progress=progress)
    if plot:
        sk.io.plot_curves({"distance to target [m]": distances}, plot, xlabel="iteration", ylabel="distance [m]",
                          title="billiards: Adam on the cue ball's velocity", logy=True)
    return Result(velocity.numpy()[0].copy(), distances[-1], len(distances) - 1, distances, target)


def export_usd(path: str, velocity, target, fps: float = 50.0, device: str = "cpu") -> None:
    """The shot: both balls (meshes under moving transforms) and the target (a point)."""
    model = build(device)
    frames = []
    v = sk.array(np.asarray(velocity, dtype=np.float32).reshape(1, 3), dtype=sk.vec3, device=device)
    with sk.Tape():
        shoot(model, v, sk.RigidBodySolver(), frames=frames)
    with sk.io.UsdExporter(path, fps=fps) as usd:
        usd.render_points("target", np.asarray(target).reshape(1, 3), radius=0.01)
        usd.render_body_motion(model, frames, DT)


def export_result(path: str, result, device: str = "cpu") -> None:
    """``simkit optimize billiards --usd PATH``: the optimized motion as a USD stage."""
    export_usd(path, result.velocity, result.target, device=device)


def main(argv=None):
    return optimization_main(__doc__, optimize, export_result, iters=60, argv=argv)


if __name__ == "__main__":
    main()
