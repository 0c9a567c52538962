"""IsoSurfaceNets (``simkit.geometry``): surface nets mesh (quads, or triangles) of an iso-surface of a
dense 3D scalar field, in kernels (CPU and CUDA). Semantics follow Warp 1.19's ``IsoSurfaceNets``,
which follows the uniform meshing path of OpenVDB's volume-to-mesh tool.

Example::

    verts, tris = sk.geometry.IsoSurfaceNets.extract(field, 0.0)                     # 3 indices a triangle
    verts, quads = sk.geometry.IsoSurfaceNets.extract(field, 0.0, topology="quad")   # 4 indices a quad

How it works. A node is *inside* when its value is below the threshold; a cell's sign code has bit
``c`` set when its corner ``c`` is inside. The level set crosses a cell edge whose two nodes differ.
Within a cell the crossed edges fall into one to four *edge groups* (sheets of the surface): on each
cube face the crossings are joined in pairs, where a face with two diagonal inside corners joins its
inside corners (its two outside corners are cut off), and the groups are the connected components.
Each group gives one vertex, at the mean of its edges' crossing points (linear interpolation along
each edge). Every crossed grid edge with four cells around it gives one quad, joining the vertices of
the groups that hold that edge in those four cells, wound so that its normal points from the inside
node to the outside one (counter-clockwise seen from outside, for a signed distance field);
``topology="triangle"`` splits quad (a, b, c, d) into (a, b, c) and (a, c, d). Vertices of groups
with no such edge (the surface only grazes the grid's border there) are left out.

Ambiguous faces: a cell with two or three inside corners, two of them diagonal on exactly one face,
looks at the cell across that face; when that one is of the same kind with the shared face as its
ambiguous face, both cells use the complemented sign code (whose groups cut off the inside corners
instead), so two small blobs meeting at a face stay apart, and the two cells always agree.

The tables (``_SN_*`` below) are derived here from the cube's geometry, in OpenVDB's numbering of
corners and edges, so that cell codes, group columns and face ids mean the same as theirs. Groups of
a cell are numbered in the order of their lowest edge (OpenVDB's own numbering differs in some
multi-sheet cells: there the vertices of one cell come out in another order than Warp's).

Kernels: (1) per cell: sign code, ambiguity correction, which groups give a vertex, how many quads;
(2) a prefix sum (``sk.utils``') gives each cell's first vertex and quad; (3) per cell: the faces, and
each vertex's cell and group; (4) per vertex: the position, recorded on a Tape so that gradients flow
from the vertex positions back to the field (cell classification and topology are not differentiated).
"""
from __future__ import annotations

import numpy as np

from ..kernels import func, kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty, launch
from ..utils.scan import exclusive_scan
from .iso_surface import IsoSurfaceBase, check_field, grid_bounds

# ---------------------------------------------------------------------------
# Tables (derived from the cube's geometry)

_RING = ((0, 0), (1, 0), (1, 1), (0, 1))  # (x, z) going round a face of constant y, from the origin, +x first

#: Corner offsets: corners 0-3 go round the y = 0 face from the origin (+x first), 4-7 are the same at y = 1.
_SN_CORNER_OFFSETS = tuple((x, y, z) for y in (0, 1) for x, z in _RING)
assert all(p == (((c & 3) + 1) >> 1 & 1, c >> 2, (c & 3) >> 1) for c, p in enumerate(_SN_CORNER_OFFSETS))  # _cell_signs


def _lower_first(a: int, b: int) -> tuple:
    return (a, b) if sum(_SN_CORNER_OFFSETS[a]) < sum(_SN_CORNER_OFFSETS[b]) else (b, a)


#: Edges as corner pairs (lower corner first): 0-3 go round the y = 0 face (edge m joins corners m and
#: m + 1), 4-7 round the y = 1 face, 8-11 along y (edge 8 + c joins corners c and c + 4).
_SN_EDGE_TO_CORNERS = tuple([_lower_first(r + m, r + (m + 1) % 4) for r in (0, 4) for m in range(4)]
                            + [(c, c + 4) for c in range(4)])


