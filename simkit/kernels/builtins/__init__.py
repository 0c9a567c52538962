"""Builtin declarations, one module per domain. Importing this package fills the registry."""
from . import scalar, vector, matrix, quat, transform, spatial, array, atomic, random, utility, cast  # noqa: F401
from . import approx  # noqa: F401 - div_approx, inverse_approx
from . import slots  # noqa: F401 - part-of-element writes (after array and atomic: overloads of theirs)
