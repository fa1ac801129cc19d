/* Session life cycle: fuse_new, mount, the loop (loop.c's, or libfuse's) with signal handling,
 * unmount, destroy; plus the request context and the routing of libfuse's log messages to
 * Python. All of these are called from Python with the GIL released (cffi API mode). */
#include "pyfuse.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include <fuse_lowlevel.h>

/* Config(intr=True) on the path API: libfuse's high-level API interrupts a handler by sending
 * SIGUSR1 to its thread (pthread_kill), to break a blocking system call. libfuse 3 installs
 * the (empty) handler only for its own "intr" setting, which has no mount option any more and
 * is set in init, too late; with the default action the first interrupt would kill the whole
 * process. So the shim installs it, as libfuse 2 did: only over SIG_DFL, without SA_RESTART,
 * counted over the sessions that need it, and restored when the last one is destroyed. */
static pthread_mutex_t intr_lock = PTHREAD_MUTEX_INITIALIZER;
static int intr_users;     /* sessions with intr_handler set */
static int intr_installed; /* the handler is ours (it replaced SIG_DFL) */

static void intr_noop(int sig)
{
    (void)sig;
}

static int intr_acquire(void)
{
    int res = 0;

    pthread_mutex_lock(&intr_lock);
    if (intr_users == 0) {
        struct sigaction old, sa;

        if (sigaction(SIGUSR1, NULL, &old) != 0) {
            res = -errno;
        } else if (old.sa_handler == SIG_DFL) {
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = intr_noop;
            sigemptyset(&sa.sa_mask);
            if (sigaction(SIGUSR1, &sa, NULL) != 0)
                res = -errno;
            else
                intr_installed = 1;
        }
    }
    if (res == 0)
        intr_users++;
    pthread_mutex_unlock(&intr_lock);
    return res;
}

static void intr_release(void)
{
    pthread_mutex_lock(&intr_lock);
    if (--intr_users == 0 && intr_installed) {
        struct sigaction sa;

        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigemptyset(&sa.sa_mask);
        (void)sigaction(SIGUSR1, &sa, NULL); /* cannot fail for a valid signal */
        intr_installed = 0;
    }
    pthread_mutex_unlock(&intr_lock);
}

pyfuse_session *pyfuse_new(void *handle, int argc, char **argv, uint64_t opmask,
                           const struct pyfuse_config *cfg, struct pyfuse_stats *stats,
                           int lowlevel)
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct pyfuse_session *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    s->handle = handle;
    s->opmask = opmask;
    s->cfg = *cfg;
    s->stats = stats;
    if (lowlevel) { /* the inode API: libfuse's low-level session, pyfuse's lookup counts */
        struct fuse_lowlevel_ops llops;

        if (pyfuse_lookups_init(&s->lookups) != 0) {
            free(s);
            return NULL;
        }
        pyfuse_ll_fill_ops(&llops, opmask);
        s->se = fuse_session_new(&args, &llops, sizeof llops, s);
    } else {
        struct fuse_operations ops;

        if (cfg->intr) {
            if (intr_acquire() != 0) {
                fuse_opt_free_args(&args);
                free(s);
                return NULL;
            }
            s->intr_handler = 1;
        }
        pyfuse_fill_ops(&ops, opmask);
        s->fuse = fuse_new(&args, &ops, sizeof ops, s);
        if (s->fuse != NULL)
            s->se = fuse_get_session(s->fuse);
    }
    fuse_opt_free_args(&args);
    if (s->se == NULL) {
        if (lowlevel)
            pyfuse_lookups_free(&s->lookups);
        if (s->intr_handler)
            intr_release();
        free(s);
        return NULL;
    }
    return s;
}

/* Every function here serves both APIs: s->fuse is the path API's instance, NULL for the
 * inode API's session. */
int pyfuse_mount(pyfuse_session *s, const char *mountpoint)
{
    if (s->fuse == NULL)
        return fuse_session_mount(s->se, mountpoint) == 0 ? 0 : -EIO;
    return fuse_mount(s->fuse, mountpoint) == 0 ? 0 : -EIO;
}

/* Signal handling for run() in the main thread. libfuse's fuse_set_signal_handlers() only takes
 * over signals whose handler is SIG_DFL, and Python owns SIGINT, so Ctrl-C would never reach it;
 * the shim installs its own handlers for the duration of the loop and restores the caller's after.
 * A signal handler can only find the session through a global: these three are the shim's only
 * mutable globals, set while one loop runs with signals (Python allows one: the main thread). */
static struct fuse_session *volatile signal_session;
static volatile sig_atomic_t signal_received;
static pthread_t signal_loop_thread;

static void on_signal(int sig)
{
    struct fuse_session *se = signal_session;

    if (se == NULL)
        return;
    signal_received = sig;
    fuse_session_exit(se);
    /* The loop thread waits in sem_wait()/read(): interrupt it so it sees the exit flag. */
    if (!pthread_equal(pthread_self(), signal_loop_thread))
        pthread_kill(signal_loop_thread, sig);
}

static const int loop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define NSIG_SAVED (sizeof loop_signals / sizeof loop_signals[0])

