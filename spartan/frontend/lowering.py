"""The state of one evaluation: chosen tilings, fused nodes, and region reads."""

from __future__ import annotations

from typing import Any

from spartan.backend.base import Backend, Region
from spartan.frontend.expr import Expr, full_box
from spartan.frontend.tiles import Tiles, pieces
from spartan.tiling import Box, Tiling, box_shape


class Lowering:
    """What :meth:`Expr.lower` needs: the backend, each node's tiling, fusion marks."""

    def __init__(
        self,
        backend: Backend,
        tilings: dict[int, Tiling],
        fused: set[int],
        pipelines: dict[int, list] | None = None,
    ) -> None:
        self.backend = backend
        self.tilings = tilings
        self.fused = fused
        #: per consuming node uid (a join or a fold), its inputs computed in row chunks
        #: (:mod:`spartan.frontend.pipeline`)
        self.pipelines = pipelines or {}

    def tiling(self, expr: Expr) -> Tiling:
        if expr.data is not None:
            return expr.data.tiling
        return self.tilings[expr.uid]

    def is_fused(self, expr: Expr) -> bool:
        """Computed inside its consumer's tasks instead of into tiles of its own."""
        return expr.uid in self.fused

    def new_tiles(self, expr: Expr) -> Tiles:
        return Tiles(self.backend, expr.uid, expr.shape, expr.dtype, self.tiling(expr))

    def region(self, expr: Expr, box: Box, reader: int) -> Region:
        """``expr[box]`` assembled on worker ``reader`` (expr evaluated, or a view of one)."""
        return Region(box_shape(box), expr.dtype, tuple(read_pieces(expr, box, reader)))


def identity(x: Any) -> Any:
    """The task function that copies a region as it is (re-tiling, gathering pieces)."""
    return x


class WholeReads:
    """Inputs that many tasks of one operator read whole (the ``y`` of ``x @ y`` by
    rows, a weight vector in a row pipeline): each worker fetches one held elsewhere
    once, into a block its tasks read, and :meth:`release` frees those blocks."""

    def __init__(self, ctx: Lowering, owner: int) -> None:
        self.ctx, self.owner = ctx, owner
        self.read: dict[tuple[int, int], Region | tuple] = {}

    def __call__(self, expr: Expr, reader: int) -> Region | tuple:
        """``expr`` whole on worker ``reader``: its region when every piece is there,
        else the key of the block it was fetched into."""
        at = (expr.uid, reader)
        if at not in self.read:
            region = self.ctx.region(expr, full_box(expr.shape), reader)
            if all(p.worker == reader for p in region.pieces):
                self.read[at] = region
            else:
                key = self.read[at] = (self.owner, "whole", expr.uid, reader)
                self.ctx.backend.submit(reader, identity, [region], [key])
        return self.read[at]

    def release(self) -> None:
        """Free the fetched blocks (after the tasks that read them were submitted)."""
        self.ctx.backend.delete([k for k in self.read.values() if not isinstance(k, Region)])


def read_pieces(expr: Expr, box: Box, reader: int) -> list:
    """The pieces of ``expr[box]`` for a reader on worker ``reader`` (-1: the driver)."""
    if expr.is_view:
        vm, base = expr.vm, expr.base
        if base.data is None:
            raise RuntimeError(f"view {expr!r} read before its base was evaluated")
        out_axes = [a.base for a in vm.axes]
        return pieces(base.data, vm.selection(box), vm.perm(), out_axes, max(reader, 0))
    if expr.data is None:
        raise RuntimeError(f"{expr!r} read before it was evaluated")
    sel = tuple((lo, hi - lo, 1, False) for lo, hi in box)
    return pieces(expr.data, sel, None, range(len(box)), max(reader, 0))
