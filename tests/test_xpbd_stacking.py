"""XPBDSolver's persistent rigid contacts and substeps: a resting contact starts each step from the
impulses it ended the last one with and undoes the slip left over, so a tall box rests at two
iterations and the kept impulses carry exactly the weight above them; stacks of eight boxes stand
still with substeps, also when the broad phase reorders its pairs; ``substeps`` is the same as
steps of a fraction of ``dt`` where no contact is gathered; overlapping shapes part no faster
than ``max_depenetration_velocity``, and a shape's unused ground slots stay empty however fast it
spins."""
import numpy as np
import pytest

import simkit as sk
from test_xpbd_rigid import joint_scene

f64 = sk.float64
DT = 1.0 / 60.0
G = 9.81


def run(model, steps, solver, dt=DT):
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0


def stack(sizes, offsets=None, mu=0.6):
    """Cubes of half extents ``sizes`` on the ground, each resting on the one below."""
    b = sk.ModelBuilder()
    y = 0.0
    for k, h in enumerate(sizes):
        dx, dz = (0.0, 0.0) if offsets is None else offsets[k]
        body = b.add_body(pos=(dx, y + h, dz))
        b.add_shape_box(body, hx=h, hy=h, hz=h, mu=mu)
        y += 2 * h
    b.add_ground_plane()
    return b.finalize(dtype=f64)


def test_a_tall_box_rests_at_two_iterations_without_walking():
    # each step's four corner projections in turn leave a tilt; without the kept impulses the box
    # rocked from corner to corner and walked 15 mm/s
    b = sk.ModelBuilder()
    body = b.add_body(pos=(0.0, 0.1, 0.0))
    b.add_shape_box(body, hx=0.15, hy=0.1, hz=0.15, mu=0.6)
    b.add_ground_plane()
    model = b.finalize(dtype=f64)
    end = run(model, 120, sk.XPBDSolver(iterations=2))
    q = end.body_q.numpy()[0]
    assert np.abs(q[[0, 2]]).max() < 5e-4
    assert q[1] == pytest.approx(0.1, abs=1e-4)
    np.testing.assert_allclose(end.body_qd.numpy()[0], 0.0, atol=1e-3)


def test_the_kept_impulses_carry_the_weight_above_each_contact():
    # three cubes, each smaller: per contact set the normal impulses per dt^2 are forces [N]; the
    # ground's add up to the stack's weight, each box-box pair's to the weight of what it carries
    sizes = [0.06, 0.05, 0.04]
    model = stack(sizes)
    end = run(model, 60, sk.XPBDSolver(iterations=1, substeps=8))
    weight = [1000.0 * (2 * h) ** 3 * G for h in sizes]
    pairs, ground = end.contact_impulses                    # (bodies, point, impulses, slip) per set
    assert ground[2].numpy()[:, 0].sum() == pytest.approx(sum(weight), rel=1e-4)
    bodies, lam = pairs[0].numpy(), pairs[2].numpy()[:, 0]
    for below in range(2):
        on = (bodies[:, 0] == below) & (bodies[:, 1] == below + 1) | (bodies[:, 0] == below + 1) & (
            bodies[:, 1] == below)
        assert lam[on].sum() == pytest.approx(sum(weight[below + 1:]), rel=1e-4)
    assert (ground[2].numpy()[:, 0] >= 0.0).all() and (lam >= 0.0).all()


@pytest.mark.parametrize("case", ["one_size", "each_smaller", "one_size_offset", "each_smaller_offset",
                                  "one_size_offset_mu100"])
