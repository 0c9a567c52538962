"""What ``jax_kernel`` and ``jax_callable`` share: parameters seen from JAX, the host callback, batching.

Both run on the CPU inside a JAX host callback (``jax.pure_callback``, or ``io_callback`` for calls with side
effects). Under ``jax.vmap`` with ``vmap_method="broadcast_all"`` (or ``"expand_dims"``) the callback receives
every operand with leading batch dimensions; as in Warp, those are broadcast to one batch shape and folded into
the first dimension of each array, so a kernel sees one longer array (``collapse``). ``"sequential"`` makes JAX
call once per batch element instead.
"""
from __future__ import annotations

import enum
import inspect
import threading
import typing

import numpy as np

from ..kernels import types as T
from .array import np_dtype_of
from .interop import as_array

#: a per-call option that was not passed (``None`` can be passed on purpose)
MISSING = object()
_HOST_LOCK = threading.RLock()


class JaxCallableGraphMode(enum.IntEnum):
    """Warp's CUDA graph modes of ``jax_callable``. simkit's JAX calls run on the CPU, where ``NONE`` and
    ``JAX`` both run the function directly; ``WARP``, ``WARP_STAGED`` and ``WARP_STAGED_EX`` need CUDA graph
    capture and are refused when called."""

    NONE = 0
    JAX = 1
    WARP = 2
    WARP_STAGED = 3
    WARP_STAGED_EX = 4


class JaxModulePreloadMode(enum.IntEnum):
    """When the kernels of a JAX call compile: ``NONE`` on the first run, else while JAX traces the call
    (``CURRENT_DEVICE`` and ``ALL_DEVICES`` both compile for the CPU, where simkit's JAX calls run)."""

    NONE = 0
    CURRENT_DEVICE = 1
    ALL_DEVICES = 2


def jax_module():
    try:
        import jax
    except ImportError:  # pragma: no cover - exercised only without jax
        raise ImportError("JAX interop needs jax (pip install 'simkit[jax]')") from None
    return jax


def simkit_module():
    """The top-level ``simkit`` module (its attributes looked up at call time: tests may replace them)."""
    import importlib

    return importlib.import_module("simkit")


class JaxArg:
    """One parameter of a kernel or function called from JAX: an array (of scalars, vectors or matrices) or
    a scalar/vector value. ``jax_ndim``: the dimensions of the JAX array that carries it (element dims
    trail)."""

    def __init__(self, name: str, t, owner: str, in_out: bool = False):
        self.name, self.type, self.in_out, self.owner = name, t, in_out, owner
        self.is_array = isinstance(t, T.ArrayType)
        elem = t.dtype if self.is_array else t
        plain = not self.is_array or type(t) is T.ArrayType  # (not an indexed array)
        if not plain or T.is_generic(t) or not (T.is_scalar(elem) or T.is_value(elem)):
            what = "an array of scalars, vectors or matrices, or a scalar or vector value"
            raise TypeError(f"{owner}: parameter '{name}' must be {what} of concrete types to be passed from "
                            f"JAX, got {T.type_name(t)}")
        nd, esh = np_dtype_of(elem)
        self.np_dtype, self.elem_shape = np.dtype(nd), tuple(esh)
        self.ndim = t.ndim if self.is_array else 0
        self.jax_ndim = self.ndim + len(self.elem_shape)

    def what(self) -> str:
        return f"{self.owner} argument '{self.name}'"

    def trace(self, v):
        """(dynamic, value) for a call argument while JAX traces: arrays and JAX/numpy scalars are operands of
        the callback (checked here); Python values are static (baked into the trace)."""
        jax = jax_module()
        if self.is_array:
            if not (hasattr(v, "shape") and hasattr(v, "dtype")):
                v = jax.numpy.asarray(v)
            if np.dtype(v.dtype) != self.np_dtype:
                raise TypeError(f"{self.what()}: expected an array of {self.np_dtype} elements "
                                f"({T.type_name(self.type)}), got {np.dtype(v.dtype)}")
            if len(v.shape) != self.jax_ndim or tuple(v.shape[self.ndim:]) != self.elem_shape:
                raise TypeError(f"{self.what()}: {T.type_name(self.type)} is a JAX array of {self.jax_ndim} "
                                f"dimension(s) ending in {self.elem_shape}, got shape {tuple(v.shape)}")
            return True, v
        if isinstance(v, (jax.Array, np.ndarray)):
            if tuple(v.shape) != self.elem_shape:
                raise TypeError(f"{self.what()}: {T.type_name(self.type)} needs shape {self.elem_shape}, got "
                                f"{tuple(v.shape)}")
            return True, v if np.dtype(v.dtype) == self.np_dtype else v.astype(self.np_dtype)
        return False, v

    def warp_shape(self, jax_shape) -> tuple:
        """The simkit array shape of a JAX array shape (element dims dropped)."""
        return tuple(int(d) for d in jax_shape[:len(jax_shape) - len(self.elem_shape)])

    def out_shape(self, dims) -> tuple:
        """The JAX shape of an output array of shape ``dims``: its simkit shape, or its JAX shape (with the
        element dims)."""
        dims = as_dims(dims, f"{self.what()} (output dims)")
        if len(dims) == self.jax_ndim and self.elem_shape and dims[self.ndim:] == self.elem_shape:
            return dims
        if len(dims) != self.ndim:
            raise ValueError(f"{self.what()}: a {self.ndim}D array of {T.type_name(self.type.dtype)} cannot have "
                             f"shape {dims}; pass output_dims={{'{self.name}': shape}}")
        return dims + self.elem_shape


