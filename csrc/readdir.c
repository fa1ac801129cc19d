/* Directory listing: the open-directory handle, the READDIR/READDIRPLUS trampoline and the batch
 * filler. Python makes one call per kernel request and hands C batches of entries (names in one
 * NUL-separated buffer, attributes in one array); the per-entry loop is here: over libfuse's filler
 * for the path API, and for the inode API into the kernel's records (dirent.c).
 *
 * Offsets given to libfuse are never 0: libfuse < 3.17.1 drops readdirplus attributes in its
 * offset-0 ("whole listing at once") mode, so positional listings are numbered base + i + 1. */
#include "pyfuse.h"
#include "names.h"

#include <stddef.h>

#include <errno.h>
#include <linux/fuse.h>
#include <stdlib.h>
#include <string.h>

struct pyfuse_fill {
    void *buf;
    fuse_fill_dir_t filler;
    int plus;
    /* the inode API's listings: req != NULL, the entries go into out[0..size) */
    fuse_req_t req;
    size_t size, used;
    double entry_timeout, attr_timeout; /* of the plus entries; negative: the session's */
    struct pyfuse_dir *own_dir; /* a handleless request's directory state, freed with it */
    char out[];
};

struct pyfuse_fill *pyfuse_ll_fill_new(fuse_req_t req, size_t size, int plus)
{
    struct pyfuse_fill *f = malloc(sizeof *f + size); /* the request's own size, no more */

    if (f == NULL)
        return NULL;
    memset(f, 0, sizeof *f);
    f->req = req;
    f->size = size;
    f->plus = plus;
    f->entry_timeout = f->attr_timeout = -1;
    return f;
}

void pyfuse_ll_fill_timeouts(struct pyfuse_fill *f, double entry_timeout, double attr_timeout)
{
    f->entry_timeout = entry_timeout;
    f->attr_timeout = attr_timeout;
}

/* A readdirplus reply that never reaches the kernel: take back the lookups its entries
 * counted, read from the buffer itself. Each entry is the FUSE ABI's struct fuse_direntplus
 * (linux/fuse.h, stable; dirent.c writes them): a struct fuse_entry_out, whose nodeid is 0 for
 * entries that counted nothing ("." "..", entries without attributes), then a struct
 * fuse_dirent and its name, padded to 8 bytes. */
static void uncount(struct pyfuse_fill *f)
{
    struct pyfuse_lookups *t = &pyfuse_ll_of(f->req)->lookups;
    size_t at = 0;
    uint64_t held;

    if (!f->plus)
        return;
    while (at + FUSE_NAME_OFFSET_DIRENTPLUS <= f->used) {
        uint64_t node;
        uint32_t namelen;

        memcpy(&node, f->out + at + offsetof(struct fuse_direntplus, entry_out.nodeid),
               sizeof node);
        memcpy(&namelen, f->out + at + offsetof(struct fuse_direntplus, dirent.namelen),
               sizeof namelen);
        if (node != 0)
            pyfuse_lookups_drop(t, node, 1, &held);
        at += FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET_DIRENTPLUS + namelen);
    }
}

pyfuse_req pyfuse_ll_fill_req(struct pyfuse_fill *f)
{
    return pyfuse_req_of(f->req);
}

void pyfuse_ll_fill_own_dir(struct pyfuse_fill *f, struct pyfuse_dir *d)
{
    f->own_dir = d;
}

int pyfuse_ll_reply_dir(struct pyfuse_fill *f)
{
    int res = fuse_reply_buf(f->req, f->out, f->used);

    if (res != 0)
        uncount(f);
    free(f->own_dir);
    free(f);
    return res;
}

int pyfuse_ll_fail_dir(struct pyfuse_fill *f, int err)
{
    int res;

    uncount(f); /* entries already in the buffer are not sent */
    res = fuse_reply_err(f->req, err);
    free(f->own_dir);
    free(f);
    return res;
}

/* d_ino of an entry given without attributes: readdir(3) skips entries whose d_ino is 0, so
 * they get this placeholder (go-fuse's FUSE_UNKNOWN_INO), with type DT_UNKNOWN. */
#define PYFUSE_UNKNOWN_INO 0xffffffffu

