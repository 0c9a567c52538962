// Per-thread stack used by adjoint kernels to store loop-carried values of
// dynamic loops (one entry per iteration), so the reverse pass can restore
// each iteration's state exactly.
//   CPU: a thread-local buffer that grows on demand (never overflows).
//   CUDA: a per-thread slice of a scratch buffer set up at launch; running past
//         its end reports SK_ERR_STACK (raised in Python) instead of corrupting memory.
#pragma once
#include "core.h"
#include "error.h"
#include "array.h"
#include "fixed_array.h"

#if !SK_CUDA
#include <cstdlib>
#endif

namespace sk {

#if SK_CUDA
__device__ char* sk_stack_base;      // set by the runtime before an adjoint launch (null: no stack)
__device__ int64 sk_stack_capacity;  // bytes per CUDA thread, including the 16-byte header

// A view of this CUDA thread's slice: [int64 size][pad][data ...]
struct stack_t {
    char* data;
    int64* size;
    int64 cap;
};
SK_INLINE stack_t tape_stack() {
    stack_t s;
    if (sk_stack_base == nullptr) {
        s.data = nullptr; s.size = nullptr; s.cap = 0;
        return s;
    }
    const int64 t = int64(blockIdx.x) * blockDim.x + threadIdx.x;
    char* region = sk_stack_base + t * sk_stack_capacity;
    s.size = reinterpret_cast<int64*>(region);
    s.data = region + 16;
    s.cap = sk_stack_capacity - 16;
    return s;
}
SK_INLINE void stack_reset() { stack_t s = tape_stack(); if (s.size) *s.size = 0; }

template <typename T>
SK_INLINE void push(stack_t s, const T& v) {
    const int64 n = int64(sizeof(T));
    if (s.size == nullptr || *s.size + n > s.cap) {
        report_error(SK_ERR_STACK, 0, s.size ? *s.size + n : n, s.cap, 0);
        return;
    }
    memcpy(s.data + *s.size, &v, sizeof(T));
    *s.size += n;
}
template <typename T>
SK_INLINE void pop(stack_t s, T& v) {
    const int64 n = int64(sizeof(T));
    if (s.size == nullptr || *s.size < n) return;  // only after an overflow was reported
    *s.size -= n;
    memcpy(&v, s.data + *s.size, sizeof(T));
}
#else
struct stack_t {
    char* data = nullptr;
    int64 size = 0;
    int64 cap = 0;
};
inline stack_t& tape_stack() {
    static thread_local stack_t s;
    return s;
}
SK_INLINE void stack_reset() { tape_stack().size = 0; }

template <typename T>
SK_INLINE void push(stack_t& s, const T& v) {
    const int64 n = int64(sizeof(T));
    if (s.size + n > s.cap) {
        int64 cap = s.cap ? s.cap * 2 : 4096;
        while (cap < s.size + n) cap *= 2;
        char* d = static_cast<char*>(realloc(s.data, size_t(cap)));
        if (!d) { report_error(SK_ERR_STACK, 0, s.size + n, s.cap, 0); return; }
        s.data = d;
        s.cap = cap;
    }
    memcpy(s.data + s.size, &v, sizeof(T));
    s.size += n;
}

template <typename T>
SK_INLINE void pop(stack_t& s, T& v) {
    const int64 n = int64(sizeof(T));
    if (s.size < n) return;
    s.size -= n;
    memcpy(&v, s.data + s.size, sizeof(T));
}
#endif

// A fixed-size array (fixed_array.h) saves and restores its elements only: its gradient storage and
// descriptor stay the variable's own.
#if SK_CUDA
#define SK_STACK_ARG stack_t
#else
#define SK_STACK_ARG stack_t&
#endif
template <typename T, bool G, int NDIM, int D0, int D1, int D2, int D3>
SK_INLINE void push(SK_STACK_ARG s, const fixed_array_t<T, G, NDIM, D0, D1, D2, D3>& v) {
    for (int n = 0; n < v.N; ++n) push(s, v.items[n]);
}
template <typename T, bool G, int NDIM, int D0, int D1, int D2, int D3>
SK_INLINE void pop(SK_STACK_ARG s, fixed_array_t<T, G, NDIM, D0, D1, D2, D3>& v) {
    for (int n = v.N - 1; n >= 0; --n) pop(s, v.items[n]);
}

// Generated adjoint code fetches the stack once per function (`auto&& _stk = sk::tape_stack();`,
// a thread-local lookup on the CPU) and passes it to push/pop.

// Adjoint accumulation for every type: scalars add, value types add per component,
// arrays and bools carry no adjoint (array gradients live in the grad buffers).
template <typename T> SK_INLINE void accum(T& a, const T& b) { a += b; }
SK_INLINE void accum(bool_t&, const bool_t&) {}
template <typename T> SK_INLINE void accum(array_t<T>&, const array_t<T>&) {}
SK_INLINE void accum(half& a, const half& b) { a = half(float(a) + float(b)); }
template <unsigned N, typename T> SK_INLINE void accum(vec_t<N, T>& a, const vec_t<N, T>& b) {
    for (unsigned i = 0; i < N; ++i) accum(a.c[i], b.c[i]);
}
template <unsigned R, unsigned C, typename T> SK_INLINE void accum(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) {
    for (unsigned i = 0; i < R; ++i)
        for (unsigned j = 0; j < C; ++j) accum(a.data[i][j], b.data[i][j]);
}
template <typename T> SK_INLINE void accum(quat_t<T>& a, const quat_t<T>& b) {
    accum(a.x, b.x); accum(a.y, b.y); accum(a.z, b.z); accum(a.w, b.w);
}
template <typename T> SK_INLINE void accum(transform_t<T>& a, const transform_t<T>& b) {
    accum(a.p, b.p); accum(a.q, b.q);
}

}  // namespace sk
