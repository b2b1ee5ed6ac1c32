"""Task grids: where the per-tile tasks of a fold or a scan run, and on which boxes.

A fold or a scan runs one task per tile of its input and keeps the partials where the
tiles are. An evaluated (or computed) input has its own tiling; a view has none, so its
tasks follow the tiles of its base: along each view axis the view is cut where the
base's tiles end, and each task runs on the worker holding the base tile its box lies
in. Every task then reads only its own worker's data, whatever the view's offset, step
or direction (``x[1:]``, ``x[::2]``, ``x[::-1]``); only the partials (a fold) or the
last slices (a scan) cross workers.

The cost model (:mod:`spartan.frontend.optimizer.profiles`) prices the same grid, from
:func:`view_grid`, so predicted bytes stay equal to the bytes the lowering moves.

>>> from spartan.frontend.viewmap import ViewMap
>>> g = view_grid(ViewMap.from_index((8,), slice(1, None)), (8,), Tiling((4,)), 4)
>>> g.bounds, g.workers
(((0, 1, 3, 5, 7),), (0, 1, 2, 3))
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from spartan.frontend.tiles import axis_runs
from spartan.frontend.view import View
from spartan.frontend.viewmap import ViewMap
from spartan.tiling import Box, Tiling, piece_of

if TYPE_CHECKING:
    from spartan.frontend.expr import Expr
    from spartan.frontend.lowering import Lowering


#: a whole read fetching more pieces than this from elsewhere is broadcast through a
#: tree of its readers (:class:`~spartan.frontend.lowering.WholeReads`): each reader
#: fetches from one earlier reader's copy, so the pieces the driver handles grow with
#: tiles + readers, not tiles x readers; and a replicated output on more workers than
#: this is made once and copied (:func:`made_once`). At or under it every reader
#: fetches from the owners, and every copy is made where it lives.
BROADCAST_ABOVE = 16
#: readers of one copy in such a tree (its fan-out): the tree is log_F(readers)
#: fetches deep, one after another, and each copy is read by at most F others
BROADCAST_FANOUT = 8


def made_once(tiling: Tiling, nworkers: int) -> bool:
    """Whether an operator's output tiled ``tiling`` is made once, on worker 0, and
    copied from there to the other workers through a tree
    (:func:`~spartan.frontend.lowering.copy_tree`), instead of each copy being made
    where it lives from every partial or update (workers x partials pieces; and as many
    times the bytes). The lowering of folds and join_updates and their cost profiles
    (:mod:`spartan.frontend.optimizer.profiles`) follow this one rule.

    >>> made_once(Tiling.duplicated((4,)), 64), made_once(Tiling.duplicated((4,)), 8)
    (True, False)
    """
    return tiling.replicated and nworkers > BROADCAST_ABOVE


@dataclass(frozen=True)
class Grid:
    """Tiles cut at ``bounds`` (per axis: ascending, from 0 to the axis length), each
    run by the worker in ``workers`` (C order of the tile index)."""

    bounds: tuple[tuple[int, ...], ...]
    workers: tuple[int, ...]

    @classmethod
    def of(cls, tiling: Tiling, shape: Sequence[int], nworkers: int, on: int | None = None) -> Grid:
        """The tiles of ``tiling`` on their owners (or all on worker ``on``); a
        replicated tiling is one tile."""
        cuts = (1,) * len(shape) if tiling.replicated else tiling.cuts
        bounds = tuple(tuple(i * n // c for i in range(c + 1)) for n, c in zip(shape, cuts))
        if on is None and tiling.replicated:
            on = 0
        t = Tiling(cuts)
        workers = tuple(
            on if on is not None else t.worker_of(idx, nworkers) for idx in t.tile_indices()
        )
        return cls(bounds, workers)

    @property
    def cuts(self) -> tuple[int, ...]:
        return tuple(len(b) - 1 for b in self.bounds)

    def box(self, idx: Sequence[int]) -> Box:
        return tuple((b[i], b[i + 1]) for b, i in zip(self.bounds, idx))

    def worker(self, idx: Sequence[int]) -> int:
        flat = 0
        for i, c in zip(idx, self.cuts):
            flat = flat * c + i
        return self.workers[flat]

    def tiles(self) -> Iterator[tuple[tuple[int, ...], Box, int]]:
        """``(index, box, worker)`` of every tile, in C order of the index."""
        for flat, idx in enumerate(itertools.product(*(range(c) for c in self.cuts))):
            yield idx, self.box(idx), self.workers[flat]

    def overlapping(self, box: Box) -> Iterator[tuple[tuple[int, ...], Box]]:
        """Tiles intersecting ``box``, with the intersection (as
        :meth:`Tiling.overlapping`: none for an empty box, one for a 0-d grid)."""
        ranges = []
        for (lo, hi), b in zip(box, self.bounds):
            if hi <= lo:
                return
            ranges.append(range(bisect.bisect_right(b, lo) - 1, bisect.bisect_left(b, hi)))
        for idx in itertools.product(*ranges):
            inter = tuple(
                (max(lo, tlo), min(hi, thi)) for (lo, hi), (tlo, thi) in zip(box, self.box(idx))
            )
            if all(lo < hi for lo, hi in inter):
                yield idx, inter

    def layout(self) -> tuple[np.ndarray, np.ndarray]:
        """Boxes ``(n, ndim, 2)`` and workers ``(n,)`` (read-only), as
        :func:`spartan.frontend.optimizer.geometry.layout`."""
        n = len(self.workers)
        boxes = np.zeros((n, len(self.bounds), 2), dtype=np.int64)
        for k, (_, box, _) in enumerate(self.tiles()):
            if box:
                boxes[k] = box
        workers = np.asarray(self.workers, dtype=np.int64)
        boxes.flags.writeable = False
        workers.flags.writeable = False
        return boxes, workers


@functools.lru_cache(maxsize=4096)
def view_grid(vm: ViewMap, base_shape: tuple[int, ...], base: Tiling, nworkers: int) -> Grid:
    """The tasks over view ``vm`` of a base of ``base_shape`` tiled ``base``: a task per
    base tile the view reads, on that tile's worker (a replicated base: one task on
    worker 0)."""
    if base.replicated:
        return Grid.of(base, vm.shape, nworkers)
    pieces: list[int | None] = [0] * len(base_shape)
    for ax, i in vm.fixed:
        pieces[ax] = piece_of(i, base_shape[ax], base.cuts[ax])
    bounds, per_axis = [], []
    for a in vm.axes:
        if a.base is None:  # a new unit axis: one piece
            bounds.append((0, a.count))
            per_axis.append((None,))
            continue
        n, c = base_shape[a.base], base.cuts[a.base]
        runs = sorted(axis_runs(a.start, a.count, a.step, n, c), key=lambda r: r[2])
        if not runs:  # an empty axis: one empty task where the view starts
            runs = [(piece_of(min(max(a.start, 0), max(n - 1, 0)), n, c), 0, 0, 0)]
        bounds.append((*(r[2] for r in runs), a.count))
        per_axis.append(tuple((a.base, r[0]) for r in runs))
    workers = []
    for combo in itertools.product(*per_axis):
        idx = list(pieces)
        for run in combo:
            if run is not None:
                idx[run[0]] = run[1]
        workers.append(base.worker_of(idx, nworkers))
    return Grid(tuple(bounds), tuple(workers))


def input_grid(ctx: Lowering, expr: Expr) -> Grid:
    """The per-tile tasks of an operator reading ``expr`` whole, tile by tile: its own
    tiles, or, for a view, :func:`view_grid` over its base's tiles."""
    tiling = ctx.tiling(expr)
    nworkers = ctx.backend.nworkers
    if isinstance(expr, View) and not tiling.replicated:
        base = expr.base
        return view_grid(expr.vm, tuple(base.shape), ctx.tiling(base), nworkers)
    return Grid.of(tiling, expr.shape, nworkers)
