"""Searches over a :class:`~.graph.TilingGraph`: each returns one choice index per var.

* :func:`greedy` -- the thesis's maximum-connectivity-first search (Fig. 2.8).
* :func:`improve` -- local search after greedy: single-group and two-group moves to a
  local optimum, exact re-solves of every small neighbourhood, iterated perturbation.
* :func:`exact` -- variable elimination (exact, exponential only in the width of the
  graph), inside a branch-and-bound over the duplication budget.
* :func:`cutset_search` -- for graphs too wide for it: exact solves of all but a
  rotating cutset of groups held at their choices.
* :func:`enumerate_all` -- plain enumeration of every combination (the reference).

All respect the duplication budget: the choices' duplication bytes sum to at most it.

>>> from spartan.frontend.optimizer.program import Program
>>> p = Program(); a = p.source((8, 8)); b = p.map(a, p.transpose(a))
>>> g = TilingGraph.build(p, 2)
>>> g.cost(exact(g, 0)) <= g.cost(greedy(g, 0))
True
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import deque
from collections.abc import Iterable

import numpy as np

from spartan.frontend.optimizer.graph import TilingGraph

#: Largest table (product of choice counts) variable elimination may build: 32 MB of
#: int64. Past about this size solving whole gets slower than :func:`cutset_search`
#: on dense programs, whose plans are as good (issue 39, item 5).
EXACT_TABLE_LIMIT = 1 << 22
#: The table limit of each exact solve inside :func:`cutset_search`.
CUTSET_TABLE_LIMIT = 1 << 20
#: Largest number of combinations :func:`enumerate_all` accepts.
ENUMERATION_LIMIT = 1 << 25


class _Adjacency:
    """Per var: its own choice costs and the tables of the factors it shares."""

    def __init__(self, graph: TilingGraph) -> None:
        n = graph.nvars
        self.unary = [np.zeros(len(c), dtype=np.int64) for c in graph.choices]
        self.shared: list[list[tuple[tuple[int, ...], np.ndarray]]] = [[] for _ in range(n)]
        for f in graph.factors:
            if len(f.scope) == 1:
                self.unary[f.scope[0]] += f.table
            else:
                for v in f.scope:
                    self.shared[v].append((f.scope, f.table))
        self.neighbours = [
            sorted({u for scope, _ in self.shared[v] for u in scope} - {v}) for v in range(n)
        ]

    def local(self, v: int, assign: list[int]) -> np.ndarray:
        """Cost of each choice of ``v`` given the others' choices."""
        total = self.unary[v].copy()
        for scope, t in self.shared[v]:
            total += t[tuple(slice(None) if u == v else assign[u] for u in scope)]
        return total

    def pair(self, u: int, v: int, assign: list[int]) -> np.ndarray:
        """Cost of each (choice of ``u``, choice of ``v``) given the others' choices."""
        table = self.unary[u][:, None] + self.unary[v][None, :]
        seen = set()
        for scope, t in self.shared[u] + self.shared[v]:
            if id(t) in seen:
                continue
            seen.add(id(t))
            sub = t[tuple(slice(None) if w in (u, v) else assign[w] for w in scope)]
            if u in scope and v in scope:
                table = table + (sub if scope.index(u) < scope.index(v) else sub.T)
            elif u in scope:
                table = table + sub[:, None]
            else:
                table = table + sub[None, :]
        return table


def _allowed(graph: TilingGraph, budget: int) -> list[np.ndarray]:
    return [np.flatnonzero(m <= budget) for m in graph.memory]


# ---- the thesis's greedy ---------------------------------------------------------------
def greedy(graph: TilingGraph, budget: int) -> list[int]:
    """Maximum connectivity first; each group takes the choice of least ``FindCost``
    (its own cost plus, per adjacent group, the cheapest edge to a choice that group
    may still take), then its other choices' edges are removed."""
    adj = _Adjacency(graph)
    allowed = _allowed(graph, budget)
    assign = [-1] * graph.nvars
    left = budget
    order = sorted(range(graph.nvars), key=lambda v: (-graph.degree[v], v))
    for v in order:
        best, best_cost = -1, math.inf
        for c in allowed[v]:
            if graph.memory[v][c] > left:
                continue
            cost = adj.unary[v][c]
            for scope, t in adj.shared[v]:
                sub = t[np.ix_(*([c] if u == v else allowed[u] for u in scope))]
                cost += sub.min()
            if cost < best_cost:
                best, best_cost = int(c), cost
        assign[v] = best
        allowed[v] = np.array([best])
        left -= graph.memory[v][best]
    return assign


