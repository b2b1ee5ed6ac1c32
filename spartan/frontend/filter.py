"""``filter``: the elements of an array where a boolean mask holds, in C order.

The result's length depends on the data, so building it counts the selected elements
per tile (a small, forced step); each tile then compresses where it lives and the
1-d result is cut evenly, each output tile reading the runs it covers.

>>> x[x > 2]
array([3., 4., 5.])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from spartan.backend.base import Piece, Region
from spartan.backend.device import array_module
from spartan.frontend.expr import Expr, register
from spartan.frontend.lowering import Lowering, identity
from spartan.frontend.tiles import Tiles
from spartan.tiling import Tiling

if TYPE_CHECKING:
    from spartan.frontend.optimizer import Program


def _compress(values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, int]:
    # extract, not values[mask]: on a mask without long runs NumPy's boolean index is
    # several times slower than extract (its result is the same)
    xp = array_module(values)
    out = xp.extract(xp.broadcast_to(mask, values.shape), values)
    return out, int(out.size)


@register
class Filter(Expr):
    """Selected elements of ``values`` (a row-contiguous 1-d result).

    Its length depends on the data, so its shape is known only after lowering, which
    counts the selected elements per tile first (``compress_mask`` evaluates it at once).
    """

    shape_known = False

    def __init__(self, values: Expr, mask: Expr) -> None:
        super().__init__((0,), values.dtype, [values, mask])

    def program_node(self, p: Program, ins: list[int]) -> int:
        return p.filter(ins[0], ins[1], self.children[0].size // 2, name=self.label)

    def compute(self, ctx: Lowering) -> None:
        values, mask = self.children
        t = ctx.tiling(values)
        # C order is kept only by tiles that cut axis 0 alone
        grid = Tiling.row(values.shape, 1 if t.replicated or not values.ndim else t.ntiles)
        nw = ctx.backend.nworkers
        handles, parts = [], []
        for idx, box in grid.tiles(values.shape):
            w = grid.worker_of(idx, nw)
            key = (self.uid, "part", idx)
            inputs = [ctx.region(values, box, w), ctx.region(mask, box, w)]
            handles.append(ctx.backend.submit(w, _compress, inputs, [key], want_result=True))
            parts.append((key, w))
        counts = ctx.backend.results(handles)
        total = sum(counts)
        self.shape = (total,)
        out = Tiling.row(self.shape, max(1, grid.ntiles))
        tiles = Tiles(ctx.backend, self.uid, self.shape, self.dtype, out)
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(int)
        moved = 0
        for idx, box, w in tiles.placements():
            lo, hi = box[0]
            ps = []
            for (key, pw), a, b in zip(parts, starts[:-1], starts[1:]):
                s, e = max(lo, a), min(hi, b)
                if s < e:
                    ps.append(Piece(pw, key, (slice(s - a, e - a),), (slice(s - lo, e - lo),)))
                    moved += (e - s) if pw != w else 0
            region = Region((hi - lo,), self.dtype, tuple(ps))
            ctx.backend.submit(w, identity, [region], [tiles.key(idx)])
        ctx.backend.delete([k for k, _ in parts])
        #: the bytes the even re-cut of the counted parts moves: data-dependent, so the
        #: plan's prediction takes them once counted (``Planned.lowered``)
        self.counted_bytes = moved * self.dtype.itemsize
        self.data = tiles

    def lower(self, ctx: Lowering) -> None:
        self.compute(ctx)
