"""The Ray backend: one actor per worker; the driver only wires ObjectRefs.

A task's remote pieces are ``owner.get_piece.remote(...)`` refs passed straight into
``receiver.run_task.remote(...)``, so tile data moves worker-to-worker through Ray's
object store and the driver never blocks while building the task graph. Calls from
the driver to one actor run in submission order, so a piece requested after the task
that writes its block sees that block.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import ray

from spartan.backend.base import Key, Piece
from spartan.backend.master import Master
from spartan.backend.worker import TaskFailed, Worker

log = logging.getLogger("spartan")


class RayWorker(Worker):
    """:class:`Worker` as a Ray actor: remote pieces arrive as resolved arguments."""

    def run_task(self, fn: Callable[..., Any], spec: bytes, *remote: Any) -> Any:
        inputs, outputs, want_result, nodes, tag = pickle.loads(spec)
        return self.run(fn, inputs, outputs, want_result, remote, nodes, tag)


def _unwrap(error: BaseException) -> BaseException:
    """The user's exception inside a Ray task error, not Ray's wrapper."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error


class RayBackend(Master):
    """Workers as Ray actors spread over the cluster's nodes."""

    name = "ray"

    def __init__(
        self,
        num_workers: int | None = None,
        num_cpus_per_worker: float = 1,
        num_gpus_per_worker: float = 0,
    ) -> None:
        super().__init__()
        if not ray.is_initialized():
            raise RuntimeError("RayBackend needs ray.init() first (spartan.init does it)")
        if num_workers is None:
            num_workers = max(1, int(ray.cluster_resources().get("CPU", 1) // num_cpus_per_worker))
        if num_workers < 1:
            raise ValueError(f"num_workers must be >= 1, got {num_workers}")
        actor = ray.remote(RayWorker).options(
            num_cpus=num_cpus_per_worker,
            num_gpus=num_gpus_per_worker,
            scheduling_strategy="SPREAD",
            max_restarts=0,
        )
        self.actors = [actor.remote(i) for i in range(num_workers)]
        self.nworkers = num_workers
        self.nodes = ray.get([a.ping.remote() for a in self.actors])
        self._pending: list[ray.ObjectRef] = []
        self._fn_cache: dict[int, tuple[Any, ray.ObjectRef]] = {}
        log.info("spartan: %d Ray workers on %d node(s)", num_workers, len(set(self.nodes)))

    # ---- transport --------------------------------------------------------------------
    def _fn_ref(self, fn: Callable[..., Any]) -> Any:
        """Put a task function once for all the tasks of one operator."""
        hit = self._fn_cache.get(id(fn))
        if hit is None or hit[0] is not fn:
            if len(self._fn_cache) >= 256:
                self._fn_cache.clear()
            hit = self._fn_cache[id(fn)] = (fn, ray.put(fn))
        return hit[1]

    def _put(self, key: Key, value: Any, worker: int) -> None:
        self._pending.append(self.actors[worker].put.remote(key, value))

    def _dispatch(
        self,
        worker: int,
        fn: Callable[..., Any],
        inputs: list[Any],
        outputs: list[Key],
        want_result: bool,
        remote: list[Piece],
    ) -> Any:
        refs = [self.actors[p.worker].get_piece.remote(p.key, p.src, p.perm) for p in remote]
        nodes = [self.nodes[p.worker] for p in remote]
        # one pickled spec instead of five arguments: Ray serializes each argument apart
        spec = pickle.dumps((inputs, outputs, want_result, nodes, self.tag), protocol=5)
        ref = self.actors[worker].run_task.remote(self._fn_ref(fn), spec, *refs)
        self._pending.append(ref)
        return ref

    def results(self, handles: Sequence[Any]) -> list[Any]:
        return self._get(list(handles))

    def fetch_many(self, reqs: Sequence[tuple[Key, int | None, tuple | None]]) -> list[Any]:
        refs = [self.actors[self.owner(k, w)].fetch.remote(k, idx) for k, w, idx in reqs]
        return self._get(refs)

    def _delete(self, worker: int, keys: list[Key]) -> None:
        self.actors[worker].delete.remote(keys)

    def wait(self) -> None:
        pending, self._pending = self._pending, []
        self._get(pending)

    def _get(self, refs: list[Any]) -> list[Any]:
        try:
            values = ray.get(refs)
        except ray.exceptions.RayTaskError as error:
            self._pending = []
            raise _unwrap(error) from None
        for v in values:
            if isinstance(v, TaskFailed):
                self._pending = []
                raise v.error
        return values

    def _worker_stats(self) -> list[dict[str, Any]]:
        return self._get([a.stats.remote() for a in self.actors])

    def reset_stats(self) -> None:
        self.wait()
        self._get([a.reset_stats.remote() for a in self.actors])

    def shutdown(self) -> None:
        for a in self.actors:
            ray.kill(a)
        self.actors = []
