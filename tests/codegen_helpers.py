"""The generated C++ of kernels and funcs, for tests that check what the compiler emits."""
import simkit as sk
from simkit.kernels import codegen
from simkit.kernels import module as kmodule


def adjoints(kernel) -> dict:
    """{name: generated adjoint body} for the kernel and each @func it calls."""
    options = dict(kmodule.compile_options())
    spec = kernel.specs[None]
    spec.build_ir(options)
    funcs, structs = kmodule.collect([spec])
    src = codegen.gen_module("t", [spec.ir], funcs, structs, options, sk.__version__, adjoint=True)
    starts = {kernel.key: f"void {spec.ir.name}_bwd("}
    starts.update({f.name.rsplit("_", 1)[0]: f"void adj_{f.name}(" for f in funcs})
    starts.update({f.name.rsplit("_", 1)[0] + "__u10": f"void adj_{f.name}__u10(" for f in funcs
                   if f"void adj_{f.name}__u10(" in src})
    out = {}
    for key, start in starts.items():
        body = src[src.rindex(start):]  # (variants are declared first, defined later)
        out[key] = body[:body.index("\n}\n")]
    return out
