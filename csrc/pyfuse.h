/* Internal header of the C shim: libfuse, the shared cdef types and the Python entry points. */
#ifndef PYFUSE_H
#define PYFUSE_H

#include <fuse.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "optable.h"
#include "ll_optable.h"

/* The operation numbers, one per row of optable.h (build_ffi.py writes the same enum into the
 * cdef): Python passes a mask of (1 << op) for the methods a subclass overrides. */
#define PYFUSE_OP_ENUM(NAME, member, trampoline, when) PYFUSE_OP_##NAME,
enum pyfuse_op { PYFUSE_OPS(PYFUSE_OP_ENUM) PYFUSE_OP_COUNT };
#undef PYFUSE_OP_ENUM
_Static_assert(PYFUSE_OP_COUNT <= 64, "the operation mask is a uint64_t");
/* The same for the inode API's rows (ll_optable.h): PYFUSE_LL_OP_<NAME>. */
#define PYFUSE_LL_OP_ENUM(NAME, member, trampoline, when) PYFUSE_LL_OP_##NAME,
enum pyfuse_ll_op { PYFUSE_LL_OPS(PYFUSE_LL_OP_ENUM) PYFUSE_LL_OP_COUNT };
#undef PYFUSE_LL_OP_ENUM
_Static_assert(PYFUSE_LL_OP_COUNT <= 64, "the operation mask is a uint64_t");

#include <pthread.h>

#include <fuse_lowlevel.h>

#include "pyfuse_cdef.h"
#include "callbacks_cdef.h"
#include "ll_callbacks_cdef.h"

/* The inode API's lookup counts: inode -> lookups the kernel holds (ll_reply.c), an
 * open-addressing table that grows by doubling (never per entry), guarded by its lock. */
struct pyfuse_lookups {
    pthread_mutex_t lock;
    struct pyfuse_lookup_slot { uint64_t ino, n; } *slots; /* ino 0: free */
    size_t cap, used;
    uint64_t forget_requests; /* FORGET and BATCH_FORGET requests (atomic, not under lock) */
};

struct pyfuse_session {
    struct fuse *fuse;     /* the path API's instance; NULL for the inode API */
    struct fuse_session *se; /* libfuse's session (the inode API's own, or the path API's) */
    struct pyfuse_lookups lookups; /* the inode API only */
    uint64_t handle;       /* the Session's number in pyfuse._core.dispatch.SESSIONS */
    uint64_t opmask;       /* 1 << PYFUSE_OP_x for each method the filesystem overrides */
    struct pyfuse_config cfg;
    struct pyfuse_stats *stats; /* NULL: no statistics */
    int intr_handler;      /* this session holds a use of the SIGUSR1 handler (Config.intr) */
    struct fuse_buf pump_buf; /* pyfuse_pump's request buffer (libfuse allocates it on the
                               * first read; freed with the session) */
    /* the inode API, set at INIT: OPEN/OPENDIR of a filesystem without open/opendir are
     * answered ENOSYS (Config.no_open, where the kernel offers it): it sends no more */
    int no_open, no_opendir;
    /* each slot's owner, the struct pyfuse_out of the thread that took it (out.c; NULL:
     * free) */
    struct pyfuse_out *outs[PYFUSE_OUT_SLOTS];
    /* a lock held around every call into Python (PYFUSE_CALL_OP): pyfuse.compat.llfuse's
     * global lock (glock.c); NULL: none */
    struct pyfuse_glock *glock;
    /* every bit of an open file's handle is the filesystem's (pyfuse.compat: the programs of
     * other bindings may use all 64; there is no fd-backed handle): PYFUSE_FH_FD unused */
    int plain_fh;
};

#define PYFUSE_HAS(s, op) (((s)->opmask >> (op)) & 1u)

/* Bit 63 of an open file's handle: FileInfo(fd_backed=True), the handle is a file descriptor
 * that READ and WRITE use directly (data.c), without Python. Python never sees the bit, and
 * refuses other handles that have it (open_result, open_parts), but in a plain_fh session. */
#define PYFUSE_FH_FD (UINT64_C(1) << 63)

static inline int pyfuse_fh_is_fd(const struct pyfuse_session *s,
                                  const struct fuse_file_info *fi)
{
    return !s->plain_fh && (fi->fh & PYFUSE_FH_FD) != 0;
}

/* The handle as the filesystem gave it (without PYFUSE_FH_FD). */
static inline uint64_t pyfuse_fh(const struct pyfuse_session *s, const struct fuse_file_info *fi)
{
    return s->plain_fh ? fi->fh : fi->fh & ~PYFUSE_FH_FD;
}

/* The session serving the current request (fuse_get_context()->private_data is what init returned). */
static inline struct pyfuse_session *pyfuse_current(void)
{
    return (struct pyfuse_session *)fuse_get_context()->private_data;
}

