"""The inode API's C-to-Python entry points (``extern "Python+C"`` in
csrc/ll_callbacks_cdef.h), one per row of csrc/ll_optable.h.

Most are compiled from one body (:data:`_BODY`, with each operation's own parameter list, as
:func:`pyfuse._core.dispatch.callback` does for the path API): call the filesystem's method;
if it returned a coroutine (an ``async def`` method), hand it to the session's event loop and
leave the request pending; else reply through :mod:`._replies`. An exception becomes the
negative errno of the policy, which the C trampoline replies. readdir (the readdir engine),
releasedir, forget, init, destroy and interrupts are written out.
"""
from __future__ import annotations

import re
import struct
import time
import types
from ctypes import addressof as _addressof
from typing import Any

from .._core.convert import ATTR_STRUCT, ENC, FH_LIMIT, opened
from .._core.convert import UTF8 as _UTF8
from .._core.convert import path as _name
from .._core.dispatch import OUT_NAME as _NAME
from .._core.dispatch import OUT_NAME_SIZE as _NAME_SIZE
from .._core.dispatch import OUT_SLOTS, SESSIONS, define, extern, log
from .._core.dispatch import here as _here
from .._core.poll import poll_handle
from .._core.readdir import PENDING
from .._pyfuse_c import ffi, lib
from ..types import Attr, Lock
from . import _replies as R

_buffer = ffi.buffer
_Coro = types.CoroutineType
_reply_dir = lib.pyfuse_ll_reply_dir
_fail_dir = lib.pyfuse_ll_fail_dir
_ATIME_NOW, _MTIME_NOW = lib.FUSE_SET_ATTR_ATIME_NOW, lib.FUSE_SET_ATTR_MTIME_NOW
_SET_ATIME, _SET_MTIME = lib.FUSE_SET_ATTR_ATIME, lib.FUSE_SET_ATTR_MTIME

