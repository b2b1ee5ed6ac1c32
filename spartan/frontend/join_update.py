"""``join_update``: join groups of tiles, emit ``(location, update)`` pairs, combine.

Each input ``i`` is split into ``G`` groups along ``axes[i]`` (``-1``: the whole array
joins every group; a worker fetches it once for all its groups).
``f_join(extents, *blocks)`` runs once per group, on the worker of
the group's first tile, and returns ``(location, update)`` pairs; each update is cut
by the output's tiling and sent to the owners of the output tiles it touches, which
combine collisions with ``f_accum`` onto an output that starts at ``fill``, in group
order (a task's groups in order; the tasks' update lists in the order of their first
group), fixed when the join is lowered: never in arrival order, so results repeat to
the bit, also after a lost worker's tasks are re-run.

>>> def f(ext, xt, y):                   # row tiles of x times the whole y
...     return [(ext[0].rows, xt @ y)]
>>> y = sp.ones((3, 2))
>>> sp.join_update(f, np.add, [x, y], axes=[0, -1], shape=(2, 2))
array([[ 3.,  3.],
       [12., 12.]])

Without ``f_accum``, an ``f_join`` that makes one update per group may also say where
it lands before making it (``f_join.place(extents)``) and write it into a given array
(``f_join.into(out, *blocks)``): an update that lands whole in an output tile its own
task finishes is then written straight into that tile, not made apart and copied in.
"""

from __future__ import annotations

import bisect
import itertools
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from spartan.backend.base import Piece, Region
from spartan.backend.device import array_module, contiguous
from spartan.frontend.expr import Expr, register
from spartan.frontend.lowering import Lowering, WholeReads, copy_tree, makes_once
from spartan.frontend.tiles import axis_runs
from spartan.frontend.view import View
from spartan.tiling import Box, Tiling, box_shape

if TYPE_CHECKING:
    from spartan.frontend.optimizer import Program


@dataclass(frozen=True)
class Extent:
    """The global region of one input block given to ``f_join``."""

    box: Box

    @property
    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(lo, hi) for lo, hi in self.box)

    @property
    def rows(self) -> tuple[slice, ...]:
        """The block's first-axis range, for updates that cover whole output rows."""
        return (slice(*self.box[0]),)

    @property
    def lo(self) -> tuple[int, ...]:
        return tuple(lo for lo, _ in self.box)

    @property
    def shape(self) -> tuple[int, ...]:
        return box_shape(self.box)


def location_runs(loc: Any, shape: Sequence[int]) -> list[tuple[int, int, int]]:
    """An update location (slices with any step, or ints, for a prefix of the axes) as
    ``(start, count, step)`` per output axis."""
    if not isinstance(loc, tuple):
        loc = (loc,)
    runs = []
    for i, n in enumerate(shape):
        s = loc[i] if i < len(loc) else slice(None)
        if isinstance(s, slice):
            start, stop, step = s.indices(n)
            runs.append((start, len(range(start, stop, step)), step))
        else:
            runs.append((int(s) % n if n else 0, 1, 1))
    return runs


def integer_axes(loc: Any) -> tuple[int, ...]:
    """The output axes a location indexes with an integer (they have no update axis)."""
    parts = loc if isinstance(loc, tuple) else (loc,)
    return tuple(i for i, p in enumerate(parts) if not isinstance(p, slice))


