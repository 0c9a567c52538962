"""XPBD for rigid bodies: contact projections with position-level Coulomb friction, the pose and
velocity updates.

A body's pose is worked on as (centre of mass, rotation); a correction is an impulse ``P`` [kg m]
at a point ``p``: the centre moves by ``P / m``, the rotation by the small angle
``I^-1 ((p - c) x P)`` (world frame). For a unit direction ``n`` at ``p`` the generalized inverse
mass is ``1 / m + (r x n) . I^-1 (r x n)``; a hard constraint ``C`` moves by ``-C`` with
``P = n C / (w_a + w_b)`` (Mueller et al. 2020, "Detailed rigid body simulation with extended
position based dynamics").

A kernel thread takes a group of contacts between the same two bodies (``kernels_xpbd_gather.py``)
and projects them in turn on copies of the two poses (Gauss-Seidel), on accumulated impulses; the
group's net change of each pose (``pose_delta``) goes into ``delta``, and ``apply_body_deltas``
moves each body by the average of what it received (one group per body per launch when the groups
are coloured). Each contact's depth is ``n . (p_b - p_a)`` at the current poses. The first sweep
of a (sub)step starts each contact from the impulses it ended the one before with
(``warm_contacts``, ``keep_contacts``). Nothing is updated in place, so the Tape differentiates
the whole step, warm starts included.
"""
from __future__ import annotations

from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array, array2d
from .kernels import point_velocity, rotation_rate
from .kernels_joints import body_frame


@func
def frame_point(body_q: Any, b: int, local: Any):
    """The point ``local`` of body ``b`` (its frame) in world coordinates; world points for b < 0."""
    p = local
    if b >= 0:
        p = sk.transform_point(body_q[b], local)
    return p


@func
def moved_since(body_q0: Any, b: int, c: Any, r: Any, lc: Any, p: Any):
    """How far the material point of body ``b`` now at world ``p`` (the body's centre of mass ``c``,
    rotation ``r``, local centre ``lc``) moved since the poses ``body_q0``; zero for the world. A
    round shape's contact point is a different material point every step as it rolls: its slip is
    this point's, not the first one's."""
    d = p * 0.0
    if b >= 0:
        d = p - sk.transform_point(body_q0[b], lc + sk.quat_rotate_inv(r, p - c))
    return d


@func
def point_moved(body_q: Any, body_q0: Any, b: int, p: Any):
    """``moved_since`` for body ``b`` at its pose ``body_q[b]``."""
    d = p * 0.0
    if b >= 0:
        d = moved_since(body_q0, b, sk.transform_get_translation(body_q[b]), sk.transform_get_rotation(body_q[b]),
                        p * 0.0, p)
    return d


@func
def turn(r: Any, inv_i: Any, impulse: Any):
    """The rotation, after the angular impulse ``impulse`` [world], of a body with rotation ``r`` and
    body-frame inverse inertia ``inv_i`` (it turns by the small angle I^-1 impulse)."""
    dth = sk.quat_rotate(r, inv_i * sk.quat_rotate_inv(r, impulse))
    return sk.normalize(r + type(r)(dth, impulse[0] * 0.0) * r * 0.5)


@func
def pose_delta(c1: Any, r1: Any, c0: Any, r0: Any):
    """The change from (centre of mass c0, rotation r0) to (c1, r1) as a spatial vector: the vector
    part of r1 r0^-1 (w >= 0; ``moved_pose`` turns it back into a rotation) and c1 - c0."""
    dq = r1 * sk.quat_inverse(r0)
    if dq[3] < 0.0:
        dq = -dq
    dx = c1 - c0
    return T.vector(dq[0], dq[1], dq[2], dx[0], dx[1], dx[2])


@func
def angular_weight(r: Any, inv_i: Any, n: Any):
    """Generalized inverse mass for a unit angular impulse about ``n`` (body rotation ``r``)."""
    u = sk.quat_rotate_inv(r, n)
    return sk.dot(u, inv_i * u)


