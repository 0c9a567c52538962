// simkit native matrices: forward and adjoint of every matrix builtin.
// mat_t<R, C, T> is row-major (data[i][j]: row i, column j). Generic over the
// shape and the scalar type (half computes in float32). determinant and
// inverse work for any square size (determinant: closed forms up to 4x4, elimination above; inverse: closed
// forms up to 3x3, elimination from 4x4).
// Valid as host C++17 and as NVRTC CUDA code: no STL, no system headers.
#pragma once

#include "core.h"
#include "scalar.h"
#include "vec.h"

namespace sk {

// ---------------------------------------------------------------------------
// Component access: m[i] is row i, m[i, j] is row i, column j.

template <unsigned R, unsigned C, typename T, typename I>
SK_INLINE vec_t<C, T> extract(const mat_t<R, C, T>& m, I i) {
    vec_t<C, T> r;
    int k = vmd::index<R>(i);
    for (unsigned j = 0; j < C; ++j) r.c[j] = k < 0 ? T(0) : m.data[k][j];
    return r;
}
template <unsigned R, unsigned C, typename T, typename I, typename IA>
SK_INLINE void adj_extract(const mat_t<R, C, T>& m, I i, mat_t<R, C, T>& adj_m, IA&& adj_i,
                           const vec_t<C, T>& adj_ret) {
    int k = vmd::index<R>(i);
    if (k >= 0)
        for (unsigned j = 0; j < C; ++j) adj_m.data[k][j] += adj_ret.c[j];
}

template <unsigned R, unsigned C, typename T, typename I, typename J>
SK_INLINE T extract(const mat_t<R, C, T>& m, I i, J j) {
    int k = vmd::index<R>(i), l = vmd::index<C>(j);
    return (k < 0 || l < 0) ? T(0) : m.data[k][l];
}
template <unsigned R, unsigned C, typename T, typename I, typename J, typename IA, typename JA>
SK_INLINE void adj_extract(const mat_t<R, C, T>& m, I i, J j, mat_t<R, C, T>& adj_m, IA&& adj_i, JA&& adj_j,
                           const T& adj_ret) {
    int k = vmd::index<R>(i), l = vmd::index<C>(j);
    if (k >= 0 && l >= 0) adj_m.data[k][l] += adj_ret;
}

// Functional writes: a copy of m with m[i, j] = x, or with row i = v.
template <unsigned R, unsigned C, typename T, typename I, typename J>
SK_INLINE mat_t<R, C, T> assign(const mat_t<R, C, T>& m, I i, J j, typename vmd::ident<T>::type x) {
    mat_t<R, C, T> r = m;
    int k = vmd::index<R>(i), l = vmd::index<C>(j);
    if (k >= 0 && l >= 0) r.data[k][l] = x;
    return r;
}
template <unsigned R, unsigned C, typename T, typename I, typename J, typename IA, typename JA>
SK_INLINE void adj_assign(const mat_t<R, C, T>& m, I i, J j, T x, mat_t<R, C, T>& adj_m, IA&& adj_i, JA&& adj_j,
                          T& adj_x, const mat_t<R, C, T>& adj_ret) {
    int k = vmd::index<R>(i), l = vmd::index<C>(j);
    for (unsigned a = 0; a < R; ++a)
        for (unsigned b = 0; b < C; ++b) {
            if (int(a) == k && int(b) == l)
                adj_x += adj_ret.data[a][b];
            else
                adj_m.data[a][b] += adj_ret.data[a][b];
        }
}

template <unsigned R, unsigned C, typename T, typename I>
SK_INLINE mat_t<R, C, T> assign(const mat_t<R, C, T>& m, I i, const vec_t<C, T>& v) {
    mat_t<R, C, T> r = m;
    int k = vmd::index<R>(i);
    if (k >= 0)
        for (unsigned j = 0; j < C; ++j) r.data[k][j] = v.c[j];
    return r;
}
template <unsigned R, unsigned C, typename T, typename I, typename IA>
SK_INLINE void adj_assign(const mat_t<R, C, T>& m, I i, const vec_t<C, T>& v, mat_t<R, C, T>& adj_m, IA&& adj_i,
                          vec_t<C, T>& adj_v, const mat_t<R, C, T>& adj_ret) {
    int k = vmd::index<R>(i);
    for (unsigned a = 0; a < R; ++a)
        for (unsigned b = 0; b < C; ++b) {
            if (int(a) == k)
                adj_v.c[b] += adj_ret.data[a][b];
            else
                adj_m.data[a][b] += adj_ret.data[a][b];
        }
}

// Debug-mode variants (the registry's checked=True): out-of-range indices report an IndexError.
template <unsigned R, unsigned C, typename T, typename I>
SK_INLINE vec_t<C, T> extract_checked(int line, const mat_t<R, C, T>& m, I i) {
    vmd::index_checked<R>(line, i);
    return extract(m, i);
}
template <unsigned R, unsigned C, typename T, typename I, typename J>
SK_INLINE T extract_checked(int line, const mat_t<R, C, T>& m, I i, J j) {
    if (vmd::index_checked<R>(line, i) >= 0) vmd::index_checked<C>(line, j, 1);
    return extract(m, i, j);
}
template <unsigned R, unsigned C, typename T, typename I, typename J>
SK_INLINE mat_t<R, C, T> assign_checked(int line, const mat_t<R, C, T>& m, I i, J j, typename vmd::ident<T>::type x) {
    if (vmd::index_checked<R>(line, i) >= 0) vmd::index_checked<C>(line, j, 1);
    return assign(m, i, j, x);
}
template <unsigned R, unsigned C, typename T, typename I>
SK_INLINE mat_t<R, C, T> assign_checked(int line, const mat_t<R, C, T>& m, I i, const vec_t<C, T>& v) {
    vmd::index_checked<R>(line, i);
    return assign(m, i, v);
}

// ---------------------------------------------------------------------------
// Constructors named by shape and dtype (the registry's native names): zero,
// fill, cast (generic versions in vec.h) and identity.

template <unsigned R, unsigned C, typename T> SK_INLINE mat_t<R, C, T> mat_zero() { return zero<mat_t<R, C, T>>(); }
template <unsigned R, unsigned C, typename T> SK_INLINE void adj_mat_zero(const mat_t<R, C, T>& adj_ret) {}
template <unsigned R, unsigned C, typename T, typename S> SK_INLINE mat_t<R, C, T> mat_fill(S x) {
    return fill_value<mat_t<R, C, T>>(x);
}
template <unsigned R, unsigned C, typename T, typename S>
SK_INLINE void adj_mat_fill(S x, S& adj_x, const mat_t<R, C, T>& adj_ret) {
    adj_fill_value<mat_t<R, C, T>>(x, adj_x, adj_ret);
}
template <unsigned R, unsigned C, typename T, typename V> SK_INLINE mat_t<R, C, T> mat_cast(const V& v) {
    return cast_value<mat_t<R, C, T>>(v);
}
template <unsigned R, unsigned C, typename T, typename V>
SK_INLINE void adj_mat_cast(const V& v, V& adj_v, const mat_t<R, C, T>& adj_ret) {
    adj_cast_value<mat_t<R, C, T>>(v, adj_v, adj_ret);
}
// identity(n, dtype): n and dtype are compile-time constants already in N and T.
template <unsigned N, typename T, typename... Args> SK_INLINE mat_t<N, N, T> mat_identity(Args...) {
    mat_t<N, N, T> r;
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) r.data[i][j] = i == j ? T(1) : T(0);
    return r;
}