class _JoinTask:
    """Run ``f_join`` on the groups of one worker and cut their updates by the output
    tiling; with ``f_accum``, updates to the same location are combined here first, so
    a worker sends one update per location instead of one per group."""

    def __init__(  # noqa: ANN001
        self,
        f_join,
        groups,
        nin,
        f_accum,
        out_shape,
        out_tiling: Tiling,
        targets,
        chunked=None,
        finish=None,
        take=None,
    ):
        self.f_join, self.groups, self.nin, self.f_accum = f_join, groups, nin, f_accum
        self.out_shape, self.out_tiling, self.targets = out_shape, out_tiling, targets
        #: a :class:`~spartan.frontend.pipeline.ChunkedJoin` when inputs are pipelined
        #: (given by the lowering: this module does not import the pipelines)
        self.chunked = chunked
        #: output tiles whose every update comes from this task: target -> _Accumulate
        self.finish = finish or {}
        #: per group and input, the block it reads: (task input, None) or (task input,
        #: slices of it) where a worker's groups share one read (None: in order)
        self.take = take

    def _group_updates(self, extents: tuple, blocks: tuple) -> Iterable[tuple[Any, Any]]:
        if self.chunked is not None:
            return self.chunked(self.f_join, extents, blocks)
        return self.f_join(extents, *blocks) or ()

    def updates(self, blocks: tuple) -> list[tuple[Any, Any]]:
        """Every group's ``(location, update)`` pairs, those at one location combined
        by ``f_accum``; an update ``f_join`` can write in place is a :class:`_Deferred`."""
        out: list[tuple[Any, Any]] = []
        merged: dict[str, list] = {}
        per = self.chunked.nblocks if self.chunked is not None else self.nin
        direct = self.f_accum is None and self.chunked is None and hasattr(self.f_join, "into")
        for i, extents in enumerate(self.groups):
            group_blocks = blocks[i * per : (i + 1) * per]
            if direct:
                update = _Deferred(self.f_join, extents, group_blocks)
                out.append((self.f_join.place(extents), update))
                continue
            for loc, update in self._group_updates(extents, group_blocks):
                if self.f_accum is None:
                    out.append((loc, update))
                elif repr(loc) in merged:
                    entry = merged[repr(loc)]
                    entry[1] = self.f_accum(entry[1], update)
                else:
                    merged[repr(loc)] = [loc, update]
        return out + [(loc, update) for loc, update in merged.values()]

    def __call__(self, *blocks: np.ndarray) -> list | tuple[list, ...]:
        if self.take is not None:
            blocks = tuple(blocks[k] if s is None else blocks[k][s] for k, s in self.take)
        per_tile: dict[tuple[int, ...], list] = {t: [] for t in self.targets}
        for loc, update in self.updates(blocks):
            runs = location_runs(loc, self.out_shape)
            pieces = self._pieces(runs)
            if isinstance(update, _Deferred):
                if not integer_axes(loc) and len(pieces) == 1:
                    idx, dst, _, whole = pieces[0]
                    if whole and idx in self.finish:  # (then the tile is this task's alone)
                        per_tile[idx].append((dst, update))
                        continue
                update = update.value()
            xp = array_module(update)
            upd = xp.asarray(update)
            dropped = integer_axes(loc)
            if dropped and upd.ndim == len(self.out_shape) - len(dropped):
                upd = xp.expand_dims(upd, dropped)  # an integer drops its axis, as in NumPy
            shape = tuple(count for _, count, _ in runs)
            if upd.shape != shape:
                upd = xp.broadcast_to(upd, shape)
            elif any(update is b for b in blocks):
                upd = upd[...]  # a view: a tile made of it must not be an input's block
            for idx, dst, src, whole in pieces:
                if idx not in per_tile:
                    raise ValueError(
                        f"join_update: an update at {loc!r} leaves the rows its group "
                        "promised with update_axis"
                    )
                per_tile[idx].append((dst, contiguous(upd if whole else upd[src])))
        out = tuple(
            self.finish[t](per_tile[t]) if t in self.finish else per_tile[t] for t in self.targets
        )
        return out[0] if len(out) == 1 else out  # one output: the value itself

    def _pieces(self, runs: list[tuple[int, int, int]]) -> list[tuple]:
        """The output tiles an update at ``runs`` (:func:`location_runs`) touches: per
        tile its index, the update's place in it, the part of the update that goes
        there, and whether that part is the whole update."""
        per_axis = [
            axis_runs(start, count, step, n, c)
            for (start, count, step), n, c in zip(runs, self.out_shape, self.out_tiling.cuts)
        ]
        pieces = []
        for combo in itertools.product(*per_axis):
            dst, src = [], []
            for (start, _, step), (_, tlo, k_lo, k_hi) in zip(runs, combo):
                first = start + step * k_lo - tlo
                stop = first + step * (k_hi - k_lo)
                dst.append(slice(first, stop if stop >= 0 else None, step))
                src.append(slice(k_lo, k_hi))
            idx = tuple(run[0] for run in combo)
            whole = all(
                k_lo == 0 and k_hi == count for (_, count, _), (*_, k_lo, k_hi) in zip(runs, combo)
            )
            pieces.append((idx, tuple(dst), tuple(src), whole))
        return pieces


