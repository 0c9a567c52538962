"""Broad phase for rigid shapes: the pairs whose bounding boxes overlap, found through a ``Bvh``.

    broad = RigidBroadPhase(model)
    pair_array, count = broad.find(body_q)   # int32 [2 * capacity]: (a, b) per pair

Each step the shapes' world boxes (grown by ``margin``) are computed on the device, the tree is
refitted (rebuilt every ``rebuild_every`` calls), and one thread per shape walks the tree for the
shapes it may touch (each pair once, the box first as ``ModelBuilder`` orders pairs; shapes of one
body, of bodies joined by a joint (``model.body_filter``: each body's first joint neighbour) and
pairs of static shapes are skipped). The count is read back, so a capacity too small is
grown and the search repeated: never a silently dropped pair. Not differentiable (pairs are
discrete); the contact kernels that read the pairs are.
"""
from __future__ import annotations

import numpy as np

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..kernels.types import Any
from ..runtime import array, empty, launch, zeros
from .bvh import Bvh


@kernel
def shape_bounds(body_q: array(dtype=Any), shape_body: array(dtype=int), shape_type: array(dtype=int),
                 shape_xform: array(dtype=Any), shape_size: array(dtype=Any), margin: float,
                 lowers: array(dtype=T.vec3), uppers: array(dtype=T.vec3)):
    s = sk.tid()
    xf = shape_xform[s]
    b = shape_body[s]
    if b >= 0:
        xf = sk.transform_multiply(body_q[b], xf)
    size = shape_size[s]
    kind = shape_type[s]
    half = size * 0.0                                   # half extents of the world box about the centre
    if kind == 1:
        m = sk.quat_to_matrix(sk.transform_get_rotation(xf))
        for i in range(3):
            half[i] = sk.abs(m[i, 0]) * size[0] + sk.abs(m[i, 1]) * size[1] + sk.abs(m[i, 2]) * size[2]
    else:
        axis = sk.quat_rotate(sk.transform_get_rotation(xf), size * 0.0 + type(size)(0.0, 1.0, 0.0))
        for i in range(3):
            half[i] = size[0]
            if kind == 2:
                half[i] = half[i] + sk.abs(axis[i]) * size[1]
    c = T.vec3(sk.transform_get_translation(xf))
    h = T.vec3(half) + T.vec3(margin, margin, margin)
    lowers[s] = c - h
    uppers[s] = c + h


@kernel
def collect_pairs(bvh: T.uint64, lowers: array(dtype=T.vec3), uppers: array(dtype=T.vec3),
                  shape_body: array(dtype=int), shape_type: array(dtype=int), body_filter: array(dtype=int),
                  capacity: int, pairs: array(dtype=int), count: array(dtype=int)):
    a = sk.tid()
    ba = shape_body[a]
    query = sk.bvh_query_aabb(bvh, lowers[a], uppers[a])
    b = int(0)
    while sk.bvh_query_next(query, b):
        bb = shape_body[b]
        joined = False
        if ba >= 0 and bb >= 0:
            joined = body_filter[ba] == bb or body_filter[bb] == ba
        if b > a and ba != bb and (ba >= 0 or bb >= 0) and not joined:
            first = a
            second = b
            ta = shape_type[a]
            tb = shape_type[b]
            if (tb == 1 and ta != 1) or (ta == 0 and tb == 2):
                first = b
                second = a
            slot = sk.atomic_add(count, 0, 1)
            if slot < capacity:
                pairs[2 * slot] = first
                pairs[2 * slot + 1] = second


class RigidBroadPhase:
    """The overlapping shape pairs of a model, step by step (see the module docstring)."""

    def __init__(self, model, margin: float = 0.01, rebuild_every: int = 20):
        self.model, self.margin, self.rebuild_every = model, float(margin), int(rebuild_every)
        n = model.rigid_shape_count
        self.lowers = zeros(n, dtype=T.vec3, device=model.device)
        self.uppers = zeros(n, dtype=T.vec3, device=model.device)
        self.capacity = max(4 * n, 16)
        self.count = zeros(1, dtype=T.int32, device=model.device)
        self.bvh = None
        self.buffer = None
        self.calls = 0

    def _bounds(self, body_q):
        m = self.model
        launch(shape_bounds, m.rigid_shape_count, device=m.device,
               inputs=[body_q, m.rigid_shape_body, m.rigid_shape_type, m.rigid_shape_xform, m.rigid_shape_size,
                       self.margin],
               outputs=[self.lowers, self.uppers], record_tape=False)
        if self.bvh is None:
            self.bvh = Bvh(self.lowers, self.uppers)
        elif self.calls % self.rebuild_every == 0:
            self.bvh.rebuild()
        else:
            self.bvh.refit()
        self.calls += 1

    def find(self, body_q, reuse: bool = True):
        """(pairs, count): the ``count`` overlapping pairs of the frames ``body_q``, in a pair array
        kept between calls when ``reuse``, else a new one (a Tape needs every step's own)."""
        m = self.model
        self._bounds(body_q)
        pairs = self.buffer if reuse else None
        while True:
            if pairs is None or pairs.shape[0] < 2 * self.capacity:
                pairs = empty(2 * self.capacity, dtype=T.int32, device=m.device)
                if reuse:
                    self.buffer = pairs
            self.count.zero_()
            launch(collect_pairs, m.rigid_shape_count, device=m.device,
                   inputs=[self.bvh.id, self.lowers, self.uppers, m.rigid_shape_body, m.rigid_shape_type,
                           m.body_filter, self.capacity],
                   outputs=[pairs, self.count], record_tape=False)
            n = int(self.count.numpy()[0])
            if n <= self.capacity:
                return pairs, n
            self.capacity = int(2 ** np.ceil(np.log2(n)))
            pairs = None
