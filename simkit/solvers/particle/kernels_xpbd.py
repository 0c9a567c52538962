"""XPBD (extended position-based dynamics) for particles: prediction, spring and membrane
constraints, contact projections, and the averaged (Jacobi) position update.

Each iteration reads the positions and Lagrange multipliers of the previous iteration and writes
new arrays: constraint kernels add corrections into ``delta`` with atomics, and ``apply_deltas``
writes ``x + delta / count``. Springs and triangles scale their multiplier change by
``relaxation / n`` (n: the most constraints on any of their particles), so positions and multipliers
stay consistent (Jacobi with constraint averaging) and their ``count`` is 1; contacts add 1 to
``count`` per correction and are averaged. Nothing is updated in place, so the Tape differentiates
every iteration.

Constraint update (Macklin et al. 2016, with damping): for ``C(x)`` with compliance ``alpha``
(``1 / stiffness``) and damping ratio ``gamma``,
``dlambda = (-C - alpha~ lambda - gamma grad C . (x - x_start)) / ((1 + gamma) sum w |grad C|^2 + alpha~)``,
``alpha~ = alpha / dt^2``, and every particle moves by ``w grad C dlambda``.
"""
from __future__ import annotations

from ... import collision  # noqa: F401 - registers the hash grid and mesh builtins
from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array, array2d
from .kernels_contact import mesh_contact


@kernel
def predict_positions(x: array(dtype=Any), v: array(dtype=Any), f_ext: array(dtype=Any),
                      inv_mass: array(dtype=Any), gravity: Any, damping: Any, max_velocity: Any, dt: Any,
                      x_pred: array(dtype=Any)):
    i = sk.tid()
    w = inv_mass[i]
    v1 = v[i]
    if w > 0.0:
        v1 = v1 + (f_ext[i] * w + gravity - v1 * damping) * dt
        speed = sk.length(v1)
        if speed > max_velocity:
            v1 = v1 * (max_velocity / speed)
    x_pred[i] = x[i] + v1 * dt


@func
def xpbd_dlambda(c: Any, dc_disp: Any, wsum: Any, stiffness: Any, kd: Any, lam: Any, dt: Any):
    """Multiplier change of one constraint with value ``c``, grad C . (x - x_start) = ``dc_disp``,
    sum w |grad C|^2 = ``wsum``, stiffness and damping (same units as the constraint's)."""
    alpha = 1.0 / (stiffness * dt * dt)
    gamma = kd / (stiffness * dt)
    return (-c - alpha * lam - gamma * dc_disp) / ((1.0 + gamma) * wsum + alpha)


@kernel
def solve_springs(x: array(dtype=Any), x_start: array(dtype=Any), inv_mass: array(dtype=Any),
                  spring_indices: array(dtype=T.int32), rest_length: array(dtype=Any), stiffness: array(dtype=Any),
                  damping: array(dtype=Any), activation: array(dtype=Any), lambda_in: array(dtype=Any),
                  constraint_count: array(dtype=Any), relaxation: Any, dt: Any, delta: array(dtype=Any),
                  lambda_out: array(dtype=Any)):
    tid = sk.tid()
    i = spring_indices[tid * 2 + 0]
    j = spring_indices[tid * 2 + 1]
    lam = lambda_in[tid]
    wi = inv_mass[i]
    wj = inv_mass[j]
    ke = stiffness[tid]
    xij = x[i] - x[j]
    length = sk.length(xij)
    dlam = lam * 0.0
    if ke > 0.0 and wi + wj > 0.0 and length > 0.0:
        n = xij / length
        c = length - rest_length[tid] * (1.0 + activation[tid])
        disp = sk.dot(n, (x[i] - x_start[i]) - (x[j] - x_start[j]))
        scale = relaxation / sk.max(constraint_count[i], constraint_count[j])
        dlam = xpbd_dlambda(c, disp, wi + wj, ke, damping[tid], lam, dt) * scale
        sk.atomic_add(delta, i, n * (wi * dlam))
        sk.atomic_sub(delta, j, n * (wj * dlam))
    lambda_out[tid] = lam + dlam


