// simkit native quaternions: quat_t<T> = (x, y, z, w), w is the real part.
// Forward functions with their adjoints right below (see docs/internals.md).
// Every function is templated on T (half, float, double); half computes in float.
// The Hamilton product a * b applies b first, then a; quat_rotate(q, v) rotates
// column vectors (quat_to_matrix(q) @ v == quat_rotate(q, v)).
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

// Adjoint accumulation (a += b component-wise; half accumulates in float).
template <typename T> SK_INLINE quat_t<T>& operator+=(quat_t<T>& a, const quat_t<T>& b) {
    qm::accum(a, b);
    return a;
}

// ---------------------------------------------------------------------------
// Constructors (registry key "quaternion"; S is the target scalar type)

// quat(): all components zero (as in Warp; quat_identity() gives the identity).
template <typename S> SK_INLINE quat_t<S> quaternion() { return zero<quat_t<S>>(); }
template <typename S> SK_INLINE void adj_quaternion(const quat_t<S>& adj_ret) {}

// quat(xyz, w)
template <typename S, typename U, typename W> SK_INLINE quat_t<S> quaternion(const vec_t<3, U>& v, W w) {
    return qm::q4(S(v.c[0]), S(v.c[1]), S(v.c[2]), S(w));
}
template <typename S, typename U, typename W>
SK_INLINE void adj_quaternion(const vec_t<3, U>& v, W w, vec_t<3, U>& adj_v, W& adj_w, const quat_t<S>& adj_ret) {
    typename qm::acc_of<quat_t<S>>::type g = qm::ld(adj_ret);
    adj_v.c[0] += g.x;
    adj_v.c[1] += g.y;
    adj_v.c[2] += g.z;
    adj_w += g.w;
}

// quat(other): copy / convert the scalar type
template <typename S, typename U> SK_INLINE quat_t<S> quaternion(const quat_t<U>& q) {
    return qm::q4(S(q.x), S(q.y), S(q.z), S(q.w));
}
template <typename S, typename U>
SK_INLINE void adj_quaternion(const quat_t<U>& q, quat_t<U>& adj_q, const quat_t<S>& adj_ret) {
    qm::accum(adj_q, qm::ld(adj_ret));
}

template <typename S> SK_INLINE quat_t<S> quat_identity() { return qm::q4(S(0), S(0), S(0), S(1)); }
template <typename S> SK_INLINE void adj_quat_identity(const quat_t<S>& adj_ret) {}

// ---------------------------------------------------------------------------
// Component access: q[i] (negative i counts from the end, as in Warp)

template <typename T, typename I> SK_INLINE T extract(const quat_t<T>& a, I i) {
    int k = int(i);
    if (k < 0) k += 4;
    return flat(a)[k];
}
template <typename T, typename I>
SK_INLINE void adj_extract(const quat_t<T>& a, I i, quat_t<T>& adj_a, I& adj_i, const T& adj_ret) {
    int k = int(i);
    if (k < 0) k += 4;
    flat(adj_a)[k] += typename qm::acc<T>::type(adj_ret);
}

// functional q[i] = value: returns the updated quaternion
template <typename T, typename I> SK_INLINE quat_t<T> assign(const quat_t<T>& a, I i, typename qm::id<T>::type value) {
    int k = int(i);
    if (k < 0) k += 4;
    quat_t<T> r = a;
    flat(r)[k] = value;
    return r;
}
template <typename T, typename I>
SK_INLINE void adj_assign(const quat_t<T>& a, I i, typename qm::id<T>::type value, quat_t<T>& adj_a, I& adj_i,
                          T& adj_value, const quat_t<T>& adj_ret) {
    int k = int(i);
    if (k < 0) k += 4;
    typedef typename qm::acc<T>::type C;
    for (int j = 0; j < 4; ++j)
        if (j != k) flat(adj_a)[j] += C(flat(adj_ret)[j]);
    adj_value += C(flat(adj_ret)[k]);
}

// ---------------------------------------------------------------------------
// Arithmetic

