"""simkit.geometry sparse marching cubes (Warp 1.19's API): lipschitz_octree, sparse_marching_cubes_from_cells,
sparse_marching_cubes. Checked against the dense IsoSurfaceMarchingCubes.extract on the same grid, a brute-force
numpy search of the crossed cells, mesh topology, central finite differences, and warp-lang side by side."""
import contextlib

import numpy as np
import pytest

import simkit as wp
from geometry_kernels import surface_area

geo = wp.geometry
CORNERS = np.array(geo.IsoSurfaceMarchingCubes.CUBE_CORNER_OFFSETS, dtype=np.int64)


@wp.kernel
def sphere_values(points: wp.array(dtype=wp.vec3), radius: wp.array(dtype=float), values: wp.array(dtype=float)):
    i = wp.tid()
    values[i] = wp.length(points[i]) - radius[0]


@wp.kernel
def torus_values(points: wp.array(dtype=wp.vec3), values: wp.array(dtype=float)):
    i = wp.tid()
    p = points[i]
    q = wp.vec2(wp.length(wp.vec2(p[0], p[2])) - 0.5, p[1])
    values[i] = wp.length(q) - 0.2


@wp.kernel
def grid_nodes(lower: wp.vec3, delta: wp.vec3, points: wp.array3d(dtype=wp.vec3)):
    i, j, k = wp.tid()
    points[i, j, k] = lower + wp.cw_mul(wp.vec3(float(i), float(j), float(k)), delta)


def sphere(radius=0.5, requires_grad=False):
    """A batched signed distance of a sphere at the origin; ``radius`` a float or a 1-element array."""
    calls = []

    def field(points):
        r = radius if isinstance(radius, wp.array) else wp.array([radius], dtype=float, device=points.device)
        out = wp.empty(points.shape[0], dtype=float, device=points.device, requires_grad=requires_grad)
        wp.launch(sphere_values, dim=points.shape[0], inputs=[points, r], outputs=[out], device=points.device)
        calls.append(points.shape[0])
        return out

    field.calls = calls
    return field


def torus(points):
    out = wp.empty(points.shape[0], dtype=float, device=points.device)
    wp.launch(torus_values, dim=points.shape[0], inputs=[points], outputs=[out], device=points.device)
    return out


def dense(field, shape, lower, upper, device):
    """Dense extract of the same field, sampled by the same batched callable at every node."""
    n = np.asarray(shape, dtype=np.float64)
    lo = np.asarray(lower, dtype=np.float64)
    delta = wp.vec3((np.asarray(upper, dtype=np.float64) - lo) / (n - 1))
    nodes = wp.empty(shape, dtype=wp.vec3, device=device)
    wp.launch(grid_nodes, dim=shape, inputs=[wp.vec3(lo), delta, nodes], device=device)
    values = field(nodes.flatten()).numpy().reshape(shape)
    field_arr = wp.array(values, dtype=float, device=device)
    return geo.IsoSurfaceMarchingCubes.extract(field_arr, 0.0, lower=lower, upper=upper), values


def triangle_set(indices):
    """Triangles as vertex-index triples rotated to start at their smallest index (winding kept)."""
    t = indices.reshape(-1, 3)
    return {tuple(np.roll(r, -int(np.argmin(r)))) for r in t}


def edge_counts(faces):
    """(undirected edge -> face count, directed edge -> count)."""
    directed = np.concatenate([faces[:, [0, 1]], faces[:, [1, 2]], faces[:, [2, 0]]])
    und, ucount = np.unique(np.sort(directed, axis=1), axis=0, return_counts=True)
    _, dcount = np.unique(directed, axis=0, return_counts=True)
    return und, ucount, dcount


@pytest.mark.parametrize("shape, lower, upper", [((33, 33, 33), (-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)),
                                                 ((19, 23, 14), (-1.0, -1.2, -0.9), (1.0, 1.3, 1.1))])
