"""Swept volumes of rigid meshes (Warp 1.19's ``warp.geometry.swept_volume_*``): the region covered by a set of
:class:`Mesh` es moving through sampled rigid poses, as a signed-distance field and as a triangle mesh.

    import simkit as sk

    xforms = np.zeros((1, 16, 7), np.float32)                # (num_meshes, num_samples, 7): xyz, quaternion xyzw
    xforms[..., 6] = 1.0
    xforms[0, :, 0] = np.linspace(0.0, 1.0, 16)             # slide the mesh one unit along x
    verts, indices = sk.geometry.swept_volume_mesh([mesh], xforms, voxel_size=0.05)

The field at a point ``p`` is the smallest signed distance over every mesh ``m`` and every pose ``X[m, s]``:
``min_m min_s sdf_m(X[m, s]^-1 p)`` ("dense time stamping"). The motion is rigid, so the query point is taken into
each mesh's rest frame and one closest-point query of the rest mesh (``mesh_query_point*``) evaluates one pose: the
meshes are never moved nor rebuilt. Only the sampled poses count: motion between two samples is not bounded, so a
fast or thin mesh needs fine sampling (else the envelope shows "stroboscopic" gaps).

``swept_volume_sdf`` evaluates one point inside kernels of your own; ``swept_volume_field`` samples it on a grid,
``swept_volume_mesh`` extracts that grid's level set with :class:`IsoSurfaceMarchingCubes`, and
``swept_volume_bounds`` gives the world box of every mesh over every pose (to size grids shared by several calls).
None of them is differentiable (the fields are built forward only).
"""
from __future__ import annotations

import enum
import math
import numbers

import numpy as np

from ..kernels import constant, func, kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..runtime import array, empty, launch
from ..runtime.device import get_device
from .iso_surface import check_vec3
from .marching_cubes import IsoSurfaceMarchingCubes
from .mesh import Mesh


class SweptVolumeSignMode(enum.IntEnum):
    """How each mesh's closest-point query tells inside from outside (an ``IntEnum``: its members are ints, so
    ``int(mode)`` goes straight into a kernel).

    ``NORMAL``: the side of the closest face (``mesh_query_point_sign_normal``; needs a closed, consistently
    wound mesh). ``WINDING_NUMBER``: the generalized winding number (``mesh_query_point_sign_winding_number``;
    robust on open shells; the mesh must be built with ``support_winding_number=True``). ``PARITY``: the
    parity of ray crossings (``mesh_query_point_sign_parity``). ``NO_SIGN``: unsigned distance, positive
    everywhere (``mesh_query_point_no_sign``): only a positive level of it is a surface.
    """

    NORMAL = 0
    WINDING_NUMBER = 1
    PARITY = 2
    NO_SIGN = 3


_NORMAL = constant(0)
_WINDING_NUMBER = constant(1)
_PARITY = constant(2)


# ---------------------------------------------------------------------------
# Kernel API


@func
def _rest_distance(mesh: T.uint64, x: T.vec3, max_dist: T.float32, sign_mode: T.int32) -> T.float32:
    """Signed distance from ``x`` (rest frame) to one mesh; ``max_dist`` when no face is within ``max_dist``."""
    if sign_mode == _WINDING_NUMBER:
        qw = sk.mesh_query_point_sign_winding_number(mesh, x, max_dist)
        if qw.result:
            return qw.sign * sk.length(x - sk.mesh_eval_position(mesh, qw.face, qw.u, qw.v))
    elif sign_mode == _NORMAL:
        qn = sk.mesh_query_point_sign_normal(mesh, x, max_dist)
        if qn.result:
            return qn.sign * sk.length(x - sk.mesh_eval_position(mesh, qn.face, qn.u, qn.v))
    elif sign_mode == _PARITY:
        qp = sk.mesh_query_point_sign_parity(mesh, x, max_dist)
        if qp.result:
            return qp.sign * sk.length(x - sk.mesh_eval_position(mesh, qp.face, qp.u, qp.v))
    else:
        qu = sk.mesh_query_point_no_sign(mesh, x, max_dist)
        if qu.result:
            return sk.length(x - sk.mesh_eval_position(mesh, qu.face, qu.u, qu.v))
    return max_dist


