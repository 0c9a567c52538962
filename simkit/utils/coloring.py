"""Graph colouring (Warp's ``wp.utils.graph_coloring_assign``, ``graph_coloring_balance``,
``graph_coloring_get_groups`` and ``GraphColoringAlgorithm``).

A colouring gives every node of an undirected graph (an edge list) a colour such that no edge joins two nodes
of one colour; the nodes of one colour can then be processed in parallel (a Gauss-Seidel or VBD sweep, colour
by colour). The rigid solver colours its contact groups on the device every step
(``solvers/rigid/contact_coloring.py``, speculative rounds that a GPU runs); these functions colour a fixed graph
once, on the CPU, sequentially, as Warp does:

- ``MCS``: nodes in maximum cardinality search order (the next node is the unvisited one with the most visited
  neighbours; ties first come, first served, so the search spreads breadth-first), then each takes the lowest
  colour none of its neighbours has. Optimal on chordal graphs; usually the fewest colours.
- ``GREEDY``: the same lowest-free-colour rule, nodes in order of decreasing degree (ties: lower index first).

``graph_coloring_balance`` then moves nodes, one at a time, into the smallest colour group (from the largest
group when one of its nodes can go there, else from the first other group that has such a node) until the
largest/smallest size ratio reaches the target, sizes differ by 2 or less, no node can move, or the iteration
limit is reached; a move that makes the ratio worse is undone. Same moves, same order as Warp.

Each algorithm is a single-threaded kernel (compiled C++) over the graph in compressed rows (CSR), built with
numpy: a grid of a million nodes and 4 million edges colours in about 0.5 s (and balances in 0.3-0.6 s) on the
2-core test machine.
"""
from __future__ import annotations

import enum
import operator
import warnings

import numpy as np

from ..kernels import func, kernel
from ..kernels import types as T
from ..runtime import array, empty, zeros
from ._common import run, type_repr

INT32_MAX = 2**31 - 1


class GraphColoringAlgorithm(enum.IntEnum):
    """The colouring algorithm of :func:`graph_coloring_assign`."""

    MCS = 0
    """Maximum cardinality search order, then the lowest free colour per node."""
    GREEDY = 1
    """Decreasing degree order, then the lowest free colour per node."""


#: another name of :class:`GraphColoringAlgorithm`
ColoringAlgorithm = GraphColoringAlgorithm


# --- kernels (each launched over one thread) ----------------------------------------------------------------

@func
def _bucket_push(node: int, w: int, head: array(dtype=T.int32), tail: array(dtype=T.int32),
                 nxt: array(dtype=T.int32), prv: array(dtype=T.int32)):
    # append ``node`` to the list of the nodes of weight ``w``
    nxt[node] = -1
    prv[node] = tail[w]
    if tail[w] >= 0:
        nxt[tail[w]] = node
    else:
        head[w] = node
    tail[w] = node


@func
def _bucket_unlink(node: int, w: int, head: array(dtype=T.int32), tail: array(dtype=T.int32),
                   nxt: array(dtype=T.int32), prv: array(dtype=T.int32)):
    if prv[node] >= 0:
        nxt[prv[node]] = nxt[node]
    else:
        head[w] = nxt[node]
    if nxt[node] >= 0:
        prv[nxt[node]] = prv[node]
    else:
        tail[w] = prv[node]


@kernel
def _mcs_order(offsets: array(dtype=T.int32), adj: array(dtype=T.int32), weight: array(dtype=T.int32),
               head: array(dtype=T.int32), tail: array(dtype=T.int32), nxt: array(dtype=T.int32),
               prv: array(dtype=T.int32), order: array(dtype=T.int32)):
    # weight[v]: -1 once visited; else how many visited neighbours v has (then v waits in list weight[v],
    # except unvisited nodes of weight 0, which wait in no list until a new connected component starts)
    n = weight.shape[0]
    top = int(0)     # the highest weight whose list may be non-empty
    seed = int(0)    # nodes below it are all visited
    for k in range(n):
        while top > 0 and head[top] < 0:
            top -= 1
        if head[top] < 0:  # nothing waits: the lowest unvisited node starts a new component
            while weight[seed] < 0:
                seed += 1
            _bucket_push(seed, 0, head, tail, nxt, prv)
            top = 0
        v = head[top]
        _bucket_unlink(v, top, head, tail, nxt, prv)
        weight[v] = -1
        order[k] = v
        for e in range(offsets[v], offsets[v + 1]):
            u = adj[e]
            w = weight[u]
            if w >= 0:
                if w > 0:
                    _bucket_unlink(u, w, head, tail, nxt, prv)
                _bucket_push(u, w + 1, head, tail, nxt, prv)
                weight[u] = w + 1
                if w + 1 > top:
                    top = w + 1


