"""HashGrid: float16 grids, grouped grids and queries, points that are not finite, capture and errors.

Every query result is checked against an O(N^2) numpy brute force."""
import numpy as np
import pytest

import simkit as wp


@wp.kernel
def count_any(grid: wp.uint64, radius: wp.Any, points: wp.array(dtype=wp.Any), counts: wp.array(dtype=int)):
    i = wp.tid()
    p = points[i]
    n = int(0)
    for index in wp.hash_grid_query(grid, p, radius):
        if wp.length(points[index] - p) <= radius:
            n += 1
    counts[i] = n


@wp.kernel
def count_grouped(grid: wp.uint64, radius: float, points: wp.array(dtype=wp.vec3), groups: wp.array(dtype=int),
                  counts: wp.array(dtype=int), visited: wp.array(dtype=int)):
    i = wp.tid()
    p = points[i]
    n = int(0)
    m = int(0)
    query = wp.hash_grid_query(grid, p, radius, groups[i])
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        m += 1
        if wp.length(points[index] - p) <= radius:
            n += 1
    counts[i] = n
    visited[i] = m


@wp.kernel
def collect(grid: wp.uint64, radius: float, queries: wp.array(dtype=wp.vec3), out: wp.array2d(dtype=int),
            counts: wp.array(dtype=int)):
    i = wp.tid()
    query = wp.hash_grid_query(grid, queries[i], radius)
    index = int(0)
    n = int(0)
    while n < out.shape[1]:
        if not wp.hash_grid_query_next(query, index):
            break
        out[i, n] = index
        n += 1
    counts[i] = n


@wp.func
def nearest(query: wp.HashGridQuery[wp.float16], center: wp.vec3h, points: wp.array(dtype=wp.vec3h),
            radius: wp.float16):
    best = int(-1)
    best_d = float(radius) * float(radius)
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        d = points[index] - center
        dd = float(wp.dot(d, d))
        if dd <= best_d:
            best = index
            best_d = dd
    return best


@wp.kernel
def nearest_h(grid: wp.uint64, queries: wp.array(dtype=wp.vec3h), points: wp.array(dtype=wp.vec3h),
              radius: wp.float16, out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = nearest(wp.hash_grid_query(grid, queries[i], radius), queries[i], points, radius)


def brute_counts(points, radius, groups=None):
    d = np.linalg.norm(points[:, None, :] - points[None, :, :], axis=-1)
    near = d <= radius
    if groups is not None:
        near &= groups[:, None] == groups[None, :]
    return near.sum(axis=1)


def grouped_counts(grid, points, groups, radius, device):
    n = len(points)
    counts = wp.zeros(n, dtype=int, device=device)
    visited = wp.zeros(n, dtype=int, device=device)
    wp.launch(count_grouped, dim=n, inputs=[grid.id, radius, wp.array(points, dtype=wp.vec3, device=device),
                                            wp.array(groups, dtype=int, device=device), counts, visited],
              device=device)
    return counts.numpy(), visited.numpy()


# ---------------------------------------------------------------------------
# precisions


@pytest.mark.parametrize("dtype", [wp.float16, wp.float32, wp.float64])
def test_precisions_match_brute_force(device, dtype):
    rng = np.random.default_rng(5)
    vec = {wp.float16: wp.vec3h, wp.float32: wp.vec3, wp.float64: wp.vec3d}[dtype]
    npt = {wp.float16: np.float16, wp.float32: np.float32, wp.float64: np.float64}[dtype]
    pts = (rng.random((400, 3)) * 8.0 - 2.0).astype(npt)
    radius = 0.75
    grid = wp.HashGrid(8, 8, 8, device=device, dtype=dtype)
    assert grid.dtype is dtype
    arr = wp.array(pts, dtype=vec, device=device)
    grid.build(arr, radius)
    counts = wp.zeros(len(pts), dtype=int, device=device)
    wp.launch(count_any, dim=len(pts), inputs=[grid.id, dtype(radius), arr, counts], device=device)
    # the kernel filters in the points' precision: compare with that precision's distances
    ref = brute_counts(pts.astype(np.float64), radius)
    diff = np.abs(counts.numpy() - ref)
    assert diff.max() <= (1 if dtype is wp.float16 else 0)
    assert (diff == 0).mean() > 0.95


def test_float16_query_in_func(device):
    pts = np.array([[0, 0, 0], [0.2, 0, 0], [0.8, 0, 0], [2, 0, 0]], dtype=np.float16)
    qs = np.array([[0.18, 0, 0], [0.72, 0, 0], [1.7, 0, 0], [5, 0, 0]], dtype=np.float16)
    grid = wp.HashGrid(16, 16, 16, device=device, dtype=wp.float16)
    parr = wp.array(pts, dtype=wp.vec3h, device=device)
    grid.build(parr, 0.5)
    out = wp.zeros(4, dtype=int, device=device)
    wp.launch(nearest_h, dim=4, inputs=[grid.id, wp.array(qs, dtype=wp.vec3h, device=device), parr,
                                        wp.float16(0.35), out], device=device)
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, -1])


