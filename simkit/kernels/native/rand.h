// simkit native random numbers and gradient noise (Warp-compatible API).
//
// The state is a uint32. rand_init() hashes a seed (and offset) into a state;
// every draw (randf, randi, sample_*) replaces the state by its hash and maps
// the new state to the result, so the draw functions take the state by
// reference. The hash is the PCG-RXS-M-XS output permutation recommended by
// Jarzynski and Olano ("Hash Functions for GPU Rendering", JCGT 2020).
//
// noise()/pnoise()/curlnoise() do not advance the state: the state seeds a
// fixed random field. noise is Perlin gradient noise (quintic fade, random
// unit gradients per lattice corner), zero at lattice points; its range is
// about [-sqrt(N)/2, sqrt(N)/2] for N input dimensions (as Warp's).
#pragma once

#include "core.h"
#include "scalar.h"
#include "array.h"

namespace sk {

#define SK_TWO_PI_F 6.28318530717958647692f

SK_INLINE uint32 rand_pcg(uint32 state) {
    uint32 b = state * 747796405u + 2891336453u;
    uint32 c = ((b >> ((b >> 28u) + 4u)) ^ b) * 277803737u;
    return (c >> 22u) ^ c;
}

SK_INLINE uint32 rand_init(int32 seed) { return rand_pcg(uint32(seed)); }
SK_INLINE uint32 rand_init(int32 seed, int32 offset) { return rand_pcg(uint32(seed) + rand_pcg(uint32(offset))); }

// Next raw 32 random bits.
SK_INLINE uint32 randu(uint32& state) {
    state = rand_pcg(state);
    return state;
}
// Uniform in [low, high) (low when high <= low); multiply-shift keeps the high bits.
SK_INLINE uint32 randu(uint32& state, uint32 low, uint32 high) {
    uint32 r = randu(state);
    if (high <= low) return low;
    return low + uint32((uint64(r) * uint64(high - low)) >> 32);
}
SK_INLINE int32 randi(uint32& state) { return int32(randu(state)); }
SK_INLINE int32 randi(uint32& state, int32 low, int32 high) {
    uint32 r = randu(state);
    if (high <= low) return low;
    uint32 range = uint32(high) - uint32(low);
    return int32(uint32(low) + uint32((uint64(r) * uint64(range)) >> 32));
}

// Uniform in [0, 1): 24 random bits, so every value is exact and 1 is never reached.
SK_INLINE float32 randf(uint32& state) { return float32(randu(state) >> 8) * (1.0f / 16777216.0f); }
SK_INLINE float32 randf(uint32& state, float32 low, float32 high) { return low + (high - low) * randf(state); }

// Standard normal (Box-Muller; u1 in (0, 1] keeps the log finite).
SK_INLINE float32 randn(uint32& state) {
    float32 u1 = 1.0f - randf(state);
    float32 u2 = randf(state);
    return m::sqrt(-2.0f * m::log(u1)) * m::cos(SK_TWO_PI_F * u2);
}

// Inverse-transform sampling of a discrete distribution: the first index whose CDF value is >= u
// (the search stays in [0, n - 1], so its loads are always in bounds).
template <bool C>
SK_INLINE int32 sample_cdf(uint32& state, const array_t<float32>& cdf) {
    const float32 u = randf(state);
    return lower_bound<C>(cdf, u);
}

// ---------------------------------------------------------------------------
// Uniform samples of simple domains

// Square [-0.5, 0.5)^2 and cube [-0.5, 0.5)^3 centred on the origin.
SK_INLINE vec_t<2, float32> sample_unit_square(uint32& state) {
    float32 x = randf(state) - 0.5f;
    float32 y = randf(state) - 0.5f;
    return make<vec_t<2, float32>>(x, y);
}
SK_INLINE vec_t<3, float32> sample_unit_cube(uint32& state) {
    float32 x = randf(state) - 0.5f;
    float32 y = randf(state) - 0.5f;
    float32 z = randf(state) - 0.5f;
    return make<vec_t<3, float32>>(x, y, z);
}
// A point on the unit circle.
SK_INLINE vec_t<2, float32> sample_unit_ring(uint32& state) {
    float32 t = SK_TWO_PI_F * randf(state);
    return make<vec_t<2, float32>>(m::cos(t), m::sin(t));
}
// A point in the unit disk (area-uniform).
SK_INLINE vec_t<2, float32> sample_unit_disk(uint32& state) {
    float32 r = m::sqrt(randf(state));
    float32 t = SK_TWO_PI_F * randf(state);
    return make<vec_t<2, float32>>(r * m::cos(t), r * m::sin(t));
}
// On the unit sphere: z uniform in [-1, 1] (Archimedes), azimuth uniform.
SK_INLINE vec_t<3, float32> sphere_point(float32 z, float32 t) {
    float32 s = m::sqrt(max(0.0f, 1.0f - z * z));
    return make<vec_t<3, float32>>(s * m::cos(t), s * m::sin(t), z);
}
SK_INLINE vec_t<3, float32> sample_unit_sphere_surface(uint32& state) {
    float32 z = 1.0f - 2.0f * randf(state);
    float32 t = SK_TWO_PI_F * randf(state);
    return sphere_point(z, t);
}
// Inside the unit ball (volume-uniform: radius = cbrt(u)).
SK_INLINE vec_t<3, float32> sample_unit_sphere(uint32& state) {
    vec_t<3, float32> p = sample_unit_sphere_surface(state);
    float32 r = m::cbrt(randf(state));
    return make<vec_t<3, float32>>(r * p[0], r * p[1], r * p[2]);
}
// Upper hemisphere (z > 0).
SK_INLINE vec_t<3, float32> sample_unit_hemisphere_surface(uint32& state) {
    float32 z = 1.0f - randf(state);
    float32 t = SK_TWO_PI_F * randf(state);
    return sphere_point(z, t);
}
SK_INLINE vec_t<3, float32> sample_unit_hemisphere(uint32& state) {
    vec_t<3, float32> p = sample_unit_hemisphere_surface(state);
    float32 r = m::cbrt(randf(state));
    return make<vec_t<3, float32>>(r * p[0], r * p[1], r * p[2]);
}
// Barycentric coordinates (u, v) of a point uniform in a triangle: u, v >= 0, u + v <= 1.
SK_INLINE vec_t<2, float32> sample_triangle(uint32& state) {
    float32 r = m::sqrt(randf(state));
    float32 u = 1.0f - r;
    float32 v = randf(state) * r;
    return make<vec_t<2, float32>>(u, v);
}

// ---------------------------------------------------------------------------
// Poisson(lam): multiplication method for small lam, otherwise Hoermann's
// transformed rejection (PTRS, "The transformed rejection method for
// generating Poisson random variables", 1993).

// log(k!) : table for small k, Stirling series above.
SK_INLINE float32 rand_log_factorial(float32 k) {
    if (k < 10.0f) {
        const float32 table[10] = {0.0f, 0.0f, 0.69314718f, 1.79175947f, 3.17805383f,
                                   4.78749174f, 6.57925121f, 8.52516136f, 10.6046029f, 12.8018275f};
        return table[int32(k)];
    }
    float32 n = k + 1.0f;  // log Gamma(n)
    float32 i = 1.0f / n, i2 = i * i;
    return (n - 0.5f) * m::log(n) - n + 0.91893853f + i * (1.0f / 12.0f - i2 * (1.0f / 360.0f - i2 * (1.0f / 1260.0f)));
}

SK_INLINE uint32 poisson(uint32& state, float32 lam) {
    if (!(lam > 0.0f)) return 0u;
    if (lam < 10.0f) {
        float32 limit = m::exp(-lam), prod = randf(state);
        uint32 k = 0;
        while (prod > limit) {
            prod *= randf(state);
            ++k;
        }
        return k;
    }
    float32 slam = m::sqrt(lam), loglam = m::log(lam);
    float32 b = 0.931f + 2.53f * slam;
    float32 a = -0.059f + 0.02483f * b;
    float32 inv_alpha = 1.1239f + 1.1328f / (b - 3.4f);
    float32 vr = 0.9277f - 3.6224f / (b - 2.0f);
    for (;;) {
        float32 u = randf(state) - 0.5f;
        float32 v = randf(state);
        float32 us = 0.5f - m::fabs(u);
        float32 k = m::floor((2.0f * a / us + b) * u + lam + 0.43f);
        if (us >= 0.07f && v <= vr) return uint32(k);
        if (k < 0.0f || (us < 0.013f && v > us)) continue;
        if (m::log(v) + m::log(inv_alpha) - m::log(a / (us * us) + b) <= -lam + k * loglam - rand_log_factorial(k))
            return uint32(k);
    }
}

// ---------------------------------------------------------------------------
// Gradient (Perlin) noise in N = 1..4 dimensions

// Hash of a lattice corner under a seed state.
template <unsigned N> SK_INLINE uint32 noise_corner_hash(uint32 state, const int32* c) {
    uint32 h = rand_pcg(state ^ 0x9e3779b9u);
    for (unsigned d = 0; d < N; ++d) h = rand_pcg(h + uint32(c[d]));
    return h;
}

// Random gradient of a corner: in [-1, 1] for N == 1, a unit vector otherwise.
template <unsigned N> SK_INLINE void noise_gradient(uint32 h, float32* g) {
    if (N == 1) {
        g[0] = randf(h) * 2.0f - 1.0f;
        return;
    }
    float32 len2 = 0.0f;
    for (unsigned d = 0; d < N; ++d) {
        g[d] = randf(h) * 2.0f - 1.0f;
        len2 += g[d] * g[d];
    }
    if (len2 < 1e-12f) {
        g[0] = 1.0f;
        len2 = 1.0f;
        for (unsigned d = 1; d < N; ++d) g[d] = 0.0f;
    }
    float32 inv = 1.0f / m::sqrt(len2);
    for (unsigned d = 0; d < N; ++d) g[d] *= inv;
}

SK_INLINE float32 noise_fade(float32 t) { return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f); }
SK_INLINE float32 noise_fade_d(float32 t) { return 30.0f * t * t * (t * (t - 2.0f) + 1.0f); }
SK_INLINE float32 noise_fade_dd(float32 t) { return 60.0f * t * (t * (2.0f * t - 3.0f) + 1.0f); }

