"""The tiling optimizer: choose how every array of a program is cut to move fewest bytes.

>>> from spartan.frontend.optimizer import Program, optimize
>>> p = Program()
>>> a, b = p.source((512, 512), name="A"), p.source((512, 512), name="B")
>>> c = p.map(a, b)
>>> d = p.map(p.transpose(a), p.transpose(b))
>>> e = p.map(c, d)
>>> plan = optimize(p, nworkers=4)
>>> str(plan.tiling[d]), str(plan.tiling[c]), plan.method
('column[1, 4]', 'row[4, 1]', 'exact')

``optimize`` builds the tiling graph from the operators' cost profiles, solves it
exactly when its width allows (always for programs of the thesis's size) and otherwise
runs the thesis's greedy search followed by exact solves of all but a rotating cutset
of arrays. ``greedy_plan`` runs the thesis's search alone, ``brute_force`` enumerates
every combination, and ``plan_for`` costs tilings chosen elsewhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from spartan.frontend.optimizer.graph import TilingGraph
from spartan.frontend.optimizer.plan import Plan
from spartan.frontend.optimizer.profiles import Choice, UpdateHistory
from spartan.frontend.optimizer.program import Node, Program
from spartan.frontend.optimizer.search import (
    cutset_search,
    enumerate_all,
    exact,
    greedy,
    improve,
)
from spartan.tiling import Tiling

__all__ = [
    "Choice",
    "Node",
    "Plan",
    "Program",
    "TilingGraph",
    "UpdateHistory",
    "brute_force",
    "exact_plan",
    "greedy_plan",
    "optimize",
    "plan_for",
]

Fixed = Mapping[int, Choice | Tiling]


def optimize(
    program: Program,
    nworkers: int,
    dup_budget_bytes: int = 0,
    history: UpdateHistory | None = None,
    method: str = "auto",
    pieces: int | Callable[[Node], int] | None = None,
    fixed: Fixed | None = None,
) -> Plan:
    """Tile every node of ``program`` for ``nworkers`` workers.

    ``dup_budget_bytes`` bounds the extra memory of duplicated arrays (none without it);
    ``history`` holds join_update update bytes measured in earlier runs; candidate
    tilings cut ``pieces`` tiles (a count, or a function of the node; default
    ``nworkers``); ``fixed`` pins user-set tilings.
    ``method``: ``auto`` (exact when feasible, else greedy followed by exact solves of
    all but a rotating cutset of groups, :func:`~.search.cutset_search`), ``exact``,
    ``greedy`` (the thesis's search alone), ``greedy+improve`` (local search) or
    ``greedy+cutset`` (the fallback of ``auto`` alone).
    """
    methods = ("auto", "exact", "greedy", "greedy+improve", "greedy+cutset")
    if method not in methods:
        raise ValueError(f"unknown method {method!r}; expected one of {', '.join(methods)}")
    start = time.perf_counter()
    graph = TilingGraph.build(program, nworkers, dup_budget_bytes, history, pieces, fixed)
    assign = None
    used = method
    if method in ("auto", "exact"):
        assign = exact(graph, dup_budget_bytes)
        used = "exact"
        if assign is None and method == "exact":
            raise ValueError("the tiling graph is too wide for the exact solver")
    if assign is None:
        assign = greedy(graph, dup_budget_bytes)
        used = "greedy"
        if method == "greedy+improve":
            assign = improve(graph, assign, dup_budget_bytes)
            used = "greedy+improve"
        elif method in ("auto", "greedy+cutset"):
            # too wide to solve whole: solve all but a rotating cutset exactly
            assign = cutset_search(graph, assign, dup_budget_bytes)
            used = "greedy+cutset"
    return Plan.from_assignment(graph, assign, used, time.perf_counter() - start)


def plan_for(
    program: Program,
    nworkers: int,
    tilings: Fixed,
    history: UpdateHistory | None = None,
) -> Plan:
    """The plan (predicted bytes per node) for tilings chosen elsewhere: one per
    non-view node (a :class:`Choice` for dot nodes, to name the algorithm)."""
    missing = [n.id for n in program if not n.is_view and n.id not in tilings]
    if missing:
        raise ValueError(f"no tiling given for nodes {missing}")
    start = time.perf_counter()
    graph = TilingGraph.build(program, nworkers, 0, history, fixed=tilings)
    return Plan.from_assignment(graph, [0] * graph.nvars, "given", time.perf_counter() - start)


def _plan_with(
    solver: Callable[[TilingGraph, int], list[int] | None], label: str
) -> Callable[..., Plan]:
    def run(
        program: Program,
        nworkers: int,
        dup_budget_bytes: int = 0,
        history: UpdateHistory | None = None,
        pieces: int | Callable[[Node], int] | None = None,
        fixed: Fixed | None = None,
    ) -> Plan:
        start = time.perf_counter()
        graph = TilingGraph.build(program, nworkers, dup_budget_bytes, history, pieces, fixed)
        assign = solver(graph, dup_budget_bytes)
        if assign is None:
            raise ValueError("the tiling graph is too wide for the exact solver")
        return Plan.from_assignment(graph, assign, label, time.perf_counter() - start)

    return run


brute_force = _plan_with(enumerate_all, "brute force")
brute_force.__doc__ = "The best plan by enumerating every combination of tilings (small programs)."
exact_plan = _plan_with(exact, "exact")
exact_plan.__doc__ = "The best plan by variable elimination (raises if the graph is too wide)."
greedy_plan = _plan_with(greedy, "greedy")
greedy_plan.__doc__ = "The thesis's maximum-connectivity-first search alone (Fig. 2.8)."
