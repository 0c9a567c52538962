"""lipschitz_octree (``simkit.geometry``): the cells of the finest level of an octree that can still hold
the level set ``field == threshold`` of a Lipschitz-bounded implicit function.

If ``|field(p) - field(q)| <= L * |p - q|`` (``L = lipschitz_bound``; 1 for a signed distance), a box whose
centre value is further than ``L`` times its half diagonal from the threshold holds no point of the level
set, and neither do its sub-boxes. The octree is built top-down: the root is kept when its centre passes
that test, each kept cell is split in 8 and its children's centres are tested, down to ``max_depth``.
The field is called once per level, on all the children's centres at once, so its cost follows the
area of the surface, not the volume of the box. The survivors are compacted with a prefix sum
(``simkit.utils``' scan); their order is their parent's, then x, y, z bits of the child.

``octree_leaves`` is the general form (a box of any aspect ratio: the root spans ``2**depth`` cells of
``step`` per axis) that ``sparse_marching_cubes`` uses on its grids; ``lipschitz_octree`` is the cubic,
public one. Neither is differentiable: which cells survive is a discrete choice. Their kernels are not
recorded on a Tape (the field's own launches are, as the caller wrote them).

Example::

    cells, width = sk.geometry.lipschitz_octree(sdf, (-1.0, -1.0, -1.0), 2.0, max_depth=6)
    # cells: array of vec3i, cell (i, j, k) spans origin + width * [(i, j, k), (i + 1, j + 1, k + 1)]
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ..kernels import kernel
from ..kernels import lang as sk
from ..kernels import types as T
from ..kernels.decorators import Function, Kernel
from ..runtime import array, empty
from ..runtime.device import get_device
from ..utils._common import run
from ..utils.scan import exclusive_scan
from .iso_surface import check_vec3

MAX_DEPTH = 30  # cell subscripts are int32


@kernel
def _child_centres(parents: array(dtype=T.vec3i), origin: T.vec3, step: T.vec3, points: array(dtype=T.vec3)):
    # thread 8 * p + c: child c of parent p (bits of c: x, y, z), at the finer level's subscripts
    i = sk.tid()
    c = i % 8
    sub = 2 * parents[i // 8] + T.vec3i(c & 1, (c >> 1) & 1, (c >> 2) & 1)
    x = T.vec3(float(sub[0]) + 0.5, float(sub[1]) + 0.5, float(sub[2]) + 0.5)
    points[i] = origin + sk.cw_mul(x, step)


@kernel
def _in_band(values: array(dtype=float), threshold: float, radius: float, keep: array(dtype=int)):
    i = sk.tid()
    keep[i] = 0
    if sk.abs(values[i] - threshold) <= radius:
        keep[i] = 1


@kernel
def _compact_children(parents: array(dtype=T.vec3i), keep: array(dtype=int), slot: array(dtype=int),
                      children: array(dtype=T.vec3i)):
    i = sk.tid()
    if keep[i] != 0:
        c = i % 8
        children[slot[i]] = 2 * parents[i // 8] + T.vec3i(c & 1, (c >> 1) & 1, (c >> 2) & 1)


@kernel
def _inside_grid(cells: array(dtype=T.vec3i), ncells: T.vec3i, keep: array(dtype=int)):
    i = sk.tid()
    c = cells[i]
    keep[i] = 0
    if c[0] < ncells[0] and c[1] < ncells[1] and c[2] < ncells[2]:
        keep[i] = 1


@kernel
def _compact_cells(cells: array(dtype=T.vec3i), keep: array(dtype=int), slot: array(dtype=int),
                   out: array(dtype=T.vec3i)):
    i = sk.tid()
    if keep[i] != 0:
        out[slot[i]] = cells[i]


# ---------------------------------------------------------------------------
# Argument checks shared with sparse_marching_cubes


def check_field_callable(field, who: str) -> None:
    """``field`` must be a Python callable on a batch of points (a ``@func`` or a kernel is not)."""
    if isinstance(field, Function):
        raise TypeError(f"{who}: field must be a batched callable points -> values; a single-point @func is not "
                        f"accepted, wrap it in a kernel launched over the points")
    if isinstance(field, Kernel) or not callable(field):
        raise TypeError(f"{who}: field must be a callable taking an array of vec3 points and returning an array "
                        f"of float32 values, got {type(field).__name__}")


def evaluate(field, points: array, who: str) -> array:
    """``field(points)``, checked: an array of float32, one value per point, on the points' device."""
    values = field(points)
    n = points.shape[0]
    if not isinstance(values, array) or values.is_type:
        raise TypeError(f"{who}: field must return a simkit array of float32, got {type(values).__name__}")
    if values.dtype is not T.float32:
        raise TypeError(f"{who}: field must return an array of float32, got dtype {T.type_name(values.dtype)}")
    if values.ndim != 1 or values.shape[0] != n:
        raise ValueError(f"{who}: field returned shape {values.shape} for {n} points, expected ({n},)")
    if values.device != points.device:
        raise ValueError(f"{who}: field returned values on {values.device}, the points are on {points.device}")
    return values


def check_number(value, name: str, who: str, *, positive: bool = False, non_negative: bool = False) -> float:
    """``value`` as a finite float (a Python, numpy or simkit scalar), positive or non-negative if asked."""
    try:
        number = None if isinstance(value, (bool, str, bytes)) else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not math.isfinite(number):
        raise ValueError(f"{who}: {name} must be a finite number, got {value!r}")
    if positive and not number > 0:
        raise ValueError(f"{who}: {name} must be positive, got {value!r}")
    if non_negative and number < 0:
        raise ValueError(f"{who}: {name} must not be negative, got {value!r}")
    return number


