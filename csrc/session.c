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
#include <sched.h>
#include <semaphore.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>

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

pyfuse_session *pyfuse_new(uint64_t handle, int argc, char **argv, uint64_t opmask,
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
    int res = s->fuse == NULL ? fuse_session_mount(s->se, mountpoint)
                              : fuse_mount(s->fuse, mountpoint);

    if (res != 0)
        return -EIO;
    if (pyfuse_io_install(s->se) != 0) /* only before libfuse 3.14: uncorrected replies */
        fuse_log(FUSE_LOG_DEBUG, "pyfuse: libfuse's own I/O (no fuse_session_custom_io)\n");
    return 0;
}

/* Serve on the calling thread until the loop ends (unmount, error, or exit). */
static int run_loop(pyfuse_session *s, int threads, int max_threads, int clone_fd, int sticky)
{
    int res;

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
    return res;
}

int pyfuse_loop(pyfuse_session *s, int threads, int max_threads, int clone_fd, int sticky)
{
    return run_loop(s, threads, max_threads, clone_fd, sticky);
}

/* Signal handling for run() in the main thread. libfuse's fuse_set_signal_handlers() only takes
 * over signals whose handler is SIG_DFL, and Python owns SIGINT, so Ctrl-C would never reach it;
 * the shim installs its own handlers while the loop runs and restores the caller's after. The
 * first signal makes the loop stop reading requests and end once the requests in progress are
 * answered; a second one ends it at once. A multi-threaded loop runs on a thread of its own
 * (sig.loop_thread) while the caller waits in pyfuse_loop_wait, so that the caller can give up
 * on it (pyfuse_loop_abandon) when a handler never returns. A single-threaded loop runs on the
 * caller's thread (pyfuse_loop_here: handlers keep the thread they always had), and the second
 * signal interrupts its handler as Ctrl-C interrupts Python code (PyErr_SetInterrupt: a
 * KeyboardInterrupt at the handler's next Python step or interrupted system call). A signal
 * handler can only find the session through a global: this struct is the shim's only mutable
 * global state, in use while one loop runs with signals (Python allows one: the main thread's). */
void PyErr_SetInterrupt(void); /* CPython's (stable ABI, async-signal-safe) */

static struct {
    struct fuse_session *volatile session;
    volatile sig_atomic_t received;  /* the last signal */
    volatile sig_atomic_t presses;   /* signals received (each one once) */
    volatile sig_atomic_t forwarded; /* a signal this handler passed on to the loop thread */
    volatile sig_atomic_t ended;     /* the loop has returned */
    int here;                        /* the loop runs on the caller's thread */
    int abandoned;                   /* pyfuse_loop_abandon left it running */
    pthread_t loop_thread;           /* set by the loop thread itself (atomic) */
    sigset_t block;                  /* the loop's signals */
    sem_t wake;                      /* posted by each signal and by the loop's end */
    int result;                      /* the loop's, once ended */
    int threads, max_threads, clone_fd, sticky;
    pyfuse_session *s;
    struct sigaction saved[4];
} sig;

static void on_signal(int signo)
{
    struct fuse_session *se = sig.session;

    if (se == NULL)
        return;
    if (sig.forwarded && pthread_equal(pthread_self(), sig.loop_thread)) {
        sig.forwarded = 0; /* our own wake-up of the loop thread, not another signal */
        return;
    }
    sig.received = signo;
    sig.presses++;
    fuse_session_exit(se);
    if (sig.here && sig.presses >= 2)
        PyErr_SetInterrupt();
    sem_post(&sig.wake);
    /* The loop thread waits in sem_wait()/read() (or sleeps in a handler): interrupt it so
     * it sees the exit flag (or Python its interrupt). */
    if (!pthread_equal(pthread_self(), sig.loop_thread)) {
        sig.forwarded = 1;
        pthread_kill(sig.loop_thread, signo);
    }
}

static const int loop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
#define NSIG_SAVED (sizeof loop_signals / sizeof loop_signals[0])
_Static_assert(NSIG_SAVED == sizeof sig.saved / sizeof sig.saved[0], "sig.saved's size");

static void restore_signals(void)
{
    for (size_t i = 0; i < NSIG_SAVED; i++)
        sigaction(loop_signals[i], &sig.saved[i], NULL);
    sig.session = NULL;
}

