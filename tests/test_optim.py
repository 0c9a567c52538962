"""Optimizers against reference update rules (numpy) and on a quadratic loss."""
import numpy as np
import pytest

import simkit as sk


@sk.kernel
def quadratic(p: sk.array(dtype=sk.vec3), target: sk.array(dtype=sk.vec3), loss: sk.array(dtype=float)):
    i = sk.tid()
    d = p[i] - target[i]
    sk.atomic_add(loss, 0, sk.dot(d, d))


def _grad_step(p, target, device):
    loss = sk.zeros(1, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(quadratic, p.shape[0], inputs=[p, target], outputs=[loss], device=device)
    tape.backward(loss=loss)
    return float(loss.numpy()[0]), p.grad.numpy().copy()


def _numpy_adam(x, grads, lr, b1, b2, eps):
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    for t, g in enumerate(grads, 1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        x = x - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    return x


@pytest.mark.parametrize("name", ["sgd", "sgd_momentum", "adam"])
def test_optimizer_matches_reference_and_converges(device, name):
    rng = np.random.default_rng(3)
    p0 = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
    tv = rng.uniform(-1, 1, (8, 3)).astype(np.float32)
    p = sk.array(p0, dtype=sk.vec3, requires_grad=True, device=device)
    target = sk.array(tv, dtype=sk.vec3, device=device)
    if name == "adam":
        opt = sk.optim.Adam([p], lr=0.05)
    else:
        opt = sk.optim.SGD([p], lr=0.1, momentum=0.9 if name == "sgd_momentum" else 0.0)
    x, buf, grads = p0.astype(np.float64), np.zeros_like(p0, dtype=np.float64), []
    losses = []
    for it in range(60):
        loss, g = _grad_step(p, target, device)
        losses.append(loss)
        grads.append(g.astype(np.float64))
        if it < 5:  # reference update rules for the first steps
            if name == "sgd":
                x = x - 0.1 * grads[-1]
            elif name == "sgd_momentum":
                buf = grads[-1] if it == 0 else 0.9 * buf + grads[-1]
                x = x - 0.1 * buf
        opt.step()
        p.grad.zero_()
        if it == 4:
            expect = _numpy_adam(p0.astype(np.float64), grads, 0.05, 0.9, 0.999, 1e-8) if name == "adam" else x
            np.testing.assert_allclose(p.numpy(), expect, rtol=1e-4, atol=1e-5)
    assert losses[-1] < 1e-2 * losses[0]


def test_optimizer_rejects_arrays_without_gradients(device):
    with pytest.raises(ValueError, match="requires_grad"):
        sk.optim.SGD([sk.zeros(3, device=device)])


def test_minimize_runs_gradient_descent_until_the_tolerance():
    # SGD at lr 0.25 on |p - t|^2 halves the error every step: the distance goes 1, 1/2, 1/4, ...
    target = sk.array(np.array([[1.0, 2.0, 3.0]]), dtype=sk.vec3)
    p = sk.array(np.array([[1.0, 2.0, 2.0]]), dtype=sk.vec3, requires_grad=True)
    loss = sk.zeros(1, requires_grad=True)
    calls = []

    def forward():
        loss.zero_()
        sk.launch(quadratic, 1, inputs=[p, target], outputs=[loss])
        return loss, np.sqrt(loss.numpy()[0])

    metrics = sk.optim.minimize(forward, sk.optim.SGD([p], lr=0.25), 50, tol=1e-3,
                                progress=lambda i, n: calls.append((i, n)))
    np.testing.assert_allclose(metrics, 0.5 ** np.arange(len(metrics)), rtol=1e-5)
    assert metrics[-1] < 1e-3 <= metrics[-2] and len(metrics) == 11
    np.testing.assert_allclose(p.numpy(), target.numpy(), atol=1e-3)
    assert calls[-1] == (50, 50) and calls[0] == (1, 50)
