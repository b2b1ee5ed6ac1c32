"""The driver side shared by every backend: where blocks live, and task wiring.

Subclasses supply the transport (:meth:`Master._dispatch` and friends); this class
turns keys into located pieces, splits a task's pieces into local and remote ones, and
keeps the placement map the driver needs for fetches and deletes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from spartan.backend.base import Input, Key, Piece, Region, Stats, remote_pieces
from spartan.backend.worker import assemble


class Master(ABC):
    """Common driver logic; see :class:`spartan.backend.base.Backend` for the API."""

    nworkers: int
    nodes: list[str]

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
    def put(self, key: Key, value: Any, worker: int) -> None:
        self._put(key, value, worker)
        self._record(key, worker)

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

    def delete(self, keys: Sequence[Key]) -> None:
        by_worker: dict[int, list[Key]] = {}
        for key in keys:
            for w in self.where.pop(key, ()):
                by_worker.setdefault(w, []).append(key)
        for w, ks in by_worker.items():
            self._delete(w, ks)

    @contextmanager
    def batching_deletes(self) -> Iterator[None]:
        self._batching += 1
        try:
            yield
        finally:
            self._batching -= 1
            if not self._batching:
                self.release_held()

    def release_held(self) -> None:  # noqa: B027 -- a no-op unless the transport batches
        """Send whatever the transport holds back (queued tasks, batched deletes)."""

    def stats(self, tags: Collection[Any] | None = None) -> Stats:
        return self.stats_later(tags)()

    def stats_later(self, tags: Collection[Any] | None = None) -> Callable[[], Stats]:
        per_worker = self._worker_stats_later(tags)
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
