"""The driver side shared by every backend: where blocks live, and task wiring.

Subclasses supply the transport (:meth:`Master._dispatch` and friends); this class
turns keys into located pieces, splits a task's pieces into local and remote ones, and
keeps the placement map the driver needs for fetches and deletes.

Threads: one evaluation at a time in this process (:data:`LOCK`, held by
:meth:`Master.evaluating` and by every public call of a backend); building lazy
expressions takes no lock. Blocks the garbage collector frees (:meth:`Master.delete_later`,
which may run in any thread at any allocation, in the middle of a walk over
:attr:`Master.where` too) are queued and deleted at safe points.
"""

from __future__ import annotations

import functools
import logging
import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np

from spartan.backend.base import Input, Key, Piece, Region, Stats, remote_pieces
from spartan.backend.worker import assemble

log = logging.getLogger("spartan")

#: one evaluation at a time in this process, whatever its backend: lowering, the tasks it
#: sends and the wait for them, and every public call of a backend, hold it (re-entrant:
#: an evaluation calls the backend, and may evaluate another graph while it lowers). One
#: lock for every backend, not one each: planning's caches are shared by all backends,
#: and an evaluation on Ray may compute a small graph on the driver's in-process
#: workers while another thread holds those (two locks could deadlock)
LOCK = threading.RLock()
#: blocks the garbage collector freed while :data:`LOCK` was held (by any thread):
#: ``(backend, keys)``, deleted by :func:`free_queued` at the next safe point. A deque:
#: appends and pops from any thread need no lock
_freed: deque[tuple[Master, list[Key]]] = deque()

_F = TypeVar("_F", bound=Callable[..., Any])


def guarded(method: _F) -> _F:
    """``method`` holding :data:`LOCK` (a backend's public calls)."""

    @functools.wraps(method)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with LOCK:
            return method(*args, **kwargs)

    return locked  # type: ignore[return-value]


def free_queued() -> None:
    """Delete the blocks the garbage collector queued (:meth:`Master.delete_later`).
    Call holding :data:`LOCK`, where no backend walks its maps: an evaluation's start and
    end, between its lowering and its wait. Frees queued meanwhile (this very call may
    collect garbage) are deleted too."""
    while True:
        try:
            backend, keys = _freed.popleft()
        except IndexError:
            return
        if not backend.nworkers:  # shut down since: its blocks went with it
            continue
        try:
            backend.delete(keys)
        except Exception as error:  # noqa: BLE001 -- e.g. Ray shut down under a finalizer
            log.debug("spartan: could not delete %d freed block(s): %s", len(keys), error)


def _free_if_idle() -> None:
    """:func:`free_queued` now if no thread holds :data:`LOCK`; else the thread that holds
    it does, at its next safe point. Never waits (a finalizer must not: the thread it
    interrupted may be the one holding the lock) and never runs inside this thread's
    own hold (the garbage collector may have interrupted it in a walk)."""
    # (RLock's own test, held by this thread: a CPython method typeshed leaves out)
    if not _freed or LOCK._is_owned():  # type: ignore[attr-defined]
        return
    if not LOCK.acquire(blocking=False):
        return
    try:
        free_queued()
    finally:
        LOCK.release()


