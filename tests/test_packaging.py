"""What a distributor gets: ``python -m build`` makes an sdist and, from it, a wheel. The wheel
holds the compiled module and nothing of the source tree, carries this interpreter's tags and
installs into a fresh virtual environment, where pyfuse mounts without the checkout; the sdist
carries a test suite that runs from the sdist alone (here a part of it; ``make test-sdist``
runs all of it)."""
from __future__ import annotations

import email.parser
import glob
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from typing import Any

import pytest

import pyfuse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = [pytest.mark.dev, pytest.mark.timeout(600)]


def _run(*args: str, cwd: Any, env: Any = None) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env)
    assert r.returncode == 0, f"{' '.join(args)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def dist(tmp_path_factory: Any) -> dict[str, str]:
    """python -m build (the sdist, then the wheel built from that sdist)."""
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "-o", str(out), ROOT, cwd=out)
    (sdist,) = glob.glob(str(out / "pyfuse-*.tar.gz"))
    (wheel,) = glob.glob(str(out / "pyfuse-*.whl"))
    return {"sdist": sdist, "wheel": wheel, "dir": str(out)}


def _venv(path: Any) -> str:
    _run(sys.executable, "-m", "venv", str(path), cwd=path.parent)
    return str(path / "bin" / "python")


def test_one_version_string(dist):
    assert os.path.basename(dist["sdist"]) == f"pyfuse-{pyfuse.__version__}.tar.gz"
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        assert 'dynamic = ["version"]' in f.read()


def test_wheel_contents_and_tags(dist):
    with zipfile.ZipFile(dist["wheel"]) as z:
        names = z.namelist()
        info = z.read(next(n for n in names if n.endswith(".dist-info/WHEEL"))).decode()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    tops = {n.split("/")[0] for n in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"pyfuse"}, tops
    assert any(n.startswith("pyfuse/_pyfuse_c.") and n.endswith(".so") for n in names)
    for needed in ("pyfuse/py.typed", "pyfuse/_pyfuse_c.pyi", "pyfuse/_core/readdir.py",
                   "pyfuse/examples/hello.py"):
        assert needed in names, needed
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.endswith((".c", ".h")) for n in names)  # the cdef is compiled in
    # one wheel for every CPython from 3.9: the stable ABI (make wheel then repairs it into a
    # manylinux wheel with libfuse bundled)
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    tags = [line.split(": ", 1)[1] for line in info.splitlines() if line.startswith("Tag: ")]
    assert tags == [f"cp39-abi3-{plat}"], (tags, platform.machine())
    assert any(n == "pyfuse/_pyfuse_c.abi3.so" for n in names)
    m = email.parser.Parser().parsestr(meta)
    assert m["Version"] == pyfuse.__version__
    assert m["License-Expression"] == "MIT"
    # the license of what the binary wheel bundles (libfuse 3's library)
    assert m.get_all("License-File") == ["LICENSE", "licenses/libfuse3-LGPL-2.1.txt"]
    assert "3.13" in " ".join(m.get_all("Classifier"))
    assert "inode API" in m["Summary"] and "high-level" not in m["Summary"]
    extras = m.get_all("Provides-Extra")
    assert {"test", "dev"} <= set(extras)
    requires = " ".join(m.get_all("Requires-Dist"))
    for tool in ("ruff", "mypy", "build"):  # only in dev, never in test
        assert f"{tool}; extra == \"dev\"" in requires, requires
        assert f"{tool}; extra == \"test\"" not in requires, requires


def test_twine_check(dist):
    """The metadata an index expects (long description renders, fields valid)."""
    r = _run(sys.executable, "-m", "twine", "check", "--strict", dist["sdist"], dist["wheel"],
             cwd=dist["dir"])
    assert r.stdout.count("PASSED") == 2, r.stdout


