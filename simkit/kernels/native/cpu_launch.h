// CPU launches: a kernel's CPU entry (codegen.cpu_entry) hands its range loop to sk::cpu_run.
#pragma once
#if !SK_CUDA
#include <omp.h>

// (a range loop starts at a bound gcc cannot see: told that indices are not negative, it drops their wrap
// from the end of an axis, array.h, and vectorizes)
#define SK_ASSUME(c) do { if (!(c)) __builtin_unreachable(); } while (0)
// A range loop is compiled once and reached through a pointer: gcc may neither inline it into cpu_run's
// branches nor clone it for a constant start (each would be another copy of the kernel's code to compile)
#if defined(__GNUC__) && !defined(__clang__)
#define SK_RANGE_FN __attribute__((noinline, noclone))
#else
#define SK_RANGE_FN __attribute__((noinline))
#endif

namespace sk {

// A kernel's range loop: launch indices base + [lo, hi), counted in int32 as tid() is, so gcc can prove
// addresses advance linearly and vectorize (the body's _base + _local, codegen.BODY_INDEX).
typedef void (*cpu_range_t)(const void* args, const launch_bounds_t& b, int64 base, int32 lo, int32 hi);

// The range loop of a kernel that reads T launch indices (i, j = tid(): T = 2): f(i, tid) for the launch indices
// base + [begin, end), tid holding the launch indices, as nested loops: the first T - 1 indices outside (the
// first of them decomposed once, then stepped), the last inside. gcc then keeps them in registers, moves what
// depends on the outer ones out of the inner loop, and may vectorize it (a periodic Jacobi stencil of warp-lang's
// fluid example, 512^2 on one thread: 3.1 ms decomposing each index with two 64-bit divisions, 0.41 ms nested;
// benchmarks/stencil.py).
// The launch has T dimensions (codegen.cpu_entry: a launch of more, whose leading indices tid() gives, decomposes
// each index in a range loop of its own).
template <int T, typename F>
SK_INLINE void tid_loop(const launch_bounds_t& b, int64 base, int32 begin, int32 end, const F& f) {
    int32 t[4] = {0, 0, 0, 0};
    int64 q = base + begin;
    for (int d = T - 1; d >= 0; --d) {
        t[d] = int32(q % b.shape[d]);
        q /= b.shape[d];
    }
    const int32 n = b.shape[T - 1];
    int32 i = begin;
    while (i < end) {
        const int32 stop = end - i < n - t[T - 1] ? end : i + (n - t[T - 1]);
        const int32 j0 = t[T - 1] - i;
        for (; i < stop; ++i) {
            t[T - 1] = i + j0;
            f(i, static_cast<const int32*>(t));
        }
        t[T - 1] = 0;
        for (int d = T - 2; d >= 0; --d) {
            if (++t[d] < b.shape[d] || d == 0) break;
            t[d] = 0;
        }
    }
}

// Run a launch: OpenMP's static schedule by hand (thread t of T runs one contiguous share, the first n % T
// shares one index longer), or the whole launch on this thread, which then accumulates gradients without
// atomics (cpu_serial_thread: array.h, grad_accumulate). A launch of more than 2^31 - 1 threads runs in
// chunks of 2^30 (base: the chunk's start); any smaller launch is one chunk, so base is 0.
inline void cpu_run(int nthreads, const void* args, const launch_bounds_t& b, cpu_range_t range) {
    const int64 n = b.size;
    const int64 chunk = n <= int64(0x7fffffff) ? n : int64(1) << 30;
    for (int64 base = 0; base < n; base += chunk) {
        const int32 m = int32(n - base < chunk ? n - base : chunk);
        if (nthreads > 1) {
#pragma omp parallel num_threads(nthreads)
            {
                const int32 t = omp_get_thread_num(), nt = omp_get_num_threads();
                const int32 q = m / nt, r = m % nt;
                const int32 lo = t * q + (t < r ? t : r);
                range(args, b, base, lo, lo + q + (t < r ? 1 : 0));
            }
        } else {
            cpu_serial_thread = this_thread();
            range(args, b, base, 0, m);
            cpu_serial_thread = nullptr;
        }
    }
}

}  // namespace sk
#endif
