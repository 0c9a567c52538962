"""Indexed arrays' Python-side reads and writes (runtime/indexedarray.py): gather into a contiguous array,
scatter from one, fill. numpy's fancy indexing on the CPU; ``map`` kernels on a GPU, and where a tape records
or a CPU graph captures."""
from __future__ import annotations

import numpy as np

from ..kernels.decorators import func
from ..kernels.types import Any
from .array import array
from .indexedarray import indexedarray
from .map import map


@func
def _same(x: Any):
    return x


def _on_host(a: indexedarray):
    """numpy's fancy indexing of the data for a CPU array, unless a tape records or a CPU graph captures
    (kernels are recorded; numpy writes are not): (data view, index tuple), else None."""
    from ..kernels.backends import cpu_graph
    from .tape import active_tape

    if not a.device.is_cpu or cpu_graph.active or active_tape() is not None:
        return None
    return a.data.numpy(), np.ix_(*[ix.numpy() if ix is not None else np.arange(n)
                                    for ix, n in zip(a.indices, a.data.shape)])


def gather(dst: array, src: indexedarray):
    host = _on_host(src)
    if host is not None and dst.device.is_cpu:
        dst.numpy()[...] = host[0][host[1]]
        dst._overwritten()
        return
    if src.size:
        map(_same, src, out=dst)


def scatter(dst: indexedarray, src: array):
    host = _on_host(dst)
    if host is not None and src.device.is_cpu:
        host[0][host[1]] = src.numpy()
        dst.data._overwritten()
        return
    if dst.size:
        map(_same, src, out=dst)


def fill(dst: indexedarray, value):
    from ..kernels import types as T

    t = dst.dtype
    if T.is_struct(t) and not isinstance(value, t):
        if value != 0:
            raise TypeError(f"fill_: expected a {t.__name__} (or 0), got {type(value).__name__}")
        value = t()
    elif T.is_value(t) or T.is_scalar(t):
        value = t(value)
    host = _on_host(dst)
    if host is not None:
        host[0][host[1]] = np.asarray(value.numpy_value() if T.is_struct(t) else value)
        dst.data._overwritten()
        return
    from .array_create import full

    if dst.size:
        scatter(dst, full(dst.shape, value, dtype=t, device=dst.device))
