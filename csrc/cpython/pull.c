/* pyfuse._pull: a listing's batch pulled from the filesystem's iterator and read in one pass.
 *
 * The one part of pyfuse written against CPython's API (its stable ABI, as the cffi shim is),
 * because it steps a Python iterator: the readdir engine (pyfuse/_core/readdir.py) hands it a
 * listing's iterator and the batch's size, and for each entry that is a tuple (name, attr[,
 * offset[, ino]]), name a str or bytes, it checks the name by csrc/names.h's rules, as
 * csrc/readdir.c's check_names does (not empty, no '/' or NUL, at most 255 bytes, not twice in the
 * batch), copies it, NUL-terminated, into the batch's name buffer, compares the attr with the first
 * entry's and keeps the offset and inode number, then lets the entry go. No list of entries, no
 * tuple of names and no second pass over the names: C's filler takes the buffer as checked
 * (pyfuse_fill_checked). Anything else (another shape of entry, a name that is not valid UTF-8 or
 * not valid at all, a duplicate, an offset or inode number that is not an int64 or uint64) ends the
 * fast path at that entry: the rest of the batch is pulled as it comes and handed back as a list,
 * so that Python packs the batch as before and reports what is wrong in its own words.
 *
 * Names are read with PyUnicode_AsUTF8AndSize, part of the stable ABI from Python 3.10 on: it is
 * looked up when the module is imported, and on Python 3.9 pull() is not offered (available is
 * False) and the engine packs every batch in Python.
 */
#define PY_SSIZE_T_CLEAN
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x03090000
#endif
#include <Python.h>

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../names.h"
#include "../pyfuse_cdef.h"  /* the batch's size and the table's, as the shim has them */

#define MAX_BATCH PYFUSE_READDIR_BATCH  /* the engine checks the shim it loads agrees */
#define SLOTS PYFUSE_DUP_SLOTS          /* the duplicate-name table */
_Static_assert((SLOTS & (SLOTS - 1)) == 0 && SLOTS >= 2 * MAX_BATCH && MAX_BATCH < 65535,
               "PYFUSE_DUP_SLOTS must be a power of two, at least twice PYFUSE_READDIR_BATCH, "
               "and an entry number + 1 must fit the table's uint16_t slots");
#define STACK_NAMES 16384  /* the name buffer on the stack; a longer batch's grows on the heap */
#define STACK_ATTRS 32     /* attrs on the stack; a batch with more moves them to the heap */

/* pull's flags */
#define PULL_SHARED 1  /* the entries share one attr */
#define PULL_BYTES 2   /* every name was bytes */
#define PULL_PACKED 4  /* attrs is the entries' Attr bytes, packed (struct pyfuse_attr each) */

typedef const char *(*as_utf8_fn)(PyObject *, Py_ssize_t *);

struct pull_state {
    as_utf8_fn as_utf8;   /* PyUnicode_AsUTF8AndSize; NULL before Python 3.10 */
    PyObject *attr_type;  /* pyfuse.Attr once use_attr() has checked its layout, else NULL */
};

#define ATTR_SIZE sizeof(struct pyfuse_attr)

/* An Attr's bytes (struct pyfuse_attr's, in place), or NULL if a is not an Attr (or Attr's
 * layout was not checked). An Attr is a ctypes structure: ctypes keeps its bytes behind the
 * pointer stored right after the object's header (CDataObject's b_ptr, first since ctypes
 * began). That is not a documented API, so use_attr() checks it against ctypes.addressof
 * before pull() relies on it; the buffer protocol would cost as much as the join it replaces
 * (about 125 instructions an entry against 5, callgrind), and is not in the stable ABI before
 * Python 3.11. */
static const char *attr_bytes(const struct pull_state *s, PyObject *a)
{
    if (s->attr_type == NULL
        || (Py_TYPE(a) != (PyTypeObject *)s->attr_type
            && !PyType_IsSubtype(Py_TYPE(a), (PyTypeObject *)s->attr_type)))
        return NULL;
    return *(const char *const *)(const void *)((const char *)a + sizeof(PyObject));
}

