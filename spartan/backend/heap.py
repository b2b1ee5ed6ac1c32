"""Keeping a worker's freed memory for its next blocks instead of returning it.

glibc's malloc gives every large array its own mapping and unmaps it when the array is
freed. On a virtual machine with free page reporting (Firecracker, cloud VMs with
virtio-balloon), pages returned to the kernel go back to the hypervisor and touching
them again costs a host fault per page: measured here, a fresh 288 MB array took
150-950 ms to fill where a reused one took 17 ms, and a tile-by-tile stencil over
256 MB ran 1.5-2.4 s instead of 0.2 s. A worker makes and frees blocks of the same
few sizes all the time, so it keeps freed memory in its heap for the next ones.

>>> from spartan.backend.heap import keep_freed_memory
>>> keep_freed_memory(1 << 30)  # changes this process's malloc  # doctest: +SKIP
True
"""

from __future__ import annotations

import ctypes
import os

# mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: mallopt takes a C int
_INT_MAX = 2**31 - 1
#: the largest mmap threshold older glibc accepts
_OLD_MMAP_MAX = 32 << 20
#: the most a worker keeps by default
DEFAULT_KEEP_MAX = 1 << 30


def default_keep(workers_on_node: int) -> int:
    """An eighth of one worker's share of this machine's memory, at most 1 GB."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return min(DEFAULT_KEEP_MAX, total // (8 * max(1, workers_on_node)))


def keep_freed_memory(nbytes: int) -> bool:
    """Let this process's malloc keep up to ``nbytes`` of freed memory for reuse:
    arrays up to that size come from the heap, and its free top is returned to the
    system only beyond that. False where the C library has no ``mallopt`` (macOS,
    musl) or ``nbytes`` is 0; then nothing changes.

    Memory in use does not change; what the process holds while idle can exceed it
    by up to ``nbytes`` (more if the heap is fragmented). Only the main thread's heap
    serves big arrays: glibc still maps those of other threads over ~64 MB apart (Ray
    runs an actor's tasks on its main thread).
    """
    if nbytes <= 0:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    size = min(int(nbytes), _INT_MAX)
    # older glibc refuses an mmap threshold over HEAP_MAX_SIZE / 2 (32 MiB on 64-bit)
    mapped = bool(mallopt(M_MMAP_THRESHOLD, size)) or bool(
        mallopt(M_MMAP_THRESHOLD, min(size, _OLD_MMAP_MAX))
    )
    return bool(mallopt(M_TRIM_THRESHOLD, size)) and mapped
