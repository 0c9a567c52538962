"""``launch``: run a kernel over a 1-4D grid.

Example::

    sk.launch(saxpy, dim=n, inputs=[2.0, x], outputs=[y], device="cpu")

Every argument is checked against the kernel signature; a mismatch raises a
``TypeError`` naming the parameter and the expected type.
"""
from __future__ import annotations

import contextlib
import os
import struct as _struct
import time
import warnings

import numpy as np

from .. import config, logger
from ..kernels import types as T
from ..kernels.decorators import Kernel
from ..kernels.deterministic import DeterminismWarning, mode_of, ordered as ordered_launch
from ..kernels.module import native_key
from ..kernels.backends import cpu_graph
from . import adjoint_buffers, cpu_tuning, declare, interop, tape
from .indexedarray import indexedarray
from .array import array
from .device import Device, get_device
from .packer import Mismatch, make_packer

_BOUNDS = _struct.Struct("<4iiiq")
_ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

ERRORS = {
    1: "index {b} is out of bounds for axis {a} with size {c}",
    2: "an array argument is None (null) but is indexed",
    3: "{a} indices given for a {b}D array",
    4: "expectation failed (expect_eq / expect_near)",
    5: "adjoint loop stack overflow on the GPU (needed {a} bytes per thread, have {b}); raise "
       "simkit.config.cuda_stack_bytes",
    6: "assertion failed",
    7: "slice step cannot be zero (axis {a})",
    8: "the backward pass reaches grad(f)(...) of values that are differentiated: their derivative (f's second "
       "derivative) is not computed; launch this outside a Tape, or give grad() values that are not differentiated",
}


def _dims(dim) -> tuple:
    if isinstance(dim, (int, np.integer)):
        dims = (int(dim),)
    else:
        try:
            dims = tuple(int(d) for d in dim)
        except (TypeError, ValueError):
            raise TypeError(f"launch dim must be an int or a tuple of 1-4 ints, got {dim!r}") from None
    if not 1 <= len(dims) <= 4:
        raise ValueError(f"launch dim must have at least 1 and at most 4 dimensions, got {len(dims)}")
    if any(d < 0 for d in dims):
        raise ValueError(f"launch dim must be non-negative, got {dims}")
    return dims


_INT32_MAX = 2**31 - 1
# the CPU entry runs a launch in int64 chunks of int32 range loops (native/cpu_launch.h, sk::cpu_run): the thread count
# (an int64 in the launch bounds) is the limit
CPU_MAX_THREADS = 2**63 - 1


def check_cpu_size(kernel, size: int) -> None:
    if size > CPU_MAX_THREADS:
        raise ValueError(f"launch of {size} threads of kernel '{kernel.key}' on the CPU: at most 2**63 - 1 "
                         f"per CPU launch")


def bounds_bytes(dims: tuple, flags: int = 0) -> bytes:
    """The native launch bounds (int32 extents, int64 thread count) and the thread count."""
    size = 1
    for d in dims:
        size *= d
    if len(dims) == 1 and dims[0] > _INT32_MAX:  # (a 1D launch's extent is its thread count: not read)
        shape = [_INT32_MAX, 1, 1, 1]
    else:
        for a, d in enumerate(dims):
            if d > _INT32_MAX:
                raise ValueError(f"launch dim {dims}: extent {d} of dimension {a} exceeds 2**31 - 1 (tid() indices "
                                 f"are int32); only a 1D launch may have more threads")
        shape = list(dims) + [1] * (4 - len(dims))
    return _BOUNDS.pack(*shape, len(dims), flags, size), size


def pad_to_tid(spec, dims: tuple) -> tuple:
    """``dims`` with extents of 1 appended up to the number of indices the kernel unpacks tid() into: as in
    Warp, ``i, j = tid()`` launched over ``dim=n`` runs n threads with j = 0."""
    tids = spec.ir.uses_tid if spec.ir is not None else 0
    return dims + (1,) * (tids - len(dims)) if tids > len(dims) else dims


