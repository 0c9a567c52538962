"""Load USD stages (usd-core) into a ``ModelBuilder``: meshes become static colliders, points
particles, physics rigid bodies simkit bodies.

Example::

    builder = sk.ModelBuilder()                                   # y up
    info = sk.io.load_usd("scene.usda", builder, particle_mass=0.01)
    info.particles     # {"/World/sand": range(0, 500)}     prim path -> particle indices
    info.shapes        # {"/World/ground": 0}               prim path -> (mesh) shape index
    info.bodies        # {"/World/ball": 0}                 prim path -> body index
    info.rigid_shapes  # {"/World/ball": 0, "/World/table": 1}  prim path -> rigid shape index
    info.joints        # {"/World/hinge": 0}                prim path -> joint index
    info.joint_targets # {"/World/hinge": 0.5}              driven joint -> Control.joint_target [rad or m]
    info.skipped       # {"/World/box/mesh": "mesh of the dynamic rigid body '/World/box' (not supported)"}
    model = builder.finalize(device="cpu")

What is read (at one time code, every prim in world space):

* ``UsdGeom.Mesh`` -> ``builder.add_shape_mesh``: polygons are fan-triangulated, the world
  transform is baked into the points. Invisible meshes are skipped unless they carry an enabled
  ``PhysicsCollisionAPI`` (collision proxies are usually hidden). Meshes of dynamic rigid bodies
  (``PhysicsRigidBodyAPI`` on the mesh or an ancestor, not kinematic) are skipped with a warning.
* ``UsdGeom.Points`` -> ``builder.add_particle``: ``points``, ``velocities`` (if authored; mapped
  by the linear part of the world transform), radius = ``widths`` / 2 (scaled by the transform's
  mean scale; default ``builder.default_particle_radius``). Mass [kg]: ``physics:mass`` (the total,
  shared by the points), else ``physics:density`` times each sphere's volume, else ``particle_mass``.
* ``PhysicsRigidBodyAPI`` prims -> ``builder.add_body`` with their ``UsdGeom.Sphere`` / ``Cube`` /
  ``Capsule`` ``PhysicsCollisionAPI`` prims as shapes; such colliders outside rigid bodies -> static
  shapes (body -1). A body sits at its prim's world transform (position, rotation; scale is baked
  into its shapes' sizes); ``physics:velocity`` [length/s] and ``physics:angularVelocity``
  [degrees/s] are read in world axes (as PhysX does unless ``physxRigidBody:localSpaceVelocities``
  is true: then in the body's axes) and become ``vel`` [m/s] (the centre of mass's) and ``ang_vel``
  [rad/s]. Mass: the body's ``physics:mass`` (the total, spread over its shapes in proportion to
  their volumes), else per shape its ``physics:mass`` or ``physics:density``, else the body's
  ``physics:density``, else ``body_density``. Kinematic bodies (``physics:kinematicEnabled``) get
  massless shapes: simkit moves them at constant velocity, turning about their frame's origin.
* ``UsdPhysics.SphericalJoint`` / ``RevoluteJoint`` / ``PrismaticJoint`` / ``FixedJoint`` between
  loaded bodies (or a body and the world) -> ``add_joint_ball`` / ``add_joint_revolute`` /
  ``add_joint_prismatic`` / ``add_joint_fixed``, with their limits and the ``PhysicsDriveAPI:angular``
  (revolute) and ``:linear`` (prismatic) drives (details: ``usd_joints``). Other joint types,
  and joints whose bodies were not loaded, are skipped with a warning.
* The first ``UsdPhysics.Scene``: gravity -> ``builder.set_gravity`` (its defaults: down the
  stage's up axis, 9.81 m/s^2).

Units: lengths are multiplied by the stage's ``metersPerUnit`` (1 when not authored, as in Warp)
and masses by ``kilogramsPerUnit``; a Z-up stage loaded into a Y-up builder (or the reverse) is
rotated by 90 degrees about the axis perpendicular to both up axes (bodies' rotations included).
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..model.builder_rigid import BOX, CAPSULE, SPHERE, shape_mass_properties
from .usd_exporter import have_pxr

__all__ = ["UsdLoadResult", "load_usd"]

EARTH_GRAVITY = 9.81  # [m/s^2], UsdPhysics' default magnitude


@dataclass
class UsdLoadResult:
    """What ``load_usd`` added to the builder."""

    path: str | None                                 # the file, None for a stage object without one
    time: float | None                               # time code read, None: default values
    meters_per_unit: float                           # stage length unit [m] (times ``scale``)
    up_axis: str                                     # the stage's up axis, "Y" or "Z"
    particles: dict = field(default_factory=dict)    # prim path -> range of particle indices
    shapes: dict = field(default_factory=dict)       # prim path -> shape index (mesh colliders)
    bodies: dict = field(default_factory=dict)       # prim path -> body index
    rigid_shapes: dict = field(default_factory=dict)  # prim path -> rigid shape index (body's or static)
    joints: dict = field(default_factory=dict)       # prim path -> joint index
    joint_targets: dict = field(default_factory=dict)  # driven joint's prim path -> target [rad or m]
    skipped: dict = field(default_factory=dict)      # prim path -> reason
    gravity: tuple | None = None                     # [m/s^2] set on the builder; None: not set

    def joint_target_array(self, joint_count: int) -> np.ndarray:
        """``joint_targets`` as values for ``Control.joint_target`` (zeros for the other joints):
        ``control.joint_target.assign(info.joint_target_array(model.joint_count))``."""
        out = np.zeros(int(joint_count))
        for name, target in self.joint_targets.items():
            out[self.joints[name]] = target
        return out


def _open_stage(source):
    if not have_pxr():
        raise ImportError("loading USD needs usd-core: pip install -e '.[io]' (or pip install usd-core)")
    from pxr import Tf, Usd

    if isinstance(source, Usd.Stage):
        return source, source.GetRootLayer().realPath or None
    path = os.fspath(source)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"USD file not found: '{path}'")
    try:
        stage = Usd.Stage.Open(path)
    except Tf.ErrorException as e:  # unknown file format, corrupt layer
        msg = str(e).strip().splitlines()
        raise ValueError(f"'{path}' is not a readable USD file (.usd, .usda, .usdc, .usdz): "
                         f"{msg[0] if msg else type(e).__name__}") from None
    if stage is None:
        raise ValueError(f"'{path}' is not a readable USD file")
    return stage, path


def _up_rotation(src: int, dst: int) -> np.ndarray:
    """Rotation (3x3, acting on column vectors) by 90 degrees taking axis ``src`` onto axis ``dst``."""
    if src == dst:
        return np.eye(3)
    k = np.cross(np.eye(3)[src], np.eye(3)[dst])
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + K + K @ K                              # Rodrigues with sin = 1, cos = 0


def _get(prim, name, time, default=None):
    attr = prim.GetAttribute(name)
    if not attr or not attr.HasAuthoredValue():
        return default
    value = attr.Get(time)
    return default if value is None else value


def _triangulate(counts: np.ndarray, indices: np.ndarray, flip: bool) -> np.ndarray:
    """Fan-triangulate polygons (``counts`` vertices each, faces with < 3 are dropped): (m, 3) int32."""
    starts = np.cumsum(counts) - counts
    keep = counts >= 3
    counts, starts = counts[keep], starts[keep]
    ntri = counts - 2
    first = np.repeat(starts, ntri)
    k = np.arange(int(ntri.sum())) - np.repeat(np.cumsum(ntri) - ntri, ntri) + 1   # 1 .. count-2 per face
    tris = np.stack([indices[first], indices[first + k], indices[first + k + 1]], axis=1)
    return (tris[:, [0, 2, 1]] if flip else tris).astype(np.int32)


def load_usd(source, builder, *, scale=1.0, time=None, particle_mass=None, particle_radius=None,
             collider_ke=None, collider_kd=None, collider_kf=None, collider_mu=None,
             gravity: bool = True, body_density: float = 1000.0, joint_ke: float = 1.0e4, joint_kd: float = 1.0e2,
             joint_angular_ke: float = 1.0e2, joint_angular_kd: float = 1.0) -> UsdLoadResult:
    """Add the meshes (static colliders), points (particles), rigid bodies, joints and physics-scene
    gravity of a USD stage to ``builder``; returns a :class:`UsdLoadResult`.

    ``source``: a path (``.usd``, ``.usda``, ``.usdc``, ``.usdz``) or a ``pxr.Usd.Stage``.
    ``scale``: extra factor on all lengths (points, widths, velocities) after ``metersPerUnit``.
    ``time``: the time code (a number or ``Usd.TimeCode``) of time-sampled attributes; default: the
    stage's start time code when it has a time range, else each attribute's first sample.
    ``particle_mass`` [kg per particle, a number or one per point]: for points prims without
    ``physics:mass``/``physics:density``. ``particle_radius`` [m]: for points without ``widths``.
    ``collider_ke`` [N/m], ``collider_kd`` [N s/m], ``collider_kf`` [N s/m], ``collider_mu``: mesh
    contact (default: the builder's ``soft_contact_*``). ``gravity``: read the ``PhysicsScene``'s.
    ``body_density`` [kg/m^3]: of rigid-body shapes without ``PhysicsMassAPI`` mass or density (rigid
    contact parameters: the builder's ``rigid_contact_*``). ``joint_ke`` [N/m], ``joint_kd`` [N s/m],
    ``joint_angular_ke`` [N m/rad], ``joint_angular_kd`` [N m s/rad]: the penalty springs that hold
    every loaded joint (``add_joint_*``'s ``ke``, ``kd``, ``angular_ke``, ``angular_kd``).

    Raises ``FileNotFoundError`` (no such file), ``ValueError`` (not a USD file, points without a
    mass, inconsistent attribute sizes, collision shapes that simkit's cannot represent: a
    non-uniformly scaled sphere, a sheared shape; negative joint or drive gains) and ``ImportError``
    (usd-core is not installed).
    """
    stage, path = _open_stage(source)
    from pxr import Usd, UsdGeom, UsdPhysics

    body_density = float(body_density)
    if not (body_density >= 0.0 and math.isfinite(body_density)):
        raise ValueError(f"body_density must be a finite number >= 0 [kg/m^3], got {body_density}")
    gains = tuple(float(g) for g in (joint_ke, joint_kd, joint_angular_ke, joint_angular_kd))
    if not all(g >= 0.0 and math.isfinite(g) for g in gains):
        raise ValueError(f"joint_ke, joint_kd, joint_angular_ke and joint_angular_kd must be finite numbers >= 0, "
                         f"got {gains}")

    if time is None:
        time = Usd.TimeCode(stage.GetStartTimeCode()) if stage.HasAuthoredTimeCodeRange() \
            else Usd.TimeCode.EarliestTime()
    elif not isinstance(time, Usd.TimeCode):
        time = Usd.TimeCode(float(time))
    up = str(UsdGeom.GetStageUpAxis(stage)).upper()
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage)) if UsdGeom.StageHasAuthoredMetersPerUnit(stage) else 1.0
    kpu = float(UsdPhysics.GetStageKilogramsPerUnit(stage)) \
        if UsdPhysics.StageHasAuthoredKilogramsPerUnit(stage) else 1.0
    rot = _up_rotation("XYZ".index(up), builder.up_axis)
    length = mpu * float(scale)
    if not (length > 0.0 and math.isfinite(length)):
        raise ValueError(f"scale * metersPerUnit must be a finite number > 0, got {length}")
    conv = length * rot                                       # stage units, stage axes -> [m], builder axes
    result = UsdLoadResult(path=path, time=None if time.IsDefault() or time.IsEarliestTime() else time.GetValue(),
                           meters_per_unit=length, up_axis=up)
    cache = UsdGeom.XformCache(time)
    material = {"ke": collider_ke, "kd": collider_kd, "kf": collider_kf, "mu": collider_mu}

    body_prims, colliders, joint_prims = [], [], []        # rigid bodies, non-mesh collision geometry, joints
    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            body_prims.append(prim)
        if prim.IsA(UsdPhysics.Joint):
            joint_prims.append(prim)
            continue
        if not (prim.IsA(UsdGeom.Mesh) or prim.IsA(UsdGeom.Points)):
            if prim.IsA(UsdGeom.Gprim) and prim.HasAPI(UsdPhysics.CollisionAPI):
                colliders.append(prim)
            continue
        name = str(prim.GetPath())
        M = np.array(cache.GetLocalToWorldTransform(prim), dtype=np.float64)
        L, t = M[:3, :3] @ conv.T, M[3, :3] @ conv.T          # row vectors: p_builder = p_local @ L + t
        visible = UsdGeom.Imageable(prim).ComputeVisibility(time) != UsdGeom.Tokens.invisible
        if prim.IsA(UsdGeom.Mesh):
            collider = prim.HasAPI(UsdPhysics.CollisionAPI)
            if collider and not _get(prim, "physics:collisionEnabled", time, True):
                result.skipped[name] = "collision disabled"
                continue
            if not visible and not collider:
                result.skipped[name] = "invisible"
                continue
            body = _rigid_body_of(prim)
            if body is not None and _body_motion(body, time) == "dynamic":
                body = str(body.GetPath())
                warnings.warn(f"load_usd: skipping mesh '{name}' of the dynamic rigid body '{body}': mesh colliders "
                              "on rigid bodies are not supported (use Sphere, Cube or Capsule collision shapes)",
                              stacklevel=2)
                result.skipped[name] = f"mesh of the dynamic rigid body '{body}' (not supported)"
                continue
            mesh = UsdGeom.Mesh(prim)
            pts = np.asarray(mesh.GetPointsAttr().Get(time) or [], dtype=np.float64).reshape(-1, 3)
            idx = np.asarray(mesh.GetFaceVertexIndicesAttr().Get(time) or [], dtype=np.int64)
            counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get(time) or [], dtype=np.int64)
            if counts.sum() != idx.size:
                raise ValueError(f"{name}: faceVertexCounts sum to {counts.sum()} but there are {idx.size} "
                                 "faceVertexIndices")
            if idx.size and (idx.min() < 0 or idx.max() >= len(pts)):
                raise ValueError(f"{name}: faceVertexIndices out of range [0, {len(pts)})")
            left = mesh.GetOrientationAttr().Get(time) == UsdGeom.Tokens.leftHanded
            tris = _triangulate(counts, idx, flip=left != (np.linalg.det(L) < 0.0))
            if len(tris) == 0:
                result.skipped[name] = "no faces"
                continue
            result.shapes[name] = builder.add_shape_mesh((pts @ L + t, tris), **material)
        else:
            if not visible:
                result.skipped[name] = "invisible"
                continue
            start = builder.particle_count
            _add_points(builder, prim, name, time, L, t, mpu, kpu, particle_mass, particle_radius)
            result.particles[name] = range(start, builder.particle_count)

    _add_rigid_bodies(builder, body_prims, colliders, result, cache=cache, conv=conv, mpu=mpu, kpu=kpu, time=time,
                      body_density=body_density)
    if joint_prims:
        from .usd_joints import add_joints

        add_joints(builder, stage, joint_prims, result, cache=cache, conv=conv, mpu=mpu, kpu=kpu, time=time,
                   gains=gains)
    if gravity:
        scenes = [p for p in stage.Traverse() if p.IsA(UsdPhysics.Scene)]
        if scenes:
            result.gravity = _scene_gravity(UsdPhysics.Scene(scenes[0]), up, rot, mpu, time)
            builder.set_gravity(result.gravity)
    return result


def _add_points(builder, prim, name, time, L, t, mpu, kpu, particle_mass, particle_radius):
    from pxr import UsdGeom

    geom = UsdGeom.Points(prim)
    pts = np.asarray(geom.GetPointsAttr().Get(time) or [], dtype=np.float64).reshape(-1, 3)
    n = len(pts)
    if n == 0:
        return
    vel = geom.GetVelocitiesAttr().Get(time) if geom.GetVelocitiesAttr().HasAuthoredValue() else None
    vel = np.zeros((n, 3)) if vel is None or len(vel) == 0 else np.asarray(vel, dtype=np.float64).reshape(-1, 3)
    if len(vel) != n:
        raise ValueError(f"{name}: {len(vel)} velocities for {n} points")
    widths = geom.GetWidthsAttr().Get(time) if geom.GetWidthsAttr().HasAuthoredValue() else None
    if widths is not None and len(widths):
        w = np.asarray(widths, dtype=np.float64).reshape(-1)
        if len(w) not in (1, n):
            raise ValueError(f"{name}: {len(w)} widths for {n} points (need 1 or {n})")
        radius = np.broadcast_to(0.5 * w * abs(np.linalg.det(L)) ** (1.0 / 3.0), (n,))
    else:
        r = builder.default_particle_radius if particle_radius is None else float(particle_radius)
        radius = np.full(n, r)
    total, density = _get(prim, "physics:mass", time, 0.0), _get(prim, "physics:density", time, 0.0)
    if total > 0.0:
        mass = np.full(n, total * kpu / n)
    elif density > 0.0:
        mass = density * kpu / mpu ** 3 * (4.0 / 3.0) * math.pi * radius ** 3   # [kg/m^3] * [m^3]
    elif particle_mass is not None:
        mass = np.broadcast_to(np.asarray(particle_mass, dtype=np.float64), (n,))
    else:
        raise ValueError(f"{name}: no mass for its {n} points: apply PhysicsMassAPI to the prim (physics:mass, "
                         "the total [kg], or physics:density [kg/m^3]) or pass particle_mass=... [kg per "
                         "particle] to load_usd")
    q, qd = pts @ L + t, vel @ L
    for i in range(n):
        builder.add_particle(q[i], qd[i], float(mass[i]), float(radius[i]))


def _scene_gravity(scene, up, rot, mpu, time) -> tuple:
    d = np.asarray(scene.GetGravityDirectionAttr().Get(time) or (0.0, 0.0, 0.0), dtype=np.float64)
    if not np.any(d):
        d = -np.eye(3)["XYZ".index(up)]                        # default: down the stage's up axis
    mag = scene.GetGravityMagnitudeAttr().Get(time)
    mag = EARTH_GRAVITY if mag is None or not math.isfinite(mag) or mag < 0.0 else float(mag) * mpu
    g = rot @ (d / np.linalg.norm(d)) * mag
    return tuple(float(c) for c in g)


# ----------------------------------------------------------------------------- rigid bodies

_GEOMS = {"Sphere": SPHERE, "Cube": BOX, "Capsule": CAPSULE}
# simkit's capsules lie along their local y axis; these rotations (column vectors) take y onto USD's axis
_AXIS_ROT = {"X": np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), "Y": np.eye(3),
             "Z": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])}


def _rigid_body_of(prim):
    """The nearest prim with ``PhysicsRigidBodyAPI`` at or above ``prim`` (its body), else None."""
    from pxr import UsdPhysics

    p = prim
    while p and not p.IsPseudoRoot():
        if p.HasAPI(UsdPhysics.RigidBodyAPI):
            return p
        p = p.GetParent()
    return None


def _body_motion(body, time) -> str | None:
    """"dynamic", "kinematic", or None for a disabled rigid body (its colliders are static)."""
    if not _get(body, "physics:rigidBodyEnabled", time, True):
        return None
    return "kinematic" if _get(body, "physics:kinematicEnabled", time, False) else "dynamic"


def _quat(R: np.ndarray) -> tuple:
    """(x, y, z, w) of a rotation matrix (column vectors)."""
    t = np.trace(R)
    if t > 0.0:
        s = 2.0 * math.sqrt(t + 1.0)
        q = ((R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s)
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + R[i, i] - R[j, j] - R[k, k], 0.0))
        q = [0.0, 0.0, 0.0, (R[k, j] - R[j, k]) / s]
        q[i], q[j], q[k] = 0.25 * s, (R[j, i] + R[i, j]) / s, (R[k, i] + R[i, k]) / s
    q = np.asarray(q) / np.linalg.norm(q)
    return tuple(float(c) for c in (q if q[3] >= 0.0 else -q))


def _world(cache, prim, conv):
    """The prim's local-to-world map in the builder's frame [m]: (3x3 for column vectors, translation)."""
    M = np.array(cache.GetLocalToWorldTransform(prim), dtype=np.float64)
    return conv @ M[:3, :3].T, conv @ M[3, :3]


def _rotation_part(A: np.ndarray) -> np.ndarray:
    """The rotation of the polar decomposition of ``A`` (a proper rotation, mirrors dropped)."""
    U, _, Vt = np.linalg.svd(A)
    if np.linalg.det(U @ Vt) < 0.0:
        U[:, 2] = -U[:, 2]
    return U @ Vt


def _shape(prim, kind, name, A, length, time):
    """(builder size tuple, rotation of the shape's frame in the builder's axes, volume [m^3])."""
    from pxr import UsdGeom

    n = np.linalg.norm(A, axis=0)                            # the shape's scale per local axis, times length
    if not np.all(n > 0.0):
        raise ValueError(f"{name}: its transform has a zero scale")
    R = A / n
    if np.abs(R.T @ R - np.eye(3)).max() > 1.0e-5:
        raise ValueError(f"{name}: its transform shears it (a non-uniform scale above a rotation); "
                         f"collision {prim.GetTypeName()}s need a rotation and a scale along their own axes")
    if np.linalg.det(R) < 0.0:                               # mirrored: the shapes are symmetric
        R[:, 0] = -R[:, 0]
    scale = tuple(round(float(c / length), 9) for c in n)
    if kind == SPHERE:
        if n.max() - n.min() > 1.0e-6 * n.max():
            raise ValueError(f"{name}: a collision Sphere needs a uniform scale, its transform scales it by "
                             f"{scale} (use a Capsule or a Cube, or scale it uniformly)")
        size = (float(UsdGeom.Sphere(prim).GetRadiusAttr().Get(time)) * float(n.mean()), 0.0, 0.0)
    elif kind == BOX:
        size = tuple(0.5 * float(UsdGeom.Cube(prim).GetSizeAttr().Get(time)) * n)
    else:
        cap = UsdGeom.Capsule(prim)
        axis = str(cap.GetAxisAttr().Get(time)).upper()
        k = "XYZ".index(axis)
        a, b = n[(k + 1) % 3], n[(k + 2) % 3]
        if abs(a - b) > 1.0e-6 * max(a, b):
            raise ValueError(f"{name}: a collision Capsule needs the same scale across its axis ({axis}); its "
                             f"transform scales it by {scale}")
        size = (float(cap.GetRadiusAttr().Get(time)) * float(a), 0.5 * float(cap.GetHeightAttr().Get(time)) * n[k],
                0.0)
        R = R @ _AXIS_ROT[axis]
    size = tuple(float(c) for c in size)
    if not all(c > 0.0 and math.isfinite(c) for c in size[:{SPHERE: 1, BOX: 3, CAPSULE: 2}[kind]]):
        raise ValueError(f"{name}: a collision {prim.GetTypeName()} needs its sizes (radius, height, size) > 0, "
                         f"got {size} [m]")
    return size, R, shape_mass_properties(kind, size, 1.0)[0]


def _nonneg(prim, attr, time) -> float:
    v = float(_get(prim, attr, time, 0.0))
    if not (v >= 0.0 and math.isfinite(v)):
        raise ValueError(f"{prim.GetPath()}: {attr} must be a finite number >= 0, got {v}")
    return v


def _densities(body, shapes, motion, time, mpu, kpu, body_density):
    """Each shape's density [kg/m^3] (the order of precedence: the module docstring)."""
    if motion == "kinematic":
        return [0.0] * len(shapes)
    total = _nonneg(body, "physics:mass", time)
    if total > 0.0:
        return [total * kpu / sum(s[4] for s in shapes)] * len(shapes)
    per_volume = kpu / mpu ** 3                              # [mass unit / length unit^3] -> [kg/m^3]
    rho_body = _nonneg(body, "physics:density", time) * per_volume
    out = []
    for prim, *_, volume in shapes:
        m, rho = _nonneg(prim, "physics:mass", time), _nonneg(prim, "physics:density", time) * per_volume
        out.append(m * kpu / volume if m > 0.0 else rho if rho > 0.0 else rho_body if rho_body > 0.0
                   else float(body_density))
    return out


def _add_rigid_bodies(builder, body_prims, colliders, result, *, cache, conv, mpu, kpu, time, body_density):
    """Add the rigid bodies ``body_prims`` (prims with ``PhysicsRigidBodyAPI``) and the collision
    geometry ``colliders`` (non-mesh prims with ``PhysicsCollisionAPI``) to ``builder``, recording them
    in ``result``. The nearest enabled rigid body at or above a collider owns it; colliders without
    one become static shapes. Dynamic bodies without Sphere/Cube/Capsule shapes (they would have no
    mass) and unsupported collision geometry (Cylinder, Cone, Plane, ...) are skipped with a warning."""
    length = float(np.linalg.norm(conv[:, 0]))
    rot = conv / length
    owned = {}                                               # body path (None: static) -> [(prim, kind, ...)]
    for prim in colliders:
        name = str(prim.GetPath())
        if not _get(prim, "physics:collisionEnabled", time, True):
            result.skipped[name] = "collision disabled"
            continue
        body = _rigid_body_of(prim)
        body = body if body is not None and _body_motion(body, time) is not None else None
        kind = _GEOMS.get(prim.GetTypeName())
        if kind is None:
            what = f"of the rigid body '{body.GetPath()}'" if body is not None else "(static)"
            warnings.warn(f"load_usd: skipping the collision {prim.GetTypeName()} '{name}' {what}: only Sphere, "
                          "Cube and Capsule (and Mesh, static) colliders are supported", stacklevel=3)
            result.skipped[name] = f"collision {prim.GetTypeName()} (not supported)"
            continue
        A, t = _world(cache, prim, conv)
        size, R, volume = _shape(prim, kind, name, A, length, time)
        owned.setdefault(None if body is None else str(body.GetPath()), []).append((prim, kind, size, (R, t), volume))

    plan = []                                                # check every body before adding any
    for body in body_prims:
        path, motion = str(body.GetPath()), _body_motion(body, time)
        shapes = owned.get(path)
        if motion is None or not shapes:
            if motion == "dynamic":
                warnings.warn(f"load_usd: skipping the dynamic rigid body '{path}': it has no Sphere, Cube or "
                              "Capsule collision shapes (prims with PhysicsCollisionAPI)", stacklevel=3)
                result.skipped[path] = "rigid body without Sphere, Cube or Capsule collision shapes"
            continue
        plan.append((body, path, shapes, _densities(body, shapes, motion, time, mpu, kpu, body_density)))
    for body, path, shapes, densities in plan:
        A, t = _world(cache, body, conv)
        Rb = _rotation_part(A)
        v = length * np.asarray(_get(body, "physics:velocity", time, (0.0, 0.0, 0.0)), dtype=np.float64)
        w = np.radians(np.asarray(_get(body, "physics:angularVelocity", time, (0.0, 0.0, 0.0)),
                                  dtype=np.float64))
        axes = Rb if _get(body, "physxRigidBody:localSpaceVelocities", time, False) else rot
        index = builder.add_body(pos=t, rot=_quat(Rb), vel=axes @ v, ang_vel=axes @ w)
        result.bodies[path] = index
        for (prim, kind, size, (R, ts), _), rho in zip(shapes, densities):
            result.rigid_shapes[str(prim.GetPath())] = _add_shape(builder, index, kind, size, Rb.T @ (ts - t),
                                                                  Rb.T @ R, rho)
    for prim, kind, size, (R, t), _ in owned.get(None, []):
        result.rigid_shapes[str(prim.GetPath())] = _add_shape(builder, -1, kind, size, t, R, 0.0)


def _add_shape(builder, body, kind, size, pos, R, density) -> int:
    if kind == SPHERE:
        return builder.add_shape_sphere(body, radius=size[0], pos=pos, density=density)
    if kind == BOX:
        return builder.add_shape_box(body, hx=size[0], hy=size[1], hz=size[2], pos=pos, rot=_quat(R),
                                     density=density)
    return builder.add_shape_capsule(body, radius=size[0], half_height=size[1], pos=pos, rot=_quat(R),
                                     density=density)
