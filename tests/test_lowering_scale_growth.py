"""The lowering's work grows linearly in tiles, counted at two sizes (issue 41).

What the driver hands the backend per evaluation -- tasks, and the pieces their regions
list (a Region shared by many tasks counted once per task: the backend handles each) --
is counted, never timed, at 32 and 128 in-process workers (two tiles each). A lowering
whose work grows as tiles x tiles or workers x tiles (every copy of a replicated output
reading every partial, every reader of a whole input fetching every tile) grows 16x
between the two sizes; these must grow at most ~4x (linear), and results must equal
NumPy's. A worker's inner blocks of a product must share one read. The tilings are
fixed (``planning.choose`` replaced), so the test does not depend on the optimizer.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import spartan as sp
from spartan.backend import session
from spartan.backend.base import Region
from spartan.backend.local import LocalBackend
from spartan.frontend import planning
from spartan.frontend.expr import Expr
from spartan.frontend.fold import Fold
from spartan.frontend.join_update import Extent, JoinUpdate
from spartan.frontend.products import dot2d
from spartan.frontend.taskgrid import BROADCAST_ABOVE
from spartan.tiling import Tiling

SMALL, LARGE = 32, 128  # workers; two tiles each (both above BROADCAST_ABOVE)
#: work per tile allowed at the larger size, and growth allowed from the smaller one
#: (linear: 4x the tiles; a quadratic lowering grows 16x)
PER_TILE, GROWTH = 8, 5.0


class Work:
    """Tasks submitted and the pieces their inputs list, since :meth:`reset`."""

    def __init__(self) -> None:
        self.tasks = self.pieces = 0

    def reset(self) -> None:
        self.tasks = self.pieces = 0

    @property
    def total(self) -> int:
        return self.tasks + self.pieces


def workers(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalBackend, Work]:
    """``n`` in-process workers whose submitted work is counted."""
    be = LocalBackend(num_workers=n)
    work = Work()
    submit = be.submit

    def counted(worker: int, fn: Callable, inputs: list, outputs: list, **kw: Any) -> Any:
        work.tasks += 1
        work.pieces += sum(len(r.pieces) for r in inputs if isinstance(r, Region))
        return submit(worker, fn, inputs, outputs, **kw)

    monkeypatch.setattr(be, "submit", counted)
    return be, work


def forced(monkeypatch: pytest.MonkeyPatch, rule: Callable[[Expr], Tiling]) -> None:
    """Every evaluation's tilings from ``rule`` (no optimizer)."""
    monkeypatch.setattr(
        planning, "choose", lambda order, nworkers: ({e.uid: rule(e) for e in order}, None)
    )


def rows(tiles: int) -> Callable[[Expr], Tiling]:
    return lambda e: Tiling.row(e.shape, min(tiles, e.shape[0])) if e.shape else Tiling.single(())


def measure(
    nworkers: int,
    monkeypatch: pytest.MonkeyPatch,
    rule: Callable[[int], Callable[[Expr], Tiling]],
    make: Callable[[int], tuple[np.ndarray, ...]],
    program: Callable[..., Any],
) -> int:
    """The work of one evaluation of ``program`` at ``nworkers`` (inputs evaluated
    first, not counted); its result checked against NumPy's."""
    tiles = 2 * nworkers
    be, work = workers(nworkers, monkeypatch)
    with monkeypatch.context() as m, session.borrowed(be):
        forced(m, rule(tiles))
        arrays = make(tiles)
        xs = [sp.asarray(a) for a in arrays]
        sp.evaluate(*xs)
        work.reset()
        out = program(sp, *xs)
        sp.evaluate(out)
        got = out.to_numpy()
    be.shutdown()
    np.testing.assert_allclose(got, program(np, *arrays), rtol=1e-10)
    return work.total


def assert_linear(small: int, large: int) -> None:
    tiles = 2 * LARGE
    assert large <= PER_TILE * tiles, f"{large} tasks + pieces for {tiles} tiles"
    assert large <= GROWTH * small, f"grew {large / small:.1f}x for 4x the tiles"