def test_matches_dense_extract(device, shape, lower, upper):
    field = sphere(0.55)
    verts, indices, stats = geo.sparse_marching_cubes(field, *shape, lower=lower, upper=upper, device=device,
                                                      return_stats=True)
    sampled = sum(field.calls)
    (dv, di), values = dense(field, shape, lower, upper, device)
    assert verts.dtype is wp.vec3 and indices.dtype is wp.int32 and verts.device == indices.device
    v, d = verts.numpy(), dv.numpy()
    assert len(v) == len(d) > 0
    # the same vertices, in the dense order (up to an ulp or two: the two kernels that place the sample points
    # may contract their multiply-adds differently when the spacing is not a power of two)
    np.testing.assert_allclose(np.sort(v, axis=0), np.sort(d, axis=0), rtol=0, atol=1e-6)
    np.testing.assert_allclose(v, d, rtol=0, atol=1e-6)
    assert triangle_set(indices.numpy()) == triangle_set(di.numpy()) and len(indices) == len(di)
    # the octree sampled far fewer points than the grid has nodes
    assert stats["field_evaluations"] == sampled < values.size
    assert stats["requested_ncells"] == tuple(s - 1 for s in shape)
    assert stats["resolution"] == 1 << (max(shape) - 2).bit_length()


def crossed_cells(origin, width, resolution, radius):
    """The cells of the dense grid whose corners are not all on one side of the sphere (float64)."""
    x = origin[0] + width * np.arange(resolution + 1)
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    inside = (np.sqrt(X**2 + Y**2 + Z**2) - radius) < 0
    s = sum(inside[i:i + resolution, j:j + resolution, k:k + resolution].astype(int) for i, j, k in CORNERS)
    return {tuple(c) for c in np.argwhere((s > 0) & (s < 8))}


def test_octree_band_and_coverage(device):
    origin, root, depth, r = (-1.0, -1.0, -1.0), 2.0, 5, 0.55
    cells, width = geo.lipschitz_octree(sphere(r), origin, root, depth, device=device)
    assert cells.dtype is wp.vec3i and isinstance(width, float) and width == root / 2**depth
    c = cells.numpy().astype(np.int64)
    assert len({tuple(x) for x in c}) == len(c) and c.min() >= 0 and c.max() < 2**depth
    centres = np.asarray(origin) + width * (c + 0.5)
    assert np.abs(np.linalg.norm(centres, axis=1) - r).max() <= np.sqrt(3) / 2 * width + 1e-6  # in the band
    missing = crossed_cells(origin, width, 2**depth, r) - {tuple(x) for x in c}
    assert not missing  # every cell the surface crosses is kept
    # a wider bound keeps a superset; a level set outside the root cube keeps nothing
    wide = {tuple(x) for x in geo.lipschitz_octree(sphere(r), origin, root, depth, lipschitz_bound=2.0,
                                                   device=device)[0].numpy()}
    assert wide > {tuple(x) for x in c}
    empty, _ = geo.lipschitz_octree(sphere(r), origin, root, depth, threshold=-5.0, device=device)
    assert empty.shape == (0,) and empty.dtype is wp.vec3i
    root_only, w0 = geo.lipschitz_octree(sphere(r), origin, root, 0, device=device)
    assert root_only.numpy().tolist() == [[0, 0, 0]] and w0 == root


@pytest.mark.parametrize("name", ["sphere", "torus"])
def test_watertight(device, name):
    field, euler = (sphere(0.5), 2) if name == "sphere" else (torus, 0)
    verts, indices = geo.sparse_marching_cubes(field, 33, 33, 33, lower=(-1, -1, -1), upper=(1, 1, 1), device=device)
    v, f = verts.numpy(), indices.numpy().reshape(-1, 3)
    assert np.isfinite(v).all() and (f >= 0).all() and (f < len(v)).all()
    assert np.array_equal(np.unique(f), np.arange(len(v)))  # no unused vertex
    assert (f[:, 0] != f[:, 1]).all() and (f[:, 1] != f[:, 2]).all() and (f[:, 0] != f[:, 2]).all()
    und, ucount, dcount = edge_counts(f)
    assert (ucount == 2).all()  # closed and manifold
    assert (dcount == 1).all()  # consistently wound
    assert len(v) - len(und) + len(f) == euler
    if name == "sphere":
        signed = np.einsum("ij,ij->i", np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), v[f[:, 0]])
        assert signed.sum() > 0  # counter-clockwise seen from outside (values >= threshold)


def grid_cells(n):
    g = np.arange(n)
    return np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 3).astype(np.int32)


