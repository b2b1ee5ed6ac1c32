"""Deterministic results (issue 35, item 2): partials are combined in tile order, so a
program gives the same bits on every run, and a run in which a worker is SIGKILLed (and
its tiles rebuilt from lineage) gives the same bits as one without, for a given tiling,
worker count and configuration. Also (item 2b): ``fold``, ``scan`` and ``join_update``
take user functions of every kind -- lambdas, local ``def``s, closures, ``operator``
and ``functools.partial`` functions -- on the in-process backend and on Ray.

Each check compares bytes (``digest``), not values within a tolerance.
"""

from __future__ import annotations

import functools
import importlib
import operator
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spartan as sp
from bench.fuzz import KillOther, digest, kill_worker, worker_pid

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))
kmeans = importlib.import_module("kmeans").kmeans
logistic_regression = importlib.import_module("logistic_regression").logistic_regression


@pytest.fixture(autouse=True)
def _three_tiles_per_worker():
    """More tiles than workers: several partials per worker to combine, in order."""
    old, sp.config.tiles_per_worker = sp.config.tiles_per_worker, 3
    yield
    sp.config.tiles_per_worker = old


def _data() -> dict[str, np.ndarray]:
    """Values whose sums round (a different order of additions gives other bits)."""
    rng = np.random.default_rng(35)
    x = rng.standard_normal((150, 5)) * 10 + rng.random((150, 5)) * 1e-3
    return {
        "x": x,
        "y": (x @ np.linspace(-1, 1, 5) + rng.standard_normal(150) > 0).astype(float),
        "w": rng.standard_normal((5, 7)),
    }


# (name, program on the evaluated inputs): the applications the issue names
WORKLOADS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "kmeans": lambda d: kmeans(d["x"], 3, 3)[0],
    "logistic_regression": lambda d: logistic_regression(d["x"] / 10, d["y"], 3, 0.5),
    "cumsum": lambda d: sp.cumsum(d["x"] * 1.1, axis=0),
    "matmul": lambda d: sp.concatenate([(d["x"].T @ d["x"]).ravel(), (d["x"] @ d["w"]).ravel()]),
    "sort": lambda d: sp.sort((d["x"] * 1.3).ravel()),
}


def _run(
    names: list[str],
    after_inputs: Callable[[], None] | None = None,
    kill_in: Callable[[Any], Any] | None = None,
) -> dict[str, str]:
    """The digests of the workloads ``names``, evaluated together from fresh inputs:
    the inputs are evaluated, ``after_inputs`` is called, each input passes through the
    map ``kill_in`` (if any), then the programs run in one evaluation and are fetched."""
    d = {k: sp.array(v) for k, v in _data().items()}
    sp.evaluate(*d.values())
    if after_inputs is not None:
        after_inputs()
    if kill_in is not None:
        d = {k: sp.map(kill_in, v, dtype=v.dtype) for k, v in d.items()}
    outs = [WORKLOADS[name](d) for name in names]
    sp.evaluate(*outs)
    results = [out.to_numpy() for out in outs]
    assert all(np.isfinite(r).all() and r.size for r in results)
    return {name: digest(r) for name, r in zip(names, results)}


def test_the_bits_see_the_order_of_additions(local):
    """The data rounds: other tilings (another order of additions) give other bits
    for some workloads, so equal digests below mean an equal order, not luck."""
    three = _run(list(WORKLOADS))
    sp.config.tiles_per_worker = 1
    one = _run(list(WORKLOADS))
    assert any(one[n] != three[n] for n in ("kmeans", "logistic_regression", "cumsum", "matmul"))
    assert one["sort"] == three["sort"]  # (a sort adds nothing)


@pytest.mark.parametrize("name", WORKLOADS)
def test_repeated_runs_give_the_same_bits(on_ray, name):
    first = _run([name])
    assert _run([name]) == first
    assert _run([name]) == first


def test_a_worker_killed_between_evaluations_changes_no_bit(on_ray):
    """The killed worker's input tiles are rebuilt (from the driver's puts) while the
    programs run: every result is the same to the bit."""
    plain = _run(list(WORKLOADS))
    before = on_ray.recoveries
    killed = _run(list(WORKLOADS), after_inputs=lambda: kill_worker(on_ray, 1))
    assert on_ray.recoveries > before
    assert killed == plain, [n for n in plain if killed[n] != plain[n]]


