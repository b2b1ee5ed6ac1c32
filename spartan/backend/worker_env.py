"""Where the Ray backend's workers run, what they start with, and whether they live.

Workers are spread over every node that offers CPUs (or GPUs), in proportion to what
each offers, numbered node by node (:func:`worker_slots`), so contiguous runs of tiles
share a node. A driver that joins a cluster other drivers use starts as many as fit in
what is free (:func:`free_workers`). A worker's environment is the driver's opt-in
tuning (:func:`worker_env`). Whether a worker lives is asked of its process and of
Ray's control store, never of the actor (a live one may be busy with a long task):
:func:`process_alive`, :func:`actor_state`.

>>> worker_env({})
{}
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import psutil
import ray

from spartan.backend.streaming_copies import glibc_tunables
from spartan.config import config


def _capacities(cpus: float, gpus: float, free: bool) -> list[tuple[str, int]]:
    """``(node id, workers it holds)`` of every alive node with room for one, sorted by
    node id: by the node's total resources, or (``free``) by what no one holds now.
    A worker of 0 CPUs holds none: a node then takes one per core (free or not)."""
    available: dict[str, dict[str, float]] = {}
    if free:
        try:  # (Ray's own per-node view: ray.nodes() has only totals)
            available = ray._private.state.available_resources_per_node()
        except Exception:  # noqa: BLE001 -- an older or newer Ray: count totals
            free = False
    nodes = []
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        total = n.get("Resources", {})
        res = available.get(n["NodeID"], {}) if free else total
        cap = int(res.get("CPU", 0) // cpus) if cpus else int(total.get("CPU", 0))
        if gpus:
            cap = min(cap, int(res.get("GPU", 0) // gpus))
        if cap > 0:
            nodes.append((n["NodeID"], cap))
    return sorted(nodes)


def free_workers(cpus: float = 1, gpus: float = 0) -> int:
    """How many workers of ``cpus`` CPUs and ``gpus`` GPUs the cluster has room for now,
    besides what other drivers' workers and tasks hold: the default number of workers
    of a driver that joins a cluster (see :func:`spartan.init`).

    >>> free_workers()   # a 2-CPU cluster another driver's 2 workers hold  # doctest: +SKIP
    0
    """
    return sum(cap for _, cap in _capacities(cpus, gpus, free=True))


def worker_slots(
    num_workers: int | None, cpus: float, gpus: float, grouped: bool = True
) -> list[str]:
    """The Ray node id of each worker: every node offering the resources takes a share
    in proportion to its capacity; workers of one node get consecutive indices
    (``grouped``: tilings hand neighbouring tiles to neighbouring workers, so those
    stay on a node), else the nodes take turns.

    The capacity counted is what is free now when the workers fit in it (other drivers
    may hold part of a cluster), else the nodes' totals: ``None`` workers are as many as
    the totals hold."""
    nodes = _capacities(cpus, gpus, free=False)
    if not nodes:
        raise RuntimeError("no Ray node offers the resources a spartan worker needs")
    n = sum(c for _, c in nodes) if num_workers is None else num_workers
    if n < 1:
        raise ValueError(f"num_workers must be >= 1, got {n}")
    free = _capacities(cpus, gpus, free=True) if cpus or gpus else []
    if n <= sum(c for _, c in free):
        nodes = free  # where they can start now, not behind another driver's workers
    total = sum(c for _, c in nodes)
    slots: list[str] = []
    while len(slots) < n:  # fill in proportion to capacity, cycling if oversubscribed
        for node_id, cap in nodes:
            share = max(1, round(n * cap / total))
            slots.extend([node_id] * share)
    order = [node for node, _ in nodes]
    slots = sorted(slots[:n], key=order.index)
    return slots if grouped else _take_turns(slots, order)


def _take_turns(slots: list[str], order: list[str]) -> list[str]:
    """``slots`` (grouped by node) with the nodes taking turns, one worker each.

    >>> _take_turns(["a", "a", "b", "b", "b"], ["a", "b"])
    ['a', 'b', 'a', 'b', 'b']
    """
    queues = {node: slots.count(node) for node in order}
    out: list[str] = []
    while len(out) < len(slots):
        for node in order:
            if queues[node]:
                out.append(node)
                queues[node] -= 1
    return out


def start_timeout_message(n: int, cpus: float, gpus: float, waited: float) -> str:
    """Why ``n`` workers did not start within ``waited`` seconds, and what to do."""
    room = free_workers(cpus, gpus) if cpus or gpus else n
    total = ray.cluster_resources()
    want = f"{cpus:g} CPU" + (f" and {gpus:g} GPU" if gpus else "") + " each"
    return (
        f"could not start {n} spartan workers ({want}) within {waited:g} s: the cluster "
        f"has {total.get('CPU', 0):g} CPUs"
        + (f" and {total.get('GPU', 0):g} GPUs" if gpus else "")
        + f" and room for {room} such workers now (other drivers' workers or tasks "
        "hold the rest); ask for fewer (num_workers=), share the cores with the other "
        "drivers (cpus_per_worker=0), or stop them"
    )


def worker_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment variables a worker starts with, given the driver's ``environ``:
    none by default. Opted into (docs/tuning.md): big copies streamed past the cache
    (``config.worker_streaming_copy_bytes``, :mod:`~spartan.backend.streaming_copies`;
    a ``GLIBC_TUNABLES`` in ``environ`` that sets the threshold wins), and the workers'
    niceness (``config.worker_niceness``) in place of Ray's 15, unless ``environ`` sets
    ``RAY_worker_niceness`` itself.

    At niceness 15 a worker weighs 36 against 1024 for any thread at 0 (the driver's,
    Ray's own processes'), which then takes the worker's core almost whole while it runs.

    >>> worker_env({})
    {}
    """
    env = {}
    copies = config.worker_streaming_copy_bytes
    tunables = glibc_tunables(copies, environ.get("GLIBC_TUNABLES")) if copies else None
    if tunables is not None:
        env["GLIBC_TUNABLES"] = tunables
    if config.worker_niceness is not None and "RAY_worker_niceness" not in environ:
        env["RAY_worker_niceness"] = str(config.worker_niceness)
    return env


