"""mfusepy filesystems on pyfuse, unchanged: ``import pyfuse.compat.mfusepy as mfusepy`` (the
runner, ``python -m pyfuse.compat``, makes ``import mfusepy`` resolve here).

mfusepy 3.1's public names on :mod:`pyfuse.compat`'s engine, with mfusepy's conventions where
they differ from fusepy's: the filesystem's methods are called as attributes (never through
``__call__``), ``create`` gets ``flags`` unless the attribute has two parameters,
``truncate`` never gets the fh, every default of :class:`Operations` is left to libfuse when
not overridden (ENOSYS, not fusepy's EROFS), and :class:`LoggingMixIn` wraps the methods it
hands out (``__getattribute__``), as mfusepy's does.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from . import (
    ENOATTR,
    ENOTSUP,
    FuseOSError,
    _log_method_call,
    basestring,
    c_dev_t,
    c_fsblkcnt_t,
    c_fsfilcnt_t,
    c_gid_t,
    c_mode_t,
    c_off_t,
    c_pid_t,
    c_stat,
    c_statvfs,
    c_timespec,
    c_uid_t,
    c_utimbuf,
    fuse_context,
    fuse_exit,
    fuse_file_info,
    fuse_get_context,
    fuse_version_major,
    fuse_version_minor,
    get_fuse_version,
    getxattr_t,
    log,
    overrides,
    set_st_attrs,
    setxattr_t,
    time_of_timespec,
)
from . import FUSE as _FusepyFUSE
from . import Operations as _FusepyOperations
from ._ctypes import (
    BitFieldsEntry,
    FieldsEntry,
    FuseConfigPointer,
    FuseConnInfoPointer,
    ReadDirResult,
    c_byte_p,
    c_flock_t,
    c_stat_p,
    c_statvfs_p,
    c_uint64_p,
    c_utimbuf_p,
    callback_logger,
    fuse_buf,
    fuse_buf_flags,
    fuse_bufvec,
    fuse_bufvec_p,
    fuse_bufvec_pp,
    fuse_config,
    fuse_conn_info,
    fuse_fi_p,
    fuse_main_real,
    fuse_pollhandle_p,
)
from ._ctypes import fuse3_operations as fuse_operations

__all__ = [
    "FUSE", "Operations", "LoggingMixIn", "FuseOSError", "fuse_get_context", "fuse_exit",
    "ENOTSUP", "ENOATTR", "log_callback", "overrides", "fuse_file_info", "fuse_version_major",
    "fuse_version_minor", "get_fuse_version", "set_st_attrs", "time_of_timespec",
    "callback_logger", "ReadDirResult", "FieldsEntry", "BitFieldsEntry", "c_stat",
    "c_statvfs", "c_timespec", "c_utimbuf", "c_flock_t", "c_dev_t", "c_fsblkcnt_t",
    "c_fsfilcnt_t", "c_gid_t", "c_mode_t", "c_off_t", "c_pid_t", "c_uid_t", "c_byte_p",
    "c_uint64_p", "c_stat_p", "c_statvfs_p", "c_utimbuf_p", "fuse_context", "fuse_conn_info",
    "fuse_config", "fuse_operations", "fuse_buf", "fuse_buf_flags", "fuse_bufvec",
    "fuse_bufvec_p", "fuse_bufvec_pp", "fuse_fi_p", "fuse_pollhandle_p", "FuseConfigPointer",
    "FuseConnInfoPointer", "fuse_main_real", "getxattr_t", "setxattr_t", "basestring", "log",
]


class FUSE(_FusepyFUSE):
    """mfusepy's FUSE: :class:`pyfuse.compat.FUSE` calling the methods as mfusepy does."""

    flavor = "mfusepy"


def _left_to_libfuse(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def default(*args: Any, **kwargs: Any) -> Any:
        return method(*args, **kwargs)

    default.libfuse_ignore = True  # type: ignore[attr-defined]
    return default


class Operations(_FusepyOperations):
    """mfusepy's base class: the same defaults as fusepy's, each one left to libfuse (not
    registered) unless the subclass overrides it."""


for _name, _value in vars(_FusepyOperations).items():
    if callable(_value) and not _name.startswith("_"):
        setattr(Operations, _name, _left_to_libfuse(_value))


class LoggingMixIn:
    """mfusepy's LoggingMixIn: the operations it hands out are wrapped to log their calls and
    results on ``fuse.log-mixin`` at DEBUG (put it before Operations in the bases)."""

    def __getattribute__(self, name: str) -> Any:
        value = super().__getattribute__(name)
        if not name.startswith("_") and callable(value) and hasattr(Operations, name) \
                and not getattr(value, "libfuse_ignore", False):
            return functools.partial(_log_method_call, value)
        return value


def log_callback(method: Callable[..., Any]) -> Callable[..., Any]:
    """mfusepy's decorator: log this method's calls as LoggingMixIn does."""
    def wrap_method_call(*args: Any) -> Any:
        return _log_method_call(method, *args)
    return wrap_method_call
