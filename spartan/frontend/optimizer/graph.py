"""The tiling graph (thesis §2.3.3): node groups of tiling nodes joined by weighted edges.

Each non-view node of the program is a *node group* (a variable); its *tiling nodes* are
its :class:`~.profiles.Choice` list. Every cost term becomes a factor: a table over the
choices of the one to three groups it depends on (a node and its inputs' roots). Views
are mapped away, so ``FindCost``'s recursion through views is already in the tables.
A join stage is its factors over (first joined input, other input) for the reads and
(first joined input, output) for the updates: the join placeholder of the thesis.

>>> from spartan.frontend.optimizer.program import Program
>>> p = Program(); a = p.source((8, 8)); b = p.map(a, p.transpose(a))
>>> g = TilingGraph.build(p, nworkers=2)
>>> [len(c) for c in g.choices]
[2, 2]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from spartan.frontend.optimizer.profiles import (
    Choice,
    Term,
    UpdateHistory,
    choices,
    dup_memory,
    pinned_choices,
    profile,
)
from spartan.frontend.optimizer.program import Node, Program
from spartan.tiling import Tiling


@dataclass(frozen=True)
class Factor:
    """Bytes moved by node ``owner``: ``table`` over the choices of the vars in ``scope``.
    An update factor also keeps its uncorrected estimate ``raw``."""

    owner: int
    scope: tuple[int, ...]
    table: np.ndarray
    raw: np.ndarray | None = None


@dataclass
class TilingGraph:
    program: Program
    nworkers: int
    nodes: list[int]  # node id of each var
    var_of: dict[int, int]
    choices: list[list[Choice]]
    memory: list[np.ndarray]  # duplication bytes of each choice
    factors: list[Factor]
    degree: list[int]  # adjacent node groups in the expression graph (views included)
    # per var, each choice's rank by expected run time among equal bytes (0: fastest);
    # a secondary cost only: the solvers never trade a byte for it (see time_key)
    tiebreak: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        program: Program,
        nworkers: int,
        dup_budget_bytes: int = 0,
        history: UpdateHistory | None = None,
        pieces: int | Callable[[Node], int] | None = None,
        fixed: Mapping[int, Choice | Tiling] | None = None,
    ) -> TilingGraph:
        """The graph of ``program`` on ``nworkers`` workers; candidate tilings cut
        ``pieces`` tiles (default: one per worker). Nodes in ``fixed`` keep that one
        choice (user-set tilings); their duplication is not charged to the budget."""
        if nworkers < 1:
            raise ValueError(f"nworkers must be >= 1, got {nworkers}")
        if dup_budget_bytes < 0:
            raise ValueError(f"dup_budget_bytes must be >= 0, got {dup_budget_bytes}")
        pieces = nworkers if pieces is None else pieces
        # (a callable: each node's own count, as the lowering will cut it)
        pieces_of = pieces if callable(pieces) else (lambda node, n=pieces: n)
        if not callable(pieces) and pieces < 1:
            raise ValueError(f"pieces must be >= 1, got {pieces}")
        history = history or UpdateHistory()
        nodes = [n.id for n in program if not n.is_view]
        var_of = {nid: v for v, nid in enumerate(nodes)}
        pinned: dict[int, Choice] = {}
        for nid, c in (fixed or {}).items():
            if nid not in var_of:
                raise ValueError(f"node {nid} is a view or not in the program; it has no tiling")
            pinned[nid] = c if isinstance(c, Choice) else Choice(c)
            pinned[nid].tiling.check(program[nid].shape)
        chs: list[list[Choice]] = []
        mem: list[np.ndarray] = []
        for nid in nodes:
            node = program[nid]
            if nid in pinned:
                chs.append(pinned_choices(program, node, pinned[nid]))
                mem.append(np.zeros(len(chs[-1]), dtype=np.int64))
                continue
            dup = dup_memory(node, nworkers)
            allow = nworkers > 1 and node.op != "filter" and 0 < dup <= dup_budget_bytes
            cs = choices(program, node, pieces_of(node), allow)
            chs.append(cs)
            held = node.params.get("tiling") if node.op == "source" else None
            # an evaluated array already duplicated costs no new memory to keep
            mem.append(
                np.array(
                    [dup if c.tiling.replicated and c.tiling != held else 0 for c in cs],
                    dtype=np.int64,
                )
            )
        factors = []
        for nid in nodes:
            ratio = history.factor(program[nid].params.get("site"))
            for term in profile(program, program[nid], nworkers):
                f = _factor(nid, term, [var_of[n] for n in term.nodes], chs)
                if term.update:
                    table = np.rint(f.table * ratio).astype(np.int64)
                    f = Factor(nid, f.scope, table, raw=f.table)
                factors.append(f)
        users = program.users()
        degree = [len(set(program[nid].inputs) | set(users[nid])) for nid in nodes]
        tiebreak = [time_ranks(cs) for cs in chs]
        return cls(program, nworkers, nodes, var_of, chs, mem, factors, degree, tiebreak)

    @property
    def nvars(self) -> int:
        return len(self.nodes)

    def cost(self, assign: list[int] | np.ndarray) -> int:
        return sum(self.node_costs(assign).values())

    def node_costs(self, assign: list[int] | np.ndarray) -> dict[int, int]:
        """Predicted bytes per node id (views: 0) for choice indices ``assign``."""
        out = {n.id: 0 for n in self.program}
        for f in self.factors:
            out[f.owner] += int(f.table[tuple(assign[v] for v in f.scope)])
        return out

    def update_costs(self, assign: list[int] | np.ndarray) -> dict[int, tuple[int, int]]:
        """(predicted, uncorrected estimate) of the update bytes of each join node."""
        out: dict[int, tuple[int, int]] = {}
        for f in self.factors:
            if f.raw is not None:
                idx = tuple(assign[v] for v in f.scope)
                got, est = out.get(f.owner, (0, 0))
                out[f.owner] = (got + int(f.table[idx]), est + int(f.raw[idx]))
        return out

    def dup_bytes(self, assign: list[int] | np.ndarray) -> int:
        return int(sum(self.memory[v][a] for v, a in enumerate(assign)))

    def time_cost(self, assign: list[int] | np.ndarray) -> int:
        """The secondary cost of ``assign``: the sum of its choices' time ranks."""
        return int(sum(self.tiebreak[v][a] for v, a in enumerate(assign)))


