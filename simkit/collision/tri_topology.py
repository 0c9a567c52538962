"""Triangle-mesh topology (Warp 1.19's ``warp.geometry.tri_tri_adjacency``): which triangle lies across each edge.

    neighbors, neighbor_edges = sk.geometry.tri_tri_adjacency(indices)      # indices: array2d of int32 (T, 3)
    # neighbors[t, j]: the triangle across the edge opposite local vertex j of t (that edge joins local vertices
    # (j + 1) % 3 and (j + 2) % 3), or -1 on the boundary; neighbor_edges[t, j]: that edge's local index in it

The mesh must be edge-manifold (one or two triangles per edge; a third one on an edge is ignored); the two
triangles of an edge need not be wound alike. Kernels, without sorting: every edge is keyed by its smaller
vertex, and each vertex keeps a lock-free singly linked list of the half-edges keyed by it (one ``atomic_exch``
per half-edge pushes it); then each half-edge walks its key vertex's list -- as long as that vertex's number of
edges to higher vertices -- for the other half-edge joining the same two vertices. The result does not depend on
the order in which threads push.
"""
from __future__ import annotations

import operator

from ..kernels import func, kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty, launch

# ---------------------------------------------------------------------------
# Kernel API


@func
def find_triangle_neighbor_edge_index(triangle_neighbors: array(dtype=T.int32, ndim=2), triangle: T.int32,
                                      neighbor: T.int32) -> T.int32:
    """The local edge ``j`` of ``triangle`` with ``triangle_neighbors[triangle, j] == neighbor``, or -1 when the two
    are not adjacent. ``triangle_neighbors`` is the first output of :func:`tri_tri_adjacency`; with the two
    triangles swapped this gives one entry of its second output without keeping that array."""
    for j in range(3):
        if triangle_neighbors[triangle, j] == neighbor:
            return j
    return -1


# ---------------------------------------------------------------------------
# Kernels


@kernel(enable_backward=False)
def _fill_int(values: array(dtype=T.int32), value: int):
    values[sk.tid()] = value


@func
def _edge_ends(indices: array(dtype=T.int32, ndim=2), h: int) -> T.vec2i:
    """The vertices of half-edge ``h`` (edge h % 3 of triangle h // 3), smaller first."""
    t = h // 3
    j = h - 3 * t
    a = indices[t, (j + 1) % 3]
    b = indices[t, (j + 2) % 3]
    return T.vec2i(sk.min(a, b), sk.max(a, b))


@kernel(enable_backward=False)
def _push_half_edges(indices: array(dtype=T.int32, ndim=2), vertex_count: int, head: array(dtype=T.int32),
                     next_edge: array(dtype=T.int32)):
    h = sk.tid()
    e = _edge_ends(indices, h)
    next_edge[h] = -1
    if e[0] >= 0 and e[1] < vertex_count and e[0] != e[1]:  # (out-of-range or degenerate edges join nothing)
        next_edge[h] = sk.atomic_exch(head, e[0], h)


@func
def _twin(indices: array(dtype=T.int32, ndim=2), vertex_count: int, head: array(dtype=T.int32),
          next_edge: array(dtype=T.int32), h: int) -> int:
    """The other half-edge on the edge of half-edge ``h`` (the lowest-numbered one), or -1."""
    e = _edge_ends(indices, h)
    best = int(-1)
    if e[0] >= 0 and e[1] < vertex_count and e[0] != e[1]:
        g = head[e[0]]
        while g >= 0:
            if g != h and g // 3 != h // 3:
                f = _edge_ends(indices, g)
                if f[1] == e[1] and (best < 0 or g < best):
                    best = g
            g = next_edge[g]
    return best