@func
def point_weight(com: Any, r: Any, inv_m: Any, inv_i: Any, p: Any, n: Any):
    """Generalized inverse mass for a unit impulse along ``n`` at ``p`` (centre of mass ``com``)."""
    return inv_m + angular_weight(r, inv_i, sk.cross(p - com, n))


@func
def world_inverse_inertia(r: Any, inv_i: Any):
    """The inverse inertia ``inv_i`` (body frame) in world axes for a body with rotation ``r``."""
    m = sk.quat_to_matrix(r)
    return m * inv_i * sk.transpose(m)


@func
def point_inverse_mass(c: Any, r: Any, inv_m: Any, inv_i: Any, p: Any):
    """The 3x3 map from an impulse at ``p`` to the displacement of the body's point there:
    ``m^-1 I - [p - c] I^-1 [p - c]`` (I^-1 in world axes; zero for the world)."""
    arm = sk.skew(p - c)
    return sk.diag(type(p)(inv_m, inv_m, inv_m)) - arm * world_inverse_inertia(r, inv_i) * arm


@func
def turn_share(ca: Any, ra: Any, ia: Any, pa: Any, cb: Any, rb: Any, ib: Any, pb: Any, impulse: Any):
    """The share of ``impulse`` (at ``pa`` on a, opposite at ``pb`` on b) that turns neither body by
    more than 0.05 rad: the corrections are linear in the angle, so a larger turn (a slender body
    spun about its long axis) would miss its target and the next one overshoot."""
    turn_a = sk.length(sk.quat_rotate(ra, ia * sk.quat_rotate_inv(ra, sk.cross(pa - ca, impulse))))
    turn_b = sk.length(sk.quat_rotate(rb, ib * sk.quat_rotate_inv(rb, sk.cross(pb - cb, impulse))))
    most = sk.max(turn_a, turn_b)
    limit = most * 0.0 + 0.05
    f = most * 0.0 + 1.0
    if most > limit:
        f = limit / most
    return f


@func
def push(ca: Any, ra: Any, ma: Any, ia: Any, pa: Any, cb: Any, rb: Any, mb: Any, ib: Any, pb: Any, impulse: Any):
    """The two bodies' (centre of mass, rotation) after ``impulse`` at ``pa`` on a and its opposite at
    ``pb`` on b."""
    return (ca + impulse * ma, turn(ra, ia, sk.cross(pa - ca, impulse)), cb - impulse * mb,
            turn(rb, ib, sk.cross(pb - cb, -impulse)))


@func
def group_bodies(c_body: Any, first: int, group_size: int):
    """The two bodies of the contact group whose slots begin at ``first`` (-1: the world; an empty
    group: -1, -1, as its empty slots hold)."""
    a = int(-1)
    b = int(-1)
    for k in range(group_size):
        a = sk.max(a, c_body[first + k, 0])
        b = sk.max(b, c_body[first + k, 1])
    return a, b


@func
def body_state(body_q: Any, body_com: Any, inv_mass: Any, inv_inertia: Any, b: int, like: Any):
    """(centre of mass, rotation, local centre of mass, inverse mass, inverse inertia) of body
    ``b``; the world's (b < 0) has no mass and the identity frame. ``like``: any body index >= 0."""
    ic = inv_inertia[like] * 0.0
    lc = body_com[like] * 0.0
    xf = body_frame(body_q, b, body_q[like])
    im = ic[0, 0]
    if b >= 0:
        ic = inv_inertia[b]
        lc = body_com[b]
        im = inv_mass[b]
    return sk.transform_point(xf, lc), sk.transform_get_rotation(xf), lc, im, ic


@func
def contact_points(ca: Any, ra: Any, la: Any, cb: Any, rb: Any, lb: Any, c_pa: Any, c_pb: Any, c_n: Any, c_rad: Any,
                   s: int):
    """Contact slot ``s``'s points on a and on b (world) at the poses (centre of mass, rotation, local
    centre) of a and b; a round shape's point is the centre of its sphere less its radius along n."""
    return (ca + sk.quat_rotate(ra, c_pa[s] - la) - c_n[s] * c_rad[s, 0],
            cb + sk.quat_rotate(rb, c_pb[s] - lb) + c_n[s] * c_rad[s, 1])


