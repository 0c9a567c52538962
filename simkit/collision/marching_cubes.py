"""IsoSurfaceMarchingCubes (``simkit.geometry``; ``simkit.MarchingCubes`` is the same class): triangle
mesh of an iso-surface of a 3D scalar field, in kernels (CPU and CUDA).

Example::

    mc = sk.MarchingCubes(nx, ny, nz, device="cpu")
    verts, indices = mc.surface(field, 0.0)  # field: array3d of float, shape (nx, ny, nz)
    # verts: array of vec3 (grid-index coordinates unless lower/upper are given)
    # indices: array of int32, 3 per triangle; triangle normals point towards values >= threshold
    verts, indices = sk.geometry.IsoSurfaceMarchingCubes.extract(field, 0.0)  # the same, without an instance

The output is watertight for a closed level set: every vertex lives on a grid edge and is
shared by all cells around that edge. The triangle table is derived here rather than copied
from a published one: on each cube face the crossing points are joined by segments (on a
face with two diagonal inside corners, each inside corner is cut off), every crossing is
then the end of exactly two segments (one per face around its edge), so the segments close
into loops, and each loop is triangulated without a diagonal between two crossings of one
face (the neighbouring cell could draw the same diagonal). Neighbouring cells see the same
face values and so make the same choices: no cracks, no edge shared by more than two
triangles. The table (820 triangles over the 256 cases) is built once, at first use.

Kernels, one thread per grid row (i, j) looping over k: (1) count the row's vertices and
triangles and store each cell's case, (2) a prefix sum over rows gives each row's first
vertex and triangle, (3) write the vertices (and each edge's vertex id), (4) write the
triangles. Vertex positions are differentiable with respect to the field (linear
interpolation along the edge), through a Tape.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty, launch
from ..runtime.device import get_device
from .iso_surface import IsoSurfaceBase, check_field, deprecated, grid_bounds

# ---------------------------------------------------------------------------
# Case tables (derived, see the module docstring)

# Numbering as in Warp (and most marching cubes tables): corners 0-3 go round the k = 0 face, 4-7 round
# the k = 1 face; corner c is bit c of a cell's case. Edges 0-3 and 4-7 follow those faces, 8-11 join them.
# Each edge runs from its lower corner to its higher one.
CORNERS = ((0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1))
EDGES = ((0, 1), (1, 2), (3, 2), (0, 3), (4, 5), (5, 6), (7, 6), (4, 7), (0, 4), (1, 5), (2, 6), (3, 7))
_EDGE_ID = {frozenset(e): i for i, e in enumerate(EDGES)}


def _faces():
    """(outward normal, 4 corners in cyclic order) of the 6 cube faces."""
    out = []
    for axis in range(3):
        u, v = [a for a in range(3) if a != axis]
        for side in (0, 1):
            quad = []
            for du, dv in ((0, 0), (1, 0), (1, 1), (0, 1)):
                pos = [0, 0, 0]
                pos[axis], pos[u], pos[v] = side, du, dv
                quad.append(CORNERS.index(tuple(pos)))
            normal = np.zeros(3)
            normal[axis] = 1.0 if side else -1.0
            out.append((normal, quad))
    return out


def _edge_index(a: int, b: int) -> int:
    return _EDGE_ID[frozenset((a, b))]


def _case_triangles(case: int, faces) -> list:
    """Triangles (as edge-index triples) of one case, normals towards the corners set in ``case``."""
    inside = [(case >> c) & 1 for c in range(8)]
    corner_pos = [np.array(p, dtype=float) for p in CORNERS]
    mid = [(corner_pos[a] + corner_pos[b]) / 2 for a, b in EDGES]
    nxt = {}
    for normal, quad in faces:
        cut = [m for m in range(4) if inside[quad[m]] != inside[quad[(m + 1) % 4]]]  # edge m: quad[m]-quad[m+1]
        if not cut:
            continue
        if len(cut) == 2:
            segs = [(cut[0], cut[1], next(quad[m] for m in range(4) if inside[quad[m]]))]
        else:  # two diagonal inside corners: cut each one off
            segs = [((m - 1) % 4, m, quad[m]) for m in range(4) if inside[quad[m]]]
        for m1, m2, corner in segs:
            e1 = _edge_index(quad[m1], quad[(m1 + 1) % 4])
            e2 = _edge_index(quad[m2], quad[(m2 + 1) % 4])
            a, b = mid[e1], mid[e2]
            # orient A -> B so that the inside corner is on the left, seen from outside the cube
            if np.dot(np.cross(normal, b - a), corner_pos[corner] - a) < 0:
                e1, e2 = e2, e1
            assert e1 not in nxt
            nxt[e1] = e2
    tris = []
    while nxt:
        start = min(nxt)
        loop = [start]
        e = nxt.pop(start)
        while e != start:
            loop.append(e)
            e = nxt.pop(e)
        tris += _triangulate(loop, faces)
    return tris


def _triangulate(loop: list, faces) -> list:
    """Triangles of a closed loop of edge crossings, in loop order. No diagonal joins two crossings of
    one cube face: the neighbouring cell could draw the same diagonal, and that edge would then
    have four triangles (two faces of a cube share at most one edge, so such pairs are rare)."""
    on_face = [{f for f, (_, quad) in enumerate(faces) if EDGES[e][0] in quad and EDGES[e][1] in quad} for e in loop]
    m = len(loop)

    def ok(a, b):
        return b - a == 1 or (a, b) == (0, m - 1) or not (on_face[a] & on_face[b])

    def solve(i, j):  # triangles of loop[i..j], given the chord (i, j); None if impossible
        if j - i < 2:
            return []
        for k in range(i + 1, j):
            if ok(i, k) and ok(k, j):
                left, right = solve(i, k), solve(k, j)
                if left is not None and right is not None:
                    return left + [(loop[i], loop[k], loop[j])] + right
        return None

    out = solve(0, m - 1)
    assert out is not None, f"no valid triangulation of loop {loop}"
    return out


def case_tables():
    """(tri_start[257], tri_edges[3 * ntris], edge_info[12, 4]): the triangles of case c are
    tri_edges[3 * tri_start[c] : 3 * tri_start[c + 1]]; edge e starts at corner offset
    edge_info[e, :3] and runs along axis edge_info[e, 3]."""
    faces = _faces()
    start, edges = [0], []
    for case in range(256):
        tris = _case_triangles(case, faces)
        edges += [e for t in tris for e in t]
        start.append(start[-1] + len(tris))
    info = [CORNERS[a] + (next(d for d in range(3) if CORNERS[b][d] != CORNERS[a][d]),) for a, b in EDGES]
    return (np.array(start, dtype=np.int32), np.array(edges, dtype=np.int32), np.array(info, dtype=np.int32))


# ---------------------------------------------------------------------------
# Kernels: one thread per row (i, j) of grid nodes


@kernel
def _mc_count(field: array(dtype=float, ndim=3), threshold: float, tri_start: array(dtype=int),
              codes: array(dtype=T.uint8, ndim=3), row_verts: array(dtype=int), row_tris: array(dtype=int)):
    i, j = sk.tid()
    nx = field.shape[0]
    ny = field.shape[1]
    nz = field.shape[2]
    nv = int(0)
    nt = int(0)
    xin = i + 1 < nx
    yin = j + 1 < ny
    # the 4 corners of the current cell's k face, as bits 0..3 of the case code
    low = int(0)
    if field[i, j, 0] >= threshold:
        low = low | 1
    if xin:
        if field[i + 1, j, 0] >= threshold:
            low = low | 2
    if yin:
        if field[i, j + 1, 0] >= threshold:
            low = low | 8
        if xin:
            if field[i + 1, j + 1, 0] >= threshold:
                low = low | 4
    for k in range(nz):
        if xin and ((low ^ (low >> 1)) & 1) != 0:
            nv += 1
        if yin and ((low ^ (low >> 3)) & 1) != 0:
            nv += 1
        if k + 1 < nz:
            high = int(0)
            if field[i, j, k + 1] >= threshold:
                high = high | 1
            if xin:
                if field[i + 1, j, k + 1] >= threshold:
                    high = high | 2
            if yin:
                if field[i, j + 1, k + 1] >= threshold:
                    high = high | 8
                if xin:
                    if field[i + 1, j + 1, k + 1] >= threshold:
                        high = high | 4
            if ((low ^ high) & 1) != 0:
                nv += 1
            if xin and yin:
                code = low | (high << 4)
                codes[i, j, k] = T.uint8(code)
                nt += tri_start[code + 1] - tri_start[code]
            low = high
    row_verts[i * ny + j] = nv
    row_tris[i * ny + j] = nt


@kernel
def _mc_verts(field: array(dtype=float, ndim=3), threshold: float, lower: T.vec3, delta: T.vec3,
              row_first: array(dtype=int), verts: array(dtype=T.vec3), edge_vert: array(dtype=int, ndim=4)):
    i, j = sk.tid()
    nx = field.shape[0]
    ny = field.shape[1]
    nz = field.shape[2]
    v = row_first[i * ny + j]
    for k in range(nz):
        f0 = field[i, j, k]
        p0 = lower + sk.cw_mul(T.vec3(float(i), float(j), float(k)), delta)
        for axis in range(3):
            i1 = i
            j1 = j
            k1 = k
            if axis == 0:
                i1 = i + 1
            elif axis == 1:
                j1 = j + 1
            else:
                k1 = k + 1
            if i1 < nx and j1 < ny and k1 < nz:
                f1 = field[i1, j1, k1]
                if (f0 >= threshold) != (f1 >= threshold):
                    t = sk.clamp((threshold - f0) / (f1 - f0), 0.0, 1.0)
                    p1 = lower + sk.cw_mul(T.vec3(float(i1), float(j1), float(k1)), delta)
                    verts[v] = p0 + t * (p1 - p0)
                    edge_vert[i, j, k, axis] = v
                    v += 1


@kernel
def _mc_tris(codes: array(dtype=T.uint8, ndim=3), tri_start: array(dtype=int), tri_edges: array(dtype=int),
             edge_info: array(dtype=int, ndim=2), edge_vert: array(dtype=int, ndim=4), row_first: array(dtype=int),
             indices: array(dtype=int)):
    i, j = sk.tid()
    ny = edge_vert.shape[1]
    if i + 1 >= edge_vert.shape[0] or j + 1 >= ny:
        return
    t = row_first[i * ny + j]
    for k in range(codes.shape[2]):
        code = int(codes[i, j, k])
        for e in range(3 * tri_start[code], 3 * tri_start[code + 1]):
            edge = tri_edges[e]
            indices[3 * t + e - 3 * tri_start[code]] = edge_vert[i + edge_info[edge, 0], j + edge_info[edge, 1],
                                                                 k + edge_info[edge, 2], edge_info[edge, 3]]
        t += tri_start[code + 1] - tri_start[code]


# ---------------------------------------------------------------------------

_tables: dict = {}


def _device_tables(device):
    if "np" not in _tables:
        _tables["np"] = case_tables()
    if device.alias not in _tables:
        start, edges, info = _tables["np"]
        _tables[device.alias] = (array(start, dtype=int, device=device), array(edges, dtype=int, device=device),
                                 array(info, dtype=int, device=device))
    return _tables[device.alias]


def _scratch(device, shape: tuple) -> tuple:
    nx, ny, nz = shape
    return (empty((nx - 1, ny - 1, nz - 1), dtype=T.uint8, device=device), empty(nx * ny, dtype=int, device=device),
            empty(nx * ny, dtype=int, device=device), empty((nx, ny, nz, 3), dtype=int, device=device))


def _extract(field: array, threshold: float, lower, delta, scratch: tuple) -> tuple:
    """(verts, indices) of ``field == threshold``; ``field`` already checked, ``scratch`` from ``_scratch``."""
    dev = field.device
    nx, ny, nz = field.shape
    tri_start, tri_edges, edge_info = _device_tables(dev)
    codes, row_verts, row_tris, edge_vert = scratch
    launch(_mc_count, dim=(nx, ny), inputs=[field, threshold, tri_start, codes, row_verts, row_tris],
           device=dev, record_tape=False)
    counts = np.stack([row_verts.numpy(), row_tris.numpy()])
    first = np.zeros_like(counts)
    np.cumsum(counts[:, :-1], axis=1, out=first[:, 1:])
    nverts, ntris = (int(x) for x in first[:, -1] + counts[:, -1])
    # fresh arrays: a Tape that recorded an earlier call's vertex launch still reads its own
    vert_first, tri_first = array(first[0], dtype=int, device=dev), array(first[1], dtype=int, device=dev)
    verts = empty(nverts, dtype=T.vec3, device=dev, requires_grad=field.requires_grad)
    indices = empty(3 * ntris, dtype=int, device=dev)
    if nverts:
        launch(_mc_verts, dim=(nx, ny), inputs=[field, threshold, lower, delta, vert_first],
               outputs=[verts, edge_vert], device=dev)
    if ntris:
        launch(_mc_tris, dim=(nx, ny), inputs=[codes, tri_start, tri_edges, edge_info, edge_vert, tri_first],
               outputs=[indices], device=dev, record_tape=False)
    return verts, indices


class _DerivedTable:
    """A case table as a class attribute: a tuple of ints, derived from ``case_tables()`` at first access."""

    def __init__(self, index: int, scale: int):
        self.index, self.scale = index, scale

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None) -> tuple:
        key = "public", self.name
        if key not in _tables:
            if "np" not in _tables:
                _tables["np"] = case_tables()
            _tables[key] = tuple(int(x) * self.scale for x in _tables["np"][self.index])
        return _tables[key]


class _Unset:
    def __repr__(self):
        return "None"


_UNSET = _Unset()  # a deprecated argument's default: tells "not given" from None


def _is_count(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _legacy_bound(value, legacy, name: str, legacy_name: str):
    if legacy is _UNSET:
        return value
    if value is not None and legacy is not None:
        raise TypeError(f"IsoSurfaceMarchingCubes: Cannot specify both `{name}` and `{legacy_name}`")
    deprecated(f"IsoSurfaceMarchingCubes() argument `{legacy_name}` is deprecated. Use `{name}` instead.", 3)
    return value if legacy is None else legacy


class IsoSurfaceMarchingCubes(IsoSurfaceBase):
    """Marching cubes for fields of ``nx * ny * nz`` nodes (``simkit.MarchingCubes`` is the same class).

    ``surface(field, threshold)`` extracts into ``.verts`` / ``.indices`` and also returns them;
    ``IsoSurfaceMarchingCubes.extract(field, threshold, lower=..., upper=...)`` needs no instance.
    ``lower`` / ``upper``: positions of nodes (0, 0, 0) and (nx - 1, ny - 1, nz - 1) (default: node
    (i, j, k) at (i, j, k)). ``device``: the device fields must be on (default: any; outputs go to the
    field's device). Outputs are sized exactly, so Warp's ``max_verts`` / ``max_tris`` are accepted
    and ignored, also as the 4th and 5th positional arguments of Warp <= 1.18's ``MarchingCubes`` (two
    integers in the places of ``lower`` and ``upper``).
    ``domain_bounds_lower_corner`` / ``_upper_corner`` are deprecated names of ``lower`` / ``upper``.

    The case tables, for kernels of your own: corner ``c`` of a cell (bit ``c`` of its case, set when
    the field is >= threshold there) is at offset ``CUBE_CORNER_OFFSETS[c]``; edge ``e`` joins corners
    ``EDGE_TO_CORNERS[e]``; the triangles of case ``c`` are the edge triples
    ``TRI_LOCAL_INDICES[CASE_TO_TRI_RANGE[c]:CASE_TO_TRI_RANGE[c + 1]]``, wound counter-clockwise seen
    from the corners set in ``c``.

    Example::

        iso = sk.geometry.IsoSurfaceMarchingCubes(64, 64, 64, lower=(-1, -1, -1), upper=(1, 1, 1))
        verts, indices = iso.surface(field, 0.0)   # field: array3d of float32, shape (64, 64, 64)
        verts, indices = sk.geometry.IsoSurfaceMarchingCubes.extract(field, 0.0)   # node (i, j, k) at (i, j, k)
    """

    CUBE_CORNER_OFFSETS = CORNERS
    EDGE_TO_CORNERS = EDGES
    CASE_TO_TRI_RANGE = _DerivedTable(0, 3)
    TRI_LOCAL_INDICES = _DerivedTable(1, 1)

    def __init__(self, nx: int, ny: int, nz: int, lower=None, upper=None, device=None, *, max_verts=None,
                 max_tris=None, domain_bounds_lower_corner=_UNSET, domain_bounds_upper_corner=_UNSET):
        if _is_count(lower) and _is_count(upper):  # Warp <= 1.18: MarchingCubes(nx, ny, nz, max_verts, max_tris)
            max_verts, max_tris, lower, upper = lower, upper, None, None
        lower = _legacy_bound(lower, domain_bounds_lower_corner, "lower", "domain_bounds_lower_corner")
        upper = _legacy_bound(upper, domain_bounds_upper_corner, "upper", "domain_bounds_upper_corner")
        super().__init__(nx, ny, nz, lower=lower, upper=upper)
        self.max_verts, self.max_tris = max_verts, max_tris
        self.device = None if device is None else get_device(device)
        self._scratch = None

    def resize(self, nx: int, ny: int, nz: int, max_verts=None, max_tris=None) -> None:
        """Use the instance for fields of ``nx * ny * nz`` nodes (``max_verts`` / ``max_tris`` ignored)."""
        super().resize(nx, ny, nz)
        self.max_verts, self.max_tris = max_verts, max_tris
        self._scratch = None

    def surface(self, field: array, threshold: float) -> tuple:
        """Extract the surface ``field == threshold``; returns (and stores as ``.verts`` /
        ``.indices``) the vertices (array of vec3) and the triangle indices (array of int32, 3 per
        triangle, normals towards values >= threshold)."""
        who = "IsoSurfaceMarchingCubes.surface"
        self._check_field_shape(field)
        check_field(field, who)
        if self.device is not None and field.device != self.device:
            raise TypeError(f"{who}: field is on {field.device}, the IsoSurfaceMarchingCubes is on {self.device}")
        lower, delta = grid_bounds(field.shape, self.lower, self.upper, who)
        key = (field.device.alias, field.shape)
        if self._scratch is None or self._scratch[0] != key:
            self._scratch = (key, _scratch(field.device, field.shape))
        self.verts, self.indices = _extract(field, float(threshold), lower, delta, self._scratch[1])
        return self.verts, self.indices

    @classmethod
    def extract(cls, field: array, threshold: float = 0.0, *, lower=None, upper=None) -> tuple:
        """(verts, indices) of the surface ``field == threshold``, on the field's device, without an
        instance: vertices as an array of vec3, triangles as a flat array of int32 (3 per triangle)."""
        who = f"{cls.__name__}.extract"
        check_field(field, who)
        lo, delta = grid_bounds(field.shape, lower, upper, who)
        return _extract(field, float(threshold), lo, delta, _scratch(field.device, field.shape))

    @staticmethod
    def extract_surface_marching_cubes(field: array, threshold: float = 0.0, domain_bounds_lower_corner=None,
                                       domain_bounds_upper_corner=None) -> tuple:
        """Deprecated name of ``extract`` (Warp compatibility)."""
        deprecated("IsoSurfaceMarchingCubes.extract_surface_marching_cubes() is deprecated. "
                   "Use IsoSurfaceMarchingCubes.extract() instead.")
        return IsoSurfaceMarchingCubes.extract(field, threshold, lower=domain_bounds_lower_corner,
                                               upper=domain_bounds_upper_corner)

    @property
    def domain_bounds_lower_corner(self):
        """Deprecated name of ``lower``."""
        deprecated("IsoSurfaceMarchingCubes.domain_bounds_lower_corner is deprecated. Use `lower` instead.")
        return self.lower

    @domain_bounds_lower_corner.setter
    def domain_bounds_lower_corner(self, value):
        deprecated("IsoSurfaceMarchingCubes.domain_bounds_lower_corner is deprecated. Use `lower` instead.")
        self.lower = value

    @property
    def domain_bounds_upper_corner(self):
        """Deprecated name of ``upper``."""
        deprecated("IsoSurfaceMarchingCubes.domain_bounds_upper_corner is deprecated. Use `upper` instead.")
        return self.upper

    @domain_bounds_upper_corner.setter
    def domain_bounds_upper_corner(self, value):
        deprecated("IsoSurfaceMarchingCubes.domain_bounds_upper_corner is deprecated. Use `upper` instead.")
        self.upper = value

    def __repr__(self):
        device = "" if self.device is None else f", device={self.device.alias}"
        return f"IsoSurfaceMarchingCubes({self.nx}, {self.ny}, {self.nz}{device})"


#: The name simkit's core language uses (LANGUAGE.md), and Warp <= 1.18's; the same class, without a warning.
MarchingCubes = IsoSurfaceMarchingCubes
