"""A worker keeps freed memory for reuse (spartan.backend.heap)."""

import platform
import subprocess
import sys

import pytest

from spartan.backend.heap import default_keep, keep_freed_memory

_libc, _version = platform.libc_ver()
# mallinfo2 (the probe's reading) came with glibc 2.33
glibc = _libc == "glibc" and tuple(int(v) for v in _version.split(".")[:2]) >= (2, 33)

# run apart: mallopt changes the whole process
PROBE = """
import ctypes, sys
import numpy as np
from spartan.backend.heap import keep_freed_memory

class Info(ctypes.Structure):  # struct mallinfo2
    _fields_ = [(n, ctypes.c_size_t) for n in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
kept = keep_freed_memory(int(sys.argv[1]))
before = libc.mallinfo2().hblkhd  # (the interpreter's own big tables are mapped too)
a = np.ones(8 << 20, dtype=np.uint8)
b = np.ones(1 << 10, dtype=np.uint8)  # keeps a's chunk off the top of the heap
del a
info = libc.mallinfo2()
print(kept, (info.hblkhd - before) >> 20, info.fordblks >> 20)
"""


def _probe(keep: int) -> tuple[str, int, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(keep)], capture_output=True, text=True, check=True
    ).stdout.split()
    return out[0], int(out[1]), int(out[2])


@pytest.mark.skipif(not glibc, reason="needs glibc >= 2.33")
def test_freed_array_stays_in_the_heap():
    kept, mapped_mb, free_mb = _probe(32 << 20)
    assert kept == "True"
    assert mapped_mb == 0  # the 8 MB array came from the heap, not a mapping of its own
    assert free_mb >= 8  # and its memory stays there once freed


@pytest.mark.skipif(not glibc, reason="needs glibc >= 2.33")
def test_zero_keeps_mallocs_default():
    kept, _, free_mb = _probe(0)
    assert kept == "False"
    assert free_mb < 8  # the array had its own mapping, returned when freed


def test_default_is_bounded():
    assert 0 < default_keep(1) <= 1 << 30
    assert default_keep(64) <= default_keep(1)
    assert keep_freed_memory(0) is False
