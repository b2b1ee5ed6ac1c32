"""The Ray backend's dispatch state machine, driven by events, without Ray or sleeps."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spartan.backend import channel
from spartan.backend.base import Piece, Region
from spartan.backend.dispatch import (
    HELD_MAX,
    DispatchState,
    Kind,
    Post,
    Route,
    holdable,
    plan_flush,
    remote_piece_bytes,
    route,
)
from spartan.backend.lineage import Lineage, Record


def _task(log: Lineage, worker: int, out: str, *reads: tuple[int, str]) -> Record:
    """A logged task on ``worker`` making ``out`` from the blocks ``reads``
    ``(worker, key)``: those on ``worker`` by key, the others as remote pieces."""
    inputs = [
        key if w == worker else Region(None, None, (Piece(w, key, (), ()),)) for w, key in reads
    ]
    return log.log({"worker": worker, "outputs": (out,), "fn": b"fn", "inputs": tuple(inputs)})


def test_the_module_runs_without_ray():
    code = "import sys, spartan.backend.dispatch; assert 'ray' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- batching: busy workers collect, idle ones get theirs at once -------------------------
def test_a_busy_workers_steps_are_held_until_it_is_heard_idle():
    state = DispatchState(2)
    state.started(0, counts=True)
    state.call_sent(0)
    log = Lineage()
    a, b = _task(log, 0, "a"), _task(log, 0, "b", (0, "a"))
    state.hold(0, a)
    state.hold(0, b)
    assert state.busy(0) and state.due() == []
    state.heard(0, 1)  # only its start: the task is still running
    assert state.due() == []
    state.heard(0, 2)
    assert state.due() == [0]
    assert state.take(0) == [a, b]  # in order, as one call
    assert state.take(0) is None  # nothing twice
    state.done(0)
    assert not state.holding()


def test_a_busy_worker_sends_once_held_max_steps_collected():
    state = DispatchState(1, held_max=3)
    state.call_sent(0)
    for n in range(2):
        state.hold(0, [("k", n)])
    assert state.due() == []
    state.hold(0, [("k", 2)])
    assert state.due() == [0]
    assert DispatchState(1).held_max == HELD_MAX


def test_a_worker_off_the_board_is_idle_once_its_call_is_done():
    state = DispatchState(1)
    state.started(0, counts=False)
    assert not state.busy(0) and 0 not in state.on_board
    state.call_sent(0)
    assert state.busy(0)
    state.idle([0])  # (its last call's future is done)
    assert not state.busy(0)


def test_deletes_wait_behind_held_readers_and_inside_evaluations():
    state = DispatchState(2)
    assert not state.hold_delete(0, ["x"], batching=False)  # nothing held: sent now
    assert state.hold_delete(0, ["y"], batching=True)  # in an evaluation: batched
    assert state.hold_delete(0, ["z"], batching=False)  # behind what is held
    assert state.take(0) == [["y"], ["z"]]
    assert state.hold_delete(0, ["w"], batching=False)  # worker 0 is being sent to
    state.done(0)
    assert state.held_steps(0) == [["w"]]
    assert not state.hold_delete(1, ["v"], batching=False)
    assert not state.busy(0)  # deletes are no calls of tasks


# ---- release: posts ride with their owners' steps ----------------------------------------
def test_a_post_of_known_size_waits_with_its_busy_owner():
    state = DispatchState(2)
    state.call_sent(0)
    post = Post("/letter", "a", (), None, apart=False)
    assert state.hold_post(0, post)  # waits with the owner's later steps
    assert state.posts == {"/letter": 0}
    assert state.owners_to_release(["/letter", "/other"]) == [0]
    assert state.take(0) == [post]
    assert state.posts == {}  # sent: no longer held
    assert state.owners_to_release(["/letter"]) == []
    state.done(0)


def test_a_post_that_may_go_apart_or_an_idle_owner_goes_now():
    state = DispatchState(1)
    assert not state.hold_post(0, Post("/idle", "a", (), None, apart=False))
    state.call_sent(0)
    assert not state.hold_post(0, Post("/apart", "a", (), None, apart=True))
    assert [p.path for p in state.take(0)] == ["/idle", "/apart"]  # the apart one last
    assert state.posts == {}


def test_an_owner_being_sent_carries_its_post_already():
    state = DispatchState(2)
    state.call_sent(0)
    state.hold_post(0, Post("/p", "a", (), None, apart=False))
    state.sending.add(0)  # (as between take and done)
    assert state.owners_to_release(["/p"]) == []


def test_held_tasks_keep_their_pieces_until_taken():
    state = DispatchState(1)
    log = Lineage()
    rec = _task(log, 0, "r", (1, "b"))
    letter = channel.Letter("/l", 1)
    state.hold(0, rec, [(letter, False)])
    assert state.unsent() == {rec.seq}
    assert state.take(0) == [rec]
    assert state.take_pieces(rec.seq) == [(letter, False)]
    assert state.take_pieces(rec.seq) is None


# ---- ordering: one flush's piece requests --------------------------------------------------
def test_pieces_of_existing_blocks_are_requested_before_any_task():
    log = Lineage()
    old = _task(log, 1, "old")
    reader = _task(log, 0, "r", (1, "old"))
    own = _task(log, 1, "own")
    plan = plan_flush([reader, own], log.made_by)
    assert plan.early == [(reader.seq, 0)]
    assert plan.kind(reader) is Kind.PIECES and plan.kind(own) is Kind.HOLD
    assert plan.due(own) == []
    # the block made before this flush is not a piece the flush waits for a producer of
    assert all(plan.due(rec) == [] for rec in (old, reader, own))


def test_in_an_exchange_each_piece_is_asked_before_its_owners_reader():
    """Workers 0 and 1 each make a block and read the other's: worker 0's piece for
    worker 1 is requested before worker 0's own reader goes, and vice versa."""
    log = Lineage()
    a, b = _task(log, 0, "a"), _task(log, 1, "b")
    r0 = _task(log, 0, "r0", (0, "a"), (1, "b"))
    r1 = _task(log, 1, "r1", (1, "b"), (0, "a"))
    plan = plan_flush([a, b, r0, r1], log.made_by)
    assert plan.early == []
    assert plan.due(a) == plan.due(b) == []
    assert plan.due(r0) == [(r1.seq, 0)]  # a's piece for r1, before r0
    assert plan.due(r1) == []  # b's piece for r0: r0 asked for it as it went


