// simkit collision: triangle and segment primitives (host C++17 and NVRTC CUDA), with adjoints.
// Included after bvh.h (its geo:: helpers). Barycentric convention (Warp's): a point of triangle
// (a, b, c) with coordinates (u, v) is u*a + v*b + (1 - u - v)*c.
#pragma once

namespace sk {
namespace geo {

// Regions of the closest point on a triangle (which coordinates are free in the adjoint).
enum { TRI_FACE = 0, TRI_A = 1, TRI_B = 2, TRI_C = 3, TRI_AB = 4, TRI_AC = 5, TRI_BC = 6 };

// Closest point to p on triangle (a, b, c) (Ericson, Real-Time Collision Detection 5.1.5):
// writes its barycentric coordinates (u, v) and returns the region.
template <typename T>
SK_INLINE int closest_tri(const v3<T>& p, const v3<T>& a, const v3<T>& b, const v3<T>& c, T& u, T& v) {
    const v3<T> ab = b - a, ac = c - a, ap = p - a;
    const T d1 = dot(ab, ap), d2 = dot(ac, ap);
    if (d1 <= T(0) && d2 <= T(0)) { u = T(1); v = T(0); return TRI_A; }
    const v3<T> bp = p - b;
    const T d3 = dot(ab, bp), d4 = dot(ac, bp);
    if (d3 >= T(0) && d4 <= d3) { u = T(0); v = T(1); return TRI_B; }
    const T vc = d1 * d4 - d3 * d2;
    if (vc <= T(0) && d1 >= T(0) && d3 <= T(0)) {
        const T s = d1 / (d1 - d3);
        u = T(1) - s; v = s;
        return TRI_AB;
    }
    const v3<T> cp = p - c;
    const T d5 = dot(ab, cp), d6 = dot(ac, cp);
    if (d6 >= T(0) && d5 <= d6) { u = T(0); v = T(0); return TRI_C; }
    const T vb = d5 * d2 - d1 * d6;
    if (vb <= T(0) && d2 >= T(0) && d6 <= T(0)) {
        const T s = d2 / (d2 - d6);
        u = T(1) - s; v = T(0);
        return TRI_AC;
    }
    const T va = d3 * d6 - d5 * d4;
    if (va <= T(0) && (d4 - d3) >= T(0) && (d5 - d6) >= T(0)) {
        const T s = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        u = T(0); v = T(1) - s;
        return TRI_BC;
    }
    const T inv = T(1) / (va + vb + vc);
    v = vb * inv;  // weight of b
    const T w = vc * inv;  // weight of c
    u = T(1) - v - w;
    return TRI_FACE;
}

template <typename T>
SK_INLINE v3<T> bary_point(const v3<T>& a, const v3<T>& b, const v3<T>& c, T u, T v) {
    return u * a + v * b + (T(1) - u - v) * c;
}

// Adjoint of s = dot(p - x, y - x) / |y - x|^2 (closest point on the line x + s (y - x)), given adj_s.
template <typename T>
SK_INLINE void adj_edge_param(const v3<T>& p, const v3<T>& x, const v3<T>& y, T adj_s, v3<T>& adj_p, v3<T>& adj_x,
                              v3<T>& adj_y) {
    const v3<T> e = y - x, w = p - x;
    const T L = dot(e, e);
    if (!(L > T(0))) return;
    const T s = dot(w, e) / L, lam = adj_s / L;
    const v3<T> adj_e = lam * (w - T(2) * s * e);
    const v3<T> adj_w = lam * e;
    adj_p += adj_w;
    adj_y += adj_e;
    adj_x -= adj_e + adj_w;
}

// Adjoint of the closest-point coordinates (u, v) in region `region` (see closest_tri).
template <typename T>
SK_INLINE void adj_closest_tri(int region, const v3<T>& p, const v3<T>& a, const v3<T>& b, const v3<T>& c, T u, T v,
                               T adj_u, T adj_v, v3<T>& adj_p, v3<T>& adj_a, v3<T>& adj_b, v3<T>& adj_c) {
    switch (region) {
        case TRI_AB: adj_edge_param(p, a, b, adj_v - adj_u, adj_p, adj_a, adj_b); return;  // (1-s, s)
        case TRI_AC: adj_edge_param(p, a, c, -adj_u, adj_p, adj_a, adj_c); return;         // (1-s, 0)
        case TRI_BC: adj_edge_param(p, b, c, -adj_v, adj_p, adj_b, adj_c); return;         // (0, 1-s)
        case TRI_FACE: {
            // (u, v) solve G x = r with E1 = a - c, E2 = b - c, d = p - c (least squares in the plane)
            const v3<T> E1 = a - c, E2 = b - c, d = p - c;
            const T g11 = dot(E1, E1), g12 = dot(E1, E2), g22 = dot(E2, E2);
            const T det = g11 * g22 - g12 * g12;
            if (!(det != T(0))) return;
            const T l1 = (g22 * adj_u - g12 * adj_v) / det, l2 = (g11 * adj_v - g12 * adj_u) / det;
            const v3<T> q = u * E1 + v * E2 - d;
            const v3<T> m = l1 * E1 + l2 * E2;
            const v3<T> adj_E1 = -(l1 * q) - u * m, adj_E2 = -(l2 * q) - v * m;
            adj_p += m;
            adj_a += adj_E1;
            adj_b += adj_E2;
            adj_c -= adj_E1 + adj_E2 + m;
            return;
        }
        default: return;  // a vertex: constant coordinates
    }
}

// Watertight ray/triangle test (Woop, Benthin, Wald 2013) with the per-ray part precomputed.
struct wray_t {
    v3<float> o, d;
    int kx, ky, kz;
    float sx, sy, sz;
};
SK_INLINE wray_t make_wray(const v3<float>& o, const v3<float>& d) {
    wray_t r;
    r.o = o;
    r.d = d;
    const float ax = fabsf(d.x), ay = fabsf(d.y), az = fabsf(d.z);
    r.kz = (ax > ay) ? (ax > az ? 0 : 2) : (ay > az ? 1 : 2);
    r.kx = r.kz == 2 ? 0 : r.kz + 1;
    r.ky = r.kx == 2 ? 0 : r.kx + 1;
    if (get(d, r.kz) < 0.0f) { const int t = r.kx; r.kx = r.ky; r.ky = t; }
    r.sz = 1.0f / get(d, r.kz);
    r.sx = get(d, r.kx) * r.sz;
    r.sy = get(d, r.ky) * r.sz;
    return r;
}

// Hit with t >= 0: t (in multiples of |d|), barycentric (u, v) of the hit point.
SK_INLINE bool ray_tri(const wray_t& r, const v3<float>& a, const v3<float>& b, const v3<float>& c, float& t, float& u,
                       float& v) {
    const v3<float> A = a - r.o, B = b - r.o, C = c - r.o;
    const float Az = get(A, r.kz), Bz = get(B, r.kz), Cz = get(C, r.kz);
    const float Ax = get(A, r.kx) - r.sx * Az, Ay = get(A, r.ky) - r.sy * Az;
    const float Bx = get(B, r.kx) - r.sx * Bz, By = get(B, r.ky) - r.sy * Bz;
    const float Cx = get(C, r.kx) - r.sx * Cz, Cy = get(C, r.ky) - r.sy * Cz;
    // The edge functions in double precision, where products of floats are exact: a face and its neighbour
    // then get exactly opposite values on their shared edge even when the compiler fuses a multiply-add
    // (in float, fma(Cx, By, -Cy Bx) is not -fma(Bx, Cy, -By Cx), and a ray through the edge missed both).
    const float U = float(double(Cx) * double(By) - double(Cy) * double(Bx));
    const float V = float(double(Ax) * double(Cy) - double(Ay) * double(Cx));
    const float W = float(double(Bx) * double(Ay) - double(By) * double(Ax));
    if ((U < 0.0f || V < 0.0f || W < 0.0f) && (U > 0.0f || V > 0.0f || W > 0.0f)) return false;
    const float det = U + V + W;
    if (det == 0.0f || !(det == det)) return false;
    const float T = (U * Az + V * Bz + W * Cz) * r.sz;
    if (det > 0.0f ? T < 0.0f : T > 0.0f) return false;
    const float inv = 1.0f / det;
    t = T * inv;
    u = U * inv;
    v = V * inv;
    return true;
}

// Adjoint of a ray hit (t, u, v): start + t dir = u a + v b + (1-u-v) c, by implicit differentiation.
SK_INLINE void adj_ray_tri(const v3<float>& dir, const v3<float>& a, const v3<float>& b, const v3<float>& c, float t,
                           float u, float v, float adj_t, float adj_u, float adj_v, v3<float>& adj_start,
                           v3<float>& adj_dir, v3<float>& adj_a, v3<float>& adj_b, v3<float>& adj_c) {
    // M = [dir | c - a | c - b];  lambda = M^-T (adj_t, adj_u, adj_v)
    const v3<float> m0 = dir, m1 = c - a, m2 = c - b;
    const v3<float> r0 = cross(m1, m2), r1 = cross(m2, m0), r2 = cross(m0, m1);
    const float det = dot(m0, r0);
    if (!(det != 0.0f)) return;
    const v3<float> lam = (adj_t * r0 + adj_u * r1 + adj_v * r2) * (1.0f / det);
    adj_start -= lam;
    adj_dir -= t * lam;
    adj_a += u * lam;
    adj_b += v * lam;
    adj_c += (1.0f - u - v) * lam;
}

// Unit normal of (a, b, c) by winding order, and its adjoint.
template <typename T> SK_INLINE v3<T> tri_normal(const v3<T>& a, const v3<T>& b, const v3<T>& c) {
    const v3<T> n = cross(b - a, c - a);
    const T l = len(n);
    return l > T(0) ? n * (T(1) / l) : mk(T(0), T(0), T(0));
}
template <typename T>
SK_INLINE void adj_tri_normal(const v3<T>& a, const v3<T>& b, const v3<T>& c, const v3<T>& adj_n, v3<T>& adj_a,
                              v3<T>& adj_b, v3<T>& adj_c) {
    const v3<T> e1 = b - a, e2 = c - a, nn = cross(e1, e2);
    const T l = len(nn);
    if (!(l > T(0))) return;
    const v3<T> n = nn * (T(1) / l);
    const v3<T> adj_nn = (adj_n - n * dot(n, adj_n)) * (T(1) / l);
    const v3<T> adj_e1 = cross(e2, adj_nn), adj_e2 = cross(adj_nn, e1);
    adj_b += adj_e1;
    adj_c += adj_e2;
    adj_a -= adj_e1 + adj_e2;
}

// Solid angle of triangle (a, b, c) seen from p (Van Oosterom & Strackee); positive from behind
// the face (the side its normal points away from).
SK_INLINE float solid_angle(const v3<float>& p, const v3<float>& a, const v3<float>& b, const v3<float>& c) {
    const v3<float> x = a - p, y = b - p, z = c - p;
    const float lx = len(x), ly = len(y), lz = len(z);
    const float num = dot(x, cross(y, z));
    const float den = lx * ly * lz + dot(x, y) * lz + dot(x, z) * ly + dot(y, z) * lx;
    return 2.0f * atan2f(num, den);
}

}  // namespace geo

// ---------------------------------------------------------------------------
// closest_point_edge_edge(p1, q1, p2, q2, epsilon) -> (s, t, d) (Ericson 5.1.9)

template <typename T> struct edge_edge_t {
    T s, t;
    bool free_s, free_t;  // coordinates not fixed by a clamp or a degenerate edge
};

template <typename T>
SK_INLINE edge_edge_t<T> edge_edge_solve(const geo::v3<T>& p1, const geo::v3<T>& q1, const geo::v3<T>& p2,
                                         const geo::v3<T>& q2, T eps) {
    edge_edge_t<T> r;
    r.s = r.t = T(0);
    r.free_s = r.free_t = false;
    const geo::v3<T> d1 = q1 - p1, d2 = q2 - p2, w = p1 - p2;
    const T a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, w);
    if (a <= eps && e <= eps) return r;
    if (a <= eps) {
        const T t = f / e;
        r.t = t < T(0) ? T(0) : (t > T(1) ? T(1) : t);
        r.free_t = t > T(0) && t < T(1);
        return r;
    }
    const T c = dot(d1, w);
    if (e <= eps) {
        const T s = -c / a;
        r.s = s < T(0) ? T(0) : (s > T(1) ? T(1) : s);
        r.free_s = s > T(0) && s < T(1);
        return r;
    }
    const T b = dot(d1, d2), den = a * e - b * b;
    if (den != T(0)) {
        const T s = (b * f - c * e) / den;
        r.s = s < T(0) ? T(0) : (s > T(1) ? T(1) : s);
        r.free_s = s > T(0) && s < T(1);
    }
    const T t = (b * r.s + f) / e;
    r.t = t;
    r.free_t = true;
    if (t < T(0) || t > T(1)) {
        r.t = t < T(0) ? T(0) : T(1);
        r.free_t = false;
        const T s = (r.t * b - c) / a;
        r.s = s < T(0) ? T(0) : (s > T(1) ? T(1) : s);
        r.free_s = s > T(0) && s < T(1);
    }
    return r;
}

