// Logical operators, printing and expectations.
#pragma once
#if !defined(__CUDACC_RTC__) && !defined(__CUDACC__)
#include <cstdlib>
#endif
#include "core.h"
#include "error.h"

namespace sk {

// cast(a, dtype): the bytes of a read as a To (sizes checked by the compiler front end too)
template <typename To, typename From> SK_INLINE To bit_cast(const From& a)
{
    static_assert(sizeof(To) == sizeof(From), "cast(a, dtype): a and dtype must have the same size");
    To out;
    memcpy(&out, &a, sizeof(To));
    return out;
}

SK_INLINE bool_t logical_and(bool_t a, bool_t b) { return a && b; }
SK_INLINE bool_t logical_or(bool_t a, bool_t b) { return a || b; }
SK_INLINE bool_t logical_not(bool_t a) { return !a; }
template <typename T> SK_INLINE bool_t logical_not(T a) { return !(a != T(0)); }
template <typename T> SK_INLINE bool_t nonzero_bool(T a) { return float(a) != 0.0f; }
SK_INLINE bool_t nonzero_bool(int64 a) { return a != 0; }
SK_INLINE bool_t nonzero_bool(uint64 a) { return a != 0; }
SK_INLINE bool_t nonzero_bool(double a) { return a != 0.0; }

// print(x): one value per line, with its type's natural format.
SK_INLINE void print_value(bool_t v) { printf("%s\n", v ? "True" : "False"); }
SK_INLINE void print_value(int8 v) { printf("%d\n", int(v)); }
SK_INLINE void print_value(uint8 v) { printf("%u\n", unsigned(v)); }
SK_INLINE void print_value(int16 v) { printf("%d\n", int(v)); }
SK_INLINE void print_value(uint16 v) { printf("%u\n", unsigned(v)); }
SK_INLINE void print_value(int32 v) { printf("%d\n", v); }
SK_INLINE void print_value(uint32 v) { printf("%u\n", v); }
SK_INLINE void print_value(int64 v) { printf("%lld\n", (long long)v); }
SK_INLINE void print_value(uint64 v) { printf("%llu\n", (unsigned long long)v); }
SK_INLINE void print_value(half v) { printf("%g\n", double(float(v))); }
SK_INLINE void print_value(float v) { printf("%g\n", double(v)); }
SK_INLINE void print_value(double v) { printf("%g\n", v); }
// vectors, quaternions, matrices (a row per line) and transforms as Warp prints them: "%g " per component
template <unsigned N, typename T> SK_INLINE void print_value(const vec_t<N, T>& v) {
    for (unsigned i = 0; i < N; ++i) printf("%g ", double(float(v.c[i])));
    printf("\n");
}
template <typename T> SK_INLINE void print_value(const quat_t<T>& q) {
    printf("%g %g %g %g\n", double(float(q.x)), double(float(q.y)), double(float(q.z)), double(float(q.w)));
}
template <unsigned R, unsigned C, typename T> SK_INLINE void print_value(const mat_t<R, C, T>& m) {
    for (unsigned i = 0; i < R; ++i) {
        for (unsigned j = 0; j < C; ++j) printf("%g ", double(float(m.data[i][j])));
        printf("\n");
    }
}
template <typename T> SK_INLINE void print_value(const transform_t<T>& t) {
    printf("(%g %g %g) (%g %g %g %g)\n", double(float(t.p.c[0])), double(float(t.p.c[1])), double(float(t.p.c[2])),
           double(float(t.q.x)), double(float(t.q.y)), double(float(t.q.z)), double(float(t.q.w)));
}
// structs, arrays and other handles (as in Warp)
template <typename V> SK_INLINE void print_value(const V&) { printf("<type without print implementation>\n"); }
template <typename T> SK_INLINE void print(const T& v) { print_value(v); }

template <typename T> SK_INLINE bool values_equal(const T& a, const T& b) {
    for (unsigned i = 0; i < value_traits<T>::length; ++i)
        if (!(flat(a)[i] == flat(b)[i])) return false;
    return true;
}
template <typename T> SK_INLINE void expect_eq(int line, const T& a, const T& b) {
    if (!values_equal(a, b)) report_error(SK_ERR_EXPECT, line, 0, 0, 0);
}
template <typename T> SK_INLINE void expect_neq(int line, const T& a, const T& b) {
    if (values_equal(a, b)) report_error(SK_ERR_EXPECT, line, 0, 0, 0);
}
template <typename T, typename S> SK_INLINE void expect_near(int line, const T& a, const T& b, S tol) {
    for (unsigned i = 0; i < value_traits<T>::length; ++i) {
        double d = double(float(flat(a)[i])) - double(float(flat(b)[i]));
        if (!(d <= double(tol) && -d <= double(tol))) { report_error(SK_ERR_EXPECT, line, 0, 0, 0); return; }
    }
}

// assert cond: a no-op in release builds; debug builds call the _checked form with the line.
#define SK_ERR_ASSERT 6
SK_INLINE void assert_true(bool_t) {}
SK_INLINE void assert_true_checked(int line, bool_t cond) {
    if (!cond) report_error(SK_ERR_ASSERT, line, 0, 0, 0);
}

// block_dim(): threads per block (the CPU runs one thread per block)
#if SK_CUDA
SK_INLINE int32 block_dim() { return int32(blockDim.x); }
#else
SK_INLINE int32 block_dim() { return 1; }
#endif

// breakpoint(): stop in an attached native debugger (gdb/cuda-gdb); without one it does nothing
// (a trap without a debugger would kill the process).
#if SK_CUDA
SK_INLINE void breakpoint() { __brkpt(); }
#else
}  // namespace sk
#include <csignal>
namespace sk {
inline bool debugger_attached() {
    static int attached = -1;
    if (attached < 0) {
        attached = 0;
        if (FILE* f = fopen("/proc/self/status", "r")) {
            char line[256];
            while (fgets(line, sizeof line, f))
                if (strncmp(line, "TracerPid:", 10) == 0) { attached = atoi(line + 10) != 0; break; }
            fclose(f);
        }
    }
    return attached == 1;
}
inline void breakpoint() {
    if (debugger_attached()) raise(SIGTRAP);
}
#endif

}  // namespace sk