@func
def swept_volume_sdf(point: T.vec3, mesh_ids: array(dtype=T.uint64), transforms: array(dtype=T.transform, ndim=2),
                     max_dist: T.float32, sign_mode: T.int32) -> T.float32:
    """Swept-volume signed distance at ``point`` (world space): the minimum, over every mesh ``m`` of
    ``mesh_ids`` and every pose ``transforms[m, s]`` (rest space to world space), of the mesh's signed distance
    at ``transforms[m, s]^-1 * point``. Callable from kernels; not differentiable.

    ``max_dist`` bounds each closest-point search: a query that finds no face within it has no sign either and
    counts as ``+max_dist``, so a point deep inside the union reads ``+max_dist`` as a far one does; pass a bound
    that reaches the geometry from the whole region of interest (the array-level functions do). ``sign_mode``
    is ``int(SweptVolumeSignMode.X)``.
    """
    best = max_dist
    for m in range(mesh_ids.shape[0]):
        for s in range(transforms.shape[1]):
            x = sk.transform_point(sk.transform_inverse(transforms[m, s]), point)
            best = sk.min(best, _rest_distance(mesh_ids[m], x, max_dist, sign_mode))
    return best


# ---------------------------------------------------------------------------
# Kernels of the array-level functions


@kernel(enable_backward=False)
def _rest_box(points: array(dtype=T.vec3), m: int, boxes: array(dtype=float)):
    """Per mesh ``m``: boxes[6m : 6m + 3] = min of the points, boxes[6m + 3 : 6m + 6] = max."""
    i = sk.tid()
    p = points[i]
    for c in range(3):
        sk.atomic_min(boxes, 6 * m + c, p[c])
        sk.atomic_max(boxes, 6 * m + 3 + c, p[c])


@kernel(enable_backward=False)
def _posed_box(transforms: array(dtype=T.transform, ndim=2), boxes: array(dtype=float), out: array(dtype=float)):
    """Union of the 8 corners of mesh m's rest box moved by pose (m, s): out[0:3] min, out[3:6] max."""
    m, s = sk.tid()
    tr = transforms[m, s]
    for corner in range(8):
        rest = T.vec3(boxes[6 * m + 3 * (corner & 1)], boxes[6 * m + 1 + 3 * ((corner >> 1) & 1)],
                      boxes[6 * m + 2 + 3 * ((corner >> 2) & 1)])
        p = sk.transform_point(tr, rest)
        for c in range(3):
            sk.atomic_min(out, c, p[c])
            sk.atomic_max(out, 3 + c, p[c])


@kernel(enable_backward=False)
def _sample_field(mesh_ids: array(dtype=T.uint64), transforms: array(dtype=T.transform, ndim=2), lower: T.vec3,
                  delta: T.vec3, max_dist: float, sign_mode: int, field: array(dtype=float, ndim=3)):
    i, j, k = sk.tid()
    p = lower + sk.cw_mul(T.vec3(float(i), float(j), float(k)), delta)
    field[i, j, k] = swept_volume_sdf(p, mesh_ids, transforms, max_dist, sign_mode)


# ---------------------------------------------------------------------------
# Argument checks


def _check_meshes(meshes, device, who: str) -> tuple:
    """(meshes as a list, the device): a non-empty sequence of simkit Meshes on one device."""
    if isinstance(meshes, Mesh):
        raise TypeError(f"{who}: meshes must be a sequence of simkit Mesh objects (wrap a single mesh in a list)")
    try:
        meshes = list(meshes)
    except TypeError:
        raise TypeError(f"{who}: meshes must be a sequence of simkit Mesh objects, got {type(meshes).__name__}") \
            from None
    if not meshes:
        raise ValueError(f"{who}: meshes is empty (give at least one Mesh)")
    for i, m in enumerate(meshes):
        if not isinstance(m, Mesh):
            raise TypeError(f"{who}: meshes[{i}] must be a simkit Mesh, got {type(m).__name__}")
    dev = meshes[0].device if device is None else get_device(device)
    for i, m in enumerate(meshes):
        if m.device != dev:
            raise ValueError(f"{who}: meshes[{i}] is on {m.device.alias}, the call runs on {dev.alias} (a mesh can "
                             "only be queried on its own device)")
    return meshes, dev


