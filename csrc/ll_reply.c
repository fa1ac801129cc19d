/* The inode API's replies (called from Python, now or later from the event loop of async
 * handlers; libfuse's fuse_reply_* may be called from any thread), the lookup counts, the
 * request context, interrupts and the notifications to the kernel. */
#include "pyfuse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REQ(r) ((fuse_req_t)(uintptr_t)(r))

/* ---- lookup counts ---------------------------------------------------------------------
 * Open addressing with linear probing; deletion shifts the following run back, so there are
 * no tombstones. The table doubles when 3/4 full: memory follows the inodes the kernel holds
 * (what its cache keeps), never a directory's size. */

int pyfuse_lookups_init(struct pyfuse_lookups *t)
{
    memset(t, 0, sizeof *t);
    t->cap = 1024;
    t->slots = calloc(t->cap, sizeof *t->slots);
    if (t->slots == NULL)
        return -ENOMEM;
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        free(t->slots);
        return -ENOMEM;
    }
    return 0;
}

void pyfuse_lookups_free(struct pyfuse_lookups *t)
{
    pthread_mutex_destroy(&t->lock);
    free(t->slots);
    t->slots = NULL;
}

static struct pyfuse_lookup_slot *find(struct pyfuse_lookups *t, uint64_t ino)
{
    size_t i = pyfuse_lookups_slot_of(ino, t->cap);

    while (t->slots[i].ino != 0 && t->slots[i].ino != ino)
        i = (i + 1) & (t->cap - 1);
    return &t->slots[i];
}

static int grow(struct pyfuse_lookups *t)
{
    size_t cap = t->cap * 2;
    struct pyfuse_lookup_slot *old = t->slots, *slots = calloc(cap, sizeof *slots);

    if (slots == NULL)
        return -ENOMEM;
    t->slots = slots;
    for (size_t i = 0; i < t->cap; i++) {
        if (old[i].ino != 0) {
            size_t j = pyfuse_lookups_slot_of(old[i].ino, cap);

            while (slots[j].ino != 0)
                j = (j + 1) & (cap - 1);
            slots[j] = old[i];
        }
    }
    t->cap = cap;
    free(old);
    return 0;
}

void pyfuse_lookups_add(struct pyfuse_lookups *t, uint64_t ino, uint64_t n, int locked)
{
    struct pyfuse_lookup_slot *sl;

    if (!locked)
        pthread_mutex_lock(&t->lock);
    if ((t->used + 1) * 4 > t->cap * 3 && grow(t) != 0) {
        /* out of memory: the count is lost; said once per failure */
        pyfuse_cb_log(PYFUSE_LOG_SHIM + 3, "lookup counts: out of memory");
    } else {
        sl = find(t, ino);
        if (sl->ino == 0) {
            sl->ino = ino;
            sl->n = 0;
            t->used++;
        }
        sl->n += n;
    }
    if (!locked)
        pthread_mutex_unlock(&t->lock);
}

