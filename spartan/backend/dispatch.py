"""What the Ray backend holds back and sends, as a state machine without Ray.

The Ray backend (:class:`~spartan.backend.ray_backend.RayBackend`) is the transport: it
makes the actor calls. This module decides *what* goes out and *when*, the way
dask.distributed's ``SchedulerState`` decides for its ``Scheduler``: no Ray, no threads,
no clocks. Its methods take events (a call sent, a worker heard from, a task queued, a
worker lost) and return decisions (hold this, send that worker's held steps now, these
pieces are requested before this task).

Two jobs:

* **Batching** (:class:`DispatchState`). Tasks that read only their own worker's blocks,
  letters and put blocks are *held* while that worker is busy and then sent together as
  one call: a chain of small operators costs one call per worker instead of one per
  operator. A post (a piece written into a letter for a reader on the same host) of a
  known size joins the owner's held steps while the owner is busy; deletes made inside
  a batch join them too. A busy worker's held steps go once :data:`HELD_MAX` have
  collected.
* **Ordering** (:func:`plan_flush`). Within one flush (one operator's tasks), pieces of
  blocks that exist already are requested before any task goes, and a piece of a block
  made in the same flush is requested as soon as its producer is sent, before the
  owner's own later reader: in an exchange no worker serves its piece only after it got
  the other's.

>>> state = DispatchState(2)
>>> state.started(0, counts=True)        # worker 0 counts its calls (its start: one)
>>> state.call_sent(0)                  # a task went to worker 0
>>> state.busy(0)
True
>>> state.hold(0, ["a block's key"])    # a delete while it is busy: held
>>> state.due()                         # nothing to send yet
[]
>>> state.heard(0, 2)                   # the board says: both calls finished
>>> state.due()
[0]
>>> state.take(0)                       # what the transport sends now, as one call
[["a block's key"]]
>>> state.done(0)
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spartan.backend import channel
from spartan.backend.base import Key, Piece, Region, remote_pieces
from spartan.backend.lineage import Record

#: a busy worker's held steps are sent once this many have collected. Each call after
#: the first costs its worker a gap between calls (Ray's hand-over, the spec's
#: unpickling on cold caches), so an iterative solver's steps go in few calls. A step
#: pickles to ~0.4 KB, so 192 keep a call's spec under Ray's 100 KB limit for inline
#: arguments
HELD_MAX = 192


@dataclass(frozen=True)
class Post:
    """A batch step: write ``block[src]`` as the letter at ``path``
    (:meth:`~spartan.backend.ray_worker.RayWorker.post`), after the owner's tasks before
    it. With ``apart`` (at most one, the batch's last step) a piece the letter cannot
    carry is the call's second return, whose ref its reader holds; without, it is
    spilled. ``reader``: the process id of the worker that reads it, whose doorbell the
    owner rings.

    >>> Post("/dev/shm/x", ("a", 0), (slice(0, 2),), None).fields()[:2]
    ('/dev/shm/x', ('a', 0))
    """

    path: str
    key: Key
    src: tuple
    perm: tuple[int, ...] | None
    apart: bool = True
    reader: int | None = None

    def fields(self) -> tuple:
        """:meth:`RayWorker.post`'s arguments (``dataclasses.astuple`` deep-copies)."""
        return self.path, self.key, self.src, self.perm, self.apart, self.reader


#: one held step of a worker: a task (or put), a post, or a delete (a list of keys)
Held = Record | Post | list[Key]
#: what a task gets for one remote piece: a letter or an object ref, and whether that
#: is the whole block (a put block in the object store) to cut the piece from
Got = tuple[Any, bool]


def sends_apart(step: Any) -> bool:
    """Whether batch step ``step`` is a post that may return its piece (a batch with one
    has two returns).

    >>> sends_apart(Post("/p", "k", (), None)), sends_apart(["k"])
    (True, False)
    """
    return isinstance(step, Post) and step.apart


def holdable(got: Iterable[Got]) -> bool:
    """Whether a task whose remote pieces come as ``got`` may be held in a batch: each is
    a whole put block (there already) or a letter. A piece some other call makes (an
    object ref of a ``get_piece``) would hold back the whole batch, so such a task goes
    out alone.

    >>> holdable([(channel.Letter("/p", 1), False)]), holdable([(object(), False)])
    (True, False)
    """
    return all(whole or isinstance(part, channel.Letter) for part, whole in got)


class Route(enum.Enum):
    """How a piece travels to the worker that reads it (:func:`route`)."""

    #: the reader maps the whole put block in its node's object store and cuts the piece
    WHOLE = "whole"
    #: the owner writes the piece into a letter in shared memory (same host)
    LETTER = "letter"
    #: the owner returns the piece into the object store; Ray resolves the ref
    OBJECT = "object"


def route(*, put_before: bool, near: bool, mail: bool, nbytes: int) -> Route:
    """How a reader gets a piece: ``put_before``, the block was put from the driver
    before the reader was logged (a put logged after it, under the same key, is not
    what the reader may see); ``near``, owner and reader are on one node; ``mail``, both
    are on the driver's host and use its letters; ``nbytes``, the piece's size (0:
    unknown).

    >>> route(put_before=True, near=True, mail=False, nbytes=8)
    <Route.WHOLE: 'whole'>
    >>> route(put_before=False, near=True, mail=True, nbytes=8)
    <Route.LETTER: 'letter'>
    >>> route(put_before=False, near=False, mail=True, nbytes=8)
    <Route.OBJECT: 'object'>
    """
    if put_before and near:
        return Route.WHOLE
    if near and mail and nbytes <= channel.MAX_BYTES:
        return Route.LETTER
    return Route.OBJECT


class Kind(enum.Enum):
    """What a flush does with a queued record (:meth:`FlushPlan.kind`)."""

    #: a put, or a task whose result the driver wants: sent at once, after its worker's
    #: held steps
    SEND = "send"
    #: a task reading remote pieces: held if they allow it (:func:`holdable`), else sent
    PIECES = "pieces"
    #: a task reading only its own worker's blocks: held
    HOLD = "hold"


@dataclass
class FlushPlan:
    """The order in which one flush requests pieces (:func:`plan_flush`).

    ``remote``: each task's remote pieces, by sequence number. ``early``: the pieces of
    blocks made before this flush, as ``(reader seq, position)``, in the order they are
    requested, ahead of every task. The pieces of blocks made in this flush are
    requested by :meth:`due`, as their producers go out.
    """

    remote: dict[int, list[Piece]]
    early: list[tuple[int, int]]
    #: by owner: a heap of (producer seq, reader seq, position) of pieces made here
    later: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)

    def kind(self, rec: Record) -> Kind:
        """What the flush does with ``rec``."""
        if rec.fn is None or rec.want_result:
            return Kind.SEND
        return Kind.PIECES if self.remote.get(rec.seq) else Kind.HOLD

    def due(self, rec: Record) -> list[tuple[int, int]]:
        """The pieces to request before ``rec`` goes to its worker: those later readers
        need of that worker's blocks made by tasks sent already (before ``rec``), as
        ``(reader seq, position)``. A reader up to ``rec`` itself gets its pieces when
        it is sent: those are dropped."""
        pending = self.later.get(rec.worker, [])
        out = []
        while pending and pending[0][0] < rec.seq:
            _, seq, n = heapq.heappop(pending)
            if seq > rec.seq:
                out.append((seq, n))
        return out


