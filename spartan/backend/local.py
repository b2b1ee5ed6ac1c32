"""The in-process backend: the same :class:`Worker` code, run sequentially, no Ray.

For debugging and fast unit tests; byte counters behave exactly as on Ray.

>>> be = LocalBackend(num_workers=2)
>>> be.put("x", np.ones(3), worker=0)
>>> be.submit(1, lambda a: a * 2, ["x"], ["y"])
>>> be.fetch("y")
array([2., 2., 2.])
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from spartan.backend.base import Key, Piece, Region
from spartan.backend.master import Master
from spartan.backend.worker import TaskFailed, Worker, with_user_frames


class LocalBackend(Master):
    """Workers as plain objects in this process; tasks run when submitted."""

    name = "local"

    def __init__(self, num_workers: int = 2, device: str = "cpu") -> None:
        super().__init__()
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        self.nworkers = num_workers
        self.device = device
        self.workers = [Worker(i, device=device) for i in range(num_workers)]
        self.nodes = [w.node for w in self.workers]

    def _put(self, key: Key, value: Any, worker: int) -> None:
        self.workers[worker].put(key, value)

    def _dispatch(
        self,
        worker: int,
        fn: Callable[..., Any],
        inputs: list[Any],
        outputs: list[Key],
        want_result: bool,
        remote: list[Piece],
    ) -> Any:
        data = [self.workers[p.worker].get_piece(p.key, p.src, p.perm) for p in remote]
        nodes = [self.nodes[p.worker] for p in remote]
        result = self.workers[worker].run(fn, inputs, outputs, want_result, data, nodes, self.tag)
        if isinstance(result, TaskFailed):
            raise with_user_frames(_apart(result.error))
        return result

    def results(self, handles: Sequence[Any]) -> list[Any]:
        return list(handles)

    def fetch_many(self, reqs: Sequence[tuple[Key, int | None, tuple | None]]) -> list[Any]:
        parts = [self.workers[self.owner(k, w)].fetch(k, idx) for k, w, idx in reqs]
        for part in parts:
            if isinstance(part, TaskFailed):
                raise with_user_frames(_apart(part.error))
        return parts

    def _delete(self, worker: int, keys: list[Key]) -> None:
        self.workers[worker].delete(keys)

    def wait(self, fetch: Sequence[Region] = ()) -> list[np.ndarray]:
        """Tasks already ran when submitted (errors were raised there); GPU kernels
        they queued are waited for here."""
        for w in self.workers:
            w.sync()
        return [self._assembled(r, self.fetch_many(self._requests(r))) for r in fetch]

    def cancel(self) -> int:
        """Nothing is outstanding: tasks run as they are submitted, and an interrupt
        stops the one running before it stores anything."""
        return 0

    def worker_memory(self) -> list[int]:
        return [w.memory() for w in self.workers]

    def _worker_stats_later(
        self, tags: Collection[Any] | None = None
    ) -> Callable[[], list[dict[str, Any]]]:
        now = [w.stats(tags) for w in self.workers]  # tasks ran when submitted
        return lambda: now

    def reset_stats(self) -> None:
        for w in self.workers:
            w.reset_stats()

    def shutdown(self) -> None:
        self.workers = []
        self.nworkers = 0


def _apart(error: BaseException) -> BaseException:
    """A copy of a failed task's stored ``error`` to raise on the driver: raising the
    stored one would give it the driver's traceback, whose frames hold the arrays of the
    failed evaluation, and the worker's store would keep them alive for good (as Ray's
    workers, in other processes, never do)."""
    try:
        twin = copy.copy(error)
    except Exception:  # noqa: BLE001 -- an exception that cannot be copied: raise it as is
        return error
    return twin if type(twin) is type(error) and twin.args == error.args else error
