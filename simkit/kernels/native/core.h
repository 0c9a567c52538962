// simkit native core: macros, scalar types, and the layout of every value type.
// Valid as host C++17 and as CUDA device code (NVRTC). Every other header
// includes this one. Operations live in their own headers (scalar.h, vec.h,
// mat.h, quat.h, transform.h, spatial.h, array.h, atomic.h, rand.h).
#pragma once

#if defined(SK_CUDA_EMU)
// CUDA code paths compiled for the host, each emulated GPU thread run in turn (tests: tests/cuda_emulator.py)
#include "cuda_emu.h"
#define SK_CUDA 1
#define CUDA_CALLABLE
#define SK_FORCEINLINE inline __attribute__((always_inline))
#elif defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define SK_CUDA 1
#define CUDA_CALLABLE __host__ __device__
#define SK_FORCEINLINE __forceinline__
#else
#define SK_CUDA 0
#define CUDA_CALLABLE
#define SK_FORCEINLINE inline __attribute__((always_inline))
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <pthread.h>
#endif

#define SK_INLINE CUDA_CALLABLE inline
// @func(inline=True / False) (codegen.func_qualifier)
#if SK_CUDA && !defined(SK_CUDA_EMU)
#define SK_FORCEINLINE_FN CUDA_CALLABLE __forceinline__
#define SK_NOINLINE_FN CUDA_CALLABLE __noinline__
#else
#define SK_FORCEINLINE_FN inline __attribute__((always_inline))
#define SK_NOINLINE_FN __attribute__((noinline))
#endif

#if SK_CUDA && defined(__CUDACC_RTC__)
// NVRTC has no system headers: declare the fixed-width integer types.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#endif

#if SK_CUDA && !defined(INFINITY)
#define INFINITY __int_as_float(0x7f800000)
#endif
#if SK_CUDA && !defined(NAN)
#define NAN __int_as_float(0x7fffffff)
#endif

namespace sk {

typedef bool bool_t;
typedef int8_t int8;
typedef uint8_t uint8;
typedef int16_t int16;
typedef uint16_t uint16;
typedef int32_t int32;
typedef uint32_t uint32;
typedef int64_t int64;
typedef uint64_t uint64;
typedef float float32;
typedef double float64;

// ---------------------------------------------------------------------------
// float16: stored as IEEE binary16 bits; arithmetic happens in float32.
struct half {
    uint16 bits;
    SK_INLINE half() : bits(0) {}
    SK_INLINE half(float f);
    SK_INLINE half(double d) : half(float(d)) {}
    SK_INLINE half(int i) : half(float(i)) {}
    SK_INLINE operator float() const;
};

SK_INLINE uint16 float_to_half_bits(float f) {
    uint32 x;
    memcpy(&x, &f, 4);
    uint32 sign = (x >> 16) & 0x8000u;
    int32 exp = int32((x >> 23) & 0xffu) - 127 + 15;
    uint32 mant = x & 0x7fffffu;
    if (((x >> 23) & 0xffu) == 0xffu)  // inf / nan
        return uint16(sign | 0x7c00u | (mant ? 0x200u : 0u));
    if (exp >= 31) return uint16(sign | 0x7c00u);  // overflow -> inf
    if (exp <= 0) {                                // subnormal or zero
        if (exp < -10) return uint16(sign);
        mant |= 0x800000u;
        uint32 shift = uint32(14 - exp);
        uint32 h = mant >> shift;
        uint32 rem = mant & ((1u << shift) - 1u);
        uint32 halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1u))) h++;
        return uint16(sign | h);
    }
    uint32 h = sign | (uint32(exp) << 10) | (mant >> 13);
    uint32 rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;  // round to nearest even
    return uint16(h);
}

