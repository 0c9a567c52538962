"""Bvh queries against brute force over every box; the in-place query idiom in every loop form,
with gradients through it; refit/rebuild; depth bound on pathological input; errors."""
import numpy as np
import pytest

import simkit as wp
from simkit.collision import BvhQuery


@wp.kernel
def k_aabb(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), counts: wp.array(dtype=int),
           hits: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    query = wp.bvh_query_aabb(bvh, lo[i], hi[i])
    index = int(0)
    n = int(0)
    while wp.bvh_query_next(query, index):
        if n < hits.shape[1]:
            hits[i, n] = index
        n += 1
    counts[i] = n


@wp.kernel
def k_ray(bvh: wp.uint64, start: wp.array(dtype=wp.vec3), dirs: wp.array(dtype=wp.vec3), max_dist: float,
          counts: wp.array(dtype=int), hits: wp.array(dtype=int, ndim=2)):
    i = wp.tid()
    query = wp.bvh_query_ray(bvh, start[i], dirs[i])
    index = int(0)
    n = int(0)
    while wp.bvh_query_next(query, index, max_dist):
        if n < hits.shape[1]:
            hits[i, n] = index
        n += 1
    counts[i] = n


@wp.kernel
def k_loop_forms(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), out: wp.array(dtype=int,
                 ndim=2)):
    i = wp.tid()
    # 1. while True / break
    q = wp.bvh_query_aabb(bvh, lo[i], hi[i])
    index = int(0)
    s = int(0)
    while True:
        if not wp.bvh_query_next(q, index):
            break
        s += index
    out[i, 0] = s
    # 2. bounded for loop, the index read after the call in the same iteration
    q2 = wp.bvh_query_aabb(bvh, lo[i], hi[i])
    j = int(-1)
    s2 = int(0)
    for _k in range(100000):
        found = wp.bvh_query_next(q2, j)
        if not found:
            break
        s2 += j
    out[i, 1] = s2
    # 3. a single call outside any loop: the first item (or -1)
    q3 = wp.bvh_query_aabb(bvh, lo[i], hi[i])
    first = int(-1)
    wp.bvh_query_next(q3, first)
    out[i, 2] = first
    # 4. an early return inside the loop form of a @func
    out[i, 3] = count_items(bvh, lo[i], hi[i])
    # 5. a query passed to a @func by value: the caller's query is not advanced
    q5 = wp.bvh_query_aabb(bvh, lo[i], hi[i])
    out[i, 4] = count_rest(q5) + count_rest(q5)


@wp.func
def count_items(bvh: wp.uint64, lo: wp.vec3, hi: wp.vec3):
    q = wp.bvh_query_aabb(bvh, lo, hi)
    index = int(0)
    n = int(0)
    while wp.bvh_query_next(q, index):
        n += 1
        if n >= 1000000:
            return n
    return n


@wp.func
def count_rest(q: BvhQuery):
    index = int(0)
    n = int(0)
    while wp.bvh_query_next(q, index):
        n += 1
    return n


@wp.kernel
def k_weighted(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3), x: wp.array(dtype=float),
               w: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    q = wp.bvh_query_aabb(bvh, lo[i], hi[i])
    index = int(0)
    s = float(0.0)
    while wp.bvh_query_next(q, index):
        s = s * x[i] + w[index] * w[index]  # loop-carried, reads the index of this iteration
    out[i] = s


def random_boxes(n, seed, size=0.1):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    e = rng.uniform(0.001, size, (n, 3)).astype(np.float32)
    return c - e, c + e


def overlap_ref(lo, hi, qlo, qhi):
    return set(np.nonzero(np.all(lo <= qhi, axis=1) & np.all(hi >= qlo, axis=1))[0].tolist())


def ray_ref(lo, hi, o, d, max_dist):
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / d.astype(np.float64)
        t1, t2 = (lo - o) * inv, (hi - o) * inv
        tn = np.fmax.reduce(np.fmin(t1, t2), axis=1)
        tf = np.fmin.reduce(np.fmax(t1, t2), axis=1)
    return set(np.nonzero((tf >= 0) & (tf >= tn) & (tn < max_dist))[0].tolist())


def run_aabb(bvh, qlo, qhi, device, cap=600):
    m = len(qlo)
    counts = wp.zeros(m, dtype=int, device=device)
    hits = wp.zeros((m, cap), dtype=int, device=device)
    wp.launch(k_aabb, m, inputs=[bvh.id, wp.array(qlo, dtype=wp.vec3, device=device),
                                 wp.array(qhi, dtype=wp.vec3, device=device), counts, hits], device=device)
    cn, hn = counts.numpy(), hits.numpy()
    return [set(hn[i, :cn[i]].tolist()) if len(set(hn[i, :cn[i]].tolist())) == cn[i] else None for i in range(m)]


