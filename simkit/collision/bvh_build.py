"""Building and refitting the BVH of ``native/bvh.h``: simkit kernels over numpy-prepared arrays.

Build (host): a top-down binned SAH (16 bins per axis, fewer in nodes of fewer items, all three
axes, leaves of at most ``max_leaf`` items) written as a kernel with one subtree per thread, so it
runs as compiled C++; its two per-item passes, binning and partition, and the sweep over the bins are
native builtins (``sah_bin``, ``sah_partition``, ``sah_sweep`` in ``native/bvh_build.h``). The item boxes move with the
permutation so every pass reads them in order, and the children of an SAH split take their boxes
from the bins (no extra pass). Past depth ``MEDIAN_DEPTH`` it
switches to object-median splits, which bounds the tree depth (and so the traversal stack of
``SK_BVH_STACK`` entries). Nodes are numbered depth first: a child's index is larger than its
parent's. Meshes pad every leaf to its own block of ``LANES`` slots (``pad_leaves``) so that a
leaf's faces are tested in one vectorized loop; their SAH counts items in blocks of ``LANES``
(a leaf of 1 face costs what one of 8 does), which fills 90% of the slots instead of 72% (81920-face
icosphere; 20% fewer nodes, rays 3-5% and closest points 9% faster).

Quality (81920-face icosphere, 300 random queries, python emulation of the native traversals):
the SAH tree visits 16% fewer nodes per closest-point query than object-median splits (120 vs
142) and 5-8% fewer per ray; on a scene of mixed triangle sizes 50% fewer (27 vs 55) and 45-55%
fewer per ray.

Refit (any device): a Bvh gathers its item boxes into slot order; a Mesh gathers each leaf's
faces with one thread per leaf, which also writes the leaf's box into its parent. Then every node
recomputes its other child boxes, children before parents: on a GPU one launch per tree level from
the deepest up, on the CPU one thread walking the nodes from the last to the first.
"""
from __future__ import annotations

import os

import numpy as np

from .. import config
from ..kernels import func, kernel
from ..kernels import lang as sk
from ..kernels.types import float32, int32, vec3
from ..runtime import array, empty, launch, zeros
from . import builtins_bvh as bvh_builtins
from .bvh_wide import WideTree

NBINS = 16
MEDIAN_DEPTH = 32
BIG = 1.0e30
NAN = float("nan")
STACK = 160  # build task stack (>= tree depth + 2)
PARALLEL_MIN_ITEMS = 4096  # fewer items: one thread builds the whole tree
LEVELS_ON_CPU = False  # refit level by level on the CPU too (the GPU path; tests set it)


# One node (sk::bvh_node_t, 64 bytes): the boxes of its two children (lo0, hi0, lo1, hi1: 12 floats),
# then child0, child1, count0, count1 (int32). Kernels see the node buffer through two strided views:
# `boxes` (vec3, [nodes, 4]) and `links` (int32, [nodes, 4]).
NODE_DTYPE = np.dtype([("lo0", "<f4", 3), ("hi0", "<f4", 3), ("lo1", "<f4", 3), ("hi1", "<f4", 3),
                       ("child0", "<i4"), ("child1", "<i4"), ("count0", "<i4"), ("count1", "<i4")])
assert NODE_DTYPE.itemsize == 64


@func
def _vmin(a: vec3, b: vec3) -> vec3:
    # plain comparisons compile to single min instructions (the min() builtin also handles NaN)
    return vec3(sk.where(a[0] < b[0], a[0], b[0]), sk.where(a[1] < b[1], a[1], b[1]), sk.where(a[2] < b[2], a[2], b[2]))


@func
def _vmax(a: vec3, b: vec3) -> vec3:
    return vec3(sk.where(a[0] > b[0], a[0], b[0]), sk.where(a[1] > b[1], a[1], b[1]), sk.where(a[2] > b[2], a[2], b[2]))