class _Deferred:
    """A group's one update, not made yet: written straight into its place in the output
    tile that its task finishes (a GEMV's 16 row products per worker were each made
    apart, then copied into the tile: 32 MB more written and read), else made."""

    def __init__(self, f_join: Any, extents: tuple, blocks: Sequence[Any]) -> None:
        self.f_join, self.extents, self.blocks = f_join, extents, blocks

    def value(self) -> Any:
        ((_, update),) = self.f_join(self.extents, *self.blocks)
        return update

    def write(self, out: Any) -> None:
        self.f_join.into(out, *self.blocks)


class _Accumulate:
    """Apply every update for one output tile onto ``fill`` (or the base's tile)."""

    def __init__(self, f_accum, box: Box, dtype: np.dtype, fill: Any, has_base: bool):
        self.f_accum, self.box, self.dtype = f_accum, box, dtype
        self.fill, self.has_base = fill, has_base

    def __call__(self, *inputs: Any) -> np.ndarray:
        lone = self._lone_update(inputs)
        if lone is not None:
            return lone
        if self.has_base:
            out = array_module(inputs[0]).array(inputs[0], dtype=self.dtype, copy=True)
            lists = inputs[1:]
        else:
            arrays = [u for updates in inputs for _, u in updates[:1]]
            xp = array_module(*[b for u in arrays for b in _arrays_in(u)])
            shape = box_shape(self.box)
            if self.f_accum is None and _cut_along_one_axis(
                [s for updates in inputs for s, _ in updates], shape
            ):  # every element is set once: the fill would be a wasted pass
                out = xp.empty(shape, dtype=self.dtype)
            else:
                out = xp.full(shape, self.fill, dtype=self.dtype)
            lists = inputs
        for updates in lists:
            for s, upd in updates:  # s: the update's place in this tile
                if isinstance(upd, _Deferred):
                    upd.write(out[s])
                else:
                    out[s] = upd if self.f_accum is None else self.f_accum(out[s], upd)
        return out

    def _lone_update(self, inputs: tuple) -> Any:
        """The tile when one update, set (not accumulated) over all of it, makes it: the
        update itself if it is new memory of the tile's dtype (filling the tile and
        copying the update in were two passes over it; a GEMV's 32 MB result tile took
        ~7 ms of its worker's time), else a copy."""
        if self.has_base or self.f_accum is not None or len(inputs) != 1 or len(inputs[0]) != 1:
            return None
        (s, upd), shape = inputs[0][0], box_shape(self.box)
        if getattr(upd, "shape", None) != shape or not all(
            sl.start in (0, None) and sl.stop in (n, None) and sl.step in (1, None)
            for sl, n in zip(s, shape)
        ):
            return None
        if upd.dtype == self.dtype and upd.flags.c_contiguous and upd.flags.owndata:
            return upd
        return array_module(upd).array(upd, dtype=self.dtype, copy=True)


