"""simkit.autograd with Warp's interface: jacobian / jacobian_fd / gradcheck on kernels and Python functions,
input_output_mask, max_*_per_var, restore_inputs, gradcheck_tape, enable_backward=False, summaries, plots.
Every Jacobian is checked against its analytic value."""
import numpy as np
import pytest

import simkit as sk
from simkit.autograd import FunctionMetadata, GradcheckError

f64 = sk.float64


@sk.kernel
def mul_add(a: sk.array(dtype=f64), b: sk.array(dtype=f64), c: float, out1: sk.array(dtype=f64),
            out2: sk.array(dtype=f64)):
    i = sk.tid()
    out1[i] = a[i] * b[i] + f64(c)
    out2[i] = sk.sin(a[i]) - b[i] * b[i]


@sk.kernel
def dot_w(v: sk.array(dtype=sk.vec3d), out: sk.array(dtype=sk.vec2d)):
    i = sk.tid()
    w = sk.vec3d(f64(1.0), f64(-2.0), f64(0.5))
    out[i] = sk.vec2d(sk.dot(v[i], w), v[i][0] * v[i][1])


@sk.func
def wrong_square(x: f64):
    return x * x


@sk.func_grad(wrong_square)
def adj_wrong_square(x: f64, adj: f64):
    sk.adjoint[x] += 3.0 * x * adj  # (should be 2x)


