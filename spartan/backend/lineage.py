"""Lineage: the tasks that made each block, so lost blocks can be made again.

The master logs every put and task in submission order. When workers die, the blocks
they held are lost; :meth:`Lineage.replay_plan` lists the logged tasks to run again
(in their original order) so that every lost block, and every block a re-run needs
that is gone too, exists again. Tasks are deterministic, so a re-run gives the same
block.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from spartan.backend.base import Key, Region
from spartan.backend.checkpoint import LoadTile


@dataclass
class Record:
    """One logged put (``value`` set) or task, in submission order."""

    seq: int
    worker: int
    outputs: tuple[Key, ...]
    fn: Any = None
    inputs: tuple[Any, ...] = ()
    want_result: bool = False
    #: a put: the driver-owned object to put again, or the driver's copy of a small
    #: block (:meth:`Lineage.copied`)
    value: Any = None
    tag: Any = None
    needs: tuple[tuple[Key, int], ...] = field(default=())  # (key, worker) read
    #: the longest chain of tasks behind it (a put, a load or a copy: 0)
    depth: int = 0


class Lineage:
    """The log of puts and tasks, and which (key, worker) each one produced."""

    def __init__(self) -> None:
        self._seq = itertools.count()
        self.made_by: dict[tuple[Key, int], Record] = {}

    def log(self, record_args: dict[str, Any]) -> Record:
        rec = Record(seq=next(self._seq), **record_args)
        if rec.fn is not None:
            rec.needs = tuple(_reads(rec.worker, rec.inputs))
            made = self.made_by
            rec.depth = 1 + max((made[n].depth for n in rec.needs if n in made), default=0)
        for key in rec.outputs:
            self.made_by[(key, rec.worker)] = rec
        return rec

    def saved(self, key: Key, worker: int, load: Any) -> None:
        """``key`` on ``worker`` is in a checkpoint: rebuild it with the task ``load``
        (no inputs) instead of its lineage, which may then be dropped. Only for a
        complete checkpoint (its manifest written): from now on the block is rebuilt
        from its file alone."""
        old = self.made_by.get((key, worker))
        seq = old.seq if old is not None else next(self._seq)
        self.made_by[(key, worker)] = Record(seq=seq, worker=worker, outputs=(key,), fn=load)

    def copied(self, key: Key, worker: int, value: Any) -> None:
        """The driver holds ``value``, a copy of ``key`` on ``worker``: rebuild it by
        putting that again instead of by its lineage, which may then be dropped (nothing
        if the block is gone)."""
        old = self.made_by.get((key, worker))
        if old is not None:
            self.made_by[(key, worker)] = Record(old.seq, worker, (key,), value=value)

    def prune(self, live: Iterable[tuple[Key, int]]) -> None:
        """Forget the records no live block can need for a rebuild: those of deleted
        blocks that no live block descends from. Their puts' values (the object-store
        copies of arrays sent from the driver) are then freed."""
        keep = self._needed(live)
        self.made_by = {pair: rec for pair, rec in self.made_by.items() if pair in keep}

    def files_in_use(self, live: Iterable[tuple[Key, int]]) -> set[str]:
        """The checkpoint tile files a rebuild of the blocks ``live`` could read (those
        of :meth:`saved` records they are, or descend from): files not listed may be
        deleted without making any live block unrebuildable."""
        made = self.made_by
        return {
            made[pair].fn.path for pair in self._needed(live) if isinstance(made[pair].fn, LoadTile)
        }

    def _needed(self, live: Iterable[tuple[Key, int]]) -> set[tuple[Key, int]]:
        """The blocks whose records a rebuild of ``live`` may run: ``live`` and what
        they descend from (as logged)."""
        keep: set[tuple[Key, int]] = set()
        stack = [pair for pair in live if pair in self.made_by]
        while stack:
            pair = stack.pop()
            if pair in keep:
                continue
            keep.add(pair)
            stack.extend(n for n in self.made_by[pair].needs if n in self.made_by)
        return keep

    def replay_plan(
        self, missing: set[tuple[Key, int]], exists: Callable[[Key, int], bool]
    ) -> list[Record]:
        """The records to run again so every pair in ``missing`` exists, inputs first."""
        todo: dict[int, Record] = {}
        stack = list(missing)
        seen: set[tuple[Key, int]] = set()
        while stack:
            pair = stack.pop()
            if pair in seen:
                continue
            seen.add(pair)
            rec = self.made_by.get(pair)
            if rec is None:
                raise LookupError(pair)
            if rec.seq in todo:
                continue
            todo[rec.seq] = rec
            for need in rec.needs:
                if not exists(*need):
                    stack.append(need)
        return [todo[s] for s in sorted(todo)]


def _reads(worker: int, inputs: Iterable[Any]) -> list[tuple[Key, int]]:
    out: list[tuple[Key, int]] = []
    for inp in inputs:
        if isinstance(inp, Region):
            out.extend((p.key, p.worker) for p in inp.pieces)
        else:
            out.append((inp, worker))
    return out