static int dot_or_dotdot(const char *name)
{
    return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Add one checked entry (name, namelen bytes; a: its attributes, NULL if none, k their
 * kernel form, v the timeouts) to a low-level listing: 0, or 1 when the buffer is full. Each
 * plus entry with attributes (but "." and "..", which the kernel ignores) gives the kernel one
 * lookup of its inode, counted here (the lock of the counts is held by the caller). */
static int ll_add(struct pyfuse_fill *f, const char *name, size_t namelen,
                  const struct pyfuse_attr *a, const struct fuse_attr *k,
                  const struct pyfuse_valid *v, int64_t off)
{
    size_t room = f->size - f->used, need;
    char *at = f->out + f->used;

    if (f->plus && a != NULL && !dot_or_dotdot(name)) { /* a->ino is not 0 (ll_fill checks) */
        need = pyfuse_put_direntplus(at, room, name, namelen, a->ino, k, v, off);
        if (need > room)
            return 1;
        pyfuse_lookups_add(&pyfuse_ll_of(f->req)->lookups, a->ino, 1, 1);
    } else if (f->plus) { /* no entry for the kernel: its inode and type at most */
        struct fuse_attr bare;

        memset(&bare, 0, sizeof bare);
        bare.ino = a != NULL && a->ino != 0 ? a->ino : PYFUSE_UNKNOWN_INO;
        bare.mode = a != NULL ? (uint32_t)(mode_t)a->mode : 0;
        need = pyfuse_put_direntplus(at, room, name, namelen, 0, &bare, NULL, off);
        if (need > room)
            return 1;
    } else {
        need = pyfuse_put_dirent(at, room, name, namelen,
                                 a != NULL && a->ino != 0 ? a->ino : PYFUSE_UNKNOWN_INO,
                                 a != NULL ? (uint32_t)(mode_t)a->mode : 0, off);
        if (need > room)
            return 1;
    }
    f->used += need;
    return 0;
}

static struct pyfuse_dir *dir_of(struct fuse_file_info *fi)
{
    return (struct pyfuse_dir *)(uintptr_t)fi->fh;
}

int pyfuse_op_opendir(const char *path, struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_current();
    struct pyfuse_dir *d = calloc(1, sizeof *d); /* one per opendir, never per entry */

    if (d == NULL)
        return -ENOMEM;
    d->eof_off = -1;
    if (PYFUSE_HAS(s, PYFUSE_OP_OPENDIR)) {
        int res = PYFUSE_CALL(s, OPENDIR, pyfuse_cb_opendir, path, d);
        if (res != 0) {
            free(d);
            return res;
        }
    }
    fi->fh = (uint64_t)(uintptr_t)d;
    /* FileInfo(keep_cache, cache_readdir): libfuse's high-level API hands these on to the
     * kernel from 3.16 (libfuse #821); before, it drops them, and io.c puts them back */
    if (d->open_bits & PYFUSE_OPEN_KEEP_CACHE)
        fi->keep_cache = 1;
    if (d->open_bits & PYFUSE_OPEN_CACHE_DIR)
        fi->cache_readdir = 1;
    pyfuse_io_expect_opendir(d->open_bits);
    return 0;
}

int pyfuse_op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct pyfuse_dir *d = dir_of(fi);
    struct pyfuse_fill fill = { .buf = buf, .filler = filler,
                                .plus = (flags & FUSE_READDIR_PLUS) != 0 };

    /* A listing that already ended at this offset: answer EOF without Python. (In offset mode
     * this also ends the listing of a filesystem that ignores the offset it is given, which
     * would otherwise hand out its first entries again, forever.) */
    if (d->eof_off > 0 && off == d->eof_off)
        return 0;
    return PYFUSE_CALL(pyfuse_current(), READDIR, pyfuse_cb_readdir, path, off, d, &fill,
                       fill.plus);
}

int pyfuse_op_releasedir(const char *path, struct fuse_file_info *fi)
{
    struct pyfuse_session *s = pyfuse_current();
    struct pyfuse_dir *d = dir_of(fi);
    int res = 0;

    /* Python only when there is something to do: a kept stream to close or a user releasedir. */
    if (d->key != 0 || PYFUSE_HAS(s, PYFUSE_OP_RELEASEDIR))
        res = PYFUSE_CALL(s, RELEASEDIR, pyfuse_cb_releasedir, path, d);
    free(d);
    return res;
}

int pyfuse_op_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    return PYFUSE_CALL(pyfuse_current(), FSYNCDIR, pyfuse_cb_fsyncdir, path, datasync,
                       dir_of(fi)->fh);
}

/* Check a batch before any of it reaches libfuse by names.h's rules: exactly n non-empty names,
 * none longer than PYFUSE_NAME_MAX bytes, none with '/', unless dup_names no name twice (within
 * the batch: a table on the stack, so memory stays bounded; a duplicate across batches is not
 * seen). A NUL inside a name shows up as one name too many. */
