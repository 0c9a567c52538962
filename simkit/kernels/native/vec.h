// simkit native vectors: forward and adjoint of every vector builtin, plus the
// generic value constructors (fill / cast / zero) shared with matrices.
// Generic over the length N and the scalar type T (half, float, double and the
// integer types where the builtin allows them). float16 computes in float32.
// Valid as host C++17 and as NVRTC CUDA code: no STL, no system headers.
#pragma once

#include "core.h"
#include "error.h"
#include "scalar.h"

namespace sk {

// ---------------------------------------------------------------------------
// Helpers shared by vec.h and mat.h (scalar semantics come from scalar.h).
namespace vmd {

// Accumulator for sums of products: float32 for half, the unsigned type for
// integers (wraps like scalar.h's operators), T otherwise.
template <typename T> using acc_t = wrap_t<T>;

// Non-deduced context: lets a scalar argument take its type from the vector.
template <typename T> struct ident { typedef T type; };

// Component index with Python-style negative wrapping; -1 when out of range
// (reads then give 0 and writes are dropped).
template <unsigned N, typename I> SK_INLINE int index(I i) {
    long long k = (long long)i;
    if (k < 0) k += (long long)N;
    return (k < 0 || k >= (long long)N) ? -1 : int(k);
}
// The same, reporting an out-of-range index (debug mode: IndexError at this source line).
template <unsigned N, typename I> SK_INLINE int index_checked(int line, I i, int axis = 0) {
    int k = index<N>(i);
    if (k < 0) report_error(SK_ERR_BOUNDS, line, axis, (long long)i, (long long)N);
    return k;
}

}  // namespace vmd

// ---------------------------------------------------------------------------
// Generic value constructors (vectors, matrices, any value type of core.h).

// R filled with one scalar: vec3(1.0), mat33(2.0).
template <typename R, typename S> SK_INLINE R fill_value(S x) {
    typedef typename value_traits<R>::scalar T;
    R r;
    T v = sk::cast<T>(x);
    T* p = flat(r);
    for (unsigned i = 0; i < value_traits<R>::length; ++i) p[i] = v;
    return r;
}
template <typename R, typename S> SK_INLINE void adj_fill_value(S x, S& adj_x, const R& adj_ret) {
    typedef typename value_traits<R>::scalar T;
    if constexpr (is_float_type<S>::value && is_float_type<T>::value) {
        typedef calc_t<T> A;
        A s = A(0);
        const T* g = flat(adj_ret);
        for (unsigned i = 0; i < value_traits<R>::length; ++i) s += A(g[i]);
        adj_x += sk::cast<S>(s);
    }
}

// R from a value of the same shape and another scalar type: vec3d(v), mat33(md).
template <typename R, typename V> SK_INLINE R cast_value(const V& v) {
    typedef typename value_traits<R>::scalar T;
    static_assert(value_traits<R>::length == value_traits<V>::length, "cast_value: shapes differ");
    R r;
    const typename value_traits<V>::scalar* src = flat(v);
    T* dst = flat(r);
    for (unsigned i = 0; i < value_traits<R>::length; ++i) dst[i] = sk::cast<T>(src[i]);
    return r;
}
template <typename R, typename V> SK_INLINE void adj_cast_value(const V& v, V& adj_v, const R& adj_ret) {
    typedef typename value_traits<R>::scalar T;
    typedef typename value_traits<V>::scalar S;
    if constexpr (is_float_type<S>::value && is_float_type<T>::value) {
        const T* g = flat(adj_ret);
        S* a = flat(adj_v);
        for (unsigned i = 0; i < value_traits<R>::length; ++i) a[i] += sk::cast<S>(g[i]);
    }
}

// Zero value: vec3(), mat33().
template <typename R> SK_INLINE R zero_value() { return zero<R>(); }
template <typename R> SK_INLINE void adj_zero_value(const R& adj_ret) {}

// The same constructors named by the vector's length and dtype (the builtin
// registry's native names: no nested template arguments).
template <unsigned N, typename T> SK_INLINE vec_t<N, T> vec_zero() { return zero<vec_t<N, T>>(); }
template <unsigned N, typename T> SK_INLINE void adj_vec_zero(const vec_t<N, T>& adj_ret) {}
template <unsigned N, typename T, typename S> SK_INLINE vec_t<N, T> vec_fill(S x) {
    return fill_value<vec_t<N, T>>(x);
}
template <unsigned N, typename T, typename S>
SK_INLINE void adj_vec_fill(S x, S& adj_x, const vec_t<N, T>& adj_ret) {
    adj_fill_value<vec_t<N, T>>(x, adj_x, adj_ret);
}
template <unsigned N, typename T, typename V> SK_INLINE vec_t<N, T> vec_cast(const V& v) {
    return cast_value<vec_t<N, T>>(v);
}
template <unsigned N, typename T, typename V>
SK_INLINE void adj_vec_cast(const V& v, V& adj_v, const vec_t<N, T>& adj_ret) {
    adj_cast_value<vec_t<N, T>>(v, adj_v, adj_ret);
}

// Accumulation (adjoints of array loads/stores add gradients with +=).
template <unsigned N, typename T> SK_INLINE vec_t<N, T>& operator+=(vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i) a.c[i] += b.c[i];
    return a;
}
template <unsigned N, typename T> SK_INLINE vec_t<N, T>& operator-=(vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i) a.c[i] -= b.c[i];
    return a;
}

