"""``python -m pyfuse.compat SCRIPT`` and ``-m MODULE``: a program cannot tell the runner from
``python SCRIPT`` (``python -m MODULE``). One probe prints what a script sees of itself
(``__builtins__``, ``__file__``, ``__spec__``, ``__loader__``, its globals, ``sys.argv``,
``sys.path[0]``, ``sys.modules['__main__']``, pickling a class it defines, a warning), then
ends as asked (normally, ``sys.exit(3)``, an uncaught exception, SIGINT); stdout, stderr and
the exit status are compared. fusepy's examples of the Python 2 era test
``hasattr(__builtins__, 'bytes')``: under runpy's dict that is False, and their memory.py
then stored str, failing every write."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

PROBE = '''\
"""The probe's docstring."""
import pickle
import sys
import warnings

print("builtins", type(__builtins__).__name__, hasattr(__builtins__, "bytes"))
print("file", __file__)
print("spec", __spec__)
print("loader", type(__loader__).__name__, getattr(__loader__, "name", None),
      getattr(__loader__, "path", None))
print("package", repr(__package__), "cached", repr(__cached__), "doc", repr(__doc__))
print("globals", sorted(k for k in globals() if k.startswith("__")))
print("argv", sys.argv)
print("path0", sys.path[0])
print("main is me", sys.modules["__main__"].__dict__ is globals())
print("name", __name__)


class C:
    pass


print("pickle", type(pickle.loads(pickle.dumps(C()))).__name__)
warnings.warn("from the probe", DeprecationWarning)
sys.stdout.flush()
how = sys.argv[1] if len(sys.argv) > 1 else ""
if how == "raise":
    raise ValueError("boom")
if how == "exit":
    sys.exit(3)
if how == "sleep":
    print("sleeping", flush=True)
    import time
    time.sleep(30)
if __name__ == "__main__":
    print("as __main__")
'''
RUNNER = [sys.executable, "-m", "pyfuse.compat"]


def _run(cmd: list[str], cwd: str) -> tuple[int, str, str]:
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=60)
    return r.returncode, r.stdout, r.stderr


def _same(a: str) -> str:
    return re.sub(r" at 0x[0-9a-f]+", " at 0x...", a)  # object addresses


@pytest.fixture
def probe(tmp_path: Any) -> str:
    d = tmp_path / "sub"
    d.mkdir()
    (d / "probe.py").write_text(PROBE)
    (tmp_path / "link.py").symlink_to(d / "probe.py")
    return str(tmp_path)


@pytest.mark.nofuse
@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["", "exit", "raise"])
@pytest.mark.parametrize("script", ["sub/probe.py", "link.py"])
def test_a_script_cannot_tell_the_runner_from_python(probe: str, how: str, script: str) -> None:
    args = [script, *([how] if how else [])]
    theirs = _run([sys.executable, *args], probe)
    ours = _run([*RUNNER, *args], probe)
    assert ours[0] == theirs[0]
    assert _same(ours[1]) == _same(theirs[1])
    assert _same(ours[2]) == _same(theirs[2])
    assert "builtins module True" in ours[1]  # what fusepy's examples test


@pytest.mark.nofuse
@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["", "exit", "raise"])
def test_a_module_cannot_tell_the_runner_from_python_m(probe: str, how: str) -> None:
    args = ["-m", "probe", *([how] if how else [])]
    theirs = _run([sys.executable, *args], os.path.join(probe, "sub"))
    ours = _run([*RUNNER, *args], os.path.join(probe, "sub"))
    assert ours[0] == theirs[0]
    assert _same(ours[1]) == _same(theirs[1])
    assert _same(ours[2]) == _same(theirs[2])


@pytest.mark.nofuse
@pytest.mark.timeout(120)
def test_ctrl_c_ends_a_script_as_it_ends_python(probe: str) -> None:
    """An uncaught KeyboardInterrupt: the script's traceback, and death by SIGINT."""
    seen = []
    for prefix in ([sys.executable], RUNNER):
        p = subprocess.Popen([*prefix, "sub/probe.py", "sleep"], cwd=probe, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.stdout is not None
        while "sleeping" not in p.stdout.readline():
            pass
        time.sleep(0.2)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        seen.append((p.returncode, _same(err)))
    assert seen[1] == seen[0]
    assert seen[0][0] == -signal.SIGINT


@pytest.mark.nofuse
def test_a_missing_script(tmp_path: Any) -> None:
    theirs = _run([sys.executable, "nope.py"], str(tmp_path))
    ours = _run([*RUNNER, "nope.py"], str(tmp_path))
    assert ours[0] == theirs[0] == 2
    assert ours[2].split(":", 1)[1] == theirs[2].split(":", 1)[1]  # after the program's name