template <typename T> SK_INLINE quat_t<T> add(const quat_t<T>& a, const quat_t<T>& b) {
    return qm::st<T>(qm::qadd(qm::ld(a), qm::ld(b)));
}
template <typename T>
SK_INLINE void adj_add(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b,
                       const quat_t<T>& adj_ret) {
    qm::accum(adj_a, qm::ld(adj_ret));
    qm::accum(adj_b, qm::ld(adj_ret));
}

template <typename T> SK_INLINE quat_t<T> sub(const quat_t<T>& a, const quat_t<T>& b) {
    auto A = qm::ld(a);
    auto B = qm::ld(b);
    return qm::st<T>(qm::q4(A.x - B.x, A.y - B.y, A.z - B.z, A.w - B.w));
}
template <typename T>
SK_INLINE void adj_sub(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b,
                       const quat_t<T>& adj_ret) {
    auto g = qm::ld(adj_ret);
    qm::accum(adj_a, g);
    qm::accum(adj_b, qm::qscale(g, decltype(g.x)(-1)));
}

// Exact equality of all components; not differentiable.
template <typename T> SK_INLINE bool eq(const quat_t<T>& a, const quat_t<T>& b) {
    return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w;
}
template <typename T> SK_INLINE bool ne(const quat_t<T>& a, const quat_t<T>& b) { return !eq(a, b); }

template <typename T> SK_INLINE quat_t<T> neg(const quat_t<T>& a) {
    auto A = qm::ld(a);
    return qm::st<T>(qm::qscale(A, decltype(A.x)(-1)));
}
template <typename T> SK_INLINE void adj_neg(const quat_t<T>& a, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    auto g = qm::ld(adj_ret);
    qm::accum(adj_a, qm::qscale(g, decltype(g.x)(-1)));
}

template <typename T> SK_INLINE quat_t<T> pos(const quat_t<T>& a) { return a; }
template <typename T> SK_INLINE void adj_pos(const quat_t<T>& a, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    qm::accum(adj_a, qm::ld(adj_ret));
}

// Hamilton product a * b (rotation b first, then a)
template <typename T> SK_INLINE quat_t<T> mul(const quat_t<T>& a, const quat_t<T>& b) {
    return qm::st<T>(qm::qmul(qm::ld(a), qm::ld(b)));
}
template <typename T>
SK_INLINE void adj_mul(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b,
                       const quat_t<T>& adj_ret) {
    auto A = qm::ld(a);
    auto B = qm::ld(b);
    auto G = qm::ld(adj_ret);
    qm::accum(adj_a, qm::qmul(G, qm::qconj(B)));
    qm::accum(adj_b, qm::qmul(qm::qconj(A), G));
}

template <typename T> SK_INLINE quat_t<T> mul(const quat_t<T>& a, typename qm::id<T>::type s) {
    typedef typename qm::acc<T>::type C;
    return qm::st<T>(qm::qscale(qm::ld(a), C(s)));
}
template <typename T>
SK_INLINE void adj_mul(const quat_t<T>& a, typename qm::id<T>::type s, quat_t<T>& adj_a, T& adj_s,
                       const quat_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto G = qm::ld(adj_ret);
    qm::accum(adj_a, qm::qscale(G, C(s)));
    adj_s += qm::qdot(qm::ld(a), G);
}
template <typename T> SK_INLINE quat_t<T> mul(typename qm::id<T>::type s, const quat_t<T>& a) { return mul(a, s); }
template <typename T>
SK_INLINE void adj_mul(typename qm::id<T>::type s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a,
                       const quat_t<T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}

template <typename T> SK_INLINE quat_t<T> div(const quat_t<T>& a, typename qm::id<T>::type s) {
    typedef typename qm::acc<T>::type C;
    auto A = qm::ld(a);
    C d = C(s);
    return qm::st<T>(qm::q4(A.x / d, A.y / d, A.z / d, A.w / d));
}
template <typename T>
SK_INLINE void adj_div(const quat_t<T>& a, typename qm::id<T>::type s, quat_t<T>& adj_a, T& adj_s,
                       const quat_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto G = qm::ld(adj_ret);
    C d = C(s);
    qm::accum(adj_a, qm::qscale(G, C(1) / d));
    adj_s += -qm::qdot(qm::ld(a), G) / (d * d);
}