@func
def contact_depth(body_q0: Any, a: int, b: int, ca: Any, ra: Any, la: Any, cb: Any, rb: Any, lb: Any, c_pa: Any,
                  c_pb: Any, c_n: Any, c_rad: Any, s: int, recover: Any):
    """Contact slot ``s``'s depth ``n . (p_b - p_a)`` at the poses of a and b, less what of its depth
    at the step's start ``body_q0`` is beyond ``recover`` (parted in later steps)."""
    pa, pb = contact_points(ca, ra, la, cb, rb, lb, c_pa, c_pb, c_n, c_rad, s)
    n = c_n[s]
    depth = sk.dot(n, pb - pa)
    begun = sk.dot(n, frame_point(body_q0, b, c_pb[s]) - frame_point(body_q0, a, c_pa[s])) + c_rad[s, 0] + c_rad[s, 1]
    return depth - sk.max(begun - recover, depth * 0.0)


@kernel
def solve_contact_groups(body_q: array(dtype=Any), body_q0: array(dtype=Any), body_com: array(dtype=Any),
                         inv_mass: array(dtype=Any), inv_inertia: array(dtype=Any), groups: array(dtype=int),
                         group_size: int, c_body: array2d(dtype=int), c_pa: array(dtype=Any), c_pb: array(dtype=Any),
                         c_n: array(dtype=Any), c_mu: array2d(dtype=Any), c_rad: array2d(dtype=Any),
                         body_qd_pre: array(dtype=Any), reverse: int,
                         warm: int, held: array(dtype=Any), recover: Any, impact: Any, support: array(dtype=int),
                         up: Any,
                         lam_in: array2d(dtype=Any),
                         delta: array(dtype=Any), count: array(dtype=Any), lam_out: array2d(dtype=Any)):
    # one group of contacts between the same two bodies (a shape pair's candidates, a shape's ground
    # or mesh candidates), in turn (Gauss-Seidel) on copies of the two poses: a holding contact's
    # point is moved out by its depth and back by its slip since the step began (3x3 point solve);
    # a sliding one gets the normal its depth asks for and friction on the edge of its cone. A
    # contact already deeper than ``recover`` [m] when the step began is pushed out by that much
    # only (the rest in later steps): the push becomes velocity, and all at once an overlap of 1 cm
    # resolved in a substep of 1/240 s sends bodies apart at 2.4 m/s.
    # lam: each contact's impulses this step so far (normal, then the friction vector); like
    # projected Gauss-Seidel on accumulated impulses, a correction may take back part of an earlier
    # one (the normal total stays >= 0, the friction within mu times it)
    # (the groups of one colour: no two share a movable body; lam is indexed per launch)
    tid = sk.tid()
    if groups[tid] < 0:         # (a GPU's colour lists are padded with -1: contact_coloring.py)
        return
    first = groups[tid] * group_size
    a, b = group_bodies(c_body, first, group_size)
    if a < 0 and b < 0:
        return
    like = sk.max(a, b)
    ca, ra, la, ma, ia = body_state(body_q, body_com, inv_mass, inv_inertia, a, like)
    cb, rb, lb, mb, ib = body_state(body_q, body_com, inv_mass, inv_inertia, b, like)
    ca0 = ca
    cb0 = cb
    ra0 = ra
    rb0 = rb
    if warm != 0:
        # the first sweep starts from the impulses of the step before (``warm_contacts``): apply them
        for k in range(group_size):
            s = first + k
            e = tid * group_size + k
            if c_body[s, 0] == a and c_body[s, 1] == b:
                p = c_n[s] * lam_in[e, 0] + type(c_n[s])(lam_in[e, 1], lam_in[e, 2], lam_in[e, 3])
                pa, pb = contact_points(ca, ra, la, cb, rb, lb, c_pa, c_pb, c_n, c_rad, s)
                ca, ra, cb, rb = push(ca, ra, ma, ia, pa, cb, rb, mb, ib, pb, p)
    # an impact (the penetrating contacts approaching, before the solve at the velocities
    # ``body_qd_pre``, faster than ``impact`` on depth-weighted average; looked for in a (sub)step's
    # first sweep) is met by the contacts as one first: one push at their mean point for their mean
    # depth, shared among them in proportion to depth. Contact by contact, the first corner of a box
    # landing flat was pushed out alone, which tipped the box over
    ca1 = ca
    ra1 = ra
    cb1 = cb
    rb1 = rb
    total = ma * 0.0
    ppa = ca * 0.0
    ppb = ppa
    pn_sum = ppa
    approach = total
    if impact >= 0.0:      # (the first sweep of a (sub)step; later ones get -1)
        for k in range(group_size):
            s = first + k
            if c_body[s, 0] == a and c_body[s, 1] == b:
                depth = contact_depth(body_q0, a, b, ca, ra, la, cb, rb, lb, c_pa, c_pb, c_n, c_rad, s, recover)
                if depth > 0.0:
                    pa, pb = contact_points(ca, ra, la, cb, rb, lb, c_pa, c_pb, c_n, c_rad, s)
                    ua, _ = point_velocity(body_q, body_qd_pre, body_com, a, pa)
                    ub, _ = point_velocity(body_q, body_qd_pre, body_com, b, pb)
                    approach = approach - sk.dot(c_n[s], ua - ub) * depth
                    total = total + depth
                    ppa = ppa + pa * depth
                    ppb = ppb + pb * depth
                    pn_sum = pn_sum + c_n[s] * depth
    patch = total * 0.0
    if total > 0.0:
        ppa = ppa / total
        ppb = ppb / total
        nn = sk.normalize(pn_sum)
        mean = sk.dot(nn, ppb - ppa)
        if mean > 0.0 and approach > impact * total:
            # a body resting more directly on the world (``support``: the ground, a static mesh or
            # shape) than one landing on it from above takes the impact as if fixed: what it rests
            # on takes it (pushed down, it would be pushed back up one sweep later, and what one
            # sweep leaves of that became a bounce and a tilt; a side impact pushes both, as before)
            ma_p = ma
            ia_p = ia
            mb_p = mb
            ib_p = ib
            if a >= 0 and b >= 0:
                vertical = sk.dot(nn, up)
                if support[b] > support[a] and vertical > 0.7:
                    mb_p = mb * 0.0
                    ib_p = ib * 0.0
                if support[a] > support[b] and vertical < -0.7:
                    ma_p = ma * 0.0
                    ia_p = ia * 0.0
            patch = mean / (point_weight(ca, ra, ma_p, ia_p, ppa, nn) + point_weight(cb, rb, mb_p, ib_p, ppb, nn))
            patch = patch * turn_share(ca, ra, ia_p, ppa, cb, rb, ib_p, ppb, nn * patch)
            ca, ra, cb, rb = push(ca, ra, ma_p, ia_p, ppa, cb, rb, mb_p, ib_p, ppb, nn * patch)
    for i in range(group_size):
        k = i
        if reverse != 0:                # alternate sweeps run backwards (symmetric Gauss-Seidel)
            k = group_size - 1 - i
        s = first + k
        e = tid * group_size + k
        ln = lam_in[e, 0]
        if patch > 0.0 and c_body[s, 0] == a and c_body[s, 1] == b:   # (its share of the push)
            ln = ln + patch * sk.max(contact_depth(body_q0, a, b, ca1, ra1, la, cb1, rb1, lb, c_pa, c_pb, c_n, c_rad,
                                                   s, recover), total * 0.0) / total
        lt = type(c_n[s])(lam_in[e, 1], lam_in[e, 2], lam_in[e, 3])
        if c_body[s, 0] == a and c_body[s, 1] == b:
            n = c_n[s]
            pa, pb = contact_points(ca, ra, la, cb, rb, lb, c_pa, c_pb, c_n, c_rad, s)
            depth = contact_depth(body_q0, a, b, ca, ra, la, cb, rb, lb, c_pa, c_pb, c_n, c_rad, s, recover)
            if depth > 0.0 or ln > 0.0:
                # sticking: the impulse that moves a's point relative to b's by the depth along n
                # and back by its tangential slip since the step began (3x3 point masses of both)
                slip = moved_since(body_q0, a, ca, ra, la, pa) - moved_since(body_q0, b, cb, rb, lb, pb) + held[e]
                move = n * depth - (slip - n * sk.dot(slip, n))
                k3 = point_inverse_mass(ca, ra, ma, ia, pa) + point_inverse_mass(cb, rb, mb, ib, pb)
                if sk.determinant(k3) > 0.0:
                    p = sk.inverse(k3) * move
                    pn = sk.max(ln + sk.dot(p, n), depth * 0.0)      # the normal total stays a push
                    pt = lt + (p - n * sk.dot(p, n))
                    lf = sk.length(pt)
                    w = point_weight(ca, ra, ma, ia, pa, n) + point_weight(cb, rb, mb, ib, pb, n)
                    alone = sk.max(ln + depth / w, depth * 0.0)       # the normal total on its own
                    if lf > c_mu[s, 0] * alone:
                        # sliding (measured against the normal the depth asks for, not one pushed
                        # up by holding the slip): the normal alone, and friction against the slip
                        # on the edge of its cone
                        pn = alone
                        pt = lt
                        sl = slip - n * sk.dot(slip, n)
                        ls = sk.length(sl)
                        if ls > 0.0:
                            t = sl / ls
                            wt = point_weight(ca, ra, ma, ia, pa, t) + point_weight(cb, rb, mb, ib, pb, t)
                            pt = lt - t * (ls / wt)
                        lf = sk.length(pt)
                        if lf > c_mu[s, 0] * pn:
                            pt = pt * (c_mu[s, 0] * pn / lf)
                    f = turn_share(ca, ra, ia, pa, cb, rb, ib, pb, n * (pn - ln) + pt - lt)
                    pn = ln + (pn - ln) * f
                    pt = lt + (pt - lt) * f
                    ca, ra, cb, rb = push(ca, ra, ma, ia, pa, cb, rb, mb, ib, pb, n * (pn - ln) + pt - lt)
                    ln = pn
                    lt = pt
        lam_out[e, 0] = ln
        lam_out[e, 1] = lt[0]
        lam_out[e, 2] = lt[1]
        lam_out[e, 3] = lt[2]
    if a >= 0:
        sk.atomic_add(delta, a, pose_delta(ca, ra, ca0, ra0))
        sk.atomic_add(count, a, count.dtype(1.0))
    if b >= 0:
        sk.atomic_add(delta, b, pose_delta(cb, rb, cb0, rb0))
        sk.atomic_add(count, b, count.dtype(1.0))


