/* Every C-to-Python entry point. build_ffi.py wraps this file in extern "Python+C" { ... } for
 * cffi; the C sources include it as plain prototypes. Each returns 0 or a negative errno unless
 * noted; h is the session's number (pyfuse._core.dispatch.SESSIONS). */
int pyfuse_cb_init(uint64_t h);
void pyfuse_cb_destroy(uint64_t h);
/* getattr answers in the thread's struct pyfuse_out (the cheap crossing, pyfuse_cdef.h): its
 * path is in the struct's name (pathlen bytes; -1: none; too long: pyfuse_out_path()), and
 * on 0 the attributes are the struct's attr (at PYFUSE_REPLY_AT or more: the address of
 * the Attr answered, pyfuse_cdef.h). fgetattr: the same with the open file's handle
 * (one Python function serves both; the common getattr crosses with three integers). */
int64_t pyfuse_cb_getattr(uint64_t h, unsigned int slot, int64_t pathlen);
int64_t pyfuse_cb_fgetattr(uint64_t h, unsigned int slot, int64_t pathlen, uint64_t fh);
int pyfuse_cb_readlink(uint64_t h, const char *path, char *buf, size_t size);
int pyfuse_cb_mknod(uint64_t h, const char *path, uint32_t mode, uint64_t rdev);
int pyfuse_cb_mkdir(uint64_t h, const char *path, uint32_t mode);
int pyfuse_cb_unlink(uint64_t h, const char *path);
int pyfuse_cb_rmdir(uint64_t h, const char *path);
int pyfuse_cb_symlink(uint64_t h, const char *target, const char *path);
int pyfuse_cb_rename(uint64_t h, const char *old, const char *new, unsigned int flags);
int pyfuse_cb_link(uint64_t h, const char *old, const char *new);
int pyfuse_cb_chmod(uint64_t h, const char *path, uint32_t mode, uint64_t fh, int has_fh);
int pyfuse_cb_chown(uint64_t h, const char *path, int64_t uid, int64_t gid, uint64_t fh, int has_fh);
int pyfuse_cb_truncate(uint64_t h, const char *path, int64_t size, uint64_t fh, int has_fh);
int pyfuse_cb_open(uint64_t h, const char *path, struct pyfuse_open *fi);
int pyfuse_cb_create(uint64_t h, const char *path, uint32_t mode, struct pyfuse_open *fi);
/* read's path as getattr's; returns the bytes it copied into buf, PYFUSE_REPLY_FDRANGE (the
 * data is in out->fdr's range of a file descriptor) or an errno; size <= PYFUSE_DATA_MAX */
int pyfuse_cb_read(uint64_t h, unsigned int slot, int64_t pathlen, char *buf, size_t size,
                   int64_t off, uint64_t fh);
int pyfuse_cb_write_fd(uint64_t h, const char *path, size_t size, int64_t off, uint64_t fh,
                       struct pyfuse_fdrange *fdr);
/* write's path as getattr's */
int pyfuse_cb_write(uint64_t h, unsigned int slot, int64_t pathlen, const char *buf, size_t size,
                    int64_t off, uint64_t fh);
int pyfuse_cb_statfs(uint64_t h, const char *path, struct pyfuse_statvfs *out);
int pyfuse_cb_flush(uint64_t h, const char *path, uint64_t fh);
int pyfuse_cb_release(uint64_t h, const char *path, uint64_t fh, int flags);
int pyfuse_cb_fsync(uint64_t h, const char *path, int datasync, uint64_t fh);
int pyfuse_cb_setxattr(uint64_t h, const char *path, const char *name, const char *value, size_t size,
                       int flags);
int pyfuse_cb_getxattr(uint64_t h, const char *path, const char *name, char *value, size_t size);
int pyfuse_cb_listxattr(uint64_t h, const char *path, char *list, size_t size);
int pyfuse_cb_removexattr(uint64_t h, const char *path, const char *name);
int pyfuse_cb_opendir(uint64_t h, const char *path, struct pyfuse_dir *d);
int pyfuse_cb_readdir(uint64_t h, const char *path, int64_t off, struct pyfuse_dir *dir,
                      struct pyfuse_fill *fill, int plus);
int pyfuse_cb_releasedir(uint64_t h, const char *path, struct pyfuse_dir *dir);
int pyfuse_cb_fsyncdir(uint64_t h, const char *path, int datasync, uint64_t fh);
int pyfuse_cb_access(uint64_t h, const char *path, int mask);
int pyfuse_cb_utimens(uint64_t h, const char *path, int64_t atime_ns, int64_t mtime_ns, int which,
                      uint64_t fh, int has_fh);
int pyfuse_cb_lock(uint64_t h, const char *path, uint64_t fh, int cmd, struct pyfuse_flock *lock);
int pyfuse_cb_flock(uint64_t h, const char *path, uint64_t fh, int op);
int pyfuse_cb_fallocate(uint64_t h, const char *path, int mode, int64_t off, int64_t len, uint64_t fh);
int64_t pyfuse_cb_copy_file_range(uint64_t h, const char *path_in, uint64_t fh_in, int64_t off_in,
                                  const char *path_out, uint64_t fh_out, int64_t off_out,
                                  size_t size, int flags);
int64_t pyfuse_cb_lseek(uint64_t h, const char *path, int64_t off, int whence, uint64_t fh);
int pyfuse_cb_ioctl(uint64_t h, const char *path, unsigned int cmd, uint64_t arg, uint64_t fh,
                    unsigned int flags, void *data, size_t in_size, size_t out_size);
/* ph: a poll handle (NULL: the kernel wants no notification), owned by Python from here on */
int pyfuse_cb_poll(uint64_t h, const char *path, uint64_t fh, void *ph, unsigned int *revents);
void pyfuse_cb_log(int level, const char *msg);