// s / q, component-wise
template <typename T> SK_INLINE quat_t<T> div(typename qm::id<T>::type s, const quat_t<T>& a) {
    typedef typename qm::acc<T>::type C;
    auto A = qm::ld(a);
    C n = C(s);
    return qm::st<T>(qm::q4(n / A.x, n / A.y, n / A.z, n / A.w));
}
template <typename T>
SK_INLINE void adj_div(typename qm::id<T>::type s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a,
                       const quat_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto A = qm::ld(a);
    auto G = qm::ld(adj_ret);
    C n = C(s);
    qm::accum(adj_a, qm::q4(-n * G.x / (A.x * A.x), -n * G.y / (A.y * A.y), -n * G.z / (A.z * A.z),
                            -n * G.w / (A.w * A.w)));
    adj_s += G.x / A.x + G.y / A.y + G.z / A.z + G.w / A.w;
}

template <typename T> SK_INLINE quat_t<T> lerp(const quat_t<T>& a, const quat_t<T>& b, typename qm::id<T>::type t) {
    typedef typename qm::acc<T>::type C;
    C u = C(t);
    return qm::st<T>(qm::qadd(qm::qscale(qm::ld(a), C(1) - u), qm::qscale(qm::ld(b), u)));
}
template <typename T>
SK_INLINE void adj_lerp(const quat_t<T>& a, const quat_t<T>& b, typename qm::id<T>::type t, quat_t<T>& adj_a,
                        quat_t<T>& adj_b, T& adj_t, const quat_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    C u = C(t);
    auto G = qm::ld(adj_ret);
    auto A = qm::ld(a);
    auto B = qm::ld(b);
    qm::accum(adj_a, qm::qscale(G, C(1) - u));
    qm::accum(adj_b, qm::qscale(G, u));
    adj_t += qm::qdot(B, G) - qm::qdot(A, G);
}

// ---------------------------------------------------------------------------
// Norms

template <typename T> SK_INLINE T dot(const quat_t<T>& a, const quat_t<T>& b) {
    return T(qm::qdot(qm::ld(a), qm::ld(b)));
}
template <typename T>
SK_INLINE void adj_dot(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b, const T& adj_ret) {
    typedef typename qm::acc<T>::type C;
    C g = C(adj_ret);
    qm::accum(adj_a, qm::qscale(qm::ld(b), g));
    qm::accum(adj_b, qm::qscale(qm::ld(a), g));
}

template <typename T> SK_INLINE T length_sq(const quat_t<T>& a) {
    auto A = qm::ld(a);
    return T(qm::qdot(A, A));
}
template <typename T> SK_INLINE void adj_length_sq(const quat_t<T>& a, quat_t<T>& adj_a, const T& adj_ret) {
    typedef typename qm::acc<T>::type C;
    qm::accum(adj_a, qm::qscale(qm::ld(a), C(2) * C(adj_ret)));
}

template <typename T> SK_INLINE T length(const quat_t<T>& a) {
    auto A = qm::ld(a);
    return T(m::sqrt(qm::qdot(A, A)));
}
template <typename T> SK_INLINE void adj_length(const quat_t<T>& a, quat_t<T>& adj_a, const T& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto A = qm::ld(a);
    C l = m::sqrt(qm::qdot(A, A));
    if (l > C(0)) qm::accum(adj_a, qm::qscale(A, C(adj_ret) / l));
}

