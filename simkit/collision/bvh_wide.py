"""The 4-wide tree that queries traverse (``sk::bvh4_node_t`` in ``native/bvh.h``), derived from the binary tree.

The binary tree (``bvh_build.py``) is what the SAH builds and what refits update level by level.
Queries traverse a 4-wide copy: every wide node holds the boxes of up to four children in
component-major order (``lo_x[4] lo_y[4] ... hi_z[4]``), so one node visit tests four boxes in a
vectorized loop, and a traversal makes about half as many (unpredictable) steps as in the binary
tree.

Collapse (once per build, one CPU thread, compiled): a wide node starts as the two children of a
binary node; twice, the inner child of largest surface area is replaced by its own two children.
Each inner child left becomes a wide node of its own. Every wide child remembers the binary child
it came from, so a refit of the wide tree is one parallel gather of binary child boxes
(``refit``). A wide node is one binary node or more, never fewer, so the wide tree is no deeper
than the binary one; a traversal holds at most ``3 * depth + 1`` stack entries, and a tree deeper
than ``MAX_DEPTH`` (pathological inputs only) is not used: its queries walk the binary tree.
"""
from __future__ import annotations

import numpy as np

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels.types import float32, int32, vec3
from ..runtime import array, launch, zeros

BIG = 1.0e30

# One wide node (sk::bvh4_node_t, 128 bytes): lo_x[4] lo_y[4] lo_z[4] hi_x[4] hi_y[4] hi_z[4] (float32),
# then child[4] and count[4] (int32), with the meaning of the binary node's child/count.
WIDE_FLOATS = 32
WIDE_BOX_FLOATS = 24
MAX_DEPTH = 20  # SK_BVH4_MAX_DEPTH: a traversal stack of SK_BVH4_STACK = 3 * 20 + 4 entries


@kernel
def _collapse(boxes: array(dtype=vec3, ndim=2), links: array(dtype=int32, ndim=2), wlinks: array(dtype=int32, ndim=2),
              wsrc: array(dtype=int32, ndim=2), wbin: array(dtype=int32), wdepth: array(dtype=int32),
              info: array(dtype=int32)):
    # dim=1. wsrc[w, k]: the binary child (2 * node + side) that wide child k of node w copies, or -1.
    # info: [wide nodes, depth of the deepest (the root: 1)]
    count = int(1)
    wbin[0] = 0
    wdepth[0] = 1
    depth = int(1)
    w = int(0)
    while w < count:
        b = wbin[w]
        wsrc[w, 0] = 2 * b
        wsrc[w, 1] = 2 * b + 1
        n = int(2)
        for _step in range(2):
            best = int(-1)
            best_area = float(-1.0)
            for k in range(n):
                ref = wsrc[w, k]
                node = ref // 2
                s = ref % 2
                if links[node, 2 + s] == 0 and links[node, s] >= 0:
                    d = boxes[node, 2 * s + 1] - boxes[node, 2 * s]
                    area = d[0] * d[1] + d[1] * d[2] + d[2] * d[0]
                    if area > best_area:
                        best_area = area
                        best = k
            if best >= 0:
                ref = wsrc[w, best]
                c = links[ref // 2, ref % 2]
                wsrc[w, best] = 2 * c
                wsrc[w, n] = 2 * c + 1
                n = n + 1
        for k in range(4):
            child = int(-1)
            cnt = int(0)
            src = int(-1)
            if k < n:
                ref = wsrc[w, k]
                node = ref // 2
                s = ref % 2
                cnt = links[node, 2 + s]
                if cnt > 0:
                    child = links[node, s]
                    src = ref
                elif links[node, s] >= 0:
                    child = count
                    wbin[count] = links[node, s]
                    wdepth[count] = wdepth[w] + 1
                    depth = max(depth, wdepth[w] + 1)
                    count = count + 1
                    src = ref
            wlinks[w, k] = child
            wlinks[w, 4 + k] = cnt
            wsrc[w, k] = src
        w = w + 1
    info[0] = count
    info[1] = depth


@kernel
def _refit(boxes: array(dtype=vec3, ndim=2), wsrc: array(dtype=int32, ndim=2), wbox: array(dtype=float32, ndim=2)):
    w = sk.tid()
    for k in range(4):
        ref = wsrc[w, k]
        lo = vec3(BIG, BIG, BIG)
        hi = vec3(-BIG, -BIG, -BIG)
        if ref >= 0:
            lo = boxes[ref // 2, 2 * (ref % 2)]
            hi = boxes[ref // 2, 2 * (ref % 2) + 1]
        for c in range(3):
            wbox[w, 4 * c + k] = lo[c]
            wbox[w, 12 + 4 * c + k] = hi[c]


class WideTree:
    """The wide nodes of a binary tree (``tree``: a bvh_build.Tree) on its device; ``refit`` after every
    refit of the binary tree."""

    def __init__(self, tree, nodes_np: np.ndarray, device):
        n = len(nodes_np)
        if tree.raw.device.is_cpu:  # the binary nodes' kernel views (the collapse runs on the CPU)
            boxes, links = tree.boxes, tree.links
        else:
            cpu_raw = array(np.ascontiguousarray(nodes_np).view(np.float32).reshape(n, 16), dtype=float32,
                            device="cpu")
            boxes = array(ptr=cpu_raw.ptr, dtype=vec3, shape=(n, 4), strides=(64, 12), device="cpu",
                          _owner=cpu_raw)
            links = array(ptr=cpu_raw.ptr + 48, dtype=int32, shape=(n, 4), strides=(64, 4), device="cpu",
                          _owner=cpu_raw)
        wlinks = zeros((n, 8), dtype=int32, device="cpu")
        wsrc = zeros((n, 4), dtype=int32, device="cpu")
        wbin = zeros(n, dtype=int32, device="cpu")
        wdepth = zeros(n, dtype=int32, device="cpu")
        info = zeros(2, dtype=int32, device="cpu")
        launch(_collapse, 1, inputs=[boxes, links, wlinks, wsrc, wbin, wdepth, info], device="cpu", record_tape=False)
        count, self.depth = (int(v) for v in info.numpy())
        # deeper trees (pathological inputs) are walked in binary form: see SK_BVH4_STACK in native/bvh.h
        self.usable = self.depth <= MAX_DEPTH
        raw_wide = np.zeros((count, WIDE_FLOATS), np.float32)
        raw_wide.view(np.int32)[:, WIDE_BOX_FLOATS:] = wlinks.numpy()[:count]
        self.raw = array(raw_wide, dtype=float32, device=device)  # 128-byte records
        self.boxes = array(ptr=self.raw.ptr, dtype=float32, shape=(count, WIDE_BOX_FLOATS),
                           strides=(4 * WIDE_FLOATS, 4), device=device, _owner=self.raw)
        self.src = array(wsrc.numpy()[:count], dtype=int32, device=device)
        self.tree = tree

    @property
    def num_nodes(self) -> int:
        return self.raw.shape[0]

    @property
    def ptr(self) -> int:
        """The address of the wide nodes, or 0 when queries must walk the binary tree."""
        return self.raw.ptr if self.usable else 0

    def refit(self, device) -> None:
        """Copy the binary tree's current child boxes into the wide nodes (one parallel pass)."""
        launch(_refit, self.num_nodes, inputs=[self.tree.boxes, self.src, self.boxes], device=device,
               record_tape=False)
