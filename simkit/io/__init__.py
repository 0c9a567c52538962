"""Input/output: mesh loading, USD export, plots. usd-core, trimesh and matplotlib are imported on first use."""
from .mesh import add_mesh_to_builder, load_mesh, mesh_arrays
from .plot import plot_curves
from .usd_exporter import UsdExporter
from .usd_loader import UsdLoadResult, load_usd
from .usda_writer import UsdaPointsWriter, write_points_stage

__all__ = ["UsdExporter", "UsdLoadResult", "UsdaPointsWriter", "add_mesh_to_builder", "load_mesh", "load_usd",
           "mesh_arrays", "plot_curves", "write_points_stage"]
