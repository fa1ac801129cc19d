/* Everything Python sees of the shim. Parsed by cffi's cdef (no preprocessor logic here) and
 * included by the C sources through pyfuse.h, so both sides share one definition. */

/* enum pyfuse_op (PYFUSE_OP_GETATTR ... PYFUSE_OP_COUNT) comes from csrc/optable.h: pyfuse.h
 * derives it for C and build_ffi.py adds it to the cdef. */

/* Constants both sides must agree on (Python reads them through lib; readdir.c checks their
 * relation at compile time). */
enum {
    /* Most entries Python packs into one batch for pyfuse_fill (the memory a listing holds). */
    PYFUSE_READDIR_BATCH = 512,
    /* Slots of pyfuse_fill's duplicate-name table (on the stack): a power of two, at least
     * twice PYFUSE_READDIR_BATCH, or whole batches would go unchecked. */
    PYFUSE_DUP_SLOTS = 1024,
    /* pyfuse_cb_log(PYFUSE_LOG_SHIM + syslog level, msg): a message of the shim's own, not
     * libfuse's. */
    PYFUSE_LOG_SHIM = 100
};

/* Config(readdirplus=...): when the kernel asks for attributes with the names. */
enum pyfuse_readdirplus {
    PYFUSE_RDPLUS_AUTO = 0,     /* the kernel's adaptive mode: plus while the reader stats */
    PYFUSE_RDPLUS_ALWAYS = 1,   /* every listing is READDIRPLUS */
    PYFUSE_RDPLUS_OFF = 2       /* plain READDIR only; attributes come from lookups */
};

/* How an open directory's listing is numbered (struct pyfuse_dir.mode). */
enum pyfuse_dir_mode {
    PYFUSE_DIR_UNKNOWN = 0,     /* no batch handed out yet */
    PYFUSE_DIR_POSITIONAL = 1,  /* entries with offset 0: the shim numbers them base + i + 1 */
    PYFUSE_DIR_OFFSETS = 2      /* entries carry the filesystem's own non-zero offsets */
};

/* Attributes as Python packs them: twelve 8-byte fields, struct format "=5Q2qQ4q".
 * mode == 0 means "no attributes" (a readdir entry given by name only). */
struct pyfuse_attr {
    uint64_t mode;
    uint64_t ino;
    uint64_t nlink;
    uint64_t uid;
    uint64_t gid;
    int64_t size;
    int64_t blocks;
    uint64_t rdev;
    int64_t blksize;
    int64_t atime_ns;
    int64_t mtime_ns;
    int64_t ctime_ns;
};

/* statfs result, struct format "=11Q". */
struct pyfuse_statvfs {
    uint64_t bsize, frsize, blocks, bfree, bavail, files, ffree, favail, fsid, flag, namemax;
};

/* The parts of struct fuse_file_info an open/create handler reads and sets. */
struct pyfuse_open {
    int flags;           /* in: open(2) flags */
    uint64_t fh;         /* out */
    int direct_io;       /* out */
    int keep_cache;      /* out */
    int nonseekable;     /* out */
    int fd_backed;       /* out: fh is a file descriptor serving READ/WRITE in C */
};

/* A POSIX lock (fcntl F_GETLK/F_SETLK/F_SETLKW). */
struct pyfuse_flock {
    int type;
    int whence;
    int64_t start;
    int64_t len;
    int64_t pid;
};

/* The calling process of the request being served (pyfuse.context()). */
struct pyfuse_ctx {
    uint32_t uid;
    uint32_t gid;
    int32_t pid;
    uint32_t umask;
};

/* Per-open-directory state, owned by C (one calloc per opendir, freed at releasedir). */
struct pyfuse_dir {
    uint64_t fh;         /* the filesystem's own handle from opendir() */
    uint64_t key;        /* Python-side stream state (0: none kept) */
    int64_t eof_off;     /* offset at which the listing ended (> 0), or -1 */
    int mode;            /* enum pyfuse_dir_mode */
    int open_bits;       /* out of opendir: PYFUSE_OPEN_KEEP_CACHE, PYFUSE_OPEN_CACHE_DIR */
    int handleless;      /* 1: one request's, made for a READDIR without OPENDIR (the inode
                          * API's no-opendir mode), freed with its reply */
};

