"""``config.verify_autograd_array_access``: warn when a recorded operation overwrites an array that an
earlier recorded launch read (Warp's option of that name).

The Tape never differentiates such a recording silently (``backward()`` raises a ``TapeError`` naming the
array and the launch, runtime/tape.py); this option says so at the moment of the overwrite, naming the
kernel or the line of the copy, which is where the fix goes. Each array keeps one flag, shared by its
views (``_ver[2]``): set when a launch recorded on a Tape reads it, cleared when that Tape's
``backward()`` has consumed the reads or ``reset()`` forgets them. As in Warp, a flag cleared by one
tape's ``backward()`` no longer warns for another tape that read the same array.

Example::

    sk.config.verify_autograd_array_access = True
    with tape:
        sk.launch(square, n, inputs=[a], outputs=[b])
        sk.launch(overwrite, n, inputs=[c], outputs=[a])   # ArrayAccessWarning: 'a' ... already been read
"""
from __future__ import annotations

import os
import sys
import warnings

from .. import config

_TAIL = ("but has already been read from in a previous launch. This may corrupt gradient computation in the "
         "backward pass.")


class ArrayAccessWarning(UserWarning):
    """A recorded operation overwrote an array an earlier recorded launch read (see this module)."""



def enabled() -> bool:
    return bool(getattr(config, "verify_autograd_array_access", False))


def is_read(a) -> bool:
    return bool(a._ver[2])


def mark_read(a) -> None:
    a._ver[2] = True


def mark_write(a, subject: str = "array", how: str = "") -> None:
    """``a`` is written by a recorded operation: warn if a recorded launch read it. The message reads
    "{subject} is being written to{how} but has already been read from ..."."""
    if a._ver[2]:
        # at the user's line, and every time (no once-per-line registry: an overwrite repeated from one line, in a
        # loop, is a new one each time, as Warp reports it); the warning filters still apply
        f = next((f for f, _ in _user_frames()), None)
        if f is None:
            warnings.warn(f"{subject} is being written to{how} {_TAIL}", ArrayAccessWarning, stacklevel=2)
            return
        warnings.warn_explicit(f"{subject} is being written to{how} {_TAIL}", ArrayAccessWarning,
                               f.f_code.co_filename, f.f_lineno, module=f.f_globals.get("__name__"),
                               registry=None, module_globals=f.f_globals)


def clear(arrays) -> None:
    for a in arrays:
        ver = getattr(getattr(a, "data", a), "_ver", None)  # (an indexedarray: its data's)
        if ver is not None:
            ver[2] = False


def launch(kernel, spec, access, args) -> None:
    """A launch recorded on a Tape: warn for each array it writes that was read before, then flag those
    it reads."""
    from . import tape  # (tape imports this module)

    src = kernel.source()
    by_name = dict(zip(kernel.param_names, args))
    for path, line in access.writes.items():
        a = tape.analysis.resolve(path, by_name)
        if a is not None:
            mark_write(a, f"array '{'.'.join(path)}' of kernel '{kernel.key}' ({src.filename}:{line})")
    for path in access.reads:
        a = tape.analysis.resolve(path, by_name)
        if a is not None:
            mark_read(a)


def copy(dest, src) -> None:
    """A copy recorded on a Tape (``copy``, ``assign``): names the user's line."""
    filename, line = _user_frame()
    mark_write(dest, "array", f" by an array copy at {filename}:{line}")
    mark_read(src)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_frames():
    f = sys._getframe(1)
    depth = 1
    while f is not None:
        if not os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE + os.sep):
            yield f, depth
        f = f.f_back
        depth += 1


def _user_frame():
    """(file, line) of the innermost caller outside the simkit package."""
    for f, _ in _user_frames():
        return f.f_code.co_filename, f.f_lineno
    return "<unknown>", 0

