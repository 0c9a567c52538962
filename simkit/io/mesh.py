"""Triangle meshes from files (OBJ, STL, PLY, GLB, OFF, ... through trimesh) as flat arrays.

Requires the ``io`` extra (``pip install -e '.[io]'``); trimesh is imported on first use.

Example::

    points, indices = sk.io.load_mesh("bunny.obj", scale=0.1)    # (n, 3) float32, (3m,) int32
    builder.add_shape_mesh((points, indices), pos=(0.0, 0.5, 0.0))
    # or in one call:
    sk.io.add_mesh_to_builder(builder, "bunny.obj", scale=0.1, pos=(0.0, 0.5, 0.0))
"""
from __future__ import annotations

import os

import numpy as np

__all__ = ["load_mesh", "mesh_arrays", "add_mesh_to_builder"]


def _trimesh():
    try:
        import trimesh
    except ImportError:
        raise ImportError("loading mesh files needs trimesh: pip install -e '.[io]' (or pip install trimesh)") \
            from None
    return trimesh


def mesh_arrays(mesh, *, scale=1.0, name: str = "mesh") -> tuple:
    """``(points, indices)`` of a triangle mesh given as a ``trimesh.Trimesh``, a ``trimesh.Scene``
    (its geometry is concatenated in world space) or a ``(points, indices)`` pair.

    ``points``: vertex positions [m], shape (n, 3), float32 (multiplied by ``scale``, a float or
    a 3-vector). ``indices``: triangle vertex indices, shape (3m,), int32, counter-clockwise
    seen from outside.
    """
    if isinstance(mesh, tuple) and len(mesh) == 2:
        points, faces = (np.asarray(a) for a in mesh)
    else:
        trimesh = _trimesh()
        if isinstance(mesh, trimesh.Scene):
            geoms = [g for g in mesh.dump() if isinstance(g, trimesh.Trimesh)]
            if not geoms:
                kinds = sorted({type(g).__name__ for g in mesh.geometry.values()})
                raise ValueError(f"{name}: the file holds no triangle mesh (only {', '.join(kinds) or 'nothing'})")
            mesh = trimesh.util.concatenate(geoms)
        if not isinstance(mesh, trimesh.Trimesh):
            raise ValueError(f"{name}: expected a triangle mesh, got a {type(mesh).__name__} (no faces)")
        points, faces = np.asarray(mesh.vertices), np.asarray(mesh.faces)
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"{name}: points must have shape (n, 3), got {points.shape}")
    faces = np.asarray(faces)
    if faces.ndim == 2 and faces.shape[1] != 3:
        raise ValueError(f"{name}: faces have {faces.shape[1]} vertices; only triangles are supported")
    if faces.size == 0:
        raise ValueError(f"{name}: the mesh has no triangles")
    if faces.size % 3:
        raise ValueError(f"{name}: {faces.size} indices is not a whole number of triangles")
    if not np.issubdtype(faces.dtype, np.integer):
        raise ValueError(f"{name}: indices must be integers, got {faces.dtype}")
    indices = faces.reshape(-1).astype(np.int32)
    if indices.min() < 0 or indices.max() >= len(points):
        raise ValueError(f"{name}: triangle indices out of range [0, {len(points)})")
    points = points * np.asarray(scale, dtype=np.float64)
    return points.astype(np.float32), indices


def load_mesh(path, *, scale=1.0, merge_vertices: bool = True) -> tuple:
    """Load a triangle mesh file as ``(points (n, 3) float32, indices (3m,) int32)``.

    Any format trimesh reads (OBJ, STL, PLY, OFF, GLB, ...); quads and polygons in OBJ files are
    triangulated; multi-object files are concatenated. ``merge_vertices`` joins coincident vertices
    (STL stores three separate vertices per triangle). Raises ``FileNotFoundError`` for a missing
    file and ``ValueError`` for a file without triangles (a point cloud, a line set, an empty file).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"mesh file not found: '{path}'")
    trimesh = _trimesh()
    try:
        mesh = trimesh.load(path, process=merge_vertices)
    except Exception as e:  # trimesh raises many types for unreadable files
        raise ValueError(f"{path}: cannot read mesh ({type(e).__name__}: {e})") from None
    return mesh_arrays(mesh, scale=scale, name=path)


def add_mesh_to_builder(builder, mesh, *, scale=1.0, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), **kwargs):
    """Add a mesh collision shape to a ``ModelBuilder`` from a file path, a trimesh object or a
    ``(points, indices)`` pair. ``scale`` is applied to the vertices; ``pos`` [m] and ``rot``
    (quaternion x, y, z, w) place the shape; other keywords go to ``builder.add_shape_mesh``.
    Returns what ``add_shape_mesh`` returns (the shape index)."""
    if isinstance(mesh, (str, os.PathLike)):
        points, indices = load_mesh(mesh, scale=scale)
    else:
        points, indices = mesh_arrays(mesh, scale=scale)
    return builder.add_shape_mesh((points, indices), pos=pos, rot=rot, **kwargs)
