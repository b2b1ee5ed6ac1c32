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

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Protocol

from spartan.backend.base import Backend, Key, Piece, Region
from spartan.frontend.expr import Expr, full_box
from spartan.frontend.taskgrid import BROADCAST_ABOVE, BROADCAST_FANOUT, made_once
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
    once, into a block its tasks read, and :meth:`release` frees those blocks.

    An input of many tiles is broadcast through a tree of its readers: the first
    reader fetches every piece from its owner; reader ``k`` fetches what it does not
    hold from reader ``(k - 1) // BROADCAST_FANOUT``'s copy, in a few boxes. Every
    reader gets the same bytes from elsewhere as from the owners (all but its own
    tiles), so bytes moved are unchanged; the pieces the driver builds and hands on
    are about ``tiles + readers * (own tiles + 4)`` instead of ``tiles * readers``.
    """

    def __init__(self, ctx: Lowering, owner: int) -> None:
        self.ctx, self.owner = ctx, owner
        self.read: dict[tuple[int, int], Region | tuple] = {}
        #: per input uid: its pieces (the same for every reader), made once
        self.pieces: dict[int, tuple[Piece, ...]] = {}
        #: per input uid: the readers that fetched it into a block, in order (the tree)
        self.copies: dict[int, list[tuple[int, tuple]]] = {}

    def __call__(self, expr: Expr, reader: int) -> Region | tuple:
        """``expr`` whole on worker ``reader``: its region when every piece is there,
        else the key of the block it was fetched into."""
        at = (expr.uid, reader)
        if at in self.read:
            return self.read[at]
        box = full_box(expr.shape)
        if _replicated_source(expr):  # a copy on every worker: its own, nothing moves
            self.read[at] = self.ctx.region(expr, box, reader)
            return self.read[at]
        if expr.uid not in self.pieces:  # (owners do not depend on the reader here)
            self.pieces[expr.uid] = tuple(read_pieces(expr, box, reader))
        every = self.pieces[expr.uid]
        shape = box_shape(box)
        remote = sum(p.worker != reader for p in every)
        if not remote:
            self.read[at] = Region(shape, expr.dtype, every)
            return self.read[at]
        key = self.read[at] = (self.owner, "whole", expr.uid, reader)
        copies = self.copies.setdefault(expr.uid, [])
        if remote > BROADCAST_ABOVE and copies:
            parent, parent_key = copies[(len(copies) - 1) // BROADCAST_FANOUT]
            got = Region(shape, expr.dtype, from_copy(every, reader, parent, parent_key))
        else:
            got = Region(shape, expr.dtype, every)
        copies.append((reader, key))
        self.ctx.backend.submit(reader, identity, [got], [key])
        return key

    def release(self) -> None:
        """Free the fetched blocks (after the tasks that read them were submitted)."""
        self.ctx.backend.delete([k for k in self.read.values() if not isinstance(k, Region)])


def copy_tree(
    ctx: Lowering, key: Key, shape: tuple[int, ...], dtype: Any, workers: Sequence[int]
) -> None:
    """Block ``key`` of ``shape``, made on ``workers[0]``, copied onto the other
    ``workers`` under the same key: the ``k``-th reads the copy of
    ``workers[(k - 1) // BROADCAST_FANOUT]`` (a replicated output made once, not once
    per worker from every partial: ``len(workers)`` pieces, ``shape``'s bytes each)."""
    whole = tuple(slice(0, n) for n in shape)
    for k in range(1, len(workers)):
        parent = workers[(k - 1) // BROADCAST_FANOUT]
        region = Region(tuple(shape), dtype, (Piece(parent, key, whole, whole),))
        ctx.backend.submit(workers[k], identity, [region], [key])


def makes_once(ctx: Lowering, tiling: Tiling) -> bool:
    """Whether an output tiled ``tiling`` is made on its first worker and copied to the
    others (:func:`copy_tree`; :func:`~spartan.frontend.taskgrid.made_once`, the rule
    the cost model prices too)."""
    return made_once(tiling, ctx.backend.nworkers)


def _replicated_source(expr: Expr) -> bool:
    """Whether ``expr``'s data (a view's base's) is a copy on every worker."""
    data = expr.base.data if isinstance(expr, View) else expr.data
    return data is not None and data.tiling.replicated


def from_copy(every: Sequence[Piece], reader: int, holder: int, key: Key) -> tuple[Piece, ...]:
    """The pieces of a whole read (``every``) on ``reader``: its own as they are, the
    rest from the whole copy ``key`` on ``holder``, in as few boxes as adjacent pieces
    merge into (a row-tiled input: the rows before and after the reader's own).

    >>> s = lambda lo, hi: (slice(lo, hi), slice(0, 4))
    >>> every = [Piece(w, ("x", (i, 0)), (), s(i, i + 1)) for i, w in enumerate([0, 0, 1, 2, 2])]
    >>> [(p.worker, p.dst[0]) for p in from_copy(every, 1, 0, "copy")]
    [(0, slice(0, 2, None)), (1, slice(2, 3, None)), (0, slice(3, 5, None))]
    """
    out: list[Piece | tuple] = []  # own pieces, and boxes of the copy (merged as met)
    for p in every:
        if p.worker == reader:
            out.append(p)
            continue
        out.append(p.dst)
        while len(out) > 1 and isinstance(out[-1], tuple) and isinstance(out[-2], tuple):
            joined = _joined(out[-2], out[-1])
            if joined is None:
                break
            out[-2:] = [joined]
    return tuple(b if isinstance(b, Piece) else Piece(holder, key, b, b) for b in out)


def _joined(a: tuple, b: tuple) -> tuple | None:
    """Boxes ``a`` and ``b`` (unit-step slices) as one box, where ``b`` continues ``a``
    along one axis and they are equal along the others; else None."""
    if len(a) != len(b):
        return None
    differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    if len(differ) != 1:
        return None
    (i,) = differ
    x, y = a[i], b[i]
    if not (isinstance(x, slice) and isinstance(y, slice)):
        return None
    if x.step not in (None, 1) or y.step not in (None, 1) or x.stop != y.start:
        return None
    return (*a[:i], slice(x.start, y.stop), *a[i + 1 :])


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
