"""Rigid bodies and their collision shapes (spheres, boxes, capsules) for ``ModelBuilder``.

Example::

    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 1.0, 0.0))
    b.add_shape_box(body, hx=0.1, hy=0.05, hz=0.1, density=500.0)        # 2 kg
    b.add_shape_sphere(-1, pos=(0.5, 0.2, 0.0), radius=0.2)              # static: fixed in the world
    b.add_ground_plane()
    model = b.finalize(device="cpu")
    print(model.body_mass.numpy())    # [2.]

A body's mass, centre of mass and inertia are the sums of its shapes' (each a solid of uniform
``density`` [kg/m^3]); shapes of bodies joined by a joint do not collide; a body whose shapes have no mass is kinematic (it keeps its velocity). Body
``-1`` is the world: its shapes are static colliders for the bodies.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..kernels import types as T
from ..runtime import array

SPHERE, BOX, CAPSULE = 0, 1, 2
SHAPE_NAMES = {SPHERE: "sphere", BOX: "box", CAPSULE: "capsule"}
# contact candidates a pair of shape types tests (see collision/rigid_contacts.py); keys sorted so
# that the box, when there is one, is the first shape of the pair
PAIR_CANDIDATES = {(SPHERE, SPHERE): 1, (CAPSULE, SPHERE): 1, (CAPSULE, CAPSULE): 1, (BOX, SPHERE): 1,
                   (BOX, CAPSULE): 2, (BOX, BOX): 25}
GROUND_CANDIDATES = {SPHERE: 1, BOX: 8, CAPSULE: 2}


def _vec(v, name, n=3) -> tuple:
    t = tuple(float(c) for c in np.asarray(v, dtype=np.float64).reshape(-1))
    if len(t) != n or not all(math.isfinite(c) for c in t):
        raise ValueError(f"{name} must be {n} finite numbers, got {v!r}")
    return t


def _positive(v, name) -> float:
    v = float(v)
    if not (v > 0.0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a finite number > 0, got {v}")
    return v


def _rotation(q) -> np.ndarray:
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def shape_mass_properties(kind: int, size, density: float):
    """(mass [kg], inertia about the shape's centre in its own frame [kg m^2], 3x3) of a solid
    sphere (radius), box (half extents) or capsule (radius, half height of the cylinder, along y)."""
    if kind == SPHERE:
        r = size[0]
        m = density * 4.0 / 3.0 * math.pi * r ** 3
        return m, np.eye(3) * (0.4 * m * r * r)
    if kind == BOX:
        hx, hy, hz = size
        m = density * 8.0 * hx * hy * hz
        return m, np.diag([m / 3.0 * (hy * hy + hz * hz), m / 3.0 * (hx * hx + hz * hz), m / 3.0 * (hx * hx + hy * hy)])
    r, hh = size[0], size[1]
    mc = density * math.pi * r * r * 2.0 * hh                 # the cylinder
    ms = density * 4.0 / 3.0 * math.pi * r ** 3               # both hemispheres
    # about the y axis: cylinder m r^2 / 2, the two hemispheres a sphere's 2/5 m r^2; across it, the
    # hemispheres' centres of mass sit 3r/8 beyond the cylinder's ends (parallel axis theorem)
    iy = mc * r * r / 2.0 + 0.4 * ms * r * r
    ix = mc * (r * r / 4.0 + hh * hh / 3.0) + ms * (0.4 * r * r + hh * hh + 0.75 * hh * r)
    return mc + ms, np.diag([ix, iy, ix])


class RigidBuilderMixin:
    """The rigid-body half of ``ModelBuilder`` (its ``__init__`` calls ``_init_bodies``)."""

    def _init_bodies(self):
        self.body_q, self.body_qd = [], []
        self.rigid_shape_body, self.rigid_shape_type, self.rigid_shape_xform, self.rigid_shape_size = [], [], [], []
        self.rigid_shape_density, self.rigid_shape_material, self.rigid_shape_restitution = [], [], []
        self.rigid_contact_ke = 1.0e4     # [N/m]
        self.rigid_contact_kd = 1.0e2     # [N s/m]
        self.rigid_contact_kf = 1.0e2     # [N s/m]
        self.rigid_contact_mu = 0.5
        self.rigid_contact_restitution = 0.0   # (XPBDSolver: 0 inelastic, 1 elastic)
        self.body_angular_damping = 0.0   # [1/s]

    @property
    def body_count(self) -> int:
        return len(self.body_q)

    @property
    def rigid_shape_count(self) -> int:
        return len(self.rigid_shape_type)

    def add_body(self, *, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), vel=(0.0, 0.0, 0.0),
                 ang_vel=(0.0, 0.0, 0.0)) -> int:
        """A rigid body with its frame at ``pos`` [m], rotated by ``rot`` (x, y, z, w); ``vel``
        [m/s] is its centre of mass's velocity and ``ang_vel`` [rad/s] its angular velocity, both in
        world coordinates. Give it mass with ``add_shape_*``. Returns the body index."""
        q = np.asarray(_vec(rot, "add_body: rot", 4))
        if not abs(np.linalg.norm(q) - 1.0) < 1e-3:
            raise ValueError(f"add_body: rot must be a unit quaternion (x, y, z, w), got {rot!r}")
        self.body_q.append(_vec(pos, "add_body: pos") + tuple(float(c) for c in q / np.linalg.norm(q)))
        self.body_qd.append(_vec(ang_vel, "add_body: ang_vel") + _vec(vel, "add_body: vel"))
        return len(self.body_q) - 1

    def _add_rigid_shape(self, kind, body, pos, rot, size, density, ke, kd, kf, mu, restitution) -> int:
        name = f"add_shape_{SHAPE_NAMES[kind]}"
        if not (isinstance(body, (int, np.integer)) and -1 <= body < self.body_count):
            raise ValueError(f"{name}: body must be -1 (static) or a body index in [0, {self.body_count}), got {body!r}")
        density = float(density)
        if not (density >= 0.0 and math.isfinite(density)):
            raise ValueError(f"{name}: density must be a finite number >= 0, got {density}")
        q = np.asarray(_vec(rot, f"{name}: rot", 4))
        if not abs(np.linalg.norm(q) - 1.0) < 1e-3:
            raise ValueError(f"{name}: rot must be a unit quaternion (x, y, z, w), got {rot!r}")
        material = tuple(float(getattr(self, f"rigid_contact_{k}") if v is None else v)
                         for k, v in zip(("ke", "kd", "kf", "mu"), (ke, kd, kf, mu)))
        if not all(m >= 0.0 and math.isfinite(m) for m in material):
            raise ValueError(f"{name}: ke, kd, kf, mu must be finite numbers >= 0, got {material}")
        e = float(self.rigid_contact_restitution if restitution is None else restitution)
        if not 0.0 <= e <= 1.0:
            raise ValueError(f"{name}: restitution must be in [0, 1], got {e}")
        self.rigid_shape_body.append(int(body))
        self.rigid_shape_type.append(kind)
        self.rigid_shape_xform.append(_vec(pos, f"{name}: pos") + tuple(q / np.linalg.norm(q)))
        self.rigid_shape_size.append(size)
        self.rigid_shape_density.append(density)
        self.rigid_shape_material.append(material)
        self.rigid_shape_restitution.append(e)
        return self.rigid_shape_count - 1

    def add_shape_sphere(self, body: int, *, radius: float, pos=(0.0, 0.0, 0.0), density: float = 1000.0,
                         ke=None, kd=None, kf=None, mu=None, restitution=None) -> int:
        """A solid sphere of ``radius`` [m] centred at ``pos`` in the body's frame (body -1: the
        world). Contact: ``ke`` [N/m], ``kd`` [N s/m], ``kf`` [N s/m], ``mu``, and ``restitution``
        (0 to 1; ``XPBDSolver`` only, the penalty solvers' bounce comes from ``kd``) (defaults: the
        builder's ``rigid_contact_*``; a pair of shapes uses the mean of theirs)."""
        size = (_positive(radius, "add_shape_sphere: radius"), 0.0, 0.0)
        return self._add_rigid_shape(SPHERE, body, pos, (0.0, 0.0, 0.0, 1.0), size, density, ke, kd, kf, mu,
                                     restitution)

    def add_shape_box(self, body: int, *, hx: float, hy: float, hz: float, pos=(0.0, 0.0, 0.0),
                      rot=(0.0, 0.0, 0.0, 1.0), density: float = 1000.0, ke=None, kd=None, kf=None, mu=None,
                      restitution=None) -> int:
        """A solid box of half extents ``hx``, ``hy``, ``hz`` [m], placed at ``pos``, ``rot`` in
        the body's frame. Contact parameters as for ``add_shape_sphere``."""
        size = tuple(_positive(v, f"add_shape_box: {n}") for v, n in ((hx, "hx"), (hy, "hy"), (hz, "hz")))
        return self._add_rigid_shape(BOX, body, pos, rot, size, density, ke, kd, kf, mu, restitution)

    def add_shape_capsule(self, body: int, *, radius: float, half_height: float, pos=(0.0, 0.0, 0.0),
                          rot=(0.0, 0.0, 0.0, 1.0), density: float = 1000.0, ke=None, kd=None, kf=None,
                          mu=None, restitution=None) -> int:
        """A solid capsule: the points within ``radius`` [m] of the segment from ``(0, -half_height,
        0)`` to ``(0, half_height, 0)`` [m] (along the shape's y axis), placed at ``pos``, ``rot``
        in the body's frame. Contact parameters as for ``add_shape_sphere``."""
        size = (_positive(radius, "add_shape_capsule: radius"),
                _positive(half_height, "add_shape_capsule: half_height"), 0.0)
        return self._add_rigid_shape(CAPSULE, body, pos, rot, size, density, ke, kd, kf, mu, restitution)

    # ------------------------------------------------------------------ finalize

    def body_mass_properties(self):
        """Per body: (mass [kg], centre of mass in the body frame [m], inertia about it [kg m^2])."""
        n = self.body_count
        mass, first, second = np.zeros(n), np.zeros((n, 3)), np.zeros((n, 3, 3))
        props = []
        for b, kind, xf, size, rho in zip(self.rigid_shape_body, self.rigid_shape_type, self.rigid_shape_xform,
                                          self.rigid_shape_size, self.rigid_shape_density):
            if b < 0:
                continue
            m, inertia = shape_mass_properties(kind, size, rho)
            R = _rotation(xf[3:])
            props.append((b, m, np.asarray(xf[:3]), R @ inertia @ R.T))
            mass[b] += m
            first[b] += m * np.asarray(xf[:3])
        com = np.divide(first, mass[:, None], out=np.zeros_like(first), where=mass[:, None] > 0.0)
        for b, m, c, inertia in props:  # parallel axis theorem about the body's centre of mass
            d = c - com[b]
            second[b] += inertia + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
        return mass, com, second

    def _joined_bodies(self) -> set:
        """Pairs of bodies connected by a joint (their shapes do not collide)."""
        joints = zip(getattr(self, "joint_parent", []), getattr(self, "joint_child", []))
        return {(min(p, c), max(p, c)) for p, c in joints if p >= 0}

    def _rigid_pairs(self):
        """Shape pairs that can touch (different bodies, not both static, not joined), the box first."""
        pairs = []
        joined = self._joined_bodies()
        for a, b in itertools.combinations(range(self.rigid_shape_count), 2):
            ba, bb = self.rigid_shape_body[a], self.rigid_shape_body[b]
            if ba == bb or (ba < 0 and bb < 0) or (min(ba, bb), max(ba, bb)) in joined:
                continue
            ta, tb = self.rigid_shape_type[a], self.rigid_shape_type[b]
            if (tb == BOX and ta != BOX) or (ta == SPHERE and tb == CAPSULE):
                a, b = b, a
            pairs.append((a, b))
        return pairs

    def _finalize_bodies(self, m, dev, rg: bool) -> None:
        npf = m.np_dtype
        xf_t = T.transform if m.dtype is T.float32 else T.transformd
        sv_t = T.spatial_vector if m.dtype is T.float32 else T.spatial_vectord
        m33 = T.mat33 if m.dtype is T.float32 else T.mat33d
        n = m.body_count = self.body_count
        mass, com, inertia = self.body_mass_properties()
        inv_mass = np.divide(1.0, mass, out=np.zeros_like(mass), where=mass > 0.0)
        inv_inertia = np.array([np.linalg.inv(i) if mk > 0.0 else np.zeros((3, 3)) for i, mk in zip(inertia, mass)])
        real = lambda a, shape, typ, grad=rg: array(np.asarray(a, dtype=npf).reshape(shape), dtype=typ,  # noqa: E731
                                                    device=dev, requires_grad=grad)
        m.body_q = real(self.body_q, (n, 7), xf_t)
        m.body_qd = real(self.body_qd, (n, 6), sv_t)
        m.body_mass, m.body_inv_mass = real(mass, (n,), m.dtype), real(inv_mass, (n,), m.dtype)
        m.body_com = real(com, (n, 3), m.vec_type)
        m.body_inertia, m.body_inv_inertia = real(inertia, (n, 3, 3), m33), real(inv_inertia, (n, 3, 3), m33)
        m.body_angular_damping = self.body_angular_damping

        s = m.rigid_shape_count = self.rigid_shape_count
        m.rigid_shape_body = array(np.asarray(self.rigid_shape_body, dtype=np.int32), dtype=T.int32, device=dev)
        m.rigid_shape_type = array(np.asarray(self.rigid_shape_type, dtype=np.int32), dtype=T.int32, device=dev)
        m.rigid_shape_xform = real(self.rigid_shape_xform, (s, 7), xf_t, False)
        m.rigid_shape_size = real(self.rigid_shape_size, (s, 3), m.vec_type, False)
        m.rigid_shape_material = real(self.rigid_shape_material, (s, 4), T.vector(4, m.dtype), False)
        m.rigid_shape_restitution = real(self.rigid_shape_restitution, (s,), m.dtype, False)
        pairs = self._rigid_pairs()
        m.rigid_pair_count = len(pairs)
        m.rigid_pairs = array(np.asarray(pairs, dtype=np.int32).reshape(-1), dtype=T.int32, device=dev)
        parent = np.full(n, -1, dtype=np.int32)        # a body's first joint parent, for the broad phase
        for p, c in sorted(self._joined_bodies()):
            for x, y in ((p, c), (c, p)):
                if parent[y] < 0:
                    parent[y] = x
        m.body_filter = array(parent, dtype=T.int32, device=dev)
        m.rigid_pair_candidates = max((PAIR_CANDIDATES[self.rigid_shape_type[a], self.rigid_shape_type[b]]
                                       for a, b in pairs), default=0)
