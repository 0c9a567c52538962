// simkit collision: bounding volume hierarchy, device-side code (host C++17 and NVRTC CUDA).
//
// Layout. A binary tree whose nodes hold the boxes of their *two children*
// (one 64-byte node = one cache line per traversal step: both children are
// tested together and the far one is pushed). A child is either
//   - an inner node:  count == 0, child = node index,
//   - a leaf:         count  > 0, child = first slot; slots [child, child+count),
//   - empty:          count == 0, child = -1 (box inverted, so every test fails).
// Slots are the items in tree order: `prims[slot]` is the original item index.
// Node 0 is the root. The host (simkit/collision/bvh.py) builds the tree with a
// binned SAH and refits it level by level; a Bvh id is the address of a bvh_t.
//
//   query = bvh_query_aabb(id, lower, upper)   // or bvh_query_ray(id, start, dir)
//   while (bvh_query_next(query, index)) ...  // index: an item whose box passes the test
#pragma once
#include "core.h"

#define SK_BVH_STACK 64  // the builder bounds the tree depth so this never overflows

namespace sk {

// ---------------------------------------------------------------------------
// Small float3 helpers for geometry code (plain aggregate, no operators on vec_t needed).
namespace geo {
template <typename T> struct v3 {
    T x, y, z;
};
template <typename T> SK_INLINE v3<T> mk(T x, T y, T z) { v3<T> r; r.x = x; r.y = y; r.z = z; return r; }
template <typename T> SK_INLINE v3<T> ld(const vec_t<3, T>& v) { return mk(v.c[0], v.c[1], v.c[2]); }
template <typename T> SK_INLINE v3<T> ld(const T* p) { return mk(p[0], p[1], p[2]); }
template <typename T> SK_INLINE vec_t<3, T> st(const v3<T>& v) { vec_t<3, T> r; r.c[0] = v.x; r.c[1] = v.y; r.c[2] = v.z; return r; }
template <typename T> SK_INLINE v3<T> operator+(const v3<T>& a, const v3<T>& b) { return mk(a.x + b.x, a.y + b.y, a.z + b.z); }
template <typename T> SK_INLINE v3<T> operator-(const v3<T>& a, const v3<T>& b) { return mk(a.x - b.x, a.y - b.y, a.z - b.z); }
template <typename T> SK_INLINE v3<T> operator-(const v3<T>& a) { return mk(-a.x, -a.y, -a.z); }
template <typename T> SK_INLINE v3<T> operator*(const v3<T>& a, T s) { return mk(a.x * s, a.y * s, a.z * s); }
template <typename T> SK_INLINE v3<T> operator*(T s, const v3<T>& a) { return mk(a.x * s, a.y * s, a.z * s); }
template <typename T> SK_INLINE v3<T>& operator+=(v3<T>& a, const v3<T>& b) { a.x += b.x; a.y += b.y; a.z += b.z; return a; }
template <typename T> SK_INLINE v3<T>& operator-=(v3<T>& a, const v3<T>& b) { a.x -= b.x; a.y -= b.y; a.z -= b.z; return a; }
template <typename T> SK_INLINE T dot(const v3<T>& a, const v3<T>& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
template <typename T> SK_INLINE v3<T> cross(const v3<T>& a, const v3<T>& b) {
    return mk(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
template <typename T> SK_INLINE T len(const v3<T>& a) { return sqrt(dot(a, a)); }
template <typename T> SK_INLINE T get(const v3<T>& a, int k) { return k == 0 ? a.x : (k == 1 ? a.y : a.z); }
template <typename T> SK_INLINE void add_to(vec_t<3, T>& dst, const v3<T>& v) { dst.c[0] += v.x; dst.c[1] += v.y; dst.c[2] += v.z; }
template <typename T> SK_INLINE v3<T> vmin(const v3<T>& a, const v3<T>& b) { return mk(fmin(a.x, b.x), fmin(a.y, b.y), fmin(a.z, b.z)); }
template <typename T> SK_INLINE v3<T> vmax(const v3<T>& a, const v3<T>& b) { return mk(fmax(a.x, b.x), fmax(a.y, b.y), fmax(a.z, b.z)); }

// min/max as single instructions (fminf/fmaxf are library calls without -ffast-math)
SK_INLINE float fmn(float a, float b) { return a < b ? a : b; }
SK_INLINE float fmx(float a, float b) { return a > b ? a : b; }

// Squared distance from p to the box [lo, hi] (0 inside).
SK_INLINE float box_dist_sq(const v3<float>& p, const float* lo, const float* hi) {
    const float dx = fmx(fmx(lo[0] - p.x, p.x - hi[0]), 0.0f);
    const float dy = fmx(fmx(lo[1] - p.y, p.y - hi[1]), 0.0f);
    const float dz = fmx(fmx(lo[2] - p.z, p.z - hi[2]), 0.0f);
    return dx * dx + dy * dy + dz * dz;
}

SK_INLINE bool box_overlap(const v3<float>& qlo, const v3<float>& qhi, const float* lo, const float* hi) {
    return qlo.x <= hi[0] && qhi.x >= lo[0] && qlo.y <= hi[1] && qhi.y >= lo[1] && qlo.z <= hi[2] && qhi.z >= lo[2];
}

// A ray prepared for slab tests: origin and per-axis reciprocal direction (1e30 for a zero
// component: finite, so a slab product is never 0 * inf = NaN).
struct ray_t {
    v3<float> o, d, inv;
};
SK_INLINE float safe_inv(float x) { return x != 0.0f ? 1.0f / x : 1e30f; }
SK_INLINE ray_t make_ray(const v3<float>& o, const v3<float>& d) {
    ray_t r;
    r.o = o;
    r.d = d;
    r.inv = mk(safe_inv(d.x), safe_inv(d.y), safe_inv(d.z));
    return r;
}
// Slab test: the ray (a line for t in [tnear, tfar]) meets the box with tfar >= 0 and tfar >= tnear;
// tnear (the entry parameter, negative when the origin is inside) is returned. tfar is widened by
// the rounding bound of the slab products (Ize 2013), so a grazed box is never missed.
SK_INLINE bool ray_box(const ray_t& r, const float* lo, const float* hi, float& tnear) {
    const float x1 = (lo[0] - r.o.x) * r.inv.x, x2 = (hi[0] - r.o.x) * r.inv.x;
    const float y1 = (lo[1] - r.o.y) * r.inv.y, y2 = (hi[1] - r.o.y) * r.inv.y;
    const float z1 = (lo[2] - r.o.z) * r.inv.z, z2 = (hi[2] - r.o.z) * r.inv.z;
    const float tn = fmx(fmx(fmn(x1, x2), fmn(y1, y2)), fmn(z1, z2));
    const float tf = fmn(fmn(fmx(x1, x2), fmx(y1, y2)), fmx(z1, z2)) * 1.0000008f;
    tnear = tn;
    return tf >= 0.0f && tf >= tn && lo[0] <= hi[0];
}
}  // namespace geo

// ---------------------------------------------------------------------------
// The tree.

struct bvh_node_t {
    float lo0[3], hi0[3];  // box of child 0
    float lo1[3], hi1[3];  // box of child 1
    int32 child[2];
    int32 count[2];
};
static_assert(sizeof(bvh_node_t) == 64, "bvh_node_t layout is mirrored in simkit/collision/bvh_build.py");

SK_INLINE const float* bvh_lo(const bvh_node_t& n, int k) { return k ? n.lo1 : n.lo0; }
SK_INLINE const float* bvh_hi(const bvh_node_t& n, int k) { return k ? n.hi1 : n.hi0; }

struct bvh_t {
    const bvh_node_t* nodes;
    const int32* prims;   // [num_items] item index of each slot
    const float* item_lo;  // [num_items][3] item boxes in slot order (Bvh only; null for meshes)
    const float* item_hi;
    int32 num_nodes;
    int32 num_items;
};
static_assert(sizeof(bvh_t) == 40, "bvh_t layout is mirrored in simkit/collision/bvh.py");

SK_INLINE const bvh_t& bvh_get(uint64 id) { return *reinterpret_cast<const bvh_t*>(id); }

// A stack entry: >= 0 an inner node; < 0 the leaf child k of node n, encoded -(2n + k) - 1.
SK_INLINE int32 bvh_leaf_ref(int32 node, int32 k) { return -(2 * node + k) - 1; }

// ---------------------------------------------------------------------------
// Iterative queries (box overlap and ray), one item per bvh_query_next call.

struct bvh_query_t {
    const bvh_node_t* nodes;
    const int32* prims;
    const float* item_lo;
    const float* item_hi;
    geo::v3<float> a, b;  // aabb: lower, upper;  ray: origin, direction
    geo::v3<float> inv;   // ray: reciprocal direction
    int32 kind;           // 0: aabb, 1: ray
    int32 cur, end;       // slots of the current leaf still to test
    int32 sp;
    int32 stack[SK_BVH_STACK];
};

// Adjoint storage of a query is never used (queries are not differentiable).
SK_INLINE void accum(bvh_query_t&, const bvh_query_t&) {}

SK_INLINE bvh_query_t bvh_query_init(const bvh_t& b, int32 kind) {
    bvh_query_t q;
    q.nodes = b.nodes;
    q.prims = b.prims;
    q.item_lo = b.item_lo;
    q.item_hi = b.item_hi;
    q.kind = kind;
    q.cur = q.end = 0;
    q.sp = 0;
    if (b.num_items > 0) q.stack[q.sp++] = 0;
    return q;
}

SK_INLINE bvh_query_t bvh_query_aabb(uint64 id, vec_t<3, float32> lower, vec_t<3, float32> upper) {
    bvh_query_t q = bvh_query_init(bvh_get(id), 0);
    q.a = geo::ld(lower);
    q.b = geo::ld(upper);
    q.inv = q.a;
    return q;
}

SK_INLINE bvh_query_t bvh_query_ray(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir) {
    bvh_query_t q = bvh_query_init(bvh_get(id), 1);
    const geo::ray_t r = geo::make_ray(geo::ld(start), geo::ld(dir));
    q.a = r.o;
    q.b = r.d;
    q.inv = r.inv;
    return q;
}

SK_INLINE bool bvh_query_test(const bvh_query_t& q, const float* lo, const float* hi, float max_dist) {
    if (q.kind == 0) return geo::box_overlap(q.a, q.b, lo, hi);
    geo::ray_t r;
    r.o = q.a;
    r.d = q.b;
    r.inv = q.inv;
    float t;
    return geo::ray_box(r, lo, hi, t) && t < max_dist;
}

// Advance: the next item whose own box passes the test (boxes overlap / the ray meets the box
// with entry parameter < max_dist) goes to `index`; false when the traversal is done.
SK_INLINE bool bvh_query_next(bvh_query_t& q, int32& index, float32 max_dist) {
    while (true) {
        while (q.cur < q.end) {
            const int32 s = q.cur++;
            if (bvh_query_test(q, q.item_lo + 3 * s, q.item_hi + 3 * s, max_dist)) {
                index = q.prims[s];
                return true;
            }
        }
        if (q.sp == 0) return false;
        const int32 e = q.stack[--q.sp];
        if (e < 0) {
            const int32 r = -e - 1;
            const bvh_node_t& n = q.nodes[r >> 1];
            q.cur = n.child[r & 1];
            q.end = q.cur + n.count[r & 1];
            continue;
        }
        const bvh_node_t& n = q.nodes[e];
        for (int k = 1; k >= 0; --k) {  // child 0 ends on top: visited first
            if (n.child[k] < 0 || !bvh_query_test(q, bvh_lo(n, k), bvh_hi(n, k), max_dist)) continue;
            if (q.sp < SK_BVH_STACK) q.stack[q.sp++] = n.count[k] > 0 ? bvh_leaf_ref(e, k) : n.child[k];
        }
    }
}
SK_INLINE bool bvh_query_next(bvh_query_t& q, int32& index) { return bvh_query_next(q, index, INFINITY); }

}  // namespace sk
