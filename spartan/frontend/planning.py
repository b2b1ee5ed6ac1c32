"""Tilings for the nodes of one evaluation, before they are lowered.

User-fixed tilings (``tiling=``, :func:`spartan.retile`) and evaluated arrays are kept;
every other node gets the tiling the optimizer picks (see
:mod:`spartan.frontend.optimizer`), falling back to the local rules here. What each
operator is to the optimizer (:meth:`Expr.program_node`) and its local rule
(:meth:`Expr.local_tiling`) are facts of its class.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Hashable, Sequence

from spartan.backend import session
from spartan.backend.base import Backend, Stats
from spartan.config import config
from spartan.frontend.expr import Expr
from spartan.frontend.optimizer import Plan, Program, UpdateHistory, optimize
from spartan.frontend.view import View
from spartan.tiling import Tiling


def default_pieces(nbytes: int, nworkers: int) -> int:
    """Tiles for an array of ``nbytes``: a multiple of the worker count, each at most
    ``config.max_tile_bytes`` (or ``config.tiles_per_worker`` per worker)."""
    if config.tiles_per_worker:
        return nworkers * config.tiles_per_worker
    gpu = session.current().device == "gpu"
    limit = config.gpu_max_tile_bytes if gpu else config.max_tile_bytes
    return nworkers * max(1, math.ceil(nbytes / (nworkers * limit)))


def default_tiling(shape: Sequence[int], itemsize: int, nworkers: int) -> Tiling:
    nbytes = math.prod(shape) * itemsize
    return Tiling.row(shape, default_pieces(nbytes, nworkers))


def resolve_tiling(spec: object, shape: Sequence[int], itemsize: int, nworkers: int) -> Tiling:
    """A ``tiling=`` argument: a :class:`Tiling` or one of row/column/block/dup/single."""
    if isinstance(spec, Tiling):
        spec.check(shape)
        return spec
    if isinstance(spec, str):
        pieces = default_pieces(math.prod(shape) * itemsize, nworkers)
        if spec == "dup":
            return Tiling.duplicated(shape)
        return Tiling.named(spec, shape, pieces)
    raise TypeError(f"tiling must be a Tiling or a name, not {type(spec).__name__}")


class Planned:
    """The optimizer's plan for one evaluation and the Expr → program-node map."""

    def __init__(
        self, plan: Plan, node_of: dict[int, int], retile: list[tuple[Expr, Tiling]]
    ) -> None:
        self.plan = plan
        self.node_of = node_of
        #: evaluated inputs the plan re-tiles because that moves fewer bytes overall
        self.retile = retile

    def record(self, bytes_by_tag: dict[int, int]) -> None:
        """Measured bytes per node; join_updates teach the history their update bytes."""
        before = {site: _learned(site) for site in self.sites}
        for uid, nid in self.node_of.items():
            if nid in self.plan.predicted:
                self.plan.record_measured(nid, bytes_by_tag.get(uid, 0))
        self.plan.teach(_history)
        for site, old in before.items():
            _steady[site] = _steady.get(site, 0) + 1 if _learned(site) == old else 0
            _unmeasured[site] = 0

    @property
    def sites(self) -> set[Hashable]:
        """The call sites of this plan's join_updates (what measuring it teaches)."""
        return _join_sites(self.plan.program)

    def worth_measuring(self) -> bool:
        """Whether to ask the workers for this evaluation's moved bytes: while a join
        site's learned cost still moves, and every :data:`MEASURE_EVERY` evaluations
        after (each ask is a call to every worker: 0.6 ms of the 6 ms evaluation of a
        400 x 400 product in a loop)."""
        sites = self.sites  # (none: no join_update, nothing to learn)
        if any(_steady.get(s, 0) < SETTLED_AFTER for s in sites):
            return True
        if any(_unmeasured.get(s, 0) + 1 >= MEASURE_EVERY for s in sites):
            return True
        for s in sites:
            _unmeasured[s] = _unmeasured.get(s, 0) + 1
        return False

    @property
    def tags(self) -> frozenset[int]:
        """The tags of this plan's tasks: its nodes' uids."""
        return frozenset(self.node_of)

    def explain(self) -> str:
        return self.plan.explain()


_history = UpdateHistory()
#: a join site whose learned cost (to two digits, as plans are cached) came out the same
#: this many measurements in a row is settled: an evaluation of settled sites only is
#: measured once every MEASURE_EVERY
SETTLED_AFTER = 3
MEASURE_EVERY = 16
#: per join site: measurements in a row that left its learned cost as it was, and
#: evaluations since its last measurement
_steady: dict[Hashable, int] = {}
_unmeasured: dict[Hashable, int] = {}


