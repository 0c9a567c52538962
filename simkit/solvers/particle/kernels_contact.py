"""Penalty contact forces for particles: ground plane, other particles (HashGrid), static meshes.

A contact with penetration ``c < 0`` [m] along the unit normal ``n`` pushes with
``fn = ke c + kd min(vn, 0)`` and resists sliding with ``min(kf |vt|, mu |fn|)`` (Coulomb-capped
viscous friction), as in Warp's particle contacts.
"""
from __future__ import annotations

from ... import collision  # noqa: F401 - registers the hash grid and mesh builtins
from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array


@func
def contact_force(n: Any, v: Any, c: Any, ke: Any, kd: Any, kf: Any, mu: Any):
    """Force on a particle with relative velocity ``v`` penetrating by ``-c`` along normal ``n``."""
    vn = sk.dot(n, v)
    fn = c * ke + sk.min(vn, 0.0) * kd
    vt = v - n * vn
    ft = sk.min(sk.length(vt) * kf, mu * sk.abs(fn))
    return n * (-fn) - sk.normalize(vt) * ft


@kernel
def eval_ground_contacts(x: array(dtype=Any), v: array(dtype=Any), radius: array(dtype=Any),
                         inv_mass: array(dtype=Any), up: Any, height: Any, ke: Any, kd: Any, kf: Any, mu: Any,
                         f: array(dtype=Any)):
    i = sk.tid()
    if inv_mass[i] == 0.0:
        return
    c = sk.dot(x[i], up) - height - radius[i]
    if c < 0.0:
        sk.atomic_add(f, i, contact_force(up, v[i], c, ke, kd, kf, mu))


@kernel
def eval_particle_contacts(grid: T.uint64, x: array(dtype=Any), v: array(dtype=Any), radius: array(dtype=Any),
                           inv_mass: array(dtype=Any), max_radius: Any, ke: Any, kd: Any, kf: Any, mu: Any,
                           cohesion: Any, f: array(dtype=Any)):
    # each particle sums the forces its neighbours exert on it (pairs are seen from both sides)
    tid = sk.tid()
    i = sk.hash_grid_point_id(grid, tid)
    if inv_mass[i] == 0.0:
        return
    xi = x[i]
    vi = v[i]
    ri = radius[i]
    fi = type(xi)()
    query = sk.hash_grid_query(grid, xi, ri + max_radius + cohesion)
    j = int(0)
    while sk.hash_grid_query_next(query, j):
        if j != i:
            d = xi - x[j]
            err = sk.length(d) - ri - radius[j]
            if err <= cohesion:
                fi = fi + contact_force(sk.normalize(d), vi - v[j], err, ke, kd, kf, mu)
    sk.atomic_add(f, i, fi)


@func
def mesh_contact(mesh: T.uint64, xi: Any, r: Any, max_dist: Any):
    """Signed distance of the sphere (xi, r) to the mesh surface (< 0: penetrating) and the outward
    contact normal; a distance of r + max_dist (no contact) when no face is that close."""
    q = sk.mesh_query_point_sign_normal(mesh, T.vec3(xi), T.float32(r + max_dist))
    c = r + max_dist
    n = type(xi)()
    if q.result:
        cp = type(xi)(sk.mesh_eval_position(mesh, q.face, q.u, q.v))
        d = xi - cp
        dist = sk.length(d)
        sign = type(r)(q.sign)
        n = type(xi)(sk.mesh_eval_face_normal(mesh, q.face))
        if dist > 1.0e-9:
            n = d * (sign / dist)
        c = dist * sign - r
    return c, n


@kernel
def eval_mesh_contacts(x: array(dtype=Any), v: array(dtype=Any), radius: array(dtype=Any),
                       inv_mass: array(dtype=Any), shape_mesh_id: array(dtype=T.uint64), shape_ke: array(dtype=Any),
                       shape_kd: array(dtype=Any), shape_kf: array(dtype=Any), shape_mu: array(dtype=Any),
                       margin: Any, f: array(dtype=Any)):
    # dim (particle_count, shape_count): one particle against one static mesh
    i, s = sk.tid()
    if inv_mass[i] == 0.0:
        return
    c, n = mesh_contact(shape_mesh_id[s], x[i], radius[i], margin)
    if c < 0.0:
        sk.atomic_add(f, i, contact_force(n, v[i], c, shape_ke[s], shape_kd[s], shape_kf[s], shape_mu[s]))
