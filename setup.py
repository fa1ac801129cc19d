"""Build hook: setup.py only declares the cffi module; metadata lives in pyproject.toml."""
from setuptools import setup

setup(cffi_modules=["build_ffi.py:ffibuilder"])