def _join_sites(program: Program) -> set[Hashable]:
    """The call sites of ``program``'s join_updates."""
    return {n.params.get("site") for n in program} - {None}


def _learned(site: Hashable) -> float:
    """``site``'s learned update cost as plans are keyed by it (two digits)."""
    return float(f"{_history.factor(site):.2g}")


log = logging.getLogger("spartan")
#: evaluated plans with their measured bytes still to come (read at the next planning,
#: so that an evaluation does not wait a round trip for them), and the backend's count
#: of recoveries when each was sent
_to_learn: list[tuple[Planned, Callable[[], Stats], int]] = []


def learn_later(planned: Planned, stats: Callable[[], Stats]) -> None:
    """Record ``planned``'s measured bytes (``stats()``) before the next plan is made."""
    _to_learn.append((planned, stats, getattr(session.current(), "recoveries", 0)))


def _learn() -> None:
    """Teach the history what the evaluated plans measured. Plans depend on bytes alone,
    never on time: an evaluation during which a worker was lost teaches nothing (its
    counts lack the dead worker's bytes and count the re-run tasks' twice), so no
    count a failure distorted steers a later plan."""
    while _to_learn:
        planned, stats, recoveries = _to_learn.pop(0)
        if getattr(session.current(), "recoveries", 0) != recoveries:
            log.debug("no measured bytes for an earlier plan: a worker was lost since")
            continue
        try:
            measured = stats().bytes_by_tag
        except Exception as error:  # noqa: BLE001 -- e.g. a worker lost since: learn nothing
            log.debug("no measured bytes for an earlier plan: %s", error)
            continue
        planned.record(measured)


def choose(order: Sequence[Expr], nworkers: int) -> tuple[dict[int, Tiling], Planned]:
    """A tiling for every node of ``order``, chosen by the optimizer.

    User-fixed tilings win over the plan; evaluated inputs enter as fixed sources.
    """
    _learn()
    tilings = local_rules(order, nworkers)
    try:
        program, node_of, inputs = to_program(order, nworkers)
    except Exception as error:  # noqa: BLE001 -- an optimizer bug must not stop the user's work
        if config.strict_optimizer:
            raise
        log.warning("tiling optimizer failed (%s); using local tiling rules", error)
        return tilings, None
    fixed = {
        node_of[e.uid]: e.tiling_hint
        for e in order
        if e.tiling_hint is not None and e.uid in node_of and not isinstance(e, View)
    }
    if not config.retile_inputs:
        fixed.update({node_of[e.uid]: e.data.tiling for e in inputs})
    fixed.update(_replicated_small(order, node_of, nworkers))
    budget = config.dup_budget_bytes
    free = device_free(session.current())
    if free:  # the budget applies per device: a duplicate must fit each GPU
        budget = min(budget, free * (nworkers - 1))
    try:
        plan = _cached_optimize(program, nworkers, budget, fixed)
    except Exception as error:  # noqa: BLE001 -- an optimizer bug must not stop the user's work
        if config.strict_optimizer:
            raise
        log.warning("tiling optimizer failed (%s); using local tiling rules", error)
        return tilings, None
    for e in order:
        if e.tiling_hint is None and e.uid in node_of and not isinstance(e, View):
            t = with_pieces(plan.tiling[node_of[e.uid]], e.shape, nworkers)
            storage = plan.program[node_of[e.uid]].params.get("storage")
            if storage is not None:  # cut where the storage chunks are
                t = storage.aligned(e.shape, t, nworkers)
            if t.fits(e.shape):
                tilings[e.uid] = t
    retile = []
    for e in inputs:  # evaluated inputs: re-tiled only where the plan pays for it
        t = plan.tiling[node_of[e.uid]]
        if not same_axes(t, e.data.tiling) and t.fits(e.shape):
            retile.append((e, with_pieces(t, e.shape, nworkers)))
    new_base = {e.uid: t for e, t in retile}
    for e in order:  # views see their base's (possibly new) tiling
        if isinstance(e, View):
            base = e.base
            t = new_base.get(base.uid) or (
                base.data.tiling if base.data is not None else tilings[base.uid]
            )
            tilings[e.uid] = e.induced_tiling(t)
    return tilings, Planned(plan, node_of, retile)


