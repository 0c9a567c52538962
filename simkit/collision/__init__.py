"""Collision layer: spatial data structures and their kernel builtins.

Importing this package registers the geometry builtins and native headers with the
kernel compiler's registry (simkit/kernels knows nothing about grids or meshes).
"""
from .builtins_bvh import BvhQuery
from .builtins_hash_grid import HashGridQuery
from .builtins_mesh import MeshQuery, MeshQueryAABB, MeshQueryPoint, MeshQueryRay
from .bvh import Bvh, is_cubql_available
from .hash_grid import HashGrid
from .marching_cubes import MarchingCubes
from .mesh import Mesh

__all__ = ["Bvh", "BvhQuery", "HashGrid", "HashGridQuery", "MarchingCubes", "Mesh", "MeshQuery", "MeshQueryAABB",
           "MeshQueryPoint", "MeshQueryRay", "is_cubql_available"]