/* One READDIR/READDIRPLUS request in progress: what the batch filler needs. Opaque to Python. */
struct pyfuse_fill;

/* A read answered with, or a write directed to, a range of a file descriptor: fd < 0 means
 * "not used" (the data goes through memory); size: at most this many bytes (reads). */
struct pyfuse_fdrange {
    int fd;
    int64_t pos;
    int64_t size;
};

/* Mount-time configuration copied into struct fuse_config by the init trampoline. */
struct pyfuse_config {
    double entry_timeout;
    double attr_timeout;
    double negative_timeout;
    int use_ino;
    int readdir_ino;
    int hard_remove;
    int nullpath_ok;
    int direct_io;
    int kernel_cache;
    int auto_cache;
    int set_uid, uid, set_gid, gid, set_mode, umask;
    int intr;
    /* the connection (0 / -1: libfuse's default) */
    unsigned max_write, max_read, max_readahead, max_background;
    int splice_read, splice_write, splice_move;
    int readdirplus;     /* enum pyfuse_readdirplus */
    int writeback_cache; /* 1: ask for the kernel's writeback cache */
    int posix_acl;       /* 1: the kernel applies POSIX ACLs (system.posix_acl_*) itself */
    /* capabilities libfuse 3 turns on by default and libfuse 2 did not (1 / 0 / -1: on, off,
     * libfuse's default): the faces of libfuse 2 programs turn them off */
    int atomic_o_trunc, auto_inval_data, async_dio, parallel_dirops, handle_killpriv, ioctl_dir;
    int export_support; /* the filesystem looks up "." and ".." (NFS export) */
    /* not a Config field: 1 lets a listing repeat a name (the foreign faces, whose originals
     * pass such listings to the kernel); 0 refuses it (-EEXIST) */
    int dup_names;
    int cache_symlinks; /* 1: the kernel caches symlink targets (FUSE_CAP_CACHE_SYMLINKS) */
    int no_open;        /* 1: the inode API answers OPEN/OPENDIR of a filesystem without
                         * open/opendir with ENOSYS, so the kernel stops sending them */
};

typedef struct pyfuse_session pyfuse_session;
/* A request of the inode API (a fuse_req_t) as an integer: Python passes it as it got it
 * (an integer argument costs cffi no object; a pointer, a cdata). 0: none. */
typedef uint64_t pyfuse_req;

/* Session(stats=True): what the trampolines count around each call into Python (stats.c). */
enum {
    PYFUSE_STATS_WINDOW = 8192, /* timed requests kept per operation (a power of two) */
    PYFUSE_STATS_SAMPLE = 8,    /* one request in this many of each operation is timed */
    PYFUSE_STATS_OPS = 64       /* rows: room for either API's table (the opmask's width) */
};
struct pyfuse_opstats {
    uint64_t count;  /* requests */
    uint64_t errors; /* answered with an errno */
    uint64_t expected; /* of which ENOENT or ENODATA: a name or an xattr that is not there */
    uint64_t timed;  /* timed requests so far: the last min(timed, WINDOW) are in the rings */
    int64_t total_ns[PYFUSE_STATS_WINDOW];   /* the call into Python, waiting for the GIL too */
    int64_t handler_ns[PYFUSE_STATS_WINDOW]; /* the filesystem's part of it */
};
struct pyfuse_stats {
    uint64_t handle; /* what a timed request's callback gets instead of the session's handle */
    struct pyfuse_opstats op[PYFUSE_STATS_OPS]; /* by PYFUSE_OP_x or PYFUSE_LL_OP_x */
};

/* utimens: which of the two times to leave alone or set to the current time. */
enum pyfuse_utime { PYFUSE_ATIME_OMIT = 1, PYFUSE_ATIME_NOW = 2, PYFUSE_MTIME_OMIT = 4,
                    PYFUSE_MTIME_NOW = 8 };

/* session.c: life cycle. int results are 0 or a negative errno; pyfuse_new returns NULL on
 * failure (libfuse logs why through pyfuse_cb_log). lowlevel: the inode API's session
 * (opmask of ll_optable.h's rows, stats counted by PYFUSE_LL_OP_x), else the path API's.
 * pyfuse_loop: threads 0, libfuse's single-threaded loop; else libfuse's multi-threaded one
 * (a /dev/fuse clone per worker with clone_fd), or with sticky pyfuse's own (loop.c). */
