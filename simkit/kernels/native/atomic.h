// Atomics on array elements: real hardware atomics on CPU (__atomic builtins,
// compare-and-swap loops for floating point) and CUDA (atomicAdd/atomicCAS).
// Vector/matrix element types are updated component by component.
#pragma once
#include "core.h"
#include "array.h"

namespace sk {

// ---------------------------------------------------------------------------
// Compare-and-swap on the bit pattern of a 2/4/8-byte scalar.
template <typename T> struct bits_of;
template <> struct bits_of<bool_t> { typedef uint8 type; };
template <> struct bits_of<half> { typedef uint16 type; };
template <> struct bits_of<bfloat16> { typedef uint16 type; };
template <> struct bits_of<float> { typedef uint32 type; };
template <> struct bits_of<double> { typedef uint64 type; };
template <> struct bits_of<int8> { typedef uint8 type; };
template <> struct bits_of<uint8> { typedef uint8 type; };
template <> struct bits_of<int16> { typedef uint16 type; };
template <> struct bits_of<uint16> { typedef uint16 type; };
template <> struct bits_of<int32> { typedef uint32 type; };
template <> struct bits_of<uint32> { typedef uint32 type; };
template <> struct bits_of<int64> { typedef uint64 type; };
template <> struct bits_of<uint64> { typedef uint64 type; };

#if SK_CUDA
// A thread's own memory (a fixed-size array made in a kernel: fixed_array.h) takes no atomics (they are
// undefined on the local state space); no other thread sees it, so a plain read-modify-write does.
#define SK_LOCAL_CAS(p, cmp, val)                                \
    if (__isLocal(p)) {                                         \
        const auto _old = *(p);                                 \
        if (_old == (cmp)) *(p) = (val);                        \
        return _old;                                            \
    }
#define SK_LOCAL_ADD(T, p, v)                                   \
    if (__isLocal(p)) {                                         \
        const T _old = *(p);                                    \
        *(p) = T(_old + (v));                                   \
        return _old;                                            \
    }
SK_INLINE uint16 cas_bits(uint16* p, uint16 cmp, uint16 val) {
    SK_LOCAL_CAS(p, cmp, val)
    return atomicCAS(reinterpret_cast<unsigned short int*>(p), (unsigned short int)cmp, (unsigned short int)val);
}
SK_INLINE uint32 cas_bits(uint32* p, uint32 cmp, uint32 val) {
    SK_LOCAL_CAS(p, cmp, val)
    return atomicCAS(p, cmp, val);
}
SK_INLINE uint64 cas_bits(uint64* p, uint64 cmp, uint64 val) {
    SK_LOCAL_CAS(p, cmp, val)
    return atomicCAS(reinterpret_cast<unsigned long long*>(p), (unsigned long long)cmp, (unsigned long long)val);
}
SK_INLINE uint8 cas_bits(uint8* p, uint8 cmp, uint8 val) {
    SK_LOCAL_CAS(p, cmp, val)
    // emulate with a CAS on the aligned 32-bit word holding the byte
    uint32* word = reinterpret_cast<uint32*>(reinterpret_cast<size_t>(p) & ~size_t(3));
    uint32 shift = uint32(reinterpret_cast<size_t>(p) & 3) * 8;
    uint32 old = *word, assumed;
    do {
        assumed = old;
        if (uint8((assumed >> shift) & 0xff) != cmp) return uint8((assumed >> shift) & 0xff);
        uint32 repl = (assumed & ~(0xffu << shift)) | (uint32(val) << shift);
        old = atomicCAS(word, assumed, repl);
    } while (old != assumed);
    return cmp;
}
#else
// A CPU thread that runs a whole launch alone (core.h, cpu_serial: small launches, deterministic mode) has no
// other thread to race with: plain loads and stores, which cost a fraction of a locked instruction.
template <typename B>
SK_INLINE B cas_bits(B* p, B cmp, B val) {
    if (cpu_serial()) {
        const B old = *p;
        if (old == cmp) *p = val;
        return old;
    }
    __atomic_compare_exchange_n(p, &cmp, val, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return cmp;  // holds the previous value either way
}
#endif

template <typename T, typename F>
SK_INLINE T atomic_update(T* p, F f) {
#if !SK_CUDA
    if (cpu_serial()) {
        const T old = *p;
        *p = f(old);
        return old;
    }
#endif
    typedef typename bits_of<T>::type B;
    B* pb = reinterpret_cast<B*>(p);
    B old = *reinterpret_cast<volatile B*>(pb);
    while (true) {
        T oldv;
        memcpy(&oldv, &old, sizeof(T));
        T newv = f(oldv);
        B newb;
        memcpy(&newb, &newv, sizeof(T));
        B prev = cas_bits(pb, old, newb);
        if (prev == old) return oldv;
        old = prev;
    }
}

template <typename T> struct add_op { T v; SK_INLINE T operator()(T a) const { return T(a + v); } };
// min/max take a NaN as missing (as min() and max() do, and numpy's fmin/fmax): a NaN in the array is
// replaced, a NaN value leaves the array as it is.
template <typename T> struct min_op { T v; SK_INLINE T operator()(T a) const { return (v < a || a != a) ? v : a; } };
template <typename T> struct max_op { T v; SK_INLINE T operator()(T a) const { return (v > a || a != a) ? v : a; } };
template <typename T> struct exch_op { T v; SK_INLINE T operator()(T) const { return v; } };

// Scalar atomics ------------------------------------------------------------
template <typename T> SK_INLINE T atomic_add_scalar(T* p, T v) {
#if SK_CUDA
    return atomic_update(p, add_op<T>{v});
#else
    if (cpu_serial()) {
        const T old = *p;
        *p = T(old + v);
        return old;
    }
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
#endif
}
#if SK_CUDA
// T: the element type, H: the type CUDA's atomicAdd takes for it
#define SK_CUDA_ATOMIC_ADD(T, H)                                                  \
    template <> SK_INLINE T atomic_add_scalar(T* p, T v) {                        \
        SK_LOCAL_ADD(T, p, v)                                                     \
        return T(atomicAdd(reinterpret_cast<H*>(p), (H)(v)));                     \
    }
SK_CUDA_ATOMIC_ADD(float, float)
SK_CUDA_ATOMIC_ADD(double, double)
SK_CUDA_ATOMIC_ADD(int32, int)
SK_CUDA_ATOMIC_ADD(uint32, unsigned int)
SK_CUDA_ATOMIC_ADD(uint64, unsigned long long)
SK_CUDA_ATOMIC_ADD(int64, unsigned long long)
#else
template <> SK_INLINE float atomic_add_scalar(float* p, float v) { return atomic_update(p, add_op<float>{v}); }
template <> SK_INLINE double atomic_add_scalar(double* p, double v) { return atomic_update(p, add_op<double>{v}); }
#endif
template <> SK_INLINE half atomic_add_scalar(half* p, half v) {
    return atomic_update(p, add_op<half>{v});
}
// bfloat16: a compare-and-swap loop on its 16 bits (the sum rounded to nearest even), CPU and CUDA alike
template <> SK_INLINE bfloat16 atomic_add_scalar(bfloat16* p, bfloat16 v) {
    return atomic_update(p, add_op<bfloat16>{v});
}

// Element types: scalars directly, value types component by component.
template <typename T> struct atomic_elem {
    static SK_INLINE T add(T* p, const T& v) { return atomic_add_scalar(p, v); }
    static SK_INLINE T min(T* p, const T& v) { return atomic_update(p, min_op<T>{v}); }
    static SK_INLINE T max(T* p, const T& v) { return atomic_update(p, max_op<T>{v}); }
    static SK_INLINE T exch(T* p, const T& v) { return atomic_update(p, exch_op<T>{v}); }
};
// A CPU thread that runs the launch alone asks once, not per component (core.h, cpu_serial), and updates the whole
// value with plain loads and stores: gcc then keeps it in registers (a per-component test made it spill the value
// to the stack and reload it piecewise, a store-forwarding stall: a spring force's two vec3 adds cost more than the
// rest of the spring).
template <typename V> struct atomic_value {
    typedef typename value_traits<V>::scalar S;
    static const unsigned N = value_traits<V>::length;
    template <template <typename> class Op>
    static SK_INLINE bool serial(V* p, const V& v, V& old) {
#if !SK_CUDA
        if (cpu_serial()) {
            old = *p;
            V r = old;
            for (unsigned i = 0; i < N; ++i) flat(r)[i] = Op<S>{flat(v)[i]}(flat(old)[i]);
            *p = r;
            return true;
        }
#endif
        (void)p; (void)v; (void)old;
        return false;
    }
    static SK_INLINE V add(V* p, const V& v) {
        V old;
        if (serial<add_op>(p, v, old)) return old;
        for (unsigned i = 0; i < N; ++i) flat(old)[i] = atomic_elem<S>::add(flat(*p) + i, flat(v)[i]);
        return old;
    }
    static SK_INLINE V min(V* p, const V& v) {
        V old;
        if (serial<min_op>(p, v, old)) return old;
        for (unsigned i = 0; i < N; ++i) flat(old)[i] = atomic_elem<S>::min(flat(*p) + i, flat(v)[i]);
        return old;
    }
    static SK_INLINE V max(V* p, const V& v) {
        V old;
        if (serial<max_op>(p, v, old)) return old;
        for (unsigned i = 0; i < N; ++i) flat(old)[i] = atomic_elem<S>::max(flat(*p) + i, flat(v)[i]);
        return old;
    }
    static SK_INLINE V exch(V* p, const V& v) {
        V old;
        if (serial<exch_op>(p, v, old)) return old;
        for (unsigned i = 0; i < N; ++i) flat(old)[i] = atomic_elem<S>::exch(flat(*p) + i, flat(v)[i]);
        return old;
    }
};
template <unsigned N, typename T> struct atomic_elem<vec_t<N, T>> : atomic_value<vec_t<N, T>> {};
template <unsigned R, unsigned C, typename T> struct atomic_elem<mat_t<R, C, T>> : atomic_value<mat_t<R, C, T>> {};
template <typename T> struct atomic_elem<quat_t<T>> : atomic_value<quat_t<T>> {};
template <typename T> struct atomic_elem<transform_t<T>> : atomic_value<transform_t<T>> {};

#if SK_CUDA && SK_DET_GRAD  // the recording variant of a backward kernel (det_grad.h)
template <typename T> SK_INLINE void det_grad_put(T* p, const T& v);
template <typename T> SK_INLINE void atomic_accumulate(T* p, const T& v) { det_grad_put(p, v); }
#else
template <typename T> SK_INLINE void atomic_accumulate(T* p, const T& v) { atomic_elem<T>::add(p, v); }
#endif
template <> SK_INLINE void atomic_accumulate<bool_t>(bool_t*, const bool_t&) {}  // bools carry no gradient

template <typename T> SK_INLINE T neg_value(const T& v) {
    T r = v;
    typedef typename value_traits<T>::scalar S;
    for (unsigned i = 0; i < value_traits<T>::length; ++i) flat(r)[i] = S(-flat(v)[i]);
    return r;
}

// ---------------------------------------------------------------------------
// Kernel builtins: atomic_<op>(arr, i[, j, k, l], value) -> old value.
// The last argument is the value; the indices precede it.

#define SK_ATOMIC_FORWARD(NAME, EXPR)                                                             \
    template <bool C, typename T, typename I0>                                                    \
    SK_INLINE T NAME(const array_t<T>& a, I0 i, const T& v) { T* p = address<C>(a, i); return EXPR; } \
    template <bool C, typename T, typename I0, typename I1>                                        \
    SK_INLINE T NAME(const array_t<T>& a, I0 i, I1 j, const T& v) { T* p = address<C>(a, i, j); return EXPR; } \
    template <bool C, typename T, typename I0, typename I1, typename I2>                          \
    SK_INLINE T NAME(const array_t<T>& a, I0 i, I1 j, I2 k, const T& v) {                          \
        T* p = address<C>(a, i, j, k); return EXPR;                                               \
    }                                                                                             \
    template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>             \
    SK_INLINE T NAME(const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, const T& v) {                    \
        T* p = address<C>(a, i, j, k, l); return EXPR;                                            \
    }                                                                                             \
    template <bool C, typename T, typename I0>                                                    \
    SK_INLINE T NAME##_checked(int line, const array_t<T>& a, I0 i, const T& v) {                 \
        T* p = checked_address<C>(line, a, i); return EXPR;                                       \
    }                                                                                             \
    template <bool C, typename T, typename I0, typename I1>                                       \
    SK_INLINE T NAME##_checked(int line, const array_t<T>& a, I0 i, I1 j, const T& v) {           \
        T* p = checked_address<C>(line, a, i, j); return EXPR;                                    \
    }                                                                                             \
    template <bool C, typename T, typename I0, typename I1, typename I2>                          \
    SK_INLINE T NAME##_checked(int line, const array_t<T>& a, I0 i, I1 j, I2 k, const T& v) {     \
        T* p = checked_address<C>(line, a, i, j, k); return EXPR;                                 \
    }                                                                                             \
    template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>             \
    SK_INLINE T NAME##_checked(int line, const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, const T& v) { \
        T* p = checked_address<C>(line, a, i, j, k, l); return EXPR;                              \
    }