template <typename T>
SK_INLINE vec_t<3, T> closest_point_edge_edge(vec_t<3, T> p1, vec_t<3, T> q1, vec_t<3, T> p2, vec_t<3, T> q2, T eps) {
    using namespace geo;
    const v3<T> P1 = ld(p1), Q1 = ld(q1), P2 = ld(p2), Q2 = ld(q2);
    const edge_edge_t<T> r = edge_edge_solve(P1, Q1, P2, Q2, eps);
    const v3<T> g = P1 + r.s * (Q1 - P1) - P2 - r.t * (Q2 - P2);
    return st(mk(r.s, r.t, len(g)));
}

// Adjoint: the free coordinates solve grad_{s,t} |g|^2 / 2 = 0 (implicit differentiation); the
// distance uses the envelope theorem (its derivative along free coordinates vanishes).
template <typename T>
SK_INLINE void adj_closest_point_edge_edge(vec_t<3, T> p1, vec_t<3, T> q1, vec_t<3, T> p2, vec_t<3, T> q2, T eps,
                                           vec_t<3, T>& adj_p1, vec_t<3, T>& adj_q1, vec_t<3, T>& adj_p2,
                                           vec_t<3, T>& adj_q2, T& adj_eps, const vec_t<3, T>& adj_ret) {
    using namespace geo;
    const v3<T> P1 = ld(p1), Q1 = ld(q1), P2 = ld(p2), Q2 = ld(q2);
    const edge_edge_t<T> r = edge_edge_solve(P1, Q1, P2, Q2, eps);
    const T s = r.s, t = r.t;
    const v3<T> d1 = Q1 - P1, d2 = Q2 - P2;
    const v3<T> g = P1 + s * d1 - P2 - t * d2;
    v3<T> ap1 = mk(T(0), T(0), T(0)), aq1 = ap1, ap2 = ap1, aq2 = ap1;
    // distance
    const T dist = len(g);
    if (dist > T(0)) {
        const v3<T> ag = g * (adj_ret.c[2] / dist);
        ap1 += (T(1) - s) * ag;
        aq1 += s * ag;
        ap2 -= (T(1) - t) * ag;
        aq2 -= t * ag;
    }
    // coordinates: h1 = d1.g (s free), h2 = -d2.g (t free); H = dh/d(s,t)
    T l1 = T(0), l2 = T(0);
    const T a = dot(d1, d1), e = dot(d2, d2), b = dot(d1, d2);
    if (r.free_s && r.free_t) {
        const T det = a * e - b * b;
        if (det != T(0)) {
            l1 = (e * adj_ret.c[0] + b * adj_ret.c[1]) / det;
            l2 = (b * adj_ret.c[0] + a * adj_ret.c[1]) / det;
        }
    } else if (r.free_s) {
        l1 = adj_ret.c[0] / a;
    } else if (r.free_t) {
        l2 = adj_ret.c[1] / e;
    }
    if (l1 != T(0) || l2 != T(0)) {
        // adj_theta = -(l1 dh1/dtheta + l2 dh2/dtheta)
        ap1 -= l1 * ((T(1) - s) * d1 - g) - l2 * (T(1) - s) * d2;
        aq1 -= l1 * (g + s * d1) - l2 * s * d2;
        ap2 -= -(l1 * (T(1) - t) * d1) + l2 * (g + (T(1) - t) * d2);
        aq2 -= -(l1 * t * d1) + l2 * (t * d2 - g);
    }
    add_to(adj_p1, ap1);
    add_to(adj_q1, aq1);
    add_to(adj_p2, ap2);
    add_to(adj_q2, aq2);
}

