"""XPBD restitution: the velocity pass after a (sub)step's positions are solved.

The position solve makes every contact inelastic: the velocities derived from it (``body_velocities``)
leave a contact that hit with no normal speed. A contact whose coefficient of restitution ``e``
is above zero and that hit approaching at ``v_n < -threshold`` before the solve (the velocities
predicted from the (sub)step's start) is given the normal speed ``-e v_n`` back by an impulse along
its normal (Mueller et al. 2020, "Detailed rigid body simulation with extended position based
dynamics", 3.6). ``threshold`` is ``2 |g| h``: slower contacts are resting ones, and bouncing them
would make a body on the ground jitter.

A thread takes a group of contacts between the same two bodies and bounces them as one: one
impulse at their mean point, along their mean normal, for their mean approach speed, each weighted
by its approach speed. Contact by contact in turn, the first corner of a box landing flat took the
whole bounce alone and the box tumbled; weighted by the solve's normal impulses (which Gauss-Seidel
shares unevenly) it still did. As one, weighted by speed, a box landing flat bounces straight up
and one landing on a corner bounces off that corner. The net change goes
into ``delta``, and ``apply_velocity_deltas`` adds to each body the average it received.
"""
from __future__ import annotations

from ...kernels import kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...runtime import array, array2d
from .kernels import point_velocity
from .kernels_xpbd import body_state, contact_points, group_bodies, point_weight, world_inverse_inertia


@kernel
def restitute_contact_groups(body_q: array(dtype=Any), body_qd: array(dtype=Any), body_qd_pre: array(dtype=Any),
                             body_com: array(dtype=Any), inv_mass: array(dtype=Any), inv_inertia: array(dtype=Any),
                             groups: array(dtype=int), group_size: int, c_body: array2d(dtype=int),
                             c_pa: array(dtype=Any), c_pb: array(dtype=Any), c_n: array(dtype=Any),
                             c_mu: array2d(dtype=Any), c_rad: array2d(dtype=Any), threshold: Any, h: Any,
                             delta: array(dtype=Any), count: array(dtype=Any)):
    tid = sk.tid()
    if groups[tid] < 0:         # (padding of a GPU's colour lists)
        return
    first = groups[tid] * group_size
    a, b = group_bodies(c_body, first, group_size)
    if a < 0 and b < 0:
        return
    like = sk.max(a, b)
    ca, ra, la, ma, ia = body_state(body_q, body_com, inv_mass, inv_inertia, a, like)
    cb, rb, lb, mb, ib = body_state(body_q, body_com, inv_mass, inv_inertia, b, like)
    wa = ca * 0.0
    va = wa
    wb = wa
    vb = wa
    if a >= 0:
        wa = sk.spatial_top(body_qd[a])
        va = sk.spatial_bottom(body_qd[a])
    if b >= 0:
        wb = sk.spatial_top(body_qd[b])
        vb = sk.spatial_bottom(body_qd[b])
    wa0 = wa
    va0 = va
    wb0 = wb
    vb0 = vb
    # the contacts that hit as one (those approaching that touch now, or would have within the
    # substep at their approach speed): their points, normals, approach speeds and restitutions
    # averaged with their approach speeds as weights
    total = ma * 0.0
    pa = ca * 0.0
    pb = pa
    n = pa
    before = total
    bounce = total
    for k in range(group_size):
        s = first + k
        if c_body[s, 0] == a and c_body[s, 1] == b and c_mu[s, 1] > 0.0:
            nk = c_n[s]
            pak, pbk = contact_points(ca, ra, la, cb, rb, lb, c_pa, c_pb, c_n, c_rad, s)
            ua, _ = point_velocity(body_q, body_qd_pre, body_com, a, pak)
            ub, _ = point_velocity(body_q, body_qd_pre, body_com, b, pbk)
            vk = sk.dot(nk, ua - ub)
            w = vk * 0.0
            if vk < 0.0 and sk.dot(nk, pbk - pak) > vk * h:
                w = -vk
            total = total + w
            pa = pa + pak * w
            pb = pb + pbk * w
            n = n + nk * w
            before = before + vk * w
            bounce = bounce + c_mu[s, 1] * w
    if total > 0.0:
        pa = pa / total
        pb = pb / total
        n = sk.normalize(n)
        before = before / total
        bounce = bounce / total
        if before < -threshold:
            now = sk.dot(n, va + sk.cross(wa, pa - ca) - vb - sk.cross(wb, pb - cb))
            dv = -bounce * before - now
            if dv > 0.0:    # (a push: it never pulls the two together)
                p = n * (dv / (point_weight(ca, ra, ma, ia, pa, n) + point_weight(cb, rb, mb, ib, pb, n)))
                va = va + p * ma
                wa = wa + world_inverse_inertia(ra, ia) * sk.cross(pa - ca, p)
                vb = vb - p * mb
                wb = wb - world_inverse_inertia(rb, ib) * sk.cross(pb - cb, p)
    if a >= 0:
        dwa = wa - wa0
        dva = va - va0
        sk.atomic_add(delta, a, T.vector(dwa[0], dwa[1], dwa[2], dva[0], dva[1], dva[2]))
        sk.atomic_add(count, a, count.dtype(1.0))
    if b >= 0:
        dwb = wb - wb0
        dvb = vb - vb0
        sk.atomic_add(delta, b, T.vector(dwb[0], dwb[1], dwb[2], dvb[0], dvb[1], dvb[2]))
        sk.atomic_add(count, b, count.dtype(1.0))


@kernel
def apply_velocity_deltas(body_qd: array(dtype=Any), delta: array(dtype=Any), count: array(dtype=Any),
                          qd_out: array(dtype=Any)):
    # the average of the velocity changes the body received (none: unchanged)
    i = sk.tid()
    qd = body_qd[i]
    if count[i] > 0.0:
        qd = qd + delta[i] / count[i]
    qd_out[i] = qd
