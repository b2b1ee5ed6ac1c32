"""The state of one evaluation: chosen tilings, fused nodes, row pipelines, and region
reads.

Which lowering strategy a node gets is decided before any node is lowered
(:func:`spartan.frontend.evaluate._lower`): into tiles of its own, fused into its
consumer's kernel (:attr:`Lowering.fused`), or computed in row chunks inside its
consumer (:attr:`Lowering.pipelines`, built by :mod:`spartan.frontend.pipeline`). The
operators see a pipeline only through the :class:`RowInputLike` and
:class:`RowPlanLike` protocols here, so no operator module imports the pipelines.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, Protocol

from spartan.backend.base import Backend, Region
from spartan.frontend.expr import Expr, full_box
from spartan.frontend.tiles import Tiles, pieces
from spartan.frontend.view import View
from spartan.tiling import Box, Tiling, box_shape


class RowInputLike(Protocol):
    """Input ``index`` of a consumer, computed in row chunks along its axis ``axis``
    (:class:`spartan.frontend.pipeline.RowInput`)."""

    index: int
    axis: int
    #: (leaf, read by rows?) in the order of their blocks
    leaves: list[tuple[Expr, bool]]
    #: the expression computed in the chunks (a tree over the leaves)
    tree: Any

    def regions(self, ctx: Any, rows: tuple[int, int], reader: int, whole: Any) -> list: ...

    def row_cuts(self, ctx: Any) -> int: ...

    def row_bounds(self, ctx: Any, n: int) -> set[int]: ...

    def fold_rows(
        self, local: Callable, combine: Callable, axes: tuple[int, ...], box: Box
    ) -> Callable[..., Any]:
        """The task function of one input tile's partial of a fold over the rows."""
        ...

    def fold_tile(
        self, direct: Callable, axes: tuple[int, ...], shape: tuple, dtype: Any, groups: list
    ) -> Callable[..., Any]:
        """The task function of one output tile of a fold over other axes."""
        ...


class RowPlanLike(Protocol):
    """A consumer's pipelined inputs (:class:`spartan.frontend.pipeline.RowPlan`)."""

    def __iter__(self) -> Iterator[RowInputLike]: ...

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> RowInputLike: ...

    def chunked_join(self, join: Expr) -> Callable[..., Any]:
        """The runner of ``join``'s groups in row chunks."""
        ...


class Lowering:
    """What :meth:`Expr.lower` needs: the backend, each node's tiling, fusion marks."""

    def __init__(
        self,
        backend: Backend,
        tilings: dict[int, Tiling],
        fused: set[int],
        pipelines: Mapping[int, RowPlanLike] | None = None,
    ) -> None:
        self.backend = backend
        self.tilings = tilings
        self.fused = fused
        #: per consuming node uid (a join or a fold), its inputs computed in row chunks
        #: (:mod:`spartan.frontend.pipeline`)
        self.pipelines: Mapping[int, RowPlanLike] = pipelines or {}

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


def chunk_rows(row_bytes: int, chunk_bytes: int) -> int:
    """Rows per chunk: what one chunk touches (inputs and every intermediate) fits
    ``chunk_bytes``, a core's share of cache.

    >>> chunk_rows(800, 8000)
    10
    """
    return max(1, chunk_bytes // max(1, row_bytes))


def row_groups(lo: int, hi: int, bounds: Collection[int]) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut at every bound inside it.

    >>> row_groups(0, 10, [4, 12])
    [(0, 4), (4, 10)]
    """
    cuts = sorted({lo, hi, *(b for b in bounds if lo < b < hi)})
    return list(zip(cuts[:-1], cuts[1:]))


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
    if isinstance(expr, View):
        vm, base = expr.vm, expr.base
        if base.data is None:
            raise RuntimeError(f"view {expr!r} read before its base was evaluated")
        out_axes = [a.base for a in vm.axes]
        return pieces(base.data, vm.selection(box), vm.perm(), out_axes, max(reader, 0))
    if expr.data is None:
        raise RuntimeError(f"{expr!r} read before it was evaluated")
    sel = tuple((lo, hi - lo, 1, False) for lo, hi in box)
    return pieces(expr.data, sel, None, range(len(box)), max(reader, 0))