def check_tid_extent(kernel, spec, dims: tuple) -> None:
    """Refuse a 1D launch of more than 2**31 - 1 threads of a kernel that reads tid() (an int32)."""
    if len(dims) == 1 and dims[0] > _INT32_MAX and (spec.ir is None or spec.ir.uses_tid):
        raise ValueError(f"kernel '{kernel.key}' uses tid() with extent {dims[0]} in dimension 0: tid() returns "
                         f"int32 indices, at most 2**31 - 1 = {_INT32_MAX}; launch a 2D grid instead")


def _arg_type(kernel: Kernel, name: str, value):
    """The concrete kernel type of a Python argument (for generic kernels)."""
    if isinstance(value, (array, indexedarray)):
        return value.__simkit_type__()
    t = T.type_of_value(value)
    if t is not None:
        return t
    if interop.foreign_type(value) is not None:  # numpy / foreign arrays (scalar dtype of their elements)
        return interop.foreign_type(value)
    raise TypeError(f"kernel '{kernel.key}' argument '{name}': unsupported type {type(value).__name__}")


# classes of non-array arguments whose kernel type is their class alone (scalars, vectors, structs,
# None; not numpy or foreign arrays): the fast signature of a generic kernel's launch
_PLAIN_ARGS: set = set()


def _signature(args) -> tuple | None:
    """A cheap key of the arguments' kernel types (array: dtype and ndim; else the class), or None
    when an argument needs the full type check (a foreign array, a class not seen yet)."""
    sig = []
    for v in args:
        c = v.__class__
        if c is array:
            try:
                sig.append(v._sigk)
            except AttributeError:  # (kept on the array: its dtype and ndim never change)
                k = v._sigk = (id(v.dtype), v.ndim)
                sig.append(k)
        elif c in _PLAIN_ARGS:
            sig.append(c)
        else:
            return None
    return tuple(sig)


def _generic_spec(kernel: Kernel, args, sig):
    """The specialisation of a generic kernel for these arguments (the full type check), remembered
    under their signature."""
    types = tuple(_arg_type(kernel, n, v) if T.is_generic(t) else t
                  for n, t, v in zip(kernel.param_names, kernel.param_types.values(), args))
    spec = kernel.spec_for(types)
    if sig is not None:
        kernel._by_signature[sig] = spec
    for v in args:
        if v.__class__ not in (array, indexedarray) and interop.foreign_type(v) is None:
            _PLAIN_ARGS.add(v.__class__)
    return spec


def _indexed_arg(kernel, name, t, v, device) -> indexedarray:
    """An indexed-array argument (a plain array: every axis as it is), checked."""
    if isinstance(v, array) and not v.is_type:
        v = indexedarray(v)
    return _checked_array(kernel, f"argument '{name}'", t, v, device, indexedarray)


def _adjoint_arg(kernel, name, t, g, device) -> array:
    """An explicit adjoint array of an array parameter, checked."""
    return _checked_array(kernel, f"adjoint of argument '{name}'", t, g, device, array)


def _checked_array(kernel, what: str, t, v, device, cls):
    """``v``, an instance of ``cls`` (array or indexedarray) for the parameter type ``t``, on ``device``."""
    if not isinstance(v, cls) or v.is_type:
        raise TypeError(f"kernel '{kernel.key}' {what}: expected {T.type_name(t)}, got {type(v).__name__}")
    if v.dtype is not t.dtype or v.ndim != t.ndim:
        raise TypeError(f"kernel '{kernel.key}' {what}: expected {T.type_name(t)}, got "
                        f"{cls.__name__}(dtype={T.type_name(v.dtype)}, ndim={v.ndim})")
    if v.device != device:
        raise ValueError(f"kernel '{kernel.key}' {what}: array is on {v.device.alias}, launch is on "
                         f"{device.alias}")
    return v


