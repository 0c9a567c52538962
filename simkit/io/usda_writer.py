"""A dependency-free writer of ASCII USD (.usda) stages with time-sampled points.

Any USD viewer (usdview, Omniverse, Blender) plays the result back. For meshes,
transforms and reading stages, use the usd-core based exporter.

Example::

    w = UsdaPointsWriter("out.usda", fps=60, up_axis="Y")
    for frame in range(3):
        w.add_frame(positions, radius=0.05)   # positions: (n, 3)
    w.close()
"""
from __future__ import annotations

import os

import numpy as np


class UsdaPointsWriter:
    """Collects per-frame particle positions, writes one .usda stage on ``close()``."""

    def __init__(self, path: str, *, fps: float = 60.0, up_axis: str = "Y", prim: str = "/World/particles"):
        d = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(d) or not os.access(d, os.W_OK):
            raise OSError(f"cannot write '{path}': directory '{d}' does not exist or is not writable")
        if up_axis not in ("Y", "Z"):
            raise ValueError("up_axis must be 'Y' or 'Z'")
        self.path, self.fps, self.up_axis, self.prim = path, fps, up_axis, prim
        self.frames: list = []
        self.radius = 0.01

    def add_frame(self, positions, radius: float | None = None) -> None:
        p = np.asarray(positions, dtype=np.float32).reshape(-1, 3)
        self.frames.append(p.copy())
        if radius is not None:
            self.radius = float(radius)

    def close(self) -> str:
        if not self.frames:
            raise ValueError("no frames were added")
        parts = self.prim.strip("/").split("/")
        lines = ["#usda 1.0", "(", f'    defaultPrim = "{parts[0]}"', "    startTimeCode = 0",
                 f"    endTimeCode = {len(self.frames) - 1}", f"    timeCodesPerSecond = {self.fps:g}",
                 f'    upAxis = "{self.up_axis}"', "    metersPerUnit = 1", ")", ""]
        depth = 0
        for name in parts[:-1]:
            lines.append("    " * depth + f'def Xform "{name}"')
            lines.append("    " * depth + "{")
            depth += 1
        ind = "    " * depth
        lines.append(ind + f'def Points "{parts[-1]}"')
        lines.append(ind + "{")
        lines.append(ind + "    point3f[] points.timeSamples = {")
        for t, p in enumerate(self.frames):
            pts = ", ".join(f"({x:.6g}, {y:.6g}, {z:.6g})" for x, y, z in p)
            lines.append(ind + f"        {t}: [{pts}],")
        lines.append(ind + "    }")
        n = len(self.frames[-1])
        lines.append(ind + f"    float[] widths = [{', '.join([f'{2 * self.radius:g}'] * n)}]")
        lines.append(ind + "}")
        for _ in parts[:-1]:
            depth -= 1
            lines.append("    " * depth + "}")
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, self.path)
        return self.path
