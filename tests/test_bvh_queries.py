"""Bvh sphere and capsule queries, queries whose kind is chosen at run time, rays parallel to a box face,
and grouped trees: all against brute force over every box."""
import numpy as np
import pytest

import simkit as wp
from test_bvh import overlap_ref, random_boxes


@wp.kernel
def k_sphere(bvh: wp.uint64, centers: wp.array(dtype=wp.vec3), radius: float, hits: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    query = wp.bvh_query_sphere(bvh, centers[i], radius)
    for index in query:
        hits[i, index] += 1


@wp.kernel
def k_capsule(bvh: wp.uint64, p0: wp.array(dtype=wp.vec3), p1: wp.array(dtype=wp.vec3), radius: float,
              hits: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    query = wp.bvh_query_capsule(bvh, p0[i], p1[i] - p0[i], radius)
    index = int(0)
    while wp.bvh_query_next(query, index, 1.0):
        hits[i, index] += 1


@wp.func
def collect(query: wp.BvhQuery, row: int, hits: wp.array(dtype=int, ndim=2)):
    index = int(0)
    while wp.bvh_query_next(query, index):
        hits[row, index] += 1


@wp.kernel
def k_runtime_kind(bvh: wp.uint64, kind: int, a: wp.vec3, b: wp.vec3, radius: float,
                   hits: wp.array(dtype=int, ndim=2)):
    if kind == 0:
        query = wp.bvh_query_aabb(bvh, a, b)
    elif kind == 1:
        query = wp.bvh_query_ray(bvh, a, b)
    else:
        query = wp.bvh_query_sphere(bvh, a, radius)
    collect(query, 0, hits)


@wp.kernel
def k_group_roots(bvh: wp.uint64, groups: wp.array(dtype=int), roots: wp.array(dtype=int)):
    i = wp.tid()
    roots[i] = wp.bvh_get_group_root(bvh, groups[i])


@wp.kernel
def k_group_aabb(bvh: wp.uint64, roots: wp.array(dtype=int), lo: wp.vec3, hi: wp.vec3,
                 hits: wp.array(dtype=int, ndim=2)):
    g = wp.tid()
    query = wp.bvh_query_aabb(bvh, lo, hi, roots[g])
    collect(query, g, hits)


@wp.kernel
def k_group_ray(bvh: wp.uint64, roots: wp.array(dtype=int), start: wp.vec3, d: wp.vec3,
                hits: wp.array(dtype=int, ndim=2)):
    g = wp.tid()
    query = wp.bvh_query_ray(bvh, start, d, roots[g])
    collect(query, g, hits)


def sphere_ref(lo, hi, c, r):
    cp = np.clip(c.astype(np.float64), lo, hi)
    return ((cp - c) ** 2).sum(1) <= r * r


def capsule_ref(lo, hi, p0, p1, r):
    """Segment [p0, p1] against the boxes grown by r (slab test clamped to [0, 1]), float64."""
    glo, ghi, d = lo - r, hi + r, (p1 - p0).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (glo - p0) / d, (ghi - p0) / d
    par = d == 0
    inside = (p0 >= glo) & (p0 <= ghi)
    tn = np.where(par, np.where(inside, -np.inf, np.inf), np.fmin(t1, t2)).max(1)
    tf = np.where(par, np.where(inside, np.inf, -np.inf), np.fmax(t1, t2)).min(1)
    return (np.maximum(tn, 0.0) <= np.minimum(tf, 1.0))


def hits_of(kernel, bvh, n_items, rows, inputs, device):
    hits = wp.zeros((rows, n_items), dtype=int, device=device)
    wp.launch(kernel, rows, inputs=[bvh.id, *inputs, hits], device=device)
    return hits.numpy()


def make_bvh(lo, hi, device, **kw):
    return wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device), **kw)


