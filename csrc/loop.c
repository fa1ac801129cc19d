/* pyfuse's own multi-threaded loop (sticky=True; the default is libfuse's fuse_loop_mt, which
 * measured faster on this project's second VM host, and slower on its first: see "The default
 * loop" in docs/performance.md): one worker serves requests while they finish quickly, others
 * step in when one does not.
 *
 * libfuse's fuse_loop_mt keeps every idle worker blocked in read(/dev/fuse); the kernel wakes
 * the one that has waited longest, so with one client successive requests go to alternate
 * threads, each starting cold (another stack, another Python thread state, often a vCPU that
 * was halted). Here at most one worker reads at a time (the reader). When it receives a request
 * it stops being the reader and serves the request; then, if nobody else has taken over, it
 * reads again itself, so a steady stream of quick requests stays on one hot thread, as in the
 * single-threaded loop. A watchdog thread looks every PYFUSE_HANDOFF_NS while requests are in
 * progress: when nobody has read for a whole period (a handler is slow: it blocks, waits, or a
 * second client is queued behind it), it wakes the most recently idle worker, or starts a new
 * one up to max_threads, to take over reading. So a slow handler delays other requests by one
 * to two periods, not for its whole duration. The watchdog sleeps while the filesystem is idle.
 *
 * Built on libfuse's public session API (fuse_session_receive_buf / _process_buf), as
 * fuse_loop_mt is; shutdown is libfuse's: the kernel ends the reads (unmount, abort: ENODEV), or
 * fuse_session_exit() plus a signal to the thread in pyfuse_loop_workers (session.c). */
#include "pyfuse.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fuse_lowlevel.h>

/* How long nobody may read while a request is in progress before another worker takes over. */
#define PYFUSE_HANDOFF_NS 1000000L
/* Watchdog periods without a request before it sleeps until the next one. */
#define PYFUSE_WATCH_IDLE_ROUNDS 8

struct loop;

struct worker {
    struct loop *loop;
    pthread_t thread;
    pthread_cond_t wake;       /* signalled when this idle worker is made the reader */
    struct worker *next_idle;  /* the idle stack: most recently idle first */
    int reader;                /* holds the reader role (set by itself or by promote()) */
    struct fuse_buf buf;       /* libfuse allocates .mem on the first read; freed at the end */
};

struct loop {
    struct fuse_session *se;
    pthread_mutex_t lock;      /* guards everything below */
    pthread_cond_t watch;      /* wakes the watchdog from its idle sleep, and at the end */
    sem_t finish;              /* posted by a worker that ends the loop */
    struct worker *workers;    /* max_threads slots, nworkers started */
    unsigned nworkers, max_threads;
    struct worker *idle;       /* idle workers waiting to be made the reader */
    int reading;               /* some worker holds the reader role */
    unsigned busy;             /* requests being served */
    unsigned long received;    /* requests received so far */
    int watch_asleep;
    int stop;                  /* set once the loop ends: every thread leaves */
    int error;                 /* a read error that ended the loop (-errno), else 0 */
};

static void *work(void *arg);

/* Start worker nworkers as the reader, with the loop's signals blocked (they belong to the
 * thread in pyfuse_loop_workers). Called with the lock held. */
static int start_worker(struct loop *L)
{
    struct worker *w = &L->workers[L->nworkers];
    sigset_t all, old;
    int err;

    memset(w, 0, sizeof *w);
    w->loop = L;
    w->reader = 1;
    err = pthread_cond_init(&w->wake, NULL);
    if (err != 0)
        return -err;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    err = pthread_create(&w->thread, NULL, work, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        pthread_cond_destroy(&w->wake);
        return -err;
    }
    L->nworkers++;
    L->reading = 1;
    return 0;
}

/* Get another worker reading: the most recently idle one, else a new one. Lock held. */
static void promote(struct loop *L)
{
    struct worker *w = L->idle;

    if (w != NULL) {
        L->idle = w->next_idle;
        w->reader = 1;
        L->reading = 1;
        pthread_cond_signal(&w->wake);
    } else if (L->nworkers < L->max_threads) {
        int err = start_worker(L);

        if (err != 0)
            fuse_log(FUSE_LOG_ERR, "pyfuse: cannot start a worker thread: %s\n", strerror(-err));
    }
}

static void *work(void *arg)
{
    struct worker *w = arg;
    struct loop *L = w->loop;
    struct fuse_session *se = L->se;

    /* Cancellation (at the end of the loop) only while blocked in read(). */
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_mutex_lock(&L->lock);
    while (!L->stop) {
        int res;

        if (!w->reader) {
            if (L->reading) {
                w->next_idle = L->idle;
                L->idle = w;
                while (!w->reader && !L->stop)
                    pthread_cond_wait(&w->wake, &L->lock);
                continue;
            }
            w->reader = 1;
            L->reading = 1;
        }
        pthread_mutex_unlock(&L->lock);
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
        res = fuse_session_receive_buf(se, &w->buf);
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
        pthread_mutex_lock(&L->lock);
        if (res == -EINTR)
            continue;
        if (res <= 0) {
            /* 0: unmounted or aborted (libfuse has marked the session exited); < 0: an error */
            if (res < 0 && L->error == 0)
                L->error = res;
            fuse_session_exit(se);
            break;
        }
        w->reader = 0;
        L->reading = 0;
        L->busy++;
        L->received++;
        if (L->watch_asleep)
            pthread_cond_signal(&L->watch);
        pthread_mutex_unlock(&L->lock);
        fuse_session_process_buf(se, &w->buf);
        pthread_mutex_lock(&L->lock);
        L->busy--;
    }
    pthread_mutex_unlock(&L->lock);
    sem_post(&L->finish);
    return NULL;
}