def as_dims(d, what: str) -> tuple:
    if isinstance(d, (int, np.integer)):
        return (int(d),)
    try:
        return tuple(int(x) for x in d)
    except TypeError:
        raise TypeError(f"{what}: expected an int or a tuple of ints, got {d!r}") from None


def hashable(v):
    """A cache-key form of launch_dims / output_dims / name lists."""
    if isinstance(v, dict):
        return tuple(sorted((k, hashable(x)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return tuple(hashable(x) for x in v)
    return int(v) if isinstance(v, np.integer) else v


def in_out_names(names, params: list, n_outputs: int, owner: str) -> set:
    """The checked set of input-output parameter names (they come before the output-only ones)."""
    names = list(names or [])
    chosen = set(names)
    if len(chosen) != len(names):
        raise ValueError(f"{owner}: in_out_argnames must not contain duplicate names, got {names}")
    missing = chosen - set(params)
    if missing:
        raise ValueError(f"{owner}: in_out_argnames {sorted(missing)} did not match any function argument names "
                         f"({', '.join(params)})")
    if n_outputs < 1 or n_outputs > len(params):
        raise ValueError(f"{owner}: num_outputs={n_outputs}, but it has {len(params)} parameters (at least one "
                         f"output is needed)")
    if n_outputs < len(chosen):
        raise ValueError(f"{owner}: num_outputs={n_outputs} is smaller than the {len(chosen)} in_out_argnames "
                         f"(num_outputs counts them)")
    n_in = len(params) - n_outputs + len(chosen)
    late = [p for p in params[n_in:] if p in chosen]
    if late:
        raise ValueError(f"{owner}: {late} cannot be input-output: in_out arguments should be placed before "
                         f"output-only arguments (the last {n_outputs - len(chosen)} parameters)")
    return chosen


def annotated_params(func, owner: str) -> list:
    """(name, simkit type) of each parameter of an annotated Python function (``jax_callable``)."""
    sig = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        hints = {}
    if sig.return_annotation not in (inspect.Signature.empty, None, "None"):
        raise TypeError(f"{owner}: the function must not return a value (annotated -> "
                        f"{sig.return_annotation!r}): it writes its output arrays")
    out = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"{owner}: parameter '{p.name}' must be positional (no *args, **kwargs or "
                            f"keyword-only parameters)")
        ann = hints.get(p.name, p.annotation)
        if ann is inspect.Parameter.empty:
            raise TypeError(f"{owner}: parameter '{p.name}' has no type annotation (annotate every parameter, "
                            f"as in a kernel)")
        try:
            out.append((p.name, T.as_kernel_type(ann)))
        except TypeError as e:
            raise TypeError(f"{owner}: parameter '{p.name}': {e}") from None
    return out


def check_x64(args: list, owner: str) -> None:
    """64-bit arrays need JAX's 64-bit mode (else JAX makes them 32-bit)."""
    jax = jax_module()
    if jax.dtypes.canonicalize_dtype(np.float64) == np.float64:
        return
    for a in args:
        if a.is_array and a.np_dtype.itemsize == 8:
            raise TypeError(f"{a.what()}: an array of {a.np_dtype} needs JAX's 64-bit mode "
                            f"(jax.config.update('jax_enable_x64', True))")


def check_cpu(owner: str) -> None:
    if not simkit_module().is_cpu_available():
        raise RuntimeError(f"{owner}: this simkit build does not include CPU support, where JAX calls run")


def callback(host, specs: tuple, operands: list, vmap_method, side_effect: bool, vary=None):
    """Run ``host`` (numpy in, a tuple of numpy out matching ``specs``) from JAX code. Inside
    ``jax.shard_map``, results vary over the mesh axes their operands vary over (``vary``: the axes of each
    result; by default every operand's)."""
    jax = jax_module()

    def locked(*values):  # (XLA may call from several threads: simkit's compile caches are not theirs to share)
        values = [np.asarray(v) for v in values]
        with _HOST_LOCK:
            return host(*values)

    if side_effect:
        from jax.experimental import io_callback

        outs = tuple(io_callback(locked, specs, *operands, ordered=False))
    else:
        outs = tuple(jax.pure_callback(locked, specs, *operands, vmap_method=vmap_method))
    if vary is None:
        vary = [varying_axes(operands)] * len(outs)
    return tuple(make_varying(x, axes) for x, axes in zip(outs, vary))


def varying_axes(values) -> tuple:
    """The manual mesh axes (``jax.shard_map``) any of ``values`` varies over."""
    jax = jax_module()
    if not hasattr(jax, "typeof"):  # pragma: no cover - older JAX: no varying-axis types
        return ()
    axes = set()
    for v in values:
        try:
            t = jax.typeof(v)
        except TypeError:
            continue
        m = getattr(t, "manual_axis_type", None)
        axes.update((m.varying if m is not None else getattr(t, "vma", None)) or ())
    return tuple(sorted(axes, key=str))


def make_varying(x, axes: tuple):
    missing = tuple(a for a in axes if a not in varying_axes([x]))
    if not missing:
        return x
    lax = jax_module().lax
    return lax.pcast(x, missing, to="varying") if hasattr(lax, "pcast") else lax.pvary(x, missing)


# ------------------------------------------------------------------ host side (inside the callback)


def batch_of(args: list, values) -> tuple:
    """The batch shape of a callback's operands: leading dims beyond each parameter's own, broadcast."""
    leads = [tuple(np.shape(v)[:np.ndim(v) - a.jax_ndim]) for a, v in zip(args, values)]
    return tuple(np.broadcast_shapes(*leads)) if leads else ()


def host_scalar(a: JaxArg, v, batch: tuple):
    """A traced scalar/vector argument's host value (one value for the whole batch)."""
    v = np.asarray(v)
    if batch:
        flat = np.broadcast_to(v, batch + a.elem_shape).reshape((-1,) + a.elem_shape)
        if len(flat) and not (flat == flat[0]).all():
            raise ValueError(f"{a.what()}: a kernel parameter takes one value, but this one varies across the "
                             f"vmap batch; use vmap_method='sequential'")
        v = flat[0] if len(flat) else np.zeros(a.elem_shape, a.np_dtype)
    return v.reshape(()).item() if v.ndim == 0 else v


def host_array(a: JaxArg, v, batch: tuple, copy: bool = False):
    """(numpy array of shape batch + own shape, simkit array over it with the batch folded into the first
    dimension). ``copy``: a writable copy (input-output arguments); otherwise a view where possible."""
    v = np.asarray(v)
    own = v.shape[v.ndim - a.jax_ndim:]
    full = batch + own
    if v.shape != full:
        v = np.broadcast_to(v, full)
    if copy or not v.flags.c_contiguous or not v.flags.aligned:
        v = np.array(v, order="C")
    return v, as_array(collapse(v, batch, own), a.type, None, a.what())


def host_output(a: JaxArg, own: tuple, batch: tuple):
    """A zeroed output: (numpy array of shape batch + own, simkit view with the batch folded in)."""
    v = np.zeros(batch + tuple(own), a.np_dtype)
    return v, as_array(collapse(v, batch, tuple(own)), a.type, None, a.what())


def collapse(v: np.ndarray, batch: tuple, own: tuple) -> np.ndarray:
    if not batch:
        return v
    n = int(np.prod(batch))
    return v.reshape((n * own[0],) + own[1:])


def batched_dims(dims: tuple, batch: tuple) -> tuple:
    """Launch dims grown by the batch (folded into the first dimension)."""
    return (int(np.prod(batch)) * dims[0],) + dims[1:] if batch and dims else dims
