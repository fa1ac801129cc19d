"""What a bare cffi ``extern "Python"`` upcall costs by its arguments, outside pyfuse: a
prototype module (built in a temporary directory with the cffi this Python has) whose C loop
calls a Python callback that returns 0, with lookup's five arguments (two of them 64-bit
addresses), with three small integers, and with one. Instructions per upcall (callgrind, N
and 2N upcalls, the difference divided by N): the GIL taken and dropped, the arguments
converted, the frame, the result.

    python bench/upcall_args.py [--python PYTHON]

docs/performance.md has what it printed for the cffi 2.1.1 wheel and for cffi 1.17.1.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.upcall_cost import instructions  # noqa: E402

N = 10_000

BUILD = '''
import cffi
ffi = cffi.FFI()
ffi.cdef("""
extern "Python" int cb5(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
extern "Python" int cb3(uint64_t, uint64_t, uint64_t);
extern "Python" int cb1(uint64_t);
void loop5(int n);
void loop3(int n);
void loop1(int n);
""")
ffi.set_source("_upcall_proto", """
static int cb5(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
static int cb3(uint64_t, uint64_t, uint64_t);
static int cb1(uint64_t);
static void loop5(int n) {
    for (int i = 0; i < n; i++) cb5(0, 0x7f1234567890u, 2, 6, 0x7f1234560000u);
}
static void loop3(int n) { for (int i = 0; i < n; i++) cb3(0, 2, 1); }
static void loop1(int n) { for (int i = 0; i < n; i++) cb1(0); }
""")
ffi.compile(verbose=False)
'''

RUN = '''
import sys
from _upcall_proto import ffi, lib

@ffi.def_extern()
def cb5(h, req, parent, namelen, out):
    return 0

@ffi.def_extern()
def cb3(h, parent, slot):
    return 0

@ffi.def_extern()
def cb1(h):
    return 0

getattr(lib, "loop" + sys.argv[1])(int(sys.argv[2]))
'''

ROWS = {"5": "lookup's five arguments (h, req, parent, namelen, out; req and out 64-bit)",
        "3": "three small integers (h, parent, a thread's slot)",
        "1": "one small integer"}


def _count(python: str, d: str, row: str, n: int) -> int:
    return instructions([python, "run.py", row, str(n)], cwd=d)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="upcall-") as d:
        for name, text in (("build.py", BUILD), ("run.py", RUN)):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        subprocess.run([a.python, "build.py"], cwd=d, check=True, capture_output=True)
        version = subprocess.run([a.python, "-c", "import cffi; print(cffi.__version__)"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        print(f"cffi {version}, {a.python}")
        for row, what in ROWS.items():
            per = (_count(a.python, d, row, 2 * N) - _count(a.python, d, row, N)) / N
            print(f"{per:7,.0f}  {what}", flush=True)


if __name__ == "__main__":
    main()
