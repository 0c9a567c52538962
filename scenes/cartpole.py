"""Trajectory optimization of a cart-pole swing-up: the cart's drive targets over time that bring
the hanging pole up.

    simkit optimize cartpole --iters 60 --plot cartpole.png
    python scenes/cartpole.py --iters 60 --plot cartpole.png --usd cartpole.usda

A cart (a box) slides along x on a prismatic joint to the world, between limits at
``+-TRACK`` (stiff penalty springs: the track's ends); a pole (a capsule) hangs from it on an
undriven revolute joint about z. The cart's PD drive pulls it towards ``Control.joint_target``,
piecewise linear in time through ``SEGMENTS + 1`` knots (the first held at 0, where the cart
starts): the parameters are the ``SEGMENTS`` knot positions [m]. The loss at the end is
``1 - cos`` of the pole's angle from upright plus a little of its angular velocity and of the
cart's speed (to arrive, not to swing through); its gradient flows back through every step, the
joint springs, drive and limits included. Adam updates the knots. At zero knots the pole hangs
still and the gradient vanishes (the bottom is an extremum of the loss), so the optimization
starts from a small shake of the cart (``initial_knots``). Measured (2 CPU cores): loss 2.02 ->
0.11 in 15 iterations (the tip 47.9 cm above the pivot of the 50 cm pole), 0.047 in 60 (49.8 cm),
about 0.6 s an iteration; the cart stays within +-0.35 m of its +-1 m track.
"""
from __future__ import annotations

import dataclasses
import math
import os

import numpy as np

import simkit as sk
from simkit.cli import optimization_main

TRACK = 1.0                         # [m], the cart's limits are at -TRACK, TRACK
POLE = 0.5                          # [m], the pole's length, pivot to tip
DT = 2.0e-3                         # [s]
STEPS = 750                         # 1.5 s
SEGMENTS = 8
# joint springs as stiff as DT allows (RigidBodySolver.max_time_step); the pole hangs in the cart's
# plane of motion, so the joints' angular springs only hold it there
CART = dict(ke=5e3, kd=20.0, angular_ke=20.0, angular_kd=0.1, target_ke=100.0, target_kd=15.0,
            limit_lower=-TRACK, limit_upper=TRACK, limit_ke=1e4, limit_kd=1e2)
HINGE = dict(ke=5e3, kd=20.0, angular_ke=2.0, angular_kd=0.01)
MATERIAL = dict(ke=1e3, kd=1.0, kf=1.0)     # nothing touches: the two joined shapes never collide
WEIGHTS = (0.01, 0.01)              # of the pole's squared angular velocity [rad^2/s^2], the cart's speed^2


def initial_knots(amplitude: float = 0.1) -> np.ndarray:
    """The starting guess: the cart shaken back and forth, +-``amplitude`` [m]."""
    return amplitude * np.array([(-1.0) ** k for k in range(SEGMENTS)])


@sk.kernel
def knot_target(knots: sk.array(dtype=sk.Any), k: int, a: sk.Any, out: sk.array(dtype=sk.Any)):
    # segment k runs from knot k - 1 (for k = 0: the start, 0) to knot k; the cart's target is a of the
    # way along it. The pole's joint has no drive: its target stays 0
    start = knots[0] * a * 0.0
    if k > 0:
        start = knots[k - 1]
    out[0] = start + (knots[k] - start) * a


@sk.kernel
def swing_up_loss(q: sk.array(dtype=sk.Any), qd: sk.array(dtype=sk.Any), w_spin: sk.Any, w_cart: sk.Any,
                  loss: sk.array(dtype=sk.Any)):
    down = sk.transform_vector(q[1], type(sk.transform_get_translation(q[1]))(0.0, -1.0, 0.0))  # pivot to tip
    spin = sk.spatial_top(qd[1])[2]
    v = sk.spatial_bottom(qd[0])[0]
    loss[0] = 1.0 - down[1] + w_spin * spin * spin + w_cart * v * v


