"""``map``: a function applied tile by tile over broadcast inputs, with fusion.

Consecutive maps fuse into one :class:`Kernel` (a tree of functions over the task's
inputs) so a chain like ``a * b + c`` runs as one task per tile with no intermediate
arrays. Element-wise kernels run in row chunks that stay in cache.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from spartan.backend.device import array_module
from spartan.frontend.expr import Expr, broadcast_box, register
from spartan.frontend.lowering import Lowering, identity
from spartan.tiling import Tiling, box_shape

if TYPE_CHECKING:
    from spartan.frontend.optimizer import Program

#: elements per chunk of an element-wise kernel (a few hundred KB of float64)
CHUNK = 1 << 15

Tree = tuple  # ("in", i) | ("const", value) | (fn, (subtrees...))

#: the tree of a copy or re-tiling: the input region as it is
COPY = (identity, (("in", 0),))


#: a kernel step: (IN, input index), (CONST, value) or (CALL, function, argument count)
IN, CONST, CALL = 0, 1, 2
Steps = tuple  # of steps, inputs before the calls that take them (postfix)


def steps_of(tree: Tree) -> Steps:
    """``tree`` in postfix order, walked without recursion: a fused chain is as deep as
    the loop that built it, and the flat steps also pickle without recursing (a nested
    tree pickles one C call per level, which counts against Python's recursion limit).

    >>> steps_of((np.add, (("in", 0), ("const", 1))))
    ((0, 0), (1, 1), (2, <ufunc 'add'>, 2))
    """
    out: list[tuple] = []
    stack = [tree]
    while stack:  # right-to-left preorder, reversed below: children before parents
        node = stack.pop()
        head = node[0]
        if isinstance(head, str):
            out.append((IN, node[1]) if head == "in" else (CONST, node[1]))
        else:
            out.append((CALL, head, len(node[1])))
            stack.extend(node[1])
    out.reverse()
    return tuple(out)


#: the steps of :data:`COPY`
COPY_STEPS = steps_of(COPY)


def run_steps(steps: Steps, blocks: Sequence[Any]) -> Any:
    """The value of a kernel's steps over ``blocks`` (an explicit stack, no recursion)."""
    stack: list[Any] = []
    for step in steps:
        kind = step[0]
        if kind == IN:
            stack.append(blocks[step[1]])
        elif kind == CONST:
            stack.append(step[1])
        else:
            n = step[2]
            if n == 1:
                stack[-1] = step[1](stack[-1])
            else:
                args = stack[len(stack) - n :]
                del stack[len(stack) - n :]
                stack.append(step[1](*args))
    return stack[0]


def run_tree(tree: Tree, blocks: Sequence[Any]) -> Any:
    """``tree`` over ``blocks`` (see :func:`steps_of`)."""
    return run_steps(steps_of(tree), blocks)


class Kernel:
    """The task function of a (fused) map: ``tree`` over the input blocks."""

    def __init__(self, tree: Tree, dtype: np.dtype, elementwise: bool) -> None:
        #: the tree as flat postfix steps: run, and pickled, without recursion
        self.steps = steps_of(tree)
        self.dtype = dtype
        self.elementwise = elementwise
        self._shaped: dict[tuple[int, ...], Kernel] = {}
        self.shape: tuple[int, ...] | None = None

    def for_shape(self, shape: tuple[int, ...]) -> Kernel:
        """The same kernel producing a block of ``shape`` (one object per tile shape)."""
        k = self._shaped.get(shape)
        if k is None:
            k = Kernel.__new__(Kernel)
            k.__setstate__(self.__getstate__())
            k.shape = shape
            self._shaped[shape] = k
        return k

    def __getstate__(self) -> dict:
        return {
            "steps": self.steps,
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
        block = blocks[0] if len(self.steps) == 2 and self.steps == COPY_STEPS else None
        if isinstance(block, xp.ndarray) and block.shape == shape and block.dtype == self.dtype:
            # a region assembled from several pieces is new memory: it is the tile (copying
            # it again adds a pass over every new tile); a view of one block is copied
            return block if block.flags.owndata else block.copy()
        if self.elementwise and xp is np and rows > 1 and math.prod(shape) > 2 * CHUNK:
            out = np.empty(shape, self.dtype)
            step = max(1, CHUNK * rows // math.prod(shape))
            full = [b.ndim == len(shape) and b.shape[0] == rows for b in blocks]
            for lo in range(0, rows, step):
                part = [b[lo : lo + step] if f else b for b, f in zip(blocks, full)]
                out[lo : lo + step] = run_steps(self.steps, part)
            return out
        result = xp.asarray(run_steps(self.steps, blocks))
        if result.shape != shape:
            result = xp.broadcast_to(result, shape)
        return result.astype(self.dtype, copy=False)


@register
class Map(Expr):
    """``fn(*operands)`` per output tile; operands are arrays or constants."""

    fusable = True
    inlines_fused = True

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

    def program_node(self, p: Program, ins: list[int]) -> int:
        size = self.dtype.itemsize
        shapes = [c.shape for c in self.children]
        # (all inputs of the output's shape, the common case, broadcast to it: no call)
        if any(s != self.shape for s in shapes or [()]) and (
            tuple(np.broadcast_shapes(*shapes)) != self.shape
        ):
            # broadcast to a larger shape: a free-tiled stand-in carries the output shape
            ins = [*ins, p.source(self.shape, size, None, name="shape")]
        return p.map(*ins, itemsize=size, name=self.label)

    def local_tiling(self, tiling_of: Callable[[Expr], Tiling]) -> Tiling | None:
        """The tiling of the first input of the output's shape (nothing moves)."""
        first = next((c for c in self.children if c.shape == self.shape), None)
        return None if first is None else tiling_of(first)

    def fuses(self, producer: Expr, tilings: dict[int, Tiling] | None) -> bool:
        """A same-shape input tiled alike joins this map's kernel (otherwise reading
        through it would cost more than its tiles)."""
        return producer.shape == self.shape and (
            tilings is None or tilings[producer.uid] == tilings[self.uid]
        )

    def row_local(self) -> bool:
        return self.row_candidate() and self.elementwise

    def row_operands(self) -> list[tuple]:
        return [("op", self, op) if isinstance(op, Expr) else ("const", op) for op in self.operands]

    def row_tree(self, subtrees: tuple) -> tuple:
        return ("map", self.fn, subtrees, self.dtype, self.shape[1:], self.uid)

    def row_aligned(self, child: Expr, index: int = 0) -> bool:
        # NumPy lines a shorter operand up with the trailing axes: its first axis is
        # not the rows
        return child.ndim == self.ndim and super().row_aligned(child, index)

    def tree(self, ctx: Lowering, leaves: list[Expr]) -> Tree:
        """This map's function tree, inlining fused input maps; collects the leaves in
        the order a left-to-right walk meets them. Walked without recursion: a fused
        chain is as deep as the loop that built it."""
        index = {id(leaf): i for i, leaf in enumerate(leaves)}
        done: list[Tree] = []  # finished subtrees; a map's operands' are the last ones
        stack: list[tuple[bool, Any]] = [(False, self)]  # (build?, map or operand)
        while stack:
            build, item = stack.pop()
            if build:
                n = len(item.operands)
                subtrees = tuple(done[len(done) - n :])
                del done[len(done) - n :]
                done.append((item.fn, subtrees))
            elif not isinstance(item, Expr):
                done.append(("const", item))
            elif item is self or (isinstance(item, Map) and ctx.is_fused(item)):
                stack.append((True, item))
                stack.extend((False, op) for op in reversed(item.operands))
            else:
                i = index.get(id(item))
                if i is None:
                    i = index[id(item)] = len(leaves)
                    leaves.append(item)
                done.append(("in", i))
        return done[0]

    def done(self) -> None:
        """Evaluated: drop the operands too (they would keep every earlier array of an
        iteration ``x = f(x)`` alive, and its tiles on the workers)."""
        super().done()
        self.operands = ()

    def fully_elementwise(self, ctx: Lowering) -> bool:
        """Whether this map and every fused map inside it are element-wise."""
        stack: list[Map] = [self]
        while stack:
            node = stack.pop()
            if not node.elementwise:
                return False
            stack.extend(op for op in node.children if isinstance(op, Map) and ctx.is_fused(op))
        return True

    def lower(self, ctx: Lowering) -> None:
        leaves: list[Expr] = []
        kernel = Kernel(self.tree(ctx, leaves), self.dtype, self.fully_elementwise(ctx))
        tiles = ctx.new_tiles(self)
        for idx, box, w in tiles.placements():
            inputs = [ctx.region(leaf, broadcast_box(box, leaf.shape), w) for leaf in leaves]
            ctx.backend.submit(w, kernel.for_shape(box_shape(box)), inputs, [tiles.key(idx)])
        self.data = tiles
