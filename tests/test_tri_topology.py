"""simkit.geometry triangle topology and Delaunay flips (Warp 1.19's tri_tri_adjacency, delaunay_edge_flip and
the 2D predicates): adjacency against a brute-force edge map, flips against the empty-circumcircle property and
scipy's Delaunay triangulation, warp-lang side by side, the predicates against numpy (and the gradient of the
area against central differences), graph capture, errors."""
import numpy as np
import pytest

import simkit as wp
import simkit.geometry as geo


def grid_mesh(nx, ny, jitter=0.0, seed=0):
    """Points of an (nx+1) x (ny+1) grid (interior ones jittered) and its triangles, all counter-clockwise."""
    xs, ys = np.meshgrid(np.arange(nx + 1), np.arange(ny + 1), indexing="ij")
    pts = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.float64)
    inner = (xs.ravel() > 0) & (xs.ravel() < nx) & (ys.ravel() > 0) & (ys.ravel() < ny)
    pts[inner] += np.random.default_rng(seed).uniform(-jitter, jitter, size=(inner.sum(), 2))
    tris = []
    for i in range(nx):
        for j in range(ny):
            a, b, c, d = i * (ny + 1) + j, (i + 1) * (ny + 1) + j, (i + 1) * (ny + 1) + j + 1, i * (ny + 1) + j + 1
            tris += [[a, b, c], [a, c, d]]
    return pts.astype(np.float32), np.array(tris, dtype=np.int32)


def area2(p, tris):
    a, b, c = (p[tris[:, k]].astype(np.float64) for k in range(3))
    return (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])


def incircle_det(a, b, c, d):
    u, v, w = a - d, b - d, c - d
    return (np.einsum("...i,...i", u, u) * (v[..., 0] * w[..., 1] - v[..., 1] * w[..., 0])
            - np.einsum("...i,...i", v, v) * (u[..., 0] * w[..., 1] - u[..., 1] * w[..., 0])
            + np.einsum("...i,...i", w, w) * (u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0]))


def edge_map(tris):
    """{sorted edge: [(triangle, local edge)]}, edge j of t joining local vertices j+1 and j+2."""
    out = {}
    for t, tri in enumerate(tris):
        for j in range(3):
            a, b = int(tri[(j + 1) % 3]), int(tri[(j + 2) % 3])
            out.setdefault((min(a, b), max(a, b)), []).append((t, j))
    return out


def brute_adjacency(tris):
    nbr = -np.ones(tris.shape, dtype=np.int32)
    nbr_edge = -np.ones(tris.shape, dtype=np.int32)
    for inc in edge_map(tris).values():
        if len(inc) == 2:
            (t0, j0), (t1, j1) = inc
            nbr[t0, j0], nbr_edge[t0, j0], nbr[t1, j1], nbr_edge[t1, j1] = t1, j1, t0, j0
    return nbr, nbr_edge


def empty_circumcircles(pts, tris, tol=1e-7):
    """Global Delaunay property: no vertex strictly inside any triangle's circumcircle (relative tolerance)."""
    p = pts.astype(np.float64)
    a, b, c = p[tris[:, 0]][:, None], p[tris[:, 1]][:, None], p[tris[:, 2]][:, None]
    det = incircle_det(a, b, c, p[None, :, :])
    scale = np.abs(area2(p, tris))[:, None] * (1.0 + np.abs(p).max()) ** 2
    return bool((det <= tol * scale).all())


def canonical(tris):
    """Triangles as a set of vertex tuples rotated to start at their smallest vertex (winding kept)."""
    return {tuple(np.roll(t, -int(np.argmin(t)))) for t in np.asarray(tris).tolist()}


def shuffled_mesh(seed):
    """A jittered grid with triangles permuted, vertex order rotated and some triangles reversed."""
    pts, tris = grid_mesh(7, 5, jitter=0.2, seed=seed)
    rng = np.random.default_rng(seed)
    tris = tris[rng.permutation(len(tris))]
    tris = np.array([np.roll(t, rng.integers(3)) for t in tris], dtype=np.int32)
    flip = rng.random(len(tris)) < 0.3
    tris[flip] = tris[flip][:, ::-1]
    return pts, tris


