/* The inode API (pyfuse.lowlevel): libfuse's low-level session, its operation table and one
 * trampoline per operation. Each trampoline makes exactly one call into Python with the
 * request; Python replies (now, or later from its event loop for an async handler) through
 * ll_reply.c, or returns a negative errno that the trampoline replies here. Lookup counting
 * (forget), the directory handle and fd-backed data are handled in C. */
#include "pyfuse.h"

#include <errno.h>
#include <float.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The request this thread is in the callback of (pyfuse.context() and interrupted()). */
__thread fuse_req_t pyfuse_ll_current;

/* One call into Python for req: fn(handle, req, ...), with req made the thread's current,
 * counted as the operation numbered opnum when the session keeps statistics. */
#define CB_OP(req, opnum, fn, ...)                                                         \
    __extension__({                                                                        \
        int r_;                                                                            \
        pyfuse_ll_current = (req);                                                         \
        r_ = PYFUSE_CALL_OP(pyfuse_ll_of(req), (opnum), fn, pyfuse_req_of(req), __VA_ARGS__); \
        pyfuse_ll_current = NULL;                                                          \
        r_;                                                                                \
    })
/* The same for operation OP (PYFUSE_LL_OP_<OP>). */
#define CB(req, OP, fn, ...) CB_OP(req, PYFUSE_LL_OP_##OP, fn, __VA_ARGS__)
/* The same for an operation that may answer in the thread's out struct: fn(handle, slot, ...),
 * the thread's slot in the session instead of the request (see pyfuse_cdef.h); fn's result
 * as it is (int64_t for those that may return an address, PYFUSE_REPLY_AT). */
