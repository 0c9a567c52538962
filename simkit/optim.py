"""Optimizers that update arrays in place with kernels: ``SGD`` and ``Adam``.

``step()`` reads each parameter's ``.grad``; ``step(grad)`` takes the gradients as a list of arrays, one per
parameter, as ``warp.optim`` does (so code written for Warp runs unchanged). Example::

    opt = sk.optim.Adam([velocity], lr=0.05)
    for it in range(100):
        tape = sk.Tape()
        with tape:
            loss = simulate(velocity)
        tape.backward(loss)
        opt.step()                      # or opt.step([tape.gradients[velocity]])
        tape.zero()

Parameters are contiguous arrays of any shape whose dtype is a float scalar (float16, float32, float64) or a
vector/matrix/quaternion/transform of floats, updated component-wise. ``params`` may be None, given later with
``set_params``; ``reset_internal_state()`` zeroes the step count and the state (momentum, moments). The state
arrays (``SGD.b``, ``Adam.m`` and ``Adam.v``, one per parameter, of its shape) have the parameter's dtype, with
float16 and bfloat16 components held as float32; the update is computed in that precision and rounded once.
"""
from __future__ import annotations

from collections.abc import Sequence

from .kernels import lang as sk
from .kernels import types as T
from .kernels.decorators import kernel
from .kernels.types import Any
from .runtime.array import array, zeros
from .runtime.launch import launch, probing_capture
from .runtime.tape import Tape
from .kernels.backends.cuda.stream import ScopedCapture, capture_launch

__all__ = ["Adam", "Optimizer", "SGD", "minimize"]


# The kernels run over the scalar components (flat views): x the parameter, g its gradient (x's dtype), the state
# and the hyper-parameters in the state's precision (float32 for float16 and bfloat16 parameters).
@kernel
def _sgd_step(x: array(dtype=Any), g: array(dtype=Any), b: array(dtype=Any), lr: Any, momentum: Any,
              dampening: Any, weight_decay: Any, nesterov: int, first: int):
    i = sk.tid()
    xi = b.dtype(x[i])
    d = b.dtype(g[i])
    if weight_decay != 0.0:
        d = d + weight_decay * xi
    if momentum != 0.0:
        if first == 1:
            b[i] = d
        else:
            b[i] = momentum * b[i] + (1.0 - dampening) * d
        if nesterov == 1:
            d = d + momentum * b[i]
        else:
            d = b[i]
    x[i] = x.dtype(xi - lr * d)


@kernel
def _adam_step(x: array(dtype=Any), g: array(dtype=Any), m: array(dtype=Any), v: array(dtype=Any), lr: Any,
               b1: Any, b2: Any, eps: Any, c1: Any, c2: Any):
    i = sk.tid()
    gi = m.dtype(g[i])
    m[i] = b1 * m[i] + (1.0 - b1) * gi
    v[i] = b2 * v[i] + (1.0 - b2) * gi * gi
    mhat = m[i] / c1
    vhat = v[i] / c2
    x[i] = x.dtype(m.dtype(x[i]) - lr * mhat / (sk.sqrt(vhat) + eps))


_VALUE_KINDS = {"vector": lambda t, s: T.vector(t._shape[0], s), "matrix": lambda t, s: T.matrix(t._shape, s),
                "quaternion": lambda t, s: T.quaternion(s), "transformation": lambda t, s: T.transformation(s)}


def _state_dtype(dtype):
    """The dtype of an optimizer's state for parameters of ``dtype``: the same, 16-bit float components (float16,
    bfloat16) as float32."""
    if T.scalar_of(dtype) not in (T.float16, T.bfloat16):
        return dtype
    return T.float32 if T.is_scalar(dtype) else _VALUE_KINDS[dtype._kind](dtype, T.float32)


def _components(a: array) -> int:
    return a.size * (a.dtype._length if T.is_value(a.dtype) else 1)


def _scalar_view(a: array) -> array:
    """The same memory as a flat array of its scalar type (vec3 (n,) -> float (3n,))."""
    return array(ptr=a.ptr, dtype=T.scalar_of(a.dtype), shape=(_components(a),), device=a.device, _owner=a)