pyfuse_session *pyfuse_new(uint64_t handle, int argc, char **argv, uint64_t opmask,
                           const struct pyfuse_config *cfg, struct pyfuse_stats *stats,
                           int lowlevel);
int pyfuse_mount(pyfuse_session *s, const char *mountpoint);
int pyfuse_loop(pyfuse_session *s, int threads, int max_threads, int clone_fd, int sticky);
/* The same loop with SIGINT, SIGTERM and SIGHUP handled (run() in the main thread; one such
 * loop at a time, else -EBUSY): start installs the shim's handlers and, for a multi-threaded
 * loop, runs it on a thread of its own; a single-threaded one is then run on the caller's
 * thread by here, which returns as the loop ends (the signal number if one ended it, else as
 * pyfuse_loop) with the caller's handlers back. The first signal stops the loop once the
 * requests in progress are answered; a second one raises KeyboardInterrupt in the handler of a
 * single-threaded loop. wait waits up to timeout_ms for the loop to end or for more than
 * presses signals: when ended, *ended is 1 (and the loop's thread joined, the caller's
 * handlers back) and the value is the loop's; else the number of signals so far. finish, once
 * the loop has ended and nobody waits, frees what start set up. abandon (after a second
 * signal, a multi-threaded loop) gives back the caller's handlers and leaves the loop's thread
 * to end when its handlers return: the session must then never be destroyed. It returns the
 * last signal. */
int pyfuse_loop_start(pyfuse_session *s, int threads, int max_threads, int clone_fd,
                      int sticky);
int pyfuse_loop_here(void);
int pyfuse_loop_wait(int timeout_ms, int presses, int *ended);
int pyfuse_loop_presses(void); /* the signals received so far */
void pyfuse_loop_finish(void);
int pyfuse_loop_abandon(void);
/* loop.c: the requests waiting on /dev/fuse, read and served on the calling thread (an event
 * loop's, when the session's descriptor is readable): at most max of them, without waiting for
 * more once the descriptor is non-blocking (pyfuse_session_fd). Returns how many were served (0:
 * none was waiting), -ENODEV once the session has ended (unmounted, aborted or exited), or
 * another -errno (a read error). */
int pyfuse_pump(pyfuse_session *s, int max);
/* The /dev/fuse descriptor the session reads its requests from. */
int pyfuse_session_fd(pyfuse_session *s);
/* pyfuse.compat.llfuse's global lock (glock.c): held around every call into Python of a
 * session it is set for, taken in C before the call. acquire: 1 taken, 0 timed out (timeout
 * seconds; negative: none), -EDEADLK if this thread holds it already; release: 0, or -EPERM if
 * this thread does not hold it. */
struct pyfuse_glock;
struct pyfuse_glock *pyfuse_glock_new(void);
void pyfuse_glock_free(struct pyfuse_glock *g);
int pyfuse_glock_held(const struct pyfuse_glock *g);
int pyfuse_glock_acquire(struct pyfuse_glock *g, double timeout);
int pyfuse_glock_release(struct pyfuse_glock *g);
void pyfuse_session_set_glock(pyfuse_session *s, struct pyfuse_glock *g);
/* Every bit of an open file's handle is the filesystem's (pyfuse.compat: other bindings'
 * programs may use all 64 bits, and have no fd-backed files); set before the mount. */
void pyfuse_session_plain_fh(pyfuse_session *s);
/* 1 once the session's loop has been told to end (a signal, an unmount seen by the loop). */
int pyfuse_exiting(pyfuse_session *s);
void pyfuse_unmount(pyfuse_session *s);
void pyfuse_destroy(pyfuse_session *s);
/* libfuse's fuse_version(): FUSE_MAJOR_VERSION * 100 + FUSE_MINOR_VERSION (314 for 3.14) */
int pyfuse_libfuse_version(void);
int pyfuse_umount2(const char *mountpoint, int lazy);
int pyfuse_get_context(struct pyfuse_ctx *out);

