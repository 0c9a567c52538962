"""JAX interop: arrays through DLPack, and simkit kernels callable from jitted JAX code.

Example::

    import jax, jax.numpy as jnp, simkit as sk

    @sk.kernel
    def scale(x: sk.array(dtype=float), s: float, y: sk.array(dtype=float)):
        i = sk.tid()
        y[i] = x[i] * s

    f = sk.jax_kernel(scale)                 # the last parameter (y) is the output
    y = jax.jit(lambda x: f(x, 2.0))(jnp.arange(4.0, dtype=jnp.float32))
    g = jax.grad(lambda x: f(x, 2.0).sum())(jnp.ones(4, dtype=jnp.float32))   # 2, 2, 2, 2

``from_jax`` shares memory with the JAX buffer (JAX arrays are immutable: do not
write to it). ``to_jax`` shares memory when JAX accepts the buffer (CPU: 64-byte
aligned data, C- or transposed layout); otherwise JAX copies.

``jax_kernel`` semantics:

- The last ``num_outputs`` kernel parameters are outputs; the callable takes the
  other parameters in order. Array parameters take JAX (or numpy) arrays; scalar
  and vector parameters take Python values (static: baked into the trace) or JAX
  scalars (traced: passed through the callback).
- Launch dimensions: ``launch_dims`` (an int or tuple, given to ``jax_kernel`` or
  per call); by default the shape of the first array argument (less the trailing
  element dims of vector/matrix types).
- Output shapes: ``output_dims`` ({output name: shape}, or one shape for all);
  by default the launch dimensions. Outputs start zeroed each call (so
  ``atomic_add`` reductions work), and carry trailing element dims for
  vector/matrix dtypes.
- The kernel runs on the CPU inside ``jax.pure_callback`` (``vmap_method``
  sets vmap behaviour; default "sequential"). On a GPU backend JAX moves the
  operands to the host and back; a native GPU path (XLA FFI custom call) is not
  implemented (``device="cuda"`` raises ``NotImplementedError``).
- Differentiable (``jax.grad``/``vjp``) through the kernel's adjoint: gradients
  flow to floating-point array inputs; integer arrays and scalars get zero
  cotangents.
- float64 arrays need ``jax.config.update("jax_enable_x64", True)`` on the JAX side.
"""
from __future__ import annotations

import numpy as np

from ..kernels import types as T
from .array import array, np_dtype_of, zeros
from .interop import as_array, from_dlpack


def _jax():
    try:
        import jax
    except ImportError:  # pragma: no cover - exercised only without jax
        raise ImportError("JAX interop needs jax (pip install 'simkit[jax]')") from None
    return jax


def from_jax(x, dtype=None) -> array:
    """A simkit array sharing the memory of JAX array ``x`` (through DLPack; treat it as read-only)."""
    return from_dlpack(x, dtype=dtype)


def to_jax(a: array):
    """A JAX array of ``a`` through DLPack (zero copy when JAX accepts the buffer, see the module doc)."""
    jax = _jax()
    if not isinstance(a, array) or a.is_type:
        raise TypeError(f"to_jax needs a simkit array, got {type(a).__name__}")
    return jax.dlpack.from_dlpack(a)


def device_from_jax(d):
    """The simkit Device of a ``jax.Device``."""
    from .device import get_device

    return get_device("cpu" if d.platform == "cpu" else f"cuda:{d.id}")


def _is_traced(v) -> bool:
    jax = _jax()
    return isinstance(v, (jax.Array, np.ndarray)) and not isinstance(v, T.value_base)


def _dims_of(v, t) -> tuple:
    esh = np_dtype_of(t.dtype)[1] if not T.is_generic(t.dtype) else ()
    shape = tuple(np.shape(v))
    return shape[: len(shape) - len(esh)] if esh else shape