# ---------------------------------------------------------------------------
# predicates


@wp.kernel
def predicates(a: wp.array(dtype=wp.vec2), b: wp.array(dtype=wp.vec2), c: wp.array(dtype=wp.vec2),
               d: wp.array(dtype=wp.vec2), area: wp.array(dtype=float), area64: wp.array(dtype=wp.float64),
               inside: wp.array(dtype=wp.int32)):
    i = wp.tid()
    area[i] = geo.signed_area(a[i], b[i], c[i])
    area64[i] = geo.signed_area(wp.vec2d(a[i]), wp.vec2d(b[i]), wp.vec2d(c[i]))
    inside[i] = wp.int32(geo.in_circle(a[i], b[i], c[i], d[i]))


def test_predicates_against_numpy(device):
    rng = np.random.default_rng(1)
    n = 400
    a, b, c = (rng.uniform(-1, 1, (n, 2)).astype(np.float32) for _ in range(3))
    swap = area2(np.concatenate([a, b, c]), np.arange(3 * n).reshape(3, n).T) < 0  # make abc counter-clockwise
    b[swap], c[swap] = c[swap].copy(), b[swap].copy()
    d = rng.uniform(-2, 2, (n, 2)).astype(np.float32)
    arrs = [wp.array(x, dtype=wp.vec2, device=device) for x in (a, b, c, d)]
    area, area64 = wp.zeros(n, dtype=float, device=device), wp.zeros(n, dtype=wp.float64, device=device)
    inside = wp.zeros(n, dtype=wp.int32, device=device)
    wp.launch(predicates, dim=n, inputs=arrs + [area, area64, inside], device=device)
    ref_area = 0.5 * area2(np.concatenate([a, b, c]), np.arange(3 * n).reshape(3, n).T)
    np.testing.assert_allclose(area.numpy(), ref_area, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(area64.numpy(), ref_area, rtol=1e-12, atol=1e-14)
    assert (ref_area > 0).all()
    det = incircle_det(*(x.astype(np.float64) for x in (a, b, c, d)))
    clear = np.abs(det) > 1e-4  # away from the circle, float32 and float64 agree
    assert clear.sum() > 300
    np.testing.assert_array_equal(inside.numpy()[clear], (det > 0)[clear])


@wp.kernel
def area_sum(p: wp.array(dtype=wp.vec2), tris: wp.array2d(dtype=wp.int32), out: wp.array(dtype=float)):
    t = wp.tid()
    s = geo.signed_area(p[tris[t, 0]], p[tris[t, 1]], p[tris[t, 2]])
    wp.atomic_add(out, 0, s * s)


def test_signed_area_gradient(device):
    """d(sum of squared areas)/d(positions) through signed_area on a Tape, against central differences."""
    pts, tris = grid_mesh(3, 2, jitter=0.3, seed=4)
    ind = wp.array(tris, dtype=wp.int32, device=device)

    def loss(p):
        out = wp.zeros(1, dtype=float, device=device)
        wp.launch(area_sum, dim=len(tris), inputs=[wp.array(p, dtype=wp.vec2, device=device), ind, out],
                  device=device)
        return float(out.numpy()[0])

    p = wp.array(pts, dtype=wp.vec2, device=device, requires_grad=True)
    out = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(area_sum, dim=len(tris), inputs=[p, ind, out], device=device)
    tape.backward(out)
    grad = p.grad.numpy()
    eps = 1e-2  # the loss is a polynomial of degree 4: central differences are near exact
    fd = np.zeros_like(grad)
    for i in range(len(pts)):
        for k in range(2):
            hi, lo = pts.copy(), pts.copy()
            hi[i, k] += eps
            lo[i, k] -= eps
            fd[i, k] = (loss(hi) - loss(lo)) / (2 * eps)
    np.testing.assert_allclose(grad, fd, rtol=2e-3, atol=2e-3)
    assert np.abs(grad).max() > 0.1


# ---------------------------------------------------------------------------
# adjacency


@pytest.mark.parametrize("seed", [0, 1])
def test_adjacency_against_brute_force(device, seed):
    pts, tris = shuffled_mesh(seed)
    ind = wp.array(tris, dtype=wp.int32, device=device)
    nbr, nbr_edge = geo.tri_tri_adjacency(ind, vertex_count=len(pts))
    ref_nbr, ref_edge = brute_adjacency(tris)
    assert nbr.shape == tris.shape and nbr.dtype is wp.int32 and nbr.device == ind.device
    np.testing.assert_array_equal(nbr.numpy(), ref_nbr)
    np.testing.assert_array_equal(nbr_edge.numpy(), ref_edge)
    only = geo.tri_tri_adjacency(ind, return_neighbor_edge_indices=False)  # vertex_count inferred
    assert not isinstance(only, tuple)
    np.testing.assert_array_equal(only.numpy(), ref_nbr)
    assert (ref_nbr >= 0).sum() == 2 * (len(edge_map(tris)) - (ref_nbr < 0).sum())  # interior edges twice


@wp.kernel
def neighbor_edges_by_search(nbr: wp.array2d(dtype=wp.int32), out: wp.array2d(dtype=wp.int32)):
    t, j = wp.tid()
    n = nbr[t, j]
    out[t, j] = -1
    if n >= 0:
        out[t, j] = geo.find_triangle_neighbor_edge_index(nbr, n, t)


def test_find_triangle_neighbor_edge_index(device):
    pts, tris = shuffled_mesh(2)
    nbr, nbr_edge = geo.tri_tri_adjacency(wp.array(tris, dtype=wp.int32, device=device))
    out = wp.zeros(tris.shape, dtype=wp.int32, device=device)
    wp.launch(neighbor_edges_by_search, dim=tris.shape, inputs=[nbr, out], device=device)
    np.testing.assert_array_equal(out.numpy(), nbr_edge.numpy())


def test_adjacency_edge_cases(device):
    empty = geo.tri_tri_adjacency(wp.zeros((0, 3), dtype=wp.int32, device=device))
    assert empty[0].shape == (0, 3) and empty[1].shape == (0, 3)
    # an index out of range for the given vertex_count joins nothing (and writes nothing out of bounds)
    tris = np.array([[0, 1, 2], [0, 2, 3], [2, 1, 7]], dtype=np.int32)
    nbr = geo.tri_tri_adjacency(wp.array(tris, dtype=wp.int32, device=device), vertex_count=4)[0].numpy()
    np.testing.assert_array_equal(nbr, [[2, 1, -1], [-1, -1, 0], [-1, -1, 0]])


def test_adjacency_bad_input(device):
    with pytest.raises(ValueError, match=r"indices must have shape \(num_tris, 3\)"):
        geo.tri_tri_adjacency(wp.zeros(6, dtype=wp.int32, device=device))
    with pytest.raises(TypeError, match="indices must hold int32"):
        geo.tri_tri_adjacency(wp.zeros((2, 3), dtype=wp.int64, device=device))
    with pytest.raises(TypeError, match="indices must be a simkit array2d"):
        geo.tri_tri_adjacency(np.zeros((2, 3), dtype=np.int32))
    with pytest.raises(ValueError, match="vertex_count must not be negative"):
        geo.tri_tri_adjacency(wp.zeros((2, 3), dtype=wp.int32, device=device), vertex_count=-1)


# ---------------------------------------------------------------------------
# Delaunay flips


def flip(pts, tris, device, **kw):
    ind = wp.array(tris, dtype=wp.int32, device=device)
    n = geo.delaunay_edge_flip(wp.array(pts, dtype=wp.vec2, device=device), ind, **kw)
    assert n.shape == (1,) and n.dtype is wp.int32 and n.device == ind.device
    return int(n.numpy()[0]), ind.numpy()


def check_valid(pts, before, after):
    """Same vertices, same total area, all triangles counter-clockwise, manifold, boundary kept."""
    assert (area2(pts, after) > 0).all()
    assert set(np.unique(after).tolist()) == set(np.unique(before).tolist())
    np.testing.assert_allclose(area2(pts, after).sum(), area2(pts, before).sum(), rtol=1e-9)
    em_a, em_b = edge_map(after), edge_map(before)
    assert all(len(v) <= 2 for v in em_a.values())
    assert {e for e, v in em_a.items() if len(v) == 1} == {e for e, v in em_b.items() if len(v) == 1}


@pytest.mark.parametrize("seed", [0, 1])
def test_flip_jittered_grid_is_delaunay(device, seed):
    pts, tris = grid_mesh(9, 7, jitter=0.35, seed=seed)
    assert not empty_circumcircles(pts, tris)
    n, out = flip(pts, tris, device)
    check_valid(pts, tris, out)
    assert n > 0 and empty_circumcircles(pts, out)  # the domain is convex: locally Delaunay = Delaunay
    assert flip(pts, out, device)[0] == 0  # a fixed point


def test_flip_matches_scipy_delaunay(device):
    """Points in convex position (on an ellipse: no four cocircular): the Delaunay triangulation is unique."""
    spatial = pytest.importorskip("scipy.spatial")
    rng = np.random.default_rng(5)
    ang = np.sort(rng.uniform(0, 2 * np.pi, 30))
    pts = np.stack([2.0 * np.cos(ang), np.sin(ang)], axis=1).astype(np.float32)
    fan = np.array([[0, i, i + 1] for i in range(1, len(pts) - 1)], dtype=np.int32)
    n, out = flip(pts, fan, device)
    check_valid(pts, fan, out)
    ref = spatial.Delaunay(pts.astype(np.float64)).simplices.astype(np.int32)
    ref[area2(pts, ref) < 0] = ref[area2(pts, ref) < 0][:, ::-1]
    assert n > 0 and canonical(out) == canonical(ref)


def test_flip_against_warp_lang(device):
    warp = pytest.importorskip("warp")
    import warp.geometry as wgeo

    warp.config.quiet = True
    pts, tris = grid_mesh(12, 10, jitter=0.3, seed=9)
    wind = warp.array(tris, dtype=warp.int32, device="cpu")
    wgeo.delaunay_edge_flip(warp.array(pts, dtype=warp.vec2, device="cpu"), wind)
    _, out = flip(pts, tris, device)
    assert canonical(out) == canonical(wind.numpy())
    wn, wedge = wgeo.tri_tri_adjacency(wind)
    nbr, nbr_edge = geo.tri_tri_adjacency(wp.array(wind.numpy(), dtype=wp.int32, device=device))
    np.testing.assert_array_equal(nbr.numpy(), wn.numpy())
    np.testing.assert_array_equal(nbr_edge.numpy(), wedge.numpy())


def test_flip_star_polygon_keeps_boundary(device):
    """A non-convex star fanned from its centre: the spokes flip where their quad is convex; the boundary stays."""
    k = 7
    ang = np.pi * np.arange(2 * k) / k
    rad = np.where(np.arange(2 * k) % 2 == 0, 1.0, 0.45)
    pts = np.concatenate([[[0.0, 0.0]], np.stack([rad * np.cos(ang), rad * np.sin(ang)], 1)]).astype(np.float32)
    tris = np.array([[0, 1 + i, 1 + (i + 1) % (2 * k)] for i in range(2 * k)], dtype=np.int32)
    n, out = flip(pts, tris, device)
    assert n > 0
    check_valid(pts, tris, out)
    assert flip(pts, out, device)[0] == 0


def test_flip_guards(device):
    pts = np.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, -1.0]], dtype=np.float32)
    tris = np.array([[0, 1, 2], [1, 0, 3]], dtype=np.int32)  # a thin quad split along its long diagonal
    n, out = flip(pts, tris, device)
    assert n == 1 and canonical(out) == canonical([[0, 3, 2], [1, 2, 3]])
    # the new triangles have area 3: area_epsilon just below lets the flip through, just above refuses it
    assert flip(pts, tris, device, area_epsilon=2.99)[0] == 1
    n, out = flip(pts, tris, device, area_epsilon=3.01)
    assert n == 0 and (out == tris).all()
    ref = wp.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 0.0], [0.0, 0.0]], dtype=wp.vec2, device=device)  # degenerate
    n, out = flip(pts, tris, device, ref_positions=ref)
    assert n == 0 and (out == tris).all()
    mirrored = wp.array(pts * np.float32([-1, 1]), dtype=wp.vec2, device=device)  # non-degenerate either way round
    assert flip(pts, tris, device, ref_positions=mirrored)[0] == 1
    grid_pts, grid_tris = grid_mesh(4, 4)  # right triangles: cocircular quads are not flipped
    n, out = flip(grid_pts, grid_tris, device)
    assert n == 0 and (out == grid_tris).all()
    assert flip(np.zeros((0, 2), np.float32), np.zeros((0, 3), np.int32), device)[0] == 0


