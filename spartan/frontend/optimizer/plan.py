"""The optimizer's answer: a tiling per node, predicted bytes per node, and a report.

>>> from spartan.frontend.optimizer import Program, optimize
>>> p = Program(); x = p.source((64, 64), name="x"); y = p.map(x, p.transpose(x))
>>> plan = optimize(p, nworkers=4)
>>> plan.total == sum(plan.predicted.values())
True
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import NamedTuple

from spartan.frontend.optimizer.geometry import induced_tiling
from spartan.frontend.optimizer.graph import TilingGraph
from spartan.frontend.optimizer.profiles import Choice, UpdateHistory
from spartan.frontend.optimizer.program import Node, Program
from spartan.tiling import Tiling

#: a node's measured bytes are flagged when they differ from the prediction by more
#: than this fraction of it...
MISMATCH_RELATIVE = 0.10
#: ...and by more than this many bytes: a scalar's 8 or 16 bytes (a partial sum sent to
#: the driver's worker) are noise against any array worth distributing, not a model error
MISMATCH_FLOOR_BYTES = 1024


class Mismatch(NamedTuple):
    """A node whose measured bytes differ from the predicted ones (see :meth:`Plan.mismatches`)."""

    node: Node
    predicted: int
    measured: int


def differs(predicted: int, measured: int) -> bool:
    """Whether ``measured`` is off ``predicted`` by more than :data:`MISMATCH_RELATIVE`
    of it and more than :data:`MISMATCH_FLOOR_BYTES`.

    >>> differs(10_000, 10_900), differs(10_000, 11_100), differs(0, 16), differs(0, 2048)
    (False, True, False, True)
    """
    return abs(measured - predicted) > max(MISMATCH_RELATIVE * predicted, MISMATCH_FLOOR_BYTES)


@dataclass
class Plan:
    """``tiling[node]`` for every node (a view's is induced by its root), ``impl[node]``
    for dot nodes, ``predicted[node]`` bytes (``updates[node]``: a join node's predicted
    and uncorrected update bytes); ``measured[node]`` is filled after a run."""

    program: Program
    nworkers: int
    choice: dict[int, Choice]
    tiling: dict[int, Tiling]
    predicted: dict[int, int]
    dup_bytes: int
    method: str
    seconds: float
    updates: dict[int, tuple[int, int]] = field(default_factory=dict)
    measured: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_assignment(
        cls, graph: TilingGraph, assign: list[int], method: str, seconds: float
    ) -> Plan:
        program = graph.program
        choice = {nid: graph.choices[v][assign[v]] for v, nid in enumerate(graph.nodes)}
        tiling = {nid: c.tiling for nid, c in choice.items()}
        for node in program:
            if node.is_view:
                root, vm = program.root(node.id)
                assert vm is not None, "a view node always has a view mapping onto its root"
                tiling[node.id] = induced_tiling(vm, program[root].shape, tiling[root])
        return cls(
            program,
            graph.nworkers,
            choice,
            tiling,
            graph.node_costs(assign),
            graph.dup_bytes(assign),
            method,
            seconds,
            graph.update_costs(assign),
        )

    @property
    def impl(self) -> dict[int, str]:
        """The chosen algorithm of each dot node (``"rows"`` or ``"inner"``)."""
        return {nid: c.impl for nid, c in self.choice.items() if c.impl is not None}

    @property
    def total(self) -> int:
        return sum(self.predicted.values())

    def record_measured(self, node_id: int, nbytes: int) -> None:
        """Store the bytes the backend moved for ``node_id`` beside the prediction."""
        if node_id not in self.predicted:
            raise KeyError(f"no node {node_id} in this plan")
        self.measured[node_id] = int(nbytes)

    def teach(self, history: UpdateHistory) -> None:
        """Teach ``history`` the real update bytes of each join ``site`` measured here:
        the measured bytes less the predicted reads (which are exact), summed over the
        site's nodes. A loop's joins share a site; one whose result the next iteration
        does not read may move far less (CG's last ``A @ p``: 16 bytes of its 16,000),
        and as the site's only lesson it set every iteration's prediction to 0."""
        taught: dict[Hashable, list[int]] = {}
        for nid, (predicted, estimate) in self.updates.items():
            site = self.program[nid].params.get("site")
            if site is None or nid not in self.measured:
                continue
            reads = self.predicted[nid] - predicted
            sums = taught.setdefault(site, [0, 0])
            sums[0] += estimate
            sums[1] += max(0, self.measured[nid] - reads)
        for site, (estimate, measured) in taught.items():
            history.record(site, estimate, measured)

    def mismatches(self) -> list[Mismatch]:
        """The measured nodes whose bytes differ from the prediction by more than 10%
        (and more than 1 KiB: :func:`differs`), in node order; empty before a run."""
        return [
            Mismatch(node, self.predicted[node.id], self.measured[node.id])
            for node in self.program
            if node.id in self.measured and differs(self.predicted[node.id], self.measured[node.id])
        ]

    def explain(self) -> str:
        """A table: node, operator, shape, chosen tiling, predicted (and measured) bytes;
        a measured node off its prediction (:meth:`mismatches`) is marked ``!``."""
        rows = [("node", "op", "shape", "tiling", "predicted B", "measured B", "")]
        off = {m.node.id for m in self.mismatches()}
        for node in self.program:
            meas = self.measured.get(node.id)
            rows.append(
                (
                    f"{node.id} {node.name}".strip(),
                    node.op,
                    "x".join(map(str, node.shape)) or "()",
                    str(self.choice.get(node.id, self.tiling[node.id])),
                    f"{self.predicted[node.id]:,}",
                    "" if meas is None else f"{meas:,}",
                    "!" if node.id in off else "",
                )
            )
        measured_total = sum(self.measured.values()) if self.measured else None
        rows.append(
            (
                "total",
                "",
                "",
                f"dup {self.dup_bytes:,} B",
                f"{self.total:,}",
                "" if measured_total is None else f"{measured_total:,}",
                "",
            )
        )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        right = {4, 5}
        lines = []
        for k, r in enumerate(rows):
            cells = [
                c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))
            ]
            lines.append("  ".join(cells).rstrip())
            if k == 0 or k == len(rows) - 2:
                lines.append("  ".join("-" * w for w in widths).rstrip())
        head = f"tiling plan: {self.nworkers} workers, {self.method}, {self.seconds * 1e3:.1f} ms"
        if off:
            n = len(off)
            lines.append(
                f"! {n} node{'s' * (n != 1)} differ{'s' * (n == 1)} from the prediction by "
                f"more than {MISMATCH_RELATIVE:.0%} (and {MISMATCH_FLOOR_BYTES:,} B)"
            )
        return "\n".join([head, *lines])
