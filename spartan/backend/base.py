"""The backend protocol: workers that hold blocks and run tasks on them.

A backend knows nothing about arrays, tilings or expressions: the frontend lowers
everything to *tasks*. A task runs a function on one worker; each of its inputs is a
whole stored object (:class:`Key`) or a :class:`Region` assembled from pieces of blocks
held anywhere. Pieces held by another worker are fetched straight from that worker
(never through the driver) and their bytes are counted.

>>> be = spartan.backend.current()
>>> be.put(("a", 0), np.arange(4), worker=0)
>>> be.submit(1, np.negative, [("a", 0)], [("b", 0)])
>>> be.fetch(("b", 0))            # worker found from where the key was stored
array([ 0, -1, -2, -3])
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

Key = Hashable


@dataclass(frozen=True)
class Piece:
    """Part of a region: ``block[src]`` (axes reordered by ``perm``), written at ``dst``.

    ``src`` indexes the block held under ``key`` by ``worker``; integers in it drop
    axes; ``perm`` (optional) reorders the remaining axes; the result is reshaped to the
    shape of ``dst`` (which inserts new unit axes) in the assembled region.
    """

    worker: int
    key: Key
    src: tuple
    dst: tuple
    perm: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Region:
    """An array of ``shape``/``dtype`` assembled from pieces on the task's worker.

    ``shape=None`` passes the one piece's object through as it is (a whole block);
    ``nbytes``, where its maker knows it, says about how big that object is (it only
    steers how the object travels between workers).
    """

    shape: tuple[int, ...] | None
    dtype: np.dtype | None
    pieces: tuple[Piece, ...]
    nbytes: int | None = None


Input = Key | Region


def remote_pieces(worker: int, inputs: Sequence[Any]) -> list[Piece]:
    """The pieces a task on ``worker`` fetches from other workers, in input order."""
    return [
        p for inp in inputs if isinstance(inp, Region) for p in inp.pieces if p.worker != worker
    ]


@dataclass(eq=False)
class _OpenPhase:
    """A phase being timed: when it began, and the seconds of the phases inside it."""

    start: float
    inner: float = 0.0


class DriverTime:
    """The driver's own seconds per phase of its evaluations, since :meth:`reset`
    (``spartan.reset_stats()``): ``plan`` (choosing tilings), ``lower`` (building and
    submitting the per-tile tasks, and the evaluation's other bookkeeping; in-process
    workers run each task as it is submitted, so there it includes the tasks), ``dispatch``
    (sending them, :meth:`Backend.flush`) and ``wait`` (the final wait, fetching included).
    Each phase excludes the phases timed inside it, so the four add up to the driver's
    time in evaluations. The frontend times them (the backend never looks), inside
    :meth:`Backend.evaluating`: one evaluation at a time, so a thread waiting for
    another's evaluation counts nothing; each thread nests its own phases.

    >>> with driver_time.phase("plan"):
    ...     pass
    >>> driver_time.snapshot()["plan"] >= 0
    True
    """

    PHASES = ("plan", "lower", "dispatch", "wait")

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(self.PHASES, 0.0)
        #: each thread's open phases, innermost last (a phase nests only in its own
        #: thread's: another thread's evaluation is not inside it)
        self._threads = threading.local()

    @property
    def _open(self) -> list[_OpenPhase]:
        stack: list[_OpenPhase] | None = getattr(self._threads, "open", None)
        if stack is None:
            stack = self._threads.open = []
        return stack

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Count the time inside the block to ``name`` (less that of phases inside it)."""
        frame = _OpenPhase(time.perf_counter())
        self._open.append(frame)
        try:
            yield
        finally:
            spent = time.perf_counter() - frame.start
            self._open.remove(frame)
            self.seconds[name] = self.seconds.get(name, 0.0) + spent - frame.inner
            if self._open:
                self._open[-1].inner += spent

    def snapshot(self) -> dict[str, float]:
        """Seconds per phase so far (a copy)."""
        return dict(self.seconds)

    def reset(self) -> None:
        self.seconds = dict.fromkeys(self.PHASES, 0.0)