def _edge_axis(e: int) -> int:
    a, b = _SN_EDGE_TO_CORNERS[e]
    return next(d for d in range(3) if _SN_CORNER_OFFSETS[a][d] != _SN_CORNER_OFFSETS[b][d])


# Face ids 1-6 (0: none): face m + 1 (m = 0..3) is the side face (parallel to y) holding edge m, 5 is
# the y = 0 face and 6 the y = 1 face. A face is (axis, side): the corners with offset[axis] == side.
def _face_ids() -> dict:
    ids = {}
    for m in range(4):
        a, b = (_SN_CORNER_OFFSETS[c] for c in _SN_EDGE_TO_CORNERS[m])
        axis = next(d for d in (0, 2) if a[d] == b[d])
        ids[(axis, a[axis])] = m + 1
    ids[(1, 0)], ids[(1, 1)] = 5, 6
    return ids


_FACE_IDS = _face_ids()


def _face_cycle(axis: int, side: int) -> list:
    """The 4 corners of a face, in cyclic order."""
    corners = [c for c in range(8) if _SN_CORNER_OFFSETS[c][axis] == side]
    cycle = [corners[0]]
    while len(cycle) < 4:
        last = _SN_CORNER_OFFSETS[cycle[-1]]
        cycle.append(next(c for c in corners if c not in cycle
                          and sum(abs(p - q) for p, q in zip(_SN_CORNER_OFFSETS[c], last)) == 1))
    return cycle


_EDGE_ID = {frozenset(e): i for i, e in enumerate(_SN_EDGE_TO_CORNERS)}
_FACES = [(key, _face_cycle(*key)) for key in sorted(_FACE_IDS, key=_FACE_IDS.get)]


def _ambiguous_faces(signs: int) -> list:
    """Face ids whose corners alternate inside / outside."""
    inside = [(signs >> c) & 1 for c in range(8)]
    return [_FACE_IDS[key] for key, cyc in _FACES if all(inside[cyc[m]] != inside[cyc[(m + 1) % 4]] for m in range(4))]


def _edge_groups(signs: int) -> tuple:
    """(number of groups, group of edge 0, ..., group of edge 11); 0 for an edge the surface does not cross."""
    inside = [(signs >> c) & 1 for c in range(8)]
    parent = list(range(12))

    def root(e):
        while parent[e] != e:
            e = parent[e]
        return e

    for _, cyc in _FACES:
        ring = [_EDGE_ID[frozenset((cyc[m], cyc[(m + 1) % 4]))] for m in range(4)]  # ring[m]: cyc[m] - cyc[m + 1]
        crossed = [inside[cyc[m]] != inside[cyc[(m + 1) % 4]] for m in range(4)]
        if sum(crossed) == 2:
            a, b = (ring[m] for m in range(4) if crossed[m])
            parent[root(a)] = root(b)
        elif sum(crossed) == 4:  # ambiguous: cut off each outside corner (the inside corners stay joined)
            for m in range(4):
                if not inside[cyc[m]]:
                    parent[root(ring[m - 1])] = root(ring[m])
    row, number = [0] * 13, {}
    for e, (a, b) in enumerate(_SN_EDGE_TO_CORNERS):
        if inside[a] != inside[b]:
            row[1 + e] = number.setdefault(root(e), len(number) + 1)
    row[0] = len(number)
    return tuple(row)


def _ambiguous_face(signs: int) -> int:
    faces = _ambiguous_faces(signs)
    return faces[0] if 2 <= bin(signs).count("1") <= 3 and len(faces) == 1 else 0


# The two per-code tables, derived at first access (about 20 ms, which `import simkit` doesn't pay):
#   _SN_EDGE_GROUP_TABLE: 13 entries per sign code: the number of edge groups, then the group (1-based,
#       0: not crossed) of each edge;
#   _SN_AMBIGUOUS_FACE: per sign code, the id of its ambiguous face when it has 2 or 3 inside corners
#       and exactly one such face, else 0.
_LAZY_TABLES = {
    "_SN_EDGE_GROUP_TABLE": lambda: tuple(v for signs in range(256) for v in _edge_groups(signs)),
    "_SN_AMBIGUOUS_FACE": lambda: tuple(_ambiguous_face(signs) for signs in range(256)),
}


