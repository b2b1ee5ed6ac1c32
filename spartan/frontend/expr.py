"""The lazy expression graph: a small base class, one subclass per operator.

Every node knows its ``shape`` and ``dtype`` when it is built (NumPy's rules), and
lowers itself to per-tile tasks in :meth:`Expr.lower` once the tiling of every node has
been chosen. An evaluated node keeps its :class:`~spartan.frontend.tiles.Tiles`
(``data``), so shared sub-expressions run once.
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from spartan.tiling import Box, Tiling, box_shape

if TYPE_CHECKING:
    from spartan.frontend.lowering import Lowering
    from spartan.frontend.optimizer.storage import StorageChunks
    from spartan.frontend.tiles import Tiles
    from spartan.frontend.viewmap import ViewMap

_uids = itertools.count()
#: every unevaluated node alive (views included): a bound on the size of any one pending
#: graph, since each of its nodes is here. Summing inputs' counts instead double-counts
#: shared inputs and grows exponentially in a loop like CG's.
_unevaluated: weakref.WeakSet[Expr] = weakref.WeakSet()


class Expr:
    """A lazy array: shape, dtype, inputs, and (once evaluated) its tiles."""

    #: views read through to their base and never hold tiles of their own
    is_view = False

    def __init__(self, shape: Sequence[int], dtype: Any, children: Sequence[Expr] = ()) -> None:
        self.uid = next(_uids)
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.children = tuple(children)
        self._data: Tiles | None = None
        _unevaluated.add(self)
        self.tiling_hint: Tiling | None = None
        #: the optimizer's plan of the evaluation that computed this node
        self.planned: Any = None
        #: unevaluated nodes behind this one: an upper bound (shared inputs count once
        #: per path, and no more than every unevaluated node alive)
        paths = 1 + sum(c.pending for c in self.children if c.data is None)
        self.pending = min(paths, len(_unevaluated))
        #: the longest path of unevaluated nodes ending here (this node included), as
        #: counted when it was made (inputs evaluated since then still count): what
        #: :func:`spartan.frontend.evaluate.too_deep` bounds
        self.depth = 1 + max((c.depth for c in self.children if c.data is None), default=0)

    @property
    def data(self) -> Tiles | None:
        """The node's tiles once evaluated (None before)."""
        return self._data

    @data.setter
    def data(self, tiles: Tiles | None) -> None:
        self._data = tiles
        if tiles is None:
            _unevaluated.add(self)
        else:
            _unevaluated.discard(self)
            self.depth = 0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # (Python ints: exact, and far cheaper than np.prod)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def label(self) -> str:
        return type(self).__name__.lower()

    #: a leaf whose values the driver can make without any worker (a new array, data
    #: from the driver): a small graph of such leaves is computed in the driver
    driver_leaf = False
    #: the contents of a (distributed) array's buffer: a graph computed in the driver
    #: must not include it, or its tiles would live with the driver's workers
    held = False

    def small_values(self) -> np.ndarray | None:
        """This node's values made in the driver, where that needs no computation
        (a new array, data from the driver); None for a node that must be evaluated.
        A small array (``config.local_below_bytes``) made from such a node is held in
        the driver instead of lazily."""
        return None

    def storage(self, pieces: int) -> StorageChunks | None:
        """The storage chunks this node is read in (a stored array), else None; its
        tilings are cut into ``pieces`` tiles."""
        return None

    def viewed(self, vm: ViewMap) -> Expr | None:
        """A node equal to the view ``vm`` of this one that reads only what the view
        sees (a stored array not read yet reads just the chunks the view touches);
        None where the view must read this node's tiles."""
        return None

    def lower(self, ctx: Lowering) -> None:
        """Submit the tasks that compute this node's tiles; set ``self.data``."""
        raise TypeError(f"{type(self).__name__} cannot be lowered")

    def done(self) -> None:
        """Evaluated: drop the inputs so their tiles can be freed."""
        self.children = ()
        self.pending = 0
        self.depth = 0

    def __repr__(self) -> str:
        return f"<{self.label} #{self.uid} shape={self.shape} dtype={self.dtype}>"


def broadcast_box(box: Box, shape: Sequence[int]) -> Box:
    """The region of an input of ``shape`` that NumPy broadcasting reads for ``box``."""
    lead = len(box) - len(shape)
    return tuple((0, 1) if n == 1 else (lo, hi) for (lo, hi), n in zip(box[lead:], shape))


def full_box(shape: Sequence[int]) -> Box:
    return tuple((0, int(n)) for n in shape)


__all__ = ["Expr", "broadcast_box", "full_box", "box_shape"]
