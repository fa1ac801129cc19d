/* Every C-to-Python entry point. build_ffi.py wraps this file in extern "Python+C" { ... } for
 * cffi; the C sources include it as plain prototypes. Each returns 0 or a negative errno unless
 * noted; h is the session's ffi.new_handle(). */
int pyfuse_cb_init(void *h);
void pyfuse_cb_destroy(void *h);
int pyfuse_cb_getattr(void *h, const char *path, struct pyfuse_attr *out, uint64_t fh, int has_fh);
int pyfuse_cb_readlink(void *h, const char *path, char *buf, size_t size);
int pyfuse_cb_mknod(void *h, const char *path, uint32_t mode, uint64_t rdev);
int pyfuse_cb_mkdir(void *h, const char *path, uint32_t mode);
int pyfuse_cb_unlink(void *h, const char *path);
int pyfuse_cb_rmdir(void *h, const char *path);
int pyfuse_cb_symlink(void *h, const char *target, const char *path);
int pyfuse_cb_rename(void *h, const char *old, const char *new, unsigned int flags);
int pyfuse_cb_link(void *h, const char *old, const char *new);
int pyfuse_cb_chmod(void *h, const char *path, uint32_t mode, uint64_t fh, int has_fh);
int pyfuse_cb_chown(void *h, const char *path, int64_t uid, int64_t gid, uint64_t fh, int has_fh);
int pyfuse_cb_truncate(void *h, const char *path, int64_t size, uint64_t fh, int has_fh);
int pyfuse_cb_open(void *h, const char *path, struct pyfuse_open *fi);
int pyfuse_cb_create(void *h, const char *path, uint32_t mode, struct pyfuse_open *fi);
int pyfuse_cb_read(void *h, const char *path, char *buf, size_t size, int64_t off, uint64_t fh,
                   struct pyfuse_fdrange *fdr);
int pyfuse_cb_write_fd(void *h, const char *path, size_t size, int64_t off, uint64_t fh,
                       struct pyfuse_fdrange *fdr);
int pyfuse_cb_write(void *h, const char *path, const char *buf, size_t size, int64_t off,
                    uint64_t fh);
int pyfuse_cb_statfs(void *h, const char *path, struct pyfuse_statvfs *out);
int pyfuse_cb_flush(void *h, const char *path, uint64_t fh);
int pyfuse_cb_release(void *h, const char *path, uint64_t fh, int flags);
int pyfuse_cb_fsync(void *h, const char *path, int datasync, uint64_t fh);
int pyfuse_cb_setxattr(void *h, const char *path, const char *name, const char *value, size_t size,
                       int flags);
int pyfuse_cb_getxattr(void *h, const char *path, const char *name, char *value, size_t size);
int pyfuse_cb_listxattr(void *h, const char *path, char *list, size_t size);
int pyfuse_cb_removexattr(void *h, const char *path, const char *name);
int pyfuse_cb_opendir(void *h, const char *path, struct pyfuse_dir *d);
int pyfuse_cb_readdir(void *h, const char *path, int64_t off, struct pyfuse_dir *dir,
                      struct pyfuse_fill *fill, int plus);
int pyfuse_cb_releasedir(void *h, const char *path, struct pyfuse_dir *dir);
int pyfuse_cb_fsyncdir(void *h, const char *path, int datasync, uint64_t fh);
int pyfuse_cb_access(void *h, const char *path, int mask);
int pyfuse_cb_utimens(void *h, const char *path, int64_t atime_ns, int64_t mtime_ns, int which,
                      uint64_t fh, int has_fh);
int pyfuse_cb_lock(void *h, const char *path, uint64_t fh, int cmd, struct pyfuse_flock *lock);
int pyfuse_cb_flock(void *h, const char *path, uint64_t fh, int op);
int pyfuse_cb_fallocate(void *h, const char *path, int mode, int64_t off, int64_t len, uint64_t fh);
int64_t pyfuse_cb_copy_file_range(void *h, const char *path_in, uint64_t fh_in, int64_t off_in,
                                  const char *path_out, uint64_t fh_out, int64_t off_out,
                                  size_t size, int flags);
int64_t pyfuse_cb_lseek(void *h, const char *path, int64_t off, int whence, uint64_t fh);
int pyfuse_cb_ioctl(void *h, const char *path, unsigned int cmd, uint64_t arg, uint64_t fh,
                    unsigned int flags, void *data, size_t in_size, size_t out_size);
/* ph: a poll handle (NULL: the kernel wants no notification), owned by Python from here on */
int pyfuse_cb_poll(void *h, const char *path, uint64_t fh, void *ph, unsigned int *revents);
void pyfuse_cb_log(int level, const char *msg);
