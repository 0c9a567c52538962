"""``Launch``: a launch checked and packed once, replayed quickly (``sk.launch(..., record_cmd=True)``).

Example::

    cmd = sk.launch(integrate, n, inputs=[x, v, dt], record_cmd=True)   # checked, compiled, not run
    for _ in range(steps):
        cmd.launch()                      # the packed arguments go straight to the kernel entry
    cmd.set_param_by_name("dt", 0.5 * dt)  # re-checked and re-packed
    cmd.launch()

A ``Launch`` can also be built empty and filled in (as in Warp)::

    cmd = sk.Launch(integrate, "cpu")     # arrays None, values zero, structs default-constructed
    cmd.set_param_by_name("x", x)
    cmd.set_dim(n)

``adjoint=True`` (``launch(..., adjoint=True, record_cmd=True)`` or ``Launch(kernel, device,
adjoint=True)``) records the kernel's adjoint: ``set_param_*(..., adjoint=True)`` sets the adjoint
array of an array parameter (None: the array's own ``.grad``). Adjoints of value parameters are
accepted and ignored: simkit's adjoint kernels do not output them (in Warp they are not readable
either).

As in Warp, a replayed launch is not recorded on a Tape (its writes still count as overwrites
there, so a Tape that read an array it overwrites refuses to differentiate through it).
"""
from __future__ import annotations

import numpy as np

from .. import config
from ..kernels import types as T
from ..kernels.decorators import Kernel
from ..kernels.deterministic import ordered as ordered_launch
from ..kernels.module import native_key
from . import tape
from .device import get_device
from .launch import _INT32_MAX, _bounds, _call, _check_and_pack, _dims, check_tid_extent, pad_to_tid


def _native_for(kernel, spec, device, adjoint: bool):
    """(entry, unit) of the kernel's forward or adjoint entry on ``device``, compiled on first use."""
    key = native_key(device, adjoint) if adjoint or config.mode == "debug" else device.kind
    native = spec.native.get(key)
    if native is None:
        kernel.module.load_spec(spec, device, adjoint=adjoint)
        native = spec.native[key]
    return native


def _default(t):
    """The value of an argument not set yet: None for arrays, zeros for values, a default struct."""
    if isinstance(t, T.ArrayType):
        return None
    if T.is_struct(t):
        return t()
    if T.is_value(t):  # zeros (a transform's constructor would give the identity)
        return np.zeros(t._shape, dtype=t._dtype._np).view(t)
    return t(0)


