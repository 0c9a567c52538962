// simkit native rigid transforms: transform_t<T> = (p: vec3, q: quat), 7 scalars.
// transform_point(t, x) = quat_rotate(t.q, x) + t.p; a * b applies b first, then a.
// Forward functions with their adjoints right below (see docs/internals.md).
#pragma once

#include "core.h"
#include "quat.h"

namespace sk {

namespace qm {
template <typename C> SK_INLINE transform_t<C> tf(const vec_t<3, C>& p, const quat_t<C>& q) {
    transform_t<C> t;
    t.p = p;
    t.q = q;
    return t;
}
}  // namespace qm

// Adjoint accumulation (a += b over the 7 scalars; half accumulates in float).
template <typename T> SK_INLINE transform_t<T>& operator+=(transform_t<T>& a, const transform_t<T>& b) {
    qm::accum(a, b);
    return a;
}

// ---------------------------------------------------------------------------
// Constructors (registry key "transformation"; S is the target scalar type)

// transform(): all seven components zero (as in Warp; transform_identity() gives the identity)
template <typename S> SK_INLINE transform_t<S> transformation() { return zero<transform_t<S>>(); }
template <typename S> SK_INLINE void adj_transformation(const transform_t<S>& adj_ret) {}

// transform(p, q)
template <typename S, typename U>
SK_INLINE transform_t<S> transformation(const vec_t<3, U>& p, const quat_t<U>& q) {
    transform_t<S> t;
    for (int i = 0; i < 3; ++i) t.p.c[i] = S(p.c[i]);
    t.q = quaternion<S>(q);
    return t;
}
template <typename S, typename U>
SK_INLINE void adj_transformation(const vec_t<3, U>& p, const quat_t<U>& q, vec_t<3, U>& adj_p, quat_t<U>& adj_q,
                                  const transform_t<S>& adj_ret) {
    auto g = qm::ld(adj_ret);
    qm::accum(adj_p, g.p);
    qm::accum(adj_q, g.q);
}

// transform(p): identity rotation
template <typename S, typename U> SK_INLINE transform_t<S> transformation(const vec_t<3, U>& p) {
    transform_t<S> t;
    for (int i = 0; i < 3; ++i) t.p.c[i] = S(p.c[i]);
    t.q = quat_identity<S>();
    return t;
}
template <typename S, typename U>
SK_INLINE void adj_transformation(const vec_t<3, U>& p, vec_t<3, U>& adj_p, const transform_t<S>& adj_ret) {
    qm::accum(adj_p, qm::ld(adj_ret).p);
}

// transform(other): copy / convert the scalar type
template <typename S, typename U> SK_INLINE transform_t<S> transformation(const transform_t<U>& t) {
    return qm::st<S>(t);
}
template <typename S, typename U>
SK_INLINE void adj_transformation(const transform_t<U>& t, transform_t<U>& adj_t, const transform_t<S>& adj_ret) {
    qm::accum(adj_t, qm::ld(adj_ret));
}

// transform(s): every component set to s
template <typename S, typename W> SK_INLINE transform_t<S> transformation_fill(W s) {
    transform_t<S> t;
    for (int i = 0; i < 7; ++i) flat(t)[i] = S(s);
    return t;
}
template <typename S, typename W>
SK_INLINE void adj_transformation_fill(W s, W& adj_s, const transform_t<S>& adj_ret) {
    typename qm::acc<S>::type sum = 0;
    for (int i = 0; i < 7; ++i) sum += flat(adj_ret)[i];
    adj_s += sum;
}

template <typename S> SK_INLINE transform_t<S> transform_identity() {
    transform_t<S> t = zero<transform_t<S>>();
    t.q = quat_identity<S>();
    return t;
}
template <typename S> SK_INLINE void adj_transform_identity(const transform_t<S>& adj_ret) {}

// ---------------------------------------------------------------------------
// Parts (t.p, t.q and their functional setters)

template <typename T> SK_INLINE vec_t<3, T> transform_get_translation(const transform_t<T>& t) { return t.p; }
template <typename T>
SK_INLINE void adj_transform_get_translation(const transform_t<T>& t, transform_t<T>& adj_t,
                                             const vec_t<3, T>& adj_ret) {
    qm::accum(adj_t.p, qm::ld(adj_ret));
}

template <typename T> SK_INLINE quat_t<T> transform_get_rotation(const transform_t<T>& t) { return t.q; }
template <typename T>
SK_INLINE void adj_transform_get_rotation(const transform_t<T>& t, transform_t<T>& adj_t, const quat_t<T>& adj_ret) {
    qm::accum(adj_t.q, qm::ld(adj_ret));
}

// Functional t.p = p: returns t with its translation replaced.
template <typename T>
SK_INLINE transform_t<T> transform_set_translation(const transform_t<T>& t, const vec_t<3, T>& p) {
    transform_t<T> r = t;
    r.p = p;
    return r;
}
template <typename T>
SK_INLINE void adj_transform_set_translation(const transform_t<T>& t, const vec_t<3, T>& p, transform_t<T>& adj_t,
                                             vec_t<3, T>& adj_p, const transform_t<T>& adj_ret) {
    qm::accum(adj_t.q, qm::ld(adj_ret.q));
    qm::accum(adj_p, qm::ld(adj_ret.p));
}

// Functional t.q = q: returns t with its rotation replaced.
template <typename T>
SK_INLINE transform_t<T> transform_set_rotation(const transform_t<T>& t, const quat_t<T>& q) {
    transform_t<T> r = t;
    r.q = q;
    return r;
}
template <typename T>
SK_INLINE void adj_transform_set_rotation(const transform_t<T>& t, const quat_t<T>& q, transform_t<T>& adj_t,
                                          quat_t<T>& adj_q, const transform_t<T>& adj_ret) {
    qm::accum(adj_t.p, qm::ld(adj_ret.p));
    qm::accum(adj_q, qm::ld(adj_ret.q));
}

// ---------------------------------------------------------------------------
// Component access over the 7 scalars (p.x, p.y, p.z, q.x, q.y, q.z, q.w)

template <typename T, typename I> SK_INLINE T extract(const transform_t<T>& a, I i) {
    int k = int(i);
    if (k < 0) k += 7;
    return flat(a)[k];
}
template <typename T, typename I>
SK_INLINE void adj_extract(const transform_t<T>& a, I i, transform_t<T>& adj_a, I& adj_i, const T& adj_ret) {
    int k = int(i);
    if (k < 0) k += 7;
    flat(adj_a)[k] += typename qm::acc<T>::type(adj_ret);
}

template <typename T, typename I>
SK_INLINE transform_t<T> assign(const transform_t<T>& a, I i, typename qm::id<T>::type value) {
    int k = int(i);
    if (k < 0) k += 7;
    transform_t<T> r = a;
    flat(r)[k] = value;
    return r;
}
template <typename T, typename I>
SK_INLINE void adj_assign(const transform_t<T>& a, I i, typename qm::id<T>::type value, transform_t<T>& adj_a,
                          I& adj_i, T& adj_value, const transform_t<T>& adj_ret) {
    int k = int(i);
    if (k < 0) k += 7;
    typedef typename qm::acc<T>::type C;
    for (int j = 0; j < 7; ++j)
        if (j != k) flat(adj_a)[j] += C(flat(adj_ret)[j]);
    adj_value += C(flat(adj_ret)[k]);
}

// ---------------------------------------------------------------------------
// Composition and application

namespace qm {
template <typename C> SK_INLINE transform_t<C> tmul(const transform_t<C>& a, const transform_t<C>& b) {
    return tf(vadd(qrot(a.q, b.p), a.p), qmul(a.q, b.q));
}
template <typename C>
SK_INLINE void adj_tmul(const transform_t<C>& a, const transform_t<C>& b, transform_t<C>& adj_a, transform_t<C>& adj_b,
                        const transform_t<C>& g) {
    adj_qrot(a.q, b.p, adj_a.q, adj_b.p, g.p);
    adj_a.p = vadd(adj_a.p, g.p);
    adj_qmul(a.q, b.q, adj_a.q, adj_b.q, g.q);
}
}  // namespace qm

// a * b: apply b, then a. Translation a.p + quat_rotate(a.q, b.p), rotation a.q * b.q.
template <typename T>
SK_INLINE transform_t<T> transform_multiply(const transform_t<T>& a, const transform_t<T>& b) {
    return qm::st<T>(qm::tmul(qm::ld(a), qm::ld(b)));
}
template <typename T>
SK_INLINE void adj_transform_multiply(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a,
                                      transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    transform_t<C> dA = zero<transform_t<C>>(), dB = zero<transform_t<C>>();
    qm::adj_tmul(qm::ld(a), qm::ld(b), dA, dB, qm::ld(adj_ret));
    qm::accum(adj_a, dA);
    qm::accum(adj_b, dB);
}

// operator a * b on transforms == transform_multiply
template <typename T> SK_INLINE transform_t<T> mul(const transform_t<T>& a, const transform_t<T>& b) {
    return transform_multiply(a, b);
}
template <typename T>
SK_INLINE void adj_mul(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a, transform_t<T>& adj_b,
                       const transform_t<T>& adj_ret) {
    adj_transform_multiply(a, b, adj_a, adj_b, adj_ret);
}

// Rotation conjugate(q), translation -quat_rotate(conjugate(q), p)
template <typename T> SK_INLINE transform_t<T> transform_inverse(const transform_t<T>& t) {
    typedef typename qm::acc<T>::type C;
    auto X = qm::ld(t);
    return qm::st<T>(qm::tf(qm::vscale(qm::qrot(X.q, X.p, C(-1)), C(-1)), qm::qconj(X.q)));
}
template <typename T>
SK_INLINE void adj_transform_inverse(const transform_t<T>& t, transform_t<T>& adj_t, const transform_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto X = qm::ld(t);
    auto G = qm::ld(adj_ret);
    transform_t<C> d = zero<transform_t<C>>();
    qm::adj_qrot(X.q, X.p, d.q, d.p, qm::vscale(G.p, C(-1)), C(-1));
    d.q = qm::qadd(d.q, qm::qconj(G.q));
    qm::accum(adj_t, d);
}

template <typename T> SK_INLINE vec_t<3, T> transform_point(const transform_t<T>& t, const vec_t<3, T>& x) {
    auto X = qm::ld(t);
    return qm::st<T>(qm::vadd(qm::qrot(X.q, qm::ld(x)), X.p));
}
template <typename T>
SK_INLINE void adj_transform_point(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                   vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    auto X = qm::ld(t);
    auto G = qm::ld(adj_ret);
    transform_t<C> d = zero<transform_t<C>>();
    vec_t<3, C> dx = zero<vec_t<3, C>>();
    qm::adj_qrot(X.q, qm::ld(x), d.q, dx, G);
    d.p = G;
    qm::accum(adj_t, d);
    qm::accum(adj_x, dx);
}

template <typename T> SK_INLINE vec_t<3, T> transform_vector(const transform_t<T>& t, const vec_t<3, T>& x) {
    return qm::st<T>(qm::qrot(qm::ld(t.q), qm::ld(x)));
}
template <typename T>
SK_INLINE void adj_transform_vector(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t,
                                    vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    quat_t<C> dq = zero<quat_t<C>>();
    vec_t<3, C> dx = zero<vec_t<3, C>>();
    qm::adj_qrot(qm::ld(t.q), qm::ld(x), dq, dx, qm::ld(adj_ret));
    qm::accum(adj_t.q, dq);
    qm::accum(adj_x, dx);
}

// 4x4 matrix forms (column vectors, homogeneous w = 1 for points, 0 for vectors; no divide)
template <typename T> SK_INLINE vec_t<3, T> transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    typedef typename qm::acc<T>::type C;
    vec_t<3, T> r;
    for (int i = 0; i < 3; ++i)
        r.c[i] = T(C(m.data[i][0]) * C(x.c[0]) + C(m.data[i][1]) * C(x.c[1]) + C(m.data[i][2]) * C(x.c[2]) +
                   C(m.data[i][3]));
    return r;
}
template <typename T>
SK_INLINE void adj_transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                   vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    for (int i = 0; i < 3; ++i) {
        C g = C(adj_ret.c[i]);
        for (int j = 0; j < 3; ++j) {
            adj_m.data[i][j] += g * C(x.c[j]);
            adj_x.c[j] += g * C(m.data[i][j]);
        }
        adj_m.data[i][3] += g;
    }
}

