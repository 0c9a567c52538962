"""simkit: differentiable physics simulation in Python, compiled to native CPU and CUDA code.

    import simkit as sk

    @sk.kernel
    def saxpy(a: float, x: sk.array(dtype=float), y: sk.array(dtype=float)):
        i = sk.tid()
        y[i] = a * x[i] + y[i]

    x = sk.ones(1024, device="cpu"); y = sk.zeros(1024, device="cpu")
    sk.launch(saxpy, dim=1024, inputs=[2.0, x, y], device="cpu")
"""
from . import autograd, collision, config, io, model, optim, solvers, types
from . import geometry  # Warp's warp.geometry: IsoSurfaceMarchingCubes, IsoSurfaceBase
from . import render  # Warp's warp.render: UsdRenderer
from . import utils  # Warp's wp.utils: array_sum, array_scan, radix_sort_pairs, ...
from .collision import (Bvh, BvhQuery, HashGrid, HashGridQuery, MarchingCubes, Mesh, MeshQuery, MeshQueryAABB,
                        MeshQueryPoint, MeshQueryRay, is_cubql_available)
from .model import Control, Model, ModelBuilder, State
from .solvers import RigidBodySolver, SemiImplicitEulerSolver, SPHSolver, XPBDSolver
from .kernels import (CompileError, CompilerNotFoundError, CompileTypeError, CompileValueError, Function, Kernel,
                      NativeCompileError, WarpCodegenError, WarpCodegenTypeError, WarpCodegenValueError, constant, func,
                      func_grad, func_native, func_replay, kernel, overload, static, struct)
from .kernels.api import builtin_functions as _builtin_functions
from .kernels.math_constants import *  # noqa: F401,F403 - pi, e, inf, ...
from .kernels.mathlib import *  # noqa: F401,F403 - norm_huber, quat_to_rpy, transform_compose, ...
from .kernels.mathlib import __all__ as _mathlib_all
from .kernels.decompositions import *  # noqa: F401,F403 - eig3, svd3, svd2, qr3
from .kernels.decompositions import __all__ as _decompositions_all
from .kernels.deterministic import DeterministicMode
from .kernels.module import Module, get_module, get_module_options, set_module_options
from .kernels.math_constants import __all__ as _constants_all
from .kernels.types import *  # noqa: F401,F403 - scalar/vector/matrix types and aliases
from .kernels.types import __all__ as _types_all
from .runtime import *  # noqa: F401,F403
from .runtime import __all__ as _runtime_all
from .kernels.refs import Reference, address_of, ref  # noqa: E402 - pass-by-reference @func parameters (ref[T])
from .kernels.fixed_arrays import fixedarray  # noqa: E402 - fixed-size arrays made in kernels (their type)
from .version import __version__
from .logger import (LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_WARNING, Logger, ScopedLogger, ScopedLogLevel, get_logger,
                     set_logger)

_bf = _builtin_functions()
globals().update(_bf)


def init():
    """Initialise simkit (kept for Warp compatibility; everything is initialised lazily)."""


def synchronize():
    """Wait for all outstanding work on every device (CPU launches are synchronous)."""
    from .runtime.device import cuda_devices

    if cuda_devices():
        from .kernels.backends.cuda import driver

        driver.synchronize_all()


__all__ = (["autograd", "collision", "config", "geometry", "io", "logger", "model", "optim", "render", "solvers",
            "types", "utils",
            "LOG_DEBUG", "LOG_INFO", "LOG_WARNING", "LOG_ERROR", "Logger", "ScopedLogger", "ScopedLogLevel",
            "get_logger", "set_logger",
            "Control",
            "Model", "ModelBuilder", "State", "RigidBodySolver", "SemiImplicitEulerSolver", "SPHSolver", "XPBDSolver",
            "Bvh", "BvhQuery", "MeshQuery", "MeshQueryAABB", "MeshQueryPoint", "MeshQueryRay", "HashGrid",
            "HashGridQuery", "MarchingCubes", "Mesh", "is_cubql_available", "CompileError",
            "CompileTypeError", "CompileValueError", "WarpCodegenError", "WarpCodegenTypeError",
            "WarpCodegenValueError", "CompilerNotFoundError", "Function", "Kernel", "NativeCompileError",
            "constant", "func", "func_grad", "func_native", "func_replay", "kernel", "overload", "ref", "Reference",
            "address_of", "fixedarray", "static", "struct",
            "init",
            "synchronize",
            "__version__", "DeterministicMode", "Module", "get_module", "get_module_options", "set_module_options"]
           + list(_constants_all) + list(_mathlib_all)
           + list(_decompositions_all) + list(_types_all) + list(_runtime_all) + sorted(_bf))
