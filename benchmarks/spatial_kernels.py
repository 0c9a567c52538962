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
