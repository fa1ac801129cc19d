"""The C split of a listing's batch, as a prototype outside pyfuse: a small C extension on the
stable ABI of Python 3.11 (built in a temporary directory with ``cc``) that reads a batch of
``(name, attr)`` tuples, joins the names NUL-separated as UTF-8 into one ``bytes`` and tells
whether every entry shares the first's attr. That is what pyfuse's ``batch._split`` does with one
``zip`` and a join for the path API's listings as the docs teach them. Instructions per entry
(callgrind, a batch of 512 entries split N and 3N times, the difference divided), against
``batch._split`` and the whole ``batch.pack`` on the same batch:

    python bench/proto_split.py

docs/performance.md (part 13) has what it printed. The prototype checks nothing but the
tuples' shape and has a fixed buffer: it bounds what reading the batch in C could save, it is
not a design.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.upcall_cost import instructions  # noqa: E402

N, SIZE = 1000, 512

SOURCE = r"""/* Prototype: split a batch of (str name, attr) tuples in C with the stable ABI (3.11):
   the names NUL-joined as UTF-8 into one bytes, and whether every entry shares the first's
   attr. Returns (blob, shared) or raises TypeError. */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000
#include <Python.h>
#include <string.h>

static char buf[512 * 256];

static PyObject *split(PyObject *self, PyObject *batch) {
    (void)self;
    Py_ssize_t n = PyList_Size(batch);
    if (n < 0) return NULL;
    size_t at = 0;
    PyObject *a0 = NULL;
    int shared = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GetItem(batch, i);
        if (!e || !PyTuple_Check(e) || PyTuple_Size(e) != 2) {
            PyErr_SetString(PyExc_TypeError, "entry");
            return NULL;
        }
        PyObject *name = PyTuple_GetItem(e, 0), *attr = PyTuple_GetItem(e, 1);
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(name, &len);
        if (!s) return NULL;
        if (at + (size_t)len + 1 > sizeof buf) {
            PyErr_SetString(PyExc_ValueError, "too long");
            return NULL;
        }
        memcpy(buf + at, s, (size_t)len);
        at += (size_t)len;
        buf[at++] = 0;
        if (i == 0) a0 = attr;
        else if (attr != a0) shared = 0;
    }
    return Py_BuildValue("(y#i)", buf, (Py_ssize_t)(at ? at - 1 : 0), shared);
}

static PyMethodDef methods[] = {{"split", split, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "csplit", NULL, -1, methods,
                                 NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit_csplit(void) { return PyModule_Create(&mod); }
"""

RUN = """
import sys
import csplit
from pyfuse import Attr
from pyfuse._core import batch as B

row, n = sys.argv[1], int(sys.argv[2])
a = Attr(mode=0o100644, size=1, nlink=1)
b = [(f"f{i:05d}", a) for i in range(@SIZE@)]
if csplit.split(b) != (B._split(b)[1], 1):
    raise SystemExit("the prototype splits differently")
fn = {"c": csplit.split, "split": B._split, "pack": lambda b: B.pack(0, b)}[row]
for _ in range(n):
    fn(b)
""".replace("@SIZE@", str(SIZE))

ROWS = {"split": "pyfuse's batch._split (one zip, the names joined)",
        "pack": "pyfuse's whole batch.pack (the split, the shared attr found, the Batch)",
        "c": "the C prototype (the names joined, the shared attr found)"}


def main() -> None:
    if sys.version_info < (3, 11):
        raise SystemExit("proto_split.py: the prototype uses the stable ABI of Python 3.11")
    with tempfile.TemporaryDirectory(prefix="proto-split-") as d:
        with open(os.path.join(d, "csplit.c"), "w") as f:
            f.write(SOURCE)
        with open(os.path.join(d, "run.py"), "w") as f:
            f.write(RUN)
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror",
                        "-I" + sysconfig.get_paths()["include"], "csplit.c", "-o",
                        "csplit.abi3.so"], cwd=d, check=True)
        for row, what in ROWS.items():
            argv = [sys.executable, "run.py", row]
            per = (instructions([*argv, str(3 * N)], cwd=d)
                   - instructions([*argv, str(N)], cwd=d)) / (2 * N * SIZE)
            print(f"{row:6s} {per:5,.0f} an entry  {what}", flush=True)


if __name__ == "__main__":
    main()
