"""Graph colouring (``sk.utils.graph_coloring_assign/balance/get_groups``, Warp's ``wp.utils`` API): valid
colourings of many graphs, the exact colours of Python references of both algorithms, balancing that evens
the groups out (the same moves as warp-lang's), the groups against numpy, and the errors."""
import warnings

import numpy as np
import pytest

import simkit as sk

ALG = sk.utils.GraphColoringAlgorithm
RNG = np.random.default_rng(11)


def _edges(e):
    return sk.array(np.asarray(e, dtype=np.int32).reshape(-1, 2), dtype=sk.int32)


def _conflicts(e, colors):
    e = np.asarray(e).reshape(-1, 2)
    return int(np.sum(colors[e[:, 0]] == colors[e[:, 1]]))


def _grid(n, diagonals=True):
    idx = np.arange(n * n).reshape(n, n)
    parts = [(idx[:, :-1], idx[:, 1:]), (idx[:-1], idx[1:])]
    if diagonals:
        parts += [(idx[:-1, :-1], idx[1:, 1:]), (idx[:-1, 1:], idx[1:, :-1])]
    return np.concatenate([np.stack([a.ravel(), b.ravel()], 1) for a, b in parts]), n * n


def _random_graph(n, m):
    e = RNG.integers(0, n, size=(m, 2))
    return e[e[:, 0] != e[:, 1]], n


def _adjacency(e, n):
    nbrs = [[] for _ in range(n)]
    for a, b in np.asarray(e).reshape(-1, 2):
        nbrs[a].append(b)
        nbrs[b].append(a)
    return nbrs


def _greedy_reference(order, nbrs):
    colors = np.full(len(nbrs), -1)
    for v in order:
        taken = {colors[u] for u in nbrs[v]}
        c = 0
        while c in taken:
            c += 1
        colors[v] = c
    return colors


def _mcs_reference(nbrs):
    """Maximum cardinality search: the unvisited node with the most visited neighbours, ties to the one that
    reached that count first; a new component starts at the lowest unvisited node."""
    n = len(nbrs)
    weight, since, visited, order = [0] * n, [None] * n, [False] * n, []
    clock = 0
    for _ in range(n):
        waiting = [v for v in range(n) if not visited[v] and since[v] is not None]
        if waiting:
            v = min(waiting, key=lambda u: (-weight[u], since[u]))
        else:
            v = visited.index(False)
        visited[v] = True
        order.append(v)
        for u in nbrs[v]:
            if not visited[u]:
                weight[u] += 1
                since[u] = clock
                clock += 1
    return order


GRAPHS = {
    "triangle": ([[0, 1], [1, 2], [2, 0]], 3),
    "square": ([[0, 1], [1, 2], [2, 3], [3, 0]], 4),
    "path and isolated nodes": ([[0, 1], [1, 2], [5, 6]], 8),
    "K6 with repeated edges": ([[i, j] for i in range(6) for j in range(6) if i != j], 6),
    "grid with diagonals": _grid(12),
    "random sparse": _random_graph(300, 700),
    "random dense": _random_graph(60, 900),
}


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("algorithm", [ALG.MCS, ALG.GREEDY])
def test_assign_valid_and_as_reference(name, algorithm):
    e, n = GRAPHS[name]
    colors = sk.empty(n, dtype=sk.int32)
    count = sk.utils.graph_coloring_assign(_edges(e), colors, algorithm)
    c = colors.numpy()
    assert _conflicts(e, c) == 0
    assert count == c.max() + 1 and set(c) == set(range(count))  # every colour used
    nbrs = _adjacency(e, n)
    if algorithm == ALG.MCS:
        order = _mcs_reference(nbrs)
    else:
        order = np.argsort(-np.array([len(x) for x in nbrs]), kind="stable")
    np.testing.assert_array_equal(c, _greedy_reference(order, nbrs))


