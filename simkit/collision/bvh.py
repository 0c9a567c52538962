"""Bvh: a bounding volume hierarchy over boxes, for overlap and ray queries in kernels (host side).

Example (the same kernel runs under ``import warp as wp``)::

    import simkit as wp

    @wp.kernel
    def overlaps(bvh: wp.uint64, lo: wp.array(dtype=wp.vec3), hi: wp.array(dtype=wp.vec3),
                 counts: wp.array(dtype=int)):
        i = wp.tid()
        query = wp.bvh_query_aabb(bvh, lo[i], hi[i])
        index = int(0)
        n = int(0)
        while wp.bvh_query_next(query, index):
            n += 1
        counts[i] = n

    bvh = wp.Bvh(lowers, uppers)   # arrays of vec3, one box per item
    wp.launch(overlaps, dim=len(lowers), inputs=[bvh.id, lowers, uppers, counts])
    ...                            # move the boxes (same arrays), then
    bvh.refit()                    # or bvh.rebuild() after large motions

The tree is a binned-SAH BVH (see ``bvh_build.py``; ``constructor="median"`` gives object-median
splits, for comparison). Queries are not differentiable.
"""
from __future__ import annotations

import struct as _struct

import numpy as np

from ..kernels import types as T
from ..runtime import array, empty, launch
from ..runtime.device import get_device
from . import bvh_build as B
from ..runtime import handles
from .descriptor import Descriptor

_BVH_T = _struct.Struct("<QQQQQii" "QQii")  # sk::bvh_t (72 bytes)
CONSTRUCTORS = ("sah", "median")
C_TRAV = 2.0  # SAH cost of a node visit relative to one item box test


def check_vec3_array(name: str, a, owner: str):
    if not isinstance(a, array) or a.is_type:
        raise TypeError(f"{owner}: {name} must be a simkit array of vec3, got {type(a).__name__}")
    if a.dtype is not T.vec3 or a.ndim != 1:
        raise TypeError(f"{owner}: {name} must be a 1D array of vec3, got {T.type_name(a.dtype)} with {a.ndim} dims")


def check_finite(name: str, values: np.ndarray, owner: str):
    if np.isfinite(values).all():
        return
    bad = ~np.isfinite(values).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{owner}: {name}[{i}] is not finite ({values[i].tolist()}); "
                         f"{int(bad.sum())} non-finite entries in all")


def check_constructor(constructor, groups, owner: str) -> str:
    """The tree builder to use: "sah" (default) or "median"; Warp's "lbvh" builds the SAH tree too."""
    if constructor == "cubql":
        if groups is not None:
            raise RuntimeError(f"{owner}: Grouped BVHs need the 'sah', 'median' or 'lbvh' constructor, not 'cubql'")
        raise ValueError(f"{owner}: the 'cubql' constructor is not available (is_cubql_available() is False)")
    name = "sah" if constructor in (None, "lbvh") else constructor
    if name not in CONSTRUCTORS:
        raise ValueError(f"{owner}: constructor must be one of {CONSTRUCTORS + ('lbvh',)}, got {constructor!r}")
    return name


def check_groups(groups, count: int, owner: str) -> np.ndarray | None:
    """``groups`` (None, or an integer array with one non-negative group id per item) as a host int32 array."""
    if groups is None:
        return None
    if not isinstance(groups, array) or groups.is_type or not T.is_int(groups.dtype) or groups.ndim != 1:
        raise TypeError(f"{owner}: groups must be a 1D simkit array of int32 (one group per item), got "
                        f"{getattr(groups, 'dtype', type(groups).__name__)}")
    g = groups.numpy().astype(np.int64)
    if g.shape[0] != count:
        raise ValueError(f"{owner}: groups has {g.shape[0]} entries for {count} items")
    if count and (g.min() < 0 or g.max() > np.iinfo(np.int32).max):
        k = int(np.argmax((g < 0) | (g > np.iinfo(np.int32).max)))
        raise ValueError(f"{owner}: groups[{k}] = {int(g[k])} is not a non-negative int32 group id")
    return g.astype(np.int32) if count else None


def tree_groups(tree: B.Tree) -> tuple:
    """The group fields of a tree's native descriptor: (group_ids ptr, group_roots ptr, num_groups)."""
    if tree.group_ids is None:
        return 0, 0, 0
    return tree.group_ids.ptr, tree.group_roots.ptr, tree.group_ids.shape[0]


