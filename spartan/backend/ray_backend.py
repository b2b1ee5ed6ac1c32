"""The Ray backend: one actor per worker; the driver only wires ObjectRefs and letters.

A task's remote pieces move worker to worker and the driver never blocks while building
the task graph. For a reader on the owner's node, the owner writes the piece into a
*letter* in shared memory (a post, :mod:`spartan.backend.channel`) and the reader's
task, sent at once, waits for it there; a piece for a reader on another node is an
``owner.get_piece.remote(...)`` ref passed into ``receiver.run_task.remote(...)``,
through Ray's object store (Ray sends that task on once the driver hears the piece is
ready). A block sent from the driver already lies in the object store: a reader on its
node gets the whole block there, mapped without a copy, and cuts its piece itself.
Calls from the driver to one actor run in submission order, so a piece requested after
the task that writes its block sees that block. The tasks of one operator are held until
:meth:`RayBackend.flush`: pieces of blocks that already exist are requested first, so
they never queue behind the owner's own share of that operator (one long task per
worker would otherwise run on the workers one after another); pieces of blocks made in
the same flush are requested as soon as their producer is sent, before the owner's own
reader, so in an exchange no worker serves its piece only after it got the other's.
Tasks that read only their own worker's blocks and letters are held while that worker
is busy and then sent together as one actor call (:meth:`RayBackend._release`): a chain
of small operators on replicated arrays, as in every iteration of an iterative solver,
costs one call per worker instead of one per operator. A post joins the owner's held
tasks: one of a piece whose size the driver knows waits, while the owner is busy, for the
owner's later tasks, until the owner is idle or the reader is sent (an iterative
solver's many iterations, each a product, a post and a read of the other's post, go in
a few calls instead of one per iteration, each with its boundary cost between calls).
Deletes made in a :meth:`~spartan.backend.master.Master.batching_deletes` block (an
evaluation) join the worker's held calls too.

Workers are spread over every node that offers CPUs (or GPUs), numbered node by node,
so contiguous runs of tiles share a node. Every put and task is logged
(:mod:`spartan.backend.lineage`): when a worker dies, it is replaced and the blocks it
held are rebuilt by re-running the tasks that made them, and the interrupted
``wait``/``fetch`` completes with the same result.

:class:`RayBackend` is the transport: it makes the actor calls and waits. What it sends
when is decided without Ray, in modules of their own:

* :mod:`spartan.backend.dispatch`: what each worker holds back and when it goes, and the
  order of one flush's piece requests (the state machine, tested without Ray);
* :mod:`spartan.backend.ray_worker`: the actor and the call format both sides share;
* :mod:`spartan.backend.landing_zone`: which fetched result lands in shared memory;
* :mod:`spartan.backend.recovery`: what a loss rebuilds, whom it blames, what lineage
  is kept;
* :mod:`spartan.backend.worker_env`: where workers run, what they start with, whether
  they live.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, NoReturn

import numpy as np
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from spartan.backend import call_board, channel, recovery, running, session_files
from spartan.backend.base import (
    Key,
    Piece,
    Region,
    WorkerLostError,
    interrupted,
    remote_pieces,
)
from spartan.backend.dispatch import (
    DispatchState,
    FlushPlan,
    Got,
    Held,
    Kind,
    Post,
    Route,
    holdable,
    plan_flush,
    remote_piece_bytes,
    route,
    sends_apart,
)
from spartan.backend.landing_zone import Landing, biggest, parts_by_owner
from spartan.backend.lineage import Lineage, Record
from spartan.backend.master import Master
from spartan.backend.ray_worker import (
    LOSS_ERRORS,
    OWN_MIN_BYTES,
    FunctionArgs,
    NodeRelay,
    RayWorker,
    StopFlag,
    _split,
    _unwrap,
)
from spartan.backend.recovery import (
    DEATH_NOTICE_S,
    START_TIMEOUT_S,
    STOP_WAIT_S,
    Pruning,
    Suspects,
    held_by,
    lost_blocks,
    replay,
    uncertain_blocks,
)
from spartan.backend.seen import SeenTiles
from spartan.backend.worker import BlockMissing, TaskFailed, name_of, tiles_of, with_user_frames
from spartan.backend.worker_env import (
    actor_state,
    dead_nodes,
    free_workers,
    node_death_notice_s,
    process_alive,
    quiet_worker_deaths,
    start_timeout_message,
    worker_env,
    worker_slots,
)
from spartan.config import config

# (names importers found here before the split: the actor, its call format, the
# workers' environment)
__all__ = [
    "LOSS_ERRORS",
    "OWN_MIN_BYTES",
    "Post",
    "RayBackend",
    "RayWorker",
    "StopFlag",
    "free_workers",
    "quiet_worker_deaths",
    "start_timeout_message",
    "worker_env",
    "worker_slots",
]

log = logging.getLogger("spartan")


class RayBackend(Master):
    """Workers as Ray actors spread over the cluster's nodes: the transport.

    What is held back and sent when is :attr:`dispatch`'s decision
    (:class:`~spartan.backend.dispatch.DispatchState`); which fetched result lands in
    shared memory, :attr:`landing`'s; what a loss rebuilds and which lineage is kept,
    :mod:`~spartan.backend.recovery`'s (:attr:`pruning`). This class makes the actor
    calls, waits for them, and replaces dead workers.
    """

    shares_driver_memory = False  # (workers are Ray actors: other processes)

    name = "ray"

    def __init__(
        self,
        num_workers: int | None = None,
        num_cpus_per_worker: float = 1,
        num_gpus_per_worker: float = 0,
        device: str = "cpu",
    ) -> None:
        super().__init__()
        self.device = device
        if not ray.is_initialized():
            raise RuntimeError("RayBackend needs ray.init() first (spartan.init does it)")
        self.cpus, self.gpus = num_cpus_per_worker, num_gpus_per_worker
        self.slots = worker_slots(
            num_workers, num_cpus_per_worker, num_gpus_per_worker, config.group_workers_by_node
        )
        self._worker_env = worker_env(os.environ)
        self.nworkers = len(self.slots)
        #: the private directories of the files shared with the workers on this host
        self._files = session_files.SessionDir.make()
        #: where the workers on this host count their finished calls (see :meth:`busy`)
        self._board = call_board.CallBoard.make(self.nworkers, self._files)
        #: what each worker holds back, and its calls sent and finished (no Ray in it)
        self.dispatch = DispatchState(self.nworkers)
        #: the cancels made so far (each task is sent with their count), shared with the
        #: workers on this host (see :meth:`cancel`)
        self._stop = StopFlag.make(self._files)
        self._cancels = 0
        #: where the workers on this host note the user function they run (None: no
        #: shared memory), read after a death or a timeout (:mod:`~spartan.backend.running`)
        self._running = running.RunningBoard.make(self.nworkers, self._files)
        #: workers known dead and not replaced yet (an evaluation gave up, or stopped
        #: them): the next flush, wait or fetch replaces them (:meth:`_replace_lost`)
        self._lost: set[int] = set()
        #: deaths per task in the current wait (a task that kills its worker twice is
        #: blamed, :meth:`_blame`)
        self._suspects = Suspects()
        #: the last seq logged when the last wait ended (later ones are this evaluation's)
        self._evaluation_from = -1
        #: the blocks cancelled tasks left unmade, by (key, worker): made again before
        #: they are read (see :meth:`cancel`)
        self.unmade: set[tuple[Key, int]] = set()
        #: seqs of the records a recovery re-ran, until the wait that sees them through
        self._replayed: set[int] = set()
        self._cancelling = False
        #: the sequence number of the last put or task logged, and of the last one known
        #: finished (every wait that ends finishes all logged before it)
        self._logged = self._settled = -1
        self.actors = [self._start(i) for i in range(self.nworkers)]
        try:
            self.nodes = ray.get([a.ping.remote() for a in self.actors], timeout=120)
        except ray.exceptions.GetTimeoutError:
            for a in self.actors:
                ray.kill(a)
            raise RuntimeError(
                start_timeout_message(self.nworkers, self.cpus, self.gpus, 120)
            ) from None
        self.pids = ray.get([a.pid.remote() for a in self.actors])
        self._check_board(range(self.nworkers))
        #: the relay of each node with config.node_dispatch_min_workers workers or more
        #: (:meth:`release_many`), by node id
        self._relays: dict[str, Any] = {}
        #: per worker: the ref of the last call a relay forwarded to it, which the
        #: driver's next direct calls to it wait for (:meth:`_to`); and that of the last
        #: direct call, which the next forwarded call waits for
        self._relayed: dict[int, ray.ObjectRef] = {}
        self._direct: dict[int, ray.ObjectRef] = {}
        #: the workers a relay serves, and those whose held steps go at the end of the
        #: flush (:meth:`_release_soon`)
        self._relays_of: set[int] = set()
        self._soon: set[int] = set()
        #: flushes under way (nested ones count): only they defer releases; and whether
        #: a recovery re-runs tasks (its deletes go at once)
        self._flushing = 0
        self._rerunning = False
        #: calls made to relays (each stands for one call per worker it forwarded)
        self.relay_calls = 0
        #: relay calls whose forwarded refs the driver has not asked for yet, with what
        #: each forwarded: (node, ref, [(worker, held, method, spec, passed, after)]); and the
        #: workers they forwarded to (:meth:`_forwarded`)
        self._fans: list[tuple[str, Any, list[tuple[int, Sequence[Held], str, bytes, list, list]]]]
        self._fans = []
        self._forwarding: set[int] = set()
        self._start_relays()
        #: names the letters pieces pass through on one host; None: no shared memory
        self._mailbox = (
            channel.Mailbox(self._files)
            if channel.Mailbox.available() and self._files.shm is not None
            else None
        )
        self.lineage = Lineage()
        #: what the user has read of each tile, to catch a rebuilt one that changed
        self._seen = SeenTiles()
        self._inflight: list[tuple[ray.ObjectRef, Record]] = []
        #: puts and tasks logged but not sent yet (see :meth:`flush`)
        self._queued: list[Record] = []
        #: the ref of each sent task by sequence number, for :meth:`results`
        self._refs: dict[int, ray.ObjectRef] = {}
        #: per worker off the board: a future of the last call sent to it (:meth:`busy`)
        self._last: dict[int, Any] = {}
        #: :meth:`_worker_stats_later` promises not asked of the workers yet, with
        #: the tags each wants
        self._stats_wanted: list[tuple[list[list[ray.ObjectRef]], Collection[Any] | None]] = []
        self._functions = FunctionArgs()
        self.recoveries = 0
        #: when the lineage is pruned, and the copies of small blocks asked for
        self.pruning = Pruning()
        self.driver_node = ray.get_runtime_context().get_node_id()
        quiet_worker_deaths()
        #: the landing zone, and which queued tasks write into it
        self.landing = Landing(self._files)
        #: the last reader whose piece sizes were worked out, and those sizes by piece id
        self._sizes: tuple[Record | None, dict[int, int]] = (None, {})
        log.info("spartan: %d Ray workers on %d node(s)", self.nworkers, len(set(self.nodes)))

    def _start(self, index: int) -> Any:
        node = self.slots[index]
        strategy = NodeAffinitySchedulingStrategy(node, soft=True)
        return (
            ray.remote(RayWorker)
            .options(
                num_cpus=self.cpus,
                num_gpus=self.gpus,
                scheduling_strategy=strategy,
                max_restarts=0,
                runtime_env={"env_vars": self._worker_env},
            )
            .remote(
                index,
                self.device,
                config.worker_keep_freed_bytes,
                self.slots.count(node),
                self._board.path if self._board is not None else None,
                self._stop.path if self._stop is not None else None,
                self._files.handle,
                self._running.path if self._running is not None else None,
            )
        )

    # ---- per-node dispatch ---------------------------------------------------------------
    def _start_relays(self) -> None:
        """A relay (:class:`~spartan.backend.ray_worker.NodeRelay`) on each node with at
        least ``config.node_dispatch_min_workers`` workers, told its workers' handles.
        A relay that does not start on its workers' node is not used."""
        least = config.node_dispatch_min_workers
        by_node: dict[str, list[int]] = {}
        for w, node in enumerate(self.nodes):
            by_node.setdefault(node, []).append(w)
        wanted = {n: ws for n, ws in by_node.items() if least > 0 and len(ws) >= max(2, least)}
        relays: dict[str, Any] = {
            node: ray.remote(NodeRelay)
            .options(
                num_cpus=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                max_restarts=0,
            )
            .remote()
            for node in wanted
        }
        for node, relay in relays.items():
            relay.set_mates.remote({w: self.actors[w] for w in wanted[node]})
        try:
            where = ray.get([r.node.remote() for r in relays.values()], timeout=START_TIMEOUT_S)
        except (ray.exceptions.RayError, ray.exceptions.GetTimeoutError) as error:
            log.warning("spartan: no per-node dispatch (a relay did not start: %s)", error)
            for relay in relays.values():
                ray.kill(relay)
            return
        self._relays = {n: r for (n, r), at in zip(relays.items(), where) if at == n}
        self._relays_of = {w for w, node in enumerate(self.nodes) if node in self._relays}

    def _stop_relays(self) -> None:
        """Stop the relays (after a wait: nothing they forwarded is outstanding); the
        driver calls every worker itself from now on."""
        with contextlib.suppress(Exception):
            self._forwarded()
        for relay in self._relays.values():
            with contextlib.suppress(Exception):
                ray.kill(relay)
        self._relays, self._relayed, self._direct = {}, {}, {}
        self._relays_of, self._soon, self._forwarding, self._fans = set(), set(), set(), []

    def _to(self, worker: int) -> Any:
        """``worker``'s actor handle for a direct call from the driver: where a relay
        forwarded calls to it, one whose calls wait for the last of them, and note
        themselves as the last direct call (:meth:`release_many` keeps the order)."""
        if not self._relays:
            return self.actors[worker]
        return _Ordered(self, worker)

    def release_many(self, workers: Iterable[int]) -> None:
        """Send the steps held for ``workers`` (those due: idle, or with many steps held,
        and those whose posts a reader sent waits for, :meth:`_release_soon`). Those on
        a node with a relay go as one call to the relay: the driver's calls grow with
        the nodes, not the workers. The relay forwards each worker's steps as its ``run_batch`` call (made
        after the driver's last direct call to it); the driver waits for those calls'
        refs as it would for its own. Elsewhere, :meth:`_release`."""
        workers = list(workers)
        if not self._relays:
            for w in workers:
                self._release(w)
            return
        while True:
            soon, self._soon = self._soon, set()
            self._release_grouped([*workers, *(w for w in soon if w not in workers)])
            if not self._soon:  # (posts of readers just built, on other nodes)
                return
            workers = []

    def _release_grouped(self, workers: list[int]) -> None:
        """:meth:`release_many`'s one round: one relay call per node."""
        groups: dict[str, list[int]] = {}
        for w in workers:
            if self.nodes[w] not in self._relays:
                self._release(w)
            elif w not in self._lost:
                groups.setdefault(self.nodes[w], []).append(w)
        for node, group in groups.items():
            if len(group) < 2:
                for w in group:
                    self._release(w)
                continue
            calls: list[tuple[int, Sequence[Held], str, bytes, list[Any], list[Any]]] = []
            for w in group:
                held = self.dispatch.take(w)  # (None: a post sent it meanwhile)
                if held is None:
                    continue
                if any(sends_apart(step) for step in held):  # (two returns: direct)
                    try:
                        self._send_held(w, held)
                    finally:
                        self.dispatch.done(w)
                    continue
                after: list[Any] = [self._direct[w]] if w in self._direct else []
                if all(isinstance(step, list) for step in held):
                    # only deletes: one delete call, not counted as the worker's (as
                    # :meth:`_send_delete`: a busy worker is not held back by it)
                    keys = [key for step in held if isinstance(step, list) for key in step]
                    calls.append((w, held, "delete", pickle.dumps(keys, protocol=5), [], after))
                    continue
                spec, passed = self._batch_call(w, held)
                calls.append((w, held, "run_batch", spec, passed, after))
            if not calls:
                continue
            fan = self._relays[node].fan.remote([(call[0], *call[2:]) for call in calls])
            # the forwarded calls' refs are asked for when needed (:meth:`_forwarded`),
            # not now: the driver goes on lowering while the relay forwards
            self._fans.append((node, fan, calls))
            self.relay_calls += 1
            for w, _, method, *_ in calls:
                if method == "run_batch":
                    self.dispatch.call_sent(w)
                self._direct.pop(w, None)
                self._forwarding.add(w)
                self.dispatch.done(w)

    def _forwarded(self) -> None:
        """Learn the refs of the calls the relays forwarded: what the wait waits for,
        and what the next direct call to each of those workers waits for (:meth:`_to`).
        A relay lost without its node: its workers get their steps directly (unless it
        forwarded them already); a node lost is recovered by the wait."""
        fans, self._fans = self._fans, []
        self._forwarding = set()
        for node, fan, calls in fans:
            try:
                refs = ray.get(fan, timeout=START_TIMEOUT_S)
            except (ray.exceptions.RayError, ray.exceptions.GetTimeoutError) as error:
                log.warning("spartan: the relay of node %s was lost (%s)", node, error)
                relay = self._relays.pop(node, None)
                self._relays_of = {w for w in self._relays_of if self.nodes[w] != node}
                with contextlib.suppress(Exception):
                    ray.kill(relay)
                refs = [
                    getattr(self.actors[w], method).remote(spec, *passed, *after)
                    for w, _, method, spec, passed, after in calls
                ]
            for (w, held, method, *_), ref in zip(calls, refs):
                self._relayed[w] = ref
                if w not in self.dispatch.on_board and method == "run_batch":  # (:meth:`_sent`)
                    self._last[w] = ref.future()
                self._inflight.extend((ref, item) for item in held if isinstance(item, Record))

    # ---- transport --------------------------------------------------------------------
    def _put(self, key: Key, value: Any, worker: int) -> None:
        rec = self.lineage.log({"worker": worker, "outputs": (key,), "value": ray.put(value)})
        self._queued.append(rec)
        self._logged = rec.seq

    def _dispatch(
        self,
        worker: int,
        fn: Callable[..., Any],
        inputs: list[Any],
        outputs: list[Key],
        want_result: bool,
        remote: list[Piece],
    ) -> Any:
        rec = self.lineage.log(
            {
                "worker": worker,
                "outputs": tuple(outputs),
                "fn": self._functions.of(fn),
                "inputs": tuple(inputs),
                "want_result": want_result,
                "tag": self.tag,
            }
        )
        self._queued.append(rec)
        self._logged = rec.seq
        return rec

    def flush(self, fetch: Sequence[Region] = ()) -> None:
        self._flushing += 1
        try:
            self._flush(fetch)
        finally:
            self._flushing -= 1
            if self._soon and not self._flushing:
                self.release_many([])

    def _flush(self, fetch: Sequence[Region]) -> None:
        if fetch:
            self.landing.plan(fetch, self._queued, self._maker, self._local)
        queued, self._queued = self._queued, []
        if self._lost and queued and not self._cancelling:
            # workers an earlier evaluation gave up on: replaced before anything is sent
            # (if that fails, the blocks of ``queued`` are among those made when read)
            self._replace_lost(queued)
        if self.unmade and not self._cancelling:
            self._remake(pair for rec in queued for pair in rec.needs)
        plan = plan_flush(queued, self.lineage.made_by)
        readers = {rec.seq: rec for rec in queued}
        early: dict[int, list[Got | None]] = {
            seq: [None] * len(pieces) for seq, pieces in plan.remote.items()
        }
        # 1. pieces of blocks made before: requested ahead of the tasks
        self._request(plan.early, plan, readers, early)
        # 2. the tasks in order; pieces made here as soon as their producers are sent
        for rec in queued:
            kind = plan.kind(rec)
            if kind is Kind.SEND:
                self._release(rec.worker)
                self._request(plan.due(rec), plan, readers, early)
                self._send(rec, plan.remote.get(rec.seq), early.get(rec.seq))
            elif kind is Kind.PIECES:
                self._request(plan.due(rec), plan, readers, early)
                got = self._pieces(rec, plan.remote[rec.seq], early[rec.seq])
                # a piece some other call makes would hold back the whole batch; a put
                # block is there already (sending such tasks apart made each one wait
                # for its blocks to be resolved)
                if holdable(got):
                    self.dispatch.hold(rec.worker, rec, got)
                else:
                    self._release(rec.worker)
                    self._send(rec, plan.remote[rec.seq], got)
            else:
                self.dispatch.hold(rec.worker, rec)
        # 3. idle workers get their held tasks now; busy ones collect more
        for w in self.dispatch.holding():
            self._hear(w)
        # (a no-op for those a nested flush sent already)
        self.release_many(self.dispatch.due())

    def _request(
        self,
        pieces: Iterable[tuple[int, int]],
        plan: FlushPlan,
        readers: dict[int, Record],
        early: dict[int, list[Got | None]],
    ) -> None:
        """Request ``pieces`` (``(reader seq, position)``, :class:`FlushPlan`) now."""
        for seq, n in pieces:
            early[seq][n] = self._get_piece(plan.remote[seq][n], readers[seq])

    def _check_board(self, workers: Iterable[int]) -> None:
        """Note which of ``workers``, just started (and answering), count their calls
        on the board: a worker's start counts one."""
        board = self._board
        for w in workers:
            self.dispatch.started(w, board is not None and board.finished(w) == 1)

    def busy(self, worker: int) -> bool:
        """Whether ``worker`` may still be running the last call of tasks sent to it
        (deletes do not count: :meth:`_send_delete`): by the board where the worker
        counts its calls (:mod:`~spartan.backend.call_board`), read without Ray, else
        by the future of that call."""
        self._hear(worker)
        return self.dispatch.busy(worker)

    def _hear(self, worker: int) -> None:
        """Tell :attr:`dispatch` what is known of ``worker``'s finished calls."""
        board = self._board
        if board is not None and worker in self.dispatch.on_board:
            self.dispatch.heard(worker, board.finished(worker))
            return
        last = self._last.get(worker)
        if last is None or last.done():
            self.dispatch.idle([worker])

    def _sent(self, worker: int, ref: ray.ObjectRef) -> None:
        """``ref``'s call is now ``worker``'s last. A worker on another host is polled
        by its future, made as it is sent (one made later reports a finished call as
        pending until its callback runs): ``ray.wait`` with no timeout is far dearer
        on a pending ref, and a solver's flushes poll many times."""
        self.dispatch.call_sent(worker)
        if worker not in self.dispatch.on_board:
            self._last[worker] = ref.future()

    def _release(self, worker: int) -> Any:
        """Send the steps held for ``worker``, as one call when several; the ref of the
        return of a post they end with, if any."""
        held = self.dispatch.take(worker)
        if held is None:
            return None
        try:  # (a delete the garbage collector makes meanwhile waits: worker is sending)
            return self._send_held(worker, held)
        finally:
            self.dispatch.done(worker)

    def _send_held(self, worker: int, held: Sequence[Held]) -> Any:
        """Send ``held`` (any number of held posts, at most one that may send its piece
        apart, last); the ref of that post's return, if any."""
        if len(held) == 1:
            item = held[0]
            if isinstance(item, Record):
                self._send(item, early=self.dispatch.take_pieces(item.seq))
            elif isinstance(item, Post):
                ref = self._to(worker).post.remote(*item.fields())
                return ref if item.apart else None
            else:
                self._send_delete(worker, item)
            return None
        spec, passed = self._batch_call(worker, held)
        call = self._to(worker).run_batch
        two = any(sends_apart(item) for item in held)  # (a post's piece may come apart)
        ref = (call.options(num_returns=2) if two else call).remote(spec, *passed)
        ref, apart = ref if two else (ref, None)
        self._sent(worker, ref)
        self._inflight.extend((ref, item) for item in held if isinstance(item, Record))
        return apart

    def _batch_call(self, worker: int, held: Sequence[Held]) -> tuple[bytes, list[Any]]:
        """The arguments of ``worker``'s ``run_batch`` call of ``held``: its pickled spec
        and what Ray passes itself. The held posts of the letters it reads are sent
        first (:meth:`_release_posts`)."""
        # functions too big to inline and put blocks (refs, each once), and letters,
        # by position
        args: list[Any] = []
        ref_at: dict[ray.ObjectRef, int] = {}

        def position(arg: Any) -> int:
            if not isinstance(arg, ray.ObjectRef):
                args.append(arg)
                return len(args) - 1
            if arg not in ref_at:
                ref_at[arg] = len(args)
                args.append(arg)
            return ref_at[arg]

        steps: list[Any] = []
        for item in held:
            if isinstance(item, Record):
                fn = item.fn if isinstance(item.fn, bytes) else position(item.fn)
                pieces = self.dispatch.take_pieces(item.seq) or []
                at = tuple(position(arg) for arg, _ in pieces)
                whole = tuple(w for _, w in pieces)
                land = self.landing.take(item.seq)
                steps.append((fn, item.inputs, item.outputs, item.tag, at, whole, land, item.seq))
            else:
                steps.append(item)
        self._release_posts(args)
        inline, passed = _split(args)
        return pickle.dumps((steps, inline, self._cancels), protocol=5), passed

    def release_held(self) -> None:
        self.flush()
        self._flushing += 1  # (the posts of readers released here may wait for the rest)
        try:
            self.release_many(self.dispatch.holding())
        finally:
            self._flushing -= 1
            if self._soon and not self._flushing:
                self.release_many([])

    def _get_piece(self, p: Piece, reader: Record) -> Got:
        """What task ``reader`` gets for piece ``p``, and whether it is the whole block
        (:func:`~spartan.backend.dispatch.route`).

        A block sent from the driver lies in the object store, where a reader on the
        same node maps it without a copy. Else the block's owner copies the piece: for a
        reader on its node, the driver's host, into a letter
        (:mod:`spartan.backend.channel`), which the reader waits for itself, unless the
        piece is known to be over ``channel.MAX_BYTES``; else into the object store,
        whose ref Ray resolves at the driver before the reader's task is sent on."""
        made = self.lineage.made_by.get((p.key, p.worker))
        near = self.nodes[p.worker] == self.nodes[reader.worker]
        # (a put logged after the reader, under the same key, is not what it may see;
        # a put's value is its ref in the object store, a driver's copy is not)
        put_before = (
            made is not None and isinstance(made.value, ray.ObjectRef) and made.seq < reader.seq
        )
        if made is not None and put_before and near:  # (Route.WHOLE: no size needed)
            return made.value, True
        size = self._piece_bytes(p, reader)
        # (letters live in the driver's session directory: both workers must be on its
        # host and able to use it, as their counts on the board in it show)
        mail = self._mailbox is not None and {p.worker, reader.worker} <= self.dispatch.on_board
        way = route(put_before=put_before, near=near, mail=mail, nbytes=size)
        if way is Route.LETTER and self._mailbox is not None:
            # the post joins the owner's held steps (the block may come from one of them).
            # A piece of known size is never sent apart: while the owner is busy, its
            # post waits there for its later tasks, until the owner is idle or the reader
            # is sent (:meth:`_release_posts`). Else the post ends a call sent now, and a
            # piece sent apart is that call's second return, there once the post is done.
            path = self._mailbox.name()
            post = Post(path, p.key, p.src, p.perm, size == 0, self.pids[reader.worker])
            self._hear(p.worker)
            if self.dispatch.hold_post(p.worker, post):
                return channel.Letter(path, self.pids[p.worker]), False
            if not post.apart and self._release_soon(p.worker):
                return channel.Letter(path, self.pids[p.worker]), False
            apart = self._release(p.worker)
            return channel.Letter(path, self.pids[p.worker], apart), False
        self._release(p.worker)  # the block may come from a held task
        return self._to(p.worker).get_piece.remote(p.key, p.src, p.perm), False

    def _release_posts(self, letters: Sequence[Any]) -> None:
        """Send the held posts of ``letters`` (a reader's arguments), with the steps
        their owners hold: a reader sent must not wait for the driver."""
        paths = [a.path for a in letters if isinstance(a, channel.Letter)]
        for owner in self.dispatch.owners_to_release(paths):
            if not self._release_soon(owner):
                self._release(owner)

    def _release_soon(self, worker: int) -> bool:
        """Whether ``worker``'s held steps (a post among them) wait for the end of this
        flush (or the wait), to go with its node-mates' through the node's relay
        (:meth:`release_many`). A reader sent meanwhile waits for its letter on its
        worker, not for the driver: the flush ends before the driver waits."""
        if worker not in self._relays_of or not self._flushing:
            return False  # (outside a flush nothing would send them: a re-run's posts)
        self._soon.add(worker)
        return True

    def _piece_bytes(self, p: Piece, reader: Record) -> int:
        """Bytes of ``reader``'s remote piece ``p``; 0 for a whole stored object whose
        region does not say its size (:attr:`Region.nbytes`). The sizes of one reader's
        pieces are worked out together, once (its pieces are asked for one after
        another)."""
        if self._sizes[0] is not reader:
            self._sizes = (reader, remote_piece_bytes(reader.worker, reader.inputs))
        return self._sizes[1].get(id(p), 0)

    def _pieces(
        self, rec: Record, remote: Sequence[Piece], early: Sequence[Got | None] | None
    ) -> list[Got]:
        """What task ``rec`` gets for each of its ``remote`` pieces (:meth:`_get_piece`),
        where ``early`` does not hold it already (None)."""
        got = early or [None] * len(remote)
        return [e if e is not None else self._get_piece(p, rec) for p, e in zip(remote, got)]

    def _send(
        self,
        rec: Record,
        remote: Sequence[Piece] | None = None,
        early: Sequence[Got | None] | None = None,
    ) -> ray.ObjectRef:
        """Send one put or task; ``early`` holds its remote pieces requested already
        (:meth:`_get_piece`; None where not)."""
        actor = self._to(rec.worker)
        if rec.fn is None:  # a put
            ref = actor.put.remote(rec.outputs[0], rec.value)
        else:
            if remote is None:
                remote = remote_pieces(rec.worker, rec.inputs)
            got = self._pieces(rec, remote, early)
            self._release_posts([r for r, _ in got])
            nodes = [self.nodes[p.worker] for p in remote]
            whole = tuple(w for _, w in got)
            # one pickled spec instead of many arguments: Ray serializes each apart
            inline, passed = _split([rec.fn, *(r for r, _ in got)])
            spec = pickle.dumps(
                (
                    inline,
                    rec.inputs,
                    rec.outputs,
                    rec.want_result,
                    nodes,
                    rec.tag,
                    whole,
                    self.landing.take(rec.seq),
                    self._cancels,
                    rec.seq,
                ),
                protocol=5,
            )
            ref = actor.run_task.remote(spec, *passed)
            if rec.want_result:
                self._refs[rec.seq] = ref
        self._sent(rec.worker, ref)
        self._inflight.append((ref, rec))
        return ref

    # ---- waiting, with progress and recovery ---------------------------------------------
    def wait(self, fetch: Sequence[Region] = ()) -> list[np.ndarray]:
        try:
            return self._wait(fetch)
        finally:
            # what is logged from now on is the next evaluation's (a re-run of an
            # earlier task may fail as it did then: that is for its readers to raise)
            self._evaluation_from = self._logged
            self._replayed.clear()

    def _wait(self, fetch: Sequence[Region]) -> list[np.ndarray]:
        deadline = _deadline(config.task_timeout)
        self._suspects = Suspects()
        if self._lost:
            self._replace_lost()  # first: nothing below is sent to a dead worker
        if self.unmade and fetch:
            self._remake(held_by(self.where, ((p.key, p.worker) for r in fetch for p in r.pieces)))
        self.release_held()
        self._forwarded()
        big = biggest(fetch)
        landed = self.landing.take_landed()
        attempt = rounds = 0
        while True:
            pending, self._inflight = self._inflight, []
            landing = self._landing_path(fetch[big]) if big is not None else None
            # pieces their tasks wrote into the zone (not after a recovery: the replays
            # of those tasks write nothing there)
            skip: frozenset[int] = frozenset()
            if attempt == 0 and landed is not None and big is not None:
                skip = landed.positions(fetch[big], landing)
            refs: list[Any] = []
            try:
                refs = list(dict.fromkeys(ref for ref, _ in pending))
                # calls to an actor run in order: these follow its tasks, in one round trip
                if self.device == "gpu":
                    refs += [self._to(w).sync.remote() for w in range(len(self.actors))]
                calls = [
                    self._fetch_calls(region, landing, skip)
                    if i == big
                    else self._fetch_calls(region, None)
                    for i, region in enumerate(fetch)
                ]
                self._ask_stats()
                at = len(refs)
                refs += [call for cs in calls for call in cs]
                # a task of an earlier evaluation re-run to rebuild a lost block may fail
                # as it did the first time: that is for its readers to raise, not this
                # evaluation, which raises only its own tasks' failures
                earlier = self._evaluation_from
                replays = {
                    ref for ref, rec in pending if rec.seq in self._replayed and rec.seq <= earlier
                }
                replays -= {ref for ref, rec in pending if rec.seq not in self._replayed}
                values = self._get(refs, progress=True, tolerate=replays, deadline=deadline)
                self._last = {}  # idle (their futures may not have heard yet)
                self._settle_order(refs)
                self._settled = self._logged
                out = []
                for i, (region, cs) in enumerate(zip(fetch, calls)):
                    if i == big and landing is not None:
                        out.append(self.landing.read(region))
                    else:
                        out.append(self._assembled(region, values[at : at + len(cs)]))
                    at += len(cs)
                self._seen.check(fetch, out)
                return out
            except LOSS_ERRORS as error:
                loss = error  # (recovered below, outside the handler: a loss there is its own)
            except BaseException as error:
                if landing is not None:  # writes may still be on their way: a new zone
                    self.landing.close()
                if isinstance(error, ray.exceptions.GetTimeoutError):
                    raise self._overdue(pending, refs) from None
                if isinstance(error, KeyboardInterrupt):
                    self._inflight[:0] = pending  # (cancel waits for them)
                    raise interrupted(self.cancel()) from None
                raise
            attempt += 1
            try:
                rounds = self._recover_rounds(pending, rounds + 1, loss)
            except BaseException:
                if landing is not None:
                    self.landing.close()
                raise

    def _settle_order(self, done: Iterable[Any]) -> None:
        """The calls of ``done`` finished: later calls need not wait for them
        (:meth:`_to`, :meth:`release_many`). Every forwarded call is a task's, waited for
        by the wait that calls this."""
        if self._relays:
            finished = set(done)
            self._relayed = {w: r for w, r in self._relayed.items() if r not in finished}
            self._direct = {w: r for w, r in self._direct.items() if r not in finished}

    def _local(self, region: Region) -> bool:
        """Whether every piece of ``region`` is a CPU block on the driver's host."""
        return self.device == "cpu" and all(
            self.nodes[self.owner(p.key, p.worker)] == self.driver_node for p in region.pieces
        )

    def _maker(self, p: Piece) -> Record | None:
        """The record that makes the block piece ``p`` is read from."""
        return self.lineage.made_by.get((p.key, self.owner(p.key, p.worker)))

    def _landing_path(self, region: Region) -> str | None:
        """The landing zone's path when ``region`` comes through it
        (:meth:`~spartan.backend.landing_zone.Landing.path`)."""
        return self.landing.path(region, lambda: self._local(region))

    def results(self, handles: Sequence[Any]) -> list[Any]:
        self.wait()  # rebuilds anything lost first
        return self._get([self._refs.pop(h.seq) for h in handles])

    def fetch_many(self, reqs: Sequence[tuple[Key, int | None, tuple | None]]) -> list[Any]:
        deadline = _deadline(config.task_timeout)
        self._suspects = Suspects()
        if self._lost:
            self._replace_lost()
        if self.unmade:
            self._remake(held_by(self.where, ((k, w) for k, w, _ in reqs)))
        self.release_held()
        self._forwarded()
        rounds = 0
        while True:
            calls: list[Any] = []
            try:
                calls = self._piece_calls(reqs)
                return self._get(calls, deadline=deadline)
            except LOSS_ERRORS as error:
                loss = error  # (recovered below, outside the handler)
            except ray.exceptions.GetTimeoutError:
                pending, self._inflight = self._inflight, []
                raise self._overdue(pending, calls) from None
            pending, self._inflight = self._inflight, []
            rounds = self._recover_rounds(pending, rounds + 1, loss)
            self.wait()  # the blocks rebuilt, before they are fetched again

    def _fetch_calls(
        self, region: Region, landing: str | None, skip: frozenset[int] = frozenset()
    ) -> list[Any]:
        """Calls that bring ``region`` to the driver: each owner's pieces written into
        the landing zone (but those at the positions ``skip``, written there already),
        or each piece returned through the object store."""
        if landing is None:
            return self._piece_calls(self._requests(region))
        parts = parts_by_owner(region, lambda p: self.owner(p.key, p.worker), skip)
        return [self._to(w).write_shared.remote(landing, part) for w, part in parts.items()]

    def _piece_calls(self, reqs: Sequence[tuple[Key, int | None, tuple | None]]) -> list[Any]:
        return [self._to(self.owner(k, w)).fetch.remote(k, idx) for k, w, idx in reqs]

    def _get(
        self,
        refs: list[Any],
        progress: bool = False,
        tolerate: Collection[Any] = (),
        deadline: float | None = None,
    ) -> list[Any]:
        """The values of ``refs``; a failed task's error is raised (except for the refs
        in ``tolerate``: tasks re-run by a recovery, whose failures their readers raise).
        A piece lost with its worker raises its loss error, whatever ``tolerate`` says
        (the driver recovers). ``deadline`` (``time.monotonic()``): Ray's
        ``GetTimeoutError`` once it passes."""
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            values = (
                _get_with_progress(refs, timeout) if progress else ray.get(refs, timeout=timeout)
            )
        except ray.exceptions.RayTaskError as error:
            cause = _unwrap(error)
            if isinstance(cause, LOSS_ERRORS):
                raise cause from None
            self._inflight = []
            raise _unwrap(error) from None
        for v in values:
            if isinstance(v, TaskFailed) and isinstance(v.error, LOSS_ERRORS):
                raise v.error
        for ref, v in zip(refs, values):
            if isinstance(v, TaskFailed) and ref not in tolerate:
                self._inflight = []
                raise with_user_frames(v.error)
        return values

    # ---- recovery (the decisions: :mod:`spartan.backend.recovery`) ---------------------------
    # Every path keeps these true, whatever dies when: a block in :attr:`where` is on its
    # worker, or is in :attr:`unmade` (made again before it is read, :meth:`_remake`), or
    # its worker is in :attr:`_lost` (replaced, and its blocks rebuilt, before anything
    # is sent again); and a delete held for a block goes out before the block is made
    # again on the same worker (:meth:`_rerun`).

    def _recover_rounds(
        self,
        pending: list[tuple[Any, Record]],
        rounds: int,
        loss: BaseException | None = None,
        unsent: Collection[int] = (),
    ) -> int:
        """:meth:`_recover` (from ``loss``) until a recovery is sent whole, a loss during
        one (a replacement that dies as it starts) counting as another round; the rounds
        counted. WorkerLostError past ``config.recovery_attempts`` rounds."""
        if self._fans:
            self._forwarded()
            pending = pending + self._inflight
            self._inflight = []
        while True:
            try:
                self._recover(pending, rounds, loss, unsent)
                return rounds
            except LOSS_ERRORS as error:
                pending = pending + self._inflight
                self._inflight = []
                rounds += 1
                loss = error

    def _replace_lost(self, flushing: Sequence[Record] = ()) -> None:
        """Replace the workers an earlier evaluation gave up on, and rebuild their blocks
        (those its own tasks were to make are made when read), before the tasks queued
        (:meth:`flush`; ``flushing``: those a flush took already) go out."""
        self._forwarded()
        pending, self._inflight = self._inflight, []
        queued, self._queued = self._queued, []
        unsent = {rec.seq for rec in (*flushing, *queued)} | self.dispatch.unsent()
        try:
            self._recover_rounds(pending, 1, unsent=unsent)
        finally:
            self._queued[:0] = queued

    def _recover(
        self,
        pending: list[tuple[Any, Record]],
        rounds: int,
        loss: BaseException | None = None,
        unsent: Collection[int] = (),
    ) -> None:
        """Replace dead workers and re-run what is needed to rebuild their blocks and
        the blocks of the ``pending`` tasks (sent, not known finished) that read from
        them; :attr:`_inflight` is then what is left to wait for. ``rounds``: the
        recoveries this wait has needed, this one included; ``loss``: the error that
        showed it (a block a worker found missing, :class:`BlockMissing`, is rebuilt
        like a dead worker's); ``unsent``: the seqs of tasks logged but not sent yet
        (their blocks are made when they are). Gives up (WorkerLostError,
        :meth:`_give_up`) when a user function killed its worker, or past
        ``config.recovery_attempts`` rounds."""
        absent: set[tuple[Key, int]] = set()
        if isinstance(loss, BlockMissing) and (
            loss.worker in self.where.get(loss.key, ())
            or (loss.key, loss.worker) in self.lineage.made_by  # (an intermediate's reader)
        ):
            absent.add((loss.key, loss.worker))
        dead = self._dead_workers(wait=not absent)
        fresh = dead - self._lost  # (those an earlier evaluation gave up on are known)
        if not dead and not absent:
            self._give_up(set(), pending, "a piece of data was lost although every worker is alive")
        blamed = self._blame(fresh, pending)
        if blamed is not None:
            self._give_up(dead, pending, f"{blamed}; it was not run again")
        if rounds > max(0, config.recovery_attempts):
            self._give_up(
                dead,
                pending,
                (f"worker(s) {sorted(dead)} died" if dead else "tiles went missing")
                + f" {rounds} times in one evaluation "
                f"({config.recovery_attempts} recoveries allowed: "
                "spartan.config.recovery_attempts)",
            )
        self.recoveries += 1
        self._lost |= dead
        self._forget_held(dead)
        # (a call that waits for a failed one fails too: the order is kept again by the
        # re-runs, which go direct)
        self._relayed, self._direct = {}, {}
        for i in sorted(dead):
            with contextlib.suppress(Exception):  # (one stopped may still hold its CPU)
                ray.kill(self.actors[i], no_restart=True)
            if self._board is not None:
                self._board.reset(i)
            if self._running is not None:
                self._running.reset(i)
            self.actors[i] = self._start(i)
        order = sorted(dead)
        try:
            answers = ray.get(
                [self.actors[i].ping.remote() for i in order]
                + [self.actors[i].pid.remote() for i in order],
                timeout=START_TIMEOUT_S,
            )
        except ray.exceptions.GetTimeoutError:
            self._give_up(
                dead,
                pending,
                f"no replacement for worker(s) {order} started within {START_TIMEOUT_S} s "
                f"(the cluster offers {ray.available_resources()})",
            )
        for n, i in enumerate(order):
            self.nodes[i], self.pids[i] = answers[n], answers[len(order) + n]
        self._check_board(order)
        for node, relay in self._relays.items():  # (calls to it are made in order)
            relay.set_mates.remote({i: self.actors[i] for i in order if self.nodes[i] == node})
        self._relays_of = {w for w, node in enumerate(self.nodes) if node in self._relays}
        self._lost -= dead
        missing = lost_blocks(
            self.where,
            dead,
            self.unmade,
            self.lineage.made_by,
            unsent,
            absent,
            [rec for _, rec in pending],
        )
        known = set(self.where)

        def exists(key: Key, w: int) -> bool:
            pair = (key, w)
            return (
                key in known
                and w in self.where[key]
                and pair not in missing
                and pair not in self.unmade
            )

        before = {rec.seq for _, rec in self._inflight}
        try:
            ran = self._replay(missing, exists, known, f"lost with worker(s) {order}")
        except WorkerLostError:
            self._abandon(set(), pending)
            raise
        # still to wait for: the calls of pending tasks, on workers that lived, none of
        # whose tasks was re-run (a call of several tasks returns its first failure:
        # that of a task re-run now would be raised again)
        rerun = {rec.seq for _, rec in self._inflight} - before
        superseded = {ref for ref, rec in pending if rec.worker in dead or rec.seq in rerun}
        self._inflight[:0] = [(ref, rec) for ref, rec in pending if ref not in superseded]
        log.warning(
            "spartan: %s; re-running %d task(s) to rebuild %d lost tile(s)",
            f"worker(s) {order} died and were replaced" if order else "a tile was missing",
            ran,
            len(missing),
        )

    def _dead_workers(self, wait: bool = True) -> set[int]:
        """The workers whose processes are gone (those known lost too). A death Ray
        reported may take a moment to show: with ``wait``, looked for up to
        DEATH_NOTICE_S, or as long as a node's death takes to show where workers live on
        other nodes (a poll of the control store, not a guess at how long it takes)."""
        notice = DEATH_NOTICE_S
        if any(node != self.driver_node for node in self.nodes):
            notice = max(notice, node_death_notice_s())
        give_up_at = time.monotonic() + (notice if wait else 0.0)
        while True:
            dead = {i for i in range(len(self.actors)) if not self._worker_alive(i)}
            if any(self.nodes[i] != self.driver_node for i in dead):
                # a lost node's actors may show dead one by one: every worker on a node
                # Ray calls dead is lost now, not in a later recovery round
                gone = dead_nodes()
                dead |= {i for i, node in enumerate(self.nodes) if node in gone}
            dead |= self._lost
            if dead or time.monotonic() >= give_up_at:
                return dead
            time.sleep(0.02)

    def _worker_alive(self, i: int) -> bool:
        """Whether worker ``i`` lives: its process (on the driver's host), and its
        actor as Ray's control store records it. Asks no actor: a live one may be busy
        with a long task, and a call to it would wait behind that."""
        if i in self._lost:
            return False
        pid = self.pids[i] if i < len(self.pids) else None
        if pid is not None and self.nodes[i] == self.driver_node and not process_alive(pid):
            return False
        return actor_state(self.actors[i]) != "DEAD"

    def _blame(self, dead: set[int], pending: list[tuple[Any, Record]]) -> str | None:
        """Why a user function is to blame for a death in ``dead``, if one is
        (:class:`~spartan.backend.recovery.Suspects`). A worker on the driver's host says
        what user code it ran (:mod:`~spartan.backend.running`); of one elsewhere, the
        oldest of its tasks not known finished is taken as the one it was running."""
        for w in sorted(dead):
            seen = None
            if self._running is not None and w in self.dispatch.on_board:
                seen = self._running.read(w)
            else:
                oldest = min(
                    (rec for _, rec in pending if rec.worker == w and rec.fn is not None),
                    key=lambda rec: rec.seq,
                    default=None,
                )
                if oldest is not None:
                    seen = running.Running(oldest.seq, self._describe(oldest), None)
            if seen is None:
                continue
            why = self._suspects.blame(w, seen)
            if why is not None:
                return why
        return None

    def _describe(self, rec: Record) -> str:
        """The user function of task ``rec`` and its tiles, as errors name them."""
        fn: Any = rec.fn
        try:
            fn = pickle.loads(fn) if isinstance(fn, bytes) else ray.get(fn, timeout=10)
        except Exception:  # noqa: BLE001 -- a name is a courtesy
            fn = None
        what = getattr(fn, "what", None) or (name_of(fn) if fn is not None else "a task")
        return f"{what} on {tiles_of(rec.outputs)}"

    def _forget_held(self, workers: Collection[int]) -> None:
        """Drop what is held for dead ``workers`` (:meth:`DispatchState.lost`)."""
        self.dispatch.lost(workers)
        for w in workers:
            self._last.pop(w, None)

    def _abandon(
        self, dead: Collection[int], pending: list[tuple[Any, Record]], stop_sent: bool = True
    ) -> None:
        """Leave the current evaluation where it is, keeping the session usable: the
        work sent is cancelled (``stop_sent``: skipped where not started, as by
        :meth:`cancel`), the workers ``dead`` are replaced at the next evaluation
        (:attr:`_lost`), and every block of a task not known finished (logged since the
        last wait that ended, or ``pending``) is made again when read."""
        if self._fans:
            with contextlib.suppress(Exception):
                self._forwarded()
            pending = pending + self._inflight
        if stop_sent:
            if self._stop is not None:
                self._stop.raise_to(self._cancels + 1)
            self._cancels += 1
        self._lost |= set(dead)
        self._forget_held(dead)
        if self._running is not None:
            for w in dead:
                self._running.reset(w)
        uncertain = {rec.seq for _, rec in pending}
        self.unmade |= uncertain_blocks(self.where, self.lineage.made_by, self._settled, uncertain)
        self._inflight = []
        self._replayed.clear()
        self.landing.forget()
        self._refs.clear()
        self._last = {}
        self._relayed, self._direct = {}, {}
        self._settled = self._logged

    def _give_up(self, dead: set[int], pending: list[tuple[Any, Record]], why: str) -> NoReturn:
        """:meth:`_abandon` the evaluation, and say why (WorkerLostError)."""
        self._abandon(dead, pending)
        log.debug("spartan: gave up an evaluation: %s", why)
        raise WorkerLostError(
            f"spartan: {why}. The session stays usable: lost workers are replaced at the "
            "next evaluation, and arrays are rebuilt when they are read",
            dead,
        )

    def _stop_workers(self, workers: Collection[int]) -> None:
        """Kill ``workers`` (stuck in a task that cannot be interrupted inside an actor)
        and wait until their processes are gone: a stopped worker must not count a call
        on the boards after its slot is reset."""
        for w in workers:
            with contextlib.suppress(Exception):
                ray.kill(self.actors[w], no_restart=True)
        give_up_at = time.monotonic() + STOP_WAIT_S
        for w in workers:
            if self.nodes[w] != self.driver_node:
                continue
            while process_alive(self.pids[w]) and time.monotonic() < give_up_at:
                time.sleep(0.01)

    def _overdue(self, pending: list[tuple[Any, Record]], refs: list[Any]) -> TimeoutError:
        """The evaluation took longer than ``config.task_timeout``: stop the workers
        stuck in user code (else every worker still busy), abandon it (:meth:`_abandon`)
        and return the TimeoutError naming what was still running."""
        ready = set(ray.wait(refs, num_returns=len(refs), timeout=0)[0]) if refs else set()
        busy = {w for w in range(self.nworkers) if self.busy(w)}
        busy |= {rec.worker for ref, rec in pending if ref not in ready}
        busy -= self._lost
        doing: dict[int, str] = {}
        for w in sorted(busy):
            seen = (
                self._running.read(w)
                if self._running is not None and w in self.dispatch.on_board
                else None
            )
            if seen is not None:
                doing[w] = seen.what
        stuck = set(doing) or busy
        for w in sorted(stuck - set(doing)):
            oldest = min(
                (rec for ref, rec in pending if rec.worker == w and ref not in ready),
                key=lambda rec: rec.seq,
                default=None,
            )
            if oldest is not None:
                doing[w] = self._describe(oldest)
        self._stop_workers(stuck)
        self._abandon(stuck, pending)
        running_text = "; ".join(f"worker {w} was running {doing[w]}" for w in sorted(doing))
        return TimeoutError(
            f"spartan: the evaluation did not finish within spartan.config.task_timeout = "
            f"{config.task_timeout} s"
            + (f": {running_text}" if running_text else "")
            + (
                f". Worker(s) {sorted(stuck)} were stopped; they are replaced, and arrays "
                "rebuilt when read, at the next evaluation"
                if stuck
                else ""
            )
        )

    def _replay(
        self,
        wanted: Collection[tuple[Key, int]],
        exists: Callable[[Key, int], bool],
        known: Collection[Key],
        why: str,
    ) -> int:
        """Re-send the tasks that make ``wanted`` (blocks ``why`` gone) from what
        ``exists`` (:func:`~spartan.backend.recovery.replay`); how many."""
        plan = replay(self.lineage, wanted, exists, why)
        self._rerun(plan, known)
        return len(plan)

    def _rerun(self, plan: list[Record], known: Collection[Key]) -> None:
        """Send the tasks of ``plan`` (:meth:`Lineage.replay_plan`) again; ``known``:
        the keys held before."""
        # what is held goes first: a delete of an intermediate that an interrupted
        # recovery rebuilt must not reach its worker after the block is made again
        # there (its readers would find it gone)
        for w in self.dispatch.holding():
            self._release(w)
        # intermediates rebuilt for their readers (join updates, fetched copies) were
        # deleted before: they go again once those readers are sent, or they would stay
        rebuilt: dict[int, list[Key]] = {}
        # (a re-run goes direct, as it did before relays: none of its posts or deletes
        # is deferred)
        flushing, self._flushing = self._flushing, 0
        self._rerunning = True
        try:
            for rec in plan:
                self._replayed.add(rec.seq)
                self._seen.rebuilt(rec.outputs)
                self._send(rec)
                for key in rec.outputs:
                    self.unmade.discard((key, rec.worker))
                    if key in known:
                        self._record(key, rec.worker)
                    else:
                        rebuilt.setdefault(rec.worker, []).append(key)
            for w, keys in rebuilt.items():
                self._delete(w, keys)
        finally:
            self._flushing = flushing
            self._rerunning = False

    # ---- cancelling -------------------------------------------------------------------------
    def checkpointed(self, loads: Iterable[tuple[Key, int, Any]]) -> None:
        """Lost blocks in a complete checkpoint are read back from it (their lineage
        before the checkpoint may be pruned)."""
        for key, worker, load in loads:
            self.lineage.saved(key, worker, load)

    def checkpoint_files_in_use(self) -> set[str]:
        """The checkpoint files a rebuild of any block held now could read."""
        return self.lineage.files_in_use((k, w) for k, ws in self.where.items() for w in ws)

    def cancel(self) -> int:
        """Stop the work sent so far (Ctrl-C in an evaluation) and return once the workers
        are idle: a task that has not started is skipped; one running is waited for up
        to ``config.cancel_timeout`` seconds, then its worker is stopped (a task cannot
        be interrupted inside an actor, and a hung one never ends). A second Ctrl-C
        stops the busy workers at once. Returns how many tasks were skipped. Their
        outputs (and those of tasks that read them) are made again from their lineage,
        like a dead worker's blocks, but only when a task or fetch reads them
        (:meth:`_remake`): the arrays of the interrupted evaluation stay whole, and the
        next operation does not wait for them. Stopped workers are replaced at the next
        evaluation.

        Workers skip by :class:`StopFlag`, which those on other hosts than the driver's
        cannot read: they finish what they were sent. ``ray.cancel`` does not apply to
        these calls: it would drop a queued actor call, and a dropped call that posts a
        letter leaves that letter's reader, already running on another worker, waiting
        for it (:mod:`~spartan.backend.channel`)."""
        if not self.actors or not ray.is_initialized():
            return 0
        if self._stop is not None:
            self._stop.raise_to(self._cancels + 1)
        try:
            return self._drain()
        except KeyboardInterrupt:
            # interrupted again: the workers still busy are stopped (the next evaluation
            # must not queue behind a task that may never end), and every block logged
            # since the last wait that ended is made again before it is read
            busy = {w for w in range(len(self.actors)) if self.busy(w)} - self._lost
            self._stop_workers(busy)
            self._abandon(busy, [], stop_sent=False)
            stopped = (
                f"worker(s) {sorted(busy)} still running were stopped (replaced at the next "
                "evaluation)"
                if busy
                else "no worker was still running"
            )
            raise KeyboardInterrupt(f"spartan: interrupted again; {stopped}") from None
        finally:
            self._cancels += 1

    def _drain(self) -> int:
        """:meth:`cancel` once the workers were told: the rest is sent (and skipped),
        then each worker says, after all it was sent, which of its blocks are unmade.
        A worker that has not answered within ``config.cancel_timeout`` is stopped."""
        # what is held or queued goes out too: its posts are still made, for readers
        # sent already, and its deletes
        self._cancelling = True
        try:
            self.release_held()
            self._forwarded()
        finally:
            self._cancelling = False
        self.landing.forget()
        self._refs.clear()  # (the results the interrupted lowering waited for)
        keys: dict[int, list[Key]] = {}
        for key, holders in self.where.items():
            for w in holders:
                keys.setdefault(w, []).append(key)
        asked = {
            w: self._to(w).unmade.remote(pickle.dumps(keys.get(w, []), protocol=5))
            for w in range(len(self.actors))
            if w not in self._lost
        }
        refs = list(asked.values())
        limit = config.cancel_timeout
        ready = set(ray.wait(refs, num_returns=len(refs), timeout=limit)[0]) if refs else set()
        stuck = {w for w, ref in asked.items() if ref not in ready}
        if stuck:
            doing = [
                f"worker {w}: {seen.what}"
                for w in sorted(stuck)
                if self._running is not None
                and w in self.dispatch.on_board
                and (seen := self._running.read(w)) is not None
            ]
            log.warning(
                "spartan: stopped worker(s) %s, still running %s s after the cancel%s; they "
                "are replaced at the next evaluation",
                sorted(stuck),
                limit,
                f" ({'; '.join(doing)})" if doing else "",
            )
            self._stop_workers(stuck)
        gone = set(stuck)
        skipped = 0
        for w, ref in asked.items():
            if w in stuck:
                continue
            try:
                unmade, n = ray.get(ref)
            except LOSS_ERRORS as error:
                log.debug("spartan: worker %d did not answer after a cancel: %s", w, error)
                gone.add(w)
                continue
            self.unmade.update((key, w) for key in unmade)
            skipped += n
        if gone:  # replaced at the next evaluation; what was being made, made when read
            self._abandon(gone, [], stop_sent=False)
        self._inflight = []
        self._last = {}  # idle (their futures may not have heard yet)
        self._settled = self._logged
        board = self._board
        if board is not None:  # (a call whose sending was interrupted went uncounted)
            for w in self.dispatch.on_board:
                self.dispatch.recount(w, board.finished(w))
        return skipped

    def _remake(self, pairs: Iterable[tuple[Key, int]]) -> None:
        """Make again the blocks among ``pairs`` (``(key, worker)``) that cancelled tasks
        left unmade (:meth:`cancel`), by sending the tasks that made them again (and
        those that made their inputs, where they are gone too), before their readers."""
        unmade, where = self.unmade, self.where
        wanted = {pair for pair in pairs if pair in unmade}
        if not wanted:
            return
        # held deletes and posts go first: a rebuilt intermediate must not meet the
        # delete of its first making on the way to its reader
        for w in self.dispatch.holding():
            self._release(w)

        def exists(key: Key, w: int) -> bool:
            return w in where.get(key, ()) and (key, w) not in unmade

        ran = self._replay(wanted, exists, set(where), "left unmade by an interrupted evaluation")
        log.info("spartan: re-ran %d task(s) an interrupted evaluation skipped", ran)

    # ---- the rest of the API ---------------------------------------------------------------
    def delete(self, keys: Sequence[Key]) -> None:
        made = self.lineage.made_by
        puts = any(
            (rec := made.get((k, w))) is not None and isinstance(rec.value, ray.ObjectRef)
            for k in keys
            for w in self.where.get(k, ())
        )
        if self.unmade:
            for k in keys:
                for w in self.where.get(k, ()):
                    self.unmade.discard((k, w))
        super().delete(keys)
        self._seen.forget(keys)
        # the log would otherwise keep every block's lineage, and every put's data in
        # the object store, for the whole session (:class:`~recovery.Pruning` says when)
        if self.pruning.due(puts, len(self.lineage.made_by)):
            up = ray.is_initialized() and bool(self.actors)  # (a call would start Ray again)
            copied = self.pruning.keep(self.lineage, _ready, ray.get, _no_copies) if up else 0
            self.lineage.prune((k, w) for k, ws in self.where.items() for w in ws)
            if up:
                self._ask_copies()
            self.pruning.pruned(len(self.lineage.made_by), copied)

    def _ask_copies(self) -> None:
        """Ask each worker for copies of its small live blocks behind a chain of tasks
        (:meth:`~spartan.backend.recovery.Pruning.wanted`), up to
        :data:`~spartan.backend.recovery.COPY_MAX_BYTES`; taken at a later prune."""
        for w, owners in self.pruning.wanted(self.lineage.made_by, self.where).items():
            # not a worker's last call for :meth:`busy` (like a delete: it takes
            # microseconds)
            ref = self._to(w).small_copies.remote(list(owners), recovery.COPY_MAX_BYTES)
            self.pruning.asked.append((ref, owners))

    def _delete(self, worker: int, keys: list[Key]) -> None:
        if ray.is_initialized() and self.actors:  # an actor call would start Ray again
            if self._queued:
                self.flush()  # the readers of these blocks go first
            # after held readers; in a batch, with the worker's next tasks or at its end
            # (an iterative solver frees hundreds of temporaries after an evaluation:
            # one actor call each would queue behind them). Where a relay serves the
            # worker's node, a delete waits for the worker's next call (a put or task
            # sent to it sends its held steps first): one call per worker each would
            # undo what the relay saves
            batching = bool(self._batching) or (worker in self._relays_of and not self._rerunning)
            if not self.dispatch.hold_delete(worker, keys, batching):
                self._send_delete(worker, keys)

    def _send_delete(self, worker: int, keys: list[Key]) -> None:
        # pickled: one bytes object is far cheaper for Ray's serializer than a list of
        # keys. Not the worker's last call for :meth:`busy`: a delete takes
        # microseconds, but the driver hears of it only when its future gets the GIL
        # (late, while it plans), and the next evaluation's first tasks would be held
        # behind the deletes of the last result
        self._to(worker).delete.remote(pickle.dumps(keys, protocol=5))

    def worker_memory(self) -> list[int]:
        if self._lost:
            self._replace_lost()  # (a dead worker answers nothing)
        self.release_held()  # queued puts count
        return self._get([self._to(w).memory.remote() for w in range(len(self.actors))])

    def _worker_stats_later(
        self, tags: Collection[Any] | None = None
    ) -> Callable[[], list[dict[str, Any]]]:
        """The counters are asked behind the next wait's fetch calls, if it comes first
        (asked before them, a worker answers between its task and its landing write,
        delaying the result), else when called."""
        asked: list[list[ray.ObjectRef]] = []
        self._stats_wanted.append((asked, tags))

        def get() -> list[dict[str, Any]]:
            if not asked:
                self._ask_stats()
            return self._get(asked[0])

        return get

    def _ask_stats(self) -> None:
        """Send the counter calls :meth:`_worker_stats_later` promised (behind every
        task sent, and every one held)."""
        if not self._stats_wanted:
            return
        if self._lost:
            self._replace_lost()  # (a dead worker answers nothing)
        self.release_held()
        # one call per worker answers every promise: the tags of them all (all: None)
        wanted = [tags for _, tags in self._stats_wanted]
        tags: frozenset[Any] | None = None
        if all(t is not None for t in wanted):
            tags = frozenset(tag for t in wanted if t is not None for tag in t)
        refs = [self._to(w).stats.remote(tags) for w in range(len(self.actors))]
        for asked, _ in self._stats_wanted:
            asked.append(refs)
        self._stats_wanted = []

    def reset_stats(self) -> None:
        self.wait()
        self._get([self._to(w).reset_stats.remote() for w in range(len(self.actors))])

    def shutdown(self) -> None:
        self._stop_relays()
        for a in self.actors:
            ray.kill(a)
        self._queued, self._last, self._stats_wanted = [], {}, []
        self.dispatch.clear()
        self.landing.forget()
        self.pruning.clear()
        self.actors = []
        self.nworkers = 0
        self.landing.close()
        if self._mailbox is not None:
            self._mailbox.close()
        if self._board is not None:
            self._board.close()
        if self._stop is not None:
            self._stop.close()
        if self._running is not None:
            self._running.close()
        self._lost = set()
        self._files.close()
        self.unmade = set()


