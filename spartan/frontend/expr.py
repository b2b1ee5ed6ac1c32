"""The lazy expression graph: a small base class, one subclass per operator.

Every node knows its ``shape`` and ``dtype`` when it is built (NumPy's rules), and
lowers itself to per-tile tasks in :meth:`Expr.lower` once the tiling of every node has
been chosen. An evaluated node keeps its :class:`~spartan.frontend.tiles.Tiles`
(``data``), so shared sub-expressions run once.

Each operator class carries its own facts as methods, with the defaults here: its node
in the optimizer's program (:meth:`Expr.program_node`), its local tiling rule
(:meth:`Expr.local_tiling`), whether it is computed inside its consumer
(:attr:`Expr.fusable`, :meth:`Expr.fuses`) and whether row pipelines may compute it
in row chunks (:meth:`Expr.row_local` and the methods after it). Planning, fusion and
the row pipelines ask these methods; none of them lists the operators. A new operator
is one module with its subclass, registered with :func:`register` (see
docs/architecture.md, "Adding an operator").
"""

from __future__ import annotations

import itertools
import math
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from spartan.tiling import Box, Tiling, box_shape

if TYPE_CHECKING:
    from collections.abc import Callable

    from spartan.frontend.lowering import Lowering
    from spartan.frontend.optimizer import Program
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

    # -- planning (spartan.frontend.planning) ------------------------------------------

    #: the shape is known before the node is computed (a filter's length is not): only
    #: then may a small node be kept whole on every worker
    shape_known = True

    def program_node(self, p: Program, ins: list[int]) -> int | None:
        """This node in the optimizer's program ``p`` (``ins``: its inputs' nodes), built
        with the :class:`~spartan.frontend.optimizer.Program` methods; None for an
        operator the optimizer has no profile for (a new array, a stored array): its
        output tiling is then free but for the chunks :meth:`storage` reads."""
        return None

    def local_tiling(self, tiling_of: Callable[[Expr], Tiling]) -> Tiling | None:
        """The tiling the local rules give this node, knowing its inputs' (``tiling_of``),
        where the optimizer is not asked; None for the default row tiling."""
        return None

    #: the algorithm this node runs where its program node offers several (set by
    #: :meth:`use_impl`); None for an operator with a single lowering
    impl: str | None = None

    def use_impl(self, impl: str | None) -> None:
        """Lower as ``impl``: the optimizer's choice for an operator whose program node
        offers alternative algorithms (a product's ``rows``/``inner``,
        :class:`spartan.frontend.products.Dot`), set before the node is lowered; None:
        as its local rule decides (no plan). An operator with one lowering never
        offers a choice."""
        if impl is not None:
            raise TypeError(f"{type(self).__name__} has a single lowering, not {impl!r}")

    # -- fusion (spartan.frontend.evaluate.fusable) ------------------------------------

    #: bytes its lowering moved that only the lowering could count (data-dependent: a
    #: filter's even re-cut of the parts it counted), added to the plan's prediction
    #: once the node is lowered (:meth:`spartan.frontend.planning.Planned.lowered`)
    counted_bytes = 0

    #: the node may be computed inside its consumers' tasks instead of into tiles of
    #: its own: a map, whose function joins the consumer's kernel (consumers inline it
    #: through :meth:`spartan.frontend.map.Map.tree`, so only maps set this)
    fusable = False
    #: a map-like consumer whose kernel inlines any fusable input: a replicated 0-d map
    #: read only by such consumers is computed again inside each (a fold inlines a
    #: fused map too, but is left out of this rule)
    inlines_fused = False

    def fuses(self, producer: Expr, tilings: dict[int, Tiling] | None) -> bool:
        """Whether this node, the only consumer of the fusable ``producer``, computes it
        inside its own tasks under ``tilings`` (None: tilings not chosen yet)."""
        return False

    # -- row pipelines (spartan.frontend.pipeline) -------------------------------------

    def row_candidate(self) -> bool:
        """Pending, free to tile, and with rows to chunk: what every row-local node is."""
        return (
            self.data is None
            and self.tiling_hint is None
            and len(self.shape) > 0
            and self.shape[0] >= 2
        )

    def row_local(self) -> bool:
        """Output row ``i`` depends only on row ``i`` of the inputs read by rows, so a
        row pipeline may compute this node chunk by chunk inside its consumer (it then
        also defines :meth:`row_operands` and :meth:`row_tree`)."""
        return False

    def row_operands(self) -> list[tuple]:
        """A row-local node's operands in its row tree: ``("op", self, child)`` (read by
        rows where aligned), ``("leaf", child, False)`` (read whole) or
        ``("const", value)``."""
        raise TypeError(f"{type(self).__name__} is not row-local")

    def row_tree(self, subtrees: tuple) -> tuple:
        """A row-local node as a pipeline tree node over its operands' ``subtrees``."""
        raise TypeError(f"{type(self).__name__} is not row-local")

    def row_aligned(self, child: Expr, index: int = 0) -> bool:
        """Whether this node reads row ``i`` of its input ``index`` (``child``: a node or
        a view of it) for its own row ``i`` (else that input is read whole)."""
        n = self.shape[0] if self.shape else 0
        return bool(child.shape) and child.shape[0] == n and n > 1

    def sums_rows(self, tilings: dict[int, Tiling]) -> bool:
        """A consumer that sums over rows, so row chunks of its pipelined inputs may be
        reduced one by one (a pipeline's sink)."""
        return False

    def makes_rows(self, tilings: dict[int, Tiling]) -> bool:
        """A consumer whose own tiles, when it is not itself pipelined, a pipeline over
        its input makes row chunk by row chunk."""
        return False

    def row_axes(self) -> tuple[int, ...]:
        """Per input of a sink, the axis it reads in row chunks (-1: whole)."""
        return (-1,) * len(self.children)

    #: several pipelines reading this row-local node each compute it (cheap element-wise
    #: work); False for nodes costly to recompute, made once as tiles instead
    recomputed_per_pipeline = True

    def __repr__(self) -> str:
        return f"<{self.label} #{self.uid} shape={self.shape} dtype={self.dtype}>"