SK_ATOMIC_FORWARD(atomic_add, atomic_elem<T>::add(p, v))
SK_ATOMIC_FORWARD(atomic_sub, atomic_elem<T>::add(p, neg_value(v)))
SK_ATOMIC_FORWARD(atomic_min, atomic_elem<T>::min(p, v))
SK_ATOMIC_FORWARD(atomic_max, atomic_elem<T>::max(p, v))
SK_ATOMIC_FORWARD(atomic_exch, atomic_elem<T>::exch(p, v))

// bitwise and / or / xor of integer elements: a compare-and-swap loop on the element's bits
template <int OP, typename T>
SK_INLINE T atomic_bitwise_scalar(T* p, const T& v) {
    typedef typename bits_of<T>::type B;
    B* pb = reinterpret_cast<B*>(p);
    B old = *reinterpret_cast<volatile B*>(pb);
    const B vb = B(v);
    while (true) {
        const B nb = OP == 0 ? B(old & vb) : OP == 1 ? B(old | vb) : B(old ^ vb);
        const B prev = cas_bits(pb, old, nb);
        if (prev == old) break;
        old = prev;
    }
    return T(old);
}
// integer vectors / matrices: component by component (each component atomic on its own, as in Warp)
template <int OP, typename T>
SK_INLINE T atomic_bitwise(T* p, const T& v) {
    T old;
    for (unsigned n = 0; n < value_traits<T>::length; ++n)
        flat(old)[n] = atomic_bitwise_scalar<OP>(flat(*p) + n, flat(v)[n]);
    return old;
}
SK_ATOMIC_FORWARD(atomic_and, atomic_bitwise<0>(p, v))
SK_ATOMIC_FORWARD(atomic_or, atomic_bitwise<1>(p, v))
SK_ATOMIC_FORWARD(atomic_xor, atomic_bitwise<2>(p, v))