def _check_and_pack(kernel, spec, args, device, adj=None) -> tuple[bytes, bool]:
    offsets, size = spec.layout
    buf = bytearray(size)
    contiguous = True
    for k, (name, t, off, v) in enumerate(zip(kernel.param_names, spec.types, offsets, args)):
        if isinstance(t, T.IndexedArrayType):
            if v is None:
                b = T.pack_value(t, None)
            else:
                v = args[k] = _indexed_arg(kernel, name, t, v, device)
                b = v._descriptor()
                contiguous = contiguous and v.data.is_contiguous
        elif isinstance(t, T.ArrayType):
            if v is not None and not isinstance(v, array):  # numpy, CUDA array interface, DLPack: zero copy
                v = args[k] = interop.as_array(v, t, device, f"kernel '{kernel.key}' argument '{name}'")
            if v is None:
                b = bytes(T.ARRAY_DESCRIPTOR_SIZE)
            elif not isinstance(v, array) or v.is_type:
                raise TypeError(f"kernel '{kernel.key}' argument '{name}': expected {T.type_name(t)}, "
                                f"got {type(v).__name__}")
            elif v.dtype is not t.dtype or v.ndim != t.ndim:
                raise TypeError(f"kernel '{kernel.key}' argument '{name}': expected {T.type_name(t)}, got "
                                f"array(dtype={T.type_name(v.dtype)}, ndim={v.ndim})")
            elif v.device != device:
                raise ValueError(f"kernel '{kernel.key}' argument '{name}': array is on {v.device.alias}, "
                                 f"launch is on {device.alias}")
            else:
                b = v._descriptor()
                if adj is not None and adj[k] is not None:  # explicit adjoint array (adjoint=True launches)
                    b = v._descriptor_with_grad(_adjoint_arg(kernel, name, t, adj[k], device))
                if contiguous and not v.is_contiguous:
                    contiguous = False
        elif T.is_scalar(t):
            b = _pack_scalar(kernel, name, t, v)
        elif T.is_value(t):
            b = _pack_composite(kernel, name, t, v)
        elif T.is_struct(t):
            if v is None:
                raise ArgumentError(f"kernel '{kernel.key}' argument '{name}' expects {t.__name__} but got None "
                                    f"(a struct argument needs an instance: {t.__name__}())")
            if not isinstance(v, t):
                raise TypeError(f"kernel '{kernel.key}' argument '{name}': expected struct {t.__name__}, "
                                f"got {type(v).__name__}")
            for fname, a in t._simkit_struct.arrays(v):
                if a.device != device:
                    raise ValueError(f"kernel '{kernel.key}' argument '{name}.{fname}': array is on "
                                     f"{a.device.alias}, launch is on {device.alias}")
                if not a.is_contiguous:
                    contiguous = False
            b = T.pack_value(t, v)
        else:  # pragma: no cover
            raise TypeError(f"kernel '{kernel.key}' argument '{name}': unsupported parameter type")
        buf[off:off + len(b)] = b
    return bytes(buf), contiguous


def _pack(kernel, spec, args, device) -> tuple[bytes, bool]:
    """The launch's packed arguments and whether its arrays are all contiguous: through the specialisation's
    generated packer (runtime/packer.py), or, where an argument is not what it expects, through the checks."""
    packer = spec.packer
    if packer is None:
        packer = spec.packer = make_packer(spec)
    try:
        return packer(args, device)
    except Mismatch:
        return _check_and_pack(kernel, spec, args, device)


class ArgumentError(TypeError, RuntimeError):
    """A launch argument that does not fit its parameter (a TypeError; also the RuntimeError Warp raises)."""


class ArgumentValueError(TypeError, ValueError):
    """A launch argument that cannot be converted to its parameter's type (a TypeError; also the ValueError
    Warp raises)."""


_SHORT = {"float16": "h", "float32": "f", "float64": "d", "int8": "b", "uint8": "ub", "int16": "s",
          "uint16": "us", "int32": "i", "uint32": "ui", "int64": "l", "uint64": "ul"}