@pytest.mark.parametrize("leaf_size", [1, 4])
def test_sphere_query_matches_brute_force(device, tree_layout, leaf_size):
    lo, hi = random_boxes(2000, seed=21)
    bvh = make_bvh(lo, hi, device, leaf_size=leaf_size)
    rng = np.random.default_rng(22)
    centers = rng.uniform(-1.2, 1.2, (200, 3)).astype(np.float32)
    for radius in (0.25, 0.0, -1.0):
        got = hits_of(k_sphere, bvh, len(lo), len(centers), [wp.array(centers, dtype=wp.vec3, device=device),
                                                              radius], device)
        exp = np.stack([sphere_ref(lo, hi, c, max(radius, 0.0)) for c in centers])
        np.testing.assert_array_equal(got, exp.astype(int))  # each item at most once
        if radius > 0:
            assert exp.sum() > 1000


def test_zero_radius_sphere_is_a_point_query(device):
    bvh = make_bvh(np.array([[0, 0, 0], [2, 2, 2]], np.float32), np.array([[1, 1, 1], [3, 3, 3]], np.float32), device)
    got = hits_of(k_sphere, bvh, 2, 2, [wp.array([[0.5, 0.5, 0.5], [1.0, 1.0, 1.0]], dtype=wp.vec3, device=device),
                                        0.0], device)
    np.testing.assert_array_equal(got, [[1, 0], [1, 0]])  # a point on the boundary counts


def test_capsule_query_matches_brute_force(device, tree_layout):
    lo, hi = random_boxes(2000, seed=23)
    bvh = make_bvh(lo, hi, device)
    rng = np.random.default_rng(24)
    p0 = rng.uniform(-1.2, 1.2, (150, 3)).astype(np.float32)
    p1 = (p0 + rng.normal(scale=0.5, size=(150, 3))).astype(np.float32)
    p1[:10, 2] = p0[:10, 2]  # segments parallel to a coordinate plane
    got = hits_of(k_capsule, bvh, len(lo), len(p0), [wp.array(p0, dtype=wp.vec3, device=device),
                                                     wp.array(p1, dtype=wp.vec3, device=device), 0.1], device)
    exp = np.stack([capsule_ref(lo, hi, a, b, 0.1) for a, b in zip(p0, p1)]).astype(int)
    assert exp.sum() > 500
    assert np.abs(got - exp).sum() <= 2  # rounding at exact tangency only
    np.testing.assert_array_equal(got[exp == 1], 1)  # never misses a box the capsule reaches


def test_query_kind_chosen_at_run_time(device, tree_layout):
    lo, hi = random_boxes(1500, seed=25)
    bvh = make_bvh(lo, hi, device)
    a, b = np.array([-0.3, -0.2, -0.4], np.float32), np.array([0.4, 0.3, 0.2], np.float32)
    for kind in (0, 1, 2):
        got = hits_of(k_runtime_kind, bvh, len(lo), 1, [kind, wp.vec3(*a), wp.vec3(*b), 0.3], device)[0]
        if kind == 0:
            exp = np.zeros(len(lo), int)
            exp[list(overlap_ref(lo, hi, a, b))] = 1
        elif kind == 1:
            with np.errstate(divide="ignore"):
                t1, t2 = (lo - a) / b.astype(np.float64), (hi - a) / b.astype(np.float64)
            tn, tf = np.minimum(t1, t2).max(1), np.maximum(t1, t2).min(1)
            exp = ((tf >= 0) & (tf >= tn)).astype(int)
        else:
            exp = sphere_ref(lo, hi, a, 0.3).astype(int)
        assert exp.sum() >= 3
        np.testing.assert_array_equal(got, exp)


def test_ray_parallel_to_a_box_face_through_the_origin(device):
    # boxes whose face plane holds the ray origin, the ray parallel to that face: inside the slab
    lo = np.array([[0, 0, 0], [1, -1, -1], [-2, 0, 0], [0, 0, 0]], np.float32)
    hi = np.array([[1, 1, 1], [2, 0, 1], [-1, 1, 1], [0, 0, 1]], np.float32)
    bvh = make_bvh(lo, hi, device)
    for start, exp in (((1.0, 0.5, -3.0), [1, 0, 0, 0]), ((0.0, 0.5, -3.0), [1, 0, 0, 0]),
                       ((1.5, 0.0, -3.0), [0, 1, 0, 0]), ((0.0, 0.0, -3.0), [1, 0, 0, 1])):
        got = hits_of(k_runtime_kind, bvh, 4, 1, [1, wp.vec3(*start), wp.vec3(0.0, 0.0, 1.0), 0.0], device)[0]
        np.testing.assert_array_equal(got, exp, err_msg=str(start))


