// simkit native scalar builtins: forward and adjoint functions for float16
// (sk::half), float32, float64 and the integer types. Semantics follow Warp:
//
//   integer /   truncates toward zero (-7/3 == -2)
//   integer //  floors (-7//3 == -3)
//   integer %   takes the sign of the dividend (-7%3 == -1); float % is fmod
//   integer division or modulo by zero returns 0 (never a crash)
//   sign(x)  = -1 if x < 0 else 1        step(x) = 1 if x < 0 else 0
//   nonzero(x) = 0 if x == 0 else 1      round: halves away from zero, rint: halves to even
//   min/max/clamp on floats ignore a NaN operand (C fmin/fmax semantics)
//   select(c, a, b) = c ? b : a (Warp's order)   where(c, a, b) = c ? a : b
//
// Every function is a template restricted (by return-type SFINAE) to the types
// it makes sense for, so vec.h/mat.h can overload the same names freely.
// float16 computes in float32 (calc_t<half> == float). Integer + - * and
// negation wrap (computed in an unsigned type), as in CUDA and numpy.
#pragma once

#include "core.h"

namespace sk {

// ---------------------------------------------------------------------------
// Type traits (no <type_traits> under NVRTC)

template <typename A, typename B> struct same_type { static const bool value = false; };
template <typename A> struct same_type<A, A> { static const bool value = true; };

// calc: the type arithmetic is done in; wrap: the type + - * are done in
// (unsigned for integers so overflow wraps instead of being undefined).
template <typename T> struct scalar_traits {};
#define SK_SCALAR_TRAITS(T, CALC, WRAP, IS_FLOAT, IS_SIGNED)        \
    template <> struct scalar_traits<T> {                             \
        typedef CALC calc;                                            \
        typedef WRAP wrap;                                            \
        static const bool is_float = IS_FLOAT;                        \
        static const bool is_signed = IS_SIGNED;                      \
    };
SK_SCALAR_TRAITS(half, float, float, true, true)
SK_SCALAR_TRAITS(float32, float32, float32, true, true)
SK_SCALAR_TRAITS(float64, float64, float64, true, true)
SK_SCALAR_TRAITS(int8, int8, uint32, false, true)
SK_SCALAR_TRAITS(uint8, uint8, uint32, false, false)
SK_SCALAR_TRAITS(int16, int16, uint32, false, true)
SK_SCALAR_TRAITS(uint16, uint16, uint32, false, false)
SK_SCALAR_TRAITS(int32, int32, uint32, false, true)
SK_SCALAR_TRAITS(uint32, uint32, uint32, false, false)
SK_SCALAR_TRAITS(int64, int64, uint64, false, true)
SK_SCALAR_TRAITS(uint64, uint64, uint64, false, false)
#undef SK_SCALAR_TRAITS

template <typename T> using calc_t = typename scalar_traits<T>::calc;
template <typename T> using wrap_t = typename scalar_traits<T>::wrap;

template <typename T> struct is_float_type { static const bool value = false; };
template <> struct is_float_type<half> { static const bool value = true; };
template <> struct is_float_type<float32> { static const bool value = true; };
template <> struct is_float_type<float64> { static const bool value = true; };

template <bool B, typename R> struct enable_if_t_ {};
template <typename R> struct enable_if_t_<true, R> { typedef R type; };

// Return types that exist only for a category of T (SFINAE on the return type).
template <typename T, typename R = T>
using if_scalar = typename enable_if_t_<sizeof(calc_t<T>) != 0, R>::type;
template <typename T, typename R = T>
using if_float = typename enable_if_t_<is_float_type<T>::value, R>::type;
template <typename T, typename R = T>
using if_int = typename enable_if_t_<!scalar_traits<T>::is_float, R>::type;
template <typename T, typename R = T>
using if_sint = typename enable_if_t_<!scalar_traits<T>::is_float && scalar_traits<T>::is_signed, R>::type;
template <typename T, typename R = T>
using if_uint = typename enable_if_t_<!scalar_traits<T>::is_float && !scalar_traits<T>::is_signed, R>::type;

// ---------------------------------------------------------------------------
// libm for float32 and float64. CUDA's device math library declares the
// same global names, so one spelling serves both targets.
namespace m {
#define SK_LIBM1(name)                                                  \
    SK_INLINE float32 name(float32 x) { return ::name##f(x); }         \
    SK_INLINE float64 name(float64 x) { return ::name(x); }
#define SK_LIBM2(name)                                                              \
    SK_INLINE float32 name(float32 x, float32 y) { return ::name##f(x, y); }       \
    SK_INLINE float64 name(float64 x, float64 y) { return ::name(x, y); }
SK_LIBM1(sin) SK_LIBM1(cos) SK_LIBM1(tan) SK_LIBM1(asin) SK_LIBM1(acos) SK_LIBM1(atan)
SK_LIBM1(sinh) SK_LIBM1(cosh) SK_LIBM1(tanh) SK_LIBM1(exp) SK_LIBM1(log) SK_LIBM1(log2)
SK_LIBM1(log10) SK_LIBM1(sqrt) SK_LIBM1(cbrt) SK_LIBM1(floor) SK_LIBM1(ceil) SK_LIBM1(trunc)
SK_LIBM1(round) SK_LIBM1(rint) SK_LIBM1(fabs) SK_LIBM1(erf) SK_LIBM1(erfc)
SK_LIBM2(atan2) SK_LIBM2(pow) SK_LIBM2(fmod) SK_LIBM2(copysign)
#undef SK_LIBM1
#undef SK_LIBM2

#if SK_CUDA && !defined(SK_CUDA_EMU)
SK_INLINE float32 erfinv(float32 x) { return ::erfinvf(x); }
SK_INLINE float64 erfinv(float64 x) { return ::erfinv(x); }
SK_INLINE float32 erfcinv(float32 x) { return ::erfcinvf(x); }
SK_INLINE float64 erfcinv(float64 x) { return ::erfcinv(x); }
#else
// Host libm has no erfinv. Central part: M. Giles' polynomial ("Approximating
// the erfinv function", GPU Computing Gems, 2011) refined by Newton on erf;
// tails: Newton on log(erfc(x)) from an asymptotic start (well behaved down
// to the smallest doubles). erfinv(y) for |y| > 0.5 goes through erfcinv(1 - |y|),
// which is exact in floating point there.
SK_INLINE float64 erfinv_central(float64 y) {  // |y| <= 0.5
    float64 w = -::log((1.0 - y) * (1.0 + y)) - 2.5;
    float64 p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    float64 x = p * y;
    for (int i = 0; i < 2; ++i) x -= (::erf(x) - y) / (1.1283791670955126 * ::exp(-x * x));
    return x;
}
SK_INLINE float64 erfcinv_tail(float64 y) {  // 0 < y < 0.5, result > 0.47
    float64 t = -::log(y);
    float64 x = ::sqrt(t);
    for (int i = 0; i < 2; ++i) x = ::sqrt(t - ::log(x * 1.7724538509055159));  // erfc(x) ~ exp(-x^2) / (x sqrt(pi))
    if (!(x > 0.5)) x = 0.5;
    for (int i = 0; i < 6; ++i) {  // Newton on g(x) = log(erfc(x)) - log(y)
        float64 e = ::erfc(x);
        float64 dx = (::log(e) + t) * e / (1.1283791670955126 * ::exp(-x * x));
        x += dx;
        if (::fabs(dx) <= 1e-16 * x) break;
    }
    return x;
}
SK_INLINE float64 erfcinv(float64 y) {
    if (!(y >= 0.0 && y <= 2.0)) return __builtin_nan("");
    if (y == 0.0) return __builtin_inf();
    if (y == 2.0) return -__builtin_inf();
    if (y < 0.5) return erfcinv_tail(y);
    if (y > 1.5) return -erfcinv_tail(2.0 - y);
    return erfinv_central(1.0 - y);
}
SK_INLINE float64 erfinv(float64 y) {
    if (!(y >= -1.0 && y <= 1.0)) return __builtin_nan("");
    if (y > 0.5) return erfcinv(1.0 - y);
    if (y < -0.5) return -erfcinv(1.0 + y);
    return erfinv_central(y);
}
SK_INLINE float32 erfinv(float32 x) { return float32(erfinv(float64(x))); }
SK_INLINE float32 erfcinv(float32 x) { return float32(erfcinv(float64(x))); }
#endif
}  // namespace m

// Constants
#define SK_PI 3.14159265358979323846
#define SK_LN2 0.69314718055994530942
#define SK_LN10 2.30258509299404568402
#define SK_2_SQRTPI 1.12837916709551257390   // 2 / sqrt(pi)
#define SK_SQRTPI_2 0.88622692545275801365   // sqrt(pi) / 2

// ---------------------------------------------------------------------------
// Classification (bit tests: correct even under -ffast-math)

SK_INLINE bool isnan(float32 x) { uint32 u; memcpy(&u, &x, 4); return (u & 0x7fffffffu) > 0x7f800000u; }
SK_INLINE bool isinf(float32 x) { uint32 u; memcpy(&u, &x, 4); return (u & 0x7fffffffu) == 0x7f800000u; }
SK_INLINE bool isfinite(float32 x) { uint32 u; memcpy(&u, &x, 4); return (u & 0x7f800000u) != 0x7f800000u; }
SK_INLINE bool isnan(float64 x) { uint64 u; memcpy(&u, &x, 8); return (u & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }
SK_INLINE bool isinf(float64 x) { uint64 u; memcpy(&u, &x, 8); return (u & 0x7fffffffffffffffull) == 0x7ff0000000000000ull; }
SK_INLINE bool isfinite(float64 x) { uint64 u; memcpy(&u, &x, 8); return (u & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }
SK_INLINE bool isnan(half x) { return (x.bits & 0x7fffu) > 0x7c00u; }
SK_INLINE bool isinf(half x) { return (x.bits & 0x7fffu) == 0x7c00u; }
SK_INLINE bool isfinite(half x) { return (x.bits & 0x7c00u) != 0x7c00u; }
template <typename T> SK_INLINE if_int<T, bool> isnan(T) { return false; }
template <typename T> SK_INLINE if_int<T, bool> isinf(T) { return false; }
template <typename T> SK_INLINE if_int<T, bool> isfinite(T) { return true; }

// ---------------------------------------------------------------------------
// Casts: sk::cast<R>(x) between any two scalar types (bool included).
// Float -> integer truncates toward zero, through a 64-bit integer so that
// out-of-range values wrap instead of being undefined.

template <typename R, typename T> SK_INLINE R cast(T x) {
    if constexpr (same_type<R, T>::value) {
        return x;
    } else if constexpr (same_type<T, half>::value) {
        return cast<R>(float32(x));
    } else if constexpr (same_type<R, half>::value) {
        return half(float64(x));
    } else if constexpr (same_type<R, bool>::value) {
        return x != T(0);
    } else if constexpr (is_float_type<T>::value && !is_float_type<R>::value) {
        if constexpr (same_type<R, uint64>::value) {
            return x >= T(9223372036854775808.0) ? R(uint64(x)) : R(int64(x));
        } else {
            return R(int64(x));
        }
    } else {
        return R(x);
    }
}
template <typename R, typename T> SK_INLINE void adj_cast(T x, T& adj_x, const R& adj_ret) {
    if constexpr (is_float_type<T>::value && is_float_type<R>::value) {
        adj_x = cast<T>(cast<float64>(adj_x) + cast<float64>(adj_ret));
    }
}

// ---------------------------------------------------------------------------
// Arithmetic operators (all scalar types)

template <typename T> SK_INLINE if_scalar<T> add(T a, T b) { return T(wrap_t<T>(a) + wrap_t<T>(b)); }
template <typename T> SK_INLINE if_scalar<T, void> adj_add(T, T, T& adj_a, T& adj_b, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) { adj_a += calc_t<T>(adj_ret); adj_b += calc_t<T>(adj_ret); }
}

template <typename T> SK_INLINE if_scalar<T> sub(T a, T b) { return T(wrap_t<T>(a) - wrap_t<T>(b)); }
template <typename T> SK_INLINE if_scalar<T, void> adj_sub(T, T, T& adj_a, T& adj_b, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) { adj_a += calc_t<T>(adj_ret); adj_b -= calc_t<T>(adj_ret); }
}

template <typename T> SK_INLINE if_scalar<T> mul(T a, T b) { return T(wrap_t<T>(a) * wrap_t<T>(b)); }
template <typename T> SK_INLINE if_scalar<T, void> adj_mul(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        typedef calc_t<T> C;
        adj_a += C(b) * C(adj_ret);
        adj_b += C(a) * C(adj_ret);
    }
}

template <typename T> SK_INLINE if_scalar<T> neg(T x) { return T(-wrap_t<T>(x)); }
template <typename T> SK_INLINE if_scalar<T, void> adj_neg(T, T& adj_x, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) adj_x -= calc_t<T>(adj_ret);
}

template <typename T> SK_INLINE if_scalar<T> pos(T x) { return x; }
template <typename T> SK_INLINE if_scalar<T, void> adj_pos(T, T& adj_x, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) adj_x += calc_t<T>(adj_ret);
}

