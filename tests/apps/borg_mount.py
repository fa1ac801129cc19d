"""borg 1.4.5's ``borg mount`` through ``python -m pyfuse.compat``, with each of its FUSE
implementations (BORG_FUSE_IMPL=llfuse and =pyfuse3): archives of one source tree, made with
a named directory (``borg create ::named /abs/src``) and with ``.`` (``cd src; borg create
::dot .``, whose root item is named "." and so repeats a name in the mount's root listing),
mounted and compared with the tree itself (names, types, modes, sizes, contents, symlink
targets, mtimes).

    python tests/apps/borg_mount.py BORG_PYTHON WORKDIR

BORG_PYTHON: a Python with borgbackup 1.4.5, trio and pyfuse installed. Prints a line per
mount; exits 1 if any differs from the source tree.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
from typing import Any

from pyfuse import testing


def make_tree(src: str) -> None:
    os.makedirs(os.path.join(src, "sub", "deep"))
    with open(os.path.join(src, "a.txt"), "w") as f:
        f.write("hello\n")
    with open(os.path.join(src, "sub", "big.bin"), "wb") as f:
        f.write(hashlib.sha256(b"seed").digest() * 40000)  # 1.28 MB
    with open(os.path.join(src, "sub", "deep", "x"), "w") as f:
        f.write("x\n")
    os.chmod(os.path.join(src, "sub", "deep", "x"), 0o640)
    os.symlink("a.txt", os.path.join(src, "link"))
    with open(os.path.join(src, "sp\u00e4ce name"), "w") as f:
        f.write("unicode\n")
    for i in range(300):  # a listing longer than one kernel buffer
        with open(os.path.join(src, "sub", f"f{i:03d}"), "w") as f:
            f.write(str(i))


def tree(top: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, top)
            if stat.S_ISLNK(st.st_mode):
                what: Any = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                what = ("dir",)
            else:
                with open(p, "rb") as f:
                    what = ("file", st.st_size, hashlib.sha256(f.read()).hexdigest())
            out[rel] = (stat.filemode(st.st_mode), int(st.st_mtime), *what)
    return out


def main(argv: list[str]) -> int:
    borg_python, work = argv
    shutil.rmtree(work, ignore_errors=True)
    src, repo = os.path.join(work, "src"), os.path.join(work, "repo")
    make_tree(src)
    env = dict(os.environ, BORG_PASSPHRASE="", BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK="yes",
               BORG_BASE_DIR=os.path.join(work, "borg-base"))
    borg = [borg_python, "-m", "borg"]
    subprocess.run([*borg, "init", "-e", "none", repo], env=env, check=True)
    subprocess.run([*borg, "create", f"{repo}::named", src], env=env, check=True)
    subprocess.run([*borg, "create", f"{repo}::dot", "."], env=env, check=True, cwd=src)
    want = tree(src)
    failed = 0
    for impl in ("llfuse", "pyfuse3"):
        for archive in ("named", "dot"):
            mnt = os.path.join(work, f"mnt-{impl}-{archive}")
            os.mkdir(mnt)
            log = os.path.join(work, f"{impl}-{archive}.log")
            cmd = [borg_python, "-m", "pyfuse.compat", "-m", "borg", "mount", "-f",
                   f"{repo}::{archive}", mnt]
            try:
                with testing.mounted_process(cmd, mnt, log=log,
                                             env=dict(env, BORG_FUSE_IMPL=impl)):
                    top = mnt if archive == "dot" else os.path.join(mnt, src.lstrip("/"))
                    got = tree(top)
                    root = sorted(os.listdir(mnt))
            except Exception as e:
                got, root = {"error": f"{type(e).__name__}: {e}"}, []
            same = got == want
            print(f"{'ok  ' if same else 'FAIL'} borg mount, BORG_FUSE_IMPL={impl}, archive "
                  f"{archive!r}: {len(got)} entries{'' if same else ' differ'}; root {root}")
            if not same:
                failed += 1
                for k in sorted(set(got) | set(want)):
                    if got.get(k) != want.get(k):
                        print(f"     {k}: mount {got.get(k)}, source {want.get(k)}")
                print(f"     log: {log}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
