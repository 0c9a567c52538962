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

Build, in kernels: the points' bounding box (a parallel reduction, which also finds points that
are not finite), every point's cell, a stable sort of the point indices by cell, then the dense
prefix sum of points per cell. The table is compact when the box of cells the points occupy fits
in the grid's dimensions (the usual case: a rebuild costs O(points + box cells), not O(cells),
and no two distant points share a cell), else it wraps modulo the dimensions like Warp's. CPU: an
LSD radix sort (a serial pass per digit, digits as wide as log2(points); a compact table has few
cell bits, so usually one pass). CUDA: a counting sort (atomic counts, a prefix sum over the
cells, a scatter, then each cell's indices put in order, so the result is deterministic).

Queries (native/hash_grid.h) walk the box of cells around the query sphere row by row: a row's
cells are consecutive in the table, so their points are one range of the sorted order, two loads
from the prefix sum.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty, launch, zeros
from ..runtime import handles
from ..runtime.device import get_device
from ..runtime.tape import active_tape
from . import builtins_hash_grid as hgb
from . import descriptor

MAX_CELLS = (1 << 31) - 1
_RADIX_MIN_BITS = 11  # the narrowest radix digit (a 2048-entry histogram stays in L1)

# Mirrors sk::hash_grid_t in native/hash_grid.h (64 bytes).
_DESC = np.dtype([("offsets", "<u8"), ("point_ids", "<u8"), ("dims", "<i4", (3,)), ("org", "<i4", (3,)),
                  ("wrapped", "<i4"), ("num_points", "<i4"), ("cell_width_inv", "<f8"),
                  ("cell_width_inv_f", "<f4"), ("cell_width", "<f4")])
assert _DESC.itemsize == 64
_COORD_LIMIT = 1 << 30  # cell coordinates saturate here (hash_grid_coord)

# ---------------------------------------------------------------------------
# Kernels. The radix path (CPU) and the counting path (CUDA) share _hg_bounds, _hg_cells and _hg_offsets.


@kernel
def _hg_bounds(points: array(dtype=T.Any), lows: array(dtype=T.Any), highs: array(dtype=T.Any),
               bad: array(dtype=int), n: int, chunk: int, strided: int):
    # the bounds of block b's points: [b * chunk, (b + 1) * chunk), or b, b + blocks, ... when strided
    b = sk.tid()
    blocks = lows.shape[0]
    first = b * chunk
    step = 1
    if strided != 0:
        first = b
        step = blocks
    lo = points[first]
    hi = lo
    i = first
    for j in range(chunk):
        if i < n:
            p = points[i]
            if not (sk.isfinite(p[0]) and sk.isfinite(p[1]) and sk.isfinite(p[2])):
                sk.atomic_min(bad, 0, i)  # the first point that is not finite
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


@kernel
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


# ---------------------------------------------------------------------------


def _launch(k, dim, inputs, device):
    launch(k, dim=dim, inputs=inputs, device=device, record_tape=False)


class HashGrid:
    """A hash grid of ``dim_x * dim_y * dim_z`` cells on ``device``; ``id`` is passed to kernels.

    Cell coordinates wrap modulo the dimensions, so points may lie anywhere. Choose the cell
    width (``build``'s ``radius``) close to the query radius: a query visits every cell its
    sphere's bounding box touches (at most all cells, each once). ``dtype`` (float32 or
    float64) is the precision of the points: vec3 or vec3d.
    """

    def __init__(self, dim_x: int, dim_y: int, dim_z: int, device=None, dtype=None, *, _counting_sort=None):
        try:
            dims = tuple(operator.index(d) for d in (dim_x, dim_y, dim_z))
        except TypeError:
            raise TypeError(f"HashGrid dimensions must be integers, got ({dim_x!r}, {dim_y!r}, {dim_z!r})") from None
        if any(d <= 0 for d in dims):
            raise ValueError(f"HashGrid dimensions must be positive, got {dims}")
        num_cells = dims[0] * dims[1] * dims[2]
        if num_cells > MAX_CELLS:
            raise ValueError(f"HashGrid has too many cells: {dims[0]} * {dims[1]} * {dims[2]} = {num_cells} "
                             f"> {MAX_CELLS}")
        dtype = T.float32 if dtype is None else T.normalize_dtype(dtype)
        if dtype not in (T.float32, T.float64):
            raise TypeError(f"HashGrid dtype must be float32 or float64, got {T.type_name(dtype)}")
        self.dtype = dtype
        self.vec_type = T.vec3 if dtype is T.float32 else T.vec3d
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
        self._bad = zeros(1, dtype=int, device=dev)
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

    def reserve(self, num_points: int) -> None:
        """Allocate room for ``num_points`` points, so builds up to that size allocate nothing."""
        num_points = operator.index(num_points)
        if num_points < 0:
            raise ValueError(f"reserve: num_points must not be negative, got {num_points}")
        if num_points > self.capacity:
            cap = max(num_points, 16)
            dev = self.device
            self._forget()  # the old buffers go: the grid is empty until the next build
            self._cells, self._ids, self._tmp_cells, self._tmp_ids = (empty(cap, dtype=int, device=dev)
                                                                      for _ in range(4))
            if self._counting:
                self._ranks = empty(cap, dtype=int, device=dev)
            self.capacity = cap
        self.reserved = True

    def build(self, points: array, radius: float) -> None:
        """Bucket ``points`` (an array of vec3, or vec3d for a float64 grid) into cells of width ``radius``.

        Call again whenever the points move. Inside a ``Tape`` the build is recorded: ``backward()``
        rebuilds the grid from the previous build's points before it runs the adjoints of the launches
        that queried that earlier grid. Raises ValueError for a non-positive radius or a point that is
        not finite, TypeError for points of another type or device.
        """
        self._build(points, radius)
        tape = active_tape()
        if tape is not None and self._previous.sources:
            prev = self._previous
            tape.record_func(lambda: self._build(prev.sources[0], prev.extra[0]), arrays=prev.sources)

    def _build(self, points: array, radius: float) -> None:
        if not isinstance(points, array) or points.is_type:
            raise TypeError(f"HashGrid.build: points must be a simkit array of {T.type_name(self.vec_type)}, "
                            f"got {type(points).__name__}")
        if points.dtype is not self.vec_type:
            raise TypeError(f"HashGrid.build: points must be an array of {T.type_name(self.vec_type)} (grid dtype "
                            f"{T.type_name(self.dtype)}), got an array of {T.type_name(points.dtype)}")
        if points.device != self.device:
            raise TypeError(f"HashGrid.build: points are on {points.device}, the grid is on {self.device}")
        try:
            radius = float(radius)
        except (TypeError, ValueError):
            raise TypeError(f"HashGrid.build: radius must be a number, got {radius!r}") from None
        if not (radius > 0.0 and math.isfinite(radius)):
            raise ValueError(f"HashGrid.build: radius (the cell width) must be positive and finite, got {radius}")
        source = points
        if points.ndim != 1:
            points = points.contiguous().flatten()
        n = points.shape[0]
        self.reserve(n)
        dev = self.device
        capturing = descriptor.capturing(dev)
        if not capturing:
            self._forget()
        inv_f = np.float32(1.0) / np.float32(radius)
        self._desc["cell_width"] = radius
        self._desc["cell_width_inv"] = 1.0 / radius
        self._desc["cell_width_inv_f"] = inv_f
        if n:
            # inside a CUDA graph nothing is read back: no compact table over the points' box, and no
            # check for points that are not finite (they land in some cell)
            bounds = None if capturing else self._bounds(points, n)
            self._set_table(bounds, 1.0 / radius if self.dtype is T.float64 else inv_f)
            _launch(_hg_cells, n, [self.id, points, self._cells, self._ids], dev)
            cells, ids = self._counting_sort(n) if self._counting else self._radix_sort(n)
            self._desc["point_ids"] = ids.ptr
        self.num_points = n
        self._desc["num_points"] = n
        self.radius = radius
        self._sync_desc()
        self.reserved = True
        self._previous, self._tape_state = self._tape_state, handles.state_of([source], radius)

    # ------------------------------------------------------------------ internals

    def _forget(self):
        """Empty the grid (until the build under way finishes)."""
        self.num_points = 0
        self._desc["num_points"] = 0
        self._sync_desc()

    def _bounds(self, points: array, n: int):
        """The points' bounding box (float64 or float32 numpy vectors); ValueError for a point not finite.
        Each block reduces a contiguous chunk, or (the GPU path, and the CPU's tests of it) every
        blocks-th point, so that neighbouring threads read neighbouring points."""
        chunk = -(-n // self._blocks)
        blocks = -(-n // chunk)  # every block holds a point
        self._bad.fill_(n)
        _launch(_hg_bounds, blocks, [points, self._lows[:blocks], self._highs[:blocks], self._bad, n, chunk,
                                     int(self._counting)], self.device)
        first_bad = int(self._bad.numpy()[0])
        if first_bad < n:
            raise ValueError(f"HashGrid.build: point {first_bad} is not finite "
                             f"({points.numpy()[first_bad].tolist()})")
        return self._lows.numpy()[:blocks].min(axis=0), self._highs.numpy()[:blocks].max(axis=0)

    def _set_table(self, bounds, inv) -> None:
        """A compact table over the cells of the points' box when it fits in the grid's dimensions,
        else the wrapped table of all cells. Cells are computed as the kernels do (same precision), so
        the box is exact."""
        fits = False
        if bounds is not None:  # (None: inside a graph capture, the box is unknown)
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

    def _radix_sort(self, n: int):
        """Stable LSD radix sort of (cell, index) by cell, digits of ~log2(n) bits; then cell ranges."""
        dev = self.device
        table_cells = math.prod(self.table_dims)
        bits = max(1, (table_cells - 1).bit_length())
        passes = -(-bits // max(_RADIX_MIN_BITS, n.bit_length() - 1))
        width = -(-bits // passes)
        if self._hist.shape[0] < (1 << width):
            self._hist = empty(1 << width, dtype=int, device=dev)
        src = (self._cells, self._ids)
        dst = (self._tmp_cells, self._tmp_ids)
        for p in range(passes):
            _launch(_hg_radix_pass, 1, [*src, *dst, self._hist, n, p * width, (1 << width) - 1], dev)
            src, dst = dst, src
        cells, ids = src
        _launch(_hg_offsets, n, [cells, self._offsets, n, table_cells], dev)
        return cells, ids

    def _counting_sort(self, n: int):
        """Counting sort by cell: atomic counts, a prefix sum over the cells, a scatter, then each
        cell's indices put in order (deterministic output)."""
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
        _launch(_hg_order_cells, n, [self._cells, self._ranks, self._offsets, self._tmp_ids], dev)
        return self._tmp_cells, self._tmp_ids

    def __repr__(self):
        return (f"HashGrid(dims={self.dims}, device={self.device.alias}, points={self.num_points}, "
                f"cell_width={self.radius}, table={'wrapped' if self._desc['wrapped'][0] else 'compact'})")
