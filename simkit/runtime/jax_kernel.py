"""``jax_kernel``: a simkit kernel called from JAX code (``jax.jit``, ``jax.grad``, ``jax.vmap``), as Warp's.

Example::

    import jax, jax.numpy as jnp, simkit as sk

    @sk.kernel
    def scale(x: sk.array(dtype=float), s: float, y: sk.array(dtype=float)):
        i = sk.tid()
        y[i] = x[i] * s

    f = sk.jax_kernel(scale)                  # the last parameter (y) is the output
    (y,) = jax.jit(lambda x: f(x, 2.0))(jnp.arange(4.0, dtype=jnp.float32))
    g = jax.grad(lambda x: f(x, 2.0)[0].sum())(jnp.ones(4, dtype=jnp.float32))   # 2, 2, 2, 2

A call returns the list of outputs: the input-output arrays (``in_out_argnames``) first, then the output-only
ones. The kernel runs on the CPU in a JAX host callback (``jax_host.py``). See ``docs/interop.md``.
"""
from __future__ import annotations

import operator
import threading

import numpy as np

from ..kernels import types as T
from ..kernels.decorators import Kernel
from .array import INT32_MAX
from .jax_host import (MISSING, JaxArg, JaxModulePreloadMode, as_dims, batch_of, batched_dims, callback, check_cpu,
                       check_x64, collapse, hashable, host_array, host_output, host_scalar, in_out_names, jax_module,
                       varying_axes)
from .interop import as_array

_REGISTRY: dict = {}
_LOCK = threading.Lock()


class JaxKernel:
    """A kernel wrapped for JAX (made by ``jax_kernel``). Call it with the kernel's inputs (arrays as JAX
    arrays; scalars as Python values, or as JAX scalars); it returns the list of output arrays."""

    def __init__(self, kernel, num_outputs, vmap_method, launch_dims, output_dims, in_out_argnames,
                 module_preload_mode, enable_backward, has_side_effect, block_dim):
        if not isinstance(kernel, Kernel):
            raise TypeError(f"jax_kernel needs a @kernel, got {type(kernel).__name__}")
        self.owner = owner = f"jax_kernel '{kernel.key}'"
        if kernel.generic:
            raise TypeError(f"{owner}: the kernel has generic (Any) parameters; JAX calls need concrete types "
                            f"(declare a kernel with concrete annotations)")
        names = list(kernel.param_names)
        chosen = in_out_names(in_out_argnames, names, num_outputs, owner)
        if enable_backward and chosen:
            raise NotImplementedError(f"{owner}: input-output arguments (in_out_argnames) are not supported when "
                                      f"enable_backward=True")
        if enable_backward and output_dims is not None:
            raise NotImplementedError(f"{owner}: output_dims is not supported when enable_backward=True (outputs "
                                      f"take the shape of the first array input)")
        self.kernel, self.num_outputs, self.vmap_method = kernel, num_outputs, vmap_method
        self.launch_dims, self.output_dims, self.block_dim = launch_dims, output_dims, block_dim
        self.in_out_argnames = [n for n in names if n in chosen]
        self.module_preload_mode = JaxModulePreloadMode(module_preload_mode)
        self.enable_backward, self.has_side_effect = bool(enable_backward), bool(has_side_effect)
        self.args = [JaxArg(n, t, owner, n in chosen) for n, t in kernel.param_types.items()]
        self.n_in = len(names) - num_outputs + len(chosen)
        for k, a in enumerate(self.args):
            if (a.in_out or k >= self.n_in) and not a.is_array:
                raise TypeError(f"{owner}: output '{a.name}' must be an array, got {T.type_name(a.type)}")
        self.first_array = next((k for k, a in enumerate(self.args[:self.n_in]) if a.is_array), None)
        self.__name__ = kernel.key

    def __repr__(self):
        return f"<jax_kernel of kernel '{self.kernel.key}'>"

    def __call__(self, *args, output_dims=MISSING, launch_dims=MISSING, vmap_method=MISSING):
        if self.enable_backward:
            self._refuse_overrides(output_dims, launch_dims, vmap_method)
        ld = self.launch_dims if launch_dims is MISSING or launch_dims is None else launch_dims
        od = self.output_dims if output_dims is MISSING or output_dims is None else output_dims
        vm = self.vmap_method if vmap_method is MISSING or vmap_method is None else vmap_method
        check_cpu(self.owner)
        check_x64(self.args, self.owner)
        if len(args) != self.n_in:
            names = ", ".join(a.name for a in self.args[:self.n_in])
            raise TypeError(f"{self.owner} takes {self.n_in} input(s) ({names}), got {len(args)}")
        traced = [a.trace(v) for a, v in zip(self.args, args)]
        first = None if self.first_array is None else self.args[self.first_array].warp_shape(
            np.shape(traced[self.first_array][1]))
        if ld is not None:
            dims = as_dims(ld, f"{self.owner} launch_dims")
        elif first is not None:
            dims = first
        else:
            raise ValueError(f"{self.owner}: pass launch_dims= (the kernel has no array input to take them from)")
        spec = self.kernel.specs[None]
        self._check_extent(spec, dims)
        own = [tuple(np.shape(v)) for a, (_, v) in zip(self.args, traced) if a.in_out]
        default = first if self.enable_backward and first is not None else dims
        for a in self.args[self.n_in:]:
            shape = od.get(a.name, default) if isinstance(od, dict) else (default if od is None else od)
            own.append(a.out_shape(shape))
        if self.module_preload_mode != JaxModulePreloadMode.NONE:
            from .device import get_device

            self.kernel.module.load_spec(spec, get_device("cpu"))
        dyn = [k for k, (d, _) in enumerate(traced) if d]
        static = {k: v for k, (d, v) in enumerate(traced) if not d}
        fixed = ld is not None and self.enable_backward  # (Warp: explicit dims do not grow under vmap then)
        call = _Call(self, dims, fixed, own, static, dyn)
        return list(call.run([traced[k][1] for k in dyn], vm))

    def _refuse_overrides(self, output_dims, launch_dims, vmap_method):
        if launch_dims is not MISSING:
            raise TypeError(f"{self.owner}: launch_dims cannot be overridden per-call when enable_backward=True "
                            f"(it was made with launch_dims={self.launch_dims!r}); call jax_kernel() again with "
                            f"other launch_dims")
        if output_dims is not MISSING:
            raise TypeError(f"{self.owner}: output_dims is not supported when enable_backward=True")
        if vmap_method is not MISSING:
            raise TypeError(f"{self.owner}: vmap_method cannot be overridden per-call when enable_backward=True "
                            f"(it is fixed when the wrapper is made)")

    def _check_extent(self, spec, dims: tuple) -> None:
        """Refuse at trace time a launch simkit cannot make: an extent past int32 that tid() would index."""
        if len(dims) > 4:
            raise ValueError(f"{self.owner}: launch dims {dims} have {len(dims)} dimensions; at most 4")
        if not any(d > INT32_MAX for d in dims):
            return
        from ..kernels.module import compile_options

        uses_tid = spec.build_ir(compile_options()).uses_tid
        for axis, d in enumerate(dims):
            if d > INT32_MAX and (len(dims) > 1 or uses_tid):
                raise ValueError(f"{self.owner}: the kernel uses tid() with extent {d} in dimension {axis}; "
                                 f"tid() indices are int32, at most 2**31 - 1 = {INT32_MAX} per dimension")