// ---------------------------------------------------------------------------
// intersect_tri_tri: Moller's interval overlap test (1997), coplanar case by edge and
// containment tests. Returns 1 when the triangles intersect, else 0.

namespace geo {
// r on segment pq, given the three are collinear
template <typename T> SK_INLINE bool on_segment_2d(T px, T py, T qx, T qy, T rx, T ry) {
    return rx >= fmin(px, qx) && rx <= fmax(px, qx) && ry >= fmin(py, qy) && ry <= fmax(py, qy);
}
template <typename T> SK_INLINE bool edge_edge_2d(T ax, T ay, T bx, T by, T cx, T cy, T dx, T dy) {
    // do segments [a,b] and [c,d] intersect (2D, closed)?
    const T d1 = (dx - cx) * (ay - cy) - (dy - cy) * (ax - cx);
    const T d2 = (dx - cx) * (by - cy) - (dy - cy) * (bx - cx);
    const T d3 = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
    const T d4 = (bx - ax) * (dy - ay) - (by - ay) * (dx - ax);
    if (((d1 > T(0) && d2 < T(0)) || (d1 < T(0) && d2 > T(0))) && ((d3 > T(0) && d4 < T(0)) || (d3 < T(0) && d4 > T(0))))
        return true;
    if (d1 == T(0) && on_segment_2d(cx, cy, dx, dy, ax, ay)) return true;
    if (d2 == T(0) && on_segment_2d(cx, cy, dx, dy, bx, by)) return true;
    if (d3 == T(0) && on_segment_2d(ax, ay, bx, by, cx, cy)) return true;
    if (d4 == T(0) && on_segment_2d(ax, ay, bx, by, dx, dy)) return true;
    return false;
}
template <typename T> SK_INLINE bool point_in_tri_2d(T px, T py, const T* x, const T* y) {
    const T s0 = (x[1] - x[0]) * (py - y[0]) - (y[1] - y[0]) * (px - x[0]);
    const T s1 = (x[2] - x[1]) * (py - y[1]) - (y[2] - y[1]) * (px - x[1]);
    const T s2 = (x[0] - x[2]) * (py - y[2]) - (y[0] - y[2]) * (px - x[2]);
    return (s0 >= T(0) && s1 >= T(0) && s2 >= T(0)) || (s0 <= T(0) && s1 <= T(0) && s2 <= T(0));
}
template <typename T> SK_INLINE bool coplanar_tri_tri(const v3<T>& n, const v3<T>* v, const v3<T>* u) {
    // project onto the axis-aligned plane where the triangles' area is largest
    const T ax = fabs(n.x), ay = fabs(n.y), az = fabs(n.z);
    const int drop = (ax > ay) ? (ax > az ? 0 : 2) : (ay > az ? 1 : 2);
    const int a0 = drop == 0 ? 1 : 0, a1 = drop == 2 ? 1 : 2;
    T vx[3], vy[3], ux[3], uy[3];
    for (int k = 0; k < 3; ++k) {
        vx[k] = get(v[k], a0); vy[k] = get(v[k], a1);
        ux[k] = get(u[k], a0); uy[k] = get(u[k], a1);
    }
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            if (edge_edge_2d(vx[i], vy[i], vx[(i + 1) % 3], vy[(i + 1) % 3], ux[j], uy[j], ux[(j + 1) % 3], uy[(j + 1) % 3]))
                return true;
    return point_in_tri_2d(vx[0], vy[0], ux, uy) || point_in_tri_2d(ux[0], uy[0], vx, vy);
}
// The interval where triangle (with signed plane distances d) crosses the line L (projections p).
template <typename T> SK_INLINE bool tri_interval(const T* p, const T* d, T& lo, T& hi) {
    // the vertex alone on its side is k; the others are k1, k2
    int k;
    if ((d[0] > T(0)) == (d[1] > T(0)) && d[0] != T(0) && d[1] != T(0)) k = 2;
    else if ((d[0] > T(0)) == (d[2] > T(0)) && d[0] != T(0) && d[2] != T(0)) k = 1;
    else if ((d[1] > T(0)) == (d[2] > T(0)) && d[1] != T(0) && d[2] != T(0)) k = 0;
    else if (d[0] != T(0)) k = 0;
    else if (d[1] != T(0)) k = 1;
    else if (d[2] != T(0)) k = 2;
    else return false;  // coplanar
    const int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
    const T t1 = p[k] + (p[k1] - p[k]) * d[k] / (d[k] - d[k1]);
    const T t2 = p[k] + (p[k2] - p[k]) * d[k] / (d[k] - d[k2]);
    lo = fmin(t1, t2);
    hi = fmax(t1, t2);
    return true;
}
template <typename T> SK_INLINE int tri_tri(const v3<T>* v, const v3<T>* u) {
    const v3<T> n2 = cross(u[1] - u[0], u[2] - u[0]);
    const T dd2 = -dot(n2, u[0]);
    T dv[3];
    for (int k = 0; k < 3; ++k) dv[k] = dot(n2, v[k]) + dd2;
    if ((dv[0] > T(0) && dv[1] > T(0) && dv[2] > T(0)) || (dv[0] < T(0) && dv[1] < T(0) && dv[2] < T(0))) return 0;
    const v3<T> n1 = cross(v[1] - v[0], v[2] - v[0]);
    const T dd1 = -dot(n1, v[0]);
    T du[3];
    for (int k = 0; k < 3; ++k) du[k] = dot(n1, u[k]) + dd1;
    if ((du[0] > T(0) && du[1] > T(0) && du[2] > T(0)) || (du[0] < T(0) && du[1] < T(0) && du[2] < T(0))) return 0;
    if (dv[0] == T(0) && dv[1] == T(0) && dv[2] == T(0)) return coplanar_tri_tri(n1, v, u) ? 1 : 0;
    const v3<T> D = cross(n1, n2);
    const T ax = fabs(D.x), ay = fabs(D.y), az = fabs(D.z);
    const int axis = (ax > ay) ? (ax > az ? 0 : 2) : (ay > az ? 1 : 2);
    T pv[3], pu[3];
    for (int k = 0; k < 3; ++k) { pv[k] = get(v[k], axis); pu[k] = get(u[k], axis); }
    T a0, a1, b0, b1;
    if (!tri_interval(pv, dv, a0, a1) || !tri_interval(pu, du, b0, b1)) return coplanar_tri_tri(n1, v, u) ? 1 : 0;
    return (a1 < b0 || b1 < a0) ? 0 : 1;
}
}  // namespace geo

template <typename T>
SK_INLINE int32 intersect_tri_tri(vec_t<3, T> v0, vec_t<3, T> v1, vec_t<3, T> v2, vec_t<3, T> u0, vec_t<3, T> u1,
                                  vec_t<3, T> u2) {
    const geo::v3<T> v[3] = {geo::ld(v0), geo::ld(v1), geo::ld(v2)};
    const geo::v3<T> u[3] = {geo::ld(u0), geo::ld(u1), geo::ld(u2)};
    return geo::tri_tri(v, u);
}

}  // namespace sk
