"""``State`` (what changes every step) and ``Control`` (what drives the model), made by a ``Model``.

Example::

    state_0, state_1 = model.state(), model.state()
    control = model.control()
    control.spring_activation.assign(np.full(model.spring_count, 0.1))   # stretch every spring by 10%
    solver.step(model, state_0, state_1, control, dt=1.0e-3)
"""
from __future__ import annotations

from ..runtime import array


class State:
    """Time-varying quantities of a model. Vectors are the model's ``vec_type`` (vec3, or vec3d for a
    float64 model).

    Attributes:
        particle_q: particle positions [m], shape [particle_count], vec3.
        particle_qd: particle velocities [m/s], shape [particle_count], vec3.
        particle_f: external forces on particles [N], shape [particle_count], vec3. Solvers read it
            (added to gravity and internal forces) and never write it; ``clear_forces()`` zeroes it.
        body_q: rigid body frames (position [m], rotation), shape [body_count], transform (None
            without bodies).
        body_qd: rigid body velocities (angular [rad/s], linear of the centre of mass [m/s]), world
            coordinates, shape [body_count], spatial_vector.
        body_f: external wrenches on bodies (torque about the centre of mass [N m], force [N]),
            shape [body_count], spatial_vector; read like ``particle_f``.
        contact_impulses, contact_ids: what the solver that made this state keeps for the next step
            (``XPBDSolver``: each rigid contact slot's impulses, its warm start, and the shape pairs
            the slots belonged to); None for a new state.
    """

    def __init__(self, particle_q: array, particle_qd: array, particle_f: array, body_q: array | None = None,
                 body_qd: array | None = None, body_f: array | None = None):
        self.particle_q = particle_q
        self.particle_qd = particle_qd
        self.particle_f = particle_f
        self.body_q, self.body_qd, self.body_f = body_q, body_qd, body_f
        self.contact_impulses = self.contact_ids = None

    @property
    def particle_count(self) -> int:
        return self.particle_q.shape[0]

    @property
    def requires_grad(self) -> bool:
        """True when the positions carry gradients (solvers then allocate fresh scratch arrays per step)."""
        return self.particle_q.requires_grad or (self.body_q is not None and self.body_q.requires_grad)

    def clear_forces(self) -> None:
        """Zero the external forces ``particle_f``."""
        if self.particle_count:
            self.particle_f.zero_()
        if self.body_f is not None:
            self.body_f.zero_()

    def __repr__(self):
        return f"State(particles={self.particle_count}, requires_grad={self.requires_grad})"


class Control:
    """Actuation inputs of a model, read by solvers each step.

    Attributes:
        spring_activation: spring activations [dimensionless], shape [spring_count], float: a spring's
            rest length is ``spring_rest_length * (1 + activation)`` (0 is passive, -0.1 contracts it by
            10%). Differentiable: make it ``requires_grad`` to optimise actuation.
        joint_target: targets of the joints' drives: revolute angles [rad], prismatic slides [m] (0: the initial pose),
            shape [joint_count], float (other joints ignore theirs). Differentiable.
    """

    def __init__(self, spring_activation: array, joint_target: array | None = None):
        self.spring_activation = spring_activation
        self.joint_target = joint_target

    def __repr__(self):
        joints = 0 if self.joint_target is None else self.joint_target.shape[0]
        return f"Control(springs={self.spring_activation.shape[0]}, joints={joints})"
