"""``SemiImplicitEulerSolver``: explicit forces, then v += a dt, x += v dt.

Example::

    solver = sk.SemiImplicitEulerSolver()
    for _ in range(steps):
        solver.step(model, state_0, state_1, control, dt=1.0e-3)
        state_0, state_1 = state_1, state_0

Stable while ``dt`` is below about ``2 / sqrt(k / m)`` for the stiffest spring, triangle or
contact stiffness ``k`` [N/m] on a particle of mass ``m`` [kg]. Differentiable through the Tape:
with ``finalize(requires_grad=True)`` (or states with gradients) every step allocates its own
force array, so give each step its own ``state_out``.
"""
from __future__ import annotations

import numpy as np

from ...model import Control, Model, State
from ...runtime import launch
from ..solver import Solver
from .kernels_contact import eval_ground_contacts, eval_mesh_contacts, eval_particle_contacts
from .kernels_forces import eval_springs, eval_triangles, integrate_particles
from ..rigid.solver import begin_body_step, body_time_step, end_body_step, launch_particle_body_contacts


def launch_shape_contacts(model: Model, q, qd, f, *, ground: bool = True) -> None:
    """Add the penalty forces of the static meshes and (when ``ground``) the ground plane on
    particles (``q``, ``qd``) to ``f``."""
    s, dev = model.scalar, model.device
    n = model.particle_count
    if ground and model.ground:
        launch(eval_ground_contacts, n, device=dev,
               inputs=[q, qd, model.particle_radius, model.particle_inv_mass, model.vector(model.up_vector),
                       s(model.ground_height), s(model.ground_ke), s(model.ground_kd), s(model.ground_kf),
                       s(model.ground_mu)],
               outputs=[f])
    if model.shape_count:
        launch(eval_mesh_contacts, (n, model.shape_count), device=dev,
               inputs=[q, qd, model.particle_radius, model.particle_inv_mass, model.shape_mesh_id,
                       model.shape_ke, model.shape_kd, model.shape_kf, model.shape_mu,
                       s(model.soft_contact_margin)],
               outputs=[f])


class SemiImplicitEulerSolver(Solver):
    """Springs, membrane triangles, gravity, velocity damping, and penalty contacts with the
    ground, other particles (through ``model.particle_grid``, rebuilt every step) and static meshes.
    The model's rigid bodies, if any, are stepped alongside (as ``RigidBodySolver`` does), with
    penalty contacts between particles and rigid shapes acting on both."""

    def max_time_step(self, model: Model) -> float:
        """A stable explicit ``dt`` [s]: per particle ``0.3 sqrt(m / k)`` and ``0.3 m / c``, with ``k``
        the sum of the stiffnesses acting on it (its springs, its triangles' ``ke + ka``, the
        strongest contact: particles, ground, meshes) and ``c`` of the dampings (spring and triangle
        ``kd``, a contact's ``kd`` plus its viscous friction ``kf``, which flips the sliding direction
        every step when ``kf dt / m`` passes 1); the rigid bodies' bound too."""
        bound = body_time_step(model)
        n = model.particle_count
        if n == 0:
            return bound
        mass = model.particle_mass.numpy().astype(np.float64)
        k, c = np.zeros(n), np.zeros(n)
        if model.spring_count:
            ij = model.spring_indices.numpy().reshape(-1, 2)
            for col in (0, 1):
                np.add.at(k, ij[:, col], model.spring_stiffness.numpy())
                np.add.at(c, ij[:, col], model.spring_damping.numpy())
        if model.tri_count:
            tri, mat = model.tri_indices.numpy(), model.tri_materials.numpy()
            for col in range(3):
                np.add.at(k, tri[:, col], mat[:, 0] + mat[:, 1])
                np.add.at(c, tri[:, col], mat[:, 2])
        contacts = []
        if self.particle_contact_enabled(model):
            contacts.append((model.particle_ke, model.particle_kd + model.particle_kf))
        if model.ground:
            contacts.append((model.ground_ke, model.ground_kd + model.ground_kf))
        if model.shape_count:
            contacts.append((model.shape_ke.numpy().max(), (model.shape_kd.numpy() + model.shape_kf.numpy()).max()))
        if model.rigid_shape_count:
            mat = model.rigid_shape_material.numpy()
            contacts.append((mat[:, 0].max(), (mat[:, 1] + mat[:, 2]).max()))
        k += max((kc for kc, _ in contacts), default=0.0)
        c += max((cc for _, cc in contacts), default=0.0)
        dyn = mass > 0.0
        with np.errstate(divide="ignore"):
            stiff, damped = dyn & (k > 0), dyn & (c > 0)
            bounds = [0.3 * np.sqrt(mass[stiff] / k[stiff]), 0.3 * mass[damped] / c[damped]]
        return float(min([bound] + [b.min() for b in bounds if b.size]))

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
        self.declare_once(model, lambda: self.step(model, state_in, state_out, control, dt))  # (solver.py)
        n = model.particle_count
        fb = begin_body_step(self, model, state_in, control)   # rigid bodies, if any: stepped alongside
        if n == 0:
            if fb is not None:
                end_body_step(model, state_in, state_out, fb, dt)
            return
        s, dev = model.scalar, model.device
        fresh = self.differentiable(model, state_in)
        control = self.default_control(model, control)
        q, qd = state_in.particle_q, state_in.particle_qd
        f = self.scratch(model, "f", n, model.vec_type, fresh=fresh)  # internal and contact forces [N]

        if model.spring_count:
            launch(eval_springs, model.spring_count, device=dev,
                   inputs=[q, qd, model.spring_indices, model.spring_rest_length, model.spring_stiffness,
                           model.spring_damping, control.spring_activation],
                   outputs=[f])
        if model.tri_count:
            launch(eval_triangles, model.tri_count, device=dev,
                   inputs=[q, qd, model.tri_indices, model.tri_poses, model.tri_areas, model.tri_materials],
                   outputs=[f])
        if self.particle_contact_enabled(model):
            width = 2.0 * model.particle_max_radius + model.particle_cohesion
            grid = self.build_particle_grid(model, q, width)
            launch(eval_particle_contacts, n, device=dev,
                   inputs=[grid.id, q, qd, model.particle_radius, model.particle_inv_mass,
                           s(model.particle_max_radius), s(model.particle_ke), s(model.particle_kd),
                           s(model.particle_kf), s(model.particle_mu), s(model.particle_cohesion)],
                   outputs=[f])
        launch_shape_contacts(model, q, qd, f)
        if fb is not None:
            launch_particle_body_contacts(model, state_in, q, qd, f, fb)
        launch(integrate_particles, n, device=dev,
               inputs=[q, qd, state_in.particle_f, f, model.particle_inv_mass, model.vector(model.gravity),
                       s(model.particle_damping), s(model.particle_max_velocity), s(dt)],
               outputs=[state_out.particle_q, state_out.particle_qd])
        if fb is not None:
            end_body_step(model, state_in, state_out, fb, dt)
