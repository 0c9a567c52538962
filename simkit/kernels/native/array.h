// Arrays in kernels: the descriptor, element addressing (contiguous and
// strided), load/store/view with their adjoints, and debug bounds checks.
#pragma once
#include "core.h"
#include "error.h"

namespace sk {

template <typename T>
struct array_t {
    T* data;
    T* grad;           // same layout (strides) as data, or null
    int32 shape[4];
    int64 strides[4];  // in bytes
    int32 ndim;
    int32 flags;       // SK_ARRAY_RETAIN_GRAD

    // For C++ snippets (@func_native): element i of a 1-d array, and the data pointer.
    SK_INLINE T& operator[](int64 i) const {
        return *reinterpret_cast<T*>(reinterpret_cast<char*>(data) + i * strides[0]);
    }
    SK_INLINE operator T*() const { return data; }
};

// The gradient of an array as an array of its own (adj_x in @func_native adjoint snippets).
template <typename T>
SK_INLINE array_t<T> grad_array(const array_t<T>& a) {
    array_t<T> g = a;
    g.data = a.grad;
    g.grad = nullptr;
    return g;
}

template <typename T>
SK_INLINE bool has_grad(const array_t<T>& a) { return a.grad != nullptr; }

// The array keeps its gradient through a backward pass (Warp's retain_grad). Otherwise the adjoint of a
// store takes the element's gradient and zeroes it: the value the store overwrote had no influence on
// what came after, so its gradient is zero (a copy into the array does the same, runtime/tape.py).
#define SK_ARRAY_RETAIN_GRAD 1

// The counting launch of a backward kernel's recording variant (det_grad.h) changes nothing: it consumes no
// gradient and makes no plain adds.
#if SK_CUDA && SK_DET_GRAD
SK_INLINE bool det_counting();
#else
SK_INLINE constexpr bool det_counting() { return false; }
#endif
// Does the adjoint of a store zero the gradient it takes?
template <typename T>
SK_INLINE bool grad_consumed(const array_t<T>& a) { return !(a.flags & SK_ARRAY_RETAIN_GRAD) && !det_counting(); }

// A negative index counts from the end of its axis, as in Warp (a[-1] is the last element): indices in
// [-n, n) are valid (debug mode checks them).
SK_INLINE int64 wrap_index(int64 i, int32 n) { return i < 0 ? i + n : i; }

// Byte offset of an element. C (contiguous) lets the compiler vectorize.
template <bool C, typename T>
SK_INLINE int64 offset_of(const array_t<T>& a, int64 i) {
    i = wrap_index(i, a.shape[0]);
    return C ? i * int64(sizeof(T)) : i * a.strides[0];
}
template <bool C, typename T>
SK_INLINE int64 offset_of(const array_t<T>& a, int64 i, int64 j) {
    i = wrap_index(i, a.shape[0]);
    j = wrap_index(j, a.shape[1]);
    return C ? (i * a.shape[1] + j) * int64(sizeof(T)) : i * a.strides[0] + j * a.strides[1];
}
template <bool C, typename T>
SK_INLINE int64 offset_of(const array_t<T>& a, int64 i, int64 j, int64 k) {
    i = wrap_index(i, a.shape[0]);
    j = wrap_index(j, a.shape[1]);
    k = wrap_index(k, a.shape[2]);
    return C ? ((i * a.shape[1] + j) * a.shape[2] + k) * int64(sizeof(T))
             : i * a.strides[0] + j * a.strides[1] + k * a.strides[2];
}
template <bool C, typename T>
SK_INLINE int64 offset_of(const array_t<T>& a, int64 i, int64 j, int64 k, int64 l) {
    i = wrap_index(i, a.shape[0]);
    j = wrap_index(j, a.shape[1]);
    k = wrap_index(k, a.shape[2]);
    l = wrap_index(l, a.shape[3]);
    return C ? (((i * a.shape[1] + j) * a.shape[2] + k) * a.shape[3] + l) * int64(sizeof(T))
             : i * a.strides[0] + j * a.strides[1] + k * a.strides[2] + l * a.strides[3];
}

// ---------------------------------------------------------------------------
// Bounds checks (debug mode): report the first violation, return a scratch slot.

template <typename T>
SK_INLINE T* oob_scratch() {
#if SK_CUDA
    __shared__ T dummy[1];  // discarded writes; never read back
    return dummy;
#else
    static thread_local T dummy;
    return &dummy;
#endif
}

template <typename T>
SK_INLINE bool in_bounds(const array_t<T>& a, int line, int n, const int64* idx) {
    if (a.data == nullptr) {
        report_error(SK_ERR_NULL_ARRAY, line, 0, 0, 0);
        return false;
    }
    if (n != a.ndim) {
        report_error(SK_ERR_NDIM, line, n, a.ndim, 0);
        return false;
    }
    for (int d = 0; d < n; ++d) {
        if (idx[d] < -int64(a.shape[d]) || idx[d] >= a.shape[d]) {
            report_error(SK_ERR_BOUNDS, line, d, idx[d], a.shape[d]);
            return false;
        }
    }
    return true;
}

template <bool C, typename T, typename... I>
SK_INLINE T* address(const array_t<T>& a, I... idx) {
    return reinterpret_cast<T*>(reinterpret_cast<char*>(a.data) + offset_of<C>(a, int64(idx)...));
}
template <bool C, typename T, typename... I>
SK_INLINE T* grad_address(const array_t<T>& a, I... idx) {
    return reinterpret_cast<T*>(reinterpret_cast<char*>(a.grad) + offset_of<C>(a, int64(idx)...));
}
template <bool C, typename T, typename... I>
SK_INLINE T* checked_address(int line, const array_t<T>& a, I... idx) {
    const int64 ii[] = {int64(idx)...};
    if (!in_bounds(a, line, int(sizeof...(I)), ii)) return oob_scratch<T>();
    return address<C>(a, idx...);
}

// ---------------------------------------------------------------------------
// load / store: forward and adjoint. The adjoint of an array read accumulates
// into the array's gradient (atomically: threads may read the same element).

template <typename T> SK_INLINE void atomic_accumulate(T* p, const T& v);  // atomic.h

template <bool C, typename T, typename I0>
SK_INLINE T load(const array_t<T>& a, I0 i) { return *address<C>(a, i); }
template <bool C, typename T, typename I0, typename I1>
SK_INLINE T load(const array_t<T>& a, I0 i, I1 j) { return *address<C>(a, i, j); }
template <bool C, typename T, typename I0, typename I1, typename I2>
SK_INLINE T load(const array_t<T>& a, I0 i, I1 j, I2 k) { return *address<C>(a, i, j, k); }
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>
SK_INLINE T load(const array_t<T>& a, I0 i, I1 j, I2 k, I3 l) { return *address<C>(a, i, j, k, l); }

template <bool C, typename T, typename... I>
SK_INLINE T load_checked(int line, const array_t<T>& a, I... idx) { return *checked_address<C>(line, a, idx...); }

// Gradient accumulation where other threads may add to the same element: atomic, except on a CPU
// thread that runs the whole launch alone (core.h, cpu_serial()).
template <typename T>
SK_INLINE void grad_accumulate(T* g, const T& v) {
#if !SK_CUDA
    if (cpu_serial()) {
        *g += v;
        return;
    }
#endif
    atomic_accumulate(g, v);
}

// adj_load(a, i..., adj_a, adj_i..., adj_ret): the index adjoints are ignored.
template <bool C, typename T, typename I0>
SK_INLINE void adj_load(const array_t<T>& a, I0 i, array_t<T>&, I0&, const T& adj_ret) {
    if (a.grad) grad_accumulate(grad_address<C>(a, i), adj_ret);
}
template <bool C, typename T, typename I0, typename I1>
SK_INLINE void adj_load(const array_t<T>& a, I0 i, I1 j, array_t<T>&, I0&, I1&, const T& adj_ret) {
    if (a.grad) grad_accumulate(grad_address<C>(a, i, j), adj_ret);
}
template <bool C, typename T, typename I0, typename I1, typename I2>
SK_INLINE void adj_load(const array_t<T>& a, I0 i, I1 j, I2 k, array_t<T>&, I0&, I1&, I2&, const T& adj_ret) {
    if (a.grad) grad_accumulate(grad_address<C>(a, i, j, k), adj_ret);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>
SK_INLINE void adj_load(const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, array_t<T>&, I0&, I1&, I2&, I3&,
                        const T& adj_ret) {
    if (a.grad) grad_accumulate(grad_address<C>(a, i, j, k, l), adj_ret);
}

template <bool C, typename T, typename I0>
SK_INLINE void store(const array_t<T>& a, I0 i, const T& v) { *address<C>(a, i) = v; }
template <bool C, typename T, typename I0, typename I1>
SK_INLINE void store(const array_t<T>& a, I0 i, I1 j, const T& v) { *address<C>(a, i, j) = v; }
template <bool C, typename T, typename I0, typename I1, typename I2>
SK_INLINE void store(const array_t<T>& a, I0 i, I1 j, I2 k, const T& v) { *address<C>(a, i, j, k) = v; }
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>
SK_INLINE void store(const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, const T& v) { *address<C>(a, i, j, k, l) = v; }

template <bool C, typename T, typename I0>
SK_INLINE void store_checked(int line, const array_t<T>& a, I0 i, const T& v) { *checked_address<C>(line, a, i) = v; }
template <bool C, typename T, typename I0, typename I1>
SK_INLINE void store_checked(int line, const array_t<T>& a, I0 i, I1 j, const T& v) {
    *checked_address<C>(line, a, i, j) = v;
}
template <bool C, typename T, typename I0, typename I1, typename I2>
SK_INLINE void store_checked(int line, const array_t<T>& a, I0 i, I1 j, I2 k, const T& v) {
    *checked_address<C>(line, a, i, j, k) = v;
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>
SK_INLINE void store_checked(int line, const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, const T& v) {
    *checked_address<C>(line, a, i, j, k, l) = v;
}

// adj_store: the stored value's adjoint is the output array's gradient at that element, which the
// store then consumes (zeroes; see SK_ARRAY_RETAIN_GRAD).
template <typename T>
SK_INLINE void take_grad(const array_t<T>& a, T* g, T& adj_v) {
    adj_v += *g;
    if (grad_consumed(a)) *g = zero<T>();
}
template <bool C, typename T, typename I0>
SK_INLINE void adj_store(const array_t<T>& a, I0 i, const T&, array_t<T>&, I0&, T& adj_v) {
    if (a.grad) take_grad(a, grad_address<C>(a, i), adj_v);
}
template <bool C, typename T, typename I0, typename I1>
SK_INLINE void adj_store(const array_t<T>& a, I0 i, I1 j, const T&, array_t<T>&, I0&, I1&, T& adj_v) {
    if (a.grad) take_grad(a, grad_address<C>(a, i, j), adj_v);
}
template <bool C, typename T, typename I0, typename I1, typename I2>
SK_INLINE void adj_store(const array_t<T>& a, I0 i, I1 j, I2 k, const T&, array_t<T>&, I0&, I1&, I2&, T& adj_v) {
    if (a.grad) take_grad(a, grad_address<C>(a, i, j, k), adj_v);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>
SK_INLINE void adj_store(const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, const T&, array_t<T>&, I0&, I1&, I2&,
                         I3&, T& adj_v) {
    if (a.grad) take_grad(a, grad_address<C>(a, i, j, k, l), adj_v);
}

// store_component(a, i..., comp, v): set component `comp` (flat index) of element a[i...] to v,
// without reading the element. Adjoint: v's adjoint is that component of the element's gradient.
template <bool C, typename T, typename S, typename K, typename... I>
SK_INLINE void store_component_at(const array_t<T>& a, K comp, S v, I... idx) {
    flat(*address<C>(a, idx...))[comp] = v;
}
template <bool C, typename T, typename S, typename K, typename... I>
SK_INLINE void store_component_checked_at(int line, const array_t<T>& a, K comp, S v, I... idx) {
    if (comp < 0 || int64(comp) >= int64(value_traits<T>::length)) {
        report_error(SK_ERR_BOUNDS, line, -1, int64(comp), value_traits<T>::length);
        return;
    }
    flat(*checked_address<C>(line, a, idx...))[comp] = v;
}
template <bool C, typename T, typename S, typename K, typename... I>
SK_INLINE void adj_store_component_at(const array_t<T>& a, K comp, S& adj_v, I... idx) {
    if (a.grad) {
        auto& g = flat(*grad_address<C>(a, idx...))[comp];
        adj_v += g;
        if (grad_consumed(a)) g = zero<S>();
    }
}

template <bool C, typename T, typename I0, typename K, typename S>
SK_INLINE void store_component(const array_t<T>& a, I0 i, K comp, S v) { store_component_at<C>(a, comp, v, i); }
template <bool C, typename T, typename I0, typename I1, typename K, typename S>
SK_INLINE void store_component(const array_t<T>& a, I0 i, I1 j, K comp, S v) { store_component_at<C>(a, comp, v, i, j); }
template <bool C, typename T, typename I0, typename I1, typename I2, typename K, typename S>
SK_INLINE void store_component(const array_t<T>& a, I0 i, I1 j, I2 k, K comp, S v) {
    store_component_at<C>(a, comp, v, i, j, k);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3, typename K, typename S>
SK_INLINE void store_component(const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, K comp, S v) {
    store_component_at<C>(a, comp, v, i, j, k, l);
}
template <bool C, typename T, typename I0, typename K, typename S>
SK_INLINE void store_component_checked(int line, const array_t<T>& a, I0 i, K comp, S v) {
    store_component_checked_at<C>(line, a, comp, v, i);
}
template <bool C, typename T, typename I0, typename I1, typename K, typename S>
SK_INLINE void store_component_checked(int line, const array_t<T>& a, I0 i, I1 j, K comp, S v) {
    store_component_checked_at<C>(line, a, comp, v, i, j);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename K, typename S>
SK_INLINE void store_component_checked(int line, const array_t<T>& a, I0 i, I1 j, I2 k, K comp, S v) {
    store_component_checked_at<C>(line, a, comp, v, i, j, k);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3, typename K, typename S>
SK_INLINE void store_component_checked(int line, const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, K comp, S v) {
    store_component_checked_at<C>(line, a, comp, v, i, j, k, l);
}
template <bool C, typename T, typename I0, typename K, typename S>
SK_INLINE void adj_store_component(const array_t<T>& a, I0 i, K comp, S, array_t<T>&, I0&, K&, S& adj_v) {
    adj_store_component_at<C>(a, comp, adj_v, i);
}
template <bool C, typename T, typename I0, typename I1, typename K, typename S>
SK_INLINE void adj_store_component(const array_t<T>& a, I0 i, I1 j, K comp, S, array_t<T>&, I0&, I1&, K&,
                                   S& adj_v) {
    adj_store_component_at<C>(a, comp, adj_v, i, j);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename K, typename S>
SK_INLINE void adj_store_component(const array_t<T>& a, I0 i, I1 j, I2 k, K comp, S, array_t<T>&, I0&, I1&, I2&,
                                   K&, S& adj_v) {
    adj_store_component_at<C>(a, comp, adj_v, i, j, k);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3, typename K, typename S>
SK_INLINE void adj_store_component(const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, K comp, S, array_t<T>&, I0&, I1&,
                                   I2&, I3&, K&, S& adj_v) {
    adj_store_component_at<C>(a, comp, adj_v, i, j, k, l);
}

// adj_load_unique: the index is the thread's own launch index, so no other thread touches this
// gradient element and a plain add replaces the atomic one (the codegen proves this statically;
// `unique` is false when the launch's shape does not match the indices, e.g. i = tid() in 2D).
template <typename T>
SK_INLINE void accumulate_grad(bool unique, T* g, const T& v) {
    if (unique) {
        if (!det_counting()) *g += v;
    } else
        atomic_accumulate(g, v);
}
template <bool C, typename T, typename I0>
SK_INLINE void adj_load_unique(bool unique, const array_t<T>& a, I0 i, array_t<T>&, I0&, const T& adj_ret) {
    if (a.grad) accumulate_grad(unique, grad_address<C>(a, i), adj_ret);
}
template <bool C, typename T, typename I0, typename I1>
SK_INLINE void adj_load_unique(bool unique, const array_t<T>& a, I0 i, I1 j, array_t<T>&, I0&, I1&,
                               const T& adj_ret) {
    if (a.grad) accumulate_grad(unique, grad_address<C>(a, i, j), adj_ret);
}
template <bool C, typename T, typename I0, typename I1, typename I2>
SK_INLINE void adj_load_unique(bool unique, const array_t<T>& a, I0 i, I1 j, I2 k, array_t<T>&, I0&, I1&, I2&,
                               const T& adj_ret) {
    if (a.grad) accumulate_grad(unique, grad_address<C>(a, i, j, k), adj_ret);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>
SK_INLINE void adj_load_unique(bool unique, const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, array_t<T>&, I0&, I1&,
                               I2&, I3&, const T& adj_ret) {
    if (a.grad) accumulate_grad(unique, grad_address<C>(a, i, j, k, l), adj_ret);
}

// ---------------------------------------------------------------------------
// view: a[i] on an n-D array is the (n-1)-D sub-array (shares memory and grad).

template <typename T>
SK_INLINE array_t<T> view_impl(const array_t<T>& a, int64 off, int drop) {
    array_t<T> r;
    r.data = reinterpret_cast<T*>(reinterpret_cast<char*>(a.data) + off);
    r.grad = a.grad ? reinterpret_cast<T*>(reinterpret_cast<char*>(a.grad) + off) : nullptr;
    r.ndim = a.ndim - drop;
    r.flags = a.flags;
    for (int d = 0; d < 4; ++d) {
        r.shape[d] = d + drop < 4 ? a.shape[d + drop] : 0;
        r.strides[d] = d + drop < 4 ? a.strides[d + drop] : 0;
    }
    return r;
}
template <bool C, typename T, typename I0>
SK_INLINE array_t<T> view(const array_t<T>& a, I0 i) {
    return view_impl(a, wrap_index(i, a.shape[0]) * a.strides[0], 1);
}
template <bool C, typename T, typename I0, typename I1>
SK_INLINE array_t<T> view(const array_t<T>& a, I0 i, I1 j) {
    return view_impl(a, wrap_index(i, a.shape[0]) * a.strides[0] + wrap_index(j, a.shape[1]) * a.strides[1], 2);
}
template <bool C, typename T, typename I0, typename I1, typename I2>
SK_INLINE array_t<T> view(const array_t<T>& a, I0 i, I1 j, I2 k) {
    return view_impl(a, wrap_index(i, a.shape[0]) * a.strides[0] + wrap_index(j, a.shape[1]) * a.strides[1] +
                            wrap_index(k, a.shape[2]) * a.strides[2], 3);
}
template <bool C, typename T, typename... I>
SK_INLINE array_t<T> view_checked(int line, const array_t<T>& a, I... idx) {
    const int64 ii[] = {int64(idx)...};
    const int n = int(sizeof...(I));
    for (int d = 0; d < n; ++d)
        if (ii[d] < -int64(a.shape[d]) || ii[d] >= a.shape[d]) {
            report_error(SK_ERR_BOUNDS, line, d, ii[d], a.shape[d]);
            array_t<T> empty = a;
            empty.ndim = a.ndim - n;
            for (int e = 0; e < 4; ++e) empty.shape[e] = 0;
            return empty;
        }
    return view<C>(a, idx...);
}
// Views carry gradients through the shared grad pointer: nothing to do.
template <bool C, typename... Args>
SK_INLINE void adj_view(Args&&...) {}

// ---------------------------------------------------------------------------
// Indexed arrays (Warp's indexedarray): data seen through an index array on some axes. Kernels load,
// store and add atomically through `data` at the mapped indices (the frontend maps them).

template <typename T>
struct indexedarray_t {
    array_t<T> data;      // the indexed array, its gradient included
    int32* indices[4];    // per axis: the index array into data's axis, or null (the axis as it is)
    int32 shape[4];       // the indexed array's shape
};

template <typename T>
SK_INLINE int32 indexed_index(const indexedarray_t<T>& a, int32 axis, int32 i) {
    i = int32(wrap_index(i, a.shape[axis]));  // (from the end, as for arrays)
    return a.indices[axis] ? a.indices[axis][i] : i;
}
template <typename T>
SK_INLINE int32 indexed_index_checked(int line, const indexedarray_t<T>& a, int32 axis, int32 i) {
    if (i < -a.shape[axis] || i >= a.shape[axis]) {
        report_error(SK_ERR_BOUNDS, line, axis, i, a.shape[axis]);
        return 0;
    }
    return indexed_index(a, axis, i);
}
// a[i] of an n-D indexed array: the (n-1)-D indexed array of data's sub-array at the mapped index.
template <typename T, typename... I>
SK_INLINE indexedarray_t<T> indexed_view(const indexedarray_t<T>& a, I... idx) {
    const int32 ii[] = {int32(idx)...};
    const int n = int(sizeof...(I));
    int64 off = 0;
    for (int d = 0; d < n; ++d) off += int64(indexed_index(a, d, ii[d])) * a.data.strides[d];
    indexedarray_t<T> r;
    r.data = view_impl(a.data, off, n);
    for (int d = 0; d < 4; ++d) {
        r.indices[d] = d + n < 4 ? a.indices[d + n] : nullptr;
        r.shape[d] = d + n < 4 ? a.shape[d + n] : 0;
    }
    return r;
}
template <typename T, typename... I>
SK_INLINE indexedarray_t<T> indexed_view_checked(int line, const indexedarray_t<T>& a, I... idx) {
    const int32 ii[] = {int32(idx)...};
    for (int d = 0; d < int(sizeof...(I)); ++d)
        if (ii[d] < -a.shape[d] || ii[d] >= a.shape[d]) {
            report_error(SK_ERR_BOUNDS, line, d, ii[d], a.shape[d]);
            indexedarray_t<T> empty = indexed_view(a, (idx * 0)...);
            for (int e = 0; e < 4; ++e) empty.shape[e] = 0;
            return empty;
        }
    return indexed_view(a, idx...);
}
// Views carry gradients through the shared grad pointer: nothing to do.
template <typename... Args>
SK_INLINE void adj_indexed_view(Args&&...) {}
template <typename T>
SK_INLINE bool array_nonnull(const indexedarray_t<T>& a) { return a.data.data != nullptr; }
template <typename T>
SK_INLINE void accum(indexedarray_t<T>&, const indexedarray_t<T>&) {}

// ---------------------------------------------------------------------------
// array_slice: a[1:3, 0], a[::-2] as numpy takes them (bounds clamped, negative indices from the end).
// code: 2 bits per given axis (1 an index, 2 a slice); vals: start, stop, step per given axis.

#define SK_SLICE_NONE (-2147483647 - 1)

SK_INLINE int32 slice_bound(int32 v, int32 n, int32 step, bool is_start) {
    if (v == SK_SLICE_NONE) return is_start ? (step < 0 ? n - 1 : 0) : (step < 0 ? -1 : n);
    if (v < 0) {
        v += n;
        if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= n) {
        v = step < 0 ? n - 1 : n;
    }
    return v;
}

template <typename T, typename... V>
SK_INLINE array_t<T> array_slice(int line, const array_t<T>& a, int32 code, V... v) {
    const int32 vals[] = {int32(v)...};
    const int given = int(sizeof...(V)) / 3;
    array_t<T> r;
    int64 off = 0;
    int nd = 0;
    for (int d = 0; d < a.ndim; ++d) {
        const int kind = d < given ? (code >> (2 * d)) & 3 : 2;
        const int32 n = a.shape[d];
        if (kind == 1) {
            int32 i = vals[3 * d] < 0 ? vals[3 * d] + n : vals[3 * d];
            if (i < 0 || i >= n) {
                report_error(SK_ERR_BOUNDS, line, d, vals[3 * d], n);
                i = 0;
            }
            off += int64(i) * a.strides[d];
            continue;
        }
        int32 step = d < given ? vals[3 * d + 2] : 1;
        if (step == 0) {
            report_error(SK_ERR_SLICE_STEP, line, d, 0, 0);
            step = 1;
        }
        const int32 start = slice_bound(d < given ? vals[3 * d] : SK_SLICE_NONE, n, step, true);
        const int32 stop = slice_bound(d < given ? vals[3 * d + 1] : SK_SLICE_NONE, n, step, false);
        int32 len = 0;
        if (step > 0 && start < stop) len = (stop - start - 1) / step + 1;
        if (step < 0 && stop < start) len = (start - stop - 1) / (-step) + 1;
        if (len > 0) off += int64(start) * a.strides[d];
        r.shape[nd] = len;
        r.strides[nd] = a.strides[d] * step;
        ++nd;
    }
    for (int d = nd; d < 4; ++d) {
        r.shape[d] = 0;
        r.strides[d] = 0;
    }
    r.ndim = nd;
    r.flags = a.flags;
    r.data = a.data ? reinterpret_cast<T*>(reinterpret_cast<char*>(a.data) + off) : nullptr;
    r.grad = a.grad ? reinterpret_cast<T*>(reinterpret_cast<char*>(a.grad) + off) : nullptr;
    return r;
}

// A slice carries gradients through the shared grad pointer: nothing to do.
template <typename... Args>
SK_INLINE void adj_array_slice(Args&&...) {}

template <typename T>
SK_INLINE bool array_nonnull(const array_t<T>& a) { return a.data != nullptr; }

// a.ptr, and array(ptr=p, shape=(...), dtype=T) in kernels: a contiguous array over p, without gradient
template <typename T>
SK_INLINE uint64 array_ptr(const array_t<T>& a) { return uint64(reinterpret_cast<size_t>(a.data)); }
template <typename A> struct array_elem;
template <typename T> struct array_elem<array_t<T>> { typedef T type; };
template <typename A, typename... I>
SK_INLINE A array_from_ptr(uint64 p, I... dims) {
    typedef typename array_elem<A>::type T;
    const int64 d[] = {int64(dims)...};
    const int n = int(sizeof...(I));
    A a = {};
    a.data = reinterpret_cast<T*>(size_t(p));
    a.grad = nullptr;
    a.ndim = n;
    int64 stride = int64(sizeof(T));
    for (int k = 3; k >= 0; --k) {
        a.shape[k] = k < n ? int32(d[k]) : 0;
        a.strides[k] = k < n ? stride : 0;
        if (k < n) stride *= d[k];
    }
    return a;
}

template <typename T, typename I>
SK_INLINE int32 array_shape(const array_t<T>& a, I d) { return (d >= 0 && d < a.ndim) ? a.shape[d] : 0; }
template <typename T, typename I>
SK_INLINE int32 array_shape(const indexedarray_t<T>& a, I d) { return (d >= 0 && d < 4) ? a.shape[d] : 0; }

// lower_bound: the first index in [lo, hi) of a sorted 1D array whose element is not less than
// value; as in Warp, the search never passes hi - 1 (a value above every element gives hi - 1, an
// empty range lo). Binary search, its loads bounds-checked in debug mode
template <bool C, bool CHECKED, typename T, typename V>
SK_INLINE int32 lower_bound_in(int line, const array_t<T>& a, int32 l, int32 h, V value) {
    h -= 1;
    while (l < h) {
        const int32 mid = l + (h - l) / 2;
        const T e = CHECKED ? load_checked<C>(line, a, mid) : load<C>(a, mid);
        if (e < T(value)) l = mid + 1; else h = mid;
    }
    return l;
}
template <bool C, typename T, typename I, typename V>
SK_INLINE int32 lower_bound(const array_t<T>& a, I lo, I hi, V value) {
    return lower_bound_in<C, false>(0, a, int32(lo), int32(hi), value);
}
template <bool C, typename T, typename V>
SK_INLINE int32 lower_bound(const array_t<T>& a, V value) { return lower_bound_in<C, false>(0, a, 0, a.shape[0], value); }
template <bool C, typename T, typename I, typename V>
SK_INLINE int32 lower_bound_checked(int line, const array_t<T>& a, I lo, I hi, V value) {
    return lower_bound_in<C, true>(line, a, int32(lo), int32(hi), value);
}
template <bool C, typename T, typename V>
SK_INLINE int32 lower_bound_checked(int, const array_t<T>& a, V value) {   // (the whole array: in bounds)
    return lower_bound_in<C, false>(0, a, 0, a.shape[0], value);
}

}  // namespace sk