def build(device: str = "cpu", dtype=sk.float32):
    b = sk.ModelBuilder()
    cart = b.add_body(pos=(0.0, 0.0, 0.0))
    b.add_shape_box(cart, hx=0.1, hy=0.05, hz=0.08, density=500.0, **MATERIAL)
    b.add_joint_prismatic(-1, cart, anchor=(0.0, 0.0, 0.0), axis=(1.0, 0.0, 0.0), **CART)
    pole = b.add_body(pos=(0.0, -0.5 * POLE, 0.0))
    b.add_shape_capsule(pole, radius=0.025, half_height=0.5 * POLE - 0.025, density=500.0, **MATERIAL)
    b.add_joint_revolute(cart, pole, anchor=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0), **HINGE)
    return b.finalize(device=device, dtype=dtype, requires_grad=True)


def rollout(model, knots, solver, steps: int = STEPS, frames=None):
    """The final state from rest with the cart's knots ``knots`` (SEGMENTS), taped step by step;
    ``frames``, a list, collects the body frames of every step."""
    scalar = model.dtype
    state = model.state()
    if frames is not None:
        frames.append(state.body_q.numpy().copy())
    for i in range(steps):
        s = (i + 1) * SEGMENTS / STEPS             # the target at the step's end, in segments
        k = min(int(s), SEGMENTS - 1)
        c = model.control()
        sk.launch(knot_target, 1, inputs=[knots, k, scalar(s - k)], outputs=[c.joint_target], device=model.device)
        nxt = model.state()
        solver.step(model, state, nxt, c, DT)
        state = nxt
        if frames is not None:
            frames.append(state.body_q.numpy().copy())
    return state


def pole_tip(body_q: np.ndarray) -> np.ndarray:
    """The pole's tip [m] from the body frames (bodies x 7): its frame's point (0, -POLE / 2, 0)."""
    q = np.asarray(body_q, dtype=np.float64)[1]
    x, y, z, w = q[3:]
    u = np.array([x, y, z])
    local = np.array([0.0, -0.5 * POLE, 0.0])
    return q[:3] + local + 2.0 * w * np.cross(u, local) + 2.0 * np.cross(u, np.cross(u, local))


def tip_height(body_q: np.ndarray) -> float:
    """The pole's tip above its pivot (the cart's centre) [m]: -POLE hanging, POLE upright."""
    return float(pole_tip(body_q)[1] - np.asarray(body_q, dtype=np.float64)[0, 1])


def pole_angle(body_q: np.ndarray) -> float:
    """The pole's angle [rad] from hanging straight down, counter-clockwise about z."""
    d = pole_tip(body_q) - np.asarray(body_q, dtype=np.float64)[1, :3]
    return math.atan2(d[0], -d[1])


def forward_loss(model, knots, solver, loss, steps: int = STEPS, frames=None):
    """Roll out ``knots`` (taped) and write the swing-up loss of the final state into ``loss``."""
    final = rollout(model, knots, solver, steps, frames)
    s = model.dtype
    sk.launch(swing_up_loss, 1, inputs=[final.body_q, final.body_qd, s(WEIGHTS[0]), s(WEIGHTS[1])],
              outputs=[loss], device=model.device)
    return final


def evaluate(knots, device: str = "cpu", dtype=sk.float32, steps: int = STEPS, *, gradient: bool = False):
    """The loss of the motion with ``knots`` over ``steps`` steps, with ``gradient`` its gradient
    with respect to the knots (a Tape through every step, else None), and the motion: every step's
    body frames, (steps + 1) x 2 x 7."""
    model = build(device, dtype)
    k = sk.array(np.asarray(knots, dtype=model.np_dtype), dtype=dtype, device=device, requires_grad=True)
    loss = sk.zeros(1, dtype=dtype, device=device, requires_grad=True)
    frames = []
    tape = sk.Tape()
    with tape:
        forward_loss(model, k, sk.RigidBodySolver(), loss, steps, frames)
    if gradient:
        tape.backward(loss)
    return float(loss.numpy()[0]), k.grad.numpy().copy() if gradient else None, np.array(frames)


@dataclasses.dataclass
class Result:
    knots: np.ndarray               # SEGMENTS cart targets [m]
    loss: float                     # the loss of ``knots``
    tip_height: float               # the pole's tip above its pivot at the end [m], from the final state
    angle: float                    # the pole's angle from hanging at the end [rad]
    cart_extent: float              # the cart's largest |x| along the way [m]
    iterations: int
    losses: list                    # per iteration
    heights: list                   # per iteration, the pole's tip above its pivot at the end [m]
    frames: np.ndarray = dataclasses.field(repr=False, default=None)    # the motion, (STEPS + 1) x 2 x 7

    def summary(self) -> str:
        return (f"pole tip {self.tip_height * 100:+.1f} cm above its pivot ({abs(math.degrees(self.angle)):.0f} deg "
                f"from hanging) after {self.iterations} iterations (loss {self.losses[0]:.3f} -> {self.loss:.3f}); "
                f"cart within +-{self.cart_extent:.3f} m (limits +-{TRACK} m); knots "
                f"{np.array2string(self.knots, precision=2)} m")


