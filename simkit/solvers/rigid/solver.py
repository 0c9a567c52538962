"""``RigidBodySolver``: rigid bodies (spheres, boxes, capsules) with penalty contacts, semi-implicit Euler.

Example::

    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.5, 0.0), ang_vel=(0.0, 0.0, 3.0))
    b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1)
    b.add_ground_plane()
    model = b.finalize(device="cpu")
    solver = sk.RigidBodySolver()
    s0, s1 = model.state(), model.state()
    for _ in range(1000):
        solver.step(model, s0, s1, None, 1.0e-3)
        s0, s1 = s1, s0
    print(s0.body_q.numpy())     # the box at rest on the ground

Per step: contact wrenches of every shape pair that may touch (``model.rigid_pairs``: shapes of
different bodies, or a body's and a static one) and of every body shape against the ground plane
(``collision/rigid_contacts.py``; penalty forces ``contact_force``: normal stiffness ``ke``,
damping ``kd`` while approaching, friction ``min(kf |v_t|, mu f_n)``, the shapes' materials, a
pair using the mean of its two), then semi-implicit Euler with an explicit gyroscopic term.
Explicit: ``dt`` must resolve the stiffest contact, ``dt < ~0.3 sqrt(m / ke)`` for the lightest
body (``max_time_step``). Differentiable through the Tape (every step writes new arrays when
gradients are wanted). The pair list is all pairs (O(shapes^2)): for scenes of up to a few
hundred shapes.
"""
from __future__ import annotations

import math

import numpy as np

from ...kernels import types as T
from ...model import Control, Model, State
from ...runtime import launch
from ..solver import Solver
from .kernels import eval_rigid_ground_contacts, eval_rigid_pair_contacts, integrate_bodies


class RigidBodySolver(Solver):
    """Steps the model's rigid bodies (``model.body_*``); its particles, if any, are an error."""

    def max_time_step(self, model: Model) -> float:
        """``0.3 sqrt(m / ke)`` and ``0.3 m / kd`` [s] for the lightest body and the stiffest
        material: a stable explicit step for contacts at one point."""
        mass = model.body_mass.numpy() if model.body_count else np.zeros(0)
        mass = mass[mass > 0.0]
        mat = model.rigid_shape_material.numpy() if model.rigid_shape_count else np.zeros((0, 4))
        if not mass.size or not mat.size:
            return math.inf
        m, ke, kd = float(mass.min()), float(mat[:, 0].max()), float(mat[:, 1].max())
        return min(0.3 * math.sqrt(m / ke) if ke > 0 else math.inf, 0.3 * m / kd if kd > 0 else math.inf)

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        n = model.body_count
        if model.particle_count:
            raise ValueError(f"RigidBodySolver steps rigid bodies only; the model has {model.particle_count} "
                             f"particles (step them with SemiImplicitEulerSolver, XPBDSolver or SPHSolver)")
        if n == 0:
            return
        if state_in.body_q is None or state_out.body_q is None:
            raise ValueError("RigidBodySolver: the states have no bodies; make them with model.state()")
        s, dev = model.scalar, model.device
        fresh = self.differentiable(model, state_in)
        wrench_t = T.spatial_vector if model.dtype is T.float32 else T.spatial_vectord
        f = self.scratch(model, "body_f", n, wrench_t, fresh=fresh)
        shape_args = [state_in.body_q, state_in.body_qd, model.body_com, model.rigid_shape_body,
                      model.rigid_shape_type, model.rigid_shape_xform, model.rigid_shape_size,
                      model.rigid_shape_material]
        if model.rigid_pair_count:
            launch(eval_rigid_pair_contacts, (model.rigid_pair_count, model.rigid_pair_candidates), device=dev,
                   inputs=shape_args + [model.rigid_pairs], outputs=[f])
        if model.ground and model.rigid_shape_count:
            launch(eval_rigid_ground_contacts, (model.rigid_shape_count, 8), device=dev,
                   inputs=shape_args + [model.vector(model.up_vector), s(model.ground_height)], outputs=[f])
        f_ext = state_in.body_f
        if f_ext is None:
            f_ext = self.scratch(model, "body_f_ext", n, wrench_t, fresh=False)
        launch(integrate_bodies, n, device=dev,
               inputs=[state_in.body_q, state_in.body_qd, f_ext, f, model.body_com, model.body_inv_mass,
                       model.body_inertia, model.body_inv_inertia, model.vector(model.gravity),
                       s(model.body_angular_damping), s(dt)],
               outputs=[state_out.body_q, state_out.body_qd])
