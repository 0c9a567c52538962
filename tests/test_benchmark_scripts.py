"""The GPU benchmark script runs end to end (on the emulated GPU, with small sizes), so the first
session with a real GPU measures instead of debugging the script."""
import importlib.util
import math
import os

import pytest

import simkit as sk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", os.path.join(ROOT, "benchmarks", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run_on_emulated_gpu(name, tmp_path, monkeypatch, **sizes):
    """benchmarks/<name>.py --quick on the emulated GPU, with ``sizes`` set small: (its markdown
    table, the fake driver)."""
    pytest.importorskip("cuda.bindings")
    if sk.is_cuda_available():
        pytest.skip("with a GPU, tools/gpu_check.sh runs it itself")
    from cuda_emulator import FakeDriver
    from cuda_emulator_world import EmulatedWorld

    mod = _load(name)
    for key, value in sizes.items():
        monkeypatch.setattr(mod, key, value)
    out = tmp_path / f"{name}.md"
    with EmulatedWorld(FakeDriver(arch="sm_90", native_launch=True)) as fake:
        assert mod.main(["--quick", "--markdown", str(out)]) == 0
        sk.synchronize()
    assert not fake.violations
    return out.read_text(), fake


def test_gpu_benchmark_runs_and_reports_every_metric(tmp_path, monkeypatch):
    text, fake = _run_on_emulated_gpu("gpu", tmp_path, monkeypatch, N_SAXPY=1 << 12, N_BODY=256)
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| metric")}
    assert set(rows) == {"copy GB/s", "saxpy GB/s", "saxpy / copy", "launch us", "graph launch us",
                         "n-body GFLOP/s"}
    assert all(math.isfinite(float(v)) and float(v) > 0 for v in rows.values()), rows
    assert fake.calls["cuGraphLaunch"] > 0  # the graph-launch row replayed a captured graph


def test_gpu_conditional_benchmark_solves_three_ways(tmp_path, monkeypatch):
    text, fake = _run_on_emulated_gpu("gpu_conditional", tmp_path, monkeypatch, N=64)
    k = int(text.split(" iterations per solve")[0].splitlines()[-1])
    rows = {line.split("|")[1].strip(): float(line.split("|")[2]) for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| loop")}
    assert k > 10 and {"host loop (reads the flag back)", "capture_while graph",
                       "fixed graph (same iterations, no decisions)"} <= set(rows)
    assert all(math.isfinite(v) and v > 0 for v in rows.values()), rows
    assert fake.calls["cuGraphAddNode"] >= 1  # a conditional node, not a host loop


def test_gpu_deterministic_benchmark_checks_each_way(tmp_path, monkeypatch):
    import importlib

    monkeypatch.syspath_prepend(ROOT)
    # (the ball's optimization a sixth as long: 100 steps of 600; its target still from the full trajectory)
    monkeypatch.setattr(importlib.import_module("scenes.ball_trajectory"), "STEPS", 100)
    text, fake = _run_on_emulated_gpu("gpu_deterministic", tmp_path, monkeypatch, N=4096, N_SERIAL=512, SCENE_ITERS=1)
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith(("| launch", "| run"))]
    names = [r[0] for r in rows]
    assert names == [  # (the scene first: its two deterministic runs' bits agree)
        "default (atomics in any order, a CUDA graph per iteration)", "deterministic, recorded (whole GPU)",
        "deterministic, backward launches on one GPU thread"] + ["atomics in any order (default)",
                                                                 "deterministic, recorded (whole GPU)",
                                                                 "deterministic, one GPU thread (per 4096 values, "
                                                                 "timed on 512)"] * 4  # (forward, backward)
    assert all(math.isfinite(float(r[1])) and float(r[1]) > 0 for r in rows), rows
    for kernel, entry in (("scatter", "_cuda_fwd"), ("gather", "_cuda_bwd")):
        recorded = [g for name, g, _b, _s in fake.launches if name.startswith(kernel) and entry in name]
        assert max(recorded) > 1 and min(recorded) == 1  # (the recorded launch on the whole GPU, the serial one on one)