#: this process's driver time (:attr:`Stats.driver_seconds`)
driver_time = DriverTime()


@dataclass
class Stats:
    """Counters summed over workers (see :meth:`Backend.stats`), and the driver's own
    time per evaluation phase (``driver_seconds``, :class:`DriverTime`)."""

    tasks: int = 0
    bytes_moved: int = 0
    bytes_moved_between_nodes: int = 0
    bytes_to_driver: int = 0
    bytes_from_driver: int = 0
    per_worker: list[dict[str, Any]] = field(default_factory=list)
    #: bytes moved between workers per task tag (the frontend tags tasks by node)
    bytes_by_tag: dict[Any, int] = field(default_factory=dict)
    #: the driver's seconds per phase (plan, lower, dispatch, wait) of its evaluations
    #: when these stats were made (:class:`DriverTime`)
    driver_seconds: dict[str, float] = field(default_factory=lambda: driver_time.snapshot())

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class WorkerLostError(RuntimeError):
    """Workers died and spartan stopped trying to recover the evaluation: a user
    function ended its worker's process (it is not run again), or workers kept dying
    past ``spartan.config.recovery_attempts`` recoveries. The session stays usable: the
    lost workers are replaced at the next evaluation, and arrays are rebuilt from their
    lineage (or checkpoint) when they are read. ``workers``: the indices of the workers
    lost last.

    >>> try:
    ...     spartan.map(lambda t: os._exit(1), x).to_numpy()   # ends a process  # doctest: +SKIP
    ... except spartan.WorkerLostError as e:
    ...     print(e)
    worker 1 died while running spartan.map(<lambda>) on output tile (0, 0) ...
    """

    def __init__(self, message: str, workers: Collection[int] = ()) -> None:
        super().__init__(message)
        self.workers = tuple(sorted(workers))


def interrupted(cancelled: int) -> KeyboardInterrupt:
    """What Ctrl-C in a wait raises once the work sent was cancelled
    (:meth:`Backend.cancel`): a one-line note instead of the traceback of the wait it
    stopped; ``spartan_cancelled`` says it was (an outer wait need not cancel again)."""
    note = "spartan: evaluation interrupted" + (
        f"; {cancelled} tasks cancelled" if cancelled else ""
    )
    error = KeyboardInterrupt(note)
    error.spartan_cancelled = cancelled  # type: ignore[attr-defined]
    return error