template <typename T> SK_INLINE vec_t<3, T> transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    typedef typename qm::acc<T>::type C;
    vec_t<3, T> r;
    for (int i = 0; i < 3; ++i)
        r.c[i] = T(C(m.data[i][0]) * C(x.c[0]) + C(m.data[i][1]) * C(x.c[1]) + C(m.data[i][2]) * C(x.c[2]));
    return r;
}
template <typename T>
SK_INLINE void adj_transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m,
                                    vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    for (int i = 0; i < 3; ++i) {
        C g = C(adj_ret.c[i]);
        for (int j = 0; j < 3; ++j) {
            adj_m.data[i][j] += g * C(x.c[j]);
            adj_x.c[j] += g * C(m.data[i][j]);
        }
    }
}

// [[R, p], [0, 0, 0, 1]] <-> (p, quat_from_matrix(R))
template <typename T> SK_INLINE transform_t<T> transform_from_matrix(const mat_t<4, 4, T>& m) {
    transform_t<T> t;
    for (int i = 0; i < 3; ++i) t.p.c[i] = m.data[i][3];
    t.q = quat_from_matrix(m);
    return t;
}
template <typename T>
SK_INLINE void adj_transform_from_matrix(const mat_t<4, 4, T>& m, mat_t<4, 4, T>& adj_m, const transform_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    for (int i = 0; i < 3; ++i) adj_m.data[i][3] += C(adj_ret.p.c[i]);
    adj_quat_from_matrix(m, adj_m, adj_ret.q);
}

