"""Launch API details that Warp users rely on: ``Launch`` objects built directly, recorded adjoint
launches, composite (vector / matrix / quaternion / transform) arguments refusing single numbers,
``None`` struct arguments, and launches past 2**31 threads."""
import numpy as np
import pytest

import simkit as sk
from simkit.runtime.launch import bounds_bytes


@sk.struct
class Params:
    i: int
    f: float


@sk.kernel
def square(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i] * x[i]


@sk.kernel
def composites(v: sk.vec3, m: sk.mat22, q: sk.quat, t: sk.transform, p: Params, k: int,
               out: sk.array(dtype=float)):
    for c in range(3):
        out[c] = v[c]
    out[3] = m[0, 0]
    out[4] = m[0, 1]
    out[5] = m[1, 0]
    out[6] = m[1, 1]
    for c in range(4):
        out[7 + c] = q[c]
    for c in range(7):
        out[11 + c] = t[c]
    out[18] = float(p.i) + p.f
    out[19] = float(k)


@sk.kernel
def vec3_param(v: sk.vec3, out: sk.array(dtype=sk.vec3)):
    out[0] = v


@sk.kernel
def struct_param(p: Params, out: sk.array(dtype=float)):
    out[0] = p.f


@sk.kernel
def arange(out: sk.array(dtype=int)):
    i = sk.tid()
    out[i] = i


@sk.kernel
def no_tid(out: sk.array(dtype=int)):
    sk.atomic_add(out, 0, 1)


def test_empty_launch_has_zero_defaults():
    out = sk.full(20, -1.0, dtype=float, device="cpu")
    cmd = sk.Launch(composites, "cpu")
    assert cmd.bounds == (0,) and not cmd.adjoint
    cmd.launch()  # no threads yet
    np.testing.assert_array_equal(out.numpy(), -1.0)
    cmd.set_param_by_name("out", out)
    cmd.set_dim(1)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), np.zeros(20))  # transforms too: zeros, not the identity
    cmd.set_param_by_name("t", sk.transform(sk.vec3(1.0, 2.0, 3.0), sk.quat_identity()))
    cmd.set_param_at_index(0, (4.0, 5.0, 6.0))
    cmd.set_param_by_name("p", Params(i=2, f=0.5))
    cmd.set_param_by_name("k", 7)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy()[[0, 1, 2, 11, 12, 13, 17, 18, 19]], [4, 5, 6, 1, 2, 3, 1, 2.5, 7])
    assert cmd.params[0] == (1,) and cmd.params[-1] is out and cmd.fwd_args[5] == 7


def test_empty_launch_fills_an_array():
    out = sk.zeros(10, dtype=int, device="cpu")
    cmd = sk.Launch(arange, "cpu")
    cmd.set_dim(5)
    cmd.set_param_by_name("out", out)
    cmd.launch()
    np.testing.assert_array_equal(out.numpy(), [0, 1, 2, 3, 4, 0, 0, 0, 0, 0])
    cmd2 = sk.Launch(arange, "cpu", fwd_args=[out], bounds=10)
    cmd2.launch()
    np.testing.assert_array_equal(out.numpy(), np.arange(10))


def test_recorded_adjoint_launch(device):
    x = sk.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True, device=device)
    y = sk.empty_like(x)
    y.grad.fill_(1.0)
    cmd = sk.launch(square, dim=3, inputs=[x, y], adj_inputs=[None, None], adjoint=True, device=device,
                    record_cmd=True)
    assert cmd.adjoint
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)  # recorded, not run
    cmd.launch()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])  # d(x^2)/dx = 2x
    y.grad.fill_(1.0)  # (the adjoint of the store consumed the output's gradient)
    cmd.launch()  # input adjoints accumulate
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])


def test_empty_adjoint_launch_with_explicit_adjoints(device):
    x = sk.array([1.0, 2.0, 3.0], dtype=float, requires_grad=True, device=device)
    y = sk.empty_like(x)
    y.grad.fill_(1.0)
    cmd = sk.Launch(square, device, adjoint=True)
    cmd.set_param_by_name("x", x)
    cmd.set_param_by_name("y", y)
    cmd.set_dim(3)
    cmd.launch()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])
    # new arrays (no .grad of their own) with explicit adjoint arrays, and a new size
    x2 = sk.array([4.0, 5.0, 6.0, 7.0], dtype=float, device=device)
    gx2 = sk.zeros_like(x2)
    gy = np.array([1.0, 1.0, 2.0, 0.5])
    gy2 = sk.array(gy, dtype=float, device=device)
    cmd.set_param_by_name("x", x2)
    cmd.set_param_by_name("y", sk.empty_like(x2))
    cmd.set_param_by_name("x", gx2, adjoint=True)
    cmd.set_param_at_index(1, gy2, adjoint=True)
    cmd.set_dim(4)
    cmd.launch()
    np.testing.assert_allclose(gx2.numpy(), 2.0 * np.array([4.0, 5.0, 6.0, 7.0]) * gy)
    assert cmd.adj_args[0] is gx2 and len(cmd.params) == 1 + 2 + 2