#define CB_OUT(req, OP, fn, ...)                                                           \
    __extension__({                                                                        \
        __typeof__(fn(0, 0, __VA_ARGS__)) r_;                                              \
        struct pyfuse_session *o_ = pyfuse_ll_of(req);                                     \
        pyfuse_ll_current = (req);                                                         \
        r_ = PYFUSE_CALL_OP(o_, PYFUSE_LL_OP_##OP, fn, pyfuse_out_slot(o_), __VA_ARGS__);  \
        pyfuse_ll_current = NULL;                                                          \
        r_;                                                                                \
    })
/* an open file's handle as the filesystem gave it (req: the request in scope); FHA: it and
 * whether there is one */
#define FHR(fi) pyfuse_fh(pyfuse_ll_of(req), (fi))
#define FHA(fi) ((fi) ? FHR(fi) : 0), ((fi) != NULL)

/* Reply what a callback returned: an errno, 0 (it replied, or will), PYFUSE_REPLY_NONE
 * (success, nothing to say) or, from write's, PYFUSE_REPLY_COUNT + the bytes written. */
static inline void done(fuse_req_t req, int res)
{
    if (res < 0)
        fuse_reply_err(req, -res);
    else if (res == PYFUSE_REPLY_NONE)
        fuse_reply_err(req, 0);
    else if (res >= PYFUSE_REPLY_COUNT)
        fuse_reply_write(req, (size_t)(res - PYFUSE_REPLY_COUNT));
}

/* A timeout a handler gave (pyfuse.compat's EntryAttributes are packed as they are): a finite
 * number of seconds >= 0 (NaN fails both tests). */
static inline int timeout_ok(double t)
{
    return t >= 0 && t <= DBL_MAX;
}

/* The request's place in a logged error: "op 'name' in inode N: " or "op of inode N: "; the
 * length written. */
static int where(char *msg, size_t size, const char *op, uint64_t ino, const char *name)
{
    int n = name != NULL ? snprintf(msg, size, "%s '%.100s' in inode %llu: ", op, name,
                                    (unsigned long long)ino)
                         : snprintf(msg, size, "%s of inode %llu: ", op, (unsigned long long)ino);

    return n < 0 ? 0 : (size_t)n >= size ? (int)size - 1 : n;
}

/* What a callback with an out argument returned: an errno, 0 (it replied, or will), a
 * PYFUSE_REPLY_* code: the reply of the thread's out struct, attributes (REPLY_ATTR,
 * _ATTR_OUT) or an entry (REPLY_ENTRY, _ENTRY_OUT), with the session's timeouts or out's, or
 * the address of an Attr (PYFUSE_REPLY_AT) replied with the session's timeouts; entry: the
 * operation answers an entry (lookup, mknod, ...), else attributes. Refused attributes
 * (pyfuse_check_attr) get EIO and a logged error that names the request: op of inode ino, or
 * op 'name' in inode ino; so do timeouts in out that are not finite numbers >= 0 (a foreign
 * entry's, packed as the handler gave them: Session._foreign). */
static void answer(fuse_req_t req, int64_t res, int entry, const char *op, uint64_t ino,
                   const char *name)
{
    const struct pyfuse_out *o = pyfuse_out_here();
    const struct pyfuse_config *cfg;
    /* the Attr at the address returned (held by the session), or the struct's */
    const struct pyfuse_attr *a =
        res >= PYFUSE_REPLY_AT ? (const struct pyfuse_attr *)(uintptr_t)res : &o->attr;
    int attr_only = !entry;
    int own = res == PYFUSE_REPLY_ATTR_OUT || res == PYFUSE_REPLY_ENTRY_OUT;
    const char *tname;
    int bad;

    if (res <= 0) { /* (0: req may be gone already) */
        done(req, (int)res);
        return;
    }
    cfg = &pyfuse_ll_of(req)->cfg;
    bad = pyfuse_check_attr(a, !attr_only);
    /* out's timeouts, if it has them and the reply uses them (not checked before: a foreign
     * entry's) */
    tname = !own ? NULL
            : !timeout_ok(o->attr_timeout) ? "attr_timeout"
            : !attr_only && !timeout_ok(o->entry_timeout) ? "entry_timeout" : NULL;
    if (bad == 0 && tname != NULL) {
        char msg[320];
        int n = where(msg, sizeof msg, op, ino, name);

        fuse_reply_err(req, EIO);
        snprintf(msg + n, sizeof msg - (size_t)n,
                 "the entry returned has %s=%g: timeouts are finite numbers of seconds >= 0",
                 tname, tname[0] == 'a' ? o->attr_timeout : o->entry_timeout);
        pyfuse_cb_log(PYFUSE_LOG_SHIM + 3, msg);
    } else if (bad != 0) {
        char msg[320];
        int n = where(msg, sizeof msg, op, ino, name);

        fuse_reply_err(req, EIO);
        pyfuse_refusal(msg + n, sizeof msg - (size_t)n, a, bad,
                       attr_only ? "the attributes returned" : "the entry returned");
        pyfuse_cb_log(PYFUSE_LOG_SHIM + 3, msg);
    } else if (attr_only) {
        struct stat st;

        pyfuse_attr_to_stat(a, &st);
        fuse_reply_attr(req, &st, own ? o->attr_timeout : cfg->attr_timeout);
    } else {
        struct fuse_entry_param e;

        pyfuse_ll_entry_param(&e, a, own ? o->generation : 0,
                              own ? o->entry_timeout : cfg->entry_timeout,
                              own ? o->attr_timeout : cfg->attr_timeout);
        pyfuse_ll_send_entry(pyfuse_ll_of(req), req, &e);
    }
}

/* Names longer than local filesystems allow get ENAMETOOLONG without Python (as on tmpfs). */
static int too_long(fuse_req_t req, const char *name)
{
    if (strlen(name) <= 255)
        return 0;
    fuse_reply_err(req, ENAMETOOLONG);
    return 1;
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
    struct pyfuse_session *s = userdata;

    pyfuse_apply_conn(conn, &s->cfg);
    pyfuse_io_expect_init(s, conn);
    /* no OPEN (OPENDIR) at all for a filesystem that has no open (no opendir or releasedir):
     * the kernel takes ENOSYS for success from then on, and keeps the pages (the listings) of
     * such files (directories) cached: FOPEN_KEEP_CACHE (| FOPEN_CACHE_DIR) */
    s->no_open = s->cfg.no_open && !PYFUSE_HAS(s, PYFUSE_LL_OP_OPEN) &&
                 (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
    s->no_opendir = s->cfg.no_open && !PYFUSE_HAS(s, PYFUSE_LL_OP_OPENDIR) &&
                    !PYFUSE_HAS(s, PYFUSE_LL_OP_RELEASEDIR) &&
                    (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT);
    if (PYFUSE_HAS(s, PYFUSE_LL_OP_INIT))
        pyfuse_ll_cb_init(s->handle); /* a failing init() is logged by Python */
}

static void ll_destroy(void *userdata)
{
    struct pyfuse_session *s = userdata;

    if (PYFUSE_HAS(s, PYFUSE_LL_OP_DESTROY))
        pyfuse_ll_cb_destroy(s->handle);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    size_t len = strlen(name);
    int64_t res;

    if (len > 255) { /* as too_long(), without a second strlen */
        fuse_reply_err(req, ENAMETOOLONG);
        return;
    }
    memcpy(pyfuse_out_here()->name, name, len);
    res = CB_OUT(req, LOOKUP, pyfuse_ll_cb_lookup, parent, len);
    if (res < 0)
        pyfuse_ll_fail_lookup(pyfuse_req_of(req), (int)-res);
    else
        answer(req, res, 1, "lookup", parent, name);
}

/* The kernel dropped lookups: pyfuse's counts first, then the filesystem's forget (one call
 * into Python for the whole batch). */
static void forget_all(fuse_req_t req, struct fuse_forget_data *f, size_t count)
{
    struct pyfuse_session *s = pyfuse_ll_of(req);

    __atomic_fetch_add(&s->lookups.forget_requests, 1, __ATOMIC_RELAXED);
    for (size_t i = 0; i < count; i++) {
        uint64_t held;

        if (pyfuse_lookups_drop(&s->lookups, f[i].ino, f[i].nlookup, &held) != 0) {
            char msg[200];

            snprintf(msg, sizeof msg, "forget of inode %llu: the kernel dropped %llu lookups, "
                     "pyfuse counted %llu", (unsigned long long)f[i].ino,
                     (unsigned long long)f[i].nlookup, (unsigned long long)held);
            pyfuse_cb_log(PYFUSE_LOG_SHIM + 3, msg);
        }
    }
    if (PYFUSE_HAS(s, PYFUSE_LL_OP_FORGET))
        (void)CB(req, FORGET, pyfuse_ll_cb_forget, (const struct pyfuse_forget *)f, count);
    fuse_reply_none(req);
}

_Static_assert(sizeof(struct pyfuse_forget) == sizeof(struct fuse_forget_data) &&
               offsetof(struct fuse_forget_data, nlookup) ==
               offsetof(struct pyfuse_forget, nlookup), "struct pyfuse_forget's layout");

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
    struct fuse_forget_data f = { .ino = ino, .nlookup = nlookup };

    forget_all(req, &f, 1);
}

static void ll_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
    forget_all(req, forgets, count);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    /* a stat crosses with three integers, an fstat with its handle too (fgetattr) */
    int64_t res = fi != NULL ? CB_OUT(req, GETATTR, pyfuse_ll_cb_fgetattr, ino, FHR(fi))
                             : CB_OUT(req, GETATTR, pyfuse_ll_cb_getattr, ino);

    answer(req, res, 0, "getattr", ino, NULL);
}

