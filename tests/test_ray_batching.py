"""The Ray backend holds a busy worker's local tasks and sends them as one call."""

from __future__ import annotations

import functools
import gc
import os
import time

import numpy as np
import pytest

pytest.importorskip("ray")


def _copy_when_open(x, gate):
    """A copy made once the test opens ``gate`` (a file): the worker is busy until then,
    however slow the machine (no time window to hit). After 60 s it copies anyway, so a
    test that fails before opening it leaves no worker stuck."""
    deadline = time.monotonic() + 60
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.001)  # (polling the condition, not a guess at how long it takes)
    return x.copy()


def _add_one(x):
    return x + 1


def _fail(x):
    raise ValueError("bad block")


class _Unloadable:
    """A task function that cannot be unpickled on the worker."""

    def __call__(self, x):
        return x

    def __setstate__(self, state):
        raise RuntimeError("cannot load on this worker")


def _busy(be, tag, value, gate):
    """Worker 0 holds ``(tag, "x") = value`` and is busy copying it to ``(tag, "slow")``
    until ``gate.open()``."""
    gc.collect()  # earlier tests' garbage: its deletes are not held by this test
    be.put((tag, "x"), value, 0)
    be.wait()  # the worker is idle: the slow task goes out at once
    be.submit(0, _gated(gate), [(tag, "x")], [(tag, "slow")])
    be.flush()


def _gated(gate):
    return functools.partial(_copy_when_open, gate=gate.path)


def _chain(be, start, n, tag):
    """``n`` tasks on worker 0, each adding one to the block before it."""
    prev = start
    for i in range(n):
        key = (tag, i)
        be.submit(0, _add_one, [prev], [key])
        prev = key
    be.flush()
    return prev


def test_local_tasks_behind_a_busy_worker_are_held_then_run_in_order(ray_backend, gate):
    be = ray_backend
    _busy(be, "hold", np.arange(4.0), gate)
    last = _chain(be, ("hold", "slow"), 5, "hold")
    assert len(be.dispatch.held_steps(0)) == 5  # the worker is busy: nothing sent yet
    gate.open()
    be.wait()
    assert not be.dispatch.holding()
    np.testing.assert_array_equal(be.fetch(last), np.arange(4.0) + 5)
    be.delete([("hold", "x"), ("hold", "slow")] + [("hold", i) for i in range(5)])


def test_delete_held_behind_its_readers(ray_backend, gate):
    be = ray_backend
    _busy(be, "del", np.ones(3), gate)
    be.submit(0, _add_one, [("del", "slow")], [("del", "y")])
    be.flush()
    be.delete([("del", "slow")])  # must run after the reader it follows
    assert be.dispatch.held_steps(0)  # the worker is busy: the reader and the delete wait
    gate.open()
    be.wait()
    np.testing.assert_array_equal(be.fetch(("del", "y")), np.full(3, 2.0))
    be.delete([("del", "x"), ("del", "y")])


def test_a_delete_does_not_hold_the_tasks_after_it(ray_backend):
    """A delete call takes microseconds: the task lowered right after it is sent at once,
    not held as if behind a busy worker (the driver hears of the delete only later)."""
    be = ray_backend
    be.put(("after_del", "x"), np.ones(3), 0)
    be.put(("after_del", "old"), np.ones(3), 0)
    be.wait()  # idle
    be.delete([("after_del", "old")])  # one call of its own, sent now
    be.submit(0, _add_one, [("after_del", "x")], [("after_del", "y")])
    be.flush()
    assert not be.dispatch.held_steps(0)
    be.wait()
    np.testing.assert_array_equal(be.fetch(("after_del", "y")), np.full(3, 2.0))
    be.delete([("after_del", "x"), ("after_del", "y")])