#define DUP_SLOTS PYFUSE_DUP_SLOTS
_Static_assert((DUP_SLOTS & (DUP_SLOTS - 1)) == 0, "PYFUSE_DUP_SLOTS must be a power of two");
_Static_assert(DUP_SLOTS >= 2 * PYFUSE_READDIR_BATCH,
               "PYFUSE_DUP_SLOTS must be at least twice PYFUSE_READDIR_BATCH, or whole batches "
               "go unchecked for duplicate names");

static int check_names(const char *names, size_t names_len, int n, int dup_names)
{
    const char *p = names, *end = names + names_len;
    const char *seen[DUP_SLOTS];
    int dedup = !dup_names && n <= DUP_SLOTS / 2;

    if (dedup)
        memset(seen, 0, sizeof seen);
    for (int i = 0; i < n; i++) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        size_t len = (nul ? nul : end) - p;

        if (len == 0 || memchr(p, '/', len) != NULL)
            return -EINVAL;
        if (len > PYFUSE_NAME_MAX)
            return -ENAMETOOLONG;
        if (nul == NULL && i != n - 1)
            return -EINVAL;
        if (dedup) {
            uint32_t h;

            (void)pyfuse_name_scan(p, len, &h); /* (its bytes checked above) */
            for (h &= DUP_SLOTS - 1; seen[h] != NULL; h = (h + 1) & (DUP_SLOTS - 1))
                if (strncmp(seen[h], p, len) == 0 && seen[h][len] == '\0')
                    return -EEXIST;
            seen[h] = p;
        }
        if (nul == NULL)
            return 0;
        p = nul + 1;
    }
    return -EINVAL; /* more names than n */
}

/* What a plain listing reads of an entry's struct pyfuse_attr: its first two fields. */
#define PLAIN_FIELDS offsetof(struct pyfuse_attr, nlink)
_Static_assert(offsetof(struct pyfuse_attr, mode) == 0 && offsetof(struct pyfuse_attr, ino) == 8
               && PLAIN_FIELDS == 16, "struct pyfuse_attr starts with mode and ino");

/* Entry attributes ap (packed, any alignment) read into *a: whole for a READDIRPLUS, only
 * mode and ino for a plain READDIR (its other fields keep what they held). Two fixed-size
 * copies, not one of a variable size (that would be a libc call an entry). */
static inline void read_attr(struct pyfuse_attr *a, const char *ap, int plus)
{
    if (plus)
        memcpy(a, ap, sizeof *a);
    else
        memcpy(a, ap, PLAIN_FIELDS);
}

/* pyfuse_fill's loop for a low-level listing (names already checked). Each entry is checked
 * as it goes in: an offset <= 0 (-ERANGE), a mode without a valid file type (-EBADMSG), or for
 * readdirplus attributes with inode 0 on a name other than "." and ".." (-EDOM) end the batch
 * with that error. The entries before it stay in the buffer, counted; the caller then fails the
 * request, and pyfuse_ll_fail_dir takes their lookups back. (A check of the whole batch up
 * front would run again on every request the batch is spread over.) */
