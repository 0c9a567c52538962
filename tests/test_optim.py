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


def _fit(device, optimizer, graph, metric_as_function=True):
    """minimize on the quadratic of the test above: (metrics, final parameter)."""
    target = sk.array(np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]]), dtype=sk.vec3, device=device)
    p = sk.array(np.array([[1.0, 2.0, 2.0], [0.5, 0.0, 0.0]]), dtype=sk.vec3, requires_grad=True, device=device)
    loss = sk.zeros(1, requires_grad=True, device=device)

    def forward():
        loss.zero_()
        sk.launch(quadratic, 2, inputs=[p, target], outputs=[loss], device=device)
        metric = lambda: float(np.sqrt(loss.numpy()[0]))  # noqa: E731
        return loss, metric if metric_as_function else metric()

    opt = sk.optim.SGD([p], lr=0.25) if optimizer == "sgd" else sk.optim.Adam([p], lr=0.1)
    return sk.optim.minimize(forward, opt, 40, tol=1e-3, graph=graph), p.numpy()


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_minimize_replays_iterations_as_cuda_graphs(cuda_device, monkeypatch, optimizer):
    # on a GPU, with the metric as a function: from the second iteration on, forward and backward
    # are one graph launch, and the zeroing of the gradients another; the same numbers as the CPU's
    import simkit.optim as optim

    launches = []
    real = optim.capture_launch
    monkeypatch.setattr(optim, "capture_launch", lambda graph: (launches.append(graph), real(graph)))
    metrics, p = _fit(cuda_device, optimizer, None)
    n = len(metrics)
    stopped = metrics[-1] < 1e-3                  # (then the last iteration zeroes nothing)
    assert n > 5 and len(launches) == 2 * (n - 1) - stopped and len(set(map(id, launches))) == 2
    ref_metrics, ref_p = _fit("cpu", optimizer, None)
    np.testing.assert_allclose(metrics, ref_metrics, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(p, ref_p, atol=1e-5)
    launches.clear()
    direct, _ = _fit(cuda_device, optimizer, False)
    assert not launches and len(direct) == n


def test_minimize_graph_argument_errors(cuda_device):
    with pytest.raises(ValueError, match="need a CUDA device; the loss is on cpu"):
        _fit("cpu", "sgd", True)
    with pytest.raises(ValueError, match="must return its metric as a function"):
        _fit(cuda_device, "sgd", True, metric_as_function=False)
    with pytest.raises(TypeError, match="graph must be None, True or False"):
        _fit("cpu", "sgd", "yes")
    assert len(_fit(cuda_device, "sgd", None, metric_as_function=False)[0]) > 5   # (a float metric: no graph)


@pytest.mark.parametrize("on_gpu", [False, True])
def test_minimize_measures_the_final_parameters(cuda_device, on_gpu):
    # measure_final: iters steps and iters + 1 metrics, the last one the final parameters' own (on a
    # GPU, with the iterations replayed as graphs: the same numbers)
    device = cuda_device if on_gpu else "cpu"
    target = sk.array(np.array([[1.0, 2.0, 3.0]]), dtype=sk.vec3, device=device)
    p = sk.array(np.array([[1.0, 2.0, 2.0]]), dtype=sk.vec3, requires_grad=True, device=device)
    loss = sk.zeros(1, requires_grad=True, device=device)

    def forward():
        loss.zero_()
        sk.launch(quadratic, 1, inputs=[p, target], outputs=[loss], device=device)
        return loss, lambda: float(np.sqrt(loss.numpy()[0]))

    metrics = sk.optim.minimize(forward, sk.optim.SGD([p], lr=0.25), 4, measure_final=True)
    np.testing.assert_allclose(metrics, 0.5 ** np.arange(5), rtol=1e-5)     # SGD halves the error per step
    np.testing.assert_allclose(np.linalg.norm(p.numpy() - target.numpy()), metrics[-1], rtol=1e-5)
    assert not p.grad.numpy().any()                                          # (left zeroed, as each step)
