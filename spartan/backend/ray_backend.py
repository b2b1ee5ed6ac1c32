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
owner's later tasks, until the owner is idle or the reader is sent (CG: the workers' many
iterations, each a product, a post and a read of the other's post, in a few calls instead
of one per iteration; an actor call's boundary cost 1.1-2.4 ms here). Deletes made in a
:meth:`~spartan.backend.master.Master.batching_deletes` block (an evaluation) join the
worker's held calls too.

Workers are spread over every node that offers CPUs (or GPUs), numbered node by node,
so contiguous runs of tiles share a node. Every put and task is logged
(:mod:`spartan.backend.lineage`): when a worker dies, it is replaced and the blocks it
held are rebuilt by re-running the tasks that made them, and the interrupted
``wait``/``fetch`` completes with the same result.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import logging
import mmap
import os
import pickle
import sys
import time
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
import psutil
import ray
from ray import cloudpickle  # what ray.put uses: pickle-by-value registrations apply
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from spartan.backend import call_board, channel, running, session_files, shared_output
from spartan.backend.base import (
    Key,
    Piece,
    Region,
    WorkerLostError,
    interrupted,
    remote_pieces,
)
from spartan.backend.device import to_host
from spartan.backend.heap import default_keep, keep_freed_memory
from spartan.backend.lineage import Lineage, Record
from spartan.backend.master import Master
from spartan.backend.seen import SeenTiles
from spartan.backend.streaming_copies import glibc_tunables
from spartan.backend.worker import (
    BlockMissing,
    TaskCancelled,
    TaskFailed,
    Worker,
    cancel_check,
    cancelled,
    name_of,
    nbytes_of,
    take,
    tiles_of,
    with_user_frames,
)
from spartan.config import config

log = logging.getLogger("spartan")

#: the modules cloudpickle sends by value (``register_pickle_by_value``); None where this
#: cloudpickle keeps them elsewhere: then every task function goes by cloudpickle
_BY_VALUE_MODULES = getattr(cloudpickle.cloudpickle, "_PICKLE_BY_VALUE_MODULES", None)

#: a busy worker's held tasks are sent once this many have collected. Each call after
#: the first costs its worker 1-3 ms between calls (Ray's hand-over, the spec's
#: unpickling on cold caches): at 64, CG's ~380 steps per worker took 4 calls. A step
#: pickles to ~0.4 KB, so 192 keep a call's spec under Ray's 100 KB limit for inline
#: arguments (CG, 10 alternating runs each: 400 -> 394 ms median)
HELD_MAX = 192
#: the lineage log is first pruned when it holds this many blocks
PRUNE_MIN = 1024
#: live blocks behind at least COPY_DEPTH tasks in a chain, up to this many bytes from
#: each worker, are copied to the driver when the lineage is pruned, and their lineage is
#: dropped once the copies are in (a recovery puts the copy back). A loop that computes a
#: small array from the one before (a weight vector, a solver's iterate) would otherwise
#: keep the tasks of every iteration: a 2000-step logistic regression held 13,305
#: records (30 MB) for 5 blocks. Shallow blocks are not copied: the driver would hold a
#: second copy of every small tile
COPY_MAX_BYTES = 64 << 10
COPY_DEPTH = 16
#: a piece under 1/SMALL_PIECE of its block is copied out of the object store
SMALL_PIECE = 16
#: task functions pickled to at most this many bytes travel inside the call
INLINE_FN_BYTES = 16 * 1024
#: a block sent from the driver at least this big is copied out of the object store
OWN_MIN_BYTES = 1 << 20

#: seconds a death Ray reported may take to show in the control store
#: (:meth:`RayBackend._dead_workers`)
DEATH_NOTICE_S = 10.0
#: seconds a replacement worker may take to start
START_TIMEOUT_S = 120
#: seconds to wait for the process of a worker the driver stopped to be gone
STOP_WAIT_S = 10.0

#: errors that mean a worker (or an object it owned) is gone, not a bug in user code
LOSS_ERRORS = (
    ray.exceptions.RayActorError,
    ray.exceptions.ObjectLostError,
    ray.exceptions.OwnerDiedError,
    channel.PeerLost,
    BlockMissing,
)


class StopFlag:
    """How many times the driver cancelled its workers' work (:meth:`RayBackend.cancel`),
    in shared memory (a file of the driver's session directory,
    :mod:`~spartan.backend.session_files`): a worker on the driver's host reads it
    before each task and skips a task sent before the latest cancel. A call queued at an
    actor cannot be reached any other way: Ray runs an actor's calls one at a time, in
    order.

    >>> flag = StopFlag.make()          # the driver's (None without shared memory)
    >>> StopFlag.attach(flag.path).count()  # a worker's
    0
    >>> flag.close()
    """

    def __init__(self, path: str, count: np.ndarray, owner: bool = False) -> None:
        self.path, self._count = path, count
        self._removal = (
            weakref.finalize(self, shared_output.unlink_quietly, path) if owner else None
        )

    @classmethod
    def make(cls, files: session_files.SessionDir | None = None) -> StopFlag | None:
        """A new flag in the session directory ``files`` (default: this process's)."""
        if not os.path.isdir(shared_output.SHM_DIR):
            return None
        try:
            files = files if files is not None else session_files.default()
            path, fd = files.new_file("stop", 8)
        except OSError:
            return None
        try:
            return cls(path, np.frombuffer(mmap.mmap(fd, 8), np.int64), owner=True)
        except OSError:
            shared_output.unlink_quietly(path)
            return None
        finally:
            os.close(fd)

    @classmethod
    def attach(cls, path: str | None) -> StopFlag | None:
        """The flag at ``path``; None without one, or where it is not on this host."""
        if path is None:
            return None
        try:
            fd = session_files.open_own(path)
        except OSError:
            return None
        try:
            return cls(path, np.frombuffer(mmap.mmap(fd, 8, prot=mmap.PROT_READ), np.int64))
        except (OSError, ValueError):  # (a file shorter than a count)
            return None
        finally:
            os.close(fd)

    def count(self) -> int:
        return int(self._count[0])

    def raise_to(self, count: int) -> None:
        self._count[0] = count

    def close(self) -> None:
        if self._removal is not None:
            self._removal()


@dataclass(frozen=True)
class Post:
    """A batch step: write ``block[src]`` as the letter at ``path``
    (:meth:`RayWorker.post`), after the owner's tasks before it. With ``apart`` (at most
    one, the batch's last step) a piece the letter cannot carry is the call's second
    return, whose ref its reader holds; without, it is spilled. ``reader``: the process
    id of the worker that reads it, whose doorbell the owner rings."""

    path: str
    key: Key
    src: tuple
    perm: tuple[int, ...] | None
    apart: bool = True
    reader: int | None = None

    def fields(self) -> tuple:
        """:meth:`RayWorker.post`'s arguments (``dataclasses.astuple`` deep-copies)."""
        return self.path, self.key, self.src, self.perm, self.apart, self.reader


