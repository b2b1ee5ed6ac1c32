"""``reshape`` and ``concatenate``: nodes whose tiles read pieces of other arrays.

A reshaped tile is a run of the input in C order; each run is cut into at most a few
boxes of the input (a partial first row, whole rows, a partial last row, recursively),
read where they live and laid out in order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from spartan.frontend.expr import Expr, register
from spartan.frontend.lowering import Lowering
from spartan.tiling import Box, box_shape

if TYPE_CHECKING:
    from spartan.frontend.optimizer import Program


def flat_boxes(a: int, b: int, shape: Sequence[int]) -> list[Box]:
    """Boxes covering flat (C-order) positions ``[a, b)`` of ``shape``, in order."""
    if a >= b:
        return []
    if len(shape) == 1:
        return [((a, b),)]
    inner = math.prod(shape[1:])
    rest = tuple((0, n) for n in shape[1:])
    i0, r0 = divmod(a, inner)
    i1, r1 = divmod(b, inner)
    if i0 == i1:
        return [((i0, i0 + 1),) + bx for bx in flat_boxes(r0, r1, shape[1:])]
    out: list[Box] = []
    if r0:
        out += [((i0, i0 + 1),) + bx for bx in flat_boxes(r0, inner, shape[1:])]
        i0 += 1
    if i1 > i0:
        out.append(((i0, i1),) + rest)
    if r1:
        out += [((i1, i1 + 1),) + bx for bx in flat_boxes(0, r1, shape[1:])]
    return out


def flat_runs(box: Box, shape: Sequence[int]) -> list[tuple[int, int]]:
    """The C-order runs ``[a, b)`` of ``shape`` covered by ``box``, in order."""
    if not shape:
        return [(0, 1)]
    if any(hi <= lo for lo, hi in box):
        return []
    # trailing axes taken whole merge into one contiguous run
    k = len(shape)
    while k > 1 and box[k - 1] == (0, shape[k - 1]):
        k -= 1
    inner = math.prod(shape[k:])
    strides = [math.prod(shape[i + 1 : k]) * inner for i in range(k)]
    lo_last, hi_last = box[k - 1]
    runs = []
    for lead in np.ndindex(*[hi - lo for lo, hi in box[: k - 1]]):
        base = sum((lo + i) * s for i, (lo, _), s in zip(lead, box[: k - 1], strides))
        runs.append((base + lo_last * strides[k - 1], base + hi_last * strides[k - 1]))
    return runs


class _Concat:
    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape

    def __call__(self, *parts: np.ndarray) -> np.ndarray:
        if not parts:
            return np.empty(self.shape)
        return np.concatenate([p.reshape(-1) for p in parts]).reshape(self.shape)


@register
class Reshape(Expr):
    """``child`` with a new shape of the same size (C order)."""

    def __init__(self, child: Expr, shape: Sequence[int]) -> None:
        super().__init__(shape, child.dtype, [child])

    def program_node(self, p: Program, ins: list[int]) -> int:
        x = ins[0]
        try:
            return p.reshape(x, self.shape, name=self.label)
        except ValueError:  # a view, or not a merge/split: priced as lowered (one step)
            return p.reshape(x, self.shape, name=self.label, direct=True)

    def lower(self, ctx: Lowering) -> None:
        child = self.children[0]
        tiles = ctx.new_tiles(self)
        for idx, box, w in tiles.placements():
            inputs = [
                ctx.region(child, cbox, w)
                for a, b in flat_runs(box, self.shape)
                for cbox in flat_boxes(a, b, child.shape)
            ]
            ctx.backend.submit(w, _Concat(box_shape(box)), inputs, [tiles.key(idx)])
        self.data = tiles


class _Join:
    def __init__(self, axis: int, dtype: np.dtype):
        self.axis, self.dtype = axis, dtype

    def __call__(self, *parts: np.ndarray) -> np.ndarray:
        # each part cast to dtype at once, as NumPy's concatenate(dtype=) does (the
        # rule was checked when the expression was made)
        return np.concatenate(parts, axis=self.axis, dtype=self.dtype, casting="unsafe")


@register
class Concatenate(Expr):
    """Inputs joined along ``axis``; each output tile reads the inputs it overlaps."""

    def __init__(self, children: Sequence[Expr], axis: int, dtype: Any) -> None:
        shape = list(children[0].shape)
        shape[axis] = sum(c.shape[axis] for c in children)
        super().__init__(shape, dtype, children)
        self.axis = axis

    def program_node(self, p: Program, ins: list[int]) -> int:
        return p.concatenate(ins, self.axis, name=self.label)

    def lower(self, ctx: Lowering) -> None:
        tiles = ctx.new_tiles(self)
        ax = self.axis
        for idx, box, w in tiles.placements():
            lo, hi = box[ax]
            inputs, offset = [], 0
            for c in self.children:
                n = c.shape[ax]
                a, b = max(lo, offset), min(hi, offset + n)
                if a < b:
                    cbox = list(box)
                    cbox[ax] = (a - offset, b - offset)
                    inputs.append(ctx.region(c, tuple(cbox), w))
                offset += n
            if not inputs:
                inputs = [
                    ctx.region(
                        self.children[0],
                        tuple((0, 0) if i == ax else r for i, r in enumerate(box)),
                        w,
                    )
                ]
            ctx.backend.submit(w, _Join(ax, self.dtype), inputs, [tiles.key(idx)])
        self.data = tiles
