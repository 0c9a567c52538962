"""Recording frames for viewing (Warp's ``warp.render``): :class:`UsdRenderer` writes a USD stage.

    import simkit as wp
    import simkit.render

    renderer = wp.render.UsdRenderer("out.usd")

It is :class:`simkit.io.UsdExporter` with Warp's method names and arguments (``simkit/io/usd_renderer.py``).
Warp's OpenGL viewer is not part of simkit.
"""
from .io.usd_renderer import UsdRenderer

__all__ = ["UsdRenderer"]