SK_INLINE float half_bits_to_float(uint16 h) {
    uint32 sign = uint32(h & 0x8000u) << 16;
    uint32 exp = (h >> 10) & 0x1fu;
    uint32 mant = h & 0x3ffu;
    uint32 x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {  // subnormal: normalise
            int32 e = -1;
            do { mant <<= 1; e++; } while ((mant & 0x400u) == 0);
            x = sign | (uint32(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

#if defined(__CUDA_ARCH__)
// hardware conversions on the GPU (the software path bloats every kernel and slows NVRTC ~15x)
SK_INLINE half::half(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f)); }
SK_INLINE half::operator float() const {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits));
    return f;
}
#else
SK_INLINE half::half(float f) : bits(float_to_half_bits(f)) {}
SK_INLINE half::operator float() const { return half_bits_to_float(bits); }
#endif
SK_INLINE half& operator+=(half& a, float b) { a = half(float(a) + b); return a; }
SK_INLINE half& operator-=(half& a, float b) { a = half(float(a) - b); return a; }
SK_INLINE half& operator*=(half& a, float b) { a = half(float(a) * b); return a; }
SK_INLINE half& operator/=(half& a, float b) { a = half(float(a) / b); return a; }
typedef half float16;

// ---------------------------------------------------------------------------
// bfloat16: the upper 16 bits of a float32 (same exponent range, 7 mantissa bits); arithmetic happens
// in float32 and results are rounded to nearest, ties to even. Plain bit manipulation on every target
// (NVRTC needs no cuda_bf16.h). Traits and overloads for the other headers: bfloat16.h.
SK_INLINE uint16 float_to_bfloat16_bits(float f) {
    uint32 x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16((x >> 16) | 0x40u);  // NaN stays a (quiet) NaN
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even (overflow carries into inf)
    return uint16(x >> 16);
}

