"""Small pieces passed from worker to worker on one host, past the driver.

Ray resolves an actor call's arguments at the caller: a piece one worker needs from
another goes owner -> driver -> reader, and the reader's task is only sent on once the
driver has heard the piece is ready. With two busy cores (the driver's threads among
them) that hop took 5-11 ms, once per iteration of CG, whose iteration NumPy runs in
19 ms. Here the driver sends both calls at once, naming a *letter*: the owner writes
the piece to a shared-memory file of that name (:func:`post`), and the reader's task,
already queued behind the reader's earlier work, waits for the file
(:meth:`Letter.receive`). Pieces the driver knows to be over :data:`MAX_BYTES` do not
take letters. One that turns out bigger (a whole block, whose size the driver does not
know), or that there is no room for, goes apart (the transport's other way: Ray's
object store, where the reader maps it without a copy) and its letter is left empty,
which the reader gets as :class:`SentApart`. The wait cannot deadlock: the driver sends
calls in an order in which every producer precedes its readers, and each worker runs
its calls in that order (Ray's guarantee for calls from one caller), so the earliest
unfinished call never waits.

>>> mail = Mailbox()                                 # the driver's
>>> letter = Letter(mail.name(), writer=os.getpid())  # for the owner and the reader
>>> post(letter.path, np.arange(3))                  # the owner
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
import time
import uuid
from dataclasses import dataclass
from typing import Any

from spartan.backend import shared_output

#: pieces up to this size go in letters; bigger ones apart (a letter is pickled,
#: written, read and unpickled: four copies; with the 32 MB pieces of a transpose or a
#: re-tiling in letters, both took 10-30% longer than through the object store)
MAX_BYTES = 1 << 20
#: while waiting, how often the reader checks that the writer's process still lives
CHECK_WRITER_S = 1.0
#: the longest sleep between looks for a letter
MAX_POLL_S = 1e-3
_PREFIX = "spartan-letter-"


class PeerLost(ConnectionError):
    """The worker that was to write a letter died before it did."""


class SentApart:
    """What an empty letter means: its piece went another way (see :func:`post`)."""


@dataclass(frozen=True)
class Letter:
    """A piece's name in shared memory, the process id of the worker writing it, and
    what the reader needs for a piece sent apart (the transport's business; Ray does
    not resolve an object ref held in an argument's field)."""

    path: str
    writer: int
    apart: Any = None

    def receive(self) -> Any:
        """The posted value, once it is there (the file is then removed).

        Raises :class:`PeerLost` if the writer dies without posting it."""
        sleep, check_at = 20e-6, time.monotonic() + CHECK_WRITER_S
        while True:
            try:
                with open(self.path, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                if time.monotonic() >= check_at:
                    check_at = time.monotonic() + CHECK_WRITER_S
                    # (a writer that posted and then died leaves the letter here)
                    if not shared_output.process_alive(self.writer) and not os.path.exists(
                        self.path
                    ):
                        raise PeerLost(
                            f"worker process {self.writer} died before sending"
                        ) from None
                time.sleep(sleep)
                sleep = min(2 * sleep, MAX_POLL_S)
                continue
            with contextlib.suppress(FileNotFoundError):  # the mailbox closed meanwhile
                os.unlink(self.path)
            return pickle.loads(data) if data else SentApart


def post(path: str, value: Any) -> bool:
    """Write ``value`` as the letter at ``path`` (the reader sees all of it or nothing)
    and return True; else, when it cannot be pickled or there is no room for it, leave
    an empty letter (:func:`post_apart`) and return False: a reader must never wait
    for a letter that does not come."""
    part = path + ".part"
    try:
        with open(part, "wb") as f:
            f.write(pickle.dumps(value, protocol=5))
        os.rename(part, path)
        return True
    except Exception:  # noqa: BLE001 -- the value goes apart instead
        with contextlib.suppress(OSError):
            os.unlink(part)
        post_apart(path)
        return False


def post_apart(path: str) -> None:
    """Leave an empty letter at ``path``: its piece went another way (an empty file
    needs no free space on the shared-memory filesystem)."""
    open(path, "wb").close()


class Mailbox:
    """The driver's letter names (``spartan-letter-<pid>-<id>-<n>``), removed by
    :meth:`close`, or by the next driver on this host if this one dies first."""

    def __init__(self) -> None:
        shared_output.remove_orphans(_PREFIX)
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
        for path in glob.glob(self._stem + "*"):
            with contextlib.suppress(OSError):  # read meanwhile
                os.unlink(path)
