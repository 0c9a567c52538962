"""Random numbers and noise: statistics, ranges, determinism, streams, gradients.

Kernels are defined at import time so one C++ compile serves the whole file.
"""
import math

import numpy as np
import pytest

import simkit as sk

needs_tape = pytest.mark.skipif(not hasattr(sk, "Tape"), reason="autodiff (sk.Tape) not available yet")

N = 100_000


@sk.kernel
def draws(seed: int, u: sk.array(dtype=float), ur: sk.array(dtype=float), n: sk.array(dtype=float),
          ri: sk.array(dtype=int), rr: sk.array(dtype=int), ru: sk.array(dtype=sk.uint32),
          rur: sk.array(dtype=sk.uint32), nxt: sk.array(dtype=float)):
    i = sk.tid()
    state = sk.rand_init(seed, i)
    u[i] = sk.randf(state)
    ur[i] = sk.randf(state, -2.0, 3.0)
    n[i] = sk.randn(state)
    ri[i] = sk.randi(state)
    rr[i] = sk.randi(state, -3, 4)
    ru[i] = sk.randu(state)
    rur[i] = sk.randu(state, sk.uint32(10), sk.uint32(20))
    nxt[i] = sk.randf(state)


@sk.kernel
def cdf_draws(seed: int, cdf: sk.array(dtype=float), idx: sk.array(dtype=int), ref: sk.array(dtype=int),
              same_state: sk.array(dtype=int)):
    i = sk.tid()
    state = sk.rand_init(seed, i)
    copy = state
    idx[i] = sk.sample_cdf(state, cdf)
    ref[i] = sk.lower_bound(cdf, sk.randf(copy))  # the same draw, searched by hand
    same_state[i] = int(state == copy)  # sample_cdf advanced its state by one draw


@sk.kernel
def samples(seed: int, sphere: sk.array(dtype=sk.vec3), surface: sk.array(dtype=sk.vec3),
            cube: sk.array(dtype=sk.vec3), hemi: sk.array(dtype=sk.vec3), hemi_surface: sk.array(dtype=sk.vec3),
            disk: sk.array(dtype=sk.vec2), ring: sk.array(dtype=sk.vec2), square: sk.array(dtype=sk.vec2),
            tri: sk.array(dtype=sk.vec2)):
    i = sk.tid()
    state = sk.rand_init(seed, i)
    sphere[i] = sk.sample_unit_sphere(state)
    surface[i] = sk.sample_unit_sphere_surface(state)
    cube[i] = sk.sample_unit_cube(state)
    hemi[i] = sk.sample_unit_hemisphere(state)
    hemi_surface[i] = sk.sample_unit_hemisphere_surface(state)
    disk[i] = sk.sample_unit_disk(state)
    ring[i] = sk.sample_unit_ring(state)
    square[i] = sk.sample_unit_square(state)
    tri[i] = sk.sample_triangle(state)


@sk.kernel
def sequence(seed: int, m: int, out: sk.array(dtype=float, ndim=2)):
    """m successive draws of one stream per thread (state carried through a loop)."""
    i = sk.tid()
    state = sk.rand_init(seed + i)
    for j in range(m):
        out[i, j] = sk.randf(state)


@sk.kernel
def poisson_draws(seed: int, lam: float, out: sk.array(dtype=sk.uint32)):
    i = sk.tid()
    state = sk.rand_init(seed, i)
    out[i] = sk.poisson(state, lam)


@sk.kernel
def noises(seed: int, p: sk.array(dtype=sk.vec4), out: sk.array(dtype=float, ndim=2)):
    i = sk.tid()
    state = sk.rand_init(seed)
    x = p[i]
    out[0, i] = sk.noise(state, x[0])
    out[1, i] = sk.noise(state, sk.vec2(x[0], x[1]))
    out[2, i] = sk.noise(state, sk.vec3(x[0], x[1], x[2]))
    out[3, i] = sk.noise(state, x)
    out[4, i] = sk.pnoise(state, x[0], 3)
    out[5, i] = sk.pnoise(state, sk.vec2(x[0], x[1]), 3, 5)
    out[6, i] = sk.pnoise(state, sk.vec3(x[0], x[1], x[2]), 3, 5, 2)
    out[7, i] = sk.pnoise(state, x, 3, 5, 2, 4)