static void delete_slot(struct pyfuse_lookups *t, struct pyfuse_lookup_slot *sl)
{
    size_t i = (size_t)(sl - t->slots), j = i;

    t->slots[i].ino = 0;
    t->used--;
    for (;;) { /* shift back the entries of the run that i was part of */
        size_t home;

        j = (j + 1) & (t->cap - 1);
        if (t->slots[j].ino == 0)
            return;
        home = pyfuse_lookups_slot_of(t->slots[j].ino, t->cap);
        /* move j to i unless its home lies cyclically in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            t->slots[i] = t->slots[j];
            t->slots[j].ino = 0;
            i = j;
        }
    }
}

int pyfuse_lookups_drop(struct pyfuse_lookups *t, uint64_t ino, uint64_t n, uint64_t *held)
{
    struct pyfuse_lookup_slot *sl;
    int res = 0;

    pthread_mutex_lock(&t->lock);
    sl = find(t, ino);
    *held = sl->ino == 0 ? 0 : sl->n;
    if (sl->ino == 0 || sl->n < n)
        res = -1;
    if (sl->ino != 0) {
        sl->n = sl->n > n ? sl->n - n : 0;
        if (sl->n == 0)
            delete_slot(t, sl);
    }
    pthread_mutex_unlock(&t->lock);
    return res;
}

uint64_t pyfuse_ll_lookups(pyfuse_session *s, uint64_t ino)
{
    struct pyfuse_lookup_slot *sl;
    uint64_t n;

    pthread_mutex_lock(&s->lookups.lock);
    sl = find(&s->lookups, ino);
    n = sl->ino == 0 ? 0 : sl->n;
    pthread_mutex_unlock(&s->lookups.lock);
    return n;
}

uint64_t pyfuse_ll_lookups_held(pyfuse_session *s, uint64_t *inodes)
{
    uint64_t total = 0;

    pthread_mutex_lock(&s->lookups.lock);
    for (size_t i = 0; i < s->lookups.cap; i++)
        if (s->lookups.slots[i].ino != 0)
            total += s->lookups.slots[i].n;
    *inodes = s->lookups.used;
    pthread_mutex_unlock(&s->lookups.lock);
    return total;
}

uint64_t pyfuse_ll_forget_requests(pyfuse_session *s)
{
    return __atomic_load_n(&s->lookups.forget_requests, __ATOMIC_RELAXED);
}

uint64_t pyfuse_ll_req_lookups(pyfuse_req req, uint64_t ino)
{
    if (req == 0)
        req = pyfuse_req_of(pyfuse_ll_current);
    return req != 0 ? pyfuse_ll_lookups(pyfuse_ll_of(REQ(req)), ino) : UINT64_MAX;
}

/* ---- replies ---------------------------------------------------------------------------- */

int pyfuse_ll_reply_err(pyfuse_req req, int err)
{
    return fuse_reply_err(REQ(req), err);
}

int pyfuse_check_attr(const struct pyfuse_attr *a, int entry)
{
    if (entry && a->ino == 0)
        return EINVAL;
    if (a->mode > UINT32_MAX || !pyfuse_valid_type(a->mode))
        return EBADMSG;
    if (a->nlink > UINT32_MAX || a->uid > UINT32_MAX || a->gid > UINT32_MAX)
        return ERANGE;
    return 0;
}

void pyfuse_refusal(char *buf, size_t size, const struct pyfuse_attr *a, int bad,
                       const char *what)
{
    if (bad == EINVAL)
        snprintf(buf, size, "%s has inode number 0 (an inode the kernel is given must have a "
                 "number); replied EIO", what);
    else if (bad == EBADMSG)
        snprintf(buf, size, "%s has mode 0o%llo, which has no valid file type (inode %llu); "
                 "replied EIO", what, (unsigned long long)a->mode, (unsigned long long)a->ino);
    else
        snprintf(buf, size, "%s has nlink %llu, uid %llu, gid %llu: beyond 32 bits (inode %llu); "
                 "replied EIO", what, (unsigned long long)a->nlink, (unsigned long long)a->uid,
                 (unsigned long long)a->gid, (unsigned long long)a->ino);
}

int pyfuse_ll_send_entry(struct pyfuse_session *s, fuse_req_t req,
                         const struct fuse_entry_param *e)
{
    int res;

    /* counted before the reply: a FORGET for it may arrive the moment the kernel has it */
    pyfuse_lookups_add(&s->lookups, e->ino, 1, 0);
    res = fuse_reply_entry(req, e);
    if (res != 0) { /* the kernel never got it */
        uint64_t held;

        pyfuse_lookups_drop(&s->lookups, e->ino, 1, &held);
    }
    return res;
}

void pyfuse_ll_entry_param(struct fuse_entry_param *e, const struct pyfuse_attr *a,
                           uint64_t generation, double entry_timeout, double attr_timeout)
{
    memset(e, 0, sizeof *e);
    e->ino = a->ino;
    e->generation = generation;
    e->entry_timeout = entry_timeout;
    e->attr_timeout = attr_timeout;
    pyfuse_attr_to_stat(a, &e->attr);
}

/* Check a packed attribute and make it an entry; 0, or -errno having replied EIO. */
static int entry_of(fuse_req_t req, const char *attr, uint64_t generation, double et,
                    double at, struct fuse_entry_param *e)
{
    struct pyfuse_attr a;
    int bad;

    memcpy(&a, attr, sizeof a);
    bad = pyfuse_check_attr(&a, 1);
    if (bad != 0) {
        fuse_reply_err(req, EIO);
        return -bad;
    }
    pyfuse_ll_entry_param(e, &a, generation, et, at);
    return 0;
}

int pyfuse_ll_reply_entry(pyfuse_req req, const char *attr, uint64_t generation,
                          double entry_timeout, double attr_timeout)
{
    struct pyfuse_session *s = pyfuse_ll_of(REQ(req));
    struct fuse_entry_param e;
    int res = entry_of(REQ(req), attr, generation, entry_timeout, attr_timeout, &e);

    if (res != 0)
        return res;
    return pyfuse_ll_send_entry(s, REQ(req), &e);
}

static void open_of(struct fuse_file_info *fi, uint64_t fh, int bits)
{
    memset(fi, 0, sizeof *fi);
    fi->fh = fh | ((bits & PYFUSE_OPEN_FD_BACKED) ? PYFUSE_FH_FD : 0);
    fi->direct_io = (bits & PYFUSE_OPEN_DIRECT_IO) != 0;
    fi->keep_cache = (bits & PYFUSE_OPEN_KEEP_CACHE) != 0;
    fi->nonseekable = (bits & PYFUSE_OPEN_NONSEEKABLE) != 0;
    fi->cache_readdir = (bits & PYFUSE_OPEN_CACHE_DIR) != 0;
}

int pyfuse_ll_reply_create(pyfuse_req req, const char *attr, uint64_t generation,
                           double entry_timeout, double attr_timeout, uint64_t fh, int bits)
{
    struct pyfuse_session *s = pyfuse_ll_of(REQ(req));
    struct fuse_entry_param e;
    struct fuse_file_info fi;
    int res = entry_of(REQ(req), attr, generation, entry_timeout, attr_timeout, &e);

    if (res != 0)
        return res;
    open_of(&fi, fh, bits);
    pyfuse_lookups_add(&s->lookups, e.ino, 1, 0);
    res = fuse_reply_create(REQ(req), &e, &fi);
    if (res != 0) {
        uint64_t held;

        pyfuse_lookups_drop(&s->lookups, e.ino, 1, &held);
    }
    return res;
}

int pyfuse_ll_fail_lookup(pyfuse_req req, int err)
{
    struct pyfuse_session *s = pyfuse_ll_of(REQ(req));

    if (err == ENOENT && s->cfg.negative_timeout > 0) {
        struct fuse_entry_param e;

        memset(&e, 0, sizeof e); /* ino 0: a negative entry, cached for entry_timeout */
        e.entry_timeout = s->cfg.negative_timeout;
        return fuse_reply_entry(REQ(req), &e);
    }
    return fuse_reply_err(REQ(req), err);
}

int pyfuse_ll_reply_attr(pyfuse_req req, const char *attr, double attr_timeout)
{
    struct pyfuse_attr a;
    struct stat st;
    int bad;

    memcpy(&a, attr, sizeof a);
    bad = pyfuse_check_attr(&a, 0);
    if (bad != 0) {
        fuse_reply_err(REQ(req), EIO);
        return -bad;
    }
    pyfuse_attr_to_stat(&a, &st);
    return fuse_reply_attr(REQ(req), &st, attr_timeout);
}

int pyfuse_ll_reply_open(pyfuse_req req, uint64_t fh, int bits)
{
    struct fuse_file_info fi;

    open_of(&fi, fh, bits);
    return fuse_reply_open(REQ(req), &fi);
}

int pyfuse_ll_reply_buf(pyfuse_req req, const char *data, size_t size)
{
    return fuse_reply_buf(REQ(req), data, size);
}

int pyfuse_ll_reply_fd(pyfuse_req req, int fd, int64_t pos, size_t size)
{
    struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);

    bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
    bv.buf[0].fd = fd;
    bv.buf[0].pos = pos;
    /* libfuse reads what it can (a short read at EOF) and replies; its own errors too */
    return fuse_reply_data(REQ(req), &bv, FUSE_BUF_SPLICE_MOVE);
}

int pyfuse_ll_reply_write(pyfuse_req req, size_t count)
{
    return fuse_reply_write(REQ(req), count);
}

int pyfuse_ll_reply_readlink(pyfuse_req req, const char *target)
{
    return fuse_reply_readlink(REQ(req), target);
}

int pyfuse_ll_reply_statfs(pyfuse_req req, const char *packed)
{
    struct pyfuse_statvfs v;
    struct statvfs out;

    memcpy(&v, packed, sizeof v);
    memset(&out, 0, sizeof out);
    out.f_bsize = v.bsize;
    out.f_frsize = v.frsize;
    out.f_blocks = v.blocks;
    out.f_bfree = v.bfree;
    out.f_bavail = v.bavail;
    out.f_files = v.files;
    out.f_ffree = v.ffree;
    out.f_favail = v.favail;
    out.f_fsid = v.fsid;
    out.f_flag = v.flag;
    out.f_namemax = v.namemax;
    return fuse_reply_statfs(REQ(req), &out);
}

int pyfuse_ll_reply_xattr(pyfuse_req req, size_t size)
{
    return fuse_reply_xattr(REQ(req), size);
}

int pyfuse_ll_reply_lock(pyfuse_req req, int type, int whence, int64_t start, int64_t len,
                         int64_t pid)
{
    struct flock l;

    memset(&l, 0, sizeof l);
    l.l_type = (short)type;
    l.l_whence = (short)whence;
    l.l_start = start;
    l.l_len = len;
    l.l_pid = (pid_t)pid;
    return fuse_reply_lock(REQ(req), &l);
}

int pyfuse_ll_reply_lseek(pyfuse_req req, int64_t off)
{
    return fuse_reply_lseek(REQ(req), off);
}

int pyfuse_ll_reply_ioctl(pyfuse_req req, int result, const char *buf, size_t size)
{
    return fuse_reply_ioctl(REQ(req), result, size ? buf : NULL, size);
}

int pyfuse_ll_reply_poll(pyfuse_req req, unsigned int revents)
{
    return fuse_reply_poll(REQ(req), revents);
}

int pyfuse_ll_reply_opendir(pyfuse_req req, struct pyfuse_dir *d, int bits)
{
    struct fuse_file_info fi;
    int res;

    open_of(&fi, (uint64_t)(uintptr_t)d, bits & ~PYFUSE_OPEN_FD_BACKED);
    res = fuse_reply_open(REQ(req), &fi);
    if (res != 0) /* the kernel never got the handle: no releasedir will come */
        free(d);
    return res;
}

int pyfuse_ll_fail_opendir(pyfuse_req req, struct pyfuse_dir *d, int err)
{
    free(d);
    return fuse_reply_err(REQ(req), err);
}

/* ---- the request, its caller, interrupts ---------------------------------------------- */

/* This thread serves a path API request (libfuse's context of it is set). */
static int in_path_request(void)
{
    struct fuse_context *c;

    if (!pyfuse_in_callback || pyfuse_ll_current != NULL)
        return 0;
    c = fuse_get_context();
    return c != NULL && c->fuse != NULL;
}

pyfuse_req pyfuse_current_req(void)
{
    return pyfuse_req_of(pyfuse_ll_current);
}

int pyfuse_in_request(void)
{
    return pyfuse_in_callback > 0;
}

int pyfuse_req_context(pyfuse_req req, struct pyfuse_ctx *out)
{
    const struct fuse_ctx *c;

    if (req == 0)
        req = pyfuse_req_of(pyfuse_ll_current);
    if (req == 0)
        return pyfuse_get_context(out);
    c = fuse_req_ctx(REQ(req));
    out->uid = c->uid;
    out->gid = c->gid;
    out->pid = c->pid;
    out->umask = c->umask;
    return 0;
}

int pyfuse_interrupted(pyfuse_req req)
{
    if (req == 0)
        req = pyfuse_req_of(pyfuse_ll_current);
    if (req != 0)
        return fuse_req_interrupted(REQ(req));
    return in_path_request() ? fuse_interrupted() : 0;
}

int pyfuse_getgroups(pyfuse_req req, int size, uint32_t *list)
{
    _Static_assert(sizeof(gid_t) == sizeof(uint32_t), "gid_t is 32 bits");
    if (req == 0)
        req = pyfuse_req_of(pyfuse_ll_current);
    if (req != 0)
        return fuse_req_getgroups(REQ(req), size, (gid_t *)list);
    if (!in_path_request())
        return -ENOENT;
    return fuse_getgroups(size, (gid_t *)list);
}

static void on_interrupt(fuse_req_t req, void *data)
{
    /* called by libfuse on the thread that read the INTERRUPT, with the request's lock held:
     * Python only schedules the cancellation */
    pyfuse_ll_cb_interrupt(pyfuse_ll_of(req)->handle, (uint64_t)(uintptr_t)data);
}

void pyfuse_ll_watch(pyfuse_req req, uint64_t key)
{
    fuse_req_interrupt_func(REQ(req), on_interrupt, (void *)(uintptr_t)key);
}

/* ---- notifications ---------------------------------------------------------------------- */

static struct fuse_session *live(pyfuse_session *s)
{
    struct fuse_session *se = s->se != NULL ? s->se : s->fuse ? fuse_get_session(s->fuse) : NULL;

    return se != NULL && !fuse_session_exited(se) ? se : NULL;
}

int pyfuse_notify_inval_inode(pyfuse_session *s, uint64_t ino, int64_t off, int64_t len)
{
    struct fuse_session *se = live(s);

    return se ? fuse_lowlevel_notify_inval_inode(se, ino, off, len) : -ENOTCONN;
}

int pyfuse_notify_inval_entry(pyfuse_session *s, uint64_t parent, const char *name,
                              size_t namelen)
{
    struct fuse_session *se = live(s);

    return se ? fuse_lowlevel_notify_inval_entry(se, parent, name, namelen) : -ENOTCONN;
}

int pyfuse_notify_delete(pyfuse_session *s, uint64_t parent, uint64_t child, const char *name,
                         size_t namelen)
{
    struct fuse_session *se = live(s);

    return se ? fuse_lowlevel_notify_delete(se, parent, child, name, namelen) : -ENOTCONN;
}

int pyfuse_notify_store(pyfuse_session *s, uint64_t ino, int64_t off, const char *data,
                        size_t size)
{
    struct fuse_session *se = live(s);
    struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);

    if (se == NULL)
        return -ENOTCONN;
    bv.buf[0].mem = (void *)data;
    return fuse_lowlevel_notify_store(se, ino, off, &bv, 0);
}

int pyfuse_notify_poll(pyfuse_session *s, void *ph)
{
    return live(s) ? fuse_lowlevel_notify_poll((struct fuse_pollhandle *)ph) : -ENOTCONN;
}

void pyfuse_pollhandle_destroy(void *ph)
{
    fuse_pollhandle_destroy((struct fuse_pollhandle *)ph);
}

int pyfuse_invalidate_path(pyfuse_session *s, const char *path)
{
    if (s->fuse == NULL || live(s) == NULL)
        return -ENOTCONN;
    return fuse_invalidate_path(s->fuse, path);
}
