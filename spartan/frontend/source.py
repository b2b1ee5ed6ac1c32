"""Sources: ``newarray`` (tiles made on their workers) and arrays sent from the driver."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spartan.backend.device import contiguous
from spartan.frontend.expr import Expr, register
from spartan.frontend.lowering import Lowering
from spartan.tiling import Box, box_shape


class _Init:
    """Task function: ``init(box, shape, dtype)`` for one tile (picklable)."""

    def __init__(self, init: Callable[[Box, np.dtype], np.ndarray], box: Box, dtype: np.dtype):
        self.init, self.box, self.dtype = init, box, dtype

    def __call__(self) -> np.ndarray:
        block = np.asarray(self.init(self.box, self.dtype))
        shape = box_shape(self.box)
        if block.shape != shape:
            block = np.broadcast_to(block, shape).copy()
        return block.astype(self.dtype, copy=False)


@register
class NewArray(Expr):
    """An array whose tiles are made where they live by ``init(box, dtype)``.

    ``init`` gets the tile's global extent (``((lo, hi), ...)`` per axis), so contents
    can depend on position (``arange``) yet never on the tiling (``random``).
    """

    def __init__(
        self,
        shape: Sequence[int],
        dtype: Any,
        init: Callable[[Box, np.dtype], np.ndarray],
        name: str = "newarray",
    ) -> None:
        super().__init__(shape, dtype)
        self.init = init
        self.name = name

    @property
    def label(self) -> str:
        return self.name

    @property
    def driver_leaf(self) -> bool:
        return self.tiling_hint is None

    def small_values(self) -> np.ndarray:
        return _Init(self.init, tuple((0, n) for n in self.shape), self.dtype)()

    def lower(self, ctx: Lowering) -> None:
        tiles = ctx.new_tiles(self)
        for idx, box, w in tiles.placements():
            ctx.backend.submit(w, _Init(self.init, box, self.dtype), [], [tiles.key(idx)])
        self.data = tiles


@register
class FromNumpy(Expr):
    """A NumPy array from the driver, cut into tiles and put on their workers once."""

    def __init__(self, array: np.ndarray) -> None:
        super().__init__(array.shape, array.dtype)
        self.array = array

    @property
    def label(self) -> str:
        return "array"

    @property
    def driver_leaf(self) -> bool:
        # (None once sent to the workers)
        return self.array is not None and self.tiling_hint is None

    def small_values(self) -> np.ndarray | None:
        return self.array

    def lower(self, ctx: Lowering) -> None:
        tiles = ctx.new_tiles(self)
        for idx, box, w in tiles.placements():
            block = contiguous(self.array[tuple(slice(lo, hi) for lo, hi in box)])
            ctx.backend.put(tiles.key(idx), block, w)
        self.data = tiles
        self.array = None
