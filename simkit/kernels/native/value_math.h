// simkit native: compute-precision helpers shared by quat.h, transform.h and spatial.h (namespace
// sk::qm). Split out of quat.h, which includes it.
#pragma once

#include "core.h"
#include "scalar.h"

namespace sk {

// ---------------------------------------------------------------------------
// Internal helpers shared by quat.h, transform.h and spatial.h: loading values in
// compute precision (half -> float), storing back, accumulating adjoints, and a
// few small vector / quaternion kernels on compute-precision values.
namespace qm {

template <typename T> struct acc { typedef T type; };
template <> struct acc<half> { typedef float type; };

// Non-deduced context: lets a scalar parameter convert to the value's scalar type.
template <typename T> struct id { typedef T type; };

// The value type V with its scalar type replaced by S.
template <typename V, typename S> struct rebind { typedef S type; };
template <unsigned N, typename T, typename S> struct rebind<vec_t<N, T>, S> { typedef vec_t<N, S> type; };
template <unsigned R, unsigned C, typename T, typename S> struct rebind<mat_t<R, C, T>, S> { typedef mat_t<R, C, S> type; };
template <typename T, typename S> struct rebind<quat_t<T>, S> { typedef quat_t<S> type; };
template <typename T, typename S> struct rebind<transform_t<T>, S> { typedef transform_t<S> type; };

template <typename V> struct acc_of {
    typedef typename acc<typename value_traits<V>::scalar>::type scalar;
    typedef typename rebind<V, scalar>::type type;
};

// Load in compute precision.
template <typename V> SK_INLINE typename acc_of<V>::type ld(const V& v) {
    typedef typename acc_of<V>::scalar C;
    typename acc_of<V>::type r;
    const typename value_traits<V>::scalar* in = flat(v);
    C* out = flat(r);
    for (unsigned k = 0; k < value_traits<V>::length; ++k) out[k] = C(in[k]);
    return r;
}

// Store a compute-precision value as scalar type T.
template <typename T, typename V> SK_INLINE typename rebind<V, T>::type st(const V& v) {
    typename rebind<V, T>::type r;
    const typename value_traits<V>::scalar* in = flat(v);
    T* out = flat(r);
    for (unsigned k = 0; k < value_traits<V>::length; ++k) out[k] = T(in[k]);
    return r;
}

// dst += src, where src is dst's type in compute precision.
template <typename V, typename W> SK_INLINE void accum(V& dst, const W& src) {
    typedef typename value_traits<V>::scalar S;
    typedef typename acc<S>::type C;
    S* d = flat(dst);
    const typename value_traits<W>::scalar* s = flat(src);
    for (unsigned k = 0; k < value_traits<V>::length; ++k) d[k] = S(C(d[k]) + C(s[k]));
}

// -- 3-vectors ---------------------------------------------------------------
template <typename C> SK_INLINE vec_t<3, C> v3(C x, C y, C z) {
    vec_t<3, C> r;
    r.c[0] = x;
    r.c[1] = y;
    r.c[2] = z;
    return r;
}
template <typename C> SK_INLINE vec_t<3, C> vadd(const vec_t<3, C>& a, const vec_t<3, C>& b) {
    return v3(a.c[0] + b.c[0], a.c[1] + b.c[1], a.c[2] + b.c[2]);
}
template <typename C> SK_INLINE vec_t<3, C> vsub(const vec_t<3, C>& a, const vec_t<3, C>& b) {
    return v3(a.c[0] - b.c[0], a.c[1] - b.c[1], a.c[2] - b.c[2]);
}
template <typename C> SK_INLINE vec_t<3, C> vscale(const vec_t<3, C>& a, C s) {
    return v3(a.c[0] * s, a.c[1] * s, a.c[2] * s);
}
template <typename C> SK_INLINE C vdot(const vec_t<3, C>& a, const vec_t<3, C>& b) {
    return a.c[0] * b.c[0] + a.c[1] * b.c[1] + a.c[2] * b.c[2];
}
template <typename C> SK_INLINE vec_t<3, C> vcross(const vec_t<3, C>& a, const vec_t<3, C>& b) {
    return v3(a.c[1] * b.c[2] - a.c[2] * b.c[1], a.c[2] * b.c[0] - a.c[0] * b.c[2],
              a.c[0] * b.c[1] - a.c[1] * b.c[0]);
}
// adjoint of r = cross(a, b): adj_a += b x g, adj_b += g x a
template <typename C>
SK_INLINE void adj_vcross(const vec_t<3, C>& a, const vec_t<3, C>& b, vec_t<3, C>& adj_a, vec_t<3, C>& adj_b,
                          const vec_t<3, C>& g) {
    adj_a = vadd(adj_a, vcross(b, g));
    adj_b = vadd(adj_b, vcross(g, a));
}

// -- quaternions -------------------------------------------------------------
template <typename C> SK_INLINE quat_t<C> q4(C x, C y, C z, C w) {
    quat_t<C> r;
    r.x = x;
    r.y = y;
    r.z = z;
    r.w = w;
    return r;
}
template <typename C> SK_INLINE vec_t<3, C> qvec(const quat_t<C>& q) { return v3(q.x, q.y, q.z); }
template <typename C> SK_INLINE quat_t<C> qconj(const quat_t<C>& q) { return q4(-q.x, -q.y, -q.z, q.w); }
template <typename C> SK_INLINE C qdot(const quat_t<C>& a, const quat_t<C>& b) {
    return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
template <typename C> SK_INLINE quat_t<C> qadd(const quat_t<C>& a, const quat_t<C>& b) {
    return q4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
template <typename C> SK_INLINE quat_t<C> qscale(const quat_t<C>& a, C s) {
    return q4(a.x * s, a.y * s, a.z * s, a.w * s);
}
template <typename C> SK_INLINE quat_t<C> qidentity() { return q4(C(0), C(0), C(0), C(1)); }

// Hamilton product
template <typename C> SK_INLINE quat_t<C> qmul(const quat_t<C>& a, const quat_t<C>& b) {
    return q4(a.w * b.x + b.w * a.x + a.y * b.z - b.y * a.z,
              a.w * b.y + b.w * a.y + a.z * b.x - b.z * a.x,
              a.w * b.z + b.w * a.z + a.x * b.y - b.x * a.y,
              a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z);
}
// <g, a b> = <g conj(b), a> = <conj(a) g, b>
template <typename C>
SK_INLINE void adj_qmul(const quat_t<C>& a, const quat_t<C>& b, quat_t<C>& adj_a, quat_t<C>& adj_b, const quat_t<C>& g) {
    adj_a = qadd(adj_a, qmul(g, qconj(b)));
    adj_b = qadd(adj_b, qmul(qconj(a), g));
}

// r = (2w^2 - 1) x + 2 (v.x) v + 2 w (v cross x)   (exact rotation for unit q)
template <typename C> SK_INLINE vec_t<3, C> qrot(const quat_t<C>& q, const vec_t<3, C>& x, C sgn = C(1)) {
    vec_t<3, C> v = qvec(q);
    C c = C(2) * q.w * q.w - C(1);
    C d = C(2) * vdot(v, x);
    vec_t<3, C> vx = vcross(v, x);
    C e = sgn * C(2) * q.w;
    return v3(x.c[0] * c + v.c[0] * d + vx.c[0] * e, x.c[1] * c + v.c[1] * d + vx.c[1] * e,
              x.c[2] * c + v.c[2] * d + vx.c[2] * e);
}
// sgn = +1: quat_rotate, sgn = -1: quat_rotate_inv
template <typename C>
SK_INLINE void adj_qrot(const quat_t<C>& q, const vec_t<3, C>& x, quat_t<C>& adj_q, vec_t<3, C>& adj_x,
                        const vec_t<3, C>& a, C sgn = C(1)) {
    vec_t<3, C> v = qvec(q);
    C c = C(2) * q.w * q.w - C(1);
    C va = vdot(v, a);
    C vx = vdot(v, x);
    C e = sgn * C(2) * q.w;
    // adj_x = R^T a = c a + 2 v (v.a) - e (v x a)
    vec_t<3, C> vca = vcross(v, a);
    adj_x = vadd(adj_x, v3(c * a.c[0] + C(2) * v.c[0] * va - e * vca.c[0],
                           c * a.c[1] + C(2) * v.c[1] * va - e * vca.c[1],
                           c * a.c[2] + C(2) * v.c[2] * va - e * vca.c[2]));
    // adj_v = 2 x (v.a) + 2 (v.x) a + e (x x a)
    vec_t<3, C> xca = vcross(x, a);
    adj_q.x += C(2) * x.c[0] * va + C(2) * vx * a.c[0] + e * xca.c[0];
    adj_q.y += C(2) * x.c[1] * va + C(2) * vx * a.c[1] + e * xca.c[1];
    adj_q.z += C(2) * x.c[2] * va + C(2) * vx * a.c[2] + e * xca.c[2];
    // adj_w = 4 w (x.a) + 2 sgn (v x x).a
    adj_q.w += C(4) * q.w * vdot(x, a) + sgn * C(2) * vdot(vcross(v, x), a);
}

// q / |q|, or the identity when |q| == 0
template <typename C> SK_INLINE quat_t<C> qnormalize(const quat_t<C>& q) {
    C l = m::sqrt(qdot(q, q));
    if (l > C(0)) return qscale(q, C(1) / l);
    return qidentity<C>();
}
template <typename C> SK_INLINE void adj_qnormalize(const quat_t<C>& q, quat_t<C>& adj_q, const quat_t<C>& g) {
    C l = m::sqrt(qdot(q, q));
    if (l > C(0)) {
        C inv = C(1) / l;
        quat_t<C> n = qscale(q, inv);
        C ng = qdot(n, g);
        adj_q = qadd(adj_q, q4((g.x - n.x * ng) * inv, (g.y - n.y * ng) * inv, (g.z - n.z * ng) * inv,
                               (g.w - n.w * ng) * inv));
    }
}

// Unnormalized quaternion of a rotation matrix (top-left 3x3 block of m).
// Trace branch, or the branch of the largest diagonal entry k (a = k, b = k+1, c = k+2 mod 3).
template <unsigned R, unsigned Cn, typename C> SK_INLINE quat_t<C> qfrom_matrix_raw(const mat_t<R, Cn, C>& m) {
    const C tr = m.data[0][0] + m.data[1][1] + m.data[2][2];
    C u[4];
    if (tr >= C(0)) {
        C h = m::sqrt(tr + C(1));
        C hh = C(0.5) / h;
        u[3] = C(0.5) * h;
        u[0] = (m.data[2][1] - m.data[1][2]) * hh;
        u[1] = (m.data[0][2] - m.data[2][0]) * hh;
        u[2] = (m.data[1][0] - m.data[0][1]) * hh;
    } else {
        int a = 0;
        if (m.data[1][1] > m.data[0][0]) a = 1;
        if (m.data[2][2] > m.data[a][a]) a = 2;
        int b = (a + 1) % 3, c = (a + 2) % 3;
        C h = m::sqrt(m.data[a][a] - (m.data[b][b] + m.data[c][c]) + C(1));
        C hh = C(0.5) / h;
        u[a] = C(0.5) * h;
        u[b] = (m.data[a][b] + m.data[b][a]) * hh;
        u[c] = (m.data[c][a] + m.data[a][c]) * hh;
        u[3] = (m.data[c][b] - m.data[b][c]) * hh;
    }
    return q4(u[0], u[1], u[2], u[3]);
}
template <unsigned R, unsigned Cn, typename C>
SK_INLINE void adj_qfrom_matrix_raw(const mat_t<R, Cn, C>& m, mat_t<R, Cn, C>& adj_m, const quat_t<C>& g) {
    const C tr = m.data[0][0] + m.data[1][1] + m.data[2][2];
    const C gu[4] = {g.x, g.y, g.z, g.w};
    if (tr >= C(0)) {
        C h = m::sqrt(tr + C(1));
        C hh = C(0.5) / h;
        C n0 = m.data[2][1] - m.data[1][2], n1 = m.data[0][2] - m.data[2][0], n2 = m.data[1][0] - m.data[0][1];
        // d hh / d h = -0.5 / h^2
        C adj_h = C(0.5) * gu[3] - C(0.5) / (h * h) * (n0 * gu[0] + n1 * gu[1] + n2 * gu[2]);
        C adj_tr = adj_h * C(0.5) / h;
        for (int i = 0; i < 3; ++i) adj_m.data[i][i] += adj_tr;
        adj_m.data[2][1] += hh * gu[0];
        adj_m.data[1][2] -= hh * gu[0];
        adj_m.data[0][2] += hh * gu[1];
        adj_m.data[2][0] -= hh * gu[1];
        adj_m.data[1][0] += hh * gu[2];
        adj_m.data[0][1] -= hh * gu[2];
    } else {
        int a = 0;
        if (m.data[1][1] > m.data[0][0]) a = 1;
        if (m.data[2][2] > m.data[a][a]) a = 2;
        int b = (a + 1) % 3, c = (a + 2) % 3;
        C h = m::sqrt(m.data[a][a] - (m.data[b][b] + m.data[c][c]) + C(1));
        C hh = C(0.5) / h;
        C nb = m.data[a][b] + m.data[b][a], nc = m.data[c][a] + m.data[a][c], nw = m.data[c][b] - m.data[b][c];
        C adj_h = C(0.5) * gu[a] - C(0.5) / (h * h) * (nb * gu[b] + nc * gu[c] + nw * gu[3]);
        C adj_s = adj_h * C(0.5) / h;
        adj_m.data[a][a] += adj_s;
        adj_m.data[b][b] -= adj_s;
        adj_m.data[c][c] -= adj_s;
        adj_m.data[a][b] += hh * gu[b];
        adj_m.data[b][a] += hh * gu[b];
        adj_m.data[c][a] += hh * gu[c];
        adj_m.data[a][c] += hh * gu[c];
        adj_m.data[c][b] += hh * gu[3];
        adj_m.data[b][c] -= hh * gu[3];
    }
}

// Rotation matrix: R = (2w^2 - 1) I + 2 v v^T + 2 w [v]x (columns are quat_rotate(q, e_j)).
template <typename C> SK_INLINE mat_t<3, 3, C> qto_matrix(const quat_t<C>& q) {
    const C v[3] = {q.x, q.y, q.z};
    C c = C(2) * q.w * q.w - C(1);
    C w2 = C(2) * q.w;
    mat_t<3, 3, C> r;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.data[i][j] = C(2) * v[i] * v[j] + (i == j ? c : C(0));
    r.data[0][1] -= w2 * q.z;
    r.data[0][2] += w2 * q.y;
    r.data[1][0] += w2 * q.z;
    r.data[1][2] -= w2 * q.x;
    r.data[2][0] -= w2 * q.y;
    r.data[2][1] += w2 * q.x;
    return r;
}
template <typename C> SK_INLINE void adj_qto_matrix(const quat_t<C>& q, quat_t<C>& adj_q, const mat_t<3, 3, C>& g) {
    const C v[3] = {q.x, q.y, q.z};
    C trg = g.data[0][0] + g.data[1][1] + g.data[2][2];
    C sx = g.data[2][1] - g.data[1][2], sy = g.data[0][2] - g.data[2][0], sz = g.data[1][0] - g.data[0][1];
    C av[3];
    for (int i = 0; i < 3; ++i) {
        C s = C(0);
        for (int j = 0; j < 3; ++j) s += (g.data[i][j] + g.data[j][i]) * v[j];
        av[i] = C(2) * s;
    }
    C w2 = C(2) * q.w;
    adj_q.x += av[0] + w2 * sx;
    adj_q.y += av[1] + w2 * sy;
    adj_q.z += av[2] + w2 * sz;
    adj_q.w += C(4) * q.w * trg + C(2) * (q.x * sx + q.y * sy + q.z * sz);
}

// -- classification (not differentiable) --------------------------------------
template <typename C> SK_INLINE bool fin(C x) { return sk::isfinite(x); }
template <typename C> SK_INLINE bool nan(C x) { return sk::isnan(x); }
template <typename C> SK_INLINE bool inf(C x) { return sk::isinf(x); }

}  // namespace qm

}  // namespace sk