template <typename T> SK_INLINE mat_t<4, 4, T> transform_to_matrix(const transform_t<T>& t) {
    mat_t<3, 3, T> r = quat_to_matrix(t.q);
    mat_t<4, 4, T> m = zero<mat_t<4, 4, T>>();
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) m.data[i][j] = r.data[i][j];
        m.data[i][3] = t.p.c[i];
    }
    m.data[3][3] = T(1);
    return m;
}
template <typename T>
SK_INLINE void adj_transform_to_matrix(const transform_t<T>& t, transform_t<T>& adj_t, const mat_t<4, 4, T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    mat_t<3, 3, T> g;
    for (int i = 0; i < 3; ++i) {
        for (int j = 0; j < 3; ++j) g.data[i][j] = adj_ret.data[i][j];
        adj_t.p.c[i] += C(adj_ret.data[i][3]);
    }
    adj_quat_to_matrix(t.q, adj_t.q, g);
}

// ---------------------------------------------------------------------------
// Component-wise arithmetic (as in Warp; the quaternion part is left unnormalized)

// Exact equality of all 7 components; not differentiable.
template <typename T> SK_INLINE bool eq(const transform_t<T>& a, const transform_t<T>& b) {
    return eq(a.p, b.p) && eq(a.q, b.q);
}
template <typename T> SK_INLINE bool ne(const transform_t<T>& a, const transform_t<T>& b) { return !eq(a, b); }

