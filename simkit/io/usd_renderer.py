"""Warp's ``warp.render.UsdRenderer`` interface, over :class:`~simkit.io.UsdExporter`.

Scripts written for Warp record their frames with it; under simkit (``import simkit as wp`` and
``import simkit.render``) the same calls write the same kind of stage::

    renderer = wp.render.UsdRenderer("example.usd")
    renderer.render_ground()                      # a static quad
    for frame in range(frames):
        renderer.begin_frame(frame / 60.0)
        renderer.render_points("points", x.numpy(), radius=0.05, colors=(0.8, 0.3, 0.2))
        renderer.render_mesh("mesh", points, indices)
        renderer.end_frame()
    renderer.save()

Shapes (``render_box``, ``render_sphere``, ``render_capsule``) are triangle meshes
(``io/shape_meshes.py``) placed by their prim's transform; ``render_ref`` references another USD file
(usd-core). Prims are below ``/root`` and the stage starts at time 0, as Warp's. A frame begun again at the
time of the previous one continues it, as Warp overwrites that frame's samples. Spheres and particles are
meshes and ``Points`` (Warp writes ``Sphere`` prims and point instancers), and per-vertex colours are not
written (one colour per prim is).
"""
from __future__ import annotations

import os

import numpy as np

from .shape_meshes import BOX, CAPSULE, SPHERE, shape_mesh
from .usd_exporter import UsdExporter

__all__ = ["UsdRenderer"]


class UsdRenderer(UsdExporter):
    """Warp's ``UsdRenderer(stage, up_axis="Y", fps=60, scaling=1.0)``; ``stage`` is the path of the file written
    by :meth:`save` (.usd, .usda, .usdc)."""

    def __init__(self, stage, up_axis: str = "Y", fps: float = 60, scaling: float = 1.0, **kwargs):
        if not isinstance(stage, (str, os.PathLike)):
            raise TypeError(f"UsdRenderer: stage must be a file path (simkit writes the stage itself), got "
                            f"{type(stage).__name__}")
        if kwargs:
            raise TypeError(f"UsdRenderer() got an unexpected keyword argument '{next(iter(kwargs))}'")
        super().__init__(stage, fps=fps, up_axis=str(up_axis).upper(), root="root")  # (Warp's prim paths)
        self.start_time_code = 0  # (as Warp's stages: they start at time 0)
        self.scaling = float(scaling)
        if self.scaling != 1.0:
            self.render_transform("", scale=(self.scaling,) * 3)  # (the root prim: everything below it)

    def _path(self, name: str) -> str:
        return f"/{self.root}" if str(name).strip("/") == "" else super()._path(name)

    def begin_frame(self, time: float | None = None) -> None:
        """Start the frame at ``time`` [s]; the time of the previous frame continues that frame."""
        if time is not None and self.times and self._time is None \
                and round(float(time) * self.fps, 6) == self.times[-1]:
            self._time = self.times[-1]
            return
        super().begin_frame(time)

    def save(self) -> str:
        """Write the stage (Warp's name for :meth:`close`)."""
        return self.close()

    def render_points(self, name: str, points, radius=0.01, colors=None, as_spheres: bool = True,
                      visible: bool = True) -> None:
        """Particles; ``colors``: one RGB colour for all of them (a colour per point is not written)."""
        super().render_points(name, points, radius)
        self._color(name, colors)

    def render_mesh(self, name: str, points, indices, colors=None, pos=(0.0, 0.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0),
                    scale=(1.0, 1.0, 1.0), update_topology: bool = False, smooth_shading: bool = True,
                    visible: bool = True, **kwargs) -> None:
        """A triangle mesh at ``pos`` / ``rot`` (quaternion x, y, z, w) / ``scale``; its topology is written
        again when it changes (``update_topology`` is implied)."""
        color = _one_color(colors)
        super().render_mesh(name, points, indices, pos=pos, rot=rot, scale=scale, color=color)

    def render_ground(self, size: float = 100.0, plane=None) -> None:
        """A square of ``size`` [m] at height 0, normal to the up axis (``plane`` is not supported)."""
        if plane is not None:
            raise ValueError("render_ground: only the ground at height 0 normal to the up axis (plane=None)")
        h = 0.5 * float(size)
        if self.up_axis == "Y":
            points = [(-h, 0.0, -h), (-h, 0.0, h), (h, 0.0, h), (h, 0.0, -h)]
        else:
            points = [(-h, -h, 0.0), (h, -h, 0.0), (h, h, 0.0), (-h, h, 0.0)]
        super().render_mesh("ground", np.asarray(points, np.float32), [0, 1, 2, 0, 2, 3], color=(0.6, 0.6, 0.6))

    def render_box(self, name: str, pos, rot, extents, parent_body=None, is_template: bool = False,
                   color=None) -> None:
        """A box of half ``extents`` at ``pos`` / ``rot``."""
        self._shape(name, BOX, extents, pos, rot, color)

    def render_sphere(self, name: str, pos, rot, radius: float, parent_body=None, is_template: bool = False,
                      color=None) -> None:
        self._shape(name, SPHERE, (radius, 0.0, 0.0), pos, rot, color)

    def render_capsule(self, name: str, pos, rot, radius: float, half_height: float, parent_body=None,
                       is_template: bool = False, up_axis: int = 1, color=None) -> None:
        """A capsule of ``radius`` whose segment of ``2 * half_height`` lies along axis ``up_axis`` (0, 1, 2)."""
        if up_axis not in (0, 1, 2):
            raise ValueError(f"render_capsule: up_axis must be 0, 1 or 2, got {up_axis!r}")
        self._shape(name, CAPSULE, (radius, half_height, 0.0), pos, rot, color, axis=up_axis)

    def render_ref(self, name: str, path: str, pos, rot, scale, color=None) -> None:
        """The stage at ``path`` referenced under ``name``, placed at ``pos`` / ``rot`` / ``scale`` (usd-core)."""
        self._check_open()
        self._need_pxr("render_ref")
        from pxr import UsdGeom

        prim_path = self._path(name)
        xf = UsdGeom.Xform.Define(self._stage, prim_path)
        if (prim_path, "reference") not in self._last:
            xf.GetPrim().GetReferences().AddReference(os.fspath(path))
            self._last[(prim_path, "reference")] = (os.fspath(path), None)
        self._xform(xf, prim_path, pos, rot, scale)

    def _shape(self, name, kind, size, pos, rot, color, axis: int = 1):
        points, indices = shape_mesh(kind, size)
        if axis != 1:  # (shape_mesh's capsules lie along y)
            points = np.roll(points, axis - 1, axis=1)
        self.render_mesh(name, points, indices, colors=color, pos=pos, rot=rot)

    def _color(self, name: str, colors) -> None:
        color = _one_color(colors)
        if color is None or self.backend != "pxr":
            return
        from pxr import Gf, UsdGeom, Vt

        prim = UsdGeom.Gprim(self._stage.GetPrimAtPath(self._path(name)))
        prim.GetDisplayColorAttr().Set(Vt.Vec3fArray([Gf.Vec3f(*color)]))


def _one_color(colors):
    """An RGB triple from ``colors`` when it is one colour, else None."""
    if colors is None:
        return None
    c = np.asarray(colors, dtype=np.float32)
    return tuple(float(v) for v in c) if c.shape == (3,) else None
