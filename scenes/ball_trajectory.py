"""Trajectory optimization: the initial velocity that makes a thrown ball, after bouncing on the
ground, pass through a target — by gradient descent through the whole simulation.

    simkit optimize ball_trajectory --iters 100 --plot loss.png
    python scenes/ball_trajectory.py --iters 100 --plot loss.png --usd ball.usda

One particle (a ball of radius 0.1 m) starts 1 m above the ground and bounces on it (penalty
contact, semi-implicit Euler, 480 steps per second). The loss is the squared distance between the
ball and the target after ``STEPS`` = 600 steps (1.25 s); its gradient with respect to the initial
velocity comes from a ``Tape`` through all 600 steps (optionally checkpointed every
``checkpoint_every`` steps, which stores ~``STEPS / k + k`` states instead of ``STEPS``). Adam
updates the velocity. The target is where a reference throw lands, so a bouncing solution exists.
"""
from __future__ import annotations

import dataclasses

import numpy as np

import simkit as sk
from simkit.cli import optimization_main

START = (0.0, 1.0, 0.0)             # [m]
RADIUS = 0.1                        # [m]
DT = 1.0 / 480.0                    # [s]
STEPS = 600                         # 1.25 s
REFERENCE_VELOCITY = (3.0, 2.0, 0.5)   # [m/s], the throw that defines the target
INITIAL_GUESS = (1.0, 1.0, 0.0)        # [m/s]
# A soft, bouncy ball: contact stiffness [N/m] and no contact damping. Stiffer or damped penalty
# contacts at this step size make the landing point a sawtooth function of the velocity (the
# restitution then depends on where the contact starts within a step) and gradient descent stalls.
GROUND_KE = 3.0e3


@sk.kernel
def distance_sq(q: sk.array(dtype=sk.vec3), target: sk.vec3, loss: sk.array(dtype=float)):
    d = q[0] - target
    loss[0] = sk.dot(d, d)


def build(device: str = "cpu", velocity=INITIAL_GUESS):
    b = sk.ModelBuilder()
    b.add_particle(START, velocity, mass=1.0, radius=RADIUS)
    b.add_ground_plane(ke=GROUND_KE, kd=0.0, kf=10.0, mu=0.3)
    return b.finalize(device=device, requires_grad=True)


def simulate(model, state, solver, steps: int = STEPS, checkpoint_every: int = 0):
    """Run ``steps`` steps from ``state``, each into a new state, so that a Tape can differentiate
    the whole rollout. With ``checkpoint_every`` = k, every k steps run inside ``sk.checkpoint``:
    the tape keeps one state per segment and recomputes the rest in ``backward()``. Returns the
    final state."""

    def segment(q, qd, n):
        cur = sk.State(q, qd, state.particle_f)
        for _ in range(n):
            nxt = model.state()
            solver.step(model, cur, nxt, None, DT)
            cur = nxt
        return cur.particle_q, cur.particle_qd

    if not checkpoint_every:
        return sk.State(*segment(state.particle_q, state.particle_qd, steps), state.particle_f)
    q, qd = state.particle_q, state.particle_qd
    for k0 in range(0, steps, checkpoint_every):
        q, qd = sk.checkpoint(segment, q, qd, min(checkpoint_every, steps - k0))
    return sk.State(q, qd, state.particle_f)


def trajectory(velocity, device: str = "cpu", steps: int = STEPS) -> np.ndarray:
    """Ball positions [m], shape (steps + 1, 3), for an initial velocity (no gradients)."""
    model = build(device, velocity)
    model.requires_grad = False
    solver = sk.SemiImplicitEulerSolver()
    s0, s1 = model.state(), model.state()
    out = [s0.particle_q.numpy()[0].copy()]
    for _ in range(steps):
        solver.step(model, s0, s1, None, DT)
        s0, s1 = s1, s0
        out.append(s0.particle_q.numpy()[0].copy())
    return np.array(out)


