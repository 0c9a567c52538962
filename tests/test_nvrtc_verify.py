"""NVRTC verification in batches (kernels/backends/cuda/verify.py): modules that share names compile
side by side, a failing module is named alone, verified modules are not compiled again."""
from __future__ import annotations

import pytest

import simkit as sk
from simkit.kernels.errors import NativeCompileError
from simkit.kernels import codegen
from simkit.kernels import module as kmodule
from simkit.kernels.backends.cuda import nvrtc, verify
from simkit.version import __version__

pytestmark = pytest.mark.skipif(not nvrtc.is_available(), reason="NVRTC is not installed")


@sk.struct
class Body:
    x: sk.vec3
    m: float


@sk.func
def energy(b: Body):
    return b.m * sk.dot(b.x, b.x)


@sk.kernel
def total_energy(bodies: sk.array(dtype=Body), out: sk.array(dtype=float)):
    i = sk.tid()
    sk.atomic_add(out, 0, energy(bodies[i]))


@sk.kernel
def move(bodies: sk.array(dtype=Body), dx: sk.vec3, out: sk.array(dtype=Body)):
    i = sk.tid()
    b = bodies[i]
    b.x = b.x + dx
    out[i] = b


@sk.kernel
def scale(x: sk.array(dtype=float), s: float):
    i = sk.tid()
    x[i] = x[i] * s


def _source(kernels, adjoint: bool, name: str = "test_nvrtc_verify") -> str:
    options = dict(kmodule.compile_options(), mode="release")
    specs = [k.specs[None] for k in kernels]
    for s in specs:
        s.build_ir(options)
    funcs, structs = kmodule.collect(specs)
    return codegen.gen_module(name, [s.ir for s in specs], funcs, structs, options, __version__, adjoint=adjoint)


@pytest.fixture
def in_process(monkeypatch, tmp_path):
    """verify.py's state emptied, its worker replaced by this process, its markers under tmp_path;
    yields the list of NVRTC compiles (name, arch, extra options)."""
    monkeypatch.setattr(sk.config, "cache_dir", str(tmp_path))
    for name, value in [("_queues", {}), ("_pending", []), ("_seen", set()), ("_pool", None)]:
        monkeypatch.setattr(verify, name, value)
    monkeypatch.setattr(verify, "in_process", True)
    compiles = []
    original = nvrtc.check

    def counted(source, arch, name="module", extra=()):
        compiles.append((name, arch, tuple(extra)))
        return original(source, arch, name, extra)

    monkeypatch.setattr(nvrtc, "check", counted)
    return compiles


def test_modules_sharing_structs_funcs_and_kernels_compile_in_one_batch():
    # both adjoint units define Body, its sk::accum overload, energy() and move's entry points
    first, second = _source([total_energy, move], True), _source([move, scale], True)
    prelude, body1 = verify.split(first)
    prelude2, body2 = verify.split(second)
    assert prelude == prelude2 and body1.startswith("// module: ")
    assert "namespace sk { SK_INLINE void accum(" in body1  # what namespaced() steps out of
    ptx = nvrtc.compile_source(verify.batch_source(prelude, [body1, body2]), "compute_80", "batch", verify.PCH)
    assert b"_skv0" in ptx and b"_skv1" in ptx  # both modules' kernels were generated
    with pytest.raises(NativeCompileError, match="already been defined|redeclaration"):  # what the namespaces prevent
        nvrtc.compile_source(prelude + body1 + body2, "compute_80", "concatenated", verify.SYNTAX)


def test_a_failing_module_is_reported_by_its_name(in_process, monkeypatch):
    monkeypatch.setattr(verify, "BATCH", 3)
    good, other = _source([total_energy], False, "good_module"), _source([scale], True, "other_module")
    bad = _source([move], False, "bad_module")
    bad = bad.replace("// module: bad_module", "// module: bad_module\nstatic int broken = not_declared;")
    for src, name in [(good, "good_module"), (bad, "bad_module"), (other, "other_module")]:
        verify.verify_async(src, ("sm_80",), name)
    with pytest.raises(NativeCompileError, match=r"compute_80 failed \(bad_module\)") as err:
        verify.wait()
    assert "not_declared" in str(err.value) and "other_module" not in str(err.value)
    names = [c[0] for c in in_process]
    assert names == ["verify_batch", "good_module", "bad_module"]  # the batch, then module by module


def test_first_arch_generates_code_the_others_are_checked_by_the_front_end(in_process):
    src = _source([total_energy, move, scale], True)
    verify.verify_async(src, ("sm_80", "sm_90"), "three_kernels")
    assert verify.wait() == 2
    assert [(arch, "-fdevice-syntax-only" in extra) for _, arch, extra in in_process] == \
        [("compute_80", False), ("compute_90", True)]
    # verified: neither this process nor a later one (markers in the cache) compiles it again
    verify.verify_async(src, ("sm_80", "sm_90"), "three_kernels")
    verify._seen.clear()
    verify.verify_async(src, ("sm_80", "sm_90"), "three_kernels")
    assert verify.wait() == 0 and len(in_process) == 2


def test_front_end_check_catches_type_errors():
    src = _source([scale], False).replace("// module: test_nvrtc_verify",
                                          "// module: test_nvrtc_verify\nstatic sk::vec3 v = 1.0f + \"text\";")
    with pytest.raises(NativeCompileError, match="compute_90"):
        nvrtc.compile_source(src, "compute_90", "front_end", verify.SYNTAX)


def test_a_source_not_made_by_codegen_is_verified_alone(in_process):
    src = '#include "simkit.h"\nextern "C" __global__ void twice(float* a) { a[threadIdx.x] *= 2.0f; }\n'
    assert verify.split(src) == (src, "")
    verify.verify_async(src, ("sm_80",), "hand_written")
    assert [c[0] for c in in_process] == ["hand_written"]  # at once, not queued for a batch
    assert verify.wait() == 1


def test_code_for_the_gpu_is_optimised_and_only_the_check_stops_at_nvvm_ir():
    """PTX and CUBINs that a GPU loads are compiled with optimisation; the full verification stops at NVVM IR
    (-dlto: front end and IR generation, without the optimiser and code generation, six times faster)."""
    for arch in ("compute_90", "sm_90"):
        assert not {"-G", "-dlto", "-fdevice-syntax-only"} & set(nvrtc.options(arch))
    assert "-dlto" in verify._options(True) and "-dlto" not in verify._options(False)
