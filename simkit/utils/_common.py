"""Shared helpers of simkit.utils: block sizing, dtype names, launches outside the Tape."""
from __future__ import annotations

import math
import os

from .. import config
from .. import types as _pub
from ..runtime import is_capturing, launch

NCPU = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def type_repr(dtype) -> str:
    """The dtype's name as Warp prints it in errors (``int32``, ``vec3h``)."""
    return _pub.type_repr(dtype)


def scalar_type(dtype):
    """The scalar type of a scalar, vector or matrix dtype."""
    return _pub.type_scalar_type(dtype)


def blocks(n: int, device, cpu_chunk: int = 16384, gpu_chunk: int = 256) -> tuple[int, int]:
    """Split ``n`` items into contiguous chunks: (number of blocks, chunk size). On the CPU a few blocks
    per thread (no more: each block is one serial loop); on a GPU many short blocks."""
    if n <= 0:
        return 1, 1
    if device.is_cpu:
        nb = min(math.ceil(n / cpu_chunk), 4 * (config.cpu_threads or NCPU))
    else:
        nb = math.ceil(n / gpu_chunk)
    nb = max(1, nb)
    chunk = math.ceil(n / nb)
    return math.ceil(n / chunk), chunk


def capturing(device) -> bool:
    """Whether a graph is being captured on ``device`` (nothing may be read back then)."""
    return is_capturing(device)


def no_host_result(operation: str, device, needs: str) -> None:
    """Raise if ``operation`` would return a host value while a graph is being captured."""
    if capturing(device):
        raise NotImplementedError(f"{operation}() cannot return its result to the host while a graph is being "
                                  f"captured; pass {needs}")


def run(kernel, dim, inputs, device, *, tape: bool = False) -> None:
    """Launch an internal kernel (kept off the Tape unless ``tape``)."""
    launch(kernel, dim=dim, inputs=inputs, device=device, record_tape=tape)


types_equal = _pub.types_equal
type_size = _pub.type_size
type_size_in_bytes = _pub.type_size_in_bytes