/* The name buffer of one call: on the stack, moved to the heap when a batch's names outgrow
 * it. Returns 0, or -1 with MemoryError set. */
struct names {
    char *p;
    size_t len, cap;
    int heap;
};

static int names_room(struct names *b, size_t more)
{
    size_t cap = b->cap;
    char *p;

    if (b->len + more <= cap)
        return 0;
    while (cap < b->len + more)
        cap *= 2;
    p = b->heap ? PyMem_Realloc(b->p, cap) : PyMem_Malloc(cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (!b->heap)
        memcpy(p, b->p, b->len);
    b->p = p;
    b->cap = cap;
    b->heap = 1;
    return 0;
}

/* The attrs' bytes of one call: on the stack for a small batch; when it outgrows that, a bytes
 * object four times the size, up to the whole batch's (so a listing allocates at most 4x what
 * it holds; a full batch's object is handed back as it is: a copy of tens of KiB would cost
 * more than the join it replaces). */
struct attr_buf {
    char *p;
    size_t len, cap;
    PyObject *obj; /* NULL while on the stack */
};

/* One entry's attr bytes (src) appended, the room grown 4x when outgrown but never beyond
 * `left` entries more (this one and those the batch may still take). 0, or -1 with
 * MemoryError. */
static int add_attr(struct attr_buf *ab, const char *src, int left)
{
    if (ab->len + ATTR_SIZE > ab->cap) {
        size_t most = ab->len + (size_t)left * ATTR_SIZE, cap = ab->cap * 4;
        if (cap > most)
            cap = most;
        PyObject *obj = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)cap);

        if (obj == NULL)
            return -1;
        memcpy(PyBytes_AsString(obj), ab->p, ab->len);
        Py_XDECREF(ab->obj);
        ab->obj = obj;
        ab->p = PyBytes_AsString(obj);
        ab->cap = cap;
    }
    memcpy(ab->p + ab->len, src, ATTR_SIZE);
    ab->len += ATTR_SIZE;
    return 0;
}

/* The attrs' bytes as a bytes object of their length (a new reference), or NULL with an error
 * set; the buffer's object is taken over or released. */
static PyObject *take_attrs(struct attr_buf *ab)
{
    PyObject *obj = ab->obj, *cut;

    ab->obj = NULL;
    if (obj != NULL && ab->len == ab->cap)
        return obj;
    cut = PyBytes_FromStringAndSize(ab->p, (Py_ssize_t)ab->len); /* a part-full batch's */
    Py_XDECREF(obj);
    return cut;
}

/* The duplicate-name table of one call: slot -> entry number + 1 (0: empty), the entries' names
 * found by their offsets in the buffer (so that the table stays right when the buffer moves).
 * It is cleared when a second entry comes (a listing C does not take, or of one entry, never
 * pays for it). */
struct seen {
    uint16_t slot[SLOTS];
    uint32_t at[MAX_BATCH];
    uint32_t hash[MAX_BATCH]; /* each entry's: a probe compares names only on equal hashes
                                 (the first entry's put in the table when the second comes) */
};

/* Whether entry k's name (len bytes, copied at b->p + at, hash h: pyfuse_name_scan) is new
 * to the batch; records it if so. */
static int unseen(struct seen *t, const struct names *b, int k, size_t at, size_t len,
                  uint32_t h)
{
    const char *p = b->p + at;
    uint32_t i;

    t->at[k] = (uint32_t)at;
    t->hash[k] = h;
    if (k == 0)
        return 1;
    if (k == 1) { /* the table, with the first entry in it */
        memset(t->slot, 0, sizeof t->slot);
        t->slot[t->hash[0] & (SLOTS - 1)] = 1;
    }
    for (i = h & (SLOTS - 1); t->slot[i] != 0; i = (i + 1) & (SLOTS - 1)) {
        int j = t->slot[i] - 1;
        const char *q = b->p + t->at[j];

        if (t->hash[j] == h && memcmp(q, p, len) == 0 && q[len] == '\0')
            return 0;
    }
    t->slot[i] = (uint16_t)(k + 1);
    return 1;
}

