"""Sparse marching cubes (``simkit.geometry``): the triangle mesh of a level set from a list of cells
(``sparse_marching_cubes_from_cells``), or from an implicit function through a Lipschitz octree
(``sparse_marching_cubes``), at a cost that follows the surface's area, not the grid's volume.

The cells' corners are numbered once: each cell's 8 corners get a 64-bit key (the corner's subscript
relative to the smallest cell subscript, x-major), the (key, slot) pairs are radix-sorted, and a prefix
sum over the first entry of each run of equal keys gives each unique corner its id (``simkit.utils``'
sort and scan). The value of a unique corner is read from the first of its slots (the lowest cell and
corner index), so exactly one of the equal values a shared corner was given receives its gradient.
Each cell with a sign change then flags the crossed edges at their lower corner (``3 * corner + axis``);
a prefix sum over the flags numbers the vertices, in the order of the corners' keys, so a vertex is
shared by every cell around its edge (no cracks) and the vertices come in the order the dense
``IsoSurfaceMarchingCubes.extract`` gives them on the same grid. The triangles are the dense ones' (the
same case tables, simkit/collision/marching_cubes.py), in the order of the cells.

Vertex positions are differentiable with respect to the corner values on a Tape (linear interpolation
along each crossed edge, as in the dense extractor); the cells are not.

Example::

    verts, indices = sk.geometry.sparse_marching_cubes(sdf, 65, 65, 65, lower=(-1, -1, -1), upper=(1, 1, 1))
    # sdf: points (array of vec3) -> values (array of float32); verts: array of vec3; indices: int32, 3 a face
"""
from __future__ import annotations

import numpy as np

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty, launch, zeros
from ..runtime.device import get_device
from .iso_surface import check_dims, check_vec3, grid_bounds
from .lipschitz_octree import cells_inside, check_field_callable, check_number, evaluate, octree_leaves
from .marching_cubes import CORNERS, EDGES, case_tables
from ..utils._common import blocks as chunks, run
from ..utils.scan import exclusive_scan
from ..utils.sort import radix_sort_pairs

_EXACT = 1 << 24  # float32 holds every integer below this: corner subscripts are then converted exactly


@kernel
def _cells_from_rows(rows: array(dtype=int, ndim=2), cells: array(dtype=T.vec3i)):
    i = sk.tid()
    cells[i] = T.vec3i(rows[i, 0], rows[i, 1], rows[i, 2])


@kernel(_parallel_min=1)
def _chunk_bounds(cells: array(dtype=T.vec3i), lows: array(dtype=T.vec3i), highs: array(dtype=T.vec3i), n: int,
                  chunk: int):
    b = sk.tid()
    lo = cells[b * chunk]
    hi = lo
    for i in range(b * chunk + 1, sk.min(n, b * chunk + chunk)):
        c = cells[i]
        lo = sk.min(lo, c)
        hi = sk.max(hi, c)
    lows[b] = lo
    highs[b] = hi


