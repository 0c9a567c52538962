"""XPBD contacts between particles and rigid bodies' shapes, both ways.

The particles step first, against the bodies' shapes at their predicted end-of-step poses (each
body keeping its velocity). Each iteration, a particle in contact with a shape is moved out by its
share of the separation, ``w_p / (w_p + N w_b)`` (``w_b``: the body's generalized inverse mass at
the contact point along the normal; ``N``: the body's contacts in this iteration, among which its
mass is split), with position-level Coulomb friction relative to the body's material point there.
The body gets the opposite of the momentum the particle's (averaged) correction takes, and
``move_bodies`` moves its predicted pose by the sum: momentum is kept at every iteration, and the
split mass keeps the sum from overshooting (Tonge et al. 2012, mass splitting). Shapes are tested
only where a particle is inside their bounding sphere (``shape_bounds``, once per iteration).

When the particles are done, ``coupling_wrench`` turns each body's pushed pose into the wrench
that gives it that motion over the step, and the body step (``rigid/xpbd.py``) applies it together
with gravity, solving its own contacts and joints with it: a load resting on a body that rests on
the ground is held by the same solve that holds the body.
"""
from __future__ import annotations

from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array
from ..rigid.kernels import point_velocity, shape_frame
from ..rigid.kernels_coupling import particle_shape_contact
from ..rigid.kernels_xpbd import moved_pose, point_weight, pose_velocity, world_inverse_inertia
from .kernels_xpbd import friction_correction


@kernel
def shape_bounds(body_q: array(dtype=Any), shape_body: array(dtype=int), shape_type: array(dtype=int),
                 shape_xform: array(dtype=Any), shape_size: array(dtype=Any), center: array(dtype=Any),
                 bound: array(dtype=Any)):
    # each rigid shape's bounding sphere (a box's corner distance; a capsule's half length and radius)
    s = sk.tid()
    size = shape_size[s]
    r = size[0]
    if shape_type[s] == 1:
        r = sk.length(size)
    elif shape_type[s] == 2:
        r = size[0] + size[1]
    center[s] = sk.transform_get_translation(shape_frame(body_q, shape_body, shape_xform, s))
    bound[s] = r


@func
def shape_contact(x: array(dtype=Any), radius: array(dtype=Any), body_q: array(dtype=Any),
                  shape_body: array(dtype=int), shape_type: array(dtype=int), shape_xform: array(dtype=Any),
                  shape_size: array(dtype=Any), center: array(dtype=Any), bound: array(dtype=Any), i: int, s: int):
    """(depth, normal pushing the particle, point, body) of particle ``i`` and rigid shape ``s``; a
    depth of -1 when the particle is outside the shape's bounding sphere (``shape_bounds``)."""
    xi = x[i]
    r = radius[i]
    depth = r * 0.0 - 1.0
    n = xi * 0.0
    p = xi * 0.0
    if sk.length(xi - center[s]) < bound[s] + r:
        xf = shape_frame(body_q, shape_body, shape_xform, s)
        depth, n, p = particle_shape_contact(xi, r, shape_type[s], xf, shape_size[s])
    return depth, n, p, shape_body[s]


@kernel
def count_particle_body_contacts(x: array(dtype=Any), inv_mass: array(dtype=Any), radius: array(dtype=Any),
                                 body_q: array(dtype=Any), body_inv_mass: array(dtype=Any),
                                 shape_body: array(dtype=int), shape_type: array(dtype=int),
                                 shape_xform: array(dtype=Any), shape_size: array(dtype=Any),
                                 center: array(dtype=Any), bound: array(dtype=Any), count: array(dtype=Any),
                                 body_contacts: array(dtype=Any)):
    # the first pass: each contact adds 1 to its particle's count (after every other contact has)
    # and to its body's (the body's mass is split among them in the second pass)
    i, s = sk.tid()
    if inv_mass[i] == 0.0:
        return
    depth, n, p, b = shape_contact(x, radius, body_q, shape_body, shape_type, shape_xform, shape_size, center,
                                   bound, i, s)
    if depth > 0.0:
        sk.atomic_add(count, i, count.dtype(1.0))
        if b >= 0:
            if body_inv_mass[b] > 0.0:
                sk.atomic_add(body_contacts, b, body_contacts.dtype(1.0))