// The Hessian of the (non-periodic) noise at x: hess[k][l] = d2 noise / dx_k dx_l (curlnoise's adjoint).
template <unsigned N>
SK_INLINE void perlin_hessian(uint32 state, const float32* x, float32 (*hess)[4]) {
    int32 cell[N];
    float32 f[N], s[N], ds[N], dds[N];
    for (unsigned d = 0; d < N; ++d) {
        float32 fl = m::floor(x[d]);
        cell[d] = int32(fl);
        f[d] = x[d] - fl;
        s[d] = noise_fade(f[d]);
        ds[d] = noise_fade_d(f[d]);
        dds[d] = noise_fade_dd(f[d]);
        for (unsigned l = 0; l < N; ++l) hess[d][l] = 0.0f;
    }
    for (unsigned corner = 0; corner < (1u << N); ++corner) {
        int32 c[N];
        float32 off[N], w[N], w1[N], w2[N];  // each factor of the weight and its first two derivatives
        for (unsigned d = 0; d < N; ++d) {
            unsigned bit = (corner >> d) & 1u;
            c[d] = cell[d] + int32(bit);
            off[d] = f[d] - float32(bit);
            w[d] = bit ? s[d] : 1.0f - s[d];
            w1[d] = bit ? ds[d] : -ds[d];
            w2[d] = bit ? dds[d] : -dds[d];
        }
        float32 g[N];
        noise_gradient<N>(noise_corner_hash<N>(state, c), g);
        float32 dotv = 0.0f;
        for (unsigned d = 0; d < N; ++d) dotv += g[d] * off[d];
        float32 dw[N];  // d weight / dx_k
        for (unsigned k = 0; k < N; ++k) {
            dw[k] = w1[k];
            for (unsigned d = 0; d < N; ++d)
                if (d != k) dw[k] *= w[d];
        }
        for (unsigned k = 0; k < N; ++k)
            for (unsigned l = 0; l < N; ++l) {
                float32 ddw = 1.0f;  // d2 weight / dx_k dx_l
                for (unsigned d = 0; d < N; ++d)
                    ddw *= (d == k && d == l) ? w2[d] : (d == k || d == l) ? w1[d] : w[d];
                hess[k][l] += ddw * dotv + dw[k] * g[l] + dw[l] * g[k];
            }
    }
}