@pytest.mark.parametrize("constructor", ["sah", "median"])
def test_aabb_query_matches_brute_force(device, constructor, tree_layout):
    lo, hi = random_boxes(3000, seed=1)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device),
                 constructor=constructor)
    assert bvh._tree.wide.usable == (tree_layout == "wide")
    qlo, qhi = random_boxes(400, seed=2, size=0.3)
    got = run_aabb(bvh, qlo, qhi, device)
    for i in range(len(qlo)):
        assert got[i] == overlap_ref(lo, hi, qlo[i], qhi[i]), i
    assert sum(len(g) for g in got) > 1000


@pytest.mark.parametrize("constructor", ["sah", "median"])
def test_ray_query_matches_brute_force(device, constructor, tree_layout):
    lo, hi = random_boxes(3000, seed=3)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device),
                 constructor=constructor)
    rng = np.random.default_rng(4)
    m = 300
    o = rng.uniform(-1.5, 1.5, (m, 3)).astype(np.float32)
    d = rng.normal(size=(m, 3)).astype(np.float32)
    d[:20, 1] = 0.0  # axis-parallel components
    counts = wp.zeros(m, dtype=int, device=device)
    hits = wp.zeros((m, 600), dtype=int, device=device)
    for max_dist in (1.0e30, 0.5):
        wp.launch(k_ray, m, inputs=[bvh.id, wp.array(o, dtype=wp.vec3, device=device),
                                    wp.array(d, dtype=wp.vec3, device=device), max_dist, counts, hits], device=device)
        cn, hn = counts.numpy(), hits.numpy()
        for i in range(m):
            assert set(hn[i, :cn[i]].tolist()) == ray_ref(lo, hi, o[i], d[i], max_dist), (i, max_dist)
        assert cn.sum() > 300


@pytest.mark.parametrize("threads", [2, 4])
def test_parallel_build_matches_brute_force(device, threads, monkeypatch):
    # the top split(s) first, then one subtree per thread in its own node range, then a renumbering
    from simkit.collision import bvh_build
    monkeypatch.setattr(bvh_build, "PARALLEL_MIN_ITEMS", 64)
    lo, hi = random_boxes(3000, seed=21)
    args = (wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device))
    monkeypatch.setattr(wp.config, "cpu_threads", 1)
    serial = wp.Bvh(*args)
    monkeypatch.setattr(wp.config, "cpu_threads", threads)
    bvh = wp.Bvh(*args)
    assert bvh.num_nodes == serial.num_nodes  # the same SAH splits, numbered differently
    qlo, qhi = random_boxes(300, seed=22, size=0.3)
    got = run_aabb(bvh, qlo, qhi, device)
    for i in range(len(qlo)):
        assert got[i] == overlap_ref(lo, hi, qlo[i], qhi[i]), i


def test_loop_forms_of_the_query_idiom(device):
    lo, hi = random_boxes(500, seed=5)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device))
    qlo, qhi = random_boxes(100, seed=6, size=0.3)
    out = wp.zeros((100, 5), dtype=int, device=device)
    wp.launch(k_loop_forms, 100, inputs=[bvh.id, wp.array(qlo, dtype=wp.vec3, device=device),
                                         wp.array(qhi, dtype=wp.vec3, device=device), out], device=device)
    res = out.numpy()
    for i in range(100):
        ref = overlap_ref(lo, hi, qlo[i], qhi[i])
        assert res[i, 0] == sum(ref) and res[i, 1] == sum(ref)
        assert (res[i, 2] in ref) if ref else res[i, 2] == -1
        assert res[i, 3] == len(ref) and res[i, 4] == 2 * len(ref)


def test_gradients_through_the_query_loop(device):
    lo, hi = random_boxes(300, seed=7)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device))
    qlo, qhi = random_boxes(40, seed=8, size=0.3)
    rng = np.random.default_rng(9)
    x = wp.array(rng.uniform(0.5, 1.0, 40).astype(np.float32), dtype=float, device=device)
    w = wp.array(rng.uniform(-1.0, 1.0, 300).astype(np.float32), dtype=float, device=device)
    out = wp.zeros(40, dtype=float, device=device)
    args = [bvh.id, wp.array(qlo, dtype=wp.vec3, device=device), wp.array(qhi, dtype=wp.vec3, device=device), x, w]
    ja = wp.autograd.jacobian(k_weighted, 40, args, [out], device=device)
    jf = wp.autograd.jacobian_fd(k_weighted, 40, args, [out], device=device, eps=1e-3)
    for k in (3, 4):  # x and w (a finite difference of the query boxes would change the item sets)
        np.testing.assert_allclose(ja[(k, 0)], jf[(k, 0)], atol=1e-2, rtol=1e-2)
    assert np.abs(ja[(4, 0)]).sum() > 1.0


def test_refit_and_rebuild(device, tree_layout):
    lo, hi = random_boxes(1000, seed=10)
    alo, ahi = wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device)
    bvh = wp.Bvh(alo, ahi)
    bvh_id = bvh.id
    shift = np.random.default_rng(11).normal(scale=0.3, size=lo.shape).astype(np.float32)
    alo.assign(lo + shift)
    ahi.assign(hi + shift)
    qlo, qhi = random_boxes(200, seed=12, size=0.3)
    for update in (bvh.refit, bvh.rebuild, lambda: bvh.rebuild("median"), lambda: bvh.rebuild("lbvh")):
        update()
        assert bvh.id == bvh_id
        got = run_aabb(bvh, qlo, qhi, device)
        for i in range(200):
            assert got[i] == overlap_ref(lo + shift, hi + shift, qlo[i], qhi[i])
    assert bvh.constructor == "sah"  # ("lbvh" builds SAH)
    with pytest.raises(ValueError, match="constructor must be one of"):
        bvh.rebuild("octree")


