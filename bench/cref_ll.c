/* The C reference on libfuse 3's low-level API: the synthetic tree of bench/model.py numbered
 * as its ino_of/path_of number it (the inode API's peers, bench/tree_ll.py among them), with
 * readdirplus in libfuse's default (auto) mode, as pyfuse's. What the inode API's Python costs
 * are measured against.
 *
 *   cref_ll MOUNTPOINT [--single] [--nocache] [--longcache] [--dircache]
 *
 * --dircache: no OPENDIR (the first is answered ENOSYS, as pyfuse does for a filesystem without
 * opendir): the kernel keeps each listing (docs/caching.md); else every OPENDIR is answered
 * and every listing read. Timeouts: 1 s, 0 (--nocache) or an hour (--longcache). Built by
 * bench/suites.py (build_cref) with: cc -O2 cref_ll.c $(pkg-config --cflags --libs fuse3). */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DIR_MODE (S_IFDIR | 0755)
#define FILE_MODE (S_IFREG | 0644)
#define SMALL 1000UL
#define BIG 1000000UL
#define W2 10000000UL
#define SRC 100000000UL

static double timeout = 1.0;
static int dircache;

/* A directory's children: names fmt % i for i < n, child i numbered first + i * step, of
 * mode `mode`; the root's are listed apart. */
struct kids {
    const char *fmt;
    unsigned long n, first, step;
    mode_t mode;
};

static const char *const top[] = { "small", "big", "w2", "src" };

/* The mode of inode `ino` (0: none), and its children if it is a directory. */
static mode_t node(fuse_ino_t ino, struct kids *k)
{
    if (ino == 1)
        return DIR_MODE;
    if (ino == 2 || ino == 3) {
        *k = (struct kids){ "f%05lu", ino == 2 ? 8 : 65536, ino == 2 ? SMALL : BIG, 1,
                            FILE_MODE };
        return DIR_MODE;
    }
    if (ino == 4) {
        *k = (struct kids){ "d%06lu", 1000000, W2, 16, DIR_MODE };
        return DIR_MODE;
    }
    if (ino == 5) {
        *k = (struct kids){ "d%02lu", 64, SRC, 65536, DIR_MODE };
        return DIR_MODE;
    }
    if (ino >= SRC) {
        unsigned long a = (ino - SRC) / 65536, rest = (ino - SRC) % 65536;
        unsigned long b = rest / 16, f = rest % 16;

        if (a >= 64 || b > 64 || (b == 0 && f != 0) || f > 15)
            return 0;
        if (b == 0) {
            *k = (struct kids){ "d%02lu", 64, ino + 16, 16, DIR_MODE };
            return DIR_MODE;
        }
        if (f == 0) {
            *k = (struct kids){ "f%02lu", 15, ino + 1, 1, FILE_MODE };
            return DIR_MODE;
        }
        return FILE_MODE;
    }
    if (ino >= W2) {
        unsigned long i = (ino - W2) / 16, j = (ino - W2) % 16;

        if (i >= 1000000 || j > 8)
            return 0;
        if (j == 0) {
            *k = (struct kids){ "f%05lu", 8, ino + 1, 1, FILE_MODE };
            return DIR_MODE;
        }
        return FILE_MODE;
    }
    if (ino >= BIG)
        return ino - BIG < 65536 ? FILE_MODE : 0;
    if (ino >= SMALL)
        return ino - SMALL < 8 ? FILE_MODE : 0;
    return 0;
}

static void attr_of(struct stat *st, fuse_ino_t ino, mode_t mode)
{
    memset(st, 0, sizeof *st);
    st->st_ino = ino;
    st->st_mode = mode;
    st->st_nlink = mode == DIR_MODE ? 2 : 1;
    st->st_size = mode == DIR_MODE ? 0 : 1;
}

/* The child of `parent` named `name`: its inode (0: none). */
static fuse_ino_t child(fuse_ino_t parent, const char *name, mode_t *mode)
{
    struct kids k;
    size_t len = strlen(name), width;
    unsigned long i = 0;

    if (parent == 1) {
        for (int t = 0; t < 4; t++)
            if (strcmp(name, top[t]) == 0) {
                *mode = DIR_MODE;
                return (fuse_ino_t)t + 2;
            }
        return 0;
    }
    if (node(parent, &k) != DIR_MODE)
        return 0;
    width = (size_t)(k.fmt[3] - '0');
    if (len != width + 1 || name[0] != k.fmt[0])
        return 0;
    for (size_t c = 1; c < len; c++) {
        if (name[c] < '0' || name[c] > '9')
            return 0;
        i = i * 10 + (unsigned long)(name[c] - '0');
    }
    if (i >= k.n)
        return 0;
    *mode = k.mode;
    return k.first + i * k.step;
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param e;
    mode_t mode = 0;
    fuse_ino_t ino = child(parent, name, &mode);

    if (ino == 0) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    memset(&e, 0, sizeof e);
    e.ino = ino;
    e.entry_timeout = e.attr_timeout = timeout;
    attr_of(&e.attr, ino, mode);
    fuse_reply_entry(req, &e);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct kids k;
    struct stat st;
    mode_t mode = node(ino, &k);

    (void)fi;
    if (mode == 0) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    attr_of(&st, ino, mode);
    fuse_reply_attr(req, &st, timeout);
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    if (dircache) {
        fuse_reply_err(req, ENOSYS); /* no OPENDIR from now on; listings kept by the kernel */
        return;
    }
    fi->fh = 0;
    fuse_reply_open(req, fi);
}