class RayWorker(Worker):
    """:class:`Worker` as a Ray actor: remote pieces arrive as resolved arguments."""

    #: this worker's count of finished calls on the driver's board (None: not counted)
    _slot: call_board.Slot | None = None
    #: the driver's count of cancels (None: not on the driver's host, nothing skipped)
    _stop: StopFlag | None = None
    #: tasks skipped since the driver last asked (:meth:`unmade`)
    _skipped = 0

    def __init__(
        self,
        index: int,
        device: str = "cpu",
        keep_freed: int | None = 0,
        peers: int = 1,
        board: str | None = None,
        stop: str | None = None,
        files: session_files.Handle | None = None,
        running_board: str | None = None,
    ) -> None:
        """``keep_freed``: bytes of freed memory kept for reuse (None: the default for
        ``peers`` workers on this node); see :mod:`spartan.backend.heap`. ``board``: the
        path of the driver's :class:`~call_board.CallBoard`, where this worker counts
        its finished task calls (runs and puts) if it is on the driver's host; ``stop``:
        that of its :class:`StopFlag`; ``files``: the driver's session directories and
        the token its letters are checked with (:mod:`~spartan.backend.session_files`);
        ``running_board``: the path of the driver's :class:`~running.RunningBoard`, where
        this worker notes the user function it runs (if it is on the driver's host)."""
        super().__init__(index, ray.get_runtime_context().get_node_id(), device)
        keep_freed_memory(default_keep(peers) if keep_freed is None else keep_freed)
        session_files.join(files)
        channel.doorbell()  # there before any letter for this worker is posted
        self._slot = call_board.Slot.attach(board, index)
        self._stop = StopFlag.attach(stop)
        running.watch_exits(running.RunningSlot.attach(running_board, index))
        self._finished_call()  # the start counts: the driver sees the slot works

    def _finished_call(self) -> None:
        if self._slot is not None:
            self._slot.tick()

    def run_task(self, spec: bytes, *passed: Any) -> Any:
        """One task. Its arguments, in order: its function (pickled, or put), then each
        remote piece: the data, the :class:`~channel.Letter` it comes in, or (where
        ``whole`` says so) the whole block in this node's object store, which this worker
        cuts the piece from. The spec holds those Ray does not pass (``passed``,
        :func:`_split`). ``sent``: how many cancels the driver had made when it sent
        the task (:meth:`_skips`); ``seq``: its number in the driver's lineage."""
        try:
            (inline, inputs, outputs, want_result, nodes, tag, whole, land, sent, seq) = (
                pickle.loads(spec)
            )
            _running_task(seq)
            fn, *remote = _joined(inline, passed)
            remote = self._received(inputs, remote, whole)
            if self._skips(sent):
                return self._skip(outputs)
            with cancel_check(lambda: self._skips(sent)):
                result = self._run_sent(fn, inputs, outputs, want_result, remote, nodes, tag)
            return self._landed(result, land)
        finally:
            self._finished_call()

    def _landed(self, result: Any, land: tuple[str, bytes] | None) -> Any:
        """``result`` of a task, after writing what it made of a fetched result into
        the driver's landing zone, where ``land`` (path, pickled region) says so: in the
        task's own call, not one behind it (~1 ms of Ray's between calls)."""
        if land is None or isinstance(result, TaskFailed):
            return result
        return self.write_shared(*land)

    def _received(
        self, inputs: Sequence[Any], remote: Sequence[Any], whole: Sequence[bool]
    ) -> tuple[Any, ...]:
        """A task's remote pieces from what came: letters read (every one, even after
        a failed piece: none is left behind), and pieces cut from the whole blocks
        (where ``whole`` says so) in this node's object store."""
        remote = tuple(_open(part) if isinstance(part, channel.Letter) else part for part in remote)
        if not any(whole):
            return remote
        pieces = remote_pieces(self.index, inputs)
        return tuple(_cut(part, p) if w else part for part, p, w in zip(remote, pieces, whole))

    def post(
        self,
        path: str,
        key: Key,
        src: tuple,
        perm: tuple[int, ...] | None,
        apart: bool = True,
        reader: int | None = None,
    ) -> Any:
        """Write ``block[src]`` as the letter at ``path`` for a reader on this host
        (:mod:`spartan.backend.channel`), then ring the doorbell of process ``reader``.
        With ``apart``, a piece over ``channel.MAX_BYTES``, or one the letter had no
        room for, is returned instead (into the object store, where the reader maps it)
        and the letter left empty; without, it is spilled. An error getting or passing
        the piece goes to the reader, whose task re-raises it. Never raises: a reader
        waits for this."""
        try:
            return self._post(path, key, src, perm, apart)
        finally:
            if reader is not None:
                channel.ring(reader)

    def _post(
        self, path: str, key: Key, src: tuple, perm: tuple[int, ...] | None, apart: bool
    ) -> Any:
        try:
            part = self.get_piece(key, src, perm)
        except Exception as error:  # noqa: BLE001
            part = TaskFailed(error.with_traceback(None))
        if not apart:
            try:
                channel.post(path, part, spill=True)
            except Exception as error:  # noqa: BLE001 -- no pickler or no room for it
                channel.post(path, TaskFailed(error.with_traceback(None)))
            return None
        if nbytes_of(part) > channel.MAX_BYTES:
            channel.post_apart(path)
            return part
        return None if channel.post(path, part) else part

    def _run_sent(self, fn: Callable[..., Any] | bytes, inputs, outputs, *rest: Any) -> Any:  # noqa: ANN001
        """:meth:`Worker.run` for a function as sent (small ones travel pickled); one that
        cannot be unpickled here fails its task like a raising function, not the call."""
        if isinstance(fn, bytes):
            try:
                fn = pickle.loads(fn)
            except Exception as error:  # noqa: BLE001 -- e.g. a module this node lacks
                failed = TaskFailed(error.with_traceback(None))
                for key in outputs:
                    self._set(key, failed)
                return failed
        return self.run(fn, inputs, outputs, *rest)

    def run_batch(self, spec: bytes, *passed: Any) -> Any:
        """Tasks that read this worker's blocks, letters and put blocks, and deletes (key
        lists), in order; returns the first task's failure (later readers store theirs
        too).
        A task's function is its pickle or the position of an argument; its remote
        pieces are arguments too (given by position): letters, and blocks put from the
        driver (resolved by Ray, once for the batch; those Ray passes are ``passed``,
        :func:`_split`). A batch ending with a :class:`Post` that may send its piece
        apart returns the failure and what that post returns. The spec may end with the
        count of cancels when it was sent: tasks sent before a later cancel are skipped
        (:meth:`_skips`), but their posts and deletes are still made."""
        failed, apart, done = None, None, 0
        steps, inline, *sent = pickle.loads(spec)
        sent = sent[0] if sent else None
        args = _joined(inline, passed)
        try:
            for step in steps:
                if isinstance(step, list):
                    self.delete(step)
                elif isinstance(step, Post):
                    posted = self.post(*step.fields())
                    apart = posted if step.apart else apart
                else:
                    fn, inputs, outputs, tag, at, whole, land, *seq = step
                    _running_task(seq[0] if seq else -1)
                    fn = fn if isinstance(fn, bytes) else args[fn]
                    remote = self._received(inputs, [args[i] for i in at], whole)
                    if self._skips(sent):
                        result = self._skip(outputs)
                    else:
                        with cancel_check(lambda: self._skips(sent)):
                            result = self._run_sent(fn, inputs, outputs, False, remote, (), tag)
                        result = self._landed(result, land)
                    if failed is None and isinstance(result, TaskFailed):
                        failed = result
                done += 1
        finally:
            # a step that raised past its task (not an Exception) must not leave the posts
            # after it unwritten: their readers, on other workers, wait for the letters
            for step in steps[done:]:
                if isinstance(step, Post):
                    self.post(*step.fields())
            self._finished_call()
        return (failed, apart) if any(_sends_apart(step) for step in steps) else failed

    def _skips(self, sent: int | None) -> bool:
        """Whether a task sent after ``sent`` cancels was cancelled since (checked as each
        task starts: one already running finishes)."""
        return sent is not None and self._stop is not None and sent < self._stop.count()

    def _skip(self, outputs: Sequence[Key]) -> TaskFailed:
        """A cancelled task: its outputs hold :class:`TaskCancelled` instead."""
        self._skipped += 1
        failed = TaskFailed(TaskCancelled("its evaluation was interrupted"))
        for key in outputs:
            self._set(key, failed)
        return failed

    def unmade(self, keys: bytes) -> tuple[list[Key], int]:
        """Of ``keys`` (pickled), those missing here or left by a cancelled task; and how
        many tasks this worker skipped since the last call. Calls to an actor run in
        order: this one answers once the calls before it are done."""
        store = self.store
        out = [k for k in pickle.loads(keys) if k not in store or cancelled(store[k])]
        skipped, self._skipped = self._skipped, 0
        return out, skipped

    def put(self, key: Key, value: Any) -> None:
        """:meth:`Worker.put` of a block sent from the driver, into this worker's own
        memory where that pays (:func:`_owned`)."""
        try:
            super().put(key, _owned(value) if self.device == "cpu" else value)
        finally:
            self._finished_call()

    def delete(self, keys: Sequence[Key] | bytes) -> None:
        """:meth:`Worker.delete`; the driver sends the keys pickled."""
        super().delete(pickle.loads(keys) if isinstance(keys, bytes) else keys)

    def write_shared(self, path: str, region: bytes) -> TaskFailed | None:  # type: ignore[override]
        """:meth:`Worker.write_shared` of the region the driver sends pickled."""
        return super().write_shared(path, pickle.loads(region))

    def pid(self) -> int:
        return os.getpid()

    def small_copies(self, keys: Sequence[Key], limit: int) -> dict[Key, Any]:
        """Host copies of the blocks of ``keys`` held here, while they come to at most
        ``limit`` bytes in all; blocks not here (deleted, or not made yet), failed ones
        and those that are not arrays of plain data are left out."""
        out: dict[Key, Any] = {}
        for key in keys:
            block = self.store.get(key)
            dtype = getattr(block, "dtype", None)  # (None: not here, or not an array)
            if dtype is None or dtype.hasobject or block.nbytes > limit:
                continue
            limit -= block.nbytes
            out[key] = to_host(block)
        return out


