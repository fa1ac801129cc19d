/* The shim's own I/O on /dev/fuse (fuse_session_custom_io, libfuse >= 3.14): read(2),
 * writev(2) and splice(2) as libfuse does them, plus two corrections of libfuse's replies,
 * made on the thread that sends them, right after the shim's callback that knows better:
 *
 *  - INIT: libfuse up to 3.16 never hands the kernel FUSE_PARALLEL_DIROPS or
 *    FUSE_HANDLE_KILLPRIV, whatever the filesystem wants (measured on 3.14: the wants are
 *    set, the reply's flags lack them); the reply gets the Config's choice of the two, where
 *    the kernel offered them.
 *  - OPENDIR on the path API: libfuse's high-level API before 3.16 drops the keep_cache and
 *    cache_readdir a filesystem's opendir set (libfuse #821); the reply gets them back.
 *
 * The pending correction is thread-local (set by the callback, taken by the next reply the
 * same thread writes, whatever it is): no global state. */
#define _GNU_SOURCE /* splice */
#include "pyfuse.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static __thread struct {
    int pending;          /* 1: INIT, 2: OPENDIR */
    uint32_t set, clear;  /* INIT: flags to add, to remove; OPENDIR: open_flags to add */
} fix;

void pyfuse_io_expect_init(const struct pyfuse_session *s, const struct fuse_conn_info *conn)
{
    const struct pyfuse_config *c = &s->cfg;

    fix.pending = 1;
    fix.set = fix.clear = 0;
    if (c->parallel_dirops == 1 && (conn->capable & FUSE_CAP_PARALLEL_DIROPS))
        fix.set |= FUSE_PARALLEL_DIROPS;
    else if (c->parallel_dirops == 0)
        fix.clear |= FUSE_PARALLEL_DIROPS;
    if (c->handle_killpriv == 1 && (conn->capable & FUSE_CAP_HANDLE_KILLPRIV))
        fix.set |= FUSE_HANDLE_KILLPRIV;
    else if (c->handle_killpriv == 0)
        fix.clear |= FUSE_HANDLE_KILLPRIV;
}

void pyfuse_io_expect_opendir(int bits)
{
    uint32_t flags = ((bits & PYFUSE_OPEN_KEEP_CACHE) ? FOPEN_KEEP_CACHE : 0) |
                     ((bits & PYFUSE_OPEN_CACHE_DIR) ? FOPEN_CACHE_DIR : 0);

    if (flags != 0) {
        fix.pending = 2;
        fix.set = flags;
        fix.clear = 0;
    }
}

/* The reply in iov: the out header, then its argument (libfuse's send_reply_ok: 2 pieces). */
static void correct(struct iovec *iov, int count)
{
    const struct fuse_out_header *h = iov[0].iov_base;
    int what = fix.pending;

    fix.pending = 0;
    if (count < 2 || iov[0].iov_len != sizeof *h || h->error != 0)
        return;
    if (what == 1 && iov[1].iov_len >= offsetof(struct fuse_init_out, flags) + sizeof(uint32_t)) {
        struct fuse_init_out *o = iov[1].iov_base;
        uint32_t was = o->flags;

        o->flags = (o->flags | fix.set) & ~fix.clear;
        if (o->flags != was)
            fuse_log(FUSE_LOG_DEBUG, "   (pyfuse: INIT flags=0x%08x)\n", o->flags);
    } else if (what == 2 && iov[1].iov_len == sizeof(struct fuse_open_out)) {
        struct fuse_open_out *o = iov[1].iov_base;

        o->open_flags |= fix.set;
    }
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
    (void)userdata;
    if (fix.pending)
        correct(iov, count);
    return writev(fd, iov, count);
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
    (void)userdata;
    return read(fd, buf, len);
}

static ssize_t io_splice_receive(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                                 unsigned int flags, void *userdata)
{
    (void)userdata;
    return splice(fdin, offin, fdout, offout, len, flags);
}

static ssize_t io_splice_send(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                              unsigned int flags, void *userdata)
{
    (void)userdata;
    return splice(fdin, offin, fdout, offout, len, flags);
}

int pyfuse_io_install(struct fuse_session *se)
{
#if FUSE_MAJOR_VERSION > 3 || (FUSE_MAJOR_VERSION == 3 && FUSE_MINOR_VERSION >= 14)
    static const struct fuse_custom_io io = {
        .writev = io_writev,
        .read = io_read,
        .splice_receive = io_splice_receive,
        .splice_send = io_splice_send,
    };

    return fuse_session_custom_io(se, &io, fuse_session_fd(se));
#else
    (void)se;
    return -ENOSYS; /* libfuse < 3.14: libfuse's own replies, uncorrected */
#endif
}
