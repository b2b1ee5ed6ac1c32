"""Row pipelines: row-local operators computed inside the operator that consumes them.

``X.T @ f(X @ w)`` reads X twice per evaluation when every operator makes tiles of its
own: once for ``X @ w``, once for the product. The operators between the two products
are row-local: output row ``i`` depends only on row ``i`` of the inputs read by rows
(element-wise maps, ``dot(a)`` products with a whole right operand, folds over other
axes, views that keep the rows). Such nodes are computed inside their consumers, in
row chunks that stay in cache, instead of becoming tiles:

* a ``dot(b)`` product (``A.T @ B``) or a fold over axis 0 sums partial results of its
  row groups, so it runs its groups chunk by chunk;
* a fold over other axes, or a ``dot(a)`` product (``f(X) @ W``), that must exist as
  tiles (a result, or read elsewhere) makes each of its row tiles chunk by chunk.

X then streams from memory once per step, and the intermediates never exist. A node
read by several pipelines is computed in each (k-means' one-hot matrix feeds its
column sums and ``onehot.T @ X``), except the folds below it, which are made once.
Within one pipeline a node read several times (``x * x``) is computed once per chunk:
the tree is a DAG (:func:`flatten` saves a shared value for its other readers), so a
loop ``x = x * x + 1`` makes a tree as long as the loop, not one of ``2**steps`` nodes.
Nothing moves that the unfused plan would not move: a pipeline reads its leaves by
the row groups its consumer reads its own inputs by.

Which nodes qualify is a fact of each operator class (:meth:`Expr.row_local`,
:meth:`Expr.sums_rows`, :meth:`Expr.makes_rows`, :meth:`Expr.row_aligned`, ...); this
module never asks which operator a node is (only whether it is a view). It is a lowering strategy:
:func:`spartan.frontend.evaluate._lower` calls :func:`row_pipelines` and hands the
result to the operators through the :class:`~spartan.frontend.lowering.Lowering`, so
the operator modules never import this one.

>>> X, y, w, n = sp.random.rand(1000, 4), sp.ones(1000), sp.zeros(4), 1000
>>> w = w - (X.T @ (1 / (1 + np.exp(-(X @ w))) - y)) / n
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spartan.backend.device import array_module
from spartan.backend.worker import stop_if_cancelled
from spartan.config import config
from spartan.frontend.expr import Expr
from spartan.frontend.fold import reduce_rows
from spartan.frontend.join_update import Extent, JoinUpdate
from spartan.frontend.lowering import Lowering, chunk_rows
from spartan.frontend.view import View, base_of
from spartan.tiling import Box, Tiling

Tree = tuple  # see rows_of


@dataclass
class RowInput:
    """Input ``index`` of a join computed by ``tree`` over ``leaves``, chunked along
    the input's axis ``axis`` (the rows of the pipeline's base)."""

    index: int
    axis: int
    tree: Tree
    #: (leaf, read by rows?) in the order of their blocks
    leaves: list[tuple[Expr, bool]]
    #: bytes one row occupies in the leaves read by rows and in every computed node
    row_bytes: int = 0

    def regions(self, ctx: Any, rows: tuple[int, int], reader: int, whole: Any) -> list:
        """What the group with ``rows`` reads of each leaf on worker ``reader``: its rows
        of the leaves read by rows, and the others whole (``whole``: a
        :class:`~spartan.frontend.lowering.WholeReads`, one fetch per worker)."""
        return [
            ctx.region(leaf, (rows, *((0, n) for n in leaf.shape[1:])), reader)
            if rowwise
            else whole(leaf, reader)
            for leaf, rowwise in self.leaves
        ]

    @property
    def rowwise(self) -> tuple[bool, ...]:
        return tuple(rw for _, rw in self.leaves)

    def _row_cuts(self, ctx: Any) -> list[int]:
        """Row tiles per leaf read by rows (replicated leaves are read in place)."""
        tilings = [ctx.tiling(leaf) for leaf, rowwise in self.leaves if rowwise]
        return [t.cuts[0] for t in tilings if not t.replicated]

    def row_bounds(self, ctx: Any, n: int) -> set[int]:
        """Where the row tiles of the leaves read by rows begin."""
        return {i * n // c for c in self._row_cuts(ctx) for i in range(c)}

    def row_cuts(self, ctx: Any) -> int:
        """The finest row cut among the leaves read by rows: row groups that follow it
        read every leaf tile in place (one piece, no copy)."""
        return max([1, *self._row_cuts(ctx)])

    def fold_rows(
        self, local: Callable, combine: Callable, axes: tuple[int, ...], box: Box
    ) -> FoldRows:
        """The task computing one input tile's partial of a fold over the rows."""
        return FoldRows(self, local, combine, axes, box, config.pipeline_chunk_bytes)

    def fold_tile(
        self, direct: Callable, axes: tuple[int, ...], shape: tuple, dtype: Any, groups: list
    ) -> FoldTile:
        """The task computing one output tile of a fold over other axes."""
        return FoldTile(self, direct, axes, shape, dtype, groups, config.pipeline_chunk_bytes)


