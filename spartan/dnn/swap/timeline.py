"""Pictures of plans and searches: stream timelines (as in the paper's Figure 1 tables) and
the genetic algorithm's convergence curve.

>>> from spartan.dnn.swap.worked_examples import figure1_workload, RIGHT_FIRST, FINE_POOL
>>> from spartan.dnn.swap.planner import plan_swaps
>>> wl = figure1_workload()
>>> idx = {n: i for i, n in enumerate(wl.op_names)}
>>> plan = plan_swaps(wl, [idx[n] for n in RIGHT_FIRST], FINE_POOL, steady_state=False)
>>> print(timeline_table(plan))
time     | t1   | t2    | t3    | t4    | t5    | t6
compute  | Data | Conv2 | Conv3 | Conv4 | Conv1 | Concat
swap-in  | W2   | W3    | W4    | W1    |       |
swap-out |      |       |       | A2    | A2    |
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from spartan.dnn.swap.genetic import Generation
from spartan.dnn.swap.plan import COMPUTE, SWAP_IN, SWAP_OUT, SwapPlan

__all__ = ["timeline_table", "plot_timeline", "plot_convergence"]

_ROWS = ((COMPUTE, "compute"), (SWAP_IN, "swap-in"), (SWAP_OUT, "swap-out"))


def timeline_table(plan: SwapPlan, slot: float = 1.0) -> str:
    """A text table of what each stream runs in each time slot of length ``slot``
    (meant for unit-time toys; a node spanning several slots is repeated)."""
    sim = plan.simulate()
    n_slots = math.ceil(sim.makespan / slot - 1e-9)
    rows = {kind: [""] * n_slots for kind, _ in _ROWS}
    wl = plan.workload
    for i in range(len(plan)):
        name = plan.node_name(i)
        label = name if plan.kind[i] == COMPUTE else wl.tensor_names[plan.ref[i]]
        first = int(sim.start[name] / slot + 1e-9)
        last = math.ceil(sim.end[name] / slot - 1e-9)
        for s in range(first, max(last, first + 1) if plan.duration[i] > 0 else first):
            rows[plan.kind[i]][s] = label
    table = [["time"] + [f"t{s + 1}" for s in range(n_slots)]]
    table += [[title] + rows[kind] for kind, title in _ROWS]
    widths = [max(len(r[c]) for r in table) for c in range(n_slots + 1)]
    return "\n".join(
        " | ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table
    )


def plot_timeline(plan: SwapPlan, path: str | Path, title: str | None = None) -> Path:
    """Save a Gantt chart of the compute / swap-in / swap-out streams as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sim = plan.simulate()
    colors = {COMPUTE: "#4C72B0", SWAP_IN: "#55A868", SWAP_OUT: "#C44E52"}
    fig, ax = plt.subplots(figsize=(12, 2.6))
    for y, (kind, _) in enumerate(_ROWS):
        spans = [
            (sim.start[plan.node_name(i)], plan.duration[i])
            for i in plan.stream(kind)
            if plan.duration[i] > 0
        ]
        ax.broken_barh(spans, (2 - y - 0.4, 0.8), facecolors=colors[kind], edgecolor="none")
    ax.set_yticks([2, 1, 0], [title for _, title in _ROWS])
    ax.set_xlabel("simulated time (s)")
    ax.set_xlim(0, sim.makespan * 1.01 or 1)
    ideal = plan.workload.compute_time
    ax.set_title(
        title
        or f"{plan.label or 'plan'}: {sim.makespan:.4g}s per iteration "
        f"({ideal / sim.makespan:.0%} of ideal)"
    )
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_convergence(
    history: Sequence[Generation], path: str | Path, ideal: float | None = None, title: str = ""
) -> Path:
    """Save best / mean / worst simulated time per generation against search time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = [g.elapsed_s for g in history]
    for attr, style in (("worst", ":"), ("mean", "--"), ("best", "-")):
        ax.plot(xs, [getattr(g, attr) for g in history], style, label=attr)
    if ideal is not None:
        ax.axhline(ideal, color="gray", linewidth=0.8, label="ideal")
    ax.set_xlabel("search time (s)")
    ax.set_ylabel("simulated s / iteration")
    ax.set_title(title or "GA convergence")
    ax.legend()
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
