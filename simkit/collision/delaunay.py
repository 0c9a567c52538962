"""Delaunay edge flips of 2D triangle meshes (Warp 1.19's ``warp.geometry.delaunay_edge_flip``) and the 2D
predicates they rest on, ``signed_area`` and ``in_circle`` (kernel-callable).

    positions = sk.array(points, dtype=sk.vec2)          # (num_verts,)
    indices = sk.array(tris, dtype=sk.int32)             # (num_tris, 3), counter-clockwise; rewritten in place
    flips = sk.geometry.delaunay_edge_flip(positions, indices)
    print(int(flips.numpy()[0]), "edges flipped")

An interior edge is flipped when the far vertex of its second triangle lies strictly inside the circumcircle of
the first (Lawson's flip); flips that would make a triangle of signed area <= ``area_epsilon`` (a non-convex quad,
or a sliver) are refused, so a non-convex domain keeps its boundary and reaches a fixed point that need not be
fully Delaunay. Each pass flips a set of edges no two of which share a triangle, in parallel: every candidate
edge bids a pseudo-random priority (a bijective hash of the edge and the pass number, so bids never tie) on both
of its triangles with ``atomic_max``, and an edge flips when it holds the top bid on both. The top candidate of a
pass always flips, so every pass makes progress; random bids keep the passes few (unlike priorities that grow
with the triangle index, which can cascade row by row along a grid). The adjacency is rebuilt from the current
connectivity at the start of every pass (:mod:`tri_topology`), and a flip rewrites only its two triangles.

The passes run under ``capture_while`` on a device-side flag: no host read-back, so the whole loop can be
captured in a graph (CPU, or CUDA 12.4+), each replay flipping the current ``indices`` again. The in-circle test
of the flips runs in float64 (differences of the float32 positions are exact there).
"""
from __future__ import annotations

import math
import numbers

from ..kernels import func, kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty, launch, zeros
from ..runtime.capture_conditional import capture_while
from .tri_topology import _fill_int, build_adjacency, check_triangles

# ---------------------------------------------------------------------------
# Kernel API: 2D predicates


@func
def signed_area(a: T.vec2, b: T.vec2, c: T.vec2) -> float:
    """Signed area of triangle ``abc``: positive when ``a, b, c`` turn counter-clockwise. Differentiable."""
    return 0.5 * ((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))


@func
def signed_area(a: T.vec2d, b: T.vec2d, c: T.vec2d) -> T.float64:  # noqa: F811 (the float64 overload)
    """Signed area of triangle ``abc`` (float64)."""
    return T.float64(0.5) * ((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]))


@func
def in_circle(a: T.vec2, b: T.vec2, c: T.vec2, d: T.vec2) -> bool:
    """Whether ``d`` lies strictly inside the circumcircle of the counter-clockwise triangle ``abc``: the sign of
    the 3x3 in-circle determinant of ``a - d``, ``b - d``, ``c - d`` (rounded floating point, not an exact
    predicate: nearly cocircular points may go either way)."""
    u = a - d
    v = b - d
    w = c - d
    det = (sk.dot(u, u) * (v[0] * w[1] - v[1] * w[0]) - sk.dot(v, v) * (u[0] * w[1] - u[1] * w[0])
           + sk.dot(w, w) * (u[0] * v[1] - u[1] * v[0]))
    return det > 0.0


@func
def in_circle(a: T.vec2d, b: T.vec2d, c: T.vec2d, d: T.vec2d) -> bool:  # noqa: F811 (the float64 overload)
    """``in_circle`` in float64."""
    u = a - d
    v = b - d
    w = c - d
    det = (sk.dot(u, u) * (v[0] * w[1] - v[1] * w[0]) - sk.dot(v, v) * (u[0] * w[1] - u[1] * w[0])
           + sk.dot(w, w) * (u[0] * v[1] - u[1] * v[0]))
    return det > T.float64(0.0)


# ---------------------------------------------------------------------------
# Kernels of the flip passes
# state: [0] passes done, [1] flips in the current pass; more[0]: run another pass (capture_while's flag)


@kernel(enable_backward=False)
def _begin(state: array(dtype=T.int32), total: array(dtype=T.int32), more: array(dtype=T.int32)):
    state[0] = 0
    state[1] = 0
    total[0] = 0
    more[0] = 1