def _replicated_small(
    order: Sequence[Expr], node_of: dict[int, int], nworkers: int
) -> dict[int, Tiling]:
    """Small computed arrays kept whole on every worker.

    Cutting a few hundred bytes (a weight vector, cluster centers, a scalar) buys no
    parallelism, yet every task that reads such an array would wait for a piece from
    another worker's queue; a replica per worker makes all those reads local for the
    price of one exchange where it is computed."""
    limit = config.replicate_below_bytes
    if not limit or nworkers < 2:
        return {}
    return {
        node_of[e.uid]: Tiling.duplicated(e.shape)
        for e in order
        if e.uid in node_of
        and e.tiling_hint is None
        and e.data is None
        and not isinstance(e, View)
        and e.shape_known
        and math.prod(e.shape) * e.dtype.itemsize <= limit
    }


_plans: dict[tuple, Plan] = {}


def _cached_optimize(program: Program, nworkers: int, budget: int, fixed: dict) -> Plan:
    """``optimize``, reusing the plan of an identical earlier graph (a loop that evaluates
    every iteration plans once). The learned update costs of the graph's join sites are
    part of the key, to two significant digits: a loop whose measured bytes wobble a
    little keeps its plan instead of paying the search again."""
    sites = _join_sites(program)
    key = (
        nworkers,
        budget,
        tuple(sorted(fixed.items(), key=lambda kv: kv[0])),
        tuple(
            (n.op, n.shape, n.itemsize, n.inputs, repr(sorted(n.params.items(), key=str)))
            for n in program
        ),
        tuple(sorted(((s, _learned(s)) for s in sites), key=str)),
    )
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) >= 256:
            _plans.clear()
        plan = _plans[key] = optimize(program, nworkers, budget, _history, fixed=fixed)
    return dataclasses.replace(plan, program=program, measured={})


def device_free(backend: Backend) -> int:
    """Free memory of the smallest GPU among the workers (0 for CPU workers)."""
    if backend.device != "gpu":
        return 0
    return min(backend.worker_memory())


def same_axes(a: Tiling, b: Tiling) -> bool:
    """Cut along the same axes (so, up to rounding, the same elements on each worker)."""
    if a.replicated or b.replicated:
        return a.replicated == b.replicated
    return [c > 1 for c in a.cuts] == [c > 1 for c in b.cuts]


def with_pieces(t: Tiling, shape: Sequence[int], nworkers: int) -> Tiling:
    """The optimizer's choice of axes, cut into the configured number of tiles
    (:meth:`Tiling.with_pieces`). The count depends only on the shape, so arrays of one
    shape are cut alike."""
    return t.with_pieces(shape, default_pieces(math.prod(shape) * 8, nworkers))


def to_program(order: Sequence[Expr], nworkers: int) -> tuple[Program, dict[int, int], list[Expr]]:
    """The optimizer's view of the pending graph (operator kinds, shapes, axes, views),
    the Expr → node map, and the evaluated inputs (sources with their current tiling,
    which the optimizer may pay to change)."""
    p = Program()
    ids: dict[int, int] = {}
    inputs: list[Expr] = []

    def node(e: Expr) -> int:
        if e.uid not in ids:
            if isinstance(e, View):
                ids[e.uid] = p.view(node(e.base), e.vm, e.label)
            else:
                ids[e.uid] = p.source(e.shape, e.dtype.itemsize, e.data.tiling, name=e.label)
                inputs.append(e)
        return ids[e.uid]

    for e in order:
        ids[e.uid] = _add(p, e, node, nworkers)
    return p, ids, inputs


def _add(p: Program, e: Expr, node: Callable[[Expr], int], nworkers: int) -> int:
    """``e``'s node in ``p``: a source where its tiling is fixed, else its own
    (:meth:`Expr.program_node`), else a free source."""
    ins = [node(c) for c in e.children]
    if e.tiling_hint is not None and not e.children:
        return p.source(e.shape, e.dtype.itemsize, e.tiling_hint, name=e.label)
    nid = e.program_node(p, ins)
    if nid is not None:
        return nid
    # a new array (or an operator the optimizer has no profile for): its output tiling
    # is free, but for the storage chunks a stored array is read in
    pieces = default_pieces(e.size * 8, nworkers)  # (as with_pieces counts)
    return p.source(e.shape, e.dtype.itemsize, None, name=e.label, storage=e.storage(pieces))


def local_rules(order: Sequence[Expr], nworkers: int) -> dict[int, Tiling]:
    """Each node's own rule (:meth:`Expr.local_tiling`: a map follows its first input
    where that moves nothing, a fold its input's kept cuts), else the default."""
    out: dict[int, Tiling] = {}

    def tiling_of(e: Expr) -> Tiling:
        return e.data.tiling if e.data is not None else out[e.uid]

    for e in order:
        t = e.tiling_hint if e.tiling_hint is not None else e.local_tiling(tiling_of)
        out[e.uid] = t if t is not None else default_tiling(e.shape, e.dtype.itemsize, nworkers)
    return out