@sk.kernel
def wrong_kernel(a: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = wrong_square(a[i])


@sk.kernel(enable_backward=False)
def no_backward(a: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = 3.0 * a[i]


@sk.kernel
def scale3(a: sk.array(dtype=f64), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = 3.0 * a[i]


@sk.kernel
def increment(x: sk.array(dtype=f64)):
    i = sk.tid()
    x[i] = x[i] + 1.0


@sk.kernel
def square(x: sk.array(dtype=f64), y: sk.array(dtype=f64)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.kernel
def sqrt_norm(v: sk.array(dtype=sk.vec3d), out: sk.array(dtype=f64)):
    i = sk.tid()
    out[i] = sk.sqrt(v[i][0] * v[i][0] + v[i][1] * v[i][1] + v[i][2] * v[i][2])


def grad_arr(values, dtype=f64):
    return sk.array(np.asarray(values, dtype=np.float64), dtype=dtype, requires_grad=True)


def mul_add_args():
    a, b = grad_arr([0.5, -1.0, 2.0]), grad_arr([1.5, 0.25, -3.0])
    return a, b, [a, b, 2.0], [sk.zeros(3, dtype=f64, requires_grad=True),
                               sk.zeros(3, dtype=f64, requires_grad=True)]


def test_kernel_jacobians_match_analytic_values():
    a, b, ins, outs = mul_add_args()
    an, bn = a.numpy(), b.numpy()
    expected = {(0, 0): np.diag(bn), (1, 0): np.diag(an), (0, 1): np.diag(np.cos(an)), (1, 1): np.diag(-2 * bn)}
    for jac in (sk.autograd.jacobian(mul_add, 3, ins, outs),
                sk.autograd.jacobian_fd(mul_add, 3, ins, outs, eps=1e-6)):
        assert sorted(jac) == sorted(expected)
        for key, J in jac.items():
            assert isinstance(J, sk.array) and J.dtype == f64 and J.shape == (3, 3)
            np.testing.assert_allclose(J.numpy(), expected[key], atol=1e-8)
    # the caller's outputs keep their values and the inputs' gradients are left zero
    np.testing.assert_array_equal(outs[0].numpy(), 0.0)
    np.testing.assert_array_equal(a.grad.numpy(), 0.0)
    assert sk.autograd.gradcheck(mul_add, 3, ins, outs, eps=1e-6, atol=1e-8, rtol=1e-8, show_summary=False)


def test_vector_jacobians_have_the_input_dtype():
    vn = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]])
    v = sk.array(vn, dtype=sk.vec3d, requires_grad=True)
    out = sk.zeros(2, dtype=sk.vec2d, requires_grad=True)
    expected = np.zeros((4, 2, 3))  # [output component, input element, input component]
    for i in range(2):
        expected[2 * i, i] = [1.0, -2.0, 0.5]
        expected[2 * i + 1, i] = [vn[i, 1], vn[i, 0], 0.0]
    for J in (sk.autograd.jacobian(dot_w, 2, [v], [out])[(0, 0)],
              sk.autograd.jacobian_fd(dot_w, 2, [v], [out], eps=1e-6)[(0, 0)]):
        assert J.dtype == sk.vec3d and J.shape == (4, 2)
        np.testing.assert_allclose(J.numpy(), expected, atol=1e-8)


def test_input_output_mask_by_name_and_index():
    a, b, ins, outs = mul_add_args()
    by_name = sk.autograd.jacobian(mul_add, 3, ins, outs, input_output_mask=[("a", "out2"), ("b", "out1")])
    by_index = sk.autograd.jacobian_fd(mul_add, 3, ins, outs, input_output_mask=[(0, 1), (1, 0)], eps=1e-6)
    assert sorted(by_name) == sorted(by_index) == [(0, 1), (1, 0)]
    for jac in (by_name, by_index):
        np.testing.assert_allclose(jac[(0, 1)].numpy(), np.diag(np.cos(a.numpy())), atol=1e-8)
        np.testing.assert_allclose(jac[(1, 0)].numpy(), np.diag(a.numpy()), atol=1e-8)
    with pytest.raises(ValueError, match=r"input_output_mask names input 'q', but 'mul_add' has the inputs "
                                         r"\['a', 'b', 'c'\]"):
        sk.autograd.jacobian(mul_add, 3, ins, outs, input_output_mask=[("q", "out1")])


def test_max_per_var_limits_leave_nan_and_gradcheck_compares_the_rest():
    a, b, ins, outs = mul_add_args()
    ad = sk.autograd.jacobian(mul_add, 3, ins, outs, max_outputs_per_var=2)[(0, 0)].numpy()
    fd = sk.autograd.jacobian_fd(mul_add, 3, ins, outs, max_inputs_per_var=1, eps=1e-6)[(0, 0)].numpy()
    np.testing.assert_allclose(ad[:2], np.diag(b.numpy())[:2], atol=1e-12)
    assert np.isnan(ad[2:]).all()
    np.testing.assert_allclose(fd[:, :1], np.diag(b.numpy())[:, :1], atol=1e-8)
    assert np.isnan(fd[:, 1:]).all()
    assert sk.autograd.gradcheck(mul_add, 3, ins, outs, max_inputs_per_var=1, max_outputs_per_var=2, eps=1e-6,
                                 atol=1e-7, rtol=1e-7, show_summary=False)


def pipeline(x, scale):
    y = sk.zeros_like(x, requires_grad=True)
    sk.launch(square, dim=x.size, inputs=[x], outputs=[y])
    z = sk.zeros_like(x, requires_grad=True)
    sk.launch(scale3, dim=x.size, inputs=[y], outputs=[z])
    return [y, z]


def test_python_function_jacobians():
    xn = np.array([1.0, -2.0, 0.5])
    x = grad_arr(xn)
    for fn in (sk.autograd.jacobian, sk.autograd.jacobian_fd):
        jac = fn(pipeline, inputs=[x, 7.0])
        assert sorted(jac) == [(0, 0), (0, 1)]
        np.testing.assert_allclose(jac[(0, 0)].numpy(), np.diag(2 * xn), atol=1e-6)
        np.testing.assert_allclose(jac[(0, 1)].numpy(), np.diag(6 * xn), atol=1e-6)
        only = fn(pipeline, inputs=[x, 7.0], input_output_mask=[("x", "output_1")])
        assert sorted(only) == [(0, 1)]
    np.testing.assert_array_equal(x.numpy(), xn)
    assert sk.autograd.gradcheck(pipeline, inputs=[x, 7.0], eps=1e-6, atol=1e-7, rtol=1e-7, show_summary=False)


def mutating(x):
    sk.launch(increment, dim=x.size, inputs=[x])
    y = sk.zeros_like(x, requires_grad=True)
    sk.launch(square, dim=x.size, inputs=[x], outputs=[y])
    return y


def test_restore_inputs_for_mutating_functions():
    xn = np.array([1.0, 2.0, 3.0])
    x = grad_arr(xn)
    for fn in (sk.autograd.jacobian, sk.autograd.jacobian_fd):
        J = fn(mutating, inputs=[x])[(0, 0)].numpy()
        np.testing.assert_allclose(J, np.diag(2 * (xn + 1)), atol=1e-6)  # every evaluation starts from xn
        np.testing.assert_array_equal(x.numpy(), xn)
    assert sk.autograd.gradcheck(mutating, inputs=[x], eps=1e-6, show_summary=False)
    np.testing.assert_array_equal(x.numpy(), xn)
    # without restoring, the finite differences start from the drifted input and disagree
    assert not sk.autograd.gradcheck(mutating, inputs=[grad_arr(xn)], eps=1e-6, restore_inputs=False,
                                     raise_exception=False, show_summary=False)


def test_gradcheck_errors_and_nan():
    a = grad_arr([1.0, 2.0])
    out = sk.zeros(2, dtype=f64, requires_grad=True)
    with pytest.raises(GradcheckError, match=r"worst \[1, 1\]: adjoint 6 vs finite difference 4"):
        sk.autograd.gradcheck(wrong_kernel, 2, [a], [out], eps=1e-6, show_summary=False)
    assert issubclass(GradcheckError, ValueError) and issubclass(GradcheckError, AssertionError)
    v = sk.array(np.array([[1.0, 2.0, 2.0], [0.0, 0.0, 0.0]]), dtype=sk.vec3d, requires_grad=True)
    norm = sk.zeros(2, dtype=f64, requires_grad=True)
    J = sk.autograd.jacobian(sqrt_norm, 2, [v], [norm])[(0, 0)].numpy()
    np.testing.assert_allclose(J[0, 0], [1 / 3, 2 / 3, 2 / 3], atol=1e-12)
    assert np.isnan(J[1, 1]).all()
    with pytest.raises(ValueError, match="NaN"):
        sk.autograd.gradcheck(sqrt_norm, 2, [v], [norm], show_summary=False)


def test_show_summary_prints_the_errors(capsys):
    a = grad_arr([1.0, 2.0])
    out = sk.zeros(2, dtype=f64, requires_grad=True)
    assert not sk.autograd.gradcheck(wrong_kernel, 2, [a], [out], eps=1e-6, raise_exception=False,
                                     show_summary=True)
    text = capsys.readouterr().out
    assert "d out / d a" in text and "2.000e+00 at (1, 1)" in text and "FAIL" in text
    sk.autograd.gradcheck(scale3, 2, [a], [out], show_summary=False)
    assert capsys.readouterr().out == ""


def test_backward_disabled_kernels():
    a = grad_arr([1.0, 2.0])
    out = sk.zeros(2, dtype=f64, requires_grad=True)
    with pytest.raises(ValueError, match="Kernel must have backward pass enabled.*'no_backward'"):
        sk.autograd.jacobian(no_backward, 2, [a], [out])

    def through(x):
        y = sk.zeros_like(x, requires_grad=True)
        sk.launch(no_backward, dim=x.size, inputs=[x], outputs=[y])
        return y

    with pytest.raises(ValueError, match="Kernel must have backward pass enabled"):
        sk.autograd.jacobian(through, inputs=[a])
    np.testing.assert_allclose(sk.autograd.jacobian_fd(no_backward, 2, [a], [out], eps=1e-6)[(0, 0)].numpy(),
                               3 * np.eye(2), atol=1e-8)


def test_gradcheck_tape_checks_each_recorded_kernel():
    a, b = grad_arr([1.0, 2.0]), sk.array([0.5, -1.5], dtype=f64)
    y, z = (sk.zeros(2, dtype=f64, requires_grad=True) for _ in range(2))
    w = sk.zeros(2, dtype=f64)  # (no_backward is skipped: checking it would raise)
    with sk.Tape() as tape:
        sk.launch(scale3, dim=2, inputs=[a], outputs=[y])
        sk.launch(wrong_kernel, dim=2, inputs=[y], outputs=[z])
        sk.launch(no_backward, dim=2, inputs=[b], outputs=[w])
    kw = dict(eps=1e-6, raise_exception=False, show_summary=False)
    assert not sk.autograd.gradcheck_tape(tape, **kw)
    assert sk.autograd.gradcheck_tape(tape, blacklist_kernels=["wrong_kernel"], **kw)
    assert sk.autograd.gradcheck_tape(tape, whitelist_kernels=["scale3"], **kw)
    assert not sk.autograd.gradcheck_tape(tape, whitelist_kernels=["wrong_kernel"], **kw)
    assert sk.autograd.gradcheck_tape(tape, skip_to_launch_index=2, **kw)
    with pytest.raises(ValueError, match="wrong_kernel"):
        sk.autograd.gradcheck_tape(tape, eps=1e-6, show_summary=False)
    # the recorded arrays keep their values, so the tape still differentiates
    tape.backward(grads={z: np.ones(2)})
    np.testing.assert_allclose(a.grad.numpy(), 27 * a.numpy(), atol=1e-9)  # wrong adjoint 3y * dy/da, y = 3a


def test_function_metadata():
    a, b, ins, outs = mul_add_args()
    meta = FunctionMetadata()
    assert meta.is_empty
    meta.update_from_kernel(mul_add, ins)
    assert (meta.key, meta.input_labels, meta.output_labels) == ("mul_add", ["a", "b", "c"], ["out1", "out2"])
    assert meta.input_is_array(0) and not meta.input_is_array(2) and meta.output_dtypes == [f64, f64]
    meta = FunctionMetadata()
    meta.update_from_function(pipeline, [a, 7.0])
    assert (meta.key, meta.input_labels, meta.output_labels) == ("pipeline", ["x", "scale"], ["output_0", "output_1"])


@pytest.fixture
def plt():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as pyplot

    yield pyplot
    pyplot.close("all")


def test_jacobian_plot_layout(plt, monkeypatch):
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(1))
    a = grad_arr([1.0, 2.0])
    v = sk.array(np.ones((2, 3)), dtype=sk.vec3d, requires_grad=True)

    @sk.kernel
    def two(a: sk.array(dtype=f64), v: sk.array(dtype=sk.vec3d), p: sk.array(dtype=f64), q: sk.array(dtype=f64)):
        i = sk.tid()
        p[i] = a[i] * v[i][0]
        q[i] = v[i][2]

    outs = [sk.zeros(2, dtype=f64, requires_grad=True) for _ in range(2)]
    jac = sk.autograd.jacobian(two, 2, [a, v], outs, input_output_mask=[("v", "p"), ("a", "q")],
                               plot_jacobians=True)
    assert sorted(jac) == [(0, 1), (1, 0)]
    np.testing.assert_allclose(jac[(1, 0)].numpy()[:, :, 0], np.diag(a.numpy()))
    fig = plt.gcf()
    assert shown == [1] and fig.get_suptitle() == "two kernel Jacobian"
    axes = fig.axes[:4]
    assert [ax.axison for ax in axes] == [False, True, True, False]
    assert (axes[1].get_xlabel(), axes[1].get_ylabel()) == ("v", "p")
    assert (axes[2].get_xlabel(), axes[2].get_ylabel()) == ("a", "q")
    assert axes[0].get_gridspec().get_width_ratios() == [2, 6]
    image = axes[1].get_images()[0].get_array()
    np.testing.assert_allclose(np.asarray(image), jac[(1, 0)].numpy().reshape(2, 6))