// Division: float a / b; integer truncates, x / 0 == 0, INT_MIN / -1 wraps.
template <typename T> SK_INLINE if_float<T> div(T a, T b) { return T(calc_t<T>(a) / calc_t<T>(b)); }
template <typename T> SK_INLINE if_float<T, void> adj_div(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    typedef calc_t<T> C;
    C q = C(adj_ret) / C(b);
    adj_a += q;
    adj_b -= q * (C(a) / C(b));
}
// Integer division and remainder never trap: x / 0 and x % 0 are 0, x / -1 is -x (wrapping) and x % -1 is 0.
// The divisor is made safe by a select, not a branch: the division then runs unconditionally, and gcc may move
// it out of a loop where its operands do not change (a periodic index `(i - 1) % n` of an outer launch index).
template <typename T> SK_INLINE bool int_divisor_special(T b) {
    if constexpr (scalar_traits<T>::is_signed) return b == T(0) || b == T(-1);
    return b == T(0);
}
template <typename T> SK_INLINE if_int<T> div(T a, T b) {
    const T q = T(a / (int_divisor_special(b) ? T(1) : b));
    if constexpr (scalar_traits<T>::is_signed) return b == T(0) ? T(0) : (b == T(-1) ? neg(a) : q);
    return b == T(0) ? T(0) : q;
}
template <typename T> SK_INLINE if_int<T, void> adj_div(T, T, T&, T&, T) {}

