"""Builtin declarations, one module per domain. Importing this package fills the registry."""
from . import scalar, vector, matrix, quat, transform, spatial, array, atomic, random, utility, cast  # noqa: F401