// Noise value at x; its gradient into grad (if not null). period[d] > 0 wraps
// the lattice along d (periodic noise); period == null: not periodic.
template <unsigned N>
SK_INLINE float32 perlin(uint32 state, const float32* x, const int32* period, float32* grad) {
    int32 cell[N];
    float32 f[N], s[N], ds[N];
    for (unsigned d = 0; d < N; ++d) {
        float32 fl = m::floor(x[d]);
        cell[d] = int32(fl);
        f[d] = x[d] - fl;
        s[d] = noise_fade(f[d]);
        ds[d] = noise_fade_d(f[d]);
    }
    float32 value = 0.0f;
    if (grad)
        for (unsigned d = 0; d < N; ++d) grad[d] = 0.0f;
    for (unsigned corner = 0; corner < (1u << N); ++corner) {
        int32 c[N];
        float32 off[N], w[N];
        for (unsigned d = 0; d < N; ++d) {
            unsigned bit = (corner >> d) & 1u;
            c[d] = cell[d] + int32(bit);
            if (period && period[d] > 0) {
                c[d] %= period[d];
                if (c[d] < 0) c[d] += period[d];
            }
            off[d] = f[d] - float32(bit);
            w[d] = bit ? s[d] : 1.0f - s[d];
        }
        float32 g[N];
        noise_gradient<N>(noise_corner_hash<N>(state, c), g);
        float32 dotv = 0.0f, weight = 1.0f;
        for (unsigned d = 0; d < N; ++d) {
            dotv += g[d] * off[d];
            weight *= w[d];
        }
        value += weight * dotv;
        if (grad) {
            for (unsigned k = 0; k < N; ++k) {
                // d(weight)/dx_k: replace factor k by its derivative
                float32 dw = ((corner >> k) & 1u) ? ds[k] : -ds[k];
                for (unsigned d = 0; d < N; ++d)
                    if (d != k) dw *= w[d];
                grad[k] += dw * dotv + weight * g[k];
            }
        }
    }
    return value;
}