class _Call:
    """One traced call: its host callbacks (forward and adjoint) and their custom VJP."""

    def __init__(self, jk: JaxKernel, dims, fixed, own, static, dyn):
        self.jk, self.dims, self.fixed, self.own, self.static, self.dyn = jk, dims, fixed, own, static, dyn
        self.dyn_args = [jk.args[k] for k in dyn]
        self.in_out = [k for k, a in enumerate(jk.args[:jk.n_in]) if a.in_out]
        self.outs = jk.args[jk.n_in:]

    def run(self, values, vmap_method):
        jax = jax_module()
        jk = self.jk
        specs = tuple(jax.ShapeDtypeStruct(s, jk.args[k].np_dtype) for s, k in
                      zip(self.own, self.in_out + list(range(jk.n_in, len(jk.args)))))

        def primal(*vals):
            return callback(self.forward, specs, list(vals), vmap_method, jk.has_side_effect)

        if not values:
            return primal()
        f = jax.custom_vjp(primal)

        def f_fwd(*vals):
            outs = primal(*vals)
            return outs, (vals, outs)

        def f_bwd(res, gouts):
            if self.in_out:
                raise NotImplementedError(f"{jk.owner}: a kernel with in_out_argnames is not differentiable "
                                          f"through JAX")
            vals, outs = res
            gouts = [jax.numpy.zeros(o.shape, o.dtype) if g.dtype == jax.dtypes.float0 else g
                     for g, o in zip(gouts, outs)]
            shapes = tuple(jax.ShapeDtypeStruct(np.shape(v), v.dtype) for v in vals)
            grads = callback(self.backward, shapes, [*vals, *outs, *gouts], vmap_method, False,
                             vary=[varying_axes([v]) for v in vals])
            return tuple(g if jax.numpy.issubdtype(v.dtype, jax.numpy.inexact)
                         else np.zeros(np.shape(v), jax.dtypes.float0) for g, v in zip(grads, vals))

        f.defvjp(f_fwd, f_bwd)
        return f(*values)

    def _inputs(self, values, batch):
        """The kernel's input arguments on the host, and the numpy arrays of the input-output ones."""
        by = dict(zip(self.dyn, values))
        ins, full = [], {}
        for k, a in enumerate(self.jk.args[:self.jk.n_in]):
            if k not in by:
                ins.append(self.static[k])
            elif a.is_array:
                full[k], arr = host_array(a, by[k], batch, copy=a.in_out)
                ins.append(arr)
            else:
                ins.append(host_scalar(a, by[k], batch))
        return ins, full

    def _launch(self, batch, ins, outs, **adjoint):
        from .launch import launch

        dims = self.dims if self.fixed else batched_dims(self.dims, batch)
        launch(self.jk.kernel, dims, inputs=ins, outputs=outs, device="cpu", record_tape=False,
               block_dim=self.jk.block_dim or 256, **adjoint)

    def forward(self, *values):
        batch = batch_of(self.dyn_args, values)
        ins, full = self._inputs(values, batch)
        outs = [host_output(a, s, batch) for a, s in zip(self.outs, self.own[len(self.in_out):])]
        self._launch(batch, ins, [o[1] for o in outs])
        return tuple([full[k] for k in self.in_out] + [o[0] for o in outs])

    def backward(self, *values):
        nd, no = len(self.dyn), len(self.outs)
        prim, outs_v, gouts = values[:nd], values[nd:nd + no], values[nd + no:]
        batch = batch_of(self.dyn_args, prim)
        ins, _ = self._inputs(prim, batch)
        outs = [host_array(a, v, batch, copy=True)[1] for a, v in zip(self.outs, outs_v)]
        adj_outs = [host_array(a, g, batch, copy=True)[1] for a, g in zip(self.outs, gouts)]
        by = dict(zip(self.dyn, prim))
        grads, adj_ins = {}, []
        for k, a in enumerate(self.jk.args[:self.jk.n_in]):
            if a.is_array:  # (arrays are always callback operands)
                own = tuple(np.shape(by[k])[np.ndim(by[k]) - a.jax_ndim:])
                grads[k] = np.zeros(batch + own, a.np_dtype)
                adj_ins.append(as_array(collapse(grads[k], batch, own), a.type, None, a.what()))
            else:
                adj_ins.append(None)
        self._launch(batch, ins, outs, adj_inputs=adj_ins, adj_outputs=adj_outs, adjoint=True)
        return tuple(grads[k] if k in grads else np.zeros(batch + self.jk.args[k].elem_shape, np.asarray(v).dtype)
                     for k, v in zip(self.dyn, prim))