/* The file types the kernel accepts (its fuse_valid_type). */
static inline int pyfuse_valid_type(uint64_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR: case S_IFBLK: case S_IFIFO:
    case S_IFSOCK:
        return 1;
    default:
        return 0;
    }
}

/* stats.c: around a call into Python when the session keeps statistics. begin counts the
 * request and returns the handle to call Python with: for one request in PYFUSE_STATS_SAMPLE,
 * the timed one (its handlers are timed), with *start its start time; else the session's, with
 * *start -1. end counts an error result and records a timed request. */
uint64_t pyfuse_stats_begin(struct pyfuse_session *s, int op, int64_t *start);
void pyfuse_stats_end(struct pyfuse_session *s, int op, int64_t start, int64_t result);

/* How many callbacks into Python this thread is inside (session.c): a thread with none is not
 * serving a request (where libfuse's request context must not be asked for). */
extern __thread int pyfuse_in_callback;

/* out.c: the calling thread's slot in s (PYFUSE_OUT_SLOTS: none free), and path copied into
 * its out struct's name: its length (-1: NULL; >= sizeof name: not copied, pyfuse_out_path()
 * has it) */
unsigned int pyfuse_out_slot(struct pyfuse_session *s);
int64_t pyfuse_out_put_path(const char *path);

/* glock.c: the session's global lock around a call (enter: 1 if it was taken here) */
int pyfuse_glock_enter(struct pyfuse_glock *g);
void pyfuse_glock_leave(struct pyfuse_glock *g);

/* The call fn(handle, ...) into Python for the operation numbered opnum (a row of either
 * API's table), counted and timed when the session keeps statistics (one pointer test
 * otherwise), inside the session's global lock if it has one; its value is fn's. */
#define PYFUSE_CALL_OP(sess, opnum, fn, ...)                                             \
    __extension__({                                                                      \
        struct pyfuse_session *s_ = (sess);                                              \
        __typeof__(fn(s_->handle, __VA_ARGS__)) r_;                                      \
        int g_ = s_->glock != NULL && pyfuse_glock_enter(s_->glock);                     \
        pyfuse_in_callback++;                                                            \
        if (__builtin_expect(s_->stats == NULL, 1)) {                                    \
            r_ = fn(s_->handle, __VA_ARGS__);                                            \
        } else {                                                                         \
            int64_t t_;                                                                  \
            uint64_t h_ = pyfuse_stats_begin(s_, (opnum), &t_);                             \
            r_ = fn(h_, __VA_ARGS__);                                                    \
            pyfuse_stats_end(s_, (opnum), t_, (int64_t)r_);                              \
        }                                                                                \
        pyfuse_in_callback--;                                                            \
        if (g_)                                                                          \
            pyfuse_glock_leave(s_->glock);                                               \
        r_;                                                                              \
    })
/* The same for the path API's operation OP (PYFUSE_OP_<OP>). */
#define PYFUSE_CALL(sess, OP, fn, ...) PYFUSE_CALL_OP(sess, PYFUSE_OP_##OP, fn, __VA_ARGS__)

/* io.c: the shim's own I/O on /dev/fuse (installed once mounted; -ENOSYS before libfuse 3.14),
 * and the corrections it makes to the next reply this thread sends: INIT (parallel_dirops,
 * handle_killpriv as the Config says) and the path API's OPENDIR (keep_cache, cache_readdir). */
int pyfuse_io_install(struct fuse_session *se);
void pyfuse_io_expect_init(const struct pyfuse_session *s, const struct fuse_conn_info *conn);
void pyfuse_io_expect_opendir(int bits);

/* readdir.c: a handleless request's directory state, freed with the fill's reply */
void pyfuse_ll_fill_own_dir(struct pyfuse_fill *f, struct pyfuse_dir *d);

/* lowlevel.c: the inode API's table for this mask of operations */
void pyfuse_ll_fill_ops(struct fuse_lowlevel_ops *ops, uint64_t opmask);

/* A time in nanoseconds since the epoch as seconds and nanoseconds, the nanoseconds in
 * [0, 1e9) for times before 1970 too (C's division truncates toward zero). */
static inline void pyfuse_split_ns(int64_t ns, int64_t *sec, int64_t *nsec)
{
    int64_t s = ns / 1000000000, r = ns % 1000000000;

    if (r < 0) {
        s--;
        r += 1000000000;
    }
    *sec = s;
    *nsec = r;
}

/* ops.c */
void pyfuse_apply_conn(struct fuse_conn_info *conn, const struct pyfuse_config *c);
void pyfuse_attr_to_stat(const struct pyfuse_attr *a, struct stat *st);
void pyfuse_fill_ops(struct fuse_operations *ops, uint64_t opmask);

/* dirent.c: the inode API's listing records (the kernel's struct fuse_dirent and
 * fuse_direntplus), as libfuse's fuse_add_direntry(_plus) write them. Each returns the bytes the
 * record takes, and writes it only if that is at most room. */
