"""``fold``: reduce along axes with an associative, commutative ``combine``.

Each input tile computes a local partial where it lives (fused with the map that
produces it, if any); the partials travel to the owners of the output tiles they
overlap and are combined there. Only partials cross workers.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spartan.backend.base import Piece, Region
from spartan.backend.device import array_module
from spartan.frontend.expr import Expr, broadcast_box
from spartan.frontend.lowering import Lowering
from spartan.frontend.map import Kernel, Map
from spartan.tiling import Box, Tiling, box_shape

Local = Callable[[np.ndarray, tuple[int, ...], Box], np.ndarray]


class _LocalTask:
    """Task function: compute the input tile (maybe through a fused map), reduce it;
    with ``dtype`` set the result is final (no other tile shares its output)."""

    def __init__(
        self,
        kernel: Kernel | None,
        local: Local,
        axes: tuple[int, ...],
        box: Box,
        dtype: np.dtype | None = None,
    ):
        self.kernel, self.local, self.axes, self.box, self.dtype = kernel, local, axes, box, dtype

    def __call__(self, *blocks: np.ndarray) -> np.ndarray:
        block = self.kernel(*blocks) if self.kernel is not None else blocks[0]
        out = self.local(block, self.axes, self.box)
        out = array_module(out).asarray(out)
        return out if self.dtype is None else out.astype(self.dtype, copy=False)


class _CombineTask:
    def __init__(self, combine: Callable[[Any, Any], Any], final: Callable | None, dtype):
        self.combine, self.final, self.dtype = combine, final, dtype

    def __call__(self, *partials: np.ndarray) -> np.ndarray:
        out = functools.reduce(self.combine, partials)
        if self.final is not None:
            out = self.final(out)
        return array_module(out).asarray(out).astype(self.dtype, copy=False)


class Fold(Expr):
    """Reduce ``child`` over ``axes`` (the output drops them; keepdims is a view)."""

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
    ) -> None:
        self.axes = tuple(sorted(axes))
        shape = [n for i, n in enumerate(child.shape) if i not in self.axes]
        super().__init__(shape, dtype, [child])
        self.local, self.combine, self.final = local, combine, final
        self.partial_dtype = np.dtype(partial_dtype if partial_dtype is not None else dtype)
        self.name = name
        #: the output block of a tile that holds its reduced axes whole (default: final∘local)
        self.direct = direct

    @property
    def label(self) -> str:
        return f"fold({self.name})"

    def lower(self, ctx: Lowering) -> None:
        child = self.children[0]
        t_in = ctx.tiling(child)
        in_shape = child.shape
        kernel, leaves = None, [child]
        if isinstance(child, Map) and ctx.is_fused(child):
            leaves = []
            kernel = Kernel(child.tree(ctx, leaves), child.dtype, child.fully_elementwise(ctx))
        cuts = (1,) * len(in_shape) if t_in.replicated else t_in.cuts
        in_tiling = Tiling(cuts)
        kept = [i for i in range(len(in_shape)) if i not in self.axes]
        kept_tiling = Tiling(tuple(cuts[i] for i in kept))
        tiles = ctx.new_tiles(self)
        if (
            not t_in.replicated
            and tiles.tiling == kept_tiling
            and all(cuts[i] == 1 for i in self.axes)
        ):
            # every tile holds its reduced axes whole: its reduction is an output tile
            self._lower_local(ctx, in_tiling, leaves, kernel, tiles, kept)
            return
        # 1. local partials, one per input tile, where the tile lives
        partial_keys = {}
        for idx, box in in_tiling.tiles(in_shape):
            w = 0 if t_in.replicated else t_in.worker_of(idx, ctx.backend.nworkers)
            inputs = [ctx.region(leaf, broadcast_box(box, leaf.shape), w) for leaf in leaves]
            k = kernel.for_shape(box_shape(box)) if kernel is not None else None
            key = (self.uid, "partial", idx)
            ctx.backend.submit(w, _LocalTask(k, self.local, self.axes, box), inputs, [key])
            partial_keys[idx] = (key, w, box)
        # 2. combine on the owners of the output tiles
        reduced_ranges = [range(cuts[i]) for i in self.axes]
        task = _CombineTask(self.combine, self.final, self.dtype)
        for oidx, obox, w in tiles.placements():
            regions = []
            for r in itertools.product(*reduced_ranges):
                ps = []
                for q, inter in kept_tiling.overlapping(self.shape, obox):
                    full = _merge(q, r, kept, self.axes)
                    key, owner, box = partial_keys[full]
                    plo = [box[i][0] for i in kept]
                    src = tuple(slice(lo - p, hi - p) for (lo, hi), p in zip(inter, plo))
                    dst = tuple(slice(lo - o, hi - o) for (lo, hi), (o, _) in zip(inter, obox))
                    ps.append(Piece(owner, key, src, dst))
                regions.append(Region(box_shape(obox), self.partial_dtype, tuple(ps)))
            ctx.backend.submit(w, task, regions, [tiles.key(oidx)])
        ctx.backend.delete([k for k, _, _ in partial_keys.values()])
        self.data = tiles

    def _lower_local(self, ctx, in_tiling, leaves, kernel, tiles, kept) -> None:  # noqa: ANN001
        direct = self.direct or _Finalized(self.local, self.final)
        for idx, box in in_tiling.tiles(self.children[0].shape):
            w = in_tiling.worker_of(idx, ctx.backend.nworkers)
            inputs = [ctx.region(leaf, broadcast_box(box, leaf.shape), w) for leaf in leaves]
            k = kernel.for_shape(box_shape(box)) if kernel is not None else None
            task = _LocalTask(k, direct, self.axes, box, self.dtype)
            ctx.backend.submit(w, task, inputs, [tiles.key(tuple(idx[i] for i in kept))])
        self.data = tiles


class _Finalized:
    """``final(local(...))``: a tile's reduction when no other tile shares its output."""

    def __init__(self, local: Local, final: Callable | None):
        self.local, self.final = local, final

    def __call__(self, block: np.ndarray, axes: tuple[int, ...], box: Box) -> np.ndarray:
        out = self.local(block, axes, box)
        return out if self.final is None else self.final(out)


def _merge(kept_idx, reduced_idx, kept, reduced) -> tuple[int, ...]:
    out = [0] * (len(kept) + len(reduced))
    for i, v in zip(kept, kept_idx):
        out[i] = v
    for i, v in zip(reduced, reduced_idx):
        out[i] = v
    return tuple(out)
