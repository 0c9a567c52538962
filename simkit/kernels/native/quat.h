// simkit native quaternions: quat_t<T> = (x, y, z, w), w is the real part.
// Forward functions with their adjoints right below (see docs/internals.md).
// Every function is templated on T (half, float, double); half computes in float.
// The Hamilton product a * b applies b first, then a; quat_rotate(q, v) rotates
// column vectors (quat_to_matrix(q) @ v == quat_rotate(q, v)).
#pragma once

#include "core.h"
#include "scalar.h"
#include "value_math.h"

namespace sk {

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
