"""Kernel builtins of the hash grid, registered with the compiler's public registry at import.

Usage in a kernel (the Warp idiom)::

    query = wp.hash_grid_query(grid_id, p, radius)
    index = int(0)
    while wp.hash_grid_query_next(query, index):
        if wp.length(points[index] - p) <= radius:
            ...

The device-side code lives in ``native/hash_grid.h``; the host side (building the grid)
in ``hash_grid.py``. None of these builtins is differentiable: they return indices.
"""
from __future__ import annotations

import os

from ..kernels import registry
from ..kernels.api import BuiltinFunction
from ..kernels.types import bool as bool_t
from ..kernels.types import float16, float32, float64, int32, normalize_dtype, uint64, vec3, vec3d, vec3h

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native", "hash_grid.h")


class HashGridQuery:
    """Traversal state of a hash grid query (``sk::hash_grid_query_t``): a kernel-local value
    returned by ``hash_grid_query`` and advanced by ``hash_grid_query_next``."""

    _simkit_opaque = "sk::hash_grid_query_t"

    def __class_getitem__(cls, dtype):
        """``HashGridQuery[float16 | float32 | float64]`` (Warp's spelling, for annotations): one query type
        serves grids of every precision, so this is ``HashGridQuery`` itself."""
        if normalize_dtype(dtype) not in (float16, float32, float64):
            raise TypeError(f"HashGridQuery[dtype]: dtype must be float16, float32 or float64, got {dtype!r}")
        return cls


registry.add_header(HEADER)

for _v, _s in ((vec3, float32), (vec3h, float16), (vec3d, float64)):
    registry.add_builtin(
        "hash_grid_query", {"id": uint64, "point": _v, "max_dist": _s}, HashGridQuery,
        differentiable=False, group="geometry",
        doc="Start a query of the hash grid ``id`` around ``point``; ``hash_grid_query_next`` then returns every "
            "point within ``max_dist`` of it (by the positions the grid was built with) and possibly farther ones: "
            "filter by distance. The grid's precision (float16, float32 or float64) matches ``point``'s.")
    registry.add_builtin(
        "hash_grid_query", {"id": uint64, "point": _v, "max_dist": _s, "group": int32}, HashGridQuery,
        differentiable=False, group="geometry",
        doc="A query like ``hash_grid_query(id, point, max_dist)`` restricted to the points of ``group`` (any int32) "
            "when the grid was built with ``groups``; on a grid built without groups it visits every point.")
    registry.add_builtin(
        "hash_grid_cell", {"id": uint64, "point": _v}, int32, differentiable=False, group="geometry", hidden=True,
        doc="The table cell of ``point`` (a NaN coordinate counts as 0); used to build the grid.")

registry.add_builtin(
    "hash_grid_query_next", {"query": HashGridQuery, "index": int32}, bool_t,
    differentiable=False, side_effects=True, inout=("query", "index"), group="geometry",
    batched=("sk::hash_grid_query_next_range", "sk::hash_grid_query_more", "sk::hash_grid_query_take"),
    doc="Advance ``query``: write the next candidate point index to ``index`` (a local variable) and return True, "
        "or return False when the query is done.")
registry.add_builtin(
    "hash_grid_point_id", {"id": uint64, "index": int32}, int32, differentiable=False, group="geometry",
    doc="The index of the point at position ``index`` of the grid's cell order (-1 out of range): "
        "``i = hash_grid_point_id(grid, tid())`` visits points cell by cell, for memory locality.")

# handle for simkit's own build kernels (hidden builtins are not exported as simkit.<name>)
hash_grid_cell = BuiltinFunction("hash_grid_cell")
