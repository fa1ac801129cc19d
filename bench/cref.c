/* The C reference for the benchmarks: the synthetic tree of bench/model.py on libfuse 3's
 * high-level API, with readdirplus in offset mode (the physical limit for pyfuse's design).
 *
 *   cref MOUNTPOINT [--single] [--nocache] [--longcache] [--dircache]
 *
 * Tree: see bench/model.py (/small, /big, /w2, /src); every file is 0644 and 1 byte long. Built by bench/suites.py (build_cref) with: cc -O2 cref.c $(pkg-config --cflags
 * --libs fuse3). */
#define FUSE_USE_VERSION 312
#include <fuse.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nocache, longcache;  /* every timeout 0, or 3600 s (bench/callgrind.py) */
static int dircache; /* opendir asks for the kernel's listing cache (libfuse >= 3.16 passes it) */

/* i for name == prefix followed by exactly `width` digits with value i < n, else -1 */
static long name_index(const char *name, size_t len, char prefix, size_t width, long n)
{
    long i = 0;

    if (len != width + 1 || name[0] != prefix)
        return -1;
    for (size_t k = 1; k < len; k++) {
        if (name[k] < '0' || name[k] > '9')
            return -1;
        i = i * 10 + (name[k] - '0');
    }
    return i < n ? i : -1;
}

/* The listing of a directory other than the root (see bench/model.py): entries are
 * fmt % i for i < n, all of mode `mode`. Returns the mode of `path` (0: no such entry). */
struct listing {
    const char *fmt;
    long n;
    mode_t mode;
};

#define DIR_MODE (S_IFDIR | 0755)
#define FILE_MODE (S_IFREG | 0644)

static mode_t lookup(const char *path, struct listing *l)
{
    const char *part[5];
    size_t len[5];
    int depth = 0;
    const char *p = path + 1;
    long n;

    if (path[1] == '\0') {
        l->n = 0;
        return DIR_MODE;
    }
    while (depth < 5) {
        const char *slash = strchr(p, '/');
        part[depth] = p;
        len[depth] = slash ? (size_t)(slash - p) : strlen(p);
        depth++;
        if (slash == NULL)
            break;
        p = slash + 1;
    }
#define IS(k, s) (len[k] == sizeof(s) - 1 && memcmp(part[k], s, len[k]) == 0)
    if (IS(0, "small") || IS(0, "big")) {
        n = IS(0, "small") ? 8 : 65536;
        if (depth == 1) {
            *l = (struct listing){ "f%05ld", n, FILE_MODE };
            return DIR_MODE;
        }
        return depth == 2 && name_index(part[1], len[1], 'f', 5, n) >= 0 ? FILE_MODE : 0;
    }
    if (IS(0, "w2")) {
        if (depth == 1) {
            *l = (struct listing){ "d%06ld", 1000000, DIR_MODE };
            return DIR_MODE;
        }
        if (depth > 3 || name_index(part[1], len[1], 'd', 6, 1000000) < 0)
            return 0;
        if (depth == 2) {
            *l = (struct listing){ "f%05ld", 8, FILE_MODE };
            return DIR_MODE;
        }
        return name_index(part[2], len[2], 'f', 5, 8) >= 0 ? FILE_MODE : 0;
    }
    if (IS(0, "src")) {
        if (depth > 4)
            return 0;
        for (int k = 1; k < depth && k < 3; k++)
            if (name_index(part[k], len[k], 'd', 2, 64) < 0)
                return 0;
        if (depth < 3) {
            *l = (struct listing){ "d%02ld", 64, DIR_MODE };
            return DIR_MODE;
        }
        if (depth == 3) {
            *l = (struct listing){ "f%02ld", 15, FILE_MODE };
            return DIR_MODE;
        }
        return name_index(part[3], len[3], 'f', 2, 15) >= 0 ? FILE_MODE : 0;
    }
#undef IS
    return 0;
}