static void *watchdog(void *arg)
{
    struct loop *L = arg;
    unsigned long seen = (unsigned long)-1;
    int quiet = 0;

    pthread_mutex_lock(&L->lock);
    while (!L->stop) {
        struct timespec t;

        if (L->received == seen && L->busy > 0 && !L->reading)
            promote(L); /* nobody has read for a whole period while a request runs */
        if (L->received != seen || L->busy > 0) {
            quiet = 0;
        } else if (++quiet >= PYFUSE_WATCH_IDLE_ROUNDS) {
            L->watch_asleep = 1;
            while (L->received == seen && !L->stop)
                pthread_cond_wait(&L->watch, &L->lock);
            L->watch_asleep = 0;
            quiet = 0;
            continue; /* a request came, or the end */
        }
        seen = L->received;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_nsec += PYFUSE_HANDOFF_NS;
        if (t.tv_nsec >= 1000000000L) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&L->watch, &L->lock, &t);
    }
    pthread_mutex_unlock(&L->lock);
    return NULL;
}

int pyfuse_loop_workers(struct fuse_session *se, struct fuse *f, unsigned max_threads)
{
    struct loop L;
    pthread_condattr_t ca;
    pthread_t watch_thread;
    int res = 0, watching = 0;

    memset(&L, 0, sizeof L);
    L.se = se;
    L.max_threads = max_threads > 0 ? max_threads : 10; /* libfuse's default */
    L.workers = calloc(L.max_threads, sizeof *L.workers);
    if (L.workers == NULL)
        return -ENOMEM;
    if (pthread_condattr_init(&ca) != 0) {
        free(L.workers);
        return -ENOMEM;
    }
    res = -pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (res == 0)
        res = -pthread_cond_init(&L.watch, &ca);
    pthread_condattr_destroy(&ca);
    if (res == 0 && (res = -pthread_mutex_init(&L.lock, NULL)) != 0)
        pthread_cond_destroy(&L.watch);
    if (res == 0 && sem_init(&L.finish, 0, 0) != 0) {
        res = -errno;
        pthread_mutex_destroy(&L.lock);
        pthread_cond_destroy(&L.watch);
    }
    if (res != 0) {
        free(L.workers);
        return res;
    }
    if (f != NULL && fuse_start_cleanup_thread(f) != 0) { /* option "remember" only */
        res = -ENOMEM;
        goto out;
    }

    pthread_mutex_lock(&L.lock);
    res = start_worker(&L);
    if (res == 0) {
        sigset_t all, old;

        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        res = -pthread_create(&watch_thread, NULL, watchdog, &L);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        watching = res == 0;
    }
    pthread_mutex_unlock(&L.lock);
    if (res == 0) {
        /* Until a worker ends the loop (unmount, error) or a signal handler has called
         * fuse_session_exit() and interrupted this wait. */
        while (!fuse_session_exited(L.se))
            sem_wait(&L.finish);
    } else {
        fuse_log(FUSE_LOG_ERR, "pyfuse: cannot start the loop's threads: %s\n", strerror(-res));
    }

    pthread_mutex_lock(&L.lock);
    L.stop = 1;
    for (unsigned i = 0; i < L.nworkers; i++) {
        pthread_cond_signal(&L.workers[i].wake);
        pthread_cancel(L.workers[i].thread); /* acts only on a worker blocked in read() */
    }
    pthread_cond_signal(&L.watch);
    pthread_mutex_unlock(&L.lock);
    for (unsigned i = 0; i < L.nworkers; i++) {
        pthread_join(L.workers[i].thread, NULL);
        pthread_cond_destroy(&L.workers[i].wake);
        free(L.workers[i].buf.mem);
    }
    if (watching)
        pthread_join(watch_thread, NULL);
    if (f != NULL)
        fuse_stop_cleanup_thread(f);
    if (res == 0)
        res = L.error;
out:
    sem_destroy(&L.finish);
    pthread_mutex_destroy(&L.lock);
    pthread_cond_destroy(&L.watch);
    free(L.workers);
    fuse_session_reset(L.se);
    return res;
}

/* Serving on the caller's thread, one burst at a time (pyfuse.lowlevel.serving(on_loop=True):
 * an event loop calls this when the descriptor is readable, as pyfuse3's trio loop does). */
int pyfuse_pump(pyfuse_session *s, int max)
{
    int served = 0;

    while (served < max) {
        int res;

        if (fuse_session_exited(s->se))
            return -ENODEV;
        res = fuse_session_receive_buf(s->se, &s->pump_buf);
        if (res == -EINTR)
            continue;
        if (res == -EAGAIN)
            break; /* nothing more waiting */
        if (res == 0 || res == -ENODEV || res == -ECONNABORTED) {
            fuse_session_exit(s->se); /* unmounted or aborted */
            return -ENODEV;
        }
        if (res < 0)
            return res;
        fuse_session_process_buf(s->se, &s->pump_buf);
        served++;
    }
    return served;
}

int pyfuse_session_fd(pyfuse_session *s)
{
    return fuse_session_fd(s->se);
}