_BODY = """\
def {name}(h, req, {params}):
    _s = _SESSIONS[h]
    try:
        _r = _s._op_{op}({call})
{fast}        if _r.__class__ is _Coro:
            return _s._defer(_r, req, _reply, _failf, {op!r}, {where_later}, ({extra_tuple}))
        _reply(_s, req, _r{extra})
    except _Refused as _e:
        _s._refused(_e, {op!r}, {where})
    except BaseException as _e:
        return _s._fail(_e, {op!r}, {where})
    return 0
"""
# The same, for an operation whose synchronous success says nothing (unlink, flush, release,
# ...): whatever the handler returned but a coroutine, the callback returns PYFUSE_REPLY_NONE
# and C replies success once it has returned (no call into C while the GIL is held).
_NONE_BODY = """\
def {name}(h, req, {params}):
    _s = _SESSIONS[h]
    try:
        _r = _s._op_{op}({call})
        if _r.__class__ is _Coro:
            return _s._defer(_r, req, _reply, _failf, {op!r}, {where_later}, ())
    except BaseException as _e:
        return _s._fail(_e, {op!r}, {where})
    return _REPLY_NONE
"""
# write's count goes back as PYFUSE_REPLY_COUNT + n, which C replies (anything but an int of
# 0..size takes the general reply, which names the bad value).
_WRITE_FAST = """\
        if _r.__class__ is int and 0 <= _r <= size:
            return _REPLY_COUNT + _r
"""
# open's file handle (None: 0) and open flags (a FileInfo's) go back in the thread's out
# struct (its fh and open_bits), and C replies them (PYFUSE_REPLY_OPEN); a bad value raises
# the BadReturn that names it (convert.opened: a handle of 2**63 or more is a plain_fh
# session's, else refused).
_OPEN_BODY = """\
def {name}(h, slot, {params}):
    _s = _SESSIONS[h]
    try:
        _r = _s._op_{op}({call})
        _o = _s._outs[slot]
        if _o is None:
            _o = _here(_s, slot)
        if _r is None or _r.__class__ is int and 0 <= _r < _FH_LIMIT:
            _put_open(_o, _FH, _r or 0, 0)
            return _REPLY_OPEN
        if _r.__class__ is _Coro:
            return _s._defer(_r, _req(), _reply, _failf, {op!r}, {where_later}, ())
        _put_open(_o, _FH, *_opened(_r, {op!r}, _s))
        return _REPLY_OPEN
    except BaseException as _e:
        return _s._fail(_e, {op!r}, {where})
"""
# The cheap crossing (csrc/pyfuse_cdef.h's struct pyfuse_out): the callbacks of the
# operations that reply attributes or an entry take the thread's slot in the session instead of
# the request (cheaper to pass: a small integer), and a synchronous handler's common results go
# back to C in the thread's out struct (the session's _outs[slot]): the callback returns the
# PYFUSE_REPLY_* code that tells C what to reply once it has returned, with no call into C
# while the GIL is held. A plain Attr is its own C struct: C reads it at the address returned
# (PYFUSE_REPLY_AT; the session holds it in _keep[slot] until the thread's next request),
# nothing copied (copied as it is by the threads beyond the session's slots); a packed entry
# (_replies.ENTRY_STRUCT: pyfuse.compat's, packed and checked) is the struct's first fields,
# with its generation and timeouts, and so is a foreign entry (the session's _foreign:
# pyfuse.compat's EntryAttributes) packed there by the session's _pack_foreign, or, if the
# packing refuses its values, converted (_convert) and replied as what that gives. C checks
# the attributes (inode 0, file type, 32-bit fields) and the timeouts it was given (finite,
# >= 0) and logs a refusal. Anything else, and an async handler's coroutine, takes the
# general reply (_replies) with the request asked of C (_req), which raises the BadReturn that
# names a bad value.
_OUT_BODY = """\
def {name}(h, slot, {params}):
    _s = _SESSIONS[h]
    try:
        _r = _s._op_{op}({call})
        if _r.__class__ is _Attr:
            if slot < _SLOTS:
                _s._keep[slot] = _r
                return _addressof(_r)
            _o = _s._outs[slot]
            if _o is None:
                _o = _here(_s, slot)
            _o[:_ATTR_SIZE] = _r
            return {code}
        if _r.__class__ is _s._foreign:
            _o = _s._outs[slot]
            if _o is None:
                _o = _here(_s, slot)
            try:
                _s._pack_foreign(_o, _r)
                return {code_out}
            except _StructError:
                _r = _s._convert(_r)
        if _r.__class__ is bytes and _s._packed:
            _o = _s._outs[slot]
            if _o is None:
                _o = _here(_s, slot)
            _o[:_ENTRY_SIZE] = _r
            return {code_out}
        if _r.__class__ is _Coro:
            return _s._defer(_r, _req(), _reply, _failf, {op!r}, {where_later}, ())
        _reply(_s, _req(), _r)
    except _Refused as _e:
        _s._refused(_e, {op!r}, {where})
    except BaseException as _e:
        return _s._fail(_e, {op!r}, {where})
    return 0
"""
_CODES = {R.reply_attr: ("_REPLY_ATTR", "_REPLY_ATTR_OUT"),
          R.reply_entry: ("_REPLY_ENTRY", "_REPLY_ENTRY_OUT")}
#: The operations whose callbacks take the slot (csrc/ll_callbacks_cdef.h).
_OUT_OPS = {"lookup", "getattr", "setattr", "mknod", "mkdir", "symlink", "link"}
_ATTR_SIZE = ATTR_STRUCT.size
_ENTRY_SIZE = R.ENTRY_STRUCT.size
if ffi.offsetof("struct pyfuse_out", "attr_timeout") + 8 != _ENTRY_SIZE:
    raise ImportError("pyfuse: struct pyfuse_out does not begin as ENTRY_STRUCT")
_req = lib.pyfuse_current_req
_put_open = struct.Struct("=QQ").pack_into  # struct pyfuse_out's fh and open_bits
_FH = ffi.offsetof("struct pyfuse_out", "fh")
_REPLY_ENTRY, _REPLY_ENTRY_OUT = lib.PYFUSE_REPLY_ENTRY, lib.PYFUSE_REPLY_ENTRY_OUT
_REPLY_COUNT = lib.PYFUSE_REPLY_COUNT


