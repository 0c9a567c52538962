"""Run-length encoding: ``runlength_encode`` (Warp's ``wp.utils.runlength_encode``).

Run starts are flagged, the flags scanned into run indices, and each run's first element writes its
value and start; a last pass turns starts into lengths.
"""
from __future__ import annotations

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty
from ._common import no_host_result, run, type_repr, types_equal
from .scan import scan_1d


@kernel
def _rle_heads(values: array(dtype=T.Any), heads: array(dtype=int)):
    i = sk.tid()
    h = int(1)
    if i > 0:
        if values[i] == values[i - 1]:
            h = 0
    heads[i] = h


@kernel
def _rle_starts(values: array(dtype=T.Any), runs: array(dtype=int), run_values: array(dtype=T.Any),
                starts: array(dtype=int), run_count: array(dtype=int), n: int):
    # runs: inclusive scan of the head flags (run i's index is runs[i] - 1)
    i = sk.tid()
    r = runs[i]
    if i == 0 or r != runs[i - 1]:
        run_values[r - 1] = values[i]
        starts[r - 1] = i
    if i == n - 1:
        run_count[0] = r


@kernel
def _rle_lengths(starts: array(dtype=int), run_count: array(dtype=int), run_lengths: array(dtype=int), n: int):
    r = sk.tid()
    count = run_count[0]
    if r < count:
        end = n
        if r + 1 < count:
            end = starts[r + 1]
        run_lengths[r] = end - starts[r]


def runlength_encode(values: array, run_values: array, run_lengths: array, run_count: array | None = None,
                     value_count: int | None = None):
    """Run-length encode the first ``value_count`` (default all) ``int32`` values (Warp's
    ``wp.utils.runlength_encode``): ``[1, 1, 1, 2, 2, 3]`` gives values ``[1, 2, 3]``, lengths ``[3, 2, 1]``.

    ``run_values`` (the values' dtype) and ``run_lengths`` (``int32``) need ``value_count`` elements. The
    number of runs is returned, or written to ``run_count[0]`` (an ``int32`` array, then returned).

    >>> import simkit as sk
    >>> rv, rl = sk.empty(6, dtype=int), sk.empty(6, dtype=int)
    >>> sk.utils.runlength_encode(sk.array([1, 1, 1, 2, 2, 3], dtype=int), rv, rl)
    3
    """
    if run_values.device != values.device or run_lengths.device != values.device:
        raise RuntimeError("run_values, run_lengths and values storage devices do not match")
    if value_count is None:
        value_count = values.size
    elif value_count < 0:
        raise RuntimeError(f"value_count must be non-negative, got {value_count}")
    if run_values.size < value_count or run_lengths.size < value_count:
        raise RuntimeError(f"Output array storage sizes must be at least equal to value_count ({value_count})")
    if not types_equal(values.dtype, run_values.dtype):
        raise RuntimeError(f"values and run_values data types do not match ({type_repr(values.dtype)} vs "
                           f"{type_repr(run_values.dtype)})")
    if run_lengths.dtype != T.int32:
        raise RuntimeError("run_lengths array must be of type int32")
    host = run_count is None
    if host:
        if value_count == 0:
            return 0
        no_host_result("runlength_encode", values.device, "a run_count array")
        run_count = empty(1, dtype=int, device=values.device)
    else:
        if run_count.device != values.device:
            raise RuntimeError("run_count storage device does not match other arrays")
        if run_count.dtype != T.int32:
            raise RuntimeError("run_count array must be of type int32")
        if value_count == 0:
            run_count.zero_()
            return run_count
    if values.dtype != T.int32:
        raise RuntimeError(f"Unsupported data type: {type_repr(values.dtype)}")
    dev, n = values.device, value_count
    vals = (values if values.ndim == 1 else values.flatten())[:n]
    rv = run_values if run_values.ndim == 1 else run_values.flatten()
    rl = run_lengths if run_lengths.ndim == 1 else run_lengths.flatten()
    runs = empty(n, dtype=int, device=dev)
    starts = empty(n, dtype=int, device=dev)
    run(_rle_heads, n, [vals, runs], dev)
    scan_1d(runs, runs, True)
    run(_rle_starts, n, [vals, runs, rv, starts, run_count, n], dev)
    run(_rle_lengths, n, [starts, run_count, rl, n], dev)
    return int(run_count.numpy()[0]) if host else run_count