// Adjoints: the value's adjoint reads the array's gradient at the element
// (negated for sub). min/max pass the gradient to the value only where it won.
#define SK_ATOMIC_ADJOINT(NAME, BODY)                                                             \
    template <bool C, typename T, typename I0>                                                    \
    SK_INLINE void adj_##NAME(const array_t<T>& a, I0 i, const T& v, array_t<T>&, I0&, T& adj_v,   \
                              const T&) { if (a.grad) { T g = *grad_address<C>(a, i); T cur = *address<C>(a, i); BODY; } } \
    template <bool C, typename T, typename I0, typename I1>                                       \
    SK_INLINE void adj_##NAME(const array_t<T>& a, I0 i, I1 j, const T& v, array_t<T>&, I0&, I1&,  \
                              T& adj_v, const T&) {                                               \
        if (a.grad) { T g = *grad_address<C>(a, i, j); T cur = *address<C>(a, i, j); BODY; }     \
    }                                                                                             \
    template <bool C, typename T, typename I0, typename I1, typename I2>                          \
    SK_INLINE void adj_##NAME(const array_t<T>& a, I0 i, I1 j, I2 k, const T& v, array_t<T>&, I0&, \
                              I1&, I2&, T& adj_v, const T&) {                                     \
        if (a.grad) { T g = *grad_address<C>(a, i, j, k); T cur = *address<C>(a, i, j, k); BODY; } \
    }                                                                                             \
    template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>             \
    SK_INLINE void adj_##NAME(const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, const T& v, array_t<T>&, \
                              I0&, I1&, I2&, I3&, T& adj_v, const T&) {                           \
        if (a.grad) { T g = *grad_address<C>(a, i, j, k, l); T cur = *address<C>(a, i, j, k, l); BODY; } \
    }

