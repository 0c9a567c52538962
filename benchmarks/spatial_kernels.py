"""Kernels of benchmarks/spatial.py, written once in the Warp language.

This file is imported twice by ``spatial.py``: once with ``wp`` bound to simkit and once to
warp-lang (``load(backend)``), so both libraries compile the very same source.
"""
wp = globals()["wp"]  # injected by spatial.load() before this module runs


@wp.kernel
def count_neighbors(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float, counts: wp.array(dtype=int)):
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)  # cell order: neighbouring threads read neighbouring points
    p = points[i]
    n = int(0)
    query = wp.hash_grid_query(grid, p, radius)
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        if wp.length(points[index] - p) <= radius:
            n += 1
    counts[i] = n


@wp.kernel
def mesh_closest(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    q = wp.mesh_query_point_no_sign(mesh, xs[i], 1.0e6)
    if q.result:
        out[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)


@wp.kernel
def mesh_closest_signed(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=wp.vec3),
                        signs: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_point(mesh, xs[i], 1.0e6)
    if q.result:
        out[i] = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        signs[i] = q.sign


@wp.kernel
def mesh_raycast(mesh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3),
                 out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.mesh_query_ray(mesh, starts[i], dirs[i], 1.0e6)
    t = float(-1.0)
    if q.result:
        t = q.t
    out[i] = t


@wp.kernel
def bvh_count_aabb(bvh: wp.uint64, lowers: wp.array(dtype=wp.vec3), uppers: wp.array(dtype=wp.vec3),
                   counts: wp.array(dtype=int)):
    i = wp.tid()
    query = wp.bvh_query_aabb(bvh, lowers[i], uppers[i])
    index = int(0)
    n = int(0)
    while wp.bvh_query_next(query, index):
        n += 1
    counts[i] = n


@wp.kernel
def bvh_count_ray(bvh: wp.uint64, starts: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3),
                  counts: wp.array(dtype=int)):
    i = wp.tid()
    query = wp.bvh_query_ray(bvh, starts[i], dirs[i])
    index = int(0)
    n = int(0)
    while wp.bvh_query_next(query, index):
        n += 1
    counts[i] = n


@wp.kernel
def sphere_sdf(points: wp.array(dtype=wp.vec3), radius: float, values: wp.array(dtype=float)):
    i = wp.tid()
    values[i] = wp.length(points[i]) - radius
