"""Gradient tools: Jacobians by adjoint and by finite differences, ``gradcheck`` and ``gradcheck_tape``.

Example::

    ok = sk.autograd.gradcheck(my_kernel, dim=n, inputs=[x], outputs=[y], eps=1e-6)
    jacs = sk.autograd.jacobian(my_function, inputs=[x])   # a Python function returning array(s)

``function`` is a kernel (launched with ``dim``, ``inputs`` and ``outputs``; inputs come first in its
parameters) or a Python function taking ``inputs`` and returning an array or a list of arrays. As in Warp,
the arrays differentiated are those with ``requires_grad=True``; a kernel call in which no input or no
output has a gradient differentiates every float array instead (on private copies). Jacobians come back
as ``{(input index, output index): J}``: J is an array of the input's dtype with one row per scalar output
component and one column per input element (NaN where ``max_*_per_var`` skipped it).
"""
from __future__ import annotations

import numpy as np

from .autograd_meta import FunctionMetadata, as_output_list, components, flat, is_float_array
from .autograd_plot import error_jacobians, jacobian_plot
from .runtime.array import array, clone
from .runtime.launch import launch
from .runtime.tape import Tape, _Launch, paused, spec_access

__all__ = ["FunctionMetadata", "GradcheckError", "gradcheck", "gradcheck_tape", "jacobian", "jacobian_fd",
           "jacobian_plot"]


class GradcheckError(AssertionError, ValueError):
    """A gradient check failed (an AssertionError, and a ValueError as Warp raises)."""


def _backward_enabled(kernel) -> bool:
    return kernel.enable_backward is not False


class _Problem:
    """The function, its arguments (private copies where simkit differentiates everything) and the pairs."""

    def __init__(self, function, dim, inputs, outputs, mask, device, max_blocks, block_dim, restore, metadata):
        if inputs is None:
            raise ValueError("inputs must be given: the list of arguments to differentiate with respect to")
        self.function, self.dim, self.device = function, dim, device
        self.max_blocks, self.block_dim = max_blocks, 256 if block_dim is None else block_dim
        self.is_kernel = hasattr(function, "param_names") and hasattr(function, "spec_for")
        self.inputs = list(inputs)
        self.restore = restore and not self.is_kernel
        self.meta = metadata if metadata is not None else FunctionMetadata()
        self.snapshot = None
        if self.is_kernel:
            if not outputs:
                raise ValueError(f"kernel '{function.key}': give the list of output arguments (outputs=[...]) to "
                                 f"compute its Jacobians")
            self.outputs = list(outputs)
            grad_in = any(is_float_array(a) and a.requires_grad for a in self.inputs)
            grad_out = any(is_float_array(a) and a.requires_grad for a in self.outputs)
            if not (grad_in and grad_out):  # simkit: differentiate every float array, on copies
                self.inputs = [clone(a, requires_grad=True) if is_float_array(a) else a for a in self.inputs]
                self.outputs = [clone(a, requires_grad=True) if is_float_array(a) else a for a in self.outputs]
            if self.meta.is_empty:
                self.meta.update_from_kernel(function, self.inputs)
        else:
            if not callable(function):
                raise TypeError(f"function must be a kernel or a Python callable, got {type(function).__name__}")
            self.outputs = None
            if self.restore:
                self.snapshot = [(a.numpy().copy(), bool(a._ver[2])) if isinstance(a, array) else None
                                 for a in self.inputs]
        self.mask_spec = mask

    # ------------------------------------------------------------------ evaluation

    def restore_inputs(self):
        if self.snapshot is None:
            return
        for a, snap in zip(self.inputs, self.snapshot):
            if snap is not None:
                a.assign(snap[0])
                a._ver[2] = snap[1]  # (reads by our own tape are not the caller's pending reads)

    def call(self) -> list:
        try:
            return as_output_list(self.function(*self.inputs))
        except BaseException:
            self.restore_inputs()
            raise

    def launch(self, outputs, record: bool, inputs=None):
        inputs = self.inputs if inputs is None else inputs
        launch(self.function, self.dim, inputs=inputs, outputs=outputs, device=self.device,
               record_tape=record, block_dim=self.block_dim, max_blocks=self.max_blocks)

    def resolve(self, outputs):
        """The (input, output) index pairs to differentiate."""
        if self.meta.is_empty:
            self.meta.update_from_function(self.function, self.inputs, outputs)
        chosen = self.meta.resolve(self.mask_spec, len(self.inputs))
        pairs = []
        for i, a in enumerate(self.inputs):
            for o, b in enumerate(outputs):
                if chosen and (i, o) not in chosen:
                    continue
                if is_float_array(a) and a.requires_grad and is_float_array(b) and b.requires_grad:
                    pairs.append((i, o))
        return pairs