def test_gradcheck_error_plots(plt, monkeypatch):
    monkeypatch.setattr(plt, "show", lambda: None)
    a = grad_arr([1.0, 2.0])
    out = sk.zeros(2, dtype=f64, requires_grad=True)
    assert not sk.autograd.gradcheck(wrong_kernel, 2, [a], [out], eps=1e-6, raise_exception=False,
                                     show_summary=False, plot_relative_error=True, plot_absolute_error=True)
    figs = [plt.figure(n) for n in plt.get_fignums()]
    assert [f.get_suptitle() for f in figs] == ["wrong_kernel kernel Jacobian relative error",
                                                 "wrong_kernel kernel Jacobian absolute error"]
    rel = np.asarray(figs[0].axes[0].get_images()[0].get_array())
    absolute = np.asarray(figs[1].axes[0].get_images()[0].get_array())
    np.testing.assert_allclose(np.diag(absolute), [1.0, 2.0], atol=1e-6)  # |3x - 2x|
    np.testing.assert_allclose(np.diag(rel), [1 / 3, 1 / 3], atol=1e-6)  # (3x - 2x) / 3x
    with pytest.raises(ValueError, match="Jacobian input index 0: missing label"):
        sk.autograd.jacobian_plot({(0, 0): np.eye(1)}, FunctionMetadata("k", [None], ["o"], [None], [None],
                                                                         [f64], [f64]), show_plot=False)


def test_arrays_without_gradients_are_all_differentiated_on_copies():
    # simkit's convenience: with no input or no output requiring a gradient, every float array is differentiated
    a, b = sk.array([0.5, -1.0], dtype=f64), sk.array([2.0, 3.0], dtype=f64)
    outs = [sk.full(2, 9.0, dtype=f64), sk.zeros(2, dtype=f64)]
    jac = sk.autograd.jacobian(mul_add, 2, [a, b, 1.0], outs)
    assert sorted(jac) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    np.testing.assert_allclose(jac[(1, 1)].numpy(), np.diag([-4.0, -6.0]))
    np.testing.assert_allclose(jac[(0, 1)].numpy(), np.diag(np.cos([0.5, -1.0])))
    assert not a.requires_grad and a.grad is None
    np.testing.assert_array_equal(outs[0].numpy(), 9.0)