class Launch:
    """A recorded launch: call :meth:`launch` to run it.

    ``sk.launch(..., record_cmd=True)`` returns one with its arguments set; ``Launch(kernel, device)``
    builds one with default arguments (``fwd_args`` / ``adj_args``: the arguments to start from,
    ``bounds``: the launch dimensions, 0 threads if not given). Warp's ``hooks``, ``params`` and
    ``params_addr`` (its native launch data) are not taken: simkit packs the arguments itself."""

    def __init__(self, kernel, device=None, hooks=None, params=None, params_addr=None, bounds=None,
                 max_blocks: int = 0, block_dim: int | None = None, adjoint: bool = False, fwd_args=None,
                 adj_args=None):
        if kernel.__class__ is not Kernel:
            raise TypeError(f"Launch() needs a @kernel, got {type(kernel).__name__}")
        if hooks is not None or params is not None or params_addr is not None:
            raise TypeError("Launch(): hooks, params and params_addr are Warp's native launch data, which simkit "
                            "does not use; pass fwd_args (and adj_args), or set arguments with set_param_by_name()")
        if kernel.generic:
            raise TypeError(f"Launch(): kernel '{kernel.key}' is generic (its parameter types come from its "
                            f"arguments); record a launch of it with launch(..., record_cmd=True) instead")
        spec = kernel.specs[None]
        n = len(kernel.param_names)
        args = [_default(t) for t in spec.types] if fwd_args is None else list(fwd_args)
        adj = None
        if adjoint:
            adj = [None] * n if adj_args is None else list(adj_args)
        elif adj_args is not None:
            raise ValueError("Launch(): adj_args given for a forward launch; pass adjoint=True to launch the adjoint")
        for what, values in (("fwd_args", args), ("adj_args", adj)):
            if values is not None and len(values) != n:
                raise TypeError(f"Launch(): kernel '{kernel.key}' takes {n} arguments "
                                f"({', '.join(kernel.param_names)}), {what} has {len(values)}")
        device = get_device(device)
        packed, contiguous = _check_and_pack(kernel, spec, args, device, adj)
        if bounds is None:
            tids = spec.ir.uses_tid if spec.ir is not None else 0
            bounds = (0,) * max(1, tids)
        self._init(kernel, spec, device, args, bounds, packed, contiguous, 256 if block_dim is None else block_dim,
                   max_blocks, adj, None)

    @classmethod
    def _recorded(cls, kernel, spec, device, args: list, dim, packed: bytes, contiguous: bool, block_dim: int,
                  max_blocks: int, adj: list | None = None, native=None) -> Launch:
        """What ``launch(..., record_cmd=True)`` returns (its arguments already checked and packed)."""
        self = cls.__new__(cls)
        self._init(kernel, spec, device, args, dim, packed, contiguous, block_dim, max_blocks, adj, native)
        return self

    def _init(self, kernel, spec, device, args, dim, packed, contiguous, block_dim, max_blocks, adj, native):
        self.kernel = kernel
        self._spec = spec
        self.adjoint = adj is not None
        self._native = native if native is not None else _native_for(kernel, spec, device, self.adjoint)
        self.device = device
        self._args = args
        self._adj = adj
        self.block_dim = block_dim
        self.max_blocks = max_blocks
        self._packed, self._contiguous = packed, contiguous
        self.set_dim(dim)

    @property
    def bounds(self) -> tuple:
        """The launch dimensions."""
        return self._dims

    @property
    def fwd_args(self) -> list:
        """The kernel arguments (a copy)."""
        return list(self._args)

    @property
    def adj_args(self) -> list | None:
        """The adjoint arguments of an adjoint launch (None: an array's own ``.grad``), else None."""
        return None if self._adj is None else list(self._adj)

    @property
    def params(self) -> list:
        """As Warp's: the launch dimensions, then the arguments, then (adjoint launches) the adjoints."""
        return [self._dims, *self._args, *(self._adj or ())]

    def set_dim(self, dim) -> None:
        """Launch over ``dim`` (an int or a tuple of up to 4 ints) from now on."""
        dims = pad_to_tid(self._spec, _dims(dim))
        bounds, size = _bounds(dims if len(dims) > 1 else dims[0])
        if size > _INT32_MAX:
            check_tid_extent(self.kernel, self._spec, dims)
        self._dims, self._bounds, self._size = dims, bounds, size

    def _repack(self, args: list, adj: list | None) -> None:
        self._packed, self._contiguous = _check_and_pack(self.kernel, self._spec, args, self.device, adj)
        self._args, self._adj = args, adj

    def set_params(self, values) -> None:
        """Replace every argument (checked against the kernel's parameters, as ``launch`` does)."""
        values = list(values)
        names = self.kernel.param_names
        if len(values) != len(names):
            raise TypeError(f"kernel '{self.kernel.key}' takes {len(names)} arguments ({', '.join(names)}), "
                            f"got {len(values)}")
        self._repack(values, self._adj)

    def set_param_at_index(self, index: int, value, adjoint: bool = False) -> None:
        """Replace argument number ``index`` (``adjoint=True``: its adjoint, in an adjoint launch)."""
        names = self.kernel.param_names
        if not -len(names) <= index < len(names):
            raise IndexError(f"kernel '{self.kernel.key}' has {len(names)} parameters, no index {index}")
        if adjoint:
            if self._adj is None:
                raise ValueError(f"this Launch runs kernel '{self.kernel.key}' forward: it has no adjoint arguments "
                                 f"(record an adjoint launch with launch(..., adjoint=True, record_cmd=True) or "
                                 f"Launch(kernel, device, adjoint=True))")
            adj = list(self._adj)
            adj[index] = value
            self._repack(list(self._args), adj)
        else:
            values = list(self._args)
            values[index] = value
            self._repack(values, self._adj)

    def set_param_by_name(self, name: str, value, adjoint: bool = False) -> None:
        """Replace the argument of parameter ``name`` (``adjoint=True``: its adjoint)."""
        names = self.kernel.param_names
        if name not in names:
            raise ValueError(f"kernel '{self.kernel.key}' has no parameter '{name}' (it has {', '.join(names)})")
        self.set_param_at_index(names.index(name), value, adjoint)

    # Warp's variants without type conversion: simkit checks every value the same way
    set_param_at_index_from_ctype = set_param_at_index
    set_param_by_name_from_ctype = set_param_by_name
    set_params_from_ctypes = set_params

    def launch(self, stream=None) -> None:
        """Run the kernel (or its adjoint) with the recorded arguments (on ``stream``, or the device's
        current one)."""
        if self._size:
            entry, unit = self._native
            check = self.adjoint or self._spec.may_error or config.mode == "debug"
            ordered = ordered_launch(self.kernel, self._spec, self.adjoint)
            _call(self.kernel, entry, unit, self.device, self._packed, self._contiguous, self._bounds, self._size,
                  self.block_dim, stream, self.max_blocks, check=check,
                  keep=(self._args, self._adj), ordered=ordered, adjoint=self.adjoint, spec=self._spec,
                  args=self._args, adj=self._adj)
        if self._spec.writes and not self.adjoint:
            tape.bump_written(self._spec, self.kernel, self._args)

    def __repr__(self):
        kind = ", adjoint" if self.adjoint else ""
        return f"Launch({self.kernel.key}, dim={self._dims}, device={self.device.alias}{kind})"
