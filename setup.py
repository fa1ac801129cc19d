"""Build hook: setup.py only declares the cffi module and the wheel's stable-ABI tag; metadata
lives in pyproject.toml. The module uses only CPython's stable ABI (cffi's default, Py_LIMITED_API),
so one wheel, tagged cp39-abi3, serves Python 3.9 and every later CPython."""
from setuptools import setup

setup(cffi_modules=["build_ffi.py:ffibuilder"],
      options={"bdist_wheel": {"py_limited_api": "cp39"}})
