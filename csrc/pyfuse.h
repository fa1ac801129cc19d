/* Internal header of the C shim: libfuse, the shared cdef types and the Python entry points. */
#ifndef PYFUSE_H
#define PYFUSE_H

#include <fuse.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "optable.h"

/* The operation numbers, one per row of optable.h (build_ffi.py writes the same enum into the
 * cdef): Python passes a mask of (1 << op) for the methods a subclass overrides. */
#define PYFUSE_OP_ENUM(NAME, member, trampoline, when) PYFUSE_OP_##NAME,
enum pyfuse_op { PYFUSE_OPS(PYFUSE_OP_ENUM) PYFUSE_OP_COUNT };
#undef PYFUSE_OP_ENUM
_Static_assert(PYFUSE_OP_COUNT <= 64, "the operation mask is a uint64_t");

#include "pyfuse_cdef.h"
#include "callbacks_cdef.h"

struct pyfuse_session {
    struct fuse *fuse;
    void *handle;          /* ffi.new_handle(Session), kept alive by the Python Session */
    uint64_t opmask;       /* 1 << PYFUSE_OP_x for each method the filesystem overrides */
    struct pyfuse_config cfg;
    struct pyfuse_stats *stats; /* NULL: no statistics */
};

#define PYFUSE_HAS(s, op) (((s)->opmask >> (op)) & 1u)

/* Bit 63 of an open file's handle: FileInfo(fd_backed=True), the handle is a file descriptor
 * that READ and WRITE use directly (data.c), without Python. Python never sees the bit. */
#define PYFUSE_FH_FD (UINT64_C(1) << 63)

static inline uint64_t pyfuse_fh(const struct fuse_file_info *fi)
{
    return fi->fh & ~PYFUSE_FH_FD;
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
void *pyfuse_stats_begin(struct pyfuse_session *s, int op, int64_t *start);
void pyfuse_stats_end(struct pyfuse_session *s, int op, int64_t start, int64_t result);

/* The call fn(handle, ...) into Python for operation OP (PYFUSE_OP_<OP>), counted and timed
 * when the session keeps statistics (one pointer test otherwise); its value is fn's. */
#define PYFUSE_CALL(sess, OP, fn, ...)                                                   \
    __extension__({                                                                      \
        struct pyfuse_session *s_ = (sess);                                              \
        __typeof__(fn(s_->handle, __VA_ARGS__)) r_;                                      \
        if (__builtin_expect(s_->stats == NULL, 1)) {                                    \
            r_ = fn(s_->handle, __VA_ARGS__);                                            \
        } else {                                                                         \
            int64_t t_;                                                                  \
            void *h_ = pyfuse_stats_begin(s_, PYFUSE_OP_##OP, &t_);                      \
            r_ = fn(h_, __VA_ARGS__);                                                    \
            pyfuse_stats_end(s_, PYFUSE_OP_##OP, t_, (int64_t)r_);                       \
        }                                                                                \
        r_;                                                                              \
    })

/* ops.c */
void pyfuse_attr_to_stat(const struct pyfuse_attr *a, struct stat *st);
void pyfuse_fill_ops(struct fuse_operations *ops, uint64_t opmask);

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

/* loop.c: the default (multi-threaded) loop; 0 or -errno. max_threads 0: libfuse's default. */
int pyfuse_loop_workers(struct fuse *f, unsigned max_threads);

#endif
