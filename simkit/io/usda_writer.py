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
        return write_points_stage(self.path, {self.prim: (self.frames, self.radius)}, fps=self.fps,
                                  up_axis=self.up_axis)


def _fmt_points(p) -> str:
    return ", ".join(f"({x:.6g}, {y:.6g}, {z:.6g})" for x, y, z in p)


def write_points_stage(path: str, prims: dict, *, fps: float = 60.0, up_axis: str = "Y",
                       times: list | None = None) -> str:
    """Write a .usda stage of time-sampled ``Points`` prims, atomically (temp file + rename).

    ``prims`` maps a prim path (``"/World/particles"``) to ``(frames, radius)``: ``frames`` is a list
    of (n, 3) arrays (one per time code, or ``None`` where the prim has no sample), ``radius`` a
    float. ``times`` are the time codes of the frames (default 0, 1, 2, ...).
    """
    n_frames = max(len(frames) for frames, _ in prims.values())
    times = list(range(n_frames)) if times is None else list(times)
    roots = sorted({p.strip("/").split("/")[0] for p in prims})
    lines = ["#usda 1.0", "(", f'    defaultPrim = "{roots[0]}"', f"    startTimeCode = {times[0]:g}",
             f"    endTimeCode = {times[-1]:g}", f"    timeCodesPerSecond = {fps:g}",
             f'    upAxis = "{up_axis}"', "    metersPerUnit = 1", ")", ""]
    tree: dict = {}
    for prim in prims:  # nested dict of Xform scopes, leaves hold the prim path
        parts = prim.strip("/").split("/")
        node = tree
        for name in parts[:-1]:
            node = node.setdefault(name, {})
        node[parts[-1]] = prim

    def emit(node: dict, depth: int):
        ind = "    " * depth
        for name, child in node.items():
            if isinstance(child, dict):
                lines.extend([ind + f'def Xform "{name}"', ind + "{"])
                emit(child, depth + 1)
                lines.append(ind + "}")
                continue
            frames, radius = prims[child]
            lines.extend([ind + f'def Points "{name}"', ind + "{", ind + "    point3f[] points.timeSamples = {"])
            last = None
            for t, p in zip(times, frames):
                if p is not None:
                    lines.append(ind + f"        {t:g}: [{_fmt_points(np.asarray(p).reshape(-1, 3))}],")
                    last = p
            lines.append(ind + "    }")
            n = 0 if last is None else len(np.asarray(last).reshape(-1, 3))
            lines.append(ind + f"    float[] widths = [{', '.join([f'{2 * radius:g}'] * n)}]")
            lines.append(ind + "}")

    emit(tree, 0)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path