/* Entry k's name, read and copied into the buffer if the fast path takes it: 1 a str taken, 2
 * bytes taken, 0 not (the entry stops the pull; no exception set), -1 an error (MemoryError). */
static int take_name(struct pull_state *s, struct names *b, struct seen *t, int k,
                     PyObject *name)
{
    Py_ssize_t len;
    const char *u;
    unsigned char *p;
    uint32_t h;
    int kind = 1;

    if (PyUnicode_CheckExact(name)) {
        u = s->as_utf8(name, &len);
        if (u == NULL) { /* a lone surrogate (a name os.fsdecode made of non-UTF-8 bytes) */
            PyErr_Clear();
            return 0;
        }
    } else if (PyBytes_CheckExact(name)) { /* the raw name (pyfuse.compat's faces) */
        char *raw;

        if (PyBytes_AsStringAndSize(name, &raw, &len) < 0) {
            PyErr_Clear();
            return 0;
        }
        u = raw;
        kind = 2;
    } else {
        return 0;
    }
    if (len == 0 || len > PYFUSE_NAME_MAX)
        return 0;
    if (names_room(b, (size_t)len + 1) < 0)
        return -1;
    p = (unsigned char *)b->p + b->len;
    memcpy(p, u, (size_t)len);
    p[len] = '\0';
    if (!pyfuse_name_scan(p, (size_t)len, &h)) /* checked and hashed in one pass */
        return 0;
    if (!unseen(t, b, k, b->len, (size_t)len, h))
        return 0;
    b->len += (size_t)len + 1;
    return kind;
}

/* The iterator's exception, taken (with its traceback) to be handed back as a value: the new
 * reference, or NULL with an error set. */
static PyObject *take_error(void)
{
    PyObject *type, *value, *tb;

    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL)
        PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    if (value == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_SystemError, "pyfuse._pull: an iterator's error was lost");
    return value;
}

/* The rest of the batch as the iterator yields it, from entry e (taken over) on: a list of at
 * most n entries; the iterator's exception, if it raises, in *err. NULL with an error set. */
static PyObject *pull_rest(PyObject *it, PyObject *e, Py_ssize_t n, PyObject **err)
{
    PyObject *rest = PyList_New(0);

    if (rest == NULL || PyList_Append(rest, e) < 0) {
        Py_DECREF(e);
        Py_XDECREF(rest);
        return NULL;
    }
    Py_DECREF(e);
    while (PyList_Size(rest) < n) {
        e = PyIter_Next(it);
        if (e == NULL) {
            if (PyErr_Occurred()) {
                PyObject *value = take_error();

                if (value == NULL) {
                    Py_DECREF(rest);
                    return NULL;
                }
                Py_DECREF(*err);
                *err = value;
            }
            break;
        }
        if (PyList_Append(rest, e) < 0) {
            Py_DECREF(e);
            Py_DECREF(rest);
            return NULL;
        }
        Py_DECREF(e);
    }
    return rest;
}

