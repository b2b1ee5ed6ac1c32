"""Cost profiles: the bytes each operator moves between workers for a choice of tilings.

Every profile follows the backend's lowering of the operator (``spartan/frontend/*.py``)
task by task -- which worker runs each task and which regions it reads -- and counts the
bytes that cross workers with :mod:`.geometry`. A profile is a list of :class:`Term`;
a term is a function of the :class:`Choice` of a few nodes: the node itself and the
*roots* of its inputs (the non-view nodes they read, views mapped away), which is how
``FindCost`` sees through views. Costs are cached on (shapes, tilings, views).

How each operator runs (``P`` workers; tile ``i`` of ``t`` tiles on worker ``i*P//t``):

* ``map`` -- a task per output tile on its worker reads each input's broadcast region;
  a duplicated output runs a task per worker reading whole inputs.
* ``fold(axes)`` -- a task per tile of the input's grid (a view's grid: the view cut
  where its root's tiles end, each task on its root tile's worker; a duplicated input:
  one task on worker 0) reduces its tile; each partial goes to the owners of the output
  tiles it overlaps.
* ``scan(axis)`` -- local scans on the input's grid; each tile receives the last slice
  of every tile before it along ``axis`` held elsewhere; the result is re-tiled to the
  output tiling if that differs.
* ``filter`` -- ``x`` and the mask are read in the row grid of ``x`` (as many row tiles
  as ``x`` has tiles); the 1-d result stays where its rows were (exact when the selected
  elements spread evenly over the row tiles).
* ``join_update`` -- groups follow the first joined input's tiles along its axis (else
  ``min(n, P)`` groups); a group's task runs on the worker holding the group's first
  tile (``g*P//G`` for a view or duplicated input); it reads slab ``g`` of every input (a
  whole input, axis -1, is fetched once per worker for all its groups) and sends its
  update -- slab ``g`` along ``update_axis``, or the whole output -- to the output tiles'
  owners. Updates are an estimate, scaled by the ratio measured the last time the same
  ``site`` ran.
* ``dot`` -- the thesis's two join_updates: ``rows`` (axes (0, -1), row slabs of the
  output, Fig. 2.2(a)) and ``inner`` (axes (1, 0), whole partial outputs summed,
  Fig. 2.2(b)).
* ``reshape`` -- a task per output tile reads the input elements with the same C-order
  positions. ``concatenate`` -- a task per output tile reads the inputs it covers.
* ``source`` -- re-tiling an evaluated array from its tiling to the chosen one; a fresh
  array is created in the chosen tiling for free, but a stored one (Zarr, HDF5) reads
  whole storage chunks: a chunk split between tiles costs its bytes once more per extra
  tile that reads it (:mod:`.storage`).
* ``slice`` / ``transpose`` -- views: no task; readers are costed against the root.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TypeAlias

import numpy as np

from spartan.frontend.optimizer.geometry import (
    Layout,
    clear_layouts,
    cross_overlap,
    induced_tiling,
    layout,
    selections,
    strided_read_bytes,
)
from spartan.frontend.optimizer.program import Node, Program, axis_groups
from spartan.frontend.taskgrid import made_once, view_grid
from spartan.frontend.viewmap import ViewMap
from spartan.tiling import Tiling, candidates, piece_of

DOT_IMPLS = ("rows", "inner")

Shape: TypeAlias = tuple[int, ...]
#: An input as the cached cost functions key it: (root shape, root itemsize, the view
#: onto the root or None, the input's own shape); hashable, for the lru_caches.
InputKey: TypeAlias = tuple[Shape, int, ViewMap | None, Shape]
#: A join's tasks: (number of groups, the worker running each group).
JoinTasks: TypeAlias = tuple[int, tuple[int, ...]]


@dataclass(frozen=True)
class Choice:
    """One tiling node of a node group: the output tiling and, for dot, the algorithm."""

    tiling: Tiling
    impl: str | None = None

    def __str__(self) -> str:
        return str(self.tiling) if self.impl is None else f"{self.tiling} {self.impl}"


@dataclass(frozen=True)
class Term:
    """Bytes moved as a function of the choices of ``nodes`` (in that order); an
    ``update`` term is a join_update's update estimate (corrected by measurements)."""

    nodes: tuple[int, ...]
    cost: Callable[..., int]
    update: bool = False


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
def choices(program: Program, node: Node, pieces: int, allow_dup: bool) -> list[Choice]:
    """The node group's tiling nodes: candidate tilings of ``pieces`` tiles."""
    if node.op == "filter":  # its row tiles stay where the rows of the input were
        return [Choice(Tiling.row(node.shape, pieces))]
    tilings = candidates(node.shape, pieces)
    fixed = node.params.get("tiling") if node.op == "source" else None
    if fixed is not None and fixed not in tilings:
        tilings.append(fixed)
    if allow_dup:
        tilings.append(Tiling.duplicated(node.shape))
    if node.op == "dot":
        return [Choice(t, impl) for impl in dot_impls(program, node) for t in tilings]
    return [Choice(t) for t in tilings]


