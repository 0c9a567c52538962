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


# ---------------------------------------------------------------- Warp's interface: step(grad), set_params, state

def _numpy_sgd(x, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, state=np.float64):
    """PyTorch's/Warp's SGD, in the precision ``state`` (x rounded to its own dtype after each step)."""
    x, b = x.copy(), None
    for g in grads:
        d = g.astype(state) + state(weight_decay) * x.astype(state)
        if momentum:
            b = d if b is None else state(momentum) * b + state(1 - dampening) * d
            d = d + state(momentum) * b if nesterov else b
        x = (x.astype(state) - state(lr) * d).astype(x.dtype)
    return x


def _numpy_adam_steps(x, grads, lr, b1=0.9, b2=0.999, eps=1e-8, state=np.float64):
    """Adam with bias correction, in the precision ``state`` (x rounded to its own dtype after each step)."""
    x, m, v = x.copy(), 0, 0
    for t, g in enumerate(grads, 1):
        g = g.astype(state)
        m = state(b1) * m + state(1 - b1) * g
        v = state(b2) * v + state(1 - b2) * g * g
        mhat, vhat = m / state(1 - b1 ** t), v / state(1 - b2 ** t)
        x = (x.astype(state) - state(lr) * mhat / (np.sqrt(vhat) + state(eps))).astype(x.dtype)
    return x


DTYPES = {"float16": (sk.float16, np.float16, np.float32, (5,)), "float32": (sk.float32, np.float32, np.float32, (5,)),
          "float64": (sk.float64, np.float64, np.float64, (2, 3)), "vec3": (sk.vec3, np.float32, np.float32, (4, 3)),
          "mat22d": (sk.mat22d, np.float64, np.float64, (3, 2, 2)), "vec2h": (sk.vec2h, np.float16, np.float32, (3, 2))}
SETTINGS = {"sgd": {}, "momentum": {"momentum": 0.9}, "dampening": {"momentum": 0.8, "dampening": 0.3},
            "nesterov": {"momentum": 0.9, "nesterov": True}, "weight_decay": {"momentum": 0.5, "weight_decay": 0.1},
            "adam": None}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("form", ["step()", "step(grad)"])
def test_optimizers_match_numpy(device, dtype, setting, form):
    # two parameter arrays (the second of another shape), four steps of random gradients; the
    # update in the state's precision (float32 for float16 parameters), the parameter rounded once per step
    sk_dtype, np_dtype, state, shape = DTYPES[dtype]
    rng = np.random.default_rng(7)
    x0 = [rng.uniform(-1, 1, shape).astype(np_dtype), rng.uniform(-1, 1, (2,) + shape[1:]).astype(np_dtype)]
    grads = [[rng.uniform(-1, 1, x.shape).astype(np_dtype) for _ in range(4)] for x in x0]
    params = [sk.array(x, dtype=sk_dtype, requires_grad=form == "step()", device=device) for x in x0]
    lr = 0.1 if setting != "adam" else 0.05
    kw = SETTINGS[setting]
    opt = sk.optim.Adam(params, lr=lr) if setting == "adam" else sk.optim.SGD(params, lr=lr, **kw)
    for k in range(4):
        if form == "step()":
            for p, g in zip(params, grads):
                p.grad.assign(sk.array(g[k], dtype=sk_dtype, device=device))
            opt.step()
        else:
            opt.step([sk.array(g[k], dtype=sk_dtype, device=device) for g in grads])
    assert opt.t == 4
    for p, x, g in zip(params, x0, grads):
        if setting == "adam":
            expect = _numpy_adam_steps(x, g, lr, state=state)
        else:
            expect = _numpy_sgd(x, g, lr, **kw, state=state)
        tol = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-12}[np_dtype]
        np.testing.assert_allclose(p.numpy().astype(np.float64), expect, rtol=tol, atol=tol)
    state_dtype = {sk.float16: sk.float32, sk.vec2h: sk.vec2}.get(sk_dtype, sk_dtype)
    for a in (opt.m + opt.v if setting == "adam" else opt.b):
        assert a.dtype is state_dtype and a.device == params[0].device
    assert [a.shape for a in (opt.m if setting == "adam" else opt.b)] == [p.shape for p in params]


def test_set_params_later_keeps_fitting_state_and_reset_zeroes_it(device):
    # params=None, then set_params; the state arrays follow the parameters' shapes, and set_params with
    # parameters of the same shape and dtype keeps them (and what they hold); reset: the next step is a first one
    opt = sk.optim.SGD(lr=0.1, momentum=0.9)
    assert opt.params is None and opt.b == []
    a = sk.array(np.ones(3, np.float32), device=device)
    opt.set_params([a])
    opt.step([sk.array(np.ones(3, np.float32), device=device)])
    np.testing.assert_allclose(a.numpy(), 0.9)
    b0 = opt.b[0]
    same = sk.array(np.ones(3, np.float32), device=device)
    opt.set_params([same, sk.zeros(2, dtype=sk.vec3, device=device)])
    assert opt.b[0] is b0 and opt.b[1].dtype is sk.vec3 and opt.b[1].shape == (2,)
    opt.step([sk.array(np.ones(3, np.float32), device=device), sk.zeros(2, dtype=sk.vec3, device=device)])
    np.testing.assert_allclose(same.numpy(), 1 - 0.1 * 1.9, rtol=1e-6)       # b = 0.9 * 1 + 1: momentum kept
    opt.set_params([sk.zeros(4, device=device)])
    assert opt.b[0] is not b0 and opt.b[0].shape == (4,) and not opt.b[0].numpy().any()
    opt.reset_internal_state()
    assert opt.t == 0
    adam = sk.optim.Adam([a], lr=0.1)
    adam.step([sk.array(np.full(3, 2.0, np.float32), device=device)])
    assert adam.m[0].numpy().any() and adam.t == 1
    adam.reset_internal_state()
    assert not adam.m[0].numpy().any() and not adam.v[0].numpy().any() and adam.t == 0


