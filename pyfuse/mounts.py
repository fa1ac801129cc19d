"""The mount table: which FUSE mounts exist, and unmounting or aborting them from outside.

Shared by every API: :func:`is_mounted` and :func:`fuse_device` read /proc/self/mountinfo,
:func:`unmount` ends a mount (umount2 as root, ``fusermount3 -u`` otherwise), :func:`abort`
aborts a hung connection through /sys/fs/fuse/connections, and a session cleans a stale mount
(left by a dead daemon) before mounting over it.
"""
from __future__ import annotations

import errno
import logging
import os
import shutil
import subprocess
from typing import Iterator, Optional

from ._pyfuse_c import lib

__all__ = ["is_mounted", "unmount", "abort", "fuse_device"]

log = logging.getLogger("pyfuse")


def _mountinfo() -> Iterator[tuple[str, str, str]]:
    """(mount point, major:minor, fstype) of each mount of this process's namespace."""
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f:
            fields = line.split()
            sep = fields.index(b"-")
            mnt = fields[4].decode("unicode_escape").encode("latin-1")
            yield (os.fsdecode(mnt), fields[2].decode(), fields[sep + 1].decode())


def fuse_device(mountpoint: str) -> Optional[str]:
    """The "major:minor" device of the FUSE mount at ``mountpoint`` (the kernel's id of its
    connection), or None if no FUSE filesystem is mounted there. Of stacked mounts, the top
    one (the one the path resolves to)."""
    mnt = os.path.abspath(mountpoint)
    found = None
    for m, d, t in _mountinfo():
        if m == mnt and t.startswith("fuse"):
            found = d
    return found


def _covered(connection: str) -> bool:
    """True if a mount of FUSE connection ``connection`` ("major:minor") still exists in this
    namespace (whether or not another mount covers it)."""
    return any(d == connection for _, d, t in _mountinfo() if t.startswith("fuse"))


def is_mounted(mountpoint: str) -> bool:
    """True if a FUSE filesystem is mounted at ``mountpoint`` (read from /proc/self/mountinfo)."""
    return fuse_device(mountpoint) is not None


def unmount(mountpoint: str, lazy: bool = False) -> None:
    """Unmount the FUSE filesystem at ``mountpoint``.

    As root this is umount2(2); if the mount is busy (open files) it is detached and, when
    /sys/fs/fuse/connections is available, its connection aborted so that the daemon's loop ends
    at once. Otherwise ``fusermount3 -u`` (``-z`` when lazy or busy) is used."""
    mnt = os.path.abspath(mountpoint)
    if os.geteuid() == 0:
        dev = fuse_device(mnt)
        rc = lib.pyfuse_umount2(os.fsencode(mnt), lazy)
        if rc == -errno.EBUSY:
            rc = lib.pyfuse_umount2(os.fsencode(mnt), 1)
            if rc == 0 and dev is not None:
                _abort_connection(dev)
        if rc != 0:
            raise OSError(-rc, f"unmounting {mnt}: {os.strerror(-rc)}")
        return
    exe = shutil.which("fusermount3") or "fusermount3"
    r = subprocess.run([exe, "-u", *(["-z"] if lazy else []), mnt], capture_output=True)
    if r.returncode != 0 and not lazy:
        r = subprocess.run([exe, "-u", "-z", mnt], capture_output=True)
    if r.returncode != 0:
        raise OSError(errno.EIO, f"fusermount3 -u {mnt}: {r.stderr.decode().strip()}")


FUSECTL = "/sys/fs/fuse/connections"


def _ensure_fusectl() -> bool:
    """Mount the fusectl filesystem (root only) if it is not there; True if usable."""
    if os.path.exists(os.path.join(FUSECTL, ".")) and os.listdir(FUSECTL):
        return True
    if os.geteuid() != 0:
        return False
    subprocess.run(["mount", "-t", "fusectl", "fusectl", FUSECTL], capture_output=True)
    return bool(os.listdir(FUSECTL))


def _abort_connection(dev: str) -> None:
    """Abort a FUSE connection ("0:NN" from mountinfo): its pending and future requests fail
    with ENOTCONN, and the daemon's loop ends. Needs root and fusectl."""
    if not _ensure_fusectl():
        return
    try:
        with open(f"{FUSECTL}/{dev.split(':')[1]}/abort", "w") as f:
            f.write("1")
        log.info("aborted FUSE connection %s", dev)
    except OSError as e:
        log.debug("could not abort FUSE connection %s: %s", dev, e)


def abort(mountpoint: str) -> bool:
    """Abort the FUSE connection behind ``mountpoint`` (root only): every process blocked on
    it gets an error at once. A last resort for a hung filesystem; returns False if not found."""
    dev = fuse_device(mountpoint)
    if dev is None:
        return False
    _abort_connection(dev)
    return True


#: Where the bundled libfuse looks for fusermount3 first (its FUSERMOUNT_DIR), then PATH.
FUSERMOUNT = "/usr/bin/fusermount3"
FUSE_DEVICE = "/dev/fuse"


def _runtime_missing() -> Optional[str]:
    """What this machine lacks to mount a FUSE filesystem (one line naming it and how to get
    it), or None. libfuse itself comes with pyfuse (the wheel bundles it); the kernel's device
    and, for users who are not root, the setuid fusermount3 are the system's."""
    if not os.path.exists(FUSE_DEVICE):
        return (f"{FUSE_DEVICE} does not exist: load the kernel's fuse module (modprobe fuse), "
                "or in a container pass the device (docker run --device /dev/fuse "
                "--cap-add SYS_ADMIN)")
    if not os.access(FUSE_DEVICE, os.R_OK | os.W_OK):
        return (f"{FUSE_DEVICE} cannot be opened for reading and writing by this user "
                f"(uid {os.geteuid()}): it is normally mode 0666 (chmod 0666 {FUSE_DEVICE})")
    if os.geteuid() != 0 and not os.access(FUSERMOUNT, os.X_OK) \
            and shutil.which("fusermount3") is None:
        return ("mounting as a user who is not root needs fusermount3, which is not installed "
                "(Debian/Ubuntu: apt-get install fuse3; Fedora: dnf install fuse3)")
    return None


def _clean_stale(mnt: str) -> None:
    """A daemon that died without unmounting leaves a mount whose every access fails with
    ENOTCONN; detach it so the new mount can take its place."""
    try:
        os.statvfs(mnt)  # never answered from a cache, unlike stat
    except OSError as e:
        if e.errno != errno.ENOTCONN:
            return  # not a stale mount; Session.mount reports a bad mount point
        log.warning("%s: stale FUSE mount left by a dead daemon; unmounting it first", mnt)
        unmount(mnt, lazy=True)
