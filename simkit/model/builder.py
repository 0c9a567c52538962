"""``ModelBuilder``: add particles, springs, cloth, static mesh colliders and a ground plane in
Python, then ``finalize()`` them into a ``Model`` of arrays (SI units throughout).

Example::

    import simkit as sk

    builder = sk.ModelBuilder()                                  # y up, gravity -9.81 m/s^2
    builder.add_cloth_grid(pos=(0.0, 1.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), vel=(0.0, 0.0, 0.0),
                           dim_x=16, dim_y=16, cell_x=0.05, cell_y=0.05, mass=0.01, fix_left=True)
    builder.add_ground_plane(height=0.0)
    model = builder.finalize(device="cpu")
    state_0, state_1 = model.state(), model.state()
    solver = sk.XPBDSolver(iterations=10)
    solver.step(model, state_0, state_1, None, dt=1.0 / 60.0)

Quaternions are (x, y, z, w), as everywhere in simkit. A mass of 0 makes a particle kinematic.
"""
from __future__ import annotations

import math

import numpy as np

from ..collision import HashGrid, Mesh
from ..kernels import types as T
from ..runtime import array
from ..runtime.device import get_device
from .builder_joints import JointBuilderMixin
from .builder_rigid import RigidBuilderMixin
from .model import Model

_AXES = {"x": 0, "y": 1, "z": 2}