def _running_task(seq: int) -> None:
    """Task ``seq`` runs now in this worker (its user code is noted under it on the
    driver's running board, :mod:`~spartan.backend.running`)."""
    slot = running.current()
    if slot is not None:
        slot.task = seq


def _split(args: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """A call's arguments as (those that go inside its pickled spec, None where Ray
    passes one; those Ray passes): object refs, which Ray resolves, and letters holding
    one (a ref must travel through Ray's own serializer). Ray serializes each argument
    of a call apart: a letter took ~90 us so, ~10 us inside the spec. (No argument is
    None.)"""
    by_ray = [
        isinstance(a, ray.ObjectRef) or (isinstance(a, channel.Letter) and a.apart is not None)
        for a in args
    ]
    inline = [None if r else a for a, r in zip(args, by_ray)]
    return inline, [a for a, r in zip(args, by_ray) if r]


def _joined(inline: Sequence[Any], passed: Sequence[Any]) -> list[Any]:
    """The arguments :func:`_split` split, in their order again."""
    rest = iter(passed)
    return [next(rest) if a is None else a for a in inline]


def _sends_apart(step: Any) -> bool:
    """Whether batch step ``step`` is a post that may return its piece (a batch with one
    has two returns)."""
    return isinstance(step, Post) and step.apart


def _open(letter: channel.Letter) -> Any:
    """A letter's piece, or a :class:`TaskFailed` (which fails the task reading it): when
    its writer died the driver then recovers, as from a lost Ray object. A piece sent
    apart is the value of the writer's ``post`` call (``letter.apart``, its ref). Never
    raises: the rest of a batch must still run."""
    try:
        part = letter.receive()
        if part is not channel.SentApart:
            return part
        if letter.apart is None:  # (its writer could not even post the error)
            raise OSError("no room in shared memory to pass a piece between workers")
        return ray.get(letter.apart)
    except Exception as error:  # noqa: BLE001
        return TaskFailed(_unwrap(error).with_traceback(None))


def _owned(value: Any) -> Any:
    """``value``, copied into this process's memory if it is a big array that lies,
    read-only, in the object store, and the host keeps a quarter of its memory free.

    The store's shared memory comes in 4 KB pages; NumPy's own arrays get huge pages.
    Two workers streaming a GEMV's 16 tiles of 64 MB each at once took 77-82 ms from
    the store, 68-72 ms from copies. The store's copy stays: the driver holds it to
    rebuild the block after a failure (and Ray spills it to disk when the store fills).
    """
    if not isinstance(value, np.ndarray) or value.flags.writeable or value.nbytes < OWN_MIN_BYTES:
        return value
    memory = psutil.virtual_memory()
    if memory.available - value.nbytes < memory.total // 4:
        return value
    return value.copy(order="K")


def _cut(block: Any, p: Piece) -> Any:
    """Piece ``p`` of a whole block from the object store: a view, or a copy when it is
    a small part (a task that passes it through would otherwise pin the whole block)."""
    part = take(block, p.src, p.perm)
    small = hasattr(part, "nbytes") and part.nbytes * SMALL_PIECE < getattr(block, "nbytes", 0)
    return part.copy() if small else part


def _unwrap(error: BaseException) -> BaseException:
    """The user's exception inside a Ray task error, not Ray's wrapper."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error


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


def worker_slots(num_workers: int | None, cpus: float, gpus: float) -> list[str]:
    """The Ray node id of each worker: every node offering the resources takes a share
    in proportion to its capacity; workers of one node get consecutive indices.

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
    return sorted(slots[:n], key=[node for node, _ in nodes].index)


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


class RayBackend(Master):
    """Workers as Ray actors spread over the cluster's nodes."""

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
        self.slots = worker_slots(num_workers, num_cpus_per_worker, num_gpus_per_worker)
        self._worker_env = worker_env(os.environ)
        self.nworkers = len(self.slots)
        #: the private directories of the files shared with the workers on this host
        self._files = session_files.SessionDir.make()
        #: where the workers on this host count their finished calls, those that do,
        #: and how many calls (their start included) each was sent (see :meth:`_busy`)
        self._board = call_board.CallBoard.make(self.nworkers, self._files)
        self._on_board: set[int] = set()
        self._calls = [0] * self.nworkers
        #: the cancels made so far (each task is sent with their count), shared with the
        #: workers on this host; the blocks cancelled tasks left unmade, by (key, worker),
        #: made again before they are read (see :meth:`cancel`)
        self._stop = StopFlag.make(self._files)
        self._cancels = 0
        #: where the workers on this host note the user function they run (None: no
        #: shared memory), read after a death or a timeout (:mod:`~spartan.backend.running`)
        self._running = running.RunningBoard.make(self.nworkers, self._files)
        #: workers known dead and not replaced yet (an evaluation gave up, or stopped
        #: them): the next flush, wait or fetch replaces them (:meth:`_replace_lost`)
        self._lost: set[int] = set()
        #: per task (lineage seq): how many times its worker died while it ran, in the
        #: current wait (a task that kills its worker twice is blamed, :meth:`_blame`)
        self._suspects: dict[int, int] = {}
        #: the last seq logged when the last wait ended (later ones are this evaluation's)
        self._evaluation_from = -1
        self._unmade: set[tuple[Key, int]] = set()
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
        #: per worker: tasks reading only its blocks, letters and blocks put from the
        #: driver (Records), and deletes (key lists), not sent yet
        self._held: dict[int, list[Record | list[Key]]] = {}
        #: the remote pieces of held tasks, by sequence number: each a letter, or the
        #: ref of a put block (whole), as :meth:`_get_piece` gave them
        self._held_pieces: dict[int, list[tuple[Any, bool]]] = {}
        #: workers whose held calls are being sent (see :meth:`_release`)
        self._sending: set[int] = set()
        #: the owner of each held post, by letter path (see :meth:`_get_piece`)
        self._held_posts: dict[str, int] = {}
        #: per worker: a future of the last call sent to it (see :meth:`_busy`)
        self._last: dict[int, Any] = {}
        #: the landing write each queued task makes after it (a pickled region of the
        #: zone's result it made pieces of), by sequence number (see :meth:`_land_later`)
        self._lands: dict[int, tuple[str, bytes]] = {}
        #: the region, zone path and piece positions the next wait finds landed already
        self._landed: tuple[Region, str, frozenset[int]] | None = None
        #: :meth:`_worker_stats_later` promises not asked of the workers yet, with
        #: the tags each wants
        self._stats_wanted: list[tuple[list[ray.ObjectRef], Collection[Any] | None]] = []
        self._fn_cache: dict[int, tuple[Any, bytes | ray.ObjectRef]] = {}
        self._blob_cache: dict[bytes, ray.ObjectRef] = {}
        self.recoveries = 0
        self._prune_at = PRUNE_MIN
        #: copies of small blocks asked of the workers: the call, and the workers
        #: holding each key (:meth:`_ask_copies`)
        self._copies_asked: list[tuple[ray.ObjectRef, dict[Key, list[int]]]] = []
        self.driver_node = ray.get_runtime_context().get_node_id()
        quiet_worker_deaths()
        self._landing = shared_output.LandingZone(self._files)
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

    # ---- transport --------------------------------------------------------------------
    def _fn_arg(self, fn: Callable[..., Any]) -> bytes | ray.ObjectRef:
        """A task function as sent: its pickle when small (an object-store argument
        costs the actor a fetch, about 0.1 ms each), else an ObjectRef put once for all
        the tasks of one operator and for equal functions of later operators (each loop
        iteration builds new but equal ones)."""
        hit = self._fn_cache.get(id(fn))
        if hit is not None and hit[0] is fn:
            return hit[1]
        blob = _dumps_fn(fn)
        arg: bytes | ray.ObjectRef = blob
        if len(blob) > INLINE_FN_BYTES:
            digest = hashlib.blake2b(blob, digest_size=16).digest()
            arg = self._blob_cache.get(digest)
            if arg is None:
                arg = self._blob_cache[digest] = ray.put(fn)
        if len(self._fn_cache) >= 256:
            self._fn_cache.clear()
        if len(self._blob_cache) >= 1024:
            self._blob_cache.clear()
        self._fn_cache[id(fn)] = (fn, arg)
        return arg

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
                "fn": self._fn_arg(fn),
                "inputs": tuple(inputs),
                "want_result": want_result,
                "tag": self.tag,
            }
        )
        self._queued.append(rec)
        self._logged = rec.seq
        return rec

    def flush(self, fetch: Sequence[Region] = ()) -> None:
        if fetch:
            self._land_later(fetch)
        queued, self._queued = self._queued, []
        if self._lost and queued and not self._cancelling:
            # workers an earlier evaluation gave up on: replaced before anything is sent
            # (if that fails, the blocks of ``queued`` are among those made when read)
            self._replace_lost(queued)
        if self._unmade and not self._cancelling:
            self._remake(pair for rec in queued for pair in rec.needs)
        made_here = {(key, rec.worker) for rec in queued for key in rec.outputs}
        remote = {
            rec.seq: remote_pieces(rec.worker, rec.inputs) for rec in queued if rec.fn is not None
        }
        # 1. pieces of blocks made before: requested ahead of the tasks
        early = {
            rec.seq: [
                None if (p.key, p.worker) in made_here else self._get_piece(p, rec)
                for p in remote[rec.seq]
            ]
            for rec in queued
            if rec.fn is not None
        }
        # 2. the tasks in order; pieces made here as soon as their producers are sent
        # (``later``: by owner, a heap by producer)
        later: dict[int, list[tuple[int, int, int, Record]]] = {}
        for rec in queued:
            for n, got in enumerate(early.get(rec.seq, ())):
                if got is None:
                    p = remote[rec.seq][n]
                    made = self.lineage.made_by[(p.key, p.worker)]
                    later.setdefault(p.worker, []).append((made.seq, rec.seq, n, rec))
        for pending in later.values():
            heapq.heapify(pending)
        for rec in queued:
            if rec.fn is None or rec.want_result:
                self._release(rec.worker)
                self._request_made(rec, later.get(rec.worker, []), remote, early)
                self._send(rec, remote.get(rec.seq), early.get(rec.seq))
                continue
            if remote[rec.seq]:
                self._request_made(rec, later.get(rec.worker, []), remote, early)
                got = self._pieces(rec, remote[rec.seq], early[rec.seq])
                # a piece some other call makes would hold back the whole batch; a put
                # block is there already (re-tiling an array from the driver sent 8
                # tasks apart, each waiting ~1.5 ms for its 4 blocks to be resolved)
                if not all(whole or isinstance(r, channel.Letter) for r, whole in got):
                    self._release(rec.worker)
                    self._send(rec, remote[rec.seq], got)
                    continue
                self._held_pieces[rec.seq] = got
            self._held.setdefault(rec.worker, []).append(rec)
        # 3. idle workers get their held tasks now; busy ones collect more
        for w, held in list(self._held.items()):
            if len(held) >= HELD_MAX or not self._busy(w):
                self._release(w)  # (a no-op if a nested flush sent them already)

    def _check_board(self, workers: Iterable[int]) -> None:
        """Note which of ``workers``, just started (and answering), count their calls
        on the board: a worker's start counts one."""
        for w in workers:
            on = self._board is not None and self._board.finished(w) == 1
            self._calls[w] = int(on)
            if on:
                self._on_board.add(w)
            else:
                self._on_board.discard(w)

    def _busy(self, worker: int) -> bool:
        """Whether ``worker`` may still be running the last call of tasks sent to it
        (deletes do not count: :meth:`_send_delete`): by the board where the worker
        counts its calls (:mod:`~spartan.backend.call_board`), else by the future of
        that call."""
        if worker in self._on_board:
            return self._board.finished(worker) < self._calls[worker]
        last = self._last.get(worker)
        return last is not None and not last.done()

    def _sent(self, worker: int, ref: ray.ObjectRef) -> None:
        """``ref``'s call is now ``worker``'s last. A worker on another host is polled
        by its future, made as it is sent (one made later reports a finished call as
        pending until its callback runs): ``ray.wait`` with no timeout costs ~80 us on
        a pending ref, and CG polled ~350 times."""
        self._calls[worker] += 1
        if worker not in self._on_board:
            self._last[worker] = ref.future()

    def _request_made(
        self,
        rec: Record,
        pending: list[tuple[int, int, int, Record]],
        remote: dict[int, list[Piece]],
        early: dict[int, list[Any]],
    ) -> None:
        """Before ``rec`` goes to its worker, request the pieces later readers need from
        that worker's blocks made by tasks sent already (``pending``: a heap by the
        producer's sequence number): in an exchange each worker would otherwise serve
        the other's piece only after its own reader got one."""
        while pending and pending[0][0] < rec.seq:
            _, seq, n, reader = heapq.heappop(pending)
            if seq > rec.seq:  # (an earlier reader requested it when it was sent)
                early[seq][n] = self._get_piece(remote[seq][n], reader)

    def _release(self, worker: int) -> Any:
        """Send the tasks and deletes held for ``worker``, as one call when several;
        the ref of the return of a post they end with, if any."""
        held = self._held.pop(worker, None)
        if not held:
            return None
        self._sending.add(worker)  # a delete the garbage collector makes meanwhile waits
        try:
            return self._send_held(worker, held)
        finally:
            self._sending.discard(worker)

    def _send_held(self, worker: int, held: list[Record | list[Key] | Post]) -> Any:
        """Send ``held`` (any number of held posts, at most one that may send its piece
        apart, last); the ref of that post's return, if any."""
        for item in held:
            if isinstance(item, Post):  # sent now: no longer held
                self._held_posts.pop(item.path, None)
        if len(held) == 1:
            item = held[0]
            if isinstance(item, Record):
                self._send(item, early=self._held_pieces.pop(item.seq, None))
            elif isinstance(item, Post):
                ref = self.actors[worker].post.remote(*item.fields())
                return ref if item.apart else None
            else:
                self._send_delete(worker, item)
            return None
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
                pieces = self._held_pieces.pop(item.seq, ())
                at = tuple(position(arg) for arg, _ in pieces)
                whole = tuple(w for _, w in pieces)
                land = self._lands.pop(item.seq, None)
                steps.append((fn, item.inputs, item.outputs, item.tag, at, whole, land, item.seq))
            else:
                steps.append(item)
        self._release_posts(args)
        call = self.actors[worker].run_batch
        apart = any(_sends_apart(item) for item in held)
        inline, passed = _split(args)
        ref = (call.options(num_returns=2) if apart else call).remote(
            pickle.dumps((steps, inline, self._cancels), protocol=5), *passed
        )
        ref, apart = ref if apart else (ref, None)
        self._sent(worker, ref)
        self._inflight.extend((ref, item) for item in held if isinstance(item, Record))
        return apart

    def release_held(self) -> None:
        self.flush()
        for w in list(self._held):
            self._release(w)

    def _get_piece(self, p: Piece, reader: Record) -> tuple[ray.ObjectRef | channel.Letter, bool]:
        """What task ``reader`` gets for piece ``p``, and whether it is the whole block.

        A block sent from the driver lies in the object store, where a reader on the
        same node maps it without a copy (the put must precede the reader: one logged
        after it, under the same key, is not yet what the reader may see). Else the
        block's owner copies the piece: for a reader on its node, the driver's host,
        into a letter (:mod:`spartan.backend.channel`), which the reader waits for
        itself, unless the piece is known to be over ``channel.MAX_BYTES``; else into
        the object store, whose ref Ray resolves at the driver before the reader's task
        is sent on."""
        made = self.lineage.made_by.get((p.key, p.worker))
        near = self.nodes[p.worker] == self.nodes[reader.worker]
        put = made is not None and isinstance(made.value, ray.ObjectRef)  # (not a copy)
        if put and made.seq < reader.seq and near:
            return made.value, True
        size = self._piece_bytes(p, reader)
        # (letters live in the driver's session directory: both workers must be on its
        # host and able to use it, as their counts on the board in it show)
        mail = self._mailbox is not None and {p.worker, reader.worker} <= self._on_board
        if near and mail and size <= channel.MAX_BYTES:
            # the post joins the owner's held tasks (the block may come from one of them).
            # A piece of known size is never sent apart: while the owner is busy, its
            # post waits there for its later tasks (one call for many iterations of a
            # solver), until the owner is idle or the reader is sent
            # (:meth:`_release_posts`). Else the post ends a call sent now, and a piece
            # sent apart is that call's second return, there once the post is done.
            path = self._mailbox.name()
            post = Post(path, p.key, p.src, p.perm, size == 0, self.pids[reader.worker])
            self._held.setdefault(p.worker, []).append(post)
            if not post.apart and self._busy(p.worker):
                self._held_posts[path] = p.worker
                return channel.Letter(path, self.pids[p.worker]), False
            apart = self._release(p.worker)
            return channel.Letter(path, self.pids[p.worker], apart), False
        self._release(p.worker)  # the block may come from a held task
        return self.actors[p.worker].get_piece.remote(p.key, p.src, p.perm), False

    def _release_posts(self, letters: Sequence[Any]) -> None:
        """Send the held posts of ``letters`` (a reader's arguments), with the tasks their
        owners hold: a reader sent must not wait for the driver."""
        for letter in letters:
            owner = (
                self._held_posts.get(letter.path) if isinstance(letter, channel.Letter) else None
            )
            # (an owner being sent already holds the post in what it is sending)
            if owner is not None and owner not in self._sending:
                self._release(owner)

    def _piece_bytes(self, p: Piece, reader: Record) -> int:
        """Bytes of ``reader``'s remote piece ``p``; 0 for a whole stored object whose
        region does not say its size (:attr:`Region.nbytes`). The sizes of one reader's
        pieces are worked out together, once (its pieces are asked for one after
        another)."""
        if self._sizes[0] is not reader:
            self._sizes = (reader, _remote_piece_bytes(reader.worker, reader.inputs))
        return self._sizes[1].get(id(p), 0)

    def _pieces(
        self, rec: Record, remote: list[Piece], early: list[Any] | None
    ) -> list[tuple[ray.ObjectRef | channel.Letter, bool]]:
        """What task ``rec`` gets for each of its ``remote`` pieces (:meth:`_get_piece`),
        where ``early`` does not hold it already (None)."""
        early = early or [None] * len(remote)
        return [e if e is not None else self._get_piece(p, rec) for p, e in zip(remote, early)]

    def _send(
        self,
        rec: Record,
        remote: list[Piece] | None = None,
        early: list[tuple[ray.ObjectRef, bool] | None] | None = None,
    ) -> ray.ObjectRef:
        """Send one put or task; ``early`` holds its remote pieces requested already
        (:meth:`_get_piece`; None where not)."""
        actor = self.actors[rec.worker]
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
            land = self._lands.pop(rec.seq, None)
            spec = pickle.dumps(
                (
                    inline,
                    rec.inputs,
                    rec.outputs,
                    rec.want_result,
                    nodes,
                    rec.tag,
                    whole,
                    land,
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
        self._suspects = {}
        if self._lost:
            self._replace_lost()  # first: nothing below is sent to a dead worker
        if self._unmade and fetch:
            self._remake(self._held_by((p.key, p.worker) for r in fetch for p in r.pieces))
        self.release_held()
        big = _biggest(fetch)
        landed, self._landed = self._landed, None
        attempt = rounds = 0
        while True:
            pending, self._inflight = self._inflight, []
            landing = self._landing_path(fetch[big]) if big is not None else None
            # pieces their tasks wrote into the zone (not after a recovery: the replays
            # of those tasks write nothing there)
            skip = (
                landed[2]
                if attempt == 0
                and landed is not None
                and landed[0] is fetch[big]
                and landed[1] == landing
                else frozenset()
            )
            refs: list[Any] = []
            try:
                refs = list(dict.fromkeys(ref for ref, _ in pending))
                # calls to an actor run in order: these follow its tasks, in one round trip
                if self.device == "gpu":
                    refs += [a.sync.remote() for a in self.actors]
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
                self._settled = self._logged
                out = []
                for i, (region, cs) in enumerate(zip(fetch, calls)):
                    if i == big and landing is not None:
                        lend = config.landing_zone_lends
                        out.append(self._landing.read(region.shape, np.dtype(region.dtype), lend))
                    else:
                        out.append(self._assembled(region, values[at : at + len(cs)]))
                    at += len(cs)
                self._seen.check(fetch, out)
                return out
            except LOSS_ERRORS as error:
                loss = error  # (recovered below, outside the handler: a loss there is its own)
            except BaseException as error:
                if landing is not None:  # writes may still be on their way: a new zone
                    self._landing.close()
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
                    self._landing.close()
                raise

    def _landing_path(self, region: Region) -> str | None:
        """The landing zone's path when ``region`` comes through it: big enough, plain
        data, and every piece on the driver's host (:mod:`spartan.backend.shared_output`)."""
        nbytes = _region_bytes(region)
        if (
            nbytes < shared_output.MIN_BYTES
            or np.dtype(region.dtype).hasobject
            or self.device != "cpu"
            or any(
                self.nodes[self.owner(p.key, p.worker)] != self.driver_node for p in region.pieces
            )
        ):
            return None
        return self._landing.reserve(nbytes, config.landing_zone_bytes)

    def _land_later(self, fetch: Sequence[Region]) -> None:
        """Have the queued tasks that make pieces of the result the next wait lands
        (:meth:`wait`) write them into the landing zone as they finish."""
        big = _biggest(fetch)
        region = fetch[big] if big is not None else None
        landing = self._landing_path(region) if region is not None else None
        if region is None or landing is None:
            return
        queued = {rec.seq for rec in self._queued if rec.fn is not None and not rec.want_result}
        by_maker: dict[int, list[int]] = {}
        for n, p in enumerate(region.pieces):
            maker = self.lineage.made_by.get((p.key, self.owner(p.key, p.worker)))
            if maker is not None and maker.seq in queued:
                by_maker.setdefault(maker.seq, []).append(n)
        for seq, at in by_maker.items():
            pieces = tuple(region.pieces[n] for n in at)
            part = Region(region.shape, region.dtype, pieces)
            self._lands[seq] = (landing, pickle.dumps(part, protocol=5))
        self._landed = (region, landing, frozenset(n for at in by_maker.values() for n in at))

    def results(self, handles: Sequence[Any]) -> list[Any]:
        self.wait()  # rebuilds anything lost first
        return self._get([self._refs.pop(h.seq) for h in handles])

    def fetch_many(self, reqs: Sequence[tuple[Key, int | None, tuple | None]]) -> list[Any]:
        deadline = _deadline(config.task_timeout)
        self._suspects = {}
        if self._lost:
            self._replace_lost()
        if self._unmade:
            self._remake(self._held_by((k, w) for k, w, _ in reqs))
        self.release_held()
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
        mine: dict[int, list[Piece]] = {}
        for n, p in enumerate(region.pieces):
            if n not in skip:
                mine.setdefault(self.owner(p.key, p.worker), []).append(p)
        return [
            self.actors[w].write_shared.remote(
                landing, pickle.dumps(Region(region.shape, region.dtype, tuple(ps)), protocol=5)
            )
            for w, ps in mine.items()
        ]

    def _piece_calls(self, reqs: Sequence[tuple[Key, int | None, tuple | None]]) -> list[Any]:
        return [self.actors[self.owner(k, w)].fetch.remote(k, idx) for k, w, idx in reqs]

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

    # ---- recovery ----------------------------------------------------------------------------
    # Every path keeps these true, whatever dies when: a block in :attr:`where` is on its
    # worker, or is in :attr:`_unmade` (made again before it is read, :meth:`_remake`), or
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
        pending, self._inflight = self._inflight, []
        queued, self._queued = self._queued, []
        held = [item for items in self._held.values() for item in items]
        unsent = {rec.seq for rec in (*flushing, *queued, *held) if isinstance(rec, Record)}
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
        self._lost -= dead
        gone = dead
        # the blocks dead workers held, but those an interrupted evaluation left
        # unmade: they are made when read, not now
        made = self.lineage.made_by
        missing = {
            (k, w)
            for k, ws in self.where.items()
            for w in ws
            if w in gone
            and (k, w) not in self._unmade
            and getattr(made.get((k, w)), "seq", None) not in unsent
        }
        missing |= {(k, w) for k, w in absent if k in self.where}
        # interrupted tasks that read from a dead worker, or from such a task (a reader
        # failed for want of its piece, and so did the tasks after it that read its
        # block, deleted since or not)
        failed: set[tuple[Key, int]] = set(absent)
        for _, rec in sorted(pending, key=lambda item: item[1].seq):
            if rec.worker in gone or any(w in gone or (k, w) in failed for k, w in rec.needs):
                failed.update((k, rec.worker) for k in rec.outputs)
        # outputs deleted meanwhile are not wanted (their lineage may be pruned)
        missing.update((k, w) for k, w in failed if k in self.where)
        known = set(self.where)

        def exists(key: Key, w: int) -> bool:
            pair = (key, w)
            return (
                key in known
                and w in self.where[key]
                and pair not in missing
                and pair not in self._unmade
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
        superseded = {ref for ref, rec in pending if rec.worker in gone or rec.seq in rerun}
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
        DEATH_NOTICE_S."""
        give_up_at = time.monotonic() + (DEATH_NOTICE_S if wait else 0.0)
        while True:
            dead = {i for i in range(len(self.actors)) if not self._worker_alive(i)}
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
        if pid is not None and self.nodes[i] == self.driver_node and not _process_alive(pid):
            return False
        return _actor_state(self.actors[i]) != "DEAD"

    def _blame(self, dead: set[int], pending: list[tuple[Any, Record]]) -> str | None:
        """Why a user function is to blame for a death in ``dead``, if one is: the
        worker died while running it, and either the function ended the process itself
        (:func:`~spartan.backend.running.watch_exits`) or its task's worker died while
        running it before in this wait. A worker on the driver's host says what user
        code it ran (:mod:`~spartan.backend.running`); of one elsewhere, the oldest of
        its tasks not known finished is taken as the one it was running."""
        for w in sorted(dead):
            seen = None
            if self._running is not None and w in self._on_board:
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
            times = self._suspects[seen.task] = self._suspects.get(seen.task, 0) + 1
            if seen.ended is not None:
                return (
                    f"worker {w} died while running {seen.what}: the function ended its "
                    f"own process ({seen.ended})"
                )
            if times >= 2:
                return f"worker {w} died twice while running {seen.what} (killed or crashed)"
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
        """Drop what is held for dead ``workers``: deletes of blocks gone with them, and
        posts (their readers see the writer dead)."""
        for w in workers:
            for item in self._held.pop(w, ()):
                if isinstance(item, Post):
                    self._held_posts.pop(item.path, None)
            self._last.pop(w, None)

    def _abandon(
        self, dead: Collection[int], pending: list[tuple[Any, Record]], stop_sent: bool = True
    ) -> None:
        """Leave the current evaluation where it is, keeping the session usable: the
        work sent is cancelled (``stop_sent``: skipped where not started, as by
        :meth:`cancel`), the workers ``dead`` are replaced at the next evaluation
        (:attr:`_lost`), and every block of a task not known finished (logged since the
        last wait that ended, or ``pending``) is made again when read."""
        if stop_sent:
            if self._stop is not None:
                self._stop.raise_to(self._cancels + 1)
            self._cancels += 1
        self._lost |= set(dead)
        self._forget_held(dead)
        if self._running is not None:
            for w in dead:
                self._running.reset(w)
        made, settled = self.lineage.made_by, self._settled
        uncertain = {rec.seq for _, rec in pending}
        self._unmade.update(
            (key, w)
            for key, holders in self.where.items()
            for w in holders
            if (rec := made.get((key, w))) is not None
            and (rec.seq > settled or rec.seq in uncertain)
        )
        self._inflight = []
        self._replayed.clear()
        self._lands.clear()
        self._landed = None
        self._refs.clear()
        self._last = {}
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
            while _process_alive(self.pids[w]) and time.monotonic() < give_up_at:
                time.sleep(0.01)

    def _overdue(self, pending: list[tuple[Any, Record]], refs: list[Any]) -> TimeoutError:
        """The evaluation took longer than ``config.task_timeout``: stop the workers
        stuck in user code (else every worker still busy), abandon it (:meth:`_abandon`)
        and return the TimeoutError naming what was still running."""
        ready = set(ray.wait(refs, num_returns=len(refs), timeout=0)[0]) if refs else set()
        busy = {w for w in range(self.nworkers) if self._busy(w)}
        busy |= {rec.worker for ref, rec in pending if ref not in ready}
        busy -= self._lost
        doing: dict[int, str] = {}
        for w in sorted(busy):
            seen = (
                self._running.read(w) if self._running is not None and w in self._on_board else None
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
        ``exists``; how many. WorkerLostError where no task or checkpoint made one."""
        try:
            plan = self.lineage.replay_plan(wanted, exists)
        except LookupError:
            raise WorkerLostError(
                f"spartan: a tile {why} cannot be rebuilt: no task or checkpoint made it"
            ) from None
        self._rerun(plan, known)
        return len(plan)

    def _rerun(self, plan: list[Record], known: Collection[Key]) -> None:
        """Send the tasks of ``plan`` (:meth:`Lineage.replay_plan`) again; ``known``:
        the keys held before."""
        # what is held goes first: a delete of an intermediate that an interrupted
        # recovery rebuilt must not reach its worker after the block is made again
        # there (its readers would find it gone)
        for w in list(self._held):
            self._release(w)
        # intermediates rebuilt for their readers (join updates, fetched copies) were
        # deleted before: they go again once those readers are sent, or they would stay
        rebuilt: dict[int, list[Key]] = {}
        for rec in plan:
            self._replayed.add(rec.seq)
            self._seen.rebuilt(rec.outputs)
            self._send(rec)
            for key in rec.outputs:
                self._unmade.discard((key, rec.worker))
                if key in known:
                    self._record(key, rec.worker)
                else:
                    rebuilt.setdefault(rec.worker, []).append(key)
        for w, keys in rebuilt.items():
            self._delete(w, keys)

    # ---- cancelling -------------------------------------------------------------------------
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
            busy = {w for w in range(len(self.actors)) if self._busy(w)} - self._lost
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
        finally:
            self._cancelling = False
        self._lands.clear()
        self._landed = None
        self._refs.clear()  # (the results the interrupted lowering waited for)
        keys: dict[int, list[Key]] = {}
        for key, holders in self.where.items():
            for w in holders:
                keys.setdefault(w, []).append(key)
        asked = {
            w: a.unmade.remote(pickle.dumps(keys.get(w, []), protocol=5))
            for w, a in enumerate(self.actors)
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
                and w in self._on_board
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
            self._unmade.update((key, w) for key in unmade)
            skipped += n
        if gone:  # replaced at the next evaluation; what was being made, made when read
            self._abandon(gone, [], stop_sent=False)
        self._inflight = []
        self._last = {}  # idle (their futures may not have heard yet)
        self._settled = self._logged
        for w in self._on_board:  # (a call whose sending was interrupted went uncounted)
            self._calls[w] = self._board.finished(w)
        return skipped

    def _held_by(self, reads: Iterable[tuple[Key, int | None]]) -> list[tuple[Key, int]]:
        """``(key, worker)`` of the block each read ``(key, near)`` gets
        (:meth:`~spartan.backend.master.Master.owner`); unknown keys left out."""
        out = []
        for key, near in reads:
            holders = self.where.get(key)
            if holders:
                out.append((key, near if near in holders else holders[0]))
        return out

    def _remake(self, pairs: Iterable[tuple[Key, int]]) -> None:
        """Make again the blocks among ``pairs`` (``(key, worker)``) that cancelled tasks
        left unmade (:meth:`cancel`), by sending the tasks that made them again (and
        those that made their inputs, where they are gone too), before their readers."""
        unmade, where = self._unmade, self.where
        wanted = {pair for pair in pairs if pair in unmade}
        if not wanted:
            return
        # held deletes and posts go first: a rebuilt intermediate must not meet the
        # delete of its first making on the way to its reader
        for w in list(self._held):
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
        if self._unmade:
            for k in keys:
                for w in self.where.get(k, ()):
                    self._unmade.discard((k, w))
        super().delete(keys)
        self._seen.forget(keys)
        # the log would otherwise keep every block's lineage, and every put's data in
        # the object store, for the whole session; pruning is linear in the log, so it
        # runs when put data may be freed or the log has doubled since the last time
        # (grown by PRUNE_MIN, where copies of small blocks cut it the last time)
        if puts or len(self.lineage.made_by) > self._prune_at:
            up = ray.is_initialized() and self.actors  # (a call would start Ray again)
            copied = self._keep_copies() if up else 0
            self.lineage.prune((k, w) for k, ws in self.where.items() for w in ws)
            if up:
                self._ask_copies()
            kept = len(self.lineage.made_by)
            self._prune_at = kept + PRUNE_MIN + (0 if copied else kept)

    def _ask_copies(self) -> None:
        """Ask each worker for copies of its small live blocks behind a chain of at
        least :data:`COPY_DEPTH` tasks (sent or not: a block not made yet is not
        copied), up to :data:`COPY_MAX_BYTES`; :meth:`_keep_copies` takes them at a
        later prune."""
        asked = {key for _, owners in self._copies_asked for key in owners}
        by_worker: dict[int, dict[Key, list[int]]] = {}
        for (key, w), rec in self.lineage.made_by.items():
            holders = self.where.get(key, ())
            if rec.depth >= COPY_DEPTH and key not in asked and w in holders:
                by_worker.setdefault(holders[0], {}).setdefault(key, []).append(w)
        for w, owners in by_worker.items():
            # not a worker's last call for :meth:`_busy` (like a delete: it takes
            # microseconds)
            ref = self.actors[w].small_copies.remote(list(owners), COPY_MAX_BYTES)
            self._copies_asked.append((ref, owners))

    def _keep_copies(self) -> int:
        """Blocks whose copies have come (:meth:`_ask_copies`) are rebuilt from them
        from now on: their lineage goes at the prune that follows. How many came."""
        waiting, kept = [], 0
        for ref, owners in self._copies_asked:
            if not ray.wait([ref], timeout=0)[0]:
                waiting.append((ref, owners))
                continue
            try:
                copies = ray.get(ref)
            except Exception as error:  # noqa: BLE001 -- e.g. the worker died: lineage stays
                log.debug("no copies of small blocks from a worker: %s", error)
                continue
            for key, value in copies.items():
                for w in owners[key]:
                    self.lineage.copied(key, w, value)
            kept += len(copies)
        self._copies_asked = waiting
        return kept

    def _delete(self, worker: int, keys: list[Key]) -> None:
        if ray.is_initialized() and self.actors:  # an actor call would start Ray again
            if self._queued:
                self.flush()  # the readers of these blocks go first
            # after held readers; in a batch, with the worker's next tasks or at its end
            # (CG freed ~300 temporaries after its evaluation: one actor call each)
            if self._batching or worker in self._held or worker in self._sending:
                self._held.setdefault(worker, []).append(keys)
            else:
                self._send_delete(worker, keys)

    def _send_delete(self, worker: int, keys: list[Key]) -> None:
        # pickled: Ray's serializer took ~370 us more for a list of 150 keys. Not the
        # worker's last call for :meth:`_busy`: a delete takes microseconds, but the
        # driver heard of it 8-15 ms later while it planned (its future waits for the
        # GIL), and CG held its first 33-51 tasks behind the deletes of the last result
        self.actors[worker].delete.remote(pickle.dumps(keys, protocol=5))

    def worker_memory(self) -> list[int]:
        if self._lost:
            self._replace_lost()  # (a dead worker answers nothing)
        self.release_held()  # queued puts count
        return self._get([a.memory.remote() for a in self.actors])

    def _worker_stats_later(
        self, tags: Collection[Any] | None = None
    ) -> Callable[[], list[dict[str, Any]]]:
        """The counters are asked behind the next wait's fetch calls, if it comes first
        (asked before them, a worker answered between its task and its landing write:
        0.5-1.5 ms of a GEMV's), else when called."""
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
        tags = None if None in wanted else frozenset().union(*wanted)
        refs = [a.stats.remote(tags) for a in self.actors]
        for asked, _ in self._stats_wanted:
            asked.append(refs)
        self._stats_wanted = []

    def reset_stats(self) -> None:
        self.wait()
        self._get([a.reset_stats.remote() for a in self.actors])

    def shutdown(self) -> None:
        for a in self.actors:
            ray.kill(a)
        self._queued, self._held, self._last, self._held_pieces = [], {}, {}, {}
        self._held_posts, self._stats_wanted, self._lands, self._landed = {}, [], {}, None
        self._copies_asked = []
        self.actors = []
        self.nworkers = 0
        self._landing.close()
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
        self._unmade = set()


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


def _biggest(fetch: Sequence[Region]) -> int | None:
    """The position of the region a wait lands in the zone, if any qualifies: the
    biggest (the zone holds one result; the rest come as pieces)."""
    return max(range(len(fetch)), key=lambda i: _region_bytes(fetch[i]), default=None)


def _region_bytes(region: Region) -> int:
    """Bytes of ``region`` assembled (0 for a whole stored object of unknown size)."""
    if region.shape is None:
        return 0
    return shared_output.array_bytes(region.shape, np.dtype(region.dtype))


def _remote_piece_bytes(worker: int, inputs: Sequence[Any]) -> dict[int, int]:
    """Bytes of each piece a task on ``worker`` reads from elsewhere, by the piece's id
    (pieces of a whole stored object are left out unless its region says its size, and
    so are those a letter cannot carry, :func:`channel.sendable`: they go apart)."""
    sizes = {}
    for inp in inputs:
        if not isinstance(inp, Region):
            continue
        if inp.shape is None:
            if inp.nbytes is not None:
                sizes.update((id(p), inp.nbytes) for p in inp.pieces if p.worker != worker)
            continue
        if not channel.sendable(inp.dtype):
            continue
        itemsize = np.dtype(inp.dtype).itemsize
        for p in inp.pieces:
            if p.worker != worker:
                size = np.broadcast_to(np.empty((), np.uint8), inp.shape)[p.dst].size
                sizes[id(p)] = size * itemsize
    return sizes


def _process_alive(pid: int | None) -> bool:
    """Whether process ``pid`` (on this host) is still running (a zombie is not)."""
    if pid is None:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:  # (gone)
        return False


def _actor_state(actor: Any) -> str | None:
    """The state Ray's control store records for ``actor`` ("ALIVE", "DEAD", ...); None
    where it cannot say. (Ray's state API needs the dashboard; this asks the store.)"""
    try:
        from ray._private import state

        return state.actors(actor._actor_id.hex()).get("State")
    except Exception:  # noqa: BLE001 -- an internal API: no answer is "not known dead"
        return None


def _deadline(seconds: float | None) -> float | None:
    """The ``time.monotonic()`` at which a wait of ``seconds`` (None: no limit) ends."""
    return None if seconds is None else time.monotonic() + max(0.0, float(seconds))


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


def _dumps_fn(fn: Callable[..., Any]) -> bytes:
    """``fn`` pickled as cloudpickle would, in a third of the time (a CG solve pickles
    ~300 task functions): plain pickle, whose C pickler refers to functions and classes
    by module and name as cloudpickle does for importable ones; cloudpickle where plain
    pickle refuses (a lambda, a local function) or where the result names ``__main__``
    (a script's or notebook's own code) or a module registered to go by value, which
    cloudpickle sends by value."""
    if _BY_VALUE_MODULES is None:
        return cloudpickle.dumps(fn, protocol=5)
    try:
        blob = pickle.dumps(fn, protocol=5)
    except Exception:  # noqa: BLE001 -- whatever plain pickle refuses, cloudpickle tries
        return cloudpickle.dumps(fn, protocol=5)
    by_value = ("__main__", *_BY_VALUE_MODULES)  # (a submodule's name contains its own)
    if any(name.encode() in blob for name in by_value):
        return cloudpickle.dumps(fn, protocol=5)
    return blob


def _interactive() -> bool:
    return sys.stderr.isatty() or "ipykernel" in sys.modules


def _get_with_progress(refs: list[Any], timeout: float | None = None) -> list[Any]:
    """``ray.get(refs, timeout=timeout)``; after ``config.progress_after`` seconds a
    progress bar (interactive) or log lines (scripts) count the finished tasks until all
    are. (One call into Ray when they finish in time: a wait for them, then a get, took
    GEMV 0.1-0.6 ms more.)"""
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
