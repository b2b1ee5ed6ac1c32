"""Which user function each worker on the driver's host is running, in shared memory.

A worker killed by its own user function (``os._exit``, a signal, a crash) cannot say
so afterwards: Ray reports every death alike. So a worker writes, before it calls user
code (:func:`spartan.backend.worker.call_user`), the task and the function it is in to
its slot on the driver's *running board*, and clears it after; and where the process
ends itself on purpose (``os._exit``, ``os.abort``, a signal sent to itself) it notes
how first (:func:`watch_exits`). After a death the driver reads the dead worker's slot
(the writer is gone, so nothing tears) and blames the function instead of running it
again (:meth:`spartan.backend.ray_backend.RayBackend._recover`); after a timeout it
names the function stuck.

The board is a file of the driver's private session directory
(:mod:`~spartan.backend.session_files`), mode 0600, holding integers and UTF-8 text
only (nothing is unpickled from it). A worker on another host has no slot.

>>> from spartan.backend import session_files
>>> board = RunningBoard.make(2, session_files.default())
>>> slot = RunningSlot.attach(board.path, 1)
>>> slot.task = 7
>>> mark = slot.enter("spartan.map(f) on output tile (0, 0)")
>>> board.read(1)
Running(task=7, what='spartan.map(f) on output tile (0, 0)', ended=None)
>>> slot.leave(mark)
>>> board.read(1) is None
True
>>> board.close()
"""

from __future__ import annotations

import mmap
import os
import signal
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from spartan.backend import session_files, shared_output

#: bytes of one worker's slot: three int64 (task, length of ``what``, length of
#: ``ended``), then ``what`` and ``ended`` in TEXT_BYTES each
TEXT_BYTES = 232
_SLOT = 24 + 2 * TEXT_BYTES
_NONE = -1


@dataclass(frozen=True)
class Running:
    """What a worker was doing: the sequence number of the task (the driver's
    lineage), the user function and tiles, and how the process ended itself (None:
    not on purpose, as far as it could tell: killed, or crashed)."""

    task: int
    what: str
    ended: str | None


def _text(data: np.ndarray, length: int) -> str:
    return bytes(data[: max(0, min(int(length), TEXT_BYTES))]).decode("utf-8", "replace")


class RunningBoard:
    """The driver's board: one slot per worker."""

    def __init__(self, path: str, buf: mmap.mmap, nworkers: int) -> None:
        self.path, self._buf, self.nworkers = path, buf, nworkers
        self._removal = weakref.finalize(self, shared_output.unlink_quietly, path)

    @classmethod
    def make(cls, nworkers: int, files: session_files.SessionDir) -> RunningBoard | None:
        """A new board in the session directory ``files``; None without shared memory
        (then no worker has a slot, and deaths are blamed by the driver's own count)."""
        try:
            path, fd = files.new_file("running", nworkers * _SLOT)
        except OSError:
            return None
        try:
            return cls(path, mmap.mmap(fd, nworkers * _SLOT), nworkers)
        except OSError:
            shared_output.unlink_quietly(path)
            return None
        finally:
            os.close(fd)

    def read(self, worker: int) -> Running | None:
        """What ``worker`` was running of user code, if anything (read it once the
        worker is dead or stuck: a live one may be changing it)."""
        head, what, ended = _views(self._buf, worker)
        if head[0] == _NONE or head[1] <= 0:
            return None
        return Running(int(head[0]), _text(what, head[1]), _text(ended, head[2]) or None)

    def reset(self, worker: int) -> None:
        """Clear ``worker``'s slot (its replacement starts with none)."""
        head, _, _ = _views(self._buf, worker)
        head[:] = (_NONE, 0, 0)

    def close(self) -> None:
        """Remove the board's file (else it goes when the board does)."""
        self._removal()