static int install_signals(struct fuse_session *se, struct sigaction *saved)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: blocked reads must return EINTR */
    signal_received = 0;
    signal_loop_thread = pthread_self();
    signal_session = se;
    for (size_t i = 0; i < NSIG_SAVED; i++) {
        sa.sa_handler = loop_signals[i] == SIGPIPE ? SIG_IGN : on_signal;
        if (sigaction(loop_signals[i], &sa, &saved[i]) != 0) {
            int err = -errno;
            while (i-- > 0)
                sigaction(loop_signals[i], &saved[i], NULL);
            signal_session = NULL;
            return err;
        }
    }
    return 0;
}

static void restore_signals(const struct sigaction *saved)
{
    for (size_t i = 0; i < NSIG_SAVED; i++)
        sigaction(loop_signals[i], &saved[i], NULL);
    signal_session = NULL;
}

int pyfuse_loop(pyfuse_session *s, int threads, int max_threads, int clone_fd, int sticky,
                int signals)
{
    struct sigaction saved[NSIG_SAVED];
    int res;

    if (signals) {
        res = install_signals(s->se, saved);
        if (res != 0)
            return res;
    }
    if (threads && sticky) { /* pyfuse's own loop (loop.c) */
        res = pyfuse_loop_workers(s->se, s->fuse, max_threads > 0 ? (unsigned)max_threads : 0);
    } else if (threads) { /* libfuse's loop, with a /dev/fuse clone per worker if asked */
#if FUSE_USE_VERSION >= 312
        struct fuse_loop_config *lc = fuse_loop_cfg_create();

        if (lc == NULL) {
            res = -ENOMEM;
        } else {
            fuse_loop_cfg_set_clone_fd(lc, (unsigned int)clone_fd);
            if (max_threads > 0)
                fuse_loop_cfg_set_max_threads(lc, (unsigned int)max_threads);
            res = s->fuse ? fuse_loop_mt(s->fuse, lc) : fuse_session_loop_mt(s->se, lc);
            fuse_loop_cfg_destroy(lc);
        }
#else
        struct fuse_loop_config lc = { .clone_fd = clone_fd, .max_idle_threads = 10 };

        (void)max_threads;
        res = s->fuse ? fuse_loop_mt(s->fuse, &lc) : fuse_session_loop_mt(s->se, &lc);
#endif
    } else {
        res = s->fuse ? fuse_loop(s->fuse) : fuse_session_loop(s->se);
    }
    if (signals) {
        restore_signals(saved);
        if (signal_received)
            res = signal_received;
    }
    /* > 0: the signal that ended the loop (a clean stop); < 0: -errno. */
    return res;
}

void pyfuse_unmount(pyfuse_session *s)
{
    /* a no-op when the kernel side is already gone */
    if (s->fuse != NULL) {
        fuse_unmount(s->fuse);
    } else {
        /* marked exited again (libfuse's loop resets the flag as it returns): the replies
         * still owed to pending requests then fail quietly instead of perror()ing */
        fuse_session_exit(s->se);
        fuse_session_unmount(s->se);
    }
}

void pyfuse_destroy(pyfuse_session *s)
{
    if (s->fuse != NULL) {
        fuse_destroy(s->fuse);
    } else {
        fuse_session_destroy(s->se);
        pyfuse_lookups_free(&s->lookups);
    }
    if (s->intr_handler)
        intr_release();
    free(s->pump_buf.mem);
    free(s);
}

int pyfuse_libfuse_version(void)
{
    return fuse_version();
}

int pyfuse_umount2(const char *mountpoint, int lazy)
{
    return umount2(mountpoint, lazy ? MNT_DETACH : 0) == 0 ? 0 : -errno;
}

__thread int pyfuse_in_callback;

int pyfuse_get_context(struct pyfuse_ctx *out)
{
    struct fuse_context *c = pyfuse_in_callback ? fuse_get_context() : NULL;

    if (c == NULL || c->fuse == NULL)
        return -ENOENT;
    out->uid = c->uid;
    out->gid = c->gid;
    out->pid = c->pid;
    out->umask = c->umask;
    return 0;
}

/* libfuse writes some messages in pieces ("fuse: unknown option(s): `", "-o bogusopt", "'\n"):
 * the pieces are gathered per thread until the newline, so Python gets one record a message.
 * (Thread-local: each thread's message in progress. It holds no pointer; the only other such
 * state is stats.c's handler time of a thread's current request.) */
static __thread char log_msg[1024];
static __thread size_t log_len;

static void log_to_python(enum fuse_log_level level, const char *fmt, va_list ap)
{
    size_t room = sizeof log_msg - log_len;
    int n = vsnprintf(log_msg + log_len, room, fmt, ap);

    if (n < 0)
        return;
    log_len += (size_t)n < room ? (size_t)n : room - 1;
    if (log_len > 0 && log_msg[log_len - 1] != '\n' && log_len < sizeof log_msg - 1)
        return; /* a piece: wait for the rest of the line */
    while (log_len > 0 && log_msg[log_len - 1] == '\n')
        log_msg[--log_len] = '\0';
    if (log_len > 0)
        pyfuse_cb_log((int)level, log_msg);
    log_len = 0;
    log_msg[0] = '\0';
}

void pyfuse_log_init(void)
{
    fuse_set_log_func(log_to_python);
}
