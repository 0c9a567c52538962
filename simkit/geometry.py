"""Geometry processing: iso-surface extraction from dense 3D fields (Warp's ``warp.geometry``).

    import simkit as sk

    verts, indices = sk.geometry.IsoSurfaceMarchingCubes.extract(field, 0.0, lower=(-1, -1, -1), upper=(1, 1, 1))

``IsoSurfaceBase`` is the interface of the extractors; ``IsoSurfaceMarchingCubes`` is
``simkit.MarchingCubes``; ``IsoSurfaceNets`` gives surface nets (triangles or quads). The
implementations live in ``simkit/collision/``.
"""
from .collision.iso_surface import IsoSurfaceBase
from .collision.lipschitz_octree import lipschitz_octree
from .collision.marching_cubes import IsoSurfaceMarchingCubes
from .collision import surface_nets  # the module too: Warp's tests read its tables
from .collision.surface_nets import IsoSurfaceNets
from .collision.sparse_marching_cubes import sparse_marching_cubes, sparse_marching_cubes_from_cells
from .collision.swept_volume import (SweptVolumeSignMode, swept_volume_bounds, swept_volume_field, swept_volume_mesh,
                                     swept_volume_sdf)
from .collision.tri_topology import find_triangle_neighbor_edge_index, tri_tri_adjacency
from .collision.delaunay import delaunay_edge_flip, in_circle, signed_area

__all__ = ["IsoSurfaceBase", "IsoSurfaceMarchingCubes", "IsoSurfaceNets", "lipschitz_octree", "sparse_marching_cubes",
           "sparse_marching_cubes_from_cells", "SweptVolumeSignMode", "swept_volume_bounds", "swept_volume_field",
           "swept_volume_mesh", "swept_volume_sdf", "tri_tri_adjacency", "find_triangle_neighbor_edge_index",
           "delaunay_edge_flip", "signed_area", "in_circle"]