struct fuse_attr;
struct pyfuse_valid { /* an entry's timeouts as the kernel takes them */
    uint64_t entry, attr;
    uint32_t entry_nsec, attr_nsec;
};
void pyfuse_valid_of(struct pyfuse_valid *v, double entry_timeout, double attr_timeout);
void pyfuse_attr_to_kernel(const struct pyfuse_attr *a, struct fuse_attr *k);
size_t pyfuse_put_dirent(char *buf, size_t room, const char *name, size_t namelen, uint64_t ino,
                         uint32_t mode, int64_t off);
/* v NULL: timeouts 0 (a record that gives the kernel no entry: nodeid 0) */
size_t pyfuse_put_direntplus(char *buf, size_t room, const char *name, size_t namelen,
                             uint64_t nodeid, const struct fuse_attr *attr,
                             const struct pyfuse_valid *v, int64_t off);

/* readdir.c: the directory operations of the table */
int pyfuse_op_opendir(const char *path, struct fuse_file_info *fi);
int pyfuse_op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags);
int pyfuse_op_releasedir(const char *path, struct fuse_file_info *fi);
int pyfuse_op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi);

/* data.c: READ and WRITE */
int pyfuse_op_read_buf(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off,
                       struct fuse_file_info *fi);
int pyfuse_op_write_buf(const char *path, struct fuse_bufvec *buf, off_t off,
                        struct fuse_file_info *fi);

/* loop.c: pyfuse's own multi-threaded loop (sticky=True); 0 or -errno. max_threads 0:
 * libfuse's default. f: the path API's instance (its cleanup thread runs meanwhile), or NULL. */
int pyfuse_loop_workers(struct fuse_session *se, struct fuse *f, unsigned max_threads);

/* lowlevel.c / ll_reply.c: the inode API. The session serving a request; the request this
 * thread is serving a callback of (NULL: none, or a path API request). */
static inline pyfuse_req pyfuse_req_of(fuse_req_t req)
{
    return (pyfuse_req)(uintptr_t)req;
}
static inline struct pyfuse_session *pyfuse_ll_of(fuse_req_t req)
{
    return (struct pyfuse_session *)fuse_req_userdata(req);
}
extern __thread fuse_req_t pyfuse_ll_current;
int pyfuse_lookups_init(struct pyfuse_lookups *t);
void pyfuse_lookups_free(struct pyfuse_lookups *t);
/* The home slot of ino in a table of cap slots (a power of two): Fibonacci hashing, which
 * spreads sequential numbers. */
static inline size_t pyfuse_lookups_slot_of(uint64_t ino, size_t cap)
{
    ino *= UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(ino >> 32) & (cap - 1);
}
/* Start loading ino's home slot into the cache (the lock held): a listing counts entry i while
 * the slot of entry i + PYFUSE_PREFETCH_AHEAD is on its way, instead of stalling on a cache miss
 * an entry (the table of a big tree is megabytes, and its slots are spread on purpose). */
#define PYFUSE_PREFETCH_AHEAD 8
static inline void pyfuse_lookups_prefetch(const struct pyfuse_lookups *t, uint64_t ino)
{
    __builtin_prefetch(&t->slots[pyfuse_lookups_slot_of(ino, t->cap)], 1);
}
/* Add n lookups of ino (the lock held by the caller when locked is 1). */
void pyfuse_lookups_add(struct pyfuse_lookups *t, uint64_t ino, uint64_t n, int locked);
/* Drop n lookups of ino: 0, or the count pyfuse held when the kernel forgot more. */
int pyfuse_lookups_drop(struct pyfuse_lookups *t, uint64_t ino, uint64_t n, uint64_t *held);
/* ll_reply.c: whether attributes may go to the kernel (0; EINVAL: an entry's inode 0;
 * EBADMSG: no valid file type; ERANGE: nlink, uid or gid beyond 32 bits), the message that
 * says why not (what: "the entry returned"...), and an entry sent with its lookup counted
 * (both APIs check attributes this way: ops.c's getattr too). */
int pyfuse_check_attr(const struct pyfuse_attr *a, int entry);
void pyfuse_refusal(char *buf, size_t size, const struct pyfuse_attr *a, int bad,
                       const char *what);
int pyfuse_ll_send_entry(struct pyfuse_session *s, fuse_req_t req,
                         const struct fuse_entry_param *e);
/* The entry for attributes a (already checked) with its generation and timeouts. */
void pyfuse_ll_entry_param(struct fuse_entry_param *e, const struct pyfuse_attr *a,
                           uint64_t generation, double entry_timeout, double attr_timeout);
/* readdir.c: a low-level listing's fill state over a buffer of size bytes (one allocation
 * a request, with the buffer) */
struct pyfuse_fill *pyfuse_ll_fill_new(fuse_req_t req, size_t size, int plus);

#endif