@sk.kernel
def noise3(seed: int, p: sk.array(dtype=sk.vec3), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = sk.noise(sk.rand_init(seed), p[i])


@sk.kernel
def curl(seed: int, p: sk.array(dtype=sk.vec3), out3: sk.array(dtype=sk.vec3), out2: sk.array(dtype=sk.vec2)):
    i = sk.tid()
    state = sk.rand_init(seed)
    x = p[i]
    out3[i] = sk.curlnoise(state, x, 2, 2.0, 0.5)
    out2[i] = sk.curlnoise(state, sk.vec2(x[0], x[1]), octaves=2, gain=0.25)


@sk.kernel
def scaled(seed: int, p: sk.array(dtype=float), y: sk.array(dtype=float), u: sk.array(dtype=float)):
    """y = p * randf: the adjoint must see the same random number as the forward pass."""
    i = sk.tid()
    state = sk.rand_init(seed, i)
    r = sk.randf(state)
    u[i] = r
    y[i] = p[i] * r


def _run_draws(device, seed=42, n=N):
    outs = [sk.zeros(n, dtype=t, device=device) for t in
            (sk.float32, sk.float32, sk.float32, sk.int32, sk.int32, sk.uint32, sk.uint32, sk.float32)]
    sk.launch(draws, dim=n, inputs=[seed], outputs=outs, device=device)
    return [o.numpy() for o in outs]


def test_uniform_and_normal_statistics(device):
    u, ur, n, ri, rr, ru, rur, nxt = _run_draws(device)
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    assert np.histogram(u, bins=10, range=(0, 1))[0].min() > 0.09 * N
    assert ur.min() >= -2.0 and ur.max() < 3.0 and abs(ur.mean() - 0.5) < 0.03
    assert abs(n.mean()) < 0.015 and abs(n.var() - 1.0) < 0.02
    assert abs(np.mean(np.abs(n) < 1.0) - 0.6827) < 0.01  # the 1-sigma mass of a normal
    assert ri.min() < -(2**30) and ri.max() > 2**30  # full 32-bit range
    assert rr.min() == -3 and rr.max() == 3
    assert np.all(np.abs(np.bincount(rr + 3) / N - 1 / 7) < 0.006)
    assert ru.max() > 2**31 and rur.min() == 10 and rur.max() == 19
    assert np.mean(u == nxt) < 1e-3  # the state advances between draws
    assert abs(np.corrcoef(u, nxt)[0, 1]) < 0.02


def test_determinism_and_streams(device):
    a = _run_draws(device, seed=7, n=1000)
    b = _run_draws(device, seed=7, n=1000)
    c = _run_draws(device, seed=8, n=1000)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert np.mean(a[0] == c[0]) < 0.01
    # offsets (thread index) give different, uncorrelated streams
    u = a[0]
    assert len(np.unique(u)) > 990
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.1


def test_sequence_in_loop(device):
    m = 64
    out = sk.zeros((512, m), dtype=float, device=device)
    sk.launch(sequence, dim=512, inputs=[3, m], outputs=[out], device=device)
    x = out.numpy()
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.01
    # successive draws of one stream differ and are uncorrelated
    assert np.mean(x[:, 1:] == x[:, :-1]) < 1e-3
    assert abs(np.corrcoef(x[:, 1:].ravel(), x[:, :-1].ravel())[0, 1]) < 0.02
    # stream i + 1 is not stream i shifted by one draw
    assert np.mean(x[1:, 0] == x[:-1, 1]) < 0.01


def test_samples(device):
    n = N
    outs = [sk.zeros(n, dtype=t, device=device) for t in (sk.vec3,) * 5 + (sk.vec2,) * 4]
    sk.launch(samples, dim=n, inputs=[11], outputs=outs, device=device)
    sphere, surface, cube, hemi, hemi_s, disk, ring, square, tri = (o.numpy() for o in outs)
    r = np.linalg.norm(sphere, axis=1)
    assert r.max() <= 1.0 + 1e-6 and abs(np.mean(r**3) - 0.5) < 0.01  # r^3 uniform in a ball
    assert np.all(np.abs(sphere.mean(axis=0)) < 0.01)
    np.testing.assert_allclose(np.linalg.norm(surface, axis=1), 1.0, atol=1e-5)
    assert np.all(np.abs(surface.mean(axis=0)) < 0.01)
    assert np.all(np.abs(surface.var(axis=0) - 1 / 3) < 0.01)  # isotropic
    assert np.abs(cube).max() <= 0.5 and np.all(np.abs(cube.var(axis=0) - 1 / 12) < 0.002)
    assert hemi[:, 2].min() >= 0.0 and np.linalg.norm(hemi, axis=1).max() <= 1.0 + 1e-6
    assert hemi_s[:, 2].min() >= 0.0
    np.testing.assert_allclose(np.linalg.norm(hemi_s, axis=1), 1.0, atol=1e-5)
    assert abs(hemi_s[:, 2].mean() - 0.5) < 0.01  # z uniform in [0, 1] on a hemisphere (Archimedes)
    rd = np.linalg.norm(disk, axis=1)
    assert rd.max() <= 1.0 + 1e-6 and abs(np.mean(rd**2) - 0.5) < 0.01  # area-uniform
    np.testing.assert_allclose(np.linalg.norm(ring, axis=1), 1.0, atol=1e-5)
    assert np.abs(square).max() <= 0.5 and np.all(np.abs(square.mean(axis=0)) < 0.01)
    assert tri.min() >= 0.0 and (tri.sum(axis=1)).max() <= 1.0 + 1e-6
    np.testing.assert_allclose(tri.mean(axis=0), [1 / 3, 1 / 3], atol=0.01)


@pytest.mark.parametrize("lam", [0.5, 4.0, 30.0, 500.0])
def test_poisson(device, lam):
    out = sk.zeros(N, dtype=sk.uint32, device=device)
    sk.launch(poisson_draws, dim=N, inputs=[5, lam], outputs=[out], device=device)
    k = out.numpy().astype(np.float64)
    tol = 4 * math.sqrt(lam / N) + 0.01
    assert abs(k.mean() - lam) < tol and abs(k.var() / lam - 1) < 0.05


def _noise(device, p, seed=1):
    out = sk.zeros((8, len(p)), dtype=float, device=device)
    sk.launch(noises, dim=len(p), inputs=[seed, sk.array(p.astype(np.float32), dtype=sk.vec4, device=device)],
              outputs=[out], device=device)
    return out.numpy()


def test_noise(device):
    r = np.random.default_rng(0)
    p = r.uniform(-20, 20, (20_000, 4)).astype(np.float32)
    v = _noise(device, p)
    assert np.abs(v).max() < 1.0 and v.std(axis=1).min() > 0.05  # bounded, not constant
    # zero at lattice points
    lattice = r.integers(-10, 10, (100, 4)).astype(np.float32)
    assert np.abs(_noise(device, lattice)).max() < 1e-6
    # smooth: a tiny step changes it a little
    d = _noise(device, p[:1000] + 1e-3) - _noise(device, p[:1000])
    assert np.abs(d).max() < 0.02
    # deterministic, and the seed matters
    np.testing.assert_array_equal(v, _noise(device, p))
    assert np.mean(_noise(device, p[:1000], seed=2) == v[:, :1000]) < 0.05
    # periodic noise repeats with its periods (3, 5, 2, 4)
    shifted = _noise(device, p[:1000] + np.array([3, 5, 2, 4], np.float32) * np.array([1, -2, 3, 1], np.float32))
    np.testing.assert_allclose(shifted[4:], v[4:, :1000], atol=1e-3)


@needs_tape
def test_noise_gradient(device):
    r = np.random.default_rng(1)
    p = r.uniform(-5, 5, (200, 3)).astype(np.float32)
    pa = sk.array(p, dtype=sk.vec3, device=device, requires_grad=True)
    out = sk.zeros(len(p), dtype=float, device=device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(noise3, dim=len(p), inputs=[4, pa], outputs=[out], device=device)
    tape.backward(grads={out: sk.array(np.ones(len(p), np.float32), dtype=float, device=device)})
    g = pa.grad.numpy()
    h = 1e-2
    for d in range(3):
        e = np.zeros(3, np.float32)
        e[d] = h
        f = []
        for s in (1, -1):
            o = sk.zeros(len(p), dtype=float, device=device)
            sk.launch(noise3, dim=len(p), inputs=[4, sk.array(p + s * e, dtype=sk.vec3, device=device)],
                      outputs=[o], device=device)
            f.append(o.numpy().astype(np.float64))
        np.testing.assert_allclose(g[:, d], (f[0] - f[1]) / (2 * h), atol=2e-2, rtol=2e-2)


def test_curlnoise_divergence_free(device):
    r = np.random.default_rng(2)
    p = r.uniform(-3, 3, (500, 3)).astype(np.float32)
    h = 1e-2

    def field(q):
        o3 = sk.zeros(len(q), dtype=sk.vec3, device=device)
        o2 = sk.zeros(len(q), dtype=sk.vec2, device=device)
        sk.launch(curl, dim=len(q), inputs=[9, sk.array(q, dtype=sk.vec3, device=device)], outputs=[o3, o2],
                  device=device)
        return o3.numpy().astype(np.float64), o2.numpy().astype(np.float64)

    c3, c2 = field(p)
    assert np.abs(c3).max() > 0.1 and np.abs(c2).max() > 0.1
    div3 = np.zeros(len(p))
    div2 = np.zeros(len(p))
    for d in range(3):
        e = np.zeros(3, np.float32)
        e[d] = h
        (p3, p2), (m3, m2) = field(p + e), field(p - e)
        div3 += (p3[:, d] - m3[:, d]) / (2 * h)
        if d < 2:
            div2 += (p2[:, d] - m2[:, d]) / (2 * h)
    assert np.abs(div3).max() < 0.05 and np.abs(div2).max() < 0.05


@needs_tape
def test_random_values_replayed_in_adjoint(device):
    n = 1000
    p = sk.array(np.linspace(-1, 1, n).astype(np.float32), dtype=float, device=device, requires_grad=True)
    y = sk.zeros(n, dtype=float, device=device, requires_grad=True)
    u = sk.zeros(n, dtype=float, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(scaled, dim=n, inputs=[13, p], outputs=[y, u], device=device)
    tape.backward(grads={y: sk.array(np.ones(n, np.float32), dtype=float, device=device)})
    np.testing.assert_array_equal(p.grad.numpy(), u.numpy())  # dy/dp = the random number


_NATIVE_NOISE = r"""
#include "rand.h"
#include <cstdio>
#include <cmath>
using namespace sk;
template <unsigned N> int check(uint32 seed) {
    int fails = 0;
    uint32 s = rand_init(17);
    for (int t = 0; t < 200; ++t) {
        vec_t<N, float> x, g{};
        int32 p[4] = {3, 5, 2, 4}, dp = 0;
        for (unsigned d = 0; d < N; ++d) x[d] = randf(s, -6.0f, 6.0f);
        uint32 ds = 0;
        if constexpr (N == 1) adj_noise(seed, x[0], ds, g[0], 1.0f);
        else adj_noise(seed, x, ds, g, 1.0f);
        vec_t<N, float> gp{};
        if constexpr (N == 1) adj_pnoise(seed, x[0], p[0], ds, gp[0], dp, 1.0f);
        if constexpr (N == 2) adj_pnoise(seed, x, p[0], p[1], ds, gp, dp, dp, 1.0f);
        if constexpr (N == 3) adj_pnoise(seed, x, p[0], p[1], p[2], ds, gp, dp, dp, dp, 1.0f);
        if constexpr (N == 4) adj_pnoise(seed, x, p[0], p[1], p[2], p[3], ds, gp, dp, dp, dp, dp, 1.0f);
        for (unsigned d = 0; d < N; ++d) {
            const float h = 1e-2f;
            vec_t<N, float> xp = x, xm = x;
            xp[d] += h;
            xm[d] -= h;
            float fd, fdp;
            if constexpr (N == 1) {
                fd = (noise(seed, xp[0]) - noise(seed, xm[0])) / (2 * h);
                fdp = (pnoise(seed, xp[0], p[0]) - pnoise(seed, xm[0], p[0])) / (2 * h);
            } else if constexpr (N == 2) {
                fd = (noise(seed, xp) - noise(seed, xm)) / (2 * h);
                fdp = (pnoise(seed, xp, p[0], p[1]) - pnoise(seed, xm, p[0], p[1])) / (2 * h);
            } else if constexpr (N == 3) {
                fd = (noise(seed, xp) - noise(seed, xm)) / (2 * h);
                fdp = (pnoise(seed, xp, p[0], p[1], p[2]) - pnoise(seed, xm, p[0], p[1], p[2])) / (2 * h);
            } else {
                fd = (noise(seed, xp) - noise(seed, xm)) / (2 * h);
                fdp = (pnoise(seed, xp, p[0], p[1], p[2], p[3]) - pnoise(seed, xm, p[0], p[1], p[2], p[3])) / (2 * h);
            }
            if (std::fabs(g[d] - fd) > 1e-2f * (1 + std::fabs(fd)) || std::fabs(gp[d] - fdp) > 1e-2f * (1 + std::fabs(fdp))) {
                std::printf("noise %uD axis %u: adjoint %g / %g, central difference %g / %g\n", N, d, g[d], gp[d], fd, fdp);
                ++fails;
            }
        }
    }
    return fails;
}
int main() { return check<1>(5u) + check<2>(5u) + check<3>(5u) + check<4>(5u) ? 1 : 0; }
"""


def test_native_noise_adjoints(tmp_path):
    """adj_noise / adj_pnoise (rand.h) against central differences, straight in C++."""
    import os
    import shutil
    import subprocess

    cxx = os.environ.get("SIMKIT_CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    src, exe = tmp_path / "noise.cpp", tmp_path / "noise"
    src.write_text(_NATIVE_NOISE)
    native = os.path.join(os.path.dirname(sk.__file__), "kernels", "native")
    subprocess.run([cxx, "-std=c++17", "-O1", f"-I{native}", str(src), "-o", str(exe)], check=True,
                   capture_output=True, text=True)
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout


@sk.kernel
def curl_loss(seed: int, p: sk.array(dtype=sk.vec4), w: sk.vec3, out: sk.array(dtype=float)):
    i = sk.tid()
    state = sk.rand_init(seed)
    x = p[i]
    v2 = sk.curlnoise(state, sk.vec2(x[0], x[1]), octaves=3, gain=0.5)
    v3 = sk.curlnoise(state, sk.vec3(x[0], x[1], x[2]), 2, 2.0, 0.5)
    v4 = sk.curlnoise(state, x, 2, 1.7, 0.6)
    out[i] = v2[0] * w[0] + v2[1] * w[1] + sk.dot(v3, w) - 0.5 * sk.dot(v4, w)


@needs_tape
def test_curlnoise_gradient(device):
    """curlnoise's adjoint (the noise's Hessian) against central differences, in 2, 3 and 4 dimensions."""
    r = np.random.default_rng(5)
    p = r.uniform(-3, 3, (40, 4)).astype(np.float32)
    w = sk.vec3(1.0, -0.5, 0.25)
    pa = sk.array(p, dtype=sk.vec4, device=device, requires_grad=True)
    out = sk.zeros(len(p), dtype=float, device=device, requires_grad=True)
    with sk.Tape() as tape:
        sk.launch(curl_loss, dim=len(p), inputs=[7, pa, w, out], device=device)
    tape.backward(grads={out: np.ones(len(p), np.float32)})
    h = 1e-3
    for d in range(4):
        e = np.zeros(4, np.float32)
        e[d] = h
        f = []
        for s in (1, -1):
            o = sk.zeros(len(p), dtype=float, device=device)
            sk.launch(curl_loss, dim=len(p), inputs=[7, sk.array(p + s * e, dtype=sk.vec4, device=device), w, o],
                      device=device)
            f.append(o.numpy().astype(np.float64))
        np.testing.assert_allclose(pa.grad.numpy()[:, d], (f[0] - f[1]) / (2 * h), atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize("cdf", [
    np.cumsum(np.arange(1.0, 11.0)) / 55.0,   # weights 1..10
    np.array([0.0, 0.0, 0.5, 0.5, 1.0]),      # empty bins are never drawn
    np.array([0.25, 0.5]),                    # a CDF that ends below 1: the rest goes to the last bin
])
def test_sample_cdf(device, cdf):
    n = N
    c = sk.array(cdf.astype(np.float32), dtype=float, device=device)
    idx, ref, same = (sk.zeros(n, dtype=int, device=device) for _ in range(3))
    sk.launch(cdf_draws, dim=n, inputs=[5, c], outputs=[idx, ref, same], device=device)
    idx, ref = idx.numpy(), ref.numpy()
    np.testing.assert_array_equal(idx, ref)
    assert same.numpy().all()
    assert idx.min() >= 0 and idx.max() <= len(cdf) - 1
    probs = np.diff(np.concatenate([[0.0], np.minimum(cdf, 1.0)]))
    probs[-1] += 1.0 - min(cdf[-1], 1.0)
    freq = np.bincount(idx, minlength=len(cdf)) / n
    np.testing.assert_allclose(freq, probs, atol=0.006)
    assert np.all(freq[probs == 0.0] == 0.0)
