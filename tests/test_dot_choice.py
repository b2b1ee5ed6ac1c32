"""The matrix-product algorithm is the optimizer's choice, made with the tilings.

A 2-D product is a ``dot`` node of the optimizer's program with both algorithms open
(``rows``: X's row groups times the whole Y; ``inner``: X's column groups times Y's row
groups, partials summed); planning hands the chosen one back to the expression before it
is lowered, and the bytes it moves are the bytes the plan predicted. Where the optimizer
is not asked (it failed) the local rule (:func:`products._rows_first`) decides.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import spartan as sp
from spartan.backend import session
from spartan.backend.local import LocalBackend
from spartan.frontend import planning, products
from spartan.frontend.join_update import JoinUpdate
from spartan.frontend.optimizer import Choice, Program, plan_for
from spartan.tiling import Tiling

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from kmeans import kmeans  # noqa: E402

RNG = np.random.default_rng(7)
A = RNG.random((12, 10))
B = RNG.random((10, 6))


def _dot_expr(arr: sp.Array) -> products.Dot:
    e = arr._expr
    assert isinstance(e, products.Dot), type(e)
    return e


@pytest.fixture
def inputs_keep_their_tiling():
    """Prices checked against pinned input tilings: the planner must not re-tile them."""
    sp.config.retile_inputs = False
    yield
    sp.config.retile_inputs = True


# ---- results ----------------------------------------------------------------------------
def test_products_equal_numpy_under_every_tiling(backend, tiling):
    x, y = sp.array(A, tiling=tiling), sp.array(B, tiling=tiling)
    np.testing.assert_allclose((x @ y).to_numpy(), A @ B)
    np.testing.assert_allclose(sp.dot(x.T, x).to_numpy(), A.T @ A)  # wide: a view's columns
    np.testing.assert_allclose(sp.dot(x, y[:, 0]).to_numpy(), A @ B[:, 0])  # 1-D y
    np.testing.assert_allclose(sp.dot(x[0], x.T).to_numpy(), A[0] @ A.T)  # 1-D x
    np.testing.assert_allclose(sp.dot(x[:, 0], x[:, 1]).to_numpy(), A[:, 0] @ A[:, 1])


def test_matmul_of_stacks_and_out(backend, tiling):
    s = RNG.random((3, 4, 5))
    t = RNG.random((5, 2))
    xs = sp.array(s, tiling=tiling if tiling != "block" else "row")
    np.testing.assert_allclose((xs @ sp.array(t)).to_numpy(), s @ t)
    np.testing.assert_allclose(sp.dot(xs, sp.array(t)).to_numpy(), np.dot(s, t))
    np.testing.assert_allclose(sp.tensordot(xs, xs, axes=([2], [2])).to_numpy(),
                               np.tensordot(s, s, axes=([2], [2])))  # fmt: skip
    out = sp.zeros((12, 6))
    got = sp.dot(sp.array(A, tiling=tiling), sp.array(B), out=out)
    assert got is out
    np.testing.assert_allclose(out.to_numpy(), A @ B)


def test_dot_in_a_loop_follows_each_plan(backend, tiling):
    """A loop evaluating a product every iteration plans once (the cached plan) and runs
    the algorithm the plan names each time, also when the operands' tilings change."""
    x = sp.array(A, tiling=tiling)
    v, want = sp.ones(10), np.ones(10)
    for i in range(4):
        w = sp.array(A, tiling="column" if i % 2 else "row")
        u = w @ v
        t = x.T @ u
        v = t / 100
        want = A.T @ (A @ want) / 100
        np.testing.assert_allclose(v.to_numpy(), want)
        planned = t._expr.planned  # (u may be computed inside t: a row pipeline)
        for prod in (u, t):
            assert _dot_expr(prod).impl == planned.plan.impl[planned.node_of[prod._expr.uid]]


# ---- the choice -------------------------------------------------------------------------
def test_an_open_product_is_a_dot_node_and_runs_the_planned_algorithm(local):
    x, y = sp.array(A, tiling="row"), sp.array(B, tiling="row")
    z = x @ y
    p = Program()
    assert _dot_expr(z).program_node(p, [p.source(A.shape), p.source(B.shape)]) is not None
    assert [n.op for n in p][-1] == "dot"
    sp.evaluate(z)
    plan = z._expr.planned.plan
    (nid,) = [n.id for n in plan.program if n.op == "dot"]
    assert _dot_expr(z).impl == plan.impl[nid]
    name = {"rows": "dot(a)", "inner": "dot(b)"}[plan.impl[nid]]
    assert z._expr.name == name