def _as_jacobian(J: np.ndarray, a: array) -> array:
    """J[out component, input component] as an array of ``a``'s dtype: [out component, input element]."""
    comp_shape = a.numpy().shape[a.ndim:]
    dt = a.numpy().dtype if a.numpy().dtype.kind == "f" else np.float64
    vals = J.reshape((J.shape[0], a.size) + comp_shape).astype(dt)
    return array(vals, dtype=a.dtype, device=a.device)


def _zero_grads(arrays):
    for a in arrays:
        if isinstance(a, array) and a.requires_grad and a.grad is not None:
            a.grad.zero_()


def _check_tape_kernels(tape):
    for op in tape.ops:
        if isinstance(op, _Launch) and not _backward_enabled(op.kernel):
            raise ValueError(f"Kernel must have backward pass enabled to compute Jacobians: '{op.kernel.key}' "
                             f"was launched with enable_backward=False (its own or its module's option)")


def _adjoint(p: _Problem, max_outputs_per_var: int) -> dict:
    """{(i, o): J as float64 [out component, input component]} from one backward pass per output row."""
    tape = Tape()
    if p.is_kernel:
        if not _backward_enabled(p.function):
            raise ValueError(f"Kernel must have backward pass enabled to compute Jacobians: '{p.function.key}' "
                             f"has enable_backward=False (its own or its module's option)")
        # (the forward writes into copies: the caller's output arrays keep their values)
        outputs = [clone(b, requires_grad=b.requires_grad) if isinstance(b, array) else b for b in p.outputs]
        with tape:
            p.launch(outputs, record=True)
    else:
        with tape:
            outputs = p.call()
    try:
        _check_tape_kernels(tape)
        pairs = p.resolve(outputs)
        result = {}
        for o in sorted({o for _, o in pairs}):
            out = outputs[o]
            ins = [i for i, oo in pairs if oo == o]
            n_out = out.size * (components(out.dtype) or 1)
            rows = {i: np.full((n_out, flat(p.inputs[i]).size), np.nan) for i in ins}
            count = min(n_out, max_outputs_per_var) if max_outputs_per_var > 0 else n_out
            shape = out.numpy().shape
            for j in range(count):
                tape.zero()
                _zero_grads(p.inputs)
                _zero_grads(outputs)
                seed = np.zeros(n_out)
                seed[j] = 1.0
                tape.backward(grads={out: seed.reshape(shape)})
                for i in ins:
                    rows[i][j] = flat(p.inputs[i].grad)
            for i in ins:
                result[(i, o)] = rows[i]
        _zero_grads(p.inputs)
        _zero_grads(outputs)
        return result
    finally:
        p.restore_inputs()


def _finite_differences(p: _Problem, eps: float, max_inputs_per_var: int) -> dict:
    """{(i, o): J as float64 [out component, input component]} by central differences."""
    if p.is_kernel:
        # (probes perturb copies: the caller's arrays keep their values and versions, so a tape that
        # recorded them still differentiates)
        originals = [clone(b) if isinstance(b, array) else b for b in p.outputs]
        probe_inputs = [clone(a) if is_float_array(a) else a for a in p.inputs]

        def evaluate():
            outs = [clone(b) if isinstance(b, array) else b for b in originals]
            p.launch(outs, record=False, inputs=probe_inputs)
            return outs

        outputs = p.outputs
    else:
        def evaluate():
            return p.call()

        with paused():  # (a tape recording around the check must not see the probes)
            outputs = p.call()
        p.restore_inputs()
    try:
        pairs = p.resolve(outputs)
        result = {}
        for i in sorted({i for i, _ in pairs}):
            a = probe_inputs[i] if p.is_kernel else p.inputs[i]
            outs_i = [o for ii, o in pairs if ii == i]
            base = a.numpy().copy()
            n_in = base.size
            cols = {o: np.full((flat(outputs[o]).size, n_in), np.nan) for o in outs_i}
            count = min(n_in, max_inputs_per_var) if max_inputs_per_var > 0 else n_in
            step = base.dtype.type(eps)
            for k in range(count):
                probes = []
                for sign in (-1, 1):
                    p.restore_inputs()
                    pert = base.copy()
                    pert.reshape(-1)[k] += sign * step
                    a.assign(pert)
                    with paused():
                        outs = evaluate()
                    probes.append({o: flat(outs[o]) for o in outs_i})
                for o in outs_i:
                    cols[o][:, k] = (probes[1][o] - probes[0][o]) / (2.0 * eps)
            a.assign(base)
            for o in outs_i:
                result[(i, o)] = cols[o]
        return result
    finally:
        p.restore_inputs()