SK_INLINE float32 noise(uint32 state, float32 x) { return perlin<1>(state, &x, nullptr, nullptr); }
SK_INLINE void adj_noise(uint32 state, float32 x, uint32&, float32& adj_x, float32 adj_ret) {
    float32 g;
    perlin<1>(state, &x, nullptr, &g);
    adj_x += g * adj_ret;
}
template <unsigned N> SK_INLINE float32 noise(uint32 state, const vec_t<N, float32>& x) {
    return perlin<N>(state, x.c, nullptr, nullptr);
}
template <unsigned N>
SK_INLINE void adj_noise(uint32 state, const vec_t<N, float32>& x, uint32&, vec_t<N, float32>& adj_x, float32 adj_ret) {
    float32 g[N];
    perlin<N>(state, x.c, nullptr, g);
    for (unsigned d = 0; d < N; ++d) adj_x.c[d] += g[d] * adj_ret;
}

// Periodic noise: period px (py, pz, pt) lattice cells along each axis.
SK_INLINE float32 pnoise(uint32 state, float32 x, int32 px) { return perlin<1>(state, &x, &px, nullptr); }
SK_INLINE void adj_pnoise(uint32 state, float32 x, int32 px, uint32&, float32& adj_x, int32&, float32 adj_ret) {
    float32 g;
    perlin<1>(state, &x, &px, &g);
    adj_x += g * adj_ret;
}
SK_INLINE float32 pnoise(uint32 state, const vec_t<2, float32>& x, int32 px, int32 py) {
    int32 p[2] = {px, py};
    return perlin<2>(state, x.c, p, nullptr);
}
SK_INLINE void adj_pnoise(uint32 state, const vec_t<2, float32>& x, int32 px, int32 py, uint32&,
                          vec_t<2, float32>& adj_x, int32&, int32&, float32 adj_ret) {
    int32 p[2] = {px, py};
    float32 g[2];
    perlin<2>(state, x.c, p, g);
    for (unsigned d = 0; d < 2; ++d) adj_x.c[d] += g[d] * adj_ret;
}
SK_INLINE float32 pnoise(uint32 state, const vec_t<3, float32>& x, int32 px, int32 py, int32 pz) {
    int32 p[3] = {px, py, pz};
    return perlin<3>(state, x.c, p, nullptr);
}
SK_INLINE void adj_pnoise(uint32 state, const vec_t<3, float32>& x, int32 px, int32 py, int32 pz, uint32&,
                          vec_t<3, float32>& adj_x, int32&, int32&, int32&, float32 adj_ret) {
    int32 p[3] = {px, py, pz};
    float32 g[3];
    perlin<3>(state, x.c, p, g);
    for (unsigned d = 0; d < 3; ++d) adj_x.c[d] += g[d] * adj_ret;
}
SK_INLINE float32 pnoise(uint32 state, const vec_t<4, float32>& x, int32 px, int32 py, int32 pz, int32 pt) {
    int32 p[4] = {px, py, pz, pt};
    return perlin<4>(state, x.c, p, nullptr);
}
SK_INLINE void adj_pnoise(uint32 state, const vec_t<4, float32>& x, int32 px, int32 py, int32 pz, int32 pt, uint32&,
                          vec_t<4, float32>& adj_x, int32&, int32&, int32&, int32&, float32 adj_ret) {
    int32 p[4] = {px, py, pz, pt};
    float32 g[4];
    perlin<4>(state, x.c, p, g);
    for (unsigned d = 0; d < 4; ++d) adj_x.c[d] += g[d] * adj_ret;
}

