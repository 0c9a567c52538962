"""Gradient tools: Jacobians by adjoint and by finite differences, and ``gradcheck``.

Example::

    ok = sk.autograd.gradcheck(my_kernel, dim=n, inputs=[x], outputs=[y], eps=1e-6)

Arrays of float scalars, vectors, matrices, quaternions and transforms are
differentiated component by component; integer arrays are passed through.
"""
from __future__ import annotations

import numpy as np

from .kernels import types as T
from .runtime.array import array, clone
from .runtime.launch import launch
from .runtime.tape import Tape


def _is_float_array(a) -> bool:
    return isinstance(a, array) and (T.is_scalar(a.dtype) or T.is_value(a.dtype)) and T.is_float(
        T.scalar_of(a.dtype))


def _flat(a: array) -> np.ndarray:
    return np.ascontiguousarray(a.numpy()).reshape(-1).astype(np.float64)


def _prepare(inputs, outputs):
    """Private copies with gradients, so the user's arrays are not modified."""
    ins = [clone(a, requires_grad=True) if _is_float_array(a) else a for a in inputs]
    outs = [clone(a, requires_grad=True) if _is_float_array(a) else a for a in outputs]
    return ins, outs


def _run(kernel, dim, ins, outs, device, record=False):
    for o in outs:
        if isinstance(o, array):
            o.zero_()
    launch(kernel, dim, inputs=ins, outputs=outs, device=device, record_tape=record)


def jacobian(kernel, dim, inputs, outputs, device=None) -> dict:
    """{(input index, output index): J} with J[j, k] = d out_j / d in_k, from the adjoint kernel."""
    ins, outs = _prepare(inputs, outputs)
    tape = Tape()
    with tape:
        _run(kernel, dim, ins, outs, device, record=True)
    result = {}
    in_idx = [i for i, a in enumerate(ins) if _is_float_array(a)]
    for oi, o in enumerate(outs):
        if not _is_float_array(o):
            continue
        n_out = _flat(o).size
        rows = {i: np.zeros((n_out, _flat(ins[i]).size)) for i in in_idx}
        for j in range(n_out):
            tape.zero()
            for a in ins:
                if _is_float_array(a):
                    a.grad.zero_()
            seed = np.zeros(n_out)
            seed[j] = 1.0
            nd = o.numpy().shape
            tape.backward(grads={o: seed.reshape(nd)})
            for i in in_idx:
                rows[i][j] = _flat(ins[i].grad)
        for i in in_idx:
            result[(i, oi)] = rows[i]
    return result


def jacobian_fd(kernel, dim, inputs, outputs, device=None, eps: float = 1e-4) -> dict:
    """The same Jacobians by central finite differences (one forward pair per input component)."""
    ins, outs = _prepare(inputs, outputs)
    result = {}
    for i, a in enumerate(ins):
        if not _is_float_array(a):
            continue
        base = a.numpy().copy()
        flat = base.reshape(-1)
        cols = {oi: np.zeros((_flat(o).size, flat.size)) for oi, o in enumerate(outs) if _is_float_array(o)}
        for k in range(flat.size):
            vals = []
            for sgn in (1.0, -1.0):
                pert = flat.copy()
                pert[k] = pert[k] + sgn * eps
                a.assign(pert.reshape(base.shape))
                _run(kernel, dim, ins, outs, device)
                vals.append({oi: _flat(outs[oi]) for oi in cols})
            for oi in cols:
                cols[oi][:, k] = (vals[0][oi] - vals[1][oi]) / (2.0 * eps)
        a.assign(base)
        for oi, J in cols.items():
            result[(i, oi)] = J
    return result


def gradcheck(kernel, dim, inputs, outputs, *, eps: float = 1e-4, atol: float = 1e-3, rtol: float = 1e-2,
              raise_exception: bool = True, device=None, verbose: bool = False) -> bool:
    """Compare adjoint Jacobians against central finite differences; report the worst entries.

    Returns True when every entry satisfies ``|adj - fd| <= atol + rtol * |fd|``; otherwise raises
    (``raise_exception=True``) or returns False, with a report naming input, output and element.
    """
    ja = jacobian(kernel, dim, inputs, outputs, device)
    jf = jacobian_fd(kernel, dim, inputs, outputs, device, eps)
    names = list(kernel.param_names)
    ok = True
    lines = [f"gradcheck '{kernel.key}' (eps={eps}, atol={atol}, rtol={rtol}):"]
    for key, A in ja.items():
        F = jf[key]
        err = np.abs(A - F)
        bad = err > atol + rtol * np.abs(F)
        i, o = key
        label = f"d {names[len(inputs) + o]} / d {names[i]}"
        if bad.any():
            ok = False
            j, k = np.unravel_index(np.argmax(err - (atol + rtol * np.abs(F))), err.shape)
            lines.append(f"  FAIL {label}: {int(bad.sum())}/{bad.size} entries off; worst [{j}, {k}]: "
                         f"adjoint {A[j, k]:.6g} vs finite difference {F[j, k]:.6g}")
        else:
            lines.append(f"  ok   {label}: max abs error {err.max() if err.size else 0.0:.3g}")
    report = "\n".join(lines)
    if verbose or (not ok and not raise_exception):
        print(report)
    if not ok and raise_exception:
        raise AssertionError(report)
    return ok
