"""Registers and local memory per GPU thread without a GPU (``sk.get_kernel_resource_usage``, nvrtc.resource_usage):
what NVRTC's assembler reports, checked against the counts the compiled CUBIN itself records."""
import struct
from typing import Any

import pytest

import simkit as sk

nvrtc = pytest.importorskip("simkit.kernels.backends.cuda.nvrtc")
if not nvrtc.is_available():
    pytest.skip("NVRTC is not installed", allow_module_level=True)

EIATTR_FRAME_SIZE, EIATTR_REGCOUNT = 0x11, 0x2F


def cubin_counts(cubin: bytes) -> dict:
    """{entry: (registers, frame bytes)} read from a CUBIN's ELF sections: ``.text.<entry>`` names the entry's symbol
    (sh_info), ``.nv.info`` holds (symbol, value) attributes for each."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = sections[shstrndx][4]

    def name(sec):
        start = names + sec[0]
        return cubin[start:cubin.index(b"\0", start)].decode()

    symbols = {sec[7] & 0xFFFFFF: name(sec)[len(".text."):] for sec in sections if name(sec).startswith(".text.")}
    attrs = {}
    for sec in sections:
        if name(sec) != ".nv.info":
            continue
        at, end = sec[4], sec[4] + sec[5]
        while at < end:
            fmt, attr, size = struct.unpack_from("<BBH", cubin, at)
            if fmt == 4:  # (symbol, value) pairs
                sym, value = struct.unpack_from("<II", cubin, at + 4)
                attrs.setdefault(attr, {})[sym] = value
                at += 4 + size
            else:
                at += 4
    return {entry: (attrs[EIATTR_REGCOUNT][sym], attrs.get(EIATTR_FRAME_SIZE, {}).get(sym, 0))
            for sym, entry in symbols.items()}


@sk.kernel
def axpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
    i = sk.tid()
    y[i] = a * x[i] + y[i]


@sk.kernel
def local_table(k: sk.array(dtype=int), out: sk.array(dtype=float)):
    # a thread-local array indexed by a value known at run time only: it lives in local memory (the stack)
    i = sk.tid()
    t = sk.zeros(shape=64, dtype=float)
    for j in range(64):
        t[j] = float(j * i)
    out[i] = t[k[i] % 64]


@sk.kernel
def inverses(m: sk.array(dtype=sk.mat33), out: sk.array(dtype=sk.mat33)):
    i = sk.tid()
    a = m[i]
    out[i] = sk.inverse(a) * sk.determinant(a) + sk.inverse(a * a) * sk.trace(a)


@sk.kernel
def scale(x: sk.array(dtype=Any), s: Any):
    i = sk.tid()
    x[i] = x[i] * s


@sk.kernel(enable_backward=False)
def forward_only(x: sk.array(dtype=float)):
    x[sk.tid()] = 1.0


def test_counts_match_what_the_cubin_records():
    for kernel in (axpy, local_table, inverses):
        spec = kernel.specs[None]
        for adjoint in (False, True):
            source = kernel.module.spec_source(spec, adjoint)
            entry = f"{spec.cname}_cuda_{'bwd' if adjoint else 'fwd'}"
            usage = nvrtc.resource_usage(source, "sm_90")
            registers, frame = cubin_counts(bytes(nvrtc.compile_source(source, "sm_90")))[entry]
            assert usage[entry]["registers"] == registers
            assert usage[entry]["stack"] == frame
            if kernel is axpy:
                assert sk.get_kernel_resource_usage(kernel, "sm_90", adjoint=adjoint) == usage[entry]


def test_what_the_counts_say():
    small = sk.get_kernel_resource_usage(axpy)
    assert 8 <= small["registers"] <= 64 and small["stack"] == small["spill_stores"] == small["smem"] == 0
    table = sk.get_kernel_resource_usage(local_table, "sm_80")
    assert table["stack"] >= 64 * 4  # the 64 floats
    # two 3x3 inverses and their adjoint hold far more live values than y = a x + y
    assert sk.get_kernel_resource_usage(inverses, adjoint=True)["registers"] > small["registers"]


def test_generic_kernels_take_types_and_errors_name_the_problem():
    f32 = sk.get_kernel_resource_usage(scale, types=[sk.array(dtype=sk.float32), sk.float32])
    f64 = sk.get_kernel_resource_usage(scale, types=[sk.array(dtype=sk.float64), sk.float64])
    assert 0 < f32["registers"] <= 255 and 0 < f64["registers"] <= 255
    assert sorted(str(s.types[0]) for s in scale.overloads.values()) == ["array(dtype=float32, ndim=1)",
                                                                         "array(dtype=float64, ndim=1)"]
    with pytest.raises(RuntimeError, match="'scale' is generic: pass types"):
        sk.get_kernel_resource_usage(scale)
    with pytest.raises(RuntimeError, match="'forward_only' has no adjoint"):
        sk.get_kernel_resource_usage(forward_only, adjoint=True)
    with pytest.raises(ValueError, match="needs a GPU architecture.*compute_90"):
        sk.get_kernel_resource_usage(axpy, "compute_90")


def test_counts_are_what_the_driver_reports_for_the_loaded_kernel():
    """On a real GPU: the count for the device's architecture is the loaded function's (cuFuncGetAttribute)."""
    if not sk.is_cuda_available():
        pytest.skip("needs a CUDA GPU (the emulated one loads no GPU code)")
    from simkit.kernels.backends.cuda import driver
    from simkit.kernels.backends.cuda.module import target_arch

    arch = driver.enumerate_devices()[0][2]
    if not target_arch(arch).startswith("sm_"):
        pytest.skip(f"NVRTC {nvrtc.version()} has no {arch}: the driver compiles PTX for it with its own assembler")
    for kernel in (axpy, local_table, inverses):
        usage = sk.get_kernel_resource_usage(kernel, arch)
        props = sk.get_cuda_kernel_properties(kernel, "cuda:0")
        assert props["register_count"] == usage["registers"]
        assert props["local_memory_size"] == usage["stack"]


def test_the_readme_scenes_solver_kernels_compile_to_gpu_code():
    """The README scene's XPBD kernels, forward and adjoint, as one module each, go all the way to GPU code for
    sm_90 (NVRTC with optimisation, then its assembler): the suite's NVRTC check of every module stops at NVVM
    IR. Every kernel the step launched is in the CUBIN, and no forward kernel spills registers."""
    from simkit.cli import load_scene
    from simkit.kernels import codegen
    from simkit.kernels import module as kmodule
    from simkit.version import __version__

    load_scene("cloth_on_sphere").run(steps=1, size=4)
    module = kmodule._modules["simkit.solvers.particle.kernels_xpbd"]
    specs = [s for k in module.kernels for s in k.specs.values() if s.ir is not None]
    assert len(specs) >= 6  # predict, springs, triangles, ground, mesh contacts, deltas, velocities
    funcs, structs = kmodule.collect(specs)
    for adjoint in (False, True):
        source = codegen.gen_module("xpbd_gpu_code", [s.ir for s in specs], funcs, structs, module.compile_options(),
                                    __version__, adjoint=adjoint)
        usage = nvrtc.resource_usage(source, "sm_90")
        assert set(usage) == {f"{s.cname}_cuda_{'bwd' if adjoint else 'fwd'}" for s in specs}
        assert all(0 < u["registers"] <= 255 for u in usage.values())
        if not adjoint:
            assert all(u["spill_stores"] == 0 for u in usage.values()), usage
