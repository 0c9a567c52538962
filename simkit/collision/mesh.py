"""Mesh: a triangle mesh with a BVH, for closest-point, ray, sign and box queries in kernels (host side).

Example (the same kernel runs under ``import warp as wp``)::

    import simkit as wp

    @wp.kernel
    def sdf(mesh: wp.uint64, xs: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_point(mesh, xs[i], 1.0e6)
        if q.result:
            cp = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
            out[i] = wp.length(xs[i] - cp) * q.sign

    points = wp.array(vertices, dtype=wp.vec3, requires_grad=True)   # [m], shape [num_points]
    mesh = wp.Mesh(points, wp.array(faces.ravel(), dtype=wp.int32))  # 3 vertex indices per face
    wp.launch(sdf, dim=n, inputs=[mesh.id, xs, out])
    ...                       # move the points (same array), then
    mesh.refit()

Gradients of the point/ray queries and ``mesh_eval_*`` with respect to the vertex positions
accumulate into ``points.grad`` (when ``points.requires_grad``), as the Tape runs adjoints.

A kinematic or deforming collider under a Tape: each step write the new positions into the same
``points`` array (``assign``, or a launch with ``record_tape=False``) and call ``refit()`` inside
``with tape:``. The first launch the Tape records against a refit clones the points (and velocities)
it was refit from -- one clone per refit queried inside a Tape, none outside one -- and the next
refit inside the Tape records a restore: ``backward()`` writes the clone back and refits before the
adjoints of that step's launches run, so every step is differentiated against its own geometry.
Points changed without a refit after a recorded query, or a refit outside the Tape, still make
``backward()`` raise TapeError (see runtime/handles.py).
"""
from __future__ import annotations

import struct as _struct

import numpy as np

from ..kernels import types as T
from ..runtime import array, empty, launch
from ..runtime.device import get_device
from . import bvh_build as B
from .bvh import build, check_constructor, check_finite, check_groups, check_vec3_array, tree_groups
from ..runtime import handles
from ..runtime.tape import active_tape
from .descriptor import Descriptor

_MESH_T = _struct.Struct("<QQQQQii" "QQii" "QQQQQQ" "fiii")  # sk::mesh_t (136 bytes)
assert _MESH_T.size == 136
# SAH cost of a node visit relative to one leaf test (all 8 faces of a block at once: the SAH counts faces in
# blocks, bvh_build._blocks). It is above 1, so a node of at most bvh_leaf_size faces is always a leaf: leaves
# of up to 8 faces measured fastest for point and ray queries.
C_TRAV = 4.0


