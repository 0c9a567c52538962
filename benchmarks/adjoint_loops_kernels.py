"""Kernels of benchmarks/adjoint_loops.py, written once in the Warp language.

Imported once per contender by ``adjoint_loops.load(backend, name)`` with ``wp`` bound to simkit or
warp-lang, so every library compiles the very same source:

- ``image_energy``: a pair energy over the hash-grid neighbours of every periodic image of a point
  (a dynamic loop over the images around the neighbour loop: a nest of sum loops);
- ``func_forces``: each particle's pair force, summed by a neighbour loop inside a ``@wp.func``.
"""
wp = globals()["wp"]  # injected by adjoint_loops.load() before this module runs


@wp.kernel
def image_energy(grid: wp.uint64, x: wp.array(dtype=wp.vec3), shifts: wp.array(dtype=wp.vec3), n_shifts: int,
                 r: float, out: wp.array(dtype=float)):
    i = wp.tid()
    e = float(0.0)
    for m in range(n_shifts):
        p = x[i] + shifts[m]
        q = wp.hash_grid_query(grid, p, r)
        j = int(0)
        while wp.hash_grid_query_next(q, j):
            d2 = wp.length_sq(x[j] - p)
            if d2 < r * r and d2 > 1.0e-12:
                w = r * r - d2
                e = e + w * w
    wp.atomic_add(out, 0, e)


@wp.func
def pair_force(grid: wp.uint64, x: wp.array(dtype=wp.vec3), i: int, r: float):
    p = x[i]
    f = wp.vec3(0.0, 0.0, 0.0)
    q = wp.hash_grid_query(grid, p, r)
    j = int(0)
    while wp.hash_grid_query_next(q, j):
        d = p - x[j]
        d2 = wp.length_sq(d)
        if d2 < r * r and j != i:
            f = f + d * ((r * r - d2) * (r * r - d2))
    return f


@wp.kernel
def func_forces(grid: wp.uint64, x: wp.array(dtype=wp.vec3), r: float, f: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    f[i] = pair_force(grid, x, i, r)
