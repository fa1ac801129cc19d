"""Read a memcheck log of tests/valgrind/core.py: list every error whose stack passes through
the C shim (pyfuse/_pyfuse_c) and exit 1 if there is one. Errors entirely inside CPython or
libc (memcheck has many false positives there) are counted but do not fail the check."""
from __future__ import annotations

import re
import sys


def main(path: str) -> int:
    with open(path) as f:
        text = f.read()
    # an error block: a line "==PID== <Kind...>" followed by "==PID==    at/by ..." lines
    blocks = re.split(r"\n==\d+== \n", text)
    ours, others = [], 0
    for b in blocks:
        lines = b.strip().splitlines()
        if not lines or not re.search(r"(Invalid (read|write)|uninitialised|Mismatched|"
                                      r"Invalid free|overlap|Syscall param)", lines[0]):
            continue
        if "_pyfuse_c" in b or "csrc/" in b:
            ours.append(b)
        else:
            others += 1
    for b in ours:
        print(b, "\n")
    summary = re.search(r"ERROR SUMMARY: .*", text)
    print(f"memcheck: {len(ours)} error(s) in the shim, {others} elsewhere "
          f"(CPython/libc); {summary.group(0) if summary else 'no summary'}")
    return 1 if ours or not summary else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
