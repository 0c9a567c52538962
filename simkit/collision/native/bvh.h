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
#define SK_BVH_ITEM_STRIDE 6  // floats from one item box to the next (lo and hi interleaved)

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

// A ray prepared for slab tests: per-axis reciprocal direction (1e30 for a zero component: finite,
// so a slab product is never 0 * inf = NaN) and two copies of the origin, `olo` subtracted from box
// lowers and `ohi` from box uppers. They differ only on an axis the ray is parallel to, where they
// straddle the origin by a few ulps: a box face through the origin then gives a huge slab (the origin
// is inside it), never an empty one at t = 0. A capsule (radius r > 0) is the ray against every box
// grown by r: olo + r and ohi - r.
struct ray_t {
    v3<float> olo, ohi, inv;
};
SK_INLINE float safe_inv(float x) { return x != 0.0f ? 1.0f / x : 1e30f; }
SK_INLINE float slab_pad(float o, float d) { return d != 0.0f ? 0.0f : fabsf(o) * 2.5e-7f + 1e-18f; }
SK_INLINE ray_t make_ray(const v3<float>& o, const v3<float>& d, float r = 0.0f) {
    ray_t q;
    const v3<float> pad = mk(slab_pad(o.x, d.x), slab_pad(o.y, d.y), slab_pad(o.z, d.z));
    q.olo = o + pad + mk(r, r, r);
    q.ohi = o - pad - mk(r, r, r);
    q.inv = mk(safe_inv(d.x), safe_inv(d.y), safe_inv(d.z));
    return q;
}
// Slab test: the ray (a line for t in [tnear, tfar]) meets the box with tfar >= 0 and tfar >= tnear;
// tnear (the entry parameter, negative when the origin is inside) is returned. tfar is widened by
// the rounding bound of the slab products (Ize 2013), so a grazed box is never missed.
SK_INLINE bool ray_box(const ray_t& r, const float* lo, const float* hi, float& tnear) {
    const float x1 = (lo[0] - r.olo.x) * r.inv.x, x2 = (hi[0] - r.ohi.x) * r.inv.x;
    const float y1 = (lo[1] - r.olo.y) * r.inv.y, y2 = (hi[1] - r.ohi.y) * r.inv.y;
    const float z1 = (lo[2] - r.olo.z) * r.inv.z, z2 = (hi[2] - r.ohi.z) * r.inv.z;
    const float tn = fmx(fmx(fmn(x1, x2), fmn(y1, y2)), fmn(z1, z2));
    const float tf = fmn(fmn(fmx(x1, x2), fmx(y1, y2)), fmx(z1, z2)) * 1.0000008f;
    tnear = tn;
    return tf >= 0.0f && tf >= tn && lo[0] <= hi[0];
}
}  // namespace geo