class _Ordered:
    """A worker's actor handle for the driver's direct calls where relays forward others
    (:meth:`RayBackend._to`): each call waits for the last forwarded call to the worker
    (its ref, a trailing argument the worker ignores) and becomes the last direct one."""

    def __init__(self, backend: RayBackend, worker: int, options: dict | None = None) -> None:
        self._backend, self._worker, self._options = backend, worker, options
        self._name = ""

    def __getattr__(self, name: str) -> _Ordered:
        method = _Ordered(self._backend, self._worker, self._options)
        method._name = name
        return method

    def options(self, **options: Any) -> _Ordered:
        method = _Ordered(self._backend, self._worker, options)
        method._name = self._name
        return method

    def remote(self, *args: Any) -> Any:
        backend, w = self._backend, self._worker
        method = getattr(backend.actors[w], self._name)
        if self._options:
            method = method.options(**self._options)
        if w in backend._forwarding:
            backend._forwarded()
        after = backend._relayed.get(w)
        ref = method.remote(*args, after) if after is not None else method.remote(*args)
        backend._direct[w] = ref[0] if isinstance(ref, list) else ref
        return ref


def _ready(ref: ray.ObjectRef) -> bool:
    """Whether ``ref``'s value is there (asked without waiting)."""
    return bool(ray.wait([ref], timeout=0)[0])


