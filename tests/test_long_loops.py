"""Loops of any length: no walk of the expression graph recurses once per node.

A plain ``for i in range(n): x += 1`` builds a chain as deep as the loop. Planning,
fusion, row pipelines, kernels (run and pickled for Ray) and printing all walk it
without recursion, and an array whose chain passes ``spartan.config.max_graph_depth``
is evaluated when it is made (:func:`spartan.frontend.evaluate.too_deep`).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import spartan as sp
from spartan.config import config
from spartan.frontend.evaluate import evaluate, too_deep
from spartan.frontend.map import Map


def test_twenty_thousand_chained_additions(backend):
    """Far past the recursion limit and many times ``max_graph_depth``."""
    steps = 20_000
    assert steps > 10 * max(sys.getrecursionlimit(), config.max_graph_depth)
    x = sp.zeros((8, 6), tiling="row")
    for _ in range(steps):
        x += 1
    np.testing.assert_array_equal(x.to_numpy(), np.full((8, 6), float(steps)))


def test_in_place_additions_past_the_old_limit(backend):
    """``x += 1`` failed at 329 steps; each step writes into ``x``'s buffer."""
    x = sp.zeros((8, 6), tiling="row")
    view = x[::-1]
    for _ in range(2000):
        x += 1
    np.testing.assert_array_equal(x.to_numpy(), np.full((8, 6), 2000.0))
    np.testing.assert_array_equal(view.to_numpy(), np.full((8, 6), 2000.0))


def _step(kind, x, i, xp):
    if kind == "affine":
        return x * 1.0001 + 1
    if kind == "flip":
        return x[::-1]
    if kind == "flip+1":
        return x[::-1] + 1
    if kind == "transpose":
        return x.T * 0.5 + 1
    # alternating where / maximum: x is read twice or three times per step, so the
    # chain is a graph with shared nodes, not a line
    return xp.where(x > 0.5, x - 1, x + 1) if i % 2 else xp.maximum(x, 0.25) - 0.5


KINDS = ["affine", "flip", "flip+1", "transpose", "where/maximum"]


@pytest.mark.parametrize("kind", KINDS)
def test_chains_of_operators_match_numpy(backend, kind):
    a = np.arange(48.0).reshape(8, 6) / 48
    x, ref = sp.array(a, tiling="row"), a
    for i in range(2001):
        x, ref = _step(kind, x, i, sp), _step(kind, ref, i, np)
    np.testing.assert_allclose(x.to_numpy(), ref, rtol=1e-12)


def _at_stack_depth(frames, f):
    """``f()`` called with the stack ``frames`` deep (user code already deep in it)."""
    here, depth = sys._getframe(), 0
    while here is not None:
        here, depth = here.f_back, depth + 1
    return _deeper(frames - depth, f)


def _deeper(n, f):
    return _deeper(n - 1, f) if n > 0 else f()


@pytest.mark.parametrize("consumer", ["map", "sum(axis=0)", "sum(axis=1)", "X.T @"])
def test_a_deep_chain_evaluates_from_a_deep_stack(backend, consumer, monkeypatch):
    """With the forcing bounds out of the way, a 3,000-deep chain (fused into one kernel,
    or into a row pipeline) is planned, run, pickled for Ray and explained with the
    stack 100 frames short of Python's limit: nothing recurses per node."""
    monkeypatch.setattr(config, "max_graph_size", 10**9)
    monkeypatch.setattr(config, "max_graph_depth", 10**9)
    a = np.arange(48.0).reshape(8, 6) / 48
    x, ref = sp.array(a, tiling="row"), a
    for _ in range(3000):
        x, ref = x * 0.999 + 0.001, ref * 0.999 + 0.001
    if consumer == "sum(axis=0)":
        x, ref = x.sum(axis=0), ref.sum(axis=0)
    elif consumer == "sum(axis=1)":
        x, ref = x.sum(axis=1), ref.sum(axis=1)
    elif consumer == "X.T @":
        x, ref = sp.array(a, tiling="row").T @ x, a.T @ ref
    limit = sys.getrecursionlimit()
    assert "tiling plan" in str(_at_stack_depth(limit - 100, lambda: sp.explain(x)))
    got = _at_stack_depth(limit - 100, x.to_numpy)
    np.testing.assert_allclose(got, ref, rtol=1e-9)


def _chain(base, n):
    e = base
    for _ in range(n):
        e = Map(np.add, [e, 1.0], e.shape, e.dtype, name="add")
    return e


def test_depth_counts_the_longest_unevaluated_path(local, monkeypatch):
    monkeypatch.setattr(config, "max_graph_depth", 10)
    base = sp.zeros((4, 3), tiling="row")._expr
    a = _chain(base, 9)
    assert a.depth == 10 and not too_deep(a)
    b = _chain(a, 1)
    assert b.depth == 11 and too_deep(b)
    # the longest path, not the number of nodes: two branches of 5 joined
    left, right = _chain(base, 5), _chain(base, 5)
    assert Map(np.add, [left, right], left.shape, left.dtype).depth == 7
    evaluate(a)
    assert a.depth == 0
    # b counted a's chain when it was made; it is counted again before forcing
    c = _chain(b, 1)
    assert c.depth == 12
    assert not too_deep(c)
    assert (b.depth, c.depth) == (1, 2)
    evaluate(c)
    np.testing.assert_array_equal(sp.frontend.evaluate.to_numpy(c), np.full((4, 3), 11.0))