@kernel
def solve_particle_body_contacts(x: array(dtype=Any), x_start: array(dtype=Any), inv_mass: array(dtype=Any),
                                 radius: array(dtype=Any), particle_mu: Any, body_q: array(dtype=Any),
                                 body_qd: array(dtype=Any), body_com: array(dtype=Any),
                                 body_inv_mass: array(dtype=Any), body_inv_inertia: array(dtype=Any),
                                 shape_body: array(dtype=int), shape_type: array(dtype=int),
                                 shape_xform: array(dtype=Any), shape_size: array(dtype=Any),
                                 center: array(dtype=Any), bound: array(dtype=Any),
                                 shape_material: array(dtype=Any), count: array(dtype=Any),
                                 body_contacts: array(dtype=Any), dt: Any, delta: array(dtype=Any),
                                 body_delta: array(dtype=Any)):
    # the second pass: particle i against rigid shape s. The body's inverse mass is multiplied by its
    # number of contacts (mass splitting), so that the sum of its corrections never overshoots; the
    # particle's share goes into delta (averaged over its count), the body's into body_delta (summed:
    # the opposite of the particle's averaged momentum change, in pose_delta's form)
    i, s = sk.tid()
    w = inv_mass[i]
    if w == 0.0:
        return
    xi = x[i]
    depth, n, p, b = shape_contact(x, radius, body_q, shape_body, shape_type, shape_xform, shape_size, center,
                                   bound, i, s)
    if depth <= 0.0:
        return
    vb, c = point_velocity(body_q, body_qd, body_com, b, p)
    wb = w * 0.0
    if b >= 0:
        wb = point_weight(c, sk.transform_get_rotation(body_q[b]), body_inv_mass[b], body_inv_inertia[b], p, n)
        if wb > 0.0:
            wb = wb * body_contacts[b]
    mu = (particle_mu + shape_material[s][3]) * 0.5
    slip = (xi - x_start[i]) - vb * dt          # relative to the body's material point
    lam = (n * depth + friction_correction(n, slip, depth, mu)) / (w + wb)
    sk.atomic_add(delta, i, lam * w)
    if wb > 0.0:
        impulse = -lam / count[i]               # on the body, [kg m]: what the particle's average takes
        r = sk.transform_get_rotation(body_q[b])
        turn = world_inverse_inertia(r, body_inv_inertia[b]) * sk.cross(p - c, impulse) * 0.5
        sk.atomic_add(body_delta, b, T.vector(turn[0], turn[1], turn[2], impulse[0] * body_inv_mass[b],
                                              impulse[1] * body_inv_mass[b], impulse[2] * body_inv_mass[b]))


@kernel
def move_bodies(body_q: array(dtype=Any), body_com: array(dtype=Any), delta: array(dtype=Any),
                q_out: array(dtype=Any)):
    # every body moved by the sum of its contacts' corrections
    i = sk.tid()
    q_out[i] = moved_pose(body_q[i], body_com[i], delta[i])


@kernel
def coupling_wrench(q_pred: array(dtype=Any), q_pushed: array(dtype=Any), body_com: array(dtype=Any),
                    inv_mass: array(dtype=Any), inertia: array(dtype=Any), dt: Any, f_out: array(dtype=Any)):
    # the wrench that, over dt, gives a body the velocity change its pushes by the particles amount
    # to (predicted pose -> pushed pose in dt); the body step then moves it with its own contacts
    i = sk.tid()
    d = pose_velocity(q_pred[i], q_pushed[i], body_com[i], dt)
    f = d * 0.0
    if inv_mass[i] > 0.0:
        r = sk.transform_get_rotation(q_pred[i])
        torque = sk.quat_rotate(r, inertia[i] * sk.quat_rotate_inv(r, sk.spatial_top(d))) / dt
        force = sk.spatial_bottom(d) / (inv_mass[i] * dt)
        f = T.vector(torque[0], torque[1], torque[2], force[0], force[1], force[2])
    f_out[i] = f