@pytest.fixture(scope="module")
def wheel_venv(dist: dict[str, str], tmp_path_factory: Any) -> str:
    """A fresh venv with the wheel installed (and nothing of the source tree)."""
    path = tmp_path_factory.mktemp("wheelvenv")
    py = _venv(path / "venv")
    _run(py, "-m", "pip", "install", "-q", dist["wheel"], cwd=path)
    return py


def test_wheel_installs_and_mounts_without_the_source_tree(wheel_venv, tmp_path):
    py = wheel_venv
    work = tmp_path / "elsewhere"
    work.mkdir()
    out = _run(py, "-c", "import importlib.metadata, pyfuse; print(pyfuse.__file__); "
               "print(importlib.metadata.version('pyfuse'), pyfuse.__version__)", cwd=work).stdout
    where, versions = out.splitlines()
    assert where.startswith(os.path.dirname(os.path.dirname(py)))
    assert versions == f"{pyfuse.__version__} {pyfuse.__version__}"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    script = ("import os, subprocess, sys, time\n"
              "p = subprocess.Popen([sys.executable, '-m', 'pyfuse.examples.hello', sys.argv[1]])\n"
              "try:\n"
              "    for _ in range(100):\n"
              "        if os.path.exists(os.path.join(sys.argv[1], 'hello')): break\n"
              "        time.sleep(0.1)\n"
              "    print(open(os.path.join(sys.argv[1], 'hello')).read(), end='')\n"
              "finally:\n"
              "    subprocess.run(['fusermount3', '-u', sys.argv[1]])\n"
              "    sys.exit(p.wait(10))\n")
    r = subprocess.run([py, "-c", script, str(mnt)], capture_output=True, text=True, cwd=work,
                       timeout=60)
    subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)
    assert r.returncode == 0 and r.stdout == "Hello World!\n", r.stderr


@pytest.mark.nofuse
def test_source_tree_without_build_says_what_to_do(wheel_venv, tmp_path):
    """Running in a source tree (cwd first on sys.path) that has no compiled shim, with pyfuse
    installed elsewhere: one line that says what happened and what to do, no bare
    ModuleNotFoundError."""
    shutil.copytree(os.path.join(ROOT, "pyfuse"), tmp_path / "pyfuse",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    r = subprocess.run([wheel_venv, "-m", "pyfuse.examples.hello", str(tmp_path / "mnt")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: pyfuse: the compiled shim pyfuse._pyfuse_c is not in "
                           f"{tmp_path / 'pyfuse'}"), r.stderr
    assert "run from another directory" in last and "pip install -e ." in last


def test_sdist_runs_its_own_tests(dist, tmp_path):
    """The sdist alone: install it with its test extra into a fresh venv and run its tests from
    the unpacked sdist (from another directory, so that the installed build is imported)."""
    with tarfile.open(dist["sdist"]) as t:
        members = t.getnames()
        t.extractall(tmp_path / "src")
    (src,) = glob.glob(str(tmp_path / "src" / "pyfuse-*"))
    for needed in ("LICENSE", "Makefile", "tests/conftest.py", "tests/conformance/conftest.py",
                   "tests/faults/test_faults.py", "tests/stress/test_stress.py",
                   "tests/valgrind/core.py", "docs/readdir.md", "bench/model.py",
                   "csrc/optable.h"):
        assert any(m.endswith("/" + needed) for m in members), needed
    assert not any("/bench/results/" in m for m in members)
    py = _venv(tmp_path / "venv")
    _run(py, "-m", "pip", "install", "-q", dist["sdist"] + "[test]", cwd=tmp_path)
    work = tmp_path / "elsewhere"
    work.mkdir()
    r = _run(py, "-m", "pytest", "-p", "no:cacheprovider", "-m", "not dev", "-q",
             os.path.join(src, "tests", "test_build.py"), os.path.join(src, "tests",
                                                                      "test_hello.py"),
             os.path.join(src, "tests", "test_docs.py"), cwd=work)
    last = r.stdout.strip().splitlines()[-1]
    assert re.search(r"\b\d+ passed\b", last) and not re.search(r"failed|error", last), r.stdout