class RowPlan(list):
    """A consumer's pipelined inputs (:class:`RowInput`, by input index)."""

    def chunked_join(self, join: Expr) -> ChunkedJoin:
        """The runner of ``join``'s groups, each in row chunks."""
        return ChunkedJoin.of(self, join, config.pipeline_chunk_bytes)


def row_pipelines(
    order: Sequence[Expr],
    roots: Sequence[Expr],
    tilings: dict[int, Tiling],
    enabled: bool = True,
    exclude: Collection[int] = (),
) -> tuple[dict[int, RowPlan], set[int]]:
    """Per consuming node uid, its pipelined inputs; and the uids of the nodes
    computed inside pipelines (they are not lowered on their own).

    A node is computed inside its consumers when it is not a result and every
    operator that reads it reads it by rows and is itself pipelined or a consumer.
    The nodes ``exclude`` (by uid) are neither in a pipeline nor consume one (where
    that would move more bytes: :meth:`~spartan.frontend.planning.Planned.pipelines`)."""
    if not enabled:
        return {}, set()
    reads: dict[int, list[tuple[Expr, Expr, int]]] = {}  # base uid -> (reader, input, index)
    for node in order:
        if isinstance(node, View):  # a view's readers are recorded with it as their input
            continue
        for i, c in enumerate(node.children):
            reads.setdefault(base_of(c).uid, []).append((node, c, i))
    root_ids = {base_of(r).uid for r in roots}
    sums = {node.uid for node in order if node.uid not in exclude and node.sums_rows(tilings)}
    # folds over other axes and products that are materialized compute their rows by
    # chunks too
    tiles = {node.uid for node in order if node.uid not in exclude and node.makes_rows(tilings)}
    inside = {
        node.uid
        for node in order
        if node.uid not in root_ids and node.uid not in exclude and node.row_local()
    }
    by_uid = {node.uid: node for node in order}

    def keeps(uid: int) -> bool:
        """Every reader of ``uid`` reads it by rows, from inside a pipeline or a sink."""
        return all(
            _reads_rows(reader, c, i, True)
            if reader.uid in sums
            else _reads_rows(reader, c, i, False) and (reader.uid in inside or reader.uid in tiles)
            for reader, c, i in reads.get(uid, ())
        )

    def drop(work: list[int]) -> None:
        """Drop nodes some reader cannot compute by rows, until none is left. Dropping a
        node can only fail the nodes it reads, so only those are checked again (one
        sweep over all of them per drop took quadratic time on a long chain)."""
        while work:
            uid = work.pop()
            if uid in inside and not keeps(uid):
                inside.discard(uid)
                work.extend(base_of(c).uid for c in by_uid[uid].children)

    drop(list(inside))
    while True:
        # a node several pipelines compute is recomputed by each: cheap element-wise work,
        # but the folds below it (k-means' labels) are narrow and costly to recompute
        # (they read a whole distance matrix), so those become tiles of their own
        shared = [uid for uid in inside if len({r.uid for r, _, _ in reads.get(uid, ())}) > 1]
        below = _made_once_below([by_uid[uid] for uid in shared], inside)
        narrow = {f for f in below if f in tiles}
        if not narrow:
            break
        inside -= narrow
        drop([base_of(c).uid for f in narrow for c in by_uid[f].children])
    pipes: dict[int, RowPlan] = {}
    for node in order:
        sink = node.uid in sums
        if not sink and (node.uid not in tiles or node.uid in inside):
            continue
        ins = RowPlan()
        for i, (x, a) in enumerate(zip(node.children, node.row_axes())):
            base = base_of(x)
            if a >= 0 and base.uid in inside and _reads_rows(node, x, i, sink):
                leaves: list[tuple[Expr, bool]] = []
                tree = _tree(base, inside, leaves)
                if isinstance(x, View):
                    tree = _view_tree(x, a, tree)
                computed = [by_uid[u] for u in _uids(tree)]
                row = sum(_row_bytes(e) for e in computed + [leaf for leaf, rw in leaves if rw])
                ins.append(RowInput(i, a, tree, leaves, row))
        if ins:
            pipes[node.uid] = ins
    used = {uid for ris in pipes.values() for ri in ris for uid in _uids(ri.tree)}
    return pipes, used