def test_query_type_subscript():
    for t in (wp.float16, wp.float32, wp.float64):
        assert wp.HashGridQuery[t] is wp.HashGridQuery
    with pytest.raises(TypeError, match="float16, float32 or float64"):
        wp.HashGridQuery[wp.int32]


# ---------------------------------------------------------------------------
# groups


@pytest.mark.parametrize("counting", [False, True])
@pytest.mark.parametrize("dims", [(16, 16, 16), (3, 2, 5)])  # a compact table, and one that wraps
def test_grouped_queries_match_brute_force(device, counting, dims):
    rng = np.random.default_rng(11)
    n = 600
    pts = (rng.random((n, 3)) * 4.0).astype(np.float32)
    pts[::7] = pts[1::7][: len(pts[::7])]  # coincident points in different groups
    groups = rng.choice(np.array([-(2 ** 31), -1, 0, 3, 7, 2 ** 31 - 1], dtype=np.int32), size=n)
    radius = 0.5
    grid = wp.HashGrid(*dims, device=device, _counting_sort=counting if device == "cpu" else None)
    grid.build(wp.array(pts, dtype=wp.vec3, device=device), radius,
               groups=wp.array(groups, dtype=int, device=device))
    counts, visited = grouped_counts(grid, pts, groups, radius, device)
    np.testing.assert_array_equal(counts, brute_counts(pts, radius, groups))
    # a grouped query visits only its group's points
    sizes = {g: int((groups == g).sum()) for g in np.unique(groups)}
    assert (visited <= np.array([sizes[g] for g in groups])).all()
    # the ungrouped query of the same grid still visits every group
    c = wp.zeros(n, dtype=int, device=device)
    arr = wp.array(pts, dtype=wp.vec3, device=device)
    wp.launch(count_any, dim=n, inputs=[grid.id, radius, arr, c], device=device)
    np.testing.assert_array_equal(c.numpy(), brute_counts(pts, radius))


def test_group_rebuilds(device):
    pts = np.array([[0, 0, 0], [0.05, 0, 0], [0, 0, 0], [0.05, 0, 0]], dtype=np.float32)
    garr = wp.array([0, 0, 1, 1], dtype=int, device=device)
    parr = wp.array(pts, dtype=wp.vec3, device=device)
    grid = wp.HashGrid(16, 16, 16, device=device)
    grid.build(parr, 0.2, groups=garr)
    np.testing.assert_array_equal(grouped_counts(grid, pts, garr.numpy(), 0.2, device)[0], [2, 2, 2, 2])
    garr.assign([5, 5, 5, 5])  # group ids are read at each build
    grid.build(parr, 0.2, groups=garr)
    np.testing.assert_array_equal(grouped_counts(grid, pts, [5, 5, 5, 5], 0.2, device)[0], [4, 4, 4, 4])
    np.testing.assert_array_equal(grouped_counts(grid, pts, [0, 0, 0, 0], 0.2, device)[0], [0, 0, 0, 0])
    # rebuilt without groups: a grouped query visits every point
    grid.build(parr, 0.2)
    assert grid.groups is None
    np.testing.assert_array_equal(grouped_counts(grid, pts, [9, 9, 9, 9], 0.2, device)[0], [4, 4, 4, 4])


def test_many_groups_in_one_cell(device):
    n = 1025
    grid = wp.HashGrid(8, 8, 8, device=device)
    grid.build(wp.zeros(n, dtype=wp.vec3, device=device), 1.0,
               groups=wp.array(np.arange(n, dtype=np.int32)[::-1].copy(), dtype=int, device=device))
    counts, visited = grouped_counts(grid, np.zeros((n, 3), np.float32), np.arange(n)[::-1].astype(np.int32),
                                     1.0, device)
    np.testing.assert_array_equal(counts, 1)
    np.testing.assert_array_equal(visited, 1)