class Backend(Protocol):
    """What the frontend needs from a set of workers. Every member is there on every
    backend (the frontend never probes with ``getattr``); a shut-down backend has
    ``nworkers == 0``.

    >>> be = spartan.backend.current()
    >>> be.nworkers > 0, be.device in ("cpu", "gpu"), be.name in ("local", "ray")
    (True, True, True)
    """

    #: how many workers hold blocks and run tasks (0 once shut down)
    nworkers: int
    #: where the workers keep their blocks: ``"cpu"`` (NumPy) or ``"gpu"`` (CuPy)
    device: str
    #: the backend's kind, as ``spartan.init(backend=...)`` names it
    name: str
    #: whether the workers run in the driver's process (and so see its memory, e.g. an
    #: in-memory Zarr store)
    shares_driver_memory: bool
    #: the node each worker runs on, by worker index
    nodes: list[str]
    #: a label attached to the tasks submitted from now on (workers count the bytes each
    #: tag's tasks move: :attr:`Stats.bytes_by_tag`)
    tag: Any

    @property
    def lock(self) -> threading.RLock:
        """Held by an evaluation (and by every public call): one at a time in this
        process."""

    def put(self, key: Key, value: Any, worker: int) -> None:
        """Store ``value`` under ``key`` on ``worker`` (counted as driver bytes)."""

    def submit(
        self,
        worker: int,
        fn: Callable[..., Any],
        inputs: Sequence[Input],
        outputs: Sequence[Key],
        want_result: bool = False,
    ) -> Any:
        """Run ``fn(*inputs)`` on ``worker`` and store its value(s) under ``outputs``.

        With ``want_result`` the function returns ``(*values, result)`` and the small
        ``result`` comes back through :meth:`results`; the returned handle names it.
        """

    def results(self, handles: Sequence[Any]) -> list[Any]:
        """The results of submitted tasks, in order (one blocking wait for all)."""

    def fetch(self, key: Key, worker: int | None = None, index: tuple | None = None) -> Any:
        """Pull ``block[index]`` (or the whole object) to the driver."""

    def fetch_many(self, reqs: Sequence[tuple[Key, int | None, tuple | None]]) -> list[Any]:
        """Several fetches ``(key, worker, index)`` with one wait."""

    def delete(self, keys: Sequence[Key]) -> None:
        """Drop blocks wherever they are held (asynchronously)."""

    def delete_later(self, keys: Sequence[Key]) -> None:
        """:meth:`delete` once no evaluation is in the middle of one (what a finalizer
        calls, in any thread); never waits."""

    def evaluating(self) -> AbstractContextManager[None]:
        """Hold the backend for one evaluation: one at a time, whatever the thread."""

    def batching_deletes(self) -> AbstractContextManager[None]:
        """Deletes made inside go out at the end (or with a worker's next tasks), each
        worker's together, instead of one message per freed array."""

    def flush(self, fetch: Sequence[Region] = ()) -> None:
        """Send what :meth:`submit` and :meth:`put` queued (one operator's tasks).

        A backend may hold submitted tasks until then, so that pieces other workers
        read from blocks that already exist are requested before the owner's queued
        tasks instead of waiting behind them. Every waiting call flushes first.
        ``fetch``: regions the next :meth:`wait` fetches; the queued tasks that make
        their pieces may deliver them to the driver as they finish."""

    def wait(self, fetch: Sequence[Region] = ()) -> list[np.ndarray]:
        """Barrier: every submitted task has finished; re-raises a task's error.

        Returns the ``fetch`` regions assembled on the driver (new arrays that nothing
        else uses; a big one may be lent shared memory, see
        :mod:`spartan.backend.shared_output`), pulled in the same wait: values forced
        right after their evaluation cost one round trip in all."""

    def stats(self, tags: Collection[Any] | None = None) -> Stats:
        """Counters since the last :meth:`reset_stats`; ``bytes_by_tag`` only for
        ``tags`` when given (else for the most recent tags each worker keeps)."""

    def stats_later(self, tags: Collection[Any] | None = None) -> Callable[[], Stats]:
        """:meth:`stats` as of the tasks submitted so far, without waiting now: the
        returned function gives them (waiting then, if it must)."""

    def reset_stats(self) -> None:
        """Zero the counters."""

    def worker_memory(self) -> list[int]:
        """Each worker's free memory in bytes (its GPU's, on ``device="gpu"``)."""

    def checkpointed(self, loads: Iterable[tuple[Key, int, Any]]) -> None:
        """Blocks ``(key, worker)`` are in a complete checkpoint: a lost one is rebuilt
        by its ``load`` task (no inputs) from now on, not from its lineage (a backend
        that keeps no lineage has nothing to note)."""

    def checkpoint_files_in_use(self) -> set[str]:
        """The checkpoint tile files a rebuild of any live block could read: the others
        may be deleted without making a block unrebuildable."""

    def cancel(self) -> int:
        """Stop the work submitted so far (Ctrl-C during a wait): tasks not started are
        skipped, and this returns once the workers are idle; how many were skipped.
        Blocks a skipped task was to make are made before anything reads them, so every
        array stays whole and the next operation does not wait for the old work."""

    def shutdown(self) -> None:
        """Release the workers."""