def warp_type_name(t) -> str:
    """Warp's name of a vector / matrix / quaternion / transform type (vec3f, mat22d, quatf, transformf)."""
    code = _SHORT.get(T.type_name(t._dtype), T.type_name(t._dtype))
    if t._kind == "vector":
        return f"vec{t._length}{code}"
    if t._kind == "matrix":
        return f"mat{t._shape[0]}{t._shape[1]}{code}"
    return ("quat" if t._kind == "quaternion" else "transform") + code


def _pack_composite(kernel, name, t, v) -> bytes:
    """A vector / matrix / quaternion / transform argument: a value of the type, or a sequence of its
    components. A single number is refused (as Warp 1.19 does for Python and Warp scalars; simkit's
    scalars are numpy scalars, so numpy scalars and bools are refused too)."""
    if isinstance(v, T.value_base) and type(v) is not t and v.size != t._length:
        raise ArgumentError(f"kernel '{kernel.key}' argument '{name}' expects {warp_type_name(t)} but got "
                            f"{type(v).__name__}")
    if v is not None and (isinstance(v, (bool, int, float, np.generic)) or not hasattr(v, "__len__")):
        wname = warp_type_name(t)
        raise ArgumentError(f"kernel '{kernel.key}' argument '{name}' expects {wname} but got a single value of "
                            f"type {type(v).__name__}; construct the value explicitly, e.g. {wname}(...)")
    try:
        return T.pack_value(t, v)
    except (TypeError, ValueError) as e:
        got = "None" if v is None else f"{type(v).__name__} ({e})"
        raise ArgumentValueError(f"Failed to convert argument for param {name} to {warp_type_name(t)} in kernel "
                                 f"'{kernel.key}': expected {t._length} components, got {got}") from None


def _pack_scalar(kernel, name, t, v) -> bytes:
    if isinstance(v, array) or isinstance(v, (list, tuple, np.ndarray)) and not isinstance(v, np.generic):
        raise TypeError(f"kernel '{kernel.key}' argument '{name}': expected {T.type_name(t)}, "
                        f"got {type(v).__name__}")
    if T.is_int(t) and isinstance(v, (float, np.floating)):
        raise TypeError(f"kernel '{kernel.key}' argument '{name}': expected {T.type_name(t)}, got a float ({v!r})")
    try:
        return T.pack_value(t, v)
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"kernel '{kernel.key}' argument '{name}': expected {T.type_name(t)}: {e}") from None


def _infer_device(args):
    for a in args:
        if isinstance(a, array) and not a.is_type:
            return a.device
        d = interop.foreign_device(a)  # numpy arrays: the CPU
        if d is not None:
            return d
    return get_device(None)


_bounds_cache: dict = {}


def _bounds(dim):
    b = _bounds_cache.get(dim) if isinstance(dim, (int, tuple)) else None
    if b is None:
        b = bounds_bytes(_dims(dim))
        if isinstance(dim, (int, tuple)) and len(_bounds_cache) < 4096:
            _bounds_cache[dim] = b
    return b


