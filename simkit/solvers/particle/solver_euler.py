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

from ...model import Control, Model, State
from ...runtime import launch
from ..solver import Solver
from .kernels_contact import eval_ground_contacts, eval_mesh_contacts, eval_particle_contacts
from .kernels_forces import eval_springs, eval_triangles, integrate_particles
from ..rigid.solver import begin_body_step, end_body_step, launch_particle_body_contacts


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

    def step(self, model: Model, state_in: State, state_out: State, control: Control | None, dt: float) -> None:
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
            self.rebuild_on_backward(grid, q, width)
        launch_shape_contacts(model, q, qd, f)
        if fb is not None:
            launch_particle_body_contacts(model, state_in, q, qd, f, fb)
        launch(integrate_particles, n, device=dev,
               inputs=[q, qd, state_in.particle_f, f, model.particle_inv_mass, model.vector(model.gravity),
                       s(model.particle_damping), s(model.particle_max_velocity), s(dt)],
               outputs=[state_out.particle_q, state_out.particle_qd])
        if fb is not None:
            end_body_step(model, state_in, state_out, fb, dt)