def plan_flush(queued: Sequence[Record], made_by: Mapping[tuple[Key, int], Record]) -> FlushPlan:
    """The order of requests of the flush of ``queued`` (in submission order), given
    which record made each ``(key, worker)`` (the lineage's ``made_by``).

    >>> from spartan.backend.base import Region
    >>> a = Record(0, 0, ("a",), fn=abs)                  # worker 0 makes "a"
    >>> b = Record(1, 1, ("b",), fn=abs)                  # worker 1 makes "b"
    >>> ra = Record(2, 0, ("ra",), fn=abs, inputs=(Region(None, None, (Piece(1, "b", (), ()),)),))
    >>> rb = Record(3, 1, ("rb",), fn=abs, inputs=(Region(None, None, (Piece(0, "a", (), ()),)),))
    >>> made = {("a", 0): a, ("b", 1): b}
    >>> plan = plan_flush([a, b, ra, rb], made)
    >>> plan.early                       # both pieces are made in this flush
    []
    >>> plan.due(ra)      # before ra goes to worker 0: worker 0's piece for rb
    [(3, 0)]
    >>> plan.due(rb)      # (worker 1's piece for ra: ra asked for it as it went)
    []
    """
    made_here = {(key, rec.worker) for rec in queued for key in rec.outputs}
    remote = {
        rec.seq: remote_pieces(rec.worker, rec.inputs) for rec in queued if rec.fn is not None
    }
    early = [
        (seq, n)
        for seq, pieces in remote.items()
        for n, p in enumerate(pieces)
        if (p.key, p.worker) not in made_here
    ]
    later: dict[int, list[tuple[int, int, int]]] = {}
    for seq, pieces in remote.items():
        for n, p in enumerate(pieces):
            if (p.key, p.worker) in made_here:
                made = made_by[(p.key, p.worker)]
                later.setdefault(p.worker, []).append((made.seq, seq, n))
    for pending in later.values():
        heapq.heapify(pending)
    return FlushPlan(remote, early, later)


