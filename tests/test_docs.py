"""The docs stay true to the code: the generated reference is current and the README's hello
filesystem runs."""
from __future__ import annotations

import glob
import importlib
import os
import re
import sys

import pytest

from pyfuse import testing

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.nofuse
def test_operations_reference_is_current():
    sys.path.insert(0, os.path.join(ROOT, "docs"))
    try:
        import gen_reference
    finally:
        sys.path.pop(0)
    with open(gen_reference.OUT) as f:
        assert f.read() == gen_reference.render(), "run: python docs/gen_reference.py"
    with open(gen_reference.OUT_LL) as f:
        assert f.read() == gen_reference.render_ll(), "run: python docs/gen_reference.py"


def test_readme_hello_runs(tmp_path, mnt):
    with open(os.path.join(ROOT, "README.md")) as f:
        code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
    script = tmp_path / "hello_readme.py"
    script.write_text(code)
    with testing.mounted_process([sys.executable, str(script), mnt], mnt):
        assert os.listdir(mnt) == ["hello"]
        assert open(os.path.join(mnt, "hello")).read() == "Hello World!\n"


def test_lowlevel_guide_first_filesystem_runs(tmp_path, mnt):
    """docs/lowlevel.md's first filesystem, as printed (its mount point made the argument)."""
    with open(os.path.join(ROOT, "docs", "lowlevel.md")) as f:
        code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
    assert 'll.run(Hello(), "/mnt/x")' in code
    script = tmp_path / "hello_ll.py"
    script.write_text("import sys\n" + code.replace('"/mnt/x"', "sys.argv[1]"))
    with testing.mounted_process([sys.executable, str(script), mnt], mnt):
        assert os.listdir(mnt) == ["hello"]
        with open(os.path.join(mnt, "hello")) as f:
            assert f.read() == "Hello World!\n"


def _resolve(dotted: str) -> bool:
    """Whether ``pyfuse.a.b`` is importable as shown: the longest importable module prefix,
    then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.nofuse
def test_every_name_the_docs_show_is_importable():
    """Every ``pyfuse.NAME`` (or ``pyfuse.module.NAME``) in the README, docs/ and the
    docstrings the reference is made of can be imported or reached as written."""
    texts = [os.path.join(ROOT, "README.md"),
             *glob.glob(os.path.join(ROOT, "docs", "*.md"))]
    missing = set()
    for path in texts:
        with open(path) as f:
            for name in re.findall(r"\bpyfuse(?:\.[A-Za-z_]\w*)+", f.read()):
                if name.endswith((".md", ".py", ".c", ".h", ".json")) or _resolve(name) \
                        or name == "pyfuse.libs":  # the binary wheel's folder of libraries
                    continue
                missing.add((os.path.relpath(path, ROOT), name))
    assert not missing, sorted(missing)
