"""The source text of kernels and @funcs, as it was when they were defined.

A kernel is translated at its first launch, and its source is read then. By that time the file may be gone
(a module written to a temporary file, imported, then deleted; code ``exec``'d from a file that was removed)
or rewritten (an edited file reloaded: its new text no longer matches the old function objects). So each
definition keeps a reference to the lines of its file as they were when it was defined (Python's
``linecache`` already holds them; nothing is copied), and its translation reads those.

Example::

    exec(compile(text, path, "exec"), namespace)   # defines a kernel
    os.remove(path)
    simkit.launch(namespace["k"], 4, inputs=[a])    # still translates: the lines were kept at definition
"""
from __future__ import annotations

import contextlib
import linecache
import weakref

_lines: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> (filename, lines)


def remember(pyfunc) -> None:
    """At a definition: keep the current lines of the function's file (if it has one Python can read)."""
    code = getattr(pyfunc, "__code__", None)
    if code is None:
        return
    filename = code.co_filename
    try:
        linecache.checkcache(filename)  # (a file rewritten since it was cached: read again)
        lines = linecache.getlines(filename, pyfunc.__globals__)
    except Exception:  # noqa: BLE001 - no source: translating it reports that
        return
    if lines:
        try:
            _lines[pyfunc] = (filename, lines)
        except TypeError:  # not weakly referenceable
            pass


@contextlib.contextmanager
def kept(pyfunc):
    """Within: reading the function's source (``inspect``) gives the lines kept at its definition."""
    found = _lines.get(pyfunc) if pyfunc is not None else None
    if found is None:
        yield
        return
    filename, lines = found
    before = linecache.cache.get(filename)
    linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)  # (no mtime: never re-read)
    try:
        yield
    finally:
        if before is None:
            linecache.cache.pop(filename, None)
        else:
            linecache.cache[filename] = before


def source_info(pyfunc):
    """``SourceInfo(pyfunc)`` read from the lines kept at its definition."""
    from .frontend import SourceInfo

    with kept(pyfunc):
        return SourceInfo(pyfunc)