// Accumulation (adjoints of array loads/stores add gradients with +=).
template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T>& operator+=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) a.data[i][j] += b.data[i][j];
    return a;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T>& operator-=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) a.data[i][j] -= b.data[i][j];
    return a;
}

// ---------------------------------------------------------------------------
// Element-wise operators

#define SK_MAT_LOOP(...)             \
    for (unsigned i = 0; i < R; ++i) \
        for (unsigned j = 0; j < C; ++j) { __VA_ARGS__; }

// Element-wise through the scalar operators of scalar.h (integers wrap).
#define SK_MAT_BINARY(op)                                                                                   \
    template <unsigned R, unsigned C, typename T>                                                           \
    SK_INLINE mat_t<R, C, T> op(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {                         \
        mat_t<R, C, T> r;                                                                                   \
        SK_MAT_LOOP(r.data[i][j] = op(a.data[i][j], b.data[i][j]))                                          \
        return r;                                                                                           \
    }                                                                                                       \
    template <unsigned R, unsigned C, typename T>                                                           \
    SK_INLINE void adj_##op(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,        \
                            mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {                         \
        SK_MAT_LOOP(adj_##op(a.data[i][j], b.data[i][j], adj_a.data[i][j], adj_b.data[i][j], adj_ret.data[i][j])) \
    }
#define SK_MAT_UNARY(op)                                                                                    \
    template <unsigned R, unsigned C, typename T> SK_INLINE mat_t<R, C, T> op(const mat_t<R, C, T>& a) {    \
        mat_t<R, C, T> r;                                                                                   \
        SK_MAT_LOOP(r.data[i][j] = op(a.data[i][j]))                                                        \
        return r;                                                                                           \
    }                                                                                                       \
    template <unsigned R, unsigned C, typename T>                                                           \
    SK_INLINE void adj_##op(const mat_t<R, C, T>& a, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) { \
        SK_MAT_LOOP(adj_##op(a.data[i][j], adj_a.data[i][j], adj_ret.data[i][j]))                           \
    }

SK_MAT_BINARY(add)
SK_MAT_BINARY(sub)
SK_MAT_UNARY(neg)
SK_MAT_UNARY(pos)

// matrix * scalar, scalar * matrix
template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T> mul(const mat_t<R, C, T>& a, typename vmd::ident<T>::type s) {
    mat_t<R, C, T> r;
    SK_MAT_LOOP(r.data[i][j] = mul<T>(a.data[i][j], s))
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_mul(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                       const mat_t<R, C, T>& adj_ret) {
    if constexpr (is_float_type<T>::value) {
        typedef calc_t<T> A;
        A ds = A(0);
        SK_MAT_LOOP(adj_a.data[i][j] += A(adj_ret.data[i][j]) * A(s); ds += A(adj_ret.data[i][j]) * A(a.data[i][j]))
        adj_s += ds;
    }
}
template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T> mul(typename vmd::ident<T>::type s, const mat_t<R, C, T>& a) {
    return mul(a, s);
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_mul(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                       const mat_t<R, C, T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}

// matrix / scalar, scalar / matrix (element-wise)
template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T> div(const mat_t<R, C, T>& a, typename vmd::ident<T>::type s) {
    mat_t<R, C, T> r;
    SK_MAT_LOOP(r.data[i][j] = sk::div<T>(a.data[i][j], s))
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_div(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s,
                       const mat_t<R, C, T>& adj_ret) {
    if constexpr (is_float_type<T>::value) {
        typedef calc_t<T> A;
        A inv = A(1) / A(s);
        A ds = A(0);
        SK_MAT_LOOP(adj_a.data[i][j] += (A(adj_ret.data[i][j]) * inv);
                    ds -= A(adj_ret.data[i][j]) * A(a.data[i][j]) * inv * inv)
        adj_s += ds;
    }
}
template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T> div(typename vmd::ident<T>::type s, const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    SK_MAT_LOOP(r.data[i][j] = sk::div<T>(s, a.data[i][j]))
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_div(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a,
                       const mat_t<R, C, T>& adj_ret) {
    if constexpr (is_float_type<T>::value) {
        typedef calc_t<T> A;
        A ds = A(0);
        SK_MAT_LOOP(A inv = A(1) / A(a.data[i][j]); ds += A(adj_ret.data[i][j]) * inv;
                    adj_a.data[i][j] -= (A(adj_ret.data[i][j]) * A(s) * inv * inv))
        adj_s += ds;
    }
}

// Exact equality of all elements; not differentiable.
// Classification: all elements finite, any NaN, any infinite (not differentiable).
template <unsigned R, unsigned C, typename T> SK_INLINE bool isfinite(const mat_t<R, C, T>& a) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j)
            if (!sk::isfinite(a.data[i][j])) return false;
    return true;
}
template <unsigned R, unsigned C, typename T> SK_INLINE bool isnan(const mat_t<R, C, T>& a) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j)
            if (sk::isnan(a.data[i][j])) return true;
    return false;
}
template <unsigned R, unsigned C, typename T> SK_INLINE bool isinf(const mat_t<R, C, T>& a) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j)
            if (sk::isinf(a.data[i][j])) return true;
    return false;
}

