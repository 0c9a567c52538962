"""The adjoint of a recorded ``copy(dest, src)``: ``src.grad += dest.grad``, and the copy consumes ``dest.grad``
(what ``dest`` held before had no influence on what came after: its gradient is zero), unless ``dest`` retains
its gradient.

On the CPU it is numpy's work. On a GPU it is two kernels on the device's current stream (an elementwise add
and a fill), with no allocation and no synchronization where the two gradients do not share memory, so a
backward pass that holds copies can be captured in a CUDA graph and replayed (Warp's
``test_tape_copy_adjoint_graph_capture``). Where they overlap (a shifted copy within one array) the dest
gradient is read into a temporary first. A copy between the CPU and a GPU moves the gradient across; that
needs a synchronization, which a graph capture cannot hold (RuntimeError, as in Warp).
"""
from __future__ import annotations

from ..kernels.decorators import func
from ..kernels.types import Any


@func
def _add(a: Any, b: Any):
    return a + b


def copy_adjoint(dest, src) -> None:
    """``src.grad += dest.grad``; ``dest.grad`` zeroed unless ``dest.retain_grad`` (see the module docstring)."""
    dg = dest.grad
    sg = src.grad if src.requires_grad else None
    if dest.device.is_cpu and (sg is None or sg.device.is_cpu) and not _cpu_capture():
        g = dg.numpy().reshape(-1).copy()  # (read, zero, then add: right also when the two overlap)
        if not dest.retain_grad:
            dg.numpy()[...] = 0
        if sg is not None:
            sv = sg.numpy()
            sv[...] = (sv.reshape(-1) + g).reshape(sv.shape)
        return
    g = None
    if sg is not None:  # (read, zero, then add: right also when the two overlap)
        if sg.device != dg.device:
            g = _moved(dg, sg)
        else:
            g = dg.clone() if _overlap(dg, sg) else dg
    if g is not dg and not dest.retain_grad:
        dg.zero_()
    if sg is not None:
        _accumulate(sg, g)
    if g is dg and not dest.retain_grad:
        dg.zero_()


def _cpu_capture() -> bool:
    from ..kernels.backends import cpu_graph

    return bool(cpu_graph.active)


def _overlap(a, b) -> bool:
    """Do the memory ranges of two arrays of one device intersect?"""
    def span(x):
        lo = hi = x.ptr
        for n, s in zip(x.shape, x.strides):
            if n > 1:
                lo, hi = (lo + (n - 1) * s, hi) if s < 0 else (lo, hi + (n - 1) * s)
        return lo, hi + x.itemsize
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def _moved(dg, sg):
    """``dg``'s values on ``sg``'s device (a copy between the CPU and a GPU, or between two GPUs)."""
    for d in (dg.device, sg.device):
        if d.is_cuda and d.is_capturing:
            raise RuntimeError("Cannot run CPU/CUDA wp.copy() adjoints during CUDA graph capture: the gradient "
                               "moves between devices (a synchronization); run this backward pass outside "
                               "the capture")
    return dg.to(sg.device)


def _accumulate(sg, g) -> None:
    """``sg += g`` elementwise (the same element count; shapes may differ)."""
    from .map import map

    if g.shape != sg.shape:
        g = g.contiguous().reshape(sg.shape)
    map(_add, sg, g, out=sg)


__all__ = ["copy_adjoint"]