def test_a_worker_killed_during_an_evaluation_changes_no_bit(on_ray):
    """Worker 1 is SIGKILLed by a task of worker 0 in the middle of the programs'
    evaluation (a map every input passes through; the same map, not killing, in the run
    compared with): its partials are made again and combined in the same order."""
    pid = worker_pid(on_ray, 1)
    with tempfile.TemporaryDirectory(prefix="spartan-determinism-") as d:
        flag = os.path.join(d, "killed")
        open(flag, "w").close()  # noqa: SIM115 -- there: the map kills nothing
        plain = _run(list(WORKLOADS), kill_in=KillOther(pid, flag))
        os.unlink(flag)
        before = on_ray.recoveries
        killed = _run(list(WORKLOADS), kill_in=KillOther(pid, flag))
        assert os.path.exists(flag), "the map never ran on worker 0"
    worker_pid(on_ray, 1)  # (a death seen only now is recovered from here)
    assert on_ray.recoveries > before
    assert killed == plain, [n for n in plain if killed[n] != plain[n]]


def _kmeans_steps(x: Any, k: int, steps: int, kill_at: int | None, backend: Any) -> list[str]:
    """k-means with every step evaluated (its centers fetched): the digests of the
    centers, step by step; worker 1 killed after step ``kill_at``."""
    centers, out = x[:k], []
    for step in range(steps):
        dist = (centers * centers).sum(axis=1) - 2 * (x @ centers.T)
        onehot = (dist.argmin(axis=1)[:, None] == sp.arange(k)).astype(x.dtype)
        counts = onehot.sum(axis=0)
        centers = sp.where(
            counts[:, None] > 0, (onehot.T @ x) / sp.maximum(counts, 1)[:, None], centers
        )
        out.append(digest(centers.to_numpy()))
        if step == kill_at:
            kill_worker(backend, 1)
    return out


def test_a_loop_evaluated_every_step_gives_the_same_bits_after_a_kill(on_ray):
    """Plans of later steps do not change after a lost worker: the optimizer learns
    from bytes moved (never from time), and an evaluation that lost a worker teaches it
    nothing, so steps after the kill are planned, and rounded, as without it."""
    x = sp.array(_data()["x"])
    plain = _kmeans_steps(x, 3, 5, None, on_ray)
    before = on_ray.recoveries
    killed = _kmeans_steps(x, 3, 5, 1, on_ray)
    assert on_ray.recoveries > before
    assert killed == plain


def test_counts_of_an_evaluation_that_lost_a_worker_teach_the_optimizer_nothing(
    on_ray, monkeypatch
):
    """The optimizer learns a join site's update bytes from what the workers counted;
    counts from an evaluation during which a worker was replaced (the dead worker's
    lost, re-run tasks counted twice) would steer later plans, so they are dropped."""
    from spartan.frontend import planning

    x = sp.array(_data()["x"], tiling="row")

    def first_rows(extents, block):  # updates far smaller than the estimate
        return [((slice(extents[0].box[0][0], extents[0].box[0][0] + 1),), block[:1])]

    def joined():
        return sp.join_update(first_rows, np.add, [x], [0], x.shape)

    planning._learn()  # (earlier tests' counts)
    y = joined()
    site = y._expr.site
    y.to_numpy()
    monkeypatch.setattr(on_ray, "recoveries", on_ray.recoveries + 1)  # a worker lost
    planning._learn()
    assert site not in planning._history.ratios
    joined().to_numpy()
    planning._learn()
    assert planning._history.ratios[site] < 1  # (learned when no worker was lost)