def pipeline_rows(ctx: Lowering, order: Sequence[Expr]) -> dict[int, int]:
    """The row groups each pipelined node is computed in, by uid: its consumer join's
    group count (:meth:`~spartan.frontend.join_update.JoinUpdate.group_count`, the
    lowering's own rule), for the cost model to price the node as it runs. Other
    consumers (a fold's row tiles) are left out: the model prices by their tiles."""
    rows: dict[int, int] = {}
    for groups in consumer_rows(ctx, order).values():
        for uid, count in groups.items():
            rows[uid] = max(rows.get(uid, 0), count)
    return rows


def consumer_rows(ctx: Lowering, order: Sequence[Expr]) -> dict[int, dict[int, int]]:
    """Per consuming join (by uid), the row groups it computes each of its pipelined
    nodes in (by uid): a node two consumers compute is computed in each one's groups
    (an argmin in a product's 4 groups, and in a fold's own tiles: a fold is not
    listed, the model prices it by its tiles)."""
    out: dict[int, dict[int, int]] = {}
    for node in order:
        ris = ctx.pipelines.get(node.uid)
        if not ris or not isinstance(node, JoinUpdate):
            continue
        groups = node.group_count(ctx)
        out[node.uid] = {uid: groups for ri in ris for uid in _uids(ri.tree)}
    return out


def _row_bytes(e: Expr) -> int:
    return e.nbytes // e.shape[0] if e.shape and e.shape[0] else 0


def _made_once_below(nodes: Sequence[Expr], inside: set[int]) -> set[int]:
    """The pipelined nodes any of ``nodes`` is computed from that are costly to compute
    in each pipeline (:attr:`Expr.recomputed_per_pipeline` false: folds), each visited
    once (a loop's shared operands would make a walk per path exponential)."""
    out: set[int] = set()
    seen: set[int] = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        for c in n.children:
            base = base_of(c)
            if base.uid in inside and base.uid not in seen:
                seen.add(base.uid)
                if not base.recomputed_per_pipeline:
                    out.add(base.uid)
                stack.append(base)
    return out


def _reads_rows(reader: Expr, c: Expr, index: int, sink: bool) -> bool:
    """``reader`` reads its input ``index`` (``c``: a node or a view of it) by rows."""
    if sink:
        axis = reader.row_axes()[index]
        if axis < 0:
            return False
        return _keeps_rows(c.vm, c.base.shape[0], axis) if isinstance(c, View) else axis == 0
    if not reader.row_aligned(c, index):
        return False
    return _keeps_rows(c.vm, c.base.shape[0], 0) if isinstance(c, View) else True