template <typename T> SK_INLINE void adj_accumulate_where(T& adj_v, const T& g, const T& cur, const T& v) {
    typedef typename value_traits<T>::scalar S;
    for (unsigned n = 0; n < value_traits<T>::length; ++n)
        if (flat(cur)[n] == flat(v)[n] || (flat(cur)[n] != flat(cur)[n] && flat(v)[n] != flat(v)[n]))  // (NaN won)
            flat(adj_v)[n] = S(flat(adj_v)[n] + flat(g)[n]);
}
template <typename T> SK_INLINE void adj_accumulate(T& adj_v, const T& g, float sign) {
    typedef typename value_traits<T>::scalar S;
    for (unsigned n = 0; n < value_traits<T>::length; ++n) flat(adj_v)[n] = S(flat(adj_v)[n] + sign * flat(g)[n]);
}

SK_ATOMIC_ADJOINT(atomic_add, (void)cur; (void)v; adj_accumulate(adj_v, g, 1.0f))
SK_ATOMIC_ADJOINT(atomic_sub, (void)cur; (void)v; adj_accumulate(adj_v, g, -1.0f))
SK_ATOMIC_ADJOINT(atomic_min, adj_accumulate_where(adj_v, g, cur, v))
SK_ATOMIC_ADJOINT(atomic_max, adj_accumulate_where(adj_v, g, cur, v))
SK_ATOMIC_ADJOINT(atomic_exch, (void)cur; (void)v; adj_accumulate(adj_v, g, 1.0f))

