/* Hand-written C reference kernels for benchmarks/cpu_core.py.
 *
 * Compiled at benchmark time with the same flags simkit uses for its CPU
 * modules (gcc -O3 -march=native -fopenmp -fno-math-errno) and called through
 * ctypes with the same thread count as simkit.
 */
#include <math.h>
#include <stdint.h>

/* y = a * x + y */
void saxpy(int64_t n, float a, const float* restrict x, float* restrict y, int nthreads) {
    #pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int64_t i = 0; i < n; ++i)
        y[i] = a * x[i] + y[i];
}

/* acc[i] = sum_j (p_j - p_i) / (|p_j - p_i|^2 + eps)^1.5, positions as packed xyz (AoS, like vec3 arrays). */
void nbody(int64_t n, const float* restrict pos, float* restrict acc, float eps, int nthreads) {
    #pragma omp parallel for num_threads(nthreads) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        const float px = pos[3 * i], py = pos[3 * i + 1], pz = pos[3 * i + 2];
        float ax = 0.0f, ay = 0.0f, az = 0.0f;
        for (int64_t j = 0; j < n; ++j) {
            const float dx = pos[3 * j] - px, dy = pos[3 * j + 1] - py, dz = pos[3 * j + 2] - pz;
            const float r2 = dx * dx + dy * dy + dz * dz + eps;
            const float inv = 1.0f / (r2 * sqrtf(r2));
            ax += dx * inv;
            ay += dy * inv;
            az += dz * inv;
        }
        acc[3 * i] = ax;
        acc[3 * i + 1] = ay;
        acc[3 * i + 2] = az;
    }
}

/* Minimal call, for the ctypes call-overhead floor. */
void tiny(float a, float* x) { x[0] = a; }
