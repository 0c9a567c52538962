"""``Model``: the arrays that describe a simulation and do not change while it runs (built by
``ModelBuilder.finalize``).

Example::

    builder = sk.ModelBuilder()
    builder.add_particle((0.0, 1.0, 0.0), (0.0, 0.0, 0.0), mass=1.0)
    builder.add_ground_plane()
    model = builder.finalize(device="cpu")
    state = model.state()                  # particle_q, particle_qd, particle_f
    print(model.particle_mass.numpy())     # [1.]

Vectors are ``vec_type``: vec3, or vec3d for ``finalize(dtype=sk.float64)``; scalars are ``dtype``.
Scalar contact parameters are plain Python attributes: change them on the model at any time.
"""
from __future__ import annotations

import numpy as np

from ..kernels import types as T
from ..runtime import copy, empty, zeros
from ..runtime.tape import paused
from .state import Control, State


class Model:
    """Static description of a particle / cloth simulation.

    Particles (``particle_count``):
        particle_q: initial particle positions [m], shape [particle_count], vec3.
        particle_qd: initial particle velocities [m/s], shape [particle_count], vec3.
        particle_mass: particle masses [kg], shape [particle_count], float (0: kinematic particle).
        particle_inv_mass: inverse masses [1/kg], shape [particle_count], float (0 for kinematic
            particles: gravity, forces and constraints do not move them; they keep their velocity).
        particle_radius: collision radii [m], shape [particle_count], float.
        particle_max_radius: the largest radius [m] (Python float).
        particle_grid: a ``HashGrid`` of the model's precision for particle-particle contact; the
            solvers rebuild it from the current positions every step.

    Springs (``spring_count``):
        spring_indices: the two particles of each spring, shape [spring_count * 2], int32.
        spring_rest_length: rest lengths [m], shape [spring_count], float.
        spring_stiffness: stiffnesses [N/m], shape [spring_count], float.
        spring_damping: damping along the spring [N s/m], shape [spring_count], float.
        spring_control: default activations [dimensionless], shape [spring_count], float (copied
            into ``Control.spring_activation`` by ``control()``).

    Triangles (``tri_count``), an elastic membrane (stable Neo-Hookean, as in Warp's cloth):
        tri_indices: the three particles of each triangle, shape [tri_count, 3], int32.
        tri_poses: inverse rest-shape matrices [1/m], shape [tri_count], mat22 (the rest edges
            x1 - x0, x2 - x0 in the triangle's own 2D frame, as columns, inverted).
        tri_areas: rest areas [m^2], shape [tri_count], float.
        tri_materials: (ke, ka, kd) per triangle, shape [tri_count, 3], float: stretch/shear
            stiffness mu [N/m], area stiffness lambda [N/m] and strain-rate damping [N s/m] of the
            energy A0 (mu/2 (|F|^2 - 2) + lambda/2 (J - 1 - mu/lambda)^2); for small strains
            this is linear elasticity with Lame parameters mu and lambda - mu.

    Static collision shapes (``shape_count``; triangle meshes, baked into world space):
        shape_transform: placement of each shape (position [m], rotation quaternion x, y, z, w),
            shape [shape_count], transform.
        shape_scale: scale of each shape [dimensionless], shape [shape_count], vec3.
        shape_mesh: the ``Mesh`` of each shape (world-space points [m]; a Python list).
        shape_mesh_id: the ``Mesh.id`` of each shape, shape [shape_count], uint64.
        shape_ke, shape_kd, shape_kf, shape_mu: contact stiffness [N/m], normal damping [N s/m],
            friction damping [N s/m] and friction coefficient [dimensionless] per shape, shape
            [shape_count], float.

    Ground plane (when ``ground``): the plane ``dot(x, up_vector) = ground_height`` [m], with
    ``ground_ke`` [N/m], ``ground_kd`` [N s/m], ``ground_kf`` [N s/m] and ``ground_mu``.

    Rigid bodies (``body_count``; ``ModelBuilder.add_body``), positions of their frames and
    velocities of their centres of mass in world coordinates:
        body_q: initial body frames (position [m], rotation x, y, z, w), shape [body_count], transform.
        body_qd: initial velocities (angular [rad/s], linear [m/s] of the centre of mass), shape
            [body_count], spatial_vector.
        body_mass, body_inv_mass: [kg], [1/kg] (0 for kinematic bodies), shape [body_count], float.
        body_com: centre of mass in the body frame [m], shape [body_count], vec3.
        body_inertia, body_inv_inertia: about the centre of mass, in the body frame [kg m^2],
            shape [body_count], mat33.

    Rigid shapes (``rigid_shape_count``) and the pairs that may touch (``rigid_pair_count``):
        rigid_shape_body: the body of each shape (-1: static, in world coordinates), int32.
        rigid_shape_type: 0 sphere, 1 box, 2 capsule, int32.
        rigid_shape_xform: placement in the body frame, transform.
        rigid_shape_size: (radius, 0, 0), half extents, or (radius, half height, 0) [m], vec3.
        rigid_shape_material: (ke [N/m], kd [N s/m], kf [N s/m], mu) per shape, vec4.
        rigid_shape_restitution: the coefficient of restitution per shape (``XPBDSolver``; a pair
            uses the mean of its two), scalar.
        rigid_pairs: the two shapes of each pair (a box first), shape [2 * rigid_pair_count], int32;
            ``rigid_pair_candidates``: the most contact points any pair tests.

    Joints (``joint_count``; ``ModelBuilder.add_joint_*``): joint_type (0 ball, 1 revolute, 2
        fixed, 3 prismatic), joint_parent (-1: the world), joint_child, int32; joint_anchor_parent /
        joint_anchor_child [m] and joint_axis_parent / joint_axis_child (unit) in each body's frame,
        vec3; joint_rest_rotation (child relative to parent at rest), quat; joint_ke [N/m],
        joint_kd [N s/m], joint_angular_ke [N m/rad], joint_angular_kd [N m s/rad],
        joint_target_ke [N m/rad; prismatic N/m], joint_target_kd [N m s/rad; N s/m],
        joint_limit_lower / joint_limit_upper (the coordinate's bounds [rad; prismatic m], -inf /
        inf: unlimited), joint_limit_ke [N m/rad; N/m], joint_limit_kd [N m s/rad; N s/m], each
        shape [joint_count], float (differentiable).

    Scalars: ``gravity`` (3 floats) [m/s^2]; ``up_vector``; ``particle_ke`` [N/m],
    ``particle_kd`` [N s/m], ``particle_kf`` [N s/m], ``particle_mu``, ``particle_cohesion`` [m]
    (particle-particle contact; ``particle_contact`` switches it); ``soft_contact_margin`` [m]
    (distance beyond the radius at which particle-shape contacts are looked for);
    ``particle_damping`` [1/s] (velocity damping); ``particle_max_velocity`` [m/s].
    """

    def __init__(self, device, dtype=T.float32, requires_grad: bool = False):
        self.device = device
        self.dtype = dtype
        self.vec_type = T.vec3 if dtype is T.float32 else T.vec3d
        self.mat22_type = T.mat22 if dtype is T.float32 else T.mat22d
        self.np_dtype = np.float32 if dtype is T.float32 else np.float64
        self.requires_grad = requires_grad
        self.up_vector = (0.0, 1.0, 0.0)
        self.gravity = (0.0, -9.81, 0.0)

        self.particle_count = 0
        self.particle_q = self.particle_qd = self.particle_mass = self.particle_inv_mass = None
        self.particle_radius = None
        self.particle_max_radius = 0.0
        self.particle_grid = None
        self.particle_contact = True
        self.particle_ke, self.particle_kd, self.particle_kf, self.particle_mu = 1.0e3, 1.0e2, 1.0e2, 0.5
        self.particle_cohesion = 0.0
        self.particle_damping = 0.0
        self.particle_max_velocity = 1.0e5

        self.spring_count = 0
        self.spring_indices = self.spring_rest_length = self.spring_stiffness = None
        self.spring_damping = self.spring_control = None

        self.tri_count = 0
        self.tri_indices = self.tri_poses = self.tri_areas = self.tri_materials = None

        self.shape_count = 0
        self.shape_transform = self.shape_scale = self.shape_mesh_id = None
        self.shape_mesh: list = []
        self.shape_ke = self.shape_kd = self.shape_kf = self.shape_mu = None
        self.soft_contact_margin = 0.0

        self.body_count = 0
        self.body_q = self.body_qd = self.body_mass = self.body_inv_mass = self.body_com = None
        self.body_inertia = self.body_inv_inertia = None
        self.body_angular_damping = 0.0
        self.body_filter = None        # int32 per body: a body joined to it (its shapes do not collide), or -1
        self.rigid_shape_count = self.rigid_pair_count = self.rigid_pair_candidates = 0
        self.rigid_shape_body = self.rigid_shape_type = self.rigid_shape_xform = self.rigid_shape_size = None
        self.rigid_shape_material = self.rigid_shape_restitution = self.rigid_pairs = None

        self.joint_count = 0
        self.joint_type = self.joint_parent = self.joint_child = None
        self.joint_anchor_parent = self.joint_anchor_child = self.joint_axis_parent = self.joint_axis_child = None
        self.joint_rest_rotation = self.joint_ke = self.joint_kd = self.joint_angular_ke = None
        self.joint_angular_kd = self.joint_target_ke = self.joint_target_kd = None
        self.joint_limit_lower = self.joint_limit_upper = self.joint_limit_ke = self.joint_limit_kd = None

        self.ground = False
        self.ground_height = 0.0
        self.ground_ke, self.ground_kd, self.ground_kf, self.ground_mu = 1.0e3, 10.0, 1.0e3, 0.5

    # ------------------------------------------------------------------ per-simulation objects

    def state(self, requires_grad: bool | None = None) -> State:
        """A new ``State`` holding copies of the initial positions and velocities, zero forces.

        ``requires_grad`` defaults to the model's (``finalize(requires_grad=...)``).
        """
        rg = self.requires_grad if requires_grad is None else bool(requires_grad)
        n = self.particle_count
        state = State(_copy(self.particle_q, rg), _copy(self.particle_qd, rg),
                      zeros(n, dtype=self.vec_type, device=self.device, requires_grad=rg))
        if self.body_count:
            state.body_q, state.body_qd = _copy(self.body_q, rg), _copy(self.body_qd, rg)
            state.body_f = zeros(self.body_count, dtype=self.body_qd.dtype, device=self.device, requires_grad=rg)
        return state

    def control(self, requires_grad: bool | None = None) -> Control:
        """A new ``Control`` whose spring activations start at ``spring_control`` and joint targets at 0."""
        rg = self.requires_grad if requires_grad is None else bool(requires_grad)
        act = _copy(self.spring_control, rg)
        target = zeros(self.joint_count, dtype=self.dtype, device=self.device, requires_grad=rg)
        return Control(act, target)

    # ------------------------------------------------------------------ helpers for solvers

    def scalar(self, value) -> np.generic:
        """``value`` as a NumPy scalar of the model's precision (for kernel arguments)."""
        return self.np_dtype(value)

    def vector(self, value) -> object:
        """``value`` (3 numbers) as a vector of the model's ``vec_type`` (for kernel arguments)."""
        return self.vec_type(*(float(c) for c in value))

    def __repr__(self):
        return (f"Model(particles={self.particle_count}, springs={self.spring_count}, triangles={self.tri_count}, "
                f"shapes={self.shape_count}, bodies={self.body_count}, ground={self.ground}, dtype={T.type_name(self.dtype)}, "
                f"device={getattr(self.device, 'alias', self.device)})")


def _copy(a, requires_grad: bool):
    """A new array of ``a``'s values, copied on its device (no round trip through the host, so a CUDA
    graph capture can make states too) and not recorded on a Tape (a state starts from the model)."""
    out = empty(a.shape, dtype=a.dtype, device=a.device, requires_grad=requires_grad)
    with paused():
        copy(out, a)
    return out
