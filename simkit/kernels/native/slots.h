// Slot writes: a part of an array element written in place, without reading the element.
//
// A slot is what an assignment target such as arr[i].x, arr[i][r, c], arr[i][r] (a matrix row),
// arr[i].p (a transform's translation) or arr[i].body.vel.y (a field of a struct element, any depth)
// names: a value of type V at byte offset
//     OFF + (index<N1>(k1) * N2 + index<N2>(k2)) * sizeof(V)
// of the element. k1 and k2 are runtime indices into the innermost vector/matrix/quaternion/transform
// (N1 x N2 parts of type V; N1 = N2 = 1 and k1 = k2 = 0 when every index is a constant, folded into OFF).
// Negative indices count from the end, as for local values; an out-of-range index drops the write
// (debug mode: an IndexError at the source line).
//
// store_slot: the store. Its adjoint: the value's adjoint is the slot of the element's gradient, which
// the store then consumes (zeroes, unless the array retains its gradient), as adj_store for elements.
// atomic_slot: an atomic add / sub / and / or / xor of the slot (OP as field_atomic in atomic.h), one
// atomic per scalar of V: threads updating different parts of one element never race. Its adjoint (add,
// sub): the value's adjoint is that slot of the element's gradient (negated for sub).
#pragma once

#include "array.h"
#include "atomic.h"
#include "core.h"
#include "error.h"
#include "vec.h"

