"""HashGrid: neighbour queries against an O(N^2) brute force, rebuilds, wrapping, errors."""
import numpy as np
import pytest

import simkit as wp


@wp.kernel
def count_neighbors(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float,
                    counts: wp.array(dtype=int), visited: wp.array(dtype=int)):
    tid = wp.tid()
    i = wp.hash_grid_point_id(grid, tid)
    if i == -1:  # an unbuilt or empty grid has no point for this thread
        return
    p = points[i]
    n = int(0)
    m = int(0)
    query = wp.hash_grid_query(grid, p, radius)
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        m += 1
        if wp.length(points[index] - p) <= radius:
            n += 1
    counts[i] = n
    visited[i] = m


@wp.kernel
def count_neighbors_d(grid: wp.uint64, points: wp.array(dtype=wp.vec3d), radius: wp.float64,
                      counts: wp.array(dtype=int)):
    i = wp.tid()
    p = points[i]
    n = int(0)
    query = wp.hash_grid_query(grid, p, radius)
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        if wp.length(points[index] - p) <= radius:
            n += 1
    counts[i] = n


@wp.kernel
def pair_energy(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float, out: wp.array(dtype=float)):
    i = wp.tid()
    p = points[i]
    e = float(0.0)
    query = wp.hash_grid_query(grid, p, radius)
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        d = wp.length(points[index] - p)
        if d <= radius and index != i:
            e += (radius - d) * (radius - d)
    wp.atomic_add(out, 0, e)