def bounces(path: np.ndarray) -> int:
    """Ground contacts along a trajectory (entries into contact)."""
    touching = path[:, 1] < RADIUS
    return int(np.sum(touching[1:] & ~touching[:-1]))


@dataclasses.dataclass
class Result:
    velocity: np.ndarray           # optimized initial velocity [m/s]
    distance: float                # final distance to the target [m]
    iterations: int                # gradient steps taken
    distances: list                # distance to the target at every iteration [m]
    target: np.ndarray             # [m]
    bounces: int                   # ground contacts of the optimized throw

    def summary(self) -> str:
        v = ", ".join(f"{c:.3f}" for c in self.velocity)
        return (f"initial velocity ({v}) m/s: {self.bounces} bounce(s), lands {self.distance * 100:.2f} cm from the "
                f"target after {self.iterations} iterations (start: {self.distances[0] * 100:.1f} cm)")


def optimize(iters: int = 100, plot: str | None = None, device: str = "cpu", progress=None, *,
             lr: float = 0.3, momentum: float = 0.5, optimizer: str = "sgd", tol: float = 5.0e-3,
             checkpoint_every: int = 0, initial_velocity=INITIAL_GUESS) -> Result:
    """Gradient descent on the initial velocity until the ball ends within ``tol`` [m] of the target
    or ``iters`` iterations are done (``optimizer``: "sgd" with ``momentum``, or "adam"); ``plot``:
    an image of the distance per iteration. Returns a ``Result``."""
    target = trajectory(REFERENCE_VELOCITY, device)[-1]
    model = build(device, initial_velocity)
    solver = sk.SemiImplicitEulerSolver()
    start = model.state()
    velocity = start.particle_qd               # the parameter (requires_grad from the model)
    opt = (sk.optim.SGD([velocity], lr=lr, momentum=momentum) if optimizer == "sgd"
           else sk.optim.Adam([velocity], lr=lr))
    loss = sk.zeros(1, dtype=float, device=device, requires_grad=True)

    def forward():
        final = simulate(model, start, solver, STEPS, checkpoint_every)
        sk.launch(distance_sq, 1, inputs=[final.particle_q, sk.vec3(*target)], outputs=[loss], device=device)
        return loss, lambda: np.sqrt(loss.numpy()[0])   # (read after the step: on a GPU, a CUDA graph)

    distances = sk.optim.minimize(forward, opt, iters, tol=tol, progress=progress)
    v = velocity.numpy()[0].copy()
    if plot:
        sk.io.plot_curves({"distance to target [m]": distances}, plot, xlabel="iteration", ylabel="distance [m]",
                          title=f"ball trajectory: {optimizer} on the initial velocity", logy=True)
    return Result(v, distances[-1], len(distances) - 1, distances, target, bounces(trajectory(v, device)))


def export_usd(path: str, velocity, target, fps: float = 60.0, device: str = "cpu") -> None:
    """The throw as a ball (points) and the target (a point), one frame per 1/fps s."""
    path_xyz = trajectory(velocity, device)
    every = max(int(round(1.0 / (fps * DT))), 1)
    with sk.io.UsdExporter(path, fps=fps) as usd:
        usd.render_points("target", np.asarray(target).reshape(1, 3), radius=0.03)
        for k, p in enumerate(path_xyz[::every]):
            usd.begin_frame(k / fps)
            usd.render_points("ball", p.reshape(1, 3), radius=RADIUS)
            usd.end_frame()


def export_result(path: str, result, device: str = "cpu") -> None:
    """``simkit optimize ball_trajectory --usd PATH``: the optimized motion as a USD stage."""
    export_usd(path, result.velocity, result.target, device=device)


def main(argv=None):
    checkpoint = ("--checkpoint-every", dict(type=int, default=0, help="checkpoint the rollout every N steps (0: off)"))
    return optimization_main(__doc__, optimize, export_result, iters=100, argv=argv, extra=[checkpoint])


if __name__ == "__main__":
    main()