def test_failure_inside_a_held_batch_is_the_users_error(ray_backend, gate):
    be = ray_backend
    _busy(be, "fail", np.zeros(2), gate)
    be.submit(0, _fail, [("fail", "slow")], [("fail", "bad")])
    be.submit(0, _add_one, [("fail", "bad")], [("fail", "after")])
    be.flush()
    assert len(be.dispatch.held_steps(0)) == 2
    gate.open()
    with pytest.raises(ValueError, match="bad block"):
        be.wait()
    # the worker goes on: a later chain runs normally
    last = _chain(be, ("fail", "x"), 3, "fail-next")
    be.wait()
    np.testing.assert_array_equal(be.fetch(last), np.full(2, 3.0))
    be.delete(
        [("fail", k) for k in ("x", "slow", "bad", "after")] + [("fail-next", i) for i in range(3)]
    )


def test_unloadable_function_fails_only_its_own_task(ray_backend, gate):
    be = ray_backend
    _busy(be, "load", np.zeros(2), gate)
    bad = _Unloadable()
    bad.field = 1  # (a state to restore, so __setstate__ runs)
    be.submit(0, bad, [("load", "x")], [("load", "bad")])
    be.submit(0, _add_one, [("load", "x")], [("load", "ok")])  # independent of it
    be.flush()
    assert len(be.dispatch.held_steps(0)) == 2
    gate.open()
    with pytest.raises(RuntimeError, match="cannot load"):
        be.wait()
    np.testing.assert_array_equal(be.fetch(("load", "ok")), np.ones(2))
    be.delete([("load", k) for k in ("x", "slow", "bad", "ok")])


def test_task_functions_pickle_as_cloudpickle_would(monkeypatch):
    """Importable functions go by reference through plain pickle; a lambda, a script's
    own function (``__main__``) and one of a module registered by value go by value."""
    import pickle
    import sys
    import types

    from ray import cloudpickle

    from spartan.backend.ray_worker import _dumps_fn
    from spartan.frontend.lowering import identity

    assert _dumps_fn(identity) == pickle.dumps(identity, protocol=5)
    assert pickle.loads(_dumps_fn(identity)) is identity
    assert pickle.loads(_dumps_fn(lambda x: x + 2))(1) == 3

    main = types.ModuleType("__main__")
    exec("def script_fn(x):\n    return x * 3\n", main.__dict__)
    monkeypatch.setitem(sys.modules, "__main__", main)
    blob = _dumps_fn(main.script_fn)
    assert blob == cloudpickle.dumps(main.script_fn, protocol=5)
    monkeypatch.delitem(sys.modules, "__main__")  # as on a worker: it has no script_fn
    assert pickle.loads(blob)(2) == 6

    # this module is registered by value (conftest): Ray workers cannot import it
    assert _dumps_fn(_add_one) == cloudpickle.dumps(_add_one, protocol=5)


def test_deletes_in_a_batch_go_out_together_at_its_end(ray_backend, actor_calls):
    """Inside ``batching_deletes`` a delete waits for the worker's next call; the batch's
    end sends them (one call), and the blocks are gone."""
    import ray

    be = ray_backend
    for i in range(3):
        be.put(("batch", i), np.ones(100), 0)
    be.wait()

    def held():
        return ray.get(be.actors[0].stats.remote())["held_bytes"]

    full = held()
    with be.batching_deletes():
        be.delete([("batch", 0)])
        be.delete([("batch", 1)])
        assert held() == full
        actor_calls.clear()
    assert actor_calls == [(0, "run_batch")]  # both deletes, one call
    assert held() == full - 1600
    assert 0 not in be.dispatch.holding()
    np.testing.assert_array_equal(be.fetch(("batch", 2)), np.ones(100))
    be.delete([("batch", 2)])