void pyfuse_stat_to_attr(const struct stat *st, struct pyfuse_attr *a)
{
    a->mode = st->st_mode;
    a->ino = st->st_ino;
    a->nlink = st->st_nlink;
    a->uid = st->st_uid;
    a->gid = st->st_gid;
    a->size = st->st_size;
    a->blocks = st->st_blocks;
    a->rdev = st->st_rdev;
    a->blksize = st->st_blksize;
    a->atime_ns = (int64_t)st->st_atim.tv_sec * 1000000000 + st->st_atim.tv_nsec;
    a->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    a->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                       struct fuse_file_info *fi)
{
    struct pyfuse_attr a;

    pyfuse_stat_to_attr(attr, &a);
    answer(req, CB_OUT(req, SETATTR, pyfuse_ll_cb_setattr, ino, &a, to_set, FHA(fi)), 0,
           "setattr", ino, NULL);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
    done(req, CB(req, READLINK, pyfuse_ll_cb_readlink, ino));
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                     dev_t rdev)
{
    if (!too_long(req, name))
        answer(req, CB_OUT(req, MKNOD, pyfuse_ll_cb_mknod, parent, name, mode, rdev), 1,
               "mknod", parent, name);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
    if (!too_long(req, name))
        answer(req, CB_OUT(req, MKDIR, pyfuse_ll_cb_mkdir, parent, name, mode), 1, "mkdir",
               parent, name);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    done(req, CB(req, UNLINK, pyfuse_ll_cb_unlink, parent, name));
}

