// Warp's C++ names, for snippets written for Warp (@func_native): namespace wp holds all of simkit's (sk::)
// and, where Warp's differ, its own: value types built from their components in parentheses
// (wp::vec_t<3, wp::float32>(x, y, z), wp::mat_t<2, 2, wp::float32>(a, b, c, d), one scalar fills them),
// the short names (wp::vec3, wp::mat33d, wp::quat, wp::transform...) and wp::fixedarray_t<N, T>.
// A wp:: value converts to and from simkit's type of the same layout, so a snippet returns either.
#pragma once

namespace wp {
using namespace sk;

template <unsigned N, typename T>
struct vec_t : sk::vec_t<N, T> {
    vec_t() = default;
    SK_INLINE vec_t(const sk::vec_t<N, T>& v) : sk::vec_t<N, T>(v) {}
    SK_INLINE explicit vec_t(T s) {
        for (unsigned i = 0; i < N; ++i) this->c[i] = s;
    }
    template <typename A0, typename A1, typename... A>
    SK_INLINE vec_t(A0 a0, A1 a1, A... a) : sk::vec_t<N, T>{{T(a0), T(a1), T(a)...}} {
        static_assert(sizeof...(A) + 2 == N, "wp::vec_t: one value per component");
    }
};

template <unsigned R, unsigned C, typename T>
struct mat_t : sk::mat_t<R, C, T> {
    mat_t() = default;
    SK_INLINE mat_t(const sk::mat_t<R, C, T>& m) : sk::mat_t<R, C, T>(m) {}
    SK_INLINE explicit mat_t(T s) {
        for (unsigned i = 0; i < R; ++i)
            for (unsigned j = 0; j < C; ++j) this->data[i][j] = s;
    }
    template <typename A0, typename A1, typename... A>
    SK_INLINE mat_t(A0 a0, A1 a1, A... a) {  // row-major, R * C values
        static_assert(sizeof...(A) + 2 == R * C, "wp::mat_t: one value per entry, row by row");
        const T v[] = {T(a0), T(a1), T(a)...};
        for (unsigned k = 0; k < R * C; ++k) this->data[k / C][k % C] = v[k];
    }
};

template <typename T>
struct quat_t : sk::quat_t<T> {
    quat_t() = default;
    SK_INLINE quat_t(const sk::quat_t<T>& q) : sk::quat_t<T>(q) {}
    SK_INLINE quat_t(T x, T y, T z, T w) : sk::quat_t<T>{x, y, z, w} {}
};

template <int Size, typename T> using fixedarray_t = sk::fixed_array_t<T, false, 1, Size, 1, 1, 1>;

#define SK_WARP_NAMES(S, T)                                                                            \
    typedef vec_t<2, T> vec2##S;                                                                        \
    typedef vec_t<3, T> vec3##S;                                                                        \
    typedef vec_t<4, T> vec4##S;                                                                        \
    typedef mat_t<2, 2, T> mat22##S;                                                                    \
    typedef mat_t<3, 3, T> mat33##S;                                                                    \
    typedef mat_t<4, 4, T> mat44##S;                                                                    \
    typedef quat_t<T> quat##S;                                                                          \
    typedef sk::transform_t<T> transform##S;
SK_WARP_NAMES(, float32)
SK_WARP_NAMES(f, float32)
SK_WARP_NAMES(d, float64)
SK_WARP_NAMES(h, half)
#undef SK_WARP_NAMES

}  // namespace wp