@kernel
def mark_support(w_body: array2d(dtype=int), w_lam: array2d(dtype=Any), body_q: array(dtype=Any),
                 body_com: array(dtype=Any), up: Any, support: array(dtype=int)):
    # how directly each body rests on the world, from the kept contacts that pressed: 1000 on the
    # world (the ground, a static mesh or shape), one less for each body between (a body rests on
    # the one whose centre of mass is lower along ``up``), 0 on nothing. One launch per contact set
    # and pass; each pass carries it one body further up a pile (atomic max: monotone)
    s = sk.tid()
    a = w_body[s, 0]
    b = w_body[s, 1]
    if w_lam[s, 0] > 0.0 and (a >= 0 or b >= 0):
        if a < 0 or b < 0:
            sk.atomic_max(support, sk.max(a, b), 1000)
        else:
            upper = a
            lower = b
            if sk.dot(up, sk.transform_point(body_q[b], body_com[b])) > sk.dot(up, sk.transform_point(body_q[a],
                                                                                                      body_com[a])):
                upper = b
                lower = a
            if support[lower] > 1:
                sk.atomic_max(support, upper, support[lower] - 1)


@kernel
def count_up(out: array(dtype=int)):
    # 0, 1, 2, ...
    i = sk.tid()
    out[i] = i


