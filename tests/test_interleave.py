"""Straight-line kernels run several launch indices per CUDA thread, interleaved (kernels/interleave.py).

What must hold: every launch index still runs its statements in its own order (a read after the
same index's write sees it, also through an aliased array), every index runs exactly once (sizes
around the group size, grids capped by max_blocks), and per-index state (random streams, tuple
results of funcs) is not shared between the interleaved copies. The suite's emulated GPU counts
launches of 1024 threads or more as filling it, so these run interleaved there; on the CPU they
check the same numbers against numpy.
"""
import numpy as np
import pytest
from cuda_emulator import FakeDriver

import simkit as sk
from simkit.kernels import codegen, interleave, module
from simkit.kernels.backends.cuda import driver


@sk.kernel
def axpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def write_then_read(x: sk.array(dtype=float), y: sk.array(dtype=float), z: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = x[i] * 2.0
    z[i] = y[i] + 1.0


@sk.kernel
def square_plus(x: sk.array(dtype=float), z: sk.array(dtype=float)):
    i = sk.tid()
    z[i] = 2.0 * x[i] * x[i] + 1.0


@sk.func
def split(i: int):
    return i // 7, i % 7


@sk.kernel
def per_index_state(seed: int, u: sk.array(dtype=float), q: sk.array(dtype=int), v: sk.array(dtype=sk.vec3)):
    i = sk.tid()
    s = sk.rand_init(seed, i)
    u[i] = sk.randf(s) + sk.randf(s)
    a, b = split(i)
    q[i] = a * 10 + b
    v[i] = sk.cross(v[i], sk.vec3(1.0, 0.0, 0.0)) + sk.vec3(float(a), 0.0, 0.0)


@sk.kernel
def branchy(x: sk.array(dtype=float)):
    i = sk.tid()
    if x[i] > 0.0:
        x[i] = 0.0


@sk.kernel
def grid2d(x: sk.array(dtype=float, ndim=2)):
    i, j = sk.tid()
    x[i, j] = 1.0


def _ir(kernel):
    spec = kernel.specs[None]
    spec.build_ir(module.compile_options())
    return spec.ir


def test_which_kernels_interleave():
    assert interleave.eligible(_ir(axpy)) and interleave.eligible(_ir(per_index_state))
    assert not interleave.eligible(_ir(branchy))  # a branch: indices would take different paths
    assert not interleave.eligible(_ir(grid2d))  # 2D launch indices


def test_loads_of_every_copy_come_before_the_first_store():
    spec = axpy.specs[None]
    fn = _ir(axpy)
    src = codegen.gen_kernel(fn, module.compile_options())
    body = src[src.index(f"{spec.cname}_fwd_x{interleave.WAYS}("):]
    last_load = max(body.index(f"sk::load<SKC>(y, tid_1_{k})") for k in range(interleave.WAYS))
    assert last_load < body.index("sk::store<SKC>(y, tid_1_0")
    assert f"{spec.cname}_fwd_x{interleave.WAYS}<false>(a, b, _i, _step)" in src  # the CUDA entry calls it


@pytest.mark.parametrize("n", [1, 1023, 1024, 4097, 20011])
def test_every_index_runs_once(device, n):
    rng = np.random.default_rng(n)
    x0, y0 = rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32)
    x, y = sk.array(x0, device=device), sk.array(y0, device=device)
    sk.launch(axpy, n, inputs=[1.5, x, y])
    np.testing.assert_allclose(y.numpy(), 1.5 * x0 + y0, rtol=1e-6, atol=1e-6)
    fake = driver.cu() if device.startswith("cuda") else None
    if isinstance(fake, FakeDriver):  # 4 indices per thread from 1024 on (4 SMs of 64 threads)
        per_block = 256 * (interleave.WAYS if n >= 1024 else 1)
        assert fake.launches[-1][1:3] == ((n + per_block - 1) // per_block, 256)
    y = sk.array(y0, device=device)
    sk.launch(axpy, n, inputs=[1.5, x, y], max_blocks=3)  # many grid-stride groups per thread, then the rest
    np.testing.assert_allclose(y.numpy(), 1.5 * x0 + y0, rtol=1e-6, atol=1e-6)


def test_each_index_keeps_its_own_order(device):
    n = 5000
    x0 = np.arange(n, dtype=np.float32)
    x, y, z = sk.array(x0, device=device), sk.zeros(n, device=device), sk.zeros(n, device=device)
    sk.launch(write_then_read, n, inputs=[x, y, z])
    np.testing.assert_array_equal(z.numpy(), 2.0 * x0 + 1.0)
    sk.launch(write_then_read, n, inputs=[x, x, z])  # x doubled in place, then read back by the same index
    np.testing.assert_array_equal(x.numpy(), 2.0 * x0)
    np.testing.assert_array_equal(z.numpy(), 2.0 * x0 + 1.0)


def test_copies_do_not_share_state(device):
    n = 3000
    v0 = np.random.default_rng(2).normal(size=(n, 3)).astype(np.float32)
    u, q = sk.zeros(n, device=device), sk.zeros(n, dtype=int, device=device)
    v = sk.array(v0, dtype=sk.vec3, device=device)
    sk.launch(per_index_state, n, inputs=[7, u, q, v])
    ref_u, ref_q = sk.zeros(n, device="cpu"), sk.zeros(n, dtype=int, device="cpu")
    sk.launch(per_index_state, n, inputs=[7, ref_u, ref_q, sk.array(v0, dtype=sk.vec3, device="cpu")])
    np.testing.assert_array_equal(u.numpy(), ref_u.numpy())  # the same stream per index on every device
    assert len(np.unique(u.numpy())) > n - 5  # (and not one shared state)
    i = np.arange(n)
    np.testing.assert_array_equal(q.numpy(), (i // 7) * 10 + i % 7)
    expect = np.cross(v0, [1.0, 0.0, 0.0]) + np.stack([i // 7, 0 * i, 0 * i], 1)
    np.testing.assert_allclose(v.numpy(), expect, rtol=1e-6, atol=1e-5)


def test_gradient_through_interleaved_forward(device):
    n = 4096
    x0 = np.linspace(-1.0, 1.0, n)
    x = sk.array(x0, dtype=float, device=device, requires_grad=True)
    z = sk.zeros(n, device=device, requires_grad=True)
    tape = sk.Tape()
    with tape:
        sk.launch(square_plus, n, inputs=[x, z])
    np.testing.assert_allclose(z.numpy(), 2.0 * x0 * x0 + 1.0, rtol=1e-6)
    tape.backward(grads={z: sk.array(np.full(n, 3.0), dtype=float, device=device)})
    np.testing.assert_allclose(x.grad.numpy(), 12.0 * x0, rtol=1e-5, atol=1e-6)
