/* The fuse_operations table and one trampoline per operation: each finds the session serving the
 * request, converts libfuse's arguments to the compact forms of pyfuse_cdef.h and makes exactly
 * one call into Python. Only operations the filesystem overrides are put in the table. */
#include "pyfuse.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#define CB(OP, fn, ...) PYFUSE_CALL(pyfuse_current(), OP, fn, __VA_ARGS__)
/* an open file's handle as the filesystem gave it; FH: it and whether there is one */
#define FHV(fi) pyfuse_fh(pyfuse_current(), (fi))
#define FH(fi) ((fi) ? FHV(fi) : 0), ((fi) != NULL)

static void split_timespec(int64_t ns, struct timespec *ts)
{
    int64_t sec, nsec;

    pyfuse_split_ns(ns, &sec, &nsec);
    ts->tv_sec = (time_t)sec;
    ts->tv_nsec = (long)nsec;
}

void pyfuse_attr_to_stat(const struct pyfuse_attr *a, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_mode = (mode_t)a->mode;
    st->st_ino = (ino_t)a->ino;
    st->st_nlink = (nlink_t)a->nlink;
    st->st_uid = (uid_t)a->uid;
    st->st_gid = (gid_t)a->gid;
    st->st_size = (off_t)a->size;
    st->st_blocks = (blkcnt_t)a->blocks;
    st->st_rdev = (dev_t)a->rdev;
    st->st_blksize = (blksize_t)a->blksize;
    split_timespec(a->atime_ns, &st->st_atim);
    split_timespec(a->mtime_ns, &st->st_mtim);
    split_timespec(a->ctime_ns, &st->st_ctim);
}

/* Ask for (on = 1) or decline (0) a capability the kernel and libfuse offer; -1: the default. */
static void want(struct fuse_conn_info *conn, unsigned cap, int on)
{
    if (on == 1 && (conn->capable & cap))
        conn->want |= cap;
    else if (on == 0)
        conn->want &= ~cap;
}

/* The connection part of the Config, shared by both APIs' init. */
void pyfuse_apply_conn(struct fuse_conn_info *conn, const struct pyfuse_config *c)
{
    if (c->max_write)
        conn->max_write = c->max_write;
    if (c->max_read) /* must equal the mount option, which Session adds */
        conn->max_read = c->max_read;
    if (c->max_readahead)
        conn->max_readahead = c->max_readahead;
    if (c->max_background)
        conn->max_background = c->max_background;
    want(conn, FUSE_CAP_SPLICE_READ, c->splice_read);
    want(conn, FUSE_CAP_SPLICE_WRITE, c->splice_write);
    want(conn, FUSE_CAP_SPLICE_MOVE, c->splice_move);
    if (c->readdirplus == PYFUSE_RDPLUS_OFF) {
        want(conn, FUSE_CAP_READDIRPLUS, 0);
        want(conn, FUSE_CAP_READDIRPLUS_AUTO, 0);
    } else if (c->readdirplus == PYFUSE_RDPLUS_ALWAYS) {
        want(conn, FUSE_CAP_READDIRPLUS, 1);
        want(conn, FUSE_CAP_READDIRPLUS_AUTO, 0); /* without AUTO the kernel always sends plus */
    }
    if (c->writeback_cache)
        want(conn, FUSE_CAP_WRITEBACK_CACHE, 1);
    if (c->posix_acl)
        want(conn, FUSE_CAP_POSIX_ACL, 1);
    want(conn, FUSE_CAP_ATOMIC_O_TRUNC, c->atomic_o_trunc);
    want(conn, FUSE_CAP_AUTO_INVAL_DATA, c->auto_inval_data);
    want(conn, FUSE_CAP_ASYNC_DIO, c->async_dio);
    want(conn, FUSE_CAP_PARALLEL_DIROPS, c->parallel_dirops);
    want(conn, FUSE_CAP_HANDLE_KILLPRIV, c->handle_killpriv);
    want(conn, FUSE_CAP_IOCTL_DIR, c->ioctl_dir);
    want(conn, FUSE_CAP_EXPORT_SUPPORT, c->export_support);
    if (c->cache_symlinks)
        want(conn, FUSE_CAP_CACHE_SYMLINKS, 1);
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    struct pyfuse_session *s = pyfuse_current();
    const struct pyfuse_config *c = &s->cfg;

    pyfuse_apply_conn(conn, c);
    pyfuse_io_expect_init(s, conn);
    cfg->entry_timeout = c->entry_timeout;
    cfg->attr_timeout = c->attr_timeout;
    cfg->negative_timeout = c->negative_timeout;
    cfg->use_ino = c->use_ino;
    cfg->readdir_ino = c->readdir_ino;
    cfg->hard_remove = c->hard_remove;
    cfg->nullpath_ok = c->nullpath_ok;
    cfg->direct_io = c->direct_io;
    cfg->kernel_cache = c->kernel_cache;
    cfg->auto_cache = c->auto_cache;
    cfg->set_uid = c->set_uid;
    cfg->uid = (unsigned int)c->uid;
    cfg->set_gid = c->set_gid;
    cfg->gid = (unsigned int)c->gid;
    cfg->set_mode = c->set_mode;
    cfg->umask = (unsigned int)c->umask;
    cfg->intr = c->intr;
    if (PYFUSE_HAS(s, PYFUSE_OP_INIT))
        pyfuse_cb_init(s->handle); /* a failing init() is logged by Python; the mount goes on */
    return s;                      /* becomes fuse_get_context()->private_data */
}