@wp.kernel
def sorted_ids(grid: wp.uint64, out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.hash_grid_point_id(grid, i)


@wp.kernel
def count_near(grid: wp.uint64, points: wp.array(dtype=wp.vec3), queries: wp.array(dtype=wp.vec3), radius: float,
               counts: wp.array(dtype=int)):
    # queries at arbitrary positions (not the grid's points)
    i = wp.tid()
    p = queries[i]
    n = int(0)
    query = wp.hash_grid_query(grid, p, radius)
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        if wp.length(points[index] - p) <= radius:
            n += 1
    counts[i] = n


@wp.kernel
def loop_forms(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float, out: wp.array(dtype=int, ndim=2)):
    # the neighbour loop with continue (compiled as nested loops) and with break (the plain form)
    i = wp.tid()
    p = points[i]
    query = wp.hash_grid_query(grid, p, radius)
    index = int(0)
    others = int(0)
    while wp.hash_grid_query_next(query, index):
        if index == i:
            continue
        if wp.length(points[index] - p) > radius:
            continue
        others += 1
    out[i, 0] = others
    q2 = wp.hash_grid_query(grid, p, radius)
    j = int(0)
    first3 = int(0)
    while wp.hash_grid_query_next(q2, j):
        if wp.length(points[j] - p) <= radius:
            first3 += 1
            if first3 == 3:
                break
    out[i, 1] = first3


@wp.func
def first_neighbor(grid: wp.uint64, points: wp.array(dtype=wp.vec3), i: int, radius: float) -> int:
    # an early return from inside the query loop of a func
    p = points[i]
    query = wp.hash_grid_query(grid, p, radius)
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        if index != i and wp.length(points[index] - p) <= radius:
            return index
    return -1


@wp.kernel
def first_neighbors(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float, out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = first_neighbor(grid, points, i, radius)


def brute_counts(pts, radius):
    d = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    return (d <= radius).sum(axis=1)


def built_grid(pts, radius, device, dims=(16, 16, 16), **kwargs):
    """A HashGrid of ``dims`` cells built over ``pts`` (float32 rows); returns it and the points array."""
    grid = wp.HashGrid(*dims, device=device, **kwargs)
    p = wp.array(pts, dtype=wp.vec3, device=device)
    grid.build(p, radius)
    return grid, p


def query(grid, pts, radius, device):
    n = len(pts)
    p = wp.array(pts, dtype=wp.vec3, device=device)
    counts = wp.zeros(n, dtype=int, device=device)
    visited = wp.zeros(n, dtype=int, device=device)
    wp.launch(count_neighbors, dim=n, inputs=[grid.id, p, radius, counts, visited], device=device)
    return counts.numpy(), visited.numpy()


def near_boundary(pts, radius, rel=1e-4):
    """Pairs whose distance is within float32 rounding of the radius (ambiguous either way)."""
    d = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    return (np.abs(d - radius) < rel * max(radius, 1.0)).any(axis=1)


@pytest.mark.parametrize("counting", [False, True], ids=["radix", "counting"])
@pytest.mark.parametrize("radius", [0.05, 0.17, 0.4, 1.3])
def test_counts_match_brute_force(device, radius, counting):
    # both build algorithms (CPU: radix sort, CUDA: counting sort) on every device
    rng = np.random.default_rng(7)
    pts = (rng.random((1500, 3)) * 4.0 - 2.0).astype(np.float32)  # negative coordinates too
    grid, _ = built_grid(pts, radius, device, _counting_sort=counting)
    counts, _ = query(grid, pts, radius, device)
    ok = ~near_boundary(pts, radius)
    np.testing.assert_array_equal(counts[ok], brute_counts(pts, radius)[ok])


@pytest.mark.parametrize("counting", [False, True], ids=["radix", "counting"])
@pytest.mark.parametrize("dims", [(1, 1, 1), (3, 5, 2), (4, 4, 4)])
def test_wrapping_small_tables(device, dims, counting):
    # the domain spans many table periods: distant points share cells and must still be filtered
    rng = np.random.default_rng(3)
    pts = (rng.random((800, 3)) * 10.0 - 5.0).astype(np.float32)
    radius = 0.6
    grid, _ = built_grid(pts, radius, device, dims, _counting_sort=counting)
    counts, visited = query(grid, pts, radius, device)
    ok = ~near_boundary(pts, radius)
    np.testing.assert_array_equal(counts[ok], brute_counts(pts, radius)[ok])
    # a query never visits a cell twice: at most every point once
    assert visited.max() <= len(pts)


@pytest.mark.parametrize("counting", [False, True], ids=["radix", "counting"])
@pytest.mark.parametrize("offset", [0.0, -37.5, 1.0e4])
def test_compact_and_wrapped_tables(device, counting, offset):
    # points far from the origin (a compact table's origin is the points' box) and query points outside
    # the points' box, at radii below and above the cell width
    rng = np.random.default_rng(21)
    pts = (rng.random((3000, 3)) * 3.0 + offset).astype(np.float32)
    qs = (rng.random((300, 3)) * 5.0 - 1.0 + offset).astype(np.float32)  # a margin of 1 around the points
    p, q = wp.array(pts, dtype=wp.vec3, device=device), wp.array(qs, dtype=wp.vec3, device=device)
    for dims, table in (((64, 64, 64), "compact"), ((5, 3, 4), "wrapped")):
        grid = wp.HashGrid(*dims, device=device, _counting_sort=counting)
        grid.build(p, 0.25)
        assert f"table={table}" in repr(grid)
        if table == "compact":
            assert all(t <= d for t, d in zip(grid.table_dims, dims)) and grid.table_dims[0] >= 12
        for radius in (0.1, 0.25, 0.6):
            counts = wp.zeros(len(qs), dtype=int, device=device)
            wp.launch(count_near, len(qs), inputs=[grid.id, p, q, radius, counts], device=device)
            d = np.linalg.norm(qs[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
            ok = ~(np.abs(d - radius) < 1e-4 * max(1.0, abs(offset))).any(axis=1)
            np.testing.assert_array_equal(counts.numpy()[ok], (d <= radius).sum(axis=1)[ok])
            assert (d <= radius).sum() > 20  # the test has neighbours to find


def test_continue_and_break_in_the_query_loop(device):
    rng = np.random.default_rng(8)
    pts = rng.random((800, 3)).astype(np.float32)
    radius = 0.12
    grid, p = built_grid(pts, radius, device)
    out = wp.zeros((800, 2), dtype=int, device=device)
    wp.launch(loop_forms, 800, inputs=[grid.id, p, radius, out], device=device)
    ok = ~near_boundary(pts, radius)
    ref = brute_counts(pts, radius)  # includes the point itself
    np.testing.assert_array_equal(out.numpy()[ok, 0], ref[ok] - 1)
    np.testing.assert_array_equal(out.numpy()[ok, 1], np.minimum(ref[ok], 3))
    assert (ref > 3).sum() > 100


def test_return_from_inside_the_query_loop(device):
    rng = np.random.default_rng(12)
    pts = rng.random((600, 3)).astype(np.float32)
    radius = 0.08
    grid, p = built_grid(pts, radius, device)
    out = wp.zeros(600, dtype=int, device=device)
    wp.launch(first_neighbors, 600, inputs=[grid.id, p, radius, out], device=device)
    got = out.numpy()
    d = np.linalg.norm(pts[:, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    np.fill_diagonal(d, np.inf)
    ok = ~near_boundary(pts, radius)
    has = (d <= radius).any(axis=1)
    assert (got[ok & ~has] == -1).all()
    j = got[ok & has]
    assert (j >= 0).all() and (d[np.nonzero(ok & has)[0], j] <= radius).all()  # a true neighbour
    assert (ok & has).sum() > 100


def test_large_query_radius_visits_each_point_once(device):
    rng = np.random.default_rng(4)
    pts = rng.random((300, 3)).astype(np.float32)
    grid, _ = built_grid(pts, 0.1, device, (4, 4, 4))
    counts, visited = query(grid, pts, 5.0, device)  # the box covers the whole table several times
    np.testing.assert_array_equal(counts, len(pts))
    np.testing.assert_array_equal(visited, len(pts))


@pytest.mark.parametrize("counting", [False, True], ids=["radix", "counting"])
def test_rebuild_moved_and_grown(device, counting):
    rng = np.random.default_rng(11)
    grid = wp.HashGrid(8, 8, 8, device=device, _counting_sort=counting)
    for n, scale, radius in [(500, 2.0, 0.3), (500, 3.0, 0.25), (1200, 1.0, 0.2), (50, 2.0, 0.5)]:
        pts = (rng.random((n, 3)) * scale).astype(np.float32)
        grid.build(wp.array(pts, dtype=wp.vec3, device=device), radius)
        counts, _ = query(grid, pts, radius, device)
        ok = ~near_boundary(pts, radius)
        np.testing.assert_array_equal(counts[ok], brute_counts(pts, radius)[ok])
    assert grid.num_points == 50


@pytest.mark.parametrize("counting", [False, True], ids=["radix", "counting"])
def test_point_ids_are_a_cell_ordered_permutation(device, counting):
    rng = np.random.default_rng(5)
    pts = (rng.random((700, 3)) * 3.0).astype(np.float32)
    grid, _ = built_grid(pts, 0.5, device, (6, 6, 6), _counting_sort=counting)
    out = wp.zeros(702, dtype=int, device=device)
    wp.launch(sorted_ids, dim=702, inputs=[grid.id, out], device=device)
    ids = out.numpy()
    assert sorted(ids[:700]) == list(range(700))
    assert ids[700] == -1 and ids[701] == -1  # out of range
    c = np.floor(pts[ids[:700]].astype(np.float64) / 0.5).astype(np.int64) % 6
    cell = (c[:, 2] * 6 + c[:, 1]) * 6 + c[:, 0]
    assert np.all(np.diff(cell) >= 0)
    # within a cell the original order is kept (a stable sort: deterministic results)
    same = np.diff(cell) == 0
    assert np.all(np.diff(ids[:700])[same] > 0)


@pytest.mark.parametrize("counting", [False, True], ids=["radix", "counting"])
def test_build_and_query_captured_in_a_cuda_graph(cuda_device, counting):
    """A build inside a graph reads nothing back (wrapped table, descriptor written by the graph);
    each replay rebuilds over the points' current positions."""
    rng = np.random.default_rng(11)
    first, moved = ((rng.random((600, 3)) * 3.0 - s).astype(np.float32) for s in (1.5, 0.2))
    radius = 0.2
    grid, p = built_grid(first, radius, cuda_device, _counting_sort=counting)
    counts, visited = wp.zeros(len(first), dtype=int, device=cuda_device), wp.zeros(len(first), dtype=int,
                                                                                    device=cuda_device)
    wp.launch(count_neighbors, dim=len(first), inputs=[grid.id, p, radius, counts, visited], device=cuda_device)
    wp.synchronize()
    with wp.ScopedCapture(cuda_device) as cap:
        grid.build(p, radius)
        wp.launch(count_neighbors, dim=len(first), inputs=[grid.id, p, radius, counts, visited],
                  device=cuda_device)
    for pts in (moved, first):
        p.assign(pts)
        counts.zero_()
        wp.capture_launch(cap.graph)
        ok = ~near_boundary(pts, radius)
        np.testing.assert_array_equal(counts.numpy()[ok], brute_counts(pts, radius)[ok])
    assert "wrapped" in repr(grid)


def test_float64_grid(device):
    rng = np.random.default_rng(9)
    pts = rng.random((600, 3)) * 2.0
    radius = 0.3
    grid = wp.HashGrid(8, 8, 8, device=device, dtype=wp.float64)
    p = wp.array(pts, dtype=wp.vec3d, device=device)
    grid.build(p, radius)
    counts = wp.zeros(600, dtype=int, device=device)
    wp.launch(count_neighbors_d, dim=600, inputs=[grid.id, p, radius, counts], device=device)
    np.testing.assert_array_equal(counts.numpy(), brute_counts(pts, radius))


def test_empty_and_unbuilt_grids_find_nothing(device):
    pts = np.zeros((4, 3), dtype=np.float32)
    grid = wp.HashGrid(4, 4, 4, device=device)
    counts, _ = query(grid, pts, 1.0, device)  # never built
    np.testing.assert_array_equal(counts, 0)
    grid.build(wp.zeros(0, dtype=wp.vec3, device=device), 1.0)
    counts, _ = query(grid, pts, 1.0, device)
    np.testing.assert_array_equal(counts, 0)


def test_gradient_through_query_loop(device):
    # the queries carry no gradient, but a loop over their results must backpropagate exactly
    rng = np.random.default_rng(1)
    pts = (rng.random((200, 3)) * 2.0).astype(np.float32)
    radius = 0.4
    grid = wp.HashGrid(8, 8, 8, device=device)
    p = wp.array(pts, dtype=wp.vec3, device=device, requires_grad=True)
    grid.build(p, radius)
    out = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(pair_energy, dim=len(pts), inputs=[grid.id, p, radius], outputs=[out], device=device)
    tape.backward(out)
    x = pts.astype(np.float64)
    d = x[:, None] - x[None]
    dist = np.linalg.norm(d, axis=-1)
    near = (dist <= radius) & (dist > 0)
    coef = np.where(near, -2.0 * (radius - dist) / np.where(near, dist, 1.0), 0.0)
    expected = 2.0 * (coef[..., None] * d).sum(axis=1)  # E counts each pair twice
    np.testing.assert_allclose(p.grad.numpy(), expected, atol=1e-4 * np.abs(expected).max())


# ---------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("dims, exc", [((0, 4, 4), ValueError), ((4, -1, 4), ValueError),
                                       ((2.5, 4, 4), TypeError), ((2048, 2048, 2048), ValueError)])
def test_bad_dimensions(dims, exc):
    with pytest.raises(exc, match="HashGrid"):
        wp.HashGrid(*dims, device="cpu")


def test_bad_dtype():
    with pytest.raises(TypeError, match="float16, float32 or float64"):
        wp.HashGrid(4, 4, 4, device="cpu", dtype=wp.int32)


def test_build_errors(device):
    grid = wp.HashGrid(4, 4, 4, device=device)
    pts = wp.zeros(10, dtype=wp.vec3, device=device)
    with pytest.raises(TypeError, match="vec3"):
        grid.build(wp.zeros(10, dtype=float, device=device), 1.0)
    with pytest.raises(TypeError, match="vec3"):
        grid.build(wp.zeros(10, dtype=wp.vec3d, device=device), 1.0)
    with pytest.raises(TypeError, match="simkit array"):
        grid.build(np.zeros((10, 3), dtype=np.float32), 1.0)
    for r in (-1.0, 0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="radius"):
            grid.build(pts, r)
    # the grid stays usable after a failed build (points that are not finite: tests/test_hash_grid_groups.py)
    grid.build(pts, 1.0)
    counts, _ = query(grid, np.zeros((10, 3), dtype=np.float32), 0.5, device)
    np.testing.assert_array_equal(counts, 10)
