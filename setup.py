"""Build hook: the only thing setup.py does is declare the cffi module (metadata is in pyproject)."""
from setuptools import setup

setup(cffi_modules=["build_ffi.py:ffibuilder"])