def test_puts_and_wanted_results_are_sent_at_once():
    log = Lineage()
    put = log.log({"worker": 0, "outputs": ("p",), "value": "data"})
    wanted = log.log(
        {"worker": 0, "outputs": (), "fn": b"f", "inputs": ("p",), "want_result": True}
    )
    plan = plan_flush([put, wanted], log.made_by)
    assert plan.kind(put) is plan.kind(wanted) is Kind.SEND
    assert plan.remote == {wanted.seq: []}


def test_a_piece_travels_by_the_cheapest_way_its_workers_allow():
    assert route(put_before=True, near=True, mail=True, nbytes=8) is Route.WHOLE
    assert route(put_before=True, near=False, mail=False, nbytes=8) is Route.OBJECT
    assert route(put_before=False, near=True, mail=True, nbytes=0) is Route.LETTER
    too_big = channel.MAX_BYTES + 1
    assert route(put_before=False, near=True, mail=True, nbytes=too_big) is Route.OBJECT
    assert holdable([(channel.Letter("/l", 1), False), ("a put block", True)])
    assert not holdable([("a get_piece ref", False)])


def test_remote_piece_sizes_count_only_other_workers_pieces():
    mine = Piece(0, "a", (slice(0, 2),), (slice(0, 2),))
    theirs = Piece(1, "b", (slice(0, 3),), (slice(2, 5),))
    sizes = remote_piece_bytes(0, [Region((5,), np.dtype(np.float32), (mine, theirs))])
    assert sizes == {id(theirs): 12}
    whole = Piece(1, "c", (), ())
    assert remote_piece_bytes(0, [Region(None, None, (whole,))]) == {}  # size unknown
    assert remote_piece_bytes(0, [Region(None, None, (whole,), nbytes=64)]) == {id(whole): 64}


# ---- loss -------------------------------------------------------------------------------------
def test_a_lost_worker_drops_what_was_held_for_it():
    state = DispatchState(2)
    state.started(0, counts=True)
    state.call_sent(0)
    log = Lineage()
    rec = _task(log, 0, "r", (1, "b"))
    state.hold(0, rec, [(channel.Letter("/in", 1), False)])
    state.hold_post(0, Post("/out", "r", (), None, apart=False))
    state.hold(1, ["kept"])
    state.lost([0])
    assert state.holding() == [1]
    assert state.posts == {} and state.pieces == {}
    assert not state.busy(0)
    state.started(0, counts=True)  # its replacement's start counts one, from zero
    assert (state.calls[0], state.finished[0]) == (1, 1)
    state.recount(1, 5)  # (after a cancel: the board's count is the truth)
    assert not state.busy(1) and state.calls[1] == 5


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["hold", "post", "take"]))))
def test_steps_leave_in_the_order_they_were_held(events):
    """Whatever the events, each worker's steps come out of :meth:`take` in the order
    they were held, each once, and no post stays recorded once it left."""
    state = DispatchState(3)
    held: dict[int, list[object]] = {0: [], 1: [], 2: []}
    sent: dict[int, list[object]] = {0: [], 1: [], 2: []}
    for n, (w, what) in enumerate(events):
        if what == "hold":
            step: object = [("k", n)]
            state.hold(w, step)
            held[w].append(step)
        elif what == "post":
            state.call_sent(w)  # busy: a post of known size waits
            step = Post(f"/p{n}", "k", (), None, apart=False)
            assert state.hold_post(w, step)
            held[w].append(step)
        else:
            sent[w] += state.take(w) or []
            state.done(w)
    for w in range(3):
        sent[w] += state.take(w) or []
        assert sent[w] == held[w]
    assert state.posts == {}