template <typename T> SK_INLINE transform_t<T> add(const transform_t<T>& a, const transform_t<T>& b) {
    typedef typename qm::acc<T>::type C;
    transform_t<T> r;
    for (int i = 0; i < 7; ++i) flat(r)[i] = T(C(flat(a)[i]) + C(flat(b)[i]));
    return r;
}
template <typename T>
SK_INLINE void adj_add(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a, transform_t<T>& adj_b,
                       const transform_t<T>& adj_ret) {
    qm::accum(adj_a, qm::ld(adj_ret));
    qm::accum(adj_b, qm::ld(adj_ret));
}

template <typename T> SK_INLINE transform_t<T> sub(const transform_t<T>& a, const transform_t<T>& b) {
    typedef typename qm::acc<T>::type C;
    transform_t<T> r;
    for (int i = 0; i < 7; ++i) flat(r)[i] = T(C(flat(a)[i]) - C(flat(b)[i]));
    return r;
}
template <typename T>
SK_INLINE void adj_sub(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a, transform_t<T>& adj_b,
                       const transform_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    for (int i = 0; i < 7; ++i) {
        flat(adj_a)[i] += C(flat(adj_ret)[i]);
        flat(adj_b)[i] += -C(flat(adj_ret)[i]);
    }
}

template <typename T> SK_INLINE transform_t<T> mul(const transform_t<T>& a, typename qm::id<T>::type s) {
    typedef typename qm::acc<T>::type C;
    transform_t<T> r;
    for (int i = 0; i < 7; ++i) flat(r)[i] = T(C(flat(a)[i]) * C(s));
    return r;
}
template <typename T>
SK_INLINE void adj_mul(const transform_t<T>& a, typename qm::id<T>::type s, transform_t<T>& adj_a, T& adj_s,
                       const transform_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    C sum = C(0);
    for (int i = 0; i < 7; ++i) {
        flat(adj_a)[i] += C(flat(adj_ret)[i]) * C(s);
        sum += C(flat(adj_ret)[i]) * C(flat(a)[i]);
    }
    adj_s += sum;
}
template <typename T> SK_INLINE transform_t<T> mul(typename qm::id<T>::type s, const transform_t<T>& a) {
    return mul(a, s);
}
template <typename T>
SK_INLINE void adj_mul(typename qm::id<T>::type s, const transform_t<T>& a, T& adj_s, transform_t<T>& adj_a,
                       const transform_t<T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}