class Optimizer:
    """What SGD and Adam share: the parameters, their state arrays, and checking the gradients a step takes."""

    _state_names: tuple = ()  # the attributes that hold a list of state arrays, one per parameter

    def __init__(self, params=None):
        for name in self._state_names:
            setattr(self, name, [])
        self.params = None
        self.t = 0  # the steps taken (since the last reset_internal_state)
        self._views = {}  # id(array) -> (array, its flat view), for the arrays of the last step
        self.set_params(params)

    def set_params(self, params) -> None:
        """Optimize ``params`` (a list of arrays, or None) from now on. A parameter whose state array still fits
        (same shape and dtype) keeps it, moved to the parameter's device if that changed; others get zeroed state.
        """
        if params is None:
            self.params = None
            return
        if isinstance(params, array) or not isinstance(params, Sequence):
            raise TypeError(f"{self._name}: params must be a list of arrays, got {type(params).__name__}")
        params = list(params)
        for i, p in enumerate(params):
            if not isinstance(p, array):
                raise TypeError(f"{self._name}: parameter {i} must be an array, got {type(p).__name__}")
            if not T.is_float(T.scalar_of(p.dtype)):
                raise TypeError(f"{self._name}: cannot optimize parameter {i}, an array of {T.type_name(p.dtype)} "
                                "(its components must be float16, bfloat16, float32 or float64)")
            if not p.is_contiguous:
                raise ValueError(f"{self._name}: parameter {i} is not a contiguous array")
        for name in self._state_names:
            old = getattr(self, name)
            setattr(self, name, [_fitting_state(old[i] if i < len(old) else None, p) for i, p in enumerate(params)])
        self.params = params

    def reset_internal_state(self) -> None:
        """Zero the step count and the state arrays: the next step is a first step again."""
        for name in self._state_names:
            for a in getattr(self, name):
                a.zero_()
        self.t = 0

    @property
    def _name(self) -> str:
        return type(self).__name__

    def _gradients(self, grad) -> list:
        """The gradient arrays of a step, one per parameter, checked against the parameters."""
        if self.params is None:
            raise RuntimeError(f"{self._name} parameters must be set before calling step(), got None")
        if grad is None:
            grads = [p.grad for p in self.params]
            for i, g in enumerate(grads):
                if g is None:
                    raise ValueError(f"{self._name}.step() reads each parameter's .grad, and parameter {i} has none: "
                                     "create it with requires_grad=True, or pass the gradients, step([grad, ...])")
            return grads
        if isinstance(grad, array) or not isinstance(grad, Sequence):
            raise TypeError(f"{self._name}.step(grad): grad must be a list of arrays, one per parameter, "
                            f"got {type(grad).__name__}")
        if len(grad) != len(self.params):
            raise ValueError(f"{self._name}.step(grad): {len(grad)} gradient arrays for {len(self.params)} "
                             "parameters (one per parameter)")
        for i, (p, g) in enumerate(zip(self.params, grad)):
            which = f" (gradient {i})" if len(grad) > 1 else ""
            if not isinstance(g, array):
                raise TypeError(f"{self._name} gradient must be an array, got {type(g).__name__}{which}")
            if g.dtype is not p.dtype:
                raise TypeError(f"{self._name} gradient dtype must match parameter dtype {T.type_name(p.dtype)}, "
                                f"got {T.type_name(g.dtype)}{which}")
            if tuple(g.shape) != tuple(p.shape):
                raise ValueError(f"{self._name} gradient shape must match parameter shape {tuple(p.shape)}, "
                                 f"got {tuple(g.shape)}{which}")
            if g.device != p.device:
                raise ValueError(f"{self._name} gradient device must match parameter device {p.device.alias}, "
                                 f"got {g.device.alias}{which}")
            if not g.is_contiguous:
                raise ValueError(f"{self._name} gradient must be a contiguous array{which}")
        return list(grad)

    def _flat(self, a: array, views: dict) -> array:
        """``a``'s flat view, reused from the last step's (kept in ``views``, this step's)."""
        seen = self._views.get(id(a))
        view = seen[1] if seen is not None and seen[0] is a else _scalar_view(a)
        views[id(a)] = (a, view)
        return view

    def _launch(self, step_kernel, grad, state_arrays: list, hyper) -> None:
        """One launch of ``step_kernel`` per parameter, on the flat views of it, its gradient and its state
        (``state_arrays``: lists of arrays, one per parameter), then the arguments ``hyper(to_state)`` gives
        (``to_state``: the conversion of a float to the state's scalar type)."""
        grads = self._gradients(grad)
        views = {}
        for i, (p, g) in enumerate(zip(self.params, grads)):
            state = [self._flat(arrays[i], views) for arrays in state_arrays]
            to_state = T.scalar_of(state[0].dtype)._np.type
            x = self._flat(p, views)
            launch(step_kernel, dim=x.size, inputs=[x, self._flat(g, views), *state, *hyper(to_state)],
                   device=p.device, record_tape=False)
            p._overwritten()
        self._views = views
        self.t += 1


