"""Spatial-algebra builtins on 6D spatial vectors and 6x6 spatial matrices.

Native code: ``native/spatial.h``. As in Warp, ``spatial_vector`` is
``vector(6, float32)`` laid out (angular, linear): a twist ``(w, v)`` or a
wrench ``(torque, force)``. ``spatial_vector(w, v)`` joins two 3D vectors;
``spatial_vector()`` and the 6-scalar form are the generic vector
constructors. Example::

    @sk.kernel
    def point_velocity(qd: sk.array(dtype=sk.spatial_vector), r: sk.array(dtype=sk.vec3),
                       out: sk.array(dtype=sk.vec3)):
        i = sk.tid()
        out[i] = sk.velocity_at_point(qd[i], r[i])  # v + cross(w, r)
"""
from __future__ import annotations

from .. import types as T
from ..registry import add_builtin, same_as
from ..types import Float, matrix, transformation, vector

SV = vector(6, Float)
V3F = vector(3, Float)
M33F = matrix((3, 3), Float)
_G = "spatial"


def _named(name):
    """Give a result-type function the name the generated docs show."""

    def deco(f):
        f.__name__ = name
        return f

    return deco


@_named("scalar")
def _scalar0(info):
    return T.scalar_of(info.arg_types[0])


@_named("vec3")
def _vec3_of0(info):
    return vector(3, T.scalar_of(info.arg_types[0]))


@_named("mat66")
def _mat66(info):
    return matrix((6, 6), _scalar0(info))


@_named("the constructed type")
def _target(info):
    return info.target


def _spatial_ctor(info) -> bool:
    t = info.target
    return (t is not None and T.is_vector(t) and t._shape == (6,) and len(info.arg_types) == 2
            and all(T.is_vector(a) and a._shape == (3,) and a._dtype is t._dtype for a in info.arg_types))


def _spatial_ctor_native(info, ret):
    return f"sk::spatial_vector<{info.target._dtype._ctype}>"


add_builtin("vector", {"w": V3F, "v": V3F}, _target, native=_spatial_ctor_native,
            constructor=True, match=_spatial_ctor, group=_G,
            doc="spatial_vector(w, v): the 6D vector (w.x, w.y, w.z, v.x, v.y, v.z) joining an angular part "
                "w and a linear part v (twist) or a torque and a force (wrench).")

add_builtin("spatial_top", {"svec": SV}, _vec3_of0, group=_G,
            doc="Components 0..2 of svec: the angular velocity of a twist or the torque of a wrench.")
add_builtin("spatial_bottom", {"svec": SV}, _vec3_of0, group=_G,
            doc="Components 3..5 of svec: the linear velocity of a twist or the force of a wrench.")
add_builtin("spatial_dot", {"a": SV, "b": SV}, _scalar0, group=_G,
            doc="Dot product of two spatial vectors (wrench . twist is power).")
add_builtin("spatial_cross", {"a": SV, "b": SV}, same_as(0), group=_G,
            doc="Motion cross product of twists a = (wa, va), b = (wb, vb): "
                "(wa x wb, va x wb + wa x vb).")
add_builtin("spatial_cross_dual", {"a": SV, "b": SV}, same_as(0), group=_G,
            doc="Force cross product of twist a = (w, v) and wrench b = (n, f): (w x n + v x f, w x f).")
add_builtin("spatial_adjoint", {"r": M33F, "s": M33F}, _mat66, group=_G,
            doc="The 6x6 block matrix [[r, 0], [s, r]]; with r = R and s = skew(p) @ R it maps twists "
                "by the transform (R, p).")
add_builtin("transform_twist", {"t": transformation(Float), "x": SV}, same_as(1), group=_G,
            doc="Twist x = (w, v) expressed in the frame of transform t = (p, q): "
                "(R w, R v + p x (R w)) with R the rotation of q.")
add_builtin("transform_wrench", {"t": transformation(Float), "x": SV}, same_as(1), group=_G,
            doc="Wrench x = (tau, f) expressed in the frame of transform t = (p, q): "
                "(R tau + p x (R f), R f) with R the rotation of q.")
add_builtin("velocity_at_point", {"qd": SV, "r": V3F}, same_as(1), group=_G,
            doc="Linear velocity of the point at offset r from the origin of twist qd = (w, v): v + w x r.")
