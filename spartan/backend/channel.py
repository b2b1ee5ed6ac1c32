"""Small pieces passed from worker to worker on one host, past the driver.

Ray resolves an actor call's arguments at the caller: a piece one worker needs from
another goes owner -> driver -> reader, and the reader's task is only sent on once the
driver has heard the piece is ready. With two busy cores (the driver's threads among
them) that hop took 5-11 ms, once per iteration of CG, whose iteration NumPy runs in
19 ms. Here the driver sends both calls at once, naming a *letter*: the owner writes
the piece to a shared-memory file of that name (:func:`post`), and the reader's task,
already queued behind the reader's earlier work, waits for the file
(:meth:`Letter.receive`), looking again as soon as the owner rings its
:class:`Doorbell`. Pieces the driver knows to be over :data:`MAX_BYTES` do not
take letters. One that turns out bigger (a whole block, whose size the driver does not
know), or that there is no room for, goes apart (the transport's other way: Ray's
object store, where the reader maps it without a copy) and its letter is left empty,
which the reader gets as :class:`SentApart`. A piece whose reader holds no such ref (the
driver held the post to send it with the owner's later tasks) is never sent apart: one
plain pickle refuses goes by cloudpickle, and one there is no room for is *spilled* to a
file in :data:`SPILL_DIR`, which an empty letter then points to. The wait cannot
deadlock: the driver sends
calls in an order in which every producer precedes its readers, and each worker runs
its calls in that order (Ray's guarantee for calls from one caller), so the earliest
unfinished call never waits.

>>> import numpy as np
>>> mail = Mailbox()                                 # the driver's
>>> letter = Letter(mail.name(), writer=os.getpid())  # for the owner and the reader
>>> post(letter.path, np.arange(3))                  # the owner
True
>>> letter.receive()                                 # the reader
array([0, 1, 2])
>>> mail.close()
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pickle
import select
import socket
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from typing import Any

import cloudpickle

from spartan.backend import shared_output

#: pieces up to this size go in letters; bigger ones apart (a letter is pickled,
#: written, read and unpickled: four copies; with the 32 MB pieces of a transpose or a
#: re-tiling in letters, both took 10-30% longer than through the object store)
MAX_BYTES = 1 << 20
#: while waiting, how often the reader checks that the writer's process still lives
CHECK_WRITER_S = 1.0
#: the longest sleep between looks for a letter
MAX_POLL_S = 1e-3
#: where a letter goes that shared memory has no room for (a disk: slower, but there)
SPILL_DIR = tempfile.gettempdir()
_PREFIX = "spartan-letter-"


class PeerLost(ConnectionError):
    """The worker that was to write a letter died before it did."""


class SentApart:
    """What an empty letter means: its piece went another way (see :func:`post`)."""


@dataclass(frozen=True)
class Letter:
    """A piece's name in shared memory, the process id of the worker writing it, and
    what the reader needs for a piece sent apart (the transport's business; Ray does
    not resolve an object ref held in an argument's field); None where none goes apart
    (:func:`post` with ``spill``)."""

    path: str
    writer: int
    apart: Any = None

    def receive(self) -> Any:
        """The posted value, once it is there (the file is then removed).

        Raises :class:`PeerLost` if the writer dies without posting it."""
        sleep, check_at = 20e-6, time.monotonic() + CHECK_WRITER_S
        while (data := _take(self.path)) is None:
            if time.monotonic() >= check_at:
                check_at = time.monotonic() + CHECK_WRITER_S
                # (a writer that posted and then died leaves the letter here)
                if not shared_output.process_alive(self.writer) and not os.path.exists(self.path):
                    raise PeerLost(f"worker process {self.writer} died before sending")
            doorbell().wait(sleep)
            sleep = min(2 * sleep, MAX_POLL_S)
        if not data:  # an empty letter: the piece was spilled, or went apart
            data = _take(spill_path(self.path)) or b""
        return pickle.loads(data) if data else SentApart


class Doorbell:
    """This process's doorbell: a writer rings it (:func:`ring`) once it has posted a
    letter, so that a reader waiting for one looks again at once, not at the end of its
    sleep (up to :data:`MAX_POLL_S`; in CG a letter was taken a median 0.68 ms after it
    was written, once per iteration). A datagram socket in Linux's abstract namespace,
    named after the process id (no file to remove); elsewhere, or where it cannot be
    bound, :meth:`wait` just sleeps. A ring may be spurious (an earlier letter's, or one
    for another process of that id in another pid namespace): it only means a look.

    >>> bell = doorbell()
    >>> ring(os.getpid())
    >>> bell.wait(5.0)
    True
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._sock: socket.socket | None = None
        if sys.platform.startswith("linux"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                sock.bind(_bell_address(self.pid))
            except OSError:  # e.g. another process of this id, in another pid namespace
                sock.close()
                return
            sock.setblocking(False)
            self._sock = sock

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, less if rung; whether it was rung."""
        if self._sock is None:
            time.sleep(timeout)
            return False
        rung = bool(select.select([self._sock], [], [], timeout)[0])
        with contextlib.suppress(BlockingIOError):
            while True:  # every ring so far is answered by this one look
                self._sock.recv(16)
        return rung


_bell: Doorbell | None = None


def doorbell() -> Doorbell:
    """This process's :class:`Doorbell` (a forked child gets its own)."""
    global _bell
    if _bell is None or _bell.pid != os.getpid():
        _bell = Doorbell()
    return _bell


def ring(pid: int) -> None:
    """Ring the doorbell of process ``pid`` from this process's own (nothing if either
    has none, or ``pid``'s queue of rings is full: it looks again soon anyway)."""
    sock = doorbell()._sock  # (this process's own: no socket made per ring)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.sendto(b"\0", socket.MSG_DONTWAIT, _bell_address(pid))


def _bell_address(pid: int) -> str:
    return f"\0spartan-bell-{pid}"


def post(path: str, value: Any, spill: bool = False) -> bool:
    """Write ``value`` as the letter at ``path`` (the reader sees all of it or nothing)
    and return True. When plain pickle refuses it or there is no room for it: without
    ``spill``, leave an empty letter (:func:`post_apart`) and return False, the value
    going apart (a reader must never wait for a letter that does not come); with
    ``spill`` (its reader has no other way to get it), pickle it with cloudpickle, write
    it to :func:`spill_path` and return True, or raise when neither is possible."""
    try:
        data = pickle.dumps(value, protocol=5)
    except Exception:  # noqa: BLE001 -- e.g. a lambda in an object array
        if not spill:
            post_apart(path)
            return False
        data = cloudpickle.dumps(value, protocol=5)
    if _write(path, data):
        return True
    spilled = spill and _write(spill_path(path), data)  # (before the letter points to it)
    post_apart(path)
    if spill and not spilled:
        raise OSError(
            f"no room for a {len(data)}-byte piece in {os.path.dirname(path)} or {SPILL_DIR}"
        )
    return spilled


def spill_path(path: str) -> str:
    """Where the letter at ``path`` goes when shared memory has no room for it."""
    return os.path.join(SPILL_DIR, os.path.basename(path))


def _write(path: str, data: bytes) -> bool:
    """Write ``data`` to ``path`` whole (by rename) or not at all; False: no room."""
    part = path + ".part"
    try:
        with open(part, "wb") as f:
            f.write(data)
        os.rename(part, path)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(part)
        return False


def _take(path: str) -> bytes | None:
    """The file at ``path``, removed once read; None when there is none."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    with contextlib.suppress(FileNotFoundError):  # the mailbox closed meanwhile
        os.unlink(path)
    return data


def post_apart(path: str) -> None:
    """Leave an empty letter at ``path``: its piece went another way (an empty file
    needs no free space on the shared-memory filesystem)."""
    open(path, "wb").close()


class Mailbox:
    """The driver's letter names (``spartan-letter-<pid>-<id>-<n>``), removed by
    :meth:`close`, or by the next driver on this host if this one dies first."""

    def __init__(self) -> None:
        shared_output.remove_orphans(_PREFIX)
        shared_output.remove_orphans(_PREFIX, SPILL_DIR)
        self._stem = os.path.join(
            shared_output.SHM_DIR, f"{_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}-"
        )
        self._count = itertools.count()

    @staticmethod
    def available() -> bool:
        """Whether this host has shared memory to pass letters through."""
        return os.path.isdir(shared_output.SHM_DIR)

    def name(self) -> str:
        """A new letter's path."""
        return f"{self._stem}{next(self._count)}"

    def close(self) -> None:
        """Remove letters never read (their readers died or were shut down)."""
        for path in glob.glob(self._stem + "*") + glob.glob(spill_path(self._stem) + "*"):
            with contextlib.suppress(OSError):  # read meanwhile
                os.unlink(path)
