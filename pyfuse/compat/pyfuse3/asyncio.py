"""``pyfuse3.asyncio``: ``enable()`` before ``asyncio.run(pyfuse3.main())``. pyfuse's main()
serves inside whichever loop runs it (trio or asyncio), so enabling or disabling only records
the choice."""
from __future__ import annotations

import asyncio

__all__ = ["enable", "disable", "Lock", "current_trio_token"]

Lock = asyncio.Lock
_enabled = False


def enable() -> None:
    """Switch pyfuse3 to asyncio mode."""
    global _enabled
    _enabled = True


def disable() -> None:
    """Switch pyfuse3 back to trio mode."""
    global _enabled
    _enabled = False


def current_trio_token() -> str:
    return "asyncio"