def test_a_forced_algorithm_is_a_plain_join_update(local):
    for impl, name in (("rows", "dot(a)"), ("inner", "dot(b)")):
        z = products.dot2d(sp.array(A), sp.array(B), impl=impl)
        p = Program()
        z._expr.program_node(p, [p.source(A.shape), p.source(B.shape)])
        assert [n.op for n in p][-1] == "join_update"
        np.testing.assert_allclose(z.to_numpy(), A @ B)
        assert z._expr.impl == impl and z._expr.name == name


def test_the_local_rule_decides_when_the_optimizer_fails(local, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no plan")

    monkeypatch.setattr(planning, "_cached_optimize", broken)
    monkeypatch.setattr(sp.config, "strict_optimizer", False)
    for tiling, impl in (("row", "rows"), ("column", "inner")):
        x = sp.array(A, tiling=tiling)
        sp.evaluate(x)
        z = x @ sp.array(B)
        assert _dot_expr(z).impl == impl  # cut along its columns: (b) reads it in place
        np.testing.assert_allclose(z.to_numpy(), A @ B)
        assert _dot_expr(z).impl == impl
    wide = sp.array(A.T) @ sp.array(A)  # not evaluated: the thesis's shape rule, n <= k
    assert _dot_expr(wide).impl == "inner"
    np.testing.assert_allclose(wide.to_numpy(), A.T @ A)


def test_an_earlier_plans_algorithm_does_not_outlive_a_failed_plan(local, monkeypatch):
    """``explain`` plans (and sets the algorithm of) a product; if the evaluation's own
    planning then fails, the local rule decides, not the stale choice."""
    x = sp.array(A, tiling="row")
    sp.evaluate(x)
    z = x @ sp.array(B)
    dot = _dot_expr(z)
    dot.use_impl("inner" if dot.rule == "rows" else "rows")  # as a plan may have chosen
    monkeypatch.setattr(planning, "_cached_optimize", lambda *a, **k: 1 / 0)
    monkeypatch.setattr(sp.config, "strict_optimizer", False)
    np.testing.assert_allclose(z.to_numpy(), A @ B)
    assert dot.impl == dot.rule == "rows"


def test_a_pinned_output_tiling_leaves_the_algorithm_open(local, inputs_keep_their_tiling):
    """``tiling=`` fixes the product's tiling, not its algorithm."""
    x = sp.array(A, tiling="column")
    sp.evaluate(x)
    p = Program()
    px, py = p.source(A.shape, tiling=x.tiling), p.source(B.shape, tiling=None)
    z = p.dot(px, py)
    out = Tiling.row((12, 6), local.nworkers)
    plan = planning.optimize(p, local.nworkers, fixed={px: x.tiling, z: out})
    assert plan.tiling[z] == out and plan.impl[z] in ("rows", "inner")
    both = [plan_for(p, local.nworkers, {px: x.tiling, py: plan.tiling[py], z: Choice(out, i)})
            for i in ("rows", "inner")]  # fmt: skip
    assert plan.total == min(b.total for b in both)


# ---- predicted = measured ---------------------------------------------------------------
def _tilings(shape: tuple[int, ...], P: int) -> list[Tiling]:
    return [
        Tiling.row(shape, P),
        Tiling.column(shape, P),
        Tiling.block(shape, 4),
        Tiling.duplicated(shape),
    ]


@pytest.mark.parametrize("impl", ["rows", "inner"])
def test_predicted_bytes_equal_measured_for_both_algorithms(
    backend, impl, inputs_keep_their_tiling
):
    """Each algorithm forced on the product (pinned choice), under every input tiling:
    the bytes the backend moves are those ``plan_for`` predicts for the dot node."""
    P = backend.nworkers
    for tx in _tilings(A.shape, P):
        for ty in _tilings(B.shape, P)[::3]:
            x, y = sp.array(A, tiling=tx), sp.array(B, tiling=ty)
            sp.evaluate(x, y)
            for to in _tilings((12, 6), P):
                z = products.dot2d(x, y, impl=impl)
                z._expr.tiling_hint = to
                backend.reset_stats()
                sp.evaluate(z)
                got = backend.stats().bytes_moved
                p = Program()
                px, py = p.source(A.shape, tiling=tx), p.source(B.shape, tiling=ty)
                pz = p.dot(px, py)
                plan = plan_for(p, P, {px: tx, py: ty, pz: Choice(to, impl)})
                assert got == plan.predicted[pz], (tx, ty, to, got, plan.predicted[pz])
                np.testing.assert_allclose(z.to_numpy(), A @ B)


@pytest.mark.parametrize("tx", ["row", "column", "block", "dup"])
def test_the_chosen_algorithm_moves_what_the_plan_predicts(backend, tx, inputs_keep_their_tiling):
    """The open product, its algorithm and tiling chosen by the optimizer: measured
    bytes equal the plan's total, for a tall and a wide left operand."""
    for a in (A, A.T.copy()):
        b = RNG.random((a.shape[1], 6))
        x, y = sp.array(a, tiling=tx), sp.array(b, tiling="row")
        sp.evaluate(x, y)
        z = x @ y
        backend.reset_stats()
        sp.evaluate(z)
        plan = z._expr.planned.plan
        assert backend.stats().bytes_moved == plan.total, plan.explain()
        assert _dot_expr(z).impl in plan.impl.values()
        np.testing.assert_allclose(z.to_numpy(), a @ b)


# ---- k-means with X column-tiled --------------------------------------------------------
@pytest.fixture
def two_workers(local_backend):
    be = LocalBackend(num_workers=2)
    session.use(be)
    yield be
    session.use(local_backend)
    be.shutdown()


def _kmeans_bytes(be, data: np.ndarray, retile_first: bool, k: int = 4, iters: int = 2) -> int:
    """Bytes moved by k-means on ``data`` arriving column-tiled (and, with
    ``retile_first``, re-tiled by rows by the user before the loop), from ``reset``."""
    X = sp.array(data, tiling="column")
    sp.evaluate(X)
    be.reset_stats()
    if retile_first:
        X = sp.retile(X, "row")
    centers, labels, inertia = kmeans(X, k, iters)
    sp.evaluate(centers, labels, inertia)
    np.testing.assert_allclose(centers.to_numpy(), _numpy_kmeans(data, k, iters))
    return be.stats().bytes_moved


def _numpy_kmeans(data: np.ndarray, k: int, iters: int) -> np.ndarray:
    centers = data[:k]
    for _ in range(iters):
        dist = (centers * centers).sum(axis=1) - 2 * (data @ centers.T)
        onehot = (dist.argmin(axis=1)[:, None] == np.arange(k)).astype(data.dtype)
        counts = onehot.sum(axis=0)
        sums = onehot.T @ data
        centers = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], centers)
    return centers