@func
def tri_constraint(c: int, p0: Any, p1: Any, p2: Any, dm: Any, a0: Any):
    """Constraint ``c`` of a membrane triangle and its gradients with respect to p1 and p2 (that of
    p0 is minus their sum): 0, 1 stretch |F_u| - 1, |F_v| - 1; 2 shear F_u . F_v; 3 area ratio - 1."""
    x10 = p1 - p0
    x20 = p2 - p0
    fu = x10 * dm[0, 0] + x20 * dm[1, 0]
    fv = x10 * dm[0, 1] + x20 * dm[1, 1]
    val = a0 * 0.0
    g1 = type(p0)()
    g2 = type(p0)()
    if c == 0:
        val = sk.length(fu) - 1.0
        g1 = sk.normalize(fu) * dm[0, 0]
        g2 = sk.normalize(fu) * dm[1, 0]
    elif c == 1:
        val = sk.length(fv) - 1.0
        g1 = sk.normalize(fv) * dm[0, 1]
        g2 = sk.normalize(fv) * dm[1, 1]
    elif c == 2:
        val = sk.dot(fu, fv)
        g1 = fv * dm[0, 0] + fu * dm[0, 1]
        g2 = fv * dm[1, 0] + fu * dm[1, 1]
    else:
        n = sk.cross(x10, x20)
        nh = sk.normalize(n)
        val = sk.length(n) * 0.5 / a0 - 1.0
        g1 = sk.cross(x20, nh) * (0.5 / a0)
        g2 = sk.cross(nh, x10) * (0.5 / a0)
    return val, g1, g2


@kernel
def solve_triangles(x: array(dtype=Any), x_start: array(dtype=Any), inv_mass: array(dtype=Any),
                    tri_indices: array2d(dtype=T.int32), tri_poses: array(dtype=Any), tri_areas: array(dtype=Any),
                    tri_materials: array2d(dtype=Any), lambda_in: array(dtype=Any), constraint_count: array(dtype=Any),
                    relaxation: Any, dt: Any, delta: array(dtype=Any), lambda_out: array(dtype=Any)):
    # four constraints per triangle, solved one after the other (Gauss-Seidel inside the triangle);
    # stiffnesses 2 mu A0, 2 mu A0, mu A0, (lambda - mu) A0 give the small-strain energy of the
    # membrane of eval_triangles: A0 (mu e:e + (lambda - mu) / 2 tr(e)^2)
    t = sk.tid()
    i = tri_indices[t, 0]
    j = tri_indices[t, 1]
    k = tri_indices[t, 2]
    w0 = inv_mass[i]
    w1 = inv_mass[j]
    w2 = inv_mass[k]
    s0 = x_start[i]
    s1 = x_start[j]
    s2 = x_start[k]
    p0 = x[i]
    p1 = x[j]
    p2 = x[k]
    dm = tri_poses[t]
    a0 = tri_areas[t]
    mu = tri_materials[t, 0]
    lam = tri_materials[t, 1]
    kd = tri_materials[t, 2]
    scale = relaxation / sk.max(sk.max(constraint_count[i], constraint_count[j]), constraint_count[k])
    for c in range(4):
        stiff = mu * a0 * 2.0
        damp = kd * a0 * 2.0
        if c == 2:
            stiff = mu * a0
            damp = kd * a0
        if c == 3:
            stiff = (lam - mu) * a0
            damp = kd * a0
        li = lambda_in[t * 4 + c]
        dl = li * 0.0
        if stiff > 0.0 and w0 + w1 + w2 > 0.0:
            val, g1, g2 = tri_constraint(c, p0, p1, p2, dm, a0)
            g0 = -(g1 + g2)
            wsum = w0 * sk.dot(g0, g0) + w1 * sk.dot(g1, g1) + w2 * sk.dot(g2, g2)
            if wsum > 0.0:
                disp = sk.dot(g0, p0 - s0) + sk.dot(g1, p1 - s1) + sk.dot(g2, p2 - s2)
                dl = xpbd_dlambda(val, disp, wsum, stiff, damp, li, dt) * scale
                p0 = p0 + g0 * (w0 * dl)
                p1 = p1 + g1 * (w1 * dl)
                p2 = p2 + g2 * (w2 * dl)
        lambda_out[t * 4 + c] = li + dl
    sk.atomic_add(delta, i, p0 - x[i])
    sk.atomic_add(delta, j, p1 - x[j])
    sk.atomic_add(delta, k, p2 - x[k])


