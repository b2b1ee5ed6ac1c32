"""``map``: a function applied tile by tile over broadcast inputs, with fusion.

Consecutive maps fuse into one :class:`Kernel` (a tree of functions over the task's
inputs) so a chain like ``a * b + c`` runs as one task per tile with no intermediate
arrays. Element-wise kernels run in row chunks that stay in cache.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spartan.backend.device import array_module
from spartan.frontend.expr import Expr, broadcast_box
from spartan.frontend.lowering import Lowering, identity
from spartan.tiling import box_shape

#: elements per chunk of an element-wise kernel (a few hundred KB of float64)
CHUNK = 1 << 15

Tree = tuple  # ("in", i) | ("const", value) | (fn, (subtrees...))

#: the tree of a copy or re-tiling: the input region as it is
COPY = (identity, (("in", 0),))


def run_tree(tree: Tree, blocks: Sequence[Any]) -> Any:
    head = tree[0]
    if isinstance(head, str):
        return blocks[tree[1]] if head == "in" else tree[1]
    return head(*(run_tree(t, blocks) for t in tree[1]))


class Kernel:
    """The task function of a (fused) map: ``tree`` over the input blocks."""

    def __init__(self, tree: Tree, dtype: np.dtype, elementwise: bool) -> None:
        self.tree = tree
        self.dtype = dtype
        self.elementwise = elementwise
        self._shaped: dict[tuple[int, ...], Kernel] = {}
        self.shape: tuple[int, ...] | None = None

    def for_shape(self, shape: tuple[int, ...]) -> Kernel:
        """The same kernel producing a block of ``shape`` (one object per tile shape)."""
        k = self._shaped.get(shape)
        if k is None:
            k = Kernel(self.tree, self.dtype, self.elementwise)
            k.shape = shape
            self._shaped[shape] = k
        return k

    def __getstate__(self) -> dict:
        return {
            "tree": self.tree,
            "dtype": self.dtype,
            "elementwise": self.elementwise,
            "shape": self.shape,
        }

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, _shaped={})

    def __call__(self, *blocks: Any) -> np.ndarray:
        shape = self.shape
        rows = shape[0] if shape else 0
        xp = array_module(*blocks)
        block = blocks[0] if self.tree == COPY else None
        if isinstance(block, xp.ndarray) and block.shape == shape and block.dtype == self.dtype:
            # a region assembled from several pieces is new memory: it is the tile (copying
            # it again took half of an 8000^2 re-tiling's time); a view of one block is copied
            return block if block.flags.owndata else block.copy()
        if self.elementwise and xp is np and rows > 1 and math.prod(shape) > 2 * CHUNK:
            out = np.empty(shape, self.dtype)
            step = max(1, CHUNK * rows // math.prod(shape))
            full = [b.ndim == len(shape) and b.shape[0] == rows for b in blocks]
            for lo in range(0, rows, step):
                part = [b[lo : lo + step] if f else b for b, f in zip(blocks, full)]
                out[lo : lo + step] = run_tree(self.tree, part)
            return out
        result = xp.asarray(run_tree(self.tree, blocks))
        if result.shape != shape:
            result = xp.broadcast_to(result, shape)
        return result.astype(self.dtype, copy=False)


class Map(Expr):
    """``fn(*operands)`` per output tile; operands are arrays or constants."""

    def __init__(
        self,
        fn: Callable[..., Any],
        operands: Sequence[Any],
        shape: Sequence[int],
        dtype: Any,
        elementwise: bool = True,
        name: str | None = None,
    ) -> None:
        super().__init__(shape, dtype, [o for o in operands if isinstance(o, Expr)])
        self.fn = fn
        self.operands = tuple(operands)
        self.elementwise = elementwise
        self.name = name or getattr(fn, "__name__", "map")

    @property
    def label(self) -> str:
        return f"map({self.name})"

    def tree(self, ctx: Lowering, leaves: list[Expr]) -> Tree:
        """This map's function tree, inlining fused input maps; collects the leaves."""
        subtrees = []
        for op in self.operands:
            if not isinstance(op, Expr):
                subtrees.append(("const", op))
            elif ctx.is_fused(op):
                subtrees.append(op.tree(ctx, leaves))
            else:
                if not any(leaf is op for leaf in leaves):
                    leaves.append(op)
                subtrees.append(("in", next(i for i, leaf in enumerate(leaves) if leaf is op)))
        return (self.fn, tuple(subtrees))

    def done(self) -> None:
        """Evaluated: drop the operands too (they would keep every earlier array of an
        iteration ``x = f(x)`` alive, and its tiles on the workers)."""
        super().done()
        self.operands = ()

    def fully_elementwise(self, ctx: Lowering) -> bool:
        return self.elementwise and all(
            op.fully_elementwise(ctx) for op in self.children if ctx.is_fused(op)
        )

    def lower(self, ctx: Lowering) -> None:
        leaves: list[Expr] = []
        kernel = Kernel(self.tree(ctx, leaves), self.dtype, self.fully_elementwise(ctx))
        tiles = ctx.new_tiles(self)
        for idx, box, w in tiles.placements():
            inputs = [ctx.region(leaf, broadcast_box(box, leaf.shape), w) for leaf in leaves]
            ctx.backend.submit(w, kernel.for_shape(box_shape(box)), inputs, [tiles.key(idx)])
        self.data = tiles
