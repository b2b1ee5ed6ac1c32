"""The Ray actor that runs a worker's tasks, and the call format it shares with the driver.

:class:`RayWorker` is :class:`~spartan.backend.worker.Worker` as a Ray actor. The driver
(:class:`~spartan.backend.ray_backend.RayBackend`) sends it one task per call
(:meth:`RayWorker.run_task`) or a batch of held steps (:meth:`RayWorker.run_batch`:
tasks, posts and deletes, :mod:`spartan.backend.dispatch`). Each call's arguments are
one pickled spec plus the arguments Ray must pass itself (object refs, and letters
holding one: :func:`_split`); small task functions travel pickled inside the spec
(:class:`FunctionArgs`). Workers on the driver's host count their finished calls on the
driver's board (:mod:`~spartan.backend.call_board`) and skip tasks sent before a cancel
(:class:`StopFlag`).

>>> inline, passed = _split([b"fn", 3])        # nothing here needs Ray to pass it
>>> _joined(inline, passed)
[b'fn', 3]
"""

from __future__ import annotations

import hashlib
import mmap
import os
import pickle
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psutil
import ray
from ray import cloudpickle  # what ray.put uses: pickle-by-value registrations apply

from spartan.backend import call_board, channel, running, session_files, shared_output
from spartan.backend.base import Key, Piece, remote_pieces
from spartan.backend.device import to_host
from spartan.backend.dispatch import Post, sends_apart
from spartan.backend.heap import default_keep, keep_freed_memory
from spartan.backend.worker import (
    BlockMissing,
    TaskCancelled,
    TaskFailed,
    Worker,
    cancel_check,
    cancelled,
    nbytes_of,
    take,
)

__all__ = ["LOSS_ERRORS", "FunctionArgs", "NodeRelay", "Post", "RayWorker", "StopFlag"]

#: the modules cloudpickle sends by value (``register_pickle_by_value``); None where this
#: cloudpickle keeps them elsewhere: then every task function goes by cloudpickle
_BY_VALUE_MODULES = getattr(cloudpickle.cloudpickle, "_PICKLE_BY_VALUE_MODULES", None)

#: a piece under 1/SMALL_PIECE of its block is copied out of the object store
SMALL_PIECE = 16
#: task functions pickled to at most this many bytes travel inside the call
INLINE_FN_BYTES = 16 * 1024
#: a block sent from the driver at least this big is copied out of the object store
OWN_MIN_BYTES = 1 << 20

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
            got = self._received(inputs, remote, whole)
            if self._skips(sent):
                return self._skip(outputs)
            with cancel_check(lambda: self._skips(sent)):
                result = self._run_sent(fn, inputs, outputs, want_result, got, nodes, tag)
            return self._landed(result, land)
        finally:
            self._finished_call()

    def _landed(self, result: Any, land: tuple[str, bytes] | None) -> Any:
        """``result`` of a task, after writing what it made of a fetched result into
        the driver's landing zone, where ``land`` (path, pickled region) says so: in the
        task's own call, not one behind it (each call boundary costs Ray's hand-over)."""
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
        *after: Any,
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
        if not isinstance(fn, bytes):
            return self.run(fn, inputs, outputs, *rest)
        try:
            loaded = pickle.loads(fn)
        except Exception as error:  # noqa: BLE001 -- e.g. a module this node lacks
            failed = TaskFailed(error.with_traceback(None))
            for key in outputs:
                self._set(key, failed)
            return failed
        return self.run(loaded, inputs, outputs, *rest)

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
        return (failed, apart) if any(sends_apart(step) for step in steps) else failed

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

    def unmade(self, keys: bytes, *after: Any) -> tuple[list[Key], int]:
        """Of ``keys`` (pickled), those missing here or left by a cancelled task; and how
        many tasks this worker skipped since the last call. Calls to an actor run in
        order: this one answers once the calls before it are done."""
        store = self.store
        out = [k for k in pickle.loads(keys) if k not in store or cancelled(store[k])]
        skipped, self._skipped = self._skipped, 0
        return out, skipped

    def put(self, key: Key, value: Any, *after: Any) -> None:
        """:meth:`Worker.put` of a block sent from the driver, into this worker's own
        memory where that pays (:func:`_owned`)."""
        try:
            super().put(key, _owned(value) if self.device == "cpu" else value)
        finally:
            self._finished_call()

    def delete(self, keys: Sequence[Key] | bytes, *after: Any) -> None:
        """:meth:`Worker.delete`; the driver sends the keys pickled."""
        super().delete(pickle.loads(keys) if isinstance(keys, bytes) else keys)

    def write_shared(self, path: str, region: bytes, *after: Any) -> TaskFailed | None:  # type: ignore[override]
        """:meth:`Worker.write_shared` of the region the driver sends pickled."""
        return super().write_shared(path, pickle.loads(region))

    def pid(self) -> int:
        return os.getpid()

    # The driver's calls that follow a call a node's relay forwarded (:class:`NodeRelay`)
    # end with that call's ref, ``after``: Ray starts them once it is done, which keeps
    # the driver's order across the two callers (Ray orders calls per caller only).
    # Every method the driver calls takes such trailing refs and ignores their values.
    def get_piece(
        self, key: Key, src: tuple, perm: tuple[int, ...] | None = None, *after: Any
    ) -> Any:
        return super().get_piece(key, src, perm)

    def fetch(self, key: Key, src: tuple | None = None, *after: Any) -> Any:
        return super().fetch(key, src)

    def stats(self, tags: Any = None, *after: Any) -> dict[str, Any]:
        return super().stats(tags)

    def reset_stats(self, *after: Any) -> None:
        super().reset_stats()

    def sync(self, *after: Any) -> None:
        super().sync()

    def memory(self, *after: Any) -> int:
        return super().memory()

    def small_copies(self, keys: Sequence[Key], limit: int, *after: Any) -> dict[Key, Any]:
        """Host copies of the blocks of ``keys`` held here, while they come to at most
        ``limit`` bytes in all; blocks not here (deleted, or not made yet), failed ones
        and those that are not arrays of plain data are left out."""
        out: dict[Key, Any] = {}
        for key in keys:
            block = self.store.get(key)
            dtype = getattr(block, "dtype", None)  # (None: not here, or not an array)
            if block is None or dtype is None or dtype.hasobject or block.nbytes > limit:
                continue
            limit -= block.nbytes
            out[key] = to_host(block)
        return out