def test_from_cells_layouts_and_shifts(device):
    origin, depth, r = (-1.0, -1.0, -1.0), 5, 0.5
    cells_wp, width = geo.lipschitz_octree(sphere(r), origin, 2.0, depth, device=device)
    cells = cells_wp.numpy()
    corners = np.asarray(origin) + width * (cells[:, None, :] + CORNERS[None])
    values = (np.linalg.norm(corners, axis=2) - r).astype(np.float32)
    ref_v, ref_i = geo.sparse_marching_cubes(sphere(r), 33, 33, 33, lower=origin, upper=(1, 1, 1), device=device)
    v, i = geo.sparse_marching_cubes_from_cells(cells_wp, values, origin=origin, cell_width=width, device=device)
    # the same cells and (numpy-computed) values: the same vertices and triangles up to float rounding
    assert len(v) == len(ref_v) and len(i) == len(ref_i)
    np.testing.assert_allclose(v.numpy(), ref_v.numpy(), atol=2e-6)
    strided = wp.array(np.repeat(values[:, :, None], 2, axis=2), dtype=float, device=device)[:, :, 1]
    assert not strided.is_contiguous
    for c, val in ((cells, values.reshape(-1)), (wp.array(cells, dtype=wp.int32, device=device), strided),
                   (cells.tolist(), wp.array(values, dtype=float, device=device))):
        v2, i2 = geo.sparse_marching_cubes_from_cells(c, val, origin=origin, cell_width=width, device=device)
        np.testing.assert_array_equal(v2.numpy(), v.numpy())
        np.testing.assert_array_equal(i2.numpy(), i.numpy())
    # far and negative subscripts with a compensating origin: the same surface (relative corner keys)
    for shift in (np.array([1000, -500, 7]), np.array([1 << 25, -(1 << 26), 1 << 24])):
        moved = tuple(np.asarray(origin) - shift * width)
        vs, is_ = geo.sparse_marching_cubes_from_cells(cells + shift, values, origin=moved, cell_width=width,
                                                       device=device)
        np.testing.assert_array_equal(is_.numpy(), i.numpy())
        np.testing.assert_allclose(vs.numpy(), v.numpy(), atol=1e-5)


def test_from_cells_gradient_fd(device):
    """d(sum w * verts) / d(corner values) against central differences of a node-value field; each
    shared corner's gradient goes to exactly one of its slots (its first, cell-major)."""
    rng = np.random.default_rng(3)
    n = 4
    nodes = rng.uniform(0.1, 1.0, (n + 1,) * 3) * rng.choice([-1.0, 1.0], (n + 1,) * 3)
    cells = grid_cells(n)[rng.permutation(n**3)[:40]]  # a scattered subset, in a random order
    node_of = (cells[:, None, :] + CORNERS[None]).reshape(-1, 3)

    def slots(node_values):
        return node_values[node_of[:, 0], node_of[:, 1], node_of[:, 2]].astype(np.float32).reshape(-1, 8)

    v0, i0 = geo.sparse_marching_cubes_from_cells(cells, slots(nodes), cell_width=0.5, threshold=0.05, device=device)
    weights = rng.standard_normal((len(v0), 3))

    def loss(node_values):
        v, i = geo.sparse_marching_cubes_from_cells(cells, slots(node_values), cell_width=0.5, threshold=0.05,
                                                    device=device)
        assert np.array_equal(i.numpy(), i0.numpy())
        return float((v.numpy().astype(np.float64) * weights).sum())

    cv = wp.array(slots(nodes), dtype=float, device=device, requires_grad=True)
    w = wp.array(weights.astype(np.float32), dtype=wp.vec3, device=device)
    tape = wp.Tape()
    with tape:
        verts, _ = geo.sparse_marching_cubes_from_cells(cells, cv, cell_width=0.5, threshold=0.05, device=device)
    tape.backward(grads={verts: w})
    g = cv.grad.numpy().reshape(-1)
    # the gradient of a node is on the first slot that holds it, zero on the others
    key = node_of @ np.array([(n + 1) ** 2, n + 1, 1])
    first = np.unique(key, return_index=True)[1]
    assert (g[np.setdiff1d(np.arange(len(g)), first)] == 0).all()
    eps = 1e-3
    nonzero = first[g[first] != 0]
    assert len(nonzero) > 20
    picks = np.concatenate([rng.choice(nonzero, 12, replace=False), rng.choice(first[g[first] == 0], 3)])
    for s in picks:
        p = tuple(node_of[s])
        plus, minus = nodes.copy(), nodes.copy()
        plus[p] += eps
        minus[p] -= eps
        fd = (loss(plus) - loss(minus)) / (2 * eps)
        assert abs(g[s] - fd) <= 2e-3 + 2e-3 * abs(fd), (p, g[s], fd)