@kernel(enable_backward=False)
def _link(indices: array(dtype=T.int32, ndim=2), vertex_count: int, head: array(dtype=T.int32),
          next_edge: array(dtype=T.int32), neighbors: array(dtype=T.int32, ndim=2),
          neighbor_edges: array(dtype=T.int32, ndim=2), with_edges: int):
    h = sk.tid()
    g = _twin(indices, vertex_count, head, next_edge, h)
    t = h // 3
    j = h - 3 * t
    neighbors[t, j] = -1
    if g >= 0:
        neighbors[t, j] = g // 3
    if with_edges != 0:
        neighbor_edges[t, j] = -1
        if g >= 0:
            neighbor_edges[t, j] = g - 3 * (g // 3)


@kernel(enable_backward=False)
def _max_index(indices: array(dtype=T.int32, ndim=2), out: array(dtype=T.int32)):
    t, j = sk.tid()
    sk.atomic_max(out, 0, indices[t, j])


# ---------------------------------------------------------------------------
# Python API


def check_triangles(indices, who: str, name: str = "indices") -> None:
    """``indices`` must be a simkit array2d of int32 with 3 columns."""
    if not isinstance(indices, array) or indices.is_type:
        raise TypeError(f"{who}: {name} must be a simkit array2d of int32 with shape (num_tris, 3), got "
                        f"{type(indices).__name__}")
    if indices.ndim != 2 or indices.shape[1] != 3:
        raise ValueError(f"{who}: {name} must have shape (num_tris, 3) (an array2d of int32), got shape "
                         f"{indices.shape}")
    if indices.dtype is not T.int32:
        raise TypeError(f"{who}: {name} must hold int32, got {T.type_name(indices.dtype)}")


def infer_vertex_count(indices: array, who: str) -> int:
    """1 + the largest vertex index (a device reduction read back to the host: not inside a graph capture)."""
    dev = indices.device
    if dev.is_capturing:
        raise RuntimeError(f"{who}: vertex_count=None reads the largest index back to the host, which a graph "
                           "capture cannot do; pass vertex_count")
    if indices.shape[0] == 0:
        return 0
    out = array([-1], dtype=T.int32, device=dev)
    launch(_max_index, dim=indices.shape, inputs=[indices, out], device=dev, record_tape=False)
    return int(out.numpy()[0]) + 1


def build_adjacency(indices: array, vertex_count: int, neighbors: array, neighbor_edges: array | None,
                    scratch: tuple | None = None) -> None:
    """Write ``neighbors`` (and ``neighbor_edges`` when given) of the triangles ``indices`` (checked), in kernels
    only (no read-back: usable inside a graph capture). ``scratch``: (int32 array of max(vertex_count, 1), int32
    array of 3 * num_tris), to reuse over calls."""
    dev = indices.device
    halves = 3 * indices.shape[0]
    if halves == 0:
        return
    if scratch is None:
        scratch = empty(max(vertex_count, 1), dtype=T.int32, device=dev), empty(halves, dtype=T.int32, device=dev)
    head, next_edge = scratch
    launch(_fill_int, dim=head.shape[0], inputs=[head, -1], device=dev, record_tape=False)
    launch(_push_half_edges, dim=halves, inputs=[indices, vertex_count, head, next_edge], device=dev,
           record_tape=False)
    edges = neighbors if neighbor_edges is None else neighbor_edges
    launch(_link, dim=halves, inputs=[indices, vertex_count, head, next_edge, neighbors, edges,
                                      int(neighbor_edges is not None)], device=dev, record_tape=False)


def tri_tri_adjacency(indices: array, vertex_count: int | None = None, return_neighbor_edge_indices: bool = True):
    """Triangle-triangle adjacency of an edge-manifold triangle mesh (boundaries allowed, winding free).

    Args:
        indices: array2d of int32, shape ``(num_tris, 3)``: each triangle's vertices.
        vertex_count: number of vertices (every index must be below it; edges with an index out of range get no
            neighbor). None: 1 + the largest index, read back to the host, so it must be given inside a graph
            capture (RuntimeError otherwise).
        return_neighbor_edge_indices: also return each neighbor's local index of the shared edge (True, the
            default); False builds ``triangle_neighbors`` alone (see :func:`find_triangle_neighbor_edge_index`).

    Returns:
        ``(triangle_neighbors, neighbor_edge_indices)``, two int32 arrays of shape ``(num_tris, 3)``, or
        ``triangle_neighbors`` alone. ``triangle_neighbors[t, j]`` is the triangle across the edge opposite
        local vertex ``j`` of ``t`` (joining its local vertices ``(j + 1) % 3`` and ``(j + 2) % 3``), -1 on a
        boundary; ``neighbor_edge_indices[t, j]`` is that edge's local index in the neighbor, so
        ``triangle_neighbors[n, neighbor_edge_indices[t, j]] == t`` for ``n = triangle_neighbors[t, j]``.

    Example::

        indices = sk.array([[0, 1, 2], [0, 2, 3]], dtype=sk.int32)
        nbr, nbr_edge = sk.geometry.tri_tri_adjacency(indices)
        # nbr = [[-1, 1, -1], [-1, -1, 0]], nbr_edge[0, 1] = 2, nbr_edge[1, 2] = 1
    """
    who = "tri_tri_adjacency"
    check_triangles(indices, who)
    if vertex_count is None:
        vertex_count = infer_vertex_count(indices, who)
    else:
        try:
            vertex_count = operator.index(vertex_count)
        except TypeError:
            raise TypeError(f"{who}: vertex_count must be an integer or None, got {vertex_count!r}") from None
        if vertex_count < 0:
            raise ValueError(f"{who}: vertex_count must not be negative, got {vertex_count}")
    dev = indices.device
    neighbors = empty(indices.shape, dtype=T.int32, device=dev)
    neighbor_edges = empty(indices.shape, dtype=T.int32, device=dev) if return_neighbor_edge_indices else None
    build_adjacency(indices, vertex_count, neighbors, neighbor_edges)
    return (neighbors, neighbor_edges) if return_neighbor_edge_indices else neighbors
