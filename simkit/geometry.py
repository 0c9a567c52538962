"""Geometry processing: iso-surface extraction from dense 3D fields (Warp's ``warp.geometry``).

    import simkit as sk

    verts, indices = sk.geometry.IsoSurfaceMarchingCubes.extract(field, 0.0, lower=(-1, -1, -1), upper=(1, 1, 1))

``IsoSurfaceBase`` is the interface of the extractors; ``IsoSurfaceMarchingCubes`` is
``simkit.MarchingCubes``. The implementations live in ``simkit/collision/``.
"""
from .collision.iso_surface import IsoSurfaceBase
from .collision.marching_cubes import IsoSurfaceMarchingCubes

__all__ = ["IsoSurfaceBase", "IsoSurfaceMarchingCubes"]