@kernel
def warm_contacts(groups: array(dtype=int), group_size: int, c_body: array2d(dtype=int), c_pa: array(dtype=Any),
                  c_n: array(dtype=Any), w_body: array2d(dtype=int), w_pa: array(dtype=Any),
                  w_lam: array2d(dtype=Any), w_slip: array(dtype=Any), prev: array(dtype=int), dt2: Any,
                  reach: Any, lam_out: array2d(dtype=Any), held: array(dtype=Any)):
    # a contact continues the one of the step before in its group's slots then (``prev``: the group
    # it was, -1 none) that held the same two bodies at the nearest point on the first (within
    # ``reach``; the candidate that finds a point may change from step to step, a box's corner to a
    # clipped edge's end): it starts from that one's normal impulse (stored per dt^2: a force, times
    # the mass) and a share of the pair's net friction in proportion to it, and undoes the slip it
    # left; a new contact starts from zero. (Each contact's own friction, carried over, held a
    # stack's contacts against each other: those impulses cancel, the sweeps never take them back,
    # and they grew until stacks of cubes rocked, and at mu = 100 fell over)
    g, k = sk.tid()
    if groups[g] < 0:
        return
    s = groups[g] * group_size + k
    e = g * group_size + k
    n = c_n[s]
    ln = n[0] * 0.0         # (a zero of the scalar type: w_lam may have fewer slots than this set now)
    h = n * ln
    lt = h
    if (c_body[s, 0] >= 0 or c_body[s, 1] >= 0) and prev[groups[g]] >= 0:
        first = prev[groups[g]] * group_size
        best = int(-1)
        near = reach
        for j in range(group_size):
            o = first + j
            if w_body[o, 0] == c_body[s, 0] and w_body[o, 1] == c_body[s, 1]:
                d = sk.length(w_pa[o] - c_pa[s])
                if d <= near:
                    near = d
                    best = o
        if best >= 0:
            ln = sk.max(w_lam[best, 0] * dt2, ln)
            h = w_slip[best] - n * sk.dot(w_slip[best], n)
            # the group's net friction, shared in proportion to the normal impulses
            f = n * 0.0
            total = ln * 0.0
            for j in range(group_size):
                o = first + j
                if w_body[o, 0] == c_body[s, 0] and w_body[o, 1] == c_body[s, 1]:
                    f = f + type(n)(w_lam[o, 1], w_lam[o, 2], w_lam[o, 3])
                    total = total + w_lam[o, 0]
            if total > 0.0:
                lt = f * (ln / total)
                lt = lt - n * sk.dot(lt, n)
    held[e] = h
    lam_out[e, 0] = ln
    lam_out[e, 1] = lt[0]
    lam_out[e, 2] = lt[1]
    lam_out[e, 3] = lt[2]