def _to_arrays(p: _Problem, jacs: dict) -> dict:
    return {(i, o): _as_jacobian(J, p.inputs[i]) for (i, o), J in jacs.items()}


def jacobian(function, dim=None, inputs=None, outputs=None, input_output_mask=None, device=None, max_blocks=0,
             block_dim=None, max_outputs_per_var=-1, plot_jacobians=False, metadata=None,
             restore_inputs=True) -> dict:
    """{(input index, output index): J} with J[j, k] = d (output component j) / d (input element k), from the
    adjoint (one backward pass per output component; the first ``max_outputs_per_var`` when > 0).

    ``input_output_mask``: [(input, output)] by index or argument name (function outputs: ``output_0``, ...).
    ``restore_inputs``: a Python function's array inputs get their values back afterwards."""
    p = _Problem(function, dim, inputs, outputs, input_output_mask, device, max_blocks, block_dim,
                 restore_inputs, metadata)
    jacs = _to_arrays(p, _adjoint(p, max_outputs_per_var))
    if plot_jacobians:
        jacobian_plot(jacs, p.meta)
    return jacs


def jacobian_fd(function, dim=None, inputs=None, outputs=None, input_output_mask=None, device=None, max_blocks=0,
                block_dim=None, max_inputs_per_var=-1, eps: float = 1e-4, plot_jacobians=False, metadata=None,
                restore_inputs=True) -> dict:
    """The same Jacobians by central finite differences (a forward pair per input component; the first
    ``max_inputs_per_var`` components when > 0). Works for kernels with ``enable_backward=False``."""
    p = _Problem(function, dim, inputs, outputs, input_output_mask, device, max_blocks, block_dim,
                 restore_inputs, metadata)
    jacs = _to_arrays(p, _finite_differences(p, eps, max_inputs_per_var))
    if plot_jacobians:
        jacobian_plot(jacs, p.meta)
    return jacs


def _nanmax(x) -> float:
    finite = x[~np.isnan(x)]
    return float(finite.max()) if finite.size else float("nan")


def _compare(A, F, label, atol, rtol):
    """(ok, report line, summary row) for one Jacobian block."""
    nan = np.isnan(A)
    err = np.abs(A - F)
    bound = atol + rtol * np.abs(F)
    bad = ~(err <= bound)
    if A.size == 0:
        return True, f"  ok   {label}: empty", [label, "-", "-", "-", "-", "PASS"]
    score = np.where(nan, np.inf, err - bound)
    worst = np.unravel_index(np.argmax(np.where(np.isnan(score), -np.inf, score)), err.shape)
    rel = _nanmax(np.abs(A - F) / (np.abs(F) + 1e-8))
    row = [label, f"{_nanmax(err):.3e} at {tuple(int(x) for x in worst)}", f"{A[worst]:.3e}", f"{F[worst]:.3e}",
           f"{rel:.3e}"]
    if nan.any():
        return False, (f"  NaN  {label}: the adjoint has {int(nan.sum())}/{nan.size} NaN entries, first at "
                       f"{tuple(int(x) for x in np.argwhere(nan)[0])}"), row + ["NaN"]
    if bad.any():
        j, k = worst
        return False, (f"  FAIL {label}: {int(bad.sum())}/{bad.size} entries off; worst [{j}, {k}]: "
                       f"adjoint {A[j, k]:.6g} vs finite difference {F[j, k]:.6g}"), row + ["FAIL"]
    return True, f"  ok   {label}: max abs error {err.max():.3g}", row + ["PASS"]


def _print_table(rows):
    header = ["Input -> Output", "Max Abs Error", "AD at MAE", "FD at MAE", "Max Rel Error", "Pass"]
    widths = [max(len(str(r[c])) for r in [header] + rows) for c in range(len(header))]
    for r in [header] + rows:
        print(" | ".join(str(v).ljust(w) for v, w in zip(r, widths)))


