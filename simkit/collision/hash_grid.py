"""HashGrid: bucket points into a wrapped uniform grid for fixed-radius neighbour queries (host side).

Example (the same kernel runs under ``import warp as wp``)::

    import simkit as wp

    @wp.kernel
    def count(grid: wp.uint64, points: wp.array(dtype=wp.vec3), r: float, out: wp.array(dtype=int)):
        i = wp.hash_grid_point_id(grid, wp.tid())  # visit points cell by cell
        p = points[i]
        n = int(0)
        query = wp.hash_grid_query(grid, p, r)
        index = int(0)
        while wp.hash_grid_query_next(query, index):
            if wp.length(points[index] - p) <= r:
                n += 1
        out[i] = n

    grid = wp.HashGrid(64, 64, 64, device="cpu")
    grid.build(points, r)  # cell width r: a query of radius r visits 3x3x3 cells
    wp.launch(count, dim=len(points), inputs=[grid.id, points, r, out])

Build, in kernels: the points' bounding box (a parallel reduction; a NaN coordinate counts as 0,
the cell it lands in), every point's cell, a stable sort of the point indices by cell (by cell,
then group, for a grid built with ``groups``), then the dense prefix sum of points per cell. The
table is compact when the box of cells the points occupy fits in the grid's dimensions (the usual
case: a rebuild costs O(points + box cells), not O(cells), and no two distant points share a
cell), else it wraps modulo the dimensions like Warp's. CPU: an LSD radix sort (a serial pass per
digit, digits as wide as log2(points); a compact table has few cell bits, so usually one pass;
grouped builds first sort by group in 8- or 16-bit digits). CUDA: a counting sort (atomic counts, a prefix sum over the
cells, a scatter, then each cell's indices put in order, so the result is deterministic).

Queries (native/hash_grid.h) walk the box of cells around the query sphere row by row: a row's
cells are consecutive in the table, so their points are one range of the sorted order, two loads
from the prefix sum. A grouped query (``hash_grid_query(id, p, r, group)``) walks cell by cell and
binary-searches its group's run in each (docs/spatial.md).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..kernels import kernel
from ..kernels.deterministic import DeterministicMode
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty, launch, zeros
from ..runtime import declare, handles
from ..runtime.device import get_device
from ..runtime.tape import active_tape
from . import builtins_hash_grid as hgb
from . import descriptor

MAX_CELLS = (1 << 31) - 1
_RADIX_MIN_BITS = 11  # the narrowest radix digit (a 2048-entry histogram stays in L1)

# Mirrors sk::hash_grid_t in native/hash_grid.h (72 bytes).
_DESC = np.dtype([("offsets", "<u8"), ("point_ids", "<u8"), ("dims", "<i4", (3,)), ("org", "<i4", (3,)),
                  ("wrapped", "<i4"), ("num_points", "<i4"), ("cell_width_inv", "<f8"),
                  ("cell_width_inv_f", "<f4"), ("cell_width", "<f4"), ("groups", "<u8")])
assert _DESC.itemsize == 72
_COORD_LIMIT = 1 << 30  # cell coordinates saturate here (hash_grid_coord)
_GROUP_BIAS = -(1 << 31)  # group ^ bias orders int32 groups as unsigned keys (for the radix sort)
_VEC = {T.float16: T.vec3h, T.float32: T.vec3, T.float64: T.vec3d}


class HashGridLimitError(ValueError, RuntimeError):
    """A HashGrid with more cells than it can index (a ValueError; also a RuntimeError, which Warp raises)."""


class HashGridDeviceError(TypeError, RuntimeError):
    """An array on another device than the HashGrid (a TypeError; also a RuntimeError, which Warp raises)."""

# ---------------------------------------------------------------------------
# Kernels. The radix path (CPU) and the counting path (CUDA) share _hg_bounds, _hg_cells and _hg_offsets.


@kernel
def _hg_bounds(points: array(dtype=T.Any), lows: array(dtype=T.Any), highs: array(dtype=T.Any), n: int,
               chunk: int, strided: int):
    # the bounds of block b's points: [b * chunk, (b + 1) * chunk), or b, b + blocks, ... when strided
    b = sk.tid()
    blocks = lows.shape[0]
    first = b * chunk
    step = 1
    if strided != 0:
        first = b
        step = blocks
    # a NaN coordinate counts as 0 (its point's cell is 0 along that axis)
    lo = points[first]
    for k in range(3):
        if sk.isnan(lo[k]):
            lo[k] = type(lo[k])(0.0)
    hi = lo
    i = first
    for j in range(chunk):
        if i < n:
            p = points[i]
            for k in range(3):
                if sk.isnan(p[k]):
                    p[k] = type(p[k])(0.0)
            lo = sk.min(lo, p)
            hi = sk.max(hi, p)
        i = i + step
    lows[b] = lo
    highs[b] = hi


@kernel
def _hg_cells(grid: T.uint64, points: array(dtype=T.Any), cells: array(dtype=int), ids: array(dtype=int)):
    i = sk.tid()
    cells[i] = sk.max(hgb.hash_grid_cell(grid, points[i]), 0)
    ids[i] = i


@kernel
def _hg_offsets(sorted_cells: array(dtype=int), offsets: array(dtype=int), n: int, cells: int):
    # radix path: the dense prefix sum; sorted position i starts every cell in (previous cell, its cell]
    i = sk.tid()
    c = sorted_cells[i]
    prev = int(-1)
    if i > 0:
        prev = sorted_cells[i - 1]
    for k in range(prev + 1, c + 1):
        offsets[k] = i
    if i == n - 1:
        for k in range(c + 1, cells + 1):
            offsets[k] = n


@kernel
def _hg_radix_pass(src_keys: array(dtype=int), src_vals: array(dtype=int), dst_keys: array(dtype=int),
                   dst_vals: array(dtype=int), hist: array(dtype=int), n: int, shift: int, mask: int):
    # radix path, dim=1: one stable counting-sort pass on the digit (key >> shift) & mask
    for b in range(mask + 1):
        hist[b] = 0
    for i in range(n):
        d = (src_keys[i] >> shift) & mask
        hist[d] = hist[d] + 1
    total = int(0)
    for b in range(mask + 1):
        c = hist[b]
        hist[b] = total
        total = total + c
    for i in range(n):
        k = src_keys[i]
        d = (k >> shift) & mask
        p = hist[d]
        hist[d] = p + 1
        dst_keys[p] = k
        dst_vals[p] = src_vals[i]


# (in deterministic mode too, on the whole GPU: the arrival order differs from run to run, but _hg_order_cells then
# sorts each cell's indices, so the build's output does not depend on it)
@kernel(module="unique", module_options={"deterministic": DeterministicMode.NOT_GUARANTEED})
def _hg_count(cells: array(dtype=int), counts: array(dtype=int), ranks: array(dtype=int)):
    # counting path: points per cell, and each point's arrival order in its cell
    i = sk.tid()
    ranks[i] = sk.atomic_add(counts, cells[i], 1)


@kernel
def _hg_block_sums(counts: array(dtype=int), block_sums: array(dtype=int), n: int, block: int):
    b = sk.tid()
    s = int(0)
    for j in range(b * block, sk.min(n, b * block + block)):
        s = s + counts[j]
    block_sums[b] = s


@kernel
def _hg_scan_serial(values: array(dtype=int), n: int):
    # dim=1: exclusive prefix sum in place
    total = int(0)
    for j in range(n):
        c = values[j]
        values[j] = total
        total = total + c


@kernel
def _hg_block_scan(counts: array(dtype=int), block_sums: array(dtype=int), offsets: array(dtype=int), n: int,
                   block: int):
    # offsets[j] = sum of counts[:j] for j in [0, n]
    b = sk.tid()
    s = block_sums[b]
    for j in range(b * block, sk.min(n + 1, b * block + block)):
        offsets[j] = s
        if j < n:
            s = s + counts[j]


@kernel
def _hg_scatter(cells: array(dtype=int), ranks: array(dtype=int), offsets: array(dtype=int),
                sorted_cells: array(dtype=int), sorted_ids: array(dtype=int)):
    i = sk.tid()
    c = cells[i]
    p = offsets[c] + ranks[i]
    sorted_cells[p] = c
    sorted_ids[p] = i


@kernel
def _hg_order_cells(cells: array(dtype=int), ranks: array(dtype=int), offsets: array(dtype=int),
                    sorted_ids: array(dtype=int)):
    # counting path: the first arrival in each cell insertion-sorts the cell's indices (deterministic output)
    i = sk.tid()
    if ranks[i] == 0:
        c = cells[i]
        lo = offsets[c]
        hi = offsets[c + 1]
        for a in range(lo + 1, hi):
            v = sorted_ids[a]
            b = a - 1
            while b >= lo and sorted_ids[b] > v:
                sorted_ids[b + 1] = sorted_ids[b]
                b = b - 1
            sorted_ids[b + 1] = v


@kernel
def _hg_order_cells_grouped(cells: array(dtype=int), ranks: array(dtype=int), offsets: array(dtype=int),
                            sorted_ids: array(dtype=int), groups: array(dtype=int)):
    # counting path, grouped grid: as _hg_order_cells, ordering each cell's indices by (group, index)
    i = sk.tid()
    if ranks[i] == 0:
        c = cells[i]
        lo = offsets[c]
        hi = offsets[c + 1]
        for a in range(lo + 1, hi):
            v = sorted_ids[a]
            gv = groups[v]
            b = a - 1
            while b >= lo and (groups[sorted_ids[b]] > gv or (groups[sorted_ids[b]] == gv and sorted_ids[b] > v)):
                sorted_ids[b + 1] = sorted_ids[b]
                b = b - 1
            sorted_ids[b + 1] = v


@kernel
def _hg_group_keys(groups: array(dtype=int), keys: array(dtype=int), ids: array(dtype=int), bias: int):
    # radix path, grouped grid: group keys that sort as unsigned ints in the groups' signed order
    i = sk.tid()
    keys[i] = groups[i] ^ bias
    ids[i] = i


@kernel
def _hg_gather(src: array(dtype=int), index: array(dtype=int), dst: array(dtype=int)):
    i = sk.tid()
    dst[i] = src[index[i]]


# ---------------------------------------------------------------------------


def _launch(k, dim, inputs, device):
    launch(k, dim=dim, inputs=inputs, device=device, record_tape=False)


class HashGrid:
    """A hash grid of ``dim_x * dim_y * dim_z`` cells on ``device``; ``id`` is passed to kernels.

    Cell coordinates wrap modulo the dimensions, so points may lie anywhere (a NaN coordinate
    counts as cell 0, an infinite one as the edge cell). Choose the cell width (``build``'s
    ``radius``) close to the query radius: a query visits every cell its sphere's bounding box
    touches (at most all cells, each once). ``dtype`` (float16, float32 or float64) is the
    precision of the points: vec3h, vec3 or vec3d (float16 cells are computed in float32).
    Built with ``groups``, ``hash_grid_query(id, p, r, group)`` visits the points of one group.
    """

    def __new__(cls, *args, **kwargs):
        self = super().__new__(cls)
        self.id = None  # until __init__ finishes
        return self

    def __init__(self, dim_x: int, dim_y: int, dim_z: int, device=None, dtype=None, *, _counting_sort=None):
        try:
            dims = tuple(operator.index(d) for d in (dim_x, dim_y, dim_z))
        except TypeError:
            raise TypeError(f"HashGrid dimensions must be integers, got ({dim_x!r}, {dim_y!r}, {dim_z!r})") from None
        if any(d <= 0 for d in dims):
            raise ValueError(f"HashGrid dimensions must be positive, got {dims}")
        num_cells = dims[0] * dims[1] * dims[2]
        if num_cells > MAX_CELLS:
            raise HashGridLimitError(f"HashGrid cell count exceeds supported limit: {dims[0]} * {dims[1]} * "
                                     f"{dims[2]} = {num_cells} > {MAX_CELLS} (2^31 - 1)")
        given = dtype
        try:
            dtype = T.float32 if dtype is None else T.normalize_dtype(dtype)
        except (TypeError, ValueError, KeyError):
            dtype = None
        if dtype not in _VEC:
            got = T.type_name(dtype) if dtype is not None else repr(given)
            raise TypeError(f"HashGrid dtype must be float16, float32 or float64, got {got}")
        self.dtype = dtype
        self.vec_type = _VEC[dtype]
        self.device = dev = get_device(device)
        self.dims = dims
        self.num_cells = num_cells
        self.num_points = 0
        self.capacity = 0
        self.reserved = False
        self.radius = 0.0
        # CUDA: counting sort (parallel). CPU: radix sort; the flag lets tests run either on the CPU.
        self._counting = dev.is_cuda if _counting_sort is None else bool(_counting_sort)
        self._desc = np.zeros(1, dtype=_DESC)
        self._desc["dims"] = dims
        self.table_dims = dims  # the cells of the last build's table (compact: the points' box)
        # cell c of the table holds sorted positions [offsets[c], offsets[c + 1]); every build writes
        # the entries of its table's cells (a compact table: only the cells of the points' box)
        self._offsets = empty(num_cells + 1, dtype=int, device=dev)
        self._desc["offsets"] = self._offsets.ptr
        if self._counting:
            self._counts = empty(num_cells, dtype=int, device=dev)
            self._block = max(256, math.isqrt(num_cells + 1))
            self._block_sums = empty(-(-(num_cells + 1) // self._block), dtype=int, device=dev)
        else:
            self._hist = empty(1 << _RADIX_MIN_BITS, dtype=int, device=dev)
        self._blocks = 64 if dev.is_cpu else 1024  # blocks of the bounds reduction
        self._lows = empty(self._blocks, dtype=self.vec_type, device=dev)
        self._highs = empty(self._blocks, dtype=self.vec_type, device=dev)
        if dev.is_cpu:
            self._desc_buf = None
            self.id = int(self._desc.ctypes.data)
        else:
            self._desc_buf = zeros(_DESC.itemsize // 8, dtype=T.uint64, device=dev)
            self.id = int(self._desc_buf.ptr)
        self._cells = self._ids = self._tmp_cells = self._tmp_ids = self._ranks = None
        self._group_keys = self._group_tmp = None  # grouped builds: sort keys, then the sorted groups
        self.groups = None  # the groups of the last build (None: built without groups)
        self._sync_desc()
        self._tape_state = self._previous = handles.EMPTY  # what the grid was last built from (see runtime/handles.py)
        handles.register(self, self.id)

    @property
    def dim_x(self) -> int:
        return self.dims[0]

    @property
    def dim_y(self) -> int:
        return self.dims[1]

    @property
    def dim_z(self) -> int:
        return self.dims[2]

    def __del__(self):
        # nothing to release by hand: the buffers are simkit arrays, freed with the grid (and a grid whose
        # __init__ never ran holds none); the handle registry holds grids weakly
        pass

    def reserve(self, num_points: int, with_groups: bool = False) -> None:
        """Allocate room for ``num_points`` points, so builds up to that size allocate nothing
        (``with_groups``: grouped builds too). Not while a graph is captured on the grid's device:
        reserve before capture (a build inside a CPU capture may still allocate what it needs)."""
        if descriptor.capturing(self.device):
            raise NotImplementedError(f"HashGrid.reserve cannot allocate while a graph is being captured on "
                                      f"{self.device}; reserve before capture")
        self._reserve(num_points, with_groups)

    def _reserve(self, num_points: int, with_groups: bool = False) -> None:
        num_points = operator.index(num_points)
        if num_points < 0:
            raise ValueError(f"reserve: num_points must not be negative, got {num_points}")
        dev = self.device
        if num_points > self.capacity:
            cap = max(num_points, 16)
            self._forget()  # the old buffers go: the grid is empty until the next build
            self._cells, self._ids, self._tmp_cells, self._tmp_ids = (empty(cap, dtype=int, device=dev)
                                                                      for _ in range(4))
            if self._counting:
                self._ranks = empty(cap, dtype=int, device=dev)
            if self._group_keys is not None:
                self._group_keys = self._group_tmp = None
                with_groups = True
            self.capacity = cap
        if with_groups and self._group_keys is None:
            self._forget()
            self._group_keys, self._group_tmp = (empty(self.capacity, dtype=int, device=dev) for _ in range(2))
        self.reserved = True

    def build(self, points: array, radius: float, groups: array | None = None) -> None:
        """Bucket ``points`` (an array of the grid's vec3h, vec3 or vec3d) into cells of width ``radius``.

        ``groups`` (optional): an int32 array with one group id per point (any int32 value); then
        ``hash_grid_query(id, p, r, group)`` visits only the points of ``group``, while a query without
        a group still visits every point. Group ids are read on the device at every build, so they may
        change between builds (and between replays of a captured build).

        Call again whenever the points move. Inside a ``Tape`` the build is recorded: ``backward()``
        rebuilds the grid from the previous build's points before it runs the adjoints of the launches
        that queried that earlier grid. Raises ValueError for a non-positive radius or groups of another
        length, TypeError for points or groups of another type, HashGridDeviceError (a TypeError) for
        arrays on another device.
        """
        if declare.active:  # (a solver's dry run, runtime/declare.py: the real step builds the grid)
            return
        self._build(points, radius, groups)
        tape = active_tape()
        if tape is not None and self._previous.sources:
            prev = self._previous
            groups = prev.sources[1] if len(prev.sources) > 1 else None  # (the sources: points[, groups])
            tape.record_func(lambda: self._build(prev.sources[0], prev.extra[0], groups), arrays=prev.sources)

    def _check(self, points, radius, groups):
        if not isinstance(points, array) or points.is_type:
            raise TypeError(f"HashGrid.build: points must be a simkit array of {T.type_name(self.vec_type)}, "
                            f"got {type(points).__name__}")
        if points.dtype is not self.vec_type:
            raise TypeError(f"HashGrid.build: points must be an array of {T.type_name(self.vec_type)} (grid dtype "
                            f"{T.type_name(self.dtype)}), got an array of {T.type_name(points.dtype)}")
        if points.device != self.device:
            raise HashGridDeviceError(f"HashGrid.build: points must live on the same device as the grid: points "
                                      f"on {points.device}, grid on {self.device}")
        try:
            radius = float(radius)
        except (TypeError, ValueError):
            raise TypeError(f"HashGrid.build: radius must be a number, got {radius!r}") from None
        if not (radius > 0.0 and math.isfinite(radius)):
            raise ValueError(f"HashGrid.build: radius (the cell width) must be positive and finite, got {radius}")
        if groups is not None:
            if not isinstance(groups, array) or groups.is_type or groups.dtype is not T.int32:
                got = T.type_name(groups.dtype) if isinstance(groups, array) else type(groups).__name__
                raise TypeError(f"HashGrid.build: groups must be an array of int32 (one group id per point), "
                                f"got {got}")
            if groups.device != self.device:
                raise HashGridDeviceError(f"HashGrid.build: groups must live on the same device as the grid: "
                                          f"groups on {groups.device}, grid on {self.device}")
            if groups.size != points.size:
                raise ValueError(f"HashGrid.build: groups must have one entry per point: {groups.size} groups, "
                                 f"{points.size} points")
        return radius

    def _build(self, points: array, radius: float, groups: array | None = None) -> None:
        radius = self._check(points, radius, groups)
        source, group_source = points, groups
        if points.ndim != 1:
            points = points.contiguous().flatten()
        if groups is not None and groups.ndim != 1:
            groups = groups.contiguous().flatten()
        n = points.shape[0]
        self._reserve(n, with_groups=groups is not None)
        dev = self.device
        capturing = descriptor.capturing(dev)
        if not capturing:
            self._forget()
        inv_f = np.float32(1.0) / np.float32(radius)
        self._desc["cell_width"] = radius
        self._desc["cell_width_inv"] = 1.0 / radius
        self._desc["cell_width_inv_f"] = inv_f
        self._desc["groups"] = 0
        if n:
            # inside a graph capture nothing is read back: no compact table over the points' box
            bounds = None if capturing else self._bounds(points, n)
            self._set_table(bounds, 1.0 / radius if self.dtype is T.float64 else inv_f)
            _launch(_hg_cells, n, [self.id, points, self._cells, self._ids], dev)
            if groups is None:
                cells, ids = self._counting_sort(n) if self._counting else self._radix_sort(n)
            else:
                ids = self._grouped_sort(n, groups)
            self._desc["point_ids"] = ids.ptr
        self.num_points = n
        self._desc["num_points"] = n
        self.radius = radius
        self.groups = groups
        self._sync_desc()
        self.reserved = True
        self._previous, self._tape_state = self._tape_state, handles.state_of([source, group_source], radius)

    # ------------------------------------------------------------------ internals

    def _forget(self):
        """Empty the grid (until the build under way finishes)."""
        self.num_points = 0
        self._desc["num_points"] = 0
        self._sync_desc()

    def _bounds(self, points: array, n: int):
        """The points' bounding box (float64 or float32 numpy vectors; a NaN coordinate counts as 0).
        Each block reduces a contiguous chunk, or (the GPU path, and the CPU's tests of it) every
        blocks-th point, so that neighbouring threads read neighbouring points."""
        chunk = -(-n // self._blocks)
        blocks = -(-n // chunk)  # every block holds a point
        _launch(_hg_bounds, blocks, [points, self._lows[:blocks], self._highs[:blocks], n, chunk,
                                     int(self._counting)], self.device)
        lows, highs = self._lows.numpy()[:blocks], self._highs.numpy()[:blocks]
        if self.dtype is T.float16:  # float16 cells are computed in float32
            lows, highs = lows.astype(np.float32), highs.astype(np.float32)
        return lows.min(axis=0), highs.max(axis=0)

    def _set_table(self, bounds, inv) -> None:
        """A compact table over the cells of the points' box when it fits in the grid's dimensions,
        else the wrapped table of all cells. Cells are computed as the kernels do (same precision), so
        the box is exact."""
        fits = False
        if bounds is not None:  # (None: inside a graph capture, the box is unknown)
            with np.errstate(over="ignore", invalid="ignore"):
                lo, hi = ((np.floor(np.asarray(b) * inv)).astype(np.float64) for b in bounds)
            lo = np.clip(lo, -_COORD_LIMIT, _COORD_LIMIT).astype(np.int64)
            hi = np.clip(hi, -_COORD_LIMIT, _COORD_LIMIT).astype(np.int64)
            extent = hi - lo + 1
            fits = all(int(e) <= d for e, d in zip(extent, self.dims))
        if fits:
            self.table_dims = tuple(int(e) for e in extent)
            self._desc["org"] = lo
            self._desc["wrapped"] = 0
        else:
            self.table_dims = self.dims
            self._desc["org"] = 0
            self._desc["wrapped"] = 1
        self._desc["dims"] = self.table_dims
        self._sync_desc()

    def _sync_desc(self):
        if self._desc_buf is not None:
            descriptor.write(self._desc_buf, self._desc.tobytes())

    def _radix_sort(self, n: int, keys=None, vals=None):
        """Stable LSD radix sort of (cell, index) by cell, digits of ~log2(n) bits; then cell ranges.
        ``keys, vals``: the (cells, indices) to sort, else the build's own (``_cells``, ``_ids``)."""
        table_cells = math.prod(self.table_dims)
        bits = max(1, (table_cells - 1).bit_length())
        passes = -(-bits // max(_RADIX_MIN_BITS, n.bit_length() - 1))
        if keys is None:
            keys, vals, tkeys, tvals = self._cells, self._ids, self._tmp_cells, self._tmp_ids
        else:  # the grouped sort's (cells, ids) in group order: sort into the other two buffers
            tkeys = self._cells if keys is self._tmp_cells else self._tmp_cells
            tvals = self._ids if vals is self._tmp_ids else self._tmp_ids
        cells, ids = self._radix_passes(keys, vals, tkeys, tvals, n, bits, -(-bits // passes))
        _launch(_hg_offsets, n, [cells, self._offsets, n, table_cells], self.device)
        return cells, ids

    def _radix_passes(self, keys, vals, tkeys, tvals, n: int, bits: int, width: int):
        """Stable counting-sort passes of ``width`` bits over the low ``bits`` bits of ``keys`` (moving
        ``vals`` along), ping-ponging with (tkeys, tvals); returns the sorted pair."""
        if self._hist.shape[0] < (1 << width):
            self._hist = empty(1 << width, dtype=int, device=self.device)
        src, dst = (keys, vals), (tkeys, tvals)
        for p in range(-(-bits // width)):
            _launch(_hg_radix_pass, 1, [*src, *dst, self._hist, n, p * width, (1 << width) - 1], self.device)
            src, dst = dst, src
        return src

    def _grouped_sort(self, n: int, groups: array):
        """Sort the point indices by (cell, group, index), and the groups along them (the descriptor's
        ``groups``, which grouped queries binary-search within each cell). Returns the sorted indices."""
        dev = self.device
        if self._counting:
            _, ids = self._counting_sort(n, groups)
        else:
            # by group first (32-bit keys: digits of 8 or 16 bits, which the arithmetic >> keeps exact), then
            # stably by cell
            _launch(_hg_group_keys, n, [groups, self._group_keys, self._tmp_ids, _GROUP_BIAS], dev)
            width = 16 if n >= (1 << 16) else 8
            _, gids = self._radix_passes(self._group_keys, self._tmp_ids, self._group_tmp, self._ids, n, 32, width)
            keys = self._tmp_cells
            _launch(_hg_gather, n, [self._cells, gids, keys], dev)  # the cells in group order
            _, ids = self._radix_sort(n, keys, gids)
        _launch(_hg_gather, n, [groups, ids, self._group_keys], dev)
        self._desc["groups"] = self._group_keys.ptr
        return ids

    def _counting_sort(self, n: int, groups: array | None = None):
        """Counting sort by cell: atomic counts, a prefix sum over the cells, a scatter, then each
        cell's indices put in order (by group, then index, for a grouped build): deterministic output."""
        dev = self.device
        c = math.prod(self.table_dims)
        counts = self._counts[:c]
        counts.zero_()
        _launch(_hg_count, n, [self._cells, counts, self._ranks], dev)
        nblocks = -(-(c + 1) // self._block)
        _launch(_hg_block_sums, nblocks, [self._counts, self._block_sums, c, self._block], dev)
        _launch(_hg_scan_serial, 1, [self._block_sums, nblocks], dev)
        _launch(_hg_block_scan, nblocks, [self._counts, self._block_sums, self._offsets, c, self._block], dev)
        _launch(_hg_scatter, n, [self._cells, self._ranks, self._offsets, self._tmp_cells, self._tmp_ids], dev)
        if groups is None:
            _launch(_hg_order_cells, n, [self._cells, self._ranks, self._offsets, self._tmp_ids], dev)
        else:
            _launch(_hg_order_cells_grouped, n, [self._cells, self._ranks, self._offsets, self._tmp_ids, groups], dev)
        return self._tmp_cells, self._tmp_ids

    def __repr__(self):
        return (f"HashGrid(dims={self.dims}, device={self.device.alias}, points={self.num_points}, "
                f"cell_width={self.radius}, table={'wrapped' if self._desc['wrapped'][0] else 'compact'})")
