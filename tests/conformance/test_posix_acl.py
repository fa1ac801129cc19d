"""Config(posix_acl=True): the kernel applies POSIX ACLs itself. An ACL that denies the test
account a file its mode bits let everyone read keeps the account out, on a mount with ACLs on;
without them, the memory example refuses the ACL attribute (EOPNOTSUPP) and the mode rules."""
from __future__ import annotations

import dataclasses
import errno
import os
import struct
import subprocess
import tempfile
from typing import Any, Iterator

import pytest

from pyfuse.examples.memory import CONFIG, Memory

USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
UNDEFINED = 0xFFFFFFFF


def _acl(*entries: tuple[int, int, int]) -> bytes:
    """The system.posix_acl_access value (version 2) of (tag, perm, id) entries."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


@pytest.fixture
def open_mnt() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="pyfuse-acl-")
    os.chmod(d, 0o755)
    yield d
    os.rmdir(d)


@pytest.mark.parametrize("acl", [False, True])
def test_acl_denies_what_the_mode_allows(account: Any, open_mnt: str, acl: bool) -> None:
    from pyfuse import testing

    cfg = dataclasses.replace(CONFIG, posix_acl=acl)
    with testing.mounted(Memory(posix_acl=acl), open_mnt, config=cfg, allow_other=True,
                         default_permissions=True):
        f = os.path.join(open_mnt, "f")
        with open(f, "w") as fp:
            fp.write("secret\n")
        os.chmod(f, 0o644)
        deny = _acl((USER_OBJ, 6, UNDEFINED), (USER, 0, account.uid), (GROUP_OBJ, 4, UNDEFINED),
                    (MASK, 4, UNDEFINED), (OTHER, 4, UNDEFINED))
        if acl:
            os.setxattr(f, "system.posix_acl_access", deny)
        else:
            with pytest.raises(OSError) as ei:
                os.setxattr(f, "system.posix_acl_access", deny)
            assert ei.value.errno == errno.EOPNOTSUPP
        r = subprocess.run(["cat", f], user=account.uid, group=account.gid, extra_groups=[],
                           capture_output=True, text=True, timeout=30)
        if acl:
            assert r.returncode != 0 and "Permission denied" in r.stderr, (r.stdout, r.stderr)
        else:
            assert r.returncode == 0 and r.stdout == "secret\n", r.stderr
        assert open(f).read() == "secret\n"  # root, and the owner, still read it