#: (operation, C parameters after req, the method's arguments, reply, fail, extra reply args)
_NAMED = "(parent, name)", "(parent, _name(name))"
_SPECS: list[tuple[str, str, str, Any, Any, str]] = [
    # fh: given by fgetattr (an fstat), the same function (_ALSO)
    ("getattr", "ino, fh=None", "ino, fh", R.reply_attr, R.fail_err, ""),
    ("setattr", "ino, attr, to_set, fh, has_fh",
     "ino, *_setattr_args(attr, to_set), fh if has_fh else None", R.reply_attr, R.fail_err, ""),
    ("readlink", "ino", "ino", R.reply_readlink, R.fail_err, ""),
    ("mknod", "parent, name, mode, rdev", "parent, _name(name), mode, rdev", R.reply_entry,
     R.fail_err, ""),
    ("mkdir", "parent, name, mode", "parent, _name(name), mode", R.reply_entry, R.fail_err, ""),
    ("unlink", "parent, name", "parent, _name(name)", R.reply_none, R.fail_err, ""),
    ("rmdir", "parent, name", "parent, _name(name)", R.reply_none, R.fail_err, ""),
    ("symlink", "target, parent, name", "_name(target), parent, _name(name)", R.reply_entry,
     R.fail_err, ""),
    ("rename", "parent, name, newparent, newname, flags",
     "parent, _name(name), newparent, _name(newname), flags", R.reply_none, R.fail_err, ""),
    ("link", "ino, newparent, newname", "ino, newparent, _name(newname)", R.reply_entry,
     R.fail_err, ""),
    ("open", "ino, flags", "ino, flags", R.reply_open, R.fail_err, ""),
    ("write", "ino, buf, size, off, fh", "ino, _s._wdata(buf, size), off, fh", R.reply_write,
     R.fail_err, "size"),
    ("flush", "ino, fh", "ino, fh", R.reply_none, R.fail_err, ""),
    ("release", "ino, fh, flags", "ino, fh", R.reply_none, R.fail_err, ""),
    ("fsync", "ino, datasync, fh", "ino, bool(datasync), fh", R.reply_none, R.fail_err, ""),
    ("opendir", "ino, flags, d", "ino, flags", R.reply_opendir, R.fail_opendir, "d"),
    ("fsyncdir", "ino, datasync, fh", "ino, bool(datasync), fh", R.reply_none, R.fail_err, ""),
    ("statfs", "ino", "ino", R.reply_statfs, R.fail_err, ""),
    ("setxattr", "ino, name, value, size, flags",
     "ino, _name(name), _buffer(value, size)[:], flags", R.reply_none, R.fail_err, ""),
    ("getxattr", "ino, name, size", "ino, _name(name)", R.reply_getxattr, R.fail_err, "size"),
    ("listxattr", "ino, size", "ino", R.reply_listxattr, R.fail_err, "size"),
    ("removexattr", "ino, name", "ino, _name(name)", R.reply_none, R.fail_err, ""),
    ("access", "ino, mask", "ino, mask", R.reply_none, R.fail_err, ""),
    ("create", "parent, name, mode, flags", "parent, _name(name), mode, flags", R.reply_create,
     R.fail_err, ""),
    ("getlk", "ino, fh, lock", "ino, fh, _lock(lock)", R.reply_lock, R.fail_err, ""),
    ("setlk", "ino, fh, lock, sleep", "ino, fh, _lock(lock), bool(sleep)", R.reply_none,
     R.fail_err, ""),
    ("flock", "ino, fh, op", "ino, fh, op", R.reply_none, R.fail_err, ""),
    ("fallocate", "ino, mode, off, length, fh", "ino, mode, off, length, fh", R.reply_none,
     R.fail_err, ""),
    ("copy_file_range", "ino_in, off_in, fh_in, ino_out, off_out, fh_out, size, flags",
     "ino_in, off_in, fh_in, ino_out, off_out, fh_out, size, flags", R.reply_write, R.fail_err,
     "size"),
    ("lseek", "ino, off, whence, fh", "ino, off, whence, fh", R.reply_lseek, R.fail_err, ""),
    ("ioctl", "ino, cmd, arg, fh, flags, in_buf, in_size, out_size",
     "ino, cmd, arg, fh, flags, _buffer(in_buf, in_size)[:] if in_size else None, out_size",
     R.reply_ioctl, R.fail_err, "out_size"),
    ("poll", "ino, fh, ph", "ino, fh, _poll_handle(_s, ph)", R.reply_poll, R.fail_err, ""),
]


