"""The C split of a listing's batch, as a prototype outside pyfuse: a small C extension on the
stable ABI of Python 3.11 (built in a temporary directory with ``cc``) that reads a batch of
``(name, attr)`` tuples, collects the names in a tuple, joins them NUL-separated as UTF-8 into
one ``bytes`` and tells whether every entry shares the first's attr: what pyfuse's
``batch._split`` does with one ``zip`` and a join for the path API's listings as the docs teach
them. Two variants check the names in the same pass (``checked``, on a list; ``pull``, which
steps the docs' generator itself, the design pyfuse._pull, csrc/cpython/pull.c, now builds).
Instructions per entry (callgrind, a batch of 512 entries split N and 3N times, the difference
divided), against ``batch._split`` and the whole ``batch.pack`` on the same batch, and the docs'
generator pulled into a list by ``islice`` (as the engine pulls a batch Python packs) against
``pull``:

    python bench/proto_split.py

docs/performance.md (parts 13 and 14) has what it printed. The prototype's buffer is fixed and
it refuses where pyfuse would fall back to Python: it bounds what reading the batch in C could
save, it is not the design.
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
   the names in a tuple, NUL-joined as UTF-8 into one bytes, and whether every entry shares the
   first's attr. Returns (names, blob, shared) or raises TypeError, ValueError (a batch too
   long for the buffer) or UnicodeEncodeError (a name with surrogates). */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000
#include <Python.h>
#include <stdint.h>
#include <string.h>

static char buf[512 * 256];

static PyObject *split(PyObject *self, PyObject *batch) {
    (void)self;
    Py_ssize_t n = PyList_Size(batch);
    if (n < 0) return NULL;
    size_t at = 0;
    PyObject *a0 = NULL;
    int shared = 1;
    PyObject *names = PyTuple_New(n);
    if (!names) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *e = PyList_GetItem(batch, i);
        if (!e || !PyTuple_Check(e) || PyTuple_Size(e) != 2) {
            PyErr_SetString(PyExc_TypeError, "entry");
            goto fail;
        }
        PyObject *name = PyTuple_GetItem(e, 0), *attr = PyTuple_GetItem(e, 1);
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(name, &len);
        if (!s) goto fail;
        if (at + (size_t)len + 1 > sizeof buf) {
            PyErr_SetString(PyExc_ValueError, "too long");
            goto fail;
        }
        Py_INCREF(name);
        PyTuple_SetItem(names, i, name);
        memcpy(buf + at, s, (size_t)len);
        at += (size_t)len;
        buf[at++] = 0;
        if (i == 0) a0 = attr;
        else if (attr != a0) shared = 0;
    }
    return Py_BuildValue("(Ny#i)", names, buf, (Py_ssize_t)(at ? at - 1 : 0), shared);
fail:
    Py_DECREF(names);
    return NULL;
}

#define SLOTS 1024

/* One (str name, attr) entry of pull and checked: its name checked (not empty, no '/', at
   most 255 bytes, not twice: FNV-1a into SLOTS slots of seen), copied NUL-terminated at
   buf + *at; *attr its attr. 0, or -1 with an error set. */
static inline __attribute__((always_inline)) int take(PyObject *e, const char **seen,
                                                     size_t *at, PyObject **attr) {
    if (!e || !PyTuple_Check(e) || PyTuple_Size(e) != 2) {
        PyErr_SetString(PyExc_TypeError, "entry");
        return -1;
    }
    PyObject *name = PyTuple_GetItem(e, 0);
    *attr = PyTuple_GetItem(e, 1);
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(name, &len);
    if (!s || len == 0 || len > 255 || memchr(s, '/', (size_t)len)) {
        if (s) PyErr_SetString(PyExc_ValueError, "name");
        return -1;
    }
    char *p = buf + *at;
    memcpy(p, s, (size_t)len);
    p[len] = 0;
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    for (h &= SLOTS - 1; seen[h] != NULL; h = (h + 1) & (SLOTS - 1))
        if (strcmp(seen[h], p) == 0) {
            PyErr_SetString(PyExc_ValueError, "duplicate");
            return -1;
        }
    seen[h] = p;
    *at += (size_t)len + 1;
    return 0;
}

/* pull(iterator, n): up to n (str name, attr) entries pulled from the iterator and read in one
   pass, without a list: each name checked as csrc/readdir.c's check_names checks a batch (not
   empty, no '/', at most 255 bytes, not twice: FNV-1a into 1,024 slots) and copied into the
   NUL-separated buffer, each attr compared with the first. Returns (blob, k, shared); the
   names are not kept (the blob has them). */
static PyObject *pull(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *it;
    int n;
    if (!PyArg_ParseTuple(args, "Oi", &it, &n)) return NULL;
    if (n > SLOTS / 2) {
        PyErr_SetString(PyExc_ValueError, "batch too large");
        return NULL;
    }
    const char *seen[SLOTS];
    memset(seen, 0, sizeof seen);
    size_t at = 0;
    PyObject *a0 = NULL;
    int shared = 1, k;
    for (k = 0; k < n; k++) {
        PyObject *e = PyIter_Next(it);
        if (!e) {
            if (PyErr_Occurred()) return NULL;
            break;
        }
        PyObject *attr;
        if (take(e, seen, &at, &attr) < 0) {
            Py_DECREF(e);
            return NULL;
        }
        if (k == 0) a0 = attr;
        else if (attr != a0) shared = 0;
        Py_DECREF(e);  /* a0 stays alive: the caller's attr (a prototype's shortcut) */
    }
    return Py_BuildValue("(y#ii)", buf, (Py_ssize_t)(at ? at - 1 : 0), k, shared);
}

/* checked(batch): as split, with each name checked as pull checks it, and without the names'
   tuple (the blob has them). Returns (blob, shared). */
static PyObject *checked(PyObject *self, PyObject *batch) {
    (void)self;
    Py_ssize_t n = PyList_Size(batch);
    if (n < 0) return NULL;
    if (n > SLOTS / 2) {
        PyErr_SetString(PyExc_ValueError, "batch too large");
        return NULL;
    }
    const char *seen[SLOTS];
    memset(seen, 0, sizeof seen);
    size_t at = 0;
    PyObject *a0 = NULL;
    int shared = 1;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *attr;
        if (take(PyList_GetItem(batch, k), seen, &at, &attr) < 0)
            return NULL;
        if (k == 0) a0 = attr;
        else if (attr != a0) shared = 0;
    }
    return Py_BuildValue("(y#i)", buf, (Py_ssize_t)(at ? at - 1 : 0), shared);
}

static PyMethodDef methods[] = {{"split", split, METH_O, NULL}, {"pull", pull, METH_VARARGS, NULL},
                                {"checked", checked, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "csplit", NULL, -1, methods,
                                 NULL, NULL, NULL, NULL};
PyMODINIT_FUNC PyInit_csplit(void) { return PyModule_Create(&mod); }
"""

