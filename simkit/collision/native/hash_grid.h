// simkit collision: the hash grid's device-side code (host C++17 and NVRTC CUDA).
//
// A HashGrid buckets points into cubic cells of width `cell_width`. The host
// (simkit/collision/hash_grid.py) sorts the point indices by cell and fills a
// `hash_grid_t` descriptor; the grid id a kernel receives is that descriptor's
// address. The table of cells is one of two kinds, chosen at every build:
//
// - compact: the box of cells the points occupy, when it fits in the grid's
//   dimensions (the usual case). Cells outside the box hold nothing.
// - wrapped: cell coordinates wrap modulo (dim_x, dim_y, dim_z), so an unbounded
//   domain maps onto a finite table (Warp's scheme).
//
// Either way the table is a dense prefix sum over its cells, so the points of any
// run of consecutive cells are one range of sorted positions.
//
//   query = hash_grid_query(id, p, r)           // the cells the sphere (p, r) touches
//   while (hash_grid_query_next(query, index))  // index: a candidate (filter by distance yourself)
//
// Grouped grids (built with a group id per point) sort each cell's points by group; a grouped query
// (hash_grid_query(id, p, r, group)) binary-searches its group's run in each cell, so it walks the box
// cell by cell instead of row by row. Cell coordinates are floor(p / cell_width), saturated to +-2^30;
// a NaN coordinate maps to cell 0, an infinite one to the saturated edge cell (as Warp's grid does).
// float16 points are converted to float32 first.
//
// Queries are not differentiable (they return indices only).
#pragma once
#include "core.h"

