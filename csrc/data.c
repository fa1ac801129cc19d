/* File data: READ through read_buf and WRITE through write_buf, so that a filesystem can answer
 * with "these bytes of this file descriptor" (struct pyfuse_fdrange) and libfuse moves the data
 * with fd-backed buffers and splice, without Python touching it.
 *
 * Copies: a read answered with bytes is copied once, by Python, into the reply buffer allocated
 * here; a read answered with an fd range is read here (pread, without the GIL) into that buffer,
 * or, with splice enabled, spliced by libfuse straight from the fd.
 * A write's data reaches Python as a read-only view of libfuse's request buffer (no copy), or is
 * copied (or spliced) by libfuse straight into the fd range that write_fd named. */
#include "pyfuse.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* Replies up to this size go out by splice when Config(splice_write=True): libfuse needs a pipe
 * of the reply's size plus three pages, and pipes are capped at /proc/sys/fs/pipe-max-size
 * (1 MiB by default); past that libfuse falls back to a fresh page-aligned buffer per reply
 * (mmap + page faults + munmap), so larger ranges are read here into the reply buffer. */
#define SPLICE_MAX (1024 * 1024 - 16 * 1024)

/* pread until `size` bytes, end of file or an error. */
static ssize_t pread_full(int fd, char *buf, size_t size, off_t pos)
{
    size_t done = 0;

    while (done < size) {
        ssize_t n = pread(fd, buf + done, size - done, pos + (off_t)done);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return done ? (ssize_t)done : -errno;
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

/* Answer a read from fd at pos: spliced by libfuse when enabled and it fits a pipe, else read
 * here into the reply buffer `mem` (allocated here when NULL; freed or handed over). */
static int read_fd(struct fuse_bufvec *bv, void *mem, int fd, int64_t pos, size_t n)
{
    if (pyfuse_current()->cfg.splice_write == 1 && n <= SPLICE_MAX) {
        free(mem); /* libfuse splices fd -> pipe -> /dev/fuse */
        bv->buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK | FUSE_BUF_FD_RETRY;
        bv->buf[0].fd = fd;
        bv->buf[0].pos = pos;
        bv->buf[0].size = n;
    } else {
        ssize_t got;

        if (mem == NULL && (mem = malloc(n ? n : 1)) == NULL)
            return -ENOMEM;
        got = pread_full(fd, mem, n, (off_t)pos); /* one copy, as in C */

        if (got < 0) {
            free(mem);
            return (int)got;
        }
        bv->buf[0].mem = mem;
        bv->buf[0].size = (size_t)got;
    }
    return 0;
}

int pyfuse_op_read_buf(const char *path, struct fuse_bufvec **bufp, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_current();
    struct fuse_bufvec *bv;
    void *mem;
    int res;

    if (size > PYFUSE_DATA_MAX) /* the kernel's are at most max_read (MiBs): never here */
        return -EINVAL;
    bv = malloc(sizeof *bv);
    if (bv == NULL)
        return -ENOMEM;
    *bv = (struct fuse_bufvec)FUSE_BUFVEC_INIT(size);
    if (pyfuse_fh_is_fd(s, fi)) { /* FileInfo(fd_backed=True): no Python at all */
        res = read_fd(bv, NULL, (int)pyfuse_fh(s, fi), off, size);
    } else if ((mem = malloc(size ? size : 1)) == NULL) { /* Python copies into it */
        res = -ENOMEM;  /* libfuse frees mem and bv after the reply (fuse_free_buf) */
    } else {
        res = PYFUSE_HAS(s, PYFUSE_OP_READ)
                  ? PYFUSE_CALL(s, READ, pyfuse_cb_read, pyfuse_out_slot(s),
                                pyfuse_out_put_path(path), mem, size, off, pyfuse_fh(s, fi))
                  : -ENOSYS;
        if (res == PYFUSE_REPLY_FDRANGE) { /* Python checked it: fd >= 0, pos >= 0, size */
            const struct pyfuse_fdrange *fr = &pyfuse_out_here()->fdr;

            res = read_fd(bv, mem, fr->fd, fr->pos,
                          (size_t)fr->size < size ? (size_t)fr->size : size);
        } else if (res >= 0) {
            bv->buf[0].mem = mem;
            bv->buf[0].size = (size_t)res;
            res = 0;
        } else
            free(mem);
    }
    if (res < 0) {
        free(bv);
        return res;
    }
    *bufp = bv;
    return 0;
}

/* Data that is not one memory buffer (it sits in a pipe when libfuse read the request with
 * splice): copied once into memory for Python's write(). */
static int write_copied(struct pyfuse_session *s, const char *path, struct fuse_bufvec *buf,
                        size_t size, off_t off, uint64_t fh)
{
    struct fuse_bufvec tmp = FUSE_BUFVEC_INIT(size);
    ssize_t n;
    int res;

    tmp.buf[0].mem = malloc(size ? size : 1);
    if (tmp.buf[0].mem == NULL)
        return -ENOMEM;
    n = fuse_buf_copy(&tmp, buf, 0);
    res = n < 0 ? (int)n
                : PYFUSE_CALL(s, WRITE, pyfuse_cb_write, pyfuse_out_slot(s),
                              pyfuse_out_put_path(path), tmp.buf[0].mem, (size_t)n, off, fh);
    free(tmp.buf[0].mem);
    return res;
}

/* Copy (or splice) a write's data into fd at pos; bytes written or -errno. */
static int write_fd(struct fuse_bufvec *buf, size_t size, int fd, int64_t pos)
{
    struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);

    dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    dst.buf[0].fd = fd;
    dst.buf[0].pos = pos;
    return (int)fuse_buf_copy(&dst, buf, FUSE_BUF_SPLICE_NONBLOCK);
}

int pyfuse_op_write_buf(const char *path, struct fuse_bufvec *buf, off_t off,
                        struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_current();
    size_t size = fuse_buf_size(buf);
    const struct fuse_buf *b = &buf->buf[buf->idx];

    if (pyfuse_fh_is_fd(s, fi)) /* FileInfo(fd_backed=True): no Python at all */
        return write_fd(buf, size, (int)pyfuse_fh(s, fi), off);
    if (PYFUSE_HAS(s, PYFUSE_OP_WRITE_FD)) {
        struct pyfuse_fdrange fr = { -1, 0, 0 };
        int res = PYFUSE_CALL(s, WRITE_FD, pyfuse_cb_write_fd, path, size, off,
                              pyfuse_fh(s, fi), &fr);

        if (res < 0)
            return res;
        if (fr.fd >= 0)
            return write_fd(buf, size, fr.fd, fr.pos);
    }
    if (!PYFUSE_HAS(s, PYFUSE_OP_WRITE))
        return -ENOSYS;
    if (buf->count - buf->idx == 1 && !(b->flags & FUSE_BUF_IS_FD))
        return PYFUSE_CALL(s, WRITE, pyfuse_cb_write, pyfuse_out_slot(s),
                           pyfuse_out_put_path(path), (const char *)b->mem + buf->off, size, off,
                           pyfuse_fh(s, fi));
    return write_copied(s, path, buf, size, off, pyfuse_fh(s, fi));
}