@func
def _bid(h: int, pass_index: int) -> int:
    """A priority in [0, 2^31) for half-edge ``h`` in pass ``pass_index``, one-to-one in ``h`` (no two bids tie)."""
    salt = (T.int64(pass_index) * T.int64(1103515245) + T.int64(12345)) & T.int64(0x7FFFFFFF)
    x = (T.int64(h) * T.int64(0x5BD1E995) + salt) & T.int64(0x7FFFFFFF)
    x = x ^ (x >> T.int64(15))
    x = (x * T.int64(0x2C1B3C6D)) & T.int64(0x7FFFFFFF)
    x = x ^ (x >> T.int64(13))
    return int(x)


@func
def _pos(points: array(dtype=T.vec2), i: int) -> T.vec2d:
    p = points[i]
    return T.vec2d(T.float64(p[0]), T.float64(p[1]))


@kernel(enable_backward=False)
def _propose(positions: array(dtype=T.vec2), ref_positions: array(dtype=T.vec2), has_ref: int,
             indices: array(dtype=T.int32, ndim=2), neighbors: array(dtype=T.int32, ndim=2),
             neighbor_edges: array(dtype=T.int32, ndim=2), state: array(dtype=T.int32), area_epsilon: T.float64,
             ref_area_epsilon: T.float64, bids: array(dtype=T.int32), claims: array(dtype=T.int32)):
    h = sk.tid()
    t = h // 3
    j = h - 3 * t
    bids[h] = -1
    n = neighbors[t, j]
    if n <= t:  # boundary, or the edge is handled from its lower triangle
        return
    jn = neighbor_edges[t, j]
    p = indices[t, j]
    q = indices[t, (j + 1) % 3]
    r = indices[t, (j + 2) % 3]
    s = indices[n, jn]
    if indices[n, (jn + 1) % 3] != r or indices[n, (jn + 2) % 3] != q:
        return  # the two triangles are wound differently: not a flippable quad
    # quad p, q, s, r (counter-clockwise); the flip replaces diagonal q-r with p-s
    if not in_circle(_pos(positions, p), _pos(positions, q), _pos(positions, r), _pos(positions, s)):
        return
    if signed_area(_pos(positions, p), _pos(positions, q), _pos(positions, s)) <= area_epsilon:
        return
    if signed_area(_pos(positions, p), _pos(positions, s), _pos(positions, r)) <= area_epsilon:
        return
    if has_ref != 0:
        # (either orientation: the reference only has to stay non-degenerate)
        if sk.abs(signed_area(_pos(ref_positions, p), _pos(ref_positions, q), _pos(ref_positions, s))) \
                <= ref_area_epsilon:
            return
        if sk.abs(signed_area(_pos(ref_positions, p), _pos(ref_positions, s), _pos(ref_positions, r))) \
                <= ref_area_epsilon:
            return
    bid = _bid(h, state[0])
    bids[h] = bid
    sk.atomic_max(claims, t, bid)
    sk.atomic_max(claims, n, bid)


@kernel(enable_backward=False)
def _apply(indices: array(dtype=T.int32, ndim=2), neighbors: array(dtype=T.int32, ndim=2),
           neighbor_edges: array(dtype=T.int32, ndim=2), bids: array(dtype=T.int32), claims: array(dtype=T.int32),
           state: array(dtype=T.int32)):
    h = sk.tid()
    bid = bids[h]
    if bid < 0:
        return
    t = h // 3
    j = h - 3 * t
    n = neighbors[t, j]
    if claims[t] != bid or claims[n] != bid:
        return
    jn = neighbor_edges[t, j]
    p = indices[t, j]
    s = indices[n, jn]
    # t = (p, q, r) becomes (p, q, s); n = (s, r, q) becomes (s, r, p): orientation and local order kept
    indices[t, (j + 2) % 3] = s
    indices[n, (jn + 2) % 3] = p
    sk.atomic_add(state, 1, 1)


@kernel(enable_backward=False)
def _end_pass(state: array(dtype=T.int32), total: array(dtype=T.int32), more: array(dtype=T.int32),
              max_passes: int):
    flips = state[1]
    total[0] = total[0] + flips
    state[0] = state[0] + 1
    state[1] = 0
    more[0] = 0
    if flips > 0 and state[0] < max_passes:
        more[0] = 1


# ---------------------------------------------------------------------------
# Python API


def _check_points(points, name: str, who: str) -> None:
    if not isinstance(points, array) or points.is_type or points.dtype is not T.vec2:
        got = f"dtype {T.type_name(points.dtype)}" if isinstance(points, array) else type(points).__name__
        raise TypeError(f"{who}: {name} must be a 1D simkit array of vec2, got {got}")
    if points.ndim != 1:
        raise ValueError(f"{who}: {name} must be a 1D simkit array of vec2, got shape {points.shape}")