def _keeps_rows(vm: Any, base_rows: int, axis: int) -> bool:
    """View axis ``axis`` is the base's axis 0, whole and in order."""
    a = vm.axes[axis]
    return a.base == 0 and a.whole((base_rows,)) and all(b != 0 for b, _ in vm.fixed)


def _tree(node: Expr, inside: set[int], leaves: list) -> Tree:
    """``node`` as a tree over ``leaves``; nodes in ``inside`` become tree nodes. Built
    without recursion (a pipelined chain is as deep as the loop that made it), its
    leaves numbered in the order a left-to-right walk meets them.

    A node (or view) read several times is built once: every reader holds the same
    subtree object, so the tree is a DAG as large as the graph, and :func:`flatten`
    computes that subtree once per chunk. Expanding it per read instead doubled the
    tree with each ``x = x * x`` of a loop (2**steps nodes)."""
    done: list[Tree] = []  # finished subtrees; a node's operands' are the last ones
    built: dict[int, Tree] = {}  # node or view uid -> its subtree (shared by its readers)
    # ("node", n): expand n; ("op", reader, c): operand c of reader; ("leaf", c, rowwise);
    # ("const", value); ("build", n, k): n from its k operands' subtrees; ("view", c): c over
    # the subtree of its base
    stack: list[tuple] = [("node", node)]
    while stack:
        item = stack.pop()
        kind = item[0]
        if kind == "node":
            n = item[1]
            if n.uid in built:  # (depth first: a node read again was finished already)
                done.append(built[n.uid])
                continue
            ops = n.row_operands()
            stack.append(("build", n, len(ops)))
            stack.extend(reversed(ops))
        elif kind == "op":
            reader, c = item[1], item[2]
            base = base_of(c)
            if not reader.row_aligned(c):
                done.append(_leaf(c, False, leaves))
            elif base.uid in inside:
                if isinstance(c, View):
                    if c.uid in built:
                        done.append(built[c.uid])
                        continue
                    stack.append(("view", c))
                stack.append(("node", base))
            else:
                done.append(_leaf(c, True, leaves))
        elif kind == "leaf":
            done.append(_leaf(item[1], item[2], leaves))
        elif kind == "const":
            done.append(("const", item[1]))
        elif kind == "view":
            c = item[1]
            built[c.uid] = _view_tree(c, 0, done.pop())
            done.append(built[c.uid])
        else:  # ("build", n, k): n over the last k subtrees (Expr.row_tree)
            n, k = item[1], item[2]
            subs = tuple(done[len(done) - k :])
            del done[len(done) - k :]
            built[n.uid] = n.row_tree(subs)
            done.append(built[n.uid])
    return done[0]


def _subtrees(tree: Tree) -> tuple:
    """The subtrees a tree node is computed from."""
    kind = tree[0]
    if kind in ("leaf", "const"):
        return ()
    return {"map": tree[2], "fold": (tree[3],), "dot": (tree[2], tree[3]), "view": (tree[5],)}[kind]


def _uids(tree: Tree) -> set[int]:
    """The pipelined nodes a tree computes (each shared subtree walked once)."""
    out: set[int] = set()
    seen: set[int] = set()
    stack = [tree]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if t[0] in ("map", "fold", "dot"):
            out.add(t[-1])
        stack.extend(_subtrees(t))
    return out


def tree_size(tree: Tree) -> int:
    """The distinct nodes of a tree (a subtree several nodes read counts once): the
    steps :func:`flatten` makes of it, less its saves and loads.

    >>> leaf = ("leaf", 0, True)
    >>> sq = ("map", np.multiply, (leaf, leaf), np.float64, (), 7)
    >>> tree_size(("map", np.add, (sq, sq), np.float64, (), 8))
    4
    """
    return sum(1 for node, _ in flatten(tree) if node[0] not in ("save", "load"))