#: the registered operators by class name (:func:`register`): every class whose nodes
#: compute tiles (a :class:`~spartan.frontend.view.View` computes none: it reads its
#: base's), listed for tools and tests; planning and lowering read each class's facts
OPERATORS: dict[str, type[Expr]] = {}

E = TypeVar("E", bound=type[Expr])


def register(cls: E) -> E:
    """Register an operator class (a decorator): its facts are its methods, so this is
    the one line a new operator adds besides its module. Checks that the class lowers
    itself and, if it may be row-local, that it says how its rows are computed.

    >>> @register
    ... class Twice(Expr):
    ...     def lower(self, ctx): ...
    >>> OPERATORS.pop("Twice") is Twice
    True
    """
    if not issubclass(cls, Expr):
        raise TypeError(f"{cls.__name__} is not an Expr subclass")
    if cls.lower is Expr.lower:
        raise TypeError(f"operator {cls.__name__} must define lower()")
    if cls.row_local is not Expr.row_local and (
        cls.row_operands is Expr.row_operands or cls.row_tree is Expr.row_tree
    ):
        raise TypeError(f"row-local operator {cls.__name__} must define row_operands/row_tree")
    known = OPERATORS.get(cls.__name__)
    if known is not None and (known.__module__, known.__qualname__) != (
        cls.__module__,
        cls.__qualname__,
    ):
        raise ValueError(f"an operator named {cls.__name__} is registered already ({known})")
    OPERATORS[cls.__name__] = cls
    return cls


def broadcast_box(box: Box, shape: Sequence[int]) -> Box:
    """The region of an input of ``shape`` that NumPy broadcasting reads for ``box``."""
    lead = len(box) - len(shape)
    return tuple((0, 1) if n == 1 else (lo, hi) for (lo, hi), n in zip(box[lead:], shape))


def full_box(shape: Sequence[int]) -> Box:
    return tuple((0, int(n)) for n in shape)


__all__ = ["Expr", "OPERATORS", "register", "broadcast_box", "full_box", "box_shape"]