static void op_destroy(void *private_data)
{
    struct pyfuse_session *s = private_data;

    if (PYFUSE_HAS(s, PYFUSE_OP_DESTROY))
        pyfuse_cb_destroy(s->handle);
}

/* The kernel allows FUSE names of up to 1024 bytes; local filesystems (and POSIX's NAME_MAX)
 * stop at 255. Every name is looked up (getattr) before it is created or used, so answering
 * ENAMETOOLONG here makes longer names fail as on tmpfs, without a call into Python. */
static int name_too_long(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;

    return slash != NULL && strlen(slash + 1) > 255;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_current();
    const struct pyfuse_out *o = pyfuse_out_here();
    const struct pyfuse_attr *a;
    unsigned int slot;
    int64_t pathlen, res;
    int bad;

    if (name_too_long(path))
        return -ENAMETOOLONG;
    slot = pyfuse_out_slot(s);
    pathlen = pyfuse_out_put_path(path);
    /* a stat crosses with three integers, an fstat with its handle too (fgetattr) */
    res = fi != NULL ? PYFUSE_CALL(s, GETATTR, pyfuse_cb_fgetattr, slot, pathlen, FHV(fi))
                     : PYFUSE_CALL(s, GETATTR, pyfuse_cb_getattr, slot, pathlen);
    if (res < 0)
        return (int)res;
    /* the Attr at the address returned (held by the session), or the struct's copy */
    a = res >= PYFUSE_REPLY_AT ? (const struct pyfuse_attr *)(uintptr_t)res : &o->attr;
    if ((bad = pyfuse_check_attr(a, 0)) != 0) {
        char msg[512];
        int n = snprintf(msg, sizeof msg, "getattr of %.300s: ", path ? path : "(unlinked file)");

        pyfuse_refusal(msg + n, sizeof msg - (size_t)n, a, bad, "the attributes returned");
        pyfuse_cb_log(PYFUSE_LOG_SHIM + 3, msg); /* 3: LOG_ERR */
        return -EIO;
    }
    pyfuse_attr_to_stat(a, st);
    return 0;
}

static int op_readlink(const char *path, char *buf, size_t size)
{
    return CB(READLINK, pyfuse_cb_readlink, path, buf, size);
}

static int op_mknod(const char *path, mode_t mode, dev_t rdev)
{
    return CB(MKNOD, pyfuse_cb_mknod, path, mode, rdev);
}

static int op_mkdir(const char *path, mode_t mode)
{
    return CB(MKDIR, pyfuse_cb_mkdir, path, mode);
}

static int op_unlink(const char *path)
{
    return CB(UNLINK, pyfuse_cb_unlink, path);
}

static int op_rmdir(const char *path)
{
    return CB(RMDIR, pyfuse_cb_rmdir, path);
}

static int op_symlink(const char *target, const char *path)
{
    return CB(SYMLINK, pyfuse_cb_symlink, target, path);
}

