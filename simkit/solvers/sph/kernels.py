"""Weakly compressible SPH: density, equation of state, pressure and viscosity forces, mirror walls.

Smoothing kernels of support ``h`` (Mueller et al. 2003), with their constant factors computed on
the host (``smoothing_constants``) so that the kernels stay generic over float32 and float64:

- density, poly6: ``W(r) = 315 / (64 pi h^9) (h^2 - r^2)^3``;
- pressure, spiky gradient: ``grad W(d) = -45 / (pi h^6) (h - r)^2 d / r`` (``d = x_i - x_j``);
- viscosity, Laplacian: ``lap W(r) = 45 / (pi h^6) (h - r)``.

Both forces are written in their pairwise antisymmetric forms, so particle ``j`` pushes ``i`` exactly
as hard as ``i`` pushes ``j`` and the fluid's momentum is conserved:

- pressure: ``f_i = -m_i sum_j m_j (p_i / rho_i^2 + p_j / rho_j^2) grad W(x_i - x_j)``;
- viscosity: ``f_i = mu sum_j (m_i / rho_i) (m_j / rho_j) (v_j - v_i) lap W(|x_i - x_j|)``.

Walls (the faces of the solver's box and the ground plane) are mirrors: every particle within
``h`` of a wall also sees the mirror images of its neighbours behind it (positions and velocities
reflected; images of images behind two or three walls, for edges and corners), with the
neighbour's mass, density and pressure. A particle near a wall thus lives in the symmetric fluid
that the wall's other side would hold: full density, pressure forces that balance a uniform
pressure exactly (a particle at rest on the floor of a still tank feels the weight above it), free
slip along the wall, and, since the images move with the particles, the same energy balance as
the fluid in free space (no energy pumped in by the walls). A penalty contact (``contact_force``)
stops particles that come closer than their radius.

Each particle gathers from its neighbours (found through the HashGrid) into a local sum written
once, so no two threads write the same element and the loops' adjoints run in any order.
"""
from __future__ import annotations

import math

from ... import collision  # noqa: F401 - registers the hash grid builtins
from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array
from ..particle.kernels_contact import contact_force


def smoothing_constants(h: float) -> tuple:
    """(poly6, spiky) factors for support ``h`` [m]: ``315 / (64 pi h^9)`` and ``45 / (pi h^6)``
    (the spiky gradient's and the viscosity Laplacian's common factor)."""
    return 315.0 / (64.0 * math.pi * h ** 9), 45.0 / (math.pi * h ** 6)


@func
def mirror_point(x: Any, n: Any, offset: Any):
    """``x`` reflected in the plane ``dot(x, n) = offset`` (``n`` a unit normal, pointing into the
    fluid); a point already behind the plane moves twice as deep (its image stays behind the wall,
    so a particle pushed through a wall is pushed back, never out)."""
    return x - n * (2.0 * sk.abs(sk.dot(x, n) - offset))


@func
def mirror_vector(v: Any, n: Any):
    """The direction ``v`` reflected in a plane of unit normal ``n``."""
    return v - n * (2.0 * sk.dot(v, n))


@func
def poly6_sum(xi: Any, y: Any, h2: Any, poly6: Any):
    """``W(|xi - y|)`` with the poly6 kernel (``h2 = h^2``)."""
    w = h2 - sk.length_sq(xi - y)
    if w > 0.0:
        return poly6 * w * w * w
    return w * 0.0


@func
def near_walls(xi: Any, plane_n: Any, plane_d: Any, h: Any):
    """The walls closer than ``h`` to ``xi`` (at most three: ``SPHSolver.planes`` checks that no two
    parallel walls are closer than ``2 h``), in increasing order, and their count; -1 for none."""
    w0 = int(-1)
    w1 = int(-1)
    w2 = int(-1)
    for k in range(plane_n.shape[0]):
        if sk.dot(xi, plane_n[k]) - plane_d[k] < h:
            if w0 < 0:
                w0 = k
            elif w1 < 0:
                w1 = k
            else:
                w2 = k
    count = int(0)
    if w2 >= 0:
        count = 3
    elif w1 >= 0:
        count = 2
    elif w0 >= 0:
        count = 1
    return count, w0, w1, w2


@func
def image(m: int, x: Any, v: Any, w0: int, w1: int, w2: int, plane_n: Any, plane_d: Any):
    """``x`` and ``v`` reflected in the near walls whose bits are set in ``m`` (bit 0: ``w0``, 1:
    ``w1``, 2: ``w2``, in that order); ``m`` < 2^count."""
    y = x
    u = v
    if m & 1 != 0:
        y = mirror_point(y, plane_n[w0], plane_d[w0])
        u = mirror_vector(u, plane_n[w0])
    if m & 2 != 0:
        y = mirror_point(y, plane_n[w1], plane_d[w1])
        u = mirror_vector(u, plane_n[w1])
    if m & 4 != 0:
        y = mirror_point(y, plane_n[w2], plane_d[w2])
        u = mirror_vector(u, plane_n[w2])
    return y, u