// normalize(q): q / |q|, or the identity quaternion when |q| == 0 (as in Warp)
template <typename T> SK_INLINE quat_t<T> normalize(const quat_t<T>& a) {
    return qm::st<T>(qm::qnormalize(qm::ld(a)));
}
template <typename T> SK_INLINE void adj_normalize(const quat_t<T>& a, quat_t<T>& adj_a, const quat_t<T>& adj_ret) {
    auto A = qm::ld(a);
    decltype(A) dA = qm::q4(decltype(A.x)(0), decltype(A.x)(0), decltype(A.x)(0), decltype(A.x)(0));
    qm::adj_qnormalize(A, dA, qm::ld(adj_ret));
    qm::accum(adj_a, dA);
}

// ---------------------------------------------------------------------------
// Rotations

// (axis * m::sin(angle / 2), m::cos(angle / 2))
template <typename T>
SK_INLINE quat_t<T> quat_from_axis_angle(const vec_t<3, T>& axis, typename qm::id<T>::type angle) {
    typedef typename qm::acc<T>::type C;
    auto ax = qm::ld(axis);
    C h = C(angle) * C(0.5);
    C s = m::sin(h);
    return qm::st<T>(qm::q4(ax.c[0] * s, ax.c[1] * s, ax.c[2] * s, C(m::cos(h))));
}
template <typename T>
SK_INLINE void adj_quat_from_axis_angle(const vec_t<3, T>& axis, typename qm::id<T>::type angle,
                                        vec_t<3, T>& adj_axis, T& adj_angle, const quat_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto ax = qm::ld(axis);
    auto G = qm::ld(adj_ret);
    C h = C(angle) * C(0.5);
    C s = m::sin(h), c = m::cos(h);
    qm::accum(adj_axis, qm::v3(G.x * s, G.y * s, G.z * s));
    adj_angle += C(0.5) * (c * (ax.c[0] * G.x + ax.c[1] * G.y + ax.c[2] * G.z) - s * G.w);
}

// axis = +-normalize(q.xyz) (sign of q.w), angle = 2 m::atan2(|q.xyz|, |q.w|) in [0, pi].
// Output-argument form, as Warp's native quat_to_axis_angle(q, axis, angle).
template <typename T> SK_INLINE void quat_to_axis_angle(const quat_t<T>& q, vec_t<3, T>& axis, T& angle) {
    typedef typename qm::acc<T>::type C;
    auto Q = qm::ld(q);
    vec_t<3, C> v = qm::qvec(Q);
    C l = m::sqrt(qm::vdot(v, v));
    C s = Q.w < C(0) ? C(-1) : C(1);
    C inv = l > C(0) ? s / l : C(0);
    axis = qm::st<T>(qm::vscale(v, inv));
    angle = T(C(2) * m::atan2(l, s * Q.w));
}
// Adjoint of the output-argument form: adj_axis / adj_angle are the adjoints of the outputs.
// At |q.xyz| == 0 the axis is undefined and no gradient flows.
template <typename T>
SK_INLINE void adj_quat_to_axis_angle(const quat_t<T>& q, vec_t<3, T>& axis, T& angle, quat_t<T>& adj_q,
                                      vec_t<3, T>& adj_axis, T& adj_angle) {
    typedef typename qm::acc<T>::type C;
    auto Q = qm::ld(q);
    vec_t<3, C> v = qm::qvec(Q);
    C l = m::sqrt(qm::vdot(v, v));
    if (!(l > C(0))) return;
    C s = Q.w < C(0) ? C(-1) : C(1);
    C W = s * Q.w;
    C den = l * l + W * W;
    auto ga = qm::ld(adj_axis);
    C gt = C(adj_angle);
    C vg = qm::vdot(v, ga);
    // axis = s v / l: d/dv = s (I / l - v v^T / l^3)
    // angle = 2 m::atan2(l, W): d/dv = 2 W v / (l den), d/dw = -2 s l / den
    C k1 = s / l, k2 = s * vg / (l * l * l), k3 = C(2) * W * gt / (l * den);
    qm::accum(adj_q, qm::q4(k1 * ga.c[0] - k2 * v.c[0] + k3 * v.c[0], k1 * ga.c[1] - k2 * v.c[1] + k3 * v.c[1],
                            k1 * ga.c[2] - k2 * v.c[2] + k3 * v.c[2], C(-2) * s * l * gt / den));
}