static int op_rename(const char *old, const char *new, unsigned int flags)
{
    return CB(RENAME, pyfuse_cb_rename, old, new, flags);
}

static int op_link(const char *old, const char *new)
{
    return CB(LINK, pyfuse_cb_link, old, new);
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    return CB(CHMOD, pyfuse_cb_chmod, path, mode, FH(fi));
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    /* (uid_t)-1 means "leave unchanged"; Python sees -1. */
    return CB(CHOWN, pyfuse_cb_chown, path, uid == (uid_t)-1 ? -1 : (int64_t)uid,
                           gid == (gid_t)-1 ? -1 : (int64_t)gid, FH(fi));
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
    return CB(TRUNCATE, pyfuse_cb_truncate, path, size, FH(fi));
}

static void open_out(struct fuse_file_info *fi, const struct pyfuse_open *o)
{
    fi->fh = o->fh | (o->fd_backed ? PYFUSE_FH_FD : 0);
    if (o->direct_io)
        fi->direct_io = 1;
    if (o->keep_cache)
        fi->keep_cache = 1;
    if (o->nonseekable)
        fi->nonseekable = 1;
}

static int op_open(const char *path, struct fuse_file_info *fi)
{
    struct pyfuse_open o = { .flags = fi->flags };
    int res = CB(OPEN, pyfuse_cb_open, path, &o);

    if (res == 0)
        open_out(fi, &o);
    return res;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct pyfuse_open o = { .flags = fi->flags };
    int res = CB(CREATE, pyfuse_cb_create, path, mode, &o);

    if (res == 0)
        open_out(fi, &o);
    return res;
}

static int op_statfs(const char *path, struct statvfs *out)
{
    struct pyfuse_statvfs v;
    int res = CB(STATFS, pyfuse_cb_statfs, path, &v);

    if (res == 0) {
        memset(out, 0, sizeof *out);
        out->f_bsize = v.bsize;
        out->f_frsize = v.frsize;
        out->f_blocks = v.blocks;
        out->f_bfree = v.bfree;
        out->f_bavail = v.bavail;
        out->f_files = v.files;
        out->f_ffree = v.ffree;
        out->f_favail = v.favail;
        out->f_fsid = v.fsid;
        out->f_flag = v.flag;
        out->f_namemax = v.namemax;
    }
    return res;
}

static int op_flush(const char *path, struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_current();

    return PYFUSE_CALL(s, FLUSH, pyfuse_cb_flush, path, pyfuse_fh(s, fi));
}

static int op_release(const char *path, struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_current();

    return PYFUSE_CALL(s, RELEASE, pyfuse_cb_release, path, pyfuse_fh(s, fi), fi->flags);
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_current();

    return PYFUSE_CALL(s, FSYNC, pyfuse_cb_fsync, path, datasync, pyfuse_fh(s, fi));
}

static int op_setxattr(const char *path, const char *name, const char *value, size_t size,
                       int flags)
{
    return CB(SETXATTR, pyfuse_cb_setxattr, path, name, value, size, flags);
}

static int op_getxattr(const char *path, const char *name, char *value, size_t size)
{
    return CB(GETXATTR, pyfuse_cb_getxattr, path, name, value, size);
}

static int op_listxattr(const char *path, char *list, size_t size)
{
    return CB(LISTXATTR, pyfuse_cb_listxattr, path, list, size);
}

static int op_removexattr(const char *path, const char *name)
{
    return CB(REMOVEXATTR, pyfuse_cb_removexattr, path, name);
}

static int op_access(const char *path, int mask)
{
    return CB(ACCESS, pyfuse_cb_access, path, mask);
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    int which = 0;
    int64_t ns[2] = { 0, 0 };

    for (int i = 0; i < 2; i++) {
        if (tv == NULL || tv[i].tv_nsec == UTIME_NOW)
            which |= i ? PYFUSE_MTIME_NOW : PYFUSE_ATIME_NOW;
        else if (tv[i].tv_nsec == UTIME_OMIT)
            which |= i ? PYFUSE_MTIME_OMIT : PYFUSE_ATIME_OMIT;
        else
            ns[i] = (int64_t)tv[i].tv_sec * 1000000000 + tv[i].tv_nsec;
    }
    return CB(UTIMENS, pyfuse_cb_utimens, path, ns[0], ns[1], which, FH(fi));
}

