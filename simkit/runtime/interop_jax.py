"""JAX interop: arrays through DLPack, dtypes, devices, and kernels or functions called from JAX code.

Example::

    import jax, jax.numpy as jnp, simkit as sk

    a = sk.from_jax(jnp.ones((5, 3), dtype=jnp.float32), dtype=sk.vec3)   # 5 vec3, zero copy
    x = sk.to_jax(a)                                                       # shape (5, 3)
    sk.dtype_to_jax(sk.float32), sk.dtype_from_jax(jnp.int8)               # jnp.float32, sk.int8

``from_jax`` shares memory with the JAX buffer (JAX arrays are immutable: do not write to it). ``to_jax``
shares memory when JAX accepts the buffer (CPU: 64-byte aligned data, C- or transposed layout); otherwise
JAX copies. ``jax_kernel`` (jax_kernel.py) and ``jax_callable`` (jax_callable.py) call simkit code from
``jax.jit`` / ``jax.grad`` / ``jax.vmap``.
"""
from __future__ import annotations

from .array import array
from .interop import from_dlpack
from .jax_callable import (JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX, JaxCallable, clear_jax_callable_graph_cache,
                           jax_callable)
from .jax_host import JaxCallableGraphMode, JaxModulePreloadMode, jax_module, simkit_module
from .jax_kernel import JaxKernel, jax_kernel

__all__ = ["from_jax", "to_jax", "dtype_from_jax", "dtype_to_jax", "device_from_jax", "device_to_jax",
           "jax_kernel", "jax_callable", "clear_jax_callable_graph_cache", "JaxCallableGraphMode",
           "JaxModulePreloadMode"]
_ = (JAX_CALLABLE_DEFAULT_GRAPH_CACHE_MAX, JaxCallable, JaxKernel)  # (importable from here too)


def from_jax(x, dtype=None) -> array:
    """A simkit array sharing the memory of JAX array ``x`` (through DLPack; treat it as read-only)."""
    return from_dlpack(x, dtype=dtype)


def to_jax(a: array):
    """A JAX array of ``a`` through DLPack (zero copy when JAX accepts the buffer, see the module doc)."""
    jax = jax_module()
    if not isinstance(a, array) or a.is_type:
        raise TypeError(f"to_jax needs a simkit array, got {type(a).__name__}")
    return jax.dlpack.from_dlpack(a)


_SCALARS = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
            "uint32", "uint64", "bool")


def _jax_scalar_types() -> dict:
    """simkit scalar type -> JAX scalar type (``jnp.float32``...)."""
    from ..kernels import types as T

    jnp = jax_module().numpy
    return {getattr(T, n): getattr(jnp, "bool_" if n == "bool" else n) for n in _SCALARS}


def dtype_to_jax(dtype):
    """The JAX scalar type of a simkit scalar type (``sk.float32`` -> ``jnp.float32``); TypeError for other
    types (a vector's JAX arrays hold its scalar type, with trailing dims)."""
    from ..kernels import types as T

    t = T.normalize_dtype(dtype)
    found = _jax_scalar_types().get(t) if T.is_scalar(t) else None
    if found is None:
        raise TypeError(f"dtype_to_jax: {T.type_name(t)} has no JAX scalar type (scalar types only; a vector or "
                        f"matrix array is a JAX array of its scalar type with trailing dims)")
    return found


def dtype_from_jax(jax_dtype):
    """The simkit scalar type of a JAX dtype or scalar type (``jnp.float32``, ``jnp.dtype("int8")``)."""
    import numpy as np

    try:
        d = np.dtype(jax_dtype)
    except TypeError:
        raise TypeError(f"dtype_from_jax: {jax_dtype!r} is not a JAX dtype") from None
    for t, j in _jax_scalar_types().items():
        if np.dtype(j) == d:
            return t
    raise TypeError(f"dtype_from_jax: JAX dtype {d} has no simkit scalar type")


def device_from_jax(d):
    """The simkit Device of a ``jax.Device``: the CPU, or the CUDA device of the GPU's process-local ordinal
    (``local_hardware_id``, not the global id of a multi-process ``jax.distributed`` program)."""
    sk = simkit_module()
    if d.platform == "cpu":
        return sk.get_device("cpu")
    if d.platform != "gpu":
        raise RuntimeError(f"device_from_jax: JAX device '{d}' has platform '{d.platform}'; simkit maps 'cpu' and "
                           f"'gpu' devices")
    jax = jax_module()
    if d.process_index != jax.process_index() or d.local_hardware_id is None:
        raise RuntimeError(f"device_from_jax: JAX device '{d}' belongs to process {d.process_index} and is not "
                           f"addressable from process {jax.process_index()}")
    return sk.get_cuda_device(d.local_hardware_id)


def device_to_jax(device):
    """The ``jax.Device`` of a simkit device, among this process's JAX devices (a CUDA device: the JAX GPU of
    the same process-local ordinal); RuntimeError when JAX has none."""
    jax = jax_module()
    d = simkit_module().get_device(device)
    try:
        found = jax.local_devices(backend="cuda" if d.is_cuda else "cpu")
    except RuntimeError:
        found = []
    if d.is_cuda:
        found = [j for j in found if j.local_hardware_id == d.ordinal]
    if not found:
        raise RuntimeError(f"device_to_jax: the JAX device of '{device}' is not available in this process "
                           f"(JAX has no {'GPU of that ordinal' if d.is_cuda else 'CPU device'})")
    return found[0]
