"""Build hook: setup.py only declares the C modules and the wheel's stable-ABI tag; metadata
lives in pyproject.toml. Both modules use only CPython's stable ABI (Py_LIMITED_API), so one
wheel, tagged cp39-abi3, serves Python 3.9 and every later CPython: the cffi shim
(pyfuse._pyfuse_c, build_ffi.py) and pyfuse._pull (csrc/cpython/pull.c), the readdir engine's
pull of a batch, which build_ffi.py also describes."""
import os
import sys

from setuptools import Extension, setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # a PEP 517 build's, too
from build_ffi import PULL_ARGS, PULL_SOURCES  # noqa: E402  (cffi_modules runs it as well)

setup(cffi_modules=["build_ffi.py:ffibuilder"],
      ext_modules=[Extension("pyfuse._pull", PULL_SOURCES, py_limited_api=True,
                             define_macros=[("Py_LIMITED_API", "0x03090000")], **PULL_ARGS)],
      options={"bdist_wheel": {"py_limited_api": "cp39"}})
