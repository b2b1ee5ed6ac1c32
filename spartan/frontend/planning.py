"""Tilings for the nodes of one evaluation, before they are lowered.

User-fixed tilings (``tiling=``, :func:`spartan.retile`) and evaluated arrays are kept;
every other node gets the tiling the optimizer picks (see
:mod:`spartan.frontend.optimizer`), falling back to the local rules here. What each
operator is to the optimizer (:meth:`Expr.program_node`) and its local rule
(:meth:`Expr.local_tiling`) are facts of its class.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence

from spartan.backend import session
from spartan.backend.base import Backend, Stats
from spartan.config import config
from spartan.frontend.expr import Expr
from spartan.frontend.optimizer import Choice, Plan, Program, UpdateHistory, optimize
from spartan.frontend.optimizer.profiles import profile
from spartan.frontend.view import View, base_of
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
        self,
        plan: Plan,
        node_of: dict[int, int],
        retile: list[tuple[Expr, Tiling]],
        inputs: Sequence[Expr] = (),
    ) -> None:
        self.plan = plan
        #: (the cached plan's dict, shared by every evaluation of the same graph: copied
        #: before this evaluation's changes)
        self._shared_predicted = plan.predicted
        #: the plan's own (predicted, updates), before :meth:`lowered_as` re-prices them
        self._base = (plan.predicted, plan.updates)
        self.node_of = node_of
        #: evaluated inputs the plan re-tiles because that moves fewer bytes overall
        self.retile = retile
        # the backend's byte counters by tag are totals since its last reset: an input's
        # own uid tagged the tasks that computed it (and earlier evaluations' re-tilings
        # of it), so this evaluation's re-tiling of it gets a tag of its own
        fixed = {e.uid for e in inputs}
        self.node_of_tag: dict[int, int] = {
            uid: nid for uid, nid in node_of.items() if uid not in fixed
        }
        #: the tag of each re-tiled input's copy tasks (by the input's uid)
        self.retile_tag: dict[int, int] = {}
        #: the row groups each pipelined node is computed in (by node; :meth:`lowered_as`)
        self._rows: dict[int, int] = {}
        #: the nodes computed in row pipelines (:meth:`lowered_as`)
        self._piped: set[int] = set()
        #: the last pricing (:meth:`_priced`): its key, result and row groups
        self._last: tuple | None = None
        for e, _ in retile:
            self.retile_tag[e.uid] = tag = next(_retile_tags)
            self.node_of_tag[tag] = node_of[e.uid]

    def record(self, bytes_by_tag: dict[int, int]) -> None:
        """Measured bytes per node; join_updates teach the history their update bytes."""
        before = {site: _learned(site) for site in self.sites}
        measured = dict.fromkeys(set(self.node_of.values()) & set(self.plan.predicted), 0)
        for tag, nid in self.node_of_tag.items():
            if nid in measured:
                measured[nid] += bytes_by_tag.get(tag, 0)
        for nid, nbytes in measured.items():
            self.plan.record_measured(nid, nbytes)
        self.plan.teach(_history)
        for site, old in before.items():
            _steady[site] = _steady.get(site, 0) + 1 if _learned(site) == old else 0
            _unmeasured[site] = 0

    def lowered_as(
        self,
        order: Sequence[Expr],
        fused: Collection[int],
        piped: Collection[int] = (),
        rows: Mapping[int, int] | None = None,
    ) -> None:
        """Price the plan as it is lowered: a node computed inside its consumers (a
        fused map, a node of a row pipeline: ``fused``, by uid) moves no bytes of its
        own; each node that computes it reads what it would have read, so its predicted
        bytes go to every such consumer -- a node several pipelines compute is read by
        each. A node of a row pipeline (``piped``) makes no tiles: it reads its row
        inputs by rows and its other inputs whole once per worker (as if cut in one
        tile per worker), and has no updates to send. A join computed inside another
        node teaches the history nothing (what it moved is counted with its consumer),
        and a join that computes others learns its update bytes net of what they read.
        ``rows``: the row groups a pipelined node is computed in (by uid: its consumer's
        groups, :func:`~spartan.frontend.pipeline.pipeline_rows`); else its own tiles."""
        if not fused:
            return
        predicted, updates = self._priced(order, fused, piped, rows)
        self.plan.predicted, self.plan.updates = dict(predicted), dict(updates)

    def pipelines(
        self,
        order: Sequence[Expr],
        roots: Sequence[Expr],
        tilings: dict[int, Tiling],
        fused: Collection[int],
        backend: Backend,
    ) -> tuple[dict, set[int]]:
        """The row pipelines to lower the plan with (as
        :func:`~spartan.frontend.pipeline.row_pipelines` returns them): all that the
        rules allow, unless fewer of them move fewer bytes.

        A pipeline is a way to run the plan, not a tiling the search chose: it reads
        the inputs it reads whole once per worker that runs a row group, reads its row
        inputs by its consumer's rows whatever their tiling, and computes a node again
        for every consumer that reads it. Over a column- or block-tiled input, or at a
        few rows per worker, that can move more than the same nodes made as tiles (a
        logistic-regression step over column-tiled X: 7,072 B pipelined, 4,216 B not,
        on 8 workers). So the plan is priced as each candidate lowering runs it
        (:meth:`lowered_as`): all pipelines; none; and, where all move more bytes than
        none, all but the consumers whose pipelines cost more, dropped one at a time. The
        score is the bytes moved, less 1/:data:`PIPELINE_MEMORY_RATIO` of the bytes of
        the intermediates a pipeline never writes to memory (what it is for: a k-means
        step over 41 x 3 rows on 2 workers keeps its pipelines, 32 B more on the network
        than tiles, its distance and one-hot matrices never made); ties go to more
        pipelines. The choice is kept per cached plan (a loop prices it once).
        ``fused``: the maps :func:`~spartan.frontend.evaluate.fusable` fuses.

        >>> # in spartan.frontend.evaluate._lower
        >>> pipes, piped = planned.pipelines(order, exprs, tilings, fused, backend)  # doctest: +SKIP
        """
        from spartan.frontend.lowering import Lowering
        from spartan.frontend.pipeline import consumer_rows, pipeline_rows, row_pipelines

        fused = set(fused)
        retiled = {e.uid: t for e, t in self.retile}

        class AsRetiled(Lowering):
            """The lowering's view of the tilings once the plan's re-tilings are done
            (a join's row groups follow its inputs' new cuts)."""

            def tiling(self, expr: Expr) -> Tiling:
                if expr.uid in retiled:
                    return retiled[expr.uid]
                if isinstance(expr, View) and base_of(expr).uid in retiled:
                    return self.tilings[expr.uid]
                return super().tiling(expr)

        def priced(exclude: Collection[int], enabled: bool = True) -> tuple:
            pipes, piped = row_pipelines(order, roots, tilings, enabled, exclude)
            leaves = {leaf.uid for ris in pipes.values() for ri in ris for leaf, _ in ri.leaves}
            lowered = (fused - leaves) | piped
            rows: dict[int, int] = {}
            by_consumer: dict[int, dict[int, int]] = {}
            if pipes:
                ctx = AsRetiled(backend, tilings, lowered, pipes)
                rows, by_consumer = pipeline_rows(ctx, order), consumer_rows(ctx, order)
            predicted, _ = self._priced(order, lowered, piped, rows, by_consumer)
            # bytes moved, then the intermediates a pipeline keeps out of memory: worth
            # 1/PIPELINE_MEMORY_RATIO of a byte moved each
            saved = sum(e.nbytes for e in order if e.uid in piped)
            moved = sum(predicted.values())
            score = PIPELINE_MEMORY_RATIO * moved - saved
            return score, pipes, piped, self._last, moved, (enabled, frozenset(exclude))

        roots_key = frozenset(self.node_of[r.uid] for r in roots if r.uid in self.node_of)
        cached = _pipeline_choices.get(id(self._shared_predicted))
        if cached is not None and cached[0] is self._shared_predicted and roots_key in cached[1]:
            # the same graph as an earlier evaluation's (a loop): its choice, by node,
            # priced once (the pricing lowered_as then finds)
            enabled, nids = cached[1][roots_key]
            exclude = {uid for uid, nid in self.node_of.items() if nid in nids}
            best = priced(exclude, enabled)
            self._last = best[3]
            return best[1], best[2]
        best = priced(())
        if best[1]:
            none = priced((), enabled=False)
            if best[4] > none[4] and len(best[1]) <= PIPELINE_TRIALS:
                # drop the consumers whose pipelines cost more, one at a time
                excluded: set[int] = set()
                improved = True
                while improved:
                    improved = False
                    for uid in sorted(best[1]):
                        trial = priced(excluded | {uid})
                        if trial[0] < best[0]:
                            best, improved = trial, True
                            excluded.add(uid)
                            break
            if none[0] < best[0]:
                best = none
        self._last = best[3]  # (what lowered_as asks for next)
        if len(_pipeline_choices) >= 256:
            _pipeline_choices.clear()
        enabled, exclude = best[5]
        nids = frozenset(self.node_of[u] for u in exclude if u in self.node_of)
        entry = _pipeline_choices.setdefault(
            id(self._shared_predicted), (self._shared_predicted, {})
        )
        if entry[0] is not self._shared_predicted:  # (an id reused after a plan was dropped)
            entry = _pipeline_choices[id(self._shared_predicted)] = (self._shared_predicted, {})
        entry[1][roots_key] = (enabled, nids)
        return best[1], best[2]

    def _priced(
        self,
        order: Sequence[Expr],
        fused: Collection[int],
        piped: Collection[int] = (),
        rows: Mapping[int, int] | None = None,
        by_consumer: Mapping[int, Mapping[int, int]] | None = None,
    ) -> tuple[dict[int, int], dict[int, tuple[int, int]]]:
        """The plan's (predicted bytes, updates) per node as :meth:`lowered_as` prices
        them, the plan itself left as it is (the last pricing is kept: the lowering
        asks for the one it chose again). ``by_consumer``: the row groups each join
        computes its pipelined nodes in (:func:`~spartan.frontend.pipeline.consumer_rows`;
        else ``rows``, the most any consumer uses, for all; a fold's tiles are its own)."""
        key = (frozenset(fused), frozenset(piped), tuple(sorted((rows or {}).items())))
        if self._last is not None and self._last[0] == key:
            self._rows, self._piped = self._last[2]
            return self._last[1]
        plan = self.plan
        flat = {self.node_of[u]: r for u, r in (rows or {}).items() if u in self.node_of}
        self._rows = flat
        self._piped = {self.node_of[u] for u in piped if u in self.node_of}

        def rows_of(consumer: int) -> dict[int, int]:
            if by_consumer is None:
                return flat
            mine = by_consumer.get(consumer, {})
            return {self.node_of[u]: r for u, r in mine.items() if u in self.node_of}

        base_predicted, base_updates = self._base
        own = dict(base_predicted)
        for uid in piped:
            nid = self.node_of.get(uid)
            if nid is not None and nid in own:
                own[nid] = self._piped_bytes(nid)
        # a consumer reads the pipelined nodes by its own row groups: as if they were
        # cut in rows like it
        piped_nids = {self.node_of[u] for u in piped if u in self.node_of}
        repriced: dict[int, tuple[int, int]] = {}
        for e in order:
            nid = self.node_of.get(e.uid)
            if (
                nid is not None
                and e.uid not in fused
                and not isinstance(e, View)
                and any(self.node_of.get(base_of(c).uid) in piped_nids for c in e.children)
            ):
                self._rows = rows_of(e.uid)
                own[nid], update = self._consumer_bytes(nid, piped_nids)
                if update is not None:
                    repriced[nid] = update
        predicted, updates = dict(own), {**base_updates, **repriced}
        by_uid = {e.uid: e for e in order}
        piped_set = set(piped)
        for e in order:
            if e.uid in fused or isinstance(e, View) or e.uid not in self.node_of:
                continue
            # one walk per distinct input base: a pipeline computes its tree once per
            # input of its consumer (an input and its whole transpose, or a vector read
            # twice, share one: pipeline._twins), so a pipelined node in the trees of
            # two inputs (``dot(t.T, sqrt(t.T + 1))``) is computed, and read, twice
            walks: list[set[int]] = []
            for b in {base_of(c).uid: base_of(c) for c in e.children}.values():
                walk: set[int] = set()
                stack = [b]
                while stack:  # (without recursion: a fused chain is as deep as its loop)
                    c = stack.pop()
                    if c.uid in fused and c.uid not in walk and c.uid in by_uid:
                        walk.add(c.uid)
                        stack.extend(base_of(g) for g in c.children)
                walks.append(walk)
            inside = set().union(*walks)
            self._rows = rows_of(e.uid)
            nid = self.node_of[e.uid]
            program = plan.program
            # one task reads each array once, however many of the maps it computes read
            # it (``where(t > 0.5, t, 0)``: t once)
            seen = set(program[nid].inputs) if program[nid].op == "map" else set()
            for uid in inside - piped_set:
                predicted[nid] += self._computed_reads(uid, own, piped_set, seen)
            counted: set[int] = set()
            for walk in walks:
                seen_here = set(seen)
                for uid in walk & piped_set:
                    if uid in counted:  # computed again: its rows read again (what it reads
                        # whole, each worker fetched once for the consumer's tasks)
                        predicted[nid] += self._row_reads(uid, seen_here)
                        continue
                    counted.add(uid)
                    predicted[nid] += self._computed_reads(uid, own, piped_set, seen_here)
        for uid in fused:
            nid = self.node_of.get(uid)
            if nid is not None and nid in predicted:
                predicted[nid] = 0
                updates.pop(nid, None)
        self._rows = flat
        self._last = (key, (predicted, updates), (self._rows, self._piped))
        return predicted, updates

    def _computed_reads(
        self, uid: int, own: Mapping[int, int], piped: Collection[int], seen: set[int]
    ) -> int:
        """The bytes a consumer reads for node ``uid`` it computes (fused or pipelined):
        its own bytes, or a map's reads of the inputs not in ``seen`` (added to it)."""
        a = self.node_of.get(uid)
        if a is None or a not in own:
            return 0
        if self.plan.program[a].op != "map":
            # (a pipelined node: in the row groups of the consumer being priced)
            return self._piped_bytes(a) if a in self._piped else own[a]
        out = 0
        for i, nbytes in self._map_reads(a, uid in piped).items():
            if i not in seen:
                seen.add(i)
                out += nbytes
        return out

    def _row_reads(self, uid: int, seen: set[int]) -> int:
        """The bytes pipelined node ``uid`` reads by rows (not whole), of the inputs not
        in ``seen`` (added to it): what computing it again in one more row tree reads."""
        a = self.node_of.get(uid)
        if a is None:
            return 0
        program = self.plan.program
        node = program[a]
        reads = self._reads(a, True)
        inputs = list(reads) if node.op == "map" else list(node.inputs)
        if len(inputs) != len(reads):  # (terms not one per input: all of them)
            return sum(reads.values())
        out = 0
        for key, i in zip(reads, inputs):
            shape = program[i].shape
            whole = len(shape) < len(node.shape) or not shape or shape[0] != node.shape[0]
            if not whole and key not in seen:
                seen.add(key)
                out += reads[key]
        return out

    def lowered(self, node: Expr) -> None:
        """``node`` was lowered: add the bytes of a data-dependent step only its lowering
        could count (``counted_bytes``: a filter's result is cut evenly once its tiles'
        selected elements are counted, and the parts that land on another worker move;
        the model, before counting, keeps the parts where their rows were)."""
        extra = node.counted_bytes
        nid = self.node_of.get(node.uid)
        if extra and nid is not None and nid in self.plan.predicted:
            if self.plan.predicted is self._shared_predicted:
                self.plan.predicted = dict(self.plan.predicted)
            self.plan.predicted[nid] += extra

    def _piped_bytes(self, nid: int) -> int:
        """The bytes node ``nid`` reads computed in a row pipeline (it sends no
        updates): a pipeline computes the rows of the row groups its consumer reads,
        on their workers, whatever tiling the plan gave the node itself -- its inputs
        read by rows as if it were cut in rows like its consumer, and the inputs it
        reads whole (a broadcast operand) once per worker."""
        return sum(self._reads(nid, True).values())

    def _consumer_bytes(self, nid: int, piped: set[int]) -> tuple[int, tuple[int, int] | None]:
        """Node ``nid``'s predicted bytes when the ``piped`` nodes it reads are computed
        inside it, by its row groups: its reads and updates as if those were cut in rows
        (a join's groups follow them: ``Xc.T @ Xc`` sends one partial per worker that
        runs a group), and its repriced (predicted, estimated) updates, if a join's."""
        plan, P = self.plan, self.plan.nworkers
        program = plan.program

        def choice(n: int) -> Choice:
            c = plan.choice[n]
            if n in piped and program[n].shape:
                shape = program[n].shape
                return dataclasses.replace(c, tiling=Tiling.row(shape, self._piped_rows(n)))
            return c

        terms = profile(program, program[nid], P)
        reads = sum(t.cost(*(choice(n) for n in t.nodes)) for t in terms if not t.update)
        updates = self._base[1]
        if nid not in updates:
            return int(reads), None
        predicted, estimate = updates[nid]
        new = int(sum(t.cost(*(choice(n) for n in t.nodes)) for t in terms if t.update))
        # the history's correction of the site, as the plan applied it
        update = round(new * predicted / estimate) if estimate else new
        return int(reads) + update, (update, new)

    def _inside(self, n: int, piped: bool, rows: int | None) -> Choice:
        """Node ``n``'s choice as an input of a node computed in a row pipeline: a node
        the same pipeline computes is made by the same row groups (read where it is
        made), others as planned."""
        c = self.plan.choice[n]
        shape = self.plan.program[n].shape
        if piped and rows and n in self._piped and shape:
            return dataclasses.replace(c, tiling=Tiling.row(shape, rows))
        return c

    def _piped_rows(self, nid: int) -> int:
        """The row groups pipelined node ``nid`` is computed in: its consumer's (as the
        lowering counts them), else as many as its own tiles."""
        rows = self._rows.get(nid)
        return rows or node_pieces(self.plan.program[nid].shape, self.plan.nworkers)

    def _map_reads(self, nid: int, piped: bool) -> dict[int, int]:
        """A map's predicted bytes per distinct input (piped: :meth:`_piped_bytes`)."""
        return self._reads(nid, piped)

    def _reads(self, nid: int, piped: bool) -> dict[int, int]:
        """Node ``nid``'s read bytes by term: a map's keyed by its input node (one term
        per distinct input, :func:`~spartan.frontend.optimizer.profiles.profile`), other
        operators' by term index (negative). ``piped``: as computed in a row pipeline."""
        plan, P = self.plan, self.plan.nworkers
        program = plan.program
        node = program[nid]
        rows = self._piped_rows(nid) if piped and node.shape else None
        terms = [t for t in profile(program, node, P, rows) if not t.update]
        if node.op == "map":
            keys = list(dict.fromkeys(node.inputs))
        else:
            keys = [-1 - k for k in range(len(terms))]
        out: dict[int, int] = {}
        for key, term in zip(keys, terms):
            mine = plan.choice[nid]
            if rows is not None:  # (piped, with rows to cut)
                whole = False
                if node.op == "map":
                    shape = program[key].shape
                    whole = len(shape) < len(node.shape) or shape[0] != node.shape[0]
                # (a whole input: once per worker that runs a group)
                cut = min(P, rows) if whole else rows
                mine = dataclasses.replace(mine, tiling=Tiling.row(node.shape, cut))
            cost = term.cost(
                *(mine if n == nid else self._inside(n, piped, rows) for n in term.nodes)
            )
            out[key] = int(cost)
        return out

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
        """The tags of this plan's tasks: its nodes' uids (and its re-tilings' tags)."""
        return frozenset(self.node_of_tag)

    def explain(self) -> str:
        return self.plan.explain()


_history = UpdateHistory()
#: the most pipeline consumers :meth:`Planned.pipelines` tries to drop one at a time
#: (each try prices the plan again; past this, all pipelines or none)
PIPELINE_TRIALS = 16
#: :meth:`Planned.pipelines`' choices, by the cached plan they were made for (its
#: predicted dict's id, the dict kept to tell a reused id), then by the results' nodes:
#: (pipelines enabled, the consumers excluded, by node)
_pipeline_choices: dict[int, tuple[dict, dict[frozenset, tuple[bool, frozenset]]]] = {}
#: a byte moved between workers costs as much as this many bytes of an intermediate
#: written to memory and read back (what a row pipeline saves): pipelines that move a
#: few more bytes than tiles, but keep far more out of memory, are kept
PIPELINE_MEMORY_RATIO = 8
#: tags of re-tiling tasks: negative, so never an Expr's uid
_retile_tags = itertools.count(-1, -1)
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


def choose(order: Sequence[Expr], nworkers: int) -> tuple[dict[int, Tiling], Planned | None]:
    """A tiling for every node of ``order``, chosen by the optimizer.

    User-fixed tilings win over the plan; evaluated inputs enter as fixed sources.
    """
    _learn()
    for e in order:  # (an earlier plan's algorithm must not outlive a failed plan)
        e.use_impl(None)
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
    impl = plan.impl
    ruled: dict[int, Choice] = {}
    for e in order:
        # an algorithm the plan chose; one worker moves no bytes either way, so there
        # the local rule's layout-aware choice stands (rows over a column-cut operand
        # would copy it whole into one task), and the plan shows it (explain)
        if e.uid in node_of and node_of[e.uid] in impl:
            nid = node_of[e.uid]
            if nworkers > 1:
                e.use_impl(impl[nid])
            elif e.impl != impl[nid]:
                ruled[nid] = Choice(plan.choice[nid].tiling, e.impl)
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
        # (same axes, other bounds -- a filter's uneven result, cut evenly -- is a
        # re-tiling the plan priced too: left undone, its readers would move the bytes)
        priced = plan.predicted.get(node_of[e.uid], 0) > 0
        if (priced or not same_axes(t, e.data.tiling)) and t.fits(e.shape):
            retile.append((e, with_pieces(t, e.shape, nworkers)))
    new_base = {e.uid: t for e, t in retile}
    for e in order:  # views see their base's (possibly new) tiling
        if isinstance(e, View):
            base = e.base
            t = new_base.get(base.uid) or (
                base.data.tiling if base.data is not None else tilings[base.uid]
            )
            tilings[e.uid] = e.induced_tiling(t)
    if ruled:  # (a copy: the cached plan is shared by every evaluation of the graph)
        plan = dataclasses.replace(plan, choice={**plan.choice, **ruled})
    return tilings, Planned(plan, node_of, retile, inputs)


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
    # candidates are cut as the lowering will cut them (:func:`with_pieces`), so the
    # plan prices the tiles that really run: a scan over two tiles per worker sends
    # more prefixes than over one, and a block grid of 2P tiles places tiles unlike P
    counts = {n.shape: node_pieces(n.shape, nworkers) for n in program}
    key = (
        nworkers,
        tuple(sorted(counts.items())),
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
        plan = _plans[key] = optimize(
            program,
            nworkers,
            budget,
            _history,
            pieces=lambda node: counts[node.shape],
            fixed=fixed,
        )
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
    return t.with_pieces(shape, node_pieces(shape, nworkers))


def node_pieces(shape: Sequence[int], nworkers: int) -> int:
    """The tiles an array of ``shape`` is cut into (the count the optimizer plans with
    and :func:`with_pieces` cuts: it depends on the shape alone, as 8-byte elements)."""
    return default_pieces(math.prod(shape) * 8, nworkers)


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