// Floor division: floor(a / b) for floats; integers round toward -infinity.
template <typename T> SK_INLINE if_float<T> floordiv(T a, T b) { return T(m::floor(calc_t<T>(a) / calc_t<T>(b))); }
template <typename T> SK_INLINE if_int<T> floordiv(T a, T b) {
    if (b == T(0)) return T(0);
    if constexpr (scalar_traits<T>::is_signed) {
        if (b == T(-1)) return neg(a);
        T q = T(a / b);
        if ((a % b != 0) && ((a < 0) != (b < 0))) q = T(q - 1);
        return q;
    } else {
        return T(a / b);
    }
}
template <typename T> SK_INLINE if_scalar<T, void> adj_floordiv(T, T, T&, T&, T) {}  // zero almost everywhere

// Modulo: fmod for floats (sign of a); integers: C remainder, x % 0 == 0.
template <typename T> SK_INLINE if_float<T> mod(T a, T b) { return T(m::fmod(calc_t<T>(a), calc_t<T>(b))); }
template <typename T> SK_INLINE if_float<T, void> adj_mod(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    typedef calc_t<T> C;  // mod(a, b) = a - trunc(a / b) * b
    adj_a += C(adj_ret);
    adj_b -= m::trunc(C(a) / C(b)) * C(adj_ret);
}
template <typename T> SK_INLINE if_int<T> mod(T a, T b) {
    return T(a % (int_divisor_special(b) ? T(1) : b));  // (x % 1 == 0: what x % 0 and x % -1 give)
}
template <typename T> SK_INLINE if_int<T, void> adj_mod(T, T, T&, T&, T) {}

