"""Triangle meshes of the rigid shapes (for USD export and plots): sphere, box, capsule.

    points, indices = shape_mesh(kind, size)     # kind 0 sphere, 1 box, 2 capsule (as in the Model)

``size`` is the shape's ``rigid_shape_size``: (radius, 0, 0), half extents, or (radius, half
height, 0) for a capsule along y. Triangles wind counter-clockwise seen from outside.
"""
from __future__ import annotations

import numpy as np

SPHERE, BOX, CAPSULE = 0, 1, 2


def _lat_long(radius: float, half_height: float, segments: int, rings: int):
    """A sphere of ``radius`` cut at the equator, the halves pulled ``half_height`` apart along y
    (a capsule; a sphere for 0): rings of points from the top pole to the bottom one."""
    rings += rings % 2                                      # an equator ring to split at
    points = [(0.0, radius + half_height, 0.0)]
    for i in range(1, rings):
        phi = np.pi * i / rings
        y = radius * np.cos(phi) + (half_height if i <= rings // 2 else -half_height)
        for j in range(segments):
            th = 2.0 * np.pi * j / segments
            points.append((radius * np.sin(phi) * np.cos(th), y, radius * np.sin(phi) * np.sin(th)))
        if i == rings // 2 and half_height > 0.0:           # the cylinder: the equator twice
            for j in range(segments):
                th = 2.0 * np.pi * j / segments
                points.append((radius * np.cos(th), -half_height, radius * np.sin(th)))
    points.append((0.0, -radius - half_height, 0.0))
    n_rings = (len(points) - 2) // segments
    tris = []
    ring = lambda r, j: 1 + r * segments + j % segments      # noqa: E731
    for j in range(segments):
        tris.append((0, ring(0, j + 1), ring(0, j)))
        tris.append((len(points) - 1, ring(n_rings - 1, j), ring(n_rings - 1, j + 1)))
    for r in range(n_rings - 1):
        for j in range(segments):
            a, b, c, d = ring(r, j), ring(r, j + 1), ring(r + 1, j), ring(r + 1, j + 1)
            tris += [(a, b, d), (a, d, c)]
    return np.asarray(points, dtype=np.float32), np.asarray(tris, dtype=np.int32).reshape(-1)


def shape_mesh(kind: int, size, segments: int = 16, rings: int = 8):
    """(points [n, 3] float32, indices [3m] int32) of a rigid shape in its own frame."""
    if kind == BOX:
        hx, hy, hz = (float(s) for s in size)
        p = np.array([[x, y, z] for x in (-hx, hx) for y in (-hy, hy) for z in (-hz, hz)], dtype=np.float32)
        quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
        return p, np.array([[a, b, c, a, c, d] for a, b, c, d in quads], dtype=np.int32).reshape(-1)
    if kind == SPHERE:
        return _lat_long(float(size[0]), 0.0, segments, rings)
    if kind == CAPSULE:
        return _lat_long(float(size[0]), float(size[1]), segments, rings)
    raise ValueError(f"shape_mesh: unknown shape type {kind}")
