"""PyTorch interop: zero-copy tensors and gradients, devices, streams, and simkit code as a torch op.

Example::

    import torch, simkit as sk
    t = torch.zeros(8, 3, requires_grad=True)
    x = sk.from_torch(t, dtype=sk.vec3)        # shares t's memory; x.grad shares t.grad's memory
    y = sk.to_torch(x)                         # back to torch, still the same memory

    step = sk.torch_function(lambda x: my_simkit_step(x))   # a torch.autograd.Function
    loss = step(t).sum(); loss.backward()                    # gradients flow through simkit kernels

Memory is shared through DLPack in both directions (CPU and CUDA). Vector and
matrix dtypes map to trailing tensor dims. Gradients are shared too:
``from_torch(t, requires_grad=True)`` gives an array whose ``.grad`` *is* ``t.grad``'s
memory (allocated, zeroed, if ``t.grad`` is None), and ``to_torch(a)`` of an array
with a gradient gives a leaf tensor whose ``.grad`` is ``a.grad``'s memory.

As in Warp: ``dtype_from_torch`` / ``dtype_to_torch`` map element types (simkit's unsigned types wider than
8 bits map to torch's signed type of their size); ``from_torch(t, dtype=sk.uint64)`` views an int64 tensor
(integers of one size, either sign, and bool tensors as int8/uint8) without a copy; ``return_ctype=True``
gives the kernel descriptor (``array_ctype.array_t``, a launch argument too); ``a.capacity`` counts the
tensor's storage from its first element on. A custom ``torch.autograd.Function`` may pass torch's gradients
straight to ``launch(..., adjoint=True, adj_inputs=..., adj_outputs=...)``: those buffers are read and
accumulated into, never zeroed, and may be strided or broadcast views (``runtime/adjoint_buffers.py``).

Streams (CUDA): conversions follow the DLPack stream protocol, so simkit's current
stream waits for torch's current stream when importing and vice versa when
exporting (event waits, no host synchronization). ``torch_function`` runs the
simkit code on torch's current stream (``stream_from_torch``), so the two
frameworks' work is ordered without extra waits.
"""
from __future__ import annotations

import contextlib

from ..kernels import types as T
from .array import array
from .array_ctype import array_t
from .device import get_device
from .interop import from_dlpack, regroup
from .tape import Tape


def _torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - exercised only without torch
        raise ImportError("PyTorch interop needs torch (pip install 'simkit[torch]')") from None
    return torch


_FROM_TORCH: dict = {}  # torch dtype -> simkit scalar type (filled on first use: torch is imported lazily)


def dtype_from_torch(torch_dtype):
    """The simkit scalar type of a ``torch.dtype`` (``torch.float32`` -> ``sk.float32``; torch's unsigned
    ``uint16``/``uint32``/``uint64``, where torch has them, -> ``sk.uint16``...). ``TypeError`` for the others
    (complex, float8...)."""
    if not _FROM_TORCH:
        torch = _torch()
        _FROM_TORCH.update({torch.bool: T.bool, torch.int8: T.int8, torch.uint8: T.uint8, torch.int16: T.int16,
                            torch.int32: T.int32, torch.int64: T.int64, torch.float16: T.float16,
                            torch.float32: T.float32, torch.float64: T.float64, torch.bfloat16: T.bfloat16})
        for name, s in (("uint16", T.uint16), ("uint32", T.uint32), ("uint64", T.uint64)):
            if hasattr(torch, name):
                _FROM_TORCH[getattr(torch, name)] = s
    s = _FROM_TORCH.get(torch_dtype)
    if s is None:
        raise TypeError(f"torch dtype {torch_dtype} has no simkit scalar type")
    return s


def dtype_to_torch(dtype):
    """The ``torch.dtype`` of a simkit scalar type (``sk.float32`` -> ``torch.float32``). As Warp's, unsigned
    types wider than 8 bits map to the signed torch type of their size (``sk.uint32`` -> ``torch.int32``:
    torch has few operations for its own ``uint32``); ``from_torch`` views such tensors back as unsigned
    (``dtype=sk.uint32``). ``TypeError`` for types torch has no counterpart of (vectors: use their scalar)."""
    torch = _torch()
    d = T.normalize_dtype(dtype) if dtype is not None else None
    table = {T.bool: torch.bool, T.int8: torch.int8, T.uint8: torch.uint8, T.int16: torch.int16,
             T.uint16: torch.int16, T.int32: torch.int32, T.uint32: torch.int32, T.int64: torch.int64,
             T.uint64: torch.int64, T.float16: torch.float16, T.float32: torch.float32, T.float64: torch.float64,
             T.bfloat16: torch.bfloat16}
    if d not in table:
        name = T.type_name(d) if d is not None else "None"
        raise TypeError(f"simkit type {name} has no torch dtype (only scalar types do)")
    return table[d]


def _scalar_of_torch(t):
    return dtype_from_torch(t.dtype)


