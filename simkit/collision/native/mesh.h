// simkit collision: triangle mesh queries, device-side code (host C++17 and NVRTC CUDA).
// Included after bvh.h and geometry.h. A Mesh id is the address of a mesh_t built by
// simkit/collision/mesh.py; its BVH holds the faces (one item per face, item boxes = face boxes).
//
// Differentiable queries (mesh_query_point*, mesh_query_ray, mesh_eval_*) have adjoints with
// respect to the query point / ray and to the vertex positions: vertex adjoints are added
// atomically to `points_grad` (the points array's .grad) when the mesh was built from an array
// with requires_grad. An adjoint re-runs its query (the forward result is not stored).
#pragma once

namespace sk {

struct mesh_t {
    bvh_t bvh;                             // items = faces; item boxes = face boxes (slot order)
    const float* tris;                     // faces in blocks of SK_LANES slots, component-major (see slot_tri)
    const vec_t<3, float32>* points;
    vec_t<3, float32>* points_grad;        // null unless the points array requires grad
    const vec_t<3, float32>* velocities;   // null without velocities
    const int32* indices;                  // [3 * num_faces]
    const float* wn;                       // [num_nodes][2][8] per child: N(3) P(3) area r; null: no winding
    float32 edge_len;                      // mean edge length (sign_normal's tolerance unit)
    int32 num_points;
    int32 num_faces;
    int32 pad_;
};
static_assert(sizeof(mesh_t) == 136, "mesh_t layout is mirrored in simkit/collision/mesh.py");

SK_INLINE const mesh_t& mesh_get(uint64 id) { return *reinterpret_cast<const mesh_t*>(id); }

// wp.mesh_get(id) in kernels: the mesh's points, velocities and index buffer as arrays (S: the MeshArrays
// struct of builtins_mesh.py). Loads from points add their adjoints to the points' gradient.
template <typename T>
SK_INLINE array_t<T> array_over(const T* data, T* grad, int32 n) {
    array_t<T> a{};
    a.data = const_cast<T*>(data);
    a.grad = data ? grad : nullptr;
    a.shape[0] = data ? n : 0;
    a.strides[0] = int64(sizeof(T));
    a.ndim = 1;
    return a;
}
template <typename S>
SK_INLINE S mesh_arrays(uint64 id) {
    const mesh_t& m = mesh_get(id);
    S s{};
    s.points = array_over(m.points, m.points_grad, m.num_points);
    s.velocities = array_over(m.velocities, static_cast<vec_t<3, float32>*>(nullptr), m.num_points);
    s.indices = array_over(m.indices, static_cast<int32*>(nullptr), 3 * m.num_faces);
    return s;
}
template <typename S>
SK_INLINE void adj_mesh_arrays(uint64, uint64&, const S&) {}  // (gradients go through the arrays' grad)


// Leaves start at multiples of SK_LANES slots (the builder pads them), and the faces of each block of
// SK_LANES slots are stored component-major: row r (a.x a.y a.z b.x ... c.z) holds that component of
// all SK_LANES faces, so a leaf's faces are tested in one vectorizable loop. A face excluded from point
// and ray queries (a sliver, or a padding slot) has a.x = NaN.
#define SK_LANES 8

namespace geo {

SK_INLINE const float* slot_block(const mesh_t& m, int32 s) { return m.tris + (s / SK_LANES) * (9 * SK_LANES); }
SK_INLINE void slot_tri(const mesh_t& m, int32 s, v3<float>& a, v3<float>& b, v3<float>& c) {
    const float* t = slot_block(m, s) + s % SK_LANES;
    a = mk(t[0 * SK_LANES], t[1 * SK_LANES], t[2 * SK_LANES]);
    b = mk(t[3 * SK_LANES], t[4 * SK_LANES], t[5 * SK_LANES]);
    c = mk(t[6 * SK_LANES], t[7 * SK_LANES], t[8 * SK_LANES]);
}
SK_INLINE bool face_ok(const mesh_t& m, int32 f) { return f >= 0 && f < m.num_faces; }
SK_INLINE void face_tri(const mesh_t& m, int32 f, v3<float>& a, v3<float>& b, v3<float>& c) {
    a = ld(m.points[m.indices[3 * f]]);
    b = ld(m.points[m.indices[3 * f + 1]]);
    c = ld(m.points[m.indices[3 * f + 2]]);
}
SK_INLINE void add_vertex_grad(const mesh_t& m, int32 f, int k, const v3<float>& g) {
    if (m.points_grad) grad_accumulate(m.points_grad + m.indices[3 * f + k], st(g));
}
SK_INLINE void add_face_grads(const mesh_t& m, int32 f, const v3<float>& ga, const v3<float>& gb, const v3<float>& gc) {
    add_vertex_grad(m, f, 0, ga);
    add_vertex_grad(m, f, 1, gb);
    add_vertex_grad(m, f, 2, gc);
}
SK_INLINE v3<float> zero3() { return mk(0.0f, 0.0f, 0.0f); }

// The lane functions below are written once over a lane type T, branch-free (bitwise &, |, selects):
// on the CPU T is an 8-float GCC/Clang vector (one AVX register, or two SSE ones), so a leaf's faces are
// tested together whatever the compiler's cost model would decide for a loop (gcc 12 vectorized the
// loop form for AVX-512 but not for AVX2, where it ran 3x slower); on CUDA T is float, one lane at a time.
#define SK_RESTRICT __restrict__
#if !SK_CUDA
typedef float v8f __attribute__((vector_size(32)));
typedef int32 v8i __attribute__((vector_size(32)));
static_assert(SK_LANES == 8, "v8f holds one block row");
SK_INLINE v8f fmn(v8f a, v8f b) { return a < b ? a : b; }
SK_INLINE v8f fmx(v8f a, v8f b) { return a > b ? a : b; }
SK_INLINE v8f splat(v8f, float v) {
    const v8f z = {};
    return z + v;
}
SK_INLINE bool any_lane(v8i m) {
    int32 a[8], r = 0;
    memcpy(a, &m, sizeof(a));
    for (int i = 0; i < 8; ++i) r |= a[i];
    return r != 0;
}
// Runs body(load, put) on all SK_LANES lanes at once: load(row) reads row `row` of the block for those
// lanes, put(out, value) writes their values to out[0 .. SK_LANES).
template <class Body>
SK_FORCEINLINE void for_lanes(const float* SK_RESTRICT t, Body body) {
    body([t](int row) {
        v8f v;
        memcpy(&v, t + row * SK_LANES, sizeof(v));
        return v;
    }, [](float* out, v8f v) { memcpy(out, &v, sizeof(v)); });
}
#else
SK_INLINE float splat(float, float v) { return v; }
SK_INLINE bool any_lane(bool m) { return m; }
template <class Body>
CUDA_CALLABLE SK_FORCEINLINE void for_lanes(const float* SK_RESTRICT t, Body body) {
    for (int l = 0; l < SK_LANES; ++l)
        body([t, l](int row) { return t[row * SK_LANES + l]; }, [l](float* out, float v) { out[l] = v; });
}
#endif

// Squared distance from p to each face of a block, all lanes at once and free of branches (so it
// vectorizes): inside the face's prism the distance to its plane, else the least distance to its three
// edges (segments, which cover the vertex regions). The same quantities as closest_tri, arranged
// differently, so the values agree with it to rounding; closest_point uses them as a filter and lets
// the scalar closest_tri decide. A NaN face (excluded, or padding) gives NaN, which passes no test.
SK_INLINE void face_dists(const float* SK_RESTRICT t, const v3<float>& p, float* SK_RESTRICT out) {
    for_lanes(t, [&](auto q, auto put) {
        const auto ax = q(0), ay = q(1), az = q(2);
        const auto abx = q(3) - ax, aby = q(4) - ay, abz = q(5) - az;
        const auto acx = q(6) - ax, acy = q(7) - ay, acz = q(8) - az;
        const auto apx = p.x - ax, apy = p.y - ay, apz = p.z - az;
        const auto bpx = apx - abx, bpy = apy - aby, bpz = apz - abz;
        const auto cpx = apx - acx, cpy = apy - acy, cpz = apz - acz;
        const auto d1 = abx * apx + aby * apy + abz * apz, d2 = acx * apx + acy * apy + acz * apz;
        const auto d3 = abx * bpx + aby * bpy + abz * bpz, d4 = acx * bpx + acy * bpy + acz * bpz;
        const auto d5 = abx * cpx + aby * cpy + abz * cpz, d6 = acx * cpx + acy * cpy + acz * cpz;
        const auto vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
        // the plane: the foot of the perpendicular, a + ab v + ac w
        const auto inv = 1.0f / (va + vb + vc);
        const auto v = vb * inv, w = vc * inv;
        const auto fx = apx - abx * v - acx * w, fy = apy - aby * v - acy * w, fz = apz - abz * v - acz * w;
        const auto face = fx * fx + fy * fy + fz * fz;
        // the edges ab, ac and bc: the closest point of each segment
        const auto lab = abx * abx + aby * aby + abz * abz, lac = acx * acx + acy * acy + acz * acz;
        const auto bcx = acx - abx, bcy = acy - aby, bcz = acz - abz;
        const auto lbc = bcx * bcx + bcy * bcy + bcz * bcz;
        const auto zero = splat(ax, 0.0f), one = splat(ax, 1.0f);
        const auto sab = fmn(fmx(d1 / lab, zero), one), sac = fmn(fmx(d2 / lac, zero), one);
        const auto sbc = fmn(fmx((d4 - d3) / lbc, zero), one);
        const auto ex = apx - abx * sab, ey = apy - aby * sab, ez = apz - abz * sab;
        const auto gx = apx - acx * sac, gy = apy - acy * sac, gz = apz - acz * sac;
        const auto hx = bpx - bcx * sbc, hy = bpy - bcy * sbc, hz = bpz - bcz * sbc;
        const auto edge = fmn(fmn(ex * ex + ey * ey + ez * ez, gx * gx + gy * gy + gz * gz), hx * hx + hy * hy + hz * hz);
        const auto inside = (va >= 0.0f) & (vb >= 0.0f) & (vc >= 0.0f);
        put(out, (inside ? face : edge) + (ax - ax));  // NaN for an excluded face
    });
}

// The watertight ray test (ray_tri) on every face of a block at once: out[l] = t of a hit, else +inf.
// Returns false when some lane landed on an edge or within rounding of one (one of U, V, W tiny next
// to the others; fused multiply-adds make the float values inexact there): ray_tri, in double
// precision, then decides every lane.
SK_INLINE bool ray_block(const float* SK_RESTRICT t, const wray_t& r, float* SK_RESTRICT out) {
    const float rx = get(r.o, r.kx), ry = get(r.o, r.ky), rz = get(r.o, r.kz);
    const float sx = r.sx, sy = r.sy, sz = r.sz;
    const int kx = r.kx, ky = r.ky, kz = r.kz;  // rows of the sheared coordinates (a; b at +3, c at +6)
    bool exact = true;
    for_lanes(t, [&](auto q, auto put) {
        const auto Az = q(kz) - rz, Bz = q(kz + 3) - rz, Cz = q(kz + 6) - rz;
        const auto Ax = q(kx) - rx - sx * Az, Ay = q(ky) - ry - sy * Az;
        const auto Bx = q(kx + 3) - rx - sx * Bz, By = q(ky + 3) - ry - sy * Bz;
        const auto Cx = q(kx + 6) - rx - sx * Cz, Cy = q(ky + 6) - ry - sy * Cz;
        const auto U = Cx * By - Cy * Bx, V = Ax * Cy - Ay * Cx, W = Bx * Ay - By * Ax;
        const auto det = U + V + W;
        const auto T = (U * Az + V * Bz + W * Cz) * sz;
        const auto neg = (U < 0.0f) | (V < 0.0f) | (W < 0.0f);
        const auto pos = (U > 0.0f) | (V > 0.0f) | (W > 0.0f);
        const auto front = ((det > 0.0f) & (T >= 0.0f)) | ((det < 0.0f) & (T <= 0.0f));  // NaN: false
        put(out, (!(neg & pos) & front) ? T / det : splat(T, INFINITY));
        const auto aU = fmx(U, -U), aV = fmx(V, -V), aW = fmx(W, -W);  // near an edge: ray_tri decides
        exact &= !any_lane(fmn(fmn(aU, aV), aW) <= (aU + aV + aW) * 1e-5f);
    });
    return exact;
}
// ---------------------------------------------------------------------------
// Closest point: best-first-ish depth-first search, nearer child first, pruned by box distance.

struct point_hit_t {
    int32 slot;
    int region;
    float u, v, d2;
};

// The faces of slots [s0, s1) (one leaf): every face's distance, all lanes at once; closest_tri decides
// the faces within rounding of the best.
CUDA_CALLABLE SK_FORCEINLINE void closest_point_leaf(const mesh_t& m, const v3<float>& p, int32 s0, int32 s1, float& best, point_hit_t& h) {
    float fd[SK_LANES];
    face_dists(slot_block(m, s0), p, fd);
    for (int32 s = s0; s < s1; ++s) {
        if (!(fd[s - s0] <= best * 1.0001f)) continue;
        v3<float> a, b, c;
        slot_tri(m, s, a, b, c);
        float u, v;
        const int reg = closest_tri(p, a, b, c, u, v);
        const v3<float> d = bary_point(a, b, c, u, v) - p;
        const float d2 = dot(d, d);
        if (d2 < best) {
            best = d2;
            h.slot = s;
            h.region = reg;
            h.u = u;
            h.v = v;
        }
    }
}

SK_INLINE bool closest_point(const mesh_t& m, const v3<float>& p, float max_dist, point_hit_t& h) {
    h.slot = -1;
    h.u = h.v = 0.0f;
    h.region = TRI_FACE;
    if (m.num_faces <= 0 || !(max_dist > 0.0f)) return false;
    float best = max_dist * max_dist;
    if (const bvh4_node_t* wide = m.bvh.wide) {  // the wide tree: four boxes per step, nearest child first
        bvh4_nearest(
            wide, 0.0f, best, [&](const bvh4_node_t& n, float* key) { box4_dist_sq(n.lo, n.hi, p, key); },
            [&](int32 s0, int32 s1) { closest_point_leaf(m, p, s0, s1, best, h); },
            [&](int32 s0) { prefetch_bytes(slot_block(m, s0), 9 * SK_LANES * sizeof(float)); });
        h.d2 = best;
        return h.slot >= 0;
    }
    bvh_nearest(
        m.bvh.nodes, 0.0f, best,
        [&](const bvh_node_t& n, float& k0, float& k1) {
            k0 = box_dist_sq(p, n.lo0, n.hi0);
            k1 = box_dist_sq(p, n.lo1, n.hi1);
        },
        [&](int32 s0, int32 s1) { closest_point_leaf(m, p, s0, s1, best, h); });
    h.d2 = best;
    return h.slot >= 0;
}

// ---------------------------------------------------------------------------
// Closest ray hit with 0 <= t < max_t.

struct ray_hit_t {
    int32 slot;
    float t, u, v;
};

// The faces of slots [s0, s1) (one leaf): the watertight test on all lanes at once, then the hits' (u, v).
CUDA_CALLABLE SK_FORCEINLINE void closest_hit_leaf(const mesh_t& m, const wray_t& wr, int32 s0, int32 s1, float& best, ray_hit_t& h) {
    float tl[SK_LANES];
    const bool exact = ray_block(slot_block(m, s0), wr, tl);
    for (int32 s = s0; s < s1; ++s) {
        float t = tl[s - s0], u, v;
        if (exact && !(t < best)) continue;
        v3<float> a, b, c;
        slot_tri(m, s, a, b, c);
        if (ray_tri(wr, a, b, c, t, u, v) && t < best) {  // the hit's (u, v), or an edge case
            best = t;
            h.slot = s;
            h.t = t;
            h.u = u;
            h.v = v;
        }
    }
}

SK_INLINE bool closest_hit(const mesh_t& m, const v3<float>& o, const v3<float>& d, float max_t, ray_hit_t& h,
                           int32 root = -1) {
    h.slot = -1;
    h.t = h.u = h.v = 0.0f;
    const int32 entry = bvh_root_entry(m.bvh, root);
    if (m.num_faces <= 0 || entry < 0) return false;
    const ray_t br = make_ray(o, d);
    const wray_t wr = make_wray(o, d);
    float best = max_t;
    const bvh4_node_t* wide = root < 0 ? m.bvh.wide : nullptr;  // a group's subtree: the binary tree
    if (wide) {  // the wide tree: four slab tests per step, nearest first
        bvh4_nearest(
            wide, -INFINITY, best, [&](const bvh4_node_t& n, float* key) { ray_box4(n.lo, n.hi, br, key); },
            [&](int32 s0, int32 s1) { closest_hit_leaf(m, wr, s0, s1, best, h); },
            [&](int32 s0) { prefetch_bytes(slot_block(m, s0), 9 * SK_LANES * sizeof(float)); });
        return h.slot >= 0;
    }
    bvh_nearest(
        m.bvh.nodes, -INFINITY, best,
        [&](const bvh_node_t& n, float& k0, float& k1) {  // entry parameters; +inf: missed
            if (!ray_box(br, n.lo0, n.hi0, k0)) k0 = INFINITY;
            if (!ray_box(br, n.lo1, n.hi1, k1)) k1 = INFINITY;
        },
        [&](int32 s0, int32 s1) { closest_hit_leaf(m, wr, s0, s1, best, h); }, entry);
    return h.slot >= 0;
}

// ---------------------------------------------------------------------------
// Inside/outside.

// Majority vote of three axis-aligned rays (+x, +y, +z): a ray whose closest hit is a back face
// votes inside; a miss votes outside. -1 inside, +1 outside.
SK_INLINE float sign_rays(const mesh_t& m, const v3<float>& p) {
    int inside = 0;
    for (int k = 0; k < 3; ++k) {
        const v3<float> d = mk(k == 0 ? 1.0f : 0.0f, k == 1 ? 1.0f : 0.0f, k == 2 ? 1.0f : 0.0f);
        ray_hit_t h;
        if (closest_hit(m, p, d, INFINITY, h)) {
            v3<float> a, b, c;
            slot_tri(m, h.slot, a, b, c);
            if (get(cross(b - a, c - a), k) > 0.0f) ++inside;
        }
    }
    return inside >= 2 ? -1.0f : 1.0f;
}

// Angle-weighted pseudo-normal at the closest point (Baerentzen & Aanaes): the face normal when
// the closest point is inside a face; else the faces whose closest point coincides with it (within
// tol) each contribute their unit normal times their angle there (pi on an edge).
SK_INLINE float sign_normal(const mesh_t& m, const v3<float>& p, const point_hit_t& h, float epsilon) {
    v3<float> a, b, c;
    slot_tri(m, h.slot, a, b, c);
    const v3<float> cp = bary_point(a, b, c, h.u, h.v);
    v3<float> nsum = cross(b - a, c - a);
    if (h.region != TRI_FACE) {
        const float tol = fmaxf(epsilon * m.edge_len, 1e-7f);
        const float r = sqrtf(h.d2) + tol, r2 = r * r;
        v3<float> acc = zero3();
        int32 st[SK_BVH_STACK];
        int sp = 1;
        st[0] = 0;
        while (sp > 0) {
            const int32 e = st[--sp];
            if (e < 0) {
                int32 s0, s1;
                bvh_leaf_range(m.bvh.nodes, e, s0, s1);
                for (int32 s = s0; s < s1; ++s) {
                    v3<float> x, y, z;
                    slot_tri(m, s, x, y, z);
                    if (!(x.x == x.x)) continue;
                    float u, v;
                    const int reg = closest_tri(p, x, y, z, u, v);
                    const v3<float> dq = bary_point(x, y, z, u, v) - cp;
                    if (dot(dq, dq) > tol * tol) continue;
                    float w = 3.14159265f;  // an edge (a face interior counts as one face)
                    if (reg == TRI_A || reg == TRI_B || reg == TRI_C) {
                        const v3<float> e1 = reg == TRI_A ? y - x : (reg == TRI_B ? z - y : x - z);
                        const v3<float> e2 = reg == TRI_A ? z - x : (reg == TRI_B ? x - y : y - z);
                        const float l = len(e1) * len(e2);
                        w = l > 0.0f ? acosf(fminf(fmaxf(dot(e1, e2) / l, -1.0f), 1.0f)) : 0.0f;
                    } else if (reg == TRI_FACE) {
                        w = 6.28318531f;
                    }
                    acc += w * tri_normal(x, y, z);
                }
                continue;
            }
            const bvh_node_t& n = m.bvh.nodes[e];
            for (int k = 0; k < 2; ++k) {
                if (n.child[k] < 0 || box_dist_sq(p, bvh_lo(n, k), bvh_hi(n, k)) > r2) continue;
                if (sp < SK_BVH_STACK) st[sp++] = bvh_entry(n, e, k);
            }
        }
        if (dot(acc, acc) > 0.0f) nsum = acc;
    }
    return dot(p - cp, nsum) < 0.0f ? -1.0f : 1.0f;
}

// Generalized winding number (Barill et al. 2018): exact solid angles near p, the dipole term of
// each far subtree (distance > accuracy * its radius). Needs the per-node data `wn`.
SK_INLINE float winding_number(const mesh_t& m, const v3<float>& p, float accuracy) {
    float omega = 0.0f;
    int32 st[SK_BVH_STACK];
    int sp = 1;
    st[0] = 0;
    while (sp > 0) {
        const int32 e = st[--sp];
        if (e < 0) {
            int32 s0, s1;
            bvh_leaf_range(m.bvh.nodes, e, s0, s1);
            for (int32 s = s0; s < s1; ++s) {
                v3<float> a, b, c;
                slot_tri(m, s, a, b, c);
                if (a.x == a.x) omega += solid_angle(p, a, b, c);
            }
            continue;
        }
        const bvh_node_t& n = m.bvh.nodes[e];
        for (int k = 0; k < 2; ++k) {
            if (n.child[k] < 0) continue;
            const float* w = m.wn + (2 * e + k) * 8;
            const v3<float> dp = ld(w + 3) - p;
            const float dist = len(dp);
            if (dist > accuracy * w[7]) {
                omega += dot(dp, ld(w)) / (dist * dist * dist);
            } else if (sp < SK_BVH_STACK) {
                st[sp++] = bvh_entry(n, e, k);
            }
        }
    }
    return omega * (1.0f / (4.0f * 3.14159265f));
}

// Adjoint of a closest-point result's (u, v) with respect to the point and the face's vertices.
SK_INLINE void adj_point_hit(const mesh_t& m, const v3<float>& p, const point_hit_t& h, float adj_u, float adj_v,
                             vec_t<3, float32>& adj_point) {
    if (h.slot < 0) return;
    const int32 f = m.bvh.prims[h.slot];
    v3<float> a, b, c;
    face_tri(m, f, a, b, c);
    v3<float> ap = zero3(), aa = zero3(), ab = zero3(), ac = zero3();
    adj_closest_tri(h.region, p, a, b, c, h.u, h.v, adj_u, adj_v, ap, aa, ab, ac);
    add_to(adj_point, ap);
    add_face_grads(m, f, aa, ab, ac);
}

}  // namespace geo

// ---------------------------------------------------------------------------
// Point queries. R is the MeshQueryPoint struct (fields result, sign, face, u, v).

template <typename R> SK_INLINE R mesh_point_result(const mesh_t& m, bool found, const geo::point_hit_t& h) {
    R r = zero<R>();
    r.result = found;
    if (found) {
        r.face = m.bvh.prims[h.slot];
        r.u = h.u;
        r.v = h.v;
    }
    return r;
}

// (returns whether the query found a face)
template <typename R> SK_INLINE bool mesh_point_adjoint(uint64 id, vec_t<3, float32> point, float32 max_dist,
                                                        vec_t<3, float32>& adj_point, const R& adj_ret) {
    const mesh_t& m = mesh_get(id);
    const geo::v3<float> p = geo::ld(point);
    geo::point_hit_t h;
    if (!geo::closest_point(m, p, max_dist, h)) return false;
    geo::adj_point_hit(m, p, h, adj_ret.u, adj_ret.v, adj_point);
    return true;
}

template <typename R> SK_INLINE R mesh_query_point_no_sign(uint64 id, vec_t<3, float32> point, float32 max_dist) {
    const mesh_t& m = mesh_get(id);
    geo::point_hit_t h;
    const bool found = geo::closest_point(m, geo::ld(point), max_dist, h);
    return mesh_point_result<R>(m, found, h);
}
template <typename R>
SK_INLINE void adj_mesh_query_point_no_sign(uint64 id, vec_t<3, float32> point, float32 max_dist, uint64&,
                                            vec_t<3, float32>& adj_point, float32&, const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}

template <typename R> SK_INLINE R mesh_query_point(uint64 id, vec_t<3, float32> point, float32 max_dist) {
    const mesh_t& m = mesh_get(id);
    geo::point_hit_t h;
    const geo::v3<float> p = geo::ld(point);
    const bool found = geo::closest_point(m, p, max_dist, h);
    R r = mesh_point_result<R>(m, found, h);
    if (found) r.sign = geo::sign_rays(m, p);
    return r;
}
template <typename R>
SK_INLINE void adj_mesh_query_point(uint64 id, vec_t<3, float32> point, float32 max_dist, uint64&,
                                    vec_t<3, float32>& adj_point, float32&, const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}

template <typename R>
SK_INLINE R mesh_query_point_sign_normal(uint64 id, vec_t<3, float32> point, float32 max_dist, float32 epsilon) {
    const mesh_t& m = mesh_get(id);
    geo::point_hit_t h;
    const geo::v3<float> p = geo::ld(point);
    const bool found = geo::closest_point(m, p, max_dist, h);
    R r = mesh_point_result<R>(m, found, h);
    if (found) r.sign = geo::sign_normal(m, p, h, epsilon);
    return r;
}
template <typename R>
SK_INLINE R mesh_query_point_sign_normal(uint64 id, vec_t<3, float32> point, float32 max_dist) {
    return mesh_query_point_sign_normal<R>(id, point, max_dist, 1e-3f);
}
template <typename R>
SK_INLINE void adj_mesh_query_point_sign_normal(uint64 id, vec_t<3, float32> point, float32 max_dist, float32, uint64&,
                                                vec_t<3, float32>& adj_point, float32&, float32&, const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}
template <typename R>
SK_INLINE void adj_mesh_query_point_sign_normal(uint64 id, vec_t<3, float32> point, float32 max_dist, uint64&,
                                                vec_t<3, float32>& adj_point, float32&, const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}

// Without winding-number data (Mesh(support_winding_number=False)) the sign falls back to the
// ray vote, as in Warp.
template <typename R>
SK_INLINE R mesh_query_point_sign_winding_number(uint64 id, vec_t<3, float32> point, float32 max_dist, float32 accuracy,
                                                 float32 threshold) {
    const mesh_t& m = mesh_get(id);
    geo::point_hit_t h;
    const geo::v3<float> p = geo::ld(point);
    const bool found = geo::closest_point(m, p, max_dist, h);
    R r = mesh_point_result<R>(m, found, h);
    if (found) {
        if (m.wn) r.sign = geo::winding_number(m, p, accuracy) > threshold ? -1.0f : 1.0f;
        else r.sign = geo::sign_rays(m, p);
    }
    return r;
}
template <typename R>
SK_INLINE R mesh_query_point_sign_winding_number(uint64 id, vec_t<3, float32> point, float32 max_dist, float32 accuracy) {
    return mesh_query_point_sign_winding_number<R>(id, point, max_dist, accuracy, 0.5f);
}
template <typename R>
SK_INLINE R mesh_query_point_sign_winding_number(uint64 id, vec_t<3, float32> point, float32 max_dist) {
    return mesh_query_point_sign_winding_number<R>(id, point, max_dist, 2.0f, 0.5f);
}
template <typename R>
SK_INLINE void adj_mesh_query_point_sign_winding_number(uint64 id, vec_t<3, float32> point, float32 max_dist, float32,
                                                        float32, uint64&, vec_t<3, float32>& adj_point, float32&,
                                                        float32&, float32&, const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}
template <typename R>
SK_INLINE void adj_mesh_query_point_sign_winding_number(uint64 id, vec_t<3, float32> point, float32 max_dist, float32,
                                                        uint64&, vec_t<3, float32>& adj_point, float32&, float32&,
                                                        const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}
template <typename R>
SK_INLINE void adj_mesh_query_point_sign_winding_number(uint64 id, vec_t<3, float32> point, float32 max_dist, uint64&,
                                                        vec_t<3, float32>& adj_point, float32&, const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}

// The winding number itself (an extension: Warp computes it only inside the sign query).
SK_INLINE float32 mesh_query_winding_number(uint64 id, vec_t<3, float32> point, float32 accuracy) {
    const mesh_t& m = mesh_get(id);
    return m.wn && m.num_faces > 0 ? geo::winding_number(m, geo::ld(point), accuracy) : 0.0f;
}

// ---------------------------------------------------------------------------
// Ray query. R is the MeshQueryRay struct (fields result, sign, face, t, u, v, normal).

template <typename R>
SK_INLINE R mesh_query_ray(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir, float32 max_t, int32 root = -1) {
    const mesh_t& m = mesh_get(id);
    geo::ray_hit_t h;
    R r = zero<R>();
    const geo::v3<float> d = geo::ld(dir);
    r.result = geo::closest_hit(m, geo::ld(start), d, max_t, h, root);
    if (r.result) {
        geo::v3<float> a, b, c;
        geo::slot_tri(m, h.slot, a, b, c);
        const geo::v3<float> n = geo::tri_normal(a, b, c);
        r.face = m.bvh.prims[h.slot];
        r.t = h.t;
        r.u = h.u;
        r.v = h.v;
        r.sign = geo::dot(d, n) < 0.0f ? 1.0f : -1.0f;
        r.normal = geo::st(n);
    }
    return r;
}
template <typename R>  // (returns whether the ray hit)
SK_INLINE bool adj_mesh_query_ray_root(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir, float32 max_t,
                                       int32 root, vec_t<3, float32>& adj_start, vec_t<3, float32>& adj_dir,
                                       const R& adj_ret) {
    using namespace geo;
    const mesh_t& m = mesh_get(id);
    ray_hit_t h;
    const v3<float> d = ld(dir);
    if (!closest_hit(m, ld(start), d, max_t, h, root)) return false;
    const int32 f = m.bvh.prims[h.slot];
    v3<float> a, b, c;
    face_tri(m, f, a, b, c);
    v3<float> as = zero3(), ad = zero3(), aa = zero3(), ab = zero3(), ac = zero3();
    adj_ray_tri(d, a, b, c, h.t, h.u, h.v, adj_ret.t, adj_ret.u, adj_ret.v, as, ad, aa, ab, ac);
    adj_tri_normal(a, b, c, ld(adj_ret.normal), aa, ab, ac);
    add_to(adj_start, as);
    add_to(adj_dir, ad);
    add_face_grads(m, f, aa, ab, ac);
    return true;
}
template <typename R>
SK_INLINE void adj_mesh_query_ray(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir, float32 max_t, uint64&,
                                  vec_t<3, float32>& adj_start, vec_t<3, float32>& adj_dir, float32&, const R& adj_ret) {
    adj_mesh_query_ray_root(id, start, dir, max_t, -1, adj_start, adj_dir, adj_ret);
}
template <typename R>
SK_INLINE void adj_mesh_query_ray(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir, float32 max_t, int32 root,
                                  uint64&, vec_t<3, float32>& adj_start, vec_t<3, float32>& adj_dir, float32&, int32&,
                                  const R& adj_ret) {
    adj_mesh_query_ray_root(id, start, dir, max_t, root, adj_start, adj_dir, adj_ret);
}

// ---------------------------------------------------------------------------
// Evaluation and access.

SK_INLINE vec_t<3, float32> mesh_eval_position(uint64 id, int32 face, float32 u, float32 v) {
    const mesh_t& m = mesh_get(id);
    if (!geo::face_ok(m, face)) return zero<vec_t<3, float32>>();
    geo::v3<float> a, b, c;
    geo::face_tri(m, face, a, b, c);
    return geo::st(geo::bary_point(a, b, c, u, v));
}
SK_INLINE void adj_mesh_eval_position(uint64 id, int32 face, float32 u, float32 v, uint64&, int32&, float32& adj_u,
                                      float32& adj_v, const vec_t<3, float32>& adj_ret) {
    using namespace geo;
    const mesh_t& m = mesh_get(id);
    if (!face_ok(m, face)) return;
    v3<float> a, b, c;
    face_tri(m, face, a, b, c);
    const v3<float> g = ld(adj_ret);
    adj_u += dot(g, a - c);
    adj_v += dot(g, b - c);
    add_face_grads(m, face, u * g, v * g, (1.0f - u - v) * g);
}

SK_INLINE vec_t<3, float32> mesh_eval_velocity(uint64 id, int32 face, float32 u, float32 v) {
    const mesh_t& m = mesh_get(id);
    if (!m.velocities || !geo::face_ok(m, face)) return zero<vec_t<3, float32>>();
    const int32* i = m.indices + 3 * face;
    return geo::st(geo::bary_point(geo::ld(m.velocities[i[0]]), geo::ld(m.velocities[i[1]]),
                                   geo::ld(m.velocities[i[2]]), u, v));
}
SK_INLINE void adj_mesh_eval_velocity(uint64 id, int32 face, float32 u, float32 v, uint64&, int32&, float32& adj_u,
                                      float32& adj_v, const vec_t<3, float32>& adj_ret) {
    using namespace geo;
    const mesh_t& m = mesh_get(id);
    if (!m.velocities || !face_ok(m, face)) return;
    const int32* i = m.indices + 3 * face;
    const v3<float> a = ld(m.velocities[i[0]]), b = ld(m.velocities[i[1]]), c = ld(m.velocities[i[2]]);
    const v3<float> g = ld(adj_ret);
    adj_u += dot(g, a - c);
    adj_v += dot(g, b - c);
}

SK_INLINE vec_t<3, float32> mesh_eval_face_normal(uint64 id, int32 face) {
    const mesh_t& m = mesh_get(id);
    if (!geo::face_ok(m, face)) return zero<vec_t<3, float32>>();
    geo::v3<float> a, b, c;
    geo::face_tri(m, face, a, b, c);
    return geo::st(geo::tri_normal(a, b, c));
}
SK_INLINE void adj_mesh_eval_face_normal(uint64 id, int32 face, uint64&, int32&, const vec_t<3, float32>& adj_ret) {
    using namespace geo;
    const mesh_t& m = mesh_get(id);
    if (!face_ok(m, face)) return;
    v3<float> a, b, c, aa = zero3(), ab = zero3(), ac = zero3();
    face_tri(m, face, a, b, c);
    adj_tri_normal(a, b, c, ld(adj_ret), aa, ab, ac);
    add_face_grads(m, face, aa, ab, ac);
}

// index: a position in the index buffer, [0, 3 * num_faces)
SK_INLINE int32 mesh_get_index(uint64 id, int32 index) {
    const mesh_t& m = mesh_get(id);
    return index >= 0 && index < 3 * m.num_faces ? m.indices[index] : -1;
}
SK_INLINE vec_t<3, float32> mesh_get_point(uint64 id, int32 index) {
    const mesh_t& m = mesh_get(id);
    return index >= 0 && index < 3 * m.num_faces ? m.points[m.indices[index]] : zero<vec_t<3, float32>>();
}
SK_INLINE vec_t<3, float32> mesh_get_velocity(uint64 id, int32 index) {
    const mesh_t& m = mesh_get(id);
    return m.velocities && index >= 0 && index < 3 * m.num_faces ? m.velocities[m.indices[index]]
                                                                 : zero<vec_t<3, float32>>();
}

}  // namespace sk