/* Files as bench/tree_ll.py serves them (W6 of bench/callgrind.py): any open is handle 0,
 * and every file holds one byte, "x". */
static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    (void)ino;
    fi->fh = 0;
    fuse_reply_open(req, fi);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)ino;
    (void)fi;
    fuse_reply_buf(req, "x" + (off < 1 ? off : 1), off < 1 && size > 0 ? 1 : 0);
}

static void listing(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
    char *buf = malloc(size), name[16];
    size_t used = 0;
    struct kids k;
    unsigned long n;

    if (buf == NULL || node(ino, &k) != DIR_MODE) {
        free(buf);
        fuse_reply_err(req, buf == NULL ? ENOMEM : ENOTDIR);
        return;
    }
    n = ino == 1 ? 4 : k.n;
    for (unsigned long i = (unsigned long)off; i < n + 2; i++) {
        struct fuse_entry_param e;
        size_t need;
        fuse_ino_t cino = i < 2 ? ino : ino == 1 ? (fuse_ino_t)(i - 2 + 2)
                                                  : k.first + (i - 2) * k.step;
        mode_t mode = i < 2 || ino == 1 ? DIR_MODE : k.mode;
        const char *nm = name;

        if (i == 0)
            nm = ".";
        else if (i == 1)
            nm = "..";
        else if (ino == 1)
            nm = top[i - 2];
        else
            snprintf(name, sizeof name, k.fmt, i - 2);
        memset(&e, 0, sizeof e);
        attr_of(&e.attr, cino, mode);
        if (plus && i >= 2) {
            e.ino = cino;
            e.entry_timeout = e.attr_timeout = timeout;
            need = fuse_add_direntry_plus(req, buf + used, size - used, nm, &e, (off_t)i + 1);
        } else if (plus) {
            need = fuse_add_direntry_plus(req, buf + used, size - used, nm, &e, (off_t)i + 1);
        } else {
            need = fuse_add_direntry(req, buf + used, size - used, nm, &e.attr, (off_t)i + 1);
        }
        if (need > size - used)
            break;
        used += need;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    (void)fi;
    listing(req, ino, size, off, 0);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    (void)fi;
    listing(req, ino, size, off, 1);
}

static const struct fuse_lowlevel_ops ops = {
    .lookup = ll_lookup, .getattr = ll_getattr, .open = ll_open, .read = ll_read,
    .opendir = ll_opendir, .readdir = ll_readdir, .readdirplus = ll_readdirplus,
};

int main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    struct fuse_session *se;
    struct fuse_loop_config *lc;
    const char *mnt = NULL;
    int single = 0, res;

    if (fuse_opt_add_arg(&args, argv[0]) != 0 || fuse_opt_add_arg(&args, "-o") != 0 ||
        fuse_opt_add_arg(&args, "fsname=cref_ll") != 0)
        return 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--single") == 0)
            single = 1;
        else if (strcmp(argv[i], "--nocache") == 0)
            timeout = 0;
        else if (strcmp(argv[i], "--longcache") == 0)
            timeout = 3600;
        else if (strcmp(argv[i], "--dircache") == 0)
            dircache = 1;
        else if (strcmp(argv[i], "--debug") == 0)
            fuse_opt_add_arg(&args, "-d");
        else
            mnt = argv[i];
    }
    if (mnt == NULL) {
        fprintf(stderr, "usage: %s MOUNTPOINT [--single] [--nocache] [--longcache] "
                "[--dircache]\n", argv[0]);
        return 2;
    }
    se = fuse_session_new(&args, &ops, sizeof ops, NULL);
    if (se == NULL || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mnt) != 0)
        return 1;
    if (single) {
        res = fuse_session_loop(se);
    } else {
        lc = fuse_loop_cfg_create();
        res = fuse_session_loop_mt(se, lc);
        fuse_loop_cfg_destroy(lc);
    }
    fuse_session_unmount(se);
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return res ? 1 : 0;
}
