# Type stub for the compiled cffi module built from build_ffi.py.
from typing import Any

ffi: Any
lib: Any
