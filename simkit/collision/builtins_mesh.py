"""Kernel builtins of the triangle mesh (``native/geometry.h``, ``native/mesh.h``), registered with
the compiler's public registry at import.

Point and ray queries return struct values, as in current Warp::

    q = wp.mesh_query_point(mesh_id, p, max_dist)       # MeshQueryPoint
    if q.result:
        cp = wp.mesh_eval_position(mesh_id, q.face, q.u, q.v)
        inside = q.sign < 0.0
    h = wp.mesh_query_ray(mesh_id, start, dir, max_t)   # MeshQueryRay: .t .u .v .face .normal .sign

Barycentric convention: a point with coordinates (u, v) on face (a, b, c) is u a + v b + (1-u-v) c.
The point and ray queries and ``mesh_eval_*`` are differentiable with respect to the query point /
ray and to the vertex positions (vertex adjoints go to the mesh points array's ``.grad``); the
signs, face indices, the furthest point's (u, v) (a vertex's) and box queries are not.
"""
from __future__ import annotations

import os

from ..kernels import registry, struct
from ..kernels.types import bool as bool_t
from ..kernels.types import ArrayType as array
from ..kernels.types import float32, float64, int32, uint64, vec3, vec3d
from .builtins_bvh import NATIVE

_G = "geometry"


@struct
class MeshQueryPoint:
    """Result of the ``mesh_query_point*`` builtins: ``result`` (a face within max_dist was found),
    ``sign`` (< 0 inside, > 0 outside; 0 for ``mesh_query_point_no_sign``), ``face`` and the
    barycentric coordinates ``u``, ``v`` of the closest point."""

    result: bool
    sign: float
    face: int
    u: float
    v: float


@struct
class MeshQueryRay:
    """Result of ``mesh_query_ray``: ``result`` (hit with 0 <= t < max_t), ``sign`` (+1 front face,
    -1 back face), ``face``, ``t`` (hit = start + t * dir), barycentrics ``u``, ``v`` and the unit
    face ``normal`` (by winding order)."""

    result: bool
    sign: float
    face: int
    t: float
    u: float
    v: float
    normal: vec3


@struct
class MeshArrays:
    """``mesh_get(id)`` in kernels: the Mesh's ``points`` and ``velocities`` (None-like, shape 0, without
    velocities) and its index buffer ``indices`` (three per face), as arrays sharing the mesh's memory; loads
    from ``points`` pass their adjoints to the points array's ``.grad``."""

    points: array(dtype=vec3)
    velocities: array(dtype=vec3)
    indices: array(dtype=int32)


class MeshQuery:
    """Traversal state of a mesh box or sphere query (``sk::mesh_query_t``), advanced by ``mesh_query_next``.
    The query stores its kind, so one type serves both (``MeshQueryAABB`` is the same type, Warp's older name)."""

    _simkit_opaque = "sk::mesh_query_t"


MeshQueryAABB = MeshQuery


registry.add_header(os.path.join(NATIVE, "geometry.h"))
registry.add_header(os.path.join(NATIVE, "mesh.h"))
registry.add_header(os.path.join(NATIVE, "mesh_query.h"))


def _templated(name):
    return lambda info, ret: f"sk::{name}<{ret}>"


_P = {"id": uint64, "point": vec3, "max_dist": float32}
_POINT_DOC = ("Closest point on the Mesh ``id`` to ``point`` among faces strictly closer than ``max_dist``: a "
              "MeshQueryPoint (``result``, ``sign``, ``face``, ``u``, ``v``). Sliver faces are skipped. ")

registry.add_builtin("mesh_query_point", _P, MeshQueryPoint, native=_templated("mesh_query_point"), group=_G,
                     doc=_POINT_DOC + "Sign: majority vote of three axis-aligned rays (closest hit on a back face "
                                      "votes inside; watertight meshes with consistent winding).")
registry.add_builtin("mesh_query_point_no_sign", _P, MeshQueryPoint, native=_templated("mesh_query_point_no_sign"),
                     group=_G, doc=_POINT_DOC + "No sign (0): the fastest point query.")
for _extra in ({"epsilon": float32}, {}):
    registry.add_builtin(
        "mesh_query_point_sign_normal", {**_P, **_extra}, MeshQueryPoint,
        native=_templated("mesh_query_point_sign_normal"), group=_G,
        doc=_POINT_DOC + "Sign from the angle-weighted pseudo-normal at the closest point; faces whose closest "
                         "point lies within ``epsilon`` (default 1e-3) times the mean edge length of it are "
                         "combined at edges and vertices. Robust for watertight, non-self-intersecting meshes.")
for _extra in ({"accuracy": float32, "threshold": float32}, {"accuracy": float32}, {}):
    registry.add_builtin(
        "mesh_query_point_sign_winding_number", {**_P, **_extra}, MeshQueryPoint,
        native=_templated("mesh_query_point_sign_winding_number"), group=_G,
        doc=_POINT_DOC + "Sign from the generalized winding number (inside when > ``threshold``, default 0.5), "
                         "computed with the dipole approximation for subtrees farther than ``accuracy`` (default "
                         "2) times their radius; works for open meshes. Needs "
                         "``Mesh(..., support_winding_number=True)``, else falls back to the ray vote.")
