// Runtime error reporting from kernels (debug-mode bounds checks, expect_eq).
// The first error of a launch wins; Python reads it after the launch and raises.
#pragma once
#include "core.h"

#define SK_ERR_NONE 0
#define SK_ERR_BOUNDS 1      // a: axis, b: index, c: size
#define SK_ERR_NULL_ARRAY 2  // an array argument is None
#define SK_ERR_NDIM 3        // a: indices given, b: array ndim
#define SK_ERR_EXPECT 4      // expect_eq/expect_near failed
#define SK_ERR_STACK 5       // adjoint loop stack overflow
#define SK_ERR_SLICE_STEP 7  // a slice step of zero; a: axis
#define SK_ERR_SECOND_ORDER 8  // a backward pass through grad(f)(...) of differentiated values

namespace sk {

struct error_state_t {
    int32 code;
    int32 line;
    int64 a, b, c;
};

#if SK_CUDA
__device__ error_state_t sk_error_state;
__device__ inline error_state_t* error_state() { return &sk_error_state; }
#else
inline error_state_t* error_state() {
    static error_state_t s;
    return &s;
}
#endif

SK_INLINE void report_error(int32 code, int32 line, int64 a, int64 b, int64 c) {
    error_state_t* s = error_state();
#if SK_CUDA
    if (atomicCAS(&s->code, 0, code) == 0) {
#else
    int32 expected = 0;
    if (__atomic_compare_exchange_n(&s->code, &expected, code, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
#endif
        s->line = line;
        s->a = a;
        s->b = b;
        s->c = c;
    }
}

}  // namespace sk

#if !SK_CUDA
// Host entry points read and clear the module's error state. (weak: a module compiled as several units,
// backends/cpu_units.py, defines it in each; the library keeps one)
extern "C" __attribute__((visibility("default"), weak)) int sk_get_error(sk::int64* out) {
    sk::error_state_t* s = sk::error_state();
    out[0] = s->line;
    out[1] = s->a;
    out[2] = s->b;
    out[3] = s->c;
    int code = s->code;
    s->code = 0;
    return code;
}
#endif