@kernel
def _greedy_colors(order: array(dtype=T.int32), offsets: array(dtype=T.int32), adj: array(dtype=T.int32),
                   stamp: array(dtype=T.int32), colors: array(dtype=T.int32), count: array(dtype=T.int32)):
    # nodes in ``order`` take the lowest colour no coloured neighbour has (stamp[c] == k: colour c is taken
    # around the k-th node); colors[] starts at -1
    used = int(0)
    for k in range(order.shape[0]):
        v = order[k]
        for e in range(offsets[v], offsets[v + 1]):
            c = colors[adj[e]]
            if c >= 0:
                stamp[c] = k
        c = int(0)
        while c < used and stamp[c] == k:
            c += 1
        colors[v] = c
        if c == used:
            used += 1
    count[0] = used


@func
def _movable(members: array(dtype=T.int32), base: int, size: int, target: int, offsets: array(dtype=T.int32),
             adj: array(dtype=T.int32), colors: array(dtype=T.int32)):
    # the first position in a group whose node has no neighbour of colour ``target`` (-1: none)
    found = int(-1)
    k = int(0)
    while k < size and found < 0:
        v = members[base + k]
        free = True
        for e in range(offsets[v], offsets[v + 1]):
            if colors[adj[e]] == target:
                free = False
        if free:
            found = k
        k += 1
    return found


@func
def _size_ratio(big: int, small: int):
    return T.float32(big) / T.float32(small)


@kernel
def _balance(offsets: array(dtype=T.int32), adj: array(dtype=T.int32), colors: array(dtype=T.int32),
             members: array(dtype=T.int32), base: array(dtype=T.int32), size: array(dtype=T.int32),
             target_ratio: T.float32, max_iterations: int, result: array(dtype=T.float32),
             limit_reached: array(dtype=T.int32)):
    # group c: members[base[c] : base[c] + size[c]] (a node leaves by the last one taking its place, and
    # joins at the end); room enough: a node only ever joins the smallest group
    ncol = size.shape[0]
    prev = T.float32(-1.0)
    last_node = int(-1)
    last_color = int(-1)
    it = int(0)
    limit_reached[0] = 0
    done = False
    while not done:
        big = int(0)
        small = int(0)
        for c in range(1, ncol):
            if size[c] > size[big]:
                big = c
            if size[c] < size[small]:
                small = c
        ratio = _size_ratio(size[big], size[small])
        if prev > T.float32(0.0) and prev < ratio:  # the last move made it worse: undo it
            colors[last_node] = last_color
            result[0] = prev
            done = True
        elif size[big] - size[small] <= 2 or ratio <= target_ratio:
            result[0] = ratio
            done = True
        else:
            src = big
            k = _movable(members, base[big], size[big], small, offsets, adj, colors)
            c = int(0)
            while k < 0 and c < ncol:
                if c != big and c != small:
                    k = _movable(members, base[c], size[c], small, offsets, adj, colors)
                    src = c
                c += 1
            if k < 0:
                result[0] = ratio
                done = True
            elif it == max_iterations:
                limit_reached[0] = 1
                result[0] = ratio
                done = True
            else:
                v = members[base[src] + k]
                last_node = v
                last_color = src
                colors[v] = small
                members[base[src] + k] = members[base[src] + size[src] - 1]
                size[src] = size[src] - 1
                members[base[small] + size[small]] = v
                size[small] = size[small] + 1
                it += 1
        if not done:
            prev = ratio


# --- checks and the graph in compressed rows ----------------------------------------------------------------

def _check_arrays(edges: array, node_colors: array) -> None:
    if not edges.device.is_cpu:
        raise RuntimeError("edges array must be on the CPU")
    if not node_colors.device.is_cpu:
        raise RuntimeError("node_colors array must be on the CPU")
    if edges.dtype != T.int32:
        raise RuntimeError(f"edges array must have dtype int32, got {type_repr(edges.dtype)}")
    if node_colors.dtype != T.int32:
        raise RuntimeError(f"node_colors array must have dtype int32, got {type_repr(node_colors.dtype)}")
    if edges.ndim != 2:
        raise RuntimeError(f"edges array must be 2-dimensional, got {edges.ndim} dimensions")
    if edges.shape[1] != 2:
        raise RuntimeError(f"edges array must have shape (edge_count, 2), got shape {edges.shape}")
    if node_colors.ndim != 1:
        raise RuntimeError(f"node_colors array must be 1-dimensional, got {node_colors.ndim} dimensions")