def _setattr_args(a: Any, to_set: int) -> tuple[Attr, int]:
    """setattr's (Attr, to_set), with times set to "now" filled in."""
    attr = Attr.from_buffer_copy(_buffer(a))  # struct pyfuse_attr, as it is
    if to_set & (_ATIME_NOW | _MTIME_NOW):
        now = time.time_ns()
        if to_set & _ATIME_NOW:
            attr.atime_ns = now
            to_set = (to_set & ~_ATIME_NOW) | _SET_ATIME
        if to_set & _MTIME_NOW:
            attr.mtime_ns = now
            to_set = (to_set & ~_MTIME_NOW) | _SET_MTIME
    return attr, to_set


def _lock(lk: Any) -> Lock:
    return Lock(lk.type, lk.whence, lk.start, lk.len, lk.pid)


def _compile(op: str, params: str, call: str, reply: Any, fail: Any, extra: str) -> None:
    name = "pyfuse_ll_cb_" + op
    named = params.startswith("parent, name") or params.startswith("target, parent, name")
    where, where_later = _NAMED if named else (params.split(",")[0], params.split(",")[0])
    # names (never NULL here) decoded inline, as convert.path does: one Python frame fewer
    # (bytes as they are for a session with ``_bytes_names``: pyfuse.compat's llfuse and
    # pyfuse3 faces, whose filesystems take bytes)
    call = re.sub(r"_name\((\w+)\)", r"(_string(\1) if _s._bytes_names else "
                  r"_string(\1).decode(_ENC, 'surrogateescape'))", call)
    if op in _OUT_OPS:
        code, code_out = _CODES[reply]
        src = _OUT_BODY.format(name=name, params=params, op=op, call=call, where=where,
                               where_later=where_later, code=code, code_out=code_out)
    elif op == "open":
        src = _OPEN_BODY.format(name=name, params=params, op=op, call=call, where=where,
                                where_later=where_later)
    elif reply is R.reply_none:
        src = _NONE_BODY.format(name=name, params=params, op=op, call=call, where=where,
                                where_later=where_later)
    else:
        src = _BODY.format(name=name, params=params, op=op, call=call, where=where,
                           where_later=where_later, extra=f", {extra}" if extra else "",
                           extra_tuple=f"{extra}," if extra else "",
                           fast=_WRITE_FAST if op == "write" else "")
    fn = define(src, name, f"<pyfuse lowlevel callback {name}>",
                {"_SESSIONS": SESSIONS, "_Coro": _Coro, "_reply": reply, "_failf": fail,
                 "_Refused": R.Refused, "_name": _name, "_buffer": _buffer,
                 "_setattr_args": _setattr_args, "_lock": _lock, "_poll_handle": poll_handle,
                 "_string": ffi.string, "_ENC": ENC, "_Attr": Attr, "_here": _here,
                 "_req": _req, "_ATTR_SIZE": _ATTR_SIZE, "_ENTRY_SIZE": _ENTRY_SIZE,
                 "_REPLY_ATTR": lib.PYFUSE_REPLY_ATTR, "_REPLY_ENTRY": lib.PYFUSE_REPLY_ENTRY,
                 "_REPLY_ENTRY_OUT": lib.PYFUSE_REPLY_ENTRY_OUT,
                 "_REPLY_ATTR_OUT": lib.PYFUSE_REPLY_ATTR_OUT,
                 "_REPLY_NONE": lib.PYFUSE_REPLY_NONE, "_REPLY_OPEN": lib.PYFUSE_REPLY_OPEN,
                 "_REPLY_COUNT": lib.PYFUSE_REPLY_COUNT, "_put_open": _put_open, "_FH": _FH,
                 "_FH_LIMIT": FH_LIMIT, "_opened": opened, "_SLOTS": OUT_SLOTS,
                 "_addressof": _addressof, "_StructError": struct.error})
    extern(fn, name)
    if op in _ALSO:
        extern(fn, _ALSO[op])


#: Entry points served by another's function: C calls fgetattr, with the open file's handle,
#: for an fstat, and getattr, without it, for a stat (two integers fewer for cffi to convert).
_ALSO = {"getattr": "pyfuse_ll_cb_fgetattr"}
for _spec in _SPECS:
    _compile(*_spec)


# ---------------------------------------------------------------------------------------------
# written out