def test_sparse_area_gradient_wrt_radius(device):
    """d(area)/d(radius) through the field's values at the corners: analytic 8 pi r, central differences,
    and the dense extractor's gradient on the same grid."""
    r = 0.55

    def area_of(radius, tape=None, sparse=True):
        rad = wp.array([radius], dtype=float, device=device, requires_grad=True)
        area = wp.zeros(1, dtype=float, device=device, requires_grad=True)
        with tape if tape is not None else contextlib.nullcontext():
            field = sphere(rad, requires_grad=True)
            if sparse:
                verts, faces = geo.sparse_marching_cubes(field, 33, 33, 33, lower=(-1, -1, -1), upper=(1, 1, 1),
                                                         device=device)
            else:
                nodes = wp.empty((33, 33, 33), dtype=wp.vec3, device=device)
                wp.launch(grid_nodes, dim=nodes.shape, inputs=[wp.vec3(-1.0, -1.0, -1.0),
                                                               wp.vec3(1 / 16, 1 / 16, 1 / 16), nodes], device=device)
                values = field(nodes.flatten())
                verts, faces = geo.IsoSurfaceMarchingCubes.extract(values.reshape((33, 33, 33)), 0.0,
                                                                   lower=(-1, -1, -1), upper=(1, 1, 1))
            wp.launch(surface_area, dim=len(faces) // 3, inputs=[verts, faces, area], device=device)
        v, f = verts.numpy().astype(np.float64), faces.numpy().reshape(-1, 3)
        return rad, 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1).sum(), area

    tape = wp.Tape()
    rad, a0, area = area_of(r, tape)
    tape.backward(area)
    grad = float(rad.grad.numpy()[0])
    assert abs(a0 / (4 * np.pi * r**2) - 1) < 0.02 and abs(grad / (8 * np.pi * r) - 1) < 0.05
    eps = 2e-3
    fd = (area_of(r + eps)[1] - area_of(r - eps)[1]) / (2 * eps)
    assert abs(grad - fd) < 3e-3 * abs(fd), (grad, fd)
    tape_d = wp.Tape()
    rad_d, _, area_d = area_of(r, tape_d, sparse=False)
    tape_d.backward(area_d)
    np.testing.assert_allclose(grad, float(rad_d.grad.numpy()[0]), rtol=1e-4)


def test_matches_warp_lang_side_by_side():
    warp = pytest.importorskip("warp")
    import warp.geometry  # noqa: F401

    @warp.kernel
    def w_sphere(points: warp.array(dtype=warp.vec3), values: warp.array(dtype=float)):
        i = warp.tid()
        values[i] = warp.length(points[i]) - 1.0

    def w_field(points):
        out = warp.empty(points.shape[0], dtype=float, device=points.device)
        warp.launch(w_sphere, dim=points.shape[0], inputs=[points], outputs=[out], device=points.device)
        return out

    shape, lower, upper = (11, 15, 21), (-1.0, -1.2, -0.9), (1.0, 1.3, 1.1)  # padding cells get culled
    wv, wi, wstats = warp.geometry.sparse_marching_cubes(w_field, *shape, lower=lower, upper=upper, device="cpu",
                                                         return_stats=True)
    v, i, stats = geo.sparse_marching_cubes(sphere(1.0), *shape, lower=lower, upper=upper, device="cpu",
                                            return_stats=True)
    assert stats == wstats and stats["culled_cells"] > 0
    assert len(i) == len(wi)
    np.testing.assert_allclose(np.sort(v.numpy(), axis=0), np.sort(wv.numpy(), axis=0), atol=1e-5)
    wc, ww = warp.geometry.lipschitz_octree(w_field, (-1.5, -1.5, -1.5), 3.0, 5, device="cpu")
    c, w = geo.lipschitz_octree(sphere(1.0), (-1.5, -1.5, -1.5), 3.0, 5, device="cpu")
    assert w == ww
    np.testing.assert_array_equal(c.numpy(), wc.numpy())  # the same cells, in the same order


