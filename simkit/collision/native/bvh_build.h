// simkit collision: the two per-item passes of the binned SAH builder (simkit/collision/bvh_build.py),
// as hidden builtins. The builder's kernel runs on the CPU; these passes are most of its time, and
// as generic kernel code they cost about 115 scalar instructions per item and level (three axes, each
// a vec3 load/min/store per bound). Here an item's box is one 4-float vector and a bin one pair of
// them. CUDA gets plain loops (the kernel is compiled there too, never launched).
//
// Binning and partitioning must put every item in the same bin, so both use sah_key: the bin of axis
// `ax` is clamp(int(((lo + hi) - 2 cmin) * (scale / 2)), 0, nb - 1), an add, a subtract and a multiply
// whatever the compiler fuses (there is no multiply-add to contract), identical in scalar and vector form.
#pragma once

namespace sk {

typedef vec_t<3, float32> sah_v3;

template <typename T>
SK_INLINE T& sah_at(const array_t<T>& a, int32 i) {
    return *reinterpret_cast<T*>(reinterpret_cast<char*>(a.data) + i * a.strides[0]);
}
template <typename T>
SK_INLINE T& sah_at(const array_t<T>& a, int32 i, int32 j) {
    return *reinterpret_cast<T*>(reinterpret_cast<char*>(a.data) + i * a.strides[0] + j * a.strides[1]);
}
SK_INLINE int32 sah_key(float32 lo, float32 hi, float32 cmin2, float32 half_scale, int32 nb) {
    const float32 f = ((lo + hi) - cmin2) * half_scale;
    const int32 k = f > 0.0f ? int32(f) : 0;  // f is NaN-free: item boxes are finite
    return k < nb - 1 ? k : nb - 1;
}

// Accumulate items [start, end) into bins[ax][key] for every axis: bin_lo/bin_hi [3, >= nb] (vec3), bin_n
// [3, >= nb] (int32): bins 0 .. nb - 1 are overwritten. An axis with scale 0 puts every item in bin 0 (the caller's
// sweep skips such axes).
SK_INLINE void sah_bin(const array_t<sah_v3>& lo, const array_t<sah_v3>& hi, int32 start, int32 end,
                       const sah_v3& cmin, const sah_v3& scale, int32 nb, const array_t<sah_v3>& bin_lo,
                       const array_t<sah_v3>& bin_hi, const array_t<int32>& bin_n) {
#if !SK_CUDA
    typedef float32 v4f __attribute__((vector_size(16)));
    typedef int32 v4i __attribute__((vector_size(16)));
    struct box4 {
        v4f lo, hi;
    };
    box4 bins[3][16];  // nb <= 16 (NBINS)
    int32 counts[3][16];
    const v4f big = {1e30f, 1e30f, 1e30f, 1e30f};
    for (int ax = 0; ax < 3; ++ax)
        for (int b = 0; b < nb; ++b) {
            bins[ax][b].lo = big;
            bins[ax][b].hi = -big;
            counts[ax][b] = 0;
        }
    const v4f c2 = {2.0f * cmin[0], 2.0f * cmin[1], 2.0f * cmin[2], 0.0f};
    const v4f hs = {0.5f * scale[0], 0.5f * scale[1], 0.5f * scale[2], 0.0f};
    const v4i zero = {0, 0, 0, 0}, top = zero + (nb - 1);
    for (int32 s = start; s < end; ++s) {
        const sah_v3 &ls = sah_at(lo, s), &hs3 = sah_at(hi, s);  // element-wise: a 16-byte load through a
        const v4f l = {ls[0], ls[1], ls[2], 0.0f};                  // 12-byte copy stalls store forwarding
        const v4f h = {hs3[0], hs3[1], hs3[2], 0.0f};
        const v4f f = ((l + h) - c2) * hs;
        v4i k = __builtin_convertvector(f, v4i);  // truncation, as int32(f) in sah_key
        k = f > 0.0f ? k : zero;
        k = k < top ? k : top;
        for (int ax = 0; ax < 3; ++ax) {
            if (!(scale[ax] > 0.0f)) continue;  // the same axes every item: predicted
            box4& b = bins[ax][k[ax]];
            b.lo = b.lo < l ? b.lo : l;
            b.hi = b.hi > h ? b.hi : h;
            counts[ax][k[ax]] += 1;
        }
    }
    for (int ax = 0; ax < 3; ++ax)
        for (int b = 0; b < nb; ++b) {
            sah_v3& l = sah_at(bin_lo, ax, b);
            sah_v3& h = sah_at(bin_hi, ax, b);
            for (int k = 0; k < 3; ++k) {
                l[k] = bins[ax][b].lo[k];
                h[k] = bins[ax][b].hi[k];
            }
            sah_at(bin_n, ax, b) = counts[ax][b];
        }
#else
    for (int ax = 0; ax < 3; ++ax)
        for (int b = 0; b < nb; ++b) {
            sah_at(bin_lo, ax, b) = sah_v3{{1e30f, 1e30f, 1e30f}};
            sah_at(bin_hi, ax, b) = sah_v3{{-1e30f, -1e30f, -1e30f}};
            sah_at(bin_n, ax, b) = 0;
        }
    for (int32 s = start; s < end; ++s) {
        const sah_v3 &l = sah_at(lo, s), &h = sah_at(hi, s);
        for (int ax = 0; ax < 3; ++ax) {
            const int32 k = sah_key(l[ax], h[ax], 2.0f * cmin[ax], 0.5f * scale[ax], nb);
            sah_v3 &bl = sah_at(bin_lo, ax, k), &bh = sah_at(bin_hi, ax, k);
            for (int c = 0; c < 3; ++c) {
                bl[c] = fminf(bl[c], l[c]);
                bh[c] = fmaxf(bh[c], h[c]);
            }
            sah_at(bin_n, ax, k) += 1;
        }
    }
#endif
}

// Half the surface area of the box [lo, hi]; 0 for an empty one (the builder's _half_area).
SK_INLINE float32 sah_half_area(const sah_v3& lo, const sah_v3& hi) {
    const float32 dx = hi[0] - lo[0], dy = hi[1] - lo[1], dz = hi[2] - lo[2];
    if (dx < 0.0f || dy < 0.0f || dz < 0.0f) return 0.0f;
    return dx * dy + dy * dz + dz * dx;
}

// The SAH sweep over the bins sah_bin wrote, on every axis with scale > 0: the split "bins 0 .. b on the
// left" of least cost area(left) * blocks(left) + area(right) * blocks(right), where blocks(k) is
// ceil(k / block) (items tested `block` at a time: a mesh leaf's faces). Returns axis * 16 + b (-1: no split
// with items on both sides) and writes its cost to cost[0]. Ties keep the first (axis, then bin) found.
SK_INLINE int32 sah_sweep(const array_t<sah_v3>& bin_lo, const array_t<sah_v3>& bin_hi, const array_t<int32>& bin_n,
                          const sah_v3& scale, int32 nb, int32 count, int32 block, const array_t<float32>& cost) {
    int32 best = -1;
    float32 best_cost = 1e30f;
    for (int32 ax = 0; ax < 3; ++ax) {
        if (!(scale[ax] > 0.0f)) continue;
        float32 right[16];  // right[b]: the cost of bins b .. nb - 1 (nb <= 16)
        sah_v3 lo{{1e30f, 1e30f, 1e30f}}, hi{{-1e30f, -1e30f, -1e30f}};
        int32 n = 0;
        for (int32 b = nb - 1; b > 0; --b) {
            const sah_v3 &bl = sah_at(bin_lo, ax, b), &bh = sah_at(bin_hi, ax, b);
            for (int c = 0; c < 3; ++c) {
                lo[c] = bl[c] < lo[c] ? bl[c] : lo[c];
                hi[c] = bh[c] > hi[c] ? bh[c] : hi[c];
            }
            n += sah_at(bin_n, ax, b);
            right[b] = sah_half_area(lo, hi) * float32((n + block - 1) / block);
        }
        lo = sah_v3{{1e30f, 1e30f, 1e30f}};
        hi = sah_v3{{-1e30f, -1e30f, -1e30f}};
        n = 0;
        for (int32 b = 0; b < nb - 1; ++b) {
            const sah_v3 &bl = sah_at(bin_lo, ax, b), &bh = sah_at(bin_hi, ax, b);
            for (int c = 0; c < 3; ++c) {
                lo[c] = bl[c] < lo[c] ? bl[c] : lo[c];
                hi[c] = bh[c] > hi[c] ? bh[c] : hi[c];
            }
            n += sah_at(bin_n, ax, b);
            if (n > 0 && n < count) {
                const float32 c = sah_half_area(lo, hi) * float32((n + block - 1) / block) + right[b + 1];
                if (c < best_cost) {
                    best_cost = c;
                    best = ax * 16 + b;
                }
            }
        }
    }
    sah_at(cost, 0) = best_cost;
    return best;
}

// Partition items [start, end) (with their perm entries) so that those whose bin along `axis` is at
// most `last` come first; returns the index of the first of the others.
SK_INLINE int32 sah_partition(const array_t<int32>& perm, const array_t<sah_v3>& lo, const array_t<sah_v3>& hi,
                              int32 start, int32 end, int32 axis, float32 cmin, float32 scale, int32 nb, int32 last) {
    const float32 c2 = 2.0f * cmin, hs = 0.5f * scale;
    int32 a = start, z = end - 1;
    while (a <= z) {
        sah_v3 &la = sah_at(lo, a), &ha = sah_at(hi, a);
        if (sah_key(la[axis], ha[axis], c2, hs, nb) <= last) {
            ++a;
            continue;
        }
        sah_v3 &lz = sah_at(lo, z), &hz = sah_at(hi, z);
        const sah_v3 tl = la, th = ha;
        const int32 tp = sah_at(perm, a);
        la = lz;
        ha = hz;
        sah_at(perm, a) = sah_at(perm, z);
        lz = tl;
        hz = th;
        sah_at(perm, z) = tp;
        --z;
    }
    return a;
}

}  // namespace sk