@kernel
def _corner_keys(cells: array(dtype=T.vec3i), corners: array(dtype=T.vec3i), lo: T.vec3i, ny: T.int64,
                 nz: T.int64, keys: array(dtype=T.int64), slots: array(dtype=int)):
    # slot 8 * cell + corner: the corner's subscript relative to lo, as ((x * ny) + y) * nz + z
    i = sk.tid()
    c = cells[i // 8]
    o = corners[i % 8]
    x = T.int64(c[0]) + T.int64(o[0]) - T.int64(lo[0])
    y = T.int64(c[1]) + T.int64(o[1]) - T.int64(lo[1])
    z = T.int64(c[2]) + T.int64(o[2]) - T.int64(lo[2])
    keys[i] = (x * ny + y) * nz + z
    slots[i] = i


@kernel
def _run_starts(keys: array(dtype=T.int64), starts: array(dtype=int)):
    i = sk.tid()
    starts[i] = 0
    if i == 0:
        starts[i] = 1
    elif keys[i] != keys[i - 1]:
        starts[i] = 1


@kernel
def _number_corners(keys: array(dtype=T.int64), slots: array(dtype=int), starts: array(dtype=int),
                    first: array(dtype=int), corner_keys: array(dtype=T.int64), corner_slot: array(dtype=int),
                    cell_corner: array(dtype=int)):
    # sorted entry i: its unique corner is the number of runs started before it, plus its own
    i = sk.tid()
    u = first[i] + starts[i] - 1
    if starts[i] != 0:
        corner_keys[u] = keys[i]
        corner_slot[u] = slots[i]
    cell_corner[slots[i]] = u


@kernel
def _corner_points(corner_keys: array(dtype=T.int64), ny: T.int64, nz: T.int64, base: T.vec3i, origin: T.vec3,
                   delta: T.vec3, points: array(dtype=T.vec3)):
    u = sk.tid()
    k = corner_keys[u]
    x = float(T.int64(base[0]) + k // (ny * nz))
    y = float(T.int64(base[1]) + (k // nz) % ny)
    z = float(T.int64(base[2]) + k % nz)
    points[u] = origin + sk.cw_mul(T.vec3(x, y, z), delta)


@kernel
def _gather_rows(values: array(dtype=float, ndim=2), corner_slot: array(dtype=int), out: array(dtype=float)):
    u = sk.tid()
    s = corner_slot[u]
    out[u] = values[s // 8, s % 8]


@kernel
def _gather_flat(values: array(dtype=float), corner_slot: array(dtype=int), out: array(dtype=float)):
    u = sk.tid()
    out[u] = values[corner_slot[u]]


@kernel
def _classify_cells(cell_corner: array(dtype=int), values: array(dtype=float), threshold: float,
                    tri_start: array(dtype=int), edge_table: array(dtype=int, ndim=2), codes: array(dtype=T.uint8),
                    tri_count: array(dtype=int), edge_flag: array(dtype=int), edge_end: array(dtype=int)):
    # edge_flag / edge_end: cells that share an edge write the same values there
    c = sk.tid()
    code = int(0)
    for k in range(8):
        if values[cell_corner[8 * c + k]] >= threshold:
            code = code | (1 << k)
    codes[c] = T.uint8(code)
    tri_count[c] = tri_start[code + 1] - tri_start[code]
    if code != 0 and code != 255:
        for e in range(12):
            a = edge_table[e, 0]
            b = edge_table[e, 1]
            if ((code >> a) & 1) != ((code >> b) & 1):
                slot = 3 * cell_corner[8 * c + a] + edge_table[e, 2]
                edge_flag[slot] = 1
                edge_end[slot] = cell_corner[8 * c + b]


@kernel
def _edge_vertices(corner_keys: array(dtype=T.int64), ny: T.int64, nz: T.int64, base: T.vec3i, origin: T.vec3,
                   delta: T.vec3, values: array(dtype=float), threshold: float, edge_flag: array(dtype=int),
                   edge_end: array(dtype=int), vertex: array(dtype=int), verts: array(dtype=T.vec3)):
    # slot 3 * corner + axis: the edge from the corner one step along the axis (as the dense extractor)
    s = sk.tid()
    if edge_flag[s] == 0:
        return
    u = s // 3
    axis = s % 3
    k = corner_keys[u]
    i = T.int64(base[0]) + k // (ny * nz)
    j = T.int64(base[1]) + (k // nz) % ny
    l = T.int64(base[2]) + k % nz
    f0 = values[u]
    p0 = origin + sk.cw_mul(T.vec3(float(i), float(j), float(l)), delta)
    if axis == 0:
        i = i + T.int64(1)
    elif axis == 1:
        j = j + T.int64(1)
    else:
        l = l + T.int64(1)
    f1 = values[edge_end[s]]
    t = sk.clamp((threshold - f0) / (f1 - f0), 0.0, 1.0)
    p1 = origin + sk.cw_mul(T.vec3(float(i), float(j), float(l)), delta)
    verts[vertex[s]] = p0 + t * (p1 - p0)


@kernel
def _cell_triangles(cell_corner: array(dtype=int), codes: array(dtype=T.uint8), tri_start: array(dtype=int),
                    tri_edges: array(dtype=int), edge_table: array(dtype=int, ndim=2), vertex: array(dtype=int),
                    tri_first: array(dtype=int), indices: array(dtype=int)):
    c = sk.tid()
    code = int(codes[c])
    first = 3 * tri_start[code]
    out = 3 * tri_first[c] - first
    for e in range(first, 3 * tri_start[code + 1]):
        edge = tri_edges[e]
        indices[out + e] = vertex[3 * cell_corner[8 * c + edge_table[edge, 0]] + edge_table[edge, 2]]


# ---------------------------------------------------------------------------

_tables: dict = {}


def _device_tables(device) -> tuple:
    """(corner offsets as vec3i[8], tri_start[257], tri_edges, edge_table[12, 3]: lower corner, upper corner,
    axis), from the dense extractor's tables."""
    if device.alias not in _tables:
        start, edges, info = case_tables()
        table = np.array([(a, b, int(info[e, 3])) for e, (a, b) in enumerate(EDGES)], dtype=np.int32)
        _tables[device.alias] = (array(np.array(CORNERS, dtype=np.int32), dtype=T.vec3i, device=device),
                                 array(start, dtype=int, device=device), array(edges, dtype=int, device=device),
                                 array(table, dtype=int, device=device))
    return _tables[device.alias]


class _CornerSet:
    """The unique corners of a set of cells: ``keys`` (int64, sorted), ``slot`` (each one's first slot
    ``8 * cell + corner``), ``cell_corner`` (the unique corner of each slot), ``ny``, ``nz`` (the key's
    extents) and ``lo`` (the subscript of key 0)."""

    def __init__(self, cells: array, lo: np.ndarray, hi: np.ndarray, who: str):
        dev = cells.device
        n = 8 * cells.shape[0]
        ext = [int(h) - int(l) + 2 for l, h in zip(lo, hi)]
        span = ext[0] * ext[1] * ext[2]
        if span >= 1 << 62:
            raise ValueError(f"{who}: the cells' subscripts span {tuple(ext)} corners, too many to number with "
                             f"64-bit keys")
        self.lo, self.ext, self.ny, self.nz = lo, ext, ext[1], ext[2]
        corners = _device_tables(dev)[0]
        keys, slots = empty(2 * n, dtype=T.int64, device=dev), empty(2 * n, dtype=int, device=dev)  # (2n: the sort's)
        run(_corner_keys, n, [cells, corners, T.vec3i(*lo), self.ny, self.nz, keys, slots], dev)
        radix_sort_pairs(keys, slots, n, 0, max(1, (span - 1).bit_length()))
        keys, slots = keys[:n], slots[:n]
        starts, first = empty(n, dtype=int, device=dev), empty(n, dtype=int, device=dev)
        run(_run_starts, n, [keys, starts], dev)
        self.count = exclusive_scan(starts, first)
        self.keys = empty(self.count, dtype=T.int64, device=dev)
        self.slot = empty(self.count, dtype=int, device=dev)
        self.cell_corner = empty(n, dtype=int, device=dev)
        run(_number_corners, n, [keys, slots, starts, first, self.keys, self.slot, self.cell_corner], dev)

    def placement(self, origin, delta) -> tuple:
        """(base subscript, origin) for the kernels: a corner's position is ``origin + delta * (base + relative
        subscript)``, with exact float32 subscripts when they fit, else relative ones from a moved origin."""
        lo = self.lo.astype(np.int64)
        hi = lo + np.array(self.ext, dtype=np.int64)
        if max(np.abs(lo).max(), np.abs(hi).max()) < _EXACT:
            return T.vec3i(*(int(x) for x in lo)), T.vec3(origin)
        moved = np.asarray(origin, dtype=np.float64) + np.asarray(delta, dtype=np.float64) * lo
        return T.vec3i(0, 0, 0), T.vec3(moved)


def _extract(cells: array, corners: _CornerSet, values: array, origin, delta, threshold: float) -> tuple:
    """(verts, indices) of the cells, given each unique corner's value (``values``, float32)."""
    dev = cells.device
    ncells = cells.shape[0]
    _, tri_start, tri_edges, edge_table = _device_tables(dev)
    codes, tri_count = empty(ncells, dtype=T.uint8, device=dev), empty(ncells, dtype=int, device=dev)
    nslots = 3 * corners.count
    edge_flag, edge_end = zeros(nslots, dtype=int, device=dev), empty(nslots, dtype=int, device=dev)
    run(_classify_cells, ncells, [corners.cell_corner, values, threshold, tri_start, edge_table, codes, tri_count,
                                  edge_flag, edge_end], dev)
    vertex, tri_first = empty(nslots, dtype=int, device=dev), empty(ncells, dtype=int, device=dev)
    nverts = exclusive_scan(edge_flag, vertex)
    ntris = exclusive_scan(tri_count, tri_first)
    verts = empty(nverts, dtype=T.vec3, device=dev, requires_grad=values.requires_grad)
    indices = empty(3 * ntris, dtype=int, device=dev)
    base, org = corners.placement(origin, delta)
    if nverts:
        launch(_edge_vertices, dim=nslots, inputs=[corners.keys, corners.ny, corners.nz, base, org, T.vec3(delta),
                                                   values, threshold, edge_flag, edge_end, vertex],
               outputs=[verts], device=dev)
    if ntris:
        run(_cell_triangles, ncells, [corners.cell_corner, codes, tri_start, tri_edges, edge_table, vertex, tri_first,
                                      indices], dev)
    return verts, indices


def _empty_mesh(device) -> tuple:
    return empty(0, dtype=T.vec3, device=device), empty(0, dtype=int, device=device)


# ---------------------------------------------------------------------------
# Arguments of sparse_marching_cubes_from_cells


def _as_cells(cells, device, who: str) -> tuple:
    """(cells as an array of vec3i on ``device``, smallest subscript, largest subscript) (None, None if empty)."""
    if isinstance(cells, array) and not cells.is_type:
        if cells.dtype is T.vec3i and cells.ndim == 1:
            out = cells if cells.device == device else array(cells.numpy(), dtype=T.vec3i, device=device)
        elif cells.dtype is T.int32 and cells.ndim == 2 and cells.shape[1] == 3:
            rows = cells if cells.device == device else array(cells.numpy(), dtype=int, device=device)
            out = empty(rows.shape[0], dtype=T.vec3i, device=device)
            if rows.shape[0]:
                run(_cells_from_rows, rows.shape[0], [rows, out], device)
        else:
            raise TypeError(f"{who}: cells must be an array of vec3i or an (N, 3) array of int32, got dtype "
                            f"{T.type_name(cells.dtype)} and shape {cells.shape}")
        host = None
    else:
        host = np.asarray(cells)
        if host.size == 0:
            host = host.reshape(0, 3)
        if host.ndim != 2 or host.shape[1] != 3:
            raise ValueError(f"{who}: cells must have shape (N, 3), got {host.shape}")
        if host.dtype.kind not in "iu":
            raise TypeError(f"{who}: cells must hold integer subscripts, got dtype {host.dtype}")
        if host.size and (host.min() < np.iinfo(np.int32).min or host.max() > np.iinfo(np.int32).max):
            raise ValueError(f"{who}: cell subscripts must fit in int32")
        host = host.astype(np.int32)
        out = array(host, dtype=T.vec3i, device=device)
    if out.shape[0] == 0:
        return out, None, None
    if host is not None:
        return out, host.min(axis=0).astype(np.int64), host.max(axis=0).astype(np.int64)
    n = out.shape[0]  # the subscript range on the device: only a few chunks' bounds come back
    nb, chunk = chunks(n, device)
    lows, highs = empty(nb, dtype=T.vec3i, device=device), empty(nb, dtype=T.vec3i, device=device)
    run(_chunk_bounds, nb, [out, lows, highs, n, chunk], device)
    return out, lows.numpy().min(axis=0).astype(np.int64), highs.numpy().max(axis=0).astype(np.int64)


def _as_corner_values(values, ncells: int, device, who: str) -> array:
    """The corner values as an (N, 8) or (8 N,) array of float32 on ``device``."""
    if isinstance(values, array) and not values.is_type:
        if values.dtype is not T.float32:
            raise TypeError(f"{who}: corner_values must be float32, got dtype {T.type_name(values.dtype)}")
        if values.device != device:
            if values.requires_grad:
                raise ValueError(f"{who}: corner_values is on {values.device}, not on {device}; move it there "
                                 f"first to keep its gradient")
            values = array(values.numpy(), dtype=float, device=device)
    else:
        try:
            values = array(np.asarray(values, dtype=np.float32), dtype=float, device=device)
        except (TypeError, ValueError):
            raise TypeError(f"{who}: corner_values must be an array of float32, got {type(values).__name__}") from None
    if values.shape not in ((ncells, 8), (8 * ncells,)):
        raise ValueError(f"{who}: corner_values must have shape ({ncells}, 8) or ({8 * ncells},) for {ncells} "
                         f"cells, got {values.shape}")
    return values


def sparse_marching_cubes_from_cells(cells, corner_values, origin=(0.0, 0.0, 0.0), cell_width: float = 1.0,
                                     threshold: float = 0.0, device=None) -> tuple:
    """The mesh of the level set ``value == threshold`` over a list of cells of a regular lattice.

    ``cells``: N integer subscripts (an array of vec3i, an (N, 3) int32 array, or anything numpy turns
    into (N, 3) integers), each the minimum corner of a cell: cell ``(i, j, k)`` spans
    ``origin + cell_width * (i, j, k)`` to ``origin + cell_width * (i + 1, j + 1, k + 1)``. Subscripts
    may be negative and far apart; cells should not repeat (a repeated cell repeats its triangles).
    ``corner_values``: float32, shape (N, 8) or (8 N,), the value at each cell's corners in the order of
    ``IsoSurfaceMarchingCubes.CUBE_CORNER_OFFSETS``; cells that share a corner should give it the same
    value (each unique corner takes its value from its first slot, cell-major). Arrays already on
    ``device`` are used in place. ``device``: default, that of ``corner_values`` or ``cells`` if they
    are simkit arrays, else the current device.

    Returns ``(verts, indices)``: an array of vec3 (one vertex per crossed lattice edge, shared by the
    cells around it, so a closed level set gives a watertight mesh) and a flat array of int32, 3 per
    triangle, wound counter-clockwise seen from values >= threshold. On a Tape, ``verts`` is
    differentiable with respect to ``corner_values`` (through the one slot each corner's value was read
    from); the cells are not differentiated.

    Raises ``ValueError`` if ``cell_width`` is not positive, the shapes of ``cells`` and
    ``corner_values`` do not agree, or the subscripts span too wide a range for 64-bit corner keys.

    Example::

        cells = np.array([[0, 0, 0], [1, 0, 0]])
        values = np.array([[-1, 1, 1, -1, -1, 1, 1, -1], [1, 2, 2, 1, 1, 2, 2, 1]], dtype=np.float32)
        verts, indices = sk.geometry.sparse_marching_cubes_from_cells(cells, values, cell_width=0.5)
    """
    who = "sparse_marching_cubes_from_cells"
    cell_width = check_number(cell_width, "cell_width", who, positive=True)
    threshold = check_number(threshold, "threshold", who)
    origin = T.vec3(check_vec3(origin, "origin", who))
    if device is None:
        device = next((a.device for a in (corner_values, cells) if isinstance(a, array) and not a.is_type), None)
    device = get_device(device)
    cells, lo, hi = _as_cells(cells, device, who)
    values = _as_corner_values(corner_values, cells.shape[0], device, who)
    if cells.shape[0] == 0:
        return _empty_mesh(device)
    corners = _CornerSet(cells, lo, hi, who)
    unique_values = empty(corners.count, dtype=float, device=device, requires_grad=values.requires_grad)
    gather = _gather_rows if values.ndim == 2 else _gather_flat
    launch(gather, dim=corners.count, inputs=[values, corners.slot], outputs=[unique_values], device=device)
    return _extract(cells, corners, unique_values, origin, (cell_width,) * 3, threshold)


def sparse_marching_cubes(field, nx: int, ny: int, nz: int, *, lower=None, upper=None, threshold: float = 0.0,
                          lipschitz_bound: float = 1.0, device=None, return_stats: bool = False) -> tuple:
    """The mesh of ``field == threshold`` on the grid of ``IsoSurfaceMarchingCubes.extract``, sampling the
    field only near the surface.

    ``field``: a callable taking an array of vec3 points and returning an array of float32 values, one
    per point, on the points' device: a kernel launched over the points keeps everything on the device
    (a callable through numpy works too, at a host round trip a call). Its Lipschitz constant must be at
    most ``lipschitz_bound`` (1 for a signed distance function; larger values keep a wider band of cells).
    ``nx, ny, nz`` (>= 2), ``lower``, ``upper``: the grid, as for ``IsoSurfaceMarchingCubes.extract``
    (node (0, 0, 0) at ``lower``, default the origin; node (nx - 1, ny - 1, nz - 1) at ``upper``, default
    (nx - 1, ny - 1, nz - 1)). The result is the surface that ``extract`` gives for the field sampled at
    every node, with the same vertices in the same order; only the cells that ``lipschitz_octree`` keeps
    (over the grid padded to a power of two cells per side, the padding cells then dropped) are sampled,
    at their corners. The level set outside the grid is not extracted.

    Returns ``(verts, indices)`` (as ``sparse_marching_cubes_from_cells``), and with ``return_stats`` a
    dict as well: ``leaf_cells`` (cells extracted), ``unique_corners``, ``field_evaluations`` (points
    the field was called on, octree included), ``resolution`` (octree leaves per side),
    ``requested_ncells`` (cells per axis of the grid) and ``culled_cells`` (leaves in the padding).
    On a Tape, ``verts`` is differentiable with respect to the values ``field`` returns for the corners
    (allocate them with ``requires_grad=True``); the octree is not recorded.

    Example::

        verts, indices = sk.geometry.sparse_marching_cubes(sdf, 65, 65, 65, lower=(-1, -1, -1), upper=(1, 1, 1))
    """
    who = "sparse_marching_cubes"
    check_field_callable(field, who)
    dims = check_dims(nx, ny, nz, who)
    if min(dims) < 2:
        raise ValueError(f"{who}: the grid needs at least 2 nodes on each axis (one cell), got {dims}")
    threshold = check_number(threshold, "threshold", who)
    lipschitz_bound = check_number(lipschitz_bound, "lipschitz_bound", who, non_negative=True)
    origin, delta = grid_bounds(dims, lower, upper, who)
    device = get_device(device)
    ncells = tuple(d - 1 for d in dims)
    depth = (max(ncells) - 1).bit_length()
    leaves, evaluations = octree_leaves(field, np.array(origin, dtype=np.float64), np.array(delta, dtype=np.float64),
                                        depth, threshold, lipschitz_bound, device, who)
    cells = cells_inside(leaves, ncells)
    stats = {"leaf_cells": cells.shape[0], "unique_corners": 0, "field_evaluations": evaluations,
             "resolution": 1 << depth, "requested_ncells": ncells, "culled_cells": leaves.shape[0] - cells.shape[0]}
    if cells.shape[0] == 0:
        verts, indices = _empty_mesh(device)
    else:
        lo = np.zeros(3, dtype=np.int64)
        corners = _CornerSet(cells, lo, np.array(ncells, dtype=np.int64) - 1, who)
        points = empty(corners.count, dtype=T.vec3, device=device)
        run(_corner_points, corners.count, [corners.keys, corners.ny, corners.nz, T.vec3i(0, 0, 0), origin, delta,
                                            points], device)
        values = evaluate(field, points, who)
        stats["unique_corners"] = corners.count
        stats["field_evaluations"] += corners.count
        verts, indices = _extract(cells, corners, values, origin, delta, threshold)
    return (verts, indices, stats) if return_stats else (verts, indices)
