"""Which requests are running Python code right now, read from the threads' stacks (for the
messages of a loop that waits for them to end). Costs nothing per request: the stacks are
looked at only when asked (:func:`sys._current_frames`)."""
from __future__ import annotations

import inspect
import os
import sys
from types import FrameType
from typing import Optional

from .dispatch import EXTERNS

__all__ = ["in_progress"]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ours(frame: FrameType) -> bool:
    f = frame.f_code.co_filename
    return f.startswith(_PACKAGE + os.sep) or f.startswith("<pyfuse ")


def _describe(frame: FrameType) -> str:
    """``name(arg, ...) at file:line``: the handler's call, its arguments shortened."""
    code = frame.f_code
    info = inspect.getargvalues(frame)
    args = [a for a in info.args if a not in ("self", "cls")]
    shown = ", ".join(f"{info.locals.get(a, '?')!r:.60}" for a in args)
    name = getattr(code, "co_qualname", code.co_name)
    return f"{name}({shown}) at {os.path.basename(code.co_filename)}:{frame.f_lineno}"


def _request(frame: Optional[FrameType]) -> Optional[str]:
    """The request a thread's innermost ``frame`` serves, if it is inside a pyfuse entry
    point: the first frame of the filesystem's own code called from there (or the entry
    point's name when none is running)."""
    stack: list[FrameType] = []
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    stack.reverse()  # outermost first
    for i, f in enumerate(stack):
        if f.f_code.co_name in EXTERNS:
            inner = next((g for g in stack[i + 1:] if not _ours(g)), None)
            return _describe(inner) if inner is not None else f.f_code.co_name
    return None


def in_progress() -> list[str]:
    """One line per thread that is inside a filesystem's handler now."""
    out = []
    for frame in sys._current_frames().values():
        r = _request(frame)
        if r is not None:
            out.append(r)
    return out
