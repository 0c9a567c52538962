// simkit collision: mesh queries built on the tree walk of bvh.h and the face data of mesh.h (host C++17 and
// NVRTC CUDA; included after mesh.h): sphere and box iterators (mesh_query_t), ray hit counts and any-hit, the
// furthest point, the closest point signed by ray parity, and Warp's older output-argument forms of the point
// and ray queries. Only mesh_query_point_sign_parity (its closest point) has an adjoint: the furthest point is
// a vertex (piecewise constant barycentrics; gradients flow through mesh_eval_position).
#pragma once

namespace sk {
namespace geo {

// Squared distance from p to the triangle (a, b, c). A point in the plane of the face, over its interior,
// is at distance 0 exactly (the plane distance); a degenerate face is its nearest edge.
SK_INLINE float seg_dist_sq(const v3<float>& p, const v3<float>& x, const v3<float>& y) {
    const v3<float> e = y - x;
    const float l2 = dot(e, e);
    const float s = l2 > 0.0f ? fminf(fmaxf(dot(p - x, e) / l2, 0.0f), 1.0f) : 0.0f;
    const v3<float> d = x + e * s - p;
    return dot(d, d);
}
SK_INLINE float tri_dist_sq(const v3<float>& p, const v3<float>& a, const v3<float>& b, const v3<float>& c) {
    const v3<float> n = cross(b - a, c - a);
    const float nn = dot(n, n);
    if (!(nn > 0.0f))
        return fminf(fminf(seg_dist_sq(p, a, b), seg_dist_sq(p, b, c)), seg_dist_sq(p, c, a));
    float u, v;
    if (closest_tri(p, a, b, c, u, v) == TRI_FACE) {
        const float h = dot(p - a, n);
        return h * h / nn;
    }
    const v3<float> d = bary_point(a, b, c, u, v) - p;
    return dot(d, d);
}

// Visit the slots of the leaves whose box the ray (start, dir) meets with entry parameter < max_t, from
// `root` (-1: the whole tree); visit(slot) returns true to stop. Returns true when stopped.
template <typename Visit>
SK_INLINE bool ray_slots(const mesh_t& m, vec_t<3, float32> start, vec_t<3, float32> dir, float max_t, int32 root,
                         const Visit& visit) {
    bvh_query_t q = bvh_query_ray(uint64(&m.bvh), start, dir, root);
    while (bvh_query_next_range(q, max_t)) {
        while (q.mask) {
            const int32 k = bvh_lowest_bit(q.mask);
            q.mask &= q.mask - 1;
            if (visit(q.base + k)) return true;
        }
    }
    return false;
}

// Squared distance from p to the farthest corner of the box [lo, hi] (+inf for an empty box, lo > hi).
SK_INLINE float box_far_sq(const v3<float>& p, float lx, float ly, float lz, float hx, float hy, float hz) {
    const float dx = fmx(fabsf(p.x - lx), fabsf(p.x - hx));
    const float dy = fmx(fabsf(p.y - ly), fabsf(p.y - hy));
    const float dz = fmx(fabsf(p.z - lz), fabsf(p.z - hz));
    return lx <= hx ? dx * dx + dy * dy + dz * dz : INFINITY;
}

// The furthest point of a face from p is one of its vertices (the distance is convex): corner 0, 1 or 2.
struct far_hit_t {
    int32 slot;
    int corner;
};
// The faces of slots [s0, s1) (one leaf); `key` is minus the best squared distance so far.
SK_INLINE void furthest_point_leaf(const mesh_t& m, const v3<float>& p, int32 s0, int32 s1, float& key,
                                   far_hit_t& h) {
    for (int32 s = s0; s < s1; ++s) {
        v3<float> a, b, c;
        slot_tri(m, s, a, b, c);
        if (!(a.x == a.x)) continue;  // excluded (a sliver) or padding
        const float da = dot(a - p, a - p), db = dot(b - p, b - p), dc = dot(c - p, c - p);
        const int corner = (da > db && da > dc) ? 0 : (db > dc ? 1 : 2);  // (ties as in Warp)
        const float d2 = corner == 0 ? da : (corner == 1 ? db : dc);
        if (-d2 < key) {
            key = -d2;
            h.slot = s;
            h.corner = corner;
        }
    }
}
// Farthest-first search with keys = minus the farthest squared distance of each box.
SK_INLINE bool furthest_point(const mesh_t& m, const v3<float>& p, float min_dist, far_hit_t& h) {
    h.slot = -1;
    h.corner = 0;
    if (m.num_faces <= 0 || min_dist != min_dist) return false;
    float key = min_dist >= 0.0f ? -(min_dist * min_dist) : INFINITY;
    if (const bvh4_node_t* wide = m.bvh.wide) {
        bvh4_nearest(
            wide, -INFINITY, key,
            [&](const bvh4_node_t& n, float* out) {
                for (int k = 0; k < 4; ++k)
                    out[k] = -box_far_sq(p, n.lo[0][k], n.lo[1][k], n.lo[2][k], n.hi[0][k], n.hi[1][k], n.hi[2][k]);
            },
            [&](int32 s0, int32 s1) { furthest_point_leaf(m, p, s0, s1, key, h); });
        return h.slot >= 0;
    }
    bvh_nearest(
        m.bvh.nodes, -INFINITY, key,
        [&](const bvh_node_t& n, float& k0, float& k1) {
            k0 = -box_far_sq(p, n.lo0[0], n.lo0[1], n.lo0[2], n.hi0[0], n.hi0[1], n.hi0[2]);
            k1 = -box_far_sq(p, n.lo1[0], n.lo1[1], n.lo1[2], n.hi1[0], n.hi1[1], n.hi1[2]);
        },
        [&](int32 s0, int32 s1) { furthest_point_leaf(m, p, s0, s1, key, h); });
    return h.slot >= 0;
}

}  // namespace geo

// Warp's older forms, which write the results to the caller's variables and return whether one was found
// (as the `result` of the struct forms; the variables keep their values when not).
struct mesh_point_out_t {
    bool result;
    float32 sign;
    int32 face;
    float32 u, v;
};
SK_INLINE bool mesh_point_out(const mesh_point_out_t& r, float32* sign, int32& face, float32& u, float32& v) {
    if (r.result) {
        if (sign) *sign = r.sign;
        face = r.face;
        u = r.u;
        v = r.v;
    }
    return r.result;
}
SK_INLINE bool mesh_query_point(uint64 id, vec_t<3, float32> p, float32 max_dist, float32& sign, int32& face,
                                float32& u, float32& v) {
    return mesh_point_out(mesh_query_point<mesh_point_out_t>(id, p, max_dist), &sign, face, u, v);
}
SK_INLINE bool mesh_query_point_no_sign(uint64 id, vec_t<3, float32> p, float32 max_dist, int32& face, float32& u,
                                        float32& v) {
    return mesh_point_out(mesh_query_point_no_sign<mesh_point_out_t>(id, p, max_dist), nullptr, face, u, v);
}
SK_INLINE bool mesh_query_point_sign_normal(uint64 id, vec_t<3, float32> p, float32 max_dist, float32& sign,
                                            int32& face, float32& u, float32& v, float32 epsilon = 1e-3f) {
    return mesh_point_out(mesh_query_point_sign_normal<mesh_point_out_t>(id, p, max_dist, epsilon), &sign, face, u, v);
}
SK_INLINE bool mesh_query_point_sign_winding_number(uint64 id, vec_t<3, float32> p, float32 max_dist, float32& sign,
                                                    int32& face, float32& u, float32& v, float32 accuracy = 2.0f,
                                                    float32 threshold = 0.5f) {
    return mesh_point_out(mesh_query_point_sign_winding_number<mesh_point_out_t>(id, p, max_dist, accuracy, threshold),
                          &sign, face, u, v);
}
struct mesh_ray_out_t {
    bool result;
    float32 sign;
    int32 face;
    float32 t, u, v;
    vec_t<3, float32> normal;
};
SK_INLINE bool mesh_query_ray(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir, float32 max_t, float32& t,
                              float32& u, float32& v, float32& sign, vec_t<3, float32>& normal, int32& face,
                              int32 root = -1) {
    const mesh_ray_out_t r = mesh_query_ray<mesh_ray_out_t>(id, start, dir, max_t, root);
    if (r.result) {
        t = r.t;
        u = r.u;
        v = r.v;
        sign = r.sign;
        normal = r.normal;
        face = r.face;
    }
    return r.result;
}

// Any face hit with 0 <= t < max_t (stops at the first one found).
SK_INLINE bool mesh_query_ray_anyhit(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir, float32 max_t,
                                     int32 root = -1) {
    const mesh_t& m = mesh_get(id);
    const geo::wray_t wr = geo::make_wray(geo::ld(start), geo::ld(dir));
    return geo::ray_slots(m, start, dir, max_t, root, [&](int32 s) {
        geo::v3<float> a, b, c;
        geo::slot_tri(m, s, a, b, c);
        float t, u, v;
        return geo::ray_tri(wr, a, b, c, t, u, v) && t < max_t;
    });
}

// The number of faces the ray meets at t >= 0 (a ray through an edge or vertex meets every face there).
SK_INLINE int32 mesh_query_ray_count_intersections(uint64 id, vec_t<3, float32> start, vec_t<3, float32> dir,
                                                   int32 root = -1) {
    const mesh_t& m = mesh_get(id);
    const geo::wray_t wr = geo::make_wray(geo::ld(start), geo::ld(dir));
    int32 count = 0;
    geo::ray_slots(m, start, dir, INFINITY, root, [&](int32 s) {
        geo::v3<float> a, b, c;
        geo::slot_tri(m, s, a, b, c);
        float t, u, v;
        count += geo::ray_tri(wr, a, b, c, t, u, v) ? 1 : 0;
        return false;
    });
    return count;
}

// The furthest point of the mesh from `point` among faces with a point strictly farther than min_dist
// (R: the MeshQueryPoint struct; sign 0). A vertex: (u, v) is (1, 0), (0, 1) or (0, 0).
template <typename R>
SK_INLINE R mesh_query_furthest_point_no_sign(uint64 id, vec_t<3, float32> point, float32 min_dist) {
    const mesh_t& m = mesh_get(id);
    geo::far_hit_t h;
    R r = zero<R>();
    r.result = geo::furthest_point(m, geo::ld(point), min_dist, h);
    if (r.result) {
        r.face = m.bvh.prims[h.slot];
        r.u = h.corner == 0 ? 1.0f : 0.0f;
        r.v = h.corner == 1 ? 1.0f : 0.0f;
    }
    return r;
}

// Inside (-1) when at least half of n_sample rays from p cross the mesh an odd number of times, else +1 (Warp's
// parity vote): directions (1, 1, 1) plus a per-axis offset uniform in [-scale, scale), from a fixed seed.
SK_INLINE float32 mesh_sign_parity(uint64 id, vec_t<3, float32> p, int32 n_sample, float32 scale) {
    uint32 state = rand_init(42);
    int32 vote = 0;
    for (int32 i = 0; i < n_sample; ++i) {
        vec_t<3, float32> d;
        do {
            d.c[0] = 1.0f + randf(state, -scale, scale);
            d.c[1] = 1.0f + randf(state, -scale, scale);
            d.c[2] = 1.0f + randf(state, -scale, scale);
        } while (d.c[0] * d.c[0] + d.c[1] * d.c[1] + d.c[2] * d.c[2] < 1e-8f);
        if (mesh_query_ray_count_intersections(id, p, d) % 2) ++vote;
    }
    return 2 * vote >= n_sample ? -1.0f : 1.0f;
}
template <typename R>
SK_INLINE R mesh_query_point_sign_parity(uint64 id, vec_t<3, float32> point, float32 max_dist, int32 n_sample = 1,
                                         float32 perturbation_scale = 0.1f) {
    const mesh_t& m = mesh_get(id);
    geo::point_hit_t h;
    const bool found = geo::closest_point(m, geo::ld(point), max_dist, h);
    R r = mesh_point_result<R>(m, found, h);
    if (found) r.sign = mesh_sign_parity(id, point, n_sample, perturbation_scale);
    return r;
}
template <typename R>  // (the closest point's adjoint; the sign has none)
SK_INLINE void adj_mesh_query_point_sign_parity(uint64 id, vec_t<3, float32> point, float32 max_dist, int32, float32,
                                                uint64&, vec_t<3, float32>& adj_point, float32&, int32&, float32&,
                                                const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}
template <typename R>
SK_INLINE void adj_mesh_query_point_sign_parity(uint64 id, vec_t<3, float32> point, float32 max_dist, int32, uint64&,
                                                vec_t<3, float32>& adj_point, float32&, int32&, const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}
template <typename R>
SK_INLINE void adj_mesh_query_point_sign_parity(uint64 id, vec_t<3, float32> point, float32 max_dist, uint64&,
                                                vec_t<3, float32>& adj_point, float32&, const R& adj_ret) {
    mesh_point_adjoint(id, point, max_dist, adj_point, adj_ret);
}

// Their older forms.
SK_INLINE bool mesh_query_point_sign_parity(uint64 id, vec_t<3, float32> p, float32 max_dist, float32& inside,
                                            int32& face, float32& u, float32& v, int32 n_sample = 1,
                                            float32 perturbation_scale = 0.1f) {
    return mesh_point_out(mesh_query_point_sign_parity<mesh_point_out_t>(id, p, max_dist, n_sample, perturbation_scale),
                          &inside, face, u, v);
}
SK_INLINE bool mesh_query_furthest_point_no_sign(uint64 id, vec_t<3, float32> p, float32 min_dist, int32& face,
                                                 float32& u, float32& v) {
    return mesh_point_out(mesh_query_furthest_point_no_sign<mesh_point_out_t>(id, p, min_dist), nullptr, face, u, v);
}

// Adjoints of the older forms. When the query found a face it overwrote the variables: their adjoints go to the
// query point / ray (and the vertices) and are consumed; else the variables kept their values, and their adjoints
// pass through to what was there before.
typedef vec_t<3, float32> vec3f;
SK_INLINE void adj_point_out(uint64 id, vec3f p, float32 max_dist, vec3f& adj_p, float32* adj_sign, float32& adj_u,
                             float32& adj_v) {
    mesh_point_out_t a = zero<mesh_point_out_t>();
    a.u = adj_u;
    a.v = adj_v;
    if (!mesh_point_adjoint(id, p, max_dist, adj_p, a)) return;
    if (adj_sign) *adj_sign = 0.0f;
    adj_u = adj_v = 0.0f;
}
SK_INLINE void adj_mesh_query_point(uint64 id, vec3f p, float32 max_dist, float32, int32, float32, float32, uint64&,
                                    vec3f& adj_p, float32&, float32& adj_sign, int32&, float32& adj_u, float32& adj_v,
                                    bool) {
    adj_point_out(id, p, max_dist, adj_p, &adj_sign, adj_u, adj_v);
}
SK_INLINE void adj_mesh_query_point_sign_normal(uint64 id, vec3f p, float32 max_dist, float32, int32, float32, float32,
                                                uint64&, vec3f& adj_p, float32&, float32& adj_sign, int32&,
                                                float32& adj_u, float32& adj_v, bool) {
    adj_point_out(id, p, max_dist, adj_p, &adj_sign, adj_u, adj_v);
}
SK_INLINE void adj_mesh_query_point_sign_normal(uint64 id, vec3f p, float32 max_dist, float32, int32, float32, float32,
                                                float32, uint64&, vec3f& adj_p, float32&, float32& adj_sign, int32&,
                                                float32& adj_u, float32& adj_v, float32&, bool) {
    adj_point_out(id, p, max_dist, adj_p, &adj_sign, adj_u, adj_v);
}
SK_INLINE void adj_mesh_query_point_sign_winding_number(uint64 id, vec3f p, float32 max_dist, float32, int32, float32,
                                                        float32, uint64&, vec3f& adj_p, float32&, float32& adj_sign,
                                                        int32&, float32& adj_u, float32& adj_v, bool) {
    adj_point_out(id, p, max_dist, adj_p, &adj_sign, adj_u, adj_v);
}
SK_INLINE void adj_mesh_query_point_sign_winding_number(uint64 id, vec3f p, float32 max_dist, float32, int32, float32,
                                                        float32, float32, float32, uint64&, vec3f& adj_p, float32&,
                                                        float32& adj_sign, int32&, float32& adj_u, float32& adj_v,
                                                        float32&, float32&, bool) {
    adj_point_out(id, p, max_dist, adj_p, &adj_sign, adj_u, adj_v);
}
SK_INLINE void adj_mesh_query_point_sign_parity(uint64 id, vec3f p, float32 max_dist, float32, int32, float32, float32,
                                                uint64&, vec3f& adj_p, float32&, float32& adj_sign, int32&,
                                                float32& adj_u, float32& adj_v, bool) {
    adj_point_out(id, p, max_dist, adj_p, &adj_sign, adj_u, adj_v);
}
SK_INLINE void adj_mesh_query_point_sign_parity(uint64 id, vec3f p, float32 max_dist, float32, int32, float32, float32,
                                                int32, uint64&, vec3f& adj_p, float32&, float32& adj_sign, int32&,
                                                float32& adj_u, float32& adj_v, int32&, bool) {
    adj_point_out(id, p, max_dist, adj_p, &adj_sign, adj_u, adj_v);
}
SK_INLINE void adj_mesh_query_point_sign_parity(uint64 id, vec3f p, float32 max_dist, float32, int32, float32, float32,
                                                int32, float32, uint64&, vec3f& adj_p, float32&, float32& adj_sign,
                                                int32&, float32& adj_u, float32& adj_v, int32&, float32&, bool) {
    adj_point_out(id, p, max_dist, adj_p, &adj_sign, adj_u, adj_v);
}
SK_INLINE void adj_mesh_query_point_no_sign(uint64 id, vec3f p, float32 max_dist, int32, float32, float32, uint64&,
                                            vec3f& adj_p, float32&, int32&, float32& adj_u, float32& adj_v, bool) {
    adj_point_out(id, p, max_dist, adj_p, nullptr, adj_u, adj_v);
}
SK_INLINE void adj_mesh_query_ray(uint64 id, vec3f start, vec3f dir, float32 max_t, float32, float32, float32, float32,
                                  vec3f, int32, int32 root, uint64&, vec3f& adj_start, vec3f& adj_dir, float32&,
                                  float32& adj_t, float32& adj_u, float32& adj_v, float32& adj_sign, vec3f& adj_normal,
                                  int32&, int32&, bool) {
    mesh_ray_out_t a = zero<mesh_ray_out_t>();
    a.t = adj_t;
    a.u = adj_u;
    a.v = adj_v;
    a.normal = adj_normal;
    if (!adj_mesh_query_ray_root(id, start, dir, max_t, root, adj_start, adj_dir, a)) return;
    adj_t = adj_u = adj_v = adj_sign = 0.0f;
    adj_normal = zero<vec3f>();
}
SK_INLINE void adj_mesh_query_ray(uint64 id, vec3f start, vec3f dir, float32 max_t, float32 t, float32 u, float32 v,
                                  float32 sign, vec3f normal, int32 face, uint64& adj_id, vec3f& adj_start,
                                  vec3f& adj_dir, float32& adj_max_t, float32& adj_t, float32& adj_u, float32& adj_v,
                                  float32& adj_sign, vec3f& adj_normal, int32& adj_face, bool adj_ret) {
    int32 adj_root = 0;
    adj_mesh_query_ray(id, start, dir, max_t, t, u, v, sign, normal, face, -1, adj_id, adj_start, adj_dir, adj_max_t,
                       adj_t, adj_u, adj_v, adj_sign, adj_normal, adj_face, adj_root, adj_ret);
}

// ---------------------------------------------------------------------------
// Box and sphere queries, iterated with mesh_query_next. A box query returns the faces whose box overlaps
// it (a broad phase); a sphere query the faces within its radius of its center (box test, then the exact
// point-triangle distance of every candidate of a leaf).

struct mesh_query_t {
    bvh_query_t q;  // over the mesh's tree; its kind is SK_QUERY_AABB or SK_QUERY_SPHERE
    const mesh_t* mesh;
};
typedef mesh_query_t mesh_query_aabb_t;
SK_INLINE void accum(mesh_query_t&, const mesh_query_t&) {}

SK_INLINE uint64 mesh_get_bvh(uint64 id) { return uint64(&mesh_get(id).bvh); }
SK_INLINE int32 mesh_get_group_root(uint64 id, int32 group) { return bvh_group_root(mesh_get(id).bvh, group); }

SK_INLINE mesh_query_t mesh_query_aabb(uint64 id, vec_t<3, float32> lower, vec_t<3, float32> upper) {
    mesh_query_t mq;
    mq.q = bvh_query_aabb(mesh_get_bvh(id), lower, upper);
    mq.mesh = &mesh_get(id);
    return mq;
}
SK_INLINE mesh_query_t mesh_query_sphere(uint64 id, vec_t<3, float32> center, float32 radius) {
    mesh_query_t mq;
    mq.q = bvh_query_sphere(mesh_get_bvh(id), center, radius);
    mq.mesh = &mesh_get(id);
    return mq;
}
// The next leaf with faces that match (their slots in q.mask); false when done.
SK_INLINE bool mesh_query_next_range(mesh_query_t& mq) {
    bvh_query_t& q = mq.q;
    while (bvh_query_next_range(q)) {
        if (q.kind != SK_QUERY_SPHERE) return true;
        for (uint32 rest = q.mask; rest; rest &= rest - 1) {
            const int32 k = bvh_lowest_bit(rest);
            geo::v3<float> a, b, c;
            geo::face_tri(*mq.mesh, q.prims[q.base + k], a, b, c);
            if (!(geo::tri_dist_sq(q.a, a, b, c) <= q.b.x)) q.mask &= ~(uint32(1) << k);
        }
        if (q.mask) return true;
    }
    return false;
}
SK_INLINE bool mesh_query_more(const mesh_query_t& mq) { return mq.q.mask != 0; }
SK_INLINE void mesh_query_take(mesh_query_t& mq, int32& index) { bvh_query_take(mq.q, index); }
SK_INLINE bool mesh_query_next(mesh_query_t& mq, int32& index) {
    if (!mesh_query_next_range(mq)) return false;
    bvh_query_take(mq.q, index);
    return true;
}
SK_INLINE bool mesh_query_aabb_next(mesh_query_t& mq, int32& index) { return mesh_query_next(mq, index); }

}  // namespace sk