template <unsigned R, unsigned C, typename T> SK_INLINE bool eq(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j)
            if (!(a.data[i][j] == b.data[i][j])) return false;
    return true;
}
template <unsigned R, unsigned C, typename T> SK_INLINE bool ne(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    return !eq(a, b);
}

template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T> cw_mul(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    mat_t<R, C, T> r;
    SK_MAT_LOOP(r.data[i][j] = mul(a.data[i][j], b.data[i][j]))
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_cw_mul(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                          mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    SK_MAT_LOOP(adj_mul(a.data[i][j], b.data[i][j], adj_a.data[i][j], adj_b.data[i][j], adj_ret.data[i][j]))
}

template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T> cw_div(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    mat_t<R, C, T> r;
    SK_MAT_LOOP(r.data[i][j] = div(a.data[i][j], b.data[i][j]))
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_cw_div(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                          mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    SK_MAT_LOOP(adj_div(a.data[i][j], b.data[i][j], adj_a.data[i][j], adj_b.data[i][j], adj_ret.data[i][j]))
}

// Frobenius inner product sum_ij a_ij b_ij.
template <unsigned R, unsigned C, typename T> SK_INLINE T ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    typedef vmd::acc_t<T> A;
    A s = A(0);
    SK_MAT_LOOP(s += A(a.data[i][j]) * A(b.data[i][j]))
    return T(s);
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a,
                        mat_t<R, C, T>& adj_b, const T& adj_ret) {
    SK_MAT_LOOP(adj_a.data[i][j] += (b.data[i][j] * adj_ret); adj_b.data[i][j] += (a.data[i][j] * adj_ret))
}

template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T> lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, typename vmd::ident<T>::type t) {
    typedef calc_t<T> A;
    mat_t<R, C, T> r;
    SK_MAT_LOOP(r.data[i][j] = T(A(a.data[i][j]) * (A(1) - A(t)) + A(b.data[i][j]) * A(t)))
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_lerp(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, T t, mat_t<R, C, T>& adj_a,
                        mat_t<R, C, T>& adj_b, T& adj_t, const mat_t<R, C, T>& adj_ret) {
    typedef calc_t<T> A;
    A dt = A(0);
    SK_MAT_LOOP(A g = A(adj_ret.data[i][j]); adj_a.data[i][j] += (g * (A(1) - A(t)));
                adj_b.data[i][j] += (g * A(t)); dt += g * (A(b.data[i][j]) - A(a.data[i][j])))
    adj_t += dt;
}

// where / select on matrices: the generic value versions in scalar.h.

// ---------------------------------------------------------------------------
// Products

// (R x K) (K x C)
template <unsigned R, unsigned K, unsigned C, typename T>
SK_INLINE mat_t<R, C, T> mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) {
    typedef vmd::acc_t<T> A;
    mat_t<R, C, T> r;
    SK_MAT_LOOP(A s = A(0); for (unsigned k = 0; k < K; ++k) s += A(a.data[i][k]) * A(b.data[k][j]);
                r.data[i][j] = T(s))
    return r;
}
template <unsigned R, unsigned K, unsigned C, typename T>
SK_INLINE void adj_mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b, mat_t<R, K, T>& adj_a,
                       mat_t<K, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    typedef calc_t<T> A;
    // adj_a += adj_ret b^T ; adj_b += a^T adj_ret
    for (unsigned i = 0; i < R; ++i)
        for (unsigned k = 0; k < K; ++k) {
            A s = A(0);
            for (unsigned j = 0; j < C; ++j) s += A(adj_ret.data[i][j]) * A(b.data[k][j]);
            adj_a.data[i][k] += s;
        }
    for (unsigned k = 0; k < K; ++k)
        for (unsigned j = 0; j < C; ++j) {
            A s = A(0);
            for (unsigned i = 0; i < R; ++i) s += A(a.data[i][k]) * A(adj_ret.data[i][j]);
            adj_b.data[k][j] += s;
        }
}