def test_state_follows_parameters_to_another_device(cuda_device):
    # a parameter replaced by one of the same shape and dtype on another device: its state moves with it
    def cpu(fill=0.0):
        return sk.full(4, fill, dtype=sk.float32, device="cpu")

    for opt in (sk.optim.Adam([cpu(), cpu()], lr=0.02), sk.optim.SGD([cpu(), cpu()], momentum=0.9)):
        names = ("m", "v") if isinstance(opt, sk.optim.Adam) else ("b",)
        for n in names:
            getattr(opt, n)[0].fill_(1.0)
        kept = [getattr(opt, n)[1] for n in names]
        moved = sk.zeros(4, device=cuda_device)
        opt.set_params([moved, opt.params[1]])
        for n, k in zip(names, kept):
            assert getattr(opt, n)[0].device == moved.device and (getattr(opt, n)[0].numpy() == 1.0).all()
            assert getattr(opt, n)[1] is k
        opt.step([sk.ones(4, device=cuda_device), cpu(1.0)])
        assert (moved.numpy() < 0).all() and (opt.params[1].numpy() < 0).all()
        opt.set_params([cpu(), opt.params[1]])
        assert all(getattr(opt, n)[0].device.alias == "cpu" and getattr(opt, n)[0].numpy().any() for n in names)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_optimizer_errors(device, name):
    cls = getattr(sk.optim, name)
    with pytest.raises(RuntimeError, match=rf"{name} parameters must be set before calling step\(\), got None"):
        cls().step([])
    p = sk.zeros(2, device=device)
    opt = cls([p])
    with pytest.raises(ValueError, match=r"reads each parameter's .grad, and parameter 0 has none.*requires_grad"):
        opt.step()
    with pytest.raises(TypeError, match=f"{name} gradient dtype must match parameter dtype float32, got int32"):
        opt.step([sk.zeros(2, dtype=sk.int32, device=device)])
    with pytest.raises(TypeError, match=f"{name} gradient dtype must match parameter dtype float32, got float64"):
        opt.step([sk.zeros(2, dtype=sk.float64, device=device)])
    with pytest.raises(ValueError, match=rf"{name} gradient shape must match parameter shape \(2,\), got \(2, 1\)"):
        opt.step([sk.zeros((2, 1), device=device)])
    with pytest.raises(ValueError, match=r"2 gradient arrays for 1 parameters"):
        opt.step([p, p])
    with pytest.raises(TypeError, match=r"grad must be a list of arrays, one per parameter, got array"):
        opt.step(p)
    with pytest.raises(ValueError, match=r"gradient must be a contiguous array"):
        opt.step([sk.zeros(4, device=device)[::2]])
    with pytest.raises(TypeError, match=r"parameter 1, an array of int32 \(its components must be float16"):
        cls([p, sk.zeros(2, dtype=sk.int32)])
    with pytest.raises(ValueError, match="parameter 0 is not a contiguous array"):
        cls([sk.zeros(4, device=device)[::2]])
    with pytest.raises(TypeError, match="params must be a list of arrays, got array"):
        cls(p)
    assert not p.numpy().any()                                              # (no error stepped)


def test_gradient_on_another_device_is_rejected(cuda_device):
    opt = sk.optim.Adam([sk.zeros(2, device="cpu")])
    with pytest.raises(ValueError, match="Adam gradient device must match parameter device cpu, got cuda:0"):
        opt.step([sk.zeros(2, device=cuda_device)])


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


def test_bfloat16_parameters_keep_float32_state():
    """bfloat16 parameters, as float16 ones: float32 state, the update in float32, the parameter rounded to
    bfloat16 once per step (numpy with ml_dtypes' bfloat16 as the reference)."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    rng = np.random.default_rng(11)
    x0 = rng.uniform(-1, 1, 6).astype(np.float32).astype(bf16)
    grads = [rng.uniform(-1, 1, 6).astype(np.float32).astype(bf16) for _ in range(4)]
    for make, reference in ((lambda p: sk.optim.Adam(p, lr=0.05),
                             lambda: _numpy_adam_steps(x0, grads, 0.05, state=np.float32)),
                            (lambda p: sk.optim.SGD(p, lr=0.1, momentum=0.9),
                             lambda: _numpy_sgd(x0, grads, 0.1, momentum=0.9, state=np.float32))):
        p = sk.array(x0, dtype=sk.bfloat16)
        opt = make([p])
        for g in grads:
            opt.step([sk.array(g, dtype=sk.bfloat16)])
        assert all(a.dtype is sk.float32 for a in getattr(opt, "m", []) + getattr(opt, "v", []) + getattr(opt, "b", []))
        np.testing.assert_allclose(p.numpy().astype(np.float64), reference().astype(np.float64), rtol=1e-2, atol=1e-2)
