"""Model layer: ``ModelBuilder`` collects particles, springs, cloth and colliders; ``finalize()``
gives a ``Model`` of arrays, which makes ``State`` and ``Control`` objects for the solvers."""
from .builder import ModelBuilder
from .model import Model
from .state import Control, State

__all__ = ["ModelBuilder", "Model", "State", "Control"]