def test_tiles_rebuilt_from_the_drivers_copies_give_the_same_bits(on_ray, monkeypatch):
    """A loop long enough that its small iterate is copied to the driver and its older
    tasks forgotten (the lineage pruned): after a kill, the iterate is put back from
    the copy, and the steps after it give the same bits as without the kill."""
    import gc

    from spartan.backend import recovery as rb

    monkeypatch.setattr(rb, "PRUNE_MIN", 16)
    monkeypatch.setattr(rb, "COPY_DEPTH", 4)
    data = _data()
    x, y = sp.array(data["x"] / 10), sp.array(data["y"])

    def steps(kill_at: int | None) -> str:
        on_ray.pruning.prune_at = 0
        w = sp.zeros(x.shape[1])
        for step in range(14):
            w = w - 0.5 * (x.T @ (1 / (1 + sp.exp(-(x @ w))) - y)) / x.shape[0]
            sp.evaluate(w)
            gc.collect()
            if step == kill_at:
                kill_worker(on_ray, 0)
        return digest(w.to_numpy())

    plain = steps(None)
    copies = [r for r in on_ray.lineage.made_by.values() if r.fn is None and r.value is not None]
    assert copies, "no block was copied to the driver: the test exercises nothing"
    before = on_ray.recoveries
    assert steps(9) == plain
    assert on_ray.recoveries > before


# ---- user functions of every kind as f_accum (issue 35, 2b) ----------------------------


def _add_def(a, b):
    return a + b


def _functions() -> dict[str, Callable[[Any, Any], Any]]:
    """Two-argument additions of every kind a user may write."""

    def local_add(a, b):
        return a + b

    one = 1

    def closure(a, b):
        return a + b * one

    return {
        "lambda": lambda a, b: a + b,
        "def": _add_def,
        "local def": local_add,
        "closure": closure,
        "operator.add": operator.add,
        "partial": functools.partial(operator.add),
        "ufunc": np.add,
    }


FUNCTIONS = list(_functions())
X = np.arange(7 * 6 * 5, dtype=np.float64).reshape(7, 6, 5) % 13 - 4


@pytest.mark.parametrize("kind", FUNCTIONS)
def test_fold_takes_any_function(backend, kind):
    f = _functions()[kind]
    x = sp.array(X, tiling="block")
    for axis in (None, 0, 1, 2, (0, 2), (1, 2)):
        got = sp.fold(f, x, axis=axis).to_numpy()
        np.testing.assert_array_equal(got, X.sum(axis=axis), err_msg=f"axis={axis}")


@pytest.mark.parametrize("kind", FUNCTIONS)
def test_scan_takes_any_function(backend, kind):
    f = _functions()[kind]
    for tiling in ("row", "column", "block"):
        x = sp.array(X, tiling=tiling)
        for axis in (0, 1, 2):
            got = sp.scan(f, x, axis=axis).to_numpy()
            np.testing.assert_array_equal(got, np.cumsum(X, axis=axis), err_msg=tiling)


@pytest.mark.parametrize("tiling", ["row", "column", "block", "dup"])
def test_fold_and_scan_take_a_function_of_python_values(backend, tiling):
    """``max`` of two scalars, and a conditional expression: element by element, within
    tiles and across them, so every tiling gives NumPy's answer."""
    x = sp.array(X[0], tiling=tiling)
    for f in (max, lambda a, b: a if a > b else b):
        for axis in (None, 0, 1):
            np.testing.assert_array_equal(sp.fold(f, x, axis=axis).to_numpy(), X[0].max(axis))
        got = sp.scan(f, x, axis=1).to_numpy()
        np.testing.assert_array_equal(got, np.maximum.accumulate(X[0], axis=1))


@pytest.mark.parametrize("kind", FUNCTIONS)
def test_join_update_accumulates_with_any_function(backend, kind):
    """Each row group adds its column sums into the one output row: collisions from
    every group (several per worker) are combined by ``f_accum``."""
    f = _functions()[kind]
    m = X.reshape(42, 5)

    def column_sums(extents, block):
        return [((slice(None),), block.sum(axis=0))]

    got = sp.join_update(column_sums, f, [sp.array(m, tiling="row")], [0], (5,), groups=6)
    np.testing.assert_array_equal(got.to_numpy(), m.sum(axis=0))


def test_fold_with_a_function_that_fails_names_it(backend):
    def picky(a, b):
        raise ArithmeticError("no")

    with pytest.raises(ArithmeticError, match="no") as info:
        sp.fold(picky, sp.array(X[0]), axis=0).to_numpy()
    assert "picky" in "".join(getattr(info.value, "__notes__", [])) or "picky" in str(info.value)
