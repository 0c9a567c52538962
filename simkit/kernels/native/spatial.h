// simkit native spatial algebra. A spatial vector is vec_t<6, T> = (angular, linear):
// a twist (w, v) or a wrench (torque, force). Spatial matrices are mat_t<6, 6, T>.
// Forward functions with their adjoints right below (see docs/internals.md).
#pragma once

#include "core.h"
#include "quat.h"
#include "transform.h"

namespace sk {

namespace qm {
template <typename C> SK_INLINE vec_t<3, C> top(const vec_t<6, C>& a) { return v3(a.c[0], a.c[1], a.c[2]); }
template <typename C> SK_INLINE vec_t<3, C> bottom(const vec_t<6, C>& a) { return v3(a.c[3], a.c[4], a.c[5]); }
template <typename C> SK_INLINE vec_t<6, C> sv(const vec_t<3, C>& w, const vec_t<3, C>& v) {
    vec_t<6, C> r;
    for (int i = 0; i < 3; ++i) {
        r.c[i] = w.c[i];
        r.c[i + 3] = v.c[i];
    }
    return r;
}
}  // namespace qm

// spatial_vector(w, v) (registry key "vector", target length 6); S is the target scalar type
template <typename S, typename U> SK_INLINE vec_t<6, S> spatial_vector(const vec_t<3, U>& w, const vec_t<3, U>& v) {
    vec_t<6, S> r;
    for (int i = 0; i < 3; ++i) {
        r.c[i] = S(w.c[i]);
        r.c[i + 3] = S(v.c[i]);
    }
    return r;
}
template <typename S, typename U>
SK_INLINE void adj_spatial_vector(const vec_t<3, U>& w, const vec_t<3, U>& v, vec_t<3, U>& adj_w, vec_t<3, U>& adj_v,
                                  const vec_t<6, S>& adj_ret) {
    typedef typename qm::acc<S>::type C;
    for (int i = 0; i < 3; ++i) {
        adj_w.c[i] += C(adj_ret.c[i]);
        adj_v.c[i] += C(adj_ret.c[i + 3]);
    }
}

// components 0..2 (angular velocity or torque)
template <typename T> SK_INLINE vec_t<3, T> spatial_top(const vec_t<6, T>& a) { return qm::v3(a.c[0], a.c[1], a.c[2]); }
template <typename T> SK_INLINE void adj_spatial_top(const vec_t<6, T>& a, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    for (int i = 0; i < 3; ++i) adj_a.c[i] += C(adj_ret.c[i]);
}

// components 3..5 (linear velocity or force)
template <typename T> SK_INLINE vec_t<3, T> spatial_bottom(const vec_t<6, T>& a) { return qm::v3(a.c[3], a.c[4], a.c[5]); }
template <typename T>
SK_INLINE void adj_spatial_bottom(const vec_t<6, T>& a, vec_t<6, T>& adj_a, const vec_t<3, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    for (int i = 0; i < 3; ++i) adj_a.c[i + 3] += C(adj_ret.c[i]);
}

template <typename T> SK_INLINE T spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    typedef typename qm::acc<T>::type C;
    C s = C(0);
    for (int i = 0; i < 6; ++i) s += C(a.c[i]) * C(b.c[i]);
    return T(s);
}
template <typename T>
SK_INLINE void adj_spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b,
                               const T& adj_ret) {
    typedef typename qm::acc<T>::type C;
    C g = C(adj_ret);
    for (int i = 0; i < 6; ++i) {
        adj_a.c[i] += g * C(b.c[i]);
        adj_b.c[i] += g * C(a.c[i]);
    }
}

// twist x twist: (wa x wb, va x wb + wa x vb)
template <typename T> SK_INLINE vec_t<6, T> spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    auto A = qm::ld(a);
    auto B = qm::ld(b);
    auto wa = qm::top(A), va = qm::bottom(A), wb = qm::top(B), vb = qm::bottom(B);
    return qm::st<T>(qm::sv(qm::vcross(wa, wb), qm::vadd(qm::vcross(va, wb), qm::vcross(wa, vb))));
}
template <typename T>
SK_INLINE void adj_spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b,
                                 const vec_t<6, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto A = qm::ld(a);
    auto B = qm::ld(b);
    auto G = qm::ld(adj_ret);
    auto wa = qm::top(A), va = qm::bottom(A), wb = qm::top(B), vb = qm::bottom(B);
    auto gw = qm::top(G), gv = qm::bottom(G);
    vec_t<3, C> dwa = zero<vec_t<3, C>>(), dva = dwa, dwb = dwa, dvb = dwa;
    qm::adj_vcross(wa, wb, dwa, dwb, gw);
    qm::adj_vcross(va, wb, dva, dwb, gv);
    qm::adj_vcross(wa, vb, dwa, dvb, gv);
    qm::accum(adj_a, qm::sv(dwa, dva));
    qm::accum(adj_b, qm::sv(dwb, dvb));
}

// twist a = (w, v) acting on wrench b = (n, f): (w x n + v x f, w x f)
template <typename T> SK_INLINE vec_t<6, T> spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    auto A = qm::ld(a);
    auto B = qm::ld(b);
    auto wa = qm::top(A), va = qm::bottom(A), wb = qm::top(B), vb = qm::bottom(B);
    return qm::st<T>(qm::sv(qm::vadd(qm::vcross(wa, wb), qm::vcross(va, vb)), qm::vcross(wa, vb)));
}
template <typename T>
SK_INLINE void adj_spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a,
                                      vec_t<6, T>& adj_b, const vec_t<6, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto A = qm::ld(a);
    auto B = qm::ld(b);
    auto G = qm::ld(adj_ret);
    auto wa = qm::top(A), va = qm::bottom(A), wb = qm::top(B), vb = qm::bottom(B);
    auto gw = qm::top(G), gv = qm::bottom(G);
    vec_t<3, C> dwa = zero<vec_t<3, C>>(), dva = dwa, dwb = dwa, dvb = dwa;
    qm::adj_vcross(wa, wb, dwa, dwb, gw);
    qm::adj_vcross(va, vb, dva, dvb, gw);
    qm::adj_vcross(wa, vb, dwa, dvb, gv);
    qm::accum(adj_a, qm::sv(dwa, dva));
    qm::accum(adj_b, qm::sv(dwb, dvb));
}