static int ll_fill(struct pyfuse_fill *f, const char *names, int n, const char *offs,
                   const char *attrs, size_t attr_stride, const char *inos, int64_t base)
{
    struct pyfuse_session *s = pyfuse_ll_of(f->req);
    struct pyfuse_lookups *counts = &s->lookups;
    const char *p = names, *converted = NULL;
    struct pyfuse_attr a = { 0 };
    struct fuse_attr k;
    struct pyfuse_valid v;
    int64_t off;
    size_t len;
    int i, res = 0;

    if (f->plus) {
        pyfuse_valid_of(&v, f->entry_timeout >= 0 ? f->entry_timeout : s->cfg.entry_timeout,
                        f->attr_timeout >= 0 ? f->attr_timeout : s->cfg.attr_timeout);
        pthread_mutex_lock(&counts->lock); /* once a batch, not once an entry */
    }
    for (i = 0; i < n; i++) {
        const char *ap = attrs != NULL ? attrs + (size_t)i * attr_stride : NULL;

        if (offs != NULL)
            memcpy(&off, offs + (size_t)i * sizeof off, sizeof off);
        else
            off = base + i + 1;
        if (off <= 0) {
            res = -ERANGE;
            break;
        }
        if (ap != NULL && ap != converted) {
            read_attr(&a, ap, f->plus); /* a plain entry is its mode and inode: ll_add */
            if (a.mode != 0 && !pyfuse_valid_type(a.mode)) {
                res = -EBADMSG;
                break;
            }
            if (a.mode != 0 && f->plus)
                pyfuse_attr_to_kernel(&a, &k);
            converted = ap;
        }
        if (inos != NULL) { /* the template's conversion stands; only the number changes */
            memcpy(&a.ino, inos + (size_t)i * sizeof a.ino, sizeof a.ino);
            k.ino = a.ino;
        }
        if (f->plus && i + PYFUSE_PREFETCH_AHEAD < n) {
            uint64_t ahead = 0;
            int k = i + PYFUSE_PREFETCH_AHEAD;

            if (inos != NULL)
                memcpy(&ahead, inos + (size_t)k * sizeof ahead, sizeof ahead);
            else if (attr_stride != 0)
                memcpy(&ahead, attrs + (size_t)k * attr_stride + offsetof(struct pyfuse_attr, ino),
                       sizeof ahead);
            if (ahead != 0)
                pyfuse_lookups_prefetch(counts, ahead);
        }
        if (f->plus && ap != NULL && a.mode != 0 && a.ino == 0 && !dot_or_dotdot(p)) {
            res = -EDOM;
            break;
        }
        len = strlen(p);
        if (ll_add(f, p, len, ap != NULL && a.mode != 0 ? &a : NULL, &k, &v, off))
            break; /* the buffer is full */
        p += len + 1;
    }
    if (f->plus)
        pthread_mutex_unlock(&counts->lock);
    return res < 0 ? res : i;
}

int pyfuse_fill(struct pyfuse_fill *f, const char *names, size_t names_len, int n,
                const char *offs, const char *attrs, size_t attr_stride, const char *inos,
                int64_t base)
{
    int res;

    if (n <= 0)
        return 0;
    res = check_names(names, names_len, n,
                      (f->req != NULL ? pyfuse_ll_of(f->req) : pyfuse_current())->cfg.dup_names);
    if (res != 0)
        return res;
    return pyfuse_fill_checked(f, names, n, offs, attrs, attr_stride, inos, base);
}

int pyfuse_fill_checked(struct pyfuse_fill *f, const char *names, int n, const char *offs,
                        const char *attrs, size_t attr_stride, const char *inos, int64_t base)
{
    const char *p = names, *converted = NULL;
    struct pyfuse_attr a = { 0 };
    struct stat st;
    int64_t off;

    if (n <= 0)
        return 0;
    if (f->req != NULL)
        return ll_fill(f, names, n, offs, attrs, attr_stride, inos, base);
    if (!f->plus) /* libfuse's plain listing reads an entry's st_ino and st_mode, no more */
        memset(&st, 0, sizeof st);
    for (int i = 0; i < n; i++) {
        const struct stat *sp = NULL;
        enum fuse_fill_dir_flags fl = 0;
        const char *ap = attrs != NULL ? attrs + (size_t)i * attr_stride : NULL;

        if (offs != NULL)
            memcpy(&off, offs + (size_t)i * sizeof off, sizeof off);
        else
            off = base + i + 1;
        if (off <= 0)
            return -ERANGE;
        if (ap != NULL && ap != converted) { /* a shared attribute is converted once */
            read_attr(&a, ap, f->plus);
            if (a.mode != 0 && !pyfuse_valid_type(a.mode))
                return -EBADMSG;
            if (a.mode != 0 && f->plus) {
                pyfuse_attr_to_stat(&a, &st);
            } else if (a.mode != 0) {
                st.st_mode = (mode_t)a.mode;
                st.st_ino = (ino_t)a.ino;
            }
            converted = ap;
        }
        if (ap != NULL && a.mode != 0) {
            sp = &st;
            if (f->plus)
                fl = FUSE_FILL_DIR_PLUS;
            if (inos != NULL) {
                uint64_t ino;

                memcpy(&ino, inos + (size_t)i * sizeof ino, sizeof ino);
                st.st_ino = (ino_t)ino;
            }
            /* with use_ino libfuse passes st_ino on as d_ino: 0 would hide the entry */
            if (st.st_ino == 0)
                st.st_ino = PYFUSE_UNKNOWN_INO;
        }
        if (f->filler(f->buf, p, sp, off, fl))
            return i; /* kernel buffer full: entries i.. go in the next request */
        p += strlen(p) + 1;
    }
    return n;
}