def test_wait_fetches_in_the_same_round_trip(ray_backend, actor_calls, monkeypatch):
    """A region asked of ``wait`` comes back with it: the fetch call follows the tasks."""
    from spartan.backend.base import Piece, Region

    be = ray_backend
    be.put(("rt", "x"), np.arange(4.0), 1)
    last = _chain(be, ("rt", "x"), 2, "rt")
    gets = []
    real_get = be._get
    monkeypatch.setattr(
        be, "_get", lambda refs, **kw: gets.append(len(refs)) or real_get(refs, **kw)
    )
    region = Region((4,), np.dtype(float), (Piece(1, last, (), (slice(0, 4),)),))
    np.testing.assert_array_equal(be.wait([region])[0], np.arange(4.0) + 2)
    assert len(gets) == 1
    assert [m for _, m in actor_calls][-1] == "fetch"
    be.delete([("rt", "x"), ("rt", 0), ("rt", 1)])


def _total(x):
    """The sum of 1-d ``x`` as a user's ``join_update`` (shape ``(1,)``): a call site
    whose update bytes the optimizer learns from the workers' counters."""
    import spartan as sp

    return sp.join_update(
        lambda extents, block: [((), block.sum(keepdims=True))], np.add, [x], [0], (1,)
    )


def test_a_forced_value_waits_once_and_a_failure_is_the_users_error(on_ray, monkeypatch):
    import spartan as sp
    from spartan.frontend import planning

    x = sp.asarray(np.arange(12.0))
    sp.evaluate(x)
    gets = []
    real_get = on_ray._get
    monkeypatch.setattr(
        on_ray, "_get", lambda refs, **kw: gets.append(len(refs)) or real_get(refs, **kw)
    )
    assert float((x * x).sum()) == float((np.arange(12.0) ** 2).sum())
    assert len(gets) == 1
    # a user join's measured bytes (learned update costs) are read at the next planning
    assert float(_total(x)[0]) == float(np.arange(12.0).sum())
    assert len(gets) == 2
    assert planning._to_learn
    sp.evaluate(x + 1)
    assert not planning._to_learn
    with pytest.raises(ValueError, match="bad block"):
        sp.map(_fail, x).to_numpy()


def test_tasks_reading_blocks_put_from_the_driver_go_as_one_call(on_ray, actor_calls, monkeypatch):
    """Re-tiling an array sent from the driver: every task reads blocks the other
    worker holds, straight from the object store. Those blocks exist already, so a
    worker's tasks go as one call, each block passed once (they went one call each)."""
    import spartan as sp

    monkeypatch.setattr(sp.config, "tiles_per_worker", 4)
    a = np.arange(16.0 * 12).reshape(16, 12)
    x = sp.array(a, tiling="row")
    sp.evaluate(x)
    puts = actor_calls.count((0, "put")) + actor_calls.count((1, "put"))
    assert puts == 8  # (what makes this test's point)
    del actor_calls[:]
    y = sp.retile(x, "column")
    sp.evaluate(y)
    tasks = [(w, m) for w, m in actor_calls if m in ("run_task", "run_batch")]
    assert sorted(tasks) == [(0, "run_batch"), (1, "run_batch")]
    np.testing.assert_array_equal(y.to_numpy(), a)
    np.testing.assert_array_equal(sp.compute(y.sum(axis=0))[0], a.sum(axis=0))


def test_an_evaluation_fetches_its_results_and_frees_its_temporaries_in_one_wait(
    on_ray, actor_calls, monkeypatch
):
    """``compute`` of several results waits once. Before that wait the workers were
    told to drop the graph's temporaries and to send their counters (behind the
    tasks): nothing of the evaluation is left for after its results are back."""
    import spartan as sp

    a = np.arange(24.0).reshape(6, 4)
    x = sp.asarray(a)
    sp.evaluate(x)
    rows = sp.exp(x).sum(axis=1)  # a fold: tiles of its own, read by both results
    temporary = rows._expr.uid
    y, z = rows + 1, _total(rows)  # (a user join: its counters are asked for)
    del rows
    at_wait = []
    real_get = on_ray._get

    def get(refs, **kw):
        held = {key[0] for key in on_ray.where if isinstance(key, tuple)}
        at_wait.append((temporary in held, [m for _, m in actor_calls]))
        return real_get(refs, **kw)

    monkeypatch.setattr(on_ray, "_get", get)
    got_y, got_z = sp.compute(y, z)
    rows_np = np.exp(a).sum(axis=1)
    np.testing.assert_allclose(got_y, rows_np + 1)
    np.testing.assert_allclose(got_z, [rows_np.sum()])
    assert len(at_wait) == 1
    still_held, calls = at_wait[0]
    assert not still_held
    assert calls.count("stats") == on_ray.nworkers