// Curl noise: a divergence-free field from noise potentials, summed over
// octaves (frequency *= lacunarity, amplitude *= gain per octave).
// 2D: (-dN/dy, dN/dx). 3D and 4D: curl (in x, y, z) of a vector potential
// made of three noise fields seeded from the state.
template <unsigned N>
SK_INLINE void curl_potential_gradients(uint32 state, const float32* x, uint32 octaves, float32 lacunarity,
                                        float32 gain, unsigned fields, float32 (*grads)[4]) {
    for (unsigned f = 0; f < fields; ++f)
        for (unsigned d = 0; d < N; ++d) grads[f][d] = 0.0f;
    float32 freq = 1.0f, amp = 1.0f;
    for (uint32 o = 0; o < octaves; ++o) {
        float32 p[N];
        for (unsigned d = 0; d < N; ++d) p[d] = x[d] * freq;
        uint32 seed = state;
        for (unsigned f = 0; f < fields; ++f) {
            float32 g[N];
            perlin<N>(seed, p, nullptr, g);
            for (unsigned d = 0; d < N; ++d) grads[f][d] += amp * g[d];
            seed = rand_pcg(seed + 0x68e31da4u);
        }
        freq *= lacunarity;
        amp *= gain;
    }
}
// dG[f][d][l] = d(grads[f][d]) / dx_l of curl_potential_gradients (the noise Hessians, over octaves).
template <unsigned N>
SK_INLINE void curl_potential_hessians(uint32 state, const float32* x, uint32 octaves, float32 lacunarity,
                                       float32 gain, unsigned fields, float32 (*dG)[4][4]) {
    for (unsigned f = 0; f < fields; ++f)
        for (unsigned d = 0; d < N; ++d)
            for (unsigned l = 0; l < N; ++l) dG[f][d][l] = 0.0f;
    float32 freq = 1.0f, amp = 1.0f;
    for (uint32 o = 0; o < octaves; ++o) {
        float32 p[N];
        for (unsigned d = 0; d < N; ++d) p[d] = x[d] * freq;
        uint32 seed = state;
        for (unsigned f = 0; f < fields; ++f) {
            float32 h[4][4];
            perlin_hessian<N>(seed, p, h);
            for (unsigned d = 0; d < N; ++d)
                for (unsigned l = 0; l < N; ++l) dG[f][d][l] += amp * freq * h[d][l];
            seed = rand_pcg(seed + 0x68e31da4u);
        }
        freq *= lacunarity;
        amp *= gain;
    }
}
SK_INLINE vec_t<2, float32> curlnoise(uint32 state, const vec_t<2, float32>& xy, uint32 octaves = 1u,
                                      float32 lacunarity = 2.0f, float32 gain = 0.5f) {
    float32 g[1][4];
    curl_potential_gradients<2>(state, xy.c, octaves, lacunarity, gain, 1, g);
    return make<vec_t<2, float32>>(-g[0][1], g[0][0]);
}
template <unsigned N>
SK_INLINE vec_t<3, float32> curlnoise(uint32 state, const vec_t<N, float32>& x, uint32 octaves = 1u,
                                      float32 lacunarity = 2.0f, float32 gain = 0.5f) {
    float32 g[3][4];  // g[f][d] = d(psi_f)/dx_d
    curl_potential_gradients<N>(state, x.c, octaves, lacunarity, gain, 3, g);
    return make<vec_t<3, float32>>(g[2][1] - g[1][2], g[0][2] - g[2][0], g[1][0] - g[0][1]);
}
// Adjoints with respect to the position (the state, octaves, lacunarity and gain get none).
SK_INLINE void adj_curlnoise(uint32 state, const vec_t<2, float32>& xy, uint32 octaves, float32 lacunarity,
                             float32 gain, uint32&, vec_t<2, float32>& adj_xy, uint32&, float32&, float32&,
                             const vec_t<2, float32>& adj_ret) {
    float32 dG[1][4][4];
    curl_potential_hessians<2>(state, xy.c, octaves, lacunarity, gain, 1, dG);
    for (unsigned l = 0; l < 2; ++l) adj_xy.c[l] += -adj_ret.c[0] * dG[0][1][l] + adj_ret.c[1] * dG[0][0][l];
}
template <unsigned N>
SK_INLINE void adj_curlnoise(uint32 state, const vec_t<N, float32>& x, uint32 octaves, float32 lacunarity,
                             float32 gain, uint32&, vec_t<N, float32>& adj_x, uint32&, float32&, float32&,
                             const vec_t<3, float32>& adj_ret) {
    float32 dG[3][4][4];
    curl_potential_hessians<N>(state, x.c, octaves, lacunarity, gain, 3, dG);
    const float32* a = adj_ret.c;
    for (unsigned l = 0; l < N; ++l)
        adj_x.c[l] += a[0] * (dG[2][1][l] - dG[1][2][l]) + a[1] * (dG[0][2][l] - dG[2][0][l]) +
                      a[2] * (dG[1][0][l] - dG[0][1][l]);
}

}  // namespace sk
