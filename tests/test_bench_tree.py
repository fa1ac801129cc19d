"""The benchmark tree is the same tree on every implementation (bench/model.py, bench/cref.c,
bench/tree.py and the installed peers), so the benchmarks compare like with like."""
from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
import sys

import pytest

from pyfuse import testing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CREF = os.path.join(ROOT, "bench", "build", "cref-test")
FILE, DIR = stat.S_IFREG | 0o644, stat.S_IFDIR | 0o755  # bench/model.py's modes


@pytest.fixture(scope="module")
def bench_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment in which ``bench`` (for ``-m bench.peers...``) imports from this tree but
    ``pyfuse`` stays the installed one: PYTHONPATH=ROOT would put the tree's pyfuse first,
    which has no compiled shim when the tests run from an sdist."""
    d = tmp_path_factory.mktemp("benchpath")
    os.symlink(os.path.join(ROOT, "bench"), d / "bench")
    return dict(os.environ, PYTHONPATH=str(d))


def snapshot(mnt: str) -> dict[str, object]:
    """What a client sees: the walk of /src with every lstat, the other listings, some lookups."""
    seen: dict[str, object] = {}
    for top, dirs, files in os.walk(os.path.join(mnt, "src")):
        rel = os.path.relpath(top, mnt)
        seen[rel] = (sorted(dirs), sorted(files))
        for f in files:
            st = os.lstat(os.path.join(top, f))
            seen[f"{rel}/{f}"] = (st.st_mode, st.st_nlink, st.st_size)
    seen["/"] = sorted(os.listdir(mnt))
    seen["small"] = sorted(os.listdir(os.path.join(mnt, "small")))
    seen["big"] = len(os.listdir(os.path.join(mnt, "big")))
    for d in ("w2/d000000", "w2/d999999", "w2/d123456"):
        seen[d] = [(n, os.lstat(os.path.join(mnt, d, n)).st_mode)
                   for n in sorted(os.listdir(os.path.join(mnt, d)))]
    for bad in ("small/f00008", "big/f65536", "w2/d1000000", "w2/d000001/f00008", "src/d64",
                "src/d00/d00/f15", "src/d00/d00/f00/x", "nope", "small/f0000"):
        try:
            os.lstat(os.path.join(mnt, bad))
            seen[bad] = "exists"
        except OSError as e:
            seen[bad] = e.errno
    with open(os.path.join(mnt, "small", "f00003"), "rb") as f:
        seen["data"] = f.read()
    return seen


def implementations() -> list[object]:
    impls = [pytest.param([CREF], id="cref"),
             pytest.param([sys.executable, os.path.join(ROOT, "bench", "tree.py")], id="pyfuse"),
             pytest.param([sys.executable, os.path.join(ROOT, "bench", "tree_ll.py")],
                          id="pyfuse-ll"),
             # the labelled extras, tuned beyond what the docs teach
             pytest.param([sys.executable, os.path.join(ROOT, "bench", "tree.py"), "--tuned"],
                          id="pyfuse-tuned"),
             pytest.param([sys.executable, os.path.join(ROOT, "bench", "tree_ll.py"),
                           "--tuned"], id="pyfuse-ll-tuned")]
    for name, module in (("fusepy", "fuse"), ("mfusepy", "mfusepy"), ("llfuse", "llfuse"),
                         ("pyfuse3", "pyfuse3")):
        mark = pytest.mark.skipif(importlib.util.find_spec(module) is None,
                                  reason=f"{name} is installed by `make bench` only")
        impls.append(pytest.param([sys.executable, "-m", f"bench.peers.{name}_tree"],
                                  id=name, marks=mark))
    return impls


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    os.makedirs(os.path.dirname(CREF), exist_ok=True)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", CREF,
                    os.path.join(ROOT, "bench", "cref.c"), *flags], check=True)
    mnt = str(tmp_path_factory.mktemp("cref"))
    with testing.mounted_process([CREF, mnt], mnt):
        return snapshot(mnt)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cmd", implementations())
def test_same_tree(cmd: list[str], expected: dict[str, object], tmp_path: str,
                   bench_env: dict[str, str]) -> None:
    mnt = str(tmp_path)
    with testing.mounted_process([*cmd, mnt], mnt, env=bench_env):
        got = snapshot(mnt)
    assert len(expected) > 61_440
    assert expected["big"] == 65_536 and len(expected["small"]) == 8  # type: ignore[arg-type]
    assert got == expected


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["--cffi", "--str", "--fs"])
def test_floor_answers_the_workloads_like_the_tree(mode: str, tmp_path: str,
                                                  bench_env: dict[str, str]) -> None:
    """bench/floor.py (the floor suite) answers what W1, W5 and W2 read as the tree does, really
    replaces pyfuse's callbacks, and leaves every other listing to pyfuse's own readdir."""
    mnt = str(tmp_path)
    argv = [sys.executable, os.path.join(ROOT, "bench", "floor.py"), mnt, mode, "--single",
            "--nocache"]
    with testing.mounted_process(argv, mnt, env=bench_env):
        for d in ("small", "w2/d000000", "w2/d654321"):
            names = os.listdir(os.path.join(mnt, d))
            assert names == [f"f{i:05d}" for i in range(8)]
            for n in names:
                st = os.lstat(os.path.join(mnt, d, n))
                assert (st.st_mode, st.st_nlink, st.st_size) == (FILE, 1, 1)
            assert os.lstat(os.path.join(mnt, d)).st_mode == DIR
        missing = os.path.join(mnt, "small", "f99999")
        if mode != "--fs":  # the constant answer: pyfuse's own getattr would say ENOENT
            assert os.lstat(missing).st_mode == FILE
        else:  # the tree's getattr ran
            with pytest.raises(FileNotFoundError):
                os.lstat(missing)
        assert sorted(os.listdir(mnt)) == sorted(["small", "big", "w2", "src"])
        assert len(os.listdir(os.path.join(mnt, "big"))) == 65_536


@pytest.mark.timeout(60)
def test_inode_floor_answers_w5_and_w1_like_the_tree(tmp_path: str,
                                                     bench_env: dict[str, str]) -> None:
    """bench/floor.py --ll (pyfuse-ll-floor, bench/callgrind.py) answers the lookups and
    getattrs of W5 and W1 with the tree's attributes and inode numbers, read by C at the
    addresses its callbacks return, and a name it does not know with ENOENT."""
    mnt = str(tmp_path)
    argv = [sys.executable, os.path.join(ROOT, "bench", "floor.py"), mnt, "--ll", "--single",
            "--nocache"]
    with testing.mounted_process(argv, mnt, env=bench_env):
        for _ in range(2):  # the second time: the same Attrs, still alive
            st = os.lstat(os.path.join(mnt, "small"))
            assert (st.st_mode, st.st_ino, st.st_nlink) == (DIR, 2, 2)
            for i, name in enumerate(sorted(os.listdir(os.path.join(mnt, "small")))):
                st = os.lstat(os.path.join(mnt, "small", name))
                assert (name, st.st_mode, st.st_ino, st.st_size) == \
                    (f"f{i:05d}", FILE, 1000 + i, 1)
        with pytest.raises(FileNotFoundError):
            os.lstat(os.path.join(mnt, "small", "f00008"))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["--llfuse", "--llfuse-at"])
def test_llfuse_face_floors_serve_the_tree(mode: str, expected: dict[str, object],
                                           tmp_path: str, bench_env: dict[str, str]) -> None:
    """bench/floor.py --llfuse and --llfuse-at (llfuse-compat-floor and llfuse-compat-at,
    bench/callgrind.py) serve bench/peers/llfuse_tree.py's whole tree as cref serves it: their
    lookup and getattr run the program's own methods (a FUSEError as its errno) and answer what
    they return."""
    mnt = str(tmp_path)
    argv = [sys.executable, os.path.join(ROOT, "bench", "floor.py"), mnt, mode, "--single",
            "--nocache"]
    with testing.mounted_process(argv, mnt, env=bench_env):
        got = snapshot(mnt)
    assert got == expected


@pytest.mark.timeout(60)
def test_prepared_inode_listing_is_the_generated_one(tmp_path: str,
                                                    bench_env: dict[str, str]) -> None:
    """bench/tree_ll.py --prepared (bench/cpu_share.py's pyfuse-ll-prepared) lists /big with the
    names and inode numbers the generated listing has, and serves the rest unchanged."""
    argv = [sys.executable, os.path.join(ROOT, "bench", "tree_ll.py")]
    listings = []
    for extra in ([], ["--prepared"]):
        mnt = os.path.join(tmp_path, "p" if extra else "g")
        os.mkdir(mnt)
        with testing.mounted_process([*argv, mnt, *extra], mnt, env=bench_env):
            with os.scandir(os.path.join(mnt, "big")) as it:
                listings.append({e.name: (e.inode(), e.stat().st_ino) for e in it})
            assert sorted(os.listdir(os.path.join(mnt, "small"))) == \
                [f"f{i:05d}" for i in range(8)]
    generated, prepared = listings
    assert len(prepared) == 65_536 and prepared == generated
    assert all(a == b for a, b in prepared.values())  # d_ino is the inode stat sees
