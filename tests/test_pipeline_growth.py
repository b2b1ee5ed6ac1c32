"""Row pipelines over loops that read a value twice (``x = x * x * 0.5 + 0.25``).

A pipeline's tree is a DAG: a node several operators read is built once and computed
once per row chunk (saved, then loaded by its other readers). Built per read, the
tree doubled with each step of such a loop (2**steps nodes: a 14-step chain on 4
workers took seconds to plan and run). These tests count the tree's nodes and the
maps a task runs at two chain lengths (never the clock), and compare with NumPy.
"""

from __future__ import annotations

import numpy
import pytest

import spartan as sp
from spartan.frontend import evaluate, pipeline


def _chain(np, x, steps):
    for _ in range(steps):
        x = x * x * 0.5 + 0.25  # reads x twice; stays in [0.25, 0.75] for x in [0, 1]
    return x


@pytest.fixture
def trees(monkeypatch):
    """The size (:func:`pipeline.tree_size`) of the largest pipeline tree planned."""
    sizes: list[int] = []
    real = pipeline.row_pipelines

    def spy(*args, **kwargs):
        pipes, piped = real(*args, **kwargs)
        sizes.extend(pipeline.tree_size(ri.tree) for ris in pipes.values() for ri in ris)
        return pipes, piped

    # the planner imports it from the module when it prices the pipelines; the plain
    # path (no optimizer plan) holds its own name
    monkeypatch.setattr(pipeline, "row_pipelines", spy)
    monkeypatch.setattr(evaluate, "row_pipelines", spy)
    return sizes


@pytest.fixture
def map_calls(monkeypatch):
    """How many map steps the pipelines' tasks ran (in-process workers only)."""
    calls = [0]
    real = pipeline._map_rows

    def counting(*args):
        f = real(*args)

        def rows(*a):
            calls[0] += 1
            return f(*a)

        return rows

    monkeypatch.setattr(pipeline, "_map_rows", counting)
    return calls


def _planned_size(trees, steps: int, a: numpy.ndarray) -> int:
    trees.clear()
    x = _chain(sp, sp.asarray(a, tiling="row"), steps)  # (its sum then sums row tiles)
    got = sp.evaluate(x.sum(axis=0))
    numpy.testing.assert_allclose(got.to_numpy(), _chain(numpy, a, steps).sum(axis=0), rtol=1e-12)
    assert trees, "the chain was not pipelined into its sum"
    return max(trees)


def test_chain_tree_grows_linearly(local, trees):
    a = numpy.random.default_rng(0).random((40, 3))
    three, six, twelve = (_planned_size(trees, n, a) for n in (3, 6, 12))
    # each step adds the same nodes (per-read trees: 2**steps, 8 times as many from 3
    # steps to 6)
    assert six - three > 0
    assert twelve - six == 2 * (six - three)


def test_chain_work_grows_linearly(local, map_calls):
    """One chunk per task, so the maps a chain runs are its tasks times its map nodes:
    three per step (``x * x``, ``* 0.5``, ``+ 0.25``), each computed once."""
    a = numpy.random.default_rng(1).random((40, 3))
    counts = {}
    with sp.config.set(pipeline_chunk_bytes=1 << 30):
        for steps in (4, 8):
            x = sp.asarray(a, tiling="row")
            sp.evaluate(x)
            map_calls[0] = 0
            got = sp.evaluate(_chain(sp, x, steps).sum(axis=0))
            counts[steps] = map_calls[0]
            want = _chain(numpy, a, steps).sum(axis=0)
            numpy.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12)
    assert counts[4] > 0
    assert counts[8] == 2 * counts[4]  # per-read trees: 16 times as many


def test_shared_subtree_runs_once_per_chunk():
    """``flatten`` saves a subtree read twice and loads it for the second reader."""
    calls = []

    def square(v):
        calls.append(len(v))
        return v * v

    leaf = ("leaf", 0, True)
    sq = ("map", square, (leaf,), numpy.dtype(float), (), 1)
    top = ("map", numpy.add, (sq, sq), numpy.dtype(float), (), 2)
    rows = pipeline.rows_of(top)
    block = numpy.arange(10.0)
    numpy.testing.assert_array_equal(rows([block], 2, 6, 0), 2 * block[2:6] ** 2)
    assert calls == [4]
    assert pipeline.tree_size(top) == 3


def test_deep_shared_chain_is_linear_in_steps():
    """A 60-step chain (2**60 paths) flattens to a few steps per level, without
    recursion, and runs each level once."""
    t = ("leaf", 0, True)
    for i in range(60):
        t = ("map", numpy.multiply, (t, t), numpy.dtype(float), (), i)
    steps = pipeline.flatten(t)
    assert len(steps) < 4 * 60
    got = pipeline.rows_of(steps, flat=True)([numpy.ones(5)], 0, 5, 0)
    numpy.testing.assert_array_equal(got, numpy.ones(5))


@pytest.mark.parametrize("steps", [1, 5])
def test_chain_matches_numpy(backend, tiling, steps):
    """Every consumer of a shared chain: a fold over the rows, a fold over the columns
    (made row by row: bitwise), and products that sum or keep the rows."""
    rng = numpy.random.default_rng(2)
    a, w = rng.random((37, 4)), rng.random(4)
    xs = _chain(sp, sp.asarray(a, tiling=tiling), steps)
    x = _chain(numpy, a, steps)
    numpy.testing.assert_allclose(xs.sum(axis=0).to_numpy(), x.sum(axis=0), rtol=1e-12)
    numpy.testing.assert_array_equal(xs.sum(axis=1).to_numpy(), x.sum(axis=1))
    numpy.testing.assert_allclose((xs.T @ xs).to_numpy(), x.T @ x, rtol=1e-12)
    numpy.testing.assert_allclose((xs @ sp.asarray(w)).to_numpy(), x @ w, rtol=1e-12)


def test_shared_view_and_product(backend):
    """A view and a product read twice inside one pipeline are each computed once."""
    rng = numpy.random.default_rng(3)
    a, m = rng.random((29, 4)), rng.random((4, 4))

    def program(np, x, m):
        v = x[:, ::-1]
        h = (v * v) @ m
        y = h * h + v
        return (y * y).sum(axis=0)

    got = program(sp, sp.asarray(a), sp.asarray(m)).to_numpy()
    numpy.testing.assert_allclose(got, program(numpy, a, m), rtol=1e-12)