@pytest.mark.parametrize("num_groups", [1, 3, 8])
def test_grouped_queries_stay_in_their_group(device, num_groups):
    lo, hi = random_boxes(1200, seed=26, size=0.3)
    rng = np.random.default_rng(27)
    ids = np.array([5, 0, 9, 2, 40, 7, 3, 1])[:num_groups]  # any non-negative ids, not consecutive
    groups = ids[rng.integers(0, num_groups, len(lo))].astype(np.int32)
    bvh = make_bvh(lo, hi, device, groups=wp.array(groups, dtype=int, device=device), leaf_size=2)
    ask = np.concatenate([ids, [123, -1]]).astype(np.int32)
    roots = wp.zeros(len(ask), dtype=int, device=device)
    wp.launch(k_group_roots, len(ask), inputs=[bvh.id, wp.array(ask, dtype=int, device=device), roots], device=device)
    r = roots.numpy()
    assert (r[:num_groups] >= 0).all() and (r[num_groups:] == -1).all()  # no such group: the whole tree
    qlo, qhi = np.array([-0.6, -0.5, -0.7], np.float32), np.array([0.5, 0.6, 0.4], np.float32)
    got = hits_of(k_group_aabb, bvh, len(lo), len(ask), [roots, wp.vec3(*qlo), wp.vec3(*qhi)], device)
    every = np.zeros(len(lo), int)
    every[list(overlap_ref(lo, hi, qlo, qhi))] = 1
    for g in range(len(ask)):
        exp = every * (groups == ask[g]) if g < num_groups else every
        np.testing.assert_array_equal(got[g], exp, err_msg=str(ask[g]))
    o, d = np.array([-1.5, 0.1, 0.05], np.float32), np.array([1.0, 0.05, -0.02], np.float32)
    got = hits_of(k_group_ray, bvh, len(lo), len(ask), [roots, wp.vec3(*o), wp.vec3(*d)], device)
    with np.errstate(divide="ignore"):
        t1, t2 = (lo - o) / d.astype(np.float64), (hi - o) / d.astype(np.float64)
    ray = ((np.maximum(t1, t2).min(1) >= np.maximum(np.minimum(t1, t2).max(1), 0))).astype(int)
    assert ray.sum() > 10
    for g in range(num_groups):
        np.testing.assert_array_equal(got[g], ray * (groups == ask[g]))
    # the whole tree after a refit with moved boxes: still every box, groups intact
    bvh.lowers.assign(lo + 0.05)
    bvh.uppers.assign(hi + 0.05)
    bvh.refit()
    got = hits_of(k_group_aabb, bvh, len(lo), len(ask), [roots, wp.vec3(*qlo), wp.vec3(*qhi)], device)
    moved = np.zeros(len(lo), int)
    moved[list(overlap_ref(lo + 0.05, hi + 0.05, qlo, qhi))] = 1
    np.testing.assert_array_equal(got[-1], moved)
    np.testing.assert_array_equal(got[0], moved * (groups == ask[0]))


def test_group_errors(device):
    lo, hi = random_boxes(10, seed=28)
    with pytest.raises(ValueError, match="groups has 4 entries for 10 items"):
        make_bvh(lo, hi, device, groups=wp.zeros(4, dtype=int, device=device))
    with pytest.raises(ValueError, match=r"groups\[3\] = -2"):
        make_bvh(lo, hi, device, groups=wp.array([0, 0, 0, -2, 0, 0, 0, 0, 0, 0], dtype=int, device=device))
    with pytest.raises(TypeError, match="groups must be a 1D simkit array of int32"):
        make_bvh(lo, hi, device, groups=wp.zeros(10, dtype=float, device=device))
    assert not wp.is_cubql_available()
