"""Mesh sphere queries, the MeshQuery type (run-time kind, function parameters, for loops), the mesh's own
Bvh, ray counts and any-hit, watertight rays through shared edges, grouped meshes and Warp's older
output-argument forms: all against brute force."""
import numpy as np
import pytest

import simkit as wp
from test_mesh import MESHES, closest_on_triangles, ray_triangles, sk_mesh, tri_arrays


@wp.kernel
def k_sphere(mesh: wp.uint64, centers: wp.array(dtype=wp.vec3), radius: float, hits: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    query = wp.mesh_query_sphere(mesh, centers[i], radius)
    face = int(0)
    while wp.mesh_query_next(query, face):
        hits[i, face] += 1


@wp.func
def collect(query: wp.MeshQuery, hits: wp.array(dtype=int, ndim=2)):
    for face in query:
        hits[0, face] += 1


@wp.kernel
def k_runtime_kind(mesh: wp.uint64, use_sphere: bool, a: wp.vec3, b: wp.vec3, radius: float,
                   hits: wp.array(dtype=int, ndim=2)):
    if use_sphere:
        query = wp.mesh_query_sphere(mesh, a, radius)
    else:
        query = wp.mesh_query_aabb(mesh, a, b)
    collect(query, hits)


@wp.kernel
def k_aabb_alias(mesh: wp.uint64, a: wp.vec3, b: wp.vec3, hits: wp.array(dtype=int, ndim=2)):
    query = wp.mesh_query_aabb(mesh, a, b)
    face = int(0)
    while wp.mesh_query_aabb_next(query, face):
        hits[0, face] += 1


@wp.kernel
def k_mesh_bvh(mesh: wp.uint64, c: wp.vec3, radius: float, hits: wp.array(dtype=int, ndim=2)):
    query = wp.bvh_query_sphere(wp.mesh_get_bvh(mesh), c, radius)
    for face in query:
        hits[0, face] += 1


@wp.kernel
def k_rays(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), ds: wp.array(dtype=wp.vec3), max_t: float, root: int,
           out: wp.array(dtype=int, ndim=2), t_out: wp.array(dtype=float)):
    i = wp.tid()
    out[i, 0] = wp.mesh_query_ray_count_intersections(mesh, xs[i], ds[i], root)
    out[i, 1] = int(wp.mesh_query_ray_anyhit(mesh, xs[i], ds[i], max_t, root))
    h = wp.mesh_query_ray(mesh, xs[i], ds[i], max_t, root)
    out[i, 2] = wp.where(h.result, h.face, -1)
    t_out[i] = h.t


@wp.kernel
def k_group_root(mesh: wp.uint64, group: int, out: wp.array(dtype=int)):
    out[0] = wp.mesh_get_group_root(mesh, group)


@wp.kernel(enable_backward=False)
def k_legacy(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), ds: wp.array(dtype=wp.vec3), out: wp.array(dtype=float,
             ndim=2)):
    i = wp.tid()
    sign = float(0.0)
    face = int(-1)
    u = float(0.0)
    v = float(0.0)
    found = wp.mesh_query_point(mesh, xs[i], 1.0e6, sign, face, u, v)
    q = wp.mesh_query_point(mesh, xs[i], 1.0e6)
    out[i, 0] = float(found == q.result and face == q.face and u == q.u and v == q.v and sign == q.sign)
    t = float(0.0)
    n = wp.vec3()
    f = int(-1)
    hit = wp.mesh_query_ray(mesh, xs[i], ds[i], 1.0e6, t, u, v, sign, n, f)
    r = wp.mesh_query_ray(mesh, xs[i], ds[i], 1.0e6)
    out[i, 1] = float(hit == r.result)
    out[i, 2] = float(f) if hit else -1.0
    out[i, 3] = float(f == r.face and t == r.t and n == r.normal) if hit else 1.0


def tri_dist(p, a, b, c):
    return np.linalg.norm(closest_on_triangles(p.astype(np.float64), a, b, c) - p, axis=1)


def hits_of(kernel, mesh, rows, inputs, device):
    hits = wp.zeros((rows, mesh.num_faces), dtype=int, device=device)
    wp.launch(kernel, rows, inputs=[mesh.id, *inputs, hits], device=device)
    return hits.numpy()