@kernel
def keep_contacts(body_q: array(dtype=Any), body_q0: array(dtype=Any), groups: array(dtype=int), group_size: int,
                  c_body: array2d(dtype=int), c_pa: array(dtype=Any), c_pb: array(dtype=Any), c_n: array(dtype=Any),
                  c_mu: array2d(dtype=Any), c_rad: array2d(dtype=Any), held: array(dtype=Any), lam: array2d(dtype=Any),
                  inv_dt2: Any, body_qd_pre: array(dtype=Any), body_com: array(dtype=Any), threshold: Any,
                  w_body: array2d(dtype=int), w_pa: array(dtype=Any), w_lam: array2d(dtype=Any),
                  w_slip: array(dtype=Any)):
    # the step's final impulses per slot (per dt^2) with the slot's bodies, for the next step's start;
    # a holding contact's slip left over (the sweeps did not converge) for the next step to undo. An
    # impact's (approaching at more than ``threshold`` before the solve, at the velocities
    # ``body_qd_pre``) are kept scaled by threshold / approach speed: started from in full, an impact's
    # impulse pushed a box that had landed up again in the next substep (a bounce without restitution),
    # one sweep could not take it back evenly, and a box dropped flat from 1 m at 16 substeps of 1 sweep
    # tumbled over. (Dropped in full instead, a stack that rocked a little lost its support at a corner
    # and fell at mu = 100)
    g, k = sk.tid()
    if groups[g] < 0:
        return
    s = groups[g] * group_size + k
    e = g * group_size + k
    w_body[s, 0] = c_body[s, 0]
    w_body[s, 1] = c_body[s, 1]
    w_pa[s] = c_pa[s]
    a = c_body[s, 0]
    b = c_body[s, 1]
    n = c_n[s]
    pa = frame_point(body_q, a, c_pa[s]) - n * c_rad[s, 0]
    pb = frame_point(body_q, b, c_pb[s]) + n * c_rad[s, 1]
    ua, _ = point_velocity(body_q, body_qd_pre, body_com, a, pa)
    ub, _ = point_velocity(body_q, body_qd_pre, body_com, b, pb)
    rest = inv_dt2
    approach = -sk.dot(n, ua - ub)
    if approach > threshold:
        rest = inv_dt2 * (threshold / approach)
        if c_mu[s, 1] > 0.0:    # (it bounces off: none)
            rest = inv_dt2 * 0.0
    for j in range(4):
        w_lam[s, j] = lam[e, j] * rest
    lt = type(n)(lam[e, 1], lam[e, 2], lam[e, 3])
    if (a >= 0 or b >= 0) and rest > 0.0 and lam[e, 0] > 0.0 and sk.length(lt) < c_mu[s, 0] * lam[e, 0] * 0.99:
        slip = point_moved(body_q, body_q0, a, pa) - point_moved(body_q, body_q0, b, pb) + held[e]
        w_slip[s] = slip - n * sk.dot(slip, n)


