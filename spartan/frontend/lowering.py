"""The state of one evaluation: chosen tilings, fused nodes, and region reads."""

from __future__ import annotations

from spartan.backend.base import Backend, Region
from spartan.frontend.expr import Expr
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