// Power: floats through libm; integers by repeated squaring (wrapping),
// negative exponents give 0 unless |x| == 1.
template <typename T> SK_INLINE if_float<T> pow(T x, T y) { return T(m::pow(calc_t<T>(x), calc_t<T>(y))); }
template <typename T> SK_INLINE if_float<T, void> adj_pow(T x, T y, T& adj_x, T& adj_y, T adj_ret) {
    typedef calc_t<T> C;
    C cx = C(x), cy = C(y), g = C(adj_ret);
    if (cy != C(0)) adj_x += cy * m::pow(cx, cy - C(1)) * g;
    // d/dy x^y = log(x) x^y, defined for x > 0 (0 elsewhere instead of NaN)
    if (cx > C(0)) adj_y += m::log(cx) * m::pow(cx, cy) * g;
}
template <typename T> SK_INLINE if_int<T> pow(T x, T y) {
    typedef wrap_t<T> W;
    if constexpr (scalar_traits<T>::is_signed) {
        if (y < 0) {
            if (x == T(1)) return T(1);
            if (x == T(-1)) return (y & 1) ? T(-1) : T(1);
            return T(0);
        }
    }
    W r = 1, b = W(x);
    for (W e = W(y); e; e >>= 1) {
        if (e & 1u) r *= b;
        b *= b;
    }
    return T(r);
}
template <typename T> SK_INLINE if_int<T, void> adj_pow(T, T, T&, T&, T) {}