def square(tiles: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(tiles)
    return (rng.standard_normal((tiles, tiles)), rng.standard_normal((tiles, tiles)))


def test_matrix_product_by_rows_is_linear_in_tiles(monkeypatch):
    # every worker reads the whole y: a piece of every tile on every worker (tiles x
    # workers) before the broadcast tree
    def program(m: Any, x: Any, y: Any) -> Any:
        return dot2d(x, y, "rows") if m is sp else x @ y

    small, large = (measure(n, monkeypatch, rows, square, program) for n in (SMALL, LARGE))
    assert_linear(small, large)


def _partial_product(extents: Any, xt: np.ndarray, yt: np.ndarray) -> list:
    return [((), xt @ yt)]


def test_a_workers_inner_blocks_share_one_read(monkeypatch):
    """Inner blocks of a row-tiled x (column slabs: a piece of every row tile each):
    a worker's consecutive blocks read their union once, so four times the blocks cost
    no more pieces. (Blocks on different workers are an all-to-all, like ``x.T``: each
    worker's slab needs every row tile.)"""

    def program(groups: int) -> Callable[..., Any]:
        def run(m: Any, x: Any, y: Any) -> Any:
            if m is not sp:
                return x @ y
            shape = (x.shape[0], y.shape[1])
            return sp.join_update(
                _partial_product, np.add, [x, y], axes=[1, 0], shape=shape, groups=groups
            )

        return run

    one, four = (measure(SMALL, monkeypatch, rows, square, program(g)) for g in (SMALL, 4 * SMALL))
    # each block reading its own slab: ~4x the pieces (SMALL x tiles more)
    assert four <= 1.25 * one, (one, four)


def replicated_fold(tiles: int) -> Callable[[Expr], Tiling]:
    def rule(e: Expr) -> Tiling:
        if isinstance(e, (Fold, JoinUpdate)):
            return Tiling.duplicated(e.shape)  # a copy on every worker
        return rows(tiles)(e)

    return rule


def tall(tiles: int) -> tuple[np.ndarray, ...]:
    return (np.arange(tiles * 3, dtype=float).reshape(tiles, 3) % 5,)


@pytest.mark.parametrize(
    "program",
    [
        pytest.param(lambda m, x: (x * 2).sum(axis=0), id="fold"),
        pytest.param(lambda m, x: x.T @ x, id="join"),
    ],
)
def test_replicated_output_is_made_once(monkeypatch, program):
    # every copy of the output combined every worker's partial (or update list):
    # workers x workers pieces; now one copy combines them and the others copy it
    small, large = (measure(n, monkeypatch, replicated_fold, tall, program) for n in (SMALL, LARGE))
    assert_linear(small, large)


def test_a_kmeans_step_moves_the_bytes_the_model_predicts():
    """Replicated outputs made once and copied are priced as lowered: measured bytes
    equal the cost model's per node, on more workers than BROADCAST_ABOVE."""
    nworkers = 2 * BROADCAST_ABOVE
    be = LocalBackend(num_workers=nworkers)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((nworkers * 8, 8))
    with session.borrowed(be), sp.config.set(tiles_per_worker=2):
        x = sp.asarray(a)
        sp.evaluate(x)
        for _ in range(2):  # the second sees x where the first left it
            c = x[:4]
            dist = (c * c).sum(axis=1) - 2 * (x @ c.T)
            onehot = (dist.argmin(axis=1)[:, None] == sp.arange(4)).astype(x.dtype)
            new = (onehot.T @ x) / sp.maximum(onehot.sum(axis=0), 1)[:, None]
            sp.evaluate(new)
        plan = sp.explain(new)
        got = new.to_numpy()
    be.shutdown()
    assert plan.mismatches == []
    text = str(plan)
    assert "dup" in text
    dist = (a[:4] * a[:4]).sum(axis=1) - 2 * (a @ a[:4].T)
    onehot = (dist.argmin(axis=1)[:, None] == np.arange(4)).astype(float)
    want = (onehot.T @ a) / np.maximum(onehot.sum(axis=0), 1)[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_fed_tiles_found_by_extent_match_every_tile_tested():
    """The output tiles a join task feeds (its groups' spans along ``update_axis``),
    found by bisecting the tiles' extents: the same tiles, in the same order, as
    testing every tile against every span."""
    rnd = random.Random(7)
    for _ in range(200):
        shape = (rnd.randint(1, 40), rnd.randint(1, 6))
        ua = rnd.randint(0, 1)
        t = Tiling((rnd.randint(1, shape[0]), rnd.randint(1, shape[1])))
        placed = {idx: (box, 0) for idx, box in t.tiles(shape)}
        targets = list(placed)
        n = shape[ua]
        per_worker: dict[int, list] = {}
        for b in range(rnd.randint(1, 4)):
            for _ in range(rnd.randint(1, 3)):
                lo = rnd.randint(0, n)
                hi = rnd.randint(lo, n)
                box = [(0, m) for m in shape]
                box[ua] = (lo, hi)
                per_worker.setdefault(b, []).append((b, None, (Extent(tuple(box)),)))
        fake = SimpleNamespace(update_axis=ua, axes=(ua,))
        fed = JoinUpdate._fed_tiles(fake, placed, per_worker, targets)
        for b, items in per_worker.items():
            spans = [e[0].box[ua] for *_, e in items]
            want = [
                idx
                for idx, (box, _) in placed.items()
                if any(lo < box[ua][1] and box[ua][0] < hi for lo, hi in spans)
            ]
            assert fed[b] == want