// ---------------------------------------------------------------------------
// Component access. Indices are runtime integers; negative ones count from the end.

template <unsigned N, typename T, typename I> SK_INLINE T extract(const vec_t<N, T>& v, I i) {
    int k = vmd::index<N>(i);
    return k < 0 ? T(0) : v.c[k];
}
template <unsigned N, typename T, typename I, typename IA>
SK_INLINE void adj_extract(const vec_t<N, T>& v, I i, vec_t<N, T>& adj_v, IA&& adj_i, const T& adj_ret) {
    int k = vmd::index<N>(i);
    if constexpr (is_float_type<T>::value)
        if (k >= 0) adj_v.c[k] += adj_ret;
}

// Functional component write: a copy of v with v[i] = x.
template <unsigned N, typename T, typename I>
SK_INLINE vec_t<N, T> assign(const vec_t<N, T>& v, I i, typename vmd::ident<T>::type x) {
    vec_t<N, T> r = v;
    int k = vmd::index<N>(i);
    if (k >= 0) r.c[k] = x;
    return r;
}
template <unsigned N, typename T, typename I, typename IA>
SK_INLINE void adj_assign(const vec_t<N, T>& v, I i, T x, vec_t<N, T>& adj_v, IA&& adj_i, T& adj_x,
                          const vec_t<N, T>& adj_ret) {
    int k = vmd::index<N>(i);
    if constexpr (is_float_type<T>::value)
        for (unsigned j = 0; j < N; ++j) {
            if (int(j) == k)
                adj_x += adj_ret.c[j];
            else
                adj_v.c[j] += adj_ret.c[j];
        }
}

// Debug-mode variants (the registry's checked=True): out-of-range indices report an IndexError.
template <unsigned N, typename T, typename I> SK_INLINE T extract_checked(int line, const vec_t<N, T>& v, I i) {
    vmd::index_checked<N>(line, i);
    return extract(v, i);
}
template <unsigned N, typename T, typename I>
SK_INLINE vec_t<N, T> assign_checked(int line, const vec_t<N, T>& v, I i, typename vmd::ident<T>::type x) {
    vmd::index_checked<N>(line, i);
    return assign(v, i, x);
}

// ---------------------------------------------------------------------------
// Operators

// Component-wise through the scalar operators of scalar.h (integers wrap).
#define SK_VEC_BINARY(op)                                                                                    \
    template <unsigned N, typename T> SK_INLINE vec_t<N, T> op(const vec_t<N, T>& a, const vec_t<N, T>& b) { \
        vec_t<N, T> r;                                                                                       \
        for (unsigned i = 0; i < N; ++i) r.c[i] = op(a.c[i], b.c[i]);                                        \
        return r;                                                                                            \
    }                                                                                                        \
    template <unsigned N, typename T>                                                                        \
    SK_INLINE void adj_##op(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a,                  \
                            vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) {                                \
        for (unsigned i = 0; i < N; ++i) adj_##op(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);     \
    }
#define SK_VEC_UNARY(op)                                                                                     \
    template <unsigned N, typename T> SK_INLINE vec_t<N, T> op(const vec_t<N, T>& a) {                       \
        vec_t<N, T> r;                                                                                       \
        for (unsigned i = 0; i < N; ++i) r.c[i] = op(a.c[i]);                                                \
        return r;                                                                                            \
    }                                                                                                        \
    template <unsigned N, typename T>                                                                        \
    SK_INLINE void adj_##op(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {          \
        for (unsigned i = 0; i < N; ++i) adj_##op(a.c[i], adj_a.c[i], adj_ret.c[i]);                         \
    }