/* readdir.c: hand libfuse a batch of n entries; returns how many it took (<= n) or -errno.
 * names: n NUL-separated names (one buffer); offs: NULL (positional: base + i + 1) or n native
 * int64 offsets; attrs: NULL or packed struct pyfuse_attr (mode 0 = none), entry i's at
 * attrs + i * attr_stride (stride 0: one attribute shared by the whole batch); inos: NULL or
 * n native uint64 inode numbers that replace the attributes' ino (a shared attribute
 * template, each entry its own inode). offs, attrs and inos are byte buffers (Python bytes,
 * passed without a copy) of any alignment. An entry refused: -EINVAL, -ENAMETOOLONG or
 * -EEXIST (its name), -ERANGE (an offset <= 0), -EBADMSG (a mode with no file type), -EDOM
 * (readdirplus, inode 0). */
int pyfuse_fill(struct pyfuse_fill *fill, const char *names, size_t names_len, int n,
                const char *offs, const char *attrs, size_t attr_stride, const char *inos,
                int64_t base);
/* pyfuse_fill for names checked already, as pyfuse._pull checks them (csrc/cpython/pull.c):
 * n NUL-separated names, each not empty, without '/', at most 255 bytes, none twice. */
int pyfuse_fill_checked(struct pyfuse_fill *fill, const char *names, int n, const char *offs,
                        const char *attrs, size_t attr_stride, const char *inos, int64_t base);
/* dirent.c, for the tests: 1 if the inode API's listing records of the entry (name, a, off),
 * plain and plus with these timeouts, are the bytes libfuse's fuse_add_direntry and
 * fuse_add_direntry_plus write, else 0. */
int pyfuse_dirent_matches_libfuse(const struct pyfuse_attr *a, const char *name, int64_t off,
                                  double entry_timeout, double attr_timeout);

void pyfuse_log_init(void);

/* stats.c: zeroed counters for pyfuse_new's stats (NULL there: no statistics, one pointer
 * test a request), with the handle timed requests are given; NULL: out of memory. The owner
 * frees them after pyfuse_destroy. pyfuse_stats_handler adds the nanoseconds the filesystem's
 * code took to this thread's current request (kept when the request is a timed one). */
struct pyfuse_stats *pyfuse_stats_new(uint64_t timed_handle);
void pyfuse_stats_free(struct pyfuse_stats *stats);
void pyfuse_stats_handler(int64_t ns);

/* ops.c: how many members of struct fuse_operations the table has for this mask of operations
 * (tests check optable.h's registration with it). */
int pyfuse_ops_filled(uint64_t opmask);

/* ---- the inode API (pyfuse.lowlevel): lowlevel.c, ll_reply.c ----------------------------
 * A request is a void * (libfuse's fuse_req_t). Each callback (ll_callbacks_cdef.h) either
 * replies, or leaves the request to be replied later (an async handler), and returns 0; or it
 * returns a negative errno, which the trampoline replies (with the operation's clean-up).
 * Every reply function returns 0, or the negative errno libfuse gave (the kernel no longer
 * waits for the reply: interrupted, or unmounted). */

/* A forget: the kernel dropped nlookup lookups of ino (layout of struct fuse_forget_data). */
struct pyfuse_forget {
    uint64_t ino;
    uint64_t nlookup;
};

/* Bits of the open flags a reply carries (FileInfo). */
enum { PYFUSE_OPEN_DIRECT_IO = 1, PYFUSE_OPEN_KEEP_CACHE = 2, PYFUSE_OPEN_NONSEEKABLE = 4,
       PYFUSE_OPEN_FD_BACKED = 8, PYFUSE_OPEN_CACHE_DIR = 16 };

/* setattr's to_set bits: libfuse's FUSE_SET_ATTR_* (build_ffi.py adds them to the cdef). */

/* How many members of struct fuse_lowlevel_ops the table has for this mask (tests). */
int pyfuse_ll_ops_filled(uint64_t opmask);
int pyfuse_ll_reply_err(pyfuse_req req, int err);
/* The cheap crossing (csrc/out.c), both APIs: a synchronous handler's attributes or entry go
 * back to C in the calling thread's struct pyfuse_out, and the callback returns what C is to
 * reply with it, once the callback has returned (no call into C while the GIL is held); so do
 * the inode API's plain successes (PYFUSE_REPLY_NONE), open's file handle and write's count. The
 * callbacks that answer this way take the thread's slot in the session instead of the request
 * (pyfuse_current_req() has it) and of the struct's address: small integers, cheap to pass.
 * Session._outs[slot] is the struct as a buffer, made by the slot's thread from
 * pyfuse_out_here() on its first request. A session has PYFUSE_OUT_SLOTS slots; slot
 * PYFUSE_OUT_SLOTS means all are taken (the thread asks for its struct each time). The
 * request's name (the inode API's lookup) or path (the path API's getattr) is copied into the
 * struct's name by C and its length passed: no cdata, no ffi.string. */