static void ll_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    done(req, CB(req, RMDIR, pyfuse_ll_cb_rmdir, parent, name));
}

static void ll_symlink(fuse_req_t req, const char *target, fuse_ino_t parent, const char *name)
{
    if (!too_long(req, name))
        answer(req, CB_OUT(req, SYMLINK, pyfuse_ll_cb_symlink, target, parent, name), 1,
               "symlink", parent, name);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                      const char *newname, unsigned int flags)
{
    if (!too_long(req, newname))
        done(req, CB(req, RENAME, pyfuse_ll_cb_rename, parent, name, newparent, newname, flags));
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
    if (!too_long(req, newname))
        answer(req, CB_OUT(req, LINK, pyfuse_ll_cb_link, ino, newparent, newname), 1,
               "link", newparent, newname);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_ll_of(req);
    int res;

    if (!PYFUSE_HAS(s, PYFUSE_LL_OP_OPEN)) { /* no open(): not asked again, or as libfuse */
        if (s->no_open) {
            fuse_reply_err(req, ENOSYS);
        } else {
            fi->fh = 0;
            fuse_reply_open(req, fi);
        }
        return;
    }
    res = CB_OUT(req, OPEN, pyfuse_ll_cb_open, ino, fi->flags);
    if (res == PYFUSE_REPLY_OPEN) {
        const struct pyfuse_out *o = pyfuse_out_here();

        pyfuse_ll_reply_open(pyfuse_req_of(req), o->fh, (int)o->open_bits);
    } else {
        done(req, res);
    }
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_ll_of(req);
    int res;

    if (pyfuse_fh_is_fd(s, fi)) { /* FileInfo(fd_backed=True): served from the fd */
        pyfuse_ll_reply_fd(pyfuse_req_of(req), (int)pyfuse_fh(s, fi), off, size);
        return;
    }
    if (!PYFUSE_HAS(s, PYFUSE_LL_OP_READ)) {
        fuse_reply_err(req, ENOSYS);
        return;
    }
    res = CB(req, READ, pyfuse_ll_cb_read, pyfuse_out_slot(s), ino, size, off, FHR(fi));
    if (res >= PYFUSE_REPLY_COUNT) /* an answer small enough for the out struct's name */
        fuse_reply_buf(req, pyfuse_out_here()->name, (size_t)(res - PYFUSE_REPLY_COUNT));
    else
        done(req, res);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
    if (pyfuse_fh_is_fd(pyfuse_ll_of(req), fi)) {
        ssize_t n = pwrite((int)FHR(fi), buf, size, off);

        if (n < 0)
            fuse_reply_err(req, errno);
        else
            fuse_reply_write(req, (size_t)n);
        return;
    }
    if (!PYFUSE_HAS(pyfuse_ll_of(req), PYFUSE_LL_OP_WRITE)) {
        fuse_reply_err(req, ENOSYS);
        return;
    }
    if (size > PYFUSE_DATA_MAX) { /* the kernel's are at most max_write (MiBs): never here */
        fuse_reply_err(req, EINVAL);
        return;
    }
    done(req, CB(req, WRITE, pyfuse_ll_cb_write, ino, buf, size, off, FHR(fi)));
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    done(req, CB(req, FLUSH, pyfuse_ll_cb_flush, ino, FHR(fi)));
}

