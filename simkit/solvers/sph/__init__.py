"""Smoothed-particle hydrodynamics: ``SPHSolver`` (weakly compressible liquids) and ``FluidSurface``
(the liquid's surface as a triangle mesh, for viewing)."""
from .solver import SPHSolver
from .surface import FluidSurface

__all__ = ["FluidSurface", "SPHSolver"]
