"""An fsx-style data exerciser: thousands of random reads, writes, truncates, mmap reads and
writes, fallocate and copy_file_range on files of the mount, checked against an in-memory model
after every operation. The seed is in the failure message; PYFUSE_FSX_SEED reruns one."""
from __future__ import annotations

import mmap
import os
import random

import pytest

OPS = int(os.environ.get("PYFUSE_FSX_OPS", "3000"))
MAXLEN = 3 << 20


@pytest.mark.timeout(300)
def test_fsx(data_fs: str) -> None:
    seed = int(os.environ.get("PYFUSE_FSX_SEED", random.randrange(1 << 32)))
    rng = random.Random(seed)
    path, other = os.path.join(data_fs, "fsx"), os.path.join(data_fs, "src")
    model = bytearray()
    src_data = os.urandom(MAXLEN // 2)
    with open(other, "wb") as f:
        f.write(src_data)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    src = os.open(other, os.O_RDONLY)
    log: list[str] = []

    def where() -> str:
        return f"seed {seed}, op {len(log)}: " + "; ".join(log[-5:])

    try:
        for _ in range(OPS):
            op = rng.choice(["read", "write", "write", "truncate", "mapread", "mapwrite",
                             "falloc", "copy"])
            off = rng.randrange(MAXLEN)
            n = rng.choice([1, 7, 4096, rng.randrange(1, 200_000)])
            log.append(f"{op}({off}, {n})")
            if op == "read":
                assert os.pread(fd, n, off) == bytes(model[off:off + n]), where()
            elif op == "write":
                data = rng.randbytes(n)
                assert os.pwrite(fd, data, off) == n, where()
                if off > len(model):
                    model.extend(bytes(off - len(model)))
                model[off:off + n] = data
            elif op == "truncate":
                os.ftruncate(fd, off)
                del model[off:]
                model.extend(bytes(off - len(model)))
            elif op in ("mapread", "mapwrite") and model:
                off %= len(model)
                n = min(n, len(model) - off)
                with mmap.mmap(fd, len(model)) as m:
                    if op == "mapread":
                        assert m[off:off + n] == model[off:off + n], where()
                    else:
                        data = rng.randbytes(n)
                        m[off:off + n] = data
                        model[off:off + n] = data
                        m.flush()
            elif op == "falloc":
                os.posix_fallocate(fd, off, n)
                if off + n > len(model):
                    model.extend(bytes(off + n - len(model)))
            elif op == "copy":
                s_off = rng.randrange(len(src_data))
                got = os.copy_file_range(src, fd, n, s_off, off)
                chunk = src_data[s_off:s_off + got]
                if got:
                    if off > len(model):
                        model.extend(bytes(off - len(model)))
                    model[off:off + got] = chunk
            if len(log) % 100 == 0:
                assert os.fstat(fd).st_size == len(model), where()
        assert os.fstat(fd).st_size == len(model), where()
        with open(path, "rb") as f:
            assert f.read() == model, where()
    finally:
        os.close(fd)
        os.close(src)