def launch(kernel: Kernel, dim, inputs=(), outputs=(), adj_inputs=None, adj_outputs=None, device=None,
           stream=None, adjoint: bool = False, record_tape: bool = True, block_dim: int = 256,
           max_blocks: int = 0, record_cmd: bool = False):
    """Run ``kernel`` once per index of ``dim`` (an int or a tuple of up to 4 ints).

    ``record_cmd=True``: check and pack everything, compile the kernel, but return a ``Launch`` to run
    later (``.launch()``) instead of running it (``runtime/launch_cmd.py``)."""
    if kernel.__class__ is not Kernel:
        raise TypeError(f"launch() needs a @kernel, got {type(kernel).__name__}")
    args = [*inputs, *outputs]
    if len(args) != len(kernel.param_names):
        raise TypeError(f"kernel '{kernel.key}' takes {len(kernel.param_names)} arguments "
                        f"({', '.join(kernel.param_names)}), got {len(args)}")
    if device is None:
        device = _infer_device(args)
    elif device.__class__ is not Device:
        device = get_device(device)
    if config.print_launches:
        logger.get_logger().info(f"kernel: {kernel.key} dim: {dim} inputs: {list(inputs)} outputs: {list(outputs)} "
                                 f"device: {device}")
    if kernel.generic:
        sig = _signature(args)
        spec = kernel._by_signature.get(sig) if sig is not None else None
        if spec is None:
            spec = _generic_spec(kernel, args, sig)
    else:
        spec = kernel.specs[None]
    if declare.active:  # (a dry run: the specialisation is made, and compiles at the next real launch)
        return None
    packed, contiguous = _pack(kernel, spec, args, device)
    b = _bounds_cache.get(dim) if dim.__class__ is int else None
    bounds, size = b if b is not None else _bounds(dim)
    if size > _INT32_MAX:
        check_tid_extent(kernel, spec, _dims(dim))
    if adjoint:
        adj = staged = None
        if spec.ir is None:
            kernel.module.load_spec(spec, device)
        _check_replayable(kernel, spec)
        if spec.ir.uses_tid > 1 and len(_dims(dim)) < spec.ir.uses_tid:
            dim = pad_to_tid(spec, _dims(dim))
            bounds, size = _bounds(dim)
        if adj_inputs is not None or adj_outputs is not None:
            adj = list(adj_inputs or [None] * len(inputs)) + list(adj_outputs or [None] * len(outputs))
            if len(adj) != len(args):
                raise ValueError(f"kernel '{kernel.key}' takes {len(args)} arguments, but adj_inputs and adj_outputs "
                                 f"give {len(adj)} adjoints (None for an array's own .grad)")
            if not record_cmd:  # adjoints strided unlike their primal: through temporaries (adjoint_buffers.py)
                staged = adjoint_buffers.stage(args, adj, stream)
            packed, contiguous = _check_and_pack(kernel, spec, args, device, adj)
        if record_cmd:
            from .launch_cmd import Launch

            return Launch._recorded(kernel, spec, device, args, dim, packed, contiguous, block_dim, max_blocks,
                                    adj=adj if adj is not None else [None] * len(args))
        _run(kernel, spec, device, packed, contiguous, bounds, size, block_dim, stream, adjoint=True,
             max_blocks=max_blocks, ordered=ordered_launch(kernel, spec, adjoint=True), args=args, adj=adj)
        if staged:
            adjoint_buffers.unstage(staged, stream)
        return
    key = device.kind if config.mode != "debug" else native_key(device, False)
    native = spec.native.get(key)
    if native is None:
        kernel.module.load_spec(spec, device)
        native = spec.native[key]
    tids = spec.ir.uses_tid if spec.ir is not None else 0
    if tids > 1 and len(_dims(dim)) < tids:  # missing trailing extents are 1 (their indices 0)
        dim = pad_to_tid(spec, _dims(dim))
        bounds, size = _bounds(dim)
    if record_cmd:
        from .launch_cmd import Launch

        return Launch._recorded(kernel, spec, device, args, dim, packed, contiguous, block_dim, max_blocks,
                                native=native)
    recording = record_tape and tape._active and tape._active[-1] is not None
    # arrays the kernel reads and then writes: the tape keeps their values from before the launch
    before = tape.inplace_inputs(kernel, spec, args) if recording and spec.writes and any(
        map(_needs_grad, args)) else None
    if size:
        entry, unit = native
        ordered = spec.ordered_atomic is not None and mode_of(kernel) != 0  # (deterministic.ordered, inlined)
        if device.is_cpu:
            if size > CPU_MAX_THREADS:
                check_cpu_size(kernel, size)
            threads = (config.cpu_threads or _ncpu) if size >= _parallel_min(kernel) and not ordered else 1
            if threads > 1 and spec.ordered_atomic is not None and config.cpu_atomic_tuning:
                threads = _tuned(spec, size, threads, False)
            if cpu_graph.active:
                _record_cpu(kernel, entry, unit, packed, bounds, threads if threads > 0 else _all_threads(), contiguous,
                            spec.may_error or config.mode == "debug", args)
            else:
                if threads < 0:  # a timed launch (cpu_tuning.py)
                    _timed(spec, size, entry, packed, bounds, -threads, contiguous, False)
                else:
                    entry(packed, bounds, threads, 1 if contiguous else 0)
                if spec.may_error or config.mode == "debug":
                    err = unit.library.error()
                    if err is not None:
                        raise_kernel_error(kernel, err)
        else:
            if ordered:
                err = _ordered_gpu(kernel, spec, entry, unit, device, args, packed, bounds, size, block_dim, stream,
                                   max_blocks, False)
            else:
                err = unit.launch(entry, packed, bounds, size, block_dim, stream, device, max_blocks)
            if err is not None:
                raise_kernel_error(kernel, err)
    if spec.writes:
        tape.bump_written(spec, kernel, args)
        if config.verify_fp:
            from . import verify_fp

            verify_fp.check(kernel, spec, args, tape.spec_access(spec))
    if recording:
        tape._active[-1].record_launch(kernel, spec, _dims(dim), args[:len(inputs)], args[len(inputs):], device,
                                       before)


