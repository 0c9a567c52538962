"""Explicit adjoint arrays laid out unlike their primal array (``launch(..., adjoint=True, adj_inputs=...,
adj_outputs=...)``).

A kernel reaches an array's adjoint through the array's own strides (one descriptor per parameter), while
Warp lets an explicit adjoint have a layout of its own, and PyTorch hands a custom operator's backward
gradients that are strided or broadcast views (``y.sum().backward()`` passes ``ones`` expanded: stride 0).
Such an adjoint is staged through a temporary with the primal's layout: copied in before the launch and
copied back after it. Where the adjoint is a view whose elements share memory (a broadcast), what the launch
added to each element is added back atomically instead, so a shared element receives the sum, as Warp's
atomic accumulation into it gives. The temporaries are the launch's own buffers: like every explicit
adjoint buffer, the caller's arrays are accumulated into and read, never zeroed (``array.retain_grad``
concerns an array's own ``.grad``).
"""
from __future__ import annotations

import contextlib

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from .array import _extent, array, copy, empty


@kernel
def _accumulate_1d(dst: array(dtype=T.Any), new: array(dtype=T.Any), old: array(dtype=T.Any)):
    i = sk.tid()
    sk.atomic_add(dst, i, new[i] - old[i])


@kernel
def _accumulate_2d(dst: array(dtype=T.Any, ndim=2), new: array(dtype=T.Any, ndim=2),
                   old: array(dtype=T.Any, ndim=2)):
    i, j = sk.tid()
    sk.atomic_add(dst, i, j, new[i, j] - old[i, j])


@kernel
def _accumulate_3d(dst: array(dtype=T.Any, ndim=3), new: array(dtype=T.Any, ndim=3),
                   old: array(dtype=T.Any, ndim=3)):
    i, j, k = sk.tid()
    sk.atomic_add(dst, i, j, k, new[i, j, k] - old[i, j, k])


@kernel
def _accumulate_4d(dst: array(dtype=T.Any, ndim=4), new: array(dtype=T.Any, ndim=4),
                   old: array(dtype=T.Any, ndim=4)):
    i, j, k, m = sk.tid()
    sk.atomic_add(dst, i, j, k, m, new[i, j, k, m] - old[i, j, k, m])


_ACCUMULATE = {1: _accumulate_1d, 2: _accumulate_2d, 3: _accumulate_3d, 4: _accumulate_4d}


def overlaps(a: array) -> bool:
    """Whether elements of ``a`` may share memory (a zero stride, or strides too small for the dims inside)."""
    span = a.itemsize
    for s, n in sorted((abs(s), n) for n, s in zip(a.shape, a.strides) if n > 1):
        if s < span:
            return True
        span += s * (n - 1)
    return False


def _with_layout(a: array):
    """An uninitialized array with ``a``'s shape, dtype, device and strides (None where its elements overlap)."""
    if a.is_contiguous:
        return empty(a.shape, dtype=a.dtype, device=a.device)
    if overlaps(a) or min(a.strides) < 0:
        return None
    scalar = T.scalar_of(a.dtype)
    size = scalar._np.itemsize
    buf = empty((_extent(a.shape, a.strides, a.itemsize) + size - 1) // size, dtype=scalar, device=a.device)
    return array(ptr=buf.ptr, dtype=a.dtype, shape=a.shape, strides=a.strides, device=a.device, _owner=buf)


def _on(stream):
    """The launch's ``stream`` made current (copies are ordered with the launch), if it names one."""
    from ..kernels.backends.cuda.stream import ScopedStream, Stream

    return ScopedStream(stream, sync_enter=False) if isinstance(stream, Stream) else contextlib.nullcontext()


def stage(args: list, adj: list, stream=None) -> list:
    """Replace in ``adj`` each simkit adjoint array whose strides differ from its primal's in ``args`` by a
    temporary with the primal's layout holding its values; returns what :func:`unstage` needs. Adjoints that
    do not fit their primal otherwise (shape, dtype, device) are left for the launch's checks to refuse.
    ``stream``: the launch's."""
    with _on(stream):
        return _stage(args, adj)


def _stage(args: list, adj: list) -> list:
    staged = []
    for k, (v, g) in enumerate(zip(args, adj)):
        if not (isinstance(v, array) and isinstance(g, array)) or v.is_type or g.is_type:
            continue
        if g.strides == v.strides or g.shape != v.shape or g.dtype is not v.dtype or g.device != v.device:
            continue
        tmp = _with_layout(v)
        if tmp is None:  # (the primal's elements overlap: no layout holds one adjoint per element)
            continue
        copy(tmp, g)
        old = None
        if overlaps(g):
            old = empty(g.shape, dtype=g.dtype, device=g.device)
            copy(old, tmp)
        adj[k] = tmp
        staged.append((g, tmp, old))
    return staged


def unstage(staged: list, stream=None) -> None:
    """Return what the launch accumulated into the staged temporaries to the caller's adjoint arrays."""
    from .launch import launch

    with _on(stream):
        for g, tmp, old in staged:
            if not T.is_float(T.scalar_of(g.dtype)):
                continue  # (integer adjoints are never written)
            if old is None:
                copy(g, tmp)
            elif g.size:
                launch(_ACCUMULATE[g.ndim], dim=g.shape, inputs=[g, tmp, old], device=g.device, record_tape=False)
