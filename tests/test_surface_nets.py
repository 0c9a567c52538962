"""simkit.geometry.IsoSurfaceNets (Warp 1.19's API): closed sphere meshes, quads vs triangles, the derived
tables, multi-sheet cells and ambiguous faces, open borders, gradients against finite differences,
errors, and agreement with warp-lang run side by side."""
from collections import Counter

import numpy as np
import pytest

import simkit as wp
from geometry_kernels import sphere_sdf, surface_area

NETS = wp.geometry.IsoSurfaceNets
SN = wp.geometry.surface_nets


def sphere_field(shape, lower, upper, r, center=(0.0, 0.0, 0.0)):
    axes = [np.linspace(lo, hi, n) - c for n, lo, hi, c in zip(shape, lower, upper, center)]
    X, Y, Z = np.meshgrid(*axes, indexing="ij")
    return (np.sqrt(X**2 + Y**2 + Z**2) - r).astype(np.float32)


def edge_counts(faces):
    """Faces incident to each undirected edge."""
    counts = Counter()
    for face in faces:
        for a, b in zip(face, np.roll(face, -1)):
            counts[(min(a, b), max(a, b))] += 1
    return counts


def components(nverts, faces):
    parent = list(range(nverts))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for face in faces:
        for b in face[1:]:
            parent[find(int(b))] = find(int(face[0]))
    return len({find(i) for i in range(nverts)})


def signed_volume(v, tris):
    v = v.astype(np.float64)
    return np.einsum("ij,ij->i", v[tris[:, 0]], np.cross(v[tris[:, 1]], v[tris[:, 2]])).sum() / 6.0


def quads_of(field, **kwargs):
    verts, indices = NETS.extract(field, topology="quad", **kwargs)
    assert verts.dtype is wp.vec3 and indices.dtype is wp.int32 and indices.ndim == 1
    v, q = verts.numpy(), indices.numpy().reshape(-1, 4)
    if len(v):
        np.testing.assert_array_equal(np.unique(q), np.arange(len(v)))  # every vertex in a face
    return v, q


def test_namespace_and_tables():
    assert issubclass(NETS, wp.geometry.IsoSurfaceBase) and SN.IsoSurfaceNets is NETS
    iso = NETS(4, 5, 6)
    assert iso.topology == "triangle" and iso.verts is None and iso.indices is None
    assert repr(iso) == "IsoSurfaceNets(4, 5, 6, topology='triangle')"
    corners, edges = SN._SN_CORNER_OFFSETS, SN._SN_EDGE_TO_CORNERS
    table, ambiguous = SN._SN_EDGE_GROUP_TABLE, SN._SN_AMBIGUOUS_FACE
    assert sorted(corners) == sorted((x, y, z) for x in (0, 1) for y in (0, 1) for z in (0, 1))
    assert all(np.abs(np.subtract(corners[b], corners[a])).sum() == 1 and sum(corners[a]) < sum(corners[b])
               for a, b in edges)
    assert len({frozenset(e) for e in edges}) == 12 and len(table) == 13 * 256 and len(ambiguous) == 256
    faces = [[c for c in range(8) if corners[c][axis] == side] for axis in range(3) for side in (0, 1)]
    for signs in range(256):
        row, inside = table[13 * signs:13 * signs + 13], [(signs >> c) & 1 for c in range(8)]
        crossed = [inside[a] != inside[b] for a, b in edges]
        assert [g != 0 for g in row[1:]] == crossed
        assert set(row[1:]) - {0} == set(range(1, row[0] + 1))
        for g in range(1, row[0] + 1):  # each group is a closed loop: it meets every face an even number of times
            group = [e for e in range(12) if row[1 + e] == g]
            assert all(sum(1 for e in group if set(edges[e]) <= set(f)) % 2 == 0 for f in faces)
            assert min(group) > max([min(e for e in range(12) if row[1 + e] == h) for h in range(1, g)], default=-1)
        alternating = [f for f in faces if sum(inside[c] for c in f) == 2
                       and sum(crossed[e] for e in range(12) if set(edges[e]) <= set(f)) == 4]
        if ambiguous[signs]:
            assert 2 <= sum(inside) <= 3 and len(alternating) == 1
        else:
            assert not (2 <= sum(inside) <= 3 and len(alternating) == 1)
    # a face with two diagonal inside corners joins them: corners 0 and 2 (diagonal on y = 0) make one sheet
    assert table[13 * 0b101] == 1 and table[13 * 0b1000001] == 2  # corners 0 and 6: two sheets