@pytest.mark.parametrize("name", ["icosphere", "star"])
def test_sphere_query_matches_brute_force(device, name, tree_layout):
    tm = MESHES[name]
    mesh = sk_mesh(tm, device)
    a, b, c = tri_arrays(tm)
    rng = np.random.default_rng(31)
    centers = rng.uniform(-1.1, 1.1, (150, 3)).astype(np.float32)
    got = hits_of(k_sphere, mesh, len(centers), [wp.array(centers, dtype=wp.vec3, device=device), 0.4], device)
    assert got.max() <= 1
    total = 0
    for i, p in enumerate(centers):
        d = tri_dist(p, a, b, c)
        sure, maybe = d <= 0.4 - 1e-5, d <= 0.4 + 1e-5
        assert (got[i][sure] == 1).all() and (got[i][~maybe] == 0).all(), i
        total += sure.sum()
    assert total > 500


def test_zero_radius_sphere_keeps_the_narrow_phase(device):
    pts = wp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=wp.vec3, device=device)
    mesh = wp.Mesh(pts, wp.array([0, 1, 2], dtype=int, device=device))
    for center, exp in (((0.25, 0.25, 0.0), 1), ((0.9, 0.9, 0.0), 0), ((0.5, 0.5, 0.0), 1)):
        for kernel in (k_sphere, None):
            if kernel is None:  # the same through a query whose kind is chosen at run time
                got = hits_of(k_runtime_kind, mesh, 1, [True, wp.vec3(*center), wp.vec3(), 0.0], device)
            else:
                got = hits_of(k_sphere, mesh, 1, [wp.array([center], dtype=wp.vec3, device=device), 0.0], device)
            assert got[0, 0] == exp, center


def test_degenerate_faces_count_by_their_nearest_edge(device):
    pts = wp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [5.0, 0.0, 0.0]], dtype=wp.vec3, device=device)
    mesh = wp.Mesh(pts, wp.array([0, 1, 2, 0, 0, 3], dtype=int, device=device))  # a segment, a point-pair
    got = hits_of(k_sphere, mesh, 2, [wp.array([[1.5, 0.3, 0.0], [4.0, 0.0, 0.5]], dtype=wp.vec3, device=device),
                                      0.6], device)
    np.testing.assert_array_equal(got, [[1, 1], [0, 1]])


def test_mesh_query_type_runtime_kind_and_aliases(device, tree_layout):
    tm = MESHES["torus"]
    mesh = sk_mesh(tm, device)
    a, b, c = tri_arrays(tm)
    lo, hi = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
    qlo, qhi = np.array([-0.5, 0.2, -0.3], np.float32), np.array([0.8, 1.4, 0.3], np.float32)
    box = (np.all(lo <= qhi, 1) & np.all(hi >= qlo, 1)).astype(int)
    center = np.array([0.9, 0.4, 0.1], np.float32)
    sphere = (tri_dist(center, a, b, c) <= 0.3).astype(int)
    broad = ((np.clip(center, lo, hi) - center) ** 2).sum(1) <= 0.09
    assert box.sum() > 20 and sphere.sum() > 10 and broad.sum() > sphere.sum()
    got = hits_of(k_runtime_kind, mesh, 1, [False, wp.vec3(*qlo), wp.vec3(*qhi), 0.3], device)[0]
    np.testing.assert_array_equal(got, box)
    got = hits_of(k_aabb_alias, mesh, 1, [wp.vec3(*qlo), wp.vec3(*qhi)], device)[0]
    np.testing.assert_array_equal(got, box)
    got = hits_of(k_runtime_kind, mesh, 1, [True, wp.vec3(*center), wp.vec3(), 0.3], device)[0]
    np.testing.assert_array_equal(got, sphere)
    got = hits_of(k_mesh_bvh, mesh, 1, [wp.vec3(*center), 0.3], device)[0]  # the BVH alone: face boxes
    np.testing.assert_array_equal(got, broad.astype(int))
    assert wp.MeshQueryAABB is wp.MeshQuery


def run_rays(mesh, xs, ds, device, max_t=1.0e6, root=-1):
    out = wp.zeros((len(xs), 3), dtype=int, device=device)
    t = wp.zeros(len(xs), dtype=float, device=device)
    wp.launch(k_rays, len(xs), inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device),
                                       wp.array(ds, dtype=wp.vec3, device=device), max_t, root, out, t],
              device=device)
    return out.numpy(), t.numpy()