def test_flip_max_passes(device):
    """One pass flips an independent set: no two flipped edges share a triangle."""
    pts, tris = grid_mesh(9, 7, jitter=0.35, seed=3)
    n1, out1 = flip(pts, tris, device, max_passes=1)
    check_valid(pts, tris, out1)
    changed = np.flatnonzero((out1 != tris).any(axis=1))
    assert 0 < n1 and len(changed) == 2 * n1  # each flip rewrote its own two triangles
    n_all, out = flip(pts, tris, device)
    assert n_all >= n1 and empty_circumcircles(pts, out)


def test_flip_graph_capture(device):
    if wp.get_device(device).is_cuda and not wp.is_conditional_graph_supported():
        pytest.skip("conditional graph nodes need CUDA 12.4+")
    pts, tris = grid_mesh(6, 5, jitter=0.3, seed=7)
    n_ref, ref = flip(pts, tris, device)
    pos = wp.array(pts, dtype=wp.vec2, device=device)
    ind = wp.array(tris, dtype=wp.int32, device=device)
    geo.delaunay_edge_flip(pos, wp.array(tris, dtype=wp.int32, device=device))  # (kernels loaded before capture)
    with wp.ScopedCapture(device=device, force_module_load=False) as cap:
        total = geo.delaunay_edge_flip(pos, ind)
    np.testing.assert_array_equal(ind.numpy(), tris)  # captured, not run
    wp.capture_launch(cap.graph)
    np.testing.assert_array_equal(ind.numpy(), ref)
    assert int(total.numpy()[0]) == n_ref
    wp.capture_launch(cap.graph)  # again, on the now Delaunay mesh: nothing to flip
    assert int(total.numpy()[0]) == 0 and (ind.numpy() == ref).all()
    with wp.ScopedCapture(device=device, force_module_load=False):
        with pytest.raises(RuntimeError, match="pass vertex_count"):
            geo.tri_tri_adjacency(ind)


