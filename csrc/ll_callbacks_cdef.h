/* The inode API's C-to-Python entry points (build_ffi.py wraps this file in
 * extern "Python+C" { ... }; the C sources include it as plain prototypes). h is the session's
 * ffi.new_handle(), req the request (void *: fuse_req_t). Each returns 0 when the request has
 * been answered or will be (an async handler), else a negative errno that the trampoline
 * replies; see pyfuse_cdef.h. */
int pyfuse_ll_cb_init(void *h);
void pyfuse_ll_cb_destroy(void *h);
int pyfuse_ll_cb_lookup(void *h, void *req, uint64_t parent, const char *name);
int pyfuse_ll_cb_forget(void *h, void *req, const struct pyfuse_forget *forgets, size_t count);
int pyfuse_ll_cb_getattr(void *h, void *req, uint64_t ino, uint64_t fh, int has_fh);
int pyfuse_ll_cb_setattr(void *h, void *req, uint64_t ino, const struct pyfuse_attr *attr,
                         int to_set, uint64_t fh, int has_fh);
int pyfuse_ll_cb_readlink(void *h, void *req, uint64_t ino);
int pyfuse_ll_cb_mknod(void *h, void *req, uint64_t parent, const char *name, uint32_t mode,
                       uint64_t rdev);
int pyfuse_ll_cb_mkdir(void *h, void *req, uint64_t parent, const char *name, uint32_t mode);
int pyfuse_ll_cb_unlink(void *h, void *req, uint64_t parent, const char *name);
int pyfuse_ll_cb_rmdir(void *h, void *req, uint64_t parent, const char *name);
int pyfuse_ll_cb_symlink(void *h, void *req, const char *target, uint64_t parent,
                         const char *name);
int pyfuse_ll_cb_rename(void *h, void *req, uint64_t parent, const char *name,
                        uint64_t newparent, const char *newname, unsigned int flags);
int pyfuse_ll_cb_link(void *h, void *req, uint64_t ino, uint64_t newparent,
                      const char *newname);
int pyfuse_ll_cb_open(void *h, void *req, uint64_t ino, int flags);
int pyfuse_ll_cb_read(void *h, void *req, uint64_t ino, size_t size, int64_t off, uint64_t fh);
int pyfuse_ll_cb_write(void *h, void *req, uint64_t ino, const char *buf, size_t size,
                       int64_t off, uint64_t fh);
int pyfuse_ll_cb_flush(void *h, void *req, uint64_t ino, uint64_t fh);
int pyfuse_ll_cb_release(void *h, void *req, uint64_t ino, uint64_t fh, int flags);
int pyfuse_ll_cb_fsync(void *h, void *req, uint64_t ino, int datasync, uint64_t fh);
int pyfuse_ll_cb_opendir(void *h, void *req, uint64_t ino, int flags, struct pyfuse_dir *d);
int pyfuse_ll_cb_readdir(void *h, void *req, uint64_t ino, int64_t off, struct pyfuse_dir *d,
                         struct pyfuse_fill *fill, int plus);
int pyfuse_ll_cb_releasedir(void *h, void *req, uint64_t ino, struct pyfuse_dir *d);
int pyfuse_ll_cb_fsyncdir(void *h, void *req, uint64_t ino, int datasync, uint64_t fh);
int pyfuse_ll_cb_statfs(void *h, void *req, uint64_t ino);
int pyfuse_ll_cb_setxattr(void *h, void *req, uint64_t ino, const char *name,
                          const char *value, size_t size, int flags);
int pyfuse_ll_cb_getxattr(void *h, void *req, uint64_t ino, const char *name, size_t size);
int pyfuse_ll_cb_listxattr(void *h, void *req, uint64_t ino, size_t size);
int pyfuse_ll_cb_removexattr(void *h, void *req, uint64_t ino, const char *name);
int pyfuse_ll_cb_access(void *h, void *req, uint64_t ino, int mask);
int pyfuse_ll_cb_create(void *h, void *req, uint64_t parent, const char *name, uint32_t mode,
                        int flags);
int pyfuse_ll_cb_getlk(void *h, void *req, uint64_t ino, uint64_t fh,
                       const struct pyfuse_flock *lock);
int pyfuse_ll_cb_setlk(void *h, void *req, uint64_t ino, uint64_t fh,
                       const struct pyfuse_flock *lock, int sleep);
int pyfuse_ll_cb_flock(void *h, void *req, uint64_t ino, uint64_t fh, int op);
int pyfuse_ll_cb_fallocate(void *h, void *req, uint64_t ino, int mode, int64_t off,
                           int64_t length, uint64_t fh);
int pyfuse_ll_cb_copy_file_range(void *h, void *req, uint64_t ino_in, int64_t off_in,
                                 uint64_t fh_in, uint64_t ino_out, int64_t off_out,
                                 uint64_t fh_out, size_t size, int flags);
int pyfuse_ll_cb_lseek(void *h, void *req, uint64_t ino, int64_t off, int whence, uint64_t fh);
int pyfuse_ll_cb_ioctl(void *h, void *req, uint64_t ino, unsigned int cmd, uint64_t arg,
                       uint64_t fh, unsigned int flags, const char *in_buf, size_t in_size,
                       size_t out_size);
/* ph: a poll handle (NULL: the kernel wants no notification), owned by Python from here on */
int pyfuse_ll_cb_poll(void *h, void *req, uint64_t ino, uint64_t fh, void *ph);
/* The kernel interrupted a request watched with pyfuse_ll_watch(req, key). */
void pyfuse_ll_cb_interrupt(void *h, uint64_t key);