@pytest.mark.parametrize("tiling", ["row", "column", "block"])
def test_results_come_through_the_landing_zone(on_ray, actor_calls, monkeypatch, tiling):
    """Every size goes through shared memory here; transposed and sliced reads too."""
    import spartan as sp
    from spartan.backend import shared_output

    monkeypatch.setattr(shared_output, "MIN_BYTES", 0)
    a = np.arange(7.0 * 5).reshape(7, 5)
    x = sp.array(a, tiling=tiling)
    np.testing.assert_array_equal(x.to_numpy(), a)
    assert actor_calls.count((0, "write_shared")) == 1  # a worker's pieces in one call
    np.testing.assert_array_equal(x.T.to_numpy(), a.T)
    np.testing.assert_array_equal((x[1:6:2, ::-1] + 1).to_numpy(), a[1:6:2, ::-1] + 1)
    out = x.to_numpy()
    out[:] = -1  # the driver's own copy: the next fetch is not affected
    np.testing.assert_array_equal(x.to_numpy(), a)
    assert out.flags.owndata and out.flags.writeable
    with pytest.raises(ValueError, match="bad block"):
        sp.map(_fail, x).to_numpy()
    assert not any(m == "fetch" for _, m in actor_calls)


def test_a_kept_result_is_not_overwritten_by_later_fetches(on_ray, monkeypatch):
    """Results filling the zone are its memory, lent: a later fetch lands elsewhere."""
    import spartan as sp
    from spartan.backend import shared_output

    monkeypatch.setattr(shared_output, "MIN_BYTES", 0)
    monkeypatch.setattr(shared_output, "FIRST_BYTES", 64)
    monkeypatch.setattr(on_ray.landing, "zone", shared_output.LandingZone())
    a = np.arange(7.0 * 5).reshape(7, 5)
    x = sp.array(a, tiling="block")
    first = x.to_numpy()
    assert not first.flags.owndata  # lent, not copied
    second = (x + 1).to_numpy()
    first[:] = -1
    third = x.T.to_numpy()
    np.testing.assert_array_equal(second, a + 1)
    np.testing.assert_array_equal(third, a.T)
    np.testing.assert_array_equal(first, -1)


def test_a_host_without_shared_memory_fetches_through_the_object_store(
    on_ray, actor_calls, monkeypatch
):
    import spartan as sp
    from spartan.backend import shared_output

    monkeypatch.setattr(shared_output, "MIN_BYTES", 0)
    monkeypatch.setattr(shared_output, "SHM_DIR", "/nonexistent-spartan-shm")
    monkeypatch.setattr(on_ray.landing, "zone", shared_output.LandingZone())
    a = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(sp.array(a, tiling="row").to_numpy(), a)
    assert not any(m == "write_shared" for _, m in actor_calls)
    assert any(m == "fetch" for _, m in actor_calls)


@pytest.mark.parametrize("n", [10, 300_000])  # a letter; a whole block sent apart (2.4 MB)
def test_a_post_joins_the_owners_held_tasks(ray_backend, actor_calls, n, gate):
    """A piece another worker reads from a block made by held tasks is posted by the
    call that sends them, as its last step; a big one comes back as its second return."""
    be = ray_backend
    _busy(be, ("post", n), np.arange(float(n)), gate)
    last = _chain(be, (("post", n), "slow"), 2, ("post", n))
    be.submit(1, _add_one, [last], [(("post", n), "read")])  # whole block: size unknown
    be.flush()
    gate.open()
    be.wait()
    assert [m for w, m in actor_calls if w == 0] == ["put", "run_task", "run_batch"]
    np.testing.assert_array_equal(be.fetch((("post", n), "read")), np.arange(float(n)) + 3)
    be.delete([(("post", n), k) for k in ("x", "slow", 0, 1, "read")])


