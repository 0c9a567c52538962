"""IsoSurfaceBase: the interface shared by iso-surface extractors of dense 3D fields (``simkit.geometry``).

A backend is built for a grid of ``nx * ny * nz`` nodes; ``surface(field, threshold)`` extracts the
level set ``field == threshold`` into ``.verts`` (array of vec3) and ``.indices`` (flat array of
int32), and the class method ``extract(field, threshold, lower=..., upper=...)`` does the same
without an instance. ``lower`` and ``upper`` are the positions of nodes (0, 0, 0) and
(nx - 1, ny - 1, nz - 1); by default node (i, j, k) sits at (i, j, k). Faces are wound
counter-clockwise seen from the side where the field is >= threshold (outside, for a signed
distance field), and vertex positions are differentiable with respect to the field on a Tape.
"""
from __future__ import annotations

import abc
import operator
import warnings

import numpy as np

from ..kernels import types as T
from ..runtime import array


def deprecated(message: str, stacklevel: int = 2) -> None:
    """Issue a DeprecationWarning through Python's ``warnings`` (so ``pytest.warns`` and warning
    filters see it); ``stacklevel`` counts from the caller of this function, as in ``warnings.warn``."""
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel + 1)


def check_dims(nx, ny, nz, who: str) -> tuple:
    """The grid dimensions as ints. Fewer than 2 nodes on an axis is accepted here (as Warp does) and
    rejected when a field is extracted."""
    try:
        dims = tuple(operator.index(d) for d in (nx, ny, nz))
    except TypeError:
        raise TypeError(f"{who} dimensions must be integers, got ({nx!r}, {ny!r}, {nz!r})") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"{who} dimensions must not be negative, got {dims}")
    return dims


def check_field(field, who: str) -> None:
    """``field`` must be a simkit array3d of float32 with at least 2 nodes (one cell) on each axis."""
    if not isinstance(field, array) or field.is_type:
        raise TypeError(f"{who}: field must be a simkit array3d of float32, got {type(field).__name__}")
    if field.ndim != 3:
        raise ValueError(f"{who}: field must be an array3d (3 dimensions), got shape {field.shape}")
    if any(n < 2 for n in field.shape):
        raise ValueError(f"{who}: the field needs at least 2 nodes on each axis (one cell), got shape {field.shape}")
    if field.dtype is not T.float32:
        raise TypeError(f"{who}: field must be an array3d of float32, got dtype {T.type_name(field.dtype)}")


def check_vec3(value, name: str, who: str) -> np.ndarray:
    """``value`` (a vec3, tuple or array of 3 finite numbers) as float64, else a ValueError naming ``name``."""
    try:
        p = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        p = None
    if p is None or p.shape != (3,) or not np.isfinite(p).all():
        raise ValueError(f"{who}: {name} must be 3 finite numbers (a vec3 or a tuple), got {value!r}")
    return p


def grid_bounds(shape: tuple, lower, upper, who: str) -> tuple:
    """(position of node (0, 0, 0), node spacing per axis) as vec3s. ``lower`` defaults to the origin,
    ``upper`` to (nx - 1, ny - 1, nz - 1): node (i, j, k) at (i, j, k)."""
    n = np.asarray(shape, dtype=np.float64)
    lo = np.zeros(3) if lower is None else check_vec3(lower, "lower", who)
    hi = (n - 1.0) if upper is None else check_vec3(upper, "upper", who)
    return T.vec3(lo), T.vec3((hi - lo) / (n - 1.0))


class IsoSurfaceBase(abc.ABC):
    """Iso-surface extraction for fields of ``nx * ny * nz`` nodes (see the module docstring).

    Attributes: ``nx``, ``ny``, ``nz`` (nodes per axis), ``lower``, ``upper`` (as given, or None),
    ``verts`` (array of vec3, positions) and ``indices`` (array of int32, a face's vertices in turn),
    set by ``surface`` (None before).
    """

    def __init__(self, nx: int, ny: int, nz: int, *, lower=None, upper=None):
        self.nx, self.ny, self.nz = check_dims(nx, ny, nz, type(self).__name__)
        self.lower = lower
        self.upper = upper
        self.verts: array | None = None
        self.indices: array | None = None

    def resize(self, nx: int, ny: int, nz: int) -> None:
        """Use the instance for fields of ``nx * ny * nz`` nodes from the next ``surface`` call on."""
        self.nx, self.ny, self.nz = check_dims(nx, ny, nz, type(self).__name__)

    def _check_field_shape(self, field) -> None:
        shape = getattr(field, "shape", None)
        if isinstance(field, array) and tuple(shape) != (self.nx, self.ny, self.nz):
            raise ValueError(f"{type(self).__name__}.surface: field shape {tuple(shape)} does not match the grid "
                             f"({self.nx}, {self.ny}, {self.nz})")

    @abc.abstractmethod
    def surface(self, field: array, threshold: float):
        """Extract the level set ``field == threshold`` into ``.verts`` and ``.indices``."""

    @classmethod
    @abc.abstractmethod
    def extract(cls, field: array, threshold: float = 0.0, *, lower=None, upper=None) -> tuple:
        """(verts, indices) of the level set ``field == threshold``, without an instance."""