def test_depth_is_bounded_on_pathological_input(device):
    # boxes at exponentially growing coordinates: a pure SAH split peels one box per level
    n = 200
    c = np.zeros((n, 3), np.float32)
    c[:, 0] = 1.1 ** np.arange(n, dtype=np.float32)
    lo, hi = c - 0.01, c + 0.01
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device))
    assert bvh._tree.depth < 64  # the binary traversal stack holds 64 entries
    # the wide traversal holds 3 entries per level: a wide tree deeper than 20 levels is not used
    assert bvh._tree.wide.usable == (bvh._tree.wide.depth <= 20)
    got = run_aabb(bvh, np.array([[-1e30] * 3], np.float32), np.array([[1e30] * 3], np.float32), device, cap=n)
    assert got[0] == set(range(n))


@pytest.mark.parametrize("threads", [1, 2])
def test_tree_boxes_are_exact_unions(threads, monkeypatch):
    """Every child box of the built tree is exactly the union of the item boxes below it, and every item
    is in exactly one leaf. Centroids on a lattice put many items on bin boundaries, where the binning
    and the partition (native/bvh_build.h) must agree on every item's side."""
    monkeypatch.setattr(wp.config, "cpu_threads", threads)
    g = np.stack(np.meshgrid(*[np.arange(24, dtype=np.float32) / 8.0] * 3, indexing="ij"), -1).reshape(-1, 3)
    rng = np.random.default_rng(5)
    lo = g - rng.uniform(0.01, 0.2, g.shape).astype(np.float32)
    hi = g + rng.uniform(0.01, 0.2, g.shape).astype(np.float32)
    bvh = wp.Bvh(wp.array(lo, dtype=wp.vec3, device="cpu"), wp.array(hi, dtype=wp.vec3, device="cpu"))
    tree = bvh._tree
    nodes, prims = tree.nodes_numpy(), tree.prims.numpy()
    assert sorted(prims.tolist()) == list(range(len(g)))
    seen = np.zeros(len(g), int)

    def box(node, k):  # the union below child k of node, checked against the stored box on the way
        child, count = int(nodes[f"child{k}"][node]), int(nodes[f"count{k}"][node])
        if count > 0:
            items = prims[child:child + count]
            seen[items] += 1
            blo, bhi = lo[items].min(0), hi[items].max(0)
        else:
            assert child > node  # children after parents: the CPU refit walks nodes backwards
            los, his = zip(*(box(child, j) for j in (0, 1)))
            blo, bhi = np.minimum(*los), np.maximum(*his)
        np.testing.assert_array_equal(nodes[f"lo{k}"][node], blo)
        np.testing.assert_array_equal(nodes[f"hi{k}"][node], bhi)
        return blo, bhi

    box(0, 0), box(0, 1)
    assert (seen == 1).all()


def test_empty_and_single_item(device):
    for n in (0, 1):
        lo, hi = random_boxes(n, seed=13)
        bvh = wp.Bvh(wp.zeros(n, dtype=wp.vec3, device=device), wp.zeros(n, dtype=wp.vec3, device=device))
        if n:
            bvh.lowers.assign(lo)
            bvh.uppers.assign(hi)
            bvh.refit()
        got = run_aabb(bvh, np.array([[-2.0] * 3], np.float32), np.array([[2.0] * 3], np.float32), device)
        assert got[0] == set(range(n))


def test_errors(device):
    lo, hi = random_boxes(10, seed=14)
    alo = wp.array(lo, dtype=wp.vec3, device=device)
    with pytest.raises(ValueError, match="differ in length"):
        wp.Bvh(alo, wp.array(hi[:5], dtype=wp.vec3, device=device))
    bad = lo.copy()
    bad[4, 2] = np.inf
    with pytest.raises(ValueError, match=r"lowers\[4\] is not finite"):
        wp.Bvh(wp.array(bad, dtype=wp.vec3, device=device), wp.array(hi, dtype=wp.vec3, device=device))
    with pytest.raises(TypeError, match="uppers must be a 1D array of vec3"):
        wp.Bvh(alo, wp.array(hi.ravel(), dtype=float, device=device))
    with pytest.raises(ValueError, match="constructor must be one of"):
        wp.Bvh(alo, wp.array(hi, dtype=wp.vec3, device=device), constructor="octree")
    with pytest.raises(RuntimeError, match="Grouped BVHs"):
        wp.Bvh(alo, wp.array(hi, dtype=wp.vec3, device=device), constructor="cubql",
               groups=wp.zeros(10, dtype=int, device=device))
    with pytest.raises(ValueError, match="cubql"):
        wp.Bvh(alo, wp.array(hi, dtype=wp.vec3, device=device), constructor="cubql")
