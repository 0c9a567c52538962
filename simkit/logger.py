"""Where simkit's messages go: a replaceable logger (Warp's ``wp.set_logger`` / ``wp.get_logger``).

    import simkit as sk

    class Collect:                      # any object with these four methods is a logger
        def __init__(self): self.lines = []
        def debug(self, message): self.lines.append(message)
        def info(self, message): self.lines.append(message)
        def warning(self, message, category=None, stacklevel=1): self.lines.append(message)
        def error(self, message): self.lines.append(message)

    with sk.ScopedLogger(Collect()) as scope, sk.ScopedLogLevel(sk.LOG_DEBUG):
        ...                             # compiler commands, cache hits, print_launches lines -> scope.logger.lines

The default logger (:class:`LoggerBasic`) prints debug and info lines to ``sys.stdout``, hands warnings to Python's
``warnings`` (so ``warnings.filterwarnings`` and ``-W`` apply) and writes errors to ``sys.stderr``.
``config.log_level`` gates debug, info and warning messages; errors always go out.

Like ``config``, this module imports nothing else from simkit: every layer may log.
"""
from __future__ import annotations

import sys
import warnings
from typing import Protocol, runtime_checkable

from . import config

LOG_DEBUG, LOG_INFO, LOG_WARNING, LOG_ERROR = 10, 20, 30, 40  # (``config.log_level``'s values, as Warp's)

_METHODS = ("debug", "info", "warning", "error")


@runtime_checkable
class Logger(Protocol):
    """What a logger needs: ``debug(message)``, ``info(message)``, ``warning(message, category=None,
    stacklevel=1)`` and ``error(message)``. Any object with these methods will do (no subclassing needed).
    ``warning``'s ``stacklevel`` is ready for a ``warnings.warn`` call made in that method: it points at the code
    that called :func:`log_warning`."""

    def debug(self, message: str) -> None: ...

    def info(self, message: str) -> None: ...

    def warning(self, message: str, category: type[Warning] | None = None, stacklevel: int = 1) -> None: ...

    def error(self, message: str) -> None: ...


def _format_warning(message, category, filename, lineno, line=None) -> str:
    return f"Warp {category.__name__}: {message}\n"


class LoggerBasic:
    """The default logger, Warp's: debug and info to ``sys.stdout``; warnings through ``warnings.warn`` (so the
    user's filters apply), printed as ``Warp UserWarning: message``, each time they are logged; errors to
    ``sys.stderr`` as ``Warp Error: message``. (simkit's own warnings are plain Python warnings, which name the
    file and line that caused them.)"""

    def debug(self, message: str) -> None:
        print(message, file=sys.stdout)

    def info(self, message: str) -> None:
        print(message, file=sys.stdout)

    def warning(self, message: str, category: type[Warning] | None = None, stacklevel: int = 1) -> None:
        # (catch_warnings: the caller's filters, copied, and a recording catch_warnings still records; it does not
        # restore formatwarning, hence the try)
        saved = warnings.formatwarning
        try:
            with warnings.catch_warnings():
                warnings.formatwarning = _format_warning
                warnings.warn(message, category or UserWarning, stacklevel=stacklevel)
        finally:
            warnings.formatwarning = saved

    def error(self, message: str) -> None:
        print(f"Warp Error: {message}", file=sys.stderr)


_basic = LoggerBasic()
_active: Logger = _basic
_warnings_seen: set = set()  # (category, message) of the warnings logged once


def _checked(logger) -> Logger:
    missing = [m for m in _METHODS if not callable(getattr(logger, m, None))]
    if missing:
        raise TypeError(f"set_logger() needs an object with the methods {', '.join(_METHODS)}; "
                        f"{type(logger).__name__} lacks {', '.join(missing)}")
    return logger


def set_logger(logger: Logger | None) -> None:
    """Send simkit's messages to ``logger`` (None: back to :class:`LoggerBasic`). Raises ``TypeError`` naming the
    missing methods when ``logger`` is not a :class:`Logger`."""
    global _active
    _active = _basic if logger is None else _checked(logger)


def get_logger() -> Logger:
    """The logger simkit's messages go to now."""
    return _active


def log_debug(message: str) -> None:
    """``message`` to the logger's ``debug`` when ``config.log_level <= LOG_DEBUG``."""
    if config.log_level <= LOG_DEBUG:
        _active.debug(message)


def log_verbose(message: str) -> None:
    """A build detail (compiler commands, cache hits): to the logger's ``info`` with ``config.verbose``, else to its
    ``debug`` when ``config.log_level <= LOG_DEBUG``."""
    if config.verbose:
        _active.info(message)
    elif config.log_level <= LOG_DEBUG:
        _active.debug(message)


def log_info(message: str) -> None:
    """``message`` to the logger's ``info`` when ``config.log_level <= LOG_INFO``."""
    if config.log_level <= LOG_INFO:
        _active.info(message)


def log_warning(message: str, category: type[Warning] | None = None, stacklevel: int = 1, once: bool = False) -> None:
    """``message`` to the logger's ``warning`` when ``config.log_level <= LOG_WARNING``. ``stacklevel`` counts from
    the caller of this function (1: the line that called ``log_warning``). ``once``: only the first time this
    (category, message) is logged; deprecation warnings are always logged once."""
    if config.log_level > LOG_WARNING:
        return
    if once or (category is not None and issubclass(category, DeprecationWarning)):
        key = (category, message)
        if key in _warnings_seen:
            return
        _warnings_seen.add(key)
    _active.warning(message, category, stacklevel + 2)  # (+ this frame and the logger's own)


def log_error(message: str) -> None:
    """``message`` to the logger's ``error``, whatever ``config.log_level`` says."""
    _active.error(message)


class ScopedLogger:
    """``with sk.ScopedLogger(logger):`` simkit's messages go to ``logger`` (None: :class:`LoggerBasic`) inside the
    block; the logger from before is back afterwards, even when the block raises."""

    def __init__(self, logger: Logger | None):
        self.logger = _basic if logger is None else _checked(logger)

    def __enter__(self):
        global _active
        self._saved, _active = _active, self.logger
        return self

    def __exit__(self, *exc):
        global _active
        _active = self._saved  # (not re-checked: a failing check here would hide the block's own exception)
        return False


class ScopedLogLevel:
    """``with sk.ScopedLogLevel(sk.LOG_DEBUG):`` sets ``config.log_level`` inside the block and restores it after."""

    def __init__(self, log_level: int):
        self.log_level = log_level

    def __enter__(self):
        self._saved, config.log_level = config.log_level, self.log_level
        return self

    def __exit__(self, *exc):
        config.log_level = self._saved
        return False
