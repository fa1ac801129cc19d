/* A global lock held around every call into Python of the sessions it is given to
 * (pyfuse_session_set_glock): llfuse's global lock for pyfuse.compat.llfuse, taken here in C
 * before the call (no GIL held while waiting for it, no Python to take it) and let go after,
 * as llfuse takes its own. Python's llfuse.lock takes and lets go of the same lock through
 * pyfuse_glock_acquire and pyfuse_glock_release. The holder is kept (an atomic, written only by
 * the holding thread) so that a thread can tell it holds the lock. */
#include "pyfuse.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct pyfuse_glock {
    pthread_mutex_t mu;
    uintptr_t holder; /* (uintptr_t)pthread_self() of the holder; 0: free */
};

static inline uintptr_t me(void)
{
    return (uintptr_t)pthread_self();
}

struct pyfuse_glock *pyfuse_glock_new(void)
{
    struct pyfuse_glock *g = calloc(1, sizeof *g);

    if (g != NULL && pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        return NULL;
    }
    return g;
}

void pyfuse_glock_free(struct pyfuse_glock *g)
{
    if (g != NULL) {
        pthread_mutex_destroy(&g->mu);
        free(g);
    }
}

int pyfuse_glock_held(const struct pyfuse_glock *g)
{
    return __atomic_load_n(&g->holder, __ATOMIC_RELAXED) == me();
}

int pyfuse_glock_acquire(struct pyfuse_glock *g, double timeout)
{
    int rc;

    if (pyfuse_glock_held(g))
        return -EDEADLK;
    if (timeout < 0 || timeout != timeout) { /* (NaN: forever, as a negative timeout) */
        rc = pthread_mutex_lock(&g->mu);
    } else {
        struct timespec t;
        double whole = timeout > 1e9 ? 1e9 : timeout; /* (years: as good as forever) */
        time_t sec = (time_t)whole;

        if (clock_gettime(CLOCK_REALTIME, &t) != 0)
            return -errno;
        t.tv_sec += sec;
        t.tv_nsec += (long)((whole - (double)sec) * 1e9);
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        rc = pthread_mutex_timedlock(&g->mu, &t);
        if (rc == ETIMEDOUT)
            return 0;
    }
    if (rc != 0)
        return -rc;
    __atomic_store_n(&g->holder, me(), __ATOMIC_RELAXED);
    return 1;
}

int pyfuse_glock_release(struct pyfuse_glock *g)
{
    if (!pyfuse_glock_held(g))
        return -EPERM;
    __atomic_store_n(&g->holder, 0, __ATOMIC_RELAXED);
    return -pthread_mutex_unlock(&g->mu);
}

void pyfuse_session_set_glock(pyfuse_session *s, struct pyfuse_glock *g)
{
    s->glock = g;
}

int pyfuse_glock_enter(struct pyfuse_glock *g)
{
    /* (this thread holds it already, a handler having kept it: not taken twice) */
    return pyfuse_glock_acquire(g, -1.0) == 1;
}

void pyfuse_glock_leave(struct pyfuse_glock *g)
{
    /* (a handler that let go of the lock and did not take it back: nothing to let go of) */
    (void)pyfuse_glock_release(g);
}