@func
def moved_pose(q: Any, com_local: Any, d: Any):
    """Body frame ``q`` after its centre of mass moves by ``spatial_bottom(d)`` and it turns about it
    by the rotation whose vector part is ``spatial_top(d)`` (``pose_delta``'s form)."""
    r0 = sk.transform_get_rotation(q)
    com = sk.transform_point(q, com_local) + sk.spatial_bottom(d)
    v = sk.spatial_top(d)
    dq = type(r0)(v, sk.sqrt(sk.max(1.0 - sk.dot(v, v), v[0] * 0.0)))
    r1 = sk.normalize(dq * r0)
    return type(q)(com - sk.quat_rotate(r1, com_local), r1)


@kernel
def apply_body_deltas(body_q: array(dtype=Any), body_com: array(dtype=Any), delta: array(dtype=Any),
                      count: array(dtype=Any), q_out: array(dtype=Any)):
    # the average of the corrections the body received (none: unchanged)
    i = sk.tid()
    q = body_q[i]
    if count[i] > 0.0:
        q = moved_pose(q, body_com[i], delta[i] / count[i])
    q_out[i] = q


@func
def pose_velocity(a: Any, b: Any, com_local: Any, dt: Any):
    """The velocities (spatial: w, v) that carry body frame ``a`` to ``b`` in ``dt``: v of the centre
    of mass, and w from the rotation r_b r_a^-1 (the shorter way round; its exact angle, as
    integrate_bodies turns)."""
    v = (sk.transform_point(b, com_local) - sk.transform_point(a, com_local)) / dt
    dq = sk.transform_get_rotation(b) * sk.quat_inverse(sk.transform_get_rotation(a))
    if dq[3] < 0.0:
        dq = -dq
    w = rotation_rate(type(v)(dq[0], dq[1], dq[2]), dq[3], dt)
    return T.vector(w[0], w[1], w[2], v[0], v[1], v[2])


@kernel
def body_velocities(q0: array(dtype=Any), q1: array(dtype=Any), body_com: array(dtype=Any), dt: Any,
                    q_out: array(dtype=Any), qd_out: array(dtype=Any)):
    # the velocities that carry the step's start pose to its end
    i = sk.tid()
    q_out[i] = q1[i]
    qd_out[i] = pose_velocity(q0[i], q1[i], body_com[i], dt)
