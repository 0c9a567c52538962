"""Colouring of constraints for Gauss-Seidel sweeps: constraints of one colour touch no common
movable body, so one launch solves a whole colour at once and the next colour sees its result.

``colors(a, b, movable)``: constraint ``k`` joins bodies ``a[k]`` and ``b[k]`` (-1: the world);
bodies that cannot move (``movable`` False: kinematic, inverse mass 0) join no conflict. Each
colour is a maximal independent set of the remaining constraints, found by Luby's rounds (numpy,
no Python loop over constraints): every candidate draws a priority (a fixed pseudo-random
permutation, so runs repeat exactly), those that beat every candidate sharing a body with them are
taken, and they and their neighbours leave the candidates, until none is left. A chain or a stack
takes 2-3 colours, a body touching ``d`` others about ``d``.
"""
from __future__ import annotations

import numpy as np


def colors(a: np.ndarray, b: np.ndarray, movable: np.ndarray) -> np.ndarray:
    """The colour (0, 1, ...) of each constraint."""
    n = len(a)
    out = np.full(n, -1, dtype=np.int64)
    # body ids shifted by one; 0 stands for the world and every immovable body (no conflicts)
    ka = np.where(a >= 0, (a + 1) * movable[np.maximum(a, 0)], 0).astype(np.int64)
    kb = np.where(b >= 0, (b + 1) * movable[np.maximum(b, 0)], 0).astype(np.int64)
    priority = np.random.default_rng(12345).permutation(n)
    best = np.empty(len(movable) + 1, dtype=np.int64)
    used = np.zeros(len(movable) + 1, dtype=bool)
    rest = np.arange(n)
    color = 0
    while rest.size:
        cand = rest
        used.fill(False)
        while cand.size:
            best.fill(-1)
            np.maximum.at(best, ka[cand], priority[cand])
            np.maximum.at(best, kb[cand], priority[cand])
            ca, cb, p = ka[cand], kb[cand], priority[cand]
            take = ((ca == 0) | (best[ca] == p)) & ((cb == 0) | (best[cb] == p))
            out[cand[take]] = color
            used[ca[take]] = True
            used[cb[take]] = True
            used[0] = False                    # the world: never a conflict
            cand = cand[~take & ~used[ca] & ~used[cb]]
        rest = rest[out[rest] < 0]
        color += 1
    return out


def color_lists(a: np.ndarray, b: np.ndarray, movable: np.ndarray) -> list:
    """The constraints of each colour, as index arrays (in increasing order)."""
    c = colors(a, b, movable)
    order = np.argsort(c, kind="stable")
    bounds = np.searchsorted(c[order], np.arange(c.max() + 2 if len(c) else 1))
    return [order[bounds[k]:bounds[k + 1]] for k in range(len(bounds) - 1)]
