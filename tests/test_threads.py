"""Several threads building and evaluating at once (notebooks, web servers): one
evaluation at a time, results as NumPy gives them, and blocks freed by the garbage
collector in any thread, at any moment, deleted without disturbing an evaluation."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import spartan as sp
from spartan.backend import master

THREADS = 4
EVALUATIONS = 60
N = 8  # tiny arrays: the evaluations, not the data, are under test


def _keys(x: sp.Array) -> list:
    """The stored blocks of evaluated array ``x``."""
    tiles = x._expr.data
    return [tiles.key(idx) for idx, _, _ in tiles.placements()]


def _work(t: int, shared: sp.Array, expected_shared: np.ndarray, start: threading.Barrier) -> int:
    """Thread ``t``'s evaluations, each checked against NumPy; how many it made."""
    own_np = np.arange(N, dtype=np.float64) * (t + 1)
    own = sp.asarray(own_np)
    start.wait()
    done = 0
    for i in range(EVALUATIONS // 2):
        y = own + shared * i  # a new graph per step, built while others evaluate
        np.testing.assert_allclose(y.to_numpy(), own_np + expected_shared * i)
        total = float((own * shared + i).sum())
        assert total == pytest.approx(float((own_np * expected_shared + i).sum()))
        done += 2
    return done


def _evaluate_in_threads(extra=None) -> list[int]:
    """:data:`THREADS` threads of :func:`_work`, all reading one shared array that the
    first evaluation needing it computes; beside them ``extra(start, stop)``, if given,
    until ``stop`` is set (once they are done)."""
    base = np.linspace(0.0, 1.0, N)
    shared = sp.asarray(base) * 2.0  # pending: the threads race to evaluate it
    workers = THREADS + (extra is not None)
    start, stop = threading.Barrier(workers), threading.Event()
    with ThreadPoolExecutor(workers) as pool:
        side = pool.submit(extra, start, stop) if extra is not None else None
        futures = [pool.submit(_work, t, shared, base * 2.0, start) for t in range(THREADS)]
        try:
            counts = [f.result() for f in futures]
        finally:
            stop.set()
        if side is not None:
            side.result()
    return counts


def test_four_threads_evaluate_at_once(backend):
    """4 threads x 60 evaluations on the in-process backend and on Ray."""
    assert _evaluate_in_threads() == [EVALUATIONS] * THREADS


def test_garbage_collected_in_another_thread_while_evaluations_run(backend):
    """A thread making evaluated arrays and dropping them in reference cycles (freed by
    whichever thread collects next, maybe one in the middle of a backend's walk over
    its maps), collecting often, beside the evaluating threads: no error, right results,
    and every freed block deleted in the end."""
    freed: list[list] = []

    def churn(start: threading.Barrier, stop: threading.Event) -> None:
        start.wait()
        i = 0
        while not stop.is_set() or i < 20:
            x = sp.asarray(np.full(N, float(i))) + 1.0
            x.evaluate()
            freed.append(_keys(x))
            cycle: list = [x]
            cycle.append(cycle)  # only the collector frees it
            del x, cycle
            if i % 4 == 0:
                gc.collect()
            i += 1

    thresholds = gc.get_threshold()
    gc.set_threshold(50, 2, 2)  # collections at many more points of the evaluations
    try:
        assert _evaluate_in_threads(churn) == [EVALUATIONS] * THREADS
    finally:
        gc.set_threshold(*thresholds)
    gc.collect()
    sp.evaluate(sp.asarray(np.ones(N)) + 1.0)  # a safe point: what was queued goes
    assert len(freed) >= 20
    still = [k for keys in freed for k in keys if k in backend.where]
    assert still == []


def test_a_finalizer_inside_a_walk_only_queues_its_delete(backend):
    """An array freed while this thread holds the backend (the collector may run in the
    middle of a walk over the backend's maps) is not deleted under the walk: its delete
    waits for the end of the evaluation."""
    x = sp.asarray(np.arange(N, dtype=np.float64)) + 1.0
    x.evaluate()
    keys = _keys(x)
    with backend.evaluating():
        walk = iter(list(backend.where.items()))  # (a copy: the check is below)
        live = dict(backend.where)
        del x
        gc.collect()
        assert all(k in backend.where for k in keys)  # queued, not deleted
        assert dict(backend.where) == live  # no walk would have seen a change
        next(walk)
    assert not any(k in backend.where for k in keys)  # deleted at the end


def test_a_finalizer_in_another_thread_never_waits(backend):
    """A thread freeing an array while another evaluates does not wait for it (a
    finalizer that waited could deadlock); the evaluating thread deletes it after."""
    x = sp.asarray(np.arange(N, dtype=np.float64)) + 1.0
    x.evaluate()
    keys = _keys(x)
    box = [x]
    del x

    def drop() -> bool:
        box.clear()
        gc.collect()
        return all(k in backend.where for k in keys)

    with backend.evaluating(), ThreadPoolExecutor(1) as pool:
        # the lock is held here: the other thread's delete is queued, and it returns
        assert pool.submit(drop).result(timeout=60)
    assert not any(k in backend.where for k in keys)


def test_two_threads_share_one_pending_array(backend):
    """A pending array several threads evaluate at once is evaluated once: they all get
    the same tiles."""
    x = sp.asarray(np.arange(N, dtype=np.float64)) * 3.0
    start = threading.Barrier(THREADS)

    def tiles() -> object:
        start.wait()
        x.evaluate()
        return x._expr.data

    with ThreadPoolExecutor(THREADS) as pool:
        got = [f.result() for f in [pool.submit(tiles) for _ in range(THREADS)]]
    assert got[0] is not None and all(t is got[0] for t in got)
    np.testing.assert_allclose(x.to_numpy(), np.arange(N) * 3.0)


def test_small_arrays_in_threads(local):
    """Small arrays held in the driver, written and read by several threads, each its
    own: writes are seen by the next distributed use (versions never collide)."""
    sp.config.local_below_bytes = 1 << 20

    def work(t: int) -> None:
        small = sp.zeros(N)
        big = sp.asarray(np.ones(N), tiling="row")  # distributed
        for i in range(30):
            small[i % N] = t + i
            expect = np.zeros(N)
            for j in range(i + 1):
                expect[j % N] = t + j
            np.testing.assert_allclose((big + small).to_numpy(), 1.0 + expect)

    with ThreadPoolExecutor(THREADS) as pool:
        for f in [pool.submit(work, t) for t in range(THREADS)]:
            f.result()


def test_borrowed_backend_is_this_threads_only(local):
    """A backend borrowed by one thread (small graphs computed in the driver) is not
    current in the others meanwhile."""
    from spartan.backend import session
    from spartan.backend.local import LocalBackend

    other = LocalBackend(1)
    seen = []
    with session.borrowed(other), ThreadPoolExecutor(1) as pool:
        assert session.current() is other
        seen.append(pool.submit(session.current).result())
    assert seen == [local]
    assert session.current() is local


def test_the_lock_is_one_for_every_backend(backend, local_backend):
    """One evaluation at a time in the process, whatever its backend (planning's
    caches are shared by all)."""
    assert backend.lock is local_backend.lock is master.LOCK