// Tuple form: (axis, angle) = quat_to_axis_angle(q). The result struct has the
// fields r0, r1 of every tuple result in generated code.
template <typename T> struct axis_angle_t {
    vec_t<3, T> r0;  // axis
    T r1;            // angle
};
template <typename T> SK_INLINE axis_angle_t<T> quat_to_axis_angle(const quat_t<T>& q) {
    axis_angle_t<T> r;
    quat_to_axis_angle(q, r.r0, r.r1);
    return r;
}
template <typename T>
SK_INLINE void adj_quat_to_axis_angle(const quat_t<T>& q, quat_t<T>& adj_q, const vec_t<3, T>& adj_axis,
                                      const T& adj_angle) {
    vec_t<3, T> axis, ga = adj_axis;
    T angle, gt = adj_angle;
    quat_to_axis_angle(q, axis, angle);
    adj_quat_to_axis_angle(q, axis, angle, adj_q, ga, gt);
}
template <typename T>
SK_INLINE void adj_quat_to_axis_angle(const quat_t<T>& q, quat_t<T>& adj_q, const axis_angle_t<T>& adj_ret) {
    adj_quat_to_axis_angle(q, adj_q, adj_ret.r0, adj_ret.r1);
}

// Rotation about fixed x (roll), then y (pitch), then z (yaw): qz * qy * qx
namespace qm {
template <typename C> SK_INLINE quat_t<C> rpy_terms(C cr, C sr, C cp, C sp, C cy, C sy) {
    return q4(cy * sr * cp - sy * cr * sp, cy * cr * sp + sy * sr * cp, sy * cr * cp - cy * sr * sp,
              cy * cr * cp + sy * sr * sp);
}
}  // namespace qm
template <typename T>
SK_INLINE quat_t<T> quat_rpy(T roll, T pitch, T yaw) {
    typedef typename qm::acc<T>::type C;
    C r = C(roll) * C(0.5), p = C(pitch) * C(0.5), y = C(yaw) * C(0.5);
    return qm::st<T>(qm::rpy_terms<C>(m::cos(r), m::sin(r), m::cos(p), m::sin(p), m::cos(y), m::sin(y)));
}
template <typename T>
SK_INLINE void adj_quat_rpy(T roll, T pitch, T yaw, T& adj_roll, T& adj_pitch, T& adj_yaw,
                            const quat_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    C r = C(roll) * C(0.5), p = C(pitch) * C(0.5), y = C(yaw) * C(0.5);
    C cr = m::cos(r), sr = m::sin(r), cp = m::cos(p), sp = m::sin(p), cy = m::cos(y), sy = m::sin(y);
    auto G = qm::ld(adj_ret);
    // the product is linear in each (cos, sin) pair: d/dangle = 0.5 * terms(-sin, cos)
    adj_roll += C(0.5) * qm::qdot(qm::rpy_terms<C>(-sr, cr, cp, sp, cy, sy), G);
    adj_pitch += C(0.5) * qm::qdot(qm::rpy_terms<C>(cr, sr, -sp, cp, cy, sy), G);
    adj_yaw += C(0.5) * qm::qdot(qm::rpy_terms<C>(cr, sr, cp, sp, -sy, cy), G);
}

// conjugate (the inverse for unit quaternions)
template <typename T> SK_INLINE quat_t<T> quat_inverse(const quat_t<T>& q) { return qm::q4(T(-q.x), T(-q.y), T(-q.z), q.w); }
template <typename T> SK_INLINE void adj_quat_inverse(const quat_t<T>& q, quat_t<T>& adj_q, const quat_t<T>& adj_ret) {
    qm::accum(adj_q, qm::qconj(qm::ld(adj_ret)));
}