def _check_epsilon(value, name: str, who: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0.0:
        raise ValueError(f"{who}: {name} must be a finite number >= 0, got {value!r}")
    return float(value)


def delaunay_edge_flip(positions: array, indices: array, ref_positions: array | None = None, max_passes: int = 1000,
                       area_epsilon: float = 0.0, ref_area_epsilon: float = 1e-10) -> array:
    """Flip the non-Delaunay interior edges of a 2D triangle mesh, in place, until none is left or ``max_passes``
    parallel passes have run (see the module docstring for the passes).

    Args:
        positions: array of vec2, ``(num_verts,)``; not modified.
        indices: array2d of int32, ``(num_tris, 3)``, every triangle counter-clockwise (positive signed area) and
            the mesh manifold; rewritten with the flipped connectivity.
        ref_positions: optional array of vec2 like ``positions``: a flip is refused when one of its two new
            triangles has an area (absolute) <= ``ref_area_epsilon`` there (a mesh deformed from a reference one
            keeps the reference non-degenerate).
        max_passes: at most this many passes (>= 1).
        area_epsilon: a flip is refused when one of its new triangles has signed area <= this (>= 0): no
            inverted triangles, no slivers.
        ref_area_epsilon: the threshold for ``ref_positions`` (>= 0).

    Returns:
        A ``(1,)`` int32 array on ``indices.device``: the number of edges flipped. Inside a graph capture it is
        written at each replay (read it after ``capture_launch``).

    Example::

        pos = sk.array([[-3.0, 0.0], [3.0, 0.0], [0.0, 1.0], [0.0, -1.0]], dtype=sk.vec2)
        tris = sk.array([[0, 1, 2], [1, 0, 3]], dtype=sk.int32)   # a thin quad, split the long way
        flips = sk.geometry.delaunay_edge_flip(pos, tris)          # 1 flip: tris now share edge (2, 3)
    """
    who = "delaunay_edge_flip"
    if isinstance(max_passes, bool) or not isinstance(max_passes, numbers.Integral) or max_passes < 1:
        raise ValueError(f"{who}: max_passes must be an integer >= 1, got {max_passes!r}")
    area_epsilon = _check_epsilon(area_epsilon, "area_epsilon", who)
    ref_area_epsilon = _check_epsilon(ref_area_epsilon, "ref_area_epsilon", who)
    _check_points(positions, "positions", who)
    check_triangles(indices, who)
    dev = indices.device
    if positions.device != dev:
        raise ValueError(f"{who}: positions is on {positions.device.alias}, indices on {dev.alias}")
    if ref_positions is not None:
        _check_points(ref_positions, "ref_positions", who)
        if ref_positions.device != dev or ref_positions.shape != positions.shape:
            raise ValueError(f"{who}: ref_positions must match positions (shape {positions.shape}, on "
                             f"{positions.device.alias}), got shape {ref_positions.shape} on "
                             f"{ref_positions.device.alias}")
    total = zeros(1, dtype=T.int32, device=dev)
    num_tris = indices.shape[0]
    if num_tris == 0:
        return total
    nv = positions.shape[0]
    halves = 3 * num_tris
    neighbors = empty((num_tris, 3), dtype=T.int32, device=dev)
    neighbor_edges = empty((num_tris, 3), dtype=T.int32, device=dev)
    scratch = empty(max(nv, 1), dtype=T.int32, device=dev), empty(halves, dtype=T.int32, device=dev)
    bids = empty(halves, dtype=T.int32, device=dev)
    claims = empty(num_tris, dtype=T.int32, device=dev)
    state = empty(2, dtype=T.int32, device=dev)
    more = empty(1, dtype=T.int32, device=dev)
    ref = ref_positions if ref_positions is not None else empty(0, dtype=T.vec2, device=dev)

    def one_pass():
        build_adjacency(indices, nv, neighbors, neighbor_edges, scratch)
        launch(_fill_int, dim=num_tris, inputs=[claims, -1], device=dev, record_tape=False)
        launch(_propose, dim=halves,
               inputs=[positions, ref, int(ref_positions is not None), indices, neighbors, neighbor_edges, state,
                       area_epsilon, ref_area_epsilon, bids, claims], device=dev, record_tape=False)
        launch(_apply, dim=halves, inputs=[indices, neighbors, neighbor_edges, bids, claims, state], device=dev,
               record_tape=False)
        launch(_end_pass, dim=1, inputs=[state, total, more, int(max_passes)], device=dev, record_tape=False)

    launch(_begin, dim=1, inputs=[state, total, more], device=dev, record_tape=False)
    capture_while(more, one_pass)
    return total