def check_grouped_capture(device):
    pts = wp.array([[0, 0, 0], [0.1, 0, 0], [0, 0, 0], [0.1, 0, 0]], dtype=wp.vec3, device=device)
    groups = wp.array([0, 0, 1, 1], dtype=int, device=device)
    counts = wp.zeros(4, dtype=int, device=device)
    visited = wp.zeros(4, dtype=int, device=device)
    grid = wp.HashGrid(16, 16, 16, device=device)
    grid.reserve(4, with_groups=True)
    wp.load_module(device=device)
    with wp.ScopedCapture(device) as cap:
        grid.build(pts, 0.25, groups=groups)
        wp.launch(count_grouped, dim=4, inputs=[grid.id, 0.25, pts, groups, counts, visited], device=device)
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(counts.numpy(), [2, 2, 2, 2])
    groups.assign([3, 3, 3, 3])  # group ids are read by the replayed build
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(counts.numpy(), [4, 4, 4, 4])
    groups.assign([-5, 7, 7, -5])
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(counts.numpy(), [2, 2, 2, 2])


def test_grouped_capture_replays_current_groups_cpu():
    check_grouped_capture("cpu")


def test_grouped_capture_replays_current_groups_cuda(cuda_device):
    check_grouped_capture(cuda_device)


# ---------------------------------------------------------------------------
# coordinates


def collect_single(device, dims, point, query_point, radius):
    grid = wp.HashGrid(*dims, device=device)
    grid.build(wp.array([point], dtype=wp.vec3, device=device), 1.0)
    out = wp.full((1, 8), -1, dtype=int, device=device)
    counts = wp.zeros(1, dtype=int, device=device)
    wp.launch(collect, dim=1, inputs=[grid.id, radius, wp.array([query_point], dtype=wp.vec3, device=device),
                                      out, counts], device=device)
    return out.numpy()[0, :counts.numpy()[0]].tolist()


@pytest.mark.parametrize("dims", [(1, 1, 1), (3, 5, 7)])
def test_points_not_finite(device, dims):
    nan, inf = float("nan"), float("inf")
    # a NaN coordinate is cell 0 along its axis (for points and queries alike); infinities are the edge cells
    assert collect_single(device, dims, (nan, nan, nan), (0.0, 0.0, 0.0), 0.0) == [0]
    assert collect_single(device, dims, (0.5, nan, 0.5), (0.5, 0.5, 0.5), 0.0) == [0]
    assert collect_single(device, dims, (0.0, 0.0, 0.0), (nan, nan, nan), 0.0) == [0]
    assert collect_single(device, dims, (inf, 0.0, 0.0), (inf, 0.0, 0.0), 1.0) == [0]
    assert collect_single(device, dims, (-inf, -inf, -inf), (-1e30, -1e30, -1e30), 1.0) == [0]
    if dims != (1, 1, 1):
        assert collect_single(device, dims, (0.0, 0.0, 0.0), (inf, inf, inf), 1.0) == []
    assert collect_single(device, dims, (1e20, 0.0, 0.0), (1e20, 0.0, 0.0), 1.0) == [0]


@pytest.mark.parametrize("offset", [-(2 ** 21), -3.5, 2 ** 21])
def test_wrapping_far_from_origin(device, offset):
    rng = np.random.default_rng(2)
    pts = (rng.random((200, 3)) * 6.0 + offset).astype(np.float32)
    grid = wp.HashGrid(3, 5, 7, device=device)  # the points' box does not fit: the table wraps
    arr = wp.array(pts, dtype=wp.vec3, device=device)
    grid.build(arr, 1.0)
    counts = wp.zeros(len(pts), dtype=int, device=device)
    wp.launch(count_any, dim=len(pts), inputs=[grid.id, 1.0, arr, counts], device=device)
    np.testing.assert_array_equal(counts.numpy(), brute_counts(pts.astype(np.float64), 1.0))


# ---------------------------------------------------------------------------
# errors


def test_errors(device):
    with pytest.raises(RuntimeError, match="cell count exceeds supported limit: 1291 \\* 1291 \\* 1291"):
        wp.HashGrid(1291, 1291, 1291, device=device)
    with pytest.raises(TypeError, match="dtype must be float16, float32 or float64, got int32"):
        wp.HashGrid(4, 4, 4, device=device, dtype=wp.int32)
    grid = wp.HashGrid(4, 4, 4, device=device, dtype=wp.float16)
    pts = wp.zeros(3, dtype=wp.vec3h, device=device)
    with pytest.raises(TypeError, match="vec3h"):
        grid.build(wp.zeros(3, dtype=wp.vec3, device=device), 1.0)
    with pytest.raises(TypeError, match="groups must be an array of int32"):
        grid.build(pts, 1.0, groups=wp.zeros(3, dtype=float, device=device))
    with pytest.raises(ValueError, match="one entry per point: 2 groups, 3 points"):
        grid.build(pts, 1.0, groups=wp.zeros(2, dtype=int, device=device))
    grid.build(pts, 1.0, groups=wp.zeros(3, dtype=int, device=device))