SK_VEC_BINARY(add)
SK_VEC_BINARY(sub)
SK_VEC_UNARY(neg)
SK_VEC_UNARY(pos)

// vector * scalar, scalar * vector
template <unsigned N, typename T>
SK_INLINE vec_t<N, T> mul(const vec_t<N, T>& a, typename vmd::ident<T>::type s) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = sk::mul<T>(a.c[i], s);
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_mul(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    if constexpr (is_float_type<T>::value) {
        typedef calc_t<T> A;
        A ds = A(0);
        for (unsigned i = 0; i < N; ++i) {
            adj_a.c[i] += A(adj_ret.c[i]) * A(s);
            ds += A(adj_ret.c[i]) * A(a.c[i]);
        }
        adj_s += ds;
    }
}
template <unsigned N, typename T>
SK_INLINE vec_t<N, T> mul(typename vmd::ident<T>::type s, const vec_t<N, T>& a) {
    return mul(a, s);
}
template <unsigned N, typename T>
SK_INLINE void adj_mul(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    adj_mul(a, s, adj_a, adj_s, adj_ret);
}

// vector / scalar, scalar / vector (component-wise)
template <unsigned N, typename T>
SK_INLINE vec_t<N, T> div(const vec_t<N, T>& a, typename vmd::ident<T>::type s) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = sk::div<T>(a.c[i], s);
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_div(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) {
    if constexpr (is_float_type<T>::value) {
        typedef calc_t<T> A;
        A inv = A(1) / A(s);
        A ds = A(0);
        for (unsigned i = 0; i < N; ++i) {
            adj_a.c[i] += (A(adj_ret.c[i]) * inv);
            ds -= A(adj_ret.c[i]) * A(a.c[i]) * inv * inv;
        }
        adj_s += ds;
    }
}
template <unsigned N, typename T>
SK_INLINE vec_t<N, T> div(typename vmd::ident<T>::type s, const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = sk::div<T>(s, a.c[i]);
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_div(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    if constexpr (is_float_type<T>::value) {
        typedef calc_t<T> A;
        A ds = A(0);
        for (unsigned i = 0; i < N; ++i) {
            A inv = A(1) / A(a.c[i]);
            ds += A(adj_ret.c[i]) * inv;
            adj_a.c[i] -= (A(adj_ret.c[i]) * A(s) * inv * inv);
        }
        adj_s += ds;
    }
}

// Component-wise remainder (sign of the dividend); not differentiable.
template <unsigned N, typename T> SK_INLINE vec_t<N, T> mod(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = sk::mod<T>(a.c[i], b.c[i]);
    return r;
}

// Classification: all components finite, any NaN, any infinite (not differentiable).
template <unsigned N, typename T> SK_INLINE bool isfinite(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i)
        if (!sk::isfinite(a.c[i])) return false;
    return true;
}
template <unsigned N, typename T> SK_INLINE bool isnan(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i)
        if (sk::isnan(a.c[i])) return true;
    return false;
}
template <unsigned N, typename T> SK_INLINE bool isinf(const vec_t<N, T>& a) {
    for (unsigned i = 0; i < N; ++i)
        if (sk::isinf(a.c[i])) return true;
    return false;
}

// Exact equality of all components; not differentiable.
template <unsigned N, typename T> SK_INLINE bool eq(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i)
        if (!(a.c[i] == b.c[i])) return false;
    return true;
}
template <unsigned N, typename T> SK_INLINE bool ne(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    return !eq(a, b);
}

// ---------------------------------------------------------------------------
// Component-wise products