def _tiles(t: Tiling) -> int:
    return math.prod(t.cuts) if not t.replicated else 1


def time_key(choice: Choice, target: int) -> tuple[int, int, int, int]:
    """What makes a tiling slower at equal bytes, most important first: a duplicated
    copy (memory on every worker), fewer tiles than ``target`` (the count asked of the
    candidates; a shape that cannot be cut that finely gives fewer tasks than workers
    to run them), more cut axes (a tile of a stencil-like read then has neighbours on
    more sides: 2x2 blocks ran a stencil 1.76x slower than rows moving the same bytes,
    issue 39), the innermost axis cut (tiles of strided, not contiguous, memory).

    >>> from spartan.tiling import Tiling
    >>> [time_key(Choice(t), 4) for t in (Tiling.row((8, 8), 4), Tiling.block((8, 8), 4))]
    [(0, 0, 1, 0), (0, 0, 2, 1)]
    >>> time_key(Choice(Tiling.column((8, 2), 2)), 4)  # 2 tiles where 4 were asked
    (0, 2, 1, 1)
    """
    t = choice.tiling
    cuts = tuple(t.cuts)
    return (
        int(t.replicated),
        max(0, target - _tiles(t)),
        sum(k > 1 for k in cuts),
        int(bool(cuts) and cuts[-1] > 1),
    )


def time_ranks(chs: list[Choice]) -> np.ndarray:
    """Each choice's rank by :func:`time_key` (ties: the earlier choice first); the
    target tile count is the most tiles any candidate has.

    >>> from spartan.tiling import Tiling
    >>> time_ranks([Choice(Tiling.block((8, 8), 4)), Choice(Tiling.row((8, 8), 4))]).tolist()
    [1, 0]
    >>> time_ranks([Choice(Tiling.column((48, 4), 4)), Choice(Tiling.row((48, 4), 48))]).tolist()
    [1, 0]
    """
    target = max((_tiles(c.tiling) for c in chs if not c.tiling.replicated), default=1)
    order = sorted(range(len(chs)), key=lambda i: (time_key(chs[i], target), i))
    ranks = np.empty(len(chs), dtype=np.int64)
    ranks[order] = np.arange(len(chs))
    return ranks


def _factor(owner: int, term: Term, term_vars: list[int], chs: list[list[Choice]]) -> Factor:
    """Tabulate ``term`` over the distinct vars it reads (a var may appear twice, e.g.
    ``A`` and ``A.T`` joined together: both then take the same choice)."""
    scope = tuple(sorted(set(term_vars)))
    where = [scope.index(v) for v in term_vars]
    values = [
        term.cost(*(combo[k] for k in where))
        for combo in itertools.product(*(chs[v] for v in scope))
    ]
    table = np.array(values, dtype=np.int64).reshape([len(chs[v]) for v in scope])
    return Factor(owner, scope, table)