// ---------------------------------------------------------------------------
// Comparisons (not differentiable; bools compare too, false < true)

#define SK_COMPARE(name, op)                                                                   \
    template <typename T> SK_INLINE if_scalar<T, bool> name(T a, T b) { return calc_t<T>(a) op calc_t<T>(b); }
SK_COMPARE(lt, <)
SK_COMPARE(le, <=)
SK_COMPARE(gt, >)
SK_COMPARE(ge, >=)
SK_COMPARE(eq, ==)
SK_COMPARE(ne, !=)
#undef SK_COMPARE
SK_INLINE bool eq(bool a, bool b) { return a == b; }
SK_INLINE bool ne(bool a, bool b) { return a != b; }
SK_INLINE bool lt(bool a, bool b) { return a < b; }
SK_INLINE bool le(bool a, bool b) { return a <= b; }
SK_INLINE bool gt(bool a, bool b) { return a > b; }
SK_INLINE bool ge(bool a, bool b) { return a >= b; }

// ---------------------------------------------------------------------------
// Bitwise (integers; and/or/xor also on bool). Shifts by a negative amount or
// by the bit width or more give 0 (left) or the sign fill (right).

template <typename T> SK_INLINE if_int<T> bit_and(T a, T b) { return T(a & b); }
template <typename T> SK_INLINE if_int<T> bit_or(T a, T b) { return T(a | b); }
template <typename T> SK_INLINE if_int<T> bit_xor(T a, T b) { return T(a ^ b); }
template <typename T> SK_INLINE if_int<T> invert(T a) { return T(~a); }
// the number of set bits (of a signed value's two's complement: its unsigned type of the same size)
#if SK_CUDA
SK_INLINE int32 popcount32(uint32 x) { return __popc(x); }
SK_INLINE int32 popcount64(uint64 x) { return __popcll((unsigned long long)x); }
#else
SK_INLINE int32 popcount32(uint32 x) { return __builtin_popcount(x); }
SK_INLINE int32 popcount64(uint64 x) { return __builtin_popcountll((unsigned long long)x); }
#endif
template <typename T> SK_INLINE if_int<T, int32> bit_count(T a) {
    return sizeof(T) == 8 ? popcount64(uint64(a))
         : popcount32(sizeof(T) == 4 ? uint32(a) : sizeof(T) == 2 ? uint32(uint16(a)) : uint32(uint8(a)));
}
SK_INLINE bool bit_and(bool a, bool b) { return a && b; }
SK_INLINE bool bit_or(bool a, bool b) { return a || b; }
SK_INLINE bool bit_xor(bool a, bool b) { return a != b; }
template <typename T> SK_INLINE if_int<T> lshift(T a, T b) {
    if (b < T(0) || uint64(b) >= 8 * sizeof(T)) return T(0);
    return T(wrap_t<T>(a) << b);
}
template <typename T> SK_INLINE if_int<T> rshift(T a, T b) {
    if (b < T(0) || uint64(b) >= 8 * sizeof(T)) return (a < T(0)) ? T(-1) : T(0);
    return T(a >> b);
}
template <typename T> SK_INLINE if_int<T, void> adj_bit_and(T, T, T&, T&, T) {}
template <typename T> SK_INLINE if_int<T, void> adj_bit_or(T, T, T&, T&, T) {}
template <typename T> SK_INLINE if_int<T, void> adj_bit_xor(T, T, T&, T&, T) {}
template <typename T> SK_INLINE if_int<T, void> adj_invert(T, T&, T) {}
template <typename T> SK_INLINE if_int<T, void> adj_lshift(T, T, T&, T&, T) {}
template <typename T> SK_INLINE if_int<T, void> adj_rshift(T, T, T&, T&, T) {}