def _record_cpu(kernel, entry, unit, packed, bounds, threads, contiguous, check, keep) -> None:
    """Record a packed CPU launch in the graph being captured (cpu_graph.py); ``keep``: what it needs alive."""
    c = 1 if contiguous else 0

    def replay():
        entry(packed, bounds, threads, c)
        if check:
            err = unit.library.error()
            if err is not None:
                raise_kernel_error(kernel, err)

    replay.keep = keep
    cpu_graph.record(replay)


def _tuned(spec, size: int, threads: int, adjoint: bool) -> int:
    """The thread count of a CPU launch of a kernel whose atomics contend (cpu_tuning.py): the measured choice,
    or minus the count of a launch still to be timed."""
    t = cpu_tuning.tuning(spec, size, adjoint)
    return t.threads(threads) if t.serial is not None else -t.threads(threads)


def _all_threads() -> int:
    """Every CPU thread (what a captured launch of a kernel still being measured uses: CPU graphs do not time)."""
    return config.cpu_threads or _ncpu


def _timed(spec, size: int, entry, packed, bounds, threads: int, contiguous: bool, adjoint: bool) -> None:
    t0 = time.perf_counter()
    entry(packed, bounds, threads, 1 if contiguous else 0)
    cpu_tuning.tuning(spec, size, adjoint).record(threads, time.perf_counter() - t0)


def _parallel_min(kernel) -> int:
    """Launches of fewer CPU threads than this run on one OS thread (a parallel region costs more)."""
    return config.cpu_parallel_min if kernel.parallel_min is None else kernel.parallel_min


def _call(kernel, entry, unit, device, packed, contiguous, bounds, size, block_dim, stream, max_blocks=0,
          check: bool = True, keep=None, ordered: bool = False, adjoint: bool = False, spec=None, args=None,
          adj=None):
    """Run a packed launch of ``size`` threads; raise the error it reported (on the CPU: read only when
    ``check``; on the GPU the unit knows which kernels report errors). ``ordered``: in launch-index order
    (deterministic mode: kernels/deterministic.py): on a GPU recorded where it can be (a launch whose ``args``,
    and for a backward launch its explicit adjoints ``adj``, are given), else one thread after another."""
    if device.is_cpu:
        if size > CPU_MAX_THREADS:
            check_cpu_size(kernel, size)
        threads = (config.cpu_threads or _ncpu) if size >= _parallel_min(kernel) and not ordered else 1
        if threads > 1 and spec is not None and (adjoint or spec.ordered_atomic is not None) and \
                config.cpu_atomic_tuning:  # (an adjoint adds its gradients with atomics)
            threads = _tuned(spec, size, threads, adjoint)
        if cpu_graph.active:
            _record_cpu(kernel, entry, unit, packed, bounds, threads if threads > 0 else _all_threads(), contiguous,
                        check, keep)
            return
        if threads < 0:  # a timed launch (cpu_tuning.py)
            _timed(spec, size, entry, packed, bounds, -threads, contiguous, adjoint)
        else:
            entry(packed, bounds, threads, 1 if contiguous else 0)
        err = unit.library.error() if check else None
    else:
        if ordered:
            err = _ordered_gpu(kernel, spec, entry, unit, device, args, packed, bounds, size, block_dim, stream,
                               max_blocks, adjoint, adj)
        else:
            err = unit.launch(entry, packed, bounds, size, block_dim, stream, device=device, max_blocks=max_blocks)
    if err is not None:
        raise_kernel_error(kernel, err)