def dot_impls(program: Program, node: Node) -> tuple[str, ...]:
    """The algorithms of a dot node: a 1-D first operand has no rows to group."""
    return DOT_IMPLS if len(program[node.inputs[0]].shape) == 2 else ("inner",)


def pinned_choices(program: Program, node: Node, pinned: Choice) -> list[Choice]:
    """The choices of a node whose tiling is fixed (``tiling=``, a small array kept
    whole): that one, but a dot's algorithm stays open unless the choice names it."""
    if node.op == "dot" and pinned.impl is None:
        return [Choice(pinned.tiling, impl) for impl in dot_impls(program, node)]
    return [pinned]


def dup_memory(node: Node, nworkers: int) -> int:
    """Extra memory of a fully replicated copy: ``nbytes * (P - 1)``."""
    return node.nbytes * (nworkers - 1)


# ---- profiles ---------------------------------------------------------------------------
def profile(
    program: Program, node: Node, nworkers: int, piped_rows: int | None = None
) -> list[Term]:
    """The cost terms of ``node``; ``piped_rows``: a join computed in a row pipeline,
    whose groups are its consumer's ``piped_rows`` row groups (:func:`_row_tasks`)."""
    P, me, op = nworkers, node.id, node.op
    if node.is_view:
        return []
    if op == "source":
        fixed, storage = node.params["tiling"], node.params.get("storage")
        if fixed is None and storage is not None:
            shape = node.shape
            return [
                Term(
                    (me,),
                    lambda c: storage.extra_reads(shape, storage.final(shape, c.tiling, P), P),
                )
            ]
        if fixed is None:
            return []
        return [Term((me,), lambda c: _retile(node.shape, node.itemsize, fixed, c.tiling, P))]
    xs = [_Input.of(program, i) for i in node.inputs]
    if op == "map":
        # an array read twice (``x * x``) is one leaf of the task, fetched once
        once = [_Input.of(program, i) for i in dict.fromkeys(node.inputs)]
        return [
            Term(
                (x.root, me), lambda r, c, x=x: _map_read(x.key, r.tiling, node.shape, c.tiling, P)
            )
            for x in once
        ]
    if op == "fold" and piped_rows and _keeps_rows(node):
        # computed in a row pipeline: its consumer's row groups read their rows of the
        # input, and no partials travel (each group reduces its own rows)
        (x,) = xs
        rows = Tiling.row(x.shape, piped_rows)
        return [Term((x.root,), lambda r: _map_read(x.key, r.tiling, x.shape, rows, P))]
    if op == "fold":
        (x,) = xs
        axes, partial = node.params["axes"], node.params["partial_itemsize"]
        return [
            Term(
                (x.root, me),
                lambda r, c: _fold(
                    x.key, r.tiling, axes, node.shape, partial, c.tiling, P, node.itemsize
                ),
            )
        ]
    if op == "scan":
        (x,) = xs
        axis = node.params["axis"]
        return [
            Term(
                (x.root, me), lambda r, c: _scan(x.key, r.tiling, axis, node.itemsize, c.tiling, P)
            )
        ]
    if op == "filter":
        x, mask = xs
        return [
            Term((x.root,), lambda r: _filter_read(x.key, r.tiling, x.key, r.tiling, P)),
            Term(
                (x.root, mask.root),
                lambda r, m: _filter_read(x.key, r.tiling, mask.key, m.tiling, P),
            ),
        ]
    if op == "reshape" and node.params.get("direct"):
        (x,) = xs
        return [
            Term(
                (x.root, me),
                lambda r, c: _reshape_direct(x.key, r.tiling, node.shape, c.tiling, P),
            )
        ]
    if op == "reshape":
        (x,) = xs
        return [
            Term(
                (x.root, me),
                lambda r, c: _reshape(x.shape, node.itemsize, r.tiling, node.shape, c.tiling, P),
            )
        ]
    if op == "concatenate":
        axis = node.params["axis"]
        offsets = np.cumsum([0] + [x.shape[axis] for x in xs])
        return [
            Term(
                (x.root, me),
                lambda r, c, x=x, off=int(off): _concat_read(
                    x.key, r.tiling, axis, off, node.shape, c.tiling, P
                ),
            )
            for x, off in zip(xs, offsets)
        ]
    if op == "join_update":
        joined = xs[: len(node.params["axes"])]
        terms = _join_terms(node, joined, P, piped_rows)
        if node.params["has_base"]:  # each output tile starts from its region of the base
            b = xs[-1]
            terms.append(
                Term((b.root, me), lambda r, c: _map_read(b.key, r.tiling, node.shape, c.tiling, P))
            )
        return terms
    if op == "dot":
        return _dot_terms(node, xs, P, piped_rows)
    raise ValueError(f"no cost profile for operator {op!r}")