for _extra in ({"n_sample": int32, "perturbation_scale": float32}, {"n_sample": int32}, {}):
    registry.add_builtin(
        "mesh_query_point_sign_parity", {**_P, **_extra}, MeshQueryPoint,
        native=_templated("mesh_query_point_sign_parity"), group=_G,
        doc=_POINT_DOC + "Sign by ray parity (Warp's): inside (-1) when at least half of ``n_sample`` (default 1) "
                         "rays from the point cross the mesh an odd number of times, else +1. Ray directions are "
                         "(1, 1, 1) plus a per-axis offset uniform in [-``perturbation_scale``, "
                         "``perturbation_scale``) (default 0.1), from a fixed seed (deterministic); n_sample <= 0 "
                         "counts as inside. The sign looks at the whole mesh, whatever ``max_dist``.")
registry.add_builtin(
    "mesh_query_furthest_point_no_sign", {"id": uint64, "point": vec3, "min_dist": float32}, MeshQueryPoint,
    native=_templated("mesh_query_furthest_point_no_sign"), differentiable=False, group=_G,
    doc="Furthest point on the Mesh ``id`` from ``point`` among faces with a point strictly farther than "
        "``min_dist``: a MeshQueryPoint (``result``, ``face``, ``u``, ``v``; ``sign`` 0). Sliver faces are skipped. "
        "It is a vertex of that face, so (``u``, ``v``) is (1, 0), (0, 1) or (0, 0) and has no gradient: "
        "gradients reach ``point`` and the vertices through ``mesh_eval_position(id, face, u, v)``.")
registry.add_builtin(
    "mesh_query_winding_number", {"id": uint64, "point": vec3, "accuracy": float32}, float32,
    differentiable=False, group=_G,
    doc="The generalized winding number of the Mesh ``id`` at ``point`` (1 inside a closed, outward-oriented "
        "mesh, 0 outside); 0 unless built with ``support_winding_number=True``.")

_RAY = {"id": uint64, "start": vec3, "dir": vec3}
_ROOT = " Optional ``root``: a group's subtree root (from ``mesh_get_group_root``), or -1 for the whole mesh."
for _extra in ({}, {"root": int32}):
    registry.add_builtin(
        "mesh_query_ray", {**_RAY, "max_t": float32, **_extra}, MeshQueryRay,
        native=_templated("mesh_query_ray"), group=_G,
        doc="Closest hit of the ray ``start + t * dir`` with the Mesh ``id`` for 0 <= t < ``max_t`` (t in "
            "multiples of |dir|; watertight triangle test): a MeshQueryRay (``result``, ``sign``, ``face``, ``t``, "
            "``u``, ``v``, ``normal``)." + _ROOT)
    registry.add_builtin(
        "mesh_query_ray_anyhit", {**_RAY, "max_t": float32, **_extra}, bool_t, differentiable=False, group=_G,
        doc="Whether the ray ``start + t * dir`` hits a face of Mesh ``id`` with 0 <= t < ``max_t`` (stops at the "
            "first hit found: cheaper than ``mesh_query_ray``)." + _ROOT)
    registry.add_builtin(
        "mesh_query_ray_count_intersections", {**_RAY, **_extra}, int32, differentiable=False, group=_G,
        doc="The number of faces of Mesh ``id`` the ray ``start + t * dir`` meets at t >= 0 (odd: the origin is "
            "inside a closed mesh); a ray through an edge or vertex counts every face there." + _ROOT)
# Warp's older forms: the results go to the caller's variables (updated in place), the call returns `result`
_F, _I = float32, int32
_OUT_POINT = {"sign": _F, "face": _I, "bary_u": _F, "bary_v": _F}
_LEGACY = [
    ("mesh_query_point", {**_P, **_OUT_POINT}),
    ("mesh_query_point_no_sign", {**_P, "face": _I, "bary_u": _F, "bary_v": _F}),
    ("mesh_query_point_sign_normal", {**_P, **_OUT_POINT}),
    ("mesh_query_point_sign_normal", {**_P, **_OUT_POINT, "epsilon": _F}),
    ("mesh_query_point_sign_winding_number", {**_P, **_OUT_POINT}),
    ("mesh_query_point_sign_winding_number", {**_P, **_OUT_POINT, "accuracy": _F, "threshold": _F}),
    ("mesh_query_furthest_point_no_sign", {"id": uint64, "point": vec3, "min_dist": _F, "face": _I, "bary_u": _F,
                                           "bary_v": _F}),
]
_OUT_PARITY = {"inside": _F, "face": _I, "bary_u": _F, "bary_v": _F}
_LEGACY += [("mesh_query_point_sign_parity", {**_P, **_OUT_PARITY, **_extra})
            for _extra in ({}, {"n_sample": _I}, {"n_sample": _I, "perturbation_scale": _F})]