def _leaf(c: Expr, rowwise: bool, leaves: list) -> Tree:
    for i, (leaf, rw) in enumerate(leaves):
        if leaf is c and rw == rowwise:
            return ("leaf", i, rowwise)
    leaves.append((c, rowwise))
    return ("leaf", len(leaves) - 1, rowwise)


def _view_tree(view: View, axis: int, sub: Tree) -> Tree:
    """A row-keeping view applied to a chunk of its base's rows (view axis ``axis``)."""
    vm = view.vm
    box = tuple((0, n) for n in view.shape)
    src: list[Any] = [slice(None)]
    for start, count, step, dropped in vm.selection(box)[1:]:
        if dropped:
            src.append(start)
        else:
            stop = start + step * count
            src.append(slice(start, stop if stop >= 0 else None, step))
    return ("view", tuple(src), vm.perm(), view.shape, axis, sub)


#: rows ``lo:hi`` of a tree, from the blocks of its leaves: ``f(blocks, lo, hi, first)``
#: (``first``: the global row of the group's row 0)
Rows = Callable[[Sequence[Any], int, int, int], Any]

#: a tree in postfix order, each node without its subtrees and with their count: flat,
#: so tasks pickle it without recursing (a nested tree pickles one C call per level,
#: which counts against Python's recursion limit)
Steps = tuple


def flatten(tree: Tree) -> Steps:
    """``tree`` as :data:`Steps`, walked without recursion.

    A subtree that several nodes read (the same object: :func:`_tree` builds a node
    once) is computed once: its step is followed by ``(("save", slot), 1)``, which keeps
    its value, and each later read is ``(("load", slot), 0)``. Leaves and constants
    are steps of their own at each read (a slice of a block costs nothing to redo).

    >>> flatten(("view", (slice(None),), None, (4,), 0, ("leaf", 0, True)))
    ((('leaf', 0, True), 0), (('view', (slice(None, None, None),), None, (4,), 0), 1))
    >>> sq = ("map", np.square, (("leaf", 0, True),), np.float64, (), 7)
    >>> [node[0] for node, _ in flatten(("map", np.add, (sq, sq), np.float64, (), 8))]
    ['leaf', 'map', 'save', 'load', 'map']
    """
    reads: dict[int, int] = {}  # id of a computed subtree -> how many nodes read it
    stack = [tree]
    while stack:
        t = stack.pop()
        if t[0] in ("leaf", "const"):
            continue
        reads[id(t)] = reads.get(id(t), 0) + 1
        if reads[id(t)] == 1:
            stack.extend(_subtrees(t))
    out: list[tuple] = []
    slots: dict[int, int] = {}  # id of a shared subtree computed already -> its slot
    # left-to-right postorder: (subtree, expanded?); its subtrees' steps before its own
    todo: list[tuple[Tree, bool]] = [(tree, False)]
    while todo:
        t, expanded = todo.pop()
        if id(t) in slots:
            out.append((("load", slots[id(t)]), 0))
            continue
        subs = _subtrees(t)
        if not expanded and subs:
            todo.append((t, True))
            todo.extend((sub, False) for sub in reversed(subs))
            continue
        out.append((_node_step(t), len(subs)))
        if reads.get(id(t), 0) > 1:
            slots[id(t)] = len(slots)
            out.append((("save", slots[id(t)]), 1))
    return tuple(out)


def _node_step(t: Tree) -> tuple:
    """A tree node without its subtrees (a step of :data:`Steps`)."""
    kind = t[0]
    if kind == "map":
        return ("map", t[1], t[3], t[4])  # (kind, fn, dtype, tail)
    if kind == "fold":
        return ("fold", t[1], t[2], t[4])  # (kind, direct, axes, dtype)
    if kind == "dot":
        return ("dot", t[1], t[4])  # (kind, f_join, dtype)
    if kind == "view":
        return t[:5]  # (kind, src, perm, shape, axis)
    return t


