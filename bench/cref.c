/* The C reference for the benchmarks: the synthetic tree of bench/tree.py on libfuse 3's
 * high-level API, with readdirplus in offset mode (the physical limit for pyfuse's design).
 *
 *   cref MOUNTPOINT [--single] [--nocache] [--big N] [--small N]
 *
 * Tree: /small/fNNNNN (default 8 files), /big/fNNNNN (default 65536 files); every file is
 * 0644 and 1 byte long. Built by bench/__main__.py with: cc -O2 cref.c $(pkg-config --cflags
 * --libs fuse3). */
#define FUSE_USE_VERSION 312
#include <fuse.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long n_small = 8, n_big = 65536;
static int nocache;

static long dir_size(const char *name, size_t len)
{
    if (len == 5 && memcmp(name, "small", 5) == 0)
        return n_small;
    if (len == 3 && memcmp(name, "big", 3) == 0)
        return n_big;
    return -1;
}

static void *ref_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    if (nocache) {
        cfg->entry_timeout = 0;
        cfg->attr_timeout = 0;
        cfg->negative_timeout = 0;
    }
    return NULL;
}

static void file_attr(struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_mode = S_IFREG | 0644;
    st->st_nlink = 1;
    st->st_size = 1;
}

static int ref_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    const char *slash;
    long n, i;
    char *end;

    (void)fi;
    memset(st, 0, sizeof *st);
    if (strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 4;
        return 0;
    }
    slash = strchr(path + 1, '/');
    n = dir_size(path + 1, slash ? (size_t)(slash - path - 1) : strlen(path + 1));
    if (n < 0)
        return -ENOENT;
    if (slash == NULL) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
        return 0;
    }
    if (slash[1] != 'f')
        return -ENOENT;
    i = strtol(slash + 2, &end, 10);
    if (*end != '\0' || i < 0 || i >= n)
        return -ENOENT;
    file_attr(st);
    return 0;
}

static int ref_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    struct stat st;
    char name[32];
    long n;

    (void)fi;
    if (strcmp(path, "/") == 0) {
        static const char *const top[] = { ".", "..", "small", "big" };
        for (long i = off; i < 4; i++) {
            memset(&st, 0, sizeof st);
            st.st_mode = (i < 2 ? S_IFDIR : S_IFDIR) | 0755;
            if (filler(buf, top[i], &st, i + 1, FUSE_FILL_DIR_PLUS))
                break;
        }
        return 0;
    }
    n = dir_size(path + 1, strlen(path + 1));
    if (n < 0)
        return -ENOENT;
    file_attr(&st);
    for (long i = off; i < n; i++) {
        snprintf(name, sizeof name, "f%05ld", i);
        if (filler(buf, name, &st, i + 1, (flags & FUSE_READDIR_PLUS) ? FUSE_FILL_DIR_PLUS : 0))
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
    .init = ref_init, .getattr = ref_getattr, .readdir = ref_readdir,
    .open = ref_open, .read = ref_read,
};

int main(int argc, char *argv[])
{
    char *fargv[] = { argv[0], "-o", "fsname=cref", NULL };
    struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
    const char *mnt = NULL;
    int single = 0, res;
    struct fuse *f;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--single") == 0)
            single = 1;
        else if (strcmp(argv[i], "--nocache") == 0)
            nocache = 1;
        else if (strcmp(argv[i], "--big") == 0 && i + 1 < argc)
            n_big = atol(argv[++i]);
        else if (strcmp(argv[i], "--small") == 0 && i + 1 < argc)
            n_small = atol(argv[++i]);
        else
            mnt = argv[i];
    }
    if (mnt == NULL) {
        fprintf(stderr, "usage: %s MOUNTPOINT [--single] [--nocache] [--big N] [--small N]\n",
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