/* pull(iterator, n) -> (names, k, flags, attrs, offsets, inos, rest, error): see pull_doc. */
static PyObject *pull(PyObject *module, PyObject *args)
{
    struct pull_state *s = PyModule_GetState(module);
    PyObject *it, *a0 = NULL, *attrs = NULL, *rest = Py_None, *err = Py_None, *res = NULL;
    PyObject *blob, *off_blob = NULL, *ino_blob = NULL;
    /* the entries' attrs once one has its own (own): references held here, made a tuple only
       if the batch is handed back unpacked */
    PyObject *refs[MAX_BATCH];
    int own = 0, nrefs = 0;
    char stack[STACK_NAMES], astack[STACK_ATTRS * ATTR_SIZE];
    struct names b = { stack, 0, sizeof stack, 0 };
    struct attr_buf ab = { astack, 0, sizeof astack, NULL }; /* the attrs' while packed is 1 */
    struct seen seen;
    int64_t offs[MAX_BATCH];
    uint64_t inos[MAX_BATCH];
    int n, k, any_off = 0, any_ino = 0, fours = 0, all_bytes = 1, packed = 0;
    Py_ssize_t size;

    if (!PyArg_ParseTuple(args, "Oi:pull", &it, &n))
        return NULL;
    if (s->as_utf8 == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pyfuse._pull.pull needs Python 3.10 or later");
        return NULL;
    }
    if (n < 1 || n > MAX_BATCH) {
        PyErr_Format(PyExc_ValueError, "pyfuse._pull.pull: a batch of %d entries (1 to %d)", n,
                     MAX_BATCH);
        return NULL;
    }
    Py_INCREF(rest);
    Py_INCREF(err);
    for (k = 0; k < n; k++) {
        PyObject *e = PyIter_Next(it), *attr;
        int took;

        if (e == NULL) {
            if (PyErr_Occurred()) { /* the iterator raised: handed back as a value */
                PyObject *value = take_error();

                if (value == NULL)
                    goto fail;
                Py_DECREF(err);
                err = value;
            }
            break;
        }
        size = PyTuple_CheckExact(e) ? PyTuple_Size(e) : 0;
        offs[k] = 0;
        inos[k] = 0;
        if (size == 3 || size == 4) { /* (name, attr, offset[, ino]) */
            PyObject *o = PyTuple_GetItem(e, 2);

            offs[k] = PyLong_CheckExact(o) ? PyLong_AsLongLong(o) : -1;
            if (offs[k] == -1 && (!PyLong_CheckExact(o) || PyErr_Occurred())) {
                PyErr_Clear(); /* an offset out of range, or not an int: Python names it */
                size = 0;
            }
        }
        if (size == 4) {
            PyObject *o = PyTuple_GetItem(e, 3);

            inos[k] = PyLong_CheckExact(o) ? PyLong_AsUnsignedLongLong(o) : (uint64_t)-1;
            if (inos[k] == (uint64_t)-1 && (!PyLong_CheckExact(o) || PyErr_Occurred())) {
                PyErr_Clear(); /* an inode number out of range, or not an int */
                size = 0;
            }
        }
        took = size >= 2 && size <= 4 ? take_name(s, &b, &seen, k, PyTuple_GetItem(e, 0)) : 0;
        if (took <= 0) {
            PyObject *r = took < 0 ? NULL : pull_rest(it, e, n - k, &err);

            if (r == NULL) {
                if (took < 0)
                    Py_DECREF(e);
                goto fail;
            }
            Py_DECREF(rest);
            rest = r;
            break;
        }
        all_bytes &= took == 2;
        any_off |= offs[k] != 0;
        any_ino |= inos[k] != 0;
        fours += size == 4;
        attr = PyTuple_GetItem(e, 1);
        if (k == 0) {
            a0 = attr;
            Py_INCREF(a0);
        } else if (own || attr != a0) {
            if (!own) { /* the first entry with an attr of its own */
                own = 1;
                for (; nrefs < k; nrefs++) {
                    Py_INCREF(a0);
                    refs[nrefs] = a0;
                }
                packed = attr_bytes(s, a0) != NULL; /* a0 is an Attr: k copies of its bytes */
                for (int i = 0; packed && i < k; i++) {
                    if (add_attr(&ab, attr_bytes(s, a0), n - i) < 0) {
                        Py_DECREF(e);
                        goto fail;
                    }
                }
            }
            Py_INCREF(attr);
            refs[nrefs++] = attr;
            if (packed) { /* every attr so far an Attr: its bytes copied as it comes */
                const char *src = attr_bytes(s, attr);

                packed = src != NULL;
                if (packed && add_attr(&ab, src, n - k) < 0) {
                    Py_DECREF(e);
                    goto fail;
                }
            }
        }
        Py_DECREF(e);
    }
    if (any_off) {
        off_blob = PyBytes_FromStringAndSize((const char *)offs,
                                             (Py_ssize_t)k * (Py_ssize_t)sizeof offs[0]);
        if (off_blob == NULL)
            goto fail;
    }
    /* as Python packs them: a batch of 4-tuples has its inode numbers, a mixed one only if
       one of them is not 0 */
    if (fours > 0 && (fours == k || any_ino)) {
        ino_blob = PyBytes_FromStringAndSize((const char *)inos,
                                             (Py_ssize_t)k * (Py_ssize_t)sizeof inos[0]);
        if (ino_blob == NULL)
            goto fail;
    }
    /* every entry taken, each with an Attr of its own: their bytes instead of a tuple; else
       the tuple of the k attrs (its references taken from refs) */
    packed = packed && own && rest == Py_None && err == Py_None;
    if (packed) {
        attrs = take_attrs(&ab);
        if (attrs == NULL)
            goto fail;
    } else if (own) {
        attrs = PyTuple_New(nrefs);
        if (attrs == NULL)
            goto fail;
        for (int i = 0; i < nrefs; i++)
            PyTuple_SetItem(attrs, i, refs[i]);
        nrefs = 0;
    }
    blob = PyBytes_FromStringAndSize(b.p, b.len ? (Py_ssize_t)b.len - 1 : 0);
    if (blob != NULL)
        res = Py_BuildValue("(NiiOOOOO)", blob, k,
                            (attrs == NULL ? PULL_SHARED : 0) | (k && all_bytes ? PULL_BYTES : 0)
                                | (packed ? PULL_PACKED : 0),
                            attrs != NULL ? attrs : a0 != NULL ? a0 : Py_None,
                            off_blob != NULL ? off_blob : Py_None,
                            ino_blob != NULL ? ino_blob : Py_None, rest, err);
fail:
    if (b.heap)
        PyMem_Free(b.p);
    Py_XDECREF(ab.obj);
    Py_XDECREF(a0);
    while (nrefs > 0)
        Py_DECREF(refs[--nrefs]);
    Py_XDECREF(attrs);
    Py_XDECREF(off_blob);
    Py_XDECREF(ino_blob);
    Py_DECREF(rest);
    Py_DECREF(err);
    return res;
}

