# Type stub for pyfuse._pull, built from csrc/cpython/pull.c.
from typing import Any, Optional

#: whether pull is offered (Python 3.10 or later)
available: int
#: the most entries pull takes in one call
MAX_BATCH: int
#: pull's flags: the entries share one attr; every name was bytes
SHARED: int
BYTES: int

def pull(iterator: Any, n: int, /) -> tuple[bytes, int, int, Any, Optional[bytes], Optional[bytes],
                                          Optional[list[Any]], Optional[BaseException]]: ...
