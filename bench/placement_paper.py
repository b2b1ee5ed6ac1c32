"""The ParDNN thesis's experiments that bench/placement.py reports beside its planner table.

* :func:`batch_scaling` — Table 6.1: the largest batch each planner fits on K devices vs ideal
  data parallelism (K x the largest batch one device fits).
* :func:`refinement_ablation` — §6.4.1: round-robin + memory repair vs ParDNN's step 1 without
  refinement, with the thesis's refinements, and with ours (moves off the emulated schedule's
  critical path), all followed by memory repair.
* :func:`heterogeneous` — HEFT on a CPU + GPU machine (Topcuoglu's setting) against exhaustive
  search and against HEFT blind to the speeds.

Each returns markdown lines.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from time import perf_counter

import numpy as np

from spartan.dnn import zoo
from spartan.dnn.graph import Graph
from spartan.dnn.hardware import V100, XEON, GiB
from spartan.dnn.placement import (
    Machine,
    TaskGraph,
    exhaustive,
    heft,
    place,
    random_dnn,
    simulate_placement,
)
from spartan.dnn.placement.generator import small_dag
from spartan.dnn.placement.levels import critical_path
from spartan.dnn.placement.memory import repair_memory

log = logging.getLogger("spartan")

#: The thesis's devices: V100 32 GB (DGX-2).
V100_32 = V100.with_(memory=32 * GiB)

#: Models standing in for the thesis's (Word-RNN, WRN, TRN); Char-CRN and E3D have no zoo twin.
SCALING_MODELS: dict[str, tuple[str, Callable[[int], Graph]]] = {
    "Word-RNN": ("LSTM 4 x 4096, 10 steps", lambda b: zoo.rnn(4, 4096, b, 10, classes=10000)),
    "WRN": ("WResNet-152-8", lambda b: zoo.wresnet152(8, b)),
    "TRN": ("GPT-2 large, seq 1024", lambda b: zoo.gpt2("large", b, 1024)),
}

#: Table 6.1, use case 1 (batch size at 1/2/4/8/16 GPUs).
PAPER_BATCH = {
    "Word-RNN": [16, 512, 1024, 2048, 2048],
    "WRN": [1, 4, 16, 32, 64],
    "TRN": [1, 32, 64, 128, 256],
}


def _fits(build: Callable[[int], Graph], batch: int, k: int, method: str) -> bool:
    tg = TaskGraph.from_graph(build(batch), V100_32)
    machine = Machine.of(V100_32, k)
    if k == 1:
        one = simulate_placement(tg, np.zeros(tg.n, dtype=np.int64), machine)
        return one.feasible(machine)
    opts = {"schedule_budget": 8} if method == "pardnn" else {}
    return place(tg, machine, method, **opts).feasible


def _largest(build: Callable[[int], Graph], k: int, method: str, start: int, cap: int) -> int:
    """Largest power-of-two batch in [1, cap] that fits, searched from ``start``."""
    b = start
    if not _fits(build, b, k, method):
        while b > 1:
            b //= 2
            if _fits(build, b, k, method):
                return b
        return 0
    while b * 2 <= cap and _fits(build, b * 2, k, method):
        b *= 2
    return b


def _memory_bound(build: Callable[[int], Graph], k: int, start: int, cap: int) -> int:
    """Largest power-of-two batch whose one-device step (unbounded memory) peaks at most at
    K devices' usable memory and whose largest op fits one device: no placement of the same
    schedule holds less at once, so no planner can fit more (copies only add bytes)."""

    def ok(b: int) -> bool:
        tg = TaskGraph.from_graph(build(b), V100_32)
        machine = Machine.of(V100_32, k)
        one = simulate_placement(tg, np.zeros(tg.n, dtype=np.int64), machine)
        into = np.bincount(tg.dst, weights=tg.nbytes, minlength=tg.n)
        floor = float((into + tg.mem).max())
        return float(one.peak[0]) <= k * machine.limit and floor <= machine.limit

    b = start
    while b * 2 <= cap and ok(b * 2):
        b *= 2
    return b


def batch_scaling(
    devices: list[int], methods: list[str], cap_over_dp: int = 64
) -> tuple[list[str], dict[str, list[float]]]:
    """Table 6.1: largest batch per planner vs ideal data parallelism; also every K > 1
    ratio (batch / DP batch) per planner and for the memory bound."""
    ratios: dict[str, list[float]] = {m: [] for m in [*methods, "bound"]}
    out = [
        "| model (ours) | K | paper ParDNN bsz (× DP) | ideal DP bsz | memory bound bsz | "
        + " | ".join(f"{m} bsz (× DP)" for m in methods)
        + " |",
        "|" + "---|" * (5 + len(methods)),
    ]
    for paper_name, (ours, build) in SCALING_MODELS.items():
        t0 = perf_counter()
        one = _largest(build, 1, "single", 1, 1 << 16)
        for k in devices:
            dp = k * one
            bound = _memory_bound(build, k, max(one, 1), max(dp, 1) * cap_over_dp)
            paper_b = PAPER_BATCH[paper_name][[1, 2, 4, 8, 16].index(k)] if k <= 16 else None
            paper = (
                "–"
                if paper_b is None
                else f"{paper_b} ({paper_b / (k * PAPER_BATCH[paper_name][0]):.0f}×)"
            )
            cells = []
            for m in methods:
                if k == 1:
                    b = one
                else:
                    b = _largest(build, k, m, max(dp, 1), max(dp, 1) * cap_over_dp)
                cells.append(f"{b} ({b / dp:.2g}×)" if dp else f"{b}")
                if k > 1 and dp:
                    ratios[m].append(b / dp)
            if k > 1 and dp:
                ratios["bound"].append(bound / dp)
            out.append(
                f"| {paper_name}: {ours} | {k} | {paper} | {dp} | {bound} ({bound / max(dp, 1):.2g}×) | "
                + " | ".join(cells)
                + " |"
            )
        log.info("batch scaling %s: %.0f s", paper_name, perf_counter() - t0)
    return out, ratios


def refinement_ablation(
    devices: list[int], link_bw: float
) -> tuple[list[str], dict[str, list[float]]]:
    """§6.4.1: makespans relative to ParDNN without refinement (all with memory repair);
    also the speedups (unrefined / refined, round-robin / ParDNN) of every row."""
    gains: dict[str, list[float]] = {"thesis": [], "ours": [], "rr": []}
    graphs: list[tuple[str, Callable[[], TaskGraph]]] = [
        ("alexnet b128", lambda: TaskGraph.from_graph(zoo.alexnet(128), V100)),
        ("resnet50 b64", lambda: TaskGraph.from_graph(zoo.resnet(50, 64), V100)),
        ("lstm 4x1024 b64 s20", lambda: TaskGraph.from_graph(zoo.rnn(4, 1024, 64, 20), V100)),
        ("random 1000", lambda: random_dnn(1000, seed=1000)),
    ]
    out = [
        "| graph | K | CCR | lower bound | round-robin + repair | thesis refinements | "
        "+ ours (schedule path) | moves (thesis / ours) | refinement s (ours) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, build in graphs:
        tg = build()
        one = simulate_placement(
            tg, np.zeros(tg.n, dtype=np.int64), Machine(1, memory=1e30, link_bw=link_bw)
        )
        cp = critical_path(tg, [0.0] * tg.m)[1]
        for k in devices:
            machine = Machine(k, memory=min(3.0 / k, 0.8) * float(one.peak[0]), link_bw=link_bw)
            ccr = float(np.sum(machine.comm_time(tg.nbytes.astype(float))) / tg.comp.sum())
            base = place(tg, machine, "pardnn", refinement=False, schedule_refinement=False)
            rr = place(tg, machine, "round_robin").assign
            rr_fixed, _ = repair_memory(tg, rr, machine)
            t_rr = simulate_placement(tg, rr_fixed, machine).makespan
            s1: dict = {}
            thesis = place(tg, machine, "pardnn", schedule_refinement=False, stats=s1)
            s2: dict = {}
            ours = place(tg, machine, "pardnn", stats=s2)
            lb = max(cp, tg.comp.sum() / k)
            b = base.makespan
            gains["thesis"].append(b / thesis.makespan)
            gains["ours"].append(b / ours.makespan)
            gains["rr"].append(t_rr / ours.makespan)
            out.append(
                f"| {name} | {k} | {ccr:.2f} | {lb / b:.3f} | {t_rr / b:.3f} | "
                f"{thesis.makespan / b:.3f} | {ours.makespan / b:.3f} | "
                f"{s1['swaps']} swaps + {s1['cp_moves']} / {s2['schedule_moves']} | "
                f"{s2['refinement_s']:.2f} |"
            )
    return out, gains


def _small_graph(rng: np.random.Generator, n: int) -> TaskGraph:
    return small_dag(rng, n, varied_sizes=False)


def heterogeneous(graphs: int = 12, n: int = 8, seed: int = 0) -> list[str]:
    """HEFT on heterogeneous machines vs exhaustive search and speed-blind HEFT."""
    rng = np.random.default_rng(seed)
    cpu_gpu = Machine.mixed([XEON, V100], memory=1e12)
    configs = [
        ("Xeon + V100 (PCIe)", cpu_gpu),
        ("2 Xeon + V100", Machine.mixed([XEON, XEON, V100], memory=1e12)),
        ("speeds 1 / 4, 12 GB/s", Machine(2, memory=1e12, link_bw=12e9, speed=(1.0, 4.0))),
    ]
    out = [
        "| machine | graphs | placements each | HEFT optimal / mean ratio | speed-blind HEFT "
        "optimal / mean ratio | ParDNN (speed-blind) mean ratio | all on fastest mean ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, machine in configs:
        ratios: dict[str, list[float]] = {"heft": [], "blind": [], "pardnn": [], "fast": []}
        evaluated = 0
        fastest = int(np.argmax(machine.speeds))
        same = Machine(machine.devices, memory=machine.memory, link_bw=machine.link_bw)
        for _ in range(graphs):
            tg = _small_graph(rng, n)
            _, info = exhaustive(tg, machine)
            evaluated, best = info["evaluated"], info["makespan"]

            for key, a in (
                ("heft", heft(tg, machine)),
                ("blind", heft(tg, same)),
                ("pardnn", place(tg, same, "pardnn").assign),
                ("fast", np.full(tg.n, fastest)),
            ):
                ratios[key].append(simulate_placement(tg, a, machine).makespan / best)
        cell = {
            m: f"{np.mean(np.isclose(r, 1.0)):.0%} / {np.mean(r):.3f}" for m, r in ratios.items()
        }
        out.append(
            f"| {label} | {graphs} | {evaluated} | {cell['heft']} | {cell['blind']} | "
            f"{np.mean(ratios['pardnn']):.3f} | {np.mean(ratios['fast']):.3f} |"
        )
    return out


def wide_branches(
    branches: int = 4, batch: int = 512, d: int = 1024, hidden: int = 2048, depth: int = 2
) -> Graph:
    """A training step with ``branches`` independent towers of ``depth`` dense + GELU layers
    over one input, summed into a classifier: wide, heavy and parallel by construction."""
    net = zoo.Net("wide")
    x = net.input("x", (batch, d))
    outs = []
    for b in range(branches):
        h = x
        for layer in range(depth):
            h = net.dense(h, hidden if layer % 2 == 0 else d, name=f"b{b}.fc{layer}")
            h = net.gelu(h, name=f"b{b}.act{layer}")
        outs.append(h)
    total = outs[0]
    for o in outs[1:]:
        total = net.add(total, o)
    logits = net.dense(total, 10, name="head")
    xent = net.softmax_xent(logits, net.input("labels", (batch,), dtype="int32"))
    return net.build(loss=xent, training=True, optimizer="sgd")