class _Stop(BaseException):
    """Raised past a task's own error handling (which catches Exception)."""


def _stop(x):
    raise _Stop


def test_a_batch_that_raises_still_writes_its_post(ray_backend, tmp_path):
    """The reader of a letter waits for it on another worker: a batch whose earlier step
    raises past its task still writes the post it ends with."""
    import pickle

    from spartan.backend import channel
    from spartan.backend.ray_worker import Post, RayWorker
    from spartan.backend.worker import Worker

    worker = object.__new__(RayWorker)  # in this process: no actor, no heap policy
    Worker.__init__(worker, 0)
    worker.put(("raise", "x"), np.arange(4.0))
    path = str(tmp_path / "letter")
    steps = [
        (pickle.dumps(_stop), [("raise", "x")], [("raise", "y")], None, (), (), None),
        Post(path, ("raise", "x"), (slice(1, 3),), None),
    ]
    with pytest.raises(_Stop):
        worker.run_batch(pickle.dumps((steps, [])))
    assert os.path.exists(path)  # (else receiving it would wait: its writer lives)
    letter = channel.Letter(path, writer=os.getpid())
    np.testing.assert_array_equal(letter.receive(), [1.0, 2.0])


def _region_of(worker, key, stop):
    from spartan.backend.base import Piece, Region

    return Region((stop,), np.dtype(float), (Piece(worker, key, (slice(0, stop),), ()),))


def test_a_post_of_known_size_waits_for_the_owners_later_tasks(ray_backend, actor_calls, gate):
    """While its owner is busy, the post of a piece whose size the driver knows is held
    with the owner's tasks before and after it (one call for many iterations of a
    solver); the reader, held too, is sent with it. Both see the right blocks."""
    be = ray_backend
    _busy(be, "hpost", np.arange(4.0), gate)
    be.put(("hpost", "y"), np.zeros(4), 1)  # worker 1 busy too: its reader is held
    be.submit(1, _gated(gate), [("hpost", "y")], [("hpost", "slow1")])
    be.flush()
    first = _chain(be, ("hpost", "slow"), 1, "hpost")
    be.submit(1, _add_one, [_region_of(0, first, 4)], [("hpost", "read")])
    after = _chain(be, first, 1, ("hpost", "after"))  # worker 0's next task
    be.flush()
    held = be.dispatch.held_steps(0)
    assert [type(item).__name__ for item in held] == ["Record", "Post", "Record"]
    gate.open()
    be.wait()
    calls = [m for w, m in actor_calls if w == 0]
    assert calls.count("post") == 0 and calls[-1] == "run_batch"
    np.testing.assert_array_equal(be.fetch(("hpost", "read")), np.arange(4.0) + 2)
    np.testing.assert_array_equal(be.fetch(after), np.arange(4.0) + 2)
    be.delete([("hpost", k) for k in ("x", "slow", "y", "slow1", "read", 0)] + [after])


def test_a_reader_sent_at_once_brings_the_post_it_waits_for(ray_backend, actor_calls, gate):
    """A reader on an idle worker goes out at once: the held post it reads, and the
    owner's tasks before it, go with it (it must not wait for the driver)."""
    be = ray_backend
    _busy(be, "rpost", np.arange(4.0), gate)
    first = _chain(be, ("rpost", "slow"), 1, "rpost")
    be.submit(1, _add_one, [_region_of(0, first, 4)], [("rpost", "read")])
    be.flush()
    assert not be.dispatch.held_steps(0) and not be.dispatch.posts
    assert [m for w, m in actor_calls if w == 0][-1] == "run_batch"
    gate.open()
    be.wait()
    np.testing.assert_array_equal(be.fetch(("rpost", "read")), np.arange(4.0) + 2)
    be.delete([("rpost", k) for k in ("x", "slow", 0, "read")])