def test_assign_known_chromatic_numbers():
    e3, n3 = GRAPHS["triangle"]
    e4, n4 = GRAPHS["square"]
    for e, n, k in ((e3, n3, 3), (e4, n4, 2), (GRAPHS["K6 with repeated edges"][0], 6, 6)):
        for alg in ALG:
            assert sk.utils.graph_coloring_assign(_edges(e), sk.empty(n, dtype=sk.int32), alg) == k
    # MCS is exact on chordal graphs: a fan of triangles (a path joined to a hub) needs 3, a tree 2
    fan = [[0, i] for i in range(1, 40)] + [[i, i + 1] for i in range(1, 39)]
    tree = [[i, (i - 1) // 2] for i in range(1, 63)]
    assert sk.utils.graph_coloring_assign(_edges(fan), sk.empty(40, dtype=sk.int32), ALG.MCS) == 3
    assert sk.utils.graph_coloring_assign(_edges(tree), sk.empty(63, dtype=sk.int32)) == 2
    # no edges: one colour; the default algorithm is MCS
    c = sk.empty(5, dtype=sk.int32)
    assert sk.utils.graph_coloring_assign(sk.zeros((0, 2), dtype=sk.int32), c) == 1
    np.testing.assert_array_equal(c.numpy(), 0)
    assert sk.utils.ColoringAlgorithm is ALG and int(ALG.MCS) == 0 and int(ALG.GREEDY) == 1


def _ratio(c, k):
    sizes = np.bincount(c, minlength=k)
    return sizes.max() / sizes.min()


@pytest.mark.parametrize("name", ["grid with diagonals", "random sparse", "random dense"])
def test_balance_improves_and_stays_valid(name):
    e, n = GRAPHS[name]
    edges = _edges(e)
    colors = sk.empty(n, dtype=sk.int32)
    k = sk.utils.graph_coloring_assign(edges, colors, ALG.GREEDY)
    before = _ratio(colors.numpy(), k)
    ratio = sk.utils.graph_coloring_balance(edges, colors, k, 1.05)
    c = colors.numpy()
    assert _conflicts(e, c) == 0
    assert set(c) <= set(range(k))
    after = _ratio(c, k)
    assert ratio == pytest.approx(after, rel=1e-6) and after <= before
    sizes = np.bincount(c, minlength=k)
    assert after <= 1.05 or sizes.max() - sizes.min() <= 2 or after < before


def test_balance_moves_as_specified():
    # no edges: nodes move from the largest group (first one first, the last taking its place) to the smallest
    c = sk.array([0, 0, 0, 0, 0, 1], dtype=sk.int32)
    assert sk.utils.graph_coloring_balance(sk.zeros((0, 2), dtype=sk.int32), c, 2, 2.0, max_iterations=1) == 2.0
    np.testing.assert_array_equal(c.numpy(), [1, 0, 0, 0, 0, 1])
    # the target already met: nothing moves
    c = sk.array([0, 0, 0, 0, 1], dtype=sk.int32)
    assert sk.utils.graph_coloring_balance(sk.zeros((0, 2), dtype=sk.int32), c, 2, 4.0) == 4.0
    np.testing.assert_array_equal(c.numpy(), [0, 0, 0, 0, 1])
    # the iteration limit: a warning, the colouring so far
    e = [(0, 1), (0, 2), (0, 3), (0, 4), (0, 6), (1, 6), (2, 5), (4, 6)]
    c = sk.array([0, 1, 1, 1, 1, 2, 2], dtype=sk.int32)
    with pytest.warns(UserWarning, match=r"reached the 0-iteration limit \(achieved ratio 4, target 1.1\)"):
        assert sk.utils.graph_coloring_balance(_edges(e), c, 3, 1.1, max_iterations=0) == 4.0
    np.testing.assert_array_equal(c.numpy(), [0, 1, 1, 1, 1, 2, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sk.utils.graph_coloring_balance(_edges(e), c, 3, 1.1, max_iterations=2) == 1.5
    np.testing.assert_array_equal(c.numpy(), [0, 1, 2, 1, 1, 0, 2])
    # a move that makes the ratio worse is undone
    e = [(0, 2), (1, 2), (1, 4), (2, 3), (2, 5), (3, 4), (4, 5)]
    c = sk.array([1, 1, 0, 1, 2, 1], dtype=sk.int32)
    assert sk.utils.graph_coloring_balance(_edges(e), c, 3, 1.1) == 4.0
    np.testing.assert_array_equal(c.numpy(), [1, 1, 0, 1, 2, 1])
    # one colour: nothing to balance
    c = sk.array([0, 0], dtype=sk.int32)
    assert sk.utils.graph_coloring_balance(_edges([[0, 0]]), c, 1, 1.0) == 1.0


def test_balance_as_warp_lang():
    wp = pytest.importorskip("warp")
    for e, n in (_grid(40), _random_graph(2000, 8000)):
        wcolors = wp.empty(n, dtype=wp.int32, device="cpu")
        wedges = wp.array(np.asarray(e, dtype=np.int32), dtype=wp.int32, device="cpu")
        k = wp.utils.graph_coloring_assign(wedges, wcolors, wp.utils.GraphColoringAlgorithm.GREEDY)
        colors = sk.array(wcolors.numpy(), dtype=sk.int32)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = wp.utils.graph_coloring_balance(wedges, wcolors, k, 1.01)
            got = sk.utils.graph_coloring_balance(_edges(e), colors, k, 1.01)
        assert got == expected
        np.testing.assert_array_equal(colors.numpy(), wcolors.numpy())


def test_get_groups_against_numpy():
    c_np = RNG.integers(0, 5, size=200).astype(np.int32)
    c_np[c_np == 3] = 4  # colour 3 empty
    c = sk.array(c_np, dtype=sk.int32)
    groups = sk.utils.graph_coloring_get_groups(c, 5)
    assert len(groups) == 5 and all(isinstance(g, sk.array) and g.dtype == sk.int32 for g in groups)
    for k, g in enumerate(groups):
        np.testing.assert_array_equal(g.numpy(), np.nonzero(c_np == k)[0])
    groups = sk.utils.graph_coloring_get_groups(c, 5, return_wp_array=False)
    for k, g in enumerate(groups):
        assert isinstance(g, np.ndarray)
        np.testing.assert_array_equal(g, np.nonzero(c_np == k)[0])
    assert sk.utils.graph_coloring_get_groups(c, 0) == ()


def test_errors():
    c2 = sk.empty(2, dtype=sk.int32)
    for bad in ((-1, 0), (0, 2)):
        with pytest.raises(RuntimeError, match=rf"Graph coloring failed: Graph edge 0 has endpoints \({bad[0]}, "
                                               rf"{bad[1]}\), but valid node indices are in the range \[0, 2\)"):
            sk.utils.graph_coloring_assign(_edges([bad]), c2)
        with pytest.raises(RuntimeError, match=r"Graph coloring balance failed: Graph edge 0"):
            sk.utils.graph_coloring_balance(_edges([bad]), sk.array([0, 1], dtype=sk.int32), 2, 1.1)
    with pytest.raises(RuntimeError, match=r"Node 1 has color -1, but valid colors are in the range \[0, 2\)"):
        sk.utils.graph_coloring_balance(_edges([[0, 1]]), sk.array([0, -1], dtype=sk.int32), 2, 1.1)
    with pytest.raises(RuntimeError, match="Cannot color an empty graph"):
        sk.utils.graph_coloring_assign(sk.zeros((0, 2), dtype=sk.int32), sk.empty(0, dtype=sk.int32))
    with pytest.raises(RuntimeError, match="edges array must have dtype int32, got int64"):
        sk.utils.graph_coloring_assign(sk.zeros((1, 2), dtype=sk.int64), c2)
    with pytest.raises(RuntimeError, match=r"must have shape \(edge_count, 2\), got shape \(1, 3\)"):
        sk.utils.graph_coloring_assign(sk.zeros((1, 3), dtype=sk.int32), c2)
    with pytest.raises(RuntimeError, match="node_colors array must be 1-dimensional"):
        sk.utils.graph_coloring_assign(_edges([[0, 1]]), sk.empty((2, 1), dtype=sk.int32))
    with pytest.raises(RuntimeError, match="Unrecognized coloring algorithm number: 99"):
        sk.utils.graph_coloring_assign(_edges([[0, 1]]), c2, 99)
    for value, exc in ((-1, ValueError), (2**31, ValueError), (True, TypeError), (1.5, TypeError), ("1", TypeError)):
        with pytest.raises(exc, match="max_iterations"):
            sk.utils.graph_coloring_balance(_edges([[0, 1]]), sk.array([0, 1], dtype=sk.int32), 2, 1.1,
                                            max_iterations=value)
    with pytest.raises(RuntimeError, match="color_count must be non-negative"):
        sk.utils.graph_coloring_get_groups(c2, -1)
    with pytest.raises(RuntimeError, match=r"node 1 has color 7, outside the range \[0, 2\)"):
        sk.utils.graph_coloring_get_groups(sk.array([0, 7], dtype=sk.int32), 2)
