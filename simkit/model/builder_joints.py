"""Joints between rigid bodies (ball, revolute, prismatic, fixed) for ``ModelBuilder``.

Example: a pendulum hinged to the world about z at the origin::

    b = sk.ModelBuilder()
    rod = b.add_body(pos=(0.25, 0.0, 0.0))
    b.add_shape_box(rod, hx=0.25, hy=0.02, hz=0.02)
    b.add_joint_revolute(-1, rod, anchor=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))

A joint is given in world coordinates at the bodies' initial poses (``anchor`` point, ``axis``) and
stored in each body's frame. The solver holds it with stiff springs (penalty, like the contacts):
the two anchor points are pulled together with ``ke`` [N/m] and ``kd`` [N s/m]; a revolute joint
also keeps the two bodies' copies of its axis aligned, and a fixed joint their relative rotation,
with ``angular_ke`` [N m/rad] and ``angular_kd`` [N m s/rad]. A prismatic joint (a slider) keeps
the relative rotation like a fixed joint and pulls the child's anchor onto the line through the
parent's anchor along ``axis`` with ``ke`` / ``kd``, leaving the slide along the axis free.

A joint's coordinate is 0 at the initial pose: a revolute joint's angle [rad] (the child's turn
about the axis relative to the parent, within pi of the middle of its limits, or of 0 unless both
are finite), a prismatic joint's position [m] (the child's anchor from the parent's, along the
parent's copy of the axis). Both can be driven to
``Control.joint_target`` by a PD torque / force with ``target_ke`` [N m/rad or N/m] and
``target_kd`` [N m s/rad or N s/m], and limited to [``limit_lower``, ``limit_upper``] (default
-inf, inf: unlimited) by a penalty ``limit_ke`` [N m/rad or N/m] times the coordinate's distance
outside, plus ``limit_kd`` [N m s/rad or N s/m] times its rate while it moves further out.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels import types as T
from ..runtime import array
from .builder_rigid import _rotation, _vec

BALL, REVOLUTE, FIXED, PRISMATIC = 0, 1, 2, 3
JOINT_NAMES = {BALL: "ball", REVOLUTE: "revolute", FIXED: "fixed", PRISMATIC: "prismatic"}
GAIN_NAMES = ("ke", "kd", "angular_ke", "angular_kd", "target_ke", "target_kd", "limit_lower", "limit_upper",
              "limit_ke", "limit_kd")   # the model's per-joint float arrays ``joint_<name>``
UNLIMITED = (-math.inf, math.inf, 0.0, 0.0)     # (limit_lower, limit_upper, limit_ke, limit_kd)


def _quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz)


def _quat_inv(q):
    return (-q[0], -q[1], -q[2], q[3])


class JointBuilderMixin:
    """The joint half of ``ModelBuilder`` (its ``__init__`` calls ``_init_joints``)."""

    def _init_joints(self):
        self.joint_type, self.joint_parent, self.joint_child = [], [], []
        self.joint_anchor_parent, self.joint_anchor_child, self.joint_axis_parent, self.joint_axis_child = [], [], [], []
        self.joint_rest_rotation, self.joint_gains, self.joint_limits = [], [], []

    @property
    def joint_count(self) -> int:
        return len(self.joint_type)

    def _add_joint(self, kind, parent, child, anchor, axis, ke, kd, angular_ke, angular_kd, target_ke, target_kd,
                   limits=UNLIMITED):
        name = f"add_joint_{JOINT_NAMES[kind]}"
        n = self.body_count
        if not (isinstance(parent, (int, np.integer)) and -1 <= parent < n):
            raise ValueError(f"{name}: parent must be -1 (the world) or a body index in [0, {n}), got {parent!r}")
        if not (isinstance(child, (int, np.integer)) and 0 <= child < n) or child == parent:
            raise ValueError(f"{name}: child must be a body index in [0, {n}) other than the parent, got {child!r}")
        gains = tuple(float(g) for g in (ke, kd, angular_ke, angular_kd, target_ke, target_kd))
        if not all(g >= 0.0 and math.isfinite(g) for g in gains):
            raise ValueError(f"{name}: stiffnesses and dampings must be finite numbers >= 0, got {gains}")
        lower, upper, limit_ke, limit_kd = (float(v) for v in limits)
        if not (lower <= upper and lower < math.inf and upper > -math.inf):
            raise ValueError(f"{name}: limit_lower must be <= limit_upper (-inf and inf: unlimited), got "
                             f"[{lower}, {upper}]")
        if not all(g >= 0.0 and math.isfinite(g) for g in (limit_ke, limit_kd)):
            raise ValueError(f"{name}: limit_ke and limit_kd must be finite numbers >= 0, got {(limit_ke, limit_kd)}")
        anchor = np.asarray(_vec(anchor, f"{name}: anchor"))
        axis = np.asarray(_vec(axis, f"{name}: axis"))
        if np.linalg.norm(axis) < 1e-9:
            raise ValueError(f"{name}: axis must not be zero")
        axis = axis / np.linalg.norm(axis)
        frames = []
        for b in (parent, child):   # world -> body frame
            if b < 0:
                frames.append((np.zeros(3), np.eye(3), (0.0, 0.0, 0.0, 1.0)))
            else:
                q = self.body_q[b]
                frames.append((np.asarray(q[:3]), _rotation(q[3:]), tuple(q[3:])))
        (pp, Rp, qp), (pc, Rc, qc) = frames
        self.joint_type.append(kind)
        self.joint_parent.append(int(parent))
        self.joint_child.append(int(child))
        self.joint_anchor_parent.append(tuple(Rp.T @ (anchor - pp)))
        self.joint_anchor_child.append(tuple(Rc.T @ (anchor - pc)))
        self.joint_axis_parent.append(tuple(Rp.T @ axis))
        self.joint_axis_child.append(tuple(Rc.T @ axis))
        self.joint_rest_rotation.append(_quat_mul(_quat_inv(qp), qc))     # child relative to parent
        self.joint_gains.append(gains)
        self.joint_limits.append((lower, upper, limit_ke, limit_kd))
        return self.joint_count - 1

    def add_joint_ball(self, parent: int, child: int, *, anchor, ke: float = 1.0e4, kd: float = 1.0e2) -> int:
        """A ball joint: ``child`` (a body) and ``parent`` (a body, or -1: the world) share the point
        ``anchor`` [m] (world coordinates, at the initial poses). Returns the joint index."""
        return self._add_joint(BALL, parent, child, anchor, (1.0, 0.0, 0.0), ke, kd, 0.0, 0.0, 0.0, 0.0)

    def add_joint_revolute(self, parent: int, child: int, *, anchor, axis, ke: float = 1.0e4, kd: float = 1.0e2,
                           angular_ke: float = 1.0e2, angular_kd: float = 1.0, target_ke: float = 0.0,
                           target_kd: float = 0.0, limit_lower: float = -math.inf, limit_upper: float = math.inf,
                           limit_ke: float = 1.0e2, limit_kd: float = 1.0) -> int:
        """A hinge about ``axis`` (world direction) through ``anchor`` [m]; ``target_ke`` > 0 drives
        its angle to ``Control.joint_target`` [rad]; ``limit_lower`` / ``limit_upper`` [rad] (default
        unlimited; a range narrower than 2 pi, a one-sided limit within (-pi, pi)) bound the angle
        with ``limit_ke`` [N m/rad], ``limit_kd`` [N m s/rad]. Returns the joint index."""
        return self._add_joint(REVOLUTE, parent, child, anchor, axis, ke, kd, angular_ke, angular_kd, target_ke,
                               target_kd, (limit_lower, limit_upper, limit_ke, limit_kd))

    def add_joint_prismatic(self, parent: int, child: int, *, anchor, axis, ke: float = 1.0e4, kd: float = 1.0e2,
                            angular_ke: float = 1.0e2, angular_kd: float = 1.0, target_ke: float = 0.0,
                            target_kd: float = 0.0, limit_lower: float = -math.inf, limit_upper: float = math.inf,
                            limit_ke: float = 1.0e4, limit_kd: float = 1.0e2) -> int:
        """A slider along ``axis`` (world direction) through ``anchor`` [m]: the child keeps its
        rotation relative to ``parent`` and only translates along the axis; ``target_ke`` [N/m] > 0
        drives its position to ``Control.joint_target`` [m]; ``limit_lower`` / ``limit_upper`` [m]
        (default unlimited) bound it with ``limit_ke`` [N/m], ``limit_kd`` [N s/m]. Returns the joint
        index.

        Example: a block on a vertical rail, hanging on the drive's spring::

            slider = b.add_body(pos=(0.0, 1.0, 0.0))
            b.add_shape_box(slider, hx=0.05, hy=0.05, hz=0.05)
            b.add_joint_prismatic(-1, slider, anchor=(0.0, 1.0, 0.0), axis=(0.0, 1.0, 0.0), target_ke=500.0,
                                  limit_lower=-0.2, limit_upper=0.2)
        """
        return self._add_joint(PRISMATIC, parent, child, anchor, axis, ke, kd, angular_ke, angular_kd, target_ke,
                               target_kd, (limit_lower, limit_upper, limit_ke, limit_kd))

    def add_joint_fixed(self, parent: int, child: int, *, anchor=None, ke: float = 1.0e4, kd: float = 1.0e2,
                        angular_ke: float = 1.0e2, angular_kd: float = 1.0) -> int:
        """A weld: ``child`` keeps its initial position and rotation relative to ``parent``
        (``anchor``: the point held together, default the child's frame origin). Returns the joint
        index."""
        if anchor is None:
            if not (isinstance(child, (int, np.integer)) and 0 <= child < self.body_count):
                raise ValueError(f"add_joint_fixed: child must be a body index in [0, {self.body_count}), got {child!r}")
            anchor = self.body_q[child][:3]
        return self._add_joint(FIXED, parent, child, anchor, (1.0, 0.0, 0.0), ke, kd, angular_ke, angular_kd, 0.0,
                               0.0)

    def _finalize_joints(self, m, dev, rg: bool) -> None:
        npf = m.np_dtype
        n = m.joint_count = self.joint_count
        quat_t = T.quat if m.dtype is T.float32 else T.quatd
        ints = lambda v: array(np.asarray(v, dtype=np.int32).reshape(n), dtype=T.int32, device=dev)   # noqa: E731
        vecs = lambda v: array(np.asarray(v, dtype=npf).reshape(n, 3), dtype=m.vec_type, device=dev)  # noqa: E731
        m.joint_type, m.joint_parent, m.joint_child = ints(self.joint_type), ints(self.joint_parent), \
            ints(self.joint_child)
        m.joint_anchor_parent, m.joint_anchor_child = vecs(self.joint_anchor_parent), vecs(self.joint_anchor_child)
        m.joint_axis_parent, m.joint_axis_child = vecs(self.joint_axis_parent), vecs(self.joint_axis_child)
        m.joint_rest_rotation = array(np.asarray(self.joint_rest_rotation, dtype=npf).reshape(n, 4), dtype=quat_t,
                                      device=dev)
        columns = np.hstack([np.asarray(self.joint_gains, dtype=npf).reshape(n, 6),
                             np.asarray(self.joint_limits, dtype=npf).reshape(n, 4)])
        for name, column in zip(GAIN_NAMES, columns.T):
            column = np.ascontiguousarray(column)
            setattr(m, f"joint_{name}", array(column, dtype=m.dtype, device=dev, requires_grad=rg))
