"""How many calls each worker on the driver's host has finished, in shared memory.

The Ray backend holds a busy worker's tasks back, to send them as one call and to
request other workers' pieces ahead of them (:meth:`RayBackend.flush`). It learned that
a worker was done from the future of its last call, which Ray completes from a thread
that needs the driver's GIL: while the driver planned and lowered CG's 20 iterations,
both workers, idle 12 ms into the evaluation, still looked busy at 19 ms, and its first
product waited for them. Here each worker counts its finished calls in a shared-memory
slot that the driver reads without Ray or the GIL.

>>> board = CallBoard.make(2)        # the driver's (None without shared memory)
>>> slot = Slot.attach(board.path, 1)  # worker 1's (None on another host)
>>> slot.tick()
>>> board.finished(1)
1
>>> board.close()
"""

from __future__ import annotations

import mmap
import os
import uuid
import weakref

import numpy as np

from spartan.backend import shared_output

_PREFIX = "spartan-calls-"
#: bytes per worker: a count each (8-byte aligned stores do not tear on 64-bit hosts)
_SLOT = 8


class CallBoard:
    """The driver's board: one count of finished calls per worker."""

    def __init__(self, path: str, counts: np.ndarray) -> None:
        self.path, self._counts = path, counts
        self._removal = weakref.finalize(self, shared_output.unlink_quietly, path)

    @classmethod
    def make(cls, nworkers: int) -> CallBoard | None:
        """A new board for ``nworkers`` workers; None where this host has no shared
        memory (the caller then goes by Ray's futures)."""
        if not os.path.isdir(shared_output.SHM_DIR):
            return None
        shared_output.remove_orphans(_PREFIX)
        path = os.path.join(shared_output.SHM_DIR, f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex}")
        try:
            counts = _map(path, nworkers * _SLOT, create=True)
        except OSError:
            return None
        return cls(path, counts)

    def finished(self, worker: int) -> int:
        """Calls ``worker`` has finished since it started (or since :meth:`reset`)."""
        return int(self._counts[worker])

    def reset(self, worker: int) -> None:
        """Zero ``worker``'s count (its replacement counts from there)."""
        self._counts[worker] = 0

    def close(self) -> None:
        """Remove the board's file (else it goes when the board does, or at exit)."""
        self._removal()


class Slot:
    """A worker's count on the driver's board."""

    def __init__(self, counts: np.ndarray, index: int) -> None:
        self._counts, self._index = counts, index

    @classmethod
    def attach(cls, path: str | None, index: int) -> Slot | None:
        """Worker ``index``'s slot on the board at ``path``; None without a board or
        where the board is not on this host."""
        if path is None:
            return None
        try:
            return cls(_map(path, 0, create=False), index)
        except OSError:
            return None

    def tick(self) -> None:
        """One more call finished (only this worker writes its slot)."""
        self._counts[self._index] += 1


def _map(path: str, size: int, create: bool) -> np.ndarray:
    """The counts in the file at ``path`` (made ``size`` bytes of zeros if ``create``)."""
    flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
    fd = os.open(path, flags, 0o600)
    try:
        if create:
            os.ftruncate(fd, size)
        buf = mmap.mmap(fd, size or os.fstat(fd).st_size)
    finally:
        os.close(fd)
    return np.frombuffer(buf, np.int64)
