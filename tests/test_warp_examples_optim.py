"""warp-lang's gradient-based examples (warp/examples/optim) run unchanged under ``import simkit as wp``
(``warp.optim`` read as ``simkit.optim``; tests/warp_examples.py), on the CPU, small:

- ``particle_repulsion``: one frame; positions and velocities against warp-lang's.
- ``fluid_checkpoint`` and ``fluid_checkpoint_custom_backward``: a checkpointed rollout (4 steps in segments
  of 2, 3 Jacobi iterations), forward and backward; the loss and the gradients of the initial velocities
  against warp-lang's.
- ``diffray``: a differentiable ray caster (mesh ray queries, texture lookups, Lambertian lights) whose
  gradient with respect to the mesh's rotation (a quaternion) is checked pixel by pixel against central
  finite differences, at pixels that stay on the surface and where the colour is smooth (one-sided
  differences agree). warp-lang 1.19's gradient of such pixels did not
  match the finite differences when this test was written (pixel 608 of the 24-row image: its red and green
  channels' gradients are mixed, their sum is right), so the image is compared with warp-lang's and the
  gradient with the finite differences.

Not run: ``navier_stokes_perturbation`` (tiles, out of scope).
"""
import numpy as np
import pytest

import warp_examples

pytestmark = pytest.mark.skipif(warp_examples.examples_dir("optim") is None, reason="warp-lang is not installed")


def _close(got, want, rtol):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=rtol * max(np.abs(want).max(), 1e-30))


def test_particle_repulsion_frame_matches_warp(warp_cpu, capsys):
    got = warp_examples.run("optim/particle_repulsion", "simkit")
    want = warp_examples.run("optim/particle_repulsion", "warp")
    _close(got["positions"], want["positions"], 1e-6)
    _close(got["velocities"], want["velocities"], 1e-4)  # (forces summed over neighbours in another order)


@pytest.mark.parametrize("name", ["fluid_checkpoint", "fluid_checkpoint_custom_backward"])
def test_checkpointed_fluid_gradients_match_warp(name, warp_cpu, capsys):
    out = {}
    for backend in ("simkit", "warp"):
        ex = warp_examples.build(f"optim/{name}", backend, sim_steps=4, pressure_iterations=3, segment_size=2)
        ex.forward()
        ex.backward()
        out[backend] = [ex.loss.numpy(), ex.vx_arrays[0].grad.numpy(), ex.vy_arrays[0].grad.numpy()]
    assert np.abs(out["warp"][1]).max() > 0 and np.abs(out["warp"][2]).max() > 0
    _close(out["simkit"][0], out["warp"][0], 1e-4)  # (a sum of 512 x 512 float32 terms)
    for got, want in zip(out["simkit"][1:], out["warp"][1:]):
        _close(got, want, 1e-4)


def test_diffray_gradients_match_finite_differences(warp_cpu, capsys):
    import simkit as sk

    want = warp_examples.build("optim/diffray", "warp", height=24)
    want.forward()
    ex = warp_examples.build("optim/diffray", "simkit", height=24)
    ex.forward()
    pixels = ex.pixels.numpy()
    _close(pixels, want.pixels.numpy(), 1e-5)
    _close(ex.loss.numpy(), want.loss.numpy(), 1e-5)

    width = ex.width
    lit = pixels.sum(axis=1) > 0.05
    interior = [k for k in range(len(pixels)) if all(
        0 <= k + dy * width + dx < len(pixels) and lit[k + dy * width + dx] for dy in (-2, 0, 2) for dx in (-2, 0, 2))]
    assert len(interior) > 20
    rot0 = ex.render_mesh.rot.numpy().copy()

    def colour(k, rot):
        ex.render_mesh.rot.assign(rot.astype(np.float32))
        ex.forward()
        return ex.pixels.numpy()[k].astype(np.float64)

    checked = 0
    for k in interior[::2]:
        if checked == 4:
            break
        eps, c0 = 3e-4, colour(k, rot0)
        ahead, behind = np.zeros((3, 4)), np.zeros((3, 4))
        for j in range(4):
            d = np.zeros_like(rot0)
            d[0, j] = eps
            ahead[:, j] = (colour(k, rot0 + d) - c0) / eps
            behind[:, j] = (c0 - colour(k, rot0 - d)) / eps
        fd = (ahead + behind) / 2
        if np.abs(ahead - behind).max() > 0.03 * np.abs(fd).max():
            continue  # a kink here (the face under the pixel changes, a light's clamp): no derivative to check
        ad = np.zeros((3, 4))
        for c in range(3):
            ex.render_mesh.rot.assign(rot0)
            tape = sk.Tape()
            with tape:
                ex.forward()
            seed = np.zeros((len(pixels), 3), np.float32)
            seed[k, c] = 1.0
            tape.backward(grads={ex.pixels: sk.array(seed, dtype=sk.vec3)})
            ad[c] = tape.gradients[ex.render_mesh.rot].numpy()[0]
            tape.zero()
        assert np.abs(fd).max() > 0.05
        np.testing.assert_allclose(ad, fd, atol=0.015 * np.abs(fd).max())
        checked += 1
    assert checked == 4
