"""Random kernels (tests/kernel_fuzz.py) give the same results under simkit as under warp-lang, and gradients
that agree with central finite differences (tests/kernel_fuzz_check.py says what is compared, and which threads
are left out as ill-conditioned or non-smooth).

Each seed is one module of three @funcs and four kernels over floats, vec3, mat33, quat, a struct, int32, a
second integer type and bools, with atomic adds, branches, static and dynamic loops, while loops,
break/continue, early returns and tuple results. A fixed set of seeds runs here;
``python tools/fuzz_kernels.py run --seeds 0:1000`` runs many more (and ``reduce`` shrinks a failing module).
The first campaigns found the adjoint of a loop with ``break`` under an ``if`` wrong (tests/test_nested_jumps.py)
and constant folding of wrapping uint64 arithmetic crashing the compiler (tests/test_int_semantics.py).
"""
import numpy as np
import pytest

import kernel_fuzz
import kernel_fuzz_check

# float64 and float32 (1002, 1010, 1014) modules; 1000, 1001, 1010, 1013 and 1014 hold straight-line kernels small
# enough to run interleaved on a GPU (test_some_kernels_run_interleaved_on_a_gpu: pick others if the generator
# changes)
SEEDS = [1000, 1001, 1002, 1003, 1004, 1010, 1013, 1014]


@pytest.fixture(scope="module")
def quiet_warp():
    warp = pytest.importorskip("warp")
    level = warp.config.log_level
    warp.config.log_level = warp.LOG_ERROR
    yield
    warp.config.log_level = level


@pytest.mark.parametrize("seed", SEEDS)
def test_random_kernels_match_warp_and_finite_differences(seed, device, tmp_path, quiet_warp):
    findings = kernel_fuzz_check.check(seed, str(tmp_path), device=device)
    failures = [str(f) for f in findings if f.kind in kernel_fuzz_check.SIMKIT_FAILURES]
    assert not failures, "\n".join(failures)
    # the generator keeps to what warp-lang compiles, so every kernel was compared
    assert not findings, "\n".join(str(f) for f in findings)


def test_debug_mode_gives_the_same_results(tmp_path, quiet_warp):
    """Bounds checks and -O1 (config.mode = "debug") change no result or gradient."""
    findings = kernel_fuzz_check.check(SEEDS[1], str(tmp_path), mode="debug")
    assert not findings, "\n".join(str(f) for f in findings)


def test_generator_is_deterministic_and_varied():
    a, b = kernel_fuzz.generate(7), kernel_fuzz.generate(7)
    assert a.source == b.source and a.precision == b.precision
    sources = [kernel_fuzz.generate(s).source for s in range(20)]
    assert len(set(sources)) == 20
    text = "\n".join(sources)
    for construct in ("break", "continue", "while ", "elif ", " if ", "@wp.func", "wp.quat", "wp.mat33",
                      "range(wp.abs(", "return ", "wp.atomic_add(out_f", "xf[t * 4 + wp.abs(", " << ", " >> ",
                      " = S()", ".v[", ": S", "i, j = wp.tid()", "C_F", "C_V"):
        assert construct in text, construct
    assert len({t for t in kernel_fuzz.SMALL_INTS if f"wp.{t}(" in text}) >= 5  # other integer types


class _Fake:
    """A Runner of a made-up kernel: out_f = sin(xf) per thread, gradient cos(xf) times `slope`; out_i = 1."""

    def __init__(self, offset=0.0, slope=1.0):
        self.offset, self.slope = offset, slope

    def forward(self, kernel, info, x, n):
        return np.sin(x["xf"]) + self.offset, np.ones(n, dtype=np.int32)

    def gradient(self, kernel, info, x, n, w):
        return w * np.cos(x["xf"]) * self.slope, np.zeros_like(x["xv"])


