"""Solvers: each advances a ``State`` of a ``Model`` by one time step, differentiably
(``step(model, state_in, state_out, control, dt)``)."""
from .particle import SemiImplicitEulerSolver, XPBDSolver
from .rigid import RigidBodySolver
from .solver import Solver
from .sph import SPHSolver

__all__ = ["Solver", "SemiImplicitEulerSolver", "XPBDSolver", "RigidBodySolver", "SPHSolver"]