@func
def mirrored_density(xi: Any, xj: Any, count: int, w0: int, w1: int, w2: int, plane_n: Any, plane_d: Any,
                     h2: Any, poly6: Any):
    """Sum of ``W`` over ``xj``'s images in the near walls (behind one, two, three walls). The loop
    over the 7 images is static (unrolled): no loop for the adjoint to replay."""
    acc = h2 * 0.0
    for m in range(1, 8):
        if m < (1 << count):
            y, u = image(m, xj, xj, w0, w1, w2, plane_n, plane_d)
            acc = acc + poly6_sum(xi, y, h2, poly6)
    return acc


@func
def pair_force(xi: Any, vi: Any, y: Any, vy: Any, h: Any, cp: Any, cv: Any):
    """Pressure and viscosity force on a particle at ``xi`` (velocity ``vi``) from one at ``y``
    (velocity ``vy``): ``cp (h - r)^2 / r (xi - y) + cv (h - r) (vy - vi)`` within ``h``."""
    d = xi - y
    r2 = sk.length_sq(d)
    f = d * (h * 0.0)
    if r2 < h * h and r2 > 0.0:
        r = sk.sqrt(r2)
        q = h - r
        f = d * (cp * q * q / r) + (vy - vi) * (cv * q)
    return f


@func
def mirrored_force(xi: Any, vi: Any, xj: Any, vj: Any, count: int, w0: int, w1: int, w2: int, plane_n: Any,
                   plane_d: Any, h: Any, cp: Any, cv: Any):
    """Sum of ``pair_force`` over ``xj``'s images in the near walls (static loop, as above)."""
    f = xi * (h * 0.0)
    for m in range(1, 8):
        if m < (1 << count):
            y, u = image(m, xj, vj, w0, w1, w2, plane_n, plane_d)
            f = f + pair_force(xi, vi, y, u, h, cp, cv)
    return f


@kernel
def eval_density(grid: T.uint64, x: array(dtype=Any), mass: array(dtype=Any), plane_n: array(dtype=Any),
                 plane_d: array(dtype=Any), h: Any, poly6: Any, rho: array(dtype=Any)):
    # rho_i = sum_j m_j W(|x_i - x_j|) over the neighbours, the particle itself and their mirror images
    tid = sk.tid()
    i = sk.hash_grid_point_id(grid, tid)
    xi = x[i]
    count, w0, w1, w2 = near_walls(xi, plane_n, plane_d, h)
    h2 = h * h
    d = h * 0.0
    query = sk.hash_grid_query(grid, xi, h)
    j = int(0)
    while sk.hash_grid_query_next(query, j):
        xj = x[j]
        w = poly6_sum(xi, xj, h2, poly6)
        if count > 0:
            w = w + mirrored_density(xi, xj, count, w0, w1, w2, plane_n, plane_d, h2, poly6)
        d = d + mass[j] * w
    rho[i] = d


@kernel
def eval_pressure(rho: array(dtype=Any), rest_density: Any, stiffness: Any, p: array(dtype=Any)):
    # Tait's equation of state with exponent 7, clamped at zero (no suction at the free surface)
    i = sk.tid()
    ratio = rho[i] / rest_density
    r2 = ratio * ratio
    r7 = r2 * r2 * r2 * ratio
    p[i] = sk.max(stiffness * (r7 - 1.0), 0.0)


@kernel
def eval_sph_forces(grid: T.uint64, x: array(dtype=Any), v: array(dtype=Any), mass: array(dtype=Any),
                    inv_mass: array(dtype=Any), radius: array(dtype=Any), rho: array(dtype=Any),
                    p: array(dtype=Any), plane_n: array(dtype=Any), plane_d: array(dtype=Any), h: Any,
                    spiky: Any, viscosity: Any, wall_ke: Any, wall_kd: Any, wall_kf: Any, wall_mu: Any,
                    f: array(dtype=Any)):
    # pressure and viscosity forces on particle i from every neighbour within h and their mirror
    # images, and the walls' penalty contacts
    tid = sk.tid()
    i = sk.hash_grid_point_id(grid, tid)
    if inv_mass[i] == 0.0:
        return
    xi = x[i]
    vi = v[i]
    mi = mass[i]
    rhoi = rho[i]
    pi_rho2 = p[i] / (rhoi * rhoi)
    fi = xi * (h * 0.0)
    count, w0, w1, w2 = near_walls(xi, plane_n, plane_d, h)
    for k in range(plane_n.shape[0]):
        c = sk.dot(xi, plane_n[k]) - plane_d[k] - radius[i]
        if c < 0.0:
            fi = fi + contact_force(plane_n[k], vi, c, wall_ke, wall_kd, wall_kf, wall_mu)
    query = sk.hash_grid_query(grid, xi, h)
    j = int(0)
    while sk.hash_grid_query_next(query, j):
        rhoj = rho[j]
        mij = mi * mass[j] * spiky
        cp = mij * (pi_rho2 + p[j] / (rhoj * rhoj))
        cv = mij * viscosity / (rhoi * rhoj)
        if j != i:
            fi = fi + pair_force(xi, vi, x[j], v[j], h, cp, cv)
        if count > 0:
            fi = fi + mirrored_force(xi, vi, x[j], v[j], count, w0, w1, w2, plane_n, plane_d, h, cp, cv)
    sk.atomic_add(f, i, fi)
