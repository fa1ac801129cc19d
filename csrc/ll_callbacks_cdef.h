/* The inode API's C-to-Python entry points (build_ffi.py wraps this file in
 * extern "Python+C" { ... }; the C sources include it as plain prototypes). h is the session's
 * number (pyfuse._core.dispatch.SESSIONS), req the request (pyfuse_req: an integer). Each
 * returns 0 when the request has been answered or will be (an async handler), else a negative
 * errno that the trampoline replies, or a PYFUSE_REPLY_* code (pyfuse_cdef.h) that C replies:
 * PYFUSE_REPLY_NONE (success) from those whose success says nothing, PYFUSE_REPLY_COUNT + n
 * from write (and read); those with a slot argument (the thread's struct pyfuse_out:
 * Session._outs[slot]) what they wrote there, and those that answer attributes or an entry
 * (int64_t) the address of a plain Attr (PYFUSE_REPLY_AT). */
int pyfuse_ll_cb_init(uint64_t h);
void pyfuse_ll_cb_destroy(uint64_t h);
/* lookup's name is in out->name (namelen bytes, at most 255) */
int64_t pyfuse_ll_cb_lookup(uint64_t h, unsigned int slot, uint64_t parent, size_t namelen);
int pyfuse_ll_cb_forget(uint64_t h, pyfuse_req req, const struct pyfuse_forget *forgets, size_t count);
/* getattr without a file handle (stat), and with one (fstat: fgetattr, the same Python
 * function): the common request crosses with three integers, not five */
int64_t pyfuse_ll_cb_getattr(uint64_t h, unsigned int slot, uint64_t ino);
int64_t pyfuse_ll_cb_fgetattr(uint64_t h, unsigned int slot, uint64_t ino, uint64_t fh);
int64_t pyfuse_ll_cb_setattr(uint64_t h, unsigned int slot, uint64_t ino,
                             const struct pyfuse_attr *attr, int to_set, uint64_t fh, int has_fh);
int pyfuse_ll_cb_readlink(uint64_t h, pyfuse_req req, uint64_t ino);
int64_t pyfuse_ll_cb_mknod(uint64_t h, unsigned int slot, uint64_t parent, const char *name,
                           uint32_t mode, uint64_t rdev);
int64_t pyfuse_ll_cb_mkdir(uint64_t h, unsigned int slot, uint64_t parent, const char *name,
                           uint32_t mode);
int pyfuse_ll_cb_unlink(uint64_t h, pyfuse_req req, uint64_t parent, const char *name);
int pyfuse_ll_cb_rmdir(uint64_t h, pyfuse_req req, uint64_t parent, const char *name);
int64_t pyfuse_ll_cb_symlink(uint64_t h, unsigned int slot, const char *target, uint64_t parent,
                             const char *name);
int pyfuse_ll_cb_rename(uint64_t h, pyfuse_req req, uint64_t parent, const char *name,
                        uint64_t newparent, const char *newname, unsigned int flags);
int64_t pyfuse_ll_cb_link(uint64_t h, unsigned int slot, uint64_t ino, uint64_t newparent,
                          const char *newname);
int pyfuse_ll_cb_open(uint64_t h, unsigned int slot, uint64_t ino, int flags);
/* read: PYFUSE_REPLY_COUNT + n replies the first n bytes of out->name (an answer that fits) */
int pyfuse_ll_cb_read(uint64_t h, pyfuse_req req, unsigned int slot, uint64_t ino, size_t size,
                      int64_t off, uint64_t fh);
int pyfuse_ll_cb_write(uint64_t h, pyfuse_req req, uint64_t ino, const char *buf, size_t size,
                       int64_t off, uint64_t fh);
int pyfuse_ll_cb_flush(uint64_t h, pyfuse_req req, uint64_t ino, uint64_t fh);
int pyfuse_ll_cb_release(uint64_t h, pyfuse_req req, uint64_t ino, uint64_t fh, int flags);
int pyfuse_ll_cb_fsync(uint64_t h, pyfuse_req req, uint64_t ino, int datasync, uint64_t fh);
int pyfuse_ll_cb_opendir(uint64_t h, pyfuse_req req, uint64_t ino, int flags, struct pyfuse_dir *d);
int pyfuse_ll_cb_readdir(uint64_t h, pyfuse_req req, uint64_t ino, int64_t off, struct pyfuse_dir *d,
                         struct pyfuse_fill *fill, int plus);
int pyfuse_ll_cb_releasedir(uint64_t h, pyfuse_req req, uint64_t ino, struct pyfuse_dir *d);
int pyfuse_ll_cb_fsyncdir(uint64_t h, pyfuse_req req, uint64_t ino, int datasync, uint64_t fh);
int pyfuse_ll_cb_statfs(uint64_t h, pyfuse_req req, uint64_t ino);
int pyfuse_ll_cb_setxattr(uint64_t h, pyfuse_req req, uint64_t ino, const char *name,
                          const char *value, size_t size, int flags);
int pyfuse_ll_cb_getxattr(uint64_t h, pyfuse_req req, uint64_t ino, const char *name, size_t size);
int pyfuse_ll_cb_listxattr(uint64_t h, pyfuse_req req, uint64_t ino, size_t size);
int pyfuse_ll_cb_removexattr(uint64_t h, pyfuse_req req, uint64_t ino, const char *name);
int pyfuse_ll_cb_access(uint64_t h, pyfuse_req req, uint64_t ino, int mask);
int pyfuse_ll_cb_create(uint64_t h, pyfuse_req req, uint64_t parent, const char *name, uint32_t mode,
                        int flags);
int pyfuse_ll_cb_getlk(uint64_t h, pyfuse_req req, uint64_t ino, uint64_t fh,
                       const struct pyfuse_flock *lock);
int pyfuse_ll_cb_setlk(uint64_t h, pyfuse_req req, uint64_t ino, uint64_t fh,
                       const struct pyfuse_flock *lock, int sleep);
int pyfuse_ll_cb_flock(uint64_t h, pyfuse_req req, uint64_t ino, uint64_t fh, int op);
int pyfuse_ll_cb_fallocate(uint64_t h, pyfuse_req req, uint64_t ino, int mode, int64_t off,
                           int64_t length, uint64_t fh);
int pyfuse_ll_cb_copy_file_range(uint64_t h, pyfuse_req req, uint64_t ino_in, int64_t off_in,
                                 uint64_t fh_in, uint64_t ino_out, int64_t off_out,
                                 uint64_t fh_out, size_t size, int flags);
int pyfuse_ll_cb_lseek(uint64_t h, pyfuse_req req, uint64_t ino, int64_t off, int whence, uint64_t fh);
int pyfuse_ll_cb_ioctl(uint64_t h, pyfuse_req req, uint64_t ino, unsigned int cmd, uint64_t arg,
                       uint64_t fh, unsigned int flags, const char *in_buf, size_t in_size,
                       size_t out_size);
/* ph: a poll handle (NULL: the kernel wants no notification), owned by Python from here on */
int pyfuse_ll_cb_poll(uint64_t h, pyfuse_req req, uint64_t ino, uint64_t fh, void *ph);
/* The kernel interrupted a request watched with pyfuse_ll_watch(req, key). */
void pyfuse_ll_cb_interrupt(uint64_t h, uint64_t key);
