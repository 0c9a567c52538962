// Host emulation of the CUDA device environment (for tests: tests/cuda_emulator.py).
//
// A unit compiled by the host compiler with -DSK_CUDA_EMU takes its CUDA code paths
// (SK_CUDA branches, the __global__ entries and their grid-stride loops, the per-thread
// adjoint stack, the device error state, CAS-based atomics) instead of the CPU ones.
// The emulator runs one launch as every (block, thread) pair in turn on the calling
// host thread, so there is no concurrency: races are not found here, but indexing,
// layouts and the device-only logic are checked without a GPU.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define __host__
#define __device__ __attribute__((visibility("default")))  // globals: found by name, like cuModuleGetGlobal
#define __global__ __attribute__((visibility("default")))
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static

struct sk_emu_dim3 {
    unsigned int x, y, z;
};
static thread_local sk_emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

// Run f() once per emulated thread of a 1D grid of gx blocks of bx threads, in index order or
// (reverse != 0) backwards: CUDA promises no order, and a kernel whose result depends on it reads
// what another thread of the same launch writes.
template <typename F>
inline void sk_emu_run_grid(unsigned int gx, unsigned int bx, int reverse, F f) {
    gridDim = {gx, 1, 1};
    blockDim = {bx, 1, 1};
    for (unsigned int b = 0; b < gx; ++b) {
        blockIdx = {reverse ? gx - 1 - b : b, 0, 0};
        for (unsigned int t = 0; t < bx; ++t) {
            threadIdx = {reverse ? bx - 1 - t : t, 0, 0};
            f();
        }
    }
}

// Atomics (the emulated threads run one at a time; these stay atomic for host threads too).
template <typename T>
inline T sk_emu_cas(T* p, T cmp, T val) {
    __atomic_compare_exchange_n(p, &cmp, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;  // the previous value either way
}
inline int atomicCAS(int* p, int cmp, int val) { return sk_emu_cas(p, cmp, val); }
inline unsigned int atomicCAS(unsigned int* p, unsigned int cmp, unsigned int val) { return sk_emu_cas(p, cmp, val); }
inline unsigned short atomicCAS(unsigned short* p, unsigned short cmp, unsigned short val) {
    return sk_emu_cas(p, cmp, val);
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long val) {
    return sk_emu_cas(p, cmp, val);
}
// Is p in this thread's own (local) memory? Here: on this host thread's stack, near the current frame
// (the emulated thread's locals; arrays are on the heap), so the local branches of atomic.h run too.
inline unsigned int __isLocal(const void* p) {
    const char* f = static_cast<const char*>(__builtin_frame_address(0));
    const char* q = static_cast<const char*>(p);
    return q > f - (1 << 20) && q < f + (1 << 20);
}
template <typename T>
inline T sk_emu_add(T* p, T v) {
    T old = *p;
    *p = T(old + v);
    return old;
}
// CUDA's overloads (not one template: an argument that converts to T*, such as a snippet's array_t, must match)
inline int atomicAdd(int* p, int v) { return sk_emu_add(p, v); }
inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { return sk_emu_add(p, v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return sk_emu_add(p, v); }
inline float atomicAdd(float* p, float v) { return sk_emu_add(p, v); }
inline double atomicAdd(double* p, double v) { return sk_emu_add(p, v); }

inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline float __int_as_float(int i) {
    float f;
    memcpy(&f, &i, 4);
    return f;
}
inline int __float_as_int(float f) {
    int i;
    memcpy(&i, &f, 4);
    return i;
}
inline int __ffs(int x) { return __builtin_ffs(x); }
inline void __brkpt() {}
inline void __syncthreads() {}
inline void __threadfence() {}

// Conditional graph nodes: the emulator's handles are the addresses of their values (tests/cuda_emulator.py).
typedef unsigned long long cudaGraphConditionalHandle;
inline void cudaGraphSetConditional(cudaGraphConditionalHandle handle, unsigned int value) {
    *(volatile unsigned int*)handle = value;
}
