"""Dry-run launches that only declare specialisations (runtime/declare.py), and the solvers' use of them."""
import numpy as np

import simkit as sk
from simkit.runtime import declare
from simkit.solvers.particle import kernels_xpbd


@sk.kernel
def scale(a: sk.array(dtype=sk.Any), s: sk.Any):
    i = sk.tid()
    a[i] = a[i] * s


@sk.kernel
def shift(a: sk.array(dtype=sk.Any), s: sk.Any):
    i = sk.tid()
    a[i] = a[i] + s


def test_declared_specialisations_compile_together_at_the_next_launch():
    a32 = sk.array(np.arange(4, dtype=np.float32))
    a64 = sk.array(np.arange(4, dtype=np.float64))
    with declare.declaring():
        for a, t in ((a32, np.float32), (a64, np.float64)):
            sk.launch(scale, 4, inputs=[a, t(3.0)])
            sk.launch(shift, 4, inputs=[a, t(1.0)])
    specs = [s for k in (scale, shift) for s in k.overloads.values()]
    assert len(specs) == 4 and not any(s.native for s in specs)       # declared: nothing compiled
    np.testing.assert_array_equal(a64.numpy(), np.arange(4))          # nor run
    sk.launch(scale, 4, inputs=[a64, np.float64(3.0)])
    assert all(s.native for s in specs)  # the first real launch built all four (one library)
    assert len({id(s.native["cpu"][1]) for s in specs}) == 1
    sk.launch(shift, 4, inputs=[a64, np.float64(1.0)])
    sk.launch(shift, 4, inputs=[a32, np.float32(0.5)])
    np.testing.assert_array_equal(a64.numpy(), np.arange(4) * 3.0 + 1.0)
    np.testing.assert_array_equal(a32.numpy(), np.arange(4) + 0.5)


def test_declaring_skips_argument_checks_but_not_type_resolution():
    import pytest

    a = sk.zeros(3, dtype=sk.vec3)
    with declare.declaring():
        sk.launch(shift, 3, inputs=[a, sk.vec3(1.0, 2.0, 3.0)])
        with pytest.raises(TypeError):  # (a generic launch still resolves its argument types)
            sk.launch(shift, 3, inputs=[a, object()])
    assert not declare.active
    sk.launch(shift, 3, inputs=[a, sk.vec3(1.0, 2.0, 3.0)])
    np.testing.assert_array_equal(a.numpy(), np.tile([1.0, 2.0, 3.0], (3, 1)))


def _cloth():
    b = sk.ModelBuilder()
    b.add_cloth_grid(pos=(0.0, 1.0, 0.0), rot=(0.0, 0.0, 0.0, 1.0), dim_x=4, dim_y=4, cell_x=0.1, cell_y=0.1,
                     mass=0.1, tri_ke=1.0e2, tri_ka=1.0e2, tri_kd=0.5, edge_ke=1.0)
    b.add_ground_plane()
    return b.finalize()


def test_xpbd_first_step_is_the_same_with_its_dry_run():
    results = []
    for dry in (True, False):
        model = _cloth()
        solver = sk.XPBDSolver(iterations=4, substeps=2)
        if not dry:
            solver._declared.add((id(model), str(model.device)))
        s0, s1 = model.state(), model.state()
        s0.particle_qd.fill_(sk.vec3(0.3, -1.0, 0.2))
        for _ in range(3):
            solver.step(model, s0, s1, None, 1.0 / 60.0)
            s0, s1 = s1, s0
        results.append(s0.particle_q.numpy())
        assert (id(model), str(model.device)) in solver._declared
    np.testing.assert_array_equal(results[0], results[1])
    assert results[0][:, 1].min() < 1.0  # (it moved)
    assert all(s.native for k in (kernels_xpbd.predict_positions, kernels_xpbd.solve_triangles,
                                  kernels_xpbd.update_velocities) for s in k.overloads.values())