SK_INLINE float bfloat16_bits_to_float(uint16 b) {
    uint32 x = uint32(b) << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

struct bfloat16 {
    uint16 bits;
    SK_INLINE bfloat16() : bits(0) {}
    SK_INLINE bfloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
    SK_INLINE bfloat16(double d) : bfloat16(float(d)) {}
    // every integer type converts exactly (none ambiguous between float and double)
    SK_INLINE bfloat16(int i) : bfloat16(float(i)) {}
    SK_INLINE bfloat16(unsigned int i) : bfloat16(float(i)) {}
    SK_INLINE bfloat16(long i) : bfloat16(float(i)) {}
    SK_INLINE bfloat16(unsigned long i) : bfloat16(float(i)) {}
    SK_INLINE bfloat16(long long i) : bfloat16(float(i)) {}
    SK_INLINE bfloat16(unsigned long long i) : bfloat16(float(i)) {}
    SK_INLINE operator float() const { return bfloat16_bits_to_float(bits); }
};
SK_INLINE bfloat16& operator+=(bfloat16& a, float b) { a = bfloat16(float(a) + b); return a; }
SK_INLINE bfloat16& operator-=(bfloat16& a, float b) { a = bfloat16(float(a) - b); return a; }
SK_INLINE bfloat16& operator*=(bfloat16& a, float b) { a = bfloat16(float(a) * b); return a; }
SK_INLINE bfloat16& operator/=(bfloat16& a, float b) { a = bfloat16(float(a) / b); return a; }

// ---------------------------------------------------------------------------
// Value types. Layouts are fixed: Python packs arguments with the same layout.

// An empty slice (v[5:]) is a vec_t<0> or mat_t<0, 0>: it keeps one unused component, since
// C++ has no zero-size arrays (NVRTC refuses them); its loops run zero times.
template <unsigned N, typename T>
struct vec_t {
    T c[N ? N : 1];
    SK_INLINE T& operator[](int i) { return c[i]; }
    SK_INLINE const T& operator[](int i) const { return c[i]; }
};

// Row-major: data[i][j] is row i, column j.
template <unsigned R, unsigned C, typename T>
struct mat_t {
    T data[R ? R : 1][C ? C : 1];
};

// (x, y, z, w), w is the real part.
template <typename T>
struct quat_t {
    T x, y, z, w;
};

// p: translation, q: rotation.
template <typename T>
struct transform_t {
    vec_t<3, T> p;
    quat_t<T> q;
};

// Traits: scalar type and component count of every value type.
template <typename T> struct value_traits { typedef T scalar; static const unsigned length = 1; };
template <unsigned N, typename T> struct value_traits<vec_t<N, T>> { typedef T scalar; static const unsigned length = N; };
template <unsigned R, unsigned C, typename T> struct value_traits<mat_t<R, C, T>> { typedef T scalar; static const unsigned length = R * C; };
template <typename T> struct value_traits<quat_t<T>> { typedef T scalar; static const unsigned length = 4; };
template <typename T> struct value_traits<transform_t<T>> { typedef T scalar; static const unsigned length = 7; };

// A value as a flat array of its scalars (all value types are unpadded aggregates).
template <typename V> SK_INLINE typename value_traits<V>::scalar* flat(V& v) {
    return reinterpret_cast<typename value_traits<V>::scalar*>(&v);
}
template <typename V> SK_INLINE const typename value_traits<V>::scalar* flat(const V& v) {
    return reinterpret_cast<const typename value_traits<V>::scalar*>(&v);
}

// Build a value from all of its scalar components, in flat order: make<vec_t<3,float>>(x, y, z).
template <typename R, typename... Args> SK_INLINE R make(Args... args) {
    typedef typename value_traits<R>::scalar S;
    R r;
    const S vals[] = {S(args)...};
    S* out = flat(r);
    for (unsigned i = 0; i < sizeof...(Args); ++i) out[i] = vals[i];
    return r;
}
// Adjoint of one component of make(): adj_arg += adj_ret[i].
template <typename R, typename S> SK_INLINE void adj_make_component(S& adj_arg, const R& adj_ret, int i) {
    adj_arg += S(flat(adj_ret)[i]);
}

// Zero value of any type.
template <typename T> SK_INLINE T zero() {
    T r;
    memset(&r, 0, sizeof(T));
    return r;
}

template <typename T> SK_INLINE T zero_like(const T&) { return zero<T>(); }

// Launch bounds: the shape of the launch grid (1 to 4 dims) and its size.
struct launch_bounds_t {
    int32 shape[4];
    int32 ndim;
    int32 flags;  // SK_BOUNDS_NO_ALIAS: no array is passed twice (adjoint launches may skip atomics)
    int64 size;
};
#define SK_BOUNDS_NO_ALIAS 1
#define SK_BOUNDS_SERIAL 2  // one CPU thread runs the whole launch: gradient accumulation needs no atomics

#if !SK_CUDA
// The thread pointer of the CPU thread that runs a whole launch alone (set by the launch loop,
// sk::cpu_run in cpu_launch.h): atomics and gradient accumulation there need no locked instructions (atomic.h,
// array.h). A plain global compared with the caller's thread pointer (one register read): a
// thread_local in a dlopen'ed library would cost a call to __tls_get_addr at every atomic.
inline void* cpu_serial_thread = nullptr;
SK_INLINE void* this_thread() {
#if defined(__GNUC__) && !defined(__clang__)
    return __builtin_thread_pointer();
#else
    return reinterpret_cast<void*>(pthread_self());
#endif
}
SK_INLINE bool cpu_serial() { return cpu_serial_thread == this_thread(); }
#endif
// Read once at the top of a @func adjoint: its array-read adjoints then add without atomics.
SK_INLINE bool serial_launch() {
#if SK_CUDA
    return false;
#else
    return cpu_serial();
#endif
}

// `i = tid()`: the index along the first launch dimension (the linear index for 1D launches).
// Launch indices are never negative: said to the compiler, which then drops the wrap of negative array
// indices (array.h) on indices made from them, and keeps such addresses affine (vectorized on the CPU).
SK_INLINE int32 assume_index(int32 i) {
    if (i < 0) __builtin_unreachable();
    return i;
}
SK_INLINE int32 tid_first(const launch_bounds_t& b, int64 index) {
    return assume_index(b.ndim == 1 ? int32(index) : int32(index / (b.size / b.shape[0])));
}
// The same of launch index base + local (a kernel body's parameters, codegen.BODY_INDEX): base is 0 in a
// launch of at most 2^31 - 1 threads, the most a 1D launch reading tid() may have, so its index is local.
SK_INLINE int32 tid_first(const launch_bounds_t& b, int64 base, int32 local) {
    return assume_index(b.ndim == 1 ? local : int32((base + local) / (b.size / b.shape[0])));
}
// A launch index as those two parts (base: 0 below 2^31)
#define SK_INDEX_PARTS(i) ((i) & ~sk::int64(0x7fffffff)), sk::int32((i) & 0x7fffffff)

// Decompose a linear thread index into up to 4 launch indices (row-major).
SK_INLINE void tid_decompose(const launch_bounds_t& b, int64 index, int32* out) {
    for (int d = b.ndim - 1; d >= 0; --d) {
        out[d] = assume_index(int32(index % b.shape[d]));
        index /= b.shape[d];
    }
}


}  // namespace sk
