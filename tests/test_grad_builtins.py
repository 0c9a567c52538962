"""Every differentiable builtin overload, checked against central finite differences in float64.

The test enumerates the builtin registry, picks concrete float64 argument types for each
overload (vectors of length 3/2/4/6, square matrices, quaternions, transforms), generates one
kernel per overload (`out[i] = builtin(a[i], b[i], ...)`) and runs `simkit.autograd.gradcheck`
on inputs drawn from the builtin's valid domain.
"""
import importlib.util
import os
import sys
import tempfile

import numpy as np
import pytest

import simkit as sk
from simkit.kernels import registry
from simkit.kernels import types as T

F = T.float64
VEC_LENGTHS = (3, 2, 4, 6)
MAT_SHAPES = ((3, 3), (2, 2), (4, 4), (6, 6), (2, 3))

# keys whose inputs need a special domain: name -> sampler(rng, type) for float arguments
POSITIVE = {"log", "log2", "log10", "sqrt", "cbrt", "pow", "erfcinv", "erfinv"}
UNIT_INTERVAL = {"asin", "acos", "erfinv"}
SKIP = {
    # not functions of their float inputs in the usual sense, or covered elsewhere
    "load", "store", "view", "array_shape", "store_component", "atomic_add", "atomic_sub", "atomic_min",
    "atomic_max", "atomic_exch", "atomic_cas", "print", "expect_eq", "expect_neq", "expect_near",
    "select", "where",  # tested with explicit conditions below
}


def _concretize(spec, length, shape):
    if spec is T.Float or spec is T.Scalar:
        return F
    if spec is T.Int:
        return T.int32
    if T.is_scalar(spec):
        return spec
    if T.is_value(spec):
        if not spec._generic:
            return spec
        dt = F if T.is_generic(spec._dtype) else spec._dtype
        if spec._kind == "vector":
            return T.vector(spec._shape[0] if not T.is_generic(spec._shape[0]) else length, dt)
        if spec._kind == "matrix":
            s = tuple(d if not T.is_generic(d) else shape[k] for k, d in enumerate(spec._shape))
            return T.matrix(s, dt)
        if spec._kind == "quaternion":
            return T.quaternion(dt)
        if spec._kind == "transformation":
            return T.transformation(dt)
    return None


def _float_based(t) -> bool:
    try:
        return T.is_float(T.scalar_of(t))
    except TypeError:
        return False


def _cases():
    cases = []
    for key, ovs in sorted(registry.all_builtins().items()):
        if key in SKIP:
            continue
        for n, b in enumerate(ovs):
            if not b.differentiable or b.constructor or b.variadic or b.side_effects:
                continue
            specs = list(b.input_types.values())
            if any(isinstance(s, T.ArrayType) or s is T.Any for s in specs):
                continue
            found = None
            for length in VEC_LENGTHS:
                for shape in MAT_SHAPES:
                    types = [_concretize(s, length, shape) for s in specs]
                    if any(t is None for t in types):
                        break
                    info = registry.CallInfo(types, [], [None] * len(types))
                    if registry.resolve(key, info) is not b:
                        continue
                    try:
                        ret = b.result_type(info)
                    except TypeError:
                        continue
                    if isinstance(ret, tuple) or ret is None or not _float_based(ret):
                        continue
                    if not any(_float_based(t) and T.scalar_of(t) is F for t in types):
                        continue
                    found = (types, ret)
                    break
                if found:
                    break
            if found:
                cases.append((key, n, found[0], found[1]))
    return cases


CASES = _cases()


def _type_expr(t) -> str:
    if T.is_scalar(t):
        return f"T.{t._type_name}"
    k = t._kind
    if k == "vector":
        return f"T.vector({t._shape[0]}, T.{t._dtype._type_name})"
    if k == "matrix":
        return f"T.matrix({t._shape}, T.{t._dtype._type_name})"
    if k == "quaternion":
        return f"T.quaternion(T.{t._dtype._type_name})"
    return f"T.transformation(T.{t._dtype._type_name})"


def _generate():
    lines = ["import simkit as sk", "from simkit.kernels import types as T",
             "from simkit.kernels.api import BuiltinFunction", "KERNELS = {}"]
    for key in sorted({c[0] for c in CASES}):
        lines.append(f"B_{key} = BuiltinFunction({key!r})")
    for idx, (key, n, types, ret) in enumerate(CASES):
        params = ", ".join(f"a{k}: sk.array(dtype={_type_expr(t)})" for k, t in enumerate(types))
        call_args = ", ".join(f"a{k}[i]" for k in range(len(types)))
        lines += [f"@sk.kernel", f"def k{idx}({params}, out: sk.array(dtype={_type_expr(ret)})):",
                  "    i = sk.tid()", f"    out[i] = B_{key}({call_args})", f"KERNELS[{idx}] = k{idx}"]
    d = tempfile.mkdtemp(prefix="simkit_grad_builtins_")
    path = os.path.join(d, "simkit_grad_builtins_generated.py")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("simkit_grad_builtins_generated", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.KERNELS


KERNELS = _generate()


def _sample(key, t, rng, n):
    """n well-conditioned random values of type t for builtin `key` (numpy, element-major)."""
    if T.is_int(t):
        if key in ("extract", "assign"):
            return np.zeros(n, dtype=np.int32)
        return rng.integers(1, 3, size=n).astype(np.int32)
    if T.is_scalar(t):
        if key in UNIT_INTERVAL:
            return rng.uniform(-0.8, 0.8, n)
        if key in POSITIVE:
            return rng.uniform(0.5, 2.0, n)
        return rng.uniform(-1.5, 1.5, n)
    if t._kind == "quaternion":
        q = rng.normal(size=(n, 4))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        return q * np.sign(q[:, 3:4])  # w > 0: away from the double-cover boundary
    if t._kind == "transformation":
        q = rng.normal(size=(n, 4))
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        return np.concatenate([rng.uniform(-1, 1, (n, 3)), q], axis=1)
    if t._kind == "matrix":
        r, c = t._shape
        m = rng.uniform(-1, 1, (n, r, c))
        if r == c:
            m += 2.0 * np.eye(r)  # well conditioned for inverse/determinant
        return m
    v = rng.uniform(-1, 1, (n, t._length))
    if key in POSITIVE:
        v = np.abs(v) + 0.5
    return v


@pytest.mark.parametrize("case", range(len(CASES)),
                         ids=[f"{c[0]}-{'-'.join(T.type_name(t) for t in c[2])}" for c in CASES])
def test_builtin_gradient_matches_finite_differences(case):
    key, n, types, ret = CASES[case]
    rng = np.random.default_rng(1234 + case)
    count = 2
    inputs = [sk.array(_sample(key, t, rng, count), dtype=t, device="cpu") for t in types]
    out = sk.zeros(count, dtype=ret, device="cpu")
    assert sk.autograd.gradcheck(KERNELS[case], count, inputs, [out], eps=1e-6, atol=1e-5, rtol=1e-4)


def test_registry_has_differentiable_cases():
    assert len(CASES) > 100, len(CASES)