def rows_of(tree: Tree | Steps, flat: bool = False) -> Rows:
    """The function computing ``tree``'s rows (``flat``: given as :data:`Steps`), made
    once per task instead of once per chunk (thousands of rows each: rebuilding it per
    chunk is overhead repeated as often as there are chunks). It runs the steps
    on a stack, without recursion: a pipelined chain is as deep as the loop that made it.
    A shared subtree's value is kept (``save``) from its step to its last ``load``.

    >>> rows_of(("leaf", 0, True))([np.arange(6)], 2, 4, 0)
    array([2, 3])
    """
    flat_steps = tree if flat else flatten(tree)
    # (f, operands, save slot or -1, load slot or -1, last load of that slot?)
    steps: list[tuple[Any, int, int, int, bool]] = []
    last_load: dict[int, int] = {}
    for node, n in flat_steps:
        if node[0] == "save":
            f, k, _, load, last = steps[-1]
            steps[-1] = (f, k, node[1], load, last)
        elif node[0] == "load":
            last_load[node[1]] = len(steps)
            steps.append((None, 0, -1, node[1], False))
        else:
            steps.append((_step(node), n, -1, -1, False))
    for i in last_load.values():
        steps[i] = (*steps[i][:4], True)
    if len(steps) == 1:
        return steps[0][0]  # a leaf or a constant
    nslots = len(last_load)

    def rows(blocks: Sequence[Any], lo: int, hi: int, first: int) -> Any:
        stack: list[Any] = []
        saved: list[Any] = [None] * nslots
        for f, n, save, load, last in steps:
            if load >= 0:
                stack.append(saved[load])
                if last:  # (freed once its last reader has it)
                    saved[load] = None
                continue
            if n == 0:
                stack.append(f(blocks, lo, hi, first))
            elif n == 1:
                stack[-1] = f((stack[-1],), lo, hi, first)
            else:
                args = stack[len(stack) - n :]
                del stack[len(stack) - n :]
                stack.append(f(args, lo, hi, first))
            if save >= 0:
                saved[save] = stack[-1]
        return stack[0]

    return rows


def _step(node: tuple) -> Rows:
    """One node's step: ``f(xs, lo, hi, first)``, ``xs`` being the leaves' blocks for a
    leaf or a constant, else the values of the node's subtrees."""
    kind = node[0]
    if kind == "leaf":
        i = node[1]
        if node[2]:
            return lambda blocks, lo, hi, first: blocks[i][lo:hi]
        return lambda blocks, lo, hi, first: blocks[i]
    if kind == "const":
        value = node[1]
        return lambda blocks, lo, hi, first: value
    if kind == "map":
        return _map_rows(*node[1:])
    if kind == "fold":
        return _fold_rows(*node[1:])
    if kind == "dot":
        return _dot_rows(*node[1:])
    _, src, perm, shape, axis = node  # a view

    def view(xs: Sequence[Any], lo: int, hi: int, first: int) -> Any:
        part = xs[0][src]
        if perm is not None:
            part = part.transpose(perm)
        return part.reshape(shape[:axis] + (hi - lo,) + shape[axis + 1 :])

    return view


def _map_rows(fn: Callable[..., Any], dtype: Any, tail: tuple) -> Rows:
    def map_rows(xs: Sequence[Any], lo: int, hi: int, first: int) -> Any:
        out = fn(*xs)
        shape = (hi - lo, *tail)
        if type(out) is np.ndarray and out.shape == shape and out.dtype == dtype:
            return out
        xp = array_module(out)  # the inputs' device (not a scan of every block per chunk)
        out = xp.asarray(out)
        if out.shape != shape:
            out = xp.broadcast_to(out, shape)
        return out.astype(dtype, copy=False)

    return map_rows


def _fold_rows(direct: Callable[..., Any], axes: Any, dtype: Any) -> Rows:
    def fold_rows(xs: Sequence[Any], lo: int, hi: int, first: int) -> Any:
        (block,) = xs
        box = ((first + lo, first + hi), *((0, n) for n in block.shape[1:]))
        out = direct(block, axes, box)
        return array_module(out).asarray(out).astype(dtype, copy=False)

    return fold_rows