def remote_piece_bytes(worker: int, inputs: Sequence[Any]) -> dict[int, int]:
    """Bytes of each piece a task on ``worker`` reads from elsewhere, by the piece's id
    (pieces of a whole stored object are left out unless its region says its size, and
    so are those a letter cannot carry, :func:`channel.sendable`: they go apart).

    >>> from spartan.backend.base import Region
    >>> p = Piece(1, "b", (slice(0, 2),), (slice(0, 2),))
    >>> remote_piece_bytes(0, [Region((4,), np.dtype(np.float64), (p,))]) == {id(p): 16}
    True
    """
    sizes: dict[int, int] = {}
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


class DispatchState:
    """Per worker: the steps held back, the calls sent and finished, and what is being
    sent; the decisions the transport acts on.

    A worker is *busy* while it may still run the last call of tasks sent to it: the
    transport reports each call it sends (:meth:`call_sent`) and what it hears of the
    worker's finished calls (:meth:`heard`, from the shared board where a worker counts
    them, or :meth:`idle` once a call's future is done). Deletes are not counted: they
    take microseconds, and a delete the driver heard of late would hold the next tasks
    back.

    >>> state = DispatchState(1)
    >>> state.call_sent(0)
    >>> state.hold_delete(0, ["k"], batching=False)   # nothing held: sent at once
    False
    >>> state.hold_delete(0, ["j"], batching=True)    # in an evaluation: held
    True
    >>> state.hold_delete(0, ["k"], batching=False)   # behind what is held
    True
    >>> state.take(0)
    [['j'], ['k']]
    """

    def __init__(self, nworkers: int, held_max: int = HELD_MAX) -> None:
        self.held_max = held_max
        #: per worker: tasks reading only its blocks, letters and put blocks (Records),
        #: posts, and deletes (key lists), not sent yet, in order
        self.held: dict[int, list[Held]] = {}
        #: the remote pieces of held tasks, by sequence number (see :func:`holdable`)
        self.pieces: dict[int, list[Got]] = {}
        #: the owner of each held post that waits for its owner, by letter path
        self.posts: dict[str, int] = {}
        #: workers whose held steps are being sent (:meth:`take` to :meth:`done`)
        self.sending: set[int] = set()
        #: per worker: calls of tasks sent to it (its start included, where counted)
        self.calls = [0] * nworkers
        #: per worker: those calls known finished
        self.finished = [0] * nworkers
        #: workers that count their finished calls on the driver's board
        self.on_board: set[int] = set()

    # ---- workers' calls ------------------------------------------------------------------
    def started(self, worker: int, counts: bool) -> None:
        """``worker`` was (re)started and answers; ``counts``: it counts its calls on the
        board, where its start counted one."""
        self.calls[worker] = self.finished[worker] = int(counts)
        if counts:
            self.on_board.add(worker)
        else:
            self.on_board.discard(worker)

    def call_sent(self, worker: int) -> None:
        """A call of tasks (not a delete) went to ``worker``."""
        self.calls[worker] += 1

    def heard(self, worker: int, finished: int) -> None:
        """``worker`` has finished ``finished`` calls (its count on the board)."""
        self.finished[worker] = finished

    def idle(self, workers: Iterable[int] | None = None) -> None:
        """``workers`` (default: all) have finished every call sent to them."""
        for w in range(len(self.calls)) if workers is None else workers:
            self.finished[w] = self.calls[w]

    def recount(self, worker: int, finished: int) -> None:
        """After a cancel: ``worker``'s board says ``finished``, and every call it was
        sent is done (a call whose sending was interrupted went uncounted)."""
        self.calls[worker] = self.finished[worker] = finished

    def busy(self, worker: int) -> bool:
        """Whether ``worker`` may still be running a call of tasks."""
        return self.finished[worker] < self.calls[worker]

    # ---- holding --------------------------------------------------------------------------
    def hold(self, worker: int, step: Held, pieces: list[Got] | None = None) -> None:
        """Hold ``step`` for ``worker``; a task's remote pieces as ``pieces``."""
        self.held.setdefault(worker, []).append(step)
        if pieces is not None and isinstance(step, Record):
            self.pieces[step.seq] = pieces

    def hold_post(self, owner: int, post: Post) -> bool:
        """Hold ``post`` with ``owner``'s steps (the block may come from one of them).
        True: it waits there while the owner is busy (a piece of known size: one call
        for many iterations of a solver), until the owner is idle or the reader is sent
        (:meth:`owners_to_release`). False: the owner's held steps, the post last, are
        to be sent now (a piece that may go apart is that call's second return)."""
        self.hold(owner, post)
        if not post.apart and self.busy(owner):
            self.posts[post.path] = owner
            return True
        return False

    def hold_delete(self, worker: int, keys: list[Key], batching: bool) -> bool:
        """Whether the delete of ``keys`` on ``worker`` is held (then it is): after held
        readers; in a batch (``batching``: inside an evaluation), with the worker's next
        tasks or at its end. Else it is to be sent now, a call of its own."""
        if batching or worker in self.held or worker in self.sending:
            self.hold(worker, keys)
            return True
        return False

    def take(self, worker: int) -> list[Held] | None:
        """``worker``'s held steps, to send now (None: nothing held); the worker is
        being sent to until :meth:`done`. A held task's pieces: :meth:`take_pieces`."""
        held = self.held.pop(worker, None)
        if not held:
            return None
        for step in held:
            if isinstance(step, Post):  # sent now: no longer held
                self.posts.pop(step.path, None)
        self.sending.add(worker)
        return held

    def take_pieces(self, seq: int) -> list[Got] | None:
        """The remote pieces of held task ``seq`` as they were held (None: none)."""
        return self.pieces.pop(seq, None)

    def done(self, worker: int) -> None:
        """What :meth:`take` gave for ``worker`` is sent (or its sending failed)."""
        self.sending.discard(worker)

    def owners_to_release(self, paths: Iterable[str]) -> list[int]:
        """The owners whose held posts at ``paths`` (a reader's letters) must go now: a
        reader sent must not wait for the driver. An owner being sent already carries
        the post in what it is sending."""
        out: list[int] = []
        for path in paths:
            owner = self.posts.get(path)
            if owner is not None and owner not in self.sending and owner not in out:
                out.append(owner)
        return out

    def due(self) -> list[int]:
        """The workers whose held steps go now, after a flush: idle ones, and busy ones
        that collected :attr:`held_max`."""
        return [
            w for w, held in self.held.items() if len(held) >= self.held_max or not self.busy(w)
        ]

    def holding(self) -> list[int]:
        """The workers with held steps."""
        return list(self.held)

    def held_steps(self, worker: int) -> list[Held]:
        """A copy of what is held for ``worker``, in order."""
        return list(self.held.get(worker, ()))

    def unsent(self) -> set[int]:
        """The sequence numbers of the tasks held."""
        return {s.seq for steps in self.held.values() for s in steps if isinstance(s, Record)}

    # ---- losses ---------------------------------------------------------------------------
    def lost(self, workers: Collection[int]) -> None:
        """``workers`` died: drop what is held for them (deletes of blocks gone with
        them, posts whose readers see the writer dead, tasks that are rebuilt from their
        lineage); they run nothing now."""
        for w in workers:
            for step in self.held.pop(w, ()):
                if isinstance(step, Post):
                    self.posts.pop(step.path, None)
                elif isinstance(step, Record):
                    self.pieces.pop(step.seq, None)
        self.idle(workers)

    def clear(self) -> None:
        """Forget everything held (the backend shut down)."""
        self.held, self.pieces, self.posts = {}, {}, {}
        self.sending = set()
        self.idle()
