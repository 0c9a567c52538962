// Deterministic mode on a GPU, backward launches (simkit/utils/deterministic_grad.py): the recording variant of
// an adjoint kernel (compiled with SK_DET_GRAD) hands every gradient accumulation that other threads may share
// (atomic_accumulate: adj_load, struct fields, mesh points) to det_grad_put instead of an atomic add. It runs
// twice. The first launch (sk_det_offsets null) only counts each launch index's contributions and checks that
// each lands in a known gradient array; it consumes no output gradient and adds nothing (grad_consumed,
// accumulate_grad: det_counting()). The second writes them from the index's first slot, as det_record.h's
// counted (_seq) plans do: key = target * span + scalar offset, value as a double. Sorting by key lists each
// scalar's contributions in launch-index order, and within an index in the order the adjoint made them.
// Accumulations no other thread shares (a thread's own element, its local arrays) stay plain adds, made in the
// second launch where the sequential loop makes them.
#pragma once
#include "core.h"
#include "det_record.h"

namespace sk {

#if SK_CUDA && SK_DET_GRAD
__device__ const int64* sk_det_table;  // [n][3] per gradient array: first byte, end byte, bytes of its scalar
__device__ int64 sk_det_ntable;        // (0 bytes: an array the kernel also writes; its gradient is read there)
__device__ int32* sk_det_fail;         // set when a contribution goes elsewhere: the launch cannot be recorded
__shared__ int64 sk_det_cur[1024];     // the launch index each thread of the block runs (set by the entry)

SK_INLINE void det_enter(int64 idx) { sk_det_cur[threadIdx.x] = idx; }
SK_INLINE bool det_counting() { return sk_det_offsets == nullptr; }

template <typename T>
SK_INLINE void det_grad_put(T* p, const T& v) {
    typedef typename value_traits<T>::scalar S;
    const unsigned n = value_traits<T>::length;
    const S* c = flat(v);
    if (__isLocal(p)) {  // a thread's own array: no other thread adds to it
        S* d = flat(*p);
        for (unsigned k = 0; k < n; ++k) d[k] = S(d[k] + c[k]);
        return;
    }
    const int64 idx = sk_det_cur[threadIdx.x];
    const int64 seq = sk_det_counts[idx];
    sk_det_counts[idx] = seq + int64(n);
    const int64 at = int64(reinterpret_cast<unsigned long long>(p));
    int64 t = 0;
    while (t < sk_det_ntable && !(at >= sk_det_table[3 * t] && at < sk_det_table[3 * t + 1])) ++t;
    if (t == sk_det_ntable || sk_det_table[3 * t + 2] != int64(sizeof(S))) {
        *sk_det_fail = 1;
        return;
    }
    if (det_counting()) return;
    const int64 off = (at - sk_det_table[3 * t]) / int64(sizeof(S));
    const int64 slot = sk_det_offsets[idx] + seq;
    for (unsigned k = 0; k < n; ++k) {
        sk_det_keys[slot + k] = t * sk_det_span + off + int64(k);
        sk_det_vals[slot + k] = double(c[k]);
    }
}
#endif

}  // namespace sk