@extern
def pyfuse_ll_cb_lookup(h, slot, parent, namelen):
    # the hottest request, written out: its name is read from the thread's out struct (one
    # bytes object, no cdata) and the answer written back there (see _OUT_BODY)
    s = SESSIONS[h]
    o = s._outs[slot]
    if o is None:
        o = _here(s, slot)
    name = o[_NAME:_NAME + namelen]
    if not s._bytes_names:
        try:  # UTF-8: bytes.decode's default (no codec and handler looked up), else os.fsdecode's
            name = name.decode() if _UTF8 else name.decode(ENC, "surrogateescape")
        except UnicodeDecodeError:
            name = name.decode(ENC, "surrogateescape")
    try:
        r = s._op_lookup(parent, name)
        if r.__class__ is Attr:
            if slot < OUT_SLOTS:  # its address (PYFUSE_REPLY_AT), held until the next request
                s._keep[slot] = r
                return _addressof(r)
            o[:_ATTR_SIZE] = r
            return _REPLY_ENTRY
        if r.__class__ is s._foreign:  # as _OUT_BODY
            try:
                s._pack_foreign(o, r)
                return _REPLY_ENTRY_OUT
            except struct.error:
                r = s._convert(r)
        if r.__class__ is bytes and s._packed:
            o[:_ENTRY_SIZE] = r
            return _REPLY_ENTRY_OUT
        if r.__class__ is _Coro:
            return s._defer(r, _req(), R.reply_entry, R.fail_lookup, "lookup", (parent, name),
                            ())
        R.reply_entry(s, _req(), r)
    except R.Refused as e:
        s._refused(e, "lookup", (parent, name))
    except BaseException as e:
        return s._fail(e, "lookup", (parent, name))
    return 0


@extern
def pyfuse_ll_cb_read(h, req, slot, ino, size, off, fh):
    # written out: bytes that fit in the out struct's name (4,096: a small file's whole read)
    # are copied there and C replies them once this has returned (PYFUSE_REPLY_COUNT + n);
    # larger answers are handed to libfuse as they are, by the general reply (no copy)
    s = SESSIONS[h]
    try:
        r = s._op_read(ino, size, off, fh)
        if r.__class__ is bytes:
            n = len(r)
            if n <= _NAME_SIZE and n <= size:
                o = s._outs[slot]
                if o is None:
                    o = _here(s, slot)
                o[_NAME:_NAME + n] = r
                return _REPLY_COUNT + n
        elif r.__class__ is _Coro:
            return s._defer(r, req, R.reply_read, R.fail_err, "read", ino, (size,))
        R.reply_read(s, req, r, size)
    except BaseException as e:
        return s._fail(e, "read", ino)
    return 0


@extern
def pyfuse_ll_cb_readdir(h, req, ino, off, d, fill, plus):
    s = SESSIONS[h]
    res = s._listings.serve(s._op_readdir, ino, off, d, fill, plus)
    if res == 0:
        _reply_dir(fill)
    elif res != PENDING:
        return res
    return 0


@extern
def pyfuse_ll_cb_releasedir(h, req, ino, d):
    s = SESSIONS[h]
    s._listings.release(d)
    fn = s._op_releasedir
    if fn is None:
        return 0  # the trampoline replies
    try:
        r = fn(ino, d.fh)
        if r.__class__ is _Coro:
            return s._defer(r, req, R.reply_none, R.fail_err, "releasedir", ino, ())
        R.reply_none(s, req, r)
    except BaseException as e:
        return s._fail(e, "releasedir", ino)
    return 0


@extern
def pyfuse_ll_cb_forget(h, req, forgets, count):
    s = SESSIONS[h]
    fn = s._op_forget
    for i in range(count):
        f = forgets[i]
        try:
            r = fn(f.ino, f.nlookup)
            if r.__class__ is _Coro:
                s._bridge.spawn(r, f"forget of inode {f.ino}")
        except BaseException as e:
            s._fail(e, "forget", f.ino)
    return 0  # forgets get no reply; the trampoline ends the request


@extern
def pyfuse_ll_cb_init(h):
    s = SESSIONS[h]
    try:
        s._bridge.run_now(s.ops.init())
    except BaseException as e:
        s._fail(e, "init")
    return 0


def pyfuse_ll_cb_destroy(h):
    s = SESSIONS[h]
    try:
        s._bridge.run_now(s.ops.destroy())
    except BaseException as e:
        s._fail(e, "destroy")


extern(pyfuse_ll_cb_destroy, void=True)


def pyfuse_ll_cb_interrupt(h, key):
    SESSIONS[h]._bridge.interrupt(key)


extern(pyfuse_ll_cb_interrupt, void=True)

__all__ = ["PENDING", "log"]