enum { PYFUSE_OUT_SLOTS = 128 };
struct pyfuse_out *pyfuse_out_here(void);
struct pyfuse_out {
    struct pyfuse_attr attr;
    uint64_t generation;
    double entry_timeout, attr_timeout;
    uint64_t fh, open_bits; /* PYFUSE_REPLY_OPEN's file handle and PYFUSE_OPEN_* bits */
    struct pyfuse_fdrange fdr; /* the path API's read answered PYFUSE_REPLY_FDRANGE */
    char name[4096]; /* lookup's name or getattr's path (namelen, pathlen bytes, no NUL) */
};
/* The path API: a path of pathlen >= sizeof name bytes is not copied; this returns it (valid
 * during the callback). pathlen -1: no path (an open file whose name is gone). */
const char *pyfuse_out_path(void);
enum {
    PYFUSE_REPLY_ATTR = 1,      /* out.attr, with the session's attr_timeout */
    PYFUSE_REPLY_ENTRY = 2,     /* out.attr as an entry, generation 0, the session's timeouts */
    PYFUSE_REPLY_ENTRY_OUT = 3, /* out.attr as an entry, out's generation and timeouts */
    PYFUSE_REPLY_ATTR_OUT = 4,  /* out.attr, with out's attr_timeout */
    PYFUSE_REPLY_NONE = 5,      /* success, nothing to say (unlink, flush, release, ...) */
    PYFUSE_REPLY_OPEN = 6,      /* an open file: out.fh, with out.open_bits */
    /* write: PYFUSE_REPLY_COUNT + n replies n bytes written (n <= the request's size, which
     * the kernel keeps below PYFUSE_DATA_MAX: ll_write refuses a larger one) */
    PYFUSE_REPLY_COUNT = 64,
    /* Reads and writes of more than this (1 GiB; the kernel's are MiBs at most) are refused,
     * so that a count, and a count plus PYFUSE_REPLY_COUNT, fit an int below ... */
    PYFUSE_DATA_MAX = 1073741824,
    /* ... the path API read's answer "the data is out.fdr's range": not a count, not an
     * errno (a negative result is an errno everywhere, statistics included) */
    PYFUSE_REPLY_FDRANGE = 2147483647,
    /* An answering callback (lookup, getattr, setattr, mknod, mkdir, symlink, link; the path
     * API's getattr) returning this or more returns the address of the struct pyfuse_attr it
     * answers with (a plain Attr's own memory: nothing copied), as REPLY_ATTR or REPLY_ENTRY
     * would the struct's. The session holds that object until the thread's next request
     * (Session._keep[slot]), so it is alive while C converts it. */
    PYFUSE_REPLY_AT = 4096
};
/* An entry (attr: a packed struct pyfuse_attr): counts one lookup of its inode. -EINVAL (ino
 * 0), -EBADMSG (no valid file type) or -ERANGE (nlink, uid or gid beyond 32 bits): refused,
 * EIO replied (the same for reply_attr and reply_create). */
int pyfuse_ll_reply_entry(pyfuse_req req, const char *attr, uint64_t generation,
                          double entry_timeout, double attr_timeout);
int pyfuse_ll_reply_create(pyfuse_req req, const char *attr, uint64_t generation,
                           double entry_timeout, double attr_timeout, uint64_t fh, int bits);