def _check_transforms(transforms, num_meshes: int, device, who: str) -> array:
    """``transforms`` as a simkit array2d of transform on ``device``, shape (num_meshes, num_samples)."""
    if isinstance(transforms, array) and not transforms.is_type and transforms.dtype is T.transform:
        if transforms.ndim != 2:
            raise ValueError(f"{who}: transforms must be an array2d of transform (num_meshes, num_samples), got "
                             f"shape {transforms.shape}")
        out, shape = transforms, tuple(transforms.shape)
    else:
        data = transforms.numpy() if isinstance(transforms, array) else transforms
        try:
            data = np.asarray(data, dtype=np.float32)
        except (TypeError, ValueError):
            raise TypeError(f"{who}: transforms must be an array2d of transform or an array of shape (num_meshes, "
                            f"num_samples, 7), got {type(transforms).__name__}") from None
        if data.ndim != 3 or data.shape[2] != 7:
            raise ValueError(f"{who}: transforms must have shape (num_meshes, num_samples, 7) (translation xyz, "
                             f"quaternion xyzw), got {data.shape}")
        if not np.isfinite(data).all():
            raise ValueError(f"{who}: transforms holds non-finite values")
        out, shape = None, data.shape[:2]
    if shape[0] != num_meshes:
        raise ValueError(f"{who}: transforms has {shape[0]} rows of poses, one per mesh is needed ({num_meshes} "
                         "meshes)")
    if shape[1] < 1:
        raise ValueError(f"{who}: transforms has no pose samples (shape {shape})")
    if out is None:
        return array(np.ascontiguousarray(data), dtype=T.transform, device=device)
    return out if out.device == device else out.to(device)


def _check_sign_mode(sign_mode, meshes, who: str) -> SweptVolumeSignMode:
    try:
        mode = SweptVolumeSignMode(sign_mode)
    except ValueError:
        raise ValueError(f"{who}: sign_mode must be a SweptVolumeSignMode, got {sign_mode!r}") from None
    if mode == SweptVolumeSignMode.WINDING_NUMBER:
        for i, m in enumerate(meshes):
            if not m.support_winding_number:
                raise ValueError(f"{who}: sign_mode WINDING_NUMBER needs meshes built with "
                                 f"support_winding_number=True (meshes[{i}] is not); build them so or pick another "
                                 "sign_mode")
    return mode


def _check_sizing(voxel_size, resolution, lower, upper, who: str):
    """(voxel_size as a float or None, resolution as 3 ints or None, (lower, upper) as float64 or None)."""
    if voxel_size is not None and resolution is not None:
        raise ValueError(f"{who}: pass voxel_size or resolution, not both")
    if voxel_size is None and resolution is None:
        raise ValueError(f"{who}: pass voxel_size (cell edge length) or resolution (node counts) to size the grid")
    if (lower is None) != (upper is None):
        raise ValueError(f"{who}: pass both lower and upper, or neither")
    box = None
    if lower is not None:
        if voxel_size is not None:
            raise ValueError(f"{who}: voxel_size cannot be combined with explicit lower/upper (the domain could not "
                             "be grown to whole cells); pass resolution instead")
        box = check_vec3(lower, "lower", who), check_vec3(upper, "upper", who)
        if not (box[1] > box[0]).all():
            raise ValueError(f"{who}: upper must exceed lower on every axis, got lower={tuple(box[0])}, "
                             f"upper={tuple(box[1])}")
    if voxel_size is not None:
        if isinstance(voxel_size, bool) or not isinstance(voxel_size, numbers.Real) \
                or not math.isfinite(voxel_size) or voxel_size <= 0.0:
            raise ValueError(f"{who}: voxel_size must be a positive finite number, got {voxel_size!r}")
        voxel_size = float(voxel_size)
    if resolution is not None:
        res = tuple(resolution) if isinstance(resolution, (tuple, list, np.ndarray)) else None
        if res is None or len(res) != 3 or not all(isinstance(n, numbers.Integral) and not isinstance(n, bool)
                                                   for n in res):
            raise ValueError(f"{who}: resolution must be 3 integers (nx, ny, nz), got {resolution!r}")
        if min(res) < 2:
            raise ValueError(f"{who}: resolution needs at least 2 nodes on each axis, got {tuple(res)}")
        resolution = tuple(int(n) for n in res)
    return voxel_size, resolution, box


# ---------------------------------------------------------------------------
# Python API


def _bounds(meshes, transforms: array, device) -> tuple:
    """(lower, upper) float64 numpy world box of every mesh over every pose (kernels; one read-back)."""
    boxes = array(np.tile(np.array([np.inf] * 3 + [-np.inf] * 3, np.float32), len(meshes)), dtype=float,
                  device=device)
    for m, mesh in enumerate(meshes):
        launch(_rest_box, dim=mesh.points.shape[0], inputs=[mesh.points, m, boxes], device=device, record_tape=False)
    out = array(np.array([np.inf] * 3 + [-np.inf] * 3, np.float32), dtype=float, device=device)
    launch(_posed_box, dim=transforms.shape, inputs=[transforms, boxes, out], device=device, record_tape=False)
    box = out.numpy().astype(np.float64)
    return box[:3], box[3:]


