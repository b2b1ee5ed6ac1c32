"""The optimizer's program IR: a DAG of array operations with known shapes.

The frontend adapts its lazy expressions into a :class:`Program`; the optimizer never
sees user functions, only what decides communication: the operator kind, shapes,
element sizes, axes and views. Builder methods validate their arguments the way NumPy
does and return the new node's id.

>>> p = Program()
>>> a = p.source((4, 6), name="A")
>>> b = p.map(a, p.transpose(p.source((6, 4))))
>>> p[b].shape
(4, 6)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, SupportsIndex, cast

import numpy as np

from spartan.frontend.optimizer.storage import StorageChunks
from spartan.frontend.viewmap import ViewMap
from spartan.tiling import Tiling

#: Operator kinds whose output is a view of their input (no task, no tiles of their own).
VIEW_OPS = frozenset({"slice", "transpose", "view"})
OPS = (
    frozenset(
        {"source", "map", "fold", "scan", "filter", "join_update", "dot", "reshape", "concatenate"}
    )
    | VIEW_OPS
)


@dataclass(frozen=True)
class Node:
    """One operation: ``op`` kind, output ``shape``/``itemsize``, input ids, params."""

    id: int
    op: str
    shape: tuple[int, ...]
    itemsize: int
    inputs: tuple[int, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    name: str = ""

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def is_view(self) -> bool:
        return self.op in VIEW_OPS

    @property
    def label(self) -> str:
        return self.name or f"{self.op}#{self.id}"


class Program:
    """An append-only list of :class:`Node`; ids are positions, inputs precede users."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        # views resolve to (root id, one composed ViewMap over the root)
        self._roots: dict[int, tuple[int, ViewMap]] = {}

    # ---- container -----------------------------------------------------------------
    def __getitem__(self, node_id: int) -> Node:
        return self.nodes[node_id]

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    @property
    def noperators(self) -> int:
        """Nodes that are operations (everything but sources)."""
        return sum(1 for n in self.nodes if n.op != "source")

    def root(self, node_id: int) -> tuple[int, ViewMap | None]:
        """The non-view node a node reads from and the view mapping onto it."""
        if node_id in self._roots:
            return self._roots[node_id]
        return node_id, None

    def users(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                out[i].append(n.id)
        return out

    # ---- builders ------------------------------------------------------------------
    def _add(
        self,
        op: str,
        shape: Sequence[int],
        itemsize: int,
        inputs: Sequence[int] = (),
        name: str = "",
        **params: Any,
    ) -> int:
        node = Node(
            len(self.nodes),
            op,
            tuple(int(s) for s in shape),
            int(itemsize),
            tuple(inputs),
            MappingProxyType(dict(params)),
            name,
        )
        self.nodes.append(node)
        return node.id

    def _input(self, x: int) -> Node:
        try:
            i = operator.index(x)
        except TypeError:
            raise TypeError(f"inputs are node ids (int), got {type(x).__name__}") from None
        if not 0 <= i < len(self.nodes):
            raise ValueError(f"no node {i} in a program of {len(self.nodes)} nodes")
        return self.nodes[i]

    def source(
        self,
        shape: Sequence[int],
        itemsize: int = 8,
        tiling: Tiling | None = None,
        name: str = "",
        storage: StorageChunks | None = None,
    ) -> int:
        """An array that exists before the program: evaluated with a fixed ``tiling``,
        or ``None`` for a fresh ``newarray`` the optimizer tiles freely; ``storage``:
        the chunks a stored array is read in (a tiling that splits them costs the
        chunks read twice)."""
        shape = _shape(shape)
        _itemsize(itemsize)
        if tiling is not None:
            if not isinstance(tiling, Tiling):
                raise TypeError(f"tiling must be a Tiling or None, got {type(tiling).__name__}")
            tiling.check(shape)
        if storage is not None and len(storage.axes) != len(shape):
            raise ValueError(f"storage chunks of {len(storage.axes)} axes for shape {shape}")
        return self._add("source", shape, itemsize, (), name, tiling=tiling, storage=storage)

    def map(self, *inputs: int, itemsize: int | None = None, name: str = "") -> int:
        """Element-wise over inputs with NumPy broadcasting."""
        if not inputs:
            raise ValueError("map needs at least one input")
        nodes = [self._input(i) for i in inputs]
        try:
            shape = np.broadcast_shapes(*(n.shape for n in nodes))
        except ValueError:
            shapes = " ".join(str(n.shape) for n in nodes)
            raise ValueError(
                f"operands could not be broadcast together with shapes {shapes}"
            ) from None
        size = max(n.itemsize for n in nodes) if itemsize is None else _itemsize(itemsize)
        return self._add("map", shape, size, [n.id for n in nodes], name)

    def fold(
        self,
        x: int,
        axis: int | Sequence[int] | None = None,
        itemsize: int | None = None,
        partial_itemsize: int | None = None,
        name: str = "",
    ) -> int:
        """Reduce over ``axis`` (an int, a tuple, or ``None`` for all: a scalar).
        Partials travel with ``partial_itemsize`` bytes per element (default: output's)."""
        n = self._input(x)
        nd = len(n.shape)
        if axis is None:
            axes = tuple(range(nd))
        else:
            raw: tuple[SupportsIndex, ...]
            if isinstance(axis, int) or np.ndim(axis) == 0:
                # an int or a 0-d NumPy integer; _axis checks it with operator.index
                raw = (cast(SupportsIndex, axis),)
            else:
                raw = tuple(axis)
            axes = tuple(sorted(_axis(a, nd) for a in raw))
            if len(set(axes)) != len(axes):
                raise ValueError("duplicate value in 'axis'")
        shape = tuple(s for i, s in enumerate(n.shape) if i not in axes)
        size = n.itemsize if itemsize is None else _itemsize(itemsize)
        partial = size if partial_itemsize is None else _itemsize(partial_itemsize)
        return self._add("fold", shape, size, [n.id], name, axes=axes, partial_itemsize=partial)

    def scan(self, x: int, axis: int, itemsize: int | None = None, name: str = "") -> int:
        """Cumulative reduction along ``axis``; same shape as ``x``."""
        n = self._input(x)
        axis = _axis(axis, len(n.shape))
        size = n.itemsize if itemsize is None else _itemsize(itemsize)
        return self._add("scan", n.shape, size, [n.id], name, axis=axis)

    def filter(self, x: int, mask: int, count: int, name: str = "") -> int:
        """``x[mask]``: a 1-D array of the (estimated) ``count`` selected elements."""
        xn, mn = self._input(x), self._input(mask)
        if xn.shape != mn.shape:
            raise IndexError(
                f"boolean index did not match indexed array: mask shape {mn.shape}, "
                f"array shape {xn.shape}"
            )
        if not xn.shape:
            raise ValueError("filter needs an array of at least one dimension")
        count = operator.index(count)
        if not 0 <= count <= xn.size:
            raise ValueError(f"filter count {count} outside [0, {xn.size}]")
        return self._add("filter", (count,), xn.itemsize, [xn.id, mn.id], name)

    def join_update(
        self,
        inputs: Sequence[int],
        axes: Sequence[int],
        shape: Sequence[int],
        itemsize: int = 8,
        update_axis: int | None = None,
        site: Any = None,
        groups: int | None = None,
        base: int | None = None,
        name: str = "",
    ) -> int:
        """Join tile groups of each input along ``axes`` (-1: the whole input joins every
        group); each task updates slab ``g`` of the output along ``update_axis``, or the
        whole output when it is ``None``. ``site`` names the call site, so measured
        update bytes from an earlier run correct the estimate. ``groups`` fixes the
        number of groups; ``base`` is an array of the output's shape the updates start
        from (each output tile reads its region of it)."""
        nodes = [self._input(i) for i in inputs]
        if len(axes) != len(nodes):
            raise ValueError(f"join_update got {len(nodes)} inputs but {len(axes)} axes")
        if not nodes:
            raise ValueError("join_update needs at least one input")
        norm = tuple(-1 if a == -1 else _axis(a, len(n.shape)) for n, a in zip(nodes, axes))
        shape = _shape(shape)
        if update_axis is not None:
            update_axis = _axis(update_axis, len(shape))
        if groups is not None and operator.index(groups) < 1:
            raise ValueError(f"groups must be >= 1, got {groups}")
        ids = [n.id for n in nodes]
        if base is not None:
            bn = self._input(base)
            if bn.shape != shape:
                raise ValueError(f"base shape {bn.shape} differs from the output shape {shape}")
            ids.append(bn.id)
        return self._add(
            "join_update",
            shape,
            _itemsize(itemsize),
            ids,
            name,
            axes=norm,
            update_axis=update_axis,
            site=site,
            groups=groups,
            has_base=base is not None,
        )

    def dot(
        self, x: int, y: int, itemsize: int | None = None, site: Any = None, name: str = ""
    ) -> int:
        """Matrix product of 1-D/2-D operands; the optimizer picks the implementation."""
        xn, yn = self._input(x), self._input(y)
        if not (1 <= len(xn.shape) <= 2 and 1 <= len(yn.shape) <= 2):
            raise ValueError(f"dot takes 1-D or 2-D operands, got shapes {xn.shape} and {yn.shape}")
        k1, k2 = xn.shape[-1], yn.shape[0]
        if k1 != k2:
            raise ValueError(
                f"shapes {xn.shape} and {yn.shape} not aligned: {k1} (dim {len(xn.shape) - 1}) "
                f"!= {k2} (dim 0)"
            )
        shape = xn.shape[:-1] + yn.shape[1:]
        size = max(xn.itemsize, yn.itemsize) if itemsize is None else _itemsize(itemsize)
        return self._add("dot", shape, size, [xn.id, yn.id], name, site=site)

    def slice(self, x: int, index: Any, name: str = "") -> int:
        """The view ``x[index]`` for a basic index (ints, slices with steps, None, ...)."""
        n = self._input(x)
        return self._view("slice", n, ViewMap.from_index(n.shape, index), name, index=index)

    def view(self, x: int, vm: ViewMap, name: str = "") -> int:
        """``x`` seen through any :class:`~spartan.frontend.viewmap.ViewMap` (the
        frontend's views: strided slices, permutations, unit axes)."""
        n = self._input(x)
        if not isinstance(vm, ViewMap):
            raise TypeError(f"vm must be a ViewMap, got {type(vm).__name__}")
        if vm.base_ndim != len(n.shape):
            raise ValueError(f"view of {vm.base_ndim} axes over an array of {len(n.shape)}")
        return self._view("view", n, vm, name)

    def transpose(self, x: int, axes: Sequence[int] | None = None, name: str = "") -> int:
        """The view ``x.transpose(axes)`` (reversed axes by default)."""
        n = self._input(x)
        nd = len(n.shape)
        perm = tuple(reversed(range(nd))) if axes is None else tuple(_axis(a, nd) for a in axes)
        if sorted(perm) != list(range(nd)):
            raise ValueError("axes don't match array")
        return self._view("transpose", n, ViewMap.transpose(n.shape, perm), name, axes=perm)

    def swapaxes(self, x: int, axis1: int, axis2: int, name: str = "") -> int:
        nd = len(self._input(x).shape)
        perm = list(range(nd))
        a1, a2 = _axis(axis1, nd), _axis(axis2, nd)
        perm[a1], perm[a2] = perm[a2], perm[a1]
        return self.transpose(x, perm, name)

    def reshape(self, x: int, shape: Sequence[int], name: str = "", direct: bool = False) -> int:
        """A new array with ``x``'s elements in C order; only merges or splits of
        consecutive axes (a general reshape is a flatten followed by a split).

        ``direct``: any reshape, of an array or a view, as the frontend lowers it -- each
        output tile reads its C-order runs of ``x`` (through the view) in one step; its
        cost is counted element by element (sampled for big arrays)."""
        n = self._input(x)
        if n.is_view and not direct:
            raise ValueError(
                "reshape reads its input in C order; materialize a view with map() first"
            )
        shape = _shape(shape)
        if math.prod(shape) != n.size:
            raise ValueError(f"cannot reshape array of size {n.size} into shape {shape}")
        if not direct:
            axis_groups(n.shape, shape)
            return self._add("reshape", shape, n.itemsize, [n.id], name)
        return self._add("reshape", shape, n.itemsize, [n.id], name, direct=True)

    def concatenate(self, inputs: Sequence[int], axis: int = 0, name: str = "") -> int:
        nodes = [self._input(i) for i in inputs]
        if not nodes:
            raise ValueError("need at least one array to concatenate")
        nd = len(nodes[0].shape)
        if nd == 0:
            raise ValueError("zero-dimensional arrays cannot be concatenated")
        axis = _axis(axis, nd)
        for n in nodes[1:]:
            if len(n.shape) != nd:
                raise ValueError(
                    f"all the input array dimensions must match: {nodes[0].shape} and {n.shape}"
                )
            if any(a != b for i, (a, b) in enumerate(zip(n.shape, nodes[0].shape)) if i != axis):
                raise ValueError(
                    "all the input array dimensions except for the concatenation axis "
                    f"must match exactly: {nodes[0].shape} and {n.shape}"
                )
        shape = list(nodes[0].shape)
        shape[axis] = sum(n.shape[axis] for n in nodes)
        size = max(n.itemsize for n in nodes)
        return self._add("concatenate", shape, size, [n.id for n in nodes], name, axis=axis)

    def _view(self, op: str, base: Node, vm: ViewMap, name: str, **params: Any) -> int:
        root, inner = self.root(base.id)
        composed = vm if inner is None else inner.then(vm)
        node_id = self._add(op, vm.shape, base.itemsize, [base.id], name, **params)
        self._roots[node_id] = (root, composed)
        return node_id


def axis_groups(
    src: Sequence[int], dst: Sequence[int]
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Pair runs of ``src`` axes with runs of ``dst`` axes holding the same elements.

    Each group must be a merge (several src axes -> one dst axis) or a split (one src
    axis -> several dst axes); size-1 axes form groups of their own.

    >>> axis_groups((4, 6), (24,))
    [((0, 1), (0,))]
    """
    groups: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        if i < len(src) and src[i] == 1:
            groups.append(((i,), ()))
            i += 1
            continue
        if j < len(dst) and dst[j] == 1:
            groups.append(((), (j,)))
            j += 1
            continue
        gi, gj = [i], [j]
        pi, pj = src[i], dst[j]
        i, j = i + 1, j + 1
        while pi != pj:
            if pi < pj:
                pi *= src[i]
                gi.append(i)
                i += 1
            else:
                pj *= dst[j]
                gj.append(j)
                j += 1
        if len(gi) > 1 and len(gj) > 1:
            raise ValueError(
                f"reshape {tuple(src)} -> {tuple(dst)} regroups axes {tuple(gi)} into "
                f"{tuple(gj)}; express it as a flatten followed by a split"
            )
        groups.append((tuple(gi), tuple(gj)))
    return groups


def _shape(shape: Sequence[int]) -> tuple[int, ...]:
    try:
        out = tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"shape must be a sequence of ints, got {shape!r}") from None
    if any(s < 0 for s in out):
        raise ValueError(f"negative dimensions are not allowed: {out}")
    return out


def _itemsize(itemsize: int) -> int:
    size = operator.index(itemsize)
    if size < 1:
        raise ValueError(f"itemsize must be >= 1, got {size}")
    return size


def _axis(axis: SupportsIndex, ndim: int) -> int:
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(a, ndim)
    return a % ndim
