"""Colouring the XPBD contact groups on the device, so that a step reads nothing back to the host
(a GPU neither waits for it nor leaves the step out of a CUDA graph capture).

The groups of every contact set (shape pairs, the ground, static meshes) form one list; group
``g`` joins the two bodies it holds, a body that cannot move (or the world) joining nothing. The
colouring is greedy and speculative, with priorities as in Jones and Plassmann's (1993): every
group has a fixed pseudo-random priority (a bijective hash of its index, so colours repeat exactly
on every device). In each round, every uncoloured group tries the lowest colour none of its
coloured neighbours has (a bit mask per body), and it takes that colour if it outranks every other
group trying the same colour at its bodies. Groups that take a colour at one body in one round
take different colours, so adding their bits updates the masks without races. Groups that would
need a colour at or above ``max_colors``, and those still uncoloured after the last round, go to
the rest colour ``max_colors``, where bodies average what their groups push (Jacobi).

A round is two launches: each uncoloured group puts its priority on the colour it tries at its
bodies (``claim_colors``); the groups that outrank the others take it (``take_colors``). A stack of boxes takes 4 rounds, a lattice of 4096 boxes
with 6 neighbours each 9 (``COLOR_ROUNDS`` is the most a step runs).

``contact_colors`` runs it. On the CPU it stops when every group has a colour and lists each
colour's groups exactly (reading the colours is free there). On a GPU it runs every round and lists
each colour's groups of one set in a row padded with -1 (``color_rows``): a GPU does not know the
counts without reading them back, so every colour is launched over all groups of the set and the
kernels that take such a list skip the -1 entries.
"""
from __future__ import annotations

import numpy as np

from ...kernels import func, kernel
from ...kernels import lang as sk
from ...kernels import types as T
from ...kernels.types import Any
from ...model import Model
from ...runtime import array, array2d, is_capturing, launch
from .kernels_xpbd import group_bodies

#: colours of contact groups; those that would need more go to the rest colour (Jacobi)
MAX_COLORS = 8
#: the most rounds of colouring a step runs; groups still uncoloured go to the rest colour
COLOR_ROUNDS = 16

#: ``color`` of a group with no contacts (it is solved in no colour)
EMPTY = -1
#: ``color`` of a group not coloured yet
UNCOLORED = -2


@func
def movable_end(b: int, inv_mass: Any):
    """``b`` if that body can move, else -1 (the world and immovable bodies join no conflict)."""
    out = int(-1)
    if b >= 0:
        if inv_mass[b] > 0.0:
            out = b
    return out


@func
def group_key(g: int, rnd: int):
    """The priority of group ``g`` in round ``rnd``: later rounds outrank earlier ones (the per-body
    maxima need no reset between rounds), and within a round a bijective 32-bit hash of ``g``."""
    x = T.uint64(g) * T.uint64(2654435761)
    x = x & T.uint64(4294967295)
    x = x ^ (x >> T.uint64(16))
    x = (x * T.uint64(2246822507)) & T.uint64(4294967295)
    x = x ^ (x >> T.uint64(13))
    return T.int64(rnd + 1) * T.int64(4294967296) + T.int64(x)


@kernel
def group_ends(c_body: array2d(dtype=int), group_size: int, offset: int, inv_mass: array(dtype=Any),
               ends: array2d(dtype=int), color: array(dtype=int)):
    # the two movable bodies of each group of one set, at ``offset`` in the list of all sets' groups
    g = sk.tid()
    a, b = group_bodies(c_body, g * group_size, group_size)
    o = offset + g
    ends[o, 0] = movable_end(a, inv_mass)
    ends[o, 1] = movable_end(b, inv_mass)
    if a < 0 and b < 0:
        color[o] = EMPTY
    else:
        color[o] = UNCOLORED


@func
def lowest_free(used: int, max_colors: int):
    """The lowest colour whose bit is not set in ``used`` (``max_colors``: none below it)."""
    c = int(0)
    while c < max_colors and (used & (1 << c)) != 0:
        c += 1
    return c


@kernel
def claim_colors(ends: array2d(dtype=int), color: array(dtype=int), mask: array(dtype=int), rnd: int,
                 max_colors: int, trial: array(dtype=int), best: array2d(dtype=T.int64)):
    # every uncoloured group tries the lowest colour none of its coloured neighbours has, and puts
    # its priority on that colour at its movable bodies
    g = sk.tid()
    if color[g] == UNCOLORED:
        used = int(0)
        for j in range(2):
            if ends[g, j] >= 0:
                used = used | mask[ends[g, j]]
        c = lowest_free(used, max_colors)
        trial[g] = c
        if c == max_colors:
            color[g] = c                                    # (the rest colour: no conflicts to avoid)
        else:
            key = group_key(g, rnd)
            for j in range(2):
                if ends[g, j] >= 0:
                    sk.atomic_max(best, ends[g, j], c, key)