def swept_volume_bounds(meshes, transforms, padding: float = 0.0, device=None) -> tuple:
    """World-space axis-aligned box of every mesh over every pose, grown by ``padding`` on every side.

    Each mesh's rest vertices are reduced to a box whose 8 corners are moved by every pose of that mesh, and
    the union of those corners is taken (in kernels). Union several calls' boxes to give
    :func:`swept_volume_field` one ``lower`` / ``upper`` for fields that must share a grid.

    Args:
        meshes: sequence of rest-pose :class:`Mesh` es.
        transforms: poses, see :func:`swept_volume_field`.
        padding: growth on every side, in world units.
        device: where to run (default: the first mesh's device).

    Returns:
        ``(lower, upper)`` as vec3s.
    """
    who = "swept_volume_bounds"
    meshes, dev = _check_meshes(meshes, device, who)
    tr = _check_transforms(transforms, len(meshes), dev, who)
    if isinstance(padding, bool) or not isinstance(padding, numbers.Real) or not math.isfinite(padding):
        raise ValueError(f"{who}: padding must be a finite number, got {padding!r}")
    lo, hi = _bounds(meshes, tr, dev)
    return T.vec3(lo - padding), T.vec3(hi + padding)


def _domain(lo, hi, margin: float, voxel_size, resolution, who: str) -> tuple:
    """(shape, lower, upper) of a grid around the box [lo, hi] grown by ``margin`` plus about two cells."""
    ext = (hi - lo) + 2.0 * margin
    if voxel_size is not None:
        h = voxel_size
        cells = np.maximum(np.ceil(ext / h - 1e-6), 0.0) + 4.0  # two cells of padding on each side
        shape = tuple(int(c) + 1 for c in cells)
        total = (cells * h).astype(np.float64)
        center = 0.5 * (lo + hi)
        lower = center - 0.5 * total
        upper = lower + total
    else:
        shape = resolution
        n = np.array(resolution, dtype=np.float64)
        pad = np.minimum(2.0, np.floor((n - 2.0) / 2.0))  # padding cells on each side
        floor = max(float(ext.max()) * 1e-3, 1e-6)  # a flat axis still gets a cell size
        h = np.maximum(ext, floor) / (n - 1.0 - 2.0 * pad)
        lower = 0.5 * (lo + hi) - 0.5 * (n - 1.0) * h  # (centred: lo - margin - pad * h on an axis not flat)
        upper = lower + (n - 1.0) * h
    nodes = float(np.prod(np.asarray(shape, dtype=np.float64)))
    if nodes > 2.0**31:
        raise ValueError(f"{who}: the grid would have {shape} nodes; pass a larger voxel_size or a resolution")
    return shape, lower, upper


def _field(meshes, tr: array, dev, shape, lower, upper, box, mode) -> array:
    """The swept-volume field on the grid; ``box`` = the swept bounds (sizes the closest-point searches)."""
    lower32, upper32 = T.vec3(lower), T.vec3(upper)
    delta = T.vec3((np.asarray(upper32, np.float64) - np.asarray(lower32, np.float64)) / (np.array(shape) - 1.0))
    # every node reaches every posed mesh within the diagonal of the union of the grid box and the swept box
    span = np.maximum(upper, box[1]) - np.minimum(lower, box[0])
    max_dist = 1.01 * float(np.linalg.norm(span)) + 1e-3
    ids = array(np.array([m.id for m in meshes], dtype=np.uint64), dtype=T.uint64, device=dev)
    field = empty(shape, dtype=float, device=dev)
    launch(_sample_field, dim=shape, inputs=[ids, tr, lower32, delta, max_dist, int(mode), field], device=dev,
           record_tape=False)
    return field