template <typename T> SK_INLINE vec_t<3, T> quat_rotate(const quat_t<T>& q, const vec_t<3, T>& x) {
    return qm::st<T>(qm::qrot(qm::ld(q), qm::ld(x)));
}
template <typename T>
SK_INLINE void adj_quat_rotate(const quat_t<T>& q, const vec_t<3, T>& x, quat_t<T>& adj_q, vec_t<3, T>& adj_x,
                               const vec_t<3, T>& adj_ret) {
    auto Q = qm::ld(q);
    auto X = qm::ld(x);
    auto dQ = qm::qscale(Q, decltype(Q.x)(0));
    auto dX = qm::vscale(X, decltype(Q.x)(0));
    qm::adj_qrot(Q, X, dQ, dX, qm::ld(adj_ret));
    qm::accum(adj_q, dQ);
    qm::accum(adj_x, dX);
}

template <typename T> SK_INLINE vec_t<3, T> quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& x) {
    typedef typename qm::acc<T>::type C;
    return qm::st<T>(qm::qrot(qm::ld(q), qm::ld(x), C(-1)));
}
template <typename T>
SK_INLINE void adj_quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& x, quat_t<T>& adj_q, vec_t<3, T>& adj_x,
                                   const vec_t<3, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto Q = qm::ld(q);
    auto X = qm::ld(x);
    auto dQ = qm::qscale(Q, C(0));
    auto dX = qm::vscale(X, C(0));
    qm::adj_qrot(Q, X, dQ, dX, qm::ld(adj_ret), C(-1));
    qm::accum(adj_q, dQ);
    qm::accum(adj_x, dX);
}

template <typename T> SK_INLINE mat_t<3, 3, T> quat_to_matrix(const quat_t<T>& q) {
    return qm::st<T>(qm::qto_matrix(qm::ld(q)));
}
template <typename T>
SK_INLINE void adj_quat_to_matrix(const quat_t<T>& q, quat_t<T>& adj_q, const mat_t<3, 3, T>& adj_ret) {
    auto Q = qm::ld(q);
    auto dQ = qm::qscale(Q, decltype(Q.x)(0));
    qm::adj_qto_matrix(Q, dQ, qm::ld(adj_ret));
    qm::accum(adj_q, dQ);
}

// Unit quaternion of the rotation in the top-left 3x3 block of a 3x3 or 4x4 matrix.
template <unsigned R, unsigned Cn, typename T> SK_INLINE quat_t<T> quat_from_matrix(const mat_t<R, Cn, T>& m) {
    static_assert((R == 3 && Cn == 3) || (R == 4 && Cn == 4), "quat_from_matrix needs a 3x3 or 4x4 matrix");
    return qm::st<T>(qm::qnormalize(qm::qfrom_matrix_raw(qm::ld(m))));
}
template <unsigned R, unsigned Cn, typename T>
SK_INLINE void adj_quat_from_matrix(const mat_t<R, Cn, T>& m, mat_t<R, Cn, T>& adj_m, const quat_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto M = qm::ld(m);
    quat_t<C> u = qm::qfrom_matrix_raw(M);
    quat_t<C> du = qm::qscale(u, C(0));
    qm::adj_qnormalize(u, du, qm::ld(adj_ret));
    mat_t<R, Cn, C> dM = zero<mat_t<R, Cn, C>>();
    qm::adj_qfrom_matrix_raw(M, dM, du);
    qm::accum(adj_m, dM);
}

