"""JAX calls into simkit as Warp's: jax_kernel / jax_callable options, vmap batching, gradients, dtypes, devices.

(tests/test_interop.py has the basic DLPack round trip and one jit/grad/vmap check.)
"""
import os
import subprocess
import sys
import textwrap
from functools import partial
from unittest import mock

import numpy as np
import pytest

import simkit as sk

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture
def x64():
    with jax.enable_x64(True):
        yield


@sk.kernel
def k_add(a: sk.array(dtype=float), b: sk.array(dtype=float), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = a[i] + b[i]


@sk.kernel
def k_sincos(a: sk.array(dtype=float), s: sk.array(dtype=float), c: sk.array(dtype=float)):
    i = sk.tid()
    s[i] = sk.sin(a[i])
    c[i] = sk.cos(a[i])


@sk.kernel
def k_diag(out: sk.array(dtype=sk.mat33)):
    i = sk.tid()
    d = float(i + 1)
    out[i] = sk.mat33(d, 0.0, 0.0, 0.0, 2.0 * d, 0.0, 0.0, 0.0, 3.0 * d)


@sk.kernel
def k_in_out(a: sk.array(dtype=float), b: sk.array(dtype=float), c: sk.array(dtype=float)):
    i = sk.tid()
    b[i] += a[i]
    c[i] = 2.0 * a[i]


@sk.kernel
def k_matmul(a: sk.array2d(dtype=float), b: sk.array2d(dtype=float), c: sk.array2d(dtype=float)):
    i, j = sk.tid()
    s = float(0.0)
    for k in range(a.shape[1]):
        s += a[i, k] * b[k, j]
    c[i, j] = s


@sk.kernel
def k_lookup(table: sk.array(dtype=float), idx: sk.array(dtype=int), out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = table[idx[i]]


@sk.kernel
def k_rowsum(m: sk.array2d(dtype=float), sums: sk.array(dtype=float)):
    i, j = sk.tid()
    sk.atomic_add(sums, i, m[i, j])


@sk.kernel
def k_poly64(a: sk.array(dtype=sk.float64), b: sk.array(dtype=sk.vec2d), s: sk.float64,
             c: sk.array(dtype=sk.float64), d: sk.array(dtype=sk.vec2d)):
    i = sk.tid()
    c[i] = sk.sin(a[i]) * a[i] * s + sk.dot(b[i], b[i])
    d[i] = b[i] * (a[i] * a[i])


@sk.kernel
def k_outer_scale(a: sk.array3d(dtype=float), b: sk.array3d(dtype=float)):
    i, j = sk.tid()
    for m in range(a.shape[0]):
        b[m, i, j] = a[m, i, j] * 2.0


@sk.kernel
def k_count(a: sk.array(dtype=float), n: sk.array(dtype=int), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a[i] * a[i]
    if a[i] > 0.0:
        sk.atomic_add(n, 0, 1)


@sk.kernel
def k_inc2d(x: sk.array2d(dtype=float), y: sk.array2d(dtype=float)):
    i, j = sk.tid()
    y[i, j] = x[i, j] + 1.0


DEAD_TID = False


@sk.kernel
def k_dead_tid(x: sk.array(dtype=float), y: sk.array(dtype=float)):
    if DEAD_TID:
        i = sk.tid()
        y[i] = x[i]


def f_scale(a: sk.array(dtype=float), b: sk.array(dtype=sk.vec2), s: float, c: sk.array(dtype=float),
            d: sk.array(dtype=sk.vec2)):
    sk.launch(k_scale, dim=a.shape, inputs=[a, s], outputs=[c])
    sk.launch(k_scale_vec, dim=b.shape, inputs=[b, s], outputs=[d])


@sk.kernel
def k_scale(a: sk.array(dtype=float), s: float, out: sk.array(dtype=float)):
    i = sk.tid()
    out[i] = a[i] * s


@sk.kernel
def k_scale_vec(a: sk.array(dtype=sk.vec2), s: float, out: sk.array(dtype=sk.vec2)):
    i = sk.tid()
    out[i] = a[i] * s


def f_in_out(a: sk.array(dtype=float), b: sk.array(dtype=float), c: sk.array(dtype=float)):
    sk.launch(k_in_out, dim=a.shape, inputs=[a, b], outputs=[c])


def f_rowsum(m: sk.array2d(dtype=float), sums: sk.array(dtype=float)):
    sk.launch(k_rowsum, dim=m.shape, inputs=[m, sums])


# ---------------------------------------------------------------------------- dtypes and devices


def test_dtype_conversions_round_trip():
    names = ["float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
             "uint32", "uint64"]
    for n in names:
        t = getattr(sk, n)
        assert sk.dtype_to_jax(t) is getattr(jnp, n)
        assert sk.dtype_from_jax(getattr(jnp, n)) is t and sk.dtype_from_jax(jnp.dtype(n)) is t
    assert sk.dtype_to_jax(sk.bool) is jnp.bool_ and sk.dtype_from_jax(jnp.bool_) is sk.bool
    assert sk.dtype_to_jax(float) is jnp.float32
    with pytest.raises(TypeError, match="vec3"):
        sk.dtype_to_jax(sk.vec3)
    with pytest.raises(TypeError, match="complex64"):
        sk.dtype_from_jax(jnp.complex64)


def test_devices_map_process_local_gpus():
    gpus = [mock.Mock(platform="gpu", local_hardware_id=1), mock.Mock(platform="gpu", local_hardware_id=0)]
    cpu = mock.Mock(platform="cpu")
    fake = {"cuda:0": mock.Mock(is_cuda=True, ordinal=0), "cuda:2": mock.Mock(is_cuda=True, ordinal=2),
            "cpu": mock.Mock(is_cuda=False)}
    with mock.patch.object(jax, "local_devices", side_effect=lambda backend: {"cuda": gpus, "cpu": [cpu]}[backend]), \
            mock.patch.object(sk, "get_device", side_effect=fake.__getitem__):
        assert sk.device_to_jax("cuda:0") is gpus[1] and sk.device_to_jax("cpu") is cpu
        with pytest.raises(RuntimeError, match="not available"):
            sk.device_to_jax("cuda:2")
    mine = mock.Mock(platform="gpu", id=7, process_index=1, local_hardware_id=0)
    other = mock.Mock(platform="gpu", id=0, process_index=0, local_hardware_id=None)
    with mock.patch.object(jax, "process_index", return_value=1), \
            mock.patch.object(sk, "get_cuda_device", return_value="dev") as get:
        assert sk.device_from_jax(mine) == "dev"
        get.assert_called_once_with(0)  # the local ordinal, not the global id 7
        with pytest.raises(RuntimeError, match="belongs to process 0"):
            sk.device_from_jax(other)
    assert sk.device_from_jax(sk.device_to_jax("cpu")).is_cpu


# ---------------------------------------------------------------------------- jax_kernel


def test_jax_kernel_outputs_are_a_list():
    a = jnp.arange(8, dtype=jnp.float32)
    (y,) = jax.jit(sk.jax_kernel(k_add))(a, jnp.ones(8, jnp.float32))
    np.testing.assert_array_equal(y, np.arange(8) + 1.0)
    s, c = jax.jit(sk.jax_kernel(k_sincos, num_outputs=2))(a)
    np.testing.assert_allclose(s, np.sin(np.arange(8)), rtol=1e-6)
    np.testing.assert_allclose(c, np.cos(np.arange(8)), rtol=1e-6, atol=1e-7)
    (d,) = jax.jit(lambda: sk.jax_kernel(k_diag)(launch_dims=3))()  # no inputs: the launch dims give the shape
    assert d.shape == (3, 3, 3)
    np.testing.assert_array_equal(d[2], np.diag([3.0, 6.0, 9.0]))


def test_jax_kernel_in_out_and_cache():
    f = sk.jax_kernel(k_in_out, num_outputs=2, in_out_argnames=["b"])
    assert f is sk.jax_kernel(k_in_out, num_outputs=2, in_out_argnames=["b"])
    assert f is not sk.jax_kernel(k_in_out, num_outputs=2)
    b0 = jnp.arange(6, dtype=jnp.float32)
    b, c = jax.jit(f)(jnp.ones(6, jnp.float32), b0)
    np.testing.assert_array_equal(b, np.arange(6) + 1.0)
    np.testing.assert_array_equal(c, np.full(6, 2.0))
    np.testing.assert_array_equal(b0, np.arange(6))  # the JAX input is untouched
    with pytest.raises(ValueError, match="duplicate"):
        sk.jax_kernel(k_in_out, num_outputs=2, in_out_argnames=["b", "b"])
    with pytest.raises(ValueError, match="before output-only"):
        sk.jax_kernel(k_in_out, num_outputs=2, in_out_argnames=["c"])
    with pytest.raises(ValueError, match="did not match"):
        sk.jax_kernel(k_in_out, num_outputs=2, in_out_argnames=["z"])
    with pytest.raises(NotImplementedError, match="not differentiable"):
        jax.grad(lambda a: f(a, b0)[1].sum())(jnp.ones(6, jnp.float32))


def test_jax_kernel_launch_and_output_dims():
    mm = sk.jax_kernel(k_matmul, launch_dims=(3, 4))
    a, b = jnp.full((3, 2), 2.0, jnp.float32), jnp.full((2, 4), 3.0, jnp.float32)
    (c,) = jax.jit(mm)(a, b)
    np.testing.assert_array_equal(c, np.full((3, 4), 12.0))
    (c,) = jax.jit(lambda a, b: mm(a, b, launch_dims=(2, 4), output_dims=(2, 4)))(a, b)  # per call
    np.testing.assert_array_equal(c, np.full((2, 4), 12.0))
    # output_dims as JAX shapes (with the element dims) or simkit shapes
    sv = sk.jax_kernel(k_scale_vec)
    x = jnp.arange(8.0, dtype=jnp.float32).reshape(4, 2)
    for od in ((4, 2), 4, {"out": (4,)}):
        (y,) = sv(x, 3.0, output_dims=od)
        np.testing.assert_array_equal(y, 3.0 * np.asarray(x))
    with pytest.raises(TypeError, match="float32"):
        sv(x.astype(jnp.int32), 1.0)
    with pytest.raises(TypeError, match=r"ending in \(2,\)"):
        sv(jnp.ones((4, 3), jnp.float32), 1.0)


def test_jax_kernel_gradients_match_finite_differences(x64):
    f = sk.jax_kernel(k_poly64, num_outputs=2)
    rng = np.random.RandomState(1)
    a0, b0 = rng.randn(5), rng.randn(5, 2)
    w = rng.randn(5, 2)

    def loss_np(a, b):
        c = np.sin(a) * a * 1.5 + (b * b).sum(1)
        d = b * (a * a)[:, None]
        return (c * c).sum() + (d * w).sum()

    def loss(a, b):
        c, d = f(a, b, 1.5)
        return (c * c).sum() + (d * w).sum()

    ga, gb = jax.jit(jax.grad(loss, argnums=(0, 1)))(jnp.asarray(a0), jnp.asarray(b0))
    h = 1e-6
    fa = [(loss_np(a0 + h * e, b0) - loss_np(a0 - h * e, b0)) / (2 * h) for e in np.eye(5)]
    fb = [(loss_np(a0, b0 + h * e.reshape(5, 2)) - loss_np(a0, b0 - h * e.reshape(5, 2))) / (2 * h)
          for e in np.eye(10)]
    np.testing.assert_allclose(ga, fa, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.asarray(gb).ravel(), fb, rtol=1e-6, atol=1e-8)


def test_float64_arrays_need_jax_x64():
    f = sk.jax_kernel(k_poly64, num_outputs=2)
    with jax.enable_x64(False), pytest.raises(TypeError, match="jax_enable_x64"):
        f(np.ones(3), np.ones((3, 2)), 1.0)


def test_jax_kernel_grad_with_integer_output():
    f = sk.jax_kernel(k_count, num_outputs=2, output_dims={"n": 1})
    x = jnp.array([-1.0, 2.0, 3.0], jnp.float32)
    n, y = f(x)
    assert int(n[0]) == 2
    np.testing.assert_allclose(jax.grad(lambda x: f(x)[1].sum())(x), 2 * np.asarray(x))


@pytest.mark.parametrize("vmap_method", ["broadcast_all", "sequential", "expand_dims"])
def test_jax_kernel_vmap(vmap_method):
    add = sk.jax_kernel(k_add, vmap_method=vmap_method)
    a = jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4)
    b = jnp.ones(4, jnp.float32)
    (y,) = jax.jit(jax.vmap(add, in_axes=(0, None)))(a, b)
    np.testing.assert_array_equal(y, np.asarray(a) + 1.0)
    (y,) = jax.vmap(add, in_axes=(1, None), out_axes=1)(a, jnp.ones(3, jnp.float32))
    np.testing.assert_array_equal(y, np.asarray(a) + 1.0)
    # explicit launch dims grow with the batch; an unbatched table is shared
    look = sk.jax_kernel(k_lookup, vmap_method=vmap_method)
    table = jnp.arange(10.0, dtype=jnp.float32) * 10
    idx = jnp.array([[1, 2], [9, 0], [5, 5]], jnp.int32)
    (y,) = jax.jit(jax.vmap(partial(look, launch_dims=2), in_axes=(None, 0)))(table, idx)
    np.testing.assert_array_equal(y, np.asarray(table)[np.asarray(idx)])
    # input-output arrays
    rs = sk.jax_kernel(k_rowsum, in_out_argnames=["sums"], vmap_method=vmap_method)
    m = jnp.arange(24.0, dtype=jnp.float32).reshape(2, 3, 4)
    (s,) = jax.jit(jax.vmap(rs, in_axes=(2, 0)))(m, jnp.zeros((4, 2), jnp.float32))
    np.testing.assert_array_equal(s, np.asarray(m).sum(axis=1).T)
    # gradients of a batched call
    sq = sk.jax_kernel(k_count, num_outputs=2, output_dims={"n": 1}, vmap_method=vmap_method)
    g = jax.grad(lambda a: jax.vmap(lambda r: sq(r)[1])(a).sum())(a)
    np.testing.assert_allclose(g, 2 * np.asarray(a))


def test_jax_kernel_traced_scalar_under_vmap():
    sc = sk.jax_kernel(k_scale)
    a = jnp.ones((2, 3), jnp.float32)
    (y,) = jax.vmap(lambda r, s: sc(r, s), in_axes=(0, None))(a, jnp.float32(4.0))
    np.testing.assert_array_equal(y, np.full((2, 3), 4.0))
    with pytest.raises(Exception, match="varies across the vmap batch"):
        jax.block_until_ready(jax.vmap(lambda r, s: sc(r, s))(a, jnp.array([1.0, 2.0], jnp.float32)))
    (y,) = jax.vmap(lambda r, s: sk.jax_kernel(k_scale, vmap_method="sequential")(r, s))(
        a, jnp.array([1.0, 2.0], jnp.float32))
    np.testing.assert_array_equal(y, [[1.0] * 3, [2.0] * 3])


def test_jax_kernel_enable_backward_as_warp():
    f = sk.jax_kernel(k_outer_scale, launch_dims=(4, 4), enable_backward=True)
    a = jnp.ones((3, 2, 4, 4), jnp.float32)  # vmapped over 3; the kernel loops over the 2
    (y,) = jax.vmap(f)(a)  # outputs take the first input's shape; launch dims stay (4, 4) under vmap
    np.testing.assert_array_equal(y, np.full((3, 2, 4, 4), 2.0))
    g = jax.grad(lambda a: jax.vmap(f)(a)[0].sum())(a)
    np.testing.assert_array_equal(g, np.full((3, 2, 4, 4), 2.0))
    with pytest.raises(TypeError, match="launch_dims cannot be overridden"):
        f(a[0], launch_dims=(4, 4))
    with pytest.raises(TypeError, match="output_dims is not supported"):
        f(a[0], output_dims=(2, 4, 4))
    with pytest.raises(TypeError, match="vmap_method cannot be overridden"):
        f(a[0], vmap_method="sequential")
    with pytest.raises(NotImplementedError, match="output_dims"):
        sk.jax_kernel(k_outer_scale, output_dims=(2, 4, 4), enable_backward=True)
    with pytest.raises(NotImplementedError, match="in_out_argnames"):
        sk.jax_kernel(k_in_out, num_outputs=2, in_out_argnames=["b"], enable_backward=True)


def test_jax_kernel_block_dim_and_side_effect():
    for bad, err in ((0, ValueError), (-1, ValueError), (True, TypeError), (1.5, TypeError)):
        with pytest.raises(err, match="block_dim"):
            sk.jax_kernel(k_add, block_dim=bad)
    assert sk.jax_kernel(k_add, block_dim=np.int64(64)).block_dim == 64
    assert sk.jax_kernel(k_add).block_dim is None
    f = sk.jax_kernel(k_add, has_side_effect=True)
    (y,) = jax.jit(f)(jnp.ones(3, jnp.float32), jnp.ones(3, jnp.float32))
    np.testing.assert_array_equal(y, [2.0, 2.0, 2.0])


def test_jax_kernel_refuses_oversized_tid_extents_while_tracing():
    inc = sk.jax_kernel(k_add, launch_dims=2**31 + 1, output_dims=1)
    with pytest.raises(ValueError, match="extent 2147483649 in dimension 0"):
        jax.jit(lambda: inc(jnp.ones(1, jnp.float32), jnp.ones(1, jnp.float32))).lower()
    inc2 = sk.jax_kernel(k_inc2d, output_dims=(1, 1))
    with pytest.raises(ValueError, match="extent 2147483649 in dimension 1"):
        jax.jit(inc2).lower(jax.ShapeDtypeStruct((1, 2**31 + 1), jnp.float32))
    dead = sk.jax_kernel(k_dead_tid, launch_dims=2**31 + 1, output_dims=1,
                         module_preload_mode=sk.JaxModulePreloadMode.NONE)
    assert jax.jit(lambda: dead(jnp.ones(1, jnp.float32))).lower() is not None  # (no tid(): a 1D launch is fine)


def test_jax_kernel_refuses_gpu_and_generic_kernels():
    with pytest.raises(NotImplementedError, match="GPU"):
        sk.jax_kernel(k_add, device="cuda")

    @sk.kernel
    def k_any(a: sk.array(dtype=sk.Any), b: sk.array(dtype=sk.Any)):
        b[sk.tid()] = a[sk.tid()]

    with pytest.raises(TypeError, match="generic"):
        sk.jax_kernel(k_any)


# ---------------------------------------------------------------------------- jax_callable


def test_jax_callable_static_and_traced_scalars():
    f = sk.jax_callable(f_scale, num_outputs=2)
    assert f is sk.jax_callable(f_scale, num_outputs=2, in_out_argnames=[])
    a = jnp.arange(6.0, dtype=jnp.float32)
    b = jnp.arange(6.0, dtype=jnp.float32).reshape(3, 2)
    c, d = jax.jit(lambda a, b: f(a, b, 2.0, output_dims={"c": a.shape, "d": b.shape}))(a, b)
    np.testing.assert_array_equal(c, 2 * np.asarray(a))
    np.testing.assert_array_equal(d, 2 * np.asarray(b))
    c, d = jax.jit(lambda a, b, s: f(a, b, s, output_dims={"c": 6, "d": 3}))(a, b, jnp.float32(3.0))
    np.testing.assert_array_equal(d, 3 * np.asarray(b))


def test_jax_callable_in_out_vmap_and_graph_modes():
    f = sk.jax_callable(f_in_out, num_outputs=2, in_out_argnames=["b"])
    b, c = jax.jit(f)(jnp.ones(4, jnp.float32), jnp.arange(4.0, dtype=jnp.float32))
    np.testing.assert_array_equal(b, np.arange(4) + 1.0)
    np.testing.assert_array_equal(c, np.full(4, 2.0))
    for method in ("broadcast_all", "sequential"):
        rs = sk.jax_callable(f_rowsum, in_out_argnames=["sums"], vmap_method=method)
        m = jnp.arange(24.0, dtype=jnp.float32).reshape(2, 3, 4)
        (s,) = jax.jit(jax.vmap(rs, in_axes=(1, 0)))(m, jnp.zeros((3, 2), jnp.float32))
        np.testing.assert_array_equal(s, np.asarray(m).sum(axis=2).T)
    g = sk.jax_callable(f_in_out, num_outputs=2, in_out_argnames=["b"], graph_mode=2)
    assert g.graph_mode is sk.JaxCallableGraphMode.WARP and g.graph_cache_size == 0
    with pytest.raises(RuntimeError, match="WARP.*CPU"):
        g(jnp.ones(4, jnp.float32), jnp.ones(4, jnp.float32))
    s = sk.jax_callable(f_in_out, num_outputs=2, graph_mode=sk.JaxCallableGraphMode.WARP_STAGED,
                        stage_in_argnames=["a"])
    assert s.stage_in_argnames == {"a"} and s.stage_out_argnames is None
    sk.clear_jax_callable_graph_cache()


def test_jax_callable_checks_annotations():
    def no_ann(a, b: sk.array(dtype=float)):
        pass

    def returns(a: sk.array(dtype=float), b: sk.array(dtype=float)) -> int:
        return 0

    with pytest.raises(TypeError, match="'a' has no type annotation"):
        sk.jax_callable(no_ann)
    with pytest.raises(TypeError, match="must not return"):
        sk.jax_callable(returns)


def test_shard_map_outputs_vary_like_their_inputs(tmp_path):
    """Inside jax.shard_map (2 host devices: a fresh process), outputs carry the inputs' varying axes."""
    script = tmp_path / "shard.py"
    script.write_text(textwrap.dedent("""
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        import jax, jax.numpy as jnp, numpy as np, simkit as sk

        @sk.kernel
        def k_copy(a: sk.array(dtype=float), b: sk.array(dtype=float)):
            b[sk.tid()] = a[sk.tid()] * 2.0

        mesh = jax.sharding.Mesh(np.array(jax.devices("cpu")[:2]), ("r",))
        f = sk.jax_kernel(k_copy)

        @jax.shard_map(mesh=mesh, in_specs=jax.sharding.PartitionSpec("r"),
                       out_specs=jax.sharding.PartitionSpec("r"), check_vma=True)
        def run(x):
            return jax.lax.scan(lambda c, _: (f(c)[0], None), x, None, length=2)[0]

        np.testing.assert_array_equal(run(jnp.arange(8.0, dtype=jnp.float32)), 4 * np.arange(8.0))
        g = jax.grad(lambda x: run(x).sum())(jnp.arange(8.0, dtype=jnp.float32))
        np.testing.assert_array_equal(g, np.full(8, 4.0))
        print("ok")
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), os.environ.get("PYTHONPATH")])))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]