def test_a_stack_of_eight_cubes_stands_still_with_substeps(case):
    # 16 substeps of one sweep (Mueller et al. 2020's small steps): a stack of eight 10 cm cubes, of
    # one size (their corners on each other's face borders) or each a little smaller, shifted up to
    # 3 mm or not, friction 0.6 or 100, stays where it was put for 5 s. (At one step of 16 sweeps
    # these stacks topple; with each contact's own friction carried over from step to step, they
    # rocked, and at mu = 100 fell over.)
    rng = np.random.default_rng(0)
    sizes = [0.05] * 8 if case.startswith("one_size") else [0.05 * (1.0 - 0.03 * k) for k in range(8)]
    offsets = rng.uniform(-0.003, 0.003, (8, 2)) if "offset" in case else None
    model = stack(sizes, offsets, mu=100.0 if case.endswith("mu100") else 0.6)
    start = model.body_q.numpy()
    end = run(model, 300, sk.XPBDSolver(iterations=1, substeps=16))
    q, qd = end.body_q.numpy(), end.body_qd.numpy()
    assert np.abs(q[:, [0, 2]] - start[:, [0, 2]]).max() < 1e-3
    np.testing.assert_allclose(q[:, 1], start[:, 1], atol=5e-4)    # (one sweep: ~50 um into the one below)
    assert np.abs(q[:, 3:6]).max() < 1e-3                            # (turned under 0.1 degree)
    np.testing.assert_allclose(qd, 0.0, atol=1e-2)


def particle_chain(b):
    for k in range(4):
        b.add_particle(pos=(0.0, -0.1 * k, 1.0), vel=(0.3, 0.0, 0.0), mass=0.0 if k == 0 else 0.1)
        if k:
            b.add_spring(k - 1, k, ke=100.0, kd=0.5)


@pytest.mark.parametrize("scene", [joint_scene, particle_chain], ids=["joints", "particles"])
def test_substeps_match_steps_of_a_fraction_of_dt(scene):
    # a driven hinge with a ball-jointed pendulum and a driven slider (no contacts: nothing is gathered
    # once per step), a chain of particles on springs: 4 substeps of dt / 4 are 4 steps of dt / 4
    b = sk.ModelBuilder()
    scene(b)
    model = b.finalize(dtype=f64)
    whole = run(model, 20, sk.XPBDSolver(iterations=4, substeps=4))
    parts = run(model, 80, sk.XPBDSolver(iterations=4), dt=DT / 4)
    for name in ("body_q", "body_qd", "particle_q", "particle_qd"):
        if getattr(whole, name) is not None and getattr(whole, name).shape[0]:
            np.testing.assert_allclose(getattr(whole, name).numpy(), getattr(parts, name).numpy(), atol=1e-10)
    moved = whole.body_q if scene is joint_scene else whole.particle_q
    start = model.body_q if scene is joint_scene else model.particle_q
    assert np.abs(moved.numpy()[-1, :3] - start.numpy()[-1, :3]).max() > 0.01


def test_substeps_must_be_positive():
    with pytest.raises(ValueError, match="substeps must be >= 1"):
        sk.XPBDSolver(substeps=0)


@pytest.mark.parametrize("limit", [1.0, 0.2])
def test_overlapping_shapes_part_at_the_depenetration_velocity(limit):
    # two capsules end to end, overlapping 1 cm, no gravity: pushed apart at `limit` (relative), not
    # at overlap / substep (2.4 m/s at 4 substeps); equal masses: +-limit / 2 each
    b = sk.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    for k in range(2):
        body = b.add_body(pos=(0.0, 0.15 * k, 0.0))
        b.add_shape_capsule(body, radius=0.03, half_height=0.05)
    model = b.finalize(dtype=f64)
    end = run(model, 6, sk.XPBDSolver(iterations=2, substeps=4, max_depenetration_velocity=limit))
    v = end.body_qd.numpy()[:, 4]
    np.testing.assert_allclose(v, [-limit / 2, limit / 2], rtol=1e-9)
    assert end.body_q.numpy()[1, 1] - end.body_q.numpy()[0, 1] > 0.16     # apart
    with pytest.raises(ValueError, match="max_depenetration_velocity"):
        sk.XPBDSolver(max_depenetration_velocity=0.0)