def _storage_capacity(t) -> int:
    """Bytes of ``t``'s storage from its first element on (what a kernel may address from ``t.data_ptr()``)."""
    ptr = t.data_ptr()
    if not ptr:
        return 0
    storage = t.untyped_storage()
    return storage.nbytes() - (ptr - storage.data_ptr())


def _zeros_strided(t):
    """Zeros with exactly ``t``'s shape and strides (simkit gradients share their array's layout)."""
    return _torch().empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device).zero_()


def device_from_torch(device):
    """The simkit Device of a torch device (``torch.device``, ``"cuda"``, ``"cuda:1"``, ``"cpu"``)."""
    torch = _torch()
    d = torch.device(device)
    if d.type == "cpu":
        return get_device("cpu")
    if d.type == "cuda":
        return get_device(f"cuda:{d.index if d.index is not None else torch.cuda.current_device()}")
    raise ValueError(f"torch device '{d}' has no simkit equivalent (CPU and CUDA only)")


def device_to_torch(device):
    """The ``torch.device`` of a simkit device (``Device``, ``"cpu"``, ``"cuda:0"``)."""
    return _torch().device(get_device(device).alias)


def stream_from_torch(stream_or_device=None):
    """A simkit Stream wrapping a torch CUDA stream (or torch's current stream of a device; default: the
    current device). The handle is borrowed: torch keeps owning the stream."""
    torch = _torch()
    s = stream_or_device
    if hasattr(s, "alias") and hasattr(s, "is_cuda"):  # a simkit Device
        s = device_to_torch(s)
    if s is None or isinstance(s, (str, int, torch.device)):
        s = torch.cuda.current_stream(s)
    from ..kernels.backends.cuda.stream import Stream

    return Stream(device_from_torch(s.device), cuda_stream=s.cuda_stream)


def stream_to_torch(stream):
    """A ``torch.cuda.ExternalStream`` for a simkit Stream."""
    torch = _torch()
    return torch.cuda.ExternalStream(stream.cuda_stream, device=device_to_torch(stream.device))


def from_torch(t, dtype=None, requires_grad=None, grad=None, return_ctype: bool = False,
               retain_grad: bool = False):
    """A simkit array sharing ``t``'s memory (zero copy, CPU or CUDA).

    ``dtype``: a vector/matrix type regroups trailing dims (``(n, 3)`` float32 -> n ``vec3``); an integer type
    of the tensor's element size views it as signed or unsigned (int64 data as ``sk.uint64``), and bool tensors
    may be viewed as ``int8``/``uint8``. ``requires_grad`` (default ``t.requires_grad``): the array's ``.grad``
    shares memory with ``t.grad`` (allocated zeroed, with ``t``'s strides, when it is None). ``grad``: the
    gradient to attach instead (a tensor or a simkit array with the array's layout; implies requires_grad).
    ``retain_grad``: keep the gradient through backward passes (``array.retain_grad``).
    ``return_ctype``: return the kernel descriptor (:class:`simkit.runtime.array_ctype.array_t`) instead of
    an array; it keeps ``t`` and the gradient alive. ``a.capacity`` counts the storage after the tensor's
    first element (a view's kernels may address the rest of its storage).
    """
    torch = _torch()
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"from_torch needs a torch.Tensor, got {type(t).__name__}")
    scalar = _scalar_of_torch(t)
    es = t.element_size()
    regroup(tuple(t.shape), tuple(s * es for s in t.stride()), scalar, dtype, reinterpret=True)  # clear errors
    a = from_dlpack(t.detach(), dtype=dtype)
    a._capacity = _storage_capacity(t)
    if requires_grad is None:
        requires_grad = t.requires_grad
    if grad is None and requires_grad:
        if t.grad is None:
            t.grad = _zeros_strided(t)
        grad = t.grad
    if grad is not None:
        a.grad = _grad_array(a, t, grad)
    if retain_grad:
        a.retain_grad = True  # (ValueError without a gradient)
    return array_t.of(a, keep=t, keep_grad=grad) if return_ctype else a


def _grad_array(a: array, t, grad) -> array:
    """The simkit gradient array of ``a`` (made from tensor ``t``) that ``grad`` (a tensor or an array) is."""
    if isinstance(grad, array):
        if grad.shape != a.shape or grad.strides != a.strides or grad.dtype is not a.dtype or grad.device != a.device:
            raise ValueError(f"the gradient array ({T.type_name(grad.dtype)}, shape {grad.shape}, strides "
                             f"{grad.strides}, {grad.device.alias}) must have the array's dtype, shape, strides and "
                             f"device ({T.type_name(a.dtype)}, {a.shape}, {a.strides}, {a.device.alias})")
        return grad
    if tuple(grad.shape) != tuple(t.shape) or grad.stride() != t.stride() or grad.dtype != t.dtype:
        raise ValueError(f"the gradient tensor (shape {tuple(grad.shape)}, strides {grad.stride()}, "
                         f"{grad.dtype}) must have the tensor's shape, strides and dtype ({tuple(t.shape)}, "
                         f"{t.stride()}, {t.dtype}): simkit gradients share their array's layout")
    return from_dlpack(grad.detach(), dtype=a.dtype)