// ---------------------------------------------------------------------------
// min, max, clamp, abs, sign, step, nonzero (all scalar types)

// min/max pick the other operand when one is NaN (fmin/fmax); the adjoint
// routes the gradient to the operand the forward picked (b on ties).
template <typename T> SK_INLINE if_scalar<T, bool> min_picks_a(T a, T b) {
    return calc_t<T>(a) < calc_t<T>(b) || isnan(b);
}
template <typename T> SK_INLINE if_scalar<T, bool> max_picks_a(T a, T b) {
    return calc_t<T>(a) > calc_t<T>(b) || isnan(b);
}
template <typename T> SK_INLINE if_scalar<T> min(T a, T b) { return min_picks_a(a, b) ? a : b; }
template <typename T> SK_INLINE if_scalar<T, void> adj_min(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        if (min_picks_a(a, b)) adj_a += calc_t<T>(adj_ret);
        else adj_b += calc_t<T>(adj_ret);
    }
}
template <typename T> SK_INLINE if_scalar<T> max(T a, T b) { return max_picks_a(a, b) ? a : b; }
template <typename T> SK_INLINE if_scalar<T, void> adj_max(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        if (max_picks_a(a, b)) adj_a += calc_t<T>(adj_ret);
        else adj_b += calc_t<T>(adj_ret);
    }
}

// clamp(x, low, high) = min(max(low, x), high)
template <typename T> SK_INLINE if_scalar<T> clamp(T x, T low, T high) { return min(max(low, x), high); }
template <typename T>
SK_INLINE if_scalar<T, void> adj_clamp(T x, T low, T high, T& adj_x, T& adj_low, T& adj_high, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        T mx = max(low, x);
        if (!min_picks_a(mx, high)) adj_high += calc_t<T>(adj_ret);
        else if (max_picks_a(low, x)) adj_low += calc_t<T>(adj_ret);
        else adj_x += calc_t<T>(adj_ret);
    }
}

template <typename T> SK_INLINE if_float<T> abs(T x) { return T(m::fabs(calc_t<T>(x))); }
template <typename T> SK_INLINE if_sint<T> abs(T x) { return x < T(0) ? neg(x) : x; }
template <typename T> SK_INLINE if_uint<T> abs(T x) { return x; }
template <typename T> SK_INLINE if_scalar<T, void> adj_abs(T x, T& adj_x, T adj_ret) {
    if constexpr (scalar_traits<T>::is_float) {
        if (calc_t<T>(x) < calc_t<T>(0)) adj_x -= calc_t<T>(adj_ret);
        else adj_x += calc_t<T>(adj_ret);
    }
}

template <typename T> SK_INLINE if_scalar<T> sign(T x) { return calc_t<T>(x) < calc_t<T>(0) ? T(-1) : T(1); }
template <typename T> SK_INLINE if_scalar<T> step(T x) { return calc_t<T>(x) < calc_t<T>(0) ? T(1) : T(0); }
template <typename T> SK_INLINE if_scalar<T> nonzero(T x) { return calc_t<T>(x) == calc_t<T>(0) ? T(0) : T(1); }
template <typename T> SK_INLINE if_scalar<T, void> adj_sign(T, T&, T) {}
template <typename T> SK_INLINE if_scalar<T, void> adj_step(T, T&, T) {}
template <typename T> SK_INLINE if_scalar<T, void> adj_nonzero(T, T&, T) {}

// ---------------------------------------------------------------------------
// Float functions. C = calc_t<T>: float for half and float32, double for float64.