def test_gpu_breakdown_runs_and_times_each_part(tmp_path, monkeypatch):
    text, fake = _run_on_emulated_gpu("gpu_breakdown", tmp_path, monkeypatch, N_SAXPY=1 << 12)
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ")]
    values = {r[0].strip(): float(r[1]) for r in rows if r[0].strip() not in ("launch, one thread",
                                                                              "bandwidth (bytes read + written)")}
    assert {"sk.launch (device given)", "sk.launch through cuda-python (no native launcher)",
            "Launch.launch() (recorded with record_cmd=True)",
            "native launcher alone (one C call, ready arguments)", "cuLaunchKernel (cuda-python, ready arguments)",
            "sk.copy", "saxpy, block 1024, grid full", "saxpy4: 4 elements per launch index, hand-written",
            "saxpy, block 256, grid full, one index per thread (not interleaved)"} <= set(values)
    assert all(math.isfinite(v) and v > 0 for v in values.values()), values
    assert fake.calls["cuLaunchKernel"] > 1000  # (the quick run launches each timed part 1000 times)


def test_nbody_check_rejects_wrong_accelerations():
    import numpy as np

    gpu = _load("gpu")
    p = np.random.default_rng(1).uniform(-1, 1, (80, 3)).astype(np.float32)
    d = p[None].astype(np.float64) - p[:, None]
    r2 = (d * d).sum(-1) + 0.01
    acc = (d / (r2 * np.sqrt(r2))[..., None]).sum(1).astype(np.float32)
    gpu.check_nbody(p, acc)
    acc[3, 1] += 1.0
    with pytest.raises(AssertionError, match="n-body"):
        gpu.check_nbody(p, acc)