@pytest.mark.parametrize("name", ["torus", "star"])
def test_ray_counts_and_any_hit_match_brute_force(device, name, tree_layout):
    tm = MESHES[name]
    mesh = sk_mesh(tm, device)
    a, b, c = tri_arrays(tm)
    rng = np.random.default_rng(32)
    xs = rng.uniform(-1.5, 1.5, (300, 3)).astype(np.float32)
    ds = rng.normal(size=(300, 3)).astype(np.float32)
    got, _ = run_rays(mesh, xs, ds, device, max_t=1.0)
    skipped = 0
    for i in range(len(xs)):
        t = ray_triangles(xs[i].astype(np.float64), ds[i].astype(np.float64), a, b, c)
        if np.isfinite(t).sum() != got[i, 0]:  # through an edge: every face there counts (not in the reference)
            skipped += 1
            continue
        if not np.any(np.abs(t - 1.0) < 1e-4):  # (not within rounding of the max_t bound)
            assert got[i, 1] == int((t < 1.0).any()), i
            assert got[i, 1] == int(got[i, 2] >= 0), i
    assert skipped <= 3 and got[:, 0].sum() > 50 and got[:, 1].sum() > 10


def test_rays_through_a_shared_edge_hit(device):
    # rays straight down onto the diagonal of a quad of two faces: fused multiply-adds must not open a gap
    v = np.array([[0.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.5, 0.0, 0.0], [0.5, 0.5, 0.0]], np.float32)
    for leaf in (1, 4):
        mesh = wp.Mesh(wp.array(v, dtype=wp.vec3, device=device),
                       wp.array([1, 0, 2, 1, 2, 3], dtype=int, device=device), bvh_leaf_size=leaf)
        x = np.arange(0.1, 0.4, 0.01, dtype=np.float32)
        xs = np.stack([x, np.float32(0.5) - x, np.ones_like(x)], 1)  # on the diagonal (to rounding)
        xs = np.concatenate([xs, [[0.5, 0.25, 1.0], [0.25, 0.0, 1.0]]]).astype(np.float32)  # on the border
        ds = np.tile(np.array([0.0, 0.0, -1.0], np.float32), (len(xs), 1))
        got, t = run_rays(mesh, xs, ds, device)
        assert (got[:, 0] >= 1).all() and (got[:, 1] == 1).all() and (got[:, 2] >= 0).all()
        np.testing.assert_allclose(t, 1.0)


def test_grouped_mesh_rays_stay_in_their_group(device):
    tm = MESHES["icosphere"]
    a, b, c = tri_arrays(tm)
    groups = (((a + b + c)[:, 0] > 0).astype(np.int32) + 2 * ((a + b + c)[:, 1] > 0)).astype(np.int32)
    mesh = sk_mesh(tm, device, groups=wp.array(groups, dtype=int, device=device), bvh_leaf_size=2)
    rng = np.random.default_rng(33)
    xs = (rng.normal(size=(200, 3)) * 0.1).astype(np.float32)  # from inside: every ray hits one face
    ds = rng.normal(size=(200, 3)).astype(np.float32)
    root_of = wp.zeros(1, dtype=int, device=device)
    for g in (0, 1, 2, 3, 7):
        wp.launch(k_group_root, 1, inputs=[mesh.id, g, root_of], device=device)
        root = int(root_of.numpy()[0])
        assert (root >= 0) == (g < 4)
        got, t = run_rays(mesh, xs, ds, device, root=root)
        for i in range(len(xs)):
            tt = ray_triangles(xs[i].astype(np.float64), ds[i].astype(np.float64), a, b, c)
            if g < 4:
                tt = np.where(groups == g, tt, np.inf)
            if np.isfinite(tt).sum() != got[i, 0]:
                continue  # an edge
            f = int(np.argmin(tt)) if np.isfinite(tt).any() else -1
            assert got[i, 2] == f and got[i, 1] == int(f >= 0), (g, i)
            if f >= 0:
                assert abs(t[i] - tt[f]) < 1e-4


def test_older_output_argument_forms(device):
    tm = MESHES["star"]
    mesh = sk_mesh(tm, device)
    rng = np.random.default_rng(34)
    xs = rng.uniform(-1.2, 1.2, (100, 3)).astype(np.float32)
    ds = rng.normal(size=(100, 3)).astype(np.float32)
    out = wp.zeros((100, 4), dtype=float, device=device)
    wp.launch(k_legacy, 100, inputs=[mesh.id, wp.array(xs, dtype=wp.vec3, device=device),
                                     wp.array(ds, dtype=wp.vec3, device=device), out], device=device)
    o = out.numpy()
    assert (o[:, 0] == 1).all() and (o[:, 1] == 1).all() and (o[:, 3] == 1).all() and (o[:, 2] >= 0).sum() > 20


def test_group_errors(device):
    tm = MESHES["star"]
    with pytest.raises(ValueError, match="groups has 3 entries"):
        sk_mesh(tm, device, groups=wp.zeros(3, dtype=int, device=device))
    with pytest.raises(RuntimeError, match="Grouped BVHs"):
        sk_mesh(tm, device, groups=wp.zeros(len(tm.faces), dtype=int, device=device), bvh_constructor="cubql")
