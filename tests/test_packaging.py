"""pip install of the sdist (csrc/ included) into a fresh virtual environment builds the shim."""
from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.nofuse
@pytest.mark.timeout(300)
def test_sdist_installs_in_fresh_venv(tmp_path):
    def run(*a):
        return subprocess.run(a, check=True, capture_output=True, text=True, cwd=tmp_path)

    run(sys.executable, "-m", "venv", str(tmp_path / "venv"))
    py = str(tmp_path / "venv" / "bin" / "python")
    run(py, "-m", "pip", "install", "-q", "build")
    run(py, "-m", "build", "--sdist", "-o", str(tmp_path / "dist"), ROOT)
    (sdist,) = glob.glob(str(tmp_path / "dist" / "pyfuse-*.tar.gz"))
    run(py, "-m", "pip", "install", "-q", sdist)
    out = run(py, "-c", "import pyfuse, pyfuse._pyfuse_c as c; print(c.__file__)").stdout
    assert str(tmp_path / "venv") in out
