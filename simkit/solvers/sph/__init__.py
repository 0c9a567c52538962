"""Smoothed-particle hydrodynamics: ``SPHSolver`` (weakly compressible liquids)."""
from .solver import SPHSolver

__all__ = ["SPHSolver"]
