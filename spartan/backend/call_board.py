"""How many calls each worker on the driver's host has finished, in shared memory.

The Ray backend holds a busy worker's tasks back, to send them as one call and to
request other workers' pieces ahead of them (:meth:`RayBackend.flush`). It learned that
a worker was done from the future of its last call, which Ray completes from a thread
that needs the driver's GIL: while the driver planned and lowered CG's 20 iterations,
both workers, idle 12 ms into the evaluation, still looked busy at 19 ms, and its first
product waited for them. Here each worker counts its finished calls in a shared-memory
slot that the driver reads without Ray or the GIL. The board is a file in the driver's
private session directory (:mod:`~spartan.backend.session_files`), made mode 0600 and
opened without following links; it holds nothing but the counts.

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
import weakref

import numpy as np

from spartan.backend import session_files, shared_output

#: bytes per worker: a count each (8-byte aligned stores do not tear on 64-bit hosts)
_SLOT = 8


class CallBoard:
    """The driver's board: one count of finished calls per worker."""

    def __init__(self, path: str, counts: np.ndarray) -> None:
        self.path, self._counts = path, counts
        self._removal = weakref.finalize(self, shared_output.unlink_quietly, path)

    @classmethod
    def make(cls, nworkers: int, files: session_files.SessionDir | None = None) -> CallBoard | None:
        """A new board for ``nworkers`` workers in the session directory ``files``
        (default: this process's); None where this host has no shared memory (the
        caller then goes by Ray's futures)."""
        if not os.path.isdir(shared_output.SHM_DIR):
            return None
        try:
            files = files if files is not None else session_files.default()
            path, fd = files.new_file("calls", nworkers * _SLOT)
        except OSError:
            return None
        try:
            counts = np.frombuffer(mmap.mmap(fd, nworkers * _SLOT), np.int64)
        except OSError:
            shared_output.unlink_quietly(path)
            return None
        finally:
            os.close(fd)
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
        buf = session_files.map_own(path)
        try:
            return cls(np.frombuffer(buf, np.int64), index) if buf is not None else None
        except ValueError:  # (a file not of counts)
            return None

    def tick(self) -> None:
        """One more call finished (only this worker writes its slot)."""
        self._counts[self._index] += 1