def _fitting_state(old: array | None, p: array) -> array:
    """``old`` where it fits parameter ``p`` (on ``p``'s device), else a zeroed state array for it."""
    dtype = _state_dtype(p.dtype)
    if old is None or old.dtype is not dtype or tuple(old.shape) != tuple(p.shape):
        return zeros(p.shape, dtype=dtype, device=p.device)
    return old if old.device == p.device else old.to(p.device)


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum, Nesterov momentum and weight decay (the update rule
    of PyTorch's and Warp's ``SGD``): with ``d = grad + weight_decay * x``, the momentum buffer ``b = d`` on the
    first step and ``b = momentum * b + (1 - dampening) * d`` after; the step is ``x -= lr * d'`` where ``d'`` is
    ``d + momentum * b`` (``nesterov``), ``b`` (``momentum != 0``) or ``d``.

    Example::

        opt = sk.optim.SGD([x], lr=0.1, momentum=0.9)
        opt.step()                        # from x.grad
        opt.step([g])                     # from the array g (x's dtype, shape and device)
    """

    _state_names = ("b",)

    def __init__(self, params=None, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False):
        super().__init__(params)
        self.lr, self.momentum, self.dampening = lr, momentum, dampening
        self.weight_decay, self.nesterov = weight_decay, nesterov

    def step(self, grad: list | None = None) -> None:
        """One step: from ``grad``, a list of gradient arrays (one per parameter, its dtype, shape and device),
        or, when None, from each parameter's ``.grad``."""
        self._launch(_sgd_step, grad, [self.b], lambda s: [s(self.lr), s(self.momentum), s(self.dampening),
                                                            s(self.weight_decay), int(self.nesterov), int(self.t == 0)])


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction: ``m`` and ``v`` are running averages of the gradient and of its
    square (rates ``betas``), and the step is ``x -= lr * m' / (sqrt(v') + eps)`` with ``m' = m / (1 - beta1^t)``,
    ``v' = v / (1 - beta2^t)`` at step ``t`` (from 1).

    Example::

        opt = sk.optim.Adam([x], lr=0.05)
        opt.step()                        # from x.grad
        opt.step([g])                     # from the array g (x's dtype, shape and device)
    """

    _state_names = ("m", "v")

    def __init__(self, params=None, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(params)
        self.lr, self.beta1, self.beta2, self.eps = lr, betas[0], betas[1], eps

    def step(self, grad: list | None = None) -> None:
        """One step: from ``grad``, a list of gradient arrays (one per parameter, its dtype, shape and device),
        or, when None, from each parameter's ``.grad``."""
        c1 = 1.0 - self.beta1 ** (self.t + 1)  # (the bias corrections, in double precision)
        c2 = 1.0 - self.beta2 ** (self.t + 1)
        self._launch(_adam_step, grad, [self.m, self.v], lambda s: [s(self.lr), s(self.beta1), s(self.beta2),
                                                                     s(self.eps), s(c1), s(c2)])


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
    when the loss is on a CUDA device and the metric is a function, unless the capture would put a
    launch on one GPU thread that runs on the whole GPU outside it (deterministic mode: a backward
    launch, utils/deterministic_grad.py); the iterations then run directly. False: never.

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
                graph = captured is not None
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
    tape records into another; None when the capture would run a launch on one GPU thread that runs on
    the whole GPU outside it (runtime/launch.py, probing_capture: nothing captured has run)."""
    with probing_capture() as serial:
        with ScopedCapture(device) as cap:
            tape = Tape()
            with tape:
                loss, metric = forward()
            tape.backward(loss)
    if serial[0]:
        return None
    with ScopedCapture(device) as zero:
        tape.zero()
    return cap.graph, zero.graph, tape, metric
