"""Optimizers that update arrays in place with kernels, from their ``.grad``.

Example::

    opt = sk.optim.Adam([velocity], lr=0.05)
    for it in range(100):
        tape = sk.Tape()
        with tape:
            loss = simulate(velocity)
        tape.backward(loss)
        opt.step()
        tape.zero()

Parameters may hold float scalars or vectors/matrices of floats (updated
component-wise); they must be contiguous and have ``requires_grad=True``.
"""
from __future__ import annotations

from .kernels import lang as sk
from .kernels import types as T
from .kernels.decorators import kernel
from .kernels.types import Any
from .runtime.array import array, zeros
from .runtime.launch import launch
from .runtime.tape import Tape
from .kernels.backends.cuda.stream import ScopedCapture, capture_launch


@kernel
def _sgd_step(x: array(dtype=Any), g: array(dtype=Any), b: array(dtype=Any), lr: Any, momentum: Any,
              dampening: Any, nesterov: int, first: int):
    i = sk.tid()
    d = g[i]
    if momentum != 0.0:
        if first == 1:
            b[i] = d
        else:
            b[i] = momentum * b[i] + (1.0 - dampening) * d
        if nesterov == 1:
            d = d + momentum * b[i]
        else:
            d = b[i]
    x[i] = x[i] - lr * d


@kernel
def _adam_step(x: array(dtype=Any), g: array(dtype=Any), m: array(dtype=Any), v: array(dtype=Any), lr: Any,
               b1: Any, b2: Any, eps: Any, c1: Any, c2: Any):
    i = sk.tid()
    gi = g[i]
    m[i] = b1 * m[i] + (1.0 - b1) * gi
    v[i] = b2 * v[i] + (1.0 - b2) * gi * gi
    mhat = m[i] / c1
    vhat = v[i] / c2
    x[i] = x[i] - lr * mhat / (sk.sqrt(vhat) + eps)


def _scalar_view(a: array) -> array:
    """The same memory as a flat array of its scalar type (vec3 (n,) -> float (3n,))."""
    if not a.is_contiguous:
        raise ValueError("optimizer parameters must be contiguous arrays")
    s = T.scalar_of(a.dtype)
    n = a.size * (a.dtype._length if T.is_value(a.dtype) else 1)
    return array(ptr=a.ptr, dtype=s, shape=(n,), device=a.device, _owner=a)