def test_a_held_post_the_letter_has_no_room_for_is_spilled(ray_backend, monkeypatch):
    """A post without a ref for its reader to fall back on (held) spills a piece shared
    memory has no room for to the session's directory on disk (one that is not plain
    data through Ray's key-value store, never a file); one with nowhere to go fails its
    reader's task."""
    import pickle

    from spartan.backend import channel, session_files
    from spartan.backend.ray_worker import Post, RayWorker, _open
    from spartan.backend.worker import TaskFailed, Worker

    worker = object.__new__(RayWorker)  # in this process: no actor, no heap policy
    Worker.__init__(worker, 0)
    worker.put(("spill", "x"), np.arange(4.0))
    worker.put(("spill", "f"), np.array([lambda: 0], dtype=object))
    files = session_files.SessionDir.make()
    real = channel._write
    # no room in shared memory but for empty letters
    monkeypatch.setattr(
        channel, "_write", lambda p, d: (not d or p.startswith(files.spill)) and real(p, d)
    )
    shm = files.shm
    steps = [
        Post(os.path.join(shm, "a"), ("spill", "x"), (slice(1, 3),), None, apart=False),
        Post(os.path.join(shm, "b"), ("spill", "f"), (slice(0, 1),), None, apart=False),
    ]
    assert worker.run_batch(pickle.dumps((steps, []))) is None  # one return: nothing went apart
    assert sorted(os.listdir(files.spill)) == ["a", "b"]
    # (b's says only that its value waits in Ray's store)
    assert os.path.getsize(os.path.join(files.spill, "b")) == channel.HEADER_BYTES
    got = _open(channel.Letter(os.path.join(shm, "a"), os.getpid()))
    np.testing.assert_array_equal(got, [1.0, 2.0])
    assert _open(channel.Letter(os.path.join(shm, "b"), os.getpid()))[0]() == 0  # through Ray
    assert os.listdir(files.spill) == []
    monkeypatch.setattr(channel, "_write", lambda p, d: not d and real(p, d))
    worker.post(os.path.join(shm, "c"), ("spill", "x"), (slice(0, 1),), None, apart=False)
    got = _open(channel.Letter(os.path.join(shm, "c"), os.getpid()))
    assert isinstance(got, TaskFailed) and isinstance(got.error, OSError)
    files.close()


def test_a_calls_arguments_are_its_refs_and_the_rest_rides_in_its_spec(ray_backend, monkeypatch):
    """Ray serializes each argument of a call apart (a letter ~90 us, ~10 us inside one
    pickle): object refs, and letters holding one, are the call's arguments; the rest
    travel inside its pickled spec and come back in their order."""
    import ray

    from spartan.backend import channel
    from spartan.backend.ray_worker import _joined, _split

    ref = ray.put(np.arange(3))
    plain, holding = channel.Letter("/a", 1), channel.Letter("/b", 1, ref)
    inline, passed = _split([b"fn", plain, ref, holding])
    assert passed == [ref, holding]
    assert inline[:2] == [b"fn", plain]
    assert _joined(inline, passed) == [b"fn", plain, ref, holding]

    # a task reading a piece another worker computed: its letter rides in the spec
    sent = []
    real = ray.actor.ActorMethod._remote

    def spy(self, args=None, kwargs=None, **options):
        sent.append((self._method_name, list(args or ())))
        return real(self, args, kwargs, **options)

    be = ray_backend
    be.put(("spec", "x"), np.arange(4.0), 0)
    be.submit(0, _add_one, [("spec", "x")], [("spec", "made")])
    be.wait()
    monkeypatch.setattr(ray.actor.ActorMethod, "_remote", spy)
    be.submit(1, _add_one, [_region_of(0, ("spec", "made"), 4)], [("spec", "read")])
    be.wait()
    np.testing.assert_array_equal(be.fetch(("spec", "read")), np.arange(4.0) + 2)
    calls = [(m, args) for m, args in sent if m in ("run_task", "run_batch")]
    assert calls and not any(isinstance(a, channel.Letter) for _, args in calls for a in args)
    be.delete([("spec", k) for k in ("x", "made", "read")])