# ---- local improvement -----------------------------------------------------------------
def improve(
    graph: TilingGraph,
    assign: list[int],
    budget: int,
    rounds: int | None = None,
    seed: int = 0,
    window: int = 8,
) -> list[int]:
    """Local search from ``assign``: descend with group and edge moves; re-solve exactly
    the neighbourhood (up to ``window`` groups, breadth first) of every group with the
    rest held; then perturb a few groups and descend ``rounds`` times (default: 2 per
    group), keeping the best."""
    adj = _Adjacency(graph)
    best = _descend(graph, adj, list(assign), budget, range(graph.nvars))
    best_cost = graph.cost(best)
    changed = True
    while changed:
        changed = False
        for v in range(graph.nvars):
            trial = _resolve_window(graph, best, _around(v, adj.neighbours, window), budget)
            if trial is not None and graph.cost(trial) < best_cost:
                best = _descend(graph, adj, trial, budget, range(graph.nvars))
                best_cost, changed = graph.cost(best), True
    rng = random.Random(seed)
    for _ in range(2 * graph.nvars if rounds is None else rounds):
        trial = list(best)
        moved = rng.sample(range(graph.nvars), k=min(graph.nvars, rng.randint(1, 3)))
        for v in moved:
            trial[v] = rng.randrange(len(graph.choices[v]))
        if graph.dup_bytes(trial) > budget:
            continue
        trial = _descend(graph, adj, trial, budget, moved)
        cost = graph.cost(trial)
        if cost < best_cost:
            best, best_cost = trial, cost
    return best


def _resolve_window(
    graph: TilingGraph, assign: list[int], window: list[int], budget: int
) -> list[int] | None:
    """The best choices for the ``window`` groups with every other group held (``None``
    if that optimum would overspend the duplication budget)."""
    local = {v: k for k, v in enumerate(window)}
    factors = []
    for f in graph.factors:
        inside = [v for v in f.scope if v in local]
        if inside:
            idx = tuple(slice(None) if v in local else assign[v] for v in f.scope)
            factors.append((tuple(local[v] for v in inside), f.table[idx]))
    sizes = [len(graph.choices[v]) for v in window]
    solved = _min_sum(sizes, factors, EXACT_TABLE_LIMIT)
    if solved is None:
        return None
    out = list(assign)
    for v, c in zip(window, solved[1]):
        out[v] = c
    return out if graph.dup_bytes(out) <= budget else None


def _around(v: int, neighbours: list[list[int]], size: int) -> list[int]:
    """Up to ``size`` groups nearest to ``v`` (breadth first)."""
    seen, queue = [v], [v]
    while queue and len(seen) < size:
        for u in neighbours[queue.pop(0)]:
            if u not in seen and len(seen) < size:
                seen.append(u)
                queue.append(u)
    return seen


def _descend(
    graph: TilingGraph, adj: _Adjacency, assign: list[int], budget: int, start: Iterable[int]
) -> list[int]:
    """Move single groups and pairs of groups sharing a factor while that lowers the
    cost, starting from the groups in ``start`` and revisiting neighbours of moves."""
    mem = graph.memory
    used = graph.dup_bytes(assign)
    never = np.iinfo(np.int64).max
    work = deque(start)
    queued = set(work)

    def touch(*vs: int) -> None:
        for x in vs:
            for u in (x, *adj.neighbours[x]):
                if u not in queued:
                    queued.add(u)
                    work.append(u)

    while work:
        v = work.popleft()
        queued.discard(v)
        local = adj.local(v, assign)
        room = budget - used + mem[v][assign[v]]
        local = np.where(mem[v] <= room, local, never)
        c = int(local.argmin())
        if local[c] < local[assign[v]]:
            used += mem[v][c] - mem[v][assign[v]]
            assign[v] = c
            touch(v)
            continue
        for u in adj.neighbours[v]:
            # joint move of two groups that share a factor, the rest held
            old_v, old_u = assign[v], assign[u]
            table = adj.pair(v, u, assign)
            room = budget - used + mem[v][old_v] + mem[u][old_u]
            table = np.where(mem[v][:, None] + mem[u][None, :] <= room, table, never)
            cv, cu = np.unravel_index(int(table.argmin()), table.shape)
            if table[cv, cu] < table[old_v, old_u]:
                used += mem[v][cv] + mem[u][cu] - mem[v][old_v] - mem[u][old_u]
                assign[v], assign[u] = int(cv), int(cu)
                touch(v, u)
                break
    return assign


