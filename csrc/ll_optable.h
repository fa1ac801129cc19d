/* The one table of the inode API's operations (pyfuse.lowlevel), as optable.h is the path
 * API's. Each row: the operation (its pyfuse.lowlevel.Operations method is the name in lower
 * case, its Python entry point pyfuse_ll_cb_<name> in ll_callbacks_cdef.h), the struct
 * fuse_lowlevel_ops member it fills, the trampoline (lowlevel.c), and when it is filled:
 *   OWN      when the filesystem overrides the method;
 *   ALWAYS   on every mount (init applies the Config; forget keeps pyfuse's lookup counts;
 *            open answers for a filesystem without one: ENOSYS, see Config.no_open);
 *   DIRS     when it overrides any directory operation (the handle carries the listing);
 *   READDIR  when it overrides readdir (READDIRPLUS is served by the same method).
 * Rows READDIRPLUS and FORGET_MULTI have no method of their own (readdir and forget serve
 * them). Derived from it: enum pyfuse_ll_op (pyfuse.h; build_ffi.py writes it into the cdef)
 * and the registration in pyfuse_ll_fill_ops. tests/test_build.py checks the rest. */
#ifndef PYFUSE_LL_OPTABLE_H
#define PYFUSE_LL_OPTABLE_H

#define PYFUSE_LL_OPS(X)                                                       \
    X(INIT,            init,            ll_init,                  ALWAYS)      \
    X(DESTROY,         destroy,         ll_destroy,               ALWAYS)      \
    X(LOOKUP,          lookup,          ll_lookup,                OWN)         \
    X(FORGET,          forget,          ll_forget,                ALWAYS)      \
    X(GETATTR,         getattr,         ll_getattr,               OWN)         \
    X(SETATTR,         setattr,         ll_setattr,               OWN)         \
    X(READLINK,        readlink,        ll_readlink,              OWN)         \
    X(MKNOD,           mknod,           ll_mknod,                 OWN)         \
    X(MKDIR,           mkdir,           ll_mkdir,                 OWN)         \
    X(UNLINK,          unlink,          ll_unlink,                OWN)         \
    X(RMDIR,           rmdir,           ll_rmdir,                 OWN)         \
    X(SYMLINK,         symlink,         ll_symlink,               OWN)         \
    X(RENAME,          rename,          ll_rename,                OWN)         \
    X(LINK,            link,            ll_link,                  OWN)         \
    X(OPEN,            open,            ll_open,                  ALWAYS)      \
    X(READ,            read,            ll_read,                  ALWAYS)      \
    X(WRITE,           write,           ll_write,                 ALWAYS)      \
    X(FLUSH,           flush,           ll_flush,                 OWN)         \
    X(RELEASE,         release,         ll_release,               OWN)         \
    X(FSYNC,           fsync,           ll_fsync,                 OWN)         \
    X(OPENDIR,         opendir,         ll_opendir,               DIRS)        \
    X(READDIR,         readdir,         ll_readdir,               OWN)         \
    X(RELEASEDIR,      releasedir,      ll_releasedir,            DIRS)        \
    X(FSYNCDIR,        fsyncdir,        ll_fsyncdir,              OWN)         \
    X(STATFS,          statfs,          ll_statfs,                OWN)         \
    X(SETXATTR,        setxattr,        ll_setxattr,              OWN)         \
    X(GETXATTR,        getxattr,        ll_getxattr,              OWN)         \
    X(LISTXATTR,       listxattr,       ll_listxattr,             OWN)         \
    X(REMOVEXATTR,     removexattr,     ll_removexattr,           OWN)         \
    X(ACCESS,          access,          ll_access,                OWN)         \
    X(CREATE,          create,          ll_create,                OWN)         \
    X(GETLK,           getlk,           ll_getlk,                 OWN)         \
    X(SETLK,           setlk,           ll_setlk,                 OWN)         \
    X(FLOCK,           flock,           ll_flock,                 OWN)         \
    X(FALLOCATE,       fallocate,       ll_fallocate,             OWN)         \
    X(COPY_FILE_RANGE, copy_file_range, ll_copy_file_range,       OWN)         \
    X(LSEEK,           lseek,           ll_lseek,                 OWN)         \
    X(IOCTL,           ioctl,           ll_ioctl,                 OWN)         \
    X(POLL,            poll,            ll_poll,                  OWN)         \
    X(READDIRPLUS,     readdirplus,     ll_readdirplus,           READDIR)     \
    X(FORGET_MULTI,    forget_multi,    ll_forget_multi,          ALWAYS)

#endif