static void *loop_thread(void *arg)
{
    (void)arg;
    __atomic_store_n(&sig.loop_thread, pthread_self(), __ATOMIC_RELEASE);
    pthread_sigmask(SIG_UNBLOCK, &sig.block, NULL); /* the handler knows this thread now */
    sig.result = run_loop(sig.s, sig.threads, sig.max_threads, sig.clone_fd, sig.sticky);
    sig.ended = 1;
    sem_post(&sig.wake);
    return NULL;
}

int pyfuse_loop_start(pyfuse_session *s, int threads, int max_threads, int clone_fd,
                      int sticky)
{
    struct sigaction sa;
    sigset_t old;
    pthread_t t;
    int err = 0;

    if (sig.session != NULL || (sig.abandoned && !sig.ended))
        return -EBUSY; /* another loop with signals runs, or an abandoned one still does */
    if (sig.abandoned)
        sem_destroy(&sig.wake);
    sig.abandoned = 0;
    if (sem_init(&sig.wake, 0, 0) != 0)
        return -errno;
    sig.received = sig.presses = sig.forwarded = sig.ended = 0;
    sig.s = s;
    sig.threads = threads;
    sig.max_threads = max_threads;
    sig.clone_fd = clone_fd;
    sig.sticky = sticky;
    sig.here = !threads;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: blocked reads must return EINTR */
    /* The handler must know the loop thread before it handles a signal: the signals are
     * blocked here until it is set (by the loop thread itself, which starts with this mask
     * and unblocks them). */
    sigemptyset(&sig.block);
    for (size_t i = 0; i < NSIG_SAVED; i++)
        sigaddset(&sig.block, loop_signals[i]);
    pthread_sigmask(SIG_BLOCK, &sig.block, &old);
    for (size_t i = 0; i < NSIG_SAVED; i++) {
        sa.sa_handler = loop_signals[i] == SIGPIPE ? SIG_IGN : on_signal;
        if (sigaction(loop_signals[i], &sa, &sig.saved[i]) != 0) {
            err = -errno;
            while (i-- > 0)
                sigaction(loop_signals[i], &sig.saved[i], NULL);
            break;
        }
    }
    if (err == 0) {
        sig.loop_thread = pthread_self(); /* the loop's thread (here), or until it sets itself */
        sig.session = s->se;
        if (!sig.here) {
            err = -pthread_create(&t, NULL, loop_thread, NULL);
            if (err != 0) {
                sig.session = NULL;
                restore_signals();
            } else {
                while (pthread_equal(__atomic_load_n(&sig.loop_thread, __ATOMIC_ACQUIRE),
                                     pthread_self()))
                    sched_yield();
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0)
        sem_destroy(&sig.wake);
    return err;
}

int pyfuse_loop_here(void)
{
    sig.result = run_loop(sig.s, sig.threads, sig.max_threads, sig.clone_fd, sig.sticky);
    restore_signals();
    sig.ended = 1;
    sem_post(&sig.wake);
    return sig.received ? sig.received : sig.result;
}

int pyfuse_loop_wait(int timeout_ms, int presses, int *ended)
{
    struct timespec until;

    *ended = 0;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    /* each signal and the loop's end post; a post may be left over from a wait a signal
     * interrupted (EINTR), so the conditions are checked again after every wake-up */
    while (!sig.ended && sig.presses <= presses)
        if (sem_timedwait(&sig.wake, &until) != 0 && errno == ETIMEDOUT)
            break;
    if (!sig.ended)
        return sig.presses;
    *ended = 1;
    if (!sig.here) {
        pthread_join(sig.loop_thread, NULL);
        restore_signals();
    }
    /* > 0: the signal that ended the loop (a clean stop); < 0: -errno. */
    return sig.received ? sig.received : sig.result;
}

int pyfuse_loop_presses(void)
{
    return sig.presses;
}

void pyfuse_loop_finish(void)
{
    sem_destroy(&sig.wake);
}

int pyfuse_loop_abandon(void)
{
    pthread_detach(sig.loop_thread); /* it ends when its handlers return; the session stays */
    sig.abandoned = 1;
    restore_signals(); /* the wake semaphore stays: the loop thread posts it as it ends */
    return sig.received;
}

void pyfuse_session_plain_fh(pyfuse_session *s)
{
    s->plain_fh = 1;
}

int pyfuse_exiting(pyfuse_session *s)
{
    return fuse_session_exited(s->se) != 0;
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