def _views(buf: Any, worker: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    at = worker * _SLOT
    head = np.frombuffer(buf, np.int64, 3, at)
    what = np.frombuffer(buf, np.uint8, TEXT_BYTES, at + 24)
    ended = np.frombuffer(buf, np.uint8, TEXT_BYTES, at + 24 + TEXT_BYTES)
    return head, what, ended


class RunningSlot:
    """A worker's slot on the driver's board. ``task``: the sequence number of the
    task this worker runs now (set by the worker before each task)."""

    task: int = _NONE

    def __init__(self, buf: mmap.mmap, index: int) -> None:
        self._buf = buf
        self._head, self._what, self._ended = _views(buf, index)
        self._head[:] = (_NONE, 0, 0)

    @classmethod
    def attach(cls, path: str | None, index: int) -> RunningSlot | None:
        """Worker ``index``'s slot on the board at ``path``; None without a board, or
        where the board is not on this host."""
        buf = session_files.map_own(path)
        if buf is None or len(buf) < (index + 1) * _SLOT:
            return None
        return cls(buf, index)

    def enter(self, what: str) -> tuple[int, bytes]:
        """User code ``what`` (function and tiles) starts in task :attr:`task`; what
        the slot said before, for :meth:`leave` (user code may call more)."""
        head = self._head
        before = (int(head[0]), bytes(self._what[: max(0, int(head[1]))]))
        data = what.encode("utf-8", "replace")[:TEXT_BYTES]
        self._what[: len(data)] = np.frombuffer(data, np.uint8)
        head[1:] = (len(data), 0)  # (the text first, then the task that makes it count)
        head[0] = self.task
        return before

    def leave(self, before: tuple[int, bytes]) -> None:
        """The user code :meth:`enter` noted has returned (or raised)."""
        task, data = before
        self._head[0] = _NONE
        if data:
            self._what[: len(data)] = np.frombuffer(data, np.uint8)
        self._head[1:] = (len(data), 0)  # (a process still here did not end itself)
        self._head[0] = task

    def ended(self, how: str) -> None:
        """The process ends itself now, ``how`` (read only with user code running)."""
        data = how.encode("utf-8", "replace")[:TEXT_BYTES]
        self._ended[: len(data)] = np.frombuffer(data, np.uint8)
        self._head[2] = len(data)


#: this process's slot (a worker's; None in the driver or off the driver's host)
_slot: RunningSlot | None = None


def current() -> RunningSlot | None:
    """This process's slot, where it is a worker on the driver's host."""
    return _slot


def watch_exits(slot: RunningSlot | None) -> None:
    """Make ``slot`` this process's, and have the ways a process ends itself on purpose
    (``os._exit``, ``os.abort``, a deadly signal sent to itself by ``os.kill``,
    ``os.killpg`` or ``signal.raise_signal``) note so in it first. Only for a spartan
    worker's own process: the originals are called right after."""
    global _slot
    _slot = slot
    if slot is None or getattr(os._exit, "_spartan_watched", False):
        return
    me = os.getpid()

    def noted(how: str) -> None:
        target = _slot
        if target is not None:
            try:
                target.ended(how)
            except Exception:  # noqa: BLE001 -- the process ends anyway
                pass

    exit_, abort, kill, killpg = os._exit, os.abort, os.kill, os.killpg
    raise_signal = signal.raise_signal

    def deadly(sig: int) -> bool:
        return sig not in (0, signal.SIGCHLD, signal.SIGWINCH, signal.SIGURG, signal.SIGCONT)

    def _exit(code: int) -> None:
        noted(f"os._exit({code!r})")
        exit_(code)

    def _abort() -> None:
        noted("os.abort()")
        abort()

    def _kill(pid: int, sig: int) -> None:
        if pid in (me, 0) and deadly(sig):
            noted(f"os.kill(os.getpid(), {_signal_name(sig)})")
        kill(pid, sig)

    def _killpg(pgid: int, sig: int) -> None:
        if pgid in (0, os.getpgid(me)) and deadly(sig):
            noted(f"os.killpg(..., {_signal_name(sig)})")
        killpg(pgid, sig)

    def _raise_signal(sig: int) -> None:
        if deadly(sig):
            noted(f"signal.raise_signal({_signal_name(sig)})")
        raise_signal(sig)

    watched: tuple[Any, ...] = (_exit, _abort, _kill, _killpg, _raise_signal)
    for fn in watched:
        fn._spartan_watched = True
    os._exit, os.abort = _exit, _abort  # type: ignore[assignment]
    os.kill, os.killpg = _kill, _killpg  # type: ignore[assignment]
    signal.raise_signal = _raise_signal  # type: ignore[assignment]


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)