@kernel
def take_colors(ends: array2d(dtype=int), color: array(dtype=int), trial: array(dtype=int), rnd: int,
                best: array2d(dtype=T.int64), mask: array(dtype=int)):
    # a group that outranks every other group trying its colour at its bodies takes it
    g = sk.tid()
    if color[g] == UNCOLORED:
        c = trial[g]
        key = group_key(g, rnd)
        a = ends[g, 0]
        b = ends[g, 1]
        wins = True
        if a >= 0:
            wins = wins and best[a, c] == key
        if b >= 0:
            wins = wins and best[b, c] == key
        if wins:
            color[g] = c
            # (no other group took colour c at these bodies this round: adding the bit sets it)
            if a >= 0:
                sk.atomic_add(mask, a, 1 << c)
            if b >= 0 and b != a:
                sk.atomic_add(mask, b, 1 << c)


@kernel
def color_rows(color: array(dtype=int), offset: int, max_colors: int, counts: array(dtype=int),
                rows: array2d(dtype=int)):
    # the groups of one set by colour: row c lists those of colour c (in any order), then -1s; groups
    # left uncoloured go to the rest colour ``max_colors``
    g = sk.tid()
    c = color[offset + g]
    if c == UNCOLORED:
        c = max_colors
    if c >= 0:
        rows[c, sk.atomic_add(counts, c, 1)] = g


def contact_colors(solver, model: Model, contacts: list, fresh: bool) -> list:
    """The contact groups of each colour (the rest colour last): per colour, [(set, (size, slots,
    group indices))]; ``contacts``: (group size, slot arrays, ids) per set (``gather_contacts``).
    Nothing is read back on a GPU; the lists then hold every group of the set, padded with -1."""
    sizes = [slots[0].shape[0] // size for size, slots, _ in contacts]
    total = sum(sizes)
    if not total:
        return []
    dev, n = model.device, model.body_count
    listed = dev.is_cpu and not is_capturing(dev)    # (colours read back: exact lists, stop when done)

    def work(key, shape, dtype, zero=True):
        return solver.scratch(model, "xb_col_" + key, shape, dtype, fresh=fresh, zero=zero, requires_grad=False)

    ends, color, trial = work("ends", (total, 2), T.int32, False), work("c", total, T.int32, False), \
        work("try", total, T.int32, False)
    best, mask = work("best", (n, MAX_COLORS), T.int64), work("mask", n, T.int32)
    offsets = np.cumsum([0] + sizes)
    for k, (size, slots, _) in enumerate(contacts):
        if sizes[k]:
            launch(group_ends, sizes[k], device=dev, inputs=[slots[0], size, int(offsets[k]), model.body_inv_mass],
                   outputs=[ends, color], record_tape=False)
    for rnd in range(COLOR_ROUNDS):
        launch(claim_colors, total, device=dev, inputs=[ends, color, mask, rnd, MAX_COLORS], outputs=[trial, best],
               record_tape=False)
        launch(take_colors, total, device=dev, inputs=[ends, color, trial, rnd, best], outputs=[mask],
               record_tape=False)
        if listed and not (color.numpy() == UNCOLORED).any():
            break
    if listed:
        c = color.numpy()
        c = np.where(c == UNCOLORED, MAX_COLORS, c)
        out = []
        for col in range(MAX_COLORS + 1):
            parts = []
            for k, (size, slots, _) in enumerate(contacts):
                groups = np.nonzero(c[offsets[k]:offsets[k + 1]] == col)[0]
                if groups.size:
                    parts.append((k, (size, slots, array(groups.astype(np.int32), dtype=T.int32, device=dev))))
            if parts:
                out.append(parts)
        return out
    rows = []
    for k, (size, slots, _) in enumerate(contacts):
        counts = work(f"n{k}", MAX_COLORS + 1, T.int32)
        rows.append(work(f"rows{k}", (MAX_COLORS + 1, sizes[k]), T.int32, False).fill_(-1))
        if sizes[k]:
            launch(color_rows, sizes[k], device=dev, inputs=[color, int(offsets[k]), MAX_COLORS],
                   outputs=[counts, rows[k]], record_tape=False)
    return [[(k, (size, slots, rows[k][col])) for k, (size, slots, _) in enumerate(contacts) if sizes[k]]
            for col in range(MAX_COLORS + 1)]