// [[r, 0], [s, r]]
template <typename T> SK_INLINE mat_t<6, 6, T> spatial_adjoint(const mat_t<3, 3, T>& r, const mat_t<3, 3, T>& s) {
    mat_t<6, 6, T> m = zero<mat_t<6, 6, T>>();
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            m.data[i][j] = r.data[i][j];
            m.data[i + 3][j + 3] = r.data[i][j];
            m.data[i + 3][j] = s.data[i][j];
        }
    return m;
}
template <typename T>
SK_INLINE void adj_spatial_adjoint(const mat_t<3, 3, T>& r, const mat_t<3, 3, T>& s, mat_t<3, 3, T>& adj_r,
                                   mat_t<3, 3, T>& adj_s, const mat_t<6, 6, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            adj_r.data[i][j] += C(adj_ret.data[i][j]) + C(adj_ret.data[i + 3][j + 3]);
            adj_s.data[i][j] += C(adj_ret.data[i + 3][j]);
        }
}

// Twist (w, v) mapped by t = (p, q): w' = R w, v' = R v + p x w'
template <typename T> SK_INLINE vec_t<6, T> transform_twist(const transform_t<T>& t, const vec_t<6, T>& x) {
    auto X = qm::ld(t);
    auto S = qm::ld(x);
    auto w = qm::qrot(X.q, qm::top(S));
    auto v = qm::vadd(qm::qrot(X.q, qm::bottom(S)), qm::vcross(X.p, w));
    return qm::st<T>(qm::sv(w, v));
}
template <typename T>
SK_INLINE void adj_transform_twist(const transform_t<T>& t, const vec_t<6, T>& x, transform_t<T>& adj_t,
                                   vec_t<6, T>& adj_x, const vec_t<6, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto X = qm::ld(t);
    auto S = qm::ld(x);
    auto G = qm::ld(adj_ret);
    auto w = qm::qrot(X.q, qm::top(S));
    transform_t<C> dT = zero<transform_t<C>>();
    vec_t<3, C> dw = qm::top(G), dwx = zero<vec_t<3, C>>(), dvx = dwx;
    auto gv = qm::bottom(G);
    qm::adj_vcross(X.p, w, dT.p, dw, gv);
    qm::adj_qrot(X.q, qm::bottom(S), dT.q, dvx, gv);
    qm::adj_qrot(X.q, qm::top(S), dT.q, dwx, dw);
    qm::accum(adj_t, dT);
    qm::accum(adj_x, qm::sv(dwx, dvx));
}

// Wrench (tau, f) mapped by t = (p, q): f' = R f, tau' = R tau + p x f'
template <typename T> SK_INLINE vec_t<6, T> transform_wrench(const transform_t<T>& t, const vec_t<6, T>& x) {
    auto X = qm::ld(t);
    auto S = qm::ld(x);
    auto f = qm::qrot(X.q, qm::bottom(S));
    auto tau = qm::vadd(qm::qrot(X.q, qm::top(S)), qm::vcross(X.p, f));
    return qm::st<T>(qm::sv(tau, f));
}
template <typename T>
SK_INLINE void adj_transform_wrench(const transform_t<T>& t, const vec_t<6, T>& x, transform_t<T>& adj_t,
                                    vec_t<6, T>& adj_x, const vec_t<6, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto X = qm::ld(t);
    auto S = qm::ld(x);
    auto G = qm::ld(adj_ret);
    auto f = qm::qrot(X.q, qm::bottom(S));
    transform_t<C> dT = zero<transform_t<C>>();
    vec_t<3, C> df = qm::bottom(G), dtx = zero<vec_t<3, C>>(), dfx = dtx;
    auto gt = qm::top(G);
    qm::adj_vcross(X.p, f, dT.p, df, gt);
    qm::adj_qrot(X.q, qm::top(S), dT.q, dtx, gt);
    qm::adj_qrot(X.q, qm::bottom(S), dT.q, dfx, df);
    qm::accum(adj_t, dT);
    qm::accum(adj_x, qm::sv(dtx, dfx));
}

// Linear velocity of a point at offset r from the twist origin: v + w x r
template <typename T> SK_INLINE vec_t<3, T> velocity_at_point(const vec_t<6, T>& qd, const vec_t<3, T>& r) {
    auto S = qm::ld(qd);
    return qm::st<T>(qm::vadd(qm::bottom(S), qm::vcross(qm::top(S), qm::ld(r))));
}
template <typename T>
SK_INLINE void adj_velocity_at_point(const vec_t<6, T>& qd, const vec_t<3, T>& r, vec_t<6, T>& adj_qd,
                                     vec_t<3, T>& adj_r, const vec_t<3, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto S = qm::ld(qd);
    auto G = qm::ld(adj_ret);
    vec_t<3, C> dw = zero<vec_t<3, C>>(), dr = dw;
    qm::adj_vcross(qm::top(S), qm::ld(r), dw, dr, G);
    qm::accum(adj_qd, qm::sv(dw, G));
    qm::accum(adj_r, dr);
}

}  // namespace sk