namespace sk {

struct hash_grid_t {
    const int32* offsets;      // [cells + 1]: cell c holds sorted positions [offsets[c], offsets[c + 1])
    const int32* point_ids;    // [num_points] original index of the point at each sorted position
    int32 dim_x, dim_y, dim_z; // the table's cells along each axis
    int32 org_x, org_y, org_z; // the world cell of table cell (0, 0, 0) (compact table; 0 when wrapped)
    int32 wrapped;             // 1: coordinates wrap modulo the dimensions; 0: a compact table
    int32 num_points;
    float64 cell_width_inv;    // 1 / cell_width, for float64 points
    float32 cell_width_inv_f;  // the same for float32 points
    float32 cell_width;
    const int32* groups;       // [num_points] group of the point at each sorted position (null: no groups)
};
static_assert(sizeof(hash_grid_t) == 72, "hash_grid_t layout is mirrored in simkit/collision/hash_grid.py");

// Traversal state of one query. The box of cells around the query sphere is visited row by row (a row:
// the box's cells along x at one (y, z)). A row's cells are consecutive in the table, so the cells of
// a row (or each of the two parts of a row that wraps around the table) are one range of sorted
// positions: two loads from the prefix sum. A plain aggregate, held by a kernel as a local.
struct hash_grid_query_t {
    const int32* offsets;
    const int32* ids;
    int32 pos, end;        // next sorted position and the end of the current range
    int32 dim_x, dim_y, dim_z;
    int32 wx0, nx;         // the box along x: first cell (wrapped) and number of cells
    int32 rest;            // cells of the current row's wrapped part, at x = 0 (0: none)
    int32 y, y1, z, z1;    // the current row and the last row of the box (unwrapped y, z)
    int32 wy, wy0, wz;     // y, the box's first y, and z, wrapped into the table
    int32 y0;
    int32 group;           // a grouped query's group
    const int32* groups;   // a grouped query: the grid's sorted groups (null: every point is a candidate)
    int32 cell, cell_end;  // a grouped query: the cells of the current row part still to visit
};

// Adjoint storage of a query is never used (queries are not differentiable).
SK_INLINE void accum(hash_grid_query_t&, const hash_grid_query_t&) {}

// floor(v) as an int, saturated to +-2^30 (so a box never overflows), NaN -> 0.
template <typename F> SK_INLINE int32 hash_grid_coord(F v) {
    if (!(v == v)) return 0;
    if (v >= F(1073741824.0)) return 1073741824;
    if (v <= F(-1073741824.0)) return -1073741824;
    const int32 i = int32(v);
    return i - (F(i) > v ? 1 : 0);
}

SK_INLINE int32 hash_grid_wrap(int32 c, int32 dim) {
    if (c >= 0 && c < dim) return c;  // the usual case: no division
    const int32 r = c % dim;
    return r < 0 ? r + dim : r;
}

SK_INLINE float32 hash_grid_inv(const hash_grid_t& g, float32) { return g.cell_width_inv_f; }
SK_INLINE float64 hash_grid_inv(const hash_grid_t& g, float64) { return g.cell_width_inv; }

// A world cell coordinate in the table: wrapped, or shifted to the compact box and clamped into it
// (the builder sizes the box to hold every point, so the clamp only guards against rounding).
SK_INLINE int32 hash_grid_table_coord(const hash_grid_t& g, int32 c, int32 org, int32 dim) {
    if (g.wrapped) return hash_grid_wrap(c, dim);
    c -= org;
    return c < 0 ? 0 : (c >= dim ? dim - 1 : c);
}

// The table cell of point p.
template <typename F> SK_INLINE int32 hash_grid_cell(uint64 id, vec_t<3, F> p) {
    const hash_grid_t& g = *reinterpret_cast<const hash_grid_t*>(id);
    const F inv = hash_grid_inv(g, F(0));
    int32 c[3];
    for (int k = 0; k < 3; ++k) c[k] = hash_grid_coord(p.c[k] * inv);
    const int32 cx = hash_grid_table_coord(g, c[0], g.org_x, g.dim_x);
    const int32 cy = hash_grid_table_coord(g, c[1], g.org_y, g.dim_y);
    const int32 cz = hash_grid_table_coord(g, c[2], g.org_z, g.dim_z);
    return (cz * g.dim_y + cy) * g.dim_x + cx;
}

// The range of the current row's first part (from the box's first x); the wrapped part is left in rest.
// A grouped query takes the part's cells instead, to visit one by one.
SK_INLINE void hash_grid_query_row(hash_grid_query_t& q) {
    const int32 first = q.dim_x - q.wx0 < q.nx ? q.dim_x - q.wx0 : q.nx;
    const int32 base = (q.wz * q.dim_y + q.wy) * q.dim_x + q.wx0;
    q.rest = q.nx - first;
    if (q.groups) {
        q.cell = base;
        q.cell_end = base + first;
        q.pos = q.end = 0;
        return;
    }
    q.pos = q.offsets[base];
    q.end = q.offsets[base + first];
}

// The first position in [lo, hi) of sorted groups g whose group is not less than (upper: greater than) group.
SK_INLINE int32 hash_grid_group_bound(const int32* g, int32 lo, int32 hi, int32 group, bool upper) {
    while (lo < hi) {
        const int32 mid = lo + (hi - lo) / 2;
        if (upper ? g[mid] <= group : g[mid] < group) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

#if SK_CUDA
#define SK_HASH_GRID_ADVANCE SK_INLINE
#else
// Out of line on the CPU. Inlined, the traversal state (about 20 ints) competes with the kernel's own
// values for registers and gcc moves the candidate loop's variables through vector registers (the
// neighbour-count benchmark ran 1.5x slower); out of line, the state stays in memory and the loop
// touches only pos and end.
#define SK_HASH_GRID_ADVANCE inline __attribute__((noinline))
#endif

// Move to the next row of the box; false when the box is done.
SK_INLINE bool hash_grid_query_next_row(hash_grid_query_t& q) {
    if (q.z > q.z1) return false;
    if (q.y < q.y1) {
        ++q.y;
        q.wy = q.wy + 1 == q.dim_y ? 0 : q.wy + 1;
    } else {
        q.y = q.y0;
        q.wy = q.wy0;
        ++q.z;
        if (q.z > q.z1) return false;
        q.wz = q.wz + 1 == q.dim_z ? 0 : q.wz + 1;
    }
    hash_grid_query_row(q);
    return true;
}

// A grouped query: move to the next cell that holds points of the query's group.
SK_INLINE bool hash_grid_query_advance_grouped(hash_grid_query_t& q) {
    for (;;) {
        while (q.cell < q.cell_end) {
            const int32 c = q.cell++;
            const int32 lo = q.offsets[c], hi = q.offsets[c + 1];
            if (lo == hi) continue;
            q.pos = hash_grid_group_bound(q.groups, lo, hi, q.group, false);
            q.end = hash_grid_group_bound(q.groups, q.pos, hi, q.group, true);
            if (q.pos < q.end) return true;
        }
        if (q.rest > 0) {  // the wrapped part of the row, from x = 0
            q.cell = (q.wz * q.dim_y + q.wy) * q.dim_x;
            q.cell_end = q.cell + q.rest;
            q.rest = 0;
        } else if (!hash_grid_query_next_row(q)) {
            return false;
        }
    }
}

// Move to the next range of the box; false when the box is done.
SK_HASH_GRID_ADVANCE bool hash_grid_query_advance(hash_grid_query_t& q) {
    if (q.groups) return hash_grid_query_advance_grouped(q);
    if (q.rest > 0) {  // the wrapped part of the row, from x = 0
        const int32 base = (q.wz * q.dim_y + q.wy) * q.dim_x;
        q.pos = q.offsets[base];
        q.end = q.offsets[base + q.rest];
        q.rest = 0;
        return true;
    }
    return hash_grid_query_next_row(q);
}

// A query of the cells the sphere (p, max_dist) touches; grouped: of the points of `group` only (when the
// grid was built with groups). A NaN coordinate of p visits cell 0 along its axis (where NaN points are).
template <typename F>
SK_INLINE hash_grid_query_t hash_grid_query_setup(uint64 id, vec_t<3, F> p, F max_dist, bool grouped, int32 group) {
    hash_grid_query_t q;
    memset(&q, 0, sizeof(q));
    q.z = 1;  // z > z1 and pos == end: an empty query, until it is set up below
    const hash_grid_t& g = *reinterpret_cast<const hash_grid_t*>(id);
    if (id == 0 || g.point_ids == nullptr || g.num_points == 0 || !(max_dist >= F(0))) return q;
    const F inv = hash_grid_inv(g, F(0));
    const int32 dims[3] = {g.dim_x, g.dim_y, g.dim_z};
    const int32 org[3] = {g.org_x, g.org_y, g.org_z};
    int32 lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
        lo[k] = hash_grid_coord((p.c[k] - max_dist) * inv);
        hi[k] = hash_grid_coord((p.c[k] + max_dist) * inv);
        if (g.wrapped) {  // at most dim cells, so none is visited twice
            hi[k] = hi[k] - lo[k] >= dims[k] ? lo[k] + dims[k] - 1 : hi[k];
        } else {  // clip to the compact table
            const int64 a = int64(lo[k]) - org[k], b = int64(hi[k]) - org[k];
            lo[k] = a < 0 ? 0 : int32(a);
            hi[k] = b >= dims[k] ? dims[k] - 1 : int32(b);
            if (a >= dims[k] || b < 0) return q;
        }
    }
    q.offsets = g.offsets;
    q.ids = g.point_ids;
    if (grouped) {
        q.groups = g.groups;
        q.group = group;
    }
    q.dim_x = g.dim_x;
    q.dim_y = g.dim_y;
    q.dim_z = g.dim_z;
    q.wx0 = hash_grid_wrap(lo[0], g.dim_x);
    q.nx = hi[0] - lo[0] + 1;
    q.y = q.y0 = lo[1];
    q.y1 = hi[1];
    q.z = lo[2];
    q.z1 = hi[2];
    q.wy = q.wy0 = hash_grid_wrap(lo[1], g.dim_y);
    q.wz = hash_grid_wrap(lo[2], g.dim_z);
    hash_grid_query_row(q);
    return q;
}

template <typename F> SK_INLINE hash_grid_query_t hash_grid_query(uint64 id, vec_t<3, F> p, F max_dist) {
    return hash_grid_query_setup(id, p, max_dist, false, 0);
}
template <typename F>
SK_INLINE hash_grid_query_t hash_grid_query(uint64 id, vec_t<3, F> p, F max_dist, int32 group) {
    return hash_grid_query_setup(id, p, max_dist, true, group);
}

// float16 points: cells are computed in float32.
SK_INLINE vec_t<3, float32> hash_grid_f32(vec_t<3, float16> p) {
    vec_t<3, float32> r;
    for (int k = 0; k < 3; ++k) r.c[k] = float32(p.c[k]);
    return r;
}
SK_INLINE hash_grid_query_t hash_grid_query(uint64 id, vec_t<3, float16> p, float16 max_dist) {
    return hash_grid_query_setup(id, hash_grid_f32(p), float32(max_dist), false, 0);
}
SK_INLINE hash_grid_query_t hash_grid_query(uint64 id, vec_t<3, float16> p, float16 max_dist, int32 group) {
    return hash_grid_query_setup(id, hash_grid_f32(p), float32(max_dist), true, group);
}
SK_INLINE int32 hash_grid_cell(uint64 id, vec_t<3, float16> p) { return hash_grid_cell(id, hash_grid_f32(p)); }

// Advance to the next candidate: writes its point index and returns true, or returns false when done.
// Candidates are the points of every cell of the query's box, which holds every point within
// max_dist of the query point (by the positions the grid was built with): filter by distance.
SK_INLINE bool hash_grid_query_next(hash_grid_query_t& q, int32& index) {
    while (q.pos >= q.end)
        if (!hash_grid_query_advance(q)) return false;
    index = assume_index(q.ids[q.pos++]);  // (point indices are never negative: no wrap on a[index], core.h)
    return true;
}

// The same loop as nested loops (the compiler's lowering of `while hash_grid_query_next(q, i)`):
//   while (hash_grid_query_next_range(q)) while (hash_grid_query_more(q)) { hash_grid_query_take(q, i); ... }
// The inner loop runs over one row of cells with its position and end in registers.
SK_INLINE bool hash_grid_query_next_range(hash_grid_query_t& q) {
    while (q.pos >= q.end)
        if (!hash_grid_query_advance(q)) return false;
    return true;
}
SK_INLINE bool hash_grid_query_more(const hash_grid_query_t& q) { return q.pos < q.end; }
SK_INLINE void hash_grid_query_take(hash_grid_query_t& q, int32& index) { index = assume_index(q.ids[q.pos++]); }

// The original index of the point at sorted position `index` (points in cell order), or -1 out of range.
SK_INLINE int32 hash_grid_point_id(uint64 id, int32 index) {
    const hash_grid_t& g = *reinterpret_cast<const hash_grid_t*>(id);
    if (id == 0 || g.point_ids == nullptr || index < 0 || index >= g.num_points) return -1;
    return g.point_ids[index];
}

}  // namespace sk