def test_sph_benchmark_checks_agree_and_reports_finite_rates(tmp_path):
    """benchmarks/sph.py on a 4^3 column: every agreement check passes (SPHSolver against the
    same-source kernels and numpy) and every timed rate is finite. Without warp-lang, whose cold
    compile would double the test's time; the benchmark itself checks simkit against it."""
    import json

    sph = _load("sph")
    out = tmp_path / "sph.json"
    assert sph.main(["--quick", "--block", "4", "--no-warp", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["checks"] and all(c["passed"] for c in data["checks"]), data["checks"]
    names = {r["implementation"] for r in data["results"]}
    assert {"simkit SPHSolver", "simkit, same-source kernels"} <= names
    for r in data["results"]:
        rates = [r["forward_median"], r["forward_best"]] + ([] if r["fwd_bwd_median"] is None else
                                                             [r["fwd_bwd_median"], r["fwd_bwd_best"]])
        assert all(math.isfinite(v) and v > 0 for v in rates), r
    assert data["breakdown_ms"] and all(math.isfinite(float(v)) for row in data["breakdown_ms"]
                                        for k, v in row.items() if k not in ("implementation", "threads"))


def test_adjoint_loops_benchmark_gradients_agree(tmp_path):
    """benchmarks/adjoint_loops.py on 2048 points: simkit's order-free adjoints and the stack's give
    the same gradients (the script fails otherwise) and the table is written."""
    bench = _load("adjoint_loops")
    out = tmp_path / "adjl.md"
    threads = sk.config.cpu_threads  # (the benchmark runs on one thread)
    try:
        assert bench.main(["--quick", "--n", "2048", "--no-warp", "--markdown", str(out)]) == 0
    finally:
        sk.config.cpu_threads = threads
    rows = [line for line in out.read_text().splitlines() if line.startswith("| sum over") or
            line.startswith("| neighbour sum")]
    assert len(rows) == 4


def test_gpu_frames_times_each_scene_both_ways(tmp_path, monkeypatch):
    text, fake = _run_on_emulated_gpu("gpu_frames", tmp_path, monkeypatch, CLOTH_SIZE=4, PILE_ROWS=1,
                                      SEESAW_HEAP=2)
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ") and "ms/frame" not in line]
    assert [r[0].split(",")[0].strip() for r in rows] == ["cloth 4x4 cells", "dam break", "rigid pile", "rigid pile",
                                                                      "seesaw"]
    for r in rows:
        substeps, direct, graph, speedup = (float(v) for v in r[1:])
        assert substeps % 2 == 0 and direct > 0 and graph > 0
        assert math.isclose(speedup, direct / graph, rel_tol=0.02)
    assert fake.calls["cuGraphLaunch"] >= 5 * 11   # (every graph row replays its captured frame)


def test_gpu_frames_on_the_cpu_times_cpu_graphs(tmp_path, monkeypatch):
    mod = _load("gpu_frames")
    for key, value in dict(CLOTH_SIZE=4, PILE_ROWS=1, SEESAW_HEAP=2).items():
        monkeypatch.setattr(mod, key, value)
    out = tmp_path / "cpu_frames.md"
    assert mod.main(["--cpu", "--quick", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("CPU: ") and "one CPU graph, ms/frame" in text
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ") and "ms/frame" not in line]
    names = [r[0].split(",")[0].strip() for r in rows]
    if importlib.util.find_spec("trimesh") is not None:
        assert names[:2] == ["cloth 8x8 cells", "cloth 4x4 cells"]
    assert names[-4:] == ["dam break", "rigid pile", "rigid pile", "seesaw"]
    for r in rows:
        _, direct, graph, speedup = (float(v) for v in r[1:])
        assert direct > 0 and graph > 0 and math.isclose(speedup, direct / graph, rel_tol=0.02)


def test_map_benchmark_checks_and_times_every_contender(tmp_path, monkeypatch):
    mod = _load("map_ops")
    monkeypatch.setattr(mod, "N_LARGE", 4096)
    out = tmp_path / "map.md"
    assert mod.main(["--quick", "--no-warp", "--markdown", str(out)]) == 0
    rows = [r for r in (line.split("|")[1:-1] for line in out.read_text().splitlines()) if len(r) == 3
            and r[0].strip() in ("numpy", "simkit map", "simkit operators")]
    assert [r[0].strip() for r in rows] == ["numpy", "simkit map", "simkit operators"] * 2
    assert all(float(r[2].strip().rstrip("x")) > 0 for r in rows)


def test_array_algorithms_benchmark_checks_and_times_every_contender(tmp_path):
    mod = _load("array_algorithms")
    out = tmp_path / "algorithms.md"
    assert mod.main(["--quick", "--no-warp", "--n", "5000", "--markdown", str(out)]) == 0
    rows = [r for r in (line.split("|")[1:-1] for line in out.read_text().splitlines()) if len(r) == 3
            and r[0].strip() not in ("implementation", "---")]
    assert [r[0].strip() for r in rows] == ["numpy (argsort stable + gather)", "simkit", "numpy (cumsum)", "simkit",
                                            "numpy (sum)", "simkit"]
    assert all(float(r[2].strip().rstrip("x")) > 0 for r in rows)


def test_deterministic_benchmark_checks_and_times_every_contender(tmp_path, monkeypatch):
    mod = _load("deterministic")
    monkeypatch.setattr(mod, "N", 5000)
    out = tmp_path / "det.md"
    assert mod.main(["--quick", "--no-warp", "--markdown", str(out)]) == 0
    rows = [r for r in (line.split("|")[1:-1] for line in out.read_text().splitlines()) if len(r) == 3
            and r[0].strip() not in ("implementation", "---")]
    assert [r[0].strip() for r in rows] == ["numpy add.at (sequential)",
                                            "simkit, atomics on every core (cpu_atomic_tuning=False)",
                                            "simkit, default (one thread or all, measured)",
                                            "simkit, deterministic (ordered)"] * 2
    assert all(float(r[2].strip().rstrip("x")) > 0 for r in rows)


def test_gpu_registers_compares_the_same_kernels(tmp_path, monkeypatch):
    """benchmarks/gpu_registers.py on the particle kernels: a row per kernel and pass, simkit's count as
    sk.get_kernel_resource_usage gives it, warp-lang's beside it where installed, the hand-written ones."""
    nvrtc = pytest.importorskip("simkit.kernels.backends.cuda.nvrtc")
    if not nvrtc.is_available():
        pytest.skip("NVRTC is not installed")
    has_warp = importlib.util.find_spec("warp") is not None
    mod = _load("gpu_registers")
    monkeypatch.setattr(mod, "SOURCES", ["particles_kernels.py"])
    out = tmp_path / "registers.md"
    assert mod.main(["--markdown", str(out)] + ([] if has_warp else ["--no-warp"])) == 0
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in out.read_text().splitlines()
            if line.startswith("| particles.")]
    kernels = mod.kernels_of(mod.load(sk, "particles_kernels.py"))
    assert sorted((r[0].split(" ")[0], r[1]) for r in rows) == sorted(
        (f"particles.{k}", p) for k in kernels for p in ("fwd", "bwd"))
    for name, which, ours, theirs, hand, ratio in rows:
        key = name.split(" ")[0].split(".")[1]
        assert (hand != "-") == (which == "fwd" and key in ("eval_springs", "integrate", "weighted_sum"))
        if has_warp:
            assert math.isclose(float(ratio), int(ours.split(",")[0]) / int(theirs.split(",")[0]), abs_tol=0.006)
        if key == "weighted_sum":
            usage = sk.get_kernel_resource_usage(kernels[key], adjoint=which == "bwd")
            assert int(ours.split(",")[0]) == usage["registers"]


def test_warp_cloth_benchmark_matches_warp_lang_positions(tmp_path, monkeypatch):
    # warp-lang's own cloth benchmark file under simkit: the script asserts its positions agree with warp-lang's
    pytest.importorskip("warp")
    mod = _load("warp_cloth")
    if mod._bench_dir() is None:
        pytest.skip("warp-lang's examples are not installed")
    monkeypatch.setattr(mod, "DIMS", (12,))
    out = tmp_path / "cloth.md"
    assert mod.main(["--quick", "--markdown", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith("| 144 |")]
    assert len(rows) == 1 and rows[0].endswith("x |"), out.read_text()


def test_stencil_benchmark_checks_every_contender(tmp_path, monkeypatch):
    # (the script checks simkit's, C's and warp-lang's results against numpy's before it times them)
    mod = _load("stencil")
    monkeypatch.setattr(mod, "SIZES", (64,))
    out = tmp_path / "stencil.md"
    assert mod.main(["--quick", "--markdown", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith("| 64 |")]
    assert len(rows) == 1 and rows[0].endswith("x |"), out.read_text()


def test_opt_levels_benchmark_builds_and_times_each_level(tmp_path, monkeypatch):
    """benchmarks/opt_levels.py, small: each level builds its own libraries (compiler time counted) and every
    level's results agree (the script fails otherwise); the modules' levels are put back afterwards."""
    mod = _load("opt_levels")
    monkeypatch.setattr(mod, "N_SAXPY", 1 << 12)
    out = tmp_path / "levels.md"
    before = {m: m.options.get("optimization_level") for m in list(mod._modules.values())}
    assert mod.main(["--quick", "--levels", "1", "2", "--scenes", "rigid_pile", "--markdown", str(out)]) == 0
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in out.read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| workload")]
    assert [(r[0].split(",")[0].split(".")[0], r[1]) for r in rows] == [
        (w, lv) for w in ("saxpy", "n-body", "rigid_pile") for lv in ("-O1", "-O2")]
    assert all(r[2].endswith("s") and not r[2].startswith("0.00") for r in rows if r[0].startswith("saxpy"))
    assert all(float(r[6].rstrip("x")) > 0 for r in rows)
    assert all(m.options.get("optimization_level") == before.get(m) for m in mod._modules.values())
