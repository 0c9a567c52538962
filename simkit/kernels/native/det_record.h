// Deterministic mode on a GPU (simkit/utils/deterministic_gpu.py): a kernel whose float atomic_add/atomic_sub
// make its result depend on the order of threads runs as a variant in which each such atomic writes its
// contribution into slots of its own instead: slot ``_idx * per_thread + site offset + component`` holds the key
// (target * span + scalar offset of the element's component in the target array) and the value (as a double:
// exact for float32 and float64). Sorting the slots stably by key lists each element's contributions in
// launch-index order; adding them in that order gives the sum a sequential loop gives.
// An atomic in a loop runs any number of times: such kernels record with ``_seq`` variants, in two launches:
// the first counts each launch index's contributions (sk_det_offsets null), the second writes them from the
// index's first slot (an exclusive prefix sum of the counts) in the order it makes them.
#pragma once
#include "core.h"
#include "array.h"
#include "atomic.h"

namespace sk {

#if SK_CUDA
__device__ int64* sk_det_keys;   // set by the runtime before a recording launch
__device__ double* sk_det_vals;
__device__ int64 sk_det_span;    // scalars of the largest target: keys of two targets never meet
__device__ int64* sk_det_counts;   // _seq variants: the contributions of each launch index so far
__device__ int64* sk_det_offsets;  // _seq variants: each launch index's first slot (null: the counting launch)

template <typename T>
SK_INLINE void det_put(const array_t<T>& a, const T* p, int64 slot, int64 target, const T& v) {
    typedef typename value_traits<T>::scalar S;
    const int64 off = int64(reinterpret_cast<const char*>(p) - reinterpret_cast<const char*>(a.data)) / int64(sizeof(S));
    const S* c = flat(v);
    for (unsigned k = 0; k < value_traits<T>::length; ++k) {
        sk_det_keys[slot + k] = target * sk_det_span + off + int64(k);
        sk_det_vals[slot + k] = double(c[k]);
    }
}

// (slot: the first slot of this contribution; with Seq, the launch index)
template <bool Seq, typename T>
SK_INLINE void det_put_at(const array_t<T>& a, const T* p, int64 slot, int64 target, const T& v) {
    if (Seq) {
        const int64 seq = sk_det_counts[slot];
        sk_det_counts[slot] = seq + int64(value_traits<T>::length);
        if (sk_det_offsets != nullptr) det_put(a, p, sk_det_offsets[slot] + seq, target, v);
    } else {
        det_put(a, p, slot, target, v);
    }
}

#define SK_DET_RECORD(NAME, VALUE, SEQ)                                                             \
    template <bool C, typename T, typename... I>                                                  \
    SK_INLINE void NAME(int64 slot, int64 target, const array_t<T>& a, I... idx_and_value) {       \
        det_dispatch<C, SEQ, T>(-1, slot, target, a, VALUE, idx_and_value...);                      \
    }                                                                                             \
    template <bool C, typename T, typename... I>                                                  \
    SK_INLINE void NAME##_checked(int line, int64 slot, int64 target, const array_t<T>& a, I... idx_and_value) { \
        det_dispatch<C, SEQ, T>(line, slot, target, a, VALUE, idx_and_value...);                    \
    }

struct det_add { template <typename T> SK_INLINE T operator()(const T& v) const { return v; } };
struct det_sub { template <typename T> SK_INLINE T operator()(const T& v) const { return neg_value(v); } };

template <bool C, bool Seq, typename T, typename Op, typename... I>
SK_INLINE void det_index(int line, int64 slot, int64 target, const array_t<T>& a, Op op, const T& v, I... idx) {
    if (line >= 0) {  // (debug mode: an index out of bounds reports the error and records nothing)
        const int64 ii[] = {int64(idx)...};
        if (!in_bounds(a, line, int(sizeof...(I)), ii)) return;
    }
    det_put_at<Seq>(a, address<C>(a, idx...), slot, target, op(v));
}
template <bool C, bool Seq, typename T, typename Op, typename I0>
SK_INLINE void det_dispatch(int line, int64 slot, int64 target, const array_t<T>& a, Op op, I0 i, const T& v) {
    det_index<C, Seq>(line, slot, target, a, op, v, i);
}
template <bool C, bool Seq, typename T, typename Op, typename I0, typename I1>
SK_INLINE void det_dispatch(int line, int64 slot, int64 target, const array_t<T>& a, Op op, I0 i, I1 j, const T& v) {
    det_index<C, Seq>(line, slot, target, a, op, v, i, j);
}
template <bool C, bool Seq, typename T, typename Op, typename I0, typename I1, typename I2>
SK_INLINE void det_dispatch(int line, int64 slot, int64 target, const array_t<T>& a, Op op, I0 i, I1 j, I2 k,
                            const T& v) {
    det_index<C, Seq>(line, slot, target, a, op, v, i, j, k);
}
template <bool C, bool Seq, typename T, typename Op, typename I0, typename I1, typename I2, typename I3>
SK_INLINE void det_dispatch(int line, int64 slot, int64 target, const array_t<T>& a, Op op, I0 i, I1 j, I2 k, I3 l,
                            const T& v) {
    det_index<C, Seq>(line, slot, target, a, op, v, i, j, k, l);
}

SK_DET_RECORD(det_record_add, det_add{}, false)
SK_DET_RECORD(det_record_sub, det_sub{}, false)
SK_DET_RECORD(det_record_add_seq, det_add{}, true)
SK_DET_RECORD(det_record_sub_seq, det_sub{}, true)
#undef SK_DET_RECORD
#endif

}  // namespace sk