def _check_block_dim(block_dim):
    if block_dim is None:
        return None
    if isinstance(block_dim, bool):
        raise TypeError("jax_kernel: block_dim must be an integer or None, got a bool")
    try:
        block_dim = operator.index(block_dim)
    except TypeError:
        raise TypeError(f"jax_kernel: block_dim must be an integer or None, got {block_dim!r}") from None
    if block_dim <= 0:
        raise ValueError(f"jax_kernel: block_dim must be positive, got {block_dim}")
    return block_dim


def jax_kernel(kernel, num_outputs: int = 1, vmap_method: str | None = "broadcast_all", launch_dims=None,
               output_dims=None, in_out_argnames=None,
               module_preload_mode: JaxModulePreloadMode = JaxModulePreloadMode.CURRENT_DEVICE,
               enable_backward: bool = False, has_side_effect: bool = False, block_dim: int | None = None,
               device: str = "cpu") -> JaxKernel:
    """A JAX-callable wrapper of ``kernel``: the last ``num_outputs`` parameters are outputs (counting the
    ``in_out_argnames``, which are inputs too). Calls take ``launch_dims=`` / ``output_dims=`` /
    ``vmap_method=`` to override the defaults given here (not with ``enable_backward=True``). The same
    arguments give the same wrapper. See the module doc and docs/interop.md."""
    jax_module()
    if device != "cpu":
        raise NotImplementedError("jax_kernel runs simkit kernels on the CPU through a JAX host callback (JAX "
                                  "moves GPU operands to the host); a native GPU path (XLA FFI) is not "
                                  "implemented")
    block_dim = _check_block_dim(block_dim)
    key = (kernel, num_outputs, vmap_method, hashable(launch_dims), hashable(output_dims),
           tuple(in_out_argnames) if in_out_argnames else None, int(module_preload_mode), bool(has_side_effect),
           block_dim, bool(enable_backward))
    with _LOCK:
        jk = _REGISTRY.get(key)
        if jk is None:
            jk = _REGISTRY[key] = JaxKernel(kernel, num_outputs, vmap_method, launch_dims, output_dims,
                                            in_out_argnames, module_preload_mode, enable_backward, has_side_effect,
                                            block_dim)
    return jk