#define SK_FLOAT_UNARY(name, fwd, adj)                                                 \
    template <typename T> SK_INLINE if_float<T> name(T x_) {                           \
        typedef calc_t<T> C;                                                           \
        C x = C(x_);                                                                   \
        return T(fwd);                                                                 \
    }                                                                                  \
    template <typename T> SK_INLINE if_float<T, void> adj_##name(T x_, T& adj_x, T adj_ret) { \
        typedef calc_t<T> C;                                                           \
        C x = C(x_), g = C(adj_ret);                                                   \
        (void)x; (void)g;                                                              \
        adj;                                                                           \
    }

SK_FLOAT_UNARY(sin, m::sin(x), adj_x += m::cos(x) * g)
SK_FLOAT_UNARY(cos, m::cos(x), adj_x -= m::sin(x) * g)
SK_FLOAT_UNARY(tan, m::tan(x), {
    C c = m::cos(x);
    if (c != C(0)) adj_x += g / (c * c);
})
// asin/acos clamp their argument to [-1, 1] (as Warp); the derivative is 0 at |x| >= 1.
SK_FLOAT_UNARY(asin, m::asin(x < C(-1) ? C(-1) : (x > C(1) ? C(1) : x)), {
    C d = C(1) - x * x;
    if (d > C(0)) adj_x += g / m::sqrt(d);
})
SK_FLOAT_UNARY(acos, m::acos(x < C(-1) ? C(-1) : (x > C(1) ? C(1) : x)), {
    C d = C(1) - x * x;
    if (d > C(0)) adj_x -= g / m::sqrt(d);
})
SK_FLOAT_UNARY(atan, m::atan(x), adj_x += g / (C(1) + x * x))
SK_FLOAT_UNARY(sinh, m::sinh(x), adj_x += m::cosh(x) * g)
SK_FLOAT_UNARY(cosh, m::cosh(x), adj_x += m::sinh(x) * g)
SK_FLOAT_UNARY(tanh, m::tanh(x), {
    C t = m::tanh(x);
    adj_x += (C(1) - t * t) * g;
})
SK_FLOAT_UNARY(exp, m::exp(x), adj_x += m::exp(x) * g)
SK_FLOAT_UNARY(log, m::log(x), adj_x += g / x)
SK_FLOAT_UNARY(log2, m::log2(x), adj_x += g / (x * C(SK_LN2)))
SK_FLOAT_UNARY(log10, m::log10(x), adj_x += g / (x * C(SK_LN10)))
SK_FLOAT_UNARY(sqrt, m::sqrt(x), adj_x += C(0.5) * g / m::sqrt(x))
SK_FLOAT_UNARY(cbrt, m::cbrt(x), {
    C r = m::cbrt(x);
    adj_x += g / (C(3) * r * r);
})
SK_FLOAT_UNARY(degrees, x * C(180.0 / SK_PI), adj_x += C(180.0 / SK_PI) * g)
SK_FLOAT_UNARY(radians, x * C(SK_PI / 180.0), adj_x += C(SK_PI / 180.0) * g)
SK_FLOAT_UNARY(erf, m::erf(x), adj_x += C(SK_2_SQRTPI) * m::exp(-x * x) * g)
SK_FLOAT_UNARY(erfc, m::erfc(x), adj_x -= C(SK_2_SQRTPI) * m::exp(-x * x) * g)
SK_FLOAT_UNARY(erfinv, m::erfinv(x), {
    C r = m::erfinv(x);
    adj_x += C(SK_SQRTPI_2) * m::exp(r * r) * g;
})
SK_FLOAT_UNARY(erfcinv, m::erfcinv(x), {
    C r = m::erfcinv(x);
    adj_x -= C(SK_SQRTPI_2) * m::exp(r * r) * g;
})
// Rounding: derivative zero almost everywhere.
SK_FLOAT_UNARY(floor, m::floor(x), (void)0)
SK_FLOAT_UNARY(ceil, m::ceil(x), (void)0)
SK_FLOAT_UNARY(trunc, m::trunc(x), (void)0)
SK_FLOAT_UNARY(round, m::round(x), (void)0)  // halves away from zero
SK_FLOAT_UNARY(rint, m::rint(x), (void)0)    // halves to even
// frac(x) = x - trunc(x) (sign of x); derivative 1 between integers.
SK_FLOAT_UNARY(frac, x - m::trunc(x), adj_x += g)
#undef SK_FLOAT_UNARY

