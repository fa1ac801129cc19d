"""Read the memcheck logs of tests/valgrind/core.py (one a daemon): list every error whose stack
passes through pyfuse's C (the shim, pyfuse/_pyfuse_c, and pyfuse/_pull, the readdir engine's
pull of a batch) and exit 1 if there is one, or if a log has no
summary (its daemon did not exit). Errors entirely inside CPython or libc (memcheck has many
false positives there) are counted but do not fail the check.

    python tests/valgrind/check_log.py LOG [LOG...]
"""
from __future__ import annotations

import os
import re
import sys

#: pyfuse's C sources (csrc/ and its cpython/), as memcheck names a frame of them:
#: "(ll_reply.c:325)" (file names only)
SHIM_SOURCES = sorted(n for _, _, names in os.walk(os.path.join(os.path.dirname(__file__), "..",
                                                                 "..", "csrc"))
                      for n in names if n.endswith((".c", ".h")))
_SHIM_FRAME = re.compile(r"\((?:" + "|".join(map(re.escape, SHIM_SOURCES)) + r"):\d+\)")


def in_shim(block: str) -> bool:
    """Whether an error's stack passes through pyfuse's C: a frame of one of its sources, of the
    module cffi generates from them (pyfuse._pyfuse_c.c) or of a built module itself."""
    return "_pyfuse_c" in block or "_pull." in block or _SHIM_FRAME.search(block) is not None


def check(path: str) -> int:
    """Report one log; 1 if it fails the check."""
    if not os.path.exists(path):  # an unmatched glob
        print(f"memcheck: no log {path} (did valgrind run?)")
        return 1
    with open(path) as f:
        text = f.read()
    # an error block: a line "==PID== <Kind...>" (after "==PID== Thread N:" when the process
    # has threads) followed by "==PID==    at/by ..." lines
    blocks = re.split(r"\n==\d+== \n", text)
    ours, others = [], 0
    for b in blocks:
        lines = [line for line in b.strip().splitlines()
                 if not re.match(r"==\d+== Thread \d+:$", line)]
        if not lines or not re.search(r"(Invalid (read|write)|uninitialised|Mismatched|"
                                      r"Invalid free|overlap|Syscall param)", lines[0]):
            continue
        if in_shim(b):
            ours.append(b)
        else:
            others += 1
    for b in ours:
        print(b, "\n")
    summary = re.search(r"ERROR SUMMARY: .*", text)
    print(f"{path}: {len(ours)} error(s) in the shim, {others} elsewhere "
          f"(CPython/libc); {summary.group(0) if summary else 'no summary'}")
    return 1 if ours or not summary else 0


def main(paths: list[str]) -> int:
    if not paths:
        print("memcheck: no log (did valgrind run?)")
        return 1
    return max(check(p) for p in paths)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