@func
def friction_correction(n: Any, disp: Any, penetration: Any, mu: Any):
    """Position-level Coulomb friction: cancel the tangential displacement ``disp`` of this step,
    at most ``mu * penetration`` (static when it is smaller)."""
    dt_ = disp - n * sk.dot(disp, n)
    return sk.normalize(dt_) * (-sk.min(mu * penetration, sk.length(dt_)))


@kernel
def solve_ground(x: array(dtype=Any), x_start: array(dtype=Any), inv_mass: array(dtype=Any),
                 radius: array(dtype=Any), up: Any, height: Any, mu: Any, delta: array(dtype=Any),
                 count: array(dtype=Any)):
    i = sk.tid()
    if inv_mass[i] == 0.0:
        return
    xi = x[i]
    c = sk.dot(xi, up) - height - radius[i]
    if c < 0.0:
        corr = up * (-c) + friction_correction(up, xi - x_start[i], -c, mu)
        sk.atomic_add(delta, i, corr)
        sk.atomic_add(count, i, count.dtype(1.0))


@kernel
def solve_particle_contacts(grid: T.uint64, x: array(dtype=Any), x_start: array(dtype=Any),
                            inv_mass: array(dtype=Any), radius: array(dtype=Any), query_radius: Any, mu: Any,
                            delta: array(dtype=Any), count: array(dtype=Any)):
    # each particle moves its share (by inverse mass) out of every overlapping neighbour
    tid = sk.tid()
    i = sk.hash_grid_point_id(grid, tid)
    wi = inv_mass[i]
    if wi == 0.0:
        return
    xi = x[i]
    ri = radius[i]
    si = x_start[i]
    corr = type(xi)()
    num = ri * 0.0
    query = sk.hash_grid_query(grid, xi, ri + query_radius)
    j = int(0)
    while sk.hash_grid_query_next(query, j):
        if j != i:
            d = xi - x[j]
            err = sk.length(d) - ri - radius[j]
            if err < 0.0:
                share = wi / (wi + inv_mass[j])
                n = sk.normalize(d)
                rel = (xi - si) - (x[j] - x_start[j])
                corr = corr + (n * (-err) + friction_correction(n, rel, -err, mu)) * share
                num = num + 1.0
    if num > 0.0:
        sk.atomic_add(delta, i, corr)
        sk.atomic_add(count, i, num)


@kernel
def solve_mesh_contacts(x: array(dtype=Any), x_start: array(dtype=Any), inv_mass: array(dtype=Any),
                        radius: array(dtype=Any), shape_mesh_id: array(dtype=T.uint64), shape_mu: array(dtype=Any),
                        margin: Any, delta: array(dtype=Any), count: array(dtype=Any)):
    # dim (particle_count, shape_count); the search reaches as far as the particle moved this step
    i, s = sk.tid()
    if inv_mass[i] == 0.0:
        return
    xi = x[i]
    disp = xi - x_start[i]
    c, n = mesh_contact(shape_mesh_id[s], xi, radius[i], margin + sk.length(disp))
    if c < 0.0:
        sk.atomic_add(delta, i, n * (-c) + friction_correction(n, disp, -c, shape_mu[s]))
        sk.atomic_add(count, i, count.dtype(1.0))


@kernel
def apply_deltas(x: array(dtype=Any), delta: array(dtype=Any), count: array(dtype=Any),
                 x_out: array(dtype=Any)):
    i = sk.tid()
    x_out[i] = x[i] + delta[i] / sk.max(count[i], 1.0)


@kernel
def update_velocities(x_start: array(dtype=Any), x: array(dtype=Any), dt: Any, x_out: array(dtype=Any),
                      v_out: array(dtype=Any)):
    i = sk.tid()
    x_out[i] = x[i]
    v_out[i] = (x[i] - x_start[i]) / dt
