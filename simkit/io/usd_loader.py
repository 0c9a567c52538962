"""Load USD stages (usd-core) into a ``ModelBuilder``: meshes become static colliders, points particles.

Example::

    builder = sk.ModelBuilder()                                   # y up
    info = sk.io.load_usd("scene.usda", builder, particle_mass=0.01)
    info.particles     # {"/World/sand": range(0, 500)}     prim path -> particle indices
    info.shapes        # {"/World/ground": 0}               prim path -> shape index
    info.skipped       # {"/World/box": "dynamic rigid body (not supported yet)"}
    model = builder.finalize(device="cpu")

What is read (at one time code, every prim in world space):

* ``UsdGeom.Mesh`` -> ``builder.add_shape_mesh``: polygons are fan-triangulated, the world
  transform is baked into the points. Invisible meshes are skipped unless they carry an enabled
  ``PhysicsCollisionAPI`` (collision proxies are usually hidden). Dynamic rigid bodies
  (``PhysicsRigidBodyAPI`` on the mesh or an ancestor, not kinematic) are skipped with a warning.
* ``UsdGeom.Points`` -> ``builder.add_particle``: ``points``, ``velocities`` (if authored; mapped
  by the linear part of the world transform), radius = ``widths`` / 2 (scaled by the transform's
  mean scale; default ``builder.default_particle_radius``). Mass [kg]: ``physics:mass`` (the total,
  shared by the points), else ``physics:density`` times each sphere's volume, else ``particle_mass``.
* The first ``UsdPhysics.Scene``: gravity -> ``builder.set_gravity`` (its defaults: down the
  stage's up axis, 9.81 m/s^2).

Units: lengths are multiplied by the stage's ``metersPerUnit`` (1 when not authored, as in Warp)
and masses by ``kilogramsPerUnit``; a Z-up stage loaded into a Y-up builder (or the reverse) is
rotated by 90 degrees about the axis perpendicular to both up axes.
"""
from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, field

import numpy as np

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
    shapes: dict = field(default_factory=dict)       # prim path -> shape index
    skipped: dict = field(default_factory=dict)      # prim path -> reason
    gravity: tuple | None = None                     # [m/s^2] set on the builder; None: not set


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


def _rigid_body_owner(prim, time):
    """Path of the dynamic rigid body (the prim or an ancestor) that moves ``prim``, else None."""
    from pxr import UsdPhysics

    p = prim
    while p and not p.IsPseudoRoot():
        if p.HasAPI(UsdPhysics.RigidBodyAPI):
            if _get(p, "physics:rigidBodyEnabled", time, True) and not _get(p, "physics:kinematicEnabled", time,
                                                                             False):
                return str(p.GetPath())
            return None
        p = p.GetParent()
    return None


def load_usd(source, builder, *, scale=1.0, time=None, particle_mass=None, particle_radius=None,
             collider_ke=None, collider_kd=None, collider_kf=None, collider_mu=None,
             gravity: bool = True) -> UsdLoadResult:
    """Add the meshes (static colliders), points (particles) and physics-scene gravity of a USD stage
    to ``builder``; returns a :class:`UsdLoadResult`.

    ``source``: a path (``.usd``, ``.usda``, ``.usdc``, ``.usdz``) or a ``pxr.Usd.Stage``.
    ``scale``: extra factor on all lengths (points, widths, velocities) after ``metersPerUnit``.
    ``time``: the time code (a number or ``Usd.TimeCode``) of time-sampled attributes; default: the
    stage's start time code when it has a time range, else each attribute's first sample.
    ``particle_mass`` [kg per particle, a number or one per point]: for points prims without
    ``physics:mass``/``physics:density``. ``particle_radius`` [m]: for points without ``widths``.
    ``collider_ke`` [N/m], ``collider_kd`` [N s/m], ``collider_kf`` [N s/m], ``collider_mu``: mesh
    contact (default: the builder's ``soft_contact_*``). ``gravity``: read the ``PhysicsScene``'s.

    Raises ``FileNotFoundError`` (no such file), ``ValueError`` (not a USD file, points without a
    mass, inconsistent attribute sizes) and ``ImportError`` (usd-core is not installed).
    """
    stage, path = _open_stage(source)
    from pxr import Usd, UsdGeom, UsdPhysics

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

    for prim in stage.Traverse(Usd.TraverseInstanceProxies()):
        if not (prim.IsA(UsdGeom.Mesh) or prim.IsA(UsdGeom.Points)):
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
            body = _rigid_body_owner(prim, time)
            if body is not None:
                warnings.warn(f"load_usd: skipping mesh '{name}': it belongs to the dynamic rigid body '{body}' "
                              "(rigid bodies are not supported yet)", stacklevel=2)
                result.skipped[name] = f"dynamic rigid body '{body}' (not supported yet)"
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
