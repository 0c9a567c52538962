// bfloat16 (core.h's sk::bfloat16) in the scalar, quaternion, adjoint and print machinery of the other
// headers: the same roles sk::half has there (computed in float32, stored rounded to nearest even).
// Included by simkit.h after them all; generated code is the first to instantiate anything with it.
#pragma once

#include "core.h"
#include "scalar.h"
#include "quat.h"
#include "stack.h"
#include "utility.h"

namespace sk {

template <> struct scalar_traits<bfloat16> {
    typedef float calc;
    typedef float wrap;
    static const bool is_float = true;
    static const bool is_signed = true;
};
template <> struct is_float_type<bfloat16> { static const bool value = true; };

SK_INLINE bool isnan(bfloat16 x) { return (x.bits & 0x7fffu) > 0x7f80u; }
SK_INLINE bool isinf(bfloat16 x) { return (x.bits & 0x7fffu) == 0x7f80u; }
SK_INLINE bool isfinite(bfloat16 x) { return (x.bits & 0x7f80u) != 0x7f80u; }

namespace qm {
template <> struct acc<bfloat16> { typedef float type; };
}  // namespace qm

SK_INLINE void accum(bfloat16& a, const bfloat16& b) { a = bfloat16(float(a) + float(b)); }
SK_INLINE void print_value(bfloat16 v) { printf("%g\n", double(float(v))); }

}  // namespace sk