def _dot_rows(f_join: Callable[..., Any], dtype: Any) -> Rows:
    def dot_rows(xs: Sequence[Any], lo: int, hi: int, first: int) -> Any:
        x, y = xs
        ext = (
            Extent(((first + lo, first + hi), *((0, n) for n in x.shape[1:]))),
            Extent(tuple((0, n) for n in y.shape)),
        )
        ((_, update),) = f_join(ext, x, y)
        return update.astype(dtype, copy=False)

    return dot_rows


class ChunkedJoin:
    """Runs ``f_join`` on one group in row chunks, computing pipelined inputs per chunk.

    ``layout`` has, per join input, ``None`` (one assembled block, cut along
    ``axes[i]`` or passed whole) or a pipeline's tree (as :data:`Steps`) with, per
    leaf, whether the leaf is read by rows."""

    def __init__(
        self,
        layout: Sequence[tuple[Steps, tuple[bool, ...]] | None],
        axes: Sequence[int],
        rows: int,
        twins: dict[int, int] | None = None,
    ) -> None:
        self.layout, self.axes, self.rows = list(layout), tuple(axes), rows
        #: input -> the pipelined input whose chunk, transposed, is its chunk
        self.twins = dict(twins or {})

    @classmethod
    def of(cls, inputs: Sequence[RowInput], join: Any, chunk_bytes: int) -> ChunkedJoin:
        """The runner of ``join``'s groups; a chunk fits ``chunk_bytes``."""
        by_index = {ri.index: ri for ri in inputs}
        twins = _twins(join, by_index)
        layout, row_bytes = [], 0
        for i, (x, a) in enumerate(zip(join.children, join.axes)):
            if i in twins:  # its chunk is its twin's, transposed: it reads no leaves
                layout.append((flatten(by_index[i].tree), ()))
            elif i in by_index:
                layout.append((flatten(by_index[i].tree), by_index[i].rowwise))
                row_bytes += by_index[i].row_bytes
            else:
                layout.append(None)
                row_bytes += x.nbytes // x.shape[a] if a >= 0 and x.shape[a] else 0
        return cls(layout, join.axes, chunk_rows(row_bytes, chunk_bytes), twins)

    @property
    def nblocks(self) -> int:
        """Blocks one group's task receives."""
        return sum(1 if spec is None else len(spec[1]) for spec in self.layout)

    def _split(self, blocks: Sequence[Any]) -> list[Sequence[Any]]:
        """The group's blocks per input."""
        parts, i = [], 0
        for spec in self.layout:
            count = 1 if spec is None else len(spec[1])
            parts.append(blocks[i : i + count])
            i += count
        return parts

    def __call__(
        self, f_join: Callable[..., Any], extents: Sequence[Extent], blocks: Sequence[Any]
    ) -> list[tuple[Any, Any]]:
        parts, step = self._split(blocks), self.rows
        runs = [None if spec is None else rows_of(spec[0], flat=True) for spec in self.layout]
        n = next(ext.shape[a] for ext, a in zip(extents, self.axes) if a >= 0)
        out: list[tuple[Any, Any]] = []
        for lo in range(0, n, step):
            stop_if_cancelled()  # (Ctrl-C: between chunks, not after the tile)
            hi = min(n, lo + step)
            chunk, exts = [], []
            for i, (spec, ext, a, bs) in enumerate(zip(self.layout, extents, self.axes, parts)):
                if a < 0:
                    chunk.append(bs[0])
                    exts.append(ext)
                    continue
                first = ext.box[a][0]
                if i in self.twins:
                    chunk.append(None)  # below, once its twin's chunk exists
                elif spec is None:
                    chunk.append(bs[0][(slice(None),) * a + (slice(lo, hi),)])
                else:
                    chunk.append(runs[i](bs, lo, hi, first))
                box = list(ext.box)
                box[a] = (first + lo, first + hi)
                exts.append(Extent(tuple(box)))
            for i, j in self.twins.items():
                chunk[i] = chunk[j].T
            out.extend(f_join(tuple(exts), *chunk) or ())
        return out