static void ll_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    done(req, CB(req, RELEASE, pyfuse_ll_cb_release, ino, FHR(fi), fi->flags));
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    done(req, CB(req, FSYNC, pyfuse_ll_cb_fsync, ino, datasync, FHR(fi)));
}

static struct pyfuse_dir *dir_of(struct fuse_file_info *fi)
{
    return (struct pyfuse_dir *)(uintptr_t)fi->fh;
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct pyfuse_dir *d;
    int res;

    if (pyfuse_ll_of(req)->no_opendir) { /* READDIR then comes without a handle */
        fuse_reply_err(req, ENOSYS);
        return;
    }
    d = calloc(1, sizeof *d); /* one per opendir, never per entry */
    if (d == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    d->eof_off = -1;
    if (!PYFUSE_HAS(pyfuse_ll_of(req), PYFUSE_LL_OP_OPENDIR)) {
        pyfuse_ll_reply_opendir(pyfuse_req_of(req), d, 0);
        return;
    }
    res = CB(req, OPENDIR, pyfuse_ll_cb_opendir, ino, fi->flags, d);
    if (res < 0)
        pyfuse_ll_fail_opendir(pyfuse_req_of(req), d, -res);
}

static void readdir_any(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        struct fuse_file_info *fi, int plus)
{
    struct pyfuse_dir *d = dir_of(fi);
    struct pyfuse_fill *f;
    int res;

    /* A listing that already ended at this offset: EOF without Python (as readdir.c). */
    if (d != NULL && d->eof_off > 0 && off == d->eof_off) {
        fuse_reply_buf(req, NULL, 0);
        return;
    }
    f = pyfuse_ll_fill_new(req, size, plus);
    if (f == NULL) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    if (d == NULL) { /* no OPENDIR (no-opendir mode): this request's own state */
        d = calloc(1, sizeof *d);
        if (d == NULL) {
            pyfuse_ll_fail_dir(f, ENOMEM);
            return;
        }
        d->eof_off = -1;
        d->handleless = 1;
        pyfuse_ll_fill_own_dir(f, d); /* freed with the reply, whenever it is sent */
    }
    res = CB_OP(req, plus ? PYFUSE_LL_OP_READDIRPLUS : PYFUSE_LL_OP_READDIR, pyfuse_ll_cb_readdir,
                ino, off, d, f, plus);
    if (res < 0)
        pyfuse_ll_fail_dir(f, -res);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    readdir_any(req, ino, size, off, fi, 0);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    readdir_any(req, ino, size, off, fi, 1);
}

static void ll_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_ll_of(req);
    struct pyfuse_dir *d = dir_of(fi);
    int res = 0;

    /* Python when there is something to do: a kept stream to close or a user releasedir
     * (which replies itself); d is freed here, after Python has read it. */
    if (d->key != 0 || PYFUSE_HAS(s, PYFUSE_LL_OP_RELEASEDIR))
        res = CB(req, RELEASEDIR, pyfuse_ll_cb_releasedir, ino, d);
    if (!PYFUSE_HAS(s, PYFUSE_LL_OP_RELEASEDIR) || res < 0)
        fuse_reply_err(req, res < 0 ? -res : 0);
    free(d);
}

static void ll_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
    struct pyfuse_dir *d = dir_of(fi); /* NULL without OPENDIR */

    done(req, CB(req, FSYNCDIR, pyfuse_ll_cb_fsyncdir, ino, datasync, d != NULL ? d->fh : 0));
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
    done(req, CB(req, STATFS, pyfuse_ll_cb_statfs, ino));
}

static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                        size_t size, int flags)
{
    done(req, CB(req, SETXATTR, pyfuse_ll_cb_setxattr, ino, name, value, size, flags));
}

static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
    done(req, CB(req, GETXATTR, pyfuse_ll_cb_getxattr, ino, name, size));
}

static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
    done(req, CB(req, LISTXATTR, pyfuse_ll_cb_listxattr, ino, size));
}

static void ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
    done(req, CB(req, REMOVEXATTR, pyfuse_ll_cb_removexattr, ino, name));
}

