"""The ctypes side of fusepy's and mfusepy's modules: the C types and structures they export
(``c_stat``, ``c_timespec``, ``fuse_context``, ``fuse_operations``, ...), their helpers
(``set_st_attrs``, ``time_of_timespec``, ``get_fuse_version``) and the type aliases.

pyfuse serves FUSE() through its own C shim, not through these structures: they are here for
filesystems that use them themselves (filling a ``c_stat`` with ``set_st_attrs``, reading a
``c_timespec``, sizing a buffer), with the Linux layouts of libfuse 3 and glibc (so they
match what the kernel and libfuse use). What cannot work without libfuse's ctypes entry
points (``fuse_main_real``) raises NotImplementedError naming itself when called.
"""
from __future__ import annotations

import ctypes
import logging
from typing import Any, Iterable, Union

__all__ = [
    "c_dev_t", "c_fsblkcnt_t", "c_fsfilcnt_t", "c_gid_t", "c_mode_t", "c_off_t", "c_pid_t",
    "c_uid_t", "c_timespec", "c_utimbuf", "c_stat", "c_statvfs", "c_flock_t",
    "fuse_context", "fuse_file_info_struct", "fuse_buf_flags", "fuse_buf", "fuse_bufvec",
    "fuse_conn_info", "fuse_config", "fuse_pollhandle_p", "fuse_operations", "getxattr_t",
    "setxattr_t", "c_byte_p", "c_uint64_p", "c_stat_p", "c_statvfs_p", "c_utimbuf_p",
    "fuse_fi_p", "fuse_bufvec_p", "fuse_bufvec_pp", "FuseConfigPointer",
    "FuseConnInfoPointer", "FieldsEntry", "BitFieldsEntry", "ReadDirResult",
    "time_of_timespec", "set_st_attrs", "get_fuse_version", "fuse_main_real",
    "callback_logger", "basestring",
]

# -- glibc's types on Linux (LP64) ------------------------------------------------------------
c_dev_t = ctypes.c_ulong
c_fsblkcnt_t = ctypes.c_ulong
c_fsfilcnt_t = ctypes.c_ulong
c_gid_t = ctypes.c_uint
c_mode_t = ctypes.c_uint
c_off_t = ctypes.c_long
c_pid_t = ctypes.c_int
c_uid_t = ctypes.c_uint
basestring = str  # fusepy's Python 2 alias

#: mfusepy's type aliases (for annotations).
FieldsEntry = Union[tuple[str, type], tuple[str, type, int]]
BitFieldsEntry = tuple[str, type, int]
ReadDirResult = Iterable[Union[str, tuple[str, dict[str, int], int], tuple[str, int, int]]]


class c_timespec(ctypes.Structure):  # noqa: N801  (fusepy's names)
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class c_utimbuf(ctypes.Structure):  # noqa: N801
    _fields_ = [("actime", c_timespec), ("modtime", c_timespec)]


class c_stat(ctypes.Structure):  # noqa: N801
    """``struct stat`` (x86_64 and aarch64 glibc share this order of fields)."""

    _fields_ = [("st_dev", c_dev_t), ("st_ino", ctypes.c_ulong), ("st_nlink", ctypes.c_ulong),
                ("st_mode", c_mode_t), ("st_uid", c_uid_t), ("st_gid", c_gid_t),
                ("__pad0", ctypes.c_int), ("st_rdev", c_dev_t), ("st_size", c_off_t),
                ("st_blksize", ctypes.c_long), ("st_blocks", ctypes.c_long),
                ("st_atimespec", c_timespec), ("st_mtimespec", c_timespec),
                ("st_ctimespec", c_timespec), ("reserved", ctypes.c_long * 3)]


class c_statvfs(ctypes.Structure):  # noqa: N801
    _fields_ = [("f_bsize", ctypes.c_ulong), ("f_frsize", ctypes.c_ulong),
                ("f_blocks", c_fsblkcnt_t), ("f_bfree", c_fsblkcnt_t),
                ("f_bavail", c_fsblkcnt_t), ("f_files", c_fsfilcnt_t),
                ("f_ffree", c_fsfilcnt_t), ("f_favail", c_fsfilcnt_t),
                ("f_fsid", ctypes.c_ulong), ("f_flag", ctypes.c_ulong),
                ("f_namemax", ctypes.c_ulong), ("f_type", ctypes.c_uint),
                ("__f_spare", ctypes.c_uint * 5)]


