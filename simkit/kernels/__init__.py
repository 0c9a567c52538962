"""The kernel compiler: Python source -> typed IR -> C++/CUDA -> native code."""
from . import types
from .decorators import Function, Kernel, constant, func, func_grad, func_replay, kernel, overload, static
from .native_func import func_native
from .errors import (CompileError, CompilerNotFoundError, CompileTypeError, CompileValueError, NativeCompileError,
                     WarpCodegenError, WarpCodegenTypeError, WarpCodegenValueError)
from .struct import struct

__all__ = ["types", "Function", "Kernel", "constant", "func", "func_grad", "func_native", "func_replay", "kernel",
           "static",
           "CompileError", "CompileTypeError", "CompileValueError", "CompilerNotFoundError", "NativeCompileError",
           "WarpCodegenError", "WarpCodegenTypeError", "WarpCodegenValueError", "struct"]
