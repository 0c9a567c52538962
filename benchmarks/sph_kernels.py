"""Kernels of benchmarks/sph.py, written once in the Warp language.

Imported twice by ``sph.py`` (``load(backend)``): once with ``wp`` bound to simkit and once to
warp-lang, so both libraries compile the very same source. One step of ``simkit.SPHSolver``
(simkit/solvers/sph/kernels.py) for float32 ``vec3``, with concrete types instead of its generic
ones:

- ``eval_density``: poly6 density over the HashGrid neighbours (cell width ``h``), the particle
  itself and the neighbours' mirror images in every wall closer than ``h`` (images of images in
  edges and corners);
- ``eval_pressure``: Tait's equation of state, exponent 7, clamped at zero;
- ``eval_forces``: symmetric spiky pressure and Mueller viscosity forces from the neighbours and
  their images, and the walls' penalty contacts; each particle gathers into a local sum and writes
  its own force once (no atomics);
- ``integrate``: semi-implicit Euler with velocity damping and the speed clamp.
"""
wp = globals()["wp"]  # injected by sph.load() before this module runs


@wp.func
def mirror_point(x: wp.vec3, n: wp.vec3, offset: float):
    # x reflected in the plane dot(x, n) = offset; a point behind it moves twice as deep
    return x - n * (2.0 * wp.abs(wp.dot(x, n) - offset))


@wp.func
def mirror_vector(v: wp.vec3, n: wp.vec3):
    return v - n * (2.0 * wp.dot(v, n))


@wp.func
def poly6_sum(xi: wp.vec3, y: wp.vec3, h2: float, poly6: float):
    w = h2 - wp.length_sq(xi - y)
    if w > 0.0:
        return poly6 * w * w * w
    return 0.0


@wp.func
def near_walls(xi: wp.vec3, plane_n: wp.array(dtype=wp.vec3), plane_d: wp.array(dtype=float), h: float):
    # the (at most three) walls closer than h to xi, in increasing order, and their count; -1 for none
    w0 = int(-1)
    w1 = int(-1)
    w2 = int(-1)
    for k in range(plane_n.shape[0]):
        if wp.dot(xi, plane_n[k]) - plane_d[k] < h:
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


@wp.func
def image(m: int, x: wp.vec3, v: wp.vec3, w0: int, w1: int, w2: int, plane_n: wp.array(dtype=wp.vec3),
          plane_d: wp.array(dtype=float)):
    # x and v reflected in the near walls whose bits are set in m (bit 0: w0, 1: w1, 2: w2)
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


@wp.func
def mirrored_density(xi: wp.vec3, xj: wp.vec3, count: int, w0: int, w1: int, w2: int,
                     plane_n: wp.array(dtype=wp.vec3), plane_d: wp.array(dtype=float), h2: float, poly6: float):
    # W summed over xj's images in the near walls; the loop over the 7 images is static (unrolled)
    acc = float(0.0)
    for m in range(1, 8):
        if m < (1 << count):
            y, u = image(m, xj, xj, w0, w1, w2, plane_n, plane_d)
            acc = acc + poly6_sum(xi, y, h2, poly6)
    return acc


@wp.func
def pair_force(xi: wp.vec3, vi: wp.vec3, y: wp.vec3, vy: wp.vec3, h: float, cp: float, cv: float):
    # pressure and viscosity force on xi from a particle (or image) at y within h
    d = xi - y
    r2 = wp.length_sq(d)
    f = wp.vec3()
    if r2 < h * h and r2 > 0.0:
        r = wp.sqrt(r2)
        q = h - r
        f = d * (cp * q * q / r) + (vy - vi) * (cv * q)
    return f


@wp.func
def mirrored_force(xi: wp.vec3, vi: wp.vec3, xj: wp.vec3, vj: wp.vec3, count: int, w0: int, w1: int, w2: int,
                   plane_n: wp.array(dtype=wp.vec3), plane_d: wp.array(dtype=float), h: float, cp: float, cv: float):
    f = wp.vec3()
    for m in range(1, 8):
        if m < (1 << count):
            y, u = image(m, xj, vj, w0, w1, w2, plane_n, plane_d)
            f = f + pair_force(xi, vi, y, u, h, cp, cv)
    return f