def _table(name: str) -> tuple:
    if name not in globals():
        globals()[name] = _LAZY_TABLES[name]()
    return globals()[name]


def __getattr__(name):
    if name in _LAZY_TABLES:
        return _table(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _face_steps() -> list:
    """Per face id (0-6): the step to the cell across it and the id of the same face seen from there."""
    rows = [(0, 0, 0, 0)]
    for fid in range(1, 7):
        axis, side = next(key for key, i in _FACE_IDS.items() if i == fid)
        step = [0, 0, 0]
        step[axis] = 1 if side else -1
        rows.append((*step, _FACE_IDS[(axis, 1 - side)]))
    return rows


# Quads: the grid edge from node n along axis a is shared by the cells n - d, d in {0, 1} on the two
# other axes, listed from the cell n round the edge, first stepping along _QUAD_FIRST_STEP[a] (OpenVDB's
# listing order, which fixes the order of each quad's indices).
_QUAD_FIRST_STEP = (1, 2, 1)


def _quad_table() -> tuple:
    """(12 rows (di, dj, dk, local edge): the 4 cells round an edge along x, then y, then z, each with
    the edge's index in it; per axis, whether the listing is reversed when the edge's lower node is inside)."""
    cells, reverse_if_inside = [], []
    for axis in range(3):
        u = _QUAD_FIRST_STEP[axis]
        v = 3 - axis - u
        centres = []
        for su, sv in ((0, 0), (1, 0), (1, 1), (0, 1)):  # steps back along u and v
            d = [0, 0, 0]
            d[u], d[v] = su, sv  # cell n - d holds the edge from its corner at offset d
            far = list(d)
            far[axis] = 1
            edge = _EDGE_ID[frozenset((_SN_CORNER_OFFSETS.index(tuple(d)), _SN_CORNER_OFFSETS.index(tuple(far))))]
            cells.append((-d[0], -d[1], -d[2], edge))
            centres.append((0.5 - su, 0.5 - sv))  # the cell's centre about the edge, in (u, v)
        turn = sum(p[0] * q[1] - p[1] * q[0] for p, q in zip(centres, centres[1:] + centres[:1]))
        # the listing turns about +axis when it turns counter-clockwise in (u, v) and (u, v, axis) is
        # right-handed; the normal must point to the outside node, at +axis when the lower node is inside
        about_plus_axis = (turn > 0) == (v == (u + 1) % 3)
        reverse_if_inside.append(not about_plus_axis)
    return cells, reverse_if_inside


_QUAD_CELLS, _QUAD_REVERSE_IF_INSIDE = _quad_table()


def _edge_rows() -> list:
    """Per local edge: offsets of its two corners, its axis."""
    return [_SN_CORNER_OFFSETS[a] + _SN_CORNER_OFFSETS[b] + (_edge_axis(e),)
            for e, (a, b) in enumerate(_SN_EDGE_TO_CORNERS)]


_device_tables_cache: dict = {}


def _device_tables(device) -> tuple:
    if device.alias not in _device_tables_cache:
        quad = [row + (int(_QUAD_REVERSE_IF_INSIDE[i // 4]),) for i, row in enumerate(_QUAD_CELLS)]
        tables = (_table("_SN_EDGE_GROUP_TABLE"), _table("_SN_AMBIGUOUS_FACE"), _face_steps(), _edge_rows(), quad)
        _device_tables_cache[device.alias] = tuple(array(np.asarray(t, dtype=np.int32), dtype=int, device=device)
                                                   for t in tables)
    return _device_tables_cache[device.alias]


# ---------------------------------------------------------------------------
# Kernels


@func
def _cell_signs(field: array(dtype=float, ndim=3), threshold: float, i: int, j: int, k: int):
    """Bit c set when corner c of cell (i, j, k) is inside; corner c is _SN_CORNER_OFFSETS[c], which is
    (((m + 1) >> 1) & 1, c >> 2, m >> 1) with m = c & 3 (unrolled: constant offsets)."""
    signs = int(0)
    for c in range(8):
        m = c & 3
        if field[i + (((m + 1) >> 1) & 1), j + (c >> 2), k + (m >> 1)] < threshold:
            signs = signs | (1 << c)
    return signs


@func
def _group_rank(keep: int, group: int):
    """Index of ``group`` (1-based) among the kept groups of a cell (bits of ``keep``)."""
    rank = int(0)
    for g in range(3):
        if g + 1 < group and ((keep >> g) & 1) != 0:
            rank += 1
    return rank


@kernel
def _sn_classify(field: array(dtype=float, ndim=3), threshold: float, groups: array(dtype=int),
                 ambiguous: array(dtype=int), faces: array(dtype=int, ndim=2),
                 edges: array(dtype=int, ndim=2), cell_info: array(dtype=int), counts: array(dtype=int, ndim=2)):
    i, j, k = sk.tid()
    nx = field.shape[0]
    ny = field.shape[1]
    nz = field.shape[2]
    cell = (i * (ny - 1) + j) * (nz - 1) + k
    signs = _cell_signs(field, threshold, i, j, k)
    nverts = int(0)
    nquads = int(0)
    keep = int(0)
    if signs != 0 and signs != 255:
        face = ambiguous[signs]
        if face != 0:
            ni = i + faces[face, 0]
            nj = j + faces[face, 1]
            nk = k + faces[face, 2]
            if ni >= 0 and nj >= 0 and nk >= 0 and ni + 1 < nx and nj + 1 < ny and nk + 1 < nz:
                if ambiguous[_cell_signs(field, threshold, ni, nj, nk)] == faces[face, 3]:
                    signs = (~signs) & 255
        # a group gives a vertex when one of its edges has four cells around it (lies inside the grid)
        for e in range(12):
            g = groups[signs * 13 + 1 + e]
            if g != 0:
                node_i = i + edges[e, 0]
                node_j = j + edges[e, 1]
                node_k = k + edges[e, 2]
                axis = edges[e, 6]
                inner = True
                if axis != 0 and (node_i == 0 or node_i == nx - 1):
                    inner = False
                if axis != 1 and (node_j == 0 or node_j == ny - 1):
                    inner = False
                if axis != 2 and (node_k == 0 or node_k == nz - 1):
                    inner = False
                if inner:
                    keep = keep | (1 << (g - 1))
        for g in range(4):
            nverts += (keep >> g) & 1
        # quads round the cell's three edges from its lower corner, where those edges are inside the grid
        f0 = field[i, j, k] < threshold
        if (field[i + 1, j, k] < threshold) != f0 and j > 0 and k > 0:
            nquads += 1
        if (field[i, j + 1, k] < threshold) != f0 and i > 0 and k > 0:
            nquads += 1
        if (field[i, j, k + 1] < threshold) != f0 and i > 0 and j > 0:
            nquads += 1
    cell_info[cell] = signs | (keep << 8)
    counts[0, cell] = nverts
    counts[1, cell] = nquads


@kernel
def _sn_faces(field: array(dtype=float, ndim=3), threshold: float, groups: array(dtype=int),
              quad_cells: array(dtype=int, ndim=2), cell_info: array(dtype=int), first: array(dtype=int, ndim=2),
              corners_per_face: int, indices: array(dtype=int), vert_cell: array(dtype=int),
              vert_group: array(dtype=int)):
    i, j, k = sk.tid()
    ny = field.shape[1]
    nz = field.shape[2]
    cell = (i * (ny - 1) + j) * (nz - 1) + k
    info = cell_info[cell]
    if (info & 255) == 0 or (info & 255) == 255:
        return  # no sheet and no crossed edge
    keep = info >> 8
    v = first[0, cell]
    for g in range(4):
        if ((keep >> g) & 1) != 0:
            vert_cell[v] = cell
            vert_group[v] = g + 1
            v += 1
    q = first[1, cell]
    f0 = field[i, j, k] < threshold
    for axis in range(3):
        ei = i
        ej = j
        ek = k
        if axis == 0:
            ei = i + 1
        elif axis == 1:
            ej = j + 1
        else:
            ek = k + 1
        inner = True
        if axis != 0 and i == 0:
            inner = False
        if axis != 1 and j == 0:
            inner = False
        if axis != 2 and k == 0:
            inner = False
        if inner and (field[ei, ej, ek] < threshold) != f0:
            ids = T.vec4i(0, 0, 0, 0)
            for m in range(4):
                row = axis * 4 + m
                oi = i + quad_cells[row, 0]
                oj = j + quad_cells[row, 1]
                other = (oi * (ny - 1) + oj) * (nz - 1) + k + quad_cells[row, 2]
                other_info = cell_info[other]
                other_signs = other_info & 255
                g = groups[other_signs * 13 + 1 + quad_cells[row, 3]]
                ids[m] = first[0, other] + _group_rank(other_info >> 8, g)
            if f0 == (quad_cells[axis * 4, 4] != 0):  # reverse: (a, b, c, d) -> (d, c, b, a)
                ids = T.vec4i(ids[3], ids[2], ids[1], ids[0])
            if corners_per_face == 4:
                for m in range(4):
                    indices[4 * q + m] = ids[m]
            else:
                indices[6 * q + 0] = ids[0]
                indices[6 * q + 1] = ids[1]
                indices[6 * q + 2] = ids[2]
                indices[6 * q + 3] = ids[0]
                indices[6 * q + 4] = ids[2]
                indices[6 * q + 5] = ids[3]
            q += 1


@kernel
def _sn_verts(field: array(dtype=float, ndim=3), threshold: float, lower: T.vec3, delta: T.vec3,
              groups: array(dtype=int), edges: array(dtype=int, ndim=2), cell_info: array(dtype=int),
              vert_cell: array(dtype=int), vert_group: array(dtype=int), verts: array(dtype=T.vec3)):
    v = sk.tid()
    ny = field.shape[1]
    nz = field.shape[2]
    cell = vert_cell[v]
    group = vert_group[v]
    k = cell % (nz - 1)
    j = (cell // (nz - 1)) % (ny - 1)
    i = cell // ((nz - 1) * (ny - 1))
    signs = cell_info[cell] & 255
    total = T.vec3(0.0, 0.0, 0.0)
    count = float(0.0)
    for e in range(12):
        if groups[signs * 13 + 1 + e] == group:
            a = T.vec3(float(edges[e, 0]), float(edges[e, 1]), float(edges[e, 2]))
            b = T.vec3(float(edges[e, 3]), float(edges[e, 4]), float(edges[e, 5]))
            fa = field[i + edges[e, 0], j + edges[e, 1], k + edges[e, 2]]
            fb = field[i + edges[e, 3], j + edges[e, 4], k + edges[e, 5]]
            t = (threshold - fa) / (fb - fa)
            total = total + a + t * (b - a)
            count = count + 1.0
    local = T.vec3(float(i), float(j), float(k)) + total / count
    verts[v] = lower + sk.cw_mul(local, delta)


# ---------------------------------------------------------------------------

_TOPOLOGIES = {"triangle": 3, "quad": 4}


def _check_topology(topology, who: str) -> str:
    if not isinstance(topology, str) or topology not in _TOPOLOGIES:
        raise ValueError(f"{who}: topology must be 'triangle' or 'quad', got {topology!r}")
    return topology


def _extract(field: array, threshold: float, lower, delta, topology: str) -> tuple:
    """(verts, indices) of ``field == threshold``; ``field`` and ``topology`` already checked."""
    dev = field.device
    nx, ny, nz = field.shape
    ncells = (nx - 1) * (ny - 1) * (nz - 1)
    groups, ambiguous, faces, edges, quad_cells = _device_tables(dev)
    cell_info = empty(ncells, dtype=int, device=dev)
    counts = empty((2, ncells), dtype=int, device=dev)
    cells = (nx - 1, ny - 1, nz - 1)
    launch(_sn_classify, dim=cells, inputs=[field, threshold, groups, ambiguous, faces, edges],
           outputs=[cell_info, counts], device=dev, record_tape=False)
    first = empty((2, ncells), dtype=int, device=dev)  # (each cell's first vertex and quad: on the device)
    nverts = exclusive_scan(counts[0], first[0])
    nquads = exclusive_scan(counts[1], first[1])
    per_face = _TOPOLOGIES[topology]
    per_quad = 4 if per_face == 4 else 6
    verts = empty(nverts, dtype=T.vec3, device=dev, requires_grad=field.requires_grad)
    indices = empty(per_quad * nquads, dtype=int, device=dev)
    if nverts == 0:
        return verts, indices
    vert_cell = empty(nverts, dtype=int, device=dev)
    vert_group = empty(nverts, dtype=int, device=dev)
    launch(_sn_faces, dim=cells, inputs=[field, threshold, groups, quad_cells, cell_info, first, per_face],
           outputs=[indices, vert_cell, vert_group], device=dev, record_tape=False)
    launch(_sn_verts, dim=nverts, inputs=[field, threshold, lower, delta, groups, edges, cell_info, vert_cell,
                                          vert_group], outputs=[verts], device=dev)
    return verts, indices


class IsoSurfaceNets(IsoSurfaceBase):
    """Surface nets for fields of ``nx * ny * nz`` nodes (see the module docstring): one vertex per
    sheet of the surface in each cell it crosses, at the mean of the sheet's edge crossings, and one
    quad per crossed grid edge inside the grid.

    A level set inside the grid gives a closed mesh (every edge shared by two faces); one that leaves
    the grid gives an open mesh, which may stop short of the grid's border. Every vertex belongs to a
    face. Faces are wound counter-clockwise seen from the side where the field is >= threshold
    (outside, for a signed distance field). On a Tape, gradients flow from ``verts`` to ``field``;
    the cell classification and the connectivity are not differentiated.

    Arguments: ``nx``, ``ny``, ``nz`` (nodes per axis); keyword-only ``lower`` / ``upper``, the
    positions of nodes (0, 0, 0) and (nx - 1, ny - 1, nz - 1) (default: node (i, j, k) at (i, j, k));
    ``topology``: ``"triangle"`` (default: 3 indices a face) or ``"quad"`` (4 indices a face).
    Attributes: those arguments, and ``verts`` (array of vec3) / ``indices`` (flat array of int32),
    set by ``surface`` (None before).

    Example::

        iso = sk.geometry.IsoSurfaceNets(64, 64, 64, lower=(-1, -1, -1), upper=(1, 1, 1), topology="quad")
        verts, quads = iso.surface(field, 0.0)   # field: array3d of float32, shape (64, 64, 64)
        verts, tris = sk.geometry.IsoSurfaceNets.extract(field, 0.0)   # node (i, j, k) at (i, j, k)
    """

    def __init__(self, nx: int, ny: int, nz: int, *, lower=None, upper=None, topology: str = "triangle"):
        super().__init__(nx, ny, nz, lower=lower, upper=upper)
        self.topology = _check_topology(topology, "IsoSurfaceNets")

    def surface(self, field: array, threshold: float) -> tuple:
        """Extract the surface ``field == threshold`` (``field``: array3d of float32 of the instance's
        shape); returns, and stores as ``.verts`` / ``.indices``, the vertices (array of vec3) and the
        faces (flat array of int32, 3 or 4 per face as ``topology`` says)."""
        who = "IsoSurfaceNets.surface"
        self._check_field_shape(field)
        check_field(field, who)
        topology = _check_topology(self.topology, who)
        lower, delta = grid_bounds(field.shape, self.lower, self.upper, who)
        self.verts, self.indices = _extract(field, float(threshold), lower, delta, topology)
        return self.verts, self.indices

    @classmethod
    def extract(cls, field: array, threshold: float = 0.0, *, lower=None, upper=None,
                topology: str = "triangle") -> tuple:
        """(verts, indices) of the surface ``field == threshold``, on the field's device, without an
        instance: vertices as an array of vec3, faces as a flat array of int32 (3 indices a triangle,
        or 4 a quad with ``topology="quad"``; triangles split quad (a, b, c, d) into (a, b, c), (a, c, d))."""
        who = f"{cls.__name__}.extract"
        check_field(field, who)
        topology = _check_topology(topology, who)
        lo, delta = grid_bounds(field.shape, lower, upper, who)
        return _extract(field, float(threshold), lo, delta, topology)

    def __repr__(self):
        return f"IsoSurfaceNets({self.nx}, {self.ny}, {self.nz}, topology={self.topology!r})"
