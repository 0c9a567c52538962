/* Hand-written C reference for benchmarks/stencil.py: one damped Jacobi iteration of a periodic N x N grid
 * (the pressure solve of warp-lang's checkpointed fluid example), row-major float32, with simkit's flags.
 * Each neighbour's index is wrapped as the kernel wraps it (a remainder by the constant N, then + N if
 * negative), so the two do the same arithmetic: what differs is the code around it. */
#include <stdint.h>

#define JACOBI(N)                                                                                            \
    static inline int32_t cyclic##N(int32_t idx) {                                                           \
        int32_t r = idx % N;                                                                                 \
        return r < 0 ? r + N : r;                                                                            \
    }                                                                                                        \
    void jacobi##N(float h2, const float* restrict div, const float* restrict p0, float* restrict p1,       \
                   int nthreads) {                                                                           \
        const float w = 2.0f / 3.0f;                                                                         \
        _Pragma("omp parallel for num_threads(nthreads) schedule(static)")                                   \
        for (int32_t i = 0; i < N; ++i)                                                                      \
            for (int32_t j = 0; j < N; ++j)                                                                  \
                p1[i * N + j] = (1.0f - w) * p0[i * N + j] + 0.25f * w * (                                   \
                    -h2 * div[i * N + j] + p0[cyclic##N(i - 1) * N + j] + p0[cyclic##N(i + 1) * N + j]       \
                    + p0[i * N + cyclic##N(j - 1)] + p0[i * N + cyclic##N(j + 1)]);                          \
    }

JACOBI(64)  /* (the test's size: tests/test_benchmark_scripts.py) */
JACOBI(512)
JACOBI(2048)
