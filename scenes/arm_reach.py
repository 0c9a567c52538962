"""Trajectory optimization of a driven arm: joint targets over time that bring its tip to a point.

    simkit optimize arm_reach --iters 60 --plot arm.png
    python scenes/arm_reach.py --iters 60 --plot arm.png --usd arm.usda

A three-link arm (capsules) hangs from a shoulder fixed in the world; its three revolute joints
(about z) are driven by PD torques towards target angles (``Control.joint_target``), under gravity.
The targets are piecewise constant over ``SEGMENTS`` time segments: the parameters are a
``SEGMENTS x 3`` array of angles. The loss is the squared distance of the arm's tip to ``TARGET``
at the end, plus a little of its speed there (to arrive, not to swing through); its gradient with
respect to every segment's targets flows back through every step, the joints' springs and drives
included. Adam updates the targets.
"""
from __future__ import annotations

import dataclasses

import numpy as np

import simkit as sk
from simkit.cli import optimization_main

LINK = 0.2                          # [m], length between joints
DT = 1.0e-3                         # [s]
STEPS = 600                         # 0.6 s
SEGMENTS = 3
TARGET = (0.35, -0.25, 0.0)         # [m], reachable: the arm hangs down from the origin
DRIVE = dict(target_ke=4.0, target_kd=0.2)


@sk.kernel
def segment_targets(params: sk.array(dtype=float, ndim=2), k: int, out: sk.array(dtype=float)):
    j = sk.tid()
    out[j] = params[k, j]


@sk.kernel
def tip_loss(q: sk.array(dtype=sk.transform), qd: sk.array(dtype=sk.spatial_vector), target: sk.vec3,
             loss: sk.array(dtype=float)):
    tip = sk.transform_point(q[2], sk.vec3(0.0, -0.5 * LINK, 0.0))
    d = tip - target
    v = sk.spatial_bottom(qd[2])
    loss[0] = sk.dot(d, d) + 0.001 * sk.dot(v, v)


def build(device: str = "cpu"):
    b = sk.ModelBuilder()
    parent = -1
    for k in range(3):
        body = b.add_body(pos=(0.0, -(k + 0.5) * LINK, 0.0))
        b.add_shape_capsule(body, radius=0.04, half_height=0.5 * LINK - 0.04, density=500.0, kd=10.0, kf=10.0)
        b.add_joint_revolute(parent, body, anchor=(0.0, -k * LINK, 0.0), axis=(0.0, 0.0, 1.0), ke=2e4, kd=20.0,
                             angular_ke=20.0, angular_kd=0.05, **DRIVE)
        parent = body
    return b.finalize(device=device, requires_grad=True)


def rollout(model, params, solver, frames=None):
    """The final state from rest with the targets ``params`` (SEGMENTS x 3), taped step by step."""
    controls = []
    for k in range(SEGMENTS):
        c = model.control()
        sk.launch(segment_targets, 3, inputs=[params, k], outputs=[c.joint_target], device=model.device)
        controls.append(c)
    state = model.state()
    for i in range(STEPS):
        nxt = model.state()
        solver.step(model, state, nxt, controls[i * SEGMENTS // STEPS], DT)
        state = nxt
        if frames is not None:
            frames.append(state.body_q.numpy())
    return state


@dataclasses.dataclass
class Result:
    targets: np.ndarray             # SEGMENTS x 3 joint angles [rad]
    distance: float                 # final tip distance to the target [m]
    iterations: int
    distances: list                 # per iteration [m]

    def summary(self) -> str:
        return (f"tip {self.distance * 100:.2f} cm from the target after {self.iterations} iterations "
                f"(start: {self.distances[0] * 100:.1f} cm); final joint targets "
                f"{np.array2string(self.targets[-1], precision=2)} rad")


def tip_distance(state) -> float:
    q = state.body_q.numpy()[2]
    x, y, z, w = q[3:]
    u = np.array([x, y, z])
    local = np.array([0.0, -0.5 * LINK, 0.0])
    tip = q[:3] + local + 2.0 * w * np.cross(u, local) + 2.0 * np.cross(u, np.cross(u, local))
    return float(np.linalg.norm(tip - np.asarray(TARGET)))


def optimize(iters: int = 60, plot: str | None = None, device: str = "cpu", progress=None, *, lr: float = 0.1,
             tol: float = 5.0e-3) -> Result:
    """Adam on the joint targets until the tip ends within ``tol`` [m] of ``TARGET`` or ``iters``
    iterations are done; ``plot``: an image of the distance per iteration."""
    model = build(device)
    solver = sk.RigidBodySolver()
    if DT > solver.max_time_step(model):
        raise ValueError(f"arm_reach: dt = {DT} s is above the stable {solver.max_time_step(model):.2e} s")
    params = sk.zeros((SEGMENTS, 3), dtype=float, device=device, requires_grad=True)
    opt = sk.optim.Adam([params], lr=lr, betas=(0.5, 0.9))
    loss = sk.zeros(1, dtype=float, device=device, requires_grad=True)

    def forward():
        final = rollout(model, params, solver)
        sk.launch(tip_loss, 1, inputs=[final.body_q, final.body_qd, sk.vec3(*TARGET)], outputs=[loss], device=device)
        return loss, lambda: tip_distance(final)   # (read after the step: on a GPU, a CUDA graph)

    distances = sk.optim.minimize(forward, opt, iters, tol=tol, progress=progress)
    if plot:
        sk.io.plot_curves({"tip distance to target [m]": distances}, plot, xlabel="iteration", ylabel="distance [m]",
                          title="arm reach: Adam on the joint targets", logy=True)
    return Result(params.numpy().copy(), distances[-1], len(distances) - 1, distances)


def export_usd(path: str, targets, fps: float = 50.0, device: str = "cpu") -> None:
    """The motion with joint targets ``targets``: the links as meshes under moving transforms."""
    model = build(device)
    params = sk.array(np.asarray(targets, dtype=np.float32), dtype=float, device=device)
    frames = []
    with sk.Tape():
        rollout(model, params, sk.RigidBodySolver(), frames)
    with sk.io.UsdExporter(path, fps=fps) as usd:
        usd.render_points("target", np.asarray(TARGET).reshape(1, 3), radius=0.01)
        usd.render_body_motion(model, frames, DT)


def export_result(path: str, result, device: str = "cpu") -> None:
    """``simkit optimize arm_reach --usd PATH``: the optimized motion as a USD stage."""
    export_usd(path, result.targets, device=device)


def main(argv=None):
    return optimization_main(__doc__, optimize, export_result, iters=60, argv=argv)


if __name__ == "__main__":
    main()