static void *ref_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    if (nocache) {
        cfg->entry_timeout = 0;
        cfg->attr_timeout = 0;
        cfg->negative_timeout = 0;
    } else if (longcache) {
        cfg->entry_timeout = 3600;
        cfg->attr_timeout = 3600;
    }
    return NULL;
}

static void fill_attr(struct stat *st, mode_t mode)
{
    memset(st, 0, sizeof *st);
    st->st_mode = mode;
    st->st_nlink = mode == DIR_MODE ? 2 : 1;
    st->st_size = mode == DIR_MODE ? 0 : 1;
}

static int ref_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    struct listing l;
    mode_t mode = lookup(path, &l);

    (void)fi;
    if (mode == 0)
        return -ENOENT;
    fill_attr(st, mode);
    return 0;
}

static int ref_opendir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    if (dircache) { /* dropped by libfuse's high-level API before 3.16 (libfuse #821) */
        fi->keep_cache = 1;
        fi->cache_readdir = 1;
    }
    return 0;
}

static int ref_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    static const char *const top[] = { ".", "..", "small", "big", "w2", "src" };
    enum fuse_fill_dir_flags plus = (flags & FUSE_READDIR_PLUS) ? FUSE_FILL_DIR_PLUS : 0;
    struct listing l;
    struct stat st;
    char name[32];

    (void)fi;
    if (lookup(path, &l) != DIR_MODE)
        return -ENOTDIR;
    if (strcmp(path, "/") == 0) {
        fill_attr(&st, DIR_MODE);
        for (long i = off; i < 6; i++)
            if (filler(buf, top[i], &st, i + 1, plus))
                break;
        return 0;
    }
    fill_attr(&st, l.mode);
    for (long i = off; i < l.n; i++) {
        snprintf(name, sizeof name, l.fmt, i);
        if (filler(buf, name, &st, i + 1, plus))
            break;
    }
    return 0;
}

static int ref_open(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    (void)fi;
    return 0;
}

static int ref_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    (void)fi;
    if (off >= 1 || size == 0)
        return 0;
    buf[0] = 'x';
    return 1;
}

static const struct fuse_operations ops = {
    .init = ref_init, .getattr = ref_getattr, .readdir = ref_readdir, .opendir = ref_opendir,
    .open = ref_open, .read = ref_read,
};

int main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    const char *mnt = NULL;
    int single = 0, res;
    struct fuse *f;

    if (fuse_opt_add_arg(&args, argv[0]) != 0 || fuse_opt_add_arg(&args, "-o") != 0 ||
        fuse_opt_add_arg(&args, "fsname=cref") != 0)
        return 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--single") == 0)
            single = 1;
        else if (strcmp(argv[i], "--nocache") == 0)
            nocache = 1;
        else if (strcmp(argv[i], "--longcache") == 0)
            longcache = 1;
        else if (strcmp(argv[i], "--dircache") == 0)
            dircache = 1;
        else if (strcmp(argv[i], "--debug") == 0)
            fuse_opt_add_arg(&args, "-d");
        else
            mnt = argv[i];
    }
    if (mnt == NULL) {
        fprintf(stderr, "usage: %s MOUNTPOINT [--single] [--nocache] [--longcache]\n",
                argv[0]);
        return 2;
    }
    f = fuse_new(&args, &ops, sizeof ops, NULL);
    if (f == NULL || fuse_mount(f, mnt) != 0)
        return 1;
    if (fuse_set_signal_handlers(fuse_get_session(f)) != 0)
        return 1;
    if (single) {
        res = fuse_loop(f);
    } else {
        struct fuse_loop_config *lc = fuse_loop_cfg_create();
        res = fuse_loop_mt(f, lc);
        fuse_loop_cfg_destroy(lc);
    }
    fuse_remove_signal_handlers(fuse_get_session(f));
    fuse_unmount(f);
    fuse_destroy(f);
    return res < 0 ? 1 : 0;
}