def _keeps_rows(node: Node) -> bool:
    """A fold that keeps its input's rows (reduces other axes): row by row."""
    return bool(node.shape) and 0 not in node.params["axes"]


def _join_terms(node: Node, xs: list[_Input], P: int, piped_rows: int | None = None) -> list[Term]:
    me = node.id
    axes, update_axis, fixed = (
        node.params["axes"],
        node.params["update_axis"],
        node.params["groups"],
    )
    f = next((i for i, a in enumerate(axes) if a >= 0), None)

    roots = tuple(x.root for x in xs)
    everywhere = fixed is None and not node.params["has_base"]

    def update(tasks: JoinTasks, c: Choice, inputs: tuple[Choice, ...]) -> int:
        if everywhere and c.tiling.replicated and all(r.tiling.replicated for r in inputs):
            return 0  # every input whole on every worker: each computes its own copy
        return _join_update(node.shape, node.itemsize, c.tiling, update_axis, tasks, P)

    if f is None:  # every input whole: one task on worker 0 (or the groups asked for)
        g = fixed or 1
        spread: JoinTasks = (g, tuple(i * P // g for i in range(g)))
        terms = [
            Term((x.root,), lambda r, x=x, a=a: _join_read(x.key, r.tiling, a, spread, P))
            for x, a in zip(xs, axes)
        ]
        return terms + [
            Term((*roots, me), lambda *rc: update(spread, rc[-1], rc[:-1]), update=True)
        ]
    first, fa = xs[f], axes[f]

    def tasks(rf: Choice) -> JoinTasks:
        if piped_rows and fa == 0 and not fixed:
            return _row_tasks(first.shape, piped_rows, P)
        return _join_tasks(first.key, fa, rf.tiling, P, fixed)

    terms = [Term((first.root,), lambda r: _join_read(first.key, r.tiling, fa, tasks(r), P))]
    for i, (x, a) in enumerate(zip(xs, axes)):
        if i != f:
            terms.append(
                Term(
                    (first.root, x.root),
                    lambda rf, r, x=x, a=a: _join_read(x.key, r.tiling, a, tasks(rf), P),
                )
            )
    terms.append(
        Term(
            (first.root, *roots, me),
            lambda rf, *rc: update(tasks(rf), rc[-1], rc[:-1]),
            update=True,
        )
    )
    return terms


def _dot_terms(node: Node, xs: list[_Input], P: int, piped_rows: int | None = None) -> list[Term]:
    """The join_update of the chosen algorithm: ``rows`` joins X's rows with all of Y
    and writes output rows; ``inner`` joins X's columns with Y's rows, whole outputs.
    ``piped_rows``: computed in a row pipeline (always ``rows``), by its consumer's row
    groups."""
    me = node.id
    x, y = xs
    inner_axes = (len(x.shape) - 1, 0)

    def axes(c: Choice) -> tuple[int, int]:
        return (0, -1) if c.impl == "rows" else inner_axes

    def tasks(rx: Choice, c: Choice) -> JoinTasks:
        if piped_rows and axes(c)[0] == 0:
            return _row_tasks(x.shape, piped_rows, P)
        return _join_tasks(x.key, axes(c)[0], rx.tiling, P)

    def update(rx: Choice, ry: Choice, c: Choice) -> int:
        if c.tiling.replicated and rx.tiling.replicated and ry.tiling.replicated:
            return 0  # every worker makes its own copy from its own (join_update)
        update_axis = 0 if c.impl == "rows" else None
        return _join_update(node.shape, node.itemsize, c.tiling, update_axis, tasks(rx, c), P)

    return [
        Term((x.root, me), lambda rx, c: _join_read(x.key, rx.tiling, axes(c)[0], tasks(rx, c), P)),
        Term(
            (x.root, y.root, me),
            lambda rx, ry, c: _join_read(y.key, ry.tiling, axes(c)[1], tasks(rx, c), P),
        ),
        Term((x.root, y.root, me), update, update=True),
    ]


@dataclass(frozen=True)
class _Input:
    """An input as its cost functions see it: the root node and the view onto it."""

    root: int
    key: InputKey
    shape: tuple[int, ...]

    @classmethod
    def of(cls, program: Program, node_id: int) -> _Input:
        root, vm = program.root(node_id)
        rn = program[root]
        shape = program[node_id].shape
        return cls(root, (rn.shape, rn.itemsize, vm, shape), shape)


def _read(
    key: InputKey, root_tiling: Tiling, boxes: np.ndarray, workers: np.ndarray, P: int
) -> int:
    """Bytes fetched when ``workers[i]`` reads ``boxes[i]`` of an input (through its view)."""
    root_shape, itemsize, vm, _ = key
    return strided_read_bytes(root_shape, itemsize, root_tiling, selections(boxes, vm), workers, P)


def _read_sel(
    key: InputKey, root_tiling: Tiling, reads: tuple[np.ndarray, np.ndarray], P: int
) -> int:
    """:func:`_read` for reads already mapped to root selections (shared by choices)."""
    root_shape, itemsize, _, _ = key
    return strided_read_bytes(root_shape, itemsize, root_tiling, reads[0], reads[1], P)


@lru_cache(maxsize=65536)
def _map_reads(
    key: InputKey, out_shape: Shape, out_t: Tiling, P: int
) -> tuple[np.ndarray, np.ndarray]:
    """The root selections a map's output tiles read of one input, and their workers."""
    boxes, workers = layout(out_shape, out_t, P)
    in_shape = key[3]
    boxes = boxes[:, len(out_shape) - len(in_shape) :, :].copy()
    for j, n in enumerate(in_shape):
        if n == 1:
            boxes[:, j] = (0, 1)
    return selections(boxes, key[2]), workers


@lru_cache(maxsize=65536)
def _join_reads(key: InputKey, axis: int, tasks: JoinTasks) -> tuple[np.ndarray, np.ndarray]:
    """The root selections the groups of a join read of one input, and their workers;
    a whole input (``axis`` -1) is read once per worker, by all its groups."""
    groups, of_group = tasks
    workers = np.asarray(of_group, dtype=np.int64)
    if axis == -1:
        workers = np.unique(workers)
        groups = len(workers)
    boxes = _slabs(key[3], None if axis == -1 else axis, groups)
    return selections(boxes, key[2]), workers


def _grid(key: InputKey, root_t: Tiling) -> Tiling:
    """The tiling readers of an input see: the root's, a view's induced one."""
    root_shape, _, vm, shape = key
    if vm is None:
        return root_t
    return induced_tiling(vm, root_shape, root_t)


@lru_cache(maxsize=65536)
def _task_grid(key: InputKey, root_t: Tiling, P: int) -> tuple[Layout, int]:
    """Tasks that run per input tile (fold, scan): their boxes and workers, and the bytes
    they fetch. A duplicated input is handled by one task on worker 0; a view's tasks
    follow its root's tiles (:func:`~spartan.frontend.taskgrid.view_grid`) and fetch
    nothing."""
    shape = key[3]
    if root_t.replicated:
        boxes = np.zeros((1, len(shape), 2), dtype=np.int64)
        boxes[0, :, 1] = shape
        return (boxes, np.zeros(1, dtype=np.int64)), 0
    if key[2] is not None:  # a view: a task per base tile it reads, on that tile's worker
        return view_grid(key[2], key[0], root_t, P).layout(), 0
    grid = layout(shape, _grid(key, root_t), P)
    return grid, _read(key, root_t, grid[0], grid[1], P)


@lru_cache(maxsize=65536)
def _retile(shape: Shape, itemsize: int, src: Tiling, dst: Tiling, P: int) -> int:
    boxes, workers = layout(shape, dst, P)
    return strided_read_bytes(shape, itemsize, src, selections(boxes), workers, P)


@lru_cache(maxsize=65536)
def _map_read(key: InputKey, root_t: Tiling, out_shape: Shape, out_t: Tiling, P: int) -> int:
    return _read_sel(key, root_t, _map_reads(key, out_shape, out_t, P), P)


@lru_cache(maxsize=65536)
def _fold(
    key: InputKey,
    root_t: Tiling,
    axes: tuple[int, ...],
    out_shape: Shape,
    itemsize: int,
    out_t: Tiling,
    P: int,
    out_itemsize: int = 0,
) -> int:
    (boxes, workers), read = _task_grid(key, root_t, P)
    partial = np.delete(boxes, list(axes), axis=1)
    # a worker combines the partials of its own tiles first: one per (worker, kept box)
    rows = np.concatenate([partial.reshape(len(workers), -1), workers[:, None]], axis=1)
    rows = np.unique(rows, axis=0)
    partial, workers = rows[:, :-1].reshape(len(rows), -1, 2), rows[:, -1]
    return read + _to_output((partial, workers), out_shape, itemsize, out_t, P, out_itemsize)


@lru_cache(maxsize=65536)
def _scan(key: InputKey, root_t: Tiling, axis: int, itemsize: int, out_t: Tiling, P: int) -> int:
    (boxes, workers), read = _task_grid(key, root_t, P)
    before = boxes[None, :, axis, 1] <= boxes[:, None, axis, 0]  # [p, q]: q precedes p
    others = np.delete(boxes, axis, axis=1)
    lo = np.maximum(others[:, None, :, 0], others[None, :, :, 0])
    hi = np.minimum(others[:, None, :, 1], others[None, :, :, 1])
    shared = np.clip(hi - lo, 0, None).prod(axis=-1)
    remote = workers[:, None] != workers[None, :]
    prefix = int(shared[before & remote].sum())
    # (a duplicated input's one scanned tile stands for a duplicated output as it is)
    both_dup = root_t.replicated and out_t.replicated
    retile = 0 if both_dup else cross_overlap(layout(key[3], out_t, P), (boxes, workers))
    return read + (prefix + retile) * itemsize


@lru_cache(maxsize=65536)
def _filter_read(
    grid_key: InputKey, grid_root_t: Tiling, key: InputKey, root_t: Tiling, P: int
) -> int:
    """``key``'s reads in the row grid of the filtered array (as many rows as it has tiles)."""
    shape = grid_key[3]
    t = _grid(grid_key, grid_root_t)
    pieces = 1 if t.replicated or not shape else t.ntiles
    boxes, workers = layout(shape, Tiling.row(shape, pieces), P)
    return _read(key, root_t, boxes, workers, P)


@lru_cache(maxsize=65536)
def _concat_read(
    key: InputKey, root_t: Tiling, axis: int, offset: int, out_shape: Shape, out_t: Tiling, P: int
) -> int:
    boxes, workers = layout(out_shape, out_t, P)
    n = key[3][axis]
    boxes = boxes.copy()
    boxes[:, axis] = np.clip(boxes[:, axis] - offset, 0, n)
    keep = boxes[:, axis, 1] > boxes[:, axis, 0]
    return _read(key, root_t, boxes[keep], workers[keep], P)


@lru_cache(maxsize=65536)
def _join_tasks(
    key: InputKey, axis: int, root_t: Tiling, P: int, fixed: int | None = None
) -> tuple[int, tuple[int, ...]]:
    """(groups, worker of each group) of a join whose first joined input is ``key``:
    ``fixed`` groups, else one per tile along the axis, else ``min(n, P)``. Each group
    runs where its first element is, except where the groups' slabs cross every tile
    (a column slab of a row-tiled x, a row slab of a column-tiled one): those spread
    over the workers (as ``JoinUpdate._worker`` places them)."""
    shape = key[3]
    t = _grid(key, root_t)
    n = shape[axis]
    if fixed:
        groups = fixed
    elif not t.replicated and t.cuts[axis] > 1:
        groups = t.cuts[axis]
    else:
        groups = max(1, min(n, P))
    # (a slab across every tile: its first element's tile would put every group on
    # one worker, which would then compute alone)
    crossing = t.cuts[axis] == 1 and t.ntiles > 1
    if t.replicated or key[2] is not None or crossing:
        return groups, tuple(g * P // groups for g in range(groups))
    # the tile holding each group's first element (index 0 on the other axes)
    starts = [piece_of(g * n // groups, n, t.cuts[axis]) for g in range(groups)]
    after = math.prod(t.cuts[axis + 1 :])
    return groups, tuple(k * after * P // t.ntiles for k in starts)


@lru_cache(maxsize=4096)
def _row_tasks(shape: Shape, rows: int, P: int) -> JoinTasks:
    """The groups of a join computed in a row pipeline: its consumer's row groups, on
    the workers of its rows -- as if its first joined input were cut in ``rows`` row
    tiles (whatever that input's own tiling: a column-tiled ``x`` of ``x @ c.T`` inside
    an argmin is read by the argmin's row tiles, on every worker)."""
    return _join_tasks((shape, 8, None, shape), 0, Tiling.row(shape, rows), P)


@lru_cache(maxsize=4096)
def _slabs(shape: Shape, axis: int | None, groups: int) -> np.ndarray:
    """Slab ``g`` of ``groups`` along ``axis`` (``None``: the whole array) per group."""
    boxes = np.zeros((groups, len(shape), 2), dtype=np.int64)
    boxes[:, :, 1] = shape
    if axis is not None:
        g = np.arange(groups, dtype=np.int64)
        boxes[:, axis, 0] = g * shape[axis] // groups
        boxes[:, axis, 1] = (g + 1) * shape[axis] // groups
    boxes.flags.writeable = False  # cached: shared by every caller
    return boxes


@lru_cache(maxsize=65536)
def _join_read(key: InputKey, root_t: Tiling, axis: int, tasks: JoinTasks, P: int) -> int:
    return _read_sel(key, root_t, _join_reads(key, axis, tasks), P)


@lru_cache(maxsize=65536)
def _join_update(
    out_shape: Shape,
    itemsize: int,
    out_t: Tiling,
    update_axis: int | None,
    tasks: JoinTasks,
    P: int,
) -> int:
    groups, of_group = tasks
    workers = np.asarray(of_group, dtype=np.int64)
    slabs = _slabs(out_shape, update_axis, groups)
    if update_axis is None:  # whole-output updates: a worker combines its own first
        workers = np.unique(workers)
        slabs = slabs[: len(workers)]
    return _to_output((slabs, workers), out_shape, itemsize, out_t, P, itemsize)


def _to_output(
    parts: Layout, out_shape: Shape, itemsize: int, out_t: Tiling, P: int, out_itemsize: int
) -> int:
    """Bytes of ``parts`` (partials, updates) sent to the output tiles' owners; an output
    made once (:func:`~spartan.frontend.taskgrid.made_once`): to worker 0, then
    ``out_itemsize`` bytes per element to each other worker's copy."""
    if not made_once(out_t, P):
        return cross_overlap(parts, layout(out_shape, out_t, P)) * itemsize
    one = layout(out_shape, Tiling.single(out_shape), P)
    return cross_overlap(parts, one) * itemsize + (P - 1) * math.prod(out_shape) * out_itemsize


@lru_cache(maxsize=65536)
def _reshape(
    in_shape: Shape, itemsize: int, in_t: Tiling, out_shape: Shape, out_t: Tiling, P: int
) -> int:
    """Elements of each output tile held by input tiles on other workers. Per group of
    axes (a merge or a split), the elements two tiles share are counted in C order."""
    if in_t.replicated:
        return 0
    out_boxes, out_w = layout(out_shape, out_t, P)
    in_boxes, in_w = layout(in_shape, in_t, P)
    shared = np.ones((len(in_w), len(out_w)), dtype=np.int64)
    for gi, go in axis_groups(in_shape, out_shape):
        if not gi or not go:
            continue  # a unit axis: one element on each side
        if len(go) == 1:  # merge: the output tile is an interval of the group
            (j,) = go
            sub, dims = in_boxes[:, list(gi)], [in_shape[a] for a in gi]
            lo, hi = out_boxes[:, j, 0], out_boxes[:, j, 1]
            shared *= _below(sub, dims, hi) - _below(sub, dims, lo)
        else:  # split: the input tile is an interval of the group
            (i,) = gi
            sub, dims = out_boxes[:, list(go)], [out_shape[a] for a in go]
            lo, hi = in_boxes[:, i, 0], in_boxes[:, i, 1]
            shared *= (_below(sub, dims, hi) - _below(sub, dims, lo)).T
    return int(shared[in_w[:, None] != out_w[None, :]].sum()) * itemsize


#: elements a direct reshape's cost is counted on: all of them up to this many, else
#: this many evenly spaced C-order positions (scaled to the size)
RESHAPE_SAMPLE = 1 << 15


@lru_cache(maxsize=65536)
def _reshape_direct(key: InputKey, root_t: Tiling, out_shape: Shape, out_t: Tiling, P: int) -> int:
    """A reshape as the frontend lowers it: each output tile reads its C-order runs of
    the input (a view: through it, from the root's tiles). The bytes are the elements
    whose output tile's worker differs from their root tile's worker."""
    root_shape, itemsize, vm, in_shape = key
    if root_t.replicated:
        return 0
    n = math.prod(out_shape)
    if n == 0:
        return 0
    if n > RESHAPE_SAMPLE:
        pos = np.linspace(0, n - 1, RESHAPE_SAMPLE).astype(np.int64)
    else:
        pos = np.arange(n, dtype=np.int64)
    coords = np.unravel_index(pos, in_shape) if in_shape else ()
    if vm is not None:  # view coordinates -> root coordinates
        root = [np.zeros(len(pos), dtype=np.int64) for _ in root_shape]
        for c, a in zip(coords, vm.axes):
            if a.base is not None:
                root[a.base] = a.start + a.step * c
        for ax, idx in vm.fixed:
            root[ax] = np.full(len(pos), idx, dtype=np.int64)
        coords = tuple(root)
    src = _owners(root_shape, root_t, coords, P)
    if out_t.replicated:  # every worker reads every element it does not hold
        moved = len(pos) * (P - 1)
    else:
        out_coords = np.unravel_index(pos, out_shape) if out_shape else ()
        moved = int(np.count_nonzero(_owners(out_shape, out_t, out_coords, P) != src))
    return round(moved * n / len(pos)) * itemsize


def _owners(shape: Shape, t: Tiling, coords: tuple[np.ndarray, ...], P: int) -> np.ndarray:
    """The worker holding each element ``coords`` of an array of ``shape`` tiled ``t``."""
    boxes, workers = layout(shape, t, P)
    if not shape:
        return np.full(1, workers[0], dtype=np.int64)
    lin = np.zeros(len(coords[0]), dtype=np.int64)
    for axis, cut in enumerate(t.cuts):
        starts = np.unique(boxes[:, axis, 0])
        lin = lin * cut + np.searchsorted(starts, coords[axis], side="right") - 1
    return workers[lin]


def _below(boxes: np.ndarray, dims: list[int], x: np.ndarray) -> np.ndarray:
    """``(A, B)``: elements of box ``a`` (in an array of ``dims``) whose C-order position
    is below ``x[b]``, digit by digit."""
    total = math.prod(dims)
    lo, hi = boxes[:, :, 0], boxes[:, :, 1]
    extent = hi - lo
    out = np.zeros((len(boxes), len(x)), dtype=np.int64)
    active = np.ones_like(out, dtype=bool)
    stride = total
    for d, n in enumerate(dims):
        stride //= n
        digit = ((x // stride) % n)[None, :]
        rest = extent[:, d + 1 :].prod(axis=1)[:, None]
        below = np.maximum(np.minimum(digit, hi[:, d, None]) - lo[:, d, None], 0)
        out += np.where(active, below * rest, 0)
        active &= (lo[:, d, None] <= digit) & (digit < hi[:, d, None])
    return np.where(x[None, :] >= total, extent.prod(axis=1)[:, None], out)


def clear_cost_caches() -> None:
    """Forget every cached cost (benchmarks time the optimizer from a cold start)."""
    for fn in (
        _task_grid,
        _retile,
        _map_read,
        _fold,
        _scan,
        _filter_read,
        _concat_read,
        _join_tasks,
        _row_tasks,
        _join_read,
        _join_update,
        _reshape,
        _reshape_direct,
        _slabs,
        _map_reads,
        _join_reads,
    ):
        fn.cache_clear()
    clear_layouts()