def test_adjoint_arguments_are_checked():
    x = sk.array([1.0, 2.0], dtype=float, requires_grad=True, device="cpu")
    y = sk.zeros_like(x)
    cmd = sk.Launch(square, "cpu", adjoint=True, fwd_args=[x, y], bounds=2)
    with pytest.raises(TypeError, match="adjoint of argument 'x'.*got array\\(dtype=int32"):
        cmd.set_param_by_name("x", sk.zeros(2, dtype=int, device="cpu"), adjoint=True)
    with pytest.raises(TypeError, match="adjoint of argument 'y'.*got float"):
        cmd.set_param_by_name("y", 1.0, adjoint=True)
    with pytest.raises(ValueError, match="takes 2 arguments.*give 1 adjoints"):
        sk.launch(square, dim=2, inputs=[x, y], adj_inputs=[None], adjoint=True, device="cpu")
    fwd = sk.Launch(square, "cpu")
    with pytest.raises(ValueError, match="forward.*adjoint=True"):
        fwd.set_param_by_name("x", x, adjoint=True)


def test_launch_constructor_refusals():
    with pytest.raises(TypeError, match="hooks, params and params_addr"):
        sk.Launch(square, "cpu", params=[1])
    with pytest.raises(TypeError, match="takes 2 arguments.*fwd_args has 1"):
        sk.Launch(square, "cpu", fwd_args=[None])

    @sk.kernel
    def generic(a: sk.array(dtype=sk.Any)):
        pass

    with pytest.raises(TypeError, match="generic.*record_cmd=True"):
        sk.Launch(generic, "cpu")


@pytest.mark.parametrize("kernel_type", [(sk.vec3, "vec3f"), (sk.mat22, "mat22f"), (sk.quat, "quatf"),
                                         (sk.transform, "transformf"), (sk.vec3d, "vec3d")])
@pytest.mark.parametrize("value", [123, 1.5, sk.float32(1.5), sk.int32(2), True, np.float64(2.0)])
def test_single_value_for_a_composite_is_refused(kernel_type, value):
    t, wname = kernel_type
    name = "p"

    @sk.kernel
    def one(p: t):
        pass

    # a TypeError, also the RuntimeError Warp raises
    for err in (TypeError, RuntimeError):
        with pytest.raises(err, match=f"argument '{name}' expects {wname} but got a single value of type "
                                      f"{type(value).__name__}; construct.*{wname}\\(...\\)"):
            sk.launch(one, dim=1, inputs=[value], device="cpu")
    cmd = sk.Launch(one, "cpu")
    with pytest.raises(RuntimeError, match=f"argument '{name}' expects {wname} but got a single value"):
        cmd.set_param_by_name(name, value)
    with pytest.raises(RuntimeError, match=f"argument '{name}' expects {wname} but got a single value"):
        cmd.set_param_at_index(0, value)


def test_warp_also_refuses_a_single_value():
    wp = pytest.importorskip("warp")
    wp.config.quiet = True

    @wp.kernel
    def one(v: wp.vec3):
        pass

    with pytest.raises(RuntimeError, match="argument 'v' expects vec3f but got a single value of type int"):
        wp.launch(one, dim=1, inputs=[123], device="cpu")


def test_containers_for_a_composite_are_accepted():
    out = sk.zeros(1, dtype=sk.vec3, device="cpu")
    for value in ((1.0, 2.0, 3.0), [1.0, 2.0, 3.0], np.array([1.0, 2.0, 3.0]), sk.vec3(1.0, 2.0, 3.0)):
        out.zero_()
        sk.launch(vec3_param, dim=1, inputs=[value, out], device="cpu")
        np.testing.assert_array_equal(out.numpy()[0], [1.0, 2.0, 3.0])
    for value, got in ((None, "None"), ((1.0, 2.0), "tuple")):
        with pytest.raises(ValueError, match=f"Failed to convert argument for param v to vec3f.*"
                                             f"expected 3 components, got {got}"):
            sk.launch(vec3_param, dim=1, inputs=[value, out], device="cpu")
    with pytest.raises(TypeError, match="argument 'v' expects vec3f but got vec4"):
        sk.launch(vec3_param, dim=1, inputs=[sk.vec4(), out], device="cpu")


