/* The one table of the path API's operations. Each row: the operation (its Operations method is
 * the name in lower case, its Python entry point pyfuse_cb_<name> in callbacks_cdef.h), the
 * struct fuse_operations member it fills, the trampoline, and when the member is filled:
 *   OWN     when the filesystem overrides the method;
 *   ALWAYS  on every mount (init applies the Config; read_buf/write_buf also serve fd-backed
 *           files, FileInfo(fd_backed=True), without Python);
 *   DIRS    when it overrides any directory operation (the handle carries the stream state).
 *
 * Derived from it: enum pyfuse_op (pyfuse.h for C; build_ffi.py writes the same enum into the
 * cdef, so Python reads PYFUSE_OP_<NAME> through lib) and the registration in pyfuse_fill_ops.
 * tests/test_build.py checks the rest against it: one Operations method per row and none
 * without a row, a prototype and a def_extern for every callback, and that every row's bit
 * puts its member in the table. Adding an operation: a row here, the method, the callback
 * (prototype and Python), the trampoline. Rows are X(NAME, member, trampoline, WHEN), one per
 * line (build_ffi.py reads them with a regular expression). */
#ifndef PYFUSE_OPTABLE_H
#define PYFUSE_OPTABLE_H

#define PYFUSE_OPS(X)                                                          \
    X(GETATTR,         getattr,         op_getattr,               OWN)         \
    X(READLINK,        readlink,        op_readlink,              OWN)         \
    X(MKNOD,           mknod,           op_mknod,                 OWN)         \
    X(MKDIR,           mkdir,           op_mkdir,                 OWN)         \
    X(UNLINK,          unlink,          op_unlink,                OWN)         \
    X(RMDIR,           rmdir,           op_rmdir,                 OWN)         \
    X(SYMLINK,         symlink,         op_symlink,               OWN)         \
    X(RENAME,          rename,          op_rename,                OWN)         \
    X(LINK,            link,            op_link,                  OWN)         \
    X(CHMOD,           chmod,           op_chmod,                 OWN)         \
    X(CHOWN,           chown,           op_chown,                 OWN)         \
    X(TRUNCATE,        truncate,        op_truncate,              OWN)         \
    X(OPEN,            open,            op_open,                  OWN)         \
    X(READ,            read_buf,        pyfuse_op_read_buf,       ALWAYS)      \
    X(WRITE,           write_buf,       pyfuse_op_write_buf,      ALWAYS)      \
    X(STATFS,          statfs,          op_statfs,                OWN)         \
    X(FLUSH,           flush,           op_flush,                 OWN)         \
    X(RELEASE,         release,         op_release,               OWN)         \
    X(FSYNC,           fsync,           op_fsync,                 OWN)         \
    X(SETXATTR,        setxattr,        op_setxattr,              OWN)         \
    X(GETXATTR,        getxattr,        op_getxattr,              OWN)         \
    X(LISTXATTR,       listxattr,       op_listxattr,             OWN)         \
    X(REMOVEXATTR,     removexattr,     op_removexattr,           OWN)         \
    X(OPENDIR,         opendir,         pyfuse_op_opendir,        DIRS)        \
    X(READDIR,         readdir,         pyfuse_op_readdir,        OWN)         \
    X(RELEASEDIR,      releasedir,      pyfuse_op_releasedir,     DIRS)        \
    X(FSYNCDIR,        fsyncdir,        pyfuse_op_fsyncdir,       OWN)         \
    X(INIT,            init,            op_init,                  ALWAYS)      \
    X(DESTROY,         destroy,         op_destroy,               OWN)         \
    X(ACCESS,          access,          op_access,                OWN)         \
    X(CREATE,          create,          op_create,                OWN)         \
    X(LOCK,            lock,            op_lock,                  OWN)         \
    X(UTIMENS,         utimens,         op_utimens,               OWN)         \
    X(IOCTL,           ioctl,           op_ioctl,                 OWN)         \
    X(POLL,            poll,            op_poll,                  OWN)         \
    X(FLOCK,           flock,           op_flock,                 OWN)         \
    X(FALLOCATE,       fallocate,       op_fallocate,             OWN)         \
    X(COPY_FILE_RANGE, copy_file_range, op_copy_file_range,       OWN)         \
    X(LSEEK,           lseek,           op_lseek,                 OWN)         \
    X(WRITE_FD,        write_buf,       pyfuse_op_write_buf,      ALWAYS)

#endif
