"""The docs stay true to the code: the generated reference is current and the README's hello
filesystem runs."""
from __future__ import annotations

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


def test_readme_hello_runs(tmp_path, mnt):
    with open(os.path.join(ROOT, "README.md")) as f:
        code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
    script = tmp_path / "hello_readme.py"
    script.write_text(code)
    with testing.mounted_process([sys.executable, str(script), mnt], mnt):
        assert os.listdir(mnt) == ["hello"]
        assert open(os.path.join(mnt, "hello")).read() == "Hello World!\n"
