"""Native descriptors (``bvh_t``, ``mesh_t``, ``hash_grid_t``) in device memory: what a structure's ``id``
points at, rewritten on every build or refit.

On a GPU a descriptor is written with a copy from host memory, except while a CUDA graph is being
captured: then the write is recorded into the graph as 32-bit memsets (a copy from host memory cannot
be captured), so every launch of the graph writes the descriptor its captured build produced.
"""
from __future__ import annotations

import numpy as np

from ..kernels import types as T
from ..runtime import array, zeros


def capturing(device) -> bool:
    """A graph is being captured on ``device`` (nothing may be read back to the host)."""
    if device.is_cpu:
        from ..kernels.backends import cpu_graph

        return bool(cpu_graph.active)
    from ..kernels.backends.cuda import driver

    return bool(driver.state(device).capturing)


def write(buf: array, data: bytes) -> None:
    """Write ``data`` to the start of ``buf`` (an array of uint64), the rest zero."""
    data = data.ljust(buf.shape[0] * 8, b"\0")
    if capturing(buf.device):
        from ..kernels.backends.cuda import driver

        driver.write_words(buf, data)
    else:
        buf.assign(np.frombuffer(data, dtype=np.uint64))


class Descriptor:
    """A descriptor of ``nbytes`` in device memory; ``ptr`` is the object's id."""

    def __init__(self, nbytes: int, device):
        self.buf = zeros((nbytes + 7) // 8, dtype=T.uint64, device=device)

    @property
    def ptr(self) -> int:
        return self.buf.ptr

    def write(self, data: bytes):
        write(self.buf, data)