PyDoc_STRVAR(pull_doc,
"pull(iterator, n) -> (names, k, flags, attrs, offsets, inos, rest, error)\n\n"
"Pull up to n entries (1 to 512) from a readdir iterator and read each (name, attr),\n"
"(name, attr, int offset) or (name, attr, int offset, int ino) tuple (name a str or bytes) in\n"
"one pass. names: the k names taken, NUL-separated (UTF-8 for a str), checked as the shim's\n"
"filler checks them; flags: SHARED if all k share one attr, then attrs is it (None if k is\n"
"0), else attrs is the tuple of the k attrs, and BYTES if every name was bytes; PACKED if\n"
"no entry stopped the pull and each of the k has an attr of its own, every one an instance of\n"
"use_attr()'s class: then attrs is their bytes instead, ATTR_SIZE each; offsets: None\n"
"if every offset is 0, else the k offsets as native int64s; inos: the k inode numbers as\n"
"native uint64s (0 for an entry without one) if every entry has one or one is not 0, else\n"
"None. rest: None, or the list of the entries pulled from the first that is not such a tuple\n"
"with a valid, new name on (n - k at most, as yielded); error: the exception the iterator\n"
"raised after those entries, or None. Fewer than n entries in all with no error: the\n"
"iterator is exhausted.");