def to_torch(a: array, requires_grad=None):
    """A torch tensor sharing ``a``'s memory (vector/matrix dtypes add trailing dims).

    ``requires_grad`` (default ``a.requires_grad``): the tensor is a leaf requiring grad, and when ``a`` has a
    gradient array the tensor's ``.grad`` shares its memory.
    """
    torch = _torch()
    if not isinstance(a, array) or a.is_type:
        raise TypeError(f"to_torch needs a simkit array, got {type(a).__name__}")
    t = torch.from_dlpack(a)
    if requires_grad is None:
        requires_grad = a.requires_grad
    if requires_grad:
        t.requires_grad_(True)
        if a.grad is not None:
            t.grad = torch.from_dlpack(a.grad)
    return t


@contextlib.contextmanager
def _on_torch_stream(device):
    if device is None or device.is_cpu:
        yield
        return
    from ..kernels.backends.cuda.stream import ScopedStream

    with ScopedStream(stream_from_torch(device), sync_enter=True, sync_exit=True):
        yield


def torch_function(fn, dtypes=None):
    """Wrap ``fn(*arrays) -> array | tuple of arrays`` (simkit launches) as a differentiable torch function.

    The returned callable takes torch tensors (and any other values, passed through unchanged) and returns
    torch tensors. Forward: each tensor becomes a simkit array sharing its memory (``dtypes[i]`` regroups
    trailing dims, e.g. ``sk.vec3``), ``fn`` runs under a :class:`Tape`, and its outputs become tensors sharing
    simkit memory. Backward: the output gradients seed the outputs' ``.grad`` arrays, ``tape.backward()`` runs
    the adjoint kernels, and the inputs' gradients (written straight into fresh torch tensors) are returned.

    Inside ``fn`` the inputs that torch differentiates have ``requires_grad=True``; allocate intermediate and
    output arrays with ``requires_grad=True`` too (``sk.zeros_like(x)`` inherits it), else the gradient chain
    stops there. Each forward must write fresh output arrays (the tape refuses overwritten ones).
    """
    torch = _torch()

    class SimkitFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            device = None
            ins, tins = [], []
            for k, v in enumerate(args):
                if isinstance(v, torch.Tensor):
                    dt = dtypes[k] if dtypes is not None and k < len(dtypes) else None
                    need = ctx.needs_input_grad[k] and v.is_floating_point()
                    src = v.detach()
                    if need and 0 in src.stride():
                        src = src.contiguous()  # broadcast (stride-0) inputs: a gradient per element
                    x = from_torch(src, dtype=dt, requires_grad=False)
                    if need:  # fn sees requires_grad=True inputs (zeros_like(x) then inherits it)
                        x.grad = from_torch(_zeros_strided(src), dtype=x.dtype, requires_grad=False)
                    device = device or x.device
                    ins.append(x)
                    tins.append(src if need else None)
                else:
                    ins.append(v)
                    tins.append(None)
            tape = Tape()
            with _on_torch_stream(device), tape:
                result = fn(*ins)
            single = not isinstance(result, (tuple, list))
            outs = [result] if single else list(result)
            touts = []
            for o in outs:
                if not isinstance(o, array):
                    raise TypeError(f"torch_function: fn must return simkit arrays, got {type(o).__name__}")
                if T.is_float(T.scalar_of(o.dtype)) and not o.requires_grad:
                    o.requires_grad = True
                touts.append(to_torch(o, requires_grad=False))
            ctx.mark_non_differentiable(*[t for t, o in zip(touts, outs) if not o.requires_grad])
            ctx.simkit = (tape, ins, tins, outs, device)
            return touts[0] if single else tuple(touts)

        @staticmethod
        def backward(ctx, *gouts):
            tape, ins, tins, outs, device = ctx.simkit
            grads = []
            for x, src in zip(ins, tins):  # fresh buffers: earlier ones may now be torch's leaf .grad
                if src is None:
                    grads.append(None)
                    continue
                g = _zeros_strided(src)
                x.grad = from_torch(g, dtype=x.dtype, requires_grad=False)
                grads.append(g)
            with _on_torch_stream(device):
                tape.zero()
                seeds = {o: from_torch(g.detach().contiguous(), dtype=o.dtype, requires_grad=False)  # may be expanded
                         for o, g in zip(outs, gouts) if o.requires_grad and g is not None}
                if seeds:
                    tape.backward(grads=seeds)
            return tuple(grads)

    def apply(*args):
        return SimkitFunction.apply(*args)

    apply.__name__ = getattr(fn, "__name__", "simkit_function")
    apply.__doc__ = fn.__doc__
    apply.Function = SimkitFunction
    return apply

