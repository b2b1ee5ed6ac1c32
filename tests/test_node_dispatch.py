"""Per-node dispatch (issue 41): a node's relay forwards the steps the driver releases to
several of its workers, so the driver's calls grow with nodes, not workers.

The suite's Ray backend has 2 workers on one node, under the default threshold
(``config.node_dispatch_min_workers``): the fixture below starts a relay for it. Calls
are counted in the driver (the relay's own calls to the workers are made elsewhere).
"""

from __future__ import annotations

import collections
import os
import threading

import numpy as np
import pytest

import spartan as sp

ray = pytest.importorskip("ray")


@pytest.fixture
def driver_calls(monkeypatch):
    """``method name -> count`` of the actor calls this process makes."""
    from ray.actor import ActorMethod

    counts: collections.Counter[str] = collections.Counter()
    made = ActorMethod._remote

    def counted(self, *args, **kwargs):
        counts[self._method_name] += 1
        return made(self, *args, **kwargs)

    monkeypatch.setattr(ActorMethod, "_remote", counted)
    return counts


def _relays(backend, on: bool) -> None:
    """Start (or stop) the relay of the backend's node, whatever its worker count."""
    backend.release_held()
    backend.wait()
    if on:
        with sp.config.set(node_dispatch_min_workers=2):
            backend._start_relays()
        assert backend._relays, "no relay started"
    else:
        backend._stop_relays()


@pytest.fixture
def relayed(ray_backend):
    sp.backend.session.use(ray_backend)
    _relays(ray_backend, True)
    yield ray_backend
    _relays(ray_backend, False)


def _logreg(xp, x, y, steps=6):
    w = xp.zeros(x.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + xp.exp(-(x @ w)))
        w = w - (x.T @ (p - y)) / x.shape[0]
    return w


def _kmeans_step(xp, x):
    c = x[:3]
    dist = (c * c).sum(axis=1) - 2 * (x @ c.T)
    onehot = (dist.argmin(axis=1)[:, None] == xp.arange(3)).astype(x.dtype)
    return (onehot.T @ x) / xp.maximum(onehot.sum(axis=0), 1)[:, None]


def _data(n=96, d=5):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, d))
    return x, (x @ np.linspace(-1, 1, d) > 0).astype(np.float64)


def _run(program, *arrays):
    inputs = [sp.asarray(a) for a in arrays]
    sp.evaluate(*inputs)
    return sp.compute(program(sp, *inputs))[0]


def test_a_loop_is_sent_as_calls_to_the_relay_not_to_each_worker(relayed, driver_calls):
    x, y = _data()
    inputs = [sp.asarray(a) for a in (x, y)]
    sp.evaluate(*inputs)
    relayed.wait()
    driver_calls.clear()
    sp.compute(_logreg(sp, *inputs))
    # steps released to both workers at once went as one call to the relay (a worker
    # released alone gets its call directly), and the deletes of the loop's
    # temporaries went with the workers' steps, not one call each
    assert driver_calls["fan"] >= 1, dict(driver_calls)
    assert driver_calls["delete"] == 0, dict(driver_calls)


def test_results_are_exactly_those_without_relays(ray_backend):
    sp.backend.session.use(ray_backend)
    x, y = _data()
    programs = [
        (_logreg, (x, y)),
        (_kmeans_step, (x,)),
        (lambda xp, a: a + a.T, (x[:40] @ x[:40].T,)),
        (lambda xp, a: xp.cumsum(a, axis=0), (x,)),
    ]
    direct = [_run(p, *a) for p, a in programs]
    _relays(ray_backend, True)
    try:
        relayed = [_run(p, *a) for p, a in programs]
        assert ray_backend.relay_calls > 0
    finally:
        _relays(ray_backend, False)
    for got, want in zip(relayed, direct):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(direct[0], _logreg(np, x, y))


def test_the_driver_calls_do_not_grow_with_workers_on_one_node(ray_backend, driver_calls):
    """2 and 4 workers on one node, each with its node's relay: the same loop costs the
    driver no more calls at 4 workers than at 2 (one per worker would double them)."""
    from spartan.backend.ray_backend import RayBackend

    x, y = _data(n=128)
    counts = {}
    for workers in (2, 4):
        with sp.config.set(node_dispatch_min_workers=2):
            be = RayBackend(num_workers=workers, num_cpus_per_worker=0)
        try:
            assert len(be._relays) == 1
            sp.backend.session.use(be)
            inputs = [sp.asarray(a) for a in (x, y)]
            sp.evaluate(*inputs)
            out = []
            for _ in range(2):  # (the second: a plan from the cache, as in a loop)
                be.wait()
                driver_calls.clear()
                out.append(sp.compute(_logreg(sp, *inputs))[0])
            counts[workers] = sum(driver_calls.values())
            np.testing.assert_allclose(out[-1], _logreg(np, x, y))
            del inputs
        finally:
            sp.backend.session.use(ray_backend)  # (later tests find the suite's backend)
            be.shutdown()
    print("driver calls per evaluation by workers:", counts)
    assert counts[4] <= counts[2] + 4, counts  # (+4: which flush finds a worker idle varies)


def _stops_once(t, where):
    """``t * 2``; the first call anywhere writes its pid to ``where``.pid and waits to be
    killed (a rerun after the kill just doubles)."""
    import time

    try:
        os.close(os.open(where + ".started", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return t * 2
    with open(where + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.replace(where + ".tmp", where + ".pid")
    time.sleep(60)  # (the test kills this process long before)
    return t * 2


def test_a_worker_killed_behind_the_relay_is_recovered(relayed, tmp_path):
    import signal

    x = sp.asarray(np.arange(240.0).reshape(60, 4))
    sp.evaluate(x)
    where = str(tmp_path / "task")
    y = (sp.map(lambda t: _stops_once(t, where), x, dtype=float) + 1).sum(axis=0)
    before = relayed.recoveries
    done = []
    runner = threading.Thread(target=lambda: done.append(sp.compute(y)[0]))
    runner.start()
    path = where + ".pid"
    for _ in range(60_000):
        if os.path.exists(path):
            break
        threading.Event().wait(0.001)
    with open(path) as f:
        os.kill(int(f.read()), signal.SIGKILL)
    runner.join(120)
    assert done, "the evaluation did not finish"
    np.testing.assert_array_equal(done[0], (np.arange(240.0).reshape(60, 4) * 2 + 1).sum(axis=0))
    assert relayed.recoveries > before
    # the replaced worker is the relay's again: the next loop still goes through it
    calls_before = relayed.relay_calls
    x2, y2 = _data()
    np.testing.assert_allclose(_run(_logreg, x2, y2), _logreg(np, x2, y2))
    assert relayed.relay_calls > calls_before
