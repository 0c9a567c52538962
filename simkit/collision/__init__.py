"""Collision layer: spatial data structures and their kernel builtins.

Importing this package registers the geometry builtins and native headers with the
kernel compiler's registry (simkit/kernels knows nothing about grids or meshes).
"""
from .builtins_bvh import BvhQuery
from .builtins_mesh import MeshQueryAABB, MeshQueryPoint, MeshQueryRay
from .bvh import Bvh
from .hash_grid import HashGrid
from .marching_cubes import MarchingCubes
from .mesh import Mesh

__all__ = ["Bvh", "BvhQuery", "HashGrid", "MarchingCubes", "Mesh", "MeshQueryAABB", "MeshQueryPoint", "MeshQueryRay"]
