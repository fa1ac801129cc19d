/* Session(stats=True): each call into Python is counted, errno results too, and one request in
 * PYFUSE_STATS_SAMPLE of each operation is timed, in C around the call (PYFUSE_CALL_OP, for
 * either API: the rows are the path API's or the inode API's operation numbers). A timed
 * request's callback gets the stats' own handle, a view of the session whose handlers are timed
 * (they report through pyfuse_stats_handler); the others get the session's, so they cost no
 * Python beyond what they cost without statistics. The counters are shared by the loop's
 * threads: atomic adds, relaxed (they are statistics). */
#include "pyfuse.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

_Static_assert((PYFUSE_STATS_WINDOW & (PYFUSE_STATS_WINDOW - 1)) == 0,
               "PYFUSE_STATS_WINDOW is a power of two");
_Static_assert((int)PYFUSE_OP_COUNT <= (int)PYFUSE_STATS_OPS &&
               (int)PYFUSE_LL_OP_COUNT <= (int)PYFUSE_STATS_OPS,
               "a row of statistics for each operation of either API");
_Static_assert((PYFUSE_STATS_SAMPLE & (PYFUSE_STATS_SAMPLE - 1)) == 0,
               "PYFUSE_STATS_SAMPLE is a power of two");

/* The filesystem's nanoseconds during this thread's current timed request (thread-local, like
 * session.c's log buffer: a request runs on one thread). */
static __thread int64_t handler_ns;

struct pyfuse_stats *pyfuse_stats_new(uint64_t timed_handle)
{
    /* about 128 KiB an operation, but calloc's pages are touched only when used */
    struct pyfuse_stats *st = calloc(1, sizeof *st);

    if (st != NULL)
        st->handle = timed_handle;
    return st;
}

void pyfuse_stats_free(struct pyfuse_stats *stats)
{
    free(stats);
}

void pyfuse_stats_handler(int64_t ns)
{
    handler_ns += ns;
}

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts); /* cannot fail with a valid clock and pointer */
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t pyfuse_stats_begin(struct pyfuse_session *s, int op, int64_t *start)
{
    struct pyfuse_opstats *o = &s->stats->op[op];
    uint64_t i = __atomic_fetch_add(&o->count, 1, __ATOMIC_RELAXED);

    if (i & (PYFUSE_STATS_SAMPLE - 1)) {
        *start = -1;
        return s->handle;
    }
    handler_ns = 0;
    *start = now_ns();
    return s->stats->handle;
}

void pyfuse_stats_end(struct pyfuse_session *s, int op, int64_t start, int64_t result)
{
    struct pyfuse_opstats *o = &s->stats->op[op];

    if (result < 0) {
        __atomic_fetch_add(&o->errors, 1, __ATOMIC_RELAXED);
        if (result == -ENOENT || result == -ENODATA)
            __atomic_fetch_add(&o->expected, 1, __ATOMIC_RELAXED);
    }
    if (start >= 0) {
        int64_t total = now_ns() - start;
        uint64_t k = __atomic_fetch_add(&o->timed, 1, __ATOMIC_RELAXED);

        k &= PYFUSE_STATS_WINDOW - 1;
        o->total_ns[k] = total;
        o->handler_ns[k] = handler_ns;
    }
}
