"""Differential checks of random kernels (tests/kernel_fuzz.py): simkit against warp-lang, gradients against
central finite differences.

``check(seed, workdir)`` generates one module, loads its text under ``import simkit as wp`` and under
``import warp as wp``, launches every kernel on both CPUs with the same random inputs and returns what disagrees
(an empty list when all agree):

- ``forward``: a float output differs by more than the precision's tolerance, or an int output differs at all.
  Threads whose outputs are ill-conditioned (a relative nudge of the inputs far below the tolerance moves an
  output past it: a branch condition or float-to-int conversion sitting on its threshold, where two compilers'
  last-bit differences may take different sides) are not compared.
- ``gradient`` (float64 modules): the adjoint of ``dot(w, out_f)`` along a random direction of the inputs, per
  thread, against central differences with two step sizes. Threads where the two steps disagree (a kink or jump
  of abs, min, floor, a branch... within the step) are not compared.
- ``simkit-error``: simkit refuses or fails a kernel that warp-lang runs. (``warp-error``, the reverse, is
  reported too; it is a finding about warp-lang or the generator, not a simkit failure.)
"""
from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass

import numpy as np

import kernel_fuzz

TOL = {"float64": 1e-7, "float32": 2e-4}
NUDGE = {"float64": 1e-11, "float32": 2e-6}  # relative input nudge of the conditioning check
STEPS = (1e-6, 1e-5)  # finite-difference steps (float64)
GRAD_TOL = 1e-5
SIMKIT_FAILURES = ("forward", "gradient", "simkit-error")


@dataclass
class Finding:
    seed: int
    kernel: str
    kind: str  # forward | gradient | simkit-error | warp-error
    detail: str

    def __str__(self):
        return f"seed {self.seed}, {self.kernel}: {self.kind}: {self.detail}"