def test_the_checks_report_wrong_results():
    """The comparisons can fail: a result off by 1e-6 and a gradient off by 1% are reported."""
    n = 8
    x = kernel_fuzz_check.inputs(0, n, "float64")
    info = kernel_fuzz.KernelInfo("k", kernel_fuzz.NF, 1)
    rng = np.random.default_rng(0)
    args = (0, info)
    assert not kernel_fuzz_check.check_forward(*args, _Fake(), _Fake(), None, None, x, n, "float64", rng)
    found = kernel_fuzz_check.check_forward(*args, _Fake(1e-6), _Fake(), None, None, x, n, "float64", rng)
    assert [f.kind for f in found] == ["forward"] and f"{n} of {n} compared threads differ" in found[0].detail
    assert not kernel_fuzz_check.check_gradient(*args, _Fake(), None, x, n, rng)
    found = kernel_fuzz_check.check_gradient(*args, _Fake(slope=1.01), None, x, n, rng)
    assert [f.kind for f in found] == ["gradient"]


def test_some_kernels_run_interleaved_on_a_gpu(tmp_path):
    """Small straight-line kernels are among the seeds' (a GPU runs them 4 launch indices per thread)."""
    from simkit.kernels import interleave, module

    eligible = []
    for seed in SEEDS:
        mod = kernel_fuzz.generate(seed)
        loaded = kernel_fuzz_check.load(mod, "simkit", seed, str(tmp_path))
        for info in mod.kernels:
            spec = getattr(loaded, info.name).specs[None]
            spec.build_ir(dict(module.compile_options()))
            eligible += [info.name] if interleave.eligible(spec.ir) else []
    assert len(eligible) >= 2, eligible


def _fuzz_tool():
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "tools", "fuzz_kernels.py")
    spec = importlib.util.spec_from_file_location("fuzz_kernels_tool", path)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_fuzz_tool_runs_a_seed(tmp_path, quiet_warp, capsys):
    assert _fuzz_tool().main(["run", "--seeds", f"{SEEDS[0]}:{SEEDS[0] + 1}", "--out", str(tmp_path)]) == 0
    assert "1 modules: 0 simkit findings, 0 warp-lang errors" in capsys.readouterr().out


def test_fuzz_tool_reads_each_kernels_outputs_and_launch_shape():
    """reduce sizes the arrays from the module's text: as the generator did (an array too small for a remaining
    atomic_add once the plain stores are gone corrupted the process's memory)."""
    tool = _fuzz_tool()
    for seed in range(6):
        mod = kernel_fuzz.generate(seed)
        for info in mod.kernels:
            assert tool._kernel_info("import simkit as wp\n\n\n" + mod.source, info.name) == info


def test_fuzz_tool_reduces_to_what_keeps_the_finding(tmp_path, monkeypatch, capsys):
    """The reduction keeps exactly the lines a (made-up) finding needs, and the blocks around them."""
    tool = _fuzz_tool()
    mod = kernel_fuzz.generate(3)
    path = tmp_path / "fuzz_3_float64_simkit.py"
    path.write_text("import simkit as wp\n\n\n" + mod.source)
    nested = {k.name: [ln for ln in mod.source.split(f"def {k.name}(")[1].split("\n@wp.")[0].split("\n")
                       if ln.startswith("        ")] for k in mod.kernels}
    kernel = next(name for name, lines in nested.items() if lines)
    needed = nested[kernel][:1]  # a line nested in a block of the kernel

    def finding(source, name, *args):
        return name == kernel and f"def {kernel}(" in source and needed[0] in source.split("\n")

    monkeypatch.setattr(tool, "_finding", finding)
    assert tool.main(["reduce", str(path), kernel, "--seed", "3"]) == 0
    out = capsys.readouterr().out.strip().split("\n")
    kept = out[out.index(next(ln for ln in out if ln.startswith(f"def {kernel}("))) + 1:]
    assert kept[-1] == needed[0] and kept[-2].strip().endswith(":")
    assert len(kept) == 2  # the line and its block's header
    assert not any(ln.startswith(f"def {k.name}(") for k in mod.kernels if k.name != kernel for ln in out)