def jax_kernel(kernel, num_outputs: int = 1, launch_dims=None, output_dims=None, vmap_method: str = "sequential",
               device: str = "cpu"):
    """A JAX-callable (jit, grad, vmap) wrapper of a simkit kernel; see the module doc for the semantics."""
    jax = _jax()
    if device != "cpu":
        raise NotImplementedError("jax_kernel runs simkit kernels on the CPU through jax.pure_callback (JAX moves "
                                  "GPU operands to the host); a native GPU path (XLA FFI) is not implemented")
    names = list(kernel.param_names)
    types = list(kernel.param_types.values())
    n_in = len(names) - num_outputs
    if num_outputs < 1 or n_in < 0:
        raise ValueError(f"kernel '{kernel.key}' has {len(names)} parameters; num_outputs={num_outputs}")
    for name, t in zip(names[n_in:], types[n_in:]):
        if not isinstance(t, T.ArrayType) or T.is_generic(t.dtype):
            raise TypeError(f"jax_kernel: output '{name}' of kernel '{kernel.key}' must be an array of a concrete "
                            f"dtype, got {T.type_name(t)}")
    default_launch, default_out = launch_dims, output_dims

    def call(*args, launch_dims=None, output_dims=None):
        if len(args) != n_in:
            raise TypeError(f"kernel '{kernel.key}' takes {n_in} inputs ({', '.join(names[:n_in])}) under "
                            f"jax_kernel, got {len(args)}")
        ld = launch_dims if launch_dims is not None else default_launch
        if ld is None:
            first = next((k for k, t in enumerate(types[:n_in]) if isinstance(t, T.ArrayType)), None)
            if first is None:
                raise ValueError("jax_kernel: pass launch_dims= (the kernel has no array input to take them from)")
            ld = _dims_of(args[first], types[first])
        dims = (int(ld),) if isinstance(ld, (int, np.integer)) else tuple(int(d) for d in ld)
        od = output_dims if output_dims is not None else default_out
        specs = []
        for name, t in zip(names[n_in:], types[n_in:]):
            shape = od.get(name, dims) if isinstance(od, dict) else (od if od is not None else dims)
            shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
            nd, esh = np_dtype_of(t.dtype)
            specs.append(jax.ShapeDtypeStruct(shape + tuple(esh), nd))
        dyn = [k for k, v in enumerate(args) if _is_traced(v)]
        static = dict((k, v) for k, v in enumerate(args) if k not in dyn)
        return _make(kernel, names, types, n_in, dims, specs, dyn, static, vmap_method)(*[args[k] for k in dyn])

    call.__name__ = kernel.key
    call.kernel = kernel
    return call


def _host_args(names, types, n_in, dyn, static, values, kernel):
    """simkit arguments (zero-copy views of the callback's host arrays) for the kernel inputs."""
    by = dict(zip(dyn, values))
    out = []
    for k in range(n_in):
        v = by[k] if k in by else static[k]
        t = types[k]
        what = f"jax_kernel '{kernel.key}' argument '{names[k]}'"
        if isinstance(t, T.ArrayType):
            v = np.asarray(v)
            if T.is_generic(t.dtype):
                t = T.ArrayType(T.scalar_from_numpy(v.dtype), v.ndim)
            v = as_array(v, t, None, what)
        elif k in by:  # a traced scalar/vector: a host value of the parameter's type
            v = np.asarray(v)
            v = v.reshape(()).item() if v.ndim == 0 else v
        out.append(v)
    return out


def _make(kernel, names, types, n_in, dims, specs, dyn, static, vmap_method):
    jax = _jax()
    from .launch import launch

    def fwd_host(*values):
        ins = _host_args(names, types, n_in, dyn, static, values, kernel)
        outs = [zeros(s.shape[:len(s.shape) - len(np_dtype_of(t.dtype)[1])], dtype=t.dtype, device="cpu")
                for s, t in zip(specs, types[n_in:])]
        launch(kernel, dims, inputs=ins, outputs=outs, device="cpu", record_tape=False)
        return tuple(o.numpy() for o in outs)

    def bwd_host(*values):
        nd = len(dyn)
        prim, outs_np, gouts = values[:nd], values[nd:nd + len(specs)], values[nd + len(specs):]
        ins = _host_args(names, types, n_in, dyn, static, prim, kernel)
        adj_in = [zeros(v.shape, dtype=v.dtype, device="cpu") if isinstance(v, array) else None for v in ins]
        outs = [as_array(np.array(o), t, None, "output") for o, t in zip(outs_np, types[n_in:])]  # writable copies
        adj_out = [as_array(np.array(g), t, None, "output gradient") for g, t in zip(gouts, types[n_in:])]
        launch(kernel, dims, inputs=ins, outputs=outs, adj_inputs=adj_in, adj_outputs=adj_out, adjoint=True,
               device="cpu", record_tape=False)
        res = []
        for k, v in zip(dyn, prim):
            a = adj_in[k]
            res.append(a.numpy().reshape(np.shape(v)).astype(np.asarray(v).dtype) if a is not None
                       else np.zeros(np.shape(v), np.asarray(v).dtype))
        return tuple(res)

    def primal(*values):
        return jax.pure_callback(fwd_host, tuple(specs), *values, vmap_method=vmap_method)

    f = jax.custom_vjp(primal)

    def f_fwd(*values):
        outs = primal(*values)
        return outs, (values, outs)

    def f_bwd(res, gouts):
        values, outs = res
        float_in = [jax.numpy.issubdtype(v.dtype, jax.numpy.floating) for v in values]
        shapes = tuple(jax.ShapeDtypeStruct(np.shape(v), v.dtype) for v in values)
        grads = jax.pure_callback(bwd_host, shapes, *values, *outs, *gouts, vmap_method=vmap_method)
        return tuple(g if fl else np.zeros(np.shape(v), jax.dtypes.float0)
                     for g, v, fl in zip(grads, values, float_in))

    f.defvjp(f_fwd, f_bwd)

    def run(*values):
        outs = f(*values)
        return outs[0] if len(outs) == 1 else outs

    return run


def device_to_jax(device):
    """The ``jax.Device`` of a simkit device."""
    from .device import get_device

    jax = _jax()
    d = get_device(device)
    return jax.devices("cpu")[0] if d.is_cpu else jax.devices("gpu")[d.ordinal]