def test_none_struct_argument_is_refused():
    out = sk.zeros(1, dtype=float, device="cpu")
    for err in (RuntimeError, TypeError):
        with pytest.raises(err, match="argument 'p' expects Params but got None"):
            sk.launch(struct_param, dim=1, inputs=[None, out], device="cpu")
    sk.launch(struct_param, dim=1, inputs=[Params(f=2.5), out], device="cpu")
    assert out.numpy()[0] == 2.5


def test_launch_bounds_past_int32():
    big = 2**31 + 5
    b, size = bounds_bytes((big,))  # a 1D launch: the thread count is 64-bit
    assert size == big
    assert np.frombuffer(b[24:32], dtype=np.int64)[0] == big
    with pytest.raises(ValueError, match="extent 2147483653 of dimension 1 exceeds 2\\*\\*31 - 1"):
        bounds_bytes((2, big))
    b, size = bounds_bytes((2**16, 2**16))  # a 2D launch of 2**32 threads: fine
    assert size == 2**32


def test_launches_past_int32_are_checked():
    """A 1D launch past 2**31 - 1 of a kernel reading tid() is refused (its int32 index would wrap); CPU
    launches of more threads run (tests/test_cpu_large_launch.py)."""
    out = sk.zeros(1, dtype=int, device="cpu")
    with pytest.raises(ValueError, match="kernel 'arange' uses tid\\(\\) with extent 2147483648.*int32"):
        sk.launch(arange, dim=2**31, inputs=[out], device="cpu")
    cmd2 = sk.launch(arange, dim=4, inputs=[out], device="cpu", record_cmd=True)
    with pytest.raises(ValueError, match="uses tid\\(\\)"):
        cmd2.set_dim(2**31)
    assert out.numpy()[0] == 0


def test_large_launch_on_the_gpu(cuda_device):
    """More threads than the grid holds: a grid-stride loop with 64-bit indices covers all of them."""
    out = sk.zeros(1, dtype=int, device=cuda_device)
    n = 3 * 1024 * 1024 + 7  # (the emulator is slow: the 64-bit path is checked by the bounds test above)
    sk.launch(no_tid, dim=n, inputs=[out], device=cuda_device, max_blocks=3)
    assert out.numpy()[0] == n


@sk.kernel
def visits_1d(counts: sk.array(dtype=sk.int32)):
    i = sk.tid()
    sk.atomic_add(counts, i, 1)


@sk.kernel
def visits_2d(counts: sk.array(dtype=sk.int32, ndim=2)):
    i, j = sk.tid()
    sk.atomic_add(counts, i, j, 1)


@sk.kernel
def visits_3d(counts: sk.array(dtype=sk.int32, ndim=3)):
    i, j, k = sk.tid()
    sk.atomic_add(counts, i, j, k, 1)


VISITS = {1: visits_1d, 2: visits_2d, 3: visits_3d}


@pytest.mark.parametrize("launch_dim,tids", [(128, 2), (64, 3), ((8, 16), 1), ((4, 8, 3), 2), ((4, 8, 3, 2), 2),
                                             ((5, 6), 3)])
def test_tid_arity_other_than_the_launch(device, launch_dim, tids):
    """As Warp: tid() gives the leading indices of a launch with more dimensions (each visited once per
    combination of the others), and index 0 for dimensions the launch lacks (extents of 1)."""
    dims = (launch_dim,) if isinstance(launch_dim, int) else launch_dim
    kept = (dims + (1,) * tids)[:tids]
    counts = sk.zeros(kept, dtype=sk.int32, device=device)
    sk.launch(VISITS[tids], dim=launch_dim, inputs=[counts], device=device)
    np.testing.assert_array_equal(counts.numpy(), np.full(kept, np.prod(dims) // np.prod(kept), np.int32))
    cmd = sk.launch(VISITS[tids], dim=launch_dim, inputs=[counts], device=device, record_cmd=True)
    cmd.launch()
    np.testing.assert_array_equal(counts.numpy(), np.full(kept, 2 * (np.prod(dims) // np.prod(kept)), np.int32))


@sk.kernel
def square_2d(x: sk.array(dtype=float, ndim=2), y: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    y[i, j] = x[i, j] * x[i, j]


def test_tid_padding_on_a_tape(device):
    """A 2D-tid kernel launched over one dimension differentiates like its (n, 1) launch."""
    xs = np.array([[1.0], [2.0], [-3.0]], np.float32)
    x = sk.array(xs, dtype=float, requires_grad=True, device=device)
    y = sk.zeros((3, 1), dtype=float, requires_grad=True, device=device)
    tape = sk.Tape()
    with tape:
        sk.launch(square_2d, dim=3, inputs=[x, y], device=device)
    tape.backward(grads={y: sk.array(np.ones((3, 1), np.float32), dtype=float, device=device)})
    np.testing.assert_array_equal(y.numpy(), xs * xs)
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * xs)
