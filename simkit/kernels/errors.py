"""Compiler exceptions. Messages point at the user's Python file:line:column."""
from __future__ import annotations


class CompileError(Exception):
    """A kernel or function could not be compiled.

    The message names the file, line and column, and shows the source line::

        kernel.py:12:8: unknown name 'vel'
            y[i] = vel * 2.0
                   ^
    """

    def __init__(self, message: str, filename: str = "", line: int = 0, col: int = 0,
                 source_line: str = "", function: str = ""):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        self.function = function
        super().__init__(self._format())

    def _format(self) -> str:
        where = f"{self.filename}:{self.line}:{self.col + 1}" if self.filename else ""
        head = f"{where}: {self.message}" if where else self.message
        if self.function:
            head += f" (in '{self.function}')"
        if self.source_line:
            text = self.source_line.rstrip("\n")
            stripped = text.lstrip()
            caret_col = max(0, self.col - (len(text) - len(stripped)))
            head += f"\n    {stripped}\n    {' ' * caret_col}^"
        return head


class CompileTypeError(CompileError, TypeError):
    """A compile error about the type of a value (also a ``TypeError``)."""


class CompileValueError(CompileError, ValueError):
    """A compile error about a value known at compile time, such as a slice bound (also a ``ValueError``)."""


class CompileLimitError(CompileError, RuntimeError):
    """A limit of the generated code is exceeded, such as printf's 32 values (also a ``RuntimeError``, as
    Warp raises). The location and line come first, the message last::

        kernel.py:12:8 (in 'k'):
            printf("%d ...", a0, ..., a32)
            ^
        the maximum number of variadic arguments that can be passed to `printf` is 32
    """

    def _format(self) -> str:
        full = CompileError(self.message, self.filename, self.line, self.col, self.source_line, self.function)
        head, _, rest = str(full).partition("\n")
        where = f"{self.filename}:{self.line}:{self.col + 1}" if self.filename else ""
        head = where + (f" (in '{self.function}')" if self.function else "")
        return "\n".join(x for x in (head + ":" if head else "", rest, self.message) if x)


# Warp's names for them
WarpCodegenError, WarpCodegenTypeError, WarpCodegenValueError = CompileError, CompileTypeError, CompileValueError


class NativeCompileError(RuntimeError):
    """The C++ (or NVRTC) compiler rejected generated code. Holds the compiler log."""


class CompilerNotFoundError(RuntimeError):
    """No C++ compiler is available for the CPU backend."""