#: deterministic mode on a GPU: the parallel launch that records a kernel's order-dependent atomics and applies them
#: in launch order (utils/deterministic_gpu.py, which registers it: it sorts with utils' radix sort, a layer above);
#: returns why it cannot (a string: the launch then runs on one GPU thread), else the launch's error or False
recorded_launch = None
#: the same for backward launches: their shared gradient accumulations (utils/deterministic_grad.py)
recorded_backward = None
#: how a recorder's reason begins when it would record the launch outside a graph capture
IN_CAPTURE = "inside a graph capture"
#: while a caller probes a capture (probing_capture): [launches put on one GPU thread only because captured]
_capture_probe = None


@contextlib.contextmanager
def probing_capture():
    """Count, instead of warning about, the launches a graph capture inside puts on one GPU thread that would
    run on the whole GPU outside it (deterministic mode: utils/deterministic_gpu.py and deterministic_grad.py).
    Yields ``[count]``: a caller finding it non-zero (CapturedStep, optim.minimize) discards the capture, whose
    launches have not run, and runs them directly."""
    global _capture_probe
    old, _capture_probe = _capture_probe, [0]
    try:
        yield _capture_probe
    finally:
        _capture_probe = old


def _ordered_gpu(kernel, spec, entry, unit, device, args, packed, bounds, size, block_dim, stream, max_blocks,
                 adjoint: bool, adj=None):
    """A GPU launch in launch-index order (deterministic mode): recorded where it can be (a launch whose ``args``
    are known), else on one GPU thread. Returns the launch's error, or None."""
    why = None
    if args is not None and (recorded_backward if adjoint else recorded_launch) is not None:
        if adjoint:
            why = recorded_backward(kernel, spec, device, args, adj, packed, bounds, size, block_dim, stream,
                                    max_blocks)
        else:
            why = recorded_launch(kernel, spec, device, args, packed, bounds, size, block_dim, stream, max_blocks)
        if why.__class__ is not str:
            return why or None  # (recorded: its error, or False)
    if _capture_probe is not None and why is not None and why.startswith(IN_CAPTURE):
        _capture_probe[0] += 1  # (the prober discards this capture)
        block_dim, max_blocks = 1, 1
    else:
        block_dim, max_blocks = _one_gpu_thread(kernel, adjoint, why)
    return unit.launch(entry, packed, bounds, size, block_dim, stream, device=device, max_blocks=max_blocks)


def _one_gpu_thread(kernel, adjoint: bool, why: str | None = None) -> tuple:
    """(block_dim, max_blocks) of a GPU launch in launch-index order: one block of one thread, whose
    grid-stride loop runs every index in turn. Warns once per kernel (and direction): it is slow. ``why``: why
    its atomics were not recorded (utils/deterministic_gpu.py)."""
    warned = kernel.__dict__.setdefault("_ordered_warned", set())
    if adjoint not in warned:
        warned.add(adjoint)
        what = ("its backward pass accumulates gradients with atomics, and they cannot be recorded: " if adjoint else
                "the effect of its atomics depends on the order of threads, and they cannot be recorded: ") \
            + (why or "simkit.utils is not loaded")
        warnings.warn(f"deterministic mode: kernel '{kernel.key}' runs on one GPU thread ({what}); simkit "
                      f"orders such launches by running their threads in turn (kernels/deterministic.py)",
                      DeterminismWarning, stacklevel=3)
    return 1, 1


