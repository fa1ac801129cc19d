"""`make test-valgrind`'s reading of memcheck's logs (tests/valgrind/check_log.py): an error
whose stack passes through the shim fails the check however memcheck prints it, one entirely in
CPython does not. The logs are shaped as memcheck 3.19 writes them for pyfuse's daemons."""
from __future__ import annotations

import importlib.util
import os

import pytest

pytestmark = pytest.mark.nofuse
HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("check_log",
                                               os.path.join(HERE, "valgrind", "check_log.py"))
assert _spec is not None and _spec.loader is not None
check_log = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_log)

BLANK = "==3046== \n"  # memcheck's line between two blocks
HEAD = """==3046== Memcheck, a memory error detector
==3046== Command: python -m pyfuse.examples.memory_ll /tmp/m
""" + BLANK
CPYTHON = """==3046== Conditional jump or move depends on uninitialised value(s)
==3046==    at 0x49E04DA: maybe_small_long (longobject.c:71)
==3046==    by 0x49E075F: int_from_bytes_impl (longobject.c:5946)
""" + BLANK
# a worker thread's error, as the multi-threaded loop's are printed: "Thread N:" first, and
# the shim's frames by file name only
THREADED = """==3046== Thread 3:
==3046== Conditional jump or move depends on uninitialised value(s)
==3046==    at 0x6186A4D: ??? (in /usr/lib/x86_64-linux-gnu/libfuse3.so.3.14.0)
==3046==    by 0x6189A10: fuse_reply_open (in /usr/lib/x86_64-linux-gnu/libfuse3.so.3.14.0)
==3046==    by 0x614A2B0: pyfuse_ll_reply_open (ll_reply.c:325)
==3046==    by 0x4E9E1F4: start_thread (pthread_create.c:442)
""" + BLANK
SYSCALL = """==3046== Syscall param writev(vector[...]) points to uninitialised byte(s)
==3046==    at 0x4F1A0B2: writev (writev.c:26)
==3046==    by 0x6186B11: ??? (in /usr/lib/x86_64-linux-gnu/libfuse3.so.3.14.0)
==3046==    by 0x614B000: answer (lowlevel.c:60)
""" + BLANK
TAIL = "==3046== ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 0 from 0)\n"


def _check(tmp_path, *parts: str) -> int:
    log = tmp_path / "valgrind.3046.log"
    log.write_text("".join(parts))
    return check_log.main([str(log)])


def test_cpython_errors_do_not_fail(tmp_path, capsys):
    assert _check(tmp_path, HEAD, CPYTHON, TAIL) == 0
    assert "0 error(s) in the shim, 1 elsewhere" in capsys.readouterr().out


@pytest.mark.parametrize("error", [THREADED, SYSCALL], ids=["threaded", "syscall"])
def test_an_error_through_the_shim_fails(tmp_path, capsys, error):
    assert _check(tmp_path, HEAD, CPYTHON, error, TAIL) == 1
    out = capsys.readouterr().out
    assert "1 error(s) in the shim, 1 elsewhere" in out
    assert error.splitlines()[-2] in out  # the error is printed whole


def test_a_log_without_summary_fails(tmp_path):
    """A daemon that did not exit (killed) leaves no summary: nothing was checked."""
    assert _check(tmp_path, HEAD, CPYTHON) == 1


def test_no_log_fails(tmp_path, capsys):
    assert check_log.main([str(tmp_path / "valgrind.*.log")]) == 1
    assert check_log.main([]) == 1
    assert "no log" in capsys.readouterr().out


def test_every_shim_source_is_known():
    """The sources whose frames count as the shim's are csrc/'s, read when the module loads."""
    assert {"lowlevel.c", "ll_reply.c", "readdir.c", "session.c"} <= set(check_log.SHIM_SOURCES)