def process_alive(pid: int | None) -> bool:
    """Whether process ``pid`` (on this host) is still running (a zombie is not)."""
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:  # (gone)
        return False


def dead_nodes() -> set[str]:
    """The ids of the nodes Ray's control store has marked dead."""
    return {n["NodeID"] for n in ray.nodes() if not n["Alive"]}


def node_death_notice_s() -> float:
    """Seconds until Ray's control store marks a lost node's actors dead: its health
    checks of the node fail ``health_check_failure_threshold`` times,
    ``health_check_period_ms`` apart (Ray's defaults: 5 times, 3 s apart), after which
    the node's actors are marked dead; a few seconds more for that to be recorded. Until
    then a piece lost with the node looks lost "although every worker is alive".

    >>> node_death_notice_s() >= 10
    True
    """
    try:
        checks = ray._config.health_check_failure_threshold()
        period = ray._config.health_check_period_ms() / 1000
    except AttributeError:  # (an internal API: Ray's defaults)
        checks, period = 5, 3.0
    return checks * period + 5.0


def actor_state(actor: Any) -> str | None:
    """The state Ray's control store records for ``actor`` ("ALIVE", "DEAD", ...); None
    where it cannot say. (Ray's state API needs the dashboard; this asks the store.)"""
    try:
        from ray._private import state

        return state.actors(actor._actor_id.hex()).get("State")
    except Exception:  # noqa: BLE001 -- an internal API: no answer is "not known dead"
        return None


class _QuietWorkerDeaths(logging.Filter):
    """Drops Ray's "Unhandled error" reports about calls to spartan's own workers: a
    dead worker's pending calls fail, and the driver, which recovers from that, does not
    ask for every one (dozens per death). Ray's reports about anything else pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith("Unhandled error") and "RayWorker" in message)


def quiet_worker_deaths() -> None:
    """Install :class:`_QuietWorkerDeaths` on the logger Ray reports unhandled errors
    with (once); spartan logs one warning per recovery instead."""
    ray_log = logging.getLogger("ray._private.worker")
    if not any(isinstance(f, _QuietWorkerDeaths) for f in ray_log.filters):
        ray_log.addFilter(_QuietWorkerDeaths())
