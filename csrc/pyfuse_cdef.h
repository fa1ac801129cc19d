/* Everything Python sees of the shim. Parsed by cffi's cdef (no preprocessor logic here) and
 * included by the C sources through pyfuse.h, so both sides share one definition. */

/* Operation numbers: Python passes a mask of (1 << op) for the methods a subclass overrides. */
enum pyfuse_op {
    PYFUSE_OP_GETATTR, PYFUSE_OP_READLINK, PYFUSE_OP_MKNOD, PYFUSE_OP_MKDIR, PYFUSE_OP_UNLINK,
    PYFUSE_OP_RMDIR, PYFUSE_OP_SYMLINK, PYFUSE_OP_RENAME, PYFUSE_OP_LINK, PYFUSE_OP_CHMOD,
    PYFUSE_OP_CHOWN, PYFUSE_OP_TRUNCATE, PYFUSE_OP_OPEN, PYFUSE_OP_READ, PYFUSE_OP_WRITE,
    PYFUSE_OP_STATFS, PYFUSE_OP_FLUSH, PYFUSE_OP_RELEASE, PYFUSE_OP_FSYNC, PYFUSE_OP_SETXATTR,
    PYFUSE_OP_GETXATTR, PYFUSE_OP_LISTXATTR, PYFUSE_OP_REMOVEXATTR, PYFUSE_OP_OPENDIR,
    PYFUSE_OP_READDIR, PYFUSE_OP_RELEASEDIR, PYFUSE_OP_FSYNCDIR, PYFUSE_OP_INIT,
    PYFUSE_OP_DESTROY, PYFUSE_OP_ACCESS, PYFUSE_OP_CREATE, PYFUSE_OP_LOCK, PYFUSE_OP_UTIMENS,
    PYFUSE_OP_IOCTL, PYFUSE_OP_POLL, PYFUSE_OP_FLOCK, PYFUSE_OP_FALLOCATE,
    PYFUSE_OP_COPY_FILE_RANGE, PYFUSE_OP_LSEEK, PYFUSE_OP_WRITE_FD,
    PYFUSE_OP_COUNT
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
    int mode;            /* 0 unknown, 1 positional (shim numbers entries), 2 filesystem offsets */
};

/* One READDIR/READDIRPLUS request in progress: what the batch filler needs. Opaque to Python. */
struct pyfuse_fill;

/* Mount-time configuration copied into struct fuse_config by the init trampoline. */
/* A read answered with, or a write directed to, a range of a file descriptor: fd < 0 means
 * "not used" (the data goes through memory); size: at most this many bytes (reads). */
struct pyfuse_fdrange {
    int fd;
    int64_t pos;
    int64_t size;
};

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
};

typedef struct pyfuse_session pyfuse_session;

/* utimens: which of the two times to leave alone or set to the current time. */
enum pyfuse_utime { PYFUSE_ATIME_OMIT = 1, PYFUSE_ATIME_NOW = 2, PYFUSE_MTIME_OMIT = 4,
                    PYFUSE_MTIME_NOW = 8 };

/* session.c: life cycle. int results are 0 or a negative errno; pyfuse_new returns NULL on
 * failure (libfuse logs why through pyfuse_cb_log). */
pyfuse_session *pyfuse_new(void *handle, int argc, char **argv, uint64_t opmask,
                           const struct pyfuse_config *cfg);
int pyfuse_mount(pyfuse_session *s, const char *mountpoint);
int pyfuse_loop(pyfuse_session *s, int threads, int max_threads, int clone_fd, int signals);
void pyfuse_unmount(pyfuse_session *s);
void pyfuse_destroy(pyfuse_session *s);
int pyfuse_umount2(const char *mountpoint, int lazy);
int pyfuse_get_context(struct pyfuse_ctx *out);

/* readdir.c: hand libfuse a batch of n entries; returns how many it took (<= n) or -errno.
 * names: n NUL-separated names (one buffer); offs: NULL (positional: base + i + 1) or n native
 * int64 offsets; attrs: NULL or packed struct pyfuse_attr (mode 0 = none), entry i's at
 * attrs + i * attr_stride (stride 0: one attribute shared by the whole batch). offs and attrs
 * are byte buffers (Python bytes, passed without a copy) of any alignment. */
int pyfuse_fill(struct pyfuse_fill *fill, const char *names, size_t names_len, int n,
                const char *offs, const char *attrs, size_t attr_stride, int64_t base);

void pyfuse_log_init(void);
