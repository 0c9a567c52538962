"""``Launch``: a launch checked and packed once, replayed quickly (``sk.launch(..., record_cmd=True)``).

Example::

    cmd = sk.launch(integrate, n, inputs=[x, v, dt], record_cmd=True)   # checked, compiled, not run
    for _ in range(steps):
        cmd.launch()                      # the packed arguments go straight to the kernel entry
    cmd.set_param_by_name("dt", 0.5 * dt)  # re-checked and re-packed
    cmd.launch()

As in Warp, a replayed launch is not recorded on a Tape (its writes still count as overwrites
there, so a Tape that read an array it overwrites refuses to differentiate through it).
"""
from __future__ import annotations

from .. import config
from . import tape
from .launch import _bounds, _call, _check_and_pack, _dims


class Launch:
    """What ``sk.launch(..., record_cmd=True)`` returns: call :meth:`launch` to run it."""

    def __init__(self, kernel, spec, native, device, args: list, dim, packed: bytes, contiguous: bool,
                 block_dim: int, max_blocks: int):
        self.kernel = kernel
        self._spec = spec
        self._native = native  # (entry, unit) of the device
        self.device = device
        self._args = args
        self.block_dim = block_dim
        self.max_blocks = max_blocks
        self.adjoint = False
        self._packed, self._contiguous = packed, contiguous
        self.set_dim(dim)

    @property
    def bounds(self) -> tuple:
        """The launch dimensions."""
        return self._dims

    def set_dim(self, dim) -> None:
        """Launch over ``dim`` (an int or a tuple of up to 4 ints) from now on."""
        dims = _dims(dim)
        tids = self._spec.ir.uses_tid if self._spec.ir is not None else 0
        if tids > 1 and len(dims) < tids:
            raise ValueError(f"kernel '{self.kernel.key}' unpacks tid() into {tids} indices but is launched "
                             f"over {len(dims)} dimension(s): dim={dim!r}")
        self._dims = dims
        self._bounds, self._size = _bounds(dims if len(dims) > 1 else dims[0])

    def set_params(self, values) -> None:
        """Replace every argument (checked against the kernel's parameters, as ``launch`` does)."""
        values = list(values)
        names = self.kernel.param_names
        if len(values) != len(names):
            raise TypeError(f"kernel '{self.kernel.key}' takes {len(names)} arguments ({', '.join(names)}), "
                            f"got {len(values)}")
        self._packed, self._contiguous = _check_and_pack(self.kernel, self._spec, values, self.device)
        self._args = values

    def set_param_at_index(self, index: int, value, adjoint: bool = False) -> None:
        """Replace argument number ``index``."""
        if adjoint:
            raise ValueError("a recorded Launch runs the forward kernel: it has no adjoint arguments")
        names = self.kernel.param_names
        if not -len(names) <= index < len(names):
            raise IndexError(f"kernel '{self.kernel.key}' has {len(names)} parameters, no index {index}")
        values = list(self._args)
        values[index] = value
        self.set_params(values)

    def set_param_by_name(self, name: str, value, adjoint: bool = False) -> None:
        """Replace the argument of parameter ``name``."""
        names = self.kernel.param_names
        if name not in names:
            raise ValueError(f"kernel '{self.kernel.key}' has no parameter '{name}' (it has {', '.join(names)})")
        self.set_param_at_index(names.index(name), value, adjoint)

    # Warp's variants without type conversion: simkit checks every value the same way
    set_param_at_index_from_ctype = set_param_at_index
    set_param_by_name_from_ctype = set_param_by_name
    set_params_from_ctypes = set_params

    def launch(self, stream=None) -> None:
        """Run the kernel with the recorded arguments (on ``stream``, or the device's current one)."""
        if self._size:
            entry, unit = self._native
            _call(self.kernel, entry, unit, self.device, self._packed, self._contiguous, self._bounds, self._size,
                  self.block_dim, stream, self.max_blocks, check=self._spec.may_error or config.mode == "debug",
                  keep=self._args)
        if self._spec.writes:
            tape.bump_written(self._spec, self.kernel, self._args)

    def __repr__(self):
        return f"Launch({self.kernel.key}, dim={self._dims}, device={self.device.alias})"