// Spherical linear interpolation along the shortest arc (as Warp):
// a * from_axis_angle(to_axis_angle(inverse(a) * b) scaled by t).
// With r = inverse(a) * b = (v, w), s = sign(w), W = |w|, l = |v|, theta = m::atan2(l, W):
// e = (s v m::sin(t theta) / l, m::cos(t theta)), result = a * e.
namespace qm {
template <typename C> SK_INLINE quat_t<C> slerp_e(const quat_t<C>& r, C t) {
    vec_t<3, C> v = qvec(r);
    C l = m::sqrt(vdot(v, v));
    C s = r.w < C(0) ? C(-1) : C(1);
    C W = s * r.w;
    C th = m::atan2(l, W);
    C g = l > C(0) ? m::sin(t * th) / l : (W > C(0) ? t / W : C(0));
    return q4(s * g * v.c[0], s * g * v.c[1], s * g * v.c[2], C(m::cos(t * th)));
}
template <typename C>
SK_INLINE void adj_slerp_e(const quat_t<C>& r, C t, quat_t<C>& adj_r, C& adj_t, const quat_t<C>& ge) {
    vec_t<3, C> v = qvec(r);
    C l = m::sqrt(vdot(v, v));
    C s = r.w < C(0) ? C(-1) : C(1);
    C W = s * r.w;
    vec_t<3, C> gv = qvec(ge);
    if (l > C(0)) {
        C den = l * l + W * W;
        C th = m::atan2(l, W);
        C sn = m::sin(t * th), cs = m::cos(t * th);
        C g = sn / l;
        C h = (t * cs * W / den - g) / (l * l);
        C vg = vdot(v, gv);
        C kv = s * h * vg - t * W * g * ge.w / den;
        adj_r.x += s * g * gv.c[0] + kv * v.c[0];
        adj_r.y += s * g * gv.c[1] + kv * v.c[1];
        adj_r.z += s * g * gv.c[2] + kv * v.c[2];
        adj_r.w += -t * cs * vg / den + s * t * g * l * l * ge.w / den;
        adj_t += s * cs * th / l * vg - sn * th * ge.w;
    } else if (W > C(0)) {
        C g = s * t / W;
        adj_r.x += g * gv.c[0];
        adj_r.y += g * gv.c[1];
        adj_r.z += g * gv.c[2];
    }
}
}  // namespace qm

template <typename T>
SK_INLINE quat_t<T> quat_slerp(const quat_t<T>& a, const quat_t<T>& b, typename qm::id<T>::type t) {
    typedef typename qm::acc<T>::type C;
    auto A = qm::ld(a);
    quat_t<C> r = qm::qmul(qm::qconj(A), qm::ld(b));
    return qm::st<T>(qm::qmul(A, qm::slerp_e(r, C(t))));
}
template <typename T>
SK_INLINE void adj_quat_slerp(const quat_t<T>& a, const quat_t<T>& b, typename qm::id<T>::type t, quat_t<T>& adj_a,
                              quat_t<T>& adj_b, T& adj_t, const quat_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto A = qm::ld(a);
    auto B = qm::ld(b);
    auto G = qm::ld(adj_ret);
    quat_t<C> ca = qm::qconj(A);
    quat_t<C> r = qm::qmul(ca, B);
    quat_t<C> e = qm::slerp_e(r, C(t));
    quat_t<C> zq = qm::qscale(A, C(0));
    quat_t<C> dA = zq, dE = zq, dR = zq, dCA = zq, dB = zq;
    C dt = C(0);
    qm::adj_qmul(A, e, dA, dE, G);
    qm::adj_slerp_e(r, C(t), dR, dt, dE);
    qm::adj_qmul(ca, B, dCA, dB, dR);
    dA = qm::qadd(dA, qm::qconj(dCA));
    qm::accum(adj_a, dA);
    qm::accum(adj_b, dB);
    adj_t += dt;
}

// ---------------------------------------------------------------------------
// Classification and length (not differentiable)

template <typename T> SK_INLINE bool isfinite(const quat_t<T>& q) {
    auto Q = qm::ld(q);
    return qm::fin(Q.x) && qm::fin(Q.y) && qm::fin(Q.z) && qm::fin(Q.w);
}
template <typename T> SK_INLINE bool isnan(const quat_t<T>& q) {
    auto Q = qm::ld(q);
    return qm::nan(Q.x) || qm::nan(Q.y) || qm::nan(Q.z) || qm::nan(Q.w);
}
template <typename T> SK_INLINE bool isinf(const quat_t<T>& q) {
    auto Q = qm::ld(q);
    return qm::inf(Q.x) || qm::inf(Q.y) || qm::inf(Q.z) || qm::inf(Q.w);
}
template <typename T> SK_INLINE int32 len(const quat_t<T>&) { return 4; }

}  // namespace sk
