"""``spartan.explain(x)``: the tiling plan of an array, predicted and measured bytes.

>>> print(spartan.explain(x @ spartan.ones((3, 2))))
tiling plan: 2 workers, ...
node ... op ... shape ... tiling ... predicted B ... measured B
...
total ...

After evaluation a node whose measured bytes differ from the predicted ones by more than
10% (and more than 1 KiB) is marked ``!`` and counted in a footer line;
:attr:`Explanation.mismatches` lists them.
"""

from __future__ import annotations

from typing import Any

from spartan.backend import session
from spartan.frontend.evaluate import pending_order
from spartan.frontend.expr import Expr
from spartan.frontend.optimizer.plan import Mismatch
from spartan.frontend.planning import Planned, choose
from spartan.frontend.view import base_of


class Explanation:
    """A printable plan; after evaluation it carries the measured bytes per node."""

    def __init__(self, planned: Planned, evaluated: bool) -> None:
        self.planned = planned
        self.evaluated = evaluated
        if evaluated:
            planned.record(session.current().stats(planned.tags).bytes_by_tag)

    @property
    def plan(self) -> Any:
        return self.planned.plan

    @property
    def mismatches(self) -> list[Mismatch]:
        """The nodes whose measured bytes differ from the predicted ones by more than
        10% and 1 KiB (the floor keeps a scalar's few bytes from counting), as
        ``(node, predicted, measured)``; empty before evaluation.

        >>> [(m.node.label, m.predicted, m.measured) for m in spartan.explain(y).mismatches]  # doctest: +SKIP
        [('fold(add)', 0, 4096)]
        """
        return self.plan.mismatches()

    def __str__(self) -> str:
        state = "measured after evaluation" if self.evaluated else "not evaluated yet"
        return f"{self.planned.explain()}\n({state})"

    __repr__ = __str__

    def to_dot(self) -> str:
        """The expression graph in Graphviz dot (render with ``dot -Tpng``)."""
        program = self.plan.program
        lines = ["digraph spartan {", "  rankdir=BT;", "  node [shape=box, fontsize=10];"]
        for node in program:
            t = self.plan.tiling.get(node.id)
            b = self.plan.predicted.get(node.id, 0)
            label = f"{node.label}\\n{'x'.join(map(str, node.shape))}\\n{t} {b:,} B"
            lines.append(f'  n{node.id} [label="{label}"];')
            for i in node.inputs:
                lines.append(f"  n{i} -> n{node.id};")
        lines.append("}")
        return "\n".join(lines)

    def render(self, path: str) -> str:
        """Draw the graph to ``path`` (PNG via matplotlib; nodes by depth)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        program = self.plan.program
        depth: dict[int, int] = {}
        for node in program:
            depth[node.id] = 1 + max((depth[i] for i in node.inputs), default=-1)
        rows: dict[int, list[int]] = {}
        for nid, d in depth.items():
            rows.setdefault(d, []).append(nid)
        pos = {nid: (i - len(ids) / 2, -d) for d, ids in rows.items() for i, nid in enumerate(ids)}
        fig, ax = plt.subplots(
            figsize=(max(6, 2 * max(len(r) for r in rows.values())), 1.4 * len(rows) + 1)
        )
        for node in program:
            for i in node.inputs:
                ax.annotate(
                    "", pos[node.id], pos[i], arrowprops={"arrowstyle": "->", "color": "0.5"}
                )
        for node in program:
            x, y = pos[node.id]
            t = self.plan.tiling.get(node.id)
            ax.text(
                x,
                y,
                f"{node.label}\n{t}\n{self.plan.predicted.get(node.id, 0):,} B",
                ha="center",
                va="center",
                fontsize=8,
                bbox={"boxstyle": "round", "fc": "#e8f0fe", "ec": "#4a6fa5"},
            )
        ax.set_axis_off()
        ax.margins(0.2)
        fig.savefig(path, dpi=100, bbox_inches="tight")
        plt.close(fig)
        return path


def explain(x: Any) -> Explanation:
    """The plan for ``x``: each node's chosen tiling and predicted bytes (and, once
    evaluated, the bytes the workers measured moving for it)."""
    expr: Expr = x._expr if hasattr(x, "_expr") else x
    target = base_of(expr)
    if target.planned is not None:
        return Explanation(target.planned, evaluated=True)
    order = pending_order([expr])
    if not order:
        raise ValueError("this array was not computed by spartan (it came from the driver)")
    be = session.current()
    with be.lock:  # (planning's caches are shared with evaluations in other threads)
        _, planned = choose(order, be.nworkers)
    if planned is None:
        raise RuntimeError("the tiling optimizer failed on this graph (see the log)")
    return Explanation(planned, evaluated=False)