@wp.func
def contact_force(n: wp.vec3, v: wp.vec3, c: float, ke: float, kd: float, kf: float, mu: float):
    vn = wp.dot(n, v)
    fn = c * ke + wp.min(vn, 0.0) * kd
    vt = v - n * vn
    ft = wp.min(wp.length(vt) * kf, mu * wp.abs(fn))
    return n * (-fn) - wp.normalize(vt) * ft


@wp.kernel
def eval_density(grid: wp.uint64, x: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float),
                 plane_n: wp.array(dtype=wp.vec3), plane_d: wp.array(dtype=float), h: float, poly6: float,
                 rho: wp.array(dtype=float)):
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)
    xi = x[i]
    count, w0, w1, w2 = near_walls(xi, plane_n, plane_d, h)
    h2 = h * h
    d = float(0.0)
    query = wp.hash_grid_query(grid, xi, h)
    j = int(0)
    while wp.hash_grid_query_next(query, j):
        xj = x[j]
        w = poly6_sum(xi, xj, h2, poly6)
        if count > 0:
            w = w + mirrored_density(xi, xj, count, w0, w1, w2, plane_n, plane_d, h2, poly6)
        d = d + mass[j] * w
    rho[i] = d


@wp.kernel
def eval_pressure(rho: wp.array(dtype=float), rest_density: float, stiffness: float, p: wp.array(dtype=float)):
    i = wp.tid()
    ratio = rho[i] / rest_density
    r2 = ratio * ratio
    r7 = r2 * r2 * r2 * ratio
    p[i] = wp.max(stiffness * (r7 - 1.0), 0.0)


@wp.kernel
def eval_forces(grid: wp.uint64, x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float),
                inv_mass: wp.array(dtype=float), radius: wp.array(dtype=float), rho: wp.array(dtype=float),
                p: wp.array(dtype=float), plane_n: wp.array(dtype=wp.vec3), plane_d: wp.array(dtype=float), h: float,
                spiky: float, viscosity: float, wall_ke: float, wall_kd: float, wall_kf: float, wall_mu: float,
                f: wp.array(dtype=wp.vec3)):
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)
    if inv_mass[i] == 0.0:
        f[i] = wp.vec3()
        return
    xi = x[i]
    vi = v[i]
    mi = mass[i]
    rhoi = rho[i]
    pi_rho2 = p[i] / (rhoi * rhoi)
    fi = wp.vec3()
    count, w0, w1, w2 = near_walls(xi, plane_n, plane_d, h)
    for k in range(plane_n.shape[0]):
        c = wp.dot(xi, plane_n[k]) - plane_d[k] - radius[i]
        if c < 0.0:
            fi = fi + contact_force(plane_n[k], vi, c, wall_ke, wall_kd, wall_kf, wall_mu)
    query = wp.hash_grid_query(grid, xi, h)
    j = int(0)
    while wp.hash_grid_query_next(query, j):
        rhoj = rho[j]
        mij = mi * mass[j] * spiky
        cp = mij * (pi_rho2 + p[j] / (rhoj * rhoj))
        cv = mij * viscosity / (rhoi * rhoj)
        if j != i:
            fi = fi + pair_force(xi, vi, x[j], v[j], h, cp, cv)
        if count > 0:
            fi = fi + mirrored_force(xi, vi, x[j], v[j], count, w0, w1, w2, plane_n, plane_d, h, cp, cv)
    f[i] = fi


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3),
              inv_mass: wp.array(dtype=float), gravity: wp.vec3, damping: float, max_velocity: float, dt: float,
              x_out: wp.array(dtype=wp.vec3), v_out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    w = inv_mass[i]
    v1 = v[i]
    if w > 0.0:
        v1 = v1 + (f[i] * w + gravity - v1 * damping) * dt
        speed = wp.length(v1)
        if speed > max_velocity:
            v1 = v1 * (max_velocity / speed)
    x_out[i] = x[i] + v1 * dt
    v_out[i] = v1


@wp.kernel
def weighted_sum(x: wp.array(dtype=wp.vec3), loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, wp.dot(x[i], wp.vec3(0.3, 1.0, -0.2)))