# ---- exact -----------------------------------------------------------------------------
def exact(
    graph: TilingGraph,
    budget: int,
    limit: int = EXACT_TABLE_LIMIT,
    allowed: list[np.ndarray] | None = None,
) -> list[int] | None:
    """The optimum (over ``allowed`` choice indices per var, default all), or ``None``
    when some elimination table would exceed ``limit``.

    Branch and bound on duplication: solve without the budget's coupling (each choice
    only has to fit alone); if the optimum overspends, branch on its largest duplicated
    group (not duplicated / duplicated with the budget reduced).

    A group committed to duplication is charged once, when it is committed: later
    branches shrink only the uncommitted groups' choices to what is left of the budget
    (re-checking a committed one against the rest dropped every plan duplicating two
    arrays that both needed a branch, e.g. the two large ratings matrices of a
    three-matrix ALS whose budget fits just those two).

    Among optima of equal bytes it returns one of least time cost
    (:meth:`~.graph.TilingGraph.time_cost`: rows before blocks, fewer tasks); that
    secondary cost never outweighs a byte."""
    best: list[int] | None = None
    best_cost: tuple[float, int] = (math.inf, 0)
    fits = _allowed(graph, budget)
    if allowed is not None:
        fits = [a[graph.memory[v][a] <= budget] for v, a in enumerate(allowed)]
    stack: list[tuple[list[np.ndarray], int, frozenset[int]]] = [(fits, budget, frozenset())]
    while stack:
        allowed, left, forced = stack.pop()
        solved = _eliminate(graph, allowed, limit)
        if solved is None:
            return None
        cost, assign = solved
        # bytes first, the time cost only among equal bytes (a branch's relaxed optimum
        # bounds both)
        key = (cost, graph.time_cost(assign) if assign else 0)
        if key >= best_cost:
            continue
        dup = [v for v in range(graph.nvars) if v not in forced and graph.memory[v][assign[v]] > 0]
        if sum(graph.memory[v][assign[v]] for v in dup) <= left:
            best, best_cost = assign, key
            continue
        v = max(dup, key=lambda x: (graph.memory[x][assign[x]], -x))
        m = graph.memory[v]
        spent = int(m[assign[v]])
        # v's choices split by whether they take exactly ``spent`` bytes: the branch
        # with v committed charges it once; the other keeps every other choice (a var
        # whose choices took several nonzero sizes is branched on again there)
        same = m[allowed[v]] == spent
        without = list(allowed)
        without[v] = allowed[v][~same]
        stack.append((without, left, forced))
        rest = left - spent
        # only uncommitted vars must fit in what is left: a committed var's bytes are
        # already out of ``rest`` (checked again, a var larger than the rest lost all
        # its choices and the branch died)
        with_dup = [
            a if x in forced else a[graph.memory[x][a] <= rest] for x, a in enumerate(allowed)
        ]
        with_dup[v] = allowed[v][same]
        stack.append((with_dup, rest, forced | {v}))
    if best is not None and _tie_scale(graph) == 1:
        best = settle_ties(graph, best, budget)
    return best


def _tie_scale(graph: TilingGraph) -> int:
    """The factor bytes are scaled by so that adding the time ranks breaks only ties
    (1 when that could overflow int64)."""
    scale = 1 + sum(len(c) - 1 for c in graph.choices)
    worst = sum(int(f.table.max()) for f in graph.factors)
    return 1 if worst * scale >= 1 << 62 else scale