def _csr(edges: array, n: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, neighbours) of the graph, each node's neighbours in the order of its edges (an edge [i, j]
    lists j among i's neighbours and i among j's); raises on an endpoint outside [0, n)."""
    e = np.ascontiguousarray(edges.numpy(), dtype=np.int32).reshape(-1, 2)
    bad = np.nonzero(((e < 0) | (e >= n)).any(axis=1))[0]
    if bad.size:
        i = int(bad[0])
        raise RuntimeError(f"{what} failed: Graph edge {i} has endpoints ({e[i, 0]}, {e[i, 1]}), but valid node "
                           f"indices are in the range [0, {n}).")
    ends = np.stack([e[:, 0], e[:, 1]], axis=1).reshape(-1)  # edge k: (e0, e1) at 2k, 2k + 1
    other = np.stack([e[:, 1], e[:, 0]], axis=1).reshape(-1)
    by_node = np.argsort(ends, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(ends, minlength=n), out=offsets[1:])
    return offsets, np.ascontiguousarray(other[by_node], dtype=np.int32)


def _cpu(a: np.ndarray) -> array:
    return array(a, dtype=T.int32, device="cpu")


# --- the Warp API -------------------------------------------------------------------------------------------

def graph_coloring_assign(edges: array, node_colors: array,
                          algorithm: GraphColoringAlgorithm = GraphColoringAlgorithm.MCS) -> int:
    """Colour the nodes of an undirected graph so that no edge joins two nodes of one colour.

    ``edges``: int32 CPU array of shape (edge_count, 2), a row [i, j] for each edge. ``node_colors``: int32
    CPU array of shape (node_count,), filled with colours 0, 1, ... (its length is the node count).
    ``algorithm``: :class:`GraphColoringAlgorithm` (``MCS`` by default). Returns the number of colours.

    >>> import simkit as sk
    >>> colors = sk.empty(3, dtype=sk.int32)
    >>> sk.utils.graph_coloring_assign(sk.array([[0, 1], [1, 2], [2, 0]], dtype=sk.int32), colors)
    3
    """
    _check_arrays(edges, node_colors)
    n = node_colors.shape[0]
    if n == 0:
        raise RuntimeError("Cannot color an empty graph")
    try:
        algorithm = GraphColoringAlgorithm(algorithm)
    except ValueError:
        raise RuntimeError(f"Graph coloring failed: Unrecognized coloring algorithm number: {algorithm}!") from None
    offsets_np, adj_np = _csr(edges, n, "Graph coloring")
    offsets, adj = _cpu(offsets_np), _cpu(adj_np)
    if adj_np.size == 0:
        adj = zeros(1, dtype=T.int32, device="cpu")  # (no edges: a placeholder the kernels never read)
    degree = np.diff(offsets_np)
    if algorithm == GraphColoringAlgorithm.MCS:
        maxdeg = int(degree.max()) + 2
        order = empty(n, dtype=T.int32, device="cpu")
        lists = [_cpu(np.full(maxdeg, -1, dtype=np.int32)) for _ in range(2)]
        scratch = [empty(n, dtype=T.int32, device="cpu") for _ in range(2)]
        run(_mcs_order, 1, [offsets, adj, zeros(n, dtype=T.int32, device="cpu"), *lists, *scratch, order], "cpu")
    else:
        order = _cpu(np.argsort(-degree, kind="stable").astype(np.int32))
    colors = _cpu(np.full(n, -1, dtype=np.int32))
    count = zeros(1, dtype=T.int32, device="cpu")
    stamp = _cpu(np.full(int(degree.max()) + 2, -1, dtype=np.int32))
    run(_greedy_colors, 1, [order, offsets, adj, stamp, colors, count], "cpu")
    node_colors.assign(colors)
    return int(count.numpy()[0])


def _max_iterations(value, n: int) -> int:
    if value is None:
        return n
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"max_iterations must be an integer or None, got {type(value).__name__}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"max_iterations must be an integer or None, got {type(value).__name__}") from None
    if value < 0:
        raise ValueError(f"max_iterations must be non-negative, got {value}")
    if value > INT32_MAX:
        raise ValueError(f"max_iterations must not exceed {INT32_MAX}, got {value}")
    return value


def graph_coloring_balance(edges: array, node_colors: array, color_count: int, target_max_min_ratio: float, *,
                           max_iterations: int | None = None) -> float:
    """Even out the sizes of the colour groups of a colouring, in place, keeping it valid.

    ``edges`` and ``node_colors`` as for :func:`graph_coloring_assign` (colours in [0, ``color_count``)).
    Nodes move one at a time into the smallest group until the largest/smallest size ratio is at most
    ``target_max_min_ratio``, the sizes differ by 2 or less, or no node can move; at most ``max_iterations``
    moves (default: the node count; a ``UserWarning`` says when that limit stopped it). Returns the ratio
    reached (a float32 value); a move that made it worse is undone.

    >>> import simkit as sk
    >>> edges = sk.array([[0, 5]], dtype=sk.int32)
    >>> colors = sk.array([0, 0, 0, 0, 0, 1], dtype=sk.int32)
    >>> sk.utils.graph_coloring_balance(edges, colors, 2, 1.0)  # node 0 cannot join colour 1: node 1 does
    2.0
    >>> colors.numpy().tolist()
    [0, 1, 0, 0, 0, 1]
    """
    _check_arrays(edges, node_colors)
    n = node_colors.shape[0]
    max_iterations = _max_iterations(max_iterations, n)
    offsets_np, adj_np = _csr(edges, n, "Graph coloring balance")
    color_count = operator.index(color_count)
    if color_count <= 1:
        return 1.0
    colors_np = node_colors.numpy().astype(np.int32)
    bad = np.nonzero((colors_np < 0) | (colors_np >= color_count))[0]
    if bad.size:
        i = int(bad[0])
        raise RuntimeError(f"Graph coloring balance failed: Node {i} has color {colors_np[i]}, but valid colors "
                           f"are in the range [0, {color_count}).")
    sizes = np.bincount(colors_np, minlength=color_count).astype(np.int32)
    room = np.maximum(sizes, n // color_count + 1)  # a node only joins the smallest group (<= n // count)
    base = np.zeros(color_count, dtype=np.int32)
    np.cumsum(room[:-1], out=base[1:])
    members = np.zeros(int(room.sum()), dtype=np.int32)
    by_color = np.argsort(colors_np, kind="stable").astype(np.int32)  # each group in increasing node order
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    members[np.repeat(base - starts, sizes) + np.arange(n)] = by_color
    colors = _cpu(colors_np)
    result = zeros(1, dtype=T.float32, device="cpu")
    limit = zeros(1, dtype=T.int32, device="cpu")
    adj = _cpu(adj_np) if adj_np.size else zeros(1, dtype=T.int32, device="cpu")
    run(_balance, 1, [_cpu(offsets_np), adj, colors, _cpu(members), _cpu(base), _cpu(sizes),
                      float(target_max_min_ratio), max_iterations, result, limit], "cpu")
    node_colors.assign(colors)
    ratio = float(result.numpy()[0])
    if limit.numpy()[0]:
        warnings.warn(f"Graph coloring stopped because it reached the {max_iterations}-iteration limit "
                      f"(achieved ratio {ratio:g}, target {target_max_min_ratio:g}).", UserWarning, stacklevel=2)
    return ratio


def graph_coloring_get_groups(node_colors: array, color_count: int, return_wp_array: bool = True,
                              device="cpu") -> tuple:
    """The nodes of each colour: a tuple of ``color_count`` int32 arrays (simkit arrays on ``device``, or numpy
    arrays with ``return_wp_array=False``), each listing its nodes in increasing order.

    >>> import simkit as sk
    >>> groups = sk.utils.graph_coloring_get_groups(sk.array([1, 0, 1], dtype=sk.int32), 2, False)
    >>> [g.tolist() for g in groups]
    [[1], [0, 2]]
    """
    color_count = operator.index(color_count)
    if color_count < 0:
        raise RuntimeError("color_count must be non-negative")
    if color_count == 0:
        return ()
    if not node_colors.device.is_cpu:
        raise RuntimeError("node_colors array must be on the CPU")
    if node_colors.dtype != T.int32:
        raise RuntimeError(f"node_colors array must have dtype int32, got {type_repr(node_colors.dtype)}")
    if node_colors.ndim != 1:
        raise RuntimeError(f"node_colors array must be 1-dimensional, got {node_colors.ndim} dimensions")
    c = node_colors.numpy()
    bad = np.nonzero((c < 0) | (c >= color_count))[0]
    if bad.size:
        i = int(bad[0])
        raise RuntimeError(f"node {i} has color {c[i]}, outside the range [0, {color_count})")
    order = np.argsort(c, kind="stable").astype(np.int32)
    ends = np.cumsum(np.bincount(c, minlength=color_count))
    groups = np.split(order, ends[:-1])
    if not return_wp_array:
        return tuple(groups)
    return tuple(array(g, dtype=T.int32, device=device) for g in groups)
