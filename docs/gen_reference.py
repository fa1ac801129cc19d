"""Regenerate docs/operations.md from the docstrings: python docs/gen_reference.py"""
from __future__ import annotations

import inspect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pyfuse  # noqa: E402
from pyfuse import operations, types  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "operations.md")


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


def render() -> str:
    parts = ["# Operations reference", "",
             "Generated from the docstrings by `python docs/gen_reference.py`; do not edit.", "",
             inspect.cleandoc(operations.__doc__ or ""), ""]
    for name, fn in vars(pyfuse.Operations).items():
        if name.startswith("_") or not callable(fn):
            continue
        sig = str(inspect.signature(fn)).replace("self, ", "").replace("(self)", "()")
        parts += [f"## `{name}{sig}`", "", inspect.cleandoc(fn.__doc__ or ""), ""]
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
