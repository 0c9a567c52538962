"""Particles against rigid shapes: penalty contacts whose reactions act on the bodies.

A particle (a sphere of its radius) against every rigid shape: a sphere or capsule through the
closest point of its segment, a box through its closest point (``box_sphere``). The force on the
particle is ``contact_force`` with the shape's material and the particle's velocity relative to
the shape's material point; the body gets the opposite force at the contact point (and its
torque), so momentum is conserved.
"""
from __future__ import annotations

from ...collision.rigid_contacts import box_sphere, segment_end, sphere_sphere
from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels.types import Any
from ...runtime import array
from ..particle.kernels_contact import contact_force
from .kernels import point_velocity, shape_frame


@func
def particle_shape_contact(x: Any, r: Any, kind: int, xf: Any, size: Any):
    """(depth, normal pushing the particle away, contact point) of a particle (a sphere of centre
    ``x``, radius ``r``) and a rigid shape of type ``kind`` at the world frame ``xf``: a box through
    its closest point, a sphere or capsule through the closest point of its segment."""
    depth = r * 0.0
    n = x * 0.0
    p = x * 0.0
    if kind == 1:
        depth, nb, p = box_sphere(xf, size, x, r)
        n = -nb
    else:
        a = segment_end(kind, xf, size, 0)
        b = segment_end(kind, xf, size, 1)
        ab = b - a
        t = r * 0.0
        ll = sk.dot(ab, ab)
        if ll > 0.0:
            t = sk.clamp(sk.dot(x - a, ab) / ll, r * 0.0, r * 0.0 + 1.0)
        depth, n, p = sphere_sphere(x, r, a + ab * t, size[0])
    return depth, n, p


@kernel
def eval_particle_body_contacts(particle_q: array(dtype=Any), particle_qd: array(dtype=Any),
                                particle_radius: array(dtype=Any), particle_inv_mass: array(dtype=Any),
                                body_q: array(dtype=Any), body_qd: array(dtype=Any), body_com: array(dtype=Any),
                                shape_body: array(dtype=int), shape_type: array(dtype=int),
                                shape_xform: array(dtype=Any), shape_size: array(dtype=Any),
                                shape_material: array(dtype=Any), particle_f: array(dtype=Any),
                                body_f: array(dtype=Any)):
    i, s = sk.tid()
    if particle_inv_mass[i] == 0.0:
        return
    xf = shape_frame(body_q, shape_body, shape_xform, s)
    depth, n, p = particle_shape_contact(particle_q[i], particle_radius[i], shape_type[s], xf, shape_size[s])
    if depth <= 0.0:
        return
    bi = shape_body[s]
    vb, c = point_velocity(body_q, body_qd, body_com, bi, p)
    mat = shape_material[s]
    fc = contact_force(n, particle_qd[i] - vb, -depth, mat[0], mat[1], mat[2], mat[3])
    sk.atomic_add(particle_f, i, fc)
    if bi >= 0:
        sk.atomic_sub(body_f, bi, type(body_qd[bi])(sk.cross(p - c, fc), fc))