/* use_attr(cls, probe, address, size) -> bool: see use_attr_doc. */
static PyObject *use_attr(PyObject *module, PyObject *args)
{
    struct pull_state *s = PyModule_GetState(module);
    PyObject *cls, *probe, *basic;
    unsigned long long addr;
    Py_ssize_t size, basicsize;
    int ok;

    if (!PyArg_ParseTuple(args, "OOKn:use_attr", &cls, &probe, &addr, &size))
        return NULL;
    if (!PyType_Check(cls) || !PyObject_TypeCheck(probe, (PyTypeObject *)cls)) {
        PyErr_SetString(PyExc_TypeError, "pyfuse._pull.use_attr: probe must be an instance of "
                                         "the class cls");
        return NULL;
    }
    basic = PyObject_GetAttrString(cls, "__basicsize__");
    if (basic == NULL)
        return NULL;
    basicsize = PyLong_AsSsize_t(basic);
    Py_DECREF(basic);
    if (basicsize == -1 && PyErr_Occurred())
        return NULL;
    /* the pointer read only where the object has one, and trusted only if it is the address */
    ok = size == (Py_ssize_t)ATTR_SIZE
         && basicsize >= (Py_ssize_t)(sizeof(PyObject) + sizeof(char *))
         && *(const char *const *)(const void *)((const char *)probe + sizeof(PyObject))
                == (const char *)(uintptr_t)addr;
    Py_XDECREF(s->attr_type);
    s->attr_type = NULL;
    if (ok) {
        Py_INCREF(cls);
        s->attr_type = cls;
    }
    return PyBool_FromLong(ok);
}

PyDoc_STRVAR(use_attr_doc,
"use_attr(cls, probe, address, size) -> bool\n\n"
"Let pull() copy the bytes of each attr that is an instance of cls (pyfuse.Attr, a ctypes\n"
"structure of size bytes) as it pulls it, if probe (an instance) keeps them where ctypes\n"
"has always kept them: at address, ctypes.addressof(probe). Returns whether it does; if not\n"
"(or size is not struct pyfuse_attr's) pull() hands every attr back as before.");

static PyMethodDef methods[] = {
    {"pull", pull, METH_VARARGS, pull_doc},
    {"use_attr", use_attr, METH_VARARGS, use_attr_doc},
    {NULL, NULL, 0, NULL},
};

static int exec_module(PyObject *module)
{
    struct pull_state *s = PyModule_GetState(module);
    PyObject *info = PySys_GetObject("version_info"); /* borrowed */
    PyObject *minor = info != NULL ? PySequence_GetItem(info, 1) : NULL;
    long m;

    if (minor == NULL)
        return -1;
    m = PyLong_AsLong(minor);
    Py_DECREF(minor);
    if (m == -1 && PyErr_Occurred())
        return -1;
    /* Python 3.x only: 3.10 made PyUnicode_AsUTF8AndSize part of the stable ABI */
    s->as_utf8 = m >= 10 ? (as_utf8_fn)dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8AndSize") : NULL;
    return PyModule_AddIntConstant(module, "available", s->as_utf8 != NULL) < 0
        || PyModule_AddIntConstant(module, "MAX_BATCH", MAX_BATCH) < 0
        || PyModule_AddIntConstant(module, "SHARED", PULL_SHARED) < 0
        || PyModule_AddIntConstant(module, "BYTES", PULL_BYTES) < 0
        || PyModule_AddIntConstant(module, "PACKED", PULL_PACKED) < 0
        || PyModule_AddIntConstant(module, "ATTR_SIZE", (long)ATTR_SIZE) < 0 ? -1 : 0;
}

static int traverse_module(PyObject *module, visitproc visit, void *arg)
{
    struct pull_state *s = PyModule_GetState(module);

    if (s != NULL)
        Py_VISIT(s->attr_type);
    return 0;
}

static int clear_module(PyObject *module)
{
    struct pull_state *s = PyModule_GetState(module);

    if (s != NULL)
        Py_CLEAR(s->attr_type);
    return 0;
}

static void free_module(void *module)
{
    clear_module((PyObject *)module);
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)exec_module},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "pyfuse._pull",
    "A listing's batch pulled from a readdir iterator and read in C (see pull).",
    sizeof(struct pull_state), methods, slots, traverse_module, clear_module, free_module,
};

PyMODINIT_FUNC PyInit__pull(void)
{
    return PyModuleDef_Init(&module_def);
}