def test_a_spinning_capsule_far_from_its_ground_slots_falls_freely():
    # a capsule has 2 of its shape's 8 ground slots; the others must stay empty: a point 50 m from its
    # centre (the origin), turning at 2 rad/s, would otherwise look like a contact approaching at 100 m/s
    b = sk.ModelBuilder()
    body = b.add_body(pos=(50.0, 1.0, 0.0), ang_vel=(0.0, 0.0, 2.0))
    b.add_shape_capsule(body, radius=0.03, half_height=0.05)
    b.add_ground_plane()
    model = b.finalize(dtype=f64)
    end = run(model, 1, sk.XPBDSolver(iterations=4, substeps=2))
    qd = end.body_qd.numpy()[0]
    np.testing.assert_allclose(qd[3:], [0.0, -G * DT, 0.0], atol=1e-9)
    # (the spin as the rotation over each substep gives it back: 2 sin(a / 2) / h, 1e-4 short)
    np.testing.assert_allclose(qd[:3], [0.0, 0.0, 2.0], atol=1e-3)


def test_contacts_are_found_again_when_the_broad_phase_reorders_its_pairs(monkeypatch):
    # on a GPU the Bvh reports its pairs in any order (threads append them): the contacts of a pair
    # are found again by its shapes, so a stack stands as still as with a fixed order. Here every
    # other step's pairs come reversed
    import simkit.solvers.rigid.xpbd as xpbd

    found = xpbd.shape_pairs
    calls = []

    def shuffled(solver, model, body_q, fresh):
        pairs, count = found(solver, model, body_q, fresh)
        calls.append(count)
        if len(calls) % 2:
            ab = pairs.numpy()[:2 * count].reshape(-1, 2)[::-1].ravel()
            pairs = sk.array(np.concatenate([ab, pairs.numpy()[2 * count:]]).astype(np.int32), dtype=sk.int32,
                             device=pairs.device)
        return pairs, count

    monkeypatch.setattr(xpbd, "shape_pairs", shuffled)
    model = stack([0.05] * 6, np.random.default_rng(1).uniform(-0.003, 0.003, (6, 2)))
    start = model.body_q.numpy()
    end = run(model, 180, sk.XPBDSolver(iterations=1, substeps=16, broad_phase="bvh"))
    assert min(calls) == 5                                   # (the 5 touching pairs)
    q = end.body_q.numpy()                                   # (matched by slot, it slid 1.2 mm)
    assert np.abs(q[:, [0, 2]] - start[:, [0, 2]]).max() < 5e-4
    np.testing.assert_allclose(end.body_qd.numpy(), 0.0, atol=5e-3)


def test_warm_start_reads_only_the_slots_kept(monkeypatch):
    # when the Bvh finds more shape pairs than the step before, the contact set has more slots than
    # the impulses kept: warm_contacts read past their end (found by the 216-body lattice of
    # benchmarks/rigid.py, which turned to NaN); debug mode checks every array access
    monkeypatch.setattr(sk.config, "mode", "debug")
    b = sk.ModelBuilder()
    for k in range(3):
        for j in range(3):
            body = b.add_body(pos=(0.25 * k, 0.3 + 0.25 * j + 0.02 * k, 0.05 * j))
            if (k + j) % 2:
                b.add_shape_box(body, hx=0.1, hy=0.1, hz=0.1)
            else:
                b.add_shape_sphere(body, radius=0.1)
    b.add_ground_plane()
    model = b.finalize(device="cpu")
    solver = sk.XPBDSolver(iterations=2, broad_phase="bvh")
    counts = []
    s0, s1 = model.state(), model.state()
    for _ in range(60):
        solver.step(model, s0, s1, None, DT)
        s0, s1 = s1, s0
        counts.append(len(s0.contact_ids[0]) if s0.contact_ids and s0.contact_ids[0] is not None else 0)
    assert max(counts) > min(c for c in counts if c) and np.isfinite(s0.body_q.numpy()).all()