def _twins(join: Any, pipelined: dict[int, RowInput]) -> dict[int, int]:
    """Pipelined 2-d inputs that are the whole transpose of another pipelined input
    (``Xc.T @ Xc``): their chunk is the other's chunk transposed, computed once, and the
    product sees one buffer twice (NumPy's BLAS then computes half: a rank-k update)."""
    twins = {}
    for i, x in enumerate(join.children):
        # the same vector twice (``t @ t``): its chunk is the other's (``.T`` of a
        # vector is itself), computed once, as the cost model prices it
        same = [
            j
            for j, y in enumerate(join.children[:i])
            if y is x and x.ndim == 1 and j in pipelined and j not in twins
        ]
        if i in pipelined and same and join.axes[i] == join.axes[same[0]]:
            twins[i] = same[0]
            continue
        if (
            i not in pipelined
            or not isinstance(x, View)
            or x.vm.whole_transpose(x.base.shape) != (1, 0)
        ):
            continue
        for j, y in enumerate(join.children):
            if j != i and j in pipelined and j not in twins and y is x.base:
                if join.axes[i] == 1 and join.axes[j] == 0:
                    twins[i] = j
                    break
    return twins


class FoldRows:
    """One input tile's partial of a fold over the rows, computed in row chunks: the
    pipeline's rows of each chunk, reduced by ``local``, combined with ``combine``."""

    def __init__(  # noqa: ANN001
        self, ri: RowInput, local: Callable, combine: Callable, axes, box: Box, chunk_bytes: int
    ) -> None:
        self.steps = flatten(ri.tree)
        self.local, self.combine, self.axes, self.box = local, combine, axes, box
        self.rows = chunk_rows(ri.row_bytes, chunk_bytes)
        #: leaves read by rows may arrive in pieces (:class:`~spartan.backend.worker.RowStack`)
        self.row_stacks = ri.rowwise

    def __call__(self, *blocks: Any) -> Any:
        first, rows = self.box[0][0], rows_of(self.steps, flat=True)

        def chunk(lo: int, hi: int) -> Any:
            return rows(blocks, lo, hi, first)

        partial = reduce_rows(chunk, self.box, self.rows, self.local, self.combine, self.axes)
        return array_module(partial).asarray(partial)


class FoldTile:
    """One output tile of a fold over other axes than the rows: its rows computed in
    chunks through the pipeline and reduced by ``direct``. ``groups`` cut the tile's
    rows where the leaves' tiles end, so each group reads every leaf in place."""

    def __init__(  # noqa: ANN001
        self, ri: RowInput, direct, axes, shape, dtype, groups, chunk_bytes: int
    ) -> None:
        self.steps, self.nleaves = flatten(ri.tree), len(ri.leaves)
        self.direct, self.axes, self.shape, self.dtype = direct, axes, shape, dtype
        self.groups = groups
        self.rows = chunk_rows(ri.row_bytes + int(np.dtype(dtype).itemsize), chunk_bytes)

    def __call__(self, *blocks: Any) -> Any:
        n, step, rows = self.nleaves, self.rows, rows_of(self.steps, flat=True)
        out = None
        for gi, (start, first, last) in enumerate(self.groups):
            bs = blocks[gi * n : (gi + 1) * n]
            for lo in range(0, last - first, step):
                stop_if_cancelled()  # (Ctrl-C: between chunks, not after the tile)
                hi = min(last - first, lo + step)
                block = rows(bs, lo, hi, first)
                box = ((first + lo, first + hi), *((0, n) for n in block.shape[1:]))
                part = self.direct(block, self.axes, box)
                xp = array_module(part)
                if out is None:
                    out = xp.empty(self.shape, dtype=self.dtype)
                out[start + lo : start + hi] = part
        return np.empty(self.shape, dtype=self.dtype) if out is None else out