def test_kmeans_on_column_tiled_points_moves_no_more_than_retiling_first(two_workers, monkeypatch):
    """The optimizer re-tiles X or picks the other algorithm: the chosen plan moves no
    more than the best pinned alternative -- the user re-tiling X first, or X kept
    column-tiled -- each with the algorithms the local rule fixes before planning."""
    data = np.random.default_rng(3).random((4000, 8))
    chosen = _kmeans_bytes(two_workers, data, retile_first=False)
    with monkeypatch.context() as m:  # the algorithm fixed before planning (the old way)
        m.setattr(products.Dot, "program_node", JoinUpdate.program_node)
        retiled = _kmeans_bytes(two_workers, data, retile_first=True)
        m.setattr(sp.config, "retile_inputs", False)
        kept = _kmeans_bytes(two_workers, data, retile_first=False)
    assert chosen <= min(retiled, kept), (chosen, retiled, kept)
    assert chosen < kept  # column-tiled X read by rows every iteration costs more


@pytest.fixture
def one_worker(local_backend):
    be = LocalBackend(num_workers=1)
    session.use(be)
    yield be
    be.shutdown()
    session.use(local_backend)


def test_one_worker_takes_the_layout_rules_algorithm_and_explains_it(one_worker):
    """With one worker every plan moves 0 bytes, so the plan's algorithm is a tie: the
    layout rule decides (``x.T @ v`` of a row-tiled x by inner blocks reads x's tiles in
    place; by rows it would copy the column view x.T whole into one task), and explain
    shows the algorithm that ran."""
    X, v = RNG.random((40, 6)), RNG.random(40)
    x = sp.array(X, tiling=Tiling.row(X.shape, 4))
    r = x.T @ sp.array(v)
    sp.evaluate(r)
    assert _dot_expr(r).impl == "inner"
    (row,) = [line for line in str(sp.explain(r)).splitlines() if line.split()[1:2] == ["dot"]]
    assert row.split()[5] == "inner", row
    np.testing.assert_allclose(r.to_numpy(), X.T @ v)