class Bvh:
    """A BVH over ``lowers[i]``, ``uppers[i]`` (1D arrays of vec3 on one device); ``id`` goes to kernels.
    Arguments follow Warp's ``Bvh`` (``constructor`` "sah" | "median"; "lbvh" is accepted and builds the
    SAH tree; ``leaf_size`` items at most per leaf); ``device`` defaults to the arrays' device.
    ``groups`` (an int32 array, one group id >= 0 per item) builds every group's items into one subtree,
    whose root ``bvh_get_group_root(id, group)`` gives kernels for the ``root`` of their queries.

    The Bvh keeps references to both arrays: ``refit()`` re-reads them after the boxes moved
    (same tree, new boxes); ``rebuild()`` builds a new tree. ``id`` stays the same.
    """

    def __init__(self, lowers: array, uppers: array, constructor: str | None = None, groups=None, leaf_size: int = 4,
                 *, device=None):
        constructor = check_constructor(constructor, groups, "Bvh")
        check_vec3_array("lowers", lowers, "Bvh")
        check_vec3_array("uppers", uppers, "Bvh")
        if lowers.shape != uppers.shape:
            raise ValueError(f"Bvh: lowers and uppers differ in length ({lowers.shape[0]} vs {uppers.shape[0]})")
        self.device = get_device(device) if device is not None else lowers.device
        if lowers.device != self.device or uppers.device != self.device:
            raise ValueError(f"Bvh: lowers and uppers must be on {self.device.alias}")
        if not 1 <= int(leaf_size) <= 16:
            raise ValueError(f"Bvh: leaf_size must be in [1, 16], got {leaf_size}")
        self.lowers, self.uppers = lowers, uppers
        self.constructor, self.leaf_size = constructor, int(leaf_size)
        self._groups = check_groups(groups, lowers.shape[0], "Bvh")
        self._desc = Descriptor(_BVH_T.size, self.device)
        handles.register(self, self.id)
        self.rebuild()

    @property
    def id(self) -> int:
        """The handle kernels take (a uint64: the address of the native descriptor)."""
        return self._desc.ptr

    @property
    def num_items(self) -> int:
        return self.lowers.shape[0]

    @property
    def num_nodes(self) -> int:
        return self._tree.num_nodes

    def rebuild(self, constructor: str | None = None):
        """Build a new tree from the current boxes (after large motions; ``refit`` keeps the tree).
        ``constructor``: switch the construction algorithm ("sah" | "median"; "lbvh" and None build SAH)."""
        if constructor is not None:
            self.constructor = check_constructor(constructor, self._groups, "Bvh.rebuild")
        lo, hi = self.lowers.numpy(), self.uppers.numpy()
        check_finite("lowers", lo, "Bvh")
        check_finite("uppers", hi, "Bvh")
        self._tree = build(array(lo, dtype=T.vec3, device="cpu"), array(hi, dtype=T.vec3, device="cpu"), self.device,
                           self.constructor, self.leaf_size, C_TRAV, groups=self._groups)
        n = self.num_items
        self._items = empty((max(n, 1), 2), dtype=T.vec3, device=self.device)  # (lo, hi) per slot, interleaved
        self._item_lo, self._item_hi = self._items[:, 0], self._items[:, 1]
        self._desc.write(_BVH_T.pack(self._tree.ptr, self._tree.prims.ptr, self._item_lo.ptr,
                                     self._item_hi.ptr, self._tree.wide.ptr, self._tree.num_nodes, n,
                                     *tree_groups(self._tree), 0))
        self.refit()

    def refit(self):
        """Recompute every box of the tree from ``lowers``/``uppers`` (the tree itself is kept)."""
        n = self.num_items
        self._tape_state = handles.state_of([self.lowers, self.uppers])  # (see runtime/handles.py)
        if n == 0:
            return
        launch(B._gather_boxes, n, inputs=[self._tree.prims, self.lowers, self.uppers, self._item_lo,
                                           self._item_hi], device=self.device, record_tape=False)
        self._tree.refit(self._item_lo, self._item_hi, self.device)


def build(lo: array, hi: array, device, constructor: str, leaf_size: int, c_trav: float, lanes: int = 1,
          groups: np.ndarray | None = None) -> B.Tree:
    """A tree over the boxes ``lo``/``hi`` (private CPU arrays of vec3: the build reorders them)."""
    median = constructor == "median"
    return B.build_tree(lo, hi, device, max_leaf=leaf_size, median_depth=0 if median else B.MEDIAN_DEPTH,
                        c_trav=c_trav, lanes=lanes, groups=groups)


def is_cubql_available() -> bool:
    """Always False: simkit builds its own trees (Warp's optional cuBQL builder is not part of simkit)."""
    return False