# ---------------------------------------------------------------------------


def octree_leaves(field, origin, step, depth: int, threshold: float, lipschitz_bound: float, device,
                  who: str) -> tuple:
    """(leaf cells as an array of vec3i, number of field evaluations). The root spans ``2**depth``
    leaves of ``step`` (vec3, world size of a leaf per axis) from ``origin``; a cell of ``w`` leaves
    per side is kept when its centre value is within ``lipschitz_bound`` times its half diagonal of
    ``threshold``."""
    step64 = np.asarray(step, dtype=np.float64)
    parents = array(np.zeros((1, 3), dtype=np.int32), dtype=T.vec3i, device=device)
    # the root, as the one child of a parent at subscript (0, 0, 0) one level up that covers the box
    points = array(np.asarray(origin, dtype=np.float64)[None] + 0.5 * (1 << depth) * step64[None], dtype=T.vec3,
                   device=device)
    evaluations = 1
    values = evaluate(field, points, who)
    keep = empty(1, dtype=int, device=device)
    radius = lipschitz_bound * 0.5 * (1 << depth) * float(np.linalg.norm(step64))
    run(_in_band, 1, [values, float(threshold), radius, keep], device)
    if int(keep.numpy()[0]) == 0:
        return empty(0, dtype=T.vec3i, device=device), evaluations
    for level in range(1, depth + 1):
        width = 1 << (depth - level)  # a child's width, in leaves
        n = 8 * parents.shape[0]
        points = empty(n, dtype=T.vec3, device=device)
        run(_child_centres, n, [parents, T.vec3(origin), T.vec3(step64 * width), points], device)
        values = evaluate(field, points, who)
        evaluations += n
        keep = empty(n, dtype=int, device=device)
        radius = lipschitz_bound * 0.5 * width * float(np.linalg.norm(step64))
        run(_in_band, n, [values, float(threshold), radius, keep], device)
        slot = empty(n, dtype=int, device=device)
        kept = exclusive_scan(keep, slot)
        children = empty(kept, dtype=T.vec3i, device=device)
        if kept:
            run(_compact_children, n, [parents, keep, slot, children], device)
        parents = children
        if kept == 0:
            break
    return parents, evaluations


def cells_inside(cells: array, ncells: tuple) -> array:
    """The cells with subscripts below ``ncells`` on every axis (the others pad a grid to a power of two)."""
    n = cells.shape[0]
    dev = cells.device
    if n == 0:
        return cells
    keep, slot = empty(n, dtype=int, device=dev), empty(n, dtype=int, device=dev)
    run(_inside_grid, n, [cells, T.vec3i(*ncells), keep], dev)
    kept = exclusive_scan(keep, slot)
    if kept == n:
        return cells
    out = empty(kept, dtype=T.vec3i, device=dev)
    if kept:
        run(_compact_cells, n, [cells, keep, slot, out], dev)
    return out


def lipschitz_octree(field, origin, root_width: float, max_depth: int, threshold: float = 0.0,
                     lipschitz_bound: float = 1.0, device=None) -> tuple:
    """The leaves at ``max_depth`` of an octree over the cube ``[origin, origin + root_width]`` that may
    meet the level set ``field == threshold`` of a field with Lipschitz constant <= ``lipschitz_bound``.

    ``field``: a callable taking an array of vec3 points (on ``device``) and returning an array of
    float32 values, one per point (launch a kernel over the points; the whole search then stays on the
    device). A cell of width ``h`` centred at ``c`` is kept, and split, when
    ``|field(c) - threshold| <= lipschitz_bound * sqrt(3) / 2 * h``: the others hold no point of the
    level set. Parts of the level set outside the root cube are not found.

    Returns ``(cells, cell_width)``: ``cells``, an array of vec3i, the integer subscripts of the leaves
    (leaf ``(i, j, k)`` spans ``origin + cell_width * (i, j, k)`` to ``origin + cell_width * (i + 1, j + 1,
    k + 1)``; empty when the root already fails the test), in the convention of
    ``sparse_marching_cubes_from_cells``, and ``cell_width = root_width / 2**max_depth`` (a float). Not
    differentiable (the choice of cells is discrete); nothing of it is recorded on a Tape.

    Example::

        cells, width = sk.geometry.lipschitz_octree(sdf, (-1.0, -1.0, -1.0), 2.0, max_depth=5)
    """
    who = "lipschitz_octree"
    check_field_callable(field, who)
    origin64 = check_vec3(origin, "origin", who)
    root_width = check_number(root_width, "root_width", who, positive=True)
    try:
        depth = operator.index(max_depth)
    except TypeError:
        raise TypeError(f"{who}: max_depth must be an integer, got {max_depth!r}") from None
    if not 0 <= depth <= MAX_DEPTH:
        raise ValueError(f"{who}: max_depth must be in [0, {MAX_DEPTH}], got {depth}")
    threshold = check_number(threshold, "threshold", who)
    lipschitz_bound = check_number(lipschitz_bound, "lipschitz_bound", who, non_negative=True)
    device = get_device(device)
    cell_width = root_width / (1 << depth)
    cells, _ = octree_leaves(field, origin64, (cell_width,) * 3, depth, threshold, lipschitz_bound, device, who)
    return cells, cell_width