def _run(kernel, spec, device, packed, contiguous, bounds, size, block_dim, stream, adjoint, max_blocks=0,
         keep=None, ordered: bool = False, args=None, adj=None):
    kind = native_key(device, adjoint)
    native = spec.native.get(kind)
    if native is None:
        kernel.module.load_spec(spec, device, adjoint=adjoint)
        native = spec.native[kind]
    if size:
        _call(kernel, native[0], native[1], device, packed, contiguous, bounds, size, block_dim, stream, max_blocks,
              keep=keep, ordered=ordered, adjoint=adjoint, spec=spec, args=args, adj=adj)


def _needs_grad(v) -> bool:
    if isinstance(v, array):
        return v.requires_grad
    if T.is_struct(type(v)):
        return any(a.requires_grad for _, a in type(v)._simkit_struct.arrays(v))
    return False


def launch_backward(kernel, spec, dims, args, device, block_dim: int = 256, stream=None):
    """Run the adjoint of a recorded launch: accumulates into the .grad of the arrays it read."""
    if not any(_needs_grad(a) for a in args):
        return  # no array carries a gradient: nothing to propagate
    if kernel.enable_backward is False:
        raise tape.TapeError(f"kernel '{kernel.key}' was declared with enable_backward=False, but a gradient "
                             f"must flow through it; remove the flag or launch it with record_tape=False")
    _check_replayable(kernel, spec)
    packed, contiguous = _pack(kernel, spec, args, device)
    ptrs = [a.ptr for a in args if isinstance(a, array)]
    no_alias = len(set(ptrs)) == len(ptrs)  # an array passed twice could be read at another thread's index
    size = 1
    for d in dims:
        size *= d
    ordered = ordered_launch(kernel, spec, adjoint=True)  # gradients of reads accumulate in index order
    serial = device.is_cpu and (ordered or (config.cpu_threads or _ncpu) == 1 or size < _parallel_min(kernel))
    bounds, size = bounds_bytes(tuple(dims), (1 if no_alias else 0) | (2 if serial else 0))
    _run(kernel, spec, device, packed, contiguous, bounds, size, block_dim, stream, adjoint=True, keep=args,
         ordered=ordered, args=args)


def _check_replayable(kernel, spec) -> None:
    """Refuse the backward pass of a kernel whose adjoint needs the value an atomic returned (kernels/activity.py,
    ``unreplayed_atomic``): it would put gradients at the wrong elements."""
    line = spec.unreplayed_atomic
    if line is not None:
        src = kernel.source()
        raise tape.TapeError(
            f"{src.filename}:{line}: the gradient of kernel '{kernel.key}' depends here on the value an atomic "
            f"returned (e.g. a slot taken from a counter); the backward pass does not run atomics again, so that "
            f"value is unknown there and gradients would go to the wrong elements. Write the slots in one "
            f"launch and use them in another (from an array), or launch the kernel with record_tape=False if no "
            f"gradient must flow through it\n    {src.text_of_line(line).strip()}")


def raise_kernel_error(kernel, err):
    code, line, a, b, c = err
    msg = ERRORS.get(code, "error code {code}").format(a=a, b=b, c=c, code=code)
    src = kernel.source()
    where = f"{src.filename}:{line}" if line else src.filename
    text = src.text_of_line(line).strip() if line else ""
    full = f"{where}: {msg} in kernel '{kernel.key}'" + (f"\n    {text}" if text else "")
    if code == 1 or code == 3:
        raise IndexError(full)
    raise RuntimeError(full)