template <typename T>
SK_INLINE transform_t<T> lerp(const transform_t<T>& a, const transform_t<T>& b, typename qm::id<T>::type t) {
    typedef typename qm::acc<T>::type C;
    transform_t<T> r;
    for (int i = 0; i < 7; ++i) flat(r)[i] = T(C(flat(a)[i]) * (C(1) - C(t)) + C(flat(b)[i]) * C(t));
    return r;
}
template <typename T>
SK_INLINE void adj_lerp(const transform_t<T>& a, const transform_t<T>& b, typename qm::id<T>::type t,
                        transform_t<T>& adj_a, transform_t<T>& adj_b, T& adj_t, const transform_t<T>& adj_ret) {
    typedef typename qm::acc<T>::type C;
    C sum = C(0);
    for (int i = 0; i < 7; ++i) {
        C g = C(flat(adj_ret)[i]);
        flat(adj_a)[i] += g * (C(1) - C(t));
        flat(adj_b)[i] += g * C(t);
        sum += g * (C(flat(b)[i]) - C(flat(a)[i]));
    }
    adj_t += sum;
}

template <typename T> SK_INLINE bool isfinite(const transform_t<T>& t) {
    for (int i = 0; i < 7; ++i)
        if (!qm::fin(typename qm::acc<T>::type(flat(t)[i]))) return false;
    return true;
}
template <typename T> SK_INLINE bool isnan(const transform_t<T>& t) {
    for (int i = 0; i < 7; ++i)
        if (qm::nan(typename qm::acc<T>::type(flat(t)[i]))) return true;
    return false;
}
template <typename T> SK_INLINE bool isinf(const transform_t<T>& t) {
    for (int i = 0; i < 7; ++i)
        if (qm::inf(typename qm::acc<T>::type(flat(t)[i]))) return true;
    return false;
}
template <typename T> SK_INLINE int32 len(const transform_t<T>&) { return 7; }

}  // namespace sk