def test_flip_bad_arguments(device):
    pts, tris = grid_mesh(2, 2, jitter=0.2)
    pos = wp.array(pts, dtype=wp.vec2, device=device)
    ind = wp.array(tris, dtype=wp.int32, device=device)
    cases = [
        ("max_passes must be an integer >= 1", dict(max_passes=0)),
        ("max_passes must be an integer >= 1", dict(max_passes=-1)),
        ("area_epsilon must be a finite number >= 0", dict(area_epsilon=-1.0)),
        ("area_epsilon must be a finite number >= 0", dict(area_epsilon=float("nan"))),
        ("ref_area_epsilon must be a finite number >= 0", dict(ref_area_epsilon=float("inf"))),
        ("ref_positions must match positions", dict(ref_positions=wp.zeros(3, dtype=wp.vec2, device=device))),
    ]
    for match, kw in cases:
        with pytest.raises(ValueError, match=match):
            geo.delaunay_edge_flip(pos, ind, **kw)
    with pytest.raises(ValueError, match=r"indices must have shape \(num_tris, 3\)"):
        geo.delaunay_edge_flip(pos, wp.zeros(6, dtype=wp.int32, device=device))
    with pytest.raises(TypeError, match="positions must be a 1D simkit array of vec2, got dtype vec3"):
        geo.delaunay_edge_flip(wp.zeros(9, dtype=wp.vec3, device=device), ind)
    with pytest.raises(TypeError, match="indices must hold int32"):
        geo.delaunay_edge_flip(pos, wp.zeros((2, 3), dtype=wp.int64, device=device))
    np.testing.assert_array_equal(ind.numpy(), tris)  # nothing ran