// atomic_cas(arr, i..., compare, value) -> old value (integers and floats; not differentiable)
template <bool C, typename T, typename... I>
SK_INLINE T atomic_cas_at(T* p, const T& cmp, const T& v) {
    typedef typename bits_of<T>::type B;
    B c, n;
    memcpy(&c, &cmp, sizeof(T));
    memcpy(&n, &v, sizeof(T));
    B old = cas_bits(reinterpret_cast<B*>(p), c, n);
    T r;
    memcpy(&r, &old, sizeof(T));
    return r;
}
template <bool C, typename T, typename I0>
SK_INLINE T atomic_cas(const array_t<T>& a, I0 i, const T& cmp, const T& v) { return atomic_cas_at<C>(address<C>(a, i), cmp, v); }
template <bool C, typename T, typename I0, typename I1>
SK_INLINE T atomic_cas(const array_t<T>& a, I0 i, I1 j, const T& cmp, const T& v) {
    return atomic_cas_at<C>(address<C>(a, i, j), cmp, v);
}
template <bool C, typename T, typename I0, typename I1, typename I2>
SK_INLINE T atomic_cas(const array_t<T>& a, I0 i, I1 j, I2 k, const T& cmp, const T& v) {
    return atomic_cas_at<C>(address<C>(a, i, j, k), cmp, v);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>
SK_INLINE T atomic_cas(const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, const T& cmp, const T& v) {
    return atomic_cas_at<C>(address<C>(a, i, j, k, l), cmp, v);
}
template <bool C, typename T, typename I0>
SK_INLINE T atomic_cas_checked(int line, const array_t<T>& a, I0 i, const T& cmp, const T& v) {
    return atomic_cas_at<C>(checked_address<C>(line, a, i), cmp, v);
}
template <bool C, typename T, typename I0, typename I1>
SK_INLINE T atomic_cas_checked(int line, const array_t<T>& a, I0 i, I1 j, const T& cmp, const T& v) {
    return atomic_cas_at<C>(checked_address<C>(line, a, i, j), cmp, v);
}
template <bool C, typename T, typename I0, typename I1, typename I2>
SK_INLINE T atomic_cas_checked(int line, const array_t<T>& a, I0 i, I1 j, I2 k, const T& cmp, const T& v) {
    return atomic_cas_at<C>(checked_address<C>(line, a, i, j, k), cmp, v);
}
template <bool C, typename T, typename I0, typename I1, typename I2, typename I3>
SK_INLINE T atomic_cas_checked(int line, const array_t<T>& a, I0 i, I1 j, I2 k, I3 l, const T& cmp, const T& v) {
    return atomic_cas_at<C>(checked_address<C>(line, a, i, j, k, l), cmp, v);
}


// ---------------------------------------------------------------------------
// field_atomic<OP>::run(p, v): the atomic op of a value at p (a scalar, or a vector/matrix/quaternion/
// transform component by component, as atomic_add of such an element); returns the old value. OP: 0 add,
// 1 sub, 2 and, 3 or, 4 xor. Used by the slot updates of parts of elements (slots.h: arr[i].f.x += v).
template <int OP> struct field_atomic;
template <> struct field_atomic<0> {
    template <typename V> static SK_INLINE V run(V* p, const V& v) { return atomic_elem<V>::add(p, v); }
};
template <> struct field_atomic<1> {
    template <typename V> static SK_INLINE V run(V* p, const V& v) { return atomic_elem<V>::add(p, neg_value(v)); }
};
template <> struct field_atomic<2> {
    template <typename V> static SK_INLINE V run(V* p, const V& v) { return atomic_bitwise<0>(p, v); }
};
template <> struct field_atomic<3> {
    template <typename V> static SK_INLINE V run(V* p, const V& v) { return atomic_bitwise<1>(p, v); }
};
template <> struct field_atomic<4> {
    template <typename V> static SK_INLINE V run(V* p, const V& v) { return atomic_bitwise<2>(p, v); }
};

}  // namespace sk
