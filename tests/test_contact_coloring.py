"""Colouring XPBD contact groups on the device (simkit/solvers/rigid/contact_coloring.py): no movable
body twice in a colour, every group with contacts in exactly one colour, the same colours on the CPU
and the (emulated) GPU, the rest colour past MAX_COLORS, and few colours for stacks and lattices."""
import numpy as np
import pytest

import simkit as sk
from simkit.solvers.rigid import contact_coloring
from simkit.solvers.rigid.contact_coloring import MAX_COLORS, contact_colors


def bodies(device, inv_mass):
    b = sk.ModelBuilder()
    for m in inv_mass:
        body = b.add_body()
        if m > 0:                               # (a body without a shape has no mass: it cannot move)
            b.add_shape_sphere(body, radius=0.1)
    model = b.finalize(device=device)
    assert ((model.body_inv_mass.numpy() > 0) == (np.asarray(inv_mass) > 0)).all()
    return model


def contact_sets(device, pairs_per_set, group_sizes, empty_every=0):
    """Contact sets whose groups join the given (a, b) body pairs: each group's first slot holds the
    pair, its other slots are empty (-1, -1) as the gather kernels leave them; every ``empty_every``-th
    group has no contacts at all."""
    out = []
    for (a, b), size in zip(pairs_per_set, group_sizes):
        slots = np.full((len(a) * size, 2), -1, dtype=np.int32)
        slots[::size, 0], slots[::size, 1] = a, b
        if empty_every:
            slots[::size * empty_every] = -1
        out.append((size, [sk.array(slots, dtype=sk.int32, device=device)], None))
    return out


def coloured(device, inv_mass, pairs_per_set, group_sizes, empty_every=0):
    """Per colour, the (set, group) pairs it solves (padding dropped)."""
    model = bodies(device, inv_mass)
    sets = contact_sets(device, pairs_per_set, group_sizes, empty_every)
    out = []
    for parts in contact_colors(sk.XPBDSolver(), model, sets, fresh=False):
        groups = []
        for k, (_, _, idx) in parts:
            groups += [(k, int(g)) for g in idx.numpy() if g >= 0]
        out.append(sorted(groups))
    return out


def check_valid(colours, pairs_per_set, inv_mass, empty_every=0, rest=None):
    listed = [g for c in colours for g in c]
    assert len(listed) == len(set(listed))                       # each group in one colour
    want = {(k, g) for k, (a, _) in enumerate(pairs_per_set) for g in range(len(a))
            if not (empty_every and g % empty_every == 0) and (a[g] >= 0 or pairs_per_set[k][1][g] >= 0)}
    assert set(listed) == want                                    # every group with contacts, no other
    for c, groups in enumerate(colours):
        if c == rest:
            continue
        ends = [e for k, g in groups for e in {pairs_per_set[k][0][g], pairs_per_set[k][1][g]}
                if e >= 0 and inv_mass[e] > 0]
        assert len(ends) == len(set(ends)), f"colour {c} moves a body twice"


def random_sets(seed, n):
    rng = np.random.default_rng(seed)
    return [(rng.integers(-1, n, 70), rng.integers(-1, n, 70)),      # shape pairs (and the world)
            (np.full(n, -1), np.arange(n)),                           # the ground, one group per shape
            (rng.integers(0, n, 30), np.full(30, -1))]                # meshes


def test_groups_of_a_colour_share_no_movable_body(device):
    n = 60
    inv_mass = np.where(np.arange(n) % 7 == 0, 0.0, 1.0)          # some bodies cannot move: no conflicts
    sets = random_sets(3, n)
    colours = coloured(device, inv_mass, sets, (4, 8, 32), empty_every=5)
    if not sk.get_device(device).is_cpu:       # (every colour is launched, empty or not)
        assert len(colours) == MAX_COLORS + 1
        colours = [c for c in colours if c]
    assert 3 <= len(colours) <= MAX_COLORS                          # (none left for the rest colour)
    check_valid(colours, sets, inv_mass, empty_every=5)


def test_the_gpu_colours_as_the_cpu_does(cuda_device):
    n = 60
    inv_mass = np.ones(n)
    sets = random_sets(4, n)
    cpu = coloured("cpu", inv_mass, sets, (4, 8, 32))
    gpu = [c for c in coloured(cuda_device, inv_mass, sets, (4, 8, 32)) if c]
    assert gpu == cpu


def test_groups_past_the_last_colour_go_to_the_rest(device):
    # twelve groups hold body 0: eight take a colour each, four are solved together in the rest colour
    a, b = np.zeros(12, dtype=int), np.arange(1, 13)
    colours = coloured(device, np.ones(13), [(a, b)], (1,))
    assert [len(c) for c in colours if c] == [1] * MAX_COLORS + [4]
    check_valid(colours, [(a, b)], np.ones(13), rest=len(colours) - 1)


def test_a_stack_takes_three_colours_and_a_lattice_no_rest(monkeypatch):
    n = 40
    stack = [(np.arange(-1, n - 1), np.arange(n))]                 # the ground under box 0, box k on k - 1
    colours = coloured("cpu", np.ones(n), stack, (8,))
    assert len(colours) <= 3
    check_valid(colours, stack, np.ones(n))
    k = 8                                                           # 512 boxes, each touching 6 others
    idx = np.arange(k ** 3).reshape(k, k, k)
    a = np.concatenate([np.moveaxis(idx, ax, 0)[:-1].ravel() for ax in range(3)] + [np.full(k * k, -1)])
    b = np.concatenate([np.moveaxis(idx, ax, 0)[1:].ravel() for ax in range(3)] + [idx[:, 0, :].ravel()])
    lattice = [(a, b)]
    rounds = []
    launch = contact_coloring.launch

    def counting(kernel, *args, **kwargs):
        if kernel is contact_coloring.claim_colors:
            rounds.append(1)
        return launch(kernel, *args, **kwargs)

    monkeypatch.setattr(contact_coloring, "launch", counting)
    colours = coloured("cpu", np.ones(k ** 3), lattice, (4,))
    assert len(rounds) <= contact_coloring.COLOR_ROUNDS // 2 + 2
    # a group there meets up to 10 others (greedy: up to 11 colours); past MAX_COLORS, a few groups
    # are solved together
    rest = colours[MAX_COLORS] if len(colours) > MAX_COLORS else []
    assert len(colours) <= MAX_COLORS + 1 and len(rest) < 0.01 * len(a)
    check_valid(colours, lattice, np.ones(k ** 3), rest=MAX_COLORS)


@pytest.mark.parametrize("size", [1, 3])
def test_no_contacts_no_colours(size):
    empty = [(np.full(5, -1), np.full(5, -1))]
    assert coloured("cpu", np.ones(3), empty, (size,)) == []