/* lookup's errors: ENOENT becomes a negative entry when the session's negative_timeout > 0 */
int pyfuse_ll_fail_lookup(pyfuse_req req, int err);
int pyfuse_ll_reply_attr(pyfuse_req req, const char *attr, double attr_timeout);
int pyfuse_ll_reply_open(pyfuse_req req, uint64_t fh, int bits);
int pyfuse_ll_reply_buf(pyfuse_req req, const char *data, size_t size);
int pyfuse_ll_reply_fd(pyfuse_req req, int fd, int64_t pos, size_t size);
int pyfuse_ll_reply_write(pyfuse_req req, size_t count);
int pyfuse_ll_reply_readlink(pyfuse_req req, const char *target);
int pyfuse_ll_reply_statfs(pyfuse_req req, const char *packed);
int pyfuse_ll_reply_xattr(pyfuse_req req, size_t size);
int pyfuse_ll_reply_lock(pyfuse_req req, int type, int whence, int64_t start, int64_t len,
                         int64_t pid);
int pyfuse_ll_reply_lseek(pyfuse_req req, int64_t off);
int pyfuse_ll_reply_ioctl(pyfuse_req req, int result, const char *buf, size_t size);
int pyfuse_ll_reply_poll(pyfuse_req req, unsigned int revents);
/* opendir: the handle given to the kernel is the struct pyfuse_dir (d->fh the filesystem's) */
int pyfuse_ll_reply_opendir(pyfuse_req req, struct pyfuse_dir *d, int bits);
int pyfuse_ll_fail_opendir(pyfuse_req req, struct pyfuse_dir *d, int err);
/* A listing's reply (the entries pyfuse_fill put in the fill's buffer); frees the fill. */
int pyfuse_ll_reply_dir(struct pyfuse_fill *fill);
int pyfuse_ll_fail_dir(struct pyfuse_fill *fill, int err);
/* Lookups of ino pyfuse counts the kernel holds; of the session of req (NULL: the current
 * request's; UINT64_MAX when there is none). */
uint64_t pyfuse_ll_lookups(pyfuse_session *s, uint64_t ino);
uint64_t pyfuse_ll_req_lookups(pyfuse_req req, uint64_t ino);
/* All lookups the kernel holds, and (*inodes) of how many inodes. */
uint64_t pyfuse_ll_lookups_held(pyfuse_session *s, uint64_t *inodes);
uint64_t pyfuse_ll_forget_requests(pyfuse_session *s);
/* Ask for pyfuse_ll_cb_interrupt(key) when the kernel interrupts req (at once if it has). */
void pyfuse_ll_watch(pyfuse_req req, uint64_t key);

/* The request this thread serves (the inode API's), else NULL; its caller; whether the
 * kernel interrupted it (or the path API's current request); its caller's supplementary
 * groups (up to size into list; the count, or -errno). req NULL: the current request. */
pyfuse_req pyfuse_current_req(void);
int pyfuse_req_context(pyfuse_req req, struct pyfuse_ctx *out);
int pyfuse_interrupted(pyfuse_req req);
int pyfuse_getgroups(pyfuse_req req, int size, uint32_t *list);
/* 1 when this thread is inside a request's callback (a notification sent from here could
 * wait for the very request it runs in). */
int pyfuse_in_request(void);

/* Notifications (0 or -errno; -ENOTCONN: the session has ended). */
int pyfuse_notify_inval_inode(pyfuse_session *s, uint64_t ino, int64_t off, int64_t len);
int pyfuse_notify_inval_entry(pyfuse_session *s, uint64_t parent, const char *name,
                              size_t namelen);
int pyfuse_notify_delete(pyfuse_session *s, uint64_t parent, uint64_t child, const char *name,
                         size_t namelen);
int pyfuse_notify_store(pyfuse_session *s, uint64_t ino, int64_t off, const char *data,
                        size_t size);
int pyfuse_invalidate_path(pyfuse_session *s, const char *path);
/* Wake the poll(2) callers waiting on a poll handle (both APIs); free a handle. */
int pyfuse_notify_poll(pyfuse_session *s, void *ph);
void pyfuse_pollhandle_destroy(void *ph);
/* The request of a low-level listing's fill (an async readdir's answer comes later). */
pyfuse_req pyfuse_ll_fill_req(struct pyfuse_fill *fill);
/* The timeouts of the readdirplus entries a low-level fill takes from now on (negative: the
 * session's Config; pyfuse.compat.pyfuse3 gives its EntryAttributes' own). */
void pyfuse_ll_fill_timeouts(struct pyfuse_fill *fill, double entry_timeout,
                             double attr_timeout);