// matrix * column vector
template <unsigned R, unsigned C, typename T>
SK_INLINE vec_t<R, T> mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v) {
    typedef vmd::acc_t<T> A;
    vec_t<R, T> r;
    for (unsigned i = 0; i < R; ++i) {
        A s = A(0);
        for (unsigned j = 0; j < C; ++j) s += A(m.data[i][j]) * A(v.c[j]);
        r.c[i] = T(s);
    }
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v, mat_t<R, C, T>& adj_m, vec_t<C, T>& adj_v,
                       const vec_t<R, T>& adj_ret) {
    typedef calc_t<T> A;
    SK_MAT_LOOP(adj_m.data[i][j] += (adj_ret.c[i] * v.c[j]))
    for (unsigned j = 0; j < C; ++j) {
        A s = A(0);
        for (unsigned i = 0; i < R; ++i) s += A(m.data[i][j]) * A(adj_ret.c[i]);
        adj_v.c[j] += s;
    }
}

// row vector * matrix
template <unsigned R, unsigned C, typename T>
SK_INLINE vec_t<C, T> mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m) {
    typedef vmd::acc_t<T> A;
    vec_t<C, T> r;
    for (unsigned j = 0; j < C; ++j) {
        A s = A(0);
        for (unsigned i = 0; i < R; ++i) s += A(v.c[i]) * A(m.data[i][j]);
        r.c[j] = T(s);
    }
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m, vec_t<R, T>& adj_v, mat_t<R, C, T>& adj_m,
                       const vec_t<C, T>& adj_ret) {
    typedef calc_t<T> A;
    SK_MAT_LOOP(adj_m.data[i][j] += (v.c[i] * adj_ret.c[j]))
    for (unsigned i = 0; i < R; ++i) {
        A s = A(0);
        for (unsigned j = 0; j < C; ++j) s += A(m.data[i][j]) * A(adj_ret.c[j]);
        adj_v.c[i] += s;
    }
}