RUN = """
import sys
from itertools import islice

import csplit
from pyfuse import Attr
from pyfuse._core import batch as B

row, n = sys.argv[1], int(sys.argv[2])
a = Attr(mode=0o100644, size=1, nlink=1)
b = [(f"f{i:05d}", a) for i in range(@SIZE@)]
if csplit.split(b) != (tuple(B._split(b)[0]), B._split(b)[1], 1):
    raise SystemExit("the prototype splits differently")
def gen():  # the docs' listing, as bench/tree.py's
    for i in range(@SIZE@):
        yield "f%05d" % i, a
if csplit.pull(gen(), @SIZE@) != (B._split(b)[1], @SIZE@, 1) or \
        csplit.checked(b) != (B._split(b)[1], 1):
    raise SystemExit("the prototype pulls differently")
if row == "islice+c":  # what pyfuse does with the docs' generator, its split done by the prototype
    for _ in range(n):
        csplit.split(list(islice(gen(), @SIZE@)))
elif row == "pull":
    for _ in range(n):
        csplit.pull(gen(), @SIZE@)
elif row == "islice+checked":
    for _ in range(n):
        csplit.checked(list(islice(gen(), @SIZE@)))
else:
    fn = {"c": csplit.split, "checked": csplit.checked, "split": B._split,
          "pack": lambda b: B.pack(0, b)}[row]
    for _ in range(n):
        fn(b)
""".replace("@SIZE@", str(SIZE))

ROWS = {"split": "pyfuse's batch._split (one zip, the names joined)",
        "pack": "pyfuse's whole batch.pack (the split, the shared attr found, the Batch)",
        "c": "the C prototype (the names in a tuple and joined, the shared attr found)",
        "checked": "the C prototype with the names checked in the same pass, no names' tuple",
        "islice+c": "the docs' generator pulled into a list by islice, split by the prototype",
        "islice+checked": "the same, split and checked by the prototype in one pass",
        "pull": "the docs' generator pulled by C and read in the same pass, the names checked"}


def build(d: str) -> None:
    """Compile the prototype into directory ``d`` as the module ``csplit`` (Python 3.11 or
    later; ``cc`` and Python's headers)."""
    if sys.version_info < (3, 11):
        raise SystemExit("proto_split.py: the prototype uses the stable ABI of Python 3.11")
    with open(os.path.join(d, "csplit.c"), "w") as f:
        f.write(SOURCE)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Werror",
                    "-I" + sysconfig.get_paths()["include"], "csplit.c", "-o",
                    "csplit.abi3.so"], cwd=d, check=True)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="proto-split-") as d:
        build(d)
        with open(os.path.join(d, "run.py"), "w") as f:
            f.write(RUN)
        for row, what in ROWS.items():
            argv = [sys.executable, "run.py", row]
            per = (instructions([*argv, str(3 * N)], cwd=d)
                   - instructions([*argv, str(N)], cwd=d)) / (2 * N * SIZE)
            print(f"{row:6s} {per:5,.0f} an entry  {what}", flush=True)


if __name__ == "__main__":
    main()
