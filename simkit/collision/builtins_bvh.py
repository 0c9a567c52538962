"""Kernel builtins of the BVH (``native/bvh.h``), registered with the compiler's public registry.

Usage in a kernel (the Warp idiom)::

    query = wp.bvh_query_aabb(bvh_id, lower, upper)
    index = int(0)
    while wp.bvh_query_next(query, index):
        ...  # the box of item `index` overlaps [lower, upper]

``bvh_query_next`` updates ``query`` and ``index`` in place (registry ``inout``): the compiler
treats the call as an assignment to both names. None of these builtins is differentiable.
"""
from __future__ import annotations

import os

from ..kernels import registry
from ..kernels.api import BuiltinFunction
from ..kernels.types import bool as bool_t
from ..kernels.types import ArrayType, float32, int32, uint64, vec3

NATIVE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native")


class BvhQuery:
    """Traversal state of a BVH query (``sk::bvh_query_t``): a kernel-local value returned by
    ``bvh_query_aabb`` / ``bvh_query_ray`` and advanced by ``bvh_query_next``."""

    _simkit_opaque = "sk::bvh_query_t"


registry.add_header(os.path.join(NATIVE, "bvh.h"))

_G = "geometry"
_ROOT = ("Optional ``root``: a group's subtree root (from ``bvh_get_group_root``), or -1 for the whole tree.")
_STARTS = {
    "bvh_query_aabb": ({"id": uint64, "low": vec3, "high": vec3},
                       "Start a query of the Bvh ``id`` for the items whose box overlaps [low, high] (boundaries "
                       "included); iterate with ``bvh_query_next``. "),
    "bvh_query_ray": ({"id": uint64, "start": vec3, "dir": vec3},
                      "Start a query of the Bvh ``id`` for the items whose box the ray ``start + t * dir`` (t >= 0) "
                      "meets; iterate with ``bvh_query_next`` (its ``max_dist`` bounds the entry parameter t, in "
                      "multiples of |dir|). "),
    "bvh_query_sphere": ({"id": uint64, "center": vec3, "radius": float32},
                         "Start a query of the Bvh ``id`` for the items whose box is within ``radius`` of ``center`` "
                         "(exact sphere-box distance, touching included; a negative radius counts as 0). "),
    "bvh_query_capsule": ({"id": uint64, "start": vec3, "dir": vec3, "radius": float32},
                          "Start a query of the Bvh ``id`` for the items whose box, grown by ``radius`` on every side, "
                          "the ray ``start + t * dir`` meets; ``bvh_query_next(q, i, 1.0)`` bounds it to the segment "
                          "[start, start + dir], both ends included (conservative near box corners; a negative "
                          "radius counts as 0). "),
}
for _key, (_inputs, _doc) in _STARTS.items():
    for _extra in ({}, {"root": int32}):
        registry.add_builtin(_key, {**_inputs, **_extra}, BvhQuery, differentiable=False, group=_G, doc=_doc + _ROOT)
registry.add_builtin(
    "bvh_get_group_root", {"id": uint64, "group": int32}, int32, differentiable=False, group=_G,
    doc="The root of group ``group``'s subtree in the Bvh ``id`` (built with ``groups=``), for the ``root`` of "
        "its queries; -1 (the whole tree) when there is no such group.")
# `while bvh_query_next(q, i)` loops compile to nested loops over the passing items of one leaf at a time
BATCHED = ("sk::bvh_query_next_range", "sk::bvh_query_more", "sk::bvh_query_take")
for _inputs in ({"query": BvhQuery, "index": int32, "max_dist": float32}, {"query": BvhQuery, "index": int32}):
    registry.add_builtin(
        "bvh_query_next", _inputs, bool_t, differentiable=False, side_effects=True, inout=("query", "index"),
        group=_G, batched=BATCHED,
        doc="Advance ``query``: write the next matching item to ``index`` and return True, or return False when "
            "the traversal is done. For ray and capsule queries, only boxes entered at t < ``max_dist`` (default: "
            "inf; t <= ``max_dist`` for capsules) match; box and sphere queries ignore it. The query stores its "
            "kind, so one loop serves queries chosen at run time.")

# the SAH builder's per-item passes (native/bvh_build.h); hidden: handles for bvh_build.py's kernel only
registry.add_header(os.path.join(NATIVE, "bvh_build.h"))
_V3 = ArrayType(vec3, 1)
_BINS = ArrayType(vec3, 2)
registry.add_builtin(
    "sah_bin", {"lo": _V3, "hi": _V3, "start": int32, "end": int32, "cmin": vec3, "scale": vec3, "nb": int32,
                "bin_lo": _BINS, "bin_hi": _BINS, "bin_n": ArrayType(int32, 2)}, None,
    differentiable=False, side_effects=True, replay=False, hidden=True, group="geometry",
    doc="Bin items [start, end) by box centroid along all three axes (SAH builder).")
registry.add_builtin(
    "sah_partition", {"perm": ArrayType(int32, 1), "lo": _V3, "hi": _V3, "start": int32, "end": int32,
                      "axis": int32, "cmin": float32, "scale": float32, "nb": int32, "last": int32}, int32,
    differentiable=False, side_effects=True, replay=False, hidden=True, group="geometry",
    doc="Move items [start, end) whose bin along ``axis`` is at most ``last`` first; returns the first other.")
registry.add_builtin(
    "sah_sweep", {"bin_lo": _BINS, "bin_hi": _BINS, "bin_n": ArrayType(int32, 2), "scale": vec3, "nb": int32,
                  "count": int32, "block": int32, "cost": ArrayType(float32, 1)}, int32,
    differentiable=False, side_effects=True, replay=False, hidden=True, group="geometry",
    doc="The least-cost SAH split of the bins (axis * 16 + bin, or -1); its cost goes to cost[0].")
sah_bin = BuiltinFunction("sah_bin")
sah_sweep = BuiltinFunction("sah_sweep")
sah_partition = BuiltinFunction("sah_partition")