class Optimizer:
    def __init__(self, params):
        self.params = list(params)
        for p in self.params:
            if not p.requires_grad:
                raise ValueError("every optimizer parameter needs requires_grad=True")
            if not T.is_float(T.scalar_of(p.dtype)):
                raise TypeError(f"cannot optimize an array of {T.type_name(p.dtype)}")
        self.flat = [_scalar_view(p) for p in self.params]
        self.grads = [_scalar_view(p.grad) for p in self.params]

    def _scalar(self, p, value):
        return T.scalar_of(p.dtype)._np.type(value)

    def _bump(self, p):
        p._overwritten()


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (PyTorch's update rule)."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 nesterov: bool = False):
        super().__init__(params)
        self.lr, self.momentum, self.dampening, self.nesterov = lr, momentum, dampening, nesterov
        self.buffers = [zeros(f.size, dtype=f.dtype, device=f.device) for f in self.flat]
        self.first = True

    def step(self):
        for p, x, g, b in zip(self.params, self.flat, self.grads, self.buffers):
            s = lambda v: self._scalar(p, v)  # noqa: E731
            launch(_sgd_step, dim=x.size, inputs=[x, g, b, s(self.lr), s(self.momentum), s(self.dampening),
                                                  int(self.nesterov), int(self.first)], device=x.device,
                   record_tape=False)
            self._bump(p)
        self.first = False


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(params)
        self.lr, self.b1, self.b2, self.eps = lr, betas[0], betas[1], eps
        self.m = [zeros(f.size, dtype=f.dtype, device=f.device) for f in self.flat]
        self.v = [zeros(f.size, dtype=f.dtype, device=f.device) for f in self.flat]
        self.t = 0

    def step(self):
        self.t += 1
        c1 = 1.0 - self.b1 ** self.t
        c2 = 1.0 - self.b2 ** self.t
        for p, x, g, m, v in zip(self.params, self.flat, self.grads, self.m, self.v):
            s = lambda val: self._scalar(p, val)  # noqa: E731
            launch(_adam_step, dim=x.size, inputs=[x, g, m, v, s(self.lr), s(self.b1), s(self.b2), s(self.eps),
                                                  s(c1), s(c2)], device=x.device, record_tape=False)
            self._bump(p)



def minimize(forward, optimizer, iters: int, *, tol: float | None = None, progress=None,
             graph: bool | None = None, measure_final: bool = False) -> list:
    """Gradient descent: up to ``iters`` times, call ``forward()`` under a new ``Tape`` — it returns
    ``(loss, metric)``, the scalar loss array to differentiate and a float to record (or a function
    of no arguments that returns it) — and, unless ``metric < tol``, run ``backward``,
    ``optimizer.step()`` and zero the gradients. ``progress(i, iters)`` is called after each
    evaluation. Returns the recorded metrics (their last is the one of the final parameters when
    ``tol`` was reached). ``measure_final``: after the last step (``tol`` not reached), evaluate once
    more and record the final parameters' metric too (``iters + 1`` metrics).

    ``graph``: on a GPU, from the second iteration on, replay ``forward()`` and the backward pass as
    one CUDA graph (and the zeroing of the gradients as another), as Warp's examples do. ``forward()``
    must then issue the same launches on the same arrays each time and read nothing back to the host:
    it returns its metric as a function, called after the graph has run. None (default): a graph
    when the loss is on a CUDA device and the metric is a function; False: never.

    Example::

        distances = sk.optim.minimize(lambda: shoot(velocity), sk.optim.Adam([velocity], lr=0.05),
                                      iters=60, tol=0.005)
    """
    if graph not in (None, True, False):
        raise TypeError(f"minimize: graph must be None, True or False, got {graph!r}")
    metrics = []
    captured = None  # (forward and backward, zeroing the gradients, tape, metric) once captured
    for it in range(iters):
        if captured is None:
            tape = Tape()
            with tape:
                loss, metric = forward()
            if it == 0:
                graph = _use_graph(graph, loss, metric)
        else:
            run, zero, tape, metric = captured
            capture_launch(run)
        metrics.append(float(metric() if callable(metric) else metric))
        if progress:
            progress(it + 1, iters)
        if tol is not None and metrics[-1] < tol:
            break
        if captured is None:
            tape.backward(loss)
            optimizer.step()
            tape.zero()
            if graph and it + 1 < iters:
                captured = _capture_iteration(forward, loss.device)
        else:
            optimizer.step()
            capture_launch(zero)
    else:
        if measure_final:
            metrics.append(_evaluate(forward, captured))
    if progress and len(metrics) < iters:
        progress(iters, iters)
    return metrics


def _evaluate(forward, captured) -> float:
    """One more evaluation's metric (the captured graph, when there is one: its backward pass too)."""
    if captured is not None:
        capture_launch(captured[0])
        capture_launch(captured[1])  # (its gradients zeroed, as a direct evaluation leaves them)
        metric = captured[3]
    else:
        with Tape():
            _, metric = forward()
    return float(metric() if callable(metric) else metric)


def _use_graph(graph, loss, metric) -> bool:
    """Does ``minimize`` capture (see its ``graph``)? Raises where ``graph=True`` cannot be honoured."""
    if graph is False:
        return False
    if graph is None:
        return loss.device.is_cuda and callable(metric)
    if not loss.device.is_cuda:
        raise ValueError(f"minimize(graph=True): CUDA graphs need a CUDA device; the loss is on {loss.device.alias}")
    if not callable(metric):
        raise ValueError("minimize(graph=True): forward() must return its metric as a function of no arguments "
                         "(it is read after the captured graph has run; a capture cannot read back)")
    return True


def _capture_iteration(forward, device) -> tuple:
    """forward() and its backward pass captured into one graph, and the zeroing of the gradients its
    tape records into another."""
    with ScopedCapture(device) as cap:
        tape = Tape()
        with tape:
            loss, metric = forward()
        tape.backward(loss)
    with ScopedCapture(device) as zero:
        tape.zero()
    return cap.graph, zero.graph, tape, metric