template <unsigned N, typename T> SK_INLINE vec_t<N, T> cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = mul(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                          const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_mul(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}

// Integer division by zero gives 0 (scalar.h).
template <unsigned N, typename T> SK_INLINE vec_t<N, T> cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = div(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                          const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) adj_div(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}

// ---------------------------------------------------------------------------
// Products and norms

template <unsigned N, typename T> SK_INLINE T dot(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    typedef vmd::acc_t<T> A;
    A s = A(0);
    for (unsigned i = 0; i < N; ++i) s += A(a.c[i]) * A(b.c[i]);
    return T(s);
}
template <unsigned N, typename T>
SK_INLINE void adj_dot(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                       const T& adj_ret) {
    if constexpr (is_float_type<T>::value) {
        typedef calc_t<T> A;
        for (unsigned i = 0; i < N; ++i) {
            adj_a.c[i] += A(b.c[i]) * A(adj_ret);
            adj_b.c[i] += A(a.c[i]) * A(adj_ret);
        }
    }
}

template <unsigned N, typename T> SK_INLINE T length_sq(const vec_t<N, T>& a) { return dot(a, a); }
template <unsigned N, typename T>
SK_INLINE void adj_length_sq(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const T& adj_ret) {
    if constexpr (is_float_type<T>::value) {
        typedef calc_t<T> A;
        for (unsigned i = 0; i < N; ++i) adj_a.c[i] += A(2) * A(a.c[i]) * A(adj_ret);
    }
}

template <unsigned N, typename T> SK_INLINE T length(const vec_t<N, T>& a) {
    typedef calc_t<T> A;
    A s = A(0);
    for (unsigned i = 0; i < N; ++i) s += A(a.c[i]) * A(a.c[i]);
    return T(m::sqrt(s));
}
// The gradient at the zero vector is zero (not NaN).
template <unsigned N, typename T>
SK_INLINE void adj_length(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const T& adj_ret) {
    typedef calc_t<T> A;
    A l = A(length(a));
    if (l > A(0)) {
        A s = A(adj_ret) / l;
        for (unsigned i = 0; i < N; ++i) adj_a.c[i] += (A(a.c[i]) * s);
    }
}

// Unit vector along a; the zero vector gives zero (and a zero gradient).
template <unsigned N, typename T> SK_INLINE vec_t<N, T> normalize(const vec_t<N, T>& a) {
    typedef calc_t<T> A;
    A l = A(length(a));
    vec_t<N, T> r;
    if (l > A(0)) {
        A inv = A(1) / l;
        for (unsigned i = 0; i < N; ++i) r.c[i] = T(A(a.c[i]) * inv);
    } else {
        for (unsigned i = 0; i < N; ++i) r.c[i] = T(0);
    }
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_normalize(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    typedef calc_t<T> A;
    A l = A(length(a));
    if (l > A(0)) {
        A inv = A(1) / l;
        A d = A(0);  // dot(normalize(a), adj_ret)
        for (unsigned i = 0; i < N; ++i) d += A(a.c[i]) * inv * A(adj_ret.c[i]);
        for (unsigned i = 0; i < N; ++i) adj_a.c[i] += ((A(adj_ret.c[i]) - A(a.c[i]) * inv * d) * inv);
    }
}

template <typename T> SK_INLINE vec_t<3, T> cross(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    vec_t<3, T> r;
    r.c[0] = sub(mul(a.c[1], b.c[2]), mul(a.c[2], b.c[1]));
    r.c[1] = sub(mul(a.c[2], b.c[0]), mul(a.c[0], b.c[2]));
    r.c[2] = sub(mul(a.c[0], b.c[1]), mul(a.c[1], b.c[0]));
    return r;
}
template <typename T>
SK_INLINE void adj_cross(const vec_t<3, T>& a, const vec_t<3, T>& b, vec_t<3, T>& adj_a, vec_t<3, T>& adj_b,
                         const vec_t<3, T>& adj_ret) {
    // d/da (a x b) . g = b x g ; d/db (a x b) . g = g x a
    if constexpr (is_float_type<T>::value) {
        vec_t<3, T> ga = cross(b, adj_ret);
        vec_t<3, T> gb = cross(adj_ret, a);
        for (unsigned i = 0; i < 3; ++i) {
            adj_a.c[i] += ga.c[i];
            adj_b.c[i] += gb.c[i];
        }
    }
}

// ---------------------------------------------------------------------------
// Component-wise min / max / abs / sign; reductions min(v) / max(v) / argmin / argmax

template <unsigned N, typename T> SK_INLINE vec_t<N, T> min(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = sk::min<T>(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_min(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                       const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) sk::adj_min<T>(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}

template <unsigned N, typename T> SK_INLINE vec_t<N, T> max(const vec_t<N, T>& a, const vec_t<N, T>& b) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = sk::max<T>(a.c[i], b.c[i]);
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_max(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                       const vec_t<N, T>& adj_ret) {
    for (unsigned i = 0; i < N; ++i) sk::adj_max<T>(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]);
}

// Index of the first smallest (largest) component; NaN components are skipped.
template <unsigned N, typename T> SK_INLINE uint32 argmin(const vec_t<N, T>& v) {
    uint32 r = 0;
    while (r < N && sk::isnan(v.c[r])) ++r;
    if (r == N) return 0;
    for (uint32 i = r + 1; i < N; ++i)
        if (!sk::isnan(v.c[i]) && v.c[i] < v.c[r]) r = i;
    return r;
}
template <unsigned N, typename T> SK_INLINE uint32 argmax(const vec_t<N, T>& v) {
    uint32 r = 0;
    while (r < N && sk::isnan(v.c[r])) ++r;
    if (r == N) return 0;
    for (uint32 i = r + 1; i < N; ++i)
        if (!sk::isnan(v.c[i]) && v.c[i] > v.c[r]) r = i;
    return r;
}

// Smallest (largest) component; the gradient goes to argmin (argmax).
template <unsigned N, typename T> SK_INLINE T min(const vec_t<N, T>& v) { return v.c[argmin(v)]; }
template <unsigned N, typename T> SK_INLINE void adj_min(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const T& adj_ret) {
    if constexpr (is_float_type<T>::value) adj_v.c[argmin(v)] += adj_ret;
}
template <unsigned N, typename T> SK_INLINE T max(const vec_t<N, T>& v) { return v.c[argmax(v)]; }
template <unsigned N, typename T> SK_INLINE void adj_max(const vec_t<N, T>& v, vec_t<N, T>& adj_v, const T& adj_ret) {
    if constexpr (is_float_type<T>::value) adj_v.c[argmax(v)] += adj_ret;
}

// abs(v); sign(v): -1 for negative components, +1 otherwise (sign(0) == 1, not differentiable).
SK_VEC_UNARY(abs)
SK_VEC_UNARY(sign)

// ---------------------------------------------------------------------------
// Interpolation

template <unsigned N, typename T>
SK_INLINE vec_t<N, T> lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, typename vmd::ident<T>::type t) {
    typedef calc_t<T> A;
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = T(A(a.c[i]) * (A(1) - A(t)) + A(b.c[i]) * A(t));
    return r;
}
template <unsigned N, typename T>
SK_INLINE void adj_lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b,
                        T& adj_t, const vec_t<N, T>& adj_ret) {
    typedef calc_t<T> A;
    A dt = A(0);
    for (unsigned i = 0; i < N; ++i) {
        A g = A(adj_ret.c[i]);
        adj_a.c[i] += (g * (A(1) - A(t)));
        adj_b.c[i] += (g * A(t));
        dt += g * (A(b.c[i]) - A(a.c[i]));
    }
    adj_t += dt;
}

// where / select on vectors: the generic value versions in scalar.h.

#undef SK_VEC_BINARY
#undef SK_VEC_UNARY

// Component-wise bitwise operators of integer vectors and matrices (as the scalar ones; not
// differentiable): bit_and, bit_or, bit_xor, lshift, rshift, invert.
#define SK_BITWISE_BINARY(NAME)                                                                      \
    template <unsigned N, typename T> SK_INLINE if_int<T, vec_t<N, T>> NAME(const vec_t<N, T>& a,      \
                                                                           const vec_t<N, T>& b) {    \
        vec_t<N, T> r;                                                                               \
        for (unsigned i = 0; i < N; ++i) r.c[i] = NAME(a.c[i], b.c[i]);                              \
        return r;                                                                                    \
    }                                                                                                \
    template <unsigned R, unsigned C, typename T>                                                    \
    SK_INLINE if_int<T, mat_t<R, C, T>> NAME(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {     \
        mat_t<R, C, T> r;                                                                            \
        for (unsigned i = 0; i < R; ++i)                                                             \
            for (unsigned j = 0; j < C; ++j) r.data[i][j] = NAME(a.data[i][j], b.data[i][j]);        \
        return r;                                                                                    \
    }
SK_BITWISE_BINARY(bit_and)
SK_BITWISE_BINARY(bit_or)
SK_BITWISE_BINARY(bit_xor)
SK_BITWISE_BINARY(lshift)
SK_BITWISE_BINARY(rshift)
#undef SK_BITWISE_BINARY
template <unsigned N, typename T> SK_INLINE if_int<T, vec_t<N, T>> invert(const vec_t<N, T>& a) {
    vec_t<N, T> r;
    for (unsigned i = 0; i < N; ++i) r.c[i] = invert(a.c[i]);
    return r;
}
template <unsigned R, unsigned C, typename T>
SK_INLINE if_int<T, mat_t<R, C, T>> invert(const mat_t<R, C, T>& a) {
    mat_t<R, C, T> r;
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) r.data[i][j] = invert(a.data[i][j]);
    return r;
}

}  // namespace sk