def test_device_errors(cuda_device):
    grid = wp.HashGrid(4, 4, 4, device="cpu")
    with pytest.raises(RuntimeError, match="points must live on the same device"):
        grid.build(wp.zeros(1, dtype=wp.vec3, device=cuda_device), 1.0)
    with pytest.raises(TypeError, match="groups must live on the same device"):
        grid.build(wp.zeros(1, dtype=wp.vec3, device="cpu"), 1.0,
                   groups=wp.zeros(1, dtype=int, device=cuda_device))


def test_reserve_during_capture():
    grid = wp.HashGrid(4, 4, 4, device="cpu")
    grid.reserve(4)
    with pytest.raises(NotImplementedError, match="reserve before capture"):
        with wp.ScopedCapture("cpu"):
            grid.reserve(8)
    bare = wp.HashGrid.__new__(wp.HashGrid)
    bare.__del__()  # a grid whose __init__ never ran releases nothing


def test_radix_and_counting_orders_agree():
    # the CPU's radix sort (group digits of 16 bits from 65536 points on) and the counting sort order
    # each cell by (group, index): the same point order, visited by hash_grid_point_id
    rng = np.random.default_rng(3)
    n = 70000
    pts = wp.array((rng.random((n, 3)) * 3.0).astype(np.float32), dtype=wp.vec3, device="cpu")
    full = rng.integers(-(2 ** 31), 2 ** 31, size=n, dtype=np.int64).astype(np.int32)
    few = full // (1 << 20)  # many points per (cell, group): ties broken by index
    groups = wp.array(np.where(rng.random(n) < 0.5, full, few), dtype=int, device="cpu")
    orders = []
    for counting in (False, True):
        grid = wp.HashGrid(16, 16, 16, device="cpu", _counting_sort=counting)
        grid.build(pts, 0.25, groups=groups)
        out = wp.zeros(n, dtype=int, device="cpu")
        wp.launch(sorted_point_ids, dim=n, inputs=[grid.id, out], device="cpu")
        orders.append(out.numpy())
    np.testing.assert_array_equal(orders[0], orders[1])
    order = orders[0]
    assert sorted(order.tolist()) == list(range(n))
    g = groups.numpy()[order]
    cells = np.floor(pts.numpy()[order] / np.float32(0.25)).astype(np.int64)
    key = (cells[:, 2] * 64 + cells[:, 1]) * 64 + cells[:, 0]
    same_cell = key[1:] == key[:-1]
    assert (key[1:] >= key[:-1]).all()
    assert (g[1:][same_cell] >= g[:-1][same_cell]).all()


@wp.kernel
def sorted_point_ids(grid: wp.uint64, out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.hash_grid_point_id(grid, i)


@wp.kernel
def grouped_energy(grid: wp.uint64, points: wp.array(dtype=wp.vec3), groups: wp.array(dtype=int), radius: float,
                   out: wp.array(dtype=float)):
    i = wp.tid()
    p = points[i]
    e = float(0.0)
    query = wp.hash_grid_query(grid, p, radius, groups[i])
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        d = wp.length(points[index] - p)
        if d <= radius and index != i:
            e += (radius - d) * (radius - d)
    wp.atomic_add(out, 0, e)


def test_tape_restores_grouped_builds(device):
    # two grouped builds inside a Tape: backward rebuilds the first (with its groups) for the first launch
    rng = np.random.default_rng(4)
    pts = (rng.random((150, 3)) * 1.5).astype(np.float32)
    g1, g2 = rng.integers(0, 2, 150).astype(np.int32), rng.integers(0, 3, 150).astype(np.int32)
    radius = 0.4
    p = wp.array(pts, dtype=wp.vec3, device=device, requires_grad=True)
    a1, a2 = (wp.array(g, dtype=int, device=device) for g in (g1, g2))
    grid = wp.HashGrid(8, 8, 8, device=device)
    out = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        for a in (a1, a2):
            grid.build(p, radius, groups=a)
            wp.launch(grouped_energy, dim=len(pts), inputs=[grid.id, p, a, radius], outputs=[out], device=device)
    tape.backward(out)
    x = pts.astype(np.float64)
    d = x[:, None] - x[None]
    dist = np.linalg.norm(d, axis=-1)
    expected = 0.0
    for g in (g1, g2):
        near = (dist <= radius) & (dist > 0) & (g[:, None] == g[None, :])
        coef = np.where(near, -2.0 * (radius - dist) / np.where(near, dist, 1.0), 0.0)
        expected = expected + 2.0 * (coef[..., None] * d).sum(axis=1)
    np.testing.assert_allclose(p.grad.numpy(), expected, atol=1e-4 * np.abs(expected).max())