def load(mod: kernel_fuzz.Module, framework: str, seed: int, workdir: str):
    """Import the module's text under `framework` ("simkit" or "warp") from a file in workdir."""
    name = f"fuzz_{seed}_{mod.precision}_{framework}"
    path = os.path.join(workdir, name + ".py")
    with open(path, "w") as f:
        f.write(f"import {framework} as wp\n\n\n" + mod.source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def inputs(seed: int, n: int, precision: str) -> dict:
    rng = np.random.default_rng(seed)
    dt = np.dtype(precision)
    return {"xf": rng.uniform(-2, 2, n * kernel_fuzz.NF).astype(dt),
            "xv": rng.uniform(-2, 2, (n * kernel_fuzz.NV, 3)).astype(dt),
            "xi": rng.integers(-50, 51, n * kernel_fuzz.NI).astype(np.int32)}


class Runner:
    """Launches one framework's kernels (simkit and warp-lang share the API used here)."""

    def __init__(self, wp, precision: str, device: str = "cpu"):
        self.wp, self.device = wp, device
        self.F = wp.float64 if precision == "float64" else wp.float32
        self.V = wp.vec3d if precision == "float64" else wp.vec3

    def arrays(self, x: dict, info, n, requires_grad=False):
        wp, d = self.wp, self.device
        return [wp.array(x["xf"], dtype=self.F, device=d, requires_grad=requires_grad),
                wp.array(x["xv"], dtype=self.V, device=d, requires_grad=requires_grad),
                wp.array(x["xi"], dtype=wp.int32, device=d),
                wp.zeros(max(n * info.n_out_f, 1), dtype=self.F, device=d, requires_grad=requires_grad),
                wp.zeros(max(n * info.n_out_i, 1), dtype=wp.int32, device=d)]

    def forward(self, kernel, info, x: dict, n: int):
        args = self.arrays(x, info, n)
        self.wp.launch(kernel, dim=_dim(info, n), inputs=args, device=self.device)
        return args[3].numpy()[:n * info.n_out_f], args[4].numpy()[:n * info.n_out_i]

    def gradient(self, kernel, info, x: dict, n: int, w: np.ndarray):
        """d(w . out_f)/d(xf, xv) through a Tape."""
        wp = self.wp
        args = self.arrays(x, info, n, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(kernel, dim=_dim(info, n), inputs=args, device=self.device)
        seed_grad = np.zeros(max(n * info.n_out_f, 1), dtype=w.dtype)
        seed_grad[:w.size] = w
        tape.backward(grads={args[3]: wp.array(seed_grad, dtype=self.F, device=self.device)})
        return args[0].grad.numpy().copy(), args[1].grad.numpy().copy()


def _dim(info, n: int):
    return (n // info.rows, info.rows) if info.rows else n


def _per_thread(a: np.ndarray, n: int) -> np.ndarray:
    return a.reshape(n, -1) if a.size else np.zeros((n, 0))


def _well_conditioned(runner, kernel, info, x, n, ref, tol, nudge, rng) -> np.ndarray:
    """Per thread: do small relative nudges of the float inputs leave every output within tol/4?"""
    ok = np.ones(n, dtype=bool)
    for _ in range(3):
        xn = dict(x)
        xn["xf"] = x["xf"] * (1 + nudge * rng.standard_normal(x["xf"].shape)).astype(x["xf"].dtype)
        xn["xv"] = x["xv"] * (1 + nudge * rng.standard_normal(x["xv"].shape)).astype(x["xv"].dtype)
        f, i = runner.forward(kernel, info, xn, n)
        df = np.abs(_per_thread(f, n) - _per_thread(ref[0], n)) > tol / 4 * (1 + np.abs(_per_thread(ref[0], n)))
        di = _per_thread(i, n) != _per_thread(ref[1], n)
        ok &= ~(df.any(axis=1) | di.any(axis=1))
    return ok


def check_forward(seed, info, sk_run, wp_run, sk_kernel, wp_kernel, x, n, precision, rng) -> list:
    sk_f, sk_i = sk_run.forward(sk_kernel, info, x, n)
    wp_f, wp_i = wp_run.forward(wp_kernel, info, x, n)
    tol = TOL[precision]
    ok = _well_conditioned(sk_run, sk_kernel, info, x, n, (sk_f, sk_i), tol, NUDGE[precision], rng)
    ok &= np.isfinite(_per_thread(wp_f, n)).all(axis=1)  # (the generator keeps values finite; NaN would be its bug)
    bad_f = (np.abs(_per_thread(sk_f, n) - _per_thread(wp_f, n)) > tol * (1 + np.abs(_per_thread(wp_f, n))))
    bad_f |= ~np.isfinite(_per_thread(sk_f, n)) & np.isfinite(_per_thread(wp_f, n))
    bad_i = _per_thread(sk_i, n) != _per_thread(wp_i, n)
    findings = []
    for what, bad, a, b in (("float", bad_f, sk_f, wp_f), ("int", bad_i, sk_i, wp_i)):
        threads = np.nonzero(bad.any(axis=1) & ok)[0]
        if threads.size:
            t = threads[0]
            cols = np.nonzero(bad[t])[0]
            findings.append(Finding(seed, info.name, "forward",
                                    f"{what} outputs {cols.tolist()} of thread {t} ({threads.size} of {ok.sum()} "
                                    f"compared threads differ): simkit {_per_thread(a, n)[t][cols].tolist()}, "
                                    f"warp {_per_thread(b, n)[t][cols].tolist()}"))
    return findings


def check_gradient(seed, info, sk_run, sk_kernel, x, n, rng, reference=None) -> list:
    """reference: (runner, kernel) of warp-lang. A NaN adjoint where warp-lang's is NaN too is not reported: an
    infinite partial derivative times a zero adjoint, as sqrt's at 0 in the branch where() did not take, is NaN
    in reverse mode (Warp, PyTorch and JAX alike)."""
    if info.n_out_f == 0:
        return []
    w = rng.standard_normal(n * info.n_out_f)
    gf, gv = sk_run.gradient(sk_kernel, info, x, n, w)
    df = rng.standard_normal(x["xf"].shape)
    dv = rng.standard_normal(x["xv"].shape)
    adjoint = _per_thread(gf * df, n).sum(axis=1) + _per_thread(gv * dv, n).sum(axis=1)

    def loss(step):
        xs = dict(x, xf=x["xf"] + step * df, xv=x["xv"] + step * dv)
        f, _ = sk_run.forward(sk_kernel, info, xs, n)
        return _per_thread(f * w, n).sum(axis=1)

    at_x = loss(0.0)
    fd, smooth = [], np.ones(n, dtype=bool)
    for h in STEPS:
        up, down = loss(h), loss(-h)
        fd.append((up - down) / (2 * h))
        # one-sided differences: a jump at x that both steps clear (argmin of a vector of rounding noise that
        # is exactly zero in exact arithmetic, say) makes them disagree by the jump / h
        smooth &= np.abs((up - at_x) - (at_x - down)) / h <= 1e-2 * (1 + np.abs(fd[-1]))
    smooth &= np.abs(fd[0] - fd[1]) <= GRAD_TOL * (1 + np.abs(fd[0]))
    bad = (np.abs(adjoint - fd[0]) > GRAD_TOL * (1 + np.abs(fd[0]))) & smooth
    bad |= ~np.isfinite(adjoint) & smooth
    if reference is not None and (bad & ~np.isfinite(adjoint)).any():
        rf, rv = reference[0].gradient(reference[1], info, x, n, w)
        bad &= np.isfinite(_per_thread(rf, n).sum(axis=1) + _per_thread(rv, n).sum(axis=1)) | np.isfinite(adjoint)
    threads = np.nonzero(bad)[0]
    if not threads.size:
        return []
    t = threads[0]
    return [Finding(seed, info.name, "gradient",
                    f"thread {t} ({threads.size} of {smooth.sum()} smooth threads differ): adjoint {adjoint[t]!r}, "
                    f"central differences {fd[0][t]!r}")]


def _error(e: BaseException) -> str:
    lines = [ln for ln in traceback.format_exception_only(type(e), e) if ln.strip()]
    return " ".join(ln.strip() for ln in lines)[-600:]


def check(seed: int, workdir: str, n_threads: int | None = None, n_kernels: int = 4, precision: str | None = None,
          gradients: bool = True, device: str = "cpu", mode: str | None = None) -> list:
    """Every finding of the module of `seed` (see the module docstring), simkit running on `device` (warp-lang on
    its CPU), in config.mode `mode` (None: as it is). n_threads: 16 on the CPU; 1024 on a GPU, which fills the
    tests' emulated one, so that small straight-line kernels run there interleaved (kernels/interleave.py)."""
    import simkit

    saved = simkit.config.mode
    simkit.config.mode = mode or saved
    try:
        return _check(seed, workdir, n_threads or (16 if device == "cpu" else 1024), n_kernels, precision, gradients,
                      device)
    finally:
        simkit.config.mode = saved


def _check(seed, workdir, n_threads, n_kernels, precision, gradients, device) -> list:
    import simkit
    import warp

    mod = kernel_fuzz.generate(seed, n_kernels=n_kernels, precision=precision)
    findings = []
    try:
        sk_mod = load(mod, "simkit", seed, workdir)
    except Exception as e:  # noqa: BLE001 - a finding, reported with its message
        return [Finding(seed, "(module)", "simkit-error", _error(e))]
    try:
        wp_mod = load(mod, "warp", seed, workdir)
    except Exception as e:  # noqa: BLE001
        return [Finding(seed, "(module)", "warp-error", _error(e))]
    sk_run, wp_run = Runner(simkit, mod.precision, device), Runner(warp, mod.precision)
    x = inputs(seed, n_threads, mod.precision)
    rng = np.random.default_rng(seed + 1)
    for info in mod.kernels:
        sk_kernel, wp_kernel = getattr(sk_mod, info.name), getattr(wp_mod, info.name)
        try:
            wp_run.forward(wp_kernel, info, x, n_threads)
        except Exception as e:  # noqa: BLE001
            findings.append(Finding(seed, info.name, "warp-error", _error(e)))
            continue
        try:
            findings += check_forward(seed, info, sk_run, wp_run, sk_kernel, wp_kernel, x, n_threads,
                                      mod.precision, rng)
            if gradients and mod.precision == "float64":
                findings += check_gradient(seed, info, sk_run, sk_kernel, x, n_threads, rng, (wp_run, wp_kernel))
        except Exception as e:  # noqa: BLE001
            findings.append(Finding(seed, info.name, "simkit-error", _error(e)))
    return findings