def test_tables_match_warp():
    warp_sn = pytest.importorskip("warp._src.geometry.surface_nets")
    assert SN._SN_CORNER_OFFSETS == tuple(map(tuple, warp_sn._SN_CORNER_OFFSETS))
    assert SN._SN_EDGE_TO_CORNERS == tuple(map(tuple, warp_sn._SN_EDGE_TO_CORNERS))
    assert SN._SN_AMBIGUOUS_FACE == tuple(warp_sn._SN_AMBIGUOUS_FACE)

    def partition(table, signs):
        row = table[13 * signs:13 * signs + 13]
        return sorted(tuple(e for e in range(12) if row[1 + e] == g) for g in range(1, row[0] + 1))

    # the same sheets (their numbering in a cell may differ)
    assert all(partition(SN._SN_EDGE_GROUP_TABLE, s) == partition(warp_sn._SN_EDGE_GROUP_TABLE, s)
               for s in range(256))


def test_sphere_closed_quads_and_triangles(device):
    n, r, lo, hi = 24, 0.62, (-1.0,) * 3, (1.0,) * 3
    field = wp.array(sphere_field((n,) * 3, lo, hi, r), dtype=float, device=device)
    v, quads = quads_of(field, lower=lo, upper=hi)
    counts = edge_counts(quads)
    assert set(counts.values()) == {2}  # closed, manifold
    assert len(v) - len(counts) + len(quads) == 2  # Euler characteristic of a sphere
    assert components(len(v), quads) == 1
    spacing = 2.0 / (n - 1)
    assert np.abs(np.linalg.norm(v, axis=1) - r).max() < spacing  # within a cell of the sphere
    tv, tris = (a.numpy() for a in NETS.extract(field, 0.0, lower=lo, upper=hi))  # triangles by default
    np.testing.assert_array_equal(tv, v)
    tris = tris.reshape(-1, 3)
    np.testing.assert_array_equal(tris.reshape(-1, 6), quads[:, [0, 1, 2, 0, 2, 3]])
    vol = signed_volume(v, tris)  # > 0: counter-clockwise seen from outside
    assert abs(vol / (4 / 3 * np.pi * r**3) - 1) < 0.05
    assert set(edge_counts(tris).values()) == {2}
    iso = NETS(n, n, n, lower=wp.vec3(lo), upper=wp.vec3(hi), topology="quad")
    sv, sq = iso.surface(field, 0.0)
    assert iso.verts is sv and iso.indices is sq and sv.device == field.device
    np.testing.assert_array_equal(sv.numpy(), v)
    np.testing.assert_array_equal(sq.numpy().reshape(-1, 4), quads)
    # threshold: the level set of the distance field at 0.1 is the sphere of radius r + 0.1
    v2, _ = quads_of(field, threshold=0.1, lower=lo, upper=hi)
    assert np.abs(np.linalg.norm(v2, axis=1) - r - 0.1).max() < spacing


def test_nonuniform_bounds_and_resize(device):
    shape, lo, hi, r = (20, 14, 23), (-1.0, -0.7, -1.3), (1.1, 0.8, 1.2), 0.6
    field = wp.array(sphere_field(shape, lo, hi, r), dtype=float, device=device)
    v, q = quads_of(field, lower=lo, upper=hi)
    spacing = (np.array(hi) - lo) / (np.array(shape) - 1)
    assert np.abs(np.linalg.norm(v, axis=1) - r).max() < spacing.max()
    vi, qi = quads_of(field)  # default: node (i, j, k) at (i, j, k)
    np.testing.assert_array_equal(qi, q)
    np.testing.assert_allclose(lo + vi * spacing, v, atol=1e-5)
    iso = NETS(4, 4, 4)
    with pytest.raises(ValueError, match=r"does not match the grid \(4, 4, 4\)"):
        iso.surface(field, 0.0)
    iso.resize(*shape)
    iso.lower, iso.upper = lo, hi
    np.testing.assert_array_equal(iso.surface(field, 0.0)[0].numpy(), v)