def swept_volume_field(meshes, transforms, voxel_size: float | None = None, *, resolution=None, lower=None,
                       upper=None, sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER,
                       device=None) -> tuple:
    """The swept-volume signed distance (:func:`swept_volume_sdf`) sampled on a regular grid.

    Negative inside the volume swept by the meshes, positive outside (positive everywhere with ``NO_SIGN``).
    Every node takes one closest-point query per (mesh, pose): cost grows with nodes x meshes x samples.

    Args:
        meshes: sequence of rest-pose :class:`Mesh` es, all on ``device``.
        transforms: pose ``s`` of mesh ``m`` (rest space to world space, unit quaternions): an array2d of
            transform of shape ``(num_meshes, num_samples)``, or anything numpy reads as shape
            ``(num_meshes, num_samples, 7)`` (translation xyz, then quaternion xyzw).
        voxel_size: cell edge length: the grid covers the swept bounds plus about two cells on each side, grown
            to a whole number of cells, so the spacing is exactly ``voxel_size`` on every axis. Not with
            ``lower`` / ``upper``.
        resolution: node counts ``(nx, ny, nz)`` (at least 2 each), instead of ``voxel_size``; the spacing of
            each axis follows from its extent.
        lower, upper: world positions of nodes ``(0, 0, 0)`` and ``(nx-1, ny-1, nz-1)`` (both or neither; with
            ``resolution``), used as given: fields of several calls can share a grid (see
            :func:`swept_volume_bounds`). Default: the swept bounds, padded.
        sign_mode: a :class:`SweptVolumeSignMode`; the default ``WINDING_NUMBER`` needs meshes built with
            ``support_winding_number=True``.
        device: where to build the field (default: the first mesh's device).

    Returns:
        ``(field, lower, upper)``: an array3d of float32 and the vec3 positions of its first and last nodes.
    """
    field, lower, upper, _ = _swept_field(meshes, transforms, voxel_size, resolution, lower, upper, 0.0, sign_mode,
                                          device, "swept_volume_field")
    return field, lower, upper


def _swept_field(meshes, transforms, voxel_size, resolution, lower, upper, margin, sign_mode, device, who):
    meshes, dev = _check_meshes(meshes, device, who)
    voxel_size, resolution, box = _check_sizing(voxel_size, resolution, lower, upper, who)
    tr = _check_transforms(transforms, len(meshes), dev, who)
    mode = _check_sign_mode(sign_mode, meshes, who)
    bounds = _bounds(meshes, tr, dev)
    if box is None:
        shape, lo, hi = _domain(bounds[0], bounds[1], margin, voxel_size, resolution, who)
    else:
        shape, (lo, hi) = resolution, box
    field = _field(meshes, tr, dev, shape, lo, hi, bounds, mode)
    return field, T.vec3(lo), T.vec3(hi), mode


def swept_volume_mesh(meshes, transforms, voxel_size: float | None = None, *, resolution=None, lower=None,
                      upper=None, threshold: float = 0.0,
                      sign_mode: SweptVolumeSignMode = SweptVolumeSignMode.WINDING_NUMBER, device=None) -> tuple:
    """Triangle mesh of the volume swept by the meshes through their poses (the motion envelope).

    Samples :func:`swept_volume_field` and extracts its ``threshold`` level set with
    :class:`IsoSurfaceMarchingCubes`: one mesh, in world coordinates, wound counter-clockwise seen from outside.

    Args:
        meshes, transforms, voxel_size, resolution, sign_mode, device: as :func:`swept_volume_field`.
        lower, upper: grid corners, as :func:`swept_volume_field`. Default: the swept bounds padded by
            ``threshold`` plus about two cells, so the level set is not clipped (given corners make that
            padding yours).
        threshold: the level extracted. 0 follows the envelope of the sampled poses; a positive level dilates
            it. The grid only guarantees that the mesh encloses every sampled pose for ``threshold > 0.5 *
            |(hx, hy, hz)|`` (half a cell diagonal). ``NO_SIGN`` needs ``threshold > 0``.

    Returns:
        ``(vertices, indices)``: an array of vec3 and a flat array of int32, 3 per triangle.

    Example::

        tet = sk.Mesh(sk.array(points, dtype=sk.vec3), sk.array(faces, dtype=sk.int32), support_winding_number=True)
        xforms = np.zeros((1, 8, 7), np.float32)
        xforms[..., 6] = 1.0
        xforms[0, :, 0] = np.linspace(0.0, 1.0, 8)
        verts, indices = sk.geometry.swept_volume_mesh([tet], xforms, voxel_size=0.05, threshold=0.045)
    """
    who = "swept_volume_mesh"
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real) or not math.isfinite(threshold):
        raise ValueError(f"{who}: threshold must be a finite number, got {threshold!r}")
    try:
        unsigned = SweptVolumeSignMode(sign_mode) == SweptVolumeSignMode.NO_SIGN
    except ValueError:
        unsigned = False  # (reported by the field's checks)
    if unsigned and threshold <= 0.0:
        raise ValueError(f"{who}: sign_mode NO_SIGN gives a field >= 0 everywhere; its level set needs a positive "
                         f"threshold, got {threshold}")
    field, lo, hi, _ = _swept_field(meshes, transforms, voxel_size, resolution, lower, upper,
                                    max(float(threshold), 0.0), sign_mode, device, who)
    return IsoSurfaceMarchingCubes.extract(field, float(threshold), lower=lo, upper=hi)