class Mesh:
    """A triangle mesh: ``points`` (array of vec3), ``indices`` (int32 array, 3 per face, counter-clockwise
    seen from outside for inside/outside queries), optional per-vertex ``velocities`` (vec3).

    ``support_winding_number=True`` stores the per-node data that
    ``mesh_query_point_sign_winding_number`` needs (else that query signs by ray votes, as in Warp).
    Arguments follow Warp's ``Mesh``; ``bvh_constructor`` "sah" (default) | "median" ("lbvh" builds the
    SAH tree), ``bvh_leaf_size`` at most 8 faces per leaf (the default); ``device`` defaults to the
    arrays' device. ``groups`` (an int32 array, one group id >= 0 per face) builds every group's faces
    into one subtree: ``mesh_get_group_root(id, group)`` gives the ``root`` of that group's ray queries.

    Tape: moving ``points`` in place and calling ``refit()`` inside ``with tape:`` is differentiated
    exactly (each step's adjoints run against that step's geometry); it costs one clone of the points
    (and velocities) per refit that a recorded launch queried. ``backward()`` leaves the mesh -- and the
    values in ``points`` -- as the earliest launch on the Tape that queried it saw (the rollout's first
    step; a HashGrid is likewise left as built before the Tape's first build), so a second
    ``backward()`` over those steps raises TapeError: record the rollout again. Vertex gradients of all
    the steps add up in the one ``points.grad`` (as in Warp; a kinematic collider's points usually
    need no gradient).
    """

    def __init__(self, points: array, indices: array, velocities: array | None = None,
                 support_winding_number: bool = False, bvh_constructor: str | None = None,
                 bvh_leaf_size: int | None = None, groups=None, *, device=None):
        bvh_constructor = check_constructor(bvh_constructor, groups, "Mesh")
        bvh_leaf_size = B.LANES if bvh_leaf_size is None else int(bvh_leaf_size)
        check_vec3_array("points", points, "Mesh")
        if not isinstance(indices, array) or indices.is_type or not T.is_int(indices.dtype):
            raise TypeError(f"Mesh: indices must be a simkit array of int32, got "
                            f"{getattr(indices, 'dtype', type(indices).__name__)}")
        self.device = get_device(device) if device is not None else points.device
        for name, a in (("points", points), ("indices", indices), ("velocities", velocities)):
            if a is not None and a.device != self.device:
                raise ValueError(f"Mesh: {name} is on {a.device.alias}, the mesh on {self.device.alias}")
        idx = indices.numpy().reshape(-1)
        if indices.dtype is not T.int32 or not indices.is_contiguous or indices.ndim != 1:
            indices = array(idx.astype(np.int32), dtype=T.int32, device=self.device)
        if idx.size % 3:
            raise ValueError(f"Mesh: the index count ({idx.size}) is not a multiple of 3")
        if idx.size == 0:
            raise ValueError("Mesh: no faces (indices is empty)")
        pts = points.numpy()
        if idx.min() < 0 or idx.max() >= pts.shape[0]:
            bad = (idx < 0) | (idx >= pts.shape[0])
            k = int(np.argmax(bad))
            raise ValueError(f"Mesh: indices[{k}] = {int(idx[k])} is out of range for {pts.shape[0]} points "
                             f"({int(bad.sum())} bad indices in all)")
        check_finite("points", pts, "Mesh")
        if velocities is not None:
            check_vec3_array("velocities", velocities, "Mesh")
            if velocities.shape != points.shape:
                raise ValueError(f"Mesh: velocities has {velocities.shape[0]} entries, points {points.shape[0]}")
        if not 1 <= bvh_leaf_size <= B.LANES:
            raise ValueError(f"Mesh: bvh_leaf_size must be in [1, {B.LANES}], got {bvh_leaf_size}")
        self._points, self.indices, self._velocities = points, indices, velocities
        self.support_winding_number = bool(support_winding_number)
        nf = idx.size // 3
        # face boxes (the build's items) and the mean edge length, on the CPU
        cpu_idx = indices if self.device.is_cpu else array(idx, dtype=T.int32, device="cpu")
        cpu_pts = points if self.device.is_cpu else array(pts, dtype=T.vec3, device="cpu")
        lo, hi = empty(nf, dtype=T.vec3, device="cpu"), empty(nf, dtype=T.vec3, device="cpu")
        perimeter = empty(nf, dtype=T.float32, device="cpu")
        launch(B._face_boxes, nf, inputs=[cpu_idx, cpu_pts, lo, hi, perimeter], device="cpu", record_tape=False)
        self._edge_len = float(perimeter.numpy().mean(dtype=np.float64) / 3.0)
        self._tree = build(lo, hi, self.device, bvh_constructor, int(bvh_leaf_size), C_TRAV, lanes=B.LANES,
                           groups=check_groups(groups, nf, "Mesh"))
        slots = self._tree.prims.shape[0]  # leaves padded to blocks of B.LANES faces
        prims = self._tree.prims.numpy()
        vids = idx.reshape(-1, 3).take(np.maximum(prims, 0), axis=0)  # vertex indices of each slot's face
        vids[prims < 0] = -1  # padding (refits gather real slots only)
        self._vids = array(vids, dtype=T.int32, device=self.device)
        self._leaves = array(self._tree.leaves_numpy(B.LANES), dtype=T.int32, device=self.device)
        # (refits write every slot: padding slots get NaN faces and empty boxes)
        self._tris = empty((slots // B.LANES, 9 * B.LANES), dtype=T.float32, device=self.device)
        self._items = empty((slots, 2), dtype=T.vec3, device=self.device)  # (lo, hi) per slot, interleaved
        self._item_lo, self._item_hi = self._items[:, 0], self._items[:, 1]
        self._wn = (empty((self._tree.num_nodes, 16), dtype=T.float32, device=self.device)
                    if self.support_winding_number else None)
        self._desc = Descriptor(_MESH_T.size, self.device)
        handles.register(self, self.id)
        self.refit()

    @property
    def id(self) -> int:
        """The handle kernels take (a uint64: the address of the native descriptor)."""
        return self._desc.ptr

    @property
    def num_faces(self) -> int:
        return self.indices.shape[0] // 3

    @property
    def points(self) -> array:
        """The vertex positions (vec3 array). Moved in place, they need ``refit()``; assigning a new array (same
        device and length) refits the mesh from it, as in Warp."""
        return self._points

    @points.setter
    def points(self, points: array):
        self._check_replacement("points", points)
        self._points = points
        self.refit()

    @property
    def velocities(self) -> array | None:
        """The per-vertex velocities (vec3 array, or None). Assigning a new one (same device, one per point) or
        None refits the mesh (so that a Tape records the change)."""
        return self._velocities

    @velocities.setter
    def velocities(self, velocities: array | None):
        if velocities is not None:
            self._check_replacement("velocities", velocities)
        self._velocities = velocities
        self.refit()  # (rewrites the descriptor; under a Tape, records the change like a refit)

    def _check_replacement(self, name: str, a):
        check_vec3_array(name, a, "Mesh")
        if a.device != self.device:
            raise ValueError(f"Mesh: the new {name} are on {a.device.alias}, the mesh on {self.device.alias}")
        if a.ndim != 1 or a.shape[0] != self._points.shape[0]:
            raise ValueError(f"Mesh: the new {name} have shape {a.shape}, the points {self._points.shape}")

    def refit(self):
        """Recompute the face data and every box of the tree from the current ``points`` (same topology).

        Inside a Tape, a refit after the points changed is undone for ``backward()`` (see the class)."""
        prev = getattr(self, "_tape_state", None)
        self._refit()
        sources = [self.points, self.velocities]
        if prev is not None and handles.same(prev, handles.state_of(sources, *prev.extra)):
            return  # refit from the same data: the same state
        self._tape_state = handles.state_of(sources, handles.Snapshot())  # (see runtime/handles.py)
        tape = active_tape()
        if tape is not None and prev is not None and handles.token(prev).values is not None:
            tape._record_restore(self, prev)  # (prev has values once a recorded launch queried it)

    def _tape_restore(self, state):
        """Put the mesh back into an earlier state (``Tape.backward()``, for a refit inside the Tape)."""
        self._tape_state = handles.restore(state)
        self._points, self._velocities = (state.sources + (None,))[:2]
        self._refit()

    def _refit(self):
        tree, dev = self._tree, self.device
        launch(B._gather_faces, self._leaves.shape[0], inputs=[self._leaves, self._vids, self.points, self._tris,
                                                              self._item_lo, self._item_hi, tree.boxes],
               device=dev, record_tape=False)
        tree.refit(self._item_lo, self._item_hi, dev, leaves_done=True)
        if self._wn is not None:
            tree.refit_levels(B._refit_dipoles, [self._tris, self._wn], dev)
        self._write_descriptor()

    def _write_descriptor(self):
        tree, p = self._tree, self.points
        grad = p.grad.ptr if (p.requires_grad and p.grad is not None) else 0
        vel = self.velocities.ptr if self.velocities is not None else 0
        wn = self._wn.ptr if self._wn is not None else 0
        self._desc.write(_MESH_T.pack(tree.ptr, tree.prims.ptr, self._item_lo.ptr, self._item_hi.ptr,
                                      tree.wide.ptr, tree.num_nodes, self.num_faces, *tree_groups(tree), 0,
                                      self._tris.ptr, p.ptr, grad, vel,
                                      self.indices.ptr, wn, self._edge_len, p.shape[0], self.num_faces, 0))