// outer(a, b)[i][j] = a[i] b[j]
template <unsigned R, unsigned C, typename T>
SK_INLINE mat_t<R, C, T> outer(const vec_t<R, T>& a, const vec_t<C, T>& b) {
    mat_t<R, C, T> r;
    SK_MAT_LOOP(r.data[i][j] = mul(a.c[i], b.c[j]))
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_outer(const vec_t<R, T>& a, const vec_t<C, T>& b, vec_t<R, T>& adj_a, vec_t<C, T>& adj_b,
                         const mat_t<R, C, T>& adj_ret) {
    typedef calc_t<T> A;
    for (unsigned i = 0; i < R; ++i) {
        A s = A(0);
        for (unsigned j = 0; j < C; ++j) s += A(adj_ret.data[i][j]) * A(b.c[j]);
        adj_a.c[i] += s;
    }
    for (unsigned j = 0; j < C; ++j) {
        A s = A(0);
        for (unsigned i = 0; i < R; ++i) s += A(adj_ret.data[i][j]) * A(a.c[i]);
        adj_b.c[j] += s;
    }
}

// ---------------------------------------------------------------------------
// Structure: transpose, trace, diag, identity, skew, rows / columns

template <unsigned R, unsigned C, typename T> SK_INLINE mat_t<C, R, T> transpose(const mat_t<R, C, T>& a) {
    mat_t<C, R, T> r;
    SK_MAT_LOOP(r.data[j][i] = a.data[i][j])
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE void adj_transpose(const mat_t<R, C, T>& a, mat_t<R, C, T>& adj_a, const mat_t<C, R, T>& adj_ret) {
    SK_MAT_LOOP(adj_a.data[i][j] += adj_ret.data[j][i])
}

template <unsigned N, typename T> SK_INLINE T trace(const mat_t<N, N, T>& a) {
    typedef vmd::acc_t<T> A;
    A s = A(0);
    for (unsigned i = 0; i < N; ++i) s += A(a.data[i][i]);
    return T(s);
}
template <unsigned N, typename T>
SK_INLINE void adj_trace(const mat_t<N, N, T>& a, mat_t<N, N, T>& adj_a, const T& adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_a.data[i][i] += adj_ret;
}

template <unsigned N, typename T> SK_INLINE mat_t<N, N, T> diag(const vec_t<N, T>& v) {
    mat_t<N, N, T> r;
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) r.data[i][j] = i == j ? v.c[i] : T(0);
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_diag(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const mat_t<N, N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_v.c[i] += adj_ret.data[i][i];
}

template <unsigned N, typename T> SK_INLINE vec_t<N, T> get_diag(const mat_t<N, N, T>& m) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = m.data[i][i];
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_get_diag(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_m.data[i][i] += adj_ret.c[i];
}

// skew(v) a = cross(v, a)
template <typename T> SK_INLINE mat_t<3, 3, T> skew(const vec_t<3, T>& v) {
    mat_t<3, 3, T> r;
    r.data[0][0] = T(0);        r.data[0][1] = neg(v.c[2]); r.data[0][2] = v.c[1];
    r.data[1][0] = v.c[2];      r.data[1][1] = T(0);        r.data[1][2] = neg(v.c[0]);
    r.data[2][0] = neg(v.c[1]); r.data[2][1] = v.c[0];      r.data[2][2] = T(0);
    return r;
}
template <typename T>
SK_INLINE void adj_skew(const vec_t<3, T>& v, vec_t<3, T>& adj_v, const mat_t<3, 3, T>& g) {
    adj_v.c[0] += (g.data[2][1] - g.data[1][2]);
    adj_v.c[1] += (g.data[0][2] - g.data[2][0]);
    adj_v.c[2] += (g.data[1][0] - g.data[0][1]);
}

// Matrices from row or column vectors: matrix_from_rows(r0, r1, ...), matrix_from_cols(c0, c1, ...).
template <unsigned N, typename T, typename... V>
SK_INLINE mat_t<1 + sizeof...(V), N, T> matrix_from_rows(const vec_t<N, T>& first, const V&... rest) {
    const vec_t<N, T>* rows[] = {&first, &rest...};
    mat_t<1 + sizeof...(V), N, T> r;
    for (unsigned i = 0; i < 1 + sizeof...(V); ++i)
        for (unsigned j = 0; j < N; ++j) r.data[i][j] = rows[i]->c[j];
    return r;
}
template <unsigned N, typename T, typename... V>
SK_INLINE mat_t<N, 1 + sizeof...(V), T> matrix_from_cols(const vec_t<N, T>& first, const V&... rest) {
    const vec_t<N, T>* cols[] = {&first, &rest...};
    mat_t<N, 1 + sizeof...(V), T> r;
    for (unsigned j = 0; j < 1 + sizeof...(V); ++j)
        for (unsigned i = 0; i < N; ++i) r.data[i][j] = cols[j]->c[i];
    return r;
}

namespace vmd {
// Adjoint arguments of matrix_from_rows/cols: K vectors, K adjoint vectors, adj_ret.
template <typename V, typename M, typename... Args>
SK_INLINE void adj_from_vectors(bool rows, const V& first, Args&&... args) {
    const void* p[] = {static_cast<const void*>(&first), static_cast<const void*>(&args)...};
    const unsigned K = sizeof...(Args) / 2;  // args: K - 1 vectors, K adjoints, adj_ret
    const M& g = *static_cast<const M*>(p[2 * K]);
    const unsigned n = value_traits<V>::length;
    for (unsigned k = 0; k < K; ++k) {
        V& adj = *const_cast<V*>(static_cast<const V*>(p[K + k]));
        for (unsigned i = 0; i < n; ++i) adj.c[i] += rows ? g.data[k][i] : g.data[i][k];
    }
}
}  // namespace vmd

template <unsigned N, typename T, typename... Args>
SK_INLINE void adj_matrix_from_rows(const vec_t<N, T>& first, Args&&... args) {
    vmd::adj_from_vectors<vec_t<N, T>, mat_t<sizeof...(Args) / 2, N, T>>(true, first, args...);
}
template <unsigned N, typename T, typename... Args>
SK_INLINE void adj_matrix_from_cols(const vec_t<N, T>& first, Args&&... args) {
    vmd::adj_from_vectors<vec_t<N, T>, mat_t<N, sizeof...(Args) / 2, T>>(false, first, args...);
}

// ---------------------------------------------------------------------------
// Determinant (any square size) and its cofactors

namespace vmd {

template <unsigned N, typename A> struct det_impl;

template <typename A> struct det_impl<1, A> {
    static SK_INLINE A run(const mat_t<1, 1, A>& m) { return m.data[0][0]; }
};
template <typename A> struct det_impl<2, A> {
    static SK_INLINE A run(const mat_t<2, 2, A>& m) { return m.data[0][0] * m.data[1][1] - m.data[0][1] * m.data[1][0]; }
};
template <typename A> struct det_impl<3, A> {
    static SK_INLINE A run(const mat_t<3, 3, A>& m) {
        return m.data[0][0] * (m.data[1][1] * m.data[2][2] - m.data[1][2] * m.data[2][1]) -
               m.data[0][1] * (m.data[1][0] * m.data[2][2] - m.data[1][2] * m.data[2][0]) +
               m.data[0][2] * (m.data[1][0] * m.data[2][1] - m.data[1][1] * m.data[2][0]);
    }
};
template <typename A> struct det_impl<4, A> {
    static SK_INLINE A run(const mat_t<4, 4, A>& m) {
        // Laplace expansion by complementary 2x2 minors of rows (0,1) and (2,3).
        const A(*d)[4] = m.data;
        A s0 = d[0][0] * d[1][1] - d[1][0] * d[0][1];
        A s1 = d[0][0] * d[1][2] - d[1][0] * d[0][2];
        A s2 = d[0][0] * d[1][3] - d[1][0] * d[0][3];
        A s3 = d[0][1] * d[1][2] - d[1][1] * d[0][2];
        A s4 = d[0][1] * d[1][3] - d[1][1] * d[0][3];
        A s5 = d[0][2] * d[1][3] - d[1][2] * d[0][3];
        A c5 = d[2][2] * d[3][3] - d[3][2] * d[2][3];
        A c4 = d[2][1] * d[3][3] - d[3][1] * d[2][3];
        A c3 = d[2][1] * d[3][2] - d[3][1] * d[2][2];
        A c2 = d[2][0] * d[3][3] - d[3][0] * d[2][3];
        A c1 = d[2][0] * d[3][2] - d[3][0] * d[2][2];
        A c0 = d[2][0] * d[3][1] - d[3][0] * d[2][1];
        return s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0;
    }
};
// N > 4: Gaussian elimination with partial pivoting.
template <unsigned N, typename A> struct det_impl {
    static SK_INLINE A run(mat_t<N, N, A> m) {
        A det = A(1);
        for (unsigned k = 0; k < N; ++k) {
            unsigned p = k;
            A best = m.data[k][k] < A(0) ? -m.data[k][k] : m.data[k][k];
            for (unsigned i = k + 1; i < N; ++i) {
                A v = m.data[i][k] < A(0) ? -m.data[i][k] : m.data[i][k];
                if (v > best) { best = v; p = i; }
            }
            if (best == A(0)) return A(0);
            if (p != k) {
                for (unsigned j = 0; j < N; ++j) { A t = m.data[k][j]; m.data[k][j] = m.data[p][j]; m.data[p][j] = t; }
                det = -det;
            }
            A piv = m.data[k][k];
            det *= piv;
            for (unsigned i = k + 1; i < N; ++i) {
                A f = m.data[i][k] / piv;
                for (unsigned j = k + 1; j < N; ++j) m.data[i][j] -= f * m.data[k][j];
            }
        }
        return det;
    }
};

template <unsigned N, typename A> SK_INLINE A det(const mat_t<N, N, A>& m) { return det_impl<N, A>::run(m); }

// Cofactor matrix: cof[i][j] = (-1)^(i+j) det(m without row i and column j).
template <unsigned N, typename A> SK_INLINE mat_t<N, N, A> cofactors(const mat_t<N, N, A>& m) {
    mat_t<N, N, A> r;
    if constexpr (N == 1) {
        r.data[0][0] = A(1);
    } else {
        for (unsigned i = 0; i < N; ++i)
            for (unsigned j = 0; j < N; ++j) {
                mat_t<N - 1, N - 1, A> minor;
                for (unsigned a = 0, ma = 0; a < N; ++a) {
                    if (a == i) continue;
                    for (unsigned b = 0, mb = 0; b < N; ++b) {
                        if (b == j) continue;
                        minor.data[ma][mb++] = m.data[a][b];
                    }
                    ++ma;
                }
                A d = det<N - 1, A>(minor);
                r.data[i][j] = ((i + j) & 1) ? -d : d;
            }
    }
    return r;
}

template <typename To, unsigned R, unsigned C, typename From>
SK_INLINE mat_t<R, C, To> mconvert(const mat_t<R, C, From>& m) {
    mat_t<R, C, To> r;
    SK_MAT_LOOP(r.data[i][j] = sk::cast<To>(m.data[i][j]))
    return r;
}

// Inverse in the compute type; the zero matrix when m is singular (Warp).
template <unsigned N, typename A> SK_INLINE mat_t<N, N, A> inv(const mat_t<N, N, A>& m) {
    mat_t<N, N, A> r;
    if constexpr (N <= 3) {
        A d = det<N, A>(m);
        if (d == A(0)) return zero<mat_t<N, N, A>>();
        mat_t<N, N, A> c = cofactors<N, A>(m);
        A s = A(1) / d;
        for (unsigned i = 0; i < N; ++i)
            for (unsigned j = 0; j < N; ++j) r.data[i][j] = c.data[j][i] * s;  // adjugate / det
        return r;
    } else {
        // Gauss-Jordan with partial pivoting. From 4x4 on it beats the adjugate: over 200000 random float32
        // 4x4 matrices (products of uniform ones), max |m inv(m) - I| 1.4e-2 against 6.4e-2, mean 3.1e-6
        // against 8.3e-6, and less sensitive to how the compiler fuses multiply-adds (tests/test_builtins_matrix.py)
        mat_t<N, N, A> a = m;
        for (unsigned i = 0; i < N; ++i)
            for (unsigned j = 0; j < N; ++j) r.data[i][j] = i == j ? A(1) : A(0);
        for (unsigned k = 0; k < N; ++k) {
            unsigned p = k;
            A best = a.data[k][k] < A(0) ? -a.data[k][k] : a.data[k][k];
            for (unsigned i = k + 1; i < N; ++i) {
                A v = a.data[i][k] < A(0) ? -a.data[i][k] : a.data[i][k];
                if (v > best) { best = v; p = i; }
            }
            if (best == A(0)) return zero<mat_t<N, N, A>>();
            if (p != k)
                for (unsigned j = 0; j < N; ++j) {
                    A t = a.data[k][j]; a.data[k][j] = a.data[p][j]; a.data[p][j] = t;
                    t = r.data[k][j]; r.data[k][j] = r.data[p][j]; r.data[p][j] = t;
                }
            A s = A(1) / a.data[k][k];
            for (unsigned j = 0; j < N; ++j) { a.data[k][j] *= s; r.data[k][j] *= s; }
            for (unsigned i = 0; i < N; ++i) {
                if (i == k) continue;
                A f = a.data[i][k];
                if (f == A(0)) continue;
                for (unsigned j = 0; j < N; ++j) { a.data[i][j] -= f * a.data[k][j]; r.data[i][j] -= f * r.data[k][j]; }
            }
        }
        return r;
    }
}

}  // namespace vmd

template <unsigned N, typename T> SK_INLINE T determinant(const mat_t<N, N, T>& m) {
    typedef calc_t<T> A;
    return T(vmd::det<N, A>(vmd::mconvert<A>(m)));
}
// d det / dm = cofactor matrix (= det m^-T when m is invertible; exact when singular too).
template <unsigned N, typename T>
SK_INLINE void adj_determinant(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const T& adj_ret) {
    typedef calc_t<T> A;
    mat_t<N, N, A> c = vmd::cofactors<N, A>(vmd::mconvert<A>(m));
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) adj_m.data[i][j] += (c.data[i][j] * A(adj_ret));
}

// Inverse; a singular matrix gives the zero matrix (Warp semantics) and a zero gradient.
template <unsigned N, typename T> SK_INLINE mat_t<N, N, T> inverse(const mat_t<N, N, T>& m) {
    typedef calc_t<T> A;
    return vmd::mconvert<T>(vmd::inv<N, A>(vmd::mconvert<A>(m)));
}
// d(m^-1) = -m^-1 dm m^-1  =>  adj_m += -m^-T adj_ret m^-T
template <unsigned N, typename T>
SK_INLINE void adj_inverse(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const mat_t<N, N, T>& adj_ret) {
    typedef calc_t<T> A;
    mat_t<N, N, A> v = vmd::inv<N, A>(vmd::mconvert<A>(m));
    mat_t<N, N, A> g = vmd::mconvert<A>(adj_ret);
    mat_t<N, N, A> t;  // v^T g
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) {
            A s = A(0);
            for (unsigned k = 0; k < N; ++k) s += v.data[k][i] * g.data[k][j];
            t.data[i][j] = s;
        }
    for (unsigned i = 0; i < N; ++i)
        for (unsigned j = 0; j < N; ++j) {
            A s = A(0);
            for (unsigned k = 0; k < N; ++k) s += t.data[i][k] * v.data[j][k];
            adj_m.data[i][j] -= s;
        }
}

#undef SK_MAT_LOOP
#undef SK_MAT_BINARY
#undef SK_MAT_UNARY

}  // namespace sk
