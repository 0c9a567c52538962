"""A spring-mass soft body that learns to walk: gradient descent on its spring actuation.

    simkit optimize soft_body_walker --iters 30 --plot walker.png
    python scenes/soft_body_walker.py --iters 30 --plot walker.png --usd walker.usda

The body is a lattice of particles joined by springs (a 0.4 m x 0.1 m block on two legs, in the
x-y plane), on a ground with friction, simulated with semi-implicit Euler. Every spring is a muscle:
at time t its activation (``Control.spring_activation``, rest length scaled by 1 + activation) is

    a_s(t) = AMPLITUDE * tanh(sum_k W[s, k] sin(omega t + 2 pi k / K) + b[s])

an open-loop gait from K phase-shifted sines. The loss is minus the forward (+x) displacement of the
centre of mass after ``STEPS`` steps; a ``Tape`` through the whole rollout gives its gradient with
respect to W and b, and Adam updates them.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

import simkit as sk
from simkit.cli import optimization_main

SPACING = 0.05           # [m], lattice spacing
RADIUS = 0.02            # [m], particle collision radius
MASS = 0.05              # [kg] per particle
SPRING_KE = 300.0        # [N/m]
SPRING_KD = 1.0          # [N s/m]
AMPLITUDE = 0.25         # largest activation (+-25% of the rest length)
FREQUENCY = 2.0          # [Hz] of the gait
PHASES = 4               # K
DT = 2.0e-3              # [s]
STEPS = 400              # 0.8 s
# Soft ground contact [N/m]: stiff penalty contacts at this step size make the displacement a
# sawtooth function of the gait parameters (the contact response depends on where a contact starts
# within a step) and the gradient stops pointing uphill. Friction damping kf stays below 2 m / dt.
GROUND_KE = 200.0


def lattice() -> list:
    """Particle positions: a 9 x 3 block on two legs of 2 x 2 particles under its ends."""
    pts = [(i, j + 2) for j in range(3) for i in range(9)]
    pts += [(i, j) for j in range(2) for i in (0, 1, 7, 8)]
    return [(i * SPACING, j * SPACING + RADIUS) for i, j in pts]


def build(device: str = "cpu"):
    """The walker model: particles, springs between lattice neighbours (incl. diagonals), ground."""
    b = sk.ModelBuilder()
    pts = lattice()
    for x, y in pts:
        b.add_particle((x, y, 0.0), (0.0, 0.0, 0.0), mass=MASS, radius=RADIUS)
    for i in range(len(pts)):
        for j in range(i + 1, len(pts)):
            if math.dist(pts[i], pts[j]) < SPACING * 1.5:
                b.add_spring(i, j, SPRING_KE, SPRING_KD)
    b.add_ground_plane(ke=GROUND_KE, kd=2.0, kf=10.0, mu=1.0)
    b.particle_contact = False
    return b.finalize(device=device, requires_grad=True)


@sk.kernel
def gait(weights: sk.array(dtype=float, ndim=2), bias: sk.array(dtype=float), t: float, omega: float,
         amplitude: float, act: sk.array(dtype=float)):
    s = sk.tid()
    a = bias[s]
    k_count = weights.shape[1]
    for k in range(k_count):
        a += weights[s, k] * sk.sin(omega * t + 6.2831853 * float(k) / float(k_count))
    act[s] = amplitude * sk.tanh(a)


@sk.kernel
def mean_x(q: sk.array(dtype=sk.vec3), scale: float, out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, 0, q[i][0] * scale)


def rollout(model, weights, bias, steps: int = STEPS, record: list | None = None):
    """Simulate ``steps`` steps under the gait; returns the final state. Every step gets its own
    state and activation array, so a Tape differentiates the whole rollout. ``record``: a list that
    receives the positions every 10 steps."""
    solver = sk.SemiImplicitEulerSolver()
    state = model.state()
    omega = 2.0 * math.pi * FREQUENCY
    for k in range(steps):
        act = sk.zeros(model.spring_count, dtype=float, device=model.device, requires_grad=True)
        sk.launch(gait, model.spring_count, inputs=[weights, bias, k * DT, omega, AMPLITUDE], outputs=[act],
                  device=model.device)
        nxt = model.state()
        solver.step(model, state, nxt, sk.Control(act), DT)
        state = nxt
        if record is not None and k % 10 == 0:
            record.append(state.particle_q.numpy().copy())
    return state


@dataclasses.dataclass
class Result:
    displacement_before: float     # forward displacement of the centre of mass, initial gait [m]
    displacement_after: float      # ... of the best gait the optimization reached [m]
    displacements: list            # per iteration [m]
    weights: np.ndarray            # the best gait
    bias: np.ndarray

    def summary(self) -> str:
        best = int(np.argmax(self.displacements))
        return (f"forward displacement in {STEPS * DT:.1f} s: {self.displacement_before * 100:.1f} cm before, "
                f"{self.displacement_after * 100:.1f} cm at best (iteration {best} of {len(self.displacements) - 1})")


def optimize(iters: int = 30, plot: str | None = None, device: str = "cpu", progress=None, *, lr: float = 0.1,
             seed: int = 0, steps: int = STEPS) -> Result:
    """Adam on the gait parameters for ``iters`` iterations; ``plot``: an image of the forward
    displacement per iteration. Returns a ``Result`` with the displacement before and the best gait's.

    Contact makes the rollout chaotic: an Adam step may lose ground, so the last iterate is often not the
    best. The best gait evaluated is kept (what ``--usd`` writes)."""
    model = build(device)
    rng = np.random.default_rng(seed)
    weights = sk.array(rng.normal(0.0, 0.3, (model.spring_count, PHASES)), dtype=float, device=device,
                       requires_grad=True)
    bias = sk.zeros(model.spring_count, dtype=float, device=device, requires_grad=True)
    opt = sk.optim.Adam([weights, bias], lr=lr)
    x0 = float(model.particle_q.numpy()[:, 0].mean())
    loss = sk.zeros(1, dtype=float, device=device, requires_grad=True)

    best = [-math.inf, None, None]  # displacement, weights, bias

    def measure() -> float:  # (called after each evaluation, before the step: the gait just measured)
        d = -float(loss.numpy()[0]) - x0
        if d > best[0]:
            best[:] = [d, weights.numpy().copy(), bias.numpy().copy()]
        return d

    def forward():
        loss.zero_()
        final = rollout(model, weights, bias, steps)
        sk.launch(mean_x, model.particle_count, inputs=[final.particle_q, -1.0 / model.particle_count],
                  outputs=[loss], device=device)
        return loss, measure   # (read after the step: on a GPU, a CUDA graph)

    # iters steps, and the last evaluation only measures
    displacements = sk.optim.minimize(forward, opt, iters, progress=progress, measure_final=True)
    if plot:
        sk.io.plot_curves({"forward displacement [m]": displacements}, plot, title="soft-body walker: Adam on the gait",
                          xlabel="iteration", ylabel="displacement [m]")
    return Result(displacements[0], best[0], displacements, best[1], best[2])


def _walk(weights, bias, device: str, steps: int = STEPS, record: list | None = None):
    """(model, final state) of a rollout under a gait given as host arrays, without gradients."""
    model = build(device)
    model.requires_grad = False
    final = rollout(model, sk.array(weights, dtype=float, device=device), sk.array(bias, dtype=float, device=device),
                    steps, record=record)
    return model, final


def displacement(weights, bias, device: str = "cpu", steps: int = STEPS) -> float:
    """Forward displacement of the centre of mass under a gait (no gradients) [m]."""
    model, final = _walk(weights, bias, device, steps)
    return float(final.particle_q.numpy()[:, 0].mean()) - float(model.particle_q.numpy()[:, 0].mean())


def export_usd(path: str, weights, bias, device: str = "cpu") -> None:
    """The walk under the given gait, one frame every 10 steps."""
    frames: list = []
    _walk(weights, bias, device, record=frames)
    with sk.io.UsdExporter(path, fps=1.0 / (10 * DT)) as usd:
        for q in frames:
            usd.begin_frame()
            usd.render_points("walker", q, radius=RADIUS)
            usd.end_frame()


def export_result(path: str, result, device: str = "cpu") -> None:
    """``simkit optimize soft_body_walker --usd PATH``: the optimized motion as a USD stage."""
    export_usd(path, result.weights, result.bias, device=device)


def main(argv=None):
    return optimization_main(__doc__, optimize, export_result, iters=30, argv=argv)


if __name__ == "__main__":
    main()