def test_numpy_field_and_empty_results(device):
    def np_field(points):
        return wp.array((np.linalg.norm(points.numpy(), axis=1) - 0.5).astype(np.float32), device=points.device)

    v, i = geo.sparse_marching_cubes(np_field, 17, 17, 17, lower=(-1, -1, -1), upper=(1, 1, 1), device=device)
    ref_v, ref_i = geo.sparse_marching_cubes(sphere(0.5), 17, 17, 17, lower=(-1, -1, -1), upper=(1, 1, 1),
                                             device=device)
    assert len(i) == len(ref_i) and len(v) == len(ref_v)
    np.testing.assert_allclose(v.numpy(), ref_v.numpy(), atol=1e-6)
    v, i, stats = geo.sparse_marching_cubes(sphere(0.5), 17, 17, 17, lower=(-1, -1, -1), upper=(1, 1, 1),
                                            threshold=-10.0, device=device, return_stats=True)
    assert v.shape == (0,) and i.shape == (0,) and v.dtype is wp.vec3 and i.dtype is wp.int32
    assert stats["field_evaluations"] == 1 and stats["leaf_cells"] == 0
    v, i = geo.sparse_marching_cubes_from_cells(np.zeros((0, 3), np.int32), np.zeros((0, 8), np.float32),
                                                device=device)
    assert v.shape == (0,) and i.shape == (0,)


def test_bad_arguments():
    f = sphere(0.5)
    for dims in ((1, 17, 17), (17, 0, 17)):
        with pytest.raises(ValueError, match="at least 2 nodes"):
            geo.sparse_marching_cubes(f, *dims, device="cpu")
    with pytest.raises(ValueError, match="lipschitz_bound must not be negative"):
        geo.sparse_marching_cubes(f, 9, 9, 9, lipschitz_bound=-1.0, device="cpu")
    with pytest.raises(ValueError, match="lipschitz_bound must not be negative"):
        geo.lipschitz_octree(f, (0, 0, 0), 2.0, 4, lipschitz_bound=-1.0, device="cpu")
    with pytest.raises(TypeError, match="field must be a callable"):
        geo.sparse_marching_cubes(42, 9, 9, 9, device="cpu")

    @wp.func
    def point_sdf(p: wp.vec3):
        return wp.length(p) - 0.5

    for call in (lambda: geo.sparse_marching_cubes(point_sdf, 9, 9, 9, device="cpu"),
                 lambda: geo.lipschitz_octree(point_sdf, (0, 0, 0), 2.0, 4, device="cpu")):
        with pytest.raises(TypeError, match="single-point @func"):
            call()
    with pytest.raises(TypeError, match="field must return a simkit array"):
        geo.sparse_marching_cubes(lambda p: np.zeros(p.shape[0], np.float32), 9, 9, 9, device="cpu")
    with pytest.raises(ValueError, match="field returned shape"):
        geo.sparse_marching_cubes(lambda p: wp.zeros(3, dtype=float), 9, 9, 9, device="cpu")
    with pytest.raises(ValueError, match="root_width must be positive"):
        geo.lipschitz_octree(f, (0, 0, 0), 0.0, 4, device="cpu")
    with pytest.raises(ValueError, match="max_depth must be in"):
        geo.lipschitz_octree(f, (0, 0, 0), 1.0, -1, device="cpu")
    with pytest.raises(ValueError, match="origin must be 3 finite numbers"):
        geo.lipschitz_octree(f, (0, 0), 1.0, 2, device="cpu")
    cells, values = np.zeros((1, 3), np.int32), np.zeros((1, 8), np.float32)
    for width in (0.0, -1.0):
        with pytest.raises(ValueError, match="cell_width must be positive"):
            geo.sparse_marching_cubes_from_cells(cells, values, cell_width=width, device="cpu")
    with pytest.raises(ValueError, match=r"corner_values must have shape \(0, 8\)"):
        geo.sparse_marching_cubes_from_cells(np.zeros((0, 3), np.int32), np.zeros(3, np.float32), device="cpu")
    with pytest.raises(ValueError, match=r"cells must have shape \(N, 3\)"):
        geo.sparse_marching_cubes_from_cells(np.zeros((2, 2), np.int32), values, device="cpu")
    with pytest.raises(TypeError, match="cells must hold integer subscripts"):
        geo.sparse_marching_cubes_from_cells(np.zeros((1, 3)) + 0.5, values, device="cpu")
    with pytest.raises(TypeError, match="corner_values must be float32"):
        geo.sparse_marching_cubes_from_cells(cells, wp.zeros((1, 8), dtype=wp.float64), device="cpu")
    far = np.array([[-(1 << 31)] * 3, [(1 << 31) - 1] * 3], dtype=np.int64)
    with pytest.raises(ValueError, match="too many to number with 64-bit keys"):
        geo.sparse_marching_cubes_from_cells(far, np.zeros((2, 8), np.float32), device="cpu")
