"""Cost profiles: the bytes each operator moves between workers for a choice of tilings.

Every profile models the backend's execution of the operator exactly (task per output
tile, per input tile, or per join group, each on a fixed worker) and counts the bytes
that cross workers with :mod:`.geometry`. A profile is a list of :class:`Term`; a term
depends on the node's own :class:`Choice` and at most one input, through that input's
root (the non-view node it reads, views mapped away), which keeps the tiling graph
pairwise. Costs are cached on (shapes, tilings, views), since they repeat.

How each operator runs (``P`` workers, tile ``i`` of ``t`` tiles on worker ``i*P//t``):

* ``map`` -- a task per output tile on its worker reads each input's broadcast region;
  a duplicated output runs a task per worker reading whole inputs.
* ``fold(axis)`` -- a task per input tile (per view piece) computes the tile reduced along
  ``axis``; the partial goes to the owners of the output tiles it overlaps. A fold of a
  duplicated input runs where its output lives and moves nothing.
* ``scan(axis)`` -- local scans in the input's layout; each piece receives the last slice
  of every piece before it along ``axis`` on another worker; the result is re-tiled to
  the output tiling.
* ``filter`` -- ``x`` and the mask are read in the row tiling of ``x`` (contiguous in C
  order); the 1-D result stays where its rows were.
* ``join_update`` -- ``G`` groups, task ``g`` on worker ``g*P//G`` reads slab ``g`` of
  each input along its axis (the whole input for -1) and sends its update region (slab
  ``g`` along ``update_axis``, or the whole output) to the output tiles' owners. Update
  bytes are scaled by the ratio measured the last time the same ``site`` ran.
* ``dot`` -- two algorithms. ``outer``: a task per output tile reads the rows of X and
  the columns of Y it needs and writes locally (for a row-tiled output this is the
  thesis's join_update with axes (0, -1), Fig. 2.2(a); block-tiled, it reads row and
  column slabs). ``inner``: join_update with axes (1, 0), Fig. 2.2(b): column slabs of
  X meet row slabs of Y and every task sends a whole partial output, summed.
* ``reshape`` -- a task per output tile reads the input elements with the same C-order
  positions.
* ``concatenate`` -- a task per output tile reads the part of each input it covers.
* ``source`` -- re-tiling an evaluated array from its tiling to the chosen one; a fresh
  array is created in the chosen tiling for free.
* ``slice`` / ``transpose`` -- views: no task; readers are costed against the root.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from spartan.frontend.optimizer.geometry import (
    Layout,
    cross_overlap,
    layout,
    selections,
    strided_read_bytes,
    view_layout,
)
from spartan.frontend.optimizer.program import Node, Program, axis_groups
from spartan.tiling import Tiling, candidates

DOT_IMPLS = ("outer", "inner")


@dataclass(frozen=True)
class Choice:
    """One tiling node of a node group: the output tiling and, for dot, the algorithm."""

    tiling: Tiling
    impl: str | None = None

    def __str__(self) -> str:
        return str(self.tiling) if self.impl is None else f"{self.tiling} {self.impl}"


@dataclass(frozen=True)
class Term:
    """Bytes a node moves as a function of (its input root's choice, its own choice)."""

    root: int | None
    cost: Callable[[Choice | None, Choice], int]


@dataclass
class UpdateHistory:
    """Measured/predicted update bytes of join_update call sites from earlier runs.

    >>> h = UpdateHistory()
    >>> h.record("als.U", predicted=1000, measured=250)
    >>> h.factor("als.U")
    0.25
    """

    ratios: dict[Hashable, float] = field(default_factory=dict)

    def record(self, site: Hashable, predicted: int, measured: int) -> None:
        if predicted < 0 or measured < 0:
            raise ValueError("byte counts must be >= 0")
        if predicted > 0:
            self.ratios[site] = measured / predicted

    def factor(self, site: Hashable) -> float:
        return 1.0 if site is None else self.ratios.get(site, 1.0)


# ---- choices ----------------------------------------------------------------------------
def choices(program: Program, node: Node, nworkers: int, allow_dup: bool) -> list[Choice]:
    """The node group's tiling nodes, cut into ``nworkers`` pieces."""
    if node.op == "filter":
        return [Choice(Tiling.row(node.shape, nworkers))]
    tilings = candidates(node.shape, nworkers)
    fixed = node.params.get("tiling") if node.op == "source" else None
    if fixed is not None and fixed not in tilings:
        tilings.append(fixed)
    if allow_dup:
        tilings.append(Tiling.duplicated(node.shape))
    if node.op == "dot":
        return [Choice(t, impl) for impl in DOT_IMPLS for t in tilings]
    return [Choice(t) for t in tilings]


def dup_memory(node: Node, nworkers: int) -> int:
    """Extra memory of a fully replicated copy: ``nbytes * (P - 1)``."""
    return node.nbytes * (nworkers - 1)


# ---- profiles ---------------------------------------------------------------------------
def profile(program: Program, node: Node, nworkers: int, history: UpdateHistory) -> list[Term]:
    """The cost terms of ``node``."""
    P = nworkers
    if node.is_view:
        return []
    if node.op == "source":
        fixed = node.params["tiling"]
        if fixed is None:
            return []
        return [Term(None, lambda _r, c: _retile(node.shape, node.itemsize, fixed, c.tiling, P))]
    inputs = [_Input.of(program, i) for i in node.inputs]
    if node.op == "map":
        return [
            Term(
                x.root,
                lambda r, c, x=x: _map_read(x.key, r.tiling, node.shape, c.tiling, P),
            )
            for x in inputs
        ]
    if node.op == "fold":
        (x,) = inputs
        axis = node.params["axis"]
        return [
            Term(
                x.root,
                lambda r, c: _fold(x.key, r.tiling, axis, node.shape, node.itemsize, c.tiling, P),
            )
        ]
    if node.op == "scan":
        (x,) = inputs
        axis = node.params["axis"]
        return [Term(x.root, lambda r, c: _scan(x.key, r.tiling, axis, node.itemsize, c.tiling, P))]
    if node.op == "filter":
        return [Term(x.root, lambda r, _c, x=x: _filter_read(x.key, r.tiling, P)) for x in inputs]
    if node.op == "concatenate":
        axis = node.params["axis"]
        offsets = np.cumsum([0] + [x.shape[axis] for x in inputs])
        return [
            Term(
                x.root,
                lambda r, c, x=x, off=int(off): _concat_read(
                    x.key, r.tiling, axis, off, node.shape, c.tiling, P
                ),
            )
            for x, off in zip(inputs, offsets)
        ]
    if node.op == "reshape":
        (x,) = inputs
        return [
            Term(
                x.root,
                lambda r, c: _reshape(x.shape, node.itemsize, r.tiling, node.shape, c.tiling, P),
            )
        ]
    factor = history.factor(node.params.get("site"))
    if node.op == "join_update":
        axes = node.params["axes"]
        groups = _groups([x.shape for x in inputs], axes, P)
        update_axis = node.params["update_axis"]
        terms = [
            Term(x.root, lambda r, _c, x=x, a=a: _join_read(x.key, r.tiling, a, groups, P))
            for x, a in zip(inputs, axes)
        ]
        terms.append(
            Term(
                None,
                lambda _r, c: round(
                    factor
                    * _join_update(node.shape, node.itemsize, c.tiling, update_axis, groups, P)
                ),
            )
        )
        return terms
    if node.op == "dot":
        x, y = inputs
        k = x.shape[-1]
        inner_groups = max(1, min(P, k))
        inner_axes = (len(x.shape) - 1, 0)

        def read(r: Choice, c: Choice, inp: _Input, operand: int) -> int:
            if c.impl == "outer":
                return _dot_read(inp.key, r.tiling, operand, node.shape, c.tiling, P)
            return _join_read(inp.key, r.tiling, inner_axes[operand], inner_groups, P)

        def update(_r: Choice | None, c: Choice) -> int:
            if c.impl == "outer":
                return 0
            return round(
                factor * _join_update(node.shape, node.itemsize, c.tiling, None, inner_groups, P)
            )

        return [
            Term(x.root, lambda r, c: read(r, c, x, 0)),
            Term(y.root, lambda r, c: read(r, c, y, 1)),
            Term(None, update),
        ]
    raise ValueError(f"no cost profile for operator {node.op!r}")


@dataclass(frozen=True)
class _Input:
    """An input as its cost functions see it: the root node and the view onto it."""

    root: int
    key: tuple  # (root shape, itemsize, view or None, own shape): hashable for the caches
    shape: tuple[int, ...]

    @classmethod
    def of(cls, program: Program, node_id: int) -> _Input:
        root, vm = program.root(node_id)
        rn = program[root]
        shape = program[node_id].shape
        return cls(root, (rn.shape, rn.itemsize, vm, shape), shape)


def _groups(shapes: Sequence[tuple[int, ...]], axes: Sequence[int], nworkers: int) -> int:
    lengths = [s[a] for s, a in zip(shapes, axes) if a >= 0]
    return max(1, min([nworkers, *lengths])) if lengths else 1


def _pieces(key: tuple, root_tiling: Tiling, nworkers: int) -> Layout:
    root_shape, _, vm, _ = key
    if vm is None:
        return layout(root_shape, root_tiling, nworkers)
    return view_layout(vm, root_shape, root_tiling, nworkers)


def _read(key: tuple, root_tiling: Tiling, boxes: np.ndarray, workers: np.ndarray, P: int) -> int:
    root_shape, itemsize, vm, _ = key
    return strided_read_bytes(root_shape, itemsize, root_tiling, selections(boxes, vm), workers, P)


@lru_cache(maxsize=65536)
def _retile(shape: tuple, itemsize: int, src: Tiling, dst: Tiling, P: int) -> int:
    boxes, workers = layout(shape, dst, P)
    return strided_read_bytes(shape, itemsize, src, selections(boxes), workers, P)


@lru_cache(maxsize=65536)
def _map_read(key: tuple, root_t: Tiling, out_shape: tuple, out_t: Tiling, P: int) -> int:
    boxes, workers = layout(out_shape, out_t, P)
    in_shape = key[3]
    lead = len(out_shape) - len(in_shape)
    boxes = boxes[:, lead:, :].copy()
    for j, n in enumerate(in_shape):
        if n == 1:
            boxes[:, j] = (0, 1)
    return _read(key, root_t, boxes, workers, P)


@lru_cache(maxsize=65536)
def _dot_read(
    key: tuple, root_t: Tiling, operand: int, out_shape: tuple, out_t: Tiling, P: int
) -> int:
    """Operand reads of ``outer`` dot: X's rows and Y's columns of each output tile."""
    boxes, workers = layout(out_shape, out_t, P)
    in_shape = key[3]
    reads = np.zeros((len(boxes), len(in_shape), 2), dtype=np.int64)
    reads[:, :, 1] = in_shape
    if operand == 0 and len(in_shape) == 2:
        reads[:, 0] = boxes[:, 0]
    elif operand == 1 and len(in_shape) == 2:
        reads[:, 1] = boxes[:, -1]
    return _read(key, root_t, reads, workers, P)


@lru_cache(maxsize=65536)
def _fold(
    key: tuple,
    root_t: Tiling,
    axis: int | None,
    out_shape: tuple,
    itemsize: int,
    out_t: Tiling,
    P: int,
) -> int:
    if root_t.replicated:
        return 0
    boxes, workers = _pieces(key, root_t, P)
    if axis is None:
        partial = boxes[:, :0, :]
    else:
        partial = np.delete(boxes, axis, axis=1)
    return cross_overlap((partial, workers), layout(out_shape, out_t, P)) * itemsize


@lru_cache(maxsize=65536)
def _scan(key: tuple, root_t: Tiling, axis: int, itemsize: int, out_t: Tiling, P: int) -> int:
    if root_t.replicated:
        return 0
    boxes, workers = _pieces(key, root_t, P)
    before = boxes[None, :, axis, 1] <= boxes[:, None, axis, 0]  # [p, q]: q precedes p
    others = np.delete(boxes, axis, axis=1)
    lo = np.maximum(others[:, None, :, 0], others[None, :, :, 0])
    hi = np.minimum(others[:, None, :, 1], others[None, :, :, 1])
    shared = np.clip(hi - lo, 0, None).prod(axis=-1)
    remote = workers[:, None] != workers[None, :]
    prefix = int(shared[before & remote].sum())
    retile = cross_overlap(layout(key[3], out_t, P), (boxes, workers))
    return (prefix + retile) * itemsize


@lru_cache(maxsize=65536)
def _filter_read(key: tuple, root_t: Tiling, P: int) -> int:
    shape = key[3]
    boxes, workers = layout(shape, Tiling.row(shape, P), P)
    return _read(key, root_t, boxes, workers, P)


@lru_cache(maxsize=65536)
def _concat_read(
    key: tuple, root_t: Tiling, axis: int, offset: int, out_shape: tuple, out_t: Tiling, P: int
) -> int:
    boxes, workers = layout(out_shape, out_t, P)
    n = key[3][axis]
    boxes = boxes.copy()
    boxes[:, axis] = np.clip(boxes[:, axis] - offset, 0, n)
    keep = boxes[:, axis, 1] > boxes[:, axis, 0]
    return _read(key, root_t, boxes[keep], workers[keep], P)


def _slabs(shape: tuple, axis: int | None, groups: int) -> np.ndarray:
    boxes = np.zeros((groups, len(shape), 2), dtype=np.int64)
    boxes[:, :, 1] = shape
    if axis is not None:
        g = np.arange(groups, dtype=np.int64)
        boxes[:, axis, 0] = g * shape[axis] // groups
        boxes[:, axis, 1] = (g + 1) * shape[axis] // groups
    return boxes


def _group_workers(groups: int, P: int) -> np.ndarray:
    return np.arange(groups, dtype=np.int64) * P // groups


@lru_cache(maxsize=65536)
def _join_read(key: tuple, root_t: Tiling, axis: int, groups: int, P: int) -> int:
    boxes = _slabs(key[3], None if axis == -1 else axis, groups)
    return _read(key, root_t, boxes, _group_workers(groups, P), P)


@lru_cache(maxsize=65536)
def _join_update(
    out_shape: tuple, itemsize: int, out_t: Tiling, update_axis: int | None, groups: int, P: int
) -> int:
    regions = (_slabs(out_shape, update_axis, groups), _group_workers(groups, P))
    return cross_overlap(regions, layout(out_shape, out_t, P)) * itemsize


@lru_cache(maxsize=65536)
def _reshape(
    in_shape: tuple, itemsize: int, in_t: Tiling, out_shape: tuple, out_t: Tiling, P: int
) -> int:
    if in_t.replicated:
        return 0
    groups = axis_groups(in_shape, out_shape)
    out_boxes, out_w = layout(out_shape, out_t, P)
    in_boxes, in_w = layout(in_shape, in_t, P)
    total = 0
    for ob, ow in zip(out_boxes.tolist(), out_w.tolist()):
        for ib, iw in zip(in_boxes.tolist(), in_w.tolist()):
            if ow != iw:
                total += math.prod(
                    _group_overlap(ib, in_shape, gi, ob, out_shape, go) for gi, go in groups
                )
    return total * itemsize


def _group_overlap(
    ib: list, in_shape: tuple, gi: tuple, ob: list, out_shape: tuple, go: tuple
) -> int:
    """Elements of one axis group in both the input box and the output box."""
    if len(go) == 1:
        lo, hi = ob[go[0]]
        sub = [ib[a] for a in gi]
        dims = [in_shape[a] for a in gi]
    else:  # a split: one input axis, so the input box is an interval in C order
        (a,) = gi
        lo, hi = ib[a]
        sub = [ob[a2] for a2 in go]
        dims = [out_shape[a2] for a2 in go]
    return _below(sub, dims, hi) - _below(sub, dims, lo)


def _below(box: list, dims: list, x: int) -> int:
    """Elements of ``box`` (in an array of ``dims``) whose C-order position is < ``x``."""
    total = math.prod(dims)
    if x >= total:
        return math.prod(hi - lo for lo, hi in box)
    count = 0
    stride = total
    for d, ((lo, hi), n) in enumerate(zip(box, dims)):
        stride //= n
        digit = (x // stride) % n
        rest = math.prod(h - lo2 for lo2, h in box[d + 1 :])
        count += max(0, min(digit, hi) - lo) * rest
        if not lo <= digit < hi:
            return count
    return count
