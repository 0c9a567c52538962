"""Rigid bodies: spheres, boxes and capsules with penalty contacts (``RigidBodySolver``)."""
from .solver import RigidBodySolver

__all__ = ["RigidBodySolver"]
