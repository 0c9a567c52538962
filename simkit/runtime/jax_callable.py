"""``jax_callable``: an annotated Python function (that launches simkit kernels) called from JAX, as Warp's.

Example::

    import jax, jax.numpy as jnp, simkit as sk

    def double(a: sk.array(dtype=float), b: sk.array(dtype=float)):   # b is the output
        sk.launch(scale_kernel, dim=a.shape, inputs=[a, 2.0], outputs=[b])

    f = sk.jax_callable(double)
    (b,) = jax.jit(f)(jnp.arange(4.0, dtype=jnp.float32))

The function gets simkit CPU arrays over the callback's buffers (outputs zeroed) and runs with the CPU as the
default device, in a JAX host callback (``jax_host.py``). Calls return the list of outputs: input-output
arrays (``in_out_argnames``) first. ``jax_callable`` has no adjoint (wrap a kernel with ``jax_kernel`` for
gradients).
"""
from __future__ import annotations

import collections
import threading

import numpy as np

from ..kernels import types as T
from .jax_host import (JaxArg, JaxCallableGraphMode, JaxModulePreloadMode, annotated_params, as_dims, batch_of,
                       callback, check_cpu, check_x64, hashable, host_array, host_output, host_scalar, in_out_names,
                       jax_module)

_REGISTRY: dict = {}
_LOCK = threading.Lock()
JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX = 32


class JaxCallable:
    """A Python function wrapped for JAX (made by ``jax_callable``)."""

    def __init__(self, func, num_outputs, graph_mode, vmap_method, output_dims, in_out_argnames,
                 stage_in_argnames, stage_out_argnames, graph_cache_max, module_preload_mode, has_side_effect):
        name = getattr(func, "__name__", type(func).__name__)
        self.owner = owner = f"jax_callable '{name}'"
        params = annotated_params(func, owner)
        names = [n for n, _ in params]
        chosen = in_out_names(in_out_argnames, names, num_outputs, owner)
        self.func, self.num_outputs, self.vmap_method, self.output_dims = func, num_outputs, vmap_method, output_dims
        self.graph_mode = JaxCallableGraphMode(graph_mode)
        self.module_preload_mode = JaxModulePreloadMode(module_preload_mode)
        self.has_side_effect = bool(has_side_effect)
        self.in_out_argnames = [n for n in names if n in chosen]
        self.stage_in_argnames = set(stage_in_argnames) if stage_in_argnames else None
        self.stage_out_argnames = set(stage_out_argnames) if stage_out_argnames else None
        self.graph_cache_max = graph_cache_max
        self.captures = collections.OrderedDict()  # (CUDA graphs: never captured by simkit's CPU calls)
        self.args = [JaxArg(n, t, owner, n in chosen) for n, t in params]
        self.n_in = len(names) - num_outputs + len(chosen)
        for k, a in enumerate(self.args):
            if (a.in_out or k >= self.n_in) and not a.is_array:
                raise TypeError(f"{owner}: output '{a.name}' must be an array, got {T.type_name(a.type)}")
        self.first_array = next((k for k, a in enumerate(self.args[:self.n_in]) if a.is_array), None)
        self.__name__ = name

    def __repr__(self):
        return f"<jax_callable of {self.__name__}>"

    @property
    def graph_cache_size(self) -> int:
        return len(self.captures)

    def __call__(self, *args, output_dims=None, vmap_method=None):
        jax = jax_module()
        if self.graph_mode not in (JaxCallableGraphMode.NONE, JaxCallableGraphMode.JAX):
            raise RuntimeError(f"{self.owner}: JaxCallableGraphMode.{self.graph_mode.name} captures a CUDA graph; "
                               f"simkit runs JAX calls on the CPU, where only NONE and JAX (no capture) work")
        check_cpu(self.owner)
        check_x64(self.args, self.owner)
        od = self.output_dims if output_dims is None else output_dims
        vm = self.vmap_method if vmap_method is None else vmap_method
        if len(args) != self.n_in:
            names = ", ".join(a.name for a in self.args[:self.n_in])
            raise TypeError(f"{self.owner} takes {self.n_in} input(s) ({names}), got {len(args)}")
        traced = [a.trace(v) for a, v in zip(self.args, args)]
        own = [tuple(np.shape(v)) for a, (_, v) in zip(self.args, traced) if a.in_out]
        default = None
        if self.first_array is not None:
            default = self.args[self.first_array].warp_shape(np.shape(traced[self.first_array][1]))
        for a in self.args[self.n_in:]:
            shape = od.get(a.name, default) if isinstance(od, dict) else (default if od is None else od)
            if shape is None:
                raise ValueError(f"{self.owner}: pass output_dims= for '{a.name}' (no array input to take the "
                                 f"shape from)")
            own.append(a.out_shape(as_dims(shape, f"{self.owner} output_dims")))
        if self.module_preload_mode != JaxModulePreloadMode.NONE:
            _preload(getattr(self.func, "__module__", None))
        dyn = [k for k, (d, _) in enumerate(traced) if d]
        static = {k: self._value(self.args[k], v) for k, (d, v) in enumerate(traced) if not d}
        in_out = [k for k, a in enumerate(self.args[:self.n_in]) if a.in_out]
        outs = self.args[self.n_in:]
        dyn_args = [self.args[k] for k in dyn]

        def host(*values):
            batch = batch_of(dyn_args, values)
            by = dict(zip(dyn, values))
            call, full = [], {}
            for k, a in enumerate(self.args[:self.n_in]):
                if k not in by:
                    call.append(static[k])
                elif a.is_array:
                    full[k], arr = host_array(a, by[k], batch, copy=a.in_out)
                    call.append(arr)
                else:
                    call.append(self._value(a, host_scalar(a, by[k], batch)))
            made = [host_output(a, s, batch) for a, s in zip(outs, own[len(in_out):])]
            from .device import ScopedDevice

            with ScopedDevice("cpu"):
                self.func(*call, *[m[1] for m in made])
            return tuple([full[k] for k in in_out] + [m[0] for m in made])

        specs = tuple(jax.ShapeDtypeStruct(s, a.np_dtype) for s, a in
                      zip(own, [self.args[k] for k in in_out] + outs))
        return list(callback(host, specs, [traced[k][1] for k in dyn], vm, self.has_side_effect))

    def _value(self, a: JaxArg, v):
        """A scalar or vector argument as its parameter type (as Warp passes it: ``float32(2.0)``)."""
        if isinstance(v, a.type):
            return v
        try:
            return a.type(*v) if isinstance(v, np.ndarray) and v.ndim and T.is_value(a.type) else a.type(v)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{a.what()}: cannot convert {v!r} to {T.type_name(a.type)}: {e}") from None