def gradcheck(function, dim=None, inputs=None, outputs=None, *, eps: float = 1e-4, atol: float = 1e-3,
              rtol: float = 1e-2, raise_exception: bool = True, input_output_mask=None, device=None,
              max_blocks: int = 0, block_dim=None, max_inputs_per_var: int = -1, max_outputs_per_var: int = -1,
              plot_relative_error: bool = False, plot_absolute_error: bool = False, show_summary=None,
              restore_inputs: bool = True, verbose: bool = False) -> bool:
    """Compare adjoint Jacobians against central finite differences (see ``jacobian``).

    Passes when the adjoint has no NaN and every compared entry satisfies ``|adj - fd| <= atol + rtol*|fd|``
    (only the rows and columns both Jacobians evaluated under ``max_*_per_var``). On failure raises
    ``GradcheckError`` (an AssertionError and a ValueError) naming input, output and the worst element
    (``raise_exception=True``), else returns False. ``show_summary``: print a table of the errors (None:
    only when failing without raising, or with ``verbose``). ``plot_*_error``: matplotlib figures."""
    meta = FunctionMetadata()
    ad = jacobian(function, dim, inputs, outputs, input_output_mask, device, max_blocks, block_dim,
                  max_outputs_per_var, metadata=meta, restore_inputs=restore_inputs)
    fd = jacobian_fd(function, dim, inputs, outputs, input_output_mask, device, max_blocks, block_dim,
                     max_inputs_per_var, eps, metadata=meta, restore_inputs=restore_inputs)
    ok = True
    lines = [f"gradcheck '{meta.key}' (eps={eps}, atol={atol}, rtol={rtol}):"]
    rows = []
    for key in sorted(fd):
        i, o = key
        A = ad[key].numpy().reshape(ad[key].shape[0], -1).astype(np.float64)
        F = fd[key].numpy().reshape(fd[key].shape[0], -1).astype(np.float64)
        r = A.shape[0] if max_outputs_per_var <= 0 else min(A.shape[0], max_outputs_per_var)
        c = A.shape[1] if max_inputs_per_var <= 0 else min(A.shape[1], max_inputs_per_var)
        label = f"d {meta.output_labels[o]} / d {meta.input_labels[i]}"
        good, line, row = _compare(A[:r, :c], F[:r, :c], label, atol, rtol)
        ok = ok and good
        lines.append(line)
        rows.append(row)
    report = "\n".join(lines)
    if show_summary or (show_summary is None and (verbose or (not ok and not raise_exception))):
        _print_table(rows)
        print(report)
    for flag, kind in ((plot_relative_error, "relative"), (plot_absolute_error, "absolute")):
        if flag:
            jacobian_plot(error_jacobians(ad, fd, kind), meta, title=f"{meta.key} kernel Jacobian {kind} error")
    if not ok and raise_exception:
        raise GradcheckError(report)
    return ok


def _split(op) -> int | None:
    """Where a recorded launch's outputs begin: at the first parameter the kernel writes."""
    written = {path[0] for path in spec_access(op.spec).stores}
    for n, name in enumerate(op.kernel.param_names):
        if name in written:
            return n
    return None


def gradcheck_tape(tape, *, eps=1e-4, atol=1e-3, rtol=1e-2, raise_exception=True, input_output_masks=None,
                   blacklist_kernels=None, whitelist_kernels=None, max_inputs_per_var=-1, max_outputs_per_var=-1,
                   plot_relative_error=False, plot_absolute_error=False, show_summary=None,
                   reverse_launches=False, skip_to_launch_index: int = 0) -> bool:
    """``gradcheck`` every kernel launch recorded on ``tape`` (outputs: from the first argument the kernel
    writes). Kernels with ``enable_backward=False``, blacklisted, or missing from a non-empty whitelist are
    skipped; ``input_output_masks``: {kernel key: input_output_mask}. Other recorded operations are skipped."""
    masks = input_output_masks or {}
    black, white = set(blacklist_kernels or ()), set(whitelist_kernels or ())
    ops = list(reversed(tape.ops)) if reverse_launches else list(tape.ops)
    ok = True
    for n, op in enumerate(ops):
        if n < skip_to_launch_index or not isinstance(op, _Launch):
            continue
        key = op.kernel.key
        if (white and key not in white) or key in black or not _backward_enabled(op.kernel):
            continue
        split = _split(op)
        if split is None:
            continue
        ok = gradcheck(op.kernel, op.dims, op.args[:split], op.args[split:], eps=eps, atol=atol, rtol=rtol,
                       raise_exception=raise_exception, input_output_mask=masks.get(key), device=op.device,
                       max_inputs_per_var=max_inputs_per_var, max_outputs_per_var=max_outputs_per_var,
                       plot_relative_error=plot_relative_error, plot_absolute_error=plot_absolute_error,
                       show_summary=show_summary) and ok
    return ok
