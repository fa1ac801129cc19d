"""Regenerate docs/operations.md (the path API) and docs/lowlevel-reference.md (the inode API)
from the docstrings: python docs/gen_reference.py"""
from __future__ import annotations

import inspect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyfuse  # noqa: E402
import pyfuse.lowlevel  # noqa: E402
from pyfuse import operations, types  # noqa: E402
from pyfuse.lowlevel import operations as ll_operations  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "operations.md")
OUT_LL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lowlevel-reference.md")


def _fields(cls: type) -> list[str]:
    """A table of a value type's fields and their defaults (from its constructor)."""
    if cls is pyfuse.FuseError:
        return []
    rows = []
    for p in inspect.signature(cls).parameters.values():
        default = "required" if p.default is inspect.Parameter.empty else f"`{p.default!r}`"
        ann = p.annotation
        if not isinstance(ann, str):
            ann = getattr(ann, "__forward_arg__", None) or getattr(ann, "__name__", str(ann))
        rows.append(f"| `{p.name}` | `{ann}` | {default} |")
    return ["| field | type | default |", "|---|---|---|", *rows, ""]


def _methods(cls: type) -> list[str]:
    parts = []
    for name, fn in vars(cls).items():
        if name.startswith("_") or not callable(fn):
            continue
        sig = str(inspect.signature(fn)).replace("self, ", "").replace("(self)", "()")
        parts += [f"## `{name}{sig}`", "", inspect.cleandoc(fn.__doc__ or ""), ""]
    return parts


def _doc(obj: object, title: str) -> list[str]:
    return [f"## `{title}`", "", inspect.cleandoc(obj.__doc__ or ""), ""]


def render_ll() -> str:
    """The inode API's reference (docs/lowlevel-reference.md)."""
    ll = pyfuse.lowlevel
    parts = ["# Inode API reference (`pyfuse.lowlevel`)", "",
             "Generated from the docstrings by `python docs/gen_reference.py`; do not edit. "
             "The guide is docs/lowlevel.md; the value types (Attr, DirEntry, FileInfo, ...) "
             "are the path API's, in docs/operations.md.", "",
             inspect.cleandoc(ll_operations.__doc__ or ""), ""]
    parts += _methods(ll.Operations)
    parts += ["# Values and constants", ""]
    parts += _doc(ll.Entry, "pyfuse.lowlevel.Entry") + _fields(ll.Entry)
    parts += ["## Constants", "",
              "`pyfuse.lowlevel.ROOT_INO` = 1; setattr's `to_set` bits: " + ", ".join(
                  f"`pyfuse.lowlevel.{n}`" for n in ("SET_MODE", "SET_UID", "SET_GID",
                                                     "SET_SIZE", "SET_ATIME", "SET_MTIME",
                                                     "SET_CTIME")) + ".", ""]
    parts += ["# Mounting", ""]
    parts += _doc(ll.run, "pyfuse.lowlevel.run") + _doc(ll.mount, "pyfuse.lowlevel.mount")
    parts += _doc(ll.serve, "pyfuse.lowlevel.serve") + _doc(ll.serving,
                                                            "pyfuse.lowlevel.serving")
    parts += _doc(ll.Session, "pyfuse.lowlevel.Session")
    for name in ("lookups", "lookups_held", "unmounted", "invalidate_inode",
                 "invalidate_entry", "notify_delete", "notify_store"):
        parts += _doc(getattr(ll.Session, name), f"Session.{name}")
    parts += _doc(ll.Session.event_loop, "Session.event_loop")
    parts += _doc(ll.lookups, "pyfuse.lowlevel.lookups")
    return "\n".join(parts).rstrip() + "\n"


def render() -> str:
    parts = ["# Operations reference", "",
             "Generated from the docstrings by `python docs/gen_reference.py`; do not edit.", "",
             inspect.cleandoc(operations.__doc__ or ""), ""]
    parts += _methods(pyfuse.Operations)
    parts += ["# Value types", ""]
    for cls in (types.Attr, types.DirEntry, types.StatVFS, types.FileInfo, types.FdRange,
                types.Config, types.Lock, types.Context, pyfuse.FuseError):
        parts += [f"## `pyfuse.{cls.__name__}`", "", inspect.cleandoc(cls.__doc__ or ""), ""]
        parts += _fields(cls)
    parts += ["# Functions", ""]
    for fn in (pyfuse.run, pyfuse.mount, pyfuse.context, pyfuse.unmount, pyfuse.is_mounted,
               pyfuse.abort):
        parts += [f"## `pyfuse.{fn.__name__}`", "", inspect.cleandoc(fn.__doc__ or ""), ""]
    return "\n".join(parts).rstrip() + "\n"


if __name__ == "__main__":
    with open(OUT, "w") as f:
        f.write(render())
    with open(OUT_LL, "w") as f:
        f.write(render_ll())