def test_multi_sheet_cell_and_ambiguous_face(device):
    f = np.ones((4, 4, 4), dtype=np.float32)
    f[1, 1, 1] = f[2, 2, 2] = -1.0  # cell (1, 1, 1): two inside corners on a body diagonal, two sheets
    v, q = quads_of(wp.array(f, device=device))
    assert len(v) == 16 and len(q) == 12  # 15 cells crossed, one of them twice; 6 edges per blob
    assert set(edge_counts(q).values()) == {2} and components(len(v), q) == 2
    # two inside nodes diagonal on the face between cells (1, 2, 2) and (2, 2, 2): each cell alone would
    # join them, but both see the other's ambiguous face, so they stay two separate closed blobs
    f = np.ones((5, 6, 6), dtype=np.float32)
    f[2, 2, 2] = f[2, 3, 3] = -1.0
    v, q = quads_of(wp.array(f, device=device))
    assert set(edge_counts(q).values()) == {2} and components(len(v), q) == 2
    assert len(v) - len(edge_counts(q)) + len(q) == 4  # two spheres
    # a third inside node gives cell (1, 2, 2) a second ambiguous face: no correction, one blob
    f[1, 2, 3] = -1.0
    v, q = quads_of(wp.array(f, device=device))
    assert set(edge_counts(q).values()) == {2} and components(len(v), q) == 1


def test_open_border_and_empty(device):
    n = 12
    field = wp.array(sphere_field((n,) * 3, (0,) * 3, (n - 1,) * 3, n / 2.0), dtype=float, device=device)
    _, q = quads_of(field)  # a sphere round a corner of the grid: one open octant
    counts = edge_counts(q)
    assert max(counts.values()) == 2 and list(counts.values()).count(1) > 0
    f = np.ones((2, 2, 2), dtype=np.float32)
    f[0, 0, 0] = -1.0  # crosses only edges on the grid's border: no face can be built, so nothing at all
    for topology in ("triangle", "quad"):
        v, i = NETS.extract(wp.array(f, device=device), topology=topology)
        assert v.shape == (0,) and i.shape == (0,)
    iso = NETS(n, n, n)
    v, i = iso.surface(field, 1000.0)
    assert v.shape == (0,) and i.shape == (0,) and iso.verts is v


def test_matches_warp():
    """The same vertices (as a set: within a multi-sheet cell the order may differ) and the same faces."""
    warp = pytest.importorskip("warp")
    import warp.geometry  # noqa: F401

    rng = np.random.default_rng(5)
    cases = [(sphere_field((17, 13, 19), (-1, -1, -1), (1, 1.2, 0.9), 0.7), 0.05, (-1, -1, -1), (1, 1.2, 0.9))]
    for trial in range(3):
        f = rng.uniform(-1.0, 1.0, size=(7, 8, 6)).astype(np.float32)
        if trial:
            f = np.sign(f) + np.float32(0.25 * trial)  # many multi-sheet and ambiguous cells
        cases.append((f, 0.1 * trial, None, None))
    for f, threshold, lo, hi in cases:
        for topology in ("quad", "triangle"):
            v, i = (a.numpy() for a in NETS.extract(wp.array(f, device="cpu"), threshold, lower=lo, upper=hi,
                                                    topology=topology))
            wv, wi = (a.numpy() for a in warp.geometry.IsoSurfaceNets.extract(
                warp.array(f, device="cpu"), threshold, lower=lo, upper=hi, topology=topology))
            assert v.shape == wv.shape and i.shape == wi.shape
            dist = np.linalg.norm(v[:, None, :] - wv[None, :, :], axis=2)
            match = dist.argmin(axis=1)  # our vertex k is warp's vertex match[k]
            assert dist.min(axis=1).max() < 1e-5 and len(set(match)) == len(v)
            np.testing.assert_array_equal(match[i], wi)


