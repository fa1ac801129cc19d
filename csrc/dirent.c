/* The inode API's listing records, written from a struct pyfuse_attr.
 *
 * libfuse's fuse_add_direntry and fuse_add_direntry_plus take a struct stat (pyfuse would first
 * fill one from its attr, then libfuse copies it field by field) and, for readdirplus, a struct
 * fuse_entry_param whose double timeouts it converts for every entry. These write the same
 * bytes (struct fuse_dirent and struct fuse_direntplus of <linux/fuse.h>, the kernel's stable
 * protocol that libfuse sends as it is) from the attr converted once per distinct attr and the
 * timeouts converted once a batch. tests/test_readdir.py compares them with the installed
 * libfuse's, byte for byte (pyfuse_dirent_matches_libfuse). */
#include "pyfuse.h"
#include "names.h"

#include <linux/fuse.h>
#include <string.h>

_Static_assert(sizeof(struct fuse_dirent) == 24 && sizeof(struct fuse_entry_out) == 128
                   && offsetof(struct fuse_direntplus, dirent) == 128,
               "the kernel's listing records are not the FUSE protocol's");

/* A timeout in seconds as the kernel takes it (whole seconds and nanoseconds), rounded as
 * libfuse rounds it: negative is 0, a fraction is truncated to whole nanoseconds and kept
 * below 1 s, beyond 64 bits is the most there is. */
static void valid_of(double t, uint64_t *sec, uint32_t *nsec)
{
    double frac;

    *sec = t > (double)UINT64_MAX ? UINT64_MAX : t < 0.0 ? 0 : (uint64_t)t;
    frac = t - (double)*sec;
    *nsec = frac < 0.0 ? 0 : frac >= 0.999999999 ? 999999999u : (uint32_t)(frac * 1.0e9);
}

void pyfuse_valid_of(struct pyfuse_valid *v, double entry_timeout, double attr_timeout)
{
    valid_of(entry_timeout, &v->entry, &v->entry_nsec);
    valid_of(attr_timeout, &v->attr, &v->attr_nsec);
}

/* ns since the epoch in the kernel's fields: pyfuse_split_ns's split, the one
 * pyfuse_attr_to_stat makes a timespec of */
static void time_of(int64_t ns, uint64_t *sec, uint32_t *nsec)
{
    int64_t s, r;

    pyfuse_split_ns(ns, &s, &r);
    *sec = (uint64_t)s;
    *nsec = (uint32_t)r;
}

void pyfuse_attr_to_kernel(const struct pyfuse_attr *a, struct fuse_attr *k)
{
    /* the C types struct stat gives each field on the way, as libfuse's copy from it does */
    memset(k, 0, sizeof *k);
    k->ino = (uint64_t)(ino_t)a->ino;
    k->size = (uint64_t)(off_t)a->size;
    k->blocks = (uint64_t)(blkcnt_t)a->blocks;
    time_of(a->atime_ns, &k->atime, &k->atimensec);
    time_of(a->mtime_ns, &k->mtime, &k->mtimensec);
    time_of(a->ctime_ns, &k->ctime, &k->ctimensec);
    k->mode = (uint32_t)(mode_t)a->mode;
    k->nlink = (uint32_t)(nlink_t)a->nlink;
    k->uid = (uint32_t)(uid_t)a->uid;
    k->gid = (uint32_t)(gid_t)a->gid;
    k->rdev = (uint32_t)(dev_t)a->rdev;
    k->blksize = (uint32_t)(blksize_t)a->blksize;
}

/* The dirent part of a record at d (padded bytes, a multiple of 8): its name and the padding
 * to 8 bytes zeroed. The padding (0 to 7 bytes) is in the record's last 8-byte word, which
 * lies within the name's bytes when there is a name (padded >= FUSE_NAME_OFFSET + 8): that
 * word is zeroed first, by one store, and the name written over it. */
static void put_dirent(struct fuse_dirent *d, const char *name, size_t namelen, uint64_t ino,
                       uint32_t mode, int64_t off, size_t padded)
{
    static const uint64_t zero;

    d->ino = ino;
    d->off = (uint64_t)off;
    d->namelen = (uint32_t)namelen;
    d->type = (mode & S_IFMT) >> 12;
    if (padded >= FUSE_NAME_OFFSET + sizeof zero)
        memcpy(d->name + (padded - FUSE_NAME_OFFSET - sizeof zero), &zero, sizeof zero);
    memcpy(d->name, name, namelen);
}

size_t pyfuse_put_dirent(char *buf, size_t room, const char *name, size_t namelen, uint64_t ino,
                         uint32_t mode, int64_t off)
{
    size_t need = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET + namelen);

    if (need <= room)
        put_dirent((struct fuse_dirent *)(void *)buf, name, namelen, ino, mode, off, need);
    return need;
}

size_t pyfuse_put_direntplus(char *buf, size_t room, const char *name, size_t namelen,
                             uint64_t nodeid, const struct fuse_attr *attr,
                             const struct pyfuse_valid *v, int64_t off)
{
    size_t need = FUSE_DIRENT_ALIGN(FUSE_NAME_OFFSET_DIRENTPLUS + namelen);
    struct fuse_direntplus *dp = (struct fuse_direntplus *)(void *)buf;

    if (need > room)
        return need;
    memset(&dp->entry_out, 0, offsetof(struct fuse_entry_out, attr));
    dp->entry_out.nodeid = nodeid;
    if (v != NULL) {
        dp->entry_out.entry_valid = v->entry;
        dp->entry_out.entry_valid_nsec = v->entry_nsec;
        dp->entry_out.attr_valid = v->attr;
        dp->entry_out.attr_valid_nsec = v->attr_nsec;
    }
    dp->entry_out.attr = *attr;
    put_dirent(&dp->dirent, name, namelen, attr->ino, attr->mode, off,
               need - offsetof(struct fuse_direntplus, dirent));
    return need;
}

int pyfuse_dirent_matches_libfuse(const struct pyfuse_attr *a, const char *name, int64_t off,
                                  double entry_timeout, double attr_timeout)
{
    char mine[sizeof(struct fuse_direntplus) + PYFUSE_NAME_MAX + 8];
    char theirs[sizeof mine];
    struct fuse_entry_param e;
    struct fuse_attr k;
    struct pyfuse_valid v;
    size_t n = strlen(name), need;

    memset(mine, 0xa5, sizeof mine); /* bytes neither writes would differ */
    memset(theirs, 0xa5, sizeof theirs);
    memset(&e, 0, sizeof e);
    pyfuse_attr_to_stat(a, &e.attr);
    e.ino = a->ino;
    e.entry_timeout = entry_timeout;
    e.attr_timeout = attr_timeout;
    pyfuse_attr_to_kernel(a, &k);
    pyfuse_valid_of(&v, entry_timeout, attr_timeout);
    need = pyfuse_put_direntplus(mine, sizeof mine, name, n, a->ino, &k, &v, off);
    if (need != fuse_add_direntry_plus(NULL, theirs, sizeof theirs, name, &e, off))
        return 0;
    if (memcmp(mine, theirs, sizeof mine) != 0)
        return 0;
    need = pyfuse_put_dirent(mine, sizeof mine, name, n, a->ino, (uint32_t)a->mode, off);
    if (need != fuse_add_direntry(NULL, theirs, sizeof theirs, name, &e.attr, off))
        return 0;
    return memcmp(mine, theirs, sizeof mine) == 0;
}