template <typename T> SK_INLINE if_float<T> atan2(T y, T x) { return T(m::atan2(calc_t<T>(y), calc_t<T>(x))); }
template <typename T> SK_INLINE if_float<T, void> adj_atan2(T y_, T x_, T& adj_y, T& adj_x, T adj_ret) {
    typedef calc_t<T> C;
    C y = C(y_), x = C(x_), d = x * x + y * y;
    if (d > C(0)) {
        adj_y += x / d * C(adj_ret);
        adj_x -= y / d * C(adj_ret);
    }
}

// copysign(x, y) = |x| with the sign bit of y
template <typename T> SK_INLINE if_float<T> copysign(T x, T y) { return T(m::copysign(calc_t<T>(x), calc_t<T>(y))); }
template <typename T> SK_INLINE if_float<T, void> adj_copysign(T x, T y, T& adj_x, T&, T adj_ret) {
    typedef calc_t<T> C;
    if (m::copysign(C(1), C(x)) == m::copysign(C(1), C(y))) adj_x += C(adj_ret);
    else adj_x -= C(adj_ret);
}

// lerp(a, b, t) = a (1 - t) + b t
template <typename T> SK_INLINE if_float<T> lerp(T a, T b, T t) {
    typedef calc_t<T> C;
    return T(C(a) * (C(1) - C(t)) + C(b) * C(t));
}
template <typename T> SK_INLINE if_float<T, void> adj_lerp(T a, T b, T t, T& adj_a, T& adj_b, T& adj_t, T adj_ret) {
    typedef calc_t<T> C;
    C g = C(adj_ret);
    adj_a += (C(1) - C(t)) * g;
    adj_b += C(t) * g;
    adj_t += (C(b) - C(a)) * g;
}

// smoothstep(a, b, x): t = clamp((x - a) / (b - a), 0, 1); t^2 (3 - 2 t)
template <typename T> SK_INLINE if_float<T> smoothstep(T a, T b, T x) {
    typedef calc_t<T> C;
    C t = (C(x) - C(a)) / (C(b) - C(a));
    t = t < C(0) ? C(0) : (t > C(1) ? C(1) : t);
    return T(t * t * (C(3) - C(2) * t));
}
template <typename T>
SK_INLINE if_float<T, void> adj_smoothstep(T a, T b, T x, T& adj_a, T& adj_b, T& adj_x, T adj_ret) {
    typedef calc_t<T> C;
    C w = C(b) - C(a);
    C t = (C(x) - C(a)) / w;
    if (!(t > C(0) && t < C(1))) return;  // clamped: flat
    C g = C(6) * t * (C(1) - t) * C(adj_ret) / w;
    adj_x += g;
    adj_a += g * (t - C(1));
    adj_b -= g * t;
}

// ---------------------------------------------------------------------------
// select / where on any value type (scalars, vectors, matrices, ...)

// Accumulate one value into another, component by component.
template <typename V> SK_INLINE void adj_accumulate(V& dst, const V& src) {
    typedef typename value_traits<V>::scalar S;
    S* d = flat(dst);
    const S* s = flat(src);
    for (unsigned i = 0; i < value_traits<V>::length; ++i) d[i] += s[i];
}

// where(cond, a, b) = cond ? a : b
template <typename C, typename V> SK_INLINE V where(C cond, const V& a, const V& b) { return (!!cond) ? a : b; }
template <typename C, typename V>
SK_INLINE void adj_where(C cond, const V&, const V&, C&, V& adj_a, V& adj_b, const V& adj_ret) {
    if (!!cond) adj_accumulate(adj_a, adj_ret);
    else adj_accumulate(adj_b, adj_ret);
}

// select(cond, a, b) = cond ? b : a  (Warp's historical argument order)
template <typename C, typename V> SK_INLINE V select(C cond, const V& a, const V& b) { return (!!cond) ? b : a; }
template <typename C, typename V>
SK_INLINE void adj_select(C cond, const V&, const V&, C&, V& adj_a, V& adj_b, const V& adj_ret) {
    if (!!cond) adj_accumulate(adj_b, adj_ret);
    else adj_accumulate(adj_a, adj_ret);
}

}  // namespace sk