namespace sk {

template <int OFF, int N1, int N2, typename V, typename T>
SK_INLINE V* slot_at(T* elem, int k1, int k2) {
    return reinterpret_cast<V*>(reinterpret_cast<char*>(elem) + OFF) + (k1 * N2 + k2);
}
// The slot's (k1, k2), wrapped; false when one is out of range.
template <int N1, int N2, typename K1, typename K2> SK_INLINE bool slot_index(K1 i1, K2 i2, int& k1, int& k2) {
    k1 = vmd::index<N1>(i1);
    k2 = vmd::index<N2>(i2);
    return k1 >= 0 && k2 >= 0;
}
template <int N1, int N2, typename K1, typename K2>
SK_INLINE bool slot_index_checked(int line, K1 i1, K2 i2, int& k1, int& k2) {
    k1 = vmd::index_checked<N1>(line, i1);
    k2 = k1 < 0 ? -1 : vmd::index_checked<N2>(line, i2, 1);
    return k1 >= 0 && k2 >= 0;
}

template <int OFF, int N1, int N2, typename T, typename V>
SK_INLINE void adj_store_slot_at(const array_t<T>& a, T* g_elem, int k1, int k2, V& adj_v) {
    V& g = *slot_at<OFF, N1, N2, V>(g_elem, k1, k2);
    adj_v += g;
    if (grad_consumed(a)) g = zero<V>();
}
template <int OP, int OFF, int N1, int N2, typename T, typename V>
SK_INLINE void adj_atomic_slot_at(const T* g_elem, int k1, int k2, V& adj_v) {
    adj_accumulate(adj_v, *slot_at<OFF, N1, N2, V>(const_cast<T*>(g_elem), k1, k2), OP == 1 ? -1.0f : 1.0f);
}

// One set of overloads per array dimension (1 to 4): the element's indices, then k1, k2, the value.
#define SK_SLOT_OVERLOADS(TPARAMS, PARAMS, ARGS, ADJ_PARAMS)                                                 \
    template <bool C, int OFF, int N1, int N2, typename T, TPARAMS, typename K1, typename K2, typename V>       \
    SK_INLINE void store_slot(const array_t<T>& a, PARAMS, K1 i1, K2 i2, const V& v) {                         \
        int k1, k2;                                                                                            \
        if (slot_index<N1, N2>(i1, i2, k1, k2)) *slot_at<OFF, N1, N2, V>(address<C>(a, ARGS), k1, k2) = v;     \
    }                                                                                                          \
    template <bool C, int OFF, int N1, int N2, typename T, TPARAMS, typename K1, typename K2, typename V>       \
    SK_INLINE void store_slot_checked(int line, const array_t<T>& a, PARAMS, K1 i1, K2 i2, const V& v) {       \
        int k1, k2;                                                                                            \
        T* e = checked_address<C>(line, a, ARGS);                                                              \
        if (slot_index_checked<N1, N2>(line, i1, i2, k1, k2)) *slot_at<OFF, N1, N2, V>(e, k1, k2) = v;         \
    }                                                                                                          \
    template <bool C, int OFF, int N1, int N2, typename T, TPARAMS, typename K1, typename K2, typename V>       \
    SK_INLINE void adj_store_slot(const array_t<T>& a, PARAMS, K1 i1, K2 i2, const V&, array_t<T>&,            \
                                  ADJ_PARAMS, K1&, K2&, V& adj_v) {                                            \
        int k1, k2;                                                                                            \
        if (a.grad && slot_index<N1, N2>(i1, i2, k1, k2))                                                      \
            adj_store_slot_at<OFF, N1, N2>(a, grad_address<C>(a, ARGS), k1, k2, adj_v);                      \
    }                                                                                                          \
    template <bool C, int OP, int OFF, int N1, int N2, typename T, TPARAMS, typename K1, typename K2,          \
              typename V>                                                                                      \
    SK_INLINE V atomic_slot(const array_t<T>& a, PARAMS, K1 i1, K2 i2, const V& v) {                           \
        int k1, k2;                                                                                            \
        if (!slot_index<N1, N2>(i1, i2, k1, k2)) return zero<V>();                                             \
        return field_atomic<OP>::run(slot_at<OFF, N1, N2, V>(address<C>(a, ARGS), k1, k2), v);                \
    }                                                                                                          \
    template <bool C, int OP, int OFF, int N1, int N2, typename T, TPARAMS, typename K1, typename K2,          \
              typename V>                                                                                      \
    SK_INLINE V atomic_slot_checked(int line, const array_t<T>& a, PARAMS, K1 i1, K2 i2, const V& v) {         \
        int k1, k2;                                                                                            \
        T* e = checked_address<C>(line, a, ARGS);                                                              \
        if (!slot_index_checked<N1, N2>(line, i1, i2, k1, k2)) return zero<V>();                               \
        return field_atomic<OP>::run(slot_at<OFF, N1, N2, V>(e, k1, k2), v);                                   \
    }                                                                                                          \
    template <bool C, int OP, int OFF, int N1, int N2, typename T, TPARAMS, typename K1, typename K2,          \
              typename V>                                                                                      \
    SK_INLINE void adj_atomic_slot(const array_t<T>& a, PARAMS, K1 i1, K2 i2, const V&, array_t<T>&,           \
                                   ADJ_PARAMS, K1&, K2&, V& adj_v, const V&) {                                 \
        int k1, k2;                                                                                            \
        if (a.grad && slot_index<N1, N2>(i1, i2, k1, k2))                                                      \
            adj_atomic_slot_at<OP, OFF, N1, N2>(grad_address<C>(a, ARGS), k1, k2, adj_v);                     \
    }

#define SK_COMMA ,
SK_SLOT_OVERLOADS(typename I0, I0 i, i, I0&)
SK_SLOT_OVERLOADS(typename I0 SK_COMMA typename I1, I0 i SK_COMMA I1 j, i SK_COMMA j, I0& SK_COMMA I1&)
SK_SLOT_OVERLOADS(typename I0 SK_COMMA typename I1 SK_COMMA typename I2, I0 i SK_COMMA I1 j SK_COMMA I2 k,
                  i SK_COMMA j SK_COMMA k, I0& SK_COMMA I1& SK_COMMA I2&)
SK_SLOT_OVERLOADS(typename I0 SK_COMMA typename I1 SK_COMMA typename I2 SK_COMMA typename I3,
                  I0 i SK_COMMA I1 j SK_COMMA I2 k SK_COMMA I3 l, i SK_COMMA j SK_COMMA k SK_COMMA l,
                  I0& SK_COMMA I1& SK_COMMA I2& SK_COMMA I3&)
#undef SK_COMMA
#undef SK_SLOT_OVERLOADS

}  // namespace sk