class c_flock_t(ctypes.Structure):  # noqa: N801
    _fields_ = [("l_type", ctypes.c_short), ("l_whence", ctypes.c_short),
                ("l_start", c_off_t), ("l_len", c_off_t), ("l_pid", c_pid_t),
                ("l_sysid", ctypes.c_long)]


class fuse_context(ctypes.Structure):  # noqa: N801
    _fields_ = [("fuse", ctypes.c_void_p), ("uid", c_uid_t), ("gid", c_gid_t),
                ("pid", c_pid_t), ("private_data", ctypes.c_void_p), ("umask", c_mode_t)]


class fuse_file_info_struct(ctypes.Structure):  # noqa: N801
    """libfuse 3's ``struct fuse_file_info`` as a ctypes structure (pyfuse.compat's
    ``fuse_file_info``, what raw_fi filesystems get, is its subclass ``RawFileInfo``)."""

    _fields_ = [("flags", ctypes.c_int), ("writepage", ctypes.c_uint, 1),
                ("direct_io", ctypes.c_uint, 1), ("keep_cache", ctypes.c_uint, 1),
                ("parallel_direct_writes", ctypes.c_uint, 1), ("flush", ctypes.c_uint, 1),
                ("nonseekable", ctypes.c_uint, 1), ("flock_release", ctypes.c_uint, 1),
                ("cache_readdir", ctypes.c_uint, 1), ("noflush", ctypes.c_uint, 1),
                ("padding", ctypes.c_uint, 23), ("padding2", ctypes.c_uint, 32),
                ("fh", ctypes.c_uint64), ("lock_owner", ctypes.c_uint64),
                ("poll_events", ctypes.c_uint32)]


fuse_buf_flags = ctypes.c_int


class fuse_buf(ctypes.Structure):  # noqa: N801
    _fields_ = [("size", ctypes.c_size_t), ("flags", fuse_buf_flags),
                ("mem", ctypes.c_void_p), ("fd", ctypes.c_int), ("pos", c_off_t)]


class fuse_bufvec(ctypes.Structure):  # noqa: N801
    _fields_ = [("count", ctypes.c_size_t), ("idx", ctypes.c_size_t),
                ("off", ctypes.c_size_t), ("buf", ctypes.POINTER(fuse_buf))]


class fuse_conn_info(ctypes.Structure):  # noqa: N801
    _fields_ = [("proto_major", ctypes.c_uint), ("proto_minor", ctypes.c_uint),
                ("max_write", ctypes.c_uint), ("max_read", ctypes.c_uint),
                ("max_readahead", ctypes.c_uint), ("capable", ctypes.c_uint),
                ("want", ctypes.c_uint), ("max_background", ctypes.c_uint),
                ("congestion_threshold", ctypes.c_uint), ("time_gran", ctypes.c_uint),
                ("reserved", ctypes.c_uint * 22)]


class fuse_config(ctypes.Structure):  # noqa: N801
    _fields_ = [("set_gid", ctypes.c_int), ("gid", ctypes.c_uint), ("set_uid", ctypes.c_int),
                ("uid", ctypes.c_uint), ("set_mode", ctypes.c_int), ("umask", ctypes.c_uint),
                ("entry_timeout", ctypes.c_double), ("negative_timeout", ctypes.c_double),
                ("attr_timeout", ctypes.c_double), ("intr", ctypes.c_int),
                ("intr_signal", ctypes.c_int), ("remember", ctypes.c_int),
                ("hard_remove", ctypes.c_int), ("use_ino", ctypes.c_int),
                ("readdir_ino", ctypes.c_int), ("direct_io", ctypes.c_int),
                ("kernel_cache", ctypes.c_int), ("auto_cache", ctypes.c_int),
                ("no_rofd_flush", ctypes.c_int), ("ac_attr_timeout_set", ctypes.c_int),
                ("ac_attr_timeout", ctypes.c_double), ("nullpath_ok", ctypes.c_int),
                ("show_help", ctypes.c_int), ("modules", ctypes.c_char_p),
                ("debug", ctypes.c_int)]


fuse_pollhandle_p = ctypes.c_void_p
c_byte_p = ctypes.POINTER(ctypes.c_byte)
c_uint64_p = ctypes.POINTER(ctypes.c_uint64)
c_stat_p = ctypes.POINTER(c_stat)
c_statvfs_p = ctypes.POINTER(c_statvfs)
c_utimbuf_p = ctypes.POINTER(c_utimbuf)
fuse_fi_p = ctypes.POINTER(fuse_file_info_struct)
fuse_bufvec_p = ctypes.POINTER(fuse_bufvec)
fuse_bufvec_pp = ctypes.POINTER(fuse_bufvec_p)
FuseConfigPointer = ctypes.POINTER(fuse_config)
FuseConnInfoPointer = ctypes.POINTER(fuse_conn_info)

