/* The cheap crossing's out struct (pyfuse_cdef.h, struct pyfuse_out), shared by both APIs: each
 * thread that serves requests has one, C copies a request's name or path into it before the
 * upcall, Python writes a synchronous handler's answer there, and C replies from it once the
 * upcall has returned. A callback finds the struct as Session._outs[slot]: the thread's slot in
 * the session, taken on its first request there. */
#include "pyfuse.h"

#include <string.h>

/* This thread's struct, the slot it holds in the session it last served, and the path of its
 * request when the path did not fit in the struct (pyfuse_out_path). */
static __thread struct pyfuse_out out;
static __thread struct {
    const struct pyfuse_session *s;
    unsigned int slot;
    const char *path;
} here;

struct pyfuse_out *pyfuse_out_here(void)
{
    return &out;
}

/* This thread's slot in s, taken on its first request there: the one whose owner is this
 * thread's out struct (an ended thread's whose struct had the same address: it is this
 * thread's now, and so is Python's buffer over it), else a free one. PYFUSE_OUT_SLOTS: all are
 * taken (searched again next time). A session freed and another made at its address is told
 * apart by the owner: a new session's slots are free or other threads'. */
static unsigned int slot_take(struct pyfuse_session *s)
{
    unsigned int i;

    for (i = 0; i < PYFUSE_OUT_SLOTS; i++)
        if (__atomic_load_n(&s->outs[i], __ATOMIC_RELAXED) == &out)
            goto found;
    for (i = 0; i < PYFUSE_OUT_SLOTS; i++) {
        struct pyfuse_out *none = NULL;

        if (__atomic_compare_exchange_n(&s->outs[i], &none, &out, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            goto found;
    }
    return PYFUSE_OUT_SLOTS;
found:
    here.s = s;
    here.slot = i;
    return i;
}

unsigned int pyfuse_out_slot(struct pyfuse_session *s)
{
    unsigned int i = here.slot;

    if (__builtin_expect(here.s == s && i < PYFUSE_OUT_SLOTS &&
                         __atomic_load_n(&s->outs[i], __ATOMIC_RELAXED) == &out, 1))
        return i;
    return slot_take(s);
}

int64_t pyfuse_out_put_path(const char *path)
{
    size_t n;

    if (path == NULL)
        return -1;
    n = strlen(path);
    if (n < sizeof out.name) {
        memcpy(out.name, path, n);
        here.path = NULL;
    } else {
        here.path = path; /* valid until the request's callback returns */
    }
    return (int64_t)n;
}

const char *pyfuse_out_path(void)
{
    return here.path;
}