def call_site() -> str:
    """``file:line`` of the first caller outside spartan's own modules."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("spartan."):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else "?"


def _arrays_in(update: Any) -> Sequence[Any]:
    """The arrays an update is (its blocks, for one not made yet)."""
    return update.blocks if isinstance(update, _Deferred) else (update,)


def _cut_along_one_axis(places: Sequence[tuple[slice, ...]], shape: tuple[int, ...]) -> bool:
    """Whether the update places (a slice per axis of a tile of ``shape``) cut the tile
    into runs along one axis, end to end: each element is then in exactly one place.

    >>> _cut_along_one_axis([(slice(2, 4), slice(0, 3)), (slice(0, 2), slice(0, 3))], (4, 3))
    True
    """
    if not places or not shape:
        return False
    spans = []
    for place in places:
        if len(place) != len(shape):
            return False
        span = []
        for sl, n in zip(place, shape):
            lo, hi, step = sl.indices(n)
            if step != 1:
                return False
            span.append((lo, hi))
        spans.append(span)
    cut = [a for a, n in enumerate(shape) if any(span[a] != (0, n) for span in spans)]
    if len(cut) > 1:
        return False
    axis = cut[0] if cut else 0
    edge = 0
    for lo, hi in sorted(span[axis] for span in spans):
        if lo != edge:
            return False
        edge = hi
    return edge == shape[axis]


def _slabs_cross_tiles(ctx: Lowering, x: Expr, axis: int) -> bool:
    """Whether a slab of ``x`` along ``axis`` (whole along its other axes) lies in
    several of its tiles: ``x`` (evaluated, not a view) is cut along another axis."""
    if isinstance(x, View):
        return False
    t = ctx.tiling(x)
    return not t.replicated and any(c > 1 for k, c in enumerate(t.cuts) if k != axis)


@register
class JoinUpdate(Expr):
    """The output of a ``join_update`` (see the module docstring)."""

    def __init__(
        self,
        f_join: Callable[..., Iterable[tuple[Any, Any]]],
        f_accum: Callable[[Any, Any], Any] | None,
        inputs: Sequence[Expr],
        axes: Sequence[int],
        shape: Sequence[int],
        dtype: Any,
        fill: Any = 0,
        base: Expr | None = None,
        groups: int | None = None,
        name: str = "join_update",
        update_axis: int | None = None,
    ) -> None:
        if len(axes) != len(inputs):
            raise ValueError(f"join_update got {len(inputs)} inputs but {len(axes)} axes")
        for x, a in zip(inputs, axes):
            if a != -1 and not 0 <= a < len(x.shape):
                raise np.exceptions.AxisError(a, len(x.shape))
        children = list(inputs) + ([base] if base is not None else [])
        super().__init__(shape, dtype, children)
        self.f_join, self.f_accum = f_join, f_accum
        self.axes, self.fill = tuple(axes), fill
        self.ninputs = len(inputs)
        self.has_base = base is not None
        if update_axis is not None:
            if all(a < 0 for a in axes):
                raise ValueError("join_update: update_axis needs an input joined along an axis")
            if not -len(shape) <= update_axis < len(shape):
                raise np.exceptions.AxisError(update_axis, len(shape))
            update_axis %= len(shape)
        self.groups = groups
        self.name = name
        #: a promise that each group's updates stay within the output range, along this
        #: axis, that the group covers of the first joined input along its axis (a
        #: product of row tiles): a group then feeds only the output tiles it overlaps
        self.update_axis = update_axis
        #: where the user's code called this join_update: the same site in a loop
        #: shares measured update costs across iterations
        self.site = (name, call_site())

    @property
    def label(self) -> str:
        return self.name

    def program_node(self, p: Program, ins: list[int]) -> int:
        n = self.ninputs
        base = ins[n] if self.has_base else None
        return p.join_update(
            ins[:n],
            self.axes,
            self.shape,
            self.dtype.itemsize,
            self.estimated_update_axis(),
            self.site,
            self.groups,
            base,
            self.label,
        )

    def estimated_update_axis(self) -> int | None:
        """The output axis the cost model takes each group's updates to stay within:
        the promised ``update_axis``; else, for a join without an accumulator (each
        output element is written once, so the groups' updates partition the output),
        the output axis as long as the axis the groups cut of the first joined input
        (a stack of small solves: group ``g``'s matrices give output rows ``g``). A
        guess for the first run only: measured bytes correct it after."""
        if self.update_axis is not None or self.f_accum is not None or self.has_base:
            return self.update_axis
        joined = [(x, a) for x, a in zip(self.children, self.axes) if a >= 0]
        if not joined:
            return None
        x, a = joined[0]
        n = x.shape[a]
        if a < len(self.shape) and self.shape[a] == n:
            return a
        return next((k for k, m in enumerate(self.shape) if m == n), None)

    def _is_dot_a(self) -> bool:
        """A ``dot(a)`` product (``f(X) @ W``): row ``i`` of the output from row ``i``
        of ``X`` and the whole of ``W``."""
        return (
            self.name == "dot(a)"
            and self.f_accum is None
            and not self.has_base
            and self.axes == (0, -1)
        )

    def row_local(self) -> bool:
        return self.row_candidate() and self._is_dot_a()

    def row_operands(self) -> list[tuple]:
        x, y = self.children
        return [("op", self, x), ("leaf", y, False)]

    def row_tree(self, subtrees: tuple) -> tuple:
        x, y = subtrees
        return ("dot", self.f_join, x, y, self.dtype, self.uid)

    def row_aligned(self, child: Expr, index: int = 0) -> bool:
        """Only the first input is read by rows (the second is joined whole)."""
        return index == 0 and super().row_aligned(child, index)

    def row_axes(self) -> tuple[int, ...]:
        return self.axes

    def sums_rows(self, tilings: dict[int, Tiling]) -> bool:
        """A ``dot(b)`` product (``A.T @ B``): it sums the partial products of its row
        groups."""
        return (
            self.name == "dot(b)"
            and self.f_accum is not None
            and not self.has_base
            and self.ninputs == 2
        )

    def makes_rows(self, tilings: dict[int, Tiling]) -> bool:
        """A ``dot(a)`` product: its row groups write their own rows."""
        return self._is_dot_a() and self.data is None

    def group_count(self, ctx: Lowering) -> int:
        """Groups follow the first joined input's tiles along its axis (and, for
        pipelined inputs, the finest row cut of what they read)."""
        if self.groups:
            return self.groups
        piped = ctx.pipelines.get(self.uid)
        if not piped:
            return self._input_groups(ctx)
        # follow the finest cut of everything read by groups: each read is then one tile
        cuts = [ri.row_cuts(ctx) for ri in piped]
        for i, (x, a) in enumerate(zip(self.children, self.axes)):
            t = ctx.tiling(x)
            if a >= 0 and all(ri.index != i for ri in piped) and not t.replicated:
                cuts.append(t.cuts[a])
        # nothing read is cut along the groups' axis (a strided or offset view's rows,
        # replicated leaves): the groups of an unpipelined join, not one group that
        # fetches every row to one worker
        return max(cuts) if max(cuts) > 1 else self._input_groups(ctx)

    def _input_groups(self, ctx: Lowering) -> int:
        for x, a in zip(self.children, self.axes):
            if a >= 0:
                t = ctx.tiling(x)
                if not t.replicated and t.cuts[a] > 1:
                    return t.cuts[a]
                return max(1, min(x.shape[a], ctx.backend.nworkers))
        return 1

    def lower(self, ctx: Lowering) -> None:
        nw = ctx.backend.nworkers
        groups = self.group_count(ctx)
        tiles = ctx.new_tiles(self)
        out_tiling = tiles.tiling
        grid = Tiling((1,) * len(self.shape)) if out_tiling.replicated else out_tiling
        targets = list(grid.tile_indices())
        inputs = self.children[: self.ninputs]
        piped = ctx.pipelines.get(self.uid)
        chunked = None
        if piped:  # its inputs computed in row chunks (spartan.frontend.pipeline)
            chunked = piped.chunked_join(self)
        if (
            not piped
            and self.groups is None
            and not self.has_base
            and out_tiling.replicated
            and all(ctx.tiling(x).replicated for x in inputs)
        ):
            self._lower_everywhere(ctx, tiles, grid, targets)
            return
        by_index = {ri.index: ri for ri in piped or ()}
        whole = WholeReads(ctx, self.uid)
        update_keys: dict[tuple[int, ...], list] = {t: [] for t in targets}
        made_on: dict[tuple, int] = {}  # each update key's worker
        per_worker: dict[int, list] = {}
        # updates accumulate: one task per worker, whose groups' reads may be shared
        shared = self.f_accum is not None and not piped
        reads = {}  # per worker (shared): its task's regions and each group's blocks
        for g in range(groups):
            boxes = []
            for x, a in zip(inputs, self.axes):
                box = [(0, n) for n in x.shape]
                if a >= 0:
                    n = x.shape[a]
                    box[a] = (g * n // groups, (g + 1) * n // groups)
                boxes.append(tuple(box))
            w = self._worker(ctx, inputs, boxes, g, groups, nw)
            if shared:  # read per worker below, once for all its groups
                per_worker.setdefault(w, []).append((w, None, tuple(Extent(b) for b in boxes)))
                continue
            regions = []
            for i, (x, b, a) in enumerate(zip(inputs, boxes, self.axes)):
                ri = by_index.get(i)
                if ri is None:
                    regions.append(ctx.region(x, b, w) if a >= 0 else whole(x, w))
                    continue
                if chunked is not None and i in chunked.twins:
                    continue  # (its chunk is its twin's, transposed: nothing to read)
                regions += ri.regions(ctx, b[ri.axis], w, whole)
            extents = tuple(Extent(b) for b in boxes)
            # one task per worker when updates accumulate or every read is local (a
            # group's share fetched from elsewhere stays in a task of its own)
            local = all(p.worker == w for r in regions if isinstance(r, Region) for p in r.pieces)
            batch = w if self.f_accum is not None or local else (w, g)
            per_worker.setdefault(batch, []).append((w, regions, extents))
        for w, items in per_worker.items() if shared else ():
            reads[w] = self._batch_reads(ctx, inputs, w, [e for *_, e in items], whole)
        # each output tile's (box, worker); none when it is replicated on every worker
        placed = {} if out_tiling.replicated else {t: (box, tw) for t, box, tw in tiles.tiles()}
        fed = self._fed_tiles(placed, per_worker, targets)
        feeders: dict[tuple[int, ...], list] = {t: [] for t in targets}
        for b in per_worker:
            for t in fed[b]:
                feeders[t].append(b)
        for b, items in per_worker.items():
            w = items[0][0]
            # a tile of this worker fed by this task alone is finished by it
            finish = {
                t: _Accumulate(self.f_accum, placed[t][0], self.dtype, self.fill, False)
                for t in fed[b]
                if not self.has_base and t in placed and placed[t][1] == w and feeders[t] == [b]
            }
            keys = [tiles.key(t) if t in finish else (self.uid, "upd", b, t) for t in fed[b]]
            task = _JoinTask(
                self.f_join,
                [e for _, _, e in items],
                len(inputs),
                self.f_accum,
                self.shape,
                grid,
                fed[b],
                chunked,
                finish,
                reads[b][1] if shared else None,
            )
            regions = reads[b][0] if shared else [r for _, rs, _ in items for r in rs]
            ctx.backend.submit(w, task, regions, keys)
            for t, k in zip(fed[b], keys):
                if t not in finish:
                    update_keys[t].append(k)
                    made_on[k] = w
                else:
                    update_keys.pop(t)
        base = self.children[self.ninputs] if self.has_base else None
        # an update list read from elsewhere, made once (a replicated output's copies
        # all read every list: not once per copy)
        fetch_of: dict[tuple, Region] = {}
        # a copy on every worker of many: accumulated once, on worker 0, then copied
        # (every copy reading every update list was workers x lists pieces)
        made_once = makes_once(ctx, out_tiling) and targets[0] in update_keys
        placements = list(tiles.placements())
        for idx, box, w in placements[:1] if made_once else placements:
            t = idx if not out_tiling.replicated else targets[0]
            if t not in update_keys:  # finished by its join task
                continue
            ins = [ctx.region(base, box, w)] if base is not None else []
            # an update list from elsewhere: about a tile's bytes (how it travels)
            nbytes = math.prod(box_shape(box)) * self.dtype.itemsize
            for k in update_keys[t]:
                if made_on[k] != w and k not in fetch_of:
                    fetch_of[k] = Region(None, None, (Piece(made_on[k], k, (), ()),), nbytes)
            ins += [k if made_on[k] == w else fetch_of[k] for k in update_keys[t]]
            task = _Accumulate(self.f_accum, box, self.dtype, self.fill, self.has_base)
            ctx.backend.submit(w, task, ins, [tiles.key(idx)])
        if made_once:
            idx = placements[0][0]
            copy_tree(ctx, tiles.key(idx), self.shape, self.dtype, [w for *_, w in placements])
        ctx.backend.delete([k for ks in update_keys.values() for k in ks])
        whole.release()
        self.data = tiles

    def _batch_reads(
        self, ctx: Lowering, inputs: Sequence[Expr], w: int, groups: list[tuple], whole: Any
    ) -> tuple[list, list[tuple[int, Any]]]:
        """The regions one worker's task reads for its ``groups`` (their extents, in
        order), and each group's block of each input as ``(region index, slices)``.

        Consecutive groups whose slabs of an input lie in several of its tiles each (a
        column slab of a row-tiled ``x`` in ``x @ y`` by inner blocks: a piece of every
        row tile) read the slabs' union once, each group a slice of it: pieces grow with
        the tiles, not tiles x groups. The bytes are the same (the slabs are disjoint).
        """
        regions: list = []
        union: dict[int, tuple[int, int]] = {}  # input -> (region index, start along axis)
        for i, (x, a) in enumerate(zip(inputs, self.axes)):
            if a < 0 or len(groups) < 2 or not _slabs_cross_tiles(ctx, x, a):
                continue
            spans = [g[i].box[a] for g in groups]
            if any(p[1] != q[0] for p, q in zip(spans, spans[1:])):
                continue  # (not consecutive groups: each reads its own)
            box = list(groups[0][i].box)
            box[a] = (spans[0][0], spans[-1][1])
            union[i] = (len(regions), spans[0][0])
            regions.append(ctx.region(x, tuple(box), w))
        take: list[tuple[int, Any]] = []
        for g in groups:
            for i, (x, a) in enumerate(zip(inputs, self.axes)):
                if i in union:
                    k, start = union[i]
                    lo, hi = g[i].box[a]
                    take.append((k, (slice(None),) * a + (slice(lo - start, hi - start),)))
                    continue
                take.append((len(regions), None))
                regions.append(ctx.region(x, g[i].box, w) if a >= 0 else whole(x, w))
        return regions, take

    def _fed_tiles(self, placed: dict, per_worker: dict, targets: list) -> dict[Any, list]:
        """The output tiles each join task may update: all of them, unless
        ``update_axis`` says which rows each group's updates stay within. Found from
        the tiles' place along that axis, not by testing every tile against every task
        (which was tasks x tiles)."""
        ua = self.update_axis
        if ua is None or not placed:
            return {b: targets for b in per_worker}
        i, a = next((i, a) for i, a in enumerate(self.axes) if a >= 0)
        order = {t: k for k, t in enumerate(placed)}  # C order of the tile index
        along: dict[int, list] = {}  # tiles by their index along update_axis
        for t in placed:
            along.setdefault(t[ua], []).append(t)
        # each slot's [lo, hi) along update_axis (the output tiling's even cuts)
        spans_of = sorted({t[ua]: placed[t][0][ua] for t in placed}.items())
        starts = [lo for _, (lo, _) in spans_of]
        fed = {}
        for b, items in per_worker.items():
            hit: set[int] = set()
            for _, _, extents in items:
                lo, hi = extents[i].box[a]
                k = max(bisect.bisect_right(starts, lo) - 1, 0)
                while k < len(spans_of) and spans_of[k][1][0] < hi:
                    if lo < spans_of[k][1][1]:
                        hit.add(spans_of[k][0])
                    k += 1
            fed[b] = sorted((t for p in hit for t in along[p]), key=order.__getitem__)
        return fed

    def _lower_everywhere(self, ctx: Lowering, tiles: Any, grid: Tiling, targets: list) -> None:
        """Every input and the output whole on every worker: each worker joins the
        whole inputs it holds into its own copy, and nothing crosses workers."""
        inputs = self.children[: self.ninputs]
        boxes = [tuple((0, n) for n in x.shape) for x in inputs]
        extents = tuple(Extent(b) for b in boxes)
        for idx, box, w in tiles.placements():  # each worker's join finishes its copy
            finish = {targets[0]: _Accumulate(self.f_accum, box, self.dtype, self.fill, False)}
            task = _JoinTask(
                self.f_join,
                [extents],
                len(inputs),
                self.f_accum,
                self.shape,
                grid,
                targets,
                finish=finish,
            )
            regions = [ctx.region(x, b, w) for x, b in zip(inputs, boxes)]
            ctx.backend.submit(w, task, regions, [tiles.key(idx)])
        self.data = tiles

    def _worker(self, ctx, inputs, boxes, g, groups, nw) -> int:
        """The worker holding the start of the group's first joined input; groups whose
        slabs cross every tile of it (it is not cut along their axis) spread over the
        workers, as the cost model places them (``optimizer.profiles._join_tasks``):
        else every group, and the whole product, would run on one worker."""
        for x, a, box in zip(inputs, self.axes, boxes):
            if a < 0:
                continue
            t = ctx.tiling(x)
            crossing = t.cuts[a] == 1 and t.ntiles > 1
            if t.replicated or isinstance(x, View) or crossing:
                break
            corner = tuple((lo, lo + 1) for lo, _ in box)
            hit = next(t.overlapping(x.shape, corner), None)
            if hit is not None:
                return t.worker_of(hit[0], nw)
        return g * nw // groups