getxattr_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, c_byte_p,
                              ctypes.c_size_t)
setxattr_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, c_byte_p,
                              ctypes.c_size_t, ctypes.c_int)

_OPERATIONS = ["getattr", "readlink", "getdir", "mknod", "mkdir", "unlink", "rmdir", "symlink",
               "rename", "link", "chmod", "chown", "truncate", "utime", "open", "read",
               "write", "statfs", "flush", "release", "fsync", "setxattr", "getxattr",
               "listxattr", "removexattr", "opendir", "readdir", "releasedir", "fsyncdir",
               "init", "destroy", "access", "create", "ftruncate", "fgetattr", "lock",
               "utimens", "bmap", "flag_nullpath_ok", "flag_nopath", "flag_utime_omit_ok",
               "flag_reserved", "ioctl", "poll", "write_buf", "read_buf", "flock",
               "fallocate"]


_OPERATIONS_3 = ["getattr", "readlink", "mknod", "mkdir", "unlink", "rmdir", "symlink", "rename",
                 "link", "chmod", "chown", "truncate", "open", "read", "write", "statfs",
                 "flush", "release", "fsync", "setxattr", "getxattr", "listxattr",
                 "removexattr", "opendir", "readdir", "releasedir", "fsyncdir", "init",
                 "destroy", "access", "create", "lock", "utimens", "bmap", "ioctl", "poll",
                 "write_buf", "read_buf", "flock", "fallocate", "copy_file_range", "lseek"]


class fuse_operations(ctypes.Structure):  # noqa: N801
    """The names of libfuse 2's operations, as fusepy's structure has them (``_fields_``);
    pyfuse registers a filesystem's methods with its own shim, never through this table."""

    _fields_ = [(name, ctypes.c_void_p) for name in _OPERATIONS]


class fuse3_operations(ctypes.Structure):  # noqa: N801
    """libfuse 3's ``struct fuse_operations`` (mfusepy's on libfuse 3, with its layout)."""

    _fields_ = [(name, ctypes.c_void_p) for name in _OPERATIONS_3]


#: mfusepy's logger of the calls LoggingMixIn and log_callback log.
callback_logger = logging.getLogger("fuse.log-mixin")


def time_of_timespec(ts: Any, use_ns: bool = False) -> float:
    """A ``c_timespec`` as float seconds, or integer nanoseconds with ``use_ns``."""
    if use_ns:
        return ts.tv_sec * 10 ** 9 + ts.tv_nsec  # type: ignore[no-any-return]
    return ts.tv_sec + ts.tv_nsec / 1e9  # type: ignore[no-any-return]


def set_st_attrs(st: Any, attrs: dict[str, Any], use_ns: bool = False) -> None:
    """Fill ``st`` (a ``c_stat``) from a getattr-style dict: ``st_atime``/``st_mtime``/
    ``st_ctime`` (float seconds, or nanoseconds with ``use_ns``) go into the timespecs, other
    keys that are fields are set, the rest ignored."""
    for key, val in attrs.items():
        if key in ("st_atime", "st_mtime", "st_ctime", "st_birthtime"):
            ts = getattr(st, key + "spec", None)
            if ts is None:
                continue
            if use_ns:
                ts.tv_sec, ts.tv_nsec = divmod(int(val), 10 ** 9)
            else:
                ts.tv_sec = int(val)
                ts.tv_nsec = int((val - ts.tv_sec) * 1e9)
        elif getattr(st, key, None) is not None:
            setattr(st, key, val)


def get_fuse_version(libfuse: Any = None) -> tuple[int, int]:
    """(major, minor) of the libfuse pyfuse runs on (``libfuse``, mfusepy's ctypes library
    handle, is not needed: pyfuse asks its own shim)."""
    from .._pyfuse_c import lib

    v = int(lib.pyfuse_libfuse_version())
    return (v // 10, v % 10) if v < 100 else (v // 100, v % 100)


def fuse_main_real(*args: Any) -> int:
    """libfuse 2's entry point, which fusepy and mfusepy call through ctypes: pyfuse.compat
    has no ctypes libfuse; ``FUSE(operations, mountpoint)`` mounts and serves."""
    raise NotImplementedError("pyfuse.compat.fuse_main_real: pyfuse serves FUSE() with its own "
                              "C shim, there is no ctypes libfuse to call; use FUSE(operations, "
                              "mountpoint, ...)")