static int op_lock(const char *path, struct fuse_file_info *fi, int cmd, struct flock *lk)
{
    struct pyfuse_flock l = {
        .type = lk->l_type, .whence = lk->l_whence, .start = lk->l_start,
        .len = lk->l_len, .pid = lk->l_pid,
    };
    int res = CB(LOCK, pyfuse_cb_lock, path, FHV(fi), cmd, &l);

    if (res == 0) {
        lk->l_type = (short)l.type;
        lk->l_whence = (short)l.whence;
        lk->l_start = l.start;
        lk->l_len = l.len;
        lk->l_pid = (pid_t)l.pid;
    }
    return res;
}

static int op_flock(const char *path, struct fuse_file_info *fi, int op)
{
    return CB(FLOCK, pyfuse_cb_flock, path, FHV(fi), op);
}

static int op_fallocate(const char *path, int mode, off_t off, off_t len,
                        struct fuse_file_info *fi)
{
    return CB(FALLOCATE, pyfuse_cb_fallocate, path, mode, off, len, fi ? FHV(fi) : 0);
}

static ssize_t op_copy_file_range(const char *path_in, struct fuse_file_info *fi_in, off_t off_in,
                                  const char *path_out, struct fuse_file_info *fi_out,
                                  off_t off_out, size_t size, int flags)
{
    return CB(COPY_FILE_RANGE, pyfuse_cb_copy_file_range, path_in, FHV(fi_in), off_in,
              path_out, FHV(fi_out), off_out, size, flags);
}

static off_t op_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi)
{
    return CB(LSEEK, pyfuse_cb_lseek, path, off, whence, FHV(fi));
}

static int op_ioctl(const char *path, unsigned int cmd, void *arg, struct fuse_file_info *fi,
                    unsigned int flags, void *data)
{
    size_t size = _IOC_SIZE(cmd);
    size_t in_size = (_IOC_DIR(cmd) & _IOC_WRITE) ? size : 0;
    size_t out_size = (_IOC_DIR(cmd) & _IOC_READ) ? size : 0;
    uint64_t fh = FHV(fi);

    if ((flags & FUSE_IOCTL_DIR) && fh != 0) /* our opendir put a struct pyfuse_dir there */
        fh = ((struct pyfuse_dir *)(uintptr_t)fi->fh)->fh;
    return CB(IOCTL, pyfuse_cb_ioctl, path, cmd, (uint64_t)(uintptr_t)arg, fh, flags, data, in_size,
                           out_size);
}

static int op_poll(const char *path, struct fuse_file_info *fi, struct fuse_pollhandle *ph,
                   unsigned *reventsp)
{
    /* Python owns ph from here (a PollHandle, freed when collected) */
    return CB(POLL, pyfuse_cb_poll, path, FHV(fi), (void *)ph, reventsp);
}

/* When a row of optable.h fills its member, for the mask m of overridden operations. */
#define PYFUSE_DIR_OPMASK ((1ull << PYFUSE_OP_READDIR) | (1ull << PYFUSE_OP_OPENDIR) | \
                           (1ull << PYFUSE_OP_RELEASEDIR) | (1ull << PYFUSE_OP_FSYNCDIR))
#define WHEN_OWN(m, op) (((m) >> (op)) & 1u)
#define WHEN_ALWAYS(m, op) 1
#define WHEN_DIRS(m, op) (((m) & PYFUSE_DIR_OPMASK) != 0)

void pyfuse_fill_ops(struct fuse_operations *o, uint64_t m)
{
#define REGISTER(NAME, member, trampoline, when) \
    if (WHEN_##when(m, PYFUSE_OP_##NAME))        \
        o->member = trampoline;
    memset(o, 0, sizeof *o);
    PYFUSE_OPS(REGISTER)
#undef REGISTER
}

int pyfuse_ops_filled(uint64_t opmask)
{
    struct fuse_operations o;
    void (*fn)(void);
    int n = 0;

    pyfuse_fill_ops(&o, opmask);
    /* struct fuse_operations holds only function pointers */
    for (size_t at = 0; at + sizeof fn <= sizeof o; at += sizeof fn) {
        memcpy(&fn, (const char *)&o + at, sizeof fn);
        n += fn != NULL;
    }
    return n;
}