def optimize(iters: int = 60, plot: str | None = None, device: str = "cpu", progress=None, *, lr: float = 0.05,
             tol: float = 0.02, initial=None) -> Result:
    """Adam on the cart's knots until the loss is under ``tol`` or ``iters`` iterations are done;
    ``plot``: an image of the loss per iteration and of the final motion. The result's tip height,
    angle and cart extent come from a fresh rollout of the returned knots."""
    model = build(device)
    solver = sk.RigidBodySolver()
    if DT > solver.max_time_step(model):
        raise ValueError(f"cartpole: dt = {DT} s is above the stable {solver.max_time_step(model):.2e} s")
    start = initial_knots() if initial is None else np.asarray(initial)
    knots = sk.array(start.astype(np.float32), dtype=float, device=device, requires_grad=True)
    opt = sk.optim.Adam([knots], lr=lr, betas=(0.5, 0.9))
    loss = sk.zeros(1, dtype=float, device=device, requires_grad=True)
    heights = []

    def forward():
        final = forward_loss(model, knots, solver, loss)

        def metric():  # read after the step (on a GPU, forward and backward are one CUDA graph)
            heights.append(tip_height(final.body_q.numpy()))
            return float(loss.numpy()[0])

        return loss, metric

    losses = sk.optim.minimize(forward, opt, iters, tol=tol, progress=progress)
    final = knots.numpy().copy()    # stepped past the last recorded loss unless tol stopped: roll it out
    value, _, frames = evaluate(final, device)
    r = Result(final, value, tip_height(frames[-1]), pole_angle(frames[-1]), float(np.abs(frames[:, 0, 0]).max()),
               len(losses) - 1, losses, heights, frames)
    if plot:
        plot_result(r, plot)
    return r


def plot_result(r: Result, path: str) -> None:
    """The loss per iteration (left) and the cart's position and the pole's angle over time (right)."""
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d) or not os.access(d, os.W_OK):
        raise OSError(f"cannot write '{path}': directory '{d}' does not exist or is not writable")
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    t = np.arange(len(r.frames)) * DT
    angle = np.unwrap([pole_angle(f) for f in r.frames])
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(10, 4), dpi=100)
    try:
        a0.plot(range(len(r.losses)), r.losses)
        a0.set_xlabel("iteration")
        a0.set_ylabel("loss")
        a0.set_title("cartpole: Adam on the cart's targets")
        a0.grid(True, alpha=0.3)
        a1.plot(t, r.frames[:, 0, 0], label="cart x [m]")
        a1.plot(t, angle / math.pi, label="pole angle from hanging [pi rad]")
        knot_t = np.arange(SEGMENTS + 1) * STEPS * DT / SEGMENTS
        a1.plot(knot_t, np.concatenate([[0.0], r.knots]), "o--", label="cart target knots [m]")
        for y in (-TRACK, TRACK):
            a1.axhline(y, color="gray", lw=0.8)         # the track's ends; upright: +-1 pi rad
        a1.set_xlabel("time [s]")
        a1.legend(fontsize=8)
        a1.grid(True, alpha=0.3)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)


def export_usd(path: str, knots, fps: float = 50.0, device: str = "cpu") -> None:
    """The motion with the cart's knots ``knots``: cart and pole as meshes under moving transforms."""
    model = build(device)
    frames = evaluate(knots, device)[2]
    with sk.io.UsdExporter(path, fps=fps) as usd:
        usd.render_points("track_ends", np.array([[-TRACK, 0.0, 0.0], [TRACK, 0.0, 0.0]]), radius=0.02)
        usd.render_body_motion(model, frames, DT)


def export_result(path: str, result, device: str = "cpu") -> None:
    """``simkit optimize cartpole --usd PATH``: the optimized motion as a USD stage."""
    export_usd(path, result.knots, device=device)


def main(argv=None):
    return optimization_main(__doc__, optimize, export_result, iters=60, argv=argv)


if __name__ == "__main__":
    main()