static void ll_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
    done(req, CB(req, ACCESS, pyfuse_ll_cb_access, ino, mask));
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                      struct fuse_file_info *fi)
{
    if (!too_long(req, name))
        done(req, CB(req, CREATE, pyfuse_ll_cb_create, parent, name, mode, fi->flags));
}

static void lock_of(const struct flock *l, struct pyfuse_flock *out)
{
    out->type = l->l_type;
    out->whence = l->l_whence;
    out->start = l->l_start;
    out->len = l->l_len;
    out->pid = l->l_pid;
}

static void ll_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                     struct flock *lock)
{
    struct pyfuse_flock l;

    lock_of(lock, &l);
    done(req, CB(req, GETLK, pyfuse_ll_cb_getlk, ino, FHR(fi), &l));
}

static void ll_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                     struct flock *lock, int sleep)
{
    struct pyfuse_flock l;

    lock_of(lock, &l);
    done(req, CB(req, SETLK, pyfuse_ll_cb_setlk, ino, FHR(fi), &l, sleep));
}

static void ll_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
    done(req, CB(req, FLOCK, pyfuse_ll_cb_flock, ino, FHR(fi), op));
}

static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t length,
                         struct fuse_file_info *fi)
{
    done(req, CB(req, FALLOCATE, pyfuse_ll_cb_fallocate, ino, mode, off, length, FHR(fi)));
}

static void ll_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
                               struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
                               struct fuse_file_info *fi_out, size_t len, int flags)
{
    done(req, CB(req, COPY_FILE_RANGE, pyfuse_ll_cb_copy_file_range, ino_in, off_in,
                 FHR(fi_in), ino_out, off_out, FHR(fi_out), len, flags));
}

static void ll_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
                     struct fuse_file_info *fi)
{
    done(req, CB(req, LSEEK, pyfuse_ll_cb_lseek, ino, off, whence, FHR(fi)));
}

static void ll_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
                     struct fuse_file_info *fi, unsigned flags, const void *in_buf,
                     size_t in_bufsz, size_t out_bufsz)
{
    uint64_t fh = (flags & FUSE_IOCTL_DIR) ? dir_of(fi)->fh : FHR(fi);

    done(req, CB(req, IOCTL, pyfuse_ll_cb_ioctl, ino, cmd, (uint64_t)(uintptr_t)arg, fh, flags,
                 (const char *)in_buf, in_bufsz, out_bufsz));
}

static void ll_poll(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
                    struct fuse_pollhandle *ph)
{
    done(req, CB(req, POLL, pyfuse_ll_cb_poll, ino, FHR(fi), (void *)ph));
}

/* When a row of ll_optable.h fills its member, for the mask m of overridden operations. */
#define LL_DIR_OPMASK ((1ull << PYFUSE_LL_OP_READDIR) | (1ull << PYFUSE_LL_OP_OPENDIR) | \
                       (1ull << PYFUSE_LL_OP_RELEASEDIR) | (1ull << PYFUSE_LL_OP_FSYNCDIR))
#define LL_WHEN_OWN(m, op) (((m) >> (op)) & 1u)
#define LL_WHEN_ALWAYS(m, op) 1
#define LL_WHEN_DIRS(m, op) (((m) & LL_DIR_OPMASK) != 0)
#define LL_WHEN_READDIR(m, op) (((m) >> PYFUSE_LL_OP_READDIR) & 1u)

void pyfuse_ll_fill_ops(struct fuse_lowlevel_ops *o, uint64_t m)
{
#define REGISTER(NAME, member, trampoline, when) \
    if (LL_WHEN_##when(m, PYFUSE_LL_OP_##NAME))  \
        o->member = trampoline;
    memset(o, 0, sizeof *o);
    PYFUSE_LL_OPS(REGISTER)
#undef REGISTER
}

int pyfuse_ll_ops_filled(uint64_t opmask)
{
    struct fuse_lowlevel_ops o;
    void (*fn)(void);
    int n = 0;

    pyfuse_ll_fill_ops(&o, opmask);
    for (size_t at = 0; at + sizeof fn <= sizeof o; at += sizeof fn) {
        memcpy(&fn, (const char *)&o + at, sizeof fn);
        n += fn != NULL;
    }
    return n;
}