def _no_copies(error: BaseException) -> None:
    log.debug("no copies of small blocks from a worker: %s", error)


def _deadline(seconds: float | None) -> float | None:
    """The ``time.monotonic()`` at which a wait of ``seconds`` (None: no limit) ends."""
    return None if seconds is None else time.monotonic() + max(0.0, float(seconds))


def _interactive() -> bool:
    return sys.stderr.isatty() or "ipykernel" in sys.modules


def _get_with_progress(refs: list[Any], timeout: float | None = None) -> list[Any]:
    """``ray.get(refs, timeout=timeout)``; after ``config.progress_after`` seconds a
    progress bar (interactive) or log lines (scripts) count the finished tasks until all
    are. (One call into Ray when they finish in time: a wait for them before the get
    would cost every evaluation another round trip.)"""
    if config.progress_after is None or not refs:
        return ray.get(refs, timeout=timeout)
    deadline = _deadline(timeout)
    first = config.progress_after if timeout is None else min(config.progress_after, timeout)
    try:
        return ray.get(refs, timeout=first)
    except ray.exceptions.GetTimeoutError:
        if deadline is not None and time.monotonic() >= deadline:
            raise
    ready, rest = ray.wait(refs, num_returns=len(refs), timeout=0)
    total, done = len(refs), len(ready)
    bar = None
    if _interactive():
        from tqdm.auto import tqdm

        bar = tqdm(total=total, initial=done, desc="spartan", unit="task", leave=False)
    last_log = time.monotonic()
    try:
        while rest:
            step = 0.5 if deadline is None else min(0.5, max(0.0, deadline - time.monotonic()))
            ready, rest = ray.wait(rest, num_returns=len(rest), timeout=step)
            if rest and deadline is not None and time.monotonic() >= deadline:
                raise ray.exceptions.GetTimeoutError("the evaluation's time is up")
            done += len(ready)
            if bar is not None:
                bar.update(len(ready))
            elif time.monotonic() - last_log > 5:
                log.info("spartan: %d/%d tasks done", done, total)
                last_log = time.monotonic()
    finally:  # (Ctrl-C: the bar goes too)
        if bar is not None:
            bar.close()
    return ray.get(refs)