def _preload(module_name) -> None:
    """Compile the kernels of the function's module for the CPU now (best effort: a kernel that does not
    compile reports its error when it is launched)."""
    if module_name is None:
        return
    from ..kernels.errors import CompileError, NativeCompileError
    from ..kernels.module import _modules, native_key
    from .device import get_device

    module = _modules.get(module_name)
    if module is None:
        return
    cpu = get_device("cpu")
    kind, tried = native_key(cpu, False), set()
    while True:
        pending = [s for s in module.pending(kind) if id(s) not in tried]
        if not pending:
            return
        tried.add(id(pending[0]))
        try:
            module.load_spec(pending[0], cpu)
        except (CompileError, NativeCompileError):
            continue


def jax_callable(func, num_outputs: int = 1, graph_mode: JaxCallableGraphMode = JaxCallableGraphMode.JAX,
                 vmap_method: str | None = "broadcast_all", output_dims=None, in_out_argnames=None,
                 stage_in_argnames=None, stage_out_argnames=None,
                 graph_cache_max: int | None = JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX,
                 module_preload_mode: JaxModulePreloadMode = JaxModulePreloadMode.CURRENT_DEVICE,
                 has_side_effect: bool = False) -> JaxCallable:
    """A JAX-callable wrapper of ``func``, a Python function annotated like a kernel whose last
    ``num_outputs`` parameters are output arrays (counting the ``in_out_argnames``). Output shapes default to
    the first array input's (``output_dims``: {name: shape} or one shape). ``graph_mode``,
    ``stage_*_argnames`` and ``graph_cache_max`` are Warp's CUDA graph options, kept for compatibility
    (simkit's JAX calls run on the CPU). The same arguments give the same wrapper. See docs/interop.md."""
    jax_module()
    graph_mode = JaxCallableGraphMode(graph_mode)
    key = (func, num_outputs, graph_mode, vmap_method, hashable(output_dims),
           tuple(in_out_argnames) if in_out_argnames else None,
           tuple(stage_in_argnames) if stage_in_argnames else None,
           tuple(stage_out_argnames) if stage_out_argnames else None, int(module_preload_mode),
           bool(has_side_effect))
    with _LOCK:
        jc = _REGISTRY.get(key)
        if jc is None:
            jc = _REGISTRY[key] = JaxCallable(func, num_outputs, graph_mode, vmap_method, output_dims,
                                              in_out_argnames, stage_in_argnames, stage_out_argnames,
                                              graph_cache_max, module_preload_mode, has_side_effect)
        else:
            jc.graph_cache_max = graph_cache_max
    return jc


def clear_jax_callable_graph_cache(callable: JaxCallable | None = None) -> None:  # noqa: A002 - Warp's name
    """Empty the CUDA graph cache of one ``jax_callable`` wrapper, or of all of them (Warp compatibility:
    simkit's CPU calls capture no graphs)."""
    with _LOCK:
        targets = [callable] if callable is not None else list(_REGISTRY.values())
    for c in targets:
        c.captures.clear()