@func
def _blocks(count: int, block: int) -> float:
    # the SAH's cost of testing `count` items that are tested `block` at a time (a mesh leaf: SK_LANES faces)
    return float((count + block - 1) // block)


@func
def _half_area(lo: vec3, hi: vec3) -> float:
    d = hi - lo
    if d[0] < 0.0 or d[1] < 0.0 or d[2] < 0.0:
        return 0.0
    return d[0] * d[1] + d[1] * d[2] + d[2] * d[0]


@func
def _set_child(fnodes: array(dtype=float32, ndim=2), inodes: array(dtype=int32, ndim=2), ref: int, lo: vec3, hi: vec3,
               child: int, count: int):
    """Write child ``ref % 2`` of node ``ref // 2``. The nodes are seen as 16 floats (``fnodes``) and as 16
    ints (``inodes``, the same memory): contiguous arrays, so the build runs the kernel's contiguous
    variant (plain indexing; strided views of the node records made every access of it strided)."""
    node = ref // 2
    k = ref % 2
    for c in range(3):
        fnodes[node, 6 * k + c] = lo[c]
        fnodes[node, 6 * k + 3 + c] = hi[c]
    inodes[node, 12 + k] = child
    inodes[node, 14 + k] = count


@func
def _swap(perm: array(dtype=int32), lo: array(dtype=vec3), hi: array(dtype=vec3), a: int, b: int):
    """Swap slots a and b (the item boxes move with the permutation: the build reads them in order)."""
    t = perm[a]
    perm[a] = perm[b]
    perm[b] = t
    tl = lo[a]
    lo[a] = lo[b]
    lo[b] = tl
    th = hi[a]
    hi[a] = hi[b]
    hi[b] = th


@kernel(_parallel_min=1)  # one subtree per thread, however few
def _build_sah(lo: array(dtype=vec3), hi: array(dtype=vec3), perm: array(dtype=int32), fnodes: array(dtype=float32, ndim=2),
               inodes: array(dtype=int32, ndim=2), parents: array(dtype=int32), depths: array(dtype=int32),
               all_tasks: array(dtype=int32, ndim=3),
               all_bin_lo: array(dtype=vec3, ndim=3), all_bin_hi: array(dtype=vec3, ndim=3),
               all_bin_n: array(dtype=int32, ndim=3), all_cost: array(dtype=float32, ndim=2),
               all_task_box: array(dtype=vec3, ndim=3), max_leaf: int, block: int, median_depth: int, c_trav: float,
               first: array(dtype=int32, ndim=2), first_box: array(dtype=vec3, ndim=2), stop_depth: int,
               out: array(dtype=int32, ndim=2), out_box: array(dtype=vec3, ndim=2), info: array(dtype=int32, ndim=2)):
    # One subtree per thread t: first[t] = (start, end, parent child ref, depth, first node, box known) with its
    # boxes first_box[t]; the thread numbers its nodes from first[t, 4] and has its own scratch (all_*[t]).
    # Tasks reaching stop_depth are not built but written to out/out_box (count in info[t, 2]), for a later
    # launch to build them in parallel. info[t] = (nodes end, deepest depth, tasks written).
    # tasks[k] = (start, end, parent child ref, depth, box known); task_box[k] = (box lo, hi, centroid lo, hi)
    t = sk.tid()
    tasks = all_tasks[t]
    task_box = all_task_box[t]
    bin_lo = all_bin_lo[t]
    bin_hi = all_bin_hi[t]
    bin_n = all_bin_n[t]
    split_cost = all_cost[t]
    num_nodes = first[t, 4]
    max_depth = int(0)
    n_out = int(0)
    top = int(1)
    tasks[0, 0] = first[t, 0]
    tasks[0, 1] = first[t, 1]
    tasks[0, 2] = first[t, 2]
    tasks[0, 3] = first[t, 3]
    tasks[0, 4] = first[t, 5]
    for b in range(4):
        task_box[0, b] = first_box[t, b]
    while top > 0:
        top -= 1
        start = tasks[top, 0]
        end = tasks[top, 1]
        parent = tasks[top, 2]
        depth = tasks[top, 3]
        if depth >= stop_depth:
            for q in range(4):
                out[n_out, q] = tasks[top, q]
            out[n_out, 5] = tasks[top, 4]
            for b in range(4):
                out_box[n_out, b] = task_box[top, b]
            n_out += 1
            continue
        max_depth = max(max_depth, depth)
        count = end - start
        blo = task_box[top, 0]
        bhi = task_box[top, 1]
        clo = task_box[top, 2]  # after an SAH split: conservative (the parent's, cut at the split plane)
        chi = task_box[top, 3]
        if tasks[top, 4] == 0:
            blo = vec3(BIG, BIG, BIG)
            bhi = vec3(-BIG, -BIG, -BIG)
            clo = vec3(BIG, BIG, BIG)
            chi = vec3(-BIG, -BIG, -BIG)
            for s in range(start, end):
                ls = lo[s]
                hs = hi[s]
                blo = _vmin(blo, ls)
                bhi = _vmax(bhi, hs)
                c = (ls + hs) * 0.5
                clo = _vmin(clo, c)
                chi = _vmax(chi, c)
        ext = chi - clo
        nb = min(count, NBINS)  # small nodes: fewer bins (the sweeps cost as much as binning them)
        scale = vec3(0.0, 0.0, 0.0)
        for ax in range(3):
            if ext[ax] > 0.0:
                scale[ax] = float(nb) * 0.999999 / ext[ax]
        best_axis = int(-1)
        best_bin = int(0)
        best_cost = float(BIG)
        best_llo = blo
        best_lhi = bhi
        # a small node whose split would cost a node visit of at least its leaf's cost is a leaf: skip the bins
        # (the sweep's best cost is never negative, so the split test below would fail)
        if count > 1 and depth < median_depth and (count > max_leaf or c_trav < _blocks(count, block)):
            # bin the centroids of every axis in one pass, then sweep the bins (native/bvh_build.h)
            bvh_builtins.sah_bin(lo, hi, start, end, clo, scale, nb, bin_lo, bin_hi, bin_n)
            best = bvh_builtins.sah_sweep(bin_lo, bin_hi, bin_n, scale, nb, count, block, split_cost)
            if best >= 0:
                best_axis = best // NBINS  # (sah_sweep's encoding: NBINS = 16)
                best_bin = best % NBINS
                best_cost = split_cost[0]
                best_llo = vec3(BIG, BIG, BIG)
                best_lhi = vec3(-BIG, -BIG, -BIG)
                for b in range(best_bin + 1):
                    best_llo = _vmin(best_llo, bin_lo[best_axis, b])
                    best_lhi = _vmax(best_lhi, bin_hi[best_axis, b])
        mid = int(-1)
        known = int(0)  # children boxes known from the bins
        parea = _half_area(blo, bhi)
        split = best_axis >= 0 and (count > max_leaf or c_trav * parea + best_cost < _blocks(count, block) * parea)
        if split:
            # partition the slots: bin <= best_bin first (with the bins sah_bin gave)
            mid = bvh_builtins.sah_partition(perm, lo, hi, start, end, best_axis, clo[best_axis],
                                             scale[best_axis], nb, best_bin)
            known = 1
        elif count > max_leaf:
            # object median along the widest centroid axis (quickselect)
            ax = int(0)
            if ext[1] > ext[ax]:
                ax = 1
            if ext[2] > ext[ax]:
                ax = 2
            k = (start + end) // 2
            a = start
            z = end - 1
            while a < z:
                ip = (a + z) // 2
                pivot = (lo[ip][ax] + hi[ip][ax]) * 0.5
                i0 = a
                j0 = z
                while i0 <= j0:
                    while (lo[i0][ax] + hi[i0][ax]) * 0.5 < pivot:
                        i0 += 1
                    while (lo[j0][ax] + hi[j0][ax]) * 0.5 > pivot:
                        j0 -= 1
                    if i0 <= j0:
                        _swap(perm, lo, hi, i0, j0)
                        i0 += 1
                        j0 -= 1
                if k <= j0:
                    z = j0
                elif k >= i0:
                    a = i0
                else:
                    a = z
            mid = k
        if mid < 0:  # a leaf
            if parent < 0:
                parents[num_nodes] = -1
                depths[num_nodes] = 0
                if count > 0:
                    _set_child(fnodes, inodes, 2 * num_nodes, blo, bhi, start, count)
                num_nodes += 1
            else:
                _set_child(fnodes, inodes, parent, blo, bhi, start, count)
        else:
            node = num_nodes
            num_nodes += 1
            parents[node] = parent
            depths[node] = depth
            if parent >= 0:
                _set_child(fnodes, inodes, parent, blo, bhi, node, 0)
            tasks[top, 0] = mid
            tasks[top, 1] = end
            tasks[top, 2] = 2 * node + 1
            tasks[top, 3] = depth + 1
            tasks[top, 4] = known
            tasks[top + 1, 0] = start
            tasks[top + 1, 1] = mid
            tasks[top + 1, 2] = 2 * node
            tasks[top + 1, 3] = depth + 1
            tasks[top + 1, 4] = known
            if known == 1:
                rlo = vec3(BIG, BIG, BIG)
                rhi = vec3(-BIG, -BIG, -BIG)
                for b in range(best_bin + 1, nb):
                    rlo = _vmin(rlo, bin_lo[best_axis, b])
                    rhi = _vmax(rhi, bin_hi[best_axis, b])
                plane = clo[best_axis] + float(best_bin + 1) / scale[best_axis]
                rclo = clo
                rclo[best_axis] = max(clo[best_axis], plane)
                lchi = chi
                lchi[best_axis] = min(chi[best_axis], plane)
                task_box[top, 0] = rlo
                task_box[top, 1] = rhi
                task_box[top, 2] = rclo
                task_box[top, 3] = chi
                task_box[top + 1, 0] = best_llo
                task_box[top + 1, 1] = best_lhi
                task_box[top + 1, 2] = clo
                task_box[top + 1, 3] = lchi
            top += 2
    info[t, 0] = num_nodes
    info[t, 1] = max_depth
    info[t, 2] = n_out


# ---------------------------------------------------------------------------
# Refit


@kernel
def _gather_boxes(prims: array(dtype=int32), lowers: array(dtype=vec3), uppers: array(dtype=vec3),
                  item_lo: array(dtype=vec3), item_hi: array(dtype=vec3)):
    s = sk.tid()
    i = prims[s]
    item_lo[s] = lowers[i]
    item_hi[s] = uppers[i]


@kernel
def _face_boxes(indices: array(dtype=int32), points: array(dtype=vec3), lo: array(dtype=vec3), hi: array(dtype=vec3),
                perimeter: array(dtype=float32)):
    f = sk.tid()
    a = points[indices[3 * f]]
    b = points[indices[3 * f + 1]]
    c = points[indices[3 * f + 2]]
    lo[f] = _vmin(_vmin(a, b), c)
    hi[f] = _vmax(_vmax(a, b), c)
    perimeter[f] = sk.length(b - a) + sk.length(c - b) + sk.length(a - c)


LANES = 8  # mesh leaves: blocks of faces stored component-major (native/mesh.h, SK_LANES)


@func
def _slot_tri(tris: array(dtype=float32, ndim=2), s: int):
    """Face of slot ``s`` from the component-major blocks: row block, column component * LANES + lane."""
    blk = s // LANES
    ln = s % LANES
    a = vec3(tris[blk, ln], tris[blk, LANES + ln], tris[blk, 2 * LANES + ln])
    b = vec3(tris[blk, 3 * LANES + ln], tris[blk, 4 * LANES + ln], tris[blk, 5 * LANES + ln])
    c = vec3(tris[blk, 6 * LANES + ln], tris[blk, 7 * LANES + ln], tris[blk, 8 * LANES + ln])
    return a, b, c


@kernel(_inline_body=True)  # gcc would call this body once per leaf (3x slower refits)
def _gather_faces(leaves: array(dtype=int32, ndim=2), vids: array(dtype=int32, ndim=2), points: array(dtype=vec3),
                  tris: array(dtype=float32, ndim=2), item_lo: array(dtype=vec3), item_hi: array(dtype=vec3),
                  boxes: array(dtype=vec3, ndim=2)):
    # One leaf per thread: leaves[l] = (child ref 2 * node + k, face count); its faces are slots
    # [l * LANES, l * LANES + count) and vids[s] their vertex indices. Writes every face's block entry and
    # box, and the leaf's box into its parent (refit_levels then skips leaf children). Padding slots get
    # NaN faces and empty boxes (10% of the slots of a mesh: cheaper than a separate fill at construction).
    leaf = sk.tid()
    ref = leaves[leaf, 0]
    s0 = leaf * LANES
    count = leaves[leaf, 1]
    for ln in range(count, LANES):
        item_lo[s0 + ln] = vec3(BIG, BIG, BIG)
        item_hi[s0 + ln] = vec3(-BIG, -BIG, -BIG)
        for r in range(9):
            tris[leaf, r * LANES + ln] = NAN
    llo = vec3(BIG, BIG, BIG)
    lhi = vec3(-BIG, -BIG, -BIG)
    for s in range(s0, s0 + count):
        a = points[vids[s, 0]]
        b = points[vids[s, 1]]
        c = points[vids[s, 2]]
        lo = _vmin(_vmin(a, b), c)
        hi = _vmax(_vmax(a, b), c)
        llo = _vmin(llo, lo)
        lhi = _vmax(lhi, hi)
        e0 = b - a
        e1 = c - a
        e2 = c - b
        # sliver faces (as in Warp) are excluded from point and ray queries: NaN first vertex
        perim2 = sk.dot(e0, e0) + sk.dot(e1, e1) + sk.dot(e2, e2)
        if sk.length_sq(sk.cross(e0, e1)) <= 1.0e-12 * perim2 * perim2:  # |n| <= 1e-6 sum of squared edges
            a = vec3(NAN, NAN, NAN)
        item_lo[s] = lo
        item_hi[s] = hi
        ln = s - s0
        for k in range(3):
            tris[leaf, k * LANES + ln] = a[k]
            tris[leaf, (3 + k) * LANES + ln] = b[k]
            tris[leaf, (6 + k) * LANES + ln] = c[k]
    boxes[ref // 2, 2 * (ref % 2)] = llo
    boxes[ref // 2, 2 * (ref % 2) + 1] = lhi


@func
def _child_box(boxes: array(dtype=vec3, ndim=2), item_lo: array(dtype=vec3), item_hi: array(dtype=vec3), child: int,
               count: int):
    lo = vec3(BIG, BIG, BIG)
    hi = vec3(-BIG, -BIG, -BIG)
    if count > 0:
        for s in range(child, child + count):
            lo = _vmin(lo, item_lo[s])
            hi = _vmax(hi, item_hi[s])
    elif child >= 0:
        lo = _vmin(boxes[child, 0], boxes[child, 2])
        hi = _vmax(boxes[child, 1], boxes[child, 3])
    return lo, hi


@kernel
def _refit_level(boxes: array(dtype=vec3, ndim=2), links: array(dtype=int32, ndim=2), order: array(dtype=int32),
                 start: int, end: int, per_thread: int, item_lo: array(dtype=vec3), item_hi: array(dtype=vec3),
                 leaves_done: int):
    j0 = start + sk.tid() * per_thread  # nodes order[j0 : j0 + per_thread] (see Tree.refit_levels)
    for j in range(j0, min(j0 + per_thread, end)):
        node = order[j]
        for k in range(2):
            if leaves_done != 0 and links[node, 2 + k] > 0:
                continue  # a leaf box already written (_gather_faces)
            lo, hi = _child_box(boxes, item_lo, item_hi, links[node, k], links[node, 2 + k])
            boxes[node, 2 * k] = lo
            boxes[node, 2 * k + 1] = hi


@func
def _child_dipole(tris: array(dtype=float32, ndim=2), wn: array(dtype=float32, ndim=2), child: int, count: int,
                  lo: vec3, hi: vec3):
    """Winding-number data of one child: area-weighted normal N, area centroid P, area, radius."""
    nsum = vec3(0.0, 0.0, 0.0)
    psum = vec3(0.0, 0.0, 0.0)
    area = float(0.0)
    if count > 0:
        for s in range(child, child + count):
            a, b, c = _slot_tri(tris, s)
            if not sk.isnan(a[0]):
                n = sk.cross(b - a, c - a) * 0.5
                ar = sk.length(n)
                nsum = nsum + n
                psum = psum + (a + b + c) * (ar / 3.0)
                area = area + ar
    elif child >= 0:
        for k in range(2):
            nsum = nsum + vec3(wn[child, 8 * k], wn[child, 8 * k + 1], wn[child, 8 * k + 2])
            ar = wn[child, 8 * k + 6]
            psum = psum + vec3(wn[child, 8 * k + 3], wn[child, 8 * k + 4], wn[child, 8 * k + 5]) * ar
            area = area + ar
    p = (lo + hi) * 0.5
    if area > 0.0:
        p = psum / area
    r = float(0.0)
    if count > 0 or child >= 0:
        d = max(hi - p, p - lo)  # the farthest box corner bounds every triangle point
        r = sk.length(d)
    return nsum, p, area, r


@kernel
def _refit_dipoles(boxes: array(dtype=vec3, ndim=2), links: array(dtype=int32, ndim=2), order: array(dtype=int32),
                   start: int, end: int, per_thread: int, tris: array(dtype=float32, ndim=2),
                   wn: array(dtype=float32, ndim=2)):
    j0 = start + sk.tid() * per_thread
    for j in range(j0, min(j0 + per_thread, end)):
        node = order[j]
        for k in range(2):
            nsum, p, area, r = _child_dipole(tris, wn, links[node, k], links[node, 2 + k], boxes[node, 2 * k],
                                             boxes[node, 2 * k + 1])
            for c in range(3):
                wn[node, 8 * k + c] = nsum[c]
                wn[node, 8 * k + 3 + c] = p[c]
            wn[node, 8 * k + 6] = area
            wn[node, 8 * k + 7] = r


# ---------------------------------------------------------------------------
# Host side


class Tree:
    """A built tree on ``device``: the node buffer (and its kernel views), slot order, level order."""

    def __init__(self, nodes_np: np.ndarray, prims: np.ndarray, depths: np.ndarray, device):
        n = len(nodes_np)
        self.raw = array(np.ascontiguousarray(nodes_np, dtype=NODE_DTYPE).view(np.float32).reshape(n, 16),
                         dtype=float32, device=device)  # 64-byte records
        self.boxes = array(ptr=self.raw.ptr, dtype=vec3, shape=(n, 4), strides=(64, 12), device=device,
                           _owner=self.raw)
        self.links = array(ptr=self.raw.ptr + 48, dtype=int32, shape=(n, 4), strides=(64, 4), device=device,
                           _owner=self.raw)
        self.prims = array(prims, dtype=int32, device=device)  # item of each slot
        self.depth = int(depths.max()) if n else 0
        order = np.argsort(-depths, kind="stable").astype(np.int32)  # deepest level first
        self.order = array(order, dtype=int32, device=device)
        self.levels = []  # (offset, count) into order, per level, deepest first
        off = 0
        for cnt in np.bincount(depths, minlength=self.depth + 1)[::-1]:
            if cnt:
                self.levels.append((off, int(cnt)))
                off += int(cnt)
        self._backward = None  # CPU refits: node indices last to first (refit_levels)
        self.wide = WideTree(self, nodes_np, device)  # what queries traverse (refit fills it)

    @property
    def num_nodes(self) -> int:
        return self.raw.shape[0]

    @property
    def ptr(self) -> int:
        return self.raw.ptr

    def leaves_numpy(self, lanes: int) -> np.ndarray:
        """Leaf k (slots [k * lanes, k * lanes + count) of a padded tree) as (child ref 2 * node + child, count)."""
        links = _links(self.nodes_numpy())
        start, cn = links[:, :2].reshape(-1), links[:, 2:].reshape(-1)
        refs = np.flatnonzero(cn > 0)
        refs = refs[np.argsort(start[refs], kind="stable")]
        assert np.array_equal(start[refs], np.arange(len(refs)) * lanes), "leaves are not padded to blocks"
        return np.stack([refs, cn[refs]], 1).astype(np.int32)

    def nodes_numpy(self) -> np.ndarray:
        """The nodes as NODE_DTYPE records (a host copy)."""
        return np.ascontiguousarray(self.raw.numpy()).view(NODE_DTYPE).reshape(-1)

    def refit(self, item_lo: array, item_hi: array, device, leaves_done: bool = False):
        """Recompute every box from the item boxes (in slot order), binary nodes then wide nodes;
        ``leaves_done``: the leaf boxes are already in place (only inner children are recomputed)."""
        self.refit_levels(_refit_level, [item_lo, item_hi, int(leaves_done)], device)
        self.wide.refit(device)

    def refit_levels(self, kernel_, args, device):
        """Run ``kernel_(boxes, links, order, start, end, per_thread, *args)`` over every node, children
        before parents: on the CPU one thread walks all nodes deepest level first (a node costs a few
        ns: parallel regions per level would cost more than they save); on a GPU one launch per level."""
        n = self.num_nodes
        if device.is_cpu and not LEVELS_ON_CPU:
            if self._backward is None:  # children have larger indices than their parents
                self._backward = array(np.arange(n - 1, -1, -1, dtype=np.int32), dtype=int32, device=device)
            launch(kernel_, 1, inputs=[self.boxes, self.links, self._backward, 0, n, n, *args], device=device,
                   record_tape=False)
            return
        for off, cnt in self.levels:
            launch(kernel_, cnt, inputs=[self.boxes, self.links, self.order, off, off + cnt, 1, *args],
                   device=device, record_tape=False)


def empty_nodes(n: int) -> np.ndarray:
    """``n`` (at least 1) nodes with two empty children, as NODE_DTYPE records."""
    raw = np.full((max(n, 1), 16), BIG, dtype=np.float32)
    raw[:, 3:6] = raw[:, 9:12] = -BIG
    ints = raw.view(np.int32)
    ints[:, 12:14] = -1
    ints[:, 14:16] = 0
    return raw.view(NODE_DTYPE).reshape(-1)


def _links(nodes: np.ndarray) -> np.ndarray:
    """The (child0, child1, count0, count1) columns of NODE_DTYPE records, as an int32 [n, 4] view (numpy's
    structured-array copies and field writes are ~10x slower than plain ones)."""
    return nodes.view(np.int32).reshape(-1, 16)[:, 12:16]


def pad_leaves(nodes: np.ndarray, prims: np.ndarray, lanes: int):
    """Give every leaf its own block of ``lanes`` slots (leaf k starts at slot k * lanes, in slot order);
    padding slots hold item -1."""
    nodes = nodes.view(np.float32).reshape(-1, 16).copy().view(NODE_DTYPE).reshape(-1)
    links = _links(nodes)
    ch, cn = links[:, :2].reshape(-1), links[:, 2:].reshape(-1)  # (copies) child and count of ref 2 * node + side
    refs = np.flatnonzero(cn > 0)  # the leaves
    order = np.argsort(ch[refs], kind="stable")
    refs = refs[order]  # in item order: their item ranges cover [0, n) one after another
    starts, counts = ch[refs], cn[refs]
    ch[refs] = np.arange(len(refs), dtype=np.int32) * lanes
    links[:, :2] = ch.reshape(-1, 2)
    padded = np.full(max(len(refs), 1) * lanes, -1, np.int32)
    shift = np.arange(len(refs), dtype=np.int64) * lanes - starts  # item i of leaf k goes to slot i + shift[k]
    padded[np.arange(len(prims)) + np.repeat(shift, counts)] = prims
    return nodes, padded


def build_tree(lo: array, hi: array, device, *, max_leaf: int = 4, median_depth: int = MEDIAN_DEPTH,
               c_trav: float = 1.0, lanes: int = 1, groups: np.ndarray | None = None) -> Tree:
    """Binned-SAH tree over item boxes ``lo``/``hi`` (CPU arrays of vec3, reordered in place), built on the CPU.
    ``lanes`` > 1 pads every leaf to its own block of that many slots (``max_leaf`` <= ``lanes``).
    ``groups`` (an int per item): every group's items form one subtree (see ``_build_grouped``); the tree's
    ``group_ids`` and ``group_roots`` (None without groups) map each group to its subtree's root node."""
    group_ids = group_roots = None
    if groups is None:
        nodes, prims, depths = _build_nodes(lo, hi, max_leaf, median_depth, c_trav, lanes)
    else:
        nodes, prims, depths, group_ids, group_roots = _build_grouped(lo, hi, groups, max_leaf, median_depth,
                                                                      c_trav, lanes)
    if lanes > 1:
        nodes, prims = pad_leaves(nodes, prims, lanes)
    tree = Tree(nodes, prims, depths, device)
    tree.group_ids = None if group_ids is None else array(group_ids, dtype=int32, device=device)
    tree.group_roots = None if group_roots is None else array(group_roots, dtype=int32, device=device)
    return tree


def _build_grouped(lo: array, hi: array, groups: np.ndarray, max_leaf: int, median_depth: int, c_trav: float,
                   block: int):
    """A tree whose top is a balanced tree over the groups (in ascending id order), with one SAH subtree of
    each group's items below it: (nodes, prims, depths, group ids, the root node of each group's subtree).
    The top nodes come first, so every child still has a larger index than its parent."""
    lo_np, hi_np = lo.numpy(), hi.numpy()
    ids, which = np.unique(groups, return_inverse=True)
    top = len(ids) - 1  # inner nodes of the top tree
    top_depth = max(top, 0).bit_length()
    parts = []
    for g in range(len(ids)):
        idx = np.flatnonzero(which == g).astype(np.int32)
        sub = _build_nodes(array(lo_np[idx], dtype=vec3, device="cpu"), array(hi_np[idx], dtype=vec3, device="cpu"),
                           max_leaf, max(median_depth - top_depth, 0), c_trav, block)
        parts.append((sub[0], idx[sub[1]], sub[2]))
    base = np.cumsum([top] + [len(p[0]) for p in parts])[:-1]  # first node of each group's subtree
    slot = np.cumsum([0] + [len(p[1]) for p in parts])[:-1]
    nodes = np.concatenate([empty_nodes(top)[:top]] + [p[0] for p in parts])
    attach = np.zeros(len(ids), np.int64)  # depth of each group's root
    depths = np.zeros(len(nodes), np.int64)
    counter = [0]

    def make(a: int, b: int, depth: int) -> int:  # the node over groups [a, b), b - a >= 2
        k = counter[0]
        counter[0] += 1
        depths[k] = depth
        mid = (a + b) // 2
        for c, (x, y) in enumerate(((a, mid), (mid, b))):
            if y - x == 1:
                nodes[f"child{c}"][k], attach[x] = base[x], depth + 1
            else:
                nodes[f"child{c}"][k] = make(x, y, depth + 1)
            nodes[f"count{c}"][k] = 0
        return k

    if top:
        make(0, len(ids), 0)
    for g, (sub, _, sub_depths) in enumerate(parts):
        view = nodes[base[g]:base[g] + len(sub)]
        for c in (0, 1):
            ch, cn = view[f"child{c}"], view[f"count{c}"]
            inner = (cn == 0) & (ch >= 0)
            ch[inner] += base[g]
            ch[cn > 0] += slot[g]
        depths[base[g]:base[g] + len(sub)] = sub_depths + attach[g]
    prims = np.concatenate([p[1] for p in parts]).astype(np.int32)
    return nodes, prims, depths, ids.astype(np.int32), base.astype(np.int32)


def _build_nodes(lo: array, hi: array, max_leaf: int, median_depth: int, c_trav: float, block: int = 1):
    """The SAH build itself: (nodes as NODE_DTYPE records, the item of each slot, the depth of each node).

    With several CPU threads and enough items, the top split(s) are built first, then the subtrees below
    them in parallel, one per thread (each numbers its nodes in its own range of the buffer); the
    nodes are then renumbered into one contiguous array."""
    n = lo.shape[0]
    threads = config.cpu_threads or os.cpu_count() or 1
    split_depth = (threads - 1).bit_length() if n >= PARALLEL_MIN_ITEMS and threads > 1 else 0
    subtrees = 1 << split_depth
    perm = array(np.arange(n, dtype=np.int32), dtype=int32, device="cpu")
    # the node buffer: at most one node per item, plus the top nodes; the builder writes both children of
    # every node it creates, so only node 0 (a single-leaf tree sets one child) needs emptying first
    cap = max(n, 1) + subtrees
    fnodes = empty((cap, 16), dtype=float32, device="cpu")
    fnodes.numpy()[0] = empty_nodes(1).view(np.float32)
    inodes = array(ptr=fnodes.ptr, dtype=int32, shape=fnodes.shape, device="cpu", _owner=fnodes)
    parents = zeros(cap, dtype=int32, device="cpu")
    depths = zeros(cap, dtype=int32, device="cpu")

    def run(first: np.ndarray, first_box: np.ndarray, stop_depth: int):
        k = len(first)
        scratch = [zeros((k, STACK, 5), dtype=int32, device="cpu"), zeros((k, 3, NBINS), dtype=vec3, device="cpu"),
                   zeros((k, 3, NBINS), dtype=vec3, device="cpu"), zeros((k, 3, NBINS), dtype=int32, device="cpu"),
                   zeros((k, 1), dtype=float32, device="cpu"), zeros((k, STACK, 4), dtype=vec3, device="cpu")]
        out = zeros((max(subtrees, 1), 6), dtype=int32, device="cpu")
        out_box = zeros((max(subtrees, 1), 4), dtype=vec3, device="cpu")
        info = zeros((k, 3), dtype=int32, device="cpu")
        launch(_build_sah, k, inputs=[lo, hi, perm, fnodes, inodes, parents, depths, *scratch, max_leaf, block,
                                      median_depth, c_trav, array(first, dtype=int32, device="cpu"),
                                      array(first_box, dtype=vec3, device="cpu"), stop_depth, out, out_box,
                                      info], device="cpu", record_tape=False)
        return info.numpy(), out.numpy(), out_box.numpy()

    root = np.array([[0, n, -1, 0, 0, 0]], np.int32)
    info, out, out_box = run(root, np.zeros((1, 4, 3), np.float32), split_depth if split_depth else 1 << 30)
    used = [np.arange(int(info[0, 0]))]  # the nodes of the top
    tasks = out[:int(info[0, 2])]
    if len(tasks):
        first = tasks.copy()
        counts = first[:, 1] - first[:, 0]
        first[:, 4] = int(info[0, 0]) + np.concatenate([[0], np.cumsum(counts)[:-1]])  # each subtree's first node
        sub, _, _ = run(first, out_box[:len(tasks)], 1 << 30)
        used += [np.arange(b, e) for b, e in zip(first[:, 4], sub[:, 0])]
    keep = np.concatenate(used).astype(np.int64)
    nodes = fnodes.numpy()[keep].view(NODE_DTYPE).reshape(-1)  # (a copy: keep is an index array)
    if len(keep) != int(keep[-1]) + 1:  # gaps between the subtrees' ranges: renumber inner children
        remap = np.full(cap, -1, np.int32)
        remap[keep] = np.arange(len(keep), dtype=np.int32)
        links = _links(nodes)
        ch, cn = links[:, :2], links[:, 2:]
        inner = (cn == 0) & (ch >= 0)
        ch[inner] = remap[ch[inner]]
    return nodes, perm.numpy().copy(), depths.numpy()[keep]