class Master(ABC):
    """Common driver logic; see :class:`spartan.backend.base.Backend` for the API.

    Thread-safe: every public call holds :data:`LOCK`, including those a subclass
    overrides (:data:`GUARDED`, wrapped by ``__init_subclass__``); an evaluation holds it
    throughout (:meth:`evaluating`)."""

    #: in-process workers see the driver's memory; a subclass in other processes says no
    shares_driver_memory = True
    #: what each backend says of itself (:class:`~spartan.backend.base.Backend`); a
    #: shut-down backend has no workers
    name = "master"
    device = "cpu"
    nworkers = 0

    nodes: list[str]

    #: the public calls of a subclass that hold :data:`LOCK` (Master's own that do
    #: anything are decorated with :func:`guarded`): another thread may make any of them
    #: while an evaluation runs (``spartan.stats()``, a checkpoint, ``shutdown``)
    GUARDED = (
        "put",
        "submit",
        "flush",
        "wait",
        "results",
        "fetch",
        "fetch_many",
        "delete",
        "release_held",
        "stats",
        "stats_later",
        "reset_stats",
        "worker_memory",
        "cancel",
        "shutdown",
    )
    lock = LOCK

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in cls.GUARDED:
            method = cls.__dict__.get(name)
            if callable(method):
                setattr(cls, name, guarded(method))

    def __init__(self) -> None:
        self.where: dict[Key, list[int]] = {}
        #: label attached to submitted tasks; workers count bytes moved per tag
        self.tag: Any = None
        #: depth of :meth:`batching_deletes` blocks
        self._batching = 0

    # ---- placement ------------------------------------------------------------------
    def _record(self, key: Key, worker: int) -> None:
        holders = self.where.setdefault(key, [])
        if worker not in holders:
            holders.append(worker)

    def owner(self, key: Key, near: int | None = None) -> int:
        holders = self.where.get(key)
        if not holders:
            raise KeyError(f"no worker holds block {key!r}")
        return near if near in holders else holders[0]

    def _localize(self, worker: int, inputs: Sequence[Input]) -> list[Any]:
        """Keys held elsewhere become whole-object regions fetched from their owner."""
        out: list[Any] = []
        for inp in inputs:
            if isinstance(inp, Region):
                out.append(inp)
                continue
            src = self.owner(inp, near=worker)
            out.append(inp if src == worker else Region(None, None, (Piece(src, inp, (), ()),)))
        return out

    # ---- API --------------------------------------------------------------------------
    @guarded
    def put(self, key: Key, value: Any, worker: int) -> None:
        self._put(key, value, worker)
        self._record(key, worker)

    @guarded
    def submit(
        self,
        worker: int,
        fn: Callable[..., Any],
        inputs: Sequence[Input],
        outputs: Sequence[Key],
        want_result: bool = False,
    ) -> Any:
        if not 0 <= worker < self.nworkers:
            raise ValueError(f"worker {worker} out of range for {self.nworkers} workers")
        inputs = self._localize(worker, inputs)
        for key in outputs:  # recorded first: a failing task's outputs can be deleted too
            self._record(key, worker)
        handle = self._dispatch(
            worker,
            fn,
            inputs,
            list(outputs),
            want_result,
            remote_pieces(worker, inputs),
        )
        return handle

    def flush(self, fetch: Sequence[Region] = ()) -> None:  # noqa: B027 -- a no-op unless the transport batches
        """Nothing is held back unless a transport says so."""

    @guarded
    def fetch(self, key: Key, worker: int | None = None, index: tuple | None = None) -> Any:
        return self.fetch_many([(key, worker, index)])[0]

    @staticmethod
    def _requests(region: Region) -> list[tuple[Key, int, tuple]]:
        """The :meth:`fetch_many` requests of ``region``'s pieces."""
        return [(p.key, p.worker, p.src) for p in region.pieces]

    @staticmethod
    def _assembled(region: Region, parts: Sequence[Any]) -> np.ndarray:
        """``region`` from its fetched pieces, in a new array the caller owns."""
        parts = [
            part.transpose(p.perm) if p.perm is not None else part
            for p, part in zip(region.pieces, parts)
        ]
        out = assemble(region, parts)
        # several pieces were copied into a new array; one piece may be a worker's block
        # or a read-only view of Ray's object store
        return out if len(parts) > 1 else np.array(out, copy=True)

    @guarded
    def delete(self, keys: Sequence[Key]) -> None:
        by_worker: dict[int, list[Key]] = {}
        for key in keys:
            for w in self.where.pop(key, ()):
                by_worker.setdefault(w, []).append(key)
        for w, ks in by_worker.items():
            self._delete(w, ks)

    def delete_later(self, keys: Sequence[Key]) -> None:
        """:meth:`delete` ``keys`` once it is safe: now if no thread holds :data:`LOCK`,
        else at that thread's next safe point (:func:`free_queued`). What a finalizer
        calls: it may run in any thread, at any allocation, even inside this backend's
        walk over its maps, where a delete would change them under it; it never waits.

        >>> be = spartan.backend.current()
        >>> be.put(("a", 0), np.arange(4), worker=0)
        >>> be.delete_later([("a", 0)])   # as a weakref finalizer would
        """
        _freed.append((self, list(keys)))
        _free_if_idle()

    @contextmanager
    def evaluating(self) -> Iterator[None]:
        """Hold this backend for one evaluation (lowering, its tasks, their wait): other
        threads' evaluations wait for it; deletes inside go out batched
        (:meth:`batching_deletes`). Blocks the garbage collector freed meanwhile are
        deleted at its start and end; call :func:`free_queued` at other safe points.

        >>> be = spartan.backend.current()
        >>> be.put(("a", 0), np.arange(4), worker=0)
        >>> with be.evaluating():
        ...     be.submit(0, np.negative, [("a", 0)], [("b", 0)])
        ...     be.wait()                 # the regions it fetched: none
        []
        """
        with LOCK, self.batching_deletes():
            free_queued()
            yield
            free_queued()
        _free_if_idle()  # (what a thread queued while this one held the lock, after its last look)

    @contextmanager
    def batching_deletes(self) -> Iterator[None]:
        with LOCK:
            self._batching += 1
            try:
                yield
            finally:
                self._batching -= 1
                if not self._batching:
                    self.release_held()

    def release_held(self) -> None:  # noqa: B027 -- a no-op unless the transport batches
        """Send whatever the transport holds back (queued tasks, batched deletes)."""

    def cancel(self) -> int:
        """Nothing outstanding to stop unless a transport sends work ahead: 0 skipped."""
        return 0

    def checkpointed(self, loads: Iterable[tuple[Key, int, Any]]) -> None:  # noqa: B027
        """Nothing to note unless a transport rebuilds lost blocks from their lineage."""

    def checkpoint_files_in_use(self) -> set[str]:
        """No block is rebuilt from a file unless a transport rebuilds lost blocks."""
        return set()

    @abstractmethod
    def fetch_many(self, reqs: Sequence[tuple[Key, int | None, tuple | None]]) -> list[Any]:
        """Several fetches ``(key, worker, index)`` with one wait."""

    @abstractmethod
    def worker_memory(self) -> list[int]:
        """Each worker's free memory in bytes."""

    @guarded
    def stats(self, tags: Collection[Any] | None = None) -> Stats:
        return self.stats_later(tags)()

    @guarded
    def stats_later(self, tags: Collection[Any] | None = None) -> Callable[[], Stats]:
        per_worker = guarded(self._worker_stats_later(tags))  # (asked later, in any thread)
        return lambda: self._summed(per_worker())

    @staticmethod
    def _summed(per: list[dict[str, Any]]) -> Stats:
        total = Stats(per_worker=per)
        total.tasks = sum(p["tasks"] for p in per)
        total.bytes_moved = sum(p["bytes_in"] for p in per)
        total.bytes_moved_between_nodes = sum(p["bytes_in_from_other_nodes"] for p in per)
        total.bytes_to_driver = sum(p["bytes_to_driver"] for p in per)
        total.bytes_from_driver = sum(p["bytes_from_driver"] for p in per)
        for p in per:
            for tag, n in p.get("bytes_by_tag", {}).items():
                total.bytes_by_tag[tag] = total.bytes_by_tag.get(tag, 0) + n
        return total

    # ---- transport (subclasses) ---------------------------------------------------------
    @abstractmethod
    def _put(self, key: Key, value: Any, worker: int) -> None: ...

    @abstractmethod
    def _dispatch(
        self,
        worker: int,
        fn: Callable[..., Any],
        inputs: list[Any],
        outputs: list[Key],
        want_result: bool,
        remote: list[Piece],
    ) -> Any: ...

    @abstractmethod
    def _delete(self, worker: int, keys: list[Key]) -> None: ...

    @abstractmethod
    def _worker_stats_later(
        self, tags: Collection[Any] | None = None
    ) -> Callable[[], list[dict[str, Any]]]:
        """Each worker's counters as of the tasks submitted so far, when called
        (``bytes_by_tag`` only for ``tags`` when given)."""
