# Type stub for pyfuse._pull, built from csrc/cpython/pull.c.
from typing import Any, Optional

#: whether pull is offered (Python 3.10 or later)
available: int
#: the most entries pull takes in one call
MAX_BATCH: int
#: pull's flags: the entries share one attr; every name was bytes; attrs is the entries'
#: Attr bytes (see use_attr)
SHARED: int
BYTES: int
PACKED: int
#: the bytes of one packed attr (struct pyfuse_attr)
ATTR_SIZE: int

def pull(iterator: Any, n: int, /) -> tuple[bytes, int, int, Any, Optional[bytes], Optional[bytes],
                                          Optional[list[Any]], Optional[BaseException]]: ...
def use_attr(cls: type, probe: Any, address: int, size: int, /) -> bool: ...
