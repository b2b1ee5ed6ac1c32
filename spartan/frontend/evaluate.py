"""Evaluation: order the pending graph, choose tilings, fuse, lower, wait.

The lowering strategy of every node is chosen here, in :func:`_lower`, before any node
is lowered: tiles of its own, fused into its consumer (:func:`fusable`), or computed in
row chunks inside its consumer (:func:`spartan.frontend.pipeline.row_pipelines`).

>>> y = spartan.evaluate(x + 1)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from typing import Protocol

import numpy as np

from spartan.backend import session
from spartan.backend.base import Backend, Region, driver_time, interrupted
from spartan.backend.master import free_queued
from spartan.config import config
from spartan.frontend import memory, planning
from spartan.frontend.expr import Expr, full_box
from spartan.frontend.lowering import Lowering, identity, read_pieces
from spartan.frontend.map import Map
from spartan.frontend.pipeline import pipeline_rows, row_pipelines
from spartan.frontend.view import View
from spartan.tiling import Box, Tiling, box_shape

log = logging.getLogger("spartan")


class AfterEvaluation(Protocol):
    """Work done with an evaluation's new arrays after its wait (periodic checkpoints,
    :mod:`spartan.frontend.checkpoint`, register here: this module does not import them)."""

    def due(self) -> bool:
        """Whether :meth:`after` will use the nodes (they are then kept until the wait)."""
        ...

    def after(self, nodes: list[Expr]) -> None:
        """Called after the wait with the lowered nodes (empty when not due)."""
        ...


#: what every evaluation calls after its wait, in order
after_evaluation: list[AfterEvaluation] = []


def pending_order(roots: Sequence[Expr]) -> list[Expr]:
    """Unevaluated nodes reachable from ``roots``, inputs before their consumers."""
    order: list[Expr] = []
    seen: set[int] = set()
    stack: list[tuple[Expr, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node.uid in seen or (node.data is not None and not isinstance(node, View)):
            continue
        seen.add(node.uid)
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(node.children))
    return order


def too_deep(expr: Expr) -> bool:
    """Whether ``expr``'s pending graph has a path of more than
    ``config.max_graph_depth`` unevaluated nodes: evaluate it now (as with
    ``config.max_graph_size``). ``Expr.depth`` was counted when each node was made, so
    it may count inputs evaluated since: the depths are counted again before saying yes."""
    if expr.depth <= config.max_graph_depth:
        return False
    for node in pending_order([expr]):
        node.depth = 1 + max((c.depth for c in node.children if c.data is None), default=0)
    return expr.depth > config.max_graph_depth


def fusable(
    order: Sequence[Expr], roots: Sequence[Expr], tilings: dict[int, Tiling] | None = None
) -> set[int]:
    """Maps computed inside their consumers instead of into tiles of their own: one whose
    only consumer is a same-shape map, or a fold, when the plan tiles them alike
    (otherwise reading through it would cost more); and a replicated 0-d map that only
    maps consume, computed again inside each (a solver's step size: one division per
    consumer tile instead of a task per worker and iteration), when everything it reads
    is replicated too (no tile would read another worker's piece for it)."""
    consumers: dict[int, list[Expr]] = {}
    for node in order:
        for c in node.children:
            consumers.setdefault(c.uid, []).append(node)
    root_ids = {r.uid for r in roots}
    fused: set[int] = set()
    for node in order:
        users = consumers.get(node.uid, [])
        if (
            not node.fusable
            or node.uid in root_ids
            or node.tiling_hint is not None
            or not users
            or any(u.children.count(node) != 1 for u in users)
        ):
            continue
        if len(users) == 1 and users[0].fuses(node, None):
            # (the consumer's own rule, e.g. a map's: same shape, tiled alike)
            if users[0].fuses(node, tilings):
                fused.add(node.uid)
        elif (
            tilings is not None
            and node.shape == ()
            and all(u.inlines_fused for u in users)
            and _replicated_reads(node, tilings, fused)
        ):
            fused.add(node.uid)
    return fused


def _replicated_reads(node: Expr, tilings: dict[int, Tiling], fused: set[int]) -> bool:
    """Whether ``node`` is replicated and so is every array its tasks would read (the
    fused maps inside it are walked without recursion: a chain is as deep as its loop)."""

    def replicated(e: Expr) -> bool:
        tiling = (
            e.data.tiling if e.data is not None and not isinstance(e, View) else tilings.get(e.uid)
        )
        return tiling is not None and tiling.replicated

    stack, seen = [node], {node.uid}
    while stack:
        e = stack.pop()
        if not replicated(e):
            return False
        for c in e.children:
            if c.uid in fused and c.uid not in seen:
                seen.add(c.uid)
                stack.append(c)
            elif c.uid not in fused and not replicated(c):
                return False
    return True


def evaluate(*exprs: Expr, then: Callable[[], None] | None = None) -> None:
    """Compute every pending node needed by ``exprs`` and keep the results.

    ``then`` submits more tasks that read the results (writing them to files), in the
    same evaluation: it is called once every node is lowered, before the wait, so its
    tasks run as the tiles they read are made. It is not called when nothing was
    pending."""
    _evaluate_then_fetch(exprs, then=then)


def _evaluate_then_fetch(
    exprs: Sequence[Expr], fetch: Sequence[Expr] = (), then: Callable[[], None] | None = None
) -> list | None:
    """:func:`evaluate`, then the ``fetch`` arrays (some of ``exprs``) whole on the
    driver, pulled in the evaluation's own wait; None with nothing to evaluate.

    Thread-safe: one evaluation at a time (:meth:`~spartan.backend.master.Master.evaluating`);
    the pending graph is found holding the backend, so a node another thread evaluated
    meanwhile is not evaluated twice."""
    if all(e.data is not None and not isinstance(e, View) for e in exprs):
        return None  # (without starting a backend)

    backend = session.current()
    # the temporaries an evaluation frees (most when its graph goes) leave each worker
    # as one message, not one per array
    # the driver's own time per phase (spartan.stats()["driver_seconds"]), counted once
    # this evaluation holds the backend: what is not planning, sending or waiting is
    # lowering
    with backend.evaluating(), driver_time.phase("lower"):
        order: list[Expr] | None = pending_order(exprs)
        if not order:
            return None
        try:
            start = time.perf_counter()
            lowered, planned = _lower(order, exprs, backend, {e.uid for e in fetch})
            regions = [_region(e, full_box(e.shape)) for e in fetch]
            # the fetched arrays' tasks, held back by _lower, go out knowing that their
            # tiles are fetched: they can deliver them as they finish
            with driver_time.phase("dispatch"):
                backend.flush(regions)
            for node in lowered:
                node.done()
            if then is not None:
                then()
            hooks = list(after_evaluation)
            saving = lowered if any(h.due() for h in hooks) else []
            # the graph's last references: its temporaries are freed behind the tasks
            # just sent, while they run, not after the wait (their finalizers queued
            # them: this is a safe point to delete them)
            order = lowered = None
            free_queued()
            # learn real update costs for next time, while they may still change
            if planned is not None and planned.worth_measuring():
                # promised now, the counters are asked behind the fetch and are there by
                # the next plan
                planning.learn_later(planned, backend.stats_later(planned.tags))
            with driver_time.phase("wait"):
                out = backend.wait(regions)
                for hook in hooks:
                    hook.after(saving)
        except KeyboardInterrupt as interrupt:
            raise _interrupted(backend, interrupt, order) from None
    log.debug("evaluated in %.3f s", time.perf_counter() - start)
    return out


def _interrupted(
    backend: Backend, interrupt: KeyboardInterrupt, order: Sequence[Expr] | None
) -> KeyboardInterrupt:
    """Ctrl-C in an evaluation: the work sent is cancelled (by the wait it stopped, or
    here), and what the user sees is a one-line note, not that wait's traceback.
    ``order``: the graph, if it was still being lowered. A node lowered already keeps
    its tiles (the backend makes those of cancelled tasks again when they are read);
    one whose lowering was cut off has none (tiles are set once all their tasks are
    submitted) and stays pending, its inputs kept."""
    if getattr(interrupt, "spartan_cancelled", None) is None:
        interrupt = interrupted(backend.cancel())
    for node in order or ():
        if node.data is not None and not isinstance(node, View):
            node.done()
    return interrupt.with_traceback(None)  # (the frames of the backend's wait go)


def _lower(
    order: list[Expr], exprs: Sequence[Expr], backend: Backend, unsent: Collection[int] = ()
) -> tuple[list[Expr], planning.Planned | None]:
    """Plan ``order`` and send its tasks, but leave those of the nodes ``unsent`` (by
    uid) queued for the caller's :meth:`~Backend.flush` (unless a later node's flush
    sends them); the nodes lowered, and the plan."""
    start = time.perf_counter()
    with driver_time.phase("plan"):
        tilings, planned = planning.choose(order, backend.nworkers)
        fused = fusable(order, exprs, tilings)
        if planned is not None and config.pipeline_rows:  # (those that move no more bytes)
            pipes, piped = planned.pipelines(order, exprs, tilings, fused, backend)
        else:
            pipes, piped = row_pipelines(order, exprs, tilings, config.pipeline_rows)
    # a pipeline's leaves are read as tiles, so they must not vanish into their consumer
    fused = (
        fused - {leaf.uid for ris in pipes.values() for ri in ris for leaf, _ in ri.leaves}
    ) | piped
    ctx = Lowering(backend, tilings, fused, pipes)
    for expr, tiling in planned.retile if planned is not None else ():
        retile_evaluated(ctx, expr, tiling, planned.retile_tag[expr.uid])
    if planned is not None:  # (predicted bytes as the nodes run: inputs re-tiled first)
        planned.lowered_as(order, fused, piped, pipeline_rows(ctx, order))
    log.debug("planned %d nodes in %.1f ms", len(order), (time.perf_counter() - start) * 1e3)
    lowered = [n for n in order if n.uid not in fused and not isinstance(n, View)]
    memory.check(lowered, tilings, backend.nworkers, planning.device_free(backend))
    try:
        for node in lowered:
            backend.tag = node.uid
            node.lower(ctx)
            if node.uid not in unsent:
                with driver_time.phase("dispatch"):
                    backend.flush()  # one operator's tasks go out together
            if planned is not None:  # (a filter's re-cut, priced once counted)
                planned.lowered(node)
            node.planned = planned
    finally:
        backend.tag = None
    return lowered, planned


def retile_evaluated(ctx: Lowering, expr: Expr, tiling: Tiling, tag: int | None = None) -> None:
    """Give an evaluated array new tiles in ``tiling`` (the plan found it pays off);
    its tasks' bytes are counted under ``tag`` (default: the array's uid)."""
    copy = Map(identity, [expr], expr.shape, expr.dtype, name="retile")
    ctx.tilings[copy.uid] = tiling
    ctx.backend.tag = expr.uid if tag is None else tag
    copy.lower(ctx)
    expr.data = copy.data


def compute(*exprs: Expr) -> list[np.ndarray]:
    """Each of ``exprs`` whole on the driver: evaluated together, then fetched (only
    the needed pieces) in the evaluation's own wait, all in one round trip."""
    if not exprs:
        return []
    out = _evaluate_then_fetch(exprs, exprs)
    if out is None:  # nothing to evaluate
        regions = [_region(e, full_box(e.shape)) for e in exprs]  # (see gather)
        backend = session.current()
        with backend.evaluating():
            try:
                with driver_time.phase("wait"):
                    out = backend.wait(regions)
            except KeyboardInterrupt as interrupt:
                raise _interrupted(backend, interrupt, None) from None
    return out


def to_numpy(expr: Expr) -> np.ndarray:
    """The whole array on the driver (:func:`compute` of one)."""
    return compute(expr)[0]


def gather(expr: Expr, box: Box) -> np.ndarray:
    """``expr[box]`` on the driver (``expr`` evaluated or a view of an evaluated base)."""
    region = _region(expr, box)  # first: it raises for tiles of a session shut down
    backend = session.current()
    with backend.evaluating():
        return backend.wait([region])[0]


def _region(expr: Expr, box: Box) -> Region:
    return Region(box_shape(box), expr.dtype, tuple(read_pieces(expr, box, -1)))


__all__ = ["compute", "evaluate", "to_numpy", "gather", "too_deep"]
