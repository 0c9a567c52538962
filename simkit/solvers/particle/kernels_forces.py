"""Internal forces of particle models (springs, membrane triangles) and the semi-implicit Euler update.

Every kernel is generic (``Any``): the same source runs float32 (vec3) and float64 (vec3d) models.
Forces accumulate with atomic adds into a force array that no launch of the step has read yet, so
the Tape can differentiate them.
"""
from __future__ import annotations

from ...kernels import kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array, array2d


@kernel
def eval_springs(x: array(dtype=Any), v: array(dtype=Any), spring_indices: array(dtype=T.int32),
                 rest_length: array(dtype=Any), stiffness: array(dtype=Any), damping: array(dtype=Any),
                 activation: array(dtype=Any), f: array(dtype=Any)):
    # damped Hookean springs: f = (ke (l - L) + kd dl/dt) along the spring; L = rest (1 + activation)
    tid = sk.tid()
    i = spring_indices[tid * 2 + 0]
    j = spring_indices[tid * 2 + 1]
    xij = x[i] - x[j]
    vij = v[i] - v[j]
    length = sk.length(xij)
    if length == 0.0:
        return
    d = xij / length
    c = length - rest_length[tid] * (1.0 + activation[tid])
    fs = d * (stiffness[tid] * c + damping[tid] * sk.dot(d, vij))
    sk.atomic_sub(f, i, fs)
    sk.atomic_add(f, j, fs)


@kernel
def eval_triangles(x: array(dtype=Any), v: array(dtype=Any), tri_indices: array2d(dtype=T.int32),
                   tri_poses: array(dtype=Any), tri_areas: array(dtype=Any), tri_materials: array2d(dtype=Any),
                   f: array(dtype=Any)):
    # stable Neo-Hookean membrane, energy A0 (mu/2 (|F|^2 - 2) + lambda/2 (J - alpha)^2) with
    # alpha = 1 + mu/lambda (stress-free at rest), F = [x1 - x0, x2 - x0] Dm^-1 (3x2), J the area
    # ratio; damping kd on the strain rate sym(F^T dF/dt) and on dJ/dt (rigid motion is not damped)
    t = sk.tid()
    i = tri_indices[t, 0]
    j = tri_indices[t, 1]
    k = tri_indices[t, 2]
    x10 = x[j] - x[i]
    x20 = x[k] - x[i]
    v10 = v[j] - v[i]
    v20 = v[k] - v[i]
    dm = tri_poses[t]
    a0 = tri_areas[t]
    mu = tri_materials[t, 0]
    lam = tri_materials[t, 1]
    kd = tri_materials[t, 2]
    f1 = x10 * dm[0, 0] + x20 * dm[1, 0]  # columns of F
    f2 = x10 * dm[0, 1] + x20 * dm[1, 1]
    df1 = v10 * dm[0, 0] + v20 * dm[1, 0]
    df2 = v10 * dm[0, 1] + v20 * dm[1, 1]
    e11 = sk.dot(f1, df1)  # strain rate sym(F^T dF/dt)
    e22 = sk.dot(f2, df2)
    e12 = 0.5 * (sk.dot(f1, df2) + sk.dot(f2, df1))
    p1 = f1 * mu + (f1 * e11 + f2 * e12) * kd  # first Piola-Kirchhoff stress, column by column
    p2 = f2 * mu + (f1 * e12 + f2 * e22) * kd
    g1 = (p1 * dm[0, 0] + p2 * dm[0, 1]) * a0  # dE/dx1
    g2 = (p1 * dm[1, 0] + p2 * dm[1, 1]) * a0  # dE/dx2
    n = sk.cross(x10, x20)
    ln = sk.length(n)
    if lam > 0.0 and ln > 0.0:
        nh = n / ln
        jac = ln * 0.5 / a0
        dj1 = sk.cross(x20, nh) * (0.5 / a0)  # dJ/dx1
        dj2 = sk.cross(nh, x10) * (0.5 / a0)  # dJ/dx2
        s = (lam * (jac - 1.0 - mu / lam) + kd * (sk.dot(dj1, v10) + sk.dot(dj2, v20))) * a0
        g1 = g1 + dj1 * s
        g2 = g2 + dj2 * s
    sk.atomic_sub(f, j, g1)
    sk.atomic_sub(f, k, g2)
    sk.atomic_add(f, i, g1 + g2)


@kernel
def integrate_particles(x: array(dtype=Any), v: array(dtype=Any), f_ext: array(dtype=Any), f_int: array(dtype=Any),
                        inv_mass: array(dtype=Any), gravity: Any, damping: Any, max_velocity: Any, dt: Any,
                        x_out: array(dtype=Any), v_out: array(dtype=Any)):
    # semi-implicit Euler: v' = v + (f / m + g - damping v) dt, x' = x + v' dt; kinematic particles
    # (inverse mass 0) keep their velocity
    i = sk.tid()
    w = inv_mass[i]
    v1 = v[i]
    if w > 0.0:
        v1 = v1 + ((f_ext[i] + f_int[i]) * w + gravity - v1 * damping) * dt
        speed = sk.length(v1)
        if speed > max_velocity:
            v1 = v1 * (max_velocity / speed)
    x_out[i] = x[i] + v1 * dt
    v_out[i] = v1
