"""Kernels of benchmarks/particles.py, written once in the Warp language.

Imported twice by ``particles.py`` (``load(backend)``): once with ``wp`` bound to simkit and once to
warp-lang, so both libraries compile the very same source. Two scenes, stepped with semi-implicit
Euler and penalty contacts (the contact model of simkit's SemiImplicitEulerSolver and Warp's
particle contacts):

- cloth: a mass-spring cloth (structural, shear and bending springs) falling onto a sphere mesh
  (``mesh_query_point_sign_normal``) above a ground plane;
- particles: a block of particles with particle-particle contacts through a ``HashGrid`` and a
  ground plane.
"""
wp = globals()["wp"]  # injected by particles.load() before this module runs


@wp.func
def contact_force(n: wp.vec3, v: wp.vec3, c: float, ke: float, kd: float, kf: float, mu: float):
    vn = wp.dot(n, v)
    fn = c * ke + wp.min(vn, 0.0) * kd
    vt = v - n * vn
    ft = wp.min(wp.length(vt) * kf, mu * wp.abs(fn))
    return n * (-fn) - wp.normalize(vt) * ft


@wp.kernel
def eval_springs(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), indices: wp.array(dtype=int),
                 rest: wp.array(dtype=float), ke: float, kd: float, f: wp.array(dtype=wp.vec3)):
    s = wp.tid()
    i = indices[2 * s]
    j = indices[2 * s + 1]
    d = x[i] - x[j]
    length = wp.length(d)
    if length < 1.0e-9:
        return
    dir = d / length
    fs = dir * (ke * (length - rest[s]) + kd * wp.dot(dir, v[i] - v[j]))
    wp.atomic_sub(f, i, fs)
    wp.atomic_add(f, j, fs)


@wp.kernel
def eval_mesh_ground(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), mesh: wp.uint64, radius: float,
                     ke: float, kd: float, kf: float, mu: float, f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    p = x[i]
    total = wp.vec3()
    q = wp.mesh_query_point_sign_normal(mesh, p, radius + 0.01)
    if q.result:
        cp = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        d = p - cp
        dist = wp.length(d)
        n = wp.mesh_eval_face_normal(mesh, q.face)
        if dist > 1.0e-9:
            n = d * (q.sign / dist)
        c = dist * q.sign - radius
        if c < 0.0:
            total = total + contact_force(n, v[i], c, ke, kd, kf, mu)
    c = p[1] - radius
    if c < 0.0:
        total = total + contact_force(wp.vec3(0.0, 1.0, 0.0), v[i], c, ke, kd, kf, mu)
    wp.atomic_add(f, i, total)


@wp.kernel
def eval_particle_contacts(grid: wp.uint64, x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), radius: float,
                           ke: float, kd: float, kf: float, mu: float, f: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)
    xi = x[i]
    vi = v[i]
    fi = wp.vec3()
    query = wp.hash_grid_query(grid, xi, 2.0 * radius)
    j = int(0)
    while wp.hash_grid_query_next(query, j):
        if j != i:
            d = xi - x[j]
            err = wp.length(d) - 2.0 * radius
            if err < 0.0:
                fi = fi + contact_force(wp.normalize(d), vi - v[j], err, ke, kd, kf, mu)
    c = xi[1] - radius
    if c < 0.0:
        fi = fi + contact_force(wp.vec3(0.0, 1.0, 0.0), vi, c, ke, kd, kf, mu)
    wp.atomic_add(f, i, fi)


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3),
              inv_mass: wp.array(dtype=float), gravity: wp.vec3, dt: float, x_out: wp.array(dtype=wp.vec3),
              v_out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    w = inv_mass[i]
    vn = v[i] + (f[i] * w + gravity * wp.step(-w)) * dt
    v_out[i] = vn
    x_out[i] = x[i] + vn * dt


@wp.kernel
def weighted_sum(x: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.dot(x[i], wp.vec3(0.3, 1.0, -0.2)))
