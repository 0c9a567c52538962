"""Particle solvers (particles, springs, cloth): semi-implicit Euler and XPBD."""
from .solver_euler import SemiImplicitEulerSolver
from .solver_xpbd import XPBDSolver

__all__ = ["SemiImplicitEulerSolver", "XPBDSolver"]
