"""The code standards, enforced by the suite: ruff clean, mypy clean, C shim warning-free."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = [pytest.mark.nofuse, pytest.mark.dev, pytest.mark.timeout(180)]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True)


def test_ruff():
    r = _run("ruff", "check", "pyfuse", "tests", "bench", "docs", "build_ffi.py", "setup.py")
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy():
    r = _run("mypy", "pyfuse")
    assert r.returncode == 0, r.stdout + r.stderr


def test_shim_compiles_without_warnings(tmp_path):
    cflags = subprocess.run(["pkg-config", "--cflags", "fuse3"], capture_output=True,
                            text=True, check=True).stdout.split()
    for src in sorted(f for f in os.listdir(os.path.join(ROOT, "csrc")) if f.endswith(".c")):
        r = subprocess.run(["cc", "-c", "-Wall", "-Wextra", "-Werror", "-std=gnu11", "-O2",
                            "-DFUSE_USE_VERSION=312", "-D_FILE_OFFSET_BITS=64",
                            "-I", os.path.join(ROOT, "csrc"), *cflags,
                            os.path.join(ROOT, "csrc", src), "-o", str(tmp_path / "x.o")],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