def test_gradient_finite_differences(device):
    """d(sum w . verts) / d(field) against central differences (float32: the API's only field type); the
    field is random with a border where the surface leaves the grid, so dropped sheets are exercised."""
    rng = np.random.default_rng(3)
    f = rng.uniform(-1.0, 1.0, size=(5, 6, 5)).astype(np.float32)
    f[np.abs(f) < 0.05] = 0.3  # keep every node away from the threshold: the topology is fixed under eps
    lo, hi = (-1.0, 0.0, 0.5), (1.0, 2.5, 1.5)
    field = wp.array(f, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        verts, _ = NETS.extract(field, 0.0, lower=lo, upper=hi)
    w = rng.uniform(-1.0, 1.0, size=(len(verts), 3)).astype(np.float32)
    tape.backward(grads={verts: wp.array(w, dtype=wp.vec3, device=device)})
    grad = field.grad.numpy()

    def loss(g):
        v = NETS.extract(wp.array(g, device=device), 0.0, lower=lo, upper=hi)[0].numpy()
        assert v.shape == w.shape
        return float(np.sum(v.astype(np.float64) * w))

    eps = 1e-2
    nodes = [tuple(n) for n in np.argwhere(grad != 0)[:: 3]] + [tuple(n) for n in np.argwhere(grad == 0)[:3]]
    assert len(nodes) > 20
    for node in nodes:
        plus, minus = f.copy(), f.copy()
        plus[node] += eps
        minus[node] -= eps
        fd = (loss(plus) - loss(minus)) / (2 * eps)
        assert abs(grad[node] - fd) < 2e-3 + 2e-2 * abs(fd), (node, grad[node], fd)


def test_area_gradient_wrt_radius(device):
    n, r = 32, 0.55
    lo, hi = wp.vec3(-1.0, -1.0, -1.0), wp.vec3(1.0, 1.0, 1.0)
    delta = wp.vec3(*([2.0 / (n - 1)] * 3))
    rad = wp.array([r], dtype=float, device=device, requires_grad=True)
    field = wp.zeros((n, n, n), dtype=float, device=device, requires_grad=True)
    area = wp.zeros(1, dtype=float, device=device, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(sphere_sdf, dim=field.shape, inputs=[field, lo, delta, rad], device=device)
        verts, tris = NETS.extract(field, 0.0, lower=lo, upper=hi)
        wp.launch(surface_area, dim=len(tris) // 3, inputs=[verts, tris, area], device=device)
    tape.backward(area)
    assert abs(float(area.numpy()[0]) / (4 * np.pi * r**2) - 1) < 0.05
    assert abs(float(rad.grad.numpy()[0]) / (8 * np.pi * r) - 1) < 0.05


def test_bad_input(device):
    for shape in ((1, 8, 8), (8, 1, 8), (8, 8, 1), (0, 8, 8)):
        with pytest.raises(ValueError, match="at least 2 nodes on each axis"):
            NETS.extract(wp.zeros(shape, dtype=float, device=device))
    with pytest.raises(ValueError, match="array3d"):
        NETS.extract(wp.zeros(8, dtype=float, device=device))
    with pytest.raises(TypeError, match="float32"):
        NETS.extract(wp.zeros((4, 4, 4), dtype=wp.float64, device=device))
    with pytest.raises(TypeError, match="simkit array3d"):
        NETS.extract(np.zeros((4, 4, 4), dtype=np.float32))
    field = wp.zeros((4, 4, 4), dtype=float, device=device)
    with pytest.raises(ValueError, match="topology must be 'triangle' or 'quad', got 'triangles'"):
        NETS.extract(field, 0.0, topology="triangles")
    with pytest.raises(ValueError, match="topology must be 'triangle' or 'quad', got 'quads'"):
        NETS(4, 4, 4, topology="quads")
    with pytest.raises(ValueError, match="lower must be 3 finite numbers"):
        NETS.extract(field, lower=(0.0, 0.0))
    with pytest.raises(ValueError, match="upper must be 3 finite numbers"):
        NETS(4, 4, 4, upper=(1.0, float("nan"), 1.0)).surface(field, 0.0)
    with pytest.raises(TypeError):
        NETS(4, 4, 4, (0, 0, 0))  # lower, upper and topology are keyword-only
