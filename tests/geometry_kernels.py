"""Kernels the iso-surface tests share: a sphere's signed distance sampled on a grid, and a mesh's area (the
gradient tests differentiate the area of an extracted sphere with respect to its radius: 8 pi r)."""
import simkit as wp


@wp.kernel
def sphere_sdf(field: wp.array3d(dtype=float), lower: wp.vec3, delta: wp.vec3, radius: wp.array(dtype=float)):
    i, j, k = wp.tid()
    p = lower + wp.cw_mul(wp.vec3(float(i), float(j), float(k)), delta)
    field[i, j, k] = wp.length(p) - radius[0]


@wp.kernel
def surface_area(verts: wp.array(dtype=wp.vec3), faces: wp.array(dtype=wp.int32), area: wp.array(dtype=float)):
    t = wp.tid()
    a = verts[faces[3 * t]]
    b = verts[faces[3 * t + 1]]
    c = verts[faces[3 * t + 2]]
    wp.atomic_add(area, 0, 0.5 * wp.length(wp.cross(b - a, c - a)))