namespace geo {
// The same tests on the four boxes of a wide node at once. On the CPU with GCC/Clang vector types
// (one SSE register per row of the node: the compiler does not reliably vectorize these loops once they
// are inlined into a traversal), on CUDA as plain loops.
#if !SK_CUDA
typedef float v4f __attribute__((vector_size(16)));
typedef int32 v4i __attribute__((vector_size(16)));
SK_INLINE v4f ld4(const float* p) {
    v4f v;
    memcpy(&v, p, sizeof(v));
    return v;
}
SK_INLINE void st4(float* p, v4f v) { memcpy(p, &v, sizeof(v)); }
SK_INLINE v4f vmn4(v4f a, v4f b) { return a < b ? a : b; }
SK_INLINE v4f vmx4(v4f a, v4f b) { return a > b ? a : b; }
SK_INLINE v4f sel4(v4i m, v4f a, v4f b) { return m ? a : b; }
#endif

// Box distances: squared distance, +inf for an empty child.
SK_INLINE void box4_dist_sq(const float (*lo)[4], const float (*hi)[4], const v3<float>& p, float* out) {
#if !SK_CUDA
    const v4f z = {0.0f, 0.0f, 0.0f, 0.0f}, inf = z + INFINITY;
    const v4f lx = ld4(lo[0]), ly = ld4(lo[1]), lz = ld4(lo[2]), hx = ld4(hi[0]), hy = ld4(hi[1]), hz = ld4(hi[2]);
    const v4f dx = vmx4(vmx4(lx - p.x, p.x - hx), z), dy = vmx4(vmx4(ly - p.y, p.y - hy), z);
    const v4f dz = vmx4(vmx4(lz - p.z, p.z - hz), z);
    st4(out, sel4(lx <= hx, dx * dx + dy * dy + dz * dz, inf));
#else
    for (int k = 0; k < 4; ++k) {
        const float dx = fmx(fmx(lo[0][k] - p.x, p.x - hi[0][k]), 0.0f);
        const float dy = fmx(fmx(lo[1][k] - p.y, p.y - hi[1][k]), 0.0f);
        const float dz = fmx(fmx(lo[2][k] - p.z, p.z - hi[2][k]), 0.0f);
        out[k] = lo[0][k] <= hi[0][k] ? dx * dx + dy * dy + dz * dz : INFINITY;
    }
#endif
}
// Slab tests: the entry parameter of a box the ray meets (as ray_box), +inf for the others.
SK_INLINE void ray_box4(const float (*lo)[4], const float (*hi)[4], const ray_t& r, float* out) {
#if !SK_CUDA
    const v4f z = {0.0f, 0.0f, 0.0f, 0.0f}, inf = z + INFINITY;
    const v4f lx = ld4(lo[0]), hx = ld4(hi[0]);
    const v4f x1 = (lx - r.olo.x) * r.inv.x, x2 = (hx - r.ohi.x) * r.inv.x;
    const v4f y1 = (ld4(lo[1]) - r.olo.y) * r.inv.y, y2 = (ld4(hi[1]) - r.ohi.y) * r.inv.y;
    const v4f z1 = (ld4(lo[2]) - r.olo.z) * r.inv.z, z2 = (ld4(hi[2]) - r.ohi.z) * r.inv.z;
    const v4f tn = vmx4(vmx4(vmn4(x1, x2), vmn4(y1, y2)), vmn4(z1, z2));
    const v4f tf = vmn4(vmn4(vmx4(x1, x2), vmx4(y1, y2)), vmx4(z1, z2)) * 1.0000008f;
    st4(out, sel4((tf >= z) & (tf >= tn) & (lx <= hx), tn, inf));
#else
    for (int k = 0; k < 4; ++k) {
        const float x1 = (lo[0][k] - r.olo.x) * r.inv.x, x2 = (hi[0][k] - r.ohi.x) * r.inv.x;
        const float y1 = (lo[1][k] - r.olo.y) * r.inv.y, y2 = (hi[1][k] - r.ohi.y) * r.inv.y;
        const float z1 = (lo[2][k] - r.olo.z) * r.inv.z, z2 = (hi[2][k] - r.ohi.z) * r.inv.z;
        const float tn = fmx(fmx(fmn(x1, x2), fmn(y1, y2)), fmn(z1, z2));
        const float tf = fmn(fmn(fmx(x1, x2), fmx(y1, y2)), fmx(z1, z2)) * 1.0000008f;
        out[k] = ((tf >= 0.0f) & (tf >= tn) & (lo[0][k] <= hi[0][k])) ? tn : INFINITY;
    }
#endif
}
// Overlap with the box [qlo, qhi]: 0 for a box that overlaps, +inf for the others.
SK_INLINE void box4_overlap(const float (*lo)[4], const float (*hi)[4], const v3<float>& qlo, const v3<float>& qhi,
                            float* out) {
#if !SK_CUDA
    const v4f z = {0.0f, 0.0f, 0.0f, 0.0f}, inf = z + INFINITY;
    const v4i o = (qlo.x <= ld4(hi[0])) & (qhi.x >= ld4(lo[0])) & (qlo.y <= ld4(hi[1])) & (qhi.y >= ld4(lo[1])) &
                  (qlo.z <= ld4(hi[2])) & (qhi.z >= ld4(lo[2]));
    st4(out, sel4(o, z, inf));
#else
    for (int k = 0; k < 4; ++k) {
        const bool o = (qlo.x <= hi[0][k]) & (qhi.x >= lo[0][k]) & (qlo.y <= hi[1][k]) & (qhi.y >= lo[1][k]) &
                       (qlo.z <= hi[2][k]) & (qhi.z >= lo[2][k]);
        out[k] = o ? 0.0f : INFINITY;
    }
#endif
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

// The 4-wide copy of the tree that queries traverse (simkit/collision/bvh_wide.py): the boxes of up to
// four children, component-major so a node's four box tests vectorize; child/count as in bvh_node_t.
// Node 0 is the root. Its depth is bounded when it is used at all (see SK_BVH4_STACK).
struct bvh4_node_t {
    float lo[3][4];  // lo[axis][child]
    float hi[3][4];
    int32 child[4];
    int32 count[4];
};
static_assert(sizeof(bvh4_node_t) == 128, "bvh4_node_t layout is mirrored in simkit/collision/bvh_wide.py");

// Stack of a wide traversal: at most 3 entries per level (the siblings of the child descended into)
// plus one; the host passes no wide tree (wide == null: binary traversal) when it is deeper than
// SK_BVH4_MAX_DEPTH levels.
#define SK_BVH4_MAX_DEPTH 20
#define SK_BVH4_STACK (3 * SK_BVH4_MAX_DEPTH + 4)  // + 3: bvh4_push writes four entries whatever passes

struct bvh_t {
    const bvh_node_t* nodes;
    const int32* prims;   // [num_items] item index of each slot
    const float* item_lo;  // item boxes in slot order, interleaved: slot s at item_lo + 6 s and item_hi + 6 s
    const float* item_hi;  // (= item_lo + 3): one box is 24 contiguous bytes
    const bvh4_node_t* wide;  // the wide tree, or null (too deep: queries walk the binary tree)
    int32 num_nodes;
    int32 num_items;
    const int32* group_ids;    // grouped trees: the group ids, ascending, and the node that is the root
    const int32* group_roots;  // of each group's subtree (null, num_groups 0: not grouped)
    int32 num_groups;
    int32 pad_;
};
static_assert(sizeof(bvh_t) == 72, "bvh_t layout is mirrored in simkit/collision/bvh.py");

SK_INLINE const bvh_t& bvh_get(uint64 id) { return *reinterpret_cast<const bvh_t*>(id); }

// The root node of group `group`'s subtree (a node index, for the queries' `root`), -1 (the whole tree)
// when the tree has no such group.
SK_INLINE int32 bvh_group_root(const bvh_t& b, int32 group) {
    int32 lo = 0, hi = b.num_groups;
    while (lo < hi) {
        const int32 mid = (lo + hi) >> 1;
        if (b.group_ids[mid] < group) lo = mid + 1; else hi = mid;
    }
    return lo < b.num_groups && b.group_ids[lo] == group ? b.group_roots[lo] : -1;
}
SK_INLINE int32 bvh_get_group_root(uint64 id, int32 group) { return bvh_group_root(bvh_get(id), group); }
// A query's first stack entry: `root` if it is a node of the tree, else (-1: the whole tree) node 0;
// -2 (no entry) for an empty tree or a root past the last node.
SK_INLINE int32 bvh_root_entry(const bvh_t& b, int32 root) {
    if (b.num_items <= 0) return -2;
    return root < 0 ? 0 : (root < b.num_nodes ? root : -2);
}

// A stack entry: >= 0 an inner node; < 0 the leaf child k of node n, encoded -(2n + k) - 1.
SK_INLINE int32 bvh_leaf_ref(int32 node, int32 k) { return -(2 * node + k) - 1; }
// Decode a leaf entry into its slot range [start, end).
SK_INLINE void bvh_leaf_range(const bvh_node_t* nodes, int32 e, int32& start, int32& end) {
    const int32 r = -e - 1;
    const bvh_node_t& n = nodes[r >> 1];
    start = n.child[r & 1];
    end = start + n.count[r & 1];
}
// The entry of child k of node e (an inner node index, or a leaf reference).
SK_INLINE int32 bvh_entry(const bvh_node_t& n, int32 e, int32 k) {
    return n.count[k] > 0 ? bvh_leaf_ref(e, k) : n.child[k];
}
// The same for wide nodes: -(4n + k) - 1.
SK_INLINE int32 bvh4_leaf_ref(int32 node, int32 k) { return -(4 * node + k) - 1; }
SK_INLINE void bvh4_leaf_range(const bvh4_node_t* nodes, int32 e, int32& start, int32& end) {
    const int32 r = -e - 1;
    const bvh4_node_t& n = nodes[r >> 2];
    start = n.child[r & 3];
    end = start + n.count[r & 3];
}
// The entry of child k of wide node w (a wide node index, or a leaf reference).
SK_INLINE int32 bvh4_entry(const bvh4_node_t& n, int32 w, int32 k) {
    return n.count[k] > 0 ? bvh4_leaf_ref(w, k) : n.child[k];
}

// Compare-exchange of (key, entry) pairs a and b into decreasing key order, without branches.
SK_INLINE void bvh4_order(float& ka, int32& ea, float& kb, int32& eb) {
    const bool sw = ka < kb;
    const float k = ka;
    const int32 e = ea;
    ka = sw ? kb : ka;
    ea = sw ? eb : ea;
    kb = sw ? k : kb;
    eb = sw ? e : eb;
}

// Push the children of wide node w whose key (a distance, or an entry parameter) is below `best`,
// farthest first, so that they pop nearest first. Free of branches: the four (key, entry) pairs go
// through a sorting network, those that fail (key -inf) sort last, all four are written and the stack
// grows by the number that passed. The stack has room: see SK_BVH4_STACK.
SK_INLINE void bvh4_push(const bvh4_node_t& n, int32 w, const float* key, float best, int32* st, float* sd, int& sp) {
    float k[4];
    int32 e[4];
    int m = 0;
    for (int j = 0; j < 4; ++j) {
        const bool ok = (key[j] < best) & (n.child[j] >= 0);
        k[j] = ok ? key[j] : -INFINITY;
        e[j] = n.count[j] > 0 ? bvh4_leaf_ref(w, j) : n.child[j];
        m += ok ? 1 : 0;
    }
    bvh4_order(k[0], e[0], k[1], e[1]);
    bvh4_order(k[2], e[2], k[3], e[3]);
    bvh4_order(k[0], e[0], k[2], e[2]);
    bvh4_order(k[1], e[1], k[3], e[3]);
    bvh4_order(k[1], e[1], k[2], e[2]);
    for (int j = 0; j < 4; ++j) {
        st[sp + j] = e[j];
        sd[sp + j] = k[j];
    }
    sp += m;
}

// The `bytes` bytes at p, asked for ahead of use (CPU only): the traversal below prefetches the children it
// pushes, whose loads would otherwise miss one after another.
SK_INLINE void prefetch_bytes(const void* p, int bytes) {
#if !SK_CUDA
    const char* c = static_cast<const char*>(p);
    for (int k = 0; k < bytes; k += 64) __builtin_prefetch(c + k);
    __builtin_prefetch(c + bytes - 1);
#endif
}
struct no_prefetch_t {
    SK_INLINE void operator()(int32) const {}
};
// Nearest-first depth-first search of the wide tree (closest point, closest ray hit). keys(node, out)
// writes each child's key, a lower bound of what its subtree can give (+inf: skip); leaf(start, end)
// tests the items of a leaf and lowers `best`. Subtrees whose key is not below `best` are skipped.
// prefetch(start) asks for a pushed leaf's items (on the CPU; popped children are rarely still cached).
template <typename Keys, typename Leaf, typename Pre = no_prefetch_t>
SK_INLINE void bvh4_nearest(const bvh4_node_t* wide, float root_key, float& best, const Keys& keys, const Leaf& leaf,
                            const Pre& prefetch = Pre()) {
    int32 st[SK_BVH4_STACK];
    float sd[SK_BVH4_STACK];
    int sp = 1;
    st[0] = 0;
    sd[0] = root_key;
    while (sp > 0) {
        --sp;
        if (!(sd[sp] < best)) continue;
        const int32 e = st[sp];
        if (e < 0) {
            int32 s0, s1;
            bvh4_leaf_range(wide, e, s0, s1);
            leaf(s0, s1);
            continue;
        }
        const bvh4_node_t& n = wide[e];
        float key[4];
        keys(n, key);
        const int sp0 = sp;
        bvh4_push(n, e, key, best, st, sd, sp);
#if !SK_CUDA
        for (int j = sp0; j < sp; ++j) {  // the pushed children: wide nodes here, leaves by `prefetch`
            const int32 c = st[j];
            if (c >= 0) prefetch_bytes(&wide[c], sizeof(bvh4_node_t));
            else prefetch(n.child[(-c - 1) & 3]);
        }
#endif
    }
}

// The same search of the binary tree (the fallback for trees too deep for the wide stack): keys(node,
// k0, k1) writes the keys of the node's two children.
template <typename Keys, typename Leaf>
SK_INLINE void bvh_nearest(const bvh_node_t* nodes, float root_key, float& best, const Keys& keys, const Leaf& leaf,
                           int32 root = 0) {
    int32 st[SK_BVH_STACK];
    float sd[SK_BVH_STACK];
    int sp = 1;
    st[0] = root;
    sd[0] = root_key;
    while (sp > 0) {
        --sp;
        if (!(sd[sp] < best)) continue;
        const int32 e = st[sp];
        if (e < 0) {
            int32 s0, s1;
            bvh_leaf_range(nodes, e, s0, s1);
            leaf(s0, s1);
            continue;
        }
        const bvh_node_t& n = nodes[e];
        float k[2];
        keys(n, k[0], k[1]);
        for (int c = 0; c < 2; ++c) k[c] = n.child[c] >= 0 ? k[c] : INFINITY;
        const int near = k[1] < k[0] ? 1 : 0;
        for (int j = 0; j < 2; ++j) {  // the far child first: popped last
            const int c = j == 0 ? 1 - near : near;
            if (k[c] < best && sp < SK_BVH_STACK) {
                st[sp] = bvh_entry(n, e, c);
                sd[sp++] = k[c];
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Iterative queries (box overlap and ray), one item per bvh_query_next call.

struct bvh_query_t {
    const bvh_node_t* nodes;
    const bvh4_node_t* wide;  // the wide tree, or null: walk the binary one
    const int32* prims;
    const float* item_lo;
    const float* item_hi;
    geo::v3<float> a, b;  // aabb: lower, upper;  ray, capsule: the slab origins olo, ohi;  sphere: center, (r^2, -, -)
    geo::v3<float> inv;   // ray, capsule: reciprocal direction
    int32 kind;           // SK_QUERY_AABB, _RAY, _SPHERE or _CAPSULE
    int32 base;           // the first slot of the current leaf
    uint32 mask;          // its slots (bit k: slot base + k) that passed the test and are still to return
    int32 sp;
    int32 stack[SK_BVH4_STACK];
};
#define SK_QUERY_AABB 0
#define SK_QUERY_RAY 1
#define SK_QUERY_SPHERE 2
#define SK_QUERY_CAPSULE 3

// Adjoint storage of a query is never used (queries are not differentiable).
SK_INLINE void accum(bvh_query_t&, const bvh_query_t&) {}

// A query of `kind` from `root` (-1: the whole tree, on the wide tree; a node: its subtree, on the binary tree).
SK_INLINE bvh_query_t bvh_query_init(const bvh_t& b, int32 kind, int32 root) {
    bvh_query_t q;
    q.nodes = b.nodes;
    q.wide = root < 0 ? b.wide : nullptr;
    q.prims = b.prims;
    q.item_lo = b.item_lo;
    q.item_hi = b.item_hi;
    q.kind = kind;
    q.base = 0;
    q.mask = 0;
    q.sp = 0;
    const int32 e = bvh_root_entry(b, root);
    if (e >= 0) q.stack[q.sp++] = e;
    return q;
}

SK_INLINE bvh_query_t bvh_query_aabb(uint64 id, vec_t<3, float32> lower, vec_t<3, float32> upper, int32 root = -1) {
    bvh_query_t q = bvh_query_init(bvh_get(id), SK_QUERY_AABB, root);
    q.a = geo::ld(lower);
    q.b = geo::ld(upper);
    q.inv = q.a;
    return q;
}

SK_INLINE bvh_query_t bvh_query_ray_kind(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir, float32 radius,
                                         int32 kind, int32 root) {
    bvh_query_t q = bvh_query_init(bvh_get(id), kind, root);
    const geo::ray_t r = geo::make_ray(geo::ld(start), geo::ld(dir), radius);
    q.a = r.olo;
    q.b = r.ohi;
    q.inv = r.inv;
    return q;
}
SK_INLINE bvh_query_t bvh_query_ray(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir, int32 root = -1) {
    return bvh_query_ray_kind(id, start, dir, 0.0f, SK_QUERY_RAY, root);
}
SK_INLINE bvh_query_t bvh_query_capsule(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir, float32 radius,
                                        int32 root = -1) {
    return bvh_query_ray_kind(id, start, dir, radius > 0.0f ? radius : 0.0f, SK_QUERY_CAPSULE, root);
}
SK_INLINE bvh_query_t bvh_query_sphere(uint64 id, vec_t<3, float32> center, float32 radius, int32 root = -1) {
    bvh_query_t q = bvh_query_init(bvh_get(id), SK_QUERY_SPHERE, root);
    const float r = radius > 0.0f ? radius : 0.0f;
    q.a = geo::ld(center);
    q.b = geo::mk(r * r, 0.0f, 0.0f);
    q.inv = q.b;
    return q;
}

SK_INLINE geo::ray_t bvh_query_ray_of(const bvh_query_t& q) {
    geo::ray_t r;
    r.olo = q.a;
    r.ohi = q.b;
    r.inv = q.inv;
    return r;
}
// The bound on a ray's entry parameter that passes (an item or child passes with key < limit): max_dist
// for rays, just above it for capsules (whose segment end is included); +inf (no bound) for boxes and spheres.
SK_INLINE float bvh_query_limit(const bvh_query_t& q, float max_dist) {
    if (q.kind == SK_QUERY_RAY) return max_dist;
    return q.kind == SK_QUERY_CAPSULE ? nextafterf(max_dist, INFINITY) : INFINITY;
}

SK_INLINE bool bvh_query_test(const bvh_query_t& q, const float* lo, const float* hi, float limit) {
    if (q.kind == SK_QUERY_AABB) return geo::box_overlap(q.a, q.b, lo, hi);
    if (q.kind == SK_QUERY_SPHERE) return lo[0] <= hi[0] && geo::box_dist_sq(q.a, lo, hi) <= q.b.x;
    float t;
    return geo::ray_box(bvh_query_ray_of(q), lo, hi, t) && t < limit;
}

// Push the children of wide node e that pass the query's test (in any order: an iterator returns all).
SK_INLINE void bvh_query_push4(bvh_query_t& q, int32 e, float limit) {
    const bvh4_node_t& n = q.wide[e];
    float key[4];
    if (q.kind == SK_QUERY_AABB) {
        geo::box4_overlap(n.lo, n.hi, q.a, q.b, key);
    } else if (q.kind == SK_QUERY_SPHERE) {
        geo::box4_dist_sq(n.lo, n.hi, q.a, key);
        for (int k = 0; k < 4; ++k) key[k] = key[k] <= q.b.x ? 0.0f : INFINITY;
    } else {
        geo::ray_box4(n.lo, n.hi, bvh_query_ray_of(q), key);
    }
    for (int k = 0; k < 4; ++k) {  // branch-free compaction
        const bool ok = (key[k] < limit) & (n.child[k] >= 0);
        q.stack[q.sp] = bvh4_entry(n, e, k);
        q.sp += ok ? 1 : 0;
    }
}

SK_INLINE int32 bvh_lowest_bit(uint32 m) {
#if SK_CUDA
    return __ffs(m) - 1;
#else
    return __builtin_ctz(m);
#endif
}

// Enter the leaf of slots [start, end) (at most 32): test every item box at once (no branch per item).
SK_INLINE void bvh_query_leaf(bvh_query_t& q, int32 start, int32 end, float limit) {
    uint32 mask = 0;
    for (int32 s = start; s < end; ++s)
        mask |= uint32(bvh_query_test(q, q.item_lo + SK_BVH_ITEM_STRIDE * s, q.item_hi + SK_BVH_ITEM_STRIDE * s, limit) ? 1 : 0) << (s - start);
    q.base = start;
    q.mask = mask;
}

// Traverse to the next leaf with items that pass the test (boxes overlap / the ray meets the box with
// entry parameter < max_dist), their slots in q.mask; false when the traversal is done.
SK_INLINE bool bvh_query_next_range(bvh_query_t& q, float32 max_dist) {
    const float limit = bvh_query_limit(q, max_dist);
    while (q.mask == 0) {
        if (q.sp == 0) return false;
        const int32 e = q.stack[--q.sp];
        if (q.wide) {
            if (e < 0) {
                int32 s0, s1;
                bvh4_leaf_range(q.wide, e, s0, s1);
                bvh_query_leaf(q, s0, s1, limit);
            } else {
                bvh_query_push4(q, e, limit);
            }
            continue;
        }
        if (e < 0) {
            int32 s0, s1;
            bvh_leaf_range(q.nodes, e, s0, s1);
            bvh_query_leaf(q, s0, s1, limit);
            continue;
        }
        const bvh_node_t& n = q.nodes[e];
        for (int k = 1; k >= 0; --k) {  // child 0 ends on top: visited first
            if (n.child[k] < 0 || !bvh_query_test(q, bvh_lo(n, k), bvh_hi(n, k), limit)) continue;
            if (q.sp < SK_BVH_STACK) q.stack[q.sp++] = bvh_entry(n, e, k);
        }
    }
    return true;
}
SK_INLINE bool bvh_query_next_range(bvh_query_t& q) { return bvh_query_next_range(q, INFINITY); }
SK_INLINE bool bvh_query_more(const bvh_query_t& q) { return q.mask != 0; }
SK_INLINE void bvh_query_take(bvh_query_t& q, int32& index) {
    const int32 k = bvh_lowest_bit(q.mask);
    q.mask &= q.mask - 1;
    index = q.prims[q.base + k];
}

// Advance: the next item whose own box passes the test goes to `index`; false when the traversal is
// done. The compiler lowers `while bvh_query_next(q, i)` loops to the three functions above instead.
SK_INLINE bool bvh_query_next(bvh_query_t& q, int32& index, float32 max_dist) {
    if (!bvh_query_next_range(q, max_dist)) return false;
    bvh_query_take(q, index);
    return true;
}
SK_INLINE bool bvh_query_next(bvh_query_t& q, int32& index) { return bvh_query_next(q, index, INFINITY); }

}  // namespace sk
