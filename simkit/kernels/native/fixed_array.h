// Fixed-size arrays in a thread's own memory: ``zeros(shape=(2, 3), dtype=float)`` in a kernel.
//
// fixed_array_t is an array_t (the descriptor every array builtin takes: loads, stores, views, slices,
// atomics and their adjoints) followed by the elements themselves, so a view of it or a func parameter
// that receives it is an ordinary array_t pointing into this storage. Copies copy the elements (a
// descriptor always points at its own storage). G: gradient storage beside the elements, for adjoint
// code; there the descriptor's grad points at it, and the array builtins' adjoints accumulate into it as
// into any array's gradient.
#pragma once
#include "core.h"
#include "array.h"

namespace sk {

template <typename T, int N, bool G> struct fixed_grad_storage {
    SK_INLINE T* ptr() { return nullptr; }
    SK_INLINE void clear() {}
};
template <typename T, int N> struct fixed_grad_storage<T, N, true> {
    T items[N];
    SK_INLINE T* ptr() { return items; }
    SK_INLINE void clear() { for (int n = 0; n < N; ++n) items[n] = zero<T>(); }
};

template <typename T, bool G, int NDIM, int D0, int D1, int D2, int D3>
struct fixed_array_t : array_t<T> {
    static const int N = D0 * D1 * D2 * D3;  // (the dimensions past NDIM are 1)
    T items[N];
    fixed_grad_storage<T, N, G> grads;

    SK_INLINE void bind() {
        const int32 dims[4] = {D0, D1, D2, D3};
        this->data = items;
        this->grad = grads.ptr();
        this->ndim = NDIM;
        this->flags = 0;
        int64 stride = int64(sizeof(T));
        for (int d = 3; d >= 0; --d) {
            this->shape[d] = d < NDIM ? dims[d] : 0;
            this->strides[d] = d < NDIM ? stride : 0;
            if (d < NDIM) stride *= dims[d];
        }
        grads.clear();
    }
    // declared uninitialised (``empty``); ``zeros`` assigns fixed_zeros()
    SK_INLINE fixed_array_t() { bind(); }
    SK_INLINE fixed_array_t(const fixed_array_t& o) { bind(); copy_items(o.items); }
    template <bool G2>
    SK_INLINE fixed_array_t(const fixed_array_t<T, G2, NDIM, D0, D1, D2, D3>& o) { bind(); copy_items(o.items); }
    // a view of a whole fixed array (a func returning one it received): its elements
    SK_INLINE fixed_array_t(const array_t<T>& v) {
        bind();
        for (int n = 0; n < N; ++n) items[n] = v.data ? v.data[n] : zero<T>();
    }
    SK_INLINE fixed_array_t& operator=(const fixed_array_t& o) {
        copy_items(o.items);
        return *this;
    }
    template <bool G2>
    SK_INLINE fixed_array_t& operator=(const fixed_array_t<T, G2, NDIM, D0, D1, D2, D3>& o) {
        copy_items(o.items);
        return *this;
    }
    SK_INLINE void copy_items(const T* src) {
        if (src != items)
            for (int n = 0; n < N; ++n) items[n] = src[n];
    }
    SK_INLINE void fill_zero() { for (int n = 0; n < N; ++n) items[n] = zero<T>(); }
    SK_INLINE void clear_grad() { grads.clear(); }
};

// zeros(shape=..., dtype=...) / empty(...) in a kernel
template <typename A> SK_INLINE A fixed_zeros() {
    A a;
    a.fill_zero();
    return a;
}
template <typename A> SK_INLINE A fixed_empty() { return A(); }

// The adjoint of (re)creating a fixed array: what came before it had no influence on its elements.
template <typename A> SK_INLINE void fixed_clear_grad(A& a) { a.clear_grad(); }

// A func returning a fixed array: its adjoint adds the caller's gradient of the result (``from``, the
// caller's array, whose grad is the caller's storage) into the gradient of the array it returned.
template <typename A, typename T>
SK_INLINE void fixed_accum_grad(A& a, const array_t<T>& from) {
    if (a.grad && from.grad)
        for (int n = 0; n < A::N; ++n) a.grad[n] += from.grad[n];
}

}  // namespace sk