def settle_ties(graph: TilingGraph, assign: list[int], budget: int) -> list[int]:
    """Moves of single groups and of pairs sharing a factor that lower (bytes, time
    cost) lexicographically: among plans of equal bytes, toward the faster tilings (the
    tiebreak of :func:`exact` where its scaled costs could overflow)."""
    adj = _Adjacency(graph)
    assign = list(assign)
    used = graph.dup_bytes(assign)
    mem, ranks = graph.memory, graph.tiebreak
    never = np.iinfo(np.int64).max

    def lex_min(cost: np.ndarray, rank: np.ndarray) -> tuple[int, ...]:
        """The index of the least cost, the least rank among equal costs."""
        rank = np.where(cost == cost.min(), rank, never)
        return tuple(int(i) for i in np.unravel_index(int(rank.argmin()), cost.shape))

    changed = True
    while changed:
        changed = False
        for v in range(graph.nvars):
            old = assign[v]
            room = budget - used + mem[v][old]
            local = np.where(mem[v] <= room, adj.local(v, assign), never)
            (c,) = lex_min(local, ranks[v])
            if (local[c], ranks[v][c]) < (local[old], ranks[v][old]):
                used += int(mem[v][c] - mem[v][old])
                assign[v], changed = int(c), True
                continue
            for u in adj.neighbours[v]:
                old_u = assign[u]
                room = budget - used + mem[v][old] + mem[u][old_u]
                fits = mem[v][:, None] + mem[u][None, :] <= room
                table = np.where(fits, adj.pair(v, u, assign), never)
                rank = ranks[v][:, None] + ranks[u][None, :]
                cv, cu = lex_min(table, rank)
                if (table[cv, cu], rank[cv, cu]) < (table[old, old_u], rank[old, old_u]):
                    used += int(mem[v][cv] + mem[u][cu] - mem[v][old] - mem[u][old_u])
                    assign[v], assign[u], changed = int(cv), int(cu), True
                    break
    return assign