class NodeRelay:
    """The driver's dispatcher on one node: it forwards the steps the driver releases to
    several of the node's workers at once (one actor call from the driver per node,
    :meth:`~spartan.backend.ray_backend.RayBackend.release_many`) as their
    :meth:`RayWorker.run_batch` calls, made from this node. It holds no data and runs no
    task (no CPU of its own), so a call to it never waits behind a worker's work.

    Ray keeps the order of calls per caller only. The driver keeps its order across the
    two: each forwarded call waits for the driver's last direct call to that worker
    (passed in, ``after``), and the driver's next direct call waits for the forwarded
    one (:meth:`RayWorker.get_piece` and the others take such trailing refs).

    >>> relay = NodeRelay()
    >>> relay.set_mates({})
    """

    def __init__(self) -> None:
        #: the node's workers by index (replaced ones are set again)
        self.mates: dict[int, Any] = {}

    def set_mates(self, mates: dict[int, Any]) -> None:
        """Forward to these workers' handles from now on (by worker index)."""
        self.mates.update(mates)

    def node(self) -> str:
        """The node this relay runs on."""
        return ray.get_runtime_context().get_node_id()

    def fan(
        self, calls: Sequence[tuple[int, str, bytes, Sequence[Any], Sequence[Any]]]
    ) -> list[Any]:
        """Make each ``(worker, method, spec, passed, after)`` a call of that worker
        (``run_batch``, or ``delete`` of pickled keys), in order; their refs, which the
        driver waits for as its own."""
        return [
            getattr(self.mates[w], method).remote(spec, *passed, *after)
            for w, method, spec, passed, after in calls
        ]


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
    of a call apart, at a cost per argument that one pickled spec pays once. (No
    argument is None.)"""
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

    The store's shared memory comes in 4 KB pages; NumPy's own arrays get huge pages,
    which a kernel streaming the block reads faster. The store's copy stays: the driver
    holds it to rebuild the block after a failure (and Ray spills it to disk when the
    store fills).
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


def _dumps_fn(fn: Callable[..., Any]) -> bytes:
    """``fn`` pickled as cloudpickle would, much faster (an iterative solver pickles a
    task function per operator per iteration): plain pickle, whose C pickler refers to functions and classes
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


class FunctionArgs:
    """Task functions as the driver sends them: a small one's pickle travels inside
    the call; a big one is put in the object store once (an object-store argument costs
    the actor a fetch) and its ref is reused for the tasks of one operator and for equal
    functions of later operators (each loop iteration builds new but equal ones).

    >>> args = FunctionArgs()
    >>> args.of(len) == args.of(len)             # a builtin: its pickle, cached
    True
    """

    #: entries kept by object identity, and by digest of the pickle, before a reset
    IDS_MAX, BLOBS_MAX = 256, 1024

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Any, bytes | ray.ObjectRef]] = {}
        self._by_digest: dict[bytes, ray.ObjectRef] = {}

    def of(self, fn: Callable[..., Any]) -> bytes | ray.ObjectRef:
        """``fn`` as sent: its pickle when small, else the ref of it put once."""
        hit = self._by_id.get(id(fn))
        if hit is not None and hit[0] is fn:
            return hit[1]
        blob = _dumps_fn(fn)
        arg: bytes | ray.ObjectRef = blob
        if len(blob) > INLINE_FN_BYTES:
            digest = hashlib.blake2b(blob, digest_size=16).digest()
            ref = self._by_digest.get(digest)
            if ref is None:
                ref = self._by_digest[digest] = ray.put(fn)
            arg = ref
        if len(self._by_id) >= self.IDS_MAX:
            self._by_id.clear()
        if len(self._by_digest) >= self.BLOBS_MAX:
            self._by_digest.clear()
        self._by_id[id(fn)] = (fn, arg)
        return arg