def test_tasks_that_make_a_fetched_region_land_it_in_their_own_calls(
    ray_backend, actor_calls, monkeypatch, gate
):
    """``flush(fetch)``: the queued tasks making the pieces of the region the next wait
    lands write them into the zone as they finish, a busy worker's held batch too;
    no call follows them to do it."""
    from spartan.backend import shared_output
    from spartan.backend.base import Piece, Region

    be = ray_backend
    monkeypatch.setattr(shared_output, "MIN_BYTES", 0)
    _busy(be, "land", np.arange(4.0), gate)  # worker 0 holds the tasks below, sent as a batch
    be.submit(0, _add_one, [("land", "slow")], [("land", "a0")])
    be.submit(0, _add_one, [("land", "a0")], [("land", "a")])
    be.put(("land", "x1"), np.arange(4.0, 8.0), 1)
    be.submit(1, _add_one, [("land", "x1")], [("land", "b")])
    whole = (slice(0, 4),)
    region = Region(
        (8,),
        np.dtype(np.float64),
        (
            Piece(0, ("land", "a"), whole, whole),
            Piece(1, ("land", "b"), whole, (slice(4, 8),)),
        ),
    )
    be.flush([region])
    assert be.dispatch.held_steps(0)  # the worker is busy: its tasks wait
    gate.open()
    (got,) = be.wait([region])
    np.testing.assert_array_equal(got, np.arange(8.0) + np.array([2.0] * 4 + [1.0] * 4))
    # landed, not fetched through the object store, and by no call of its own
    assert not any(m in ("write_shared", "fetch") for _, m in actor_calls)
    assert (0, "run_batch") in actor_calls and (1, "run_task") in actor_calls
    # a region made before this flush is written by a call of its own
    (again,) = be.wait([region])
    np.testing.assert_array_equal(again, got)
    assert actor_calls.count((0, "write_shared")) == actor_calls.count((1, "write_shared")) == 1
    be.delete([("land", k) for k in ("x", "slow", "a0", "a", "x1", "b")])


def test_a_failing_task_that_would_land_its_tile_raises_its_own_error(ray_backend, monkeypatch):
    from spartan.backend import shared_output
    from spartan.backend.base import Piece, Region

    be = ray_backend
    monkeypatch.setattr(shared_output, "MIN_BYTES", 0)
    be.put(("landfail", "x"), np.arange(4.0), 0)
    be.submit(0, _fail, [("landfail", "x")], [("landfail", "y")])
    whole = (slice(0, 4),)
    region = Region((4,), np.dtype(np.float64), (Piece(0, ("landfail", "y"), whole, whole),))
    be.flush([region])
    with pytest.raises(ValueError, match="bad block"):
        be.wait([region])
    be.delete([("landfail", "x"), ("landfail", "y")])


def test_a_computed_result_is_landed_by_the_tasks_that_compute_it(
    on_ray, actor_calls, monkeypatch, tiling
):
    import spartan as sp
    from spartan.backend import shared_output

    monkeypatch.setattr(shared_output, "MIN_BYTES", 0)
    a = np.arange(7.0 * 5).reshape(7, 5)
    x = sp.array(a, tiling=tiling)
    sp.evaluate(x)
    actor_calls.clear()
    np.testing.assert_array_equal((x * 2 + 1).to_numpy(), a * 2 + 1)
    # landed, not fetched through the object store, and by no call of its own
    assert not any(m in ("write_shared", "fetch") for _, m in actor_calls)
    np.testing.assert_array_equal(sp.compute(x.T @ x, x - 1)[1], a - 1)
    assert not any(m == "write_shared" for _, m in actor_calls)
