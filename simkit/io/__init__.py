"""Input/output: scene loading and USD export."""
from .usda_writer import UsdaPointsWriter

__all__ = ["UsdaPointsWriter"]