def cutset_search(
    graph: TilingGraph,
    assign: list[int],
    budget: int,
    limit: int = CUTSET_TABLE_LIMIT,
    rounds: int = 24,
    patience: int = 4,
    seed: int = 0,
) -> list[int]:
    """Large-neighbourhood search from ``assign`` for graphs too wide for :func:`exact`.

    Each round holds a cutset of groups at their current choices (the most connected
    ones, drawn at random, outside a random region and last round's cutset where
    possible, as many as needed for the rest to fit ``limit``), solves all the other
    groups exactly, budget included, then moves single groups and pairs (freeing the
    held ones where that alone pays). Rounds go on until ``patience`` in a row find
    nothing better (at most ``rounds``); none can make the plan worse, the current plan
    being one of those it chooses among. Deterministic for a ``seed``.

    On dense random programs of 120-160 operators (issue 39, item 5) it landed within
    1.00001x of the optimum wherever that was known, where greedy + :func:`improve`
    landed up to 1.06x off.

    >>> from spartan.frontend.optimizer.program import Program
    >>> p = Program(); a = p.source((8, 8)); b = p.map(a, p.transpose(a))
    >>> g = TilingGraph.build(p, 2)
    >>> g.cost(cutset_search(g, greedy(g, 0), 0, limit=2)) == g.cost(exact(g, 0))
    True
    """
    n = graph.nvars
    sizes = [len(c) for c in graph.choices]
    scopes = [tuple(v for v in f.scope if sizes[v] > 1) for f in graph.factors]
    rng = random.Random(seed)
    adj = _Adjacency(graph)
    best = list(assign)
    best_key = (graph.cost(best), graph.time_cost(best))
    stale = 0
    held: frozenset[int] = frozenset()
    for _ in range(rounds):
        # the cut is planned with a quarter of the limit: the solver orders the rest
        # afresh and may take a slightly wider path than the plan did; the groups held
        # last round are held again only where nothing else would do
        focus = _around(rng.randrange(n), adj.neighbours, max(2, n // 4))
        planned = _greedy_order(
            _graph_of(n, scopes), sizes, max(1, limit // 4), True, rng, held | set(focus)
        )
        assert planned is not None, "a cutting order always completes"
        held = frozenset(planned[1])
        allowed = [np.arange(k) for k in sizes]
        for v in held:
            allowed[v] = np.array([best[v]])
        trial = exact(graph, budget, limit, allowed)
        if trial is not None:
            # single and pair moves free the held groups where that alone pays
            trial = _descend(graph, adj, trial, budget, held)
        if trial is not None and (key := (graph.cost(trial), graph.time_cost(trial))) < best_key:
            best, best_key, stale = trial, key, 0
        else:
            stale += 1
            if stale >= patience:
                break
    return best


def _eliminate(
    graph: TilingGraph, allowed: list[np.ndarray], limit: int
) -> tuple[float, list[int]] | None:
    """Min-sum variable elimination restricted to ``allowed`` choices: the least cost
    and a choice per var (cost ``inf`` when some var has no allowed choice left).

    Among equal-cost optima it returns one of least time cost (the sum of the choices'
    ``graph.tiebreak`` ranks: rows before blocks, fewer tasks, no duplicate), by scaling
    bytes by ``scale`` and adding the rank, when that cannot overflow (else
    :func:`settle_ties` moves toward it afterwards). The scale exceeds any sum of ranks,
    so a rank never outweighs a byte."""
    n = graph.nvars
    sizes = [len(a) for a in allowed]
    if min(sizes, default=1) == 0:
        return math.inf, []
    scale = _tie_scale(graph)
    factors: list[tuple[tuple[int, ...], np.ndarray]] = []
    for f in graph.factors:
        table = f.table[np.ix_(*(allowed[v] for v in f.scope))] * scale
        # a var left one choice is a constant: conditioning on it keeps it out of every
        # table's scope (a long chain of them passed NumPy's 64 dimensions)
        scope = tuple(v for v in f.scope if sizes[v] > 1)
        factors.append((scope, table.reshape([sizes[v] for v in scope])))
    if scale > 1:
        ranks = getattr(graph, "tiebreak", None) or [np.arange(len(c)) for c in graph.choices]
        factors.extend(((v,), ranks[v][allowed[v]].astype(np.int64)) for v in range(n))
    solved = _min_sum(sizes, factors, limit)
    if solved is None:
        return None
    cost, local = solved
    return cost // scale, [int(allowed[v][local[v]]) for v in range(n)]


def _min_sum(
    sizes: list[int], factors: list[tuple[tuple[int, ...], np.ndarray]], limit: int
) -> tuple[int, list[int]] | None:
    """Variable elimination: the least total of ``factors`` over vars of ``sizes``
    choices, and a choice per var reaching it (``None`` if a table exceeds ``limit``)."""
    n = len(sizes)
    order = _elimination_order(n, sizes, [s for s, _ in factors], limit)
    if order is None:
        return None
    # the factors by number (in the order they were made) and, per var, the numbers of
    # those over it: finding a var's factors by a scan of all of them took quadratic
    # time in a long chain
    live = dict(enumerate(factors))
    over: list[set[int]] = [set() for _ in range(n)]
    for fid, (scope, _) in live.items():
        for x in scope:
            over[x].add(fid)
    trace = []
    for v in order:
        ids = sorted(over[v])
        mine = [live.pop(fid) for fid in ids]
        for fid, (s, _) in zip(ids, mine):
            for x in s:
                over[x].discard(fid)
        scope = tuple(sorted({x for s, _ in mine for x in s} | {v}))
        total = np.zeros([sizes[x] for x in scope], dtype=np.int64)
        for s, t in mine:
            total = total + _expand(t, s, scope, sizes)
        pos = scope.index(v)
        trace.append((v, scope, total))
        fid = len(factors) + len(trace) - 1
        live[fid] = (scope[:pos] + scope[pos + 1 :], total.min(axis=pos))
        for x in live[fid][0]:
            over[x].add(fid)
    cost = int(sum(int(t) for s, t in live.values()))
    local = [0] * n
    for v, scope, total in reversed(trace):
        idx = tuple(slice(None) if x == v else local[x] for x in scope)
        local[v] = int(total[idx].argmin())
    return cost, local


def lower_bound(graph: TilingGraph, budget: int = 0, limit: int = 1 << 16) -> int:
    """The best (largest) of :func:`_mini_bucket_bound` over two elimination orders
    (min-degree, min-fill): each is a lower bound on the least cost within ``budget``."""
    sizes = [len(a) for a in _allowed(graph, budget)]
    scopes = [tuple(f.scope) for f in graph.factors]
    fill = _greedy_order(_graph_of(graph.nvars, scopes), sizes, math.inf, fill=True)
    orders = [None] + ([fill[0]] if fill is not None else [])
    return max(_mini_bucket_bound(graph, budget, limit, order) for order in orders)


def _mini_bucket_bound(graph: TilingGraph, budget: int, limit: int, order: list[int] | None) -> int:
    """A lower bound on the least cost within ``budget`` (for graphs too wide to solve):
    mini-bucket elimination. Each var's factors are split into groups whose joint
    table fits ``limit`` entries and each group is minimized over the var on its own
    -- a sum of minima is at most the minimum of the sum, so the total is at most the
    optimum (equal to it where no bucket had to be split). Only the choices that fit
    the budget alone are considered (exact for the default budget, 0).

    >>> from spartan.frontend.optimizer.program import Program
    >>> p = Program(); a = p.source((8, 8)); b = p.map(a, p.transpose(a))
    >>> g = TilingGraph.build(p, 2)
    >>> lower_bound(g) <= g.cost(exact(g, 0))
    True
    """
    allowed = _allowed(graph, budget)
    sizes = [len(a) for a in allowed]
    live: dict[int, tuple[tuple[int, ...], np.ndarray]] = {}
    for f in graph.factors:
        table = f.table[np.ix_(*(allowed[v] for v in f.scope))] if f.scope else f.table
        live[len(live)] = (tuple(f.scope), np.asarray(table, dtype=np.int64))
    over: list[set[int]] = [set() for _ in range(graph.nvars)]
    for fid, (scope, _) in live.items():
        for x in scope:
            over[x].add(fid)
    adj = _graph_of(graph.nvars, [s for s, _ in live.values()])
    left = set(range(graph.nvars))
    given = iter(order or ())
    next_id = len(live)
    while left:
        # (the order given, else min degree: the bound is looser the more buckets split)
        v = next(given, None) if order else None
        if v is None:
            v = min(left, key=lambda x: (len(adj[x] & left), x))
        left.discard(v)
        ids = sorted(over[v], key=lambda fid: -live[fid][1].size)
        groups: list[tuple[set[int], list[tuple[tuple[int, ...], np.ndarray]]]] = []
        for fid in ids:
            scope, table = live.pop(fid)
            for x in scope:
                over[x].discard(fid)
            for union, members in groups:
                joint = union | set(scope)
                if math.prod(sizes[x] for x in joint) <= limit:
                    union |= set(scope)
                    members.append((scope, table))
                    break
            else:
                groups.append((set(scope), [(scope, table)]))
        for union, members in groups:
            scope = tuple(sorted(union))
            total = np.zeros([sizes[x] for x in scope], dtype=np.int64)
            for s, t in members:
                total = total + _expand(t, s, scope, sizes)
            pos = scope.index(v)
            rest = scope[:pos] + scope[pos + 1 :]
            live[next_id] = (rest, total.min(axis=pos))
            for x in rest:
                over[x].add(next_id)
                adj[x] |= set(rest) - {x}
            next_id += 1
    return int(sum(int(t) for _, t in live.values()))


def _expand(
    table: np.ndarray, scope: tuple[int, ...], into: tuple[int, ...], sizes: list[int]
) -> np.ndarray:
    perm = sorted(range(len(scope)), key=lambda i: into.index(scope[i]))
    t = table.transpose(perm)
    return t.reshape([sizes[x] if x in scope else 1 for x in into])


def _elimination_order(
    n: int, sizes: list[int], scopes: list[tuple[int, ...]], limit: int
) -> list[int] | None:
    """An elimination order whose tables stay within ``limit`` (``None`` if neither
    heuristic finds one): the greedy min-table-size order, and where that builds tables
    of more than :data:`FILL_ORDER_ABOVE` entries also the weighted min-fill order, the
    one with less work (the sum of its table sizes) kept. Min-fill narrowed some dense
    programs' widest table 12x; on the thesis's programs min-size is already tiny."""
    by_size = _greedy_order(_graph_of(n, scopes), sizes, limit, fill=False)
    if by_size is not None and by_size[2] <= FILL_ORDER_ABOVE:
        return by_size[0]
    by_fill = _greedy_order(_graph_of(n, scopes), sizes, limit, fill=True)
    found = [o for o in (by_size, by_fill) if o is not None]
    return min(found, key=lambda o: o[3])[0] if found else None


#: Widest table of the min-size order above which the min-fill order is tried too.
FILL_ORDER_ABOVE = 1 << 12


def _graph_of(n: int, scopes: Iterable[tuple[int, ...]]) -> list[set[int]]:
    adj: list[set[int]] = [set() for _ in range(n)]
    for s in scopes:
        for a in s:
            adj[a].update(x for x in s if x != a)
    return adj


def _greedy_order(
    adj: list[set[int]],
    sizes: list[int],
    limit: float,
    fill: bool,
    cut: random.Random | None = None,
    avoid: frozenset[int] = frozenset(),
) -> tuple[list[int], list[int], int, int] | None:
    """Greedy elimination of the interaction graph ``adj`` (changed in place): each
    step eliminates the var of least key, min table size or ``fill`` (the weight of the
    edges its elimination adds, then table size; ties: the lowest var). Returns the
    order, the vars cut, the widest table and the work (sum of table sizes).

    Past ``limit``: ``None``, or with ``cut`` (a random source) condition on a var
    instead, one of the most connected outside ``avoid`` if any (degree times a random
    factor, so repeated calls cut different sets), and go on: the cut vars are left out
    of the order.
    A heap keyed by the keys, with entries made stale by an elimination skipped, finds
    each next var (a scan of all vars per step took quadratic time in a long chain)."""

    def table(x: int) -> int:
        return sizes[x] * math.prod(sizes[u] for u in adj[x])

    def key(x: int) -> tuple[int, int]:
        if not fill:
            return (table(x), 0)
        nb = sorted(adj[x])
        added = sum(
            sizes[a] * sizes[b] for i, a in enumerate(nb) for b in nb[i + 1 :] if b not in adj[a]
        )
        return (added, table(x))

    keys = {x: key(x) for x in range(len(adj))}
    heap = [(k, x) for x, k in keys.items()]
    heapq.heapify(heap)
    order: list[int] = []
    cuts: list[int] = []
    widest = work = 0
    while keys:
        k, v = heapq.heappop(heap)
        if keys.get(v) != k:
            continue  # stale: v is gone or its key changed since
        size = table(v)
        if size > limit:
            if cut is None:
                return None
            heapq.heappush(heap, (k, v))
            x = max(keys, key=lambda u: (u not in avoid, len(adj[u]) * cut.uniform(0.5, 1.5), -u))
            cuts.append(x)
            del keys[x]
            for a in adj[x]:
                adj[a].discard(x)
                keys[a] = key(a)
                heapq.heappush(heap, (keys[a], a))
            continue
        order.append(v)
        widest, work = max(widest, size), work + size
        del keys[v]
        for a in adj[v]:
            adj[a].update(adj[v] - {a})
            adj[a].discard(v)
        for a in adj[v]:
            keys[a] = key(a)
            heapq.heappush(heap, (keys[a], a))
    return order, cuts, widest, work


def enumerate_all(
    graph: TilingGraph, budget: int, limit: int = ENUMERATION_LIMIT, chunk: int = 1 << 22
) -> list[int] | None:
    """Plain enumeration: the cost of every combination of choices, the cheapest kept
    (``None`` if no combination fits ``budget``).

    The last vars (up to ``chunk`` combinations) are costed as one NumPy array; the
    leading vars are looped over in Python."""
    sizes = [len(c) for c in graph.choices]
    n = graph.nvars
    if math.prod(sizes) > limit:
        raise ValueError(
            f"{math.prod(sizes)} combinations exceed the enumeration limit {limit}; "
            "use exact() on programs this large"
        )
    split = n
    while split > 0 and math.prod(sizes[split - 1 :]) <= chunk:
        split -= 1
    inner = tuple(range(split, n))
    inner_sizes = [sizes[v] for v in inner]
    base = np.zeros(inner_sizes, dtype=np.int64)
    mixed = []
    for f in graph.factors:
        if min(f.scope) >= split:
            base = base + _expand(f.table, f.scope, inner, sizes)
        else:
            mixed.append(f)
    mem_base = np.zeros(inner_sizes, dtype=np.int64)
    for v in inner:
        mem_base = mem_base + _expand(graph.memory[v], (v,), inner, sizes)
    best: list[int] | None = None
    best_cost = int(np.iinfo(np.int64).max)
    for outer in itertools.product(*(range(s) for s in sizes[:split])):
        total = base
        for f in mixed:
            idx = tuple(outer[v] if v < split else slice(None) for v in f.scope)
            rest = tuple(v for v in f.scope if v >= split)
            total = total + _expand(f.table[idx], rest, inner, sizes)
        mem = mem_base + sum(int(graph.memory[v][outer[v]]) for v in range(split))
        total = np.where(mem <= budget, total, np.iinfo(np.int64).max)
        i = int(total.argmin())
        if total.flat[i] < best_cost:
            best_cost = int(total.flat[i])
            best = list(outer) + [int(k) for k in np.unravel_index(i, inner_sizes)]
    return best