def quat_to_matrix(q) -> np.ndarray:
    """3x3 rotation matrix of the quaternion ``q`` = (x, y, z, w) (normalised first)."""
    x, y, z, w = (float(c) for c in q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if n == 0.0:
        raise ValueError("rotation quaternion is zero")
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _vec3(v, name) -> tuple:
    a = np.asarray(v, dtype=np.float64).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be 3 finite numbers, got {v!r}")
    return tuple(float(c) for c in a)


def _quat(q, name="rot") -> tuple:
    a = np.asarray(q, dtype=np.float64).reshape(-1)
    if a.shape != (4,) or not np.all(np.isfinite(a)) or not a.any():
        raise ValueError(f"{name} must be a non-zero quaternion (x, y, z, w), got {q!r}")
    return tuple(float(c) for c in a / np.linalg.norm(a))


def _nonneg(value, name) -> float:
    value = float(value)
    if not (value >= 0.0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return value


class ModelBuilder(RigidBuilderMixin, JointBuilderMixin):
    """Collects a model in Python lists; ``finalize()`` turns it into a ``Model``. Rigid bodies and
    their shapes: ``add_body``, ``add_shape_sphere``/``box``/``capsule`` (``builder_rigid.py``);
    joints: ``add_joint_ball``/``revolute``/``prismatic``/``fixed``, with limits (``builder_joints.py``).

    Options (keyword-only): ``up_axis`` ("x", "y" or "z"), ``gravity`` [m/s^2] along the up axis
    (negative pulls down) or a 3-vector.

    The ``default_*`` attributes are used when an ``add_*`` call omits a value; the contact
    attributes (``particle_ke`` ..., ``soft_contact_margin``) are copied to the model.
    """

    def __init__(self, *, up_axis: str = "y", gravity=-9.81):
        if up_axis not in _AXES:
            raise ValueError(f"up_axis must be 'x', 'y' or 'z', got {up_axis!r}")
        self.up_axis = _AXES[up_axis]
        self.up_vector = tuple(1.0 if k == self.up_axis else 0.0 for k in range(3))
        self.set_gravity(gravity)

        self.default_particle_radius = 0.1     # [m]
        self.default_spring_ke = 100.0         # [N/m]
        self.default_spring_kd = 0.0           # [N s/m]
        self.default_tri_ke = 100.0            # [N/m]
        self.default_tri_ka = 100.0            # [N/m]
        self.default_tri_kd = 10.0             # [N s/m]
        self.default_edge_ke = 100.0           # bending springs [N/m]
        self.default_edge_kd = 0.0             # [N s/m]

        # particle-particle contact
        self.particle_contact = True
        self.particle_ke, self.particle_kd, self.particle_kf, self.particle_mu = 1.0e3, 1.0e2, 1.0e2, 0.5
        self.particle_cohesion = 0.0           # [m]
        self.particle_damping = 0.0            # [1/s]
        self.particle_max_velocity = 1.0e5     # [m/s]
        # particle-shape contact defaults
        self.soft_contact_ke, self.soft_contact_kd, self.soft_contact_kf = 1.0e3, 10.0, 1.0e3
        self.soft_contact_mu = 0.5
        self.soft_contact_margin = 0.01        # [m]
        self.grid_dims = (128, 128, 128)       # cells of the particle HashGrid

        self.particle_q: list = []
        self.particle_qd: list = []
        self.particle_mass: list = []
        self.particle_radius: list = []
        self.spring_indices: list = []
        self.spring_rest_length: list = []
        self.spring_stiffness: list = []
        self.spring_damping: list = []
        self.spring_control: list = []
        self.tri_indices: list = []
        self.tri_poses: list = []
        self.tri_areas: list = []
        self.tri_materials: list = []
        self.shape_transform: list = []
        self.shape_scale: list = []
        self.shape_geo: list = []              # (points [n, 3] float64 local, indices [m] int32)
        self.shape_material: list = []         # (ke, kd, kf, mu)
        self.ground = False
        self.ground_height = 0.0
        self.ground_material = (self.soft_contact_ke, self.soft_contact_kd, self.soft_contact_kf, self.soft_contact_mu)
        self._init_bodies()
        self._init_joints()

    # ------------------------------------------------------------------ counts

    @property
    def particle_count(self) -> int:
        return len(self.particle_q)

    @property
    def spring_count(self) -> int:
        return len(self.spring_rest_length)

    @property
    def tri_count(self) -> int:
        return len(self.tri_areas)

    @property
    def shape_count(self) -> int:
        return len(self.shape_geo)

    # ------------------------------------------------------------------ global settings

    def set_gravity(self, gravity) -> None:
        """Gravity [m/s^2]: a number (along the up axis; -9.81 pulls down) or a 3-vector."""
        if np.ndim(gravity) == 0:
            g = float(gravity)
            self.gravity = tuple(g * c for c in self.up_vector)
        else:
            self.gravity = _vec3(gravity, "gravity")

    def add_ground_plane(self, *, height: float = 0.0, ke: float | None = None, kd: float | None = None,
                         kf: float | None = None, mu: float | None = None) -> None:
        """A ground plane normal to the up axis at ``height`` [m]; contact stiffness ``ke`` [N/m],
        damping ``kd`` [N s/m], friction damping ``kf`` [N s/m], friction coefficient ``mu``
        (defaults: the ``soft_contact_*`` attributes)."""
        self.ground = True
        self.ground_height = float(height)
        self.ground_material = (
            _nonneg(self.soft_contact_ke if ke is None else ke, "ke"),
            _nonneg(self.soft_contact_kd if kd is None else kd, "kd"),
            _nonneg(self.soft_contact_kf if kf is None else kf, "kf"),
            _nonneg(self.soft_contact_mu if mu is None else mu, "mu"))

    # ------------------------------------------------------------------ particles and springs

    def add_particle(self, pos, vel, mass: float, radius: float | None = None) -> int:
        """Add a particle at ``pos`` [m] with velocity ``vel`` [m/s] and ``mass`` [kg] (0: kinematic);
        ``radius`` [m] defaults to ``default_particle_radius``. Returns its index."""
        self.particle_q.append(_vec3(pos, "pos"))
        self.particle_qd.append(_vec3(vel, "vel"))
        self.particle_mass.append(_nonneg(mass, "mass"))
        self.particle_radius.append(_nonneg(self.default_particle_radius if radius is None else radius, "radius"))
        return len(self.particle_q) - 1

    def _check_particle(self, *ids):
        n = len(self.particle_q)
        for i in ids:
            if not 0 <= int(i) < n:
                raise IndexError(f"particle index {i} out of range (the builder has {n} particles)")

    def add_spring(self, i: int, j: int, ke: float, kd: float, control: float = 0.0) -> int:
        """A spring between particles ``i`` and ``j`` with stiffness ``ke`` [N/m] and damping ``kd``
        [N s/m]; its rest length is the particles' current distance [m]. ``control`` is the default
        activation (rest length scaled by 1 + control). Returns its index."""
        self._check_particle(i, j)
        if i == j:
            raise ValueError(f"a spring needs two different particles, got ({i}, {j})")
        d = np.subtract(self.particle_q[i], self.particle_q[j])
        self.spring_indices.append((int(i), int(j)))
        self.spring_rest_length.append(float(np.linalg.norm(d)))
        self.spring_stiffness.append(_nonneg(ke, "ke"))
        self.spring_damping.append(_nonneg(kd, "kd"))
        self.spring_control.append(float(control))
        return len(self.spring_rest_length) - 1

    def add_triangle(self, i: int, j: int, k: int, tri_ke: float | None = None, tri_ka: float | None = None,
                     tri_kd: float | None = None) -> float:
        """A membrane triangle on particles ``i``, ``j``, ``k`` whose rest shape is their current
        positions; ``tri_ke`` stretch/shear stiffness [N/m], ``tri_ka`` area stiffness [N/m] (> 0),
        ``tri_kd`` damping [N s/m]. Returns the rest area [m^2] (0 for a degenerate triangle, which
        is not added)."""
        self._check_particle(i, j, k)
        ke = _nonneg(self.default_tri_ke if tri_ke is None else tri_ke, "tri_ke")
        ka = _nonneg(self.default_tri_ka if tri_ka is None else tri_ka, "tri_ka")
        kd = _nonneg(self.default_tri_kd if tri_kd is None else tri_kd, "tri_kd")
        if ke > 0.0 and ka == 0.0:
            raise ValueError("tri_ka must be > 0 when tri_ke > 0 (the area term balances the stretch term)")
        p, q, r = (np.asarray(self.particle_q[n]) for n in (i, j, k))
        qp, rp = q - p, r - p
        normal = np.cross(qp, rp)
        area2 = float(np.linalg.norm(normal))
        if area2 <= 1e-12 * max(float(np.dot(qp, qp) + np.dot(rp, rp)), 1e-30):
            return 0.0
        e1 = qp / np.linalg.norm(qp)
        e2 = np.cross(normal / area2, e1)
        rest = np.array([[e1 @ qp, e1 @ rp], [e2 @ qp, e2 @ rp]])  # rest edges as columns (2D frame)
        self.tri_indices.append((int(i), int(j), int(k)))
        self.tri_poses.append(np.linalg.inv(rest))
        self.tri_areas.append(0.5 * area2)
        self.tri_materials.append((ke, ka, kd))
        return 0.5 * area2

    # ------------------------------------------------------------------ grids

    def add_particle_grid(self, *, pos, rot=(0.0, 0.0, 0.0, 1.0), vel=(0.0, 0.0, 0.0), dim_x: int, dim_y: int,
                          dim_z: int, cell_x: float, cell_y: float, cell_z: float, mass: float, jitter: float = 0.0,
                          radius_mean: float | None = None, radius_std: float = 0.0, seed: int = 42) -> range:
        """A block of ``dim_x * dim_y * dim_z`` particles spaced ``cell_*`` [m], rotated by ``rot``
        and moved to ``pos`` [m]; each has ``mass`` [kg] and velocity ``vel`` [m/s]. ``jitter`` [m]
        perturbs positions uniformly; radii are ``radius_mean`` (default ``default_particle_radius``)
        plus Gaussian noise of ``radius_std`` [m]. Returns the range of the new particle indices."""
        rng = np.random.default_rng(seed)
        rm = self.default_particle_radius if radius_mean is None else float(radius_mean)
        R, origin = quat_to_matrix(_quat(rot)), np.asarray(_vec3(pos, "pos"))
        start = self.particle_count
        for z in range(int(dim_z)):
            for y in range(int(dim_y)):
                for x in range(int(dim_x)):
                    p = np.array([x * cell_x, y * cell_y, z * cell_z], dtype=np.float64)
                    if jitter:
                        p = p + rng.uniform(-jitter, jitter, 3)
                    r = rm if not radius_std else max(rm + rng.normal(0.0, radius_std), 1e-6)
                    self.add_particle(R @ p + origin, vel, mass, r)
        return range(start, self.particle_count)

    def add_fluid_block(self, *, pos, dim_x: int, dim_y: int, dim_z: int, spacing: float,
                        density: float = 1000.0, vel=(0.0, 0.0, 0.0), jitter: float = 0.0, seed: int = 42) -> range:
        """A block of ``dim_x * dim_y * dim_z`` fluid particles for ``SPHSolver``, its lowest corner at
        ``pos`` [m], spaced ``spacing`` [m]: each carries the mass of its cell, ``density * spacing^3``
        [kg] (``density`` in kg/m^3), and a radius of ``spacing / 2`` [m] (the walls and the ground
        keep particle centres that far away). Returns the range of the new particle indices."""
        spacing = float(spacing)
        if not (spacing > 0.0 and math.isfinite(spacing)):
            raise ValueError(f"add_fluid_block: spacing must be a finite number > 0, got {spacing}")
        if min(int(dim_x), int(dim_y), int(dim_z)) < 1:
            raise ValueError(f"add_fluid_block: dim_x, dim_y, dim_z must be >= 1, got {(dim_x, dim_y, dim_z)}")
        mass = _nonneg(density, "density") * spacing ** 3
        return self.add_particle_grid(pos=pos, vel=vel, dim_x=dim_x, dim_y=dim_y, dim_z=dim_z, cell_x=spacing,
                                      cell_y=spacing, cell_z=spacing, mass=mass, jitter=jitter,
                                      radius_mean=0.5 * spacing, seed=seed)

    def add_cloth_grid(self, *, pos, rot=(0.0, 0.0, 0.0, 1.0), vel=(0.0, 0.0, 0.0), dim_x: int, dim_y: int,
                       cell_x: float, cell_y: float, mass: float, reverse_winding: bool = False,
                       fix_left: bool = False, fix_right: bool = False, fix_top: bool = False,
                       fix_bottom: bool = False, tri_ke: float | None = None, tri_ka: float | None = None,
                       tri_kd: float | None = None, add_springs: bool = False, spring_ke: float | None = None,
                       spring_kd: float | None = None, edge_ke: float | None = None, edge_kd: float | None = None,
                       particle_radius: float | None = None) -> range:
        """A rectangular cloth of ``dim_x * dim_y`` cells (``(dim_x + 1) * (dim_y + 1)`` particles of
        ``mass`` [kg] each), spaced ``cell_x``, ``cell_y`` [m] in its local x-y plane, rotated by
        ``rot`` and moved to ``pos`` [m].

        Two membrane triangles per cell (``tri_*``); ``add_springs`` adds structural and shear
        springs (``spring_ke`` [N/m], ``spring_kd`` [N s/m]); bending springs join particles two
        cells apart (``edge_ke`` [N/m], ``edge_kd`` [N s/m]; ``edge_ke=0`` adds none). ``fix_*``
        makes an edge's particles kinematic. ``particle_radius`` [m] defaults to a quarter of the
        smaller cell size (neighbours do not touch at rest). Returns the range of particle indices.
        """
        nx, ny = int(dim_x), int(dim_y)
        if nx < 1 or ny < 1:
            raise ValueError(f"add_cloth_grid needs dim_x, dim_y >= 1, got ({dim_x}, {dim_y})")
        radius = 0.25 * min(cell_x, cell_y) if particle_radius is None else particle_radius
        R, origin = quat_to_matrix(_quat(rot)), np.asarray(_vec3(pos, "pos"))
        start = self.particle_count

        def idx(x, y):
            return start + y * (nx + 1) + x

        for y in range(ny + 1):
            for x in range(nx + 1):
                fixed = ((fix_left and x == 0) or (fix_right and x == nx) or (fix_bottom and y == 0)
                         or (fix_top and y == ny))
                p = R @ np.array([x * cell_x, y * cell_y, 0.0]) + origin
                self.add_particle(p, vel, 0.0 if fixed else mass, radius)
        for y in range(1, ny + 1):
            for x in range(1, nx + 1):
                a, b, c, d = idx(x - 1, y - 1), idx(x, y - 1), idx(x, y), idx(x - 1, y)
                tris = ((a, b, c), (a, c, d)) if reverse_winding else ((a, b, d), (b, c, d))
                for t in tris:
                    self.add_triangle(*t, tri_ke=tri_ke, tri_ka=tri_ka, tri_kd=tri_kd)
        if add_springs:
            ke = self.default_spring_ke if spring_ke is None else spring_ke
            kd = self.default_spring_kd if spring_kd is None else spring_kd
            for y in range(ny + 1):
                for x in range(nx + 1):
                    if x < nx:
                        self.add_spring(idx(x, y), idx(x + 1, y), ke, kd)
                    if y < ny:
                        self.add_spring(idx(x, y), idx(x, y + 1), ke, kd)
                    if x < nx and y < ny:
                        self.add_spring(idx(x, y), idx(x + 1, y + 1), ke, kd)
                        self.add_spring(idx(x + 1, y), idx(x, y + 1), ke, kd)
        eke = self.default_edge_ke if edge_ke is None else edge_ke
        ekd = self.default_edge_kd if edge_kd is None else edge_kd
        if eke > 0.0:
            for y in range(ny + 1):
                for x in range(nx + 1):
                    if x + 2 <= nx:
                        self.add_spring(idx(x, y), idx(x + 2, y), eke, ekd)
                    if y + 2 <= ny:
                        self.add_spring(idx(x, y), idx(x, y + 2), eke, ekd)
        return range(start, self.particle_count)

    # ------------------------------------------------------------------ shapes

    def add_shape_mesh(self, mesh, *, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), scale=1.0,
                       ke: float | None = None, kd: float | None = None, kf: float | None = None,
                       mu: float | None = None) -> int:
        """A static triangle-mesh collider. ``mesh``: a ``(points, indices)`` pair (points [m],
        shape [n, 3]; indices, 3 per face, counter-clockwise seen from outside), a ``Mesh``, or an
        object with ``vertices``/``faces`` (trimesh). Placed by ``scale`` (a number or 3 numbers),
        then ``rot`` (x, y, z, w), then ``pos`` [m]. Contact: ``ke`` [N/m], ``kd`` [N s/m], ``kf``
        [N s/m], ``mu`` (defaults: the ``soft_contact_*`` attributes). Returns the shape index."""
        if isinstance(mesh, Mesh):
            points, indices = mesh.points.numpy(), mesh.indices.numpy()
        elif hasattr(mesh, "vertices") and hasattr(mesh, "faces"):
            points, indices = mesh.vertices, mesh.faces
        elif isinstance(mesh, (tuple, list)) and len(mesh) == 2:
            points, indices = mesh
        else:
            raise TypeError(f"add_shape_mesh: mesh must be a (points, indices) pair, a simkit Mesh or a trimesh, "
                            f"got {type(mesh).__name__}")
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        indices = np.asarray(indices).reshape(-1).astype(np.int32)
        if indices.size == 0 or indices.size % 3:
            raise ValueError(f"add_shape_mesh: need a positive multiple of 3 indices, got {indices.size}")
        if indices.min() < 0 or indices.max() >= len(points):
            raise ValueError(f"add_shape_mesh: indices out of range for {len(points)} points")
        s = (float(scale),) * 3 if np.ndim(scale) == 0 else _vec3(scale, "scale")
        self.shape_transform.append(_vec3(pos, "pos") + _quat(rot))
        self.shape_scale.append(s)
        self.shape_geo.append((points, indices))
        self.shape_material.append((
            _nonneg(self.soft_contact_ke if ke is None else ke, "ke"),
            _nonneg(self.soft_contact_kd if kd is None else kd, "kd"),
            _nonneg(self.soft_contact_kf if kf is None else kf, "kf"),
            _nonneg(self.soft_contact_mu if mu is None else mu, "mu")))
        return len(self.shape_geo) - 1

    # ------------------------------------------------------------------ finalize

    def finalize(self, device=None, requires_grad: bool = False, *, dtype=T.float32) -> Model:
        """Copy everything to ``device`` (default: the default device, as for arrays: ``cuda:0`` where
        a GPU is present, else the CPU) as a ``Model``. ``requires_grad`` gives the particle, spring
        and triangle arrays gradients (and the states made by ``model.state()``); ``dtype`` is
        float32 or float64 (positions become vec3d; mesh collision stays float32)."""
        dtype = T.normalize_dtype(dtype)
        if dtype not in (T.float32, T.float64):
            raise TypeError(f"finalize: dtype must be float32 or float64, got {T.type_name(dtype)}")
        dev = get_device(device)
        m = Model(dev, dtype, bool(requires_grad))
        npf = m.np_dtype
        rg = bool(requires_grad)

        def real(values, shape_tail=(), typ=None):
            a = np.asarray(values, dtype=npf).reshape((-1,) + shape_tail)
            return array(a, dtype=typ or dtype, device=dev, requires_grad=rg)

        m.up_vector, m.gravity = self.up_vector, self.gravity
        n = m.particle_count = self.particle_count
        mass = np.asarray(self.particle_mass, dtype=np.float64).reshape(-1)
        inv_mass = np.divide(1.0, mass, out=np.zeros_like(mass), where=mass > 0.0)
        m.particle_q = real(self.particle_q, (3,), m.vec_type)
        m.particle_qd = real(self.particle_qd, (3,), m.vec_type)
        m.particle_mass = real(mass)
        m.particle_inv_mass = real(inv_mass)
        m.particle_radius = real(self.particle_radius)
        m.particle_max_radius = float(max(self.particle_radius, default=0.0))
        m.particle_grid = HashGrid(*self.grid_dims, device=dev, dtype=dtype) if n > 1 else None
        for name in ("particle_contact", "particle_ke", "particle_kd", "particle_kf", "particle_mu",
                     "particle_cohesion", "particle_damping", "particle_max_velocity", "soft_contact_margin"):
            setattr(m, name, getattr(self, name))

        m.spring_count = self.spring_count
        m.spring_indices = array(np.asarray(self.spring_indices, dtype=np.int32).reshape(-1), dtype=T.int32,
                                 device=dev)
        m.spring_rest_length = real(self.spring_rest_length)
        m.spring_stiffness = real(self.spring_stiffness)
        m.spring_damping = real(self.spring_damping)
        m.spring_control = real(self.spring_control)

        m.tri_count = self.tri_count
        m.tri_indices = array(np.asarray(self.tri_indices, dtype=np.int32).reshape(-1, 3), dtype=T.int32,
                              device=dev)
        m.tri_poses = real(self.tri_poses, (2, 2), m.mat22_type)
        m.tri_areas = real(self.tri_areas)
        m.tri_materials = real(self.tri_materials, (3,))

        m.shape_count = self.shape_count
        m.shape_transform = array(np.asarray(self.shape_transform, dtype=np.float32).reshape(-1, 7),
                                  dtype=T.transform, device=dev)
        m.shape_scale = array(np.asarray(self.shape_scale, dtype=np.float32).reshape(-1, 3), dtype=T.vec3,
                              device=dev)
        m.shape_mesh = []
        for (points, indices), xf, s in zip(self.shape_geo, self.shape_transform, self.shape_scale):
            world = (points * np.asarray(s)) @ quat_to_matrix(xf[3:]).T + np.asarray(xf[:3])
            m.shape_mesh.append(Mesh(array(world.astype(np.float32), dtype=T.vec3, device=dev),
                                     array(indices, dtype=T.int32, device=dev)))
        m.shape_mesh_id = array(np.array([mesh.id for mesh in m.shape_mesh], dtype=np.uint64), dtype=T.uint64,
                                device=dev)
        m.shape_mesh_id._meshes = m.shape_mesh  # a Tape holding the ids keeps the meshes alive
        mat = np.asarray(self.shape_material, dtype=np.float64).reshape(-1, 4)
        m.shape_ke, m.shape_kd, m.shape_kf, m.shape_mu = (
            array(mat[:, c].astype(npf), dtype=dtype, device=dev) for c in range(4))

        m.ground = self.ground
        m.ground_height = self.ground_height
        m.ground_ke, m.ground_kd, m.ground_kf, m.ground_mu = self.ground_material
        self._finalize_bodies(m, dev, rg)
        self._finalize_joints(m, dev, rg)
        return m
