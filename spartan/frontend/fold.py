"""``fold``: reduce along axes with an associative, commutative ``combine``.

Each input tile computes a local partial where it lives (fused with the map that
produces it, if any); the partials travel to the owners of the output tiles they
overlap and are combined there. Only partials cross workers. A view's tiles are those
of its base (:mod:`spartan.frontend.taskgrid`): ``x[1:].sum(axis=0)`` makes a partial
per base tile, each from its own worker's rows, whatever the view's offset or step.

Partials are combined in an order fixed when the fold is lowered -- a worker's tiles in
tile order, then the workers' partials in the order of their first tile -- never in the
order they arrive, so the same program gives the same bits on every run, and a re-run
task (a lost worker's, rebuilt from lineage with the same inputs) the same block.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from spartan.backend.base import Piece, Region
from spartan.backend.device import array_module
from spartan.backend.worker import stop_if_cancelled
from spartan.config import config
from spartan.frontend.expr import Expr, broadcast_box, register
from spartan.frontend.lowering import (
    Lowering,
    RowInputLike,
    WholeReads,
    chunk_rows,
    copy_tree,
    makes_once,
    row_groups,
)
from spartan.frontend.map import CHUNK, Kernel, Map
from spartan.frontend.taskgrid import Grid, input_grid
from spartan.frontend.view import View
from spartan.tiling import Box, Tiling, box_shape

if TYPE_CHECKING:
    from spartan.frontend.optimizer import Program

Local = Callable[[np.ndarray, tuple[int, ...], Box], np.ndarray]


class _LocalTask:
    """Task function: compute the input tile (maybe through a fused map), reduce it;
    with ``dtype`` set the result is final (no other tile shares its output), and
    ``final`` (if any) applied to it.

    With ``rows`` (a fused element-wise map reduced over axis 0), the map is computed
    and reduced ``rows`` rows at a time and the partials combined: the map's output
    never exists whole, and the inputs read by rows (flagged in ``row_stacks``) may
    arrive in pieces (:class:`~spartan.backend.worker.RowStack`), not copied into one
    region first.
    """

    def __init__(
        self,
        kernel: Kernel | None,
        local: Local,
        axes: tuple[int, ...],
        box: Box,
        dtype: np.dtype | None = None,
        final: Callable[[np.ndarray], np.ndarray] | None = None,
        rows: int | None = None,
        combine: Callable[[Any, Any], Any] | None = None,
        row_stacks: tuple[bool, ...] = (),
    ):
        self.kernel, self.local, self.axes, self.box, self.dtype = kernel, local, axes, box, dtype
        self.final, self.rows, self.combine = final, rows, combine
        if rows is not None:
            self.row_stacks = row_stacks

    def __call__(self, *blocks: np.ndarray) -> np.ndarray:
        if self.rows is not None:
            out = self._by_rows(blocks)
        else:
            block = self.kernel(*blocks) if self.kernel is not None else blocks[0]
            out = self.local(block, self.axes, self.box)
        if self.final is not None:
            out = self.final(out)
        out = array_module(out).asarray(out)
        return out if self.dtype is None else out.astype(self.dtype, copy=False)

    def _by_rows(self, blocks: Sequence[Any]) -> Any:
        def chunk(lo: int, hi: int) -> Any:
            part = [b[lo:hi] if r else b for b, r in zip(blocks, self.row_stacks)]
            return self.kernel.for_shape((hi - lo, *box_shape(self.box[1:])))(*part)

        return reduce_rows(chunk, self.box, self.rows, self.local, self.combine, self.axes)


def reduce_rows(
    chunk: Callable[[int, int], Any],
    box: Box,
    rows: int,
    local: Local,
    combine: Callable[[Any, Any], Any],
    axes: tuple[int, ...],
) -> Any:
    """The partial of ``box`` reduced ``rows`` rows at a time: ``chunk(lo, hi)`` gives
    the block of rows ``lo:hi`` (counted from the box's first row), ``local`` reduces
    it over ``axes`` and ``combine`` joins the partials in row order."""
    (first, last), rest = box[0], box[1:]
    partial = None
    for lo in range(0, last - first, rows):
        stop_if_cancelled()  # (Ctrl-C: between chunks, not after the tile)
        hi = min(last - first, lo + rows)
        part = local(chunk(lo, hi), axes, ((first + lo, first + hi), *rest))
        partial = part if partial is None else combine(partial, part)
    return partial


class _GroupPartial:
    """Task function: the partials of one worker's tiles of a kept region, combined."""

    def __init__(
        self, parts: list[Callable[..., Any]], nleaves: int, combine: Callable[[Any, Any], Any]
    ):
        self.parts, self.nleaves, self.combine = parts, nleaves, combine
        # the inputs each part reads only in row chunks (see Worker._gather)
        self.row_stacks = tuple(
            flag for p in parts for flag in getattr(p, "row_stacks", (False,) * nleaves)
        )

    def __call__(self, *blocks: np.ndarray) -> np.ndarray:
        n = self.nleaves
        partials = [part(*blocks[i * n : (i + 1) * n]) for i, part in enumerate(self.parts)]
        return functools.reduce(self.combine, partials)


class _CombineTask:
    """Task function: combine the partials of each region of an output tile, in place.

    ``layout`` lists, per region, where it goes in the tile and how many of the
    inputs (in order) are its partials.
    """

    def __init__(self, combine, final, dtype, shape=(), layout=()):  # noqa: ANN001
        self.combine, self.final, self.dtype = combine, final, dtype
        self.shape, self.layout = shape, layout

    def __call__(self, *partials: np.ndarray) -> np.ndarray:
        xp = array_module(*partials)
        regions, i = [], 0
        for dst, n in self.layout:
            regions.append((dst, functools.reduce(self.combine, partials[i : i + n])))
            i += n
        if not regions:  # an empty output tile
            return xp.empty(self.shape, dtype=self.dtype)
        first_dst, first = regions[0]
        if len(regions) == 1 and first.shape == tuple(self.shape):
            out = first
        else:
            out = (np if regions and isinstance(regions[0][1], np.ndarray) else xp).empty(
                self.shape, dtype=regions[0][1].dtype
            )
            for dst, value in regions:
                out[dst] = value
        if self.final is not None:
            out = self.final(out)
        return array_module(out).asarray(out).astype(self.dtype, copy=False)


@register
class Fold(Expr):
    """Reduce ``child`` over ``axes`` (the output drops them; keepdims is a view)."""

    #: narrow and costly to recompute (k-means' labels read a whole distance matrix):
    #: several pipelines reading a fold share its tiles
    recomputed_per_pipeline = False

    def __init__(
        self,
        child: Expr,
        axes: Sequence[int],
        local: Local,
        combine: Callable[[Any, Any], Any],
        dtype: Any,
        partial_dtype: Any = None,
        final: Callable[[np.ndarray], np.ndarray] | None = None,
        name: str = "fold",
        direct: Local | None = None,
        ordered: bool = False,
    ) -> None:
        self.axes = tuple(sorted(axes))
        shape = [n for i, n in enumerate(child.shape) if i not in self.axes]
        super().__init__(shape, dtype, [child])
        self.local, self.combine, self.final = local, combine, final
        self.partial_dtype = np.dtype(partial_dtype if partial_dtype is not None else dtype)
        self.name = name
        #: the output block of a tile that holds its reduced axes whole (default: final∘local)
        self.direct = direct
        #: ``combine`` is not associative (``subtract.reduce``): a tile is reduced in one
        #: call, never in row chunks (the caller keeps the reduced axes uncut)
        self.ordered = ordered

    @property
    def label(self) -> str:
        return f"fold({self.name})"

    def program_node(self, p: Program, ins: list[int]) -> int:
        size = self.dtype.itemsize
        return p.fold(ins[0], self.axes, size, self.partial_dtype.itemsize, self.label)

    def local_tiling(self, tiling_of: Callable[[Expr], Tiling]) -> Tiling | None:
        """The input's cuts of the kept axes, where it cuts any of them."""
        t_in = tiling_of(self.children[0])
        kept = [c for i, c in enumerate(t_in.cuts) if i not in self.axes]
        if not t_in.replicated and kept and any(c > 1 for c in kept):
            return Tiling(tuple(kept))
        return None

    def fuses(self, producer: Expr, tilings: dict[int, Tiling] | None) -> bool:
        """A map feeding only this fold is computed in its tasks, whatever the tilings."""
        return True

    def row_local(self) -> bool:
        """A fold over other axes than the rows (each row reduced on its own)."""
        return self.row_candidate() and 0 not in self.axes and self.children[0].ndim >= 2

    def row_operands(self) -> list[tuple]:
        return [("op", self, self.children[0])]

    def row_tree(self, subtrees: tuple) -> tuple:
        direct = self.direct or _Finalized(self.local, self.final)
        return ("fold", direct, self.axes, subtrees[0], self.dtype, self.uid)

    def row_axes(self) -> tuple[int, ...]:
        return (0,)

    def sums_rows(self, tilings: dict[int, Tiling]) -> bool:
        """A fold over axis 0 whose planned input tiles cut only the rows (its tasks then
        compute whole rows)."""
        t = tilings.get(self.children[0].uid)
        return (
            0 in self.axes
            and not self.ordered
            and t is not None
            and not t.replicated
            and t.cuts[0] > 1
            and all(c == 1 for c in t.cuts[1:])
        )

    def makes_rows(self, tilings: dict[int, Tiling]) -> bool:
        """A row-local fold tiled by rows alone: each row tile from its input's rows."""
        t = tilings.get(self.uid)
        return (
            self.row_local()
            and t is not None
            and not t.replicated
            and all(c == 1 for c in t.cuts[1:])
        )

    def lower(self, ctx: Lowering) -> None:
        child = self.children[0]
        t_in = ctx.tiling(child)
        in_shape = child.shape
        kernel, leaves = None, [child]
        cuts = (1,) * len(in_shape) if t_in.replicated else t_in.cuts
        piped = ctx.pipelines.get(self.uid)
        if piped and 0 not in self.axes:
            self._lower_tile_rows(ctx, piped[0])
            return
        if piped:  # the child is computed here in row chunks (spartan.frontend.pipeline)
            (ri,) = piped
            cuts = Tiling.row(in_shape, max(cuts[0], ri.row_cuts(ctx))).cuts
            leaves = [leaf for leaf, _ in ri.leaves]
        elif isinstance(child, Map) and ctx.is_fused(child):
            leaves = []
            kernel = Kernel(child.tree(ctx, leaves), child.dtype, child.fully_elementwise(ctx))
        nw = ctx.backend.nworkers
        if isinstance(child, View) and not piped:
            # a view's tasks follow its base's tiles (an offset or strided view too):
            # each reads its own worker's part of the view (spartan.frontend.taskgrid)
            grid = input_grid(ctx, child)
        else:
            grid = Grid.of(Tiling(cuts), in_shape, nw, on=0 if t_in.replicated else None)
        kept = [i for i in range(len(in_shape)) if i not in self.axes]
        kept_grid = Grid(tuple(grid.bounds[i] for i in kept), grid.workers)
        tiles = ctx.new_tiles(self)
        if (
            not piped
            and not t_in.replicated
            and not tiles.tiling.replicated
            and all(grid.cuts[i] == 1 for i in self.axes)
            and kept_grid == Grid.of(tiles.tiling, self.shape, nw)
        ):
            # every tile holds its reduced axes whole, where its output tile lives: its
            # reduction is that output tile
            self._lower_local(ctx, grid, leaves, kernel, tiles, kept)
            return
        # 1. one partial per (worker, kept tile index): a worker first combines the
        #    partials of its own tiles, so only one partial per output region leaves it.
        #    Tile order throughout (dicts keep it): the order of every combine below is
        #    fixed here, whatever order the partials are made or arrive in
        groups: dict[tuple[int, tuple[int, ...]], list[tuple[tuple[int, ...], Box]]] = {}
        for idx, box, w in grid.tiles():
            groups.setdefault((w, tuple(idx[i] for i in kept)), []).append((idx, box))
        partials: dict[tuple[int, ...], list[tuple[int, tuple]]] = {}
        fetched = WholeReads(ctx, self.uid)
        for (w, q), members in groups.items():
            inputs, parts = [], []
            for _, box in members:
                if piped:
                    inputs += ri.regions(ctx, box[0], w, fetched)
                    parts.append(ri.fold_rows(self.local, self.combine, self.axes, box))
                    continue
                boxes, task = self._tile_task(kernel, leaves, box, final=False)
                inputs += [ctx.region(leaf, b, w) for leaf, b in zip(leaves, boxes)]
                parts.append(task)
            key = (self.uid, "partial", w, q)
            ctx.backend.submit(w, _GroupPartial(parts, len(leaves), self.combine), inputs, [key])
            partials.setdefault(q, []).append((w, key))
        # 2. combine on the owners of the output tiles. The copies of a replicated
        #    output (placements: the same tile on every worker, one after another) read
        #    the same regions in the same order: worked out once, not once per worker,
        #    so the lowering stays linear in tiles whatever the worker count
        made: tuple[tuple[int, ...], list[Region], _CombineTask] | None = None
        made_once = makes_once(ctx, tiles.tiling)
        if made_once:
            # a copy on every worker of many: combined once, on worker 0, then copied
            # (every copy combining every partial was workers x partials pieces)
            copies = list(tiles.placements())
            oidx, obox, w = copies[0]
            regions, task = self._combine_inputs(kept_grid, partials, obox)
            ctx.backend.submit(w, task, regions, [tiles.key(oidx)])
            copy_tree(ctx, tiles.key(oidx), self.shape, self.dtype, [w for *_, w in copies])
        for oidx, obox, w in () if made_once else tiles.placements():
            if made is None or made[0] != oidx:
                made = (oidx, *self._combine_inputs(kept_grid, partials, obox))
            _, regions, task = made
            ctx.backend.submit(w, task, regions, [tiles.key(oidx)])
        ctx.backend.delete([key for ks in partials.values() for _, key in ks])
        fetched.release()
        self.data = tiles

    def _combine_inputs(
        self,
        kept_grid: Grid,
        partials: dict[tuple[int, ...], list[tuple[int, tuple]]],
        obox: Box,
    ) -> tuple[list[Region], _CombineTask]:
        """The partials output box ``obox`` combines (the parts of the kept tiles it
        overlaps, from every worker that made one, in tile order) and its task."""
        regions, layout = [], []
        for q, inter in kept_grid.overlapping(obox):
            qlo = [lo for lo, _ in kept_grid.box(q)]
            src = tuple(slice(lo - p, hi - p) for (lo, hi), p in zip(inter, qlo))
            whole = tuple(slice(None) for _ in inter)
            shape = box_shape(inter)
            for owner, key in partials[q]:
                piece = Piece(owner, key, src, whole)
                regions.append(Region(shape, self.partial_dtype, (piece,)))
            dst = tuple(slice(lo - o, hi - o) for (lo, hi), (o, _) in zip(inter, obox))
            layout.append((dst, len(partials[q])))
        task = _CombineTask(self.combine, self.final, self.dtype, box_shape(obox), layout)
        return regions, task

    def _tile_task(  # noqa: ANN001
        self, kernel: Kernel | None, leaves, box: Box, final: bool
    ) -> tuple[list[Box], _LocalTask]:
        """The boxes of ``leaves`` one input tile reads, and the task reducing it (to
        the output block when ``final``). A fused element-wise map reduced over axis 0
        is computed in row chunks whose rows read and result fit
        ``config.pipeline_chunk_bytes`` (and one kernel call; the kernel's own
        intermediates are not counted)."""
        boxes = [broadcast_box(box, leaf.shape) for leaf in leaves]
        k = kernel.for_shape(box_shape(box)) if kernel is not None else None
        dtype, fin = (self.dtype, self.final) if final else (None, None)
        if final and self.direct is not None:
            return boxes, _LocalTask(k, self.direct, self.axes, box, dtype)
        by_rows = tuple(len(b) == len(box) and b[0] == box[0] for b in boxes)
        n, width = box[0][1] - box[0][0], math.prod(box_shape(box[1:]))
        rows = None
        if (
            k is not None
            and k.elementwise
            and 0 in self.axes
            and not self.ordered
            and config.pipeline_rows
        ):
            row_bytes = k.dtype.itemsize * width + sum(
                leaf.dtype.itemsize * math.prod(box_shape(b[1:]))
                for leaf, b, r in zip(leaves, boxes, by_rows)
                if r
            )
            # no more elements than the kernel computes in one go (it would chunk again)
            rows = min(
                chunk_rows(row_bytes, config.pipeline_chunk_bytes),
                max(1, 2 * CHUNK // max(1, width)),
            )
            rows = rows if rows < n else None
        task = _LocalTask(k, self.local, self.axes, box, dtype, fin, rows, self.combine, by_rows)
        return boxes, task

    def _lower_tile_rows(self, ctx: Lowering, ri: RowInputLike) -> None:
        """Each row tile of the output from its rows of the pipelined child."""
        tiles = ctx.new_tiles(self)
        n = self.children[0].shape[0]
        bounds = ri.row_bounds(ctx, n)
        direct = self.direct or _Finalized(self.local, self.final)
        fetched = WholeReads(ctx, self.uid)
        for idx, box, w in tiles.placements():
            groups, inputs = [], []
            for lo, hi in row_groups(*box[0], bounds):
                groups.append((lo - box[0][0], lo, hi))
                inputs += ri.regions(ctx, (lo, hi), w, fetched)
            task = ri.fold_tile(direct, self.axes, box_shape(box), self.dtype, groups)
            ctx.backend.submit(w, task, inputs, [tiles.key(idx)])
        fetched.release()
        self.data = tiles

    def _lower_local(self, ctx, grid, leaves, kernel, tiles, kept) -> None:  # noqa: ANN001
        for idx, box, w in grid.tiles():
            boxes, task = self._tile_task(kernel, leaves, box, final=True)
            inputs = [ctx.region(leaf, b, w) for leaf, b in zip(leaves, boxes)]
            ctx.backend.submit(w, task, inputs, [tiles.key(tuple(idx[i] for i in kept))])
        self.data = tiles


class _Finalized:
    """``final(local(...))``: a tile's reduction when no other tile shares its output."""

    def __init__(self, local: Local, final: Callable | None):
        self.local, self.final = local, final

    def __call__(self, block: np.ndarray, axes: tuple[int, ...], box: Box) -> np.ndarray:
        out = self.local(block, axes, box)
        return out if self.final is None else self.final(out)