_OUT_RAY = {"t": _F, "bary_u": _F, "bary_v": _F, "sign": _F, "normal": vec3, "face": _I}
_LEGACY += [("mesh_query_ray", {**_RAY, "max_t": _F, **_OUT_RAY, **_extra}) for _extra in ({}, {"root": _I})]
for _key, _inputs in _LEGACY:
    registry.add_builtin(
        _key, _inputs, bool_t, differentiable=_key != "mesh_query_furthest_point_no_sign", side_effects=True,
        hidden=True, group=_G,
        inout=tuple(k for k in ("sign", "inside", "face", "bary_u", "bary_v", "t", "normal") if k in _inputs),
        doc=f"Warp's older form of ``{_key}``: writes the results to the variables passed and returns whether "
            "a face was found (the variables keep their values when not).")

registry.add_builtin(
    "mesh_get_group_root", {"id": uint64, "group": int32}, int32, differentiable=False, group=_G,
    doc="The root of group ``group``'s faces in Mesh ``id`` (built with ``groups=``), for the ``root`` of its ray "
        "queries; -1 (the whole mesh) when there is no such group.")
registry.add_builtin(
    "mesh_get_bvh", {"id": uint64}, uint64, differentiable=False, group=_G,
    doc="The id of the Mesh ``id``'s BVH over its face boxes, for the ``bvh_query_*`` builtins (the items they "
        "return are face indices).")

registry.add_builtin(
    "mesh_query_aabb", {"id": uint64, "low": vec3, "high": vec3}, MeshQuery, differentiable=False, group=_G,
    doc="Start a query of the faces of Mesh ``id`` whose bounding box overlaps [low, high]; iterate with "
        "``mesh_query_next`` (a broad phase: the face itself may miss the box).")
registry.add_builtin(
    "mesh_query_sphere", {"id": uint64, "center": vec3, "radius": float32}, MeshQuery, differentiable=False,
    group=_G,
    doc="Start a query of the faces of Mesh ``id`` within ``radius`` of ``center`` (exact point-triangle "
        "distance, touching included; a negative radius counts as 0); iterate with ``mesh_query_next``.")
_MESH_BATCHED = ("sk::mesh_query_next_range", "sk::mesh_query_more", "sk::mesh_query_take")
for _key in ("mesh_query_next", "mesh_query_aabb_next"):
    registry.add_builtin(
        _key, {"query": MeshQuery, "index": int32}, bool_t, differentiable=False, side_effects=True,
        inout=("query", "index"), group=_G, batched=_MESH_BATCHED,
        doc="Advance ``query`` (a box or sphere query): write the next matching face to ``index`` and return True, "
            "or return False when done." + (" (Warp's older name of ``mesh_query_next``.)"
                                            if _key == "mesh_query_aabb_next" else ""))

registry.add_builtin(
    "mesh_get", {"id": uint64}, MeshArrays, native=_templated("mesh_arrays"), group=_G,
    doc="The Mesh ``id``'s arrays: a MeshArrays (``points``, ``velocities``, ``indices``) sharing its memory; "
        "gradients of what is read from ``points`` reach the points array's ``.grad``.")

_E = {"id": uint64, "face": int32, "bary_u": float32, "bary_v": float32}
registry.add_builtin("mesh_eval_position", _E, vec3, group=_G,
                     doc="The point u a + v b + (1-u-v) c of face ``face`` (a, b, c) of Mesh ``id``.")
registry.add_builtin("mesh_eval_velocity", _E, vec3, group=_G,
                     doc="The velocity interpolated like ``mesh_eval_position`` (zero without mesh velocities).")
registry.add_builtin("mesh_eval_face_normal", {"id": uint64, "face": int32}, vec3, group=_G,
                     doc="Unit normal of face ``face`` of Mesh ``id``: normalize(cross(b - a, c - a)).")
registry.add_builtin(
    "mesh_get_point", {"id": uint64, "index": int32}, vec3, differentiable=False, group=_G,
    doc="``points[indices[index]]``: the vertex at position ``index`` (in [0, 3 * faces)) of the index buffer.")
registry.add_builtin(
    "mesh_get_velocity", {"id": uint64, "index": int32}, vec3, differentiable=False, group=_G,
    doc="``velocities[indices[index]]`` (zero without mesh velocities).")
registry.add_builtin(
    "mesh_get_index", {"id": uint64, "index": int32}, int32, differentiable=False, group=_G,
    doc="``indices[index]``: the vertex index at position ``index`` of the index buffer (-1 out of range).")

for _v, _s in ((vec3, float32), (vec3d, float64)):
    registry.add_builtin(
        "closest_point_edge_edge", {"p1": _v, "q1": _v, "p2": _v, "q2": _v, "epsilon": _s}, _v, group=_G,
        doc="Closest points of segments [p1, q1] and [p2, q2]: (s, t, d) with the points p1 + s (q1 - p1), "
            "p2 + t (q2 - p2) and their distance d; a segment with squared length <= epsilon is a point.")
    registry.add_builtin(
        "intersect_tri_tri", {"v0": _v, "v1": _v, "v2": _v, "u0": _v, "u1": _v, "u2": _v}, int32,
        differentiable=False, group=_G,
        doc="1 if triangles (v0, v1, v2) and (u0, u1, u2) intersect (Moller's test; coplanar overlaps "
            "count), else 0.")
