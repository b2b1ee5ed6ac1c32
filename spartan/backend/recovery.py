"""What the Ray backend rebuilds after a loss, whom it blames, and what lineage it keeps.

Every put and task is logged (:mod:`spartan.backend.lineage`). When workers die, the
transport (:class:`~spartan.backend.ray_backend.RayBackend`) replaces them and re-sends
the tasks this module picks: the blocks the dead held, and those of interrupted tasks
that read from them (:func:`lost_blocks`, :func:`replay`). A task whose worker died
twice while it ran, or that ended its own process, is blamed instead of run again
(:class:`Suspects`). An evaluation given up leaves every block it was making to be made
again when read (:func:`uncertain_blocks`). The log is pruned as blocks are deleted,
and small blocks deep in a chain are copied to the driver so that a loop's lineage
stays short (:class:`Pruning`). Nothing here talks to Ray: the transport asks, sends
and waits.

Every path keeps these true, whatever dies when: a block in the backend's ``where`` is
on its worker, or is *unmade* (made again before it is read), or its worker is *lost*
(replaced, and its blocks rebuilt, before anything is sent again); and a delete held
for a block goes out before the block is made again on the same worker.

>>> from spartan.backend.lineage import Lineage
>>> log = Lineage()
>>> a = log.log({"worker": 0, "outputs": ("a",), "value": "put data"})
>>> b = log.log({"worker": 0, "outputs": ("b",), "fn": abs, "inputs": ("a",)})
>>> where = {"a": [0], "b": [0]}
>>> sorted(lost_blocks(where, gone={0}, unmade=set(), made_by=log.made_by))
[('a', 0), ('b', 0)]
>>> [rec.seq for rec in replay(log, {("b", 0)}, lambda k, w: False, "lost")]
[0, 1]
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from spartan.backend.base import Key, WorkerLostError
from spartan.backend.lineage import Lineage, Record
from spartan.backend.running import Running

#: the lineage log is first pruned when it holds this many blocks
PRUNE_MIN = 1024
#: live blocks behind at least COPY_DEPTH tasks in a chain, up to this many bytes from
#: each worker, are copied to the driver when the lineage is pruned, and their lineage is
#: dropped once the copies are in (a recovery puts the copy back). A loop that computes a
#: small array from the one before (a weight vector, a solver's iterate) would otherwise
#: keep the tasks of every iteration: records grow with the loop's length while the
#: live blocks stay a handful. Shallow blocks are not copied: the driver would hold a
#: second copy of every small tile
COPY_MAX_BYTES = 64 << 10
COPY_DEPTH = 16

#: seconds a worker's death Ray reported may take to show in the control store (a
#: node's death takes longer: :func:`~spartan.backend.worker_env.node_death_notice_s`)
DEATH_NOTICE_S = 10.0
#: seconds a replacement worker may take to start
START_TIMEOUT_S = 120
#: seconds to wait for the process of a worker the driver stopped to be gone
STOP_WAIT_S = 10.0

Pair = tuple[Key, int]


def lost_blocks(
    where: Mapping[Key, Collection[int]],
    gone: Collection[int],
    unmade: Collection[Pair],
    made_by: Mapping[Pair, Record],
    unsent: Collection[int] = (),
    absent: Collection[Pair] = (),
    pending: Iterable[Record] = (),
) -> set[Pair]:
    """The ``(key, worker)`` blocks to rebuild after the workers ``gone`` died: those
    they held (but blocks an interrupted evaluation left ``unmade``, made when read,
    and those of tasks not sent yet, ``unsent`` seqs, made when they are), those found
    ``absent``, and the outputs of ``pending`` tasks (sent, not known finished) that ran
    on a dead worker or read from one, or from such a task (a reader failed for want of
    its piece, and so did the tasks after it that read its block). Outputs deleted
    meanwhile (not in ``where``) are not wanted.

    >>> made = {}
    >>> sorted(lost_blocks({"x": [0, 1]}, gone={1}, unmade=set(), made_by=made))
    [('x', 1)]
    """
    missing = {
        (k, w)
        for k, ws in where.items()
        for w in ws
        if w in gone
        and (k, w) not in unmade
        and getattr(made_by.get((k, w)), "seq", None) not in unsent
    }
    missing |= {(k, w) for k, w in absent if k in where}
    failed: set[Pair] = set(absent)
    for rec in sorted(pending, key=lambda rec: rec.seq):
        if rec.worker in gone or any(w in gone or (k, w) in failed for k, w in rec.needs):
            failed.update((k, rec.worker) for k in rec.outputs)
    missing.update((k, w) for k, w in failed if k in where)
    return missing


def replay(
    lineage: Lineage, wanted: Collection[Pair], exists: Callable[[Key, int], bool], why: str
) -> list[Record]:
    """The records to send again to make ``wanted`` (blocks ``why`` gone) from what
    ``exists``, inputs first. WorkerLostError where no task or checkpoint made one."""
    try:
        return lineage.replay_plan(set(wanted), exists)
    except LookupError:
        raise WorkerLostError(
            f"spartan: a tile {why} cannot be rebuilt: no task or checkpoint made it"
        ) from None


def uncertain_blocks(
    where: Mapping[Key, Collection[int]],
    made_by: Mapping[Pair, Record],
    settled: int,
    uncertain: Collection[int],
) -> set[Pair]:
    """The blocks of tasks not known finished: logged after ``settled`` (the last seq
    known finished), or among the ``uncertain`` seqs. An evaluation given up leaves them
    to be made again when read.

    >>> made = {("a", 0): Record(3, 0, ("a",)), ("b", 0): Record(5, 0, ("b",))}
    >>> sorted(uncertain_blocks({"a": [0], "b": [0]}, made, settled=4, uncertain=()))
    [('b', 0)]
    """
    return {
        (key, w)
        for key, holders in where.items()
        for w in holders
        if (rec := made_by.get((key, w))) is not None
        and (rec.seq > settled or rec.seq in uncertain)
    }


def held_by(
    where: Mapping[Key, Sequence[int]], reads: Iterable[tuple[Key, int | None]]
) -> list[Pair]:
    """``(key, worker)`` of the block each read ``(key, near)`` gets (the holder
    ``near`` if it is one, else the first); unknown keys left out.

    >>> held_by({"a": [1, 0]}, [("a", 0), ("a", None), ("b", 0)])
    [('a', 0), ('a', 1)]
    """
    out = []
    for key, near in reads:
        holders = where.get(key)
        if holders:
            out.append((key, near if near is not None and near in holders else holders[0]))
    return out


class Suspects:
    """How many times a task's worker died while it ran, in one wait: a task that kills
    its worker twice, or that ended its own process, is blamed (not run again).

    >>> suspects = Suspects()
    >>> seen = Running(7, "spartan.map(f) on output tile (0,)", None)
    >>> suspects.blame(1, seen) is None           # once: it may have been killed
    True
    >>> suspects.blame(1, seen)
    'worker 1 died twice while running spartan.map(f) on output tile (0,) (killed or crashed)'
    """

    def __init__(self) -> None:
        self.deaths: dict[int, int] = {}

    def blame(self, worker: int, seen: Running) -> str | None:
        """Why the user code ``worker`` was running (``seen``) when it died is to blame,
        if it is; the death is counted against its task."""
        times = self.deaths[seen.task] = self.deaths.get(seen.task, 0) + 1
        if seen.ended is not None:
            return (
                f"worker {worker} died while running {seen.what}: the function ended its "
                f"own process ({seen.ended})"
            )
        if times >= 2:
            return f"worker {worker} died twice while running {seen.what} (killed or crashed)"
        return None


class Pruning:
    """When the lineage log is pruned, and the copies of small blocks the driver asked
    for (deep in a chain: a recovery puts the copy back instead of re-running the chain).

    Pruning is linear in the log: it runs when put data may be freed, or when the log
    has grown by :data:`PRUNE_MIN` past what the last prune kept (doubled, where no copy
    cut it: a loop over big arrays would otherwise prune every few records).

    >>> pruning = Pruning()
    >>> pruning.due(puts=False, logged=10)
    False
    >>> pruning.pruned(kept=10, copied=0)
    >>> pruning.prune_at == 2 * 10 + PRUNE_MIN
    True
    """

    def __init__(self) -> None:
        self.prune_at = PRUNE_MIN
        #: copies asked of the workers: the call's handle, and the workers holding each
        #: key (:meth:`wanted`)
        self.asked: list[tuple[Any, dict[Key, list[int]]]] = []

    def due(self, puts: bool, logged: int) -> bool:
        """Whether a delete prunes: it freed put data (``puts``), or the log of
        ``logged`` blocks has grown enough."""
        return puts or logged > self.prune_at

    def pruned(self, kept: int, copied: int) -> None:
        """A prune kept ``kept`` blocks' records, after ``copied`` copies came in."""
        self.prune_at = kept + PRUNE_MIN + (0 if copied else kept)

    def wanted(
        self, made_by: Mapping[Pair, Record], where: Mapping[Key, Sequence[int]]
    ) -> dict[int, dict[Key, list[int]]]:
        """By worker to ask: the live blocks behind a chain of at least
        :data:`COPY_DEPTH` tasks (sent or not: a block not made yet is not copied) not
        asked for already, with the workers holding each."""
        asked = {key for _, owners in self.asked for key in owners}
        by_worker: dict[int, dict[Key, list[int]]] = {}
        for (key, w), rec in made_by.items():
            holders = where.get(key, ())
            if rec.depth >= COPY_DEPTH and key not in asked and w in holders:
                by_worker.setdefault(holders[0], {}).setdefault(key, []).append(w)
        return by_worker

    def keep(
        self,
        lineage: Lineage,
        ready: Callable[[Any], bool],
        get: Callable[[Any], Mapping[Key, Any]],
        failed: Callable[[BaseException], None] = lambda error: None,
    ) -> int:
        """Blocks whose copies have come (``ready(handle)``, then ``get(handle)``) are
        rebuilt from them from now on: their lineage goes at the prune that follows. A
        copy that failed (``failed`` hears why; e.g. the worker died) leaves the lineage.
        How many came."""
        waiting, kept = [], 0
        for handle, owners in self.asked:
            if not ready(handle):
                waiting.append((handle, owners))
                continue
            try:
                copies = get(handle)
            except Exception as error:  # noqa: BLE001 -- e.g. the worker died: lineage stays
                failed(error)
                continue
            for key, value in copies.items():
                for w in owners[key]:
                    lineage.copied(key, w, value)
            kept += len(copies)
        self.asked = waiting
        return kept

    def clear(self) -> None:
        self.asked = []
