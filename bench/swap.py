"""SwapAdvisor in simulation, beside the paper's numbers: V100 constants (PCIe 3, 12 GB/s).

1. Training: per model, normalized throughput (ideal / simulated time) against the memory
   ratio (peak need without swapping / device memory): 1.0 (no squeeze), 2.0, and the
   paper's 16 GiB V100. SwapAdvisor (the genetic search) beside the baselines, all on the
   same size-class allocator model: ODSwap (on-demand LRU with learned prefetch),
   vDNN-like, TFLMS-like; plus ODSwap on an idealized byte-budget allocator.
2. ResNet-152 inference: seconds per batch by memory limit (the paper's Table 2).
3. Ablation (``--ablation``): joint vs schedule-only vs allocation-only search vs the best
   of as many random samples, all from random starts, equal evaluation budgets.
4. Executed (``--execute``): plans run with a spartan worker (local backend, then Ray) as
   the memory-limited device and the driver as host memory; the worker's measured peak
   bytes and the step's numbers against NumPy's unconstrained step.

Tables go to stdout and ``bench/out/swap.md`` (ignored by git); ``--save`` writes
``bench/results/swap.md`` instead.

    python bench/swap.py --ablation         # short budgets (a few minutes on 2 cores)
    python bench/swap.py --quick            # a smoke run
    python bench/swap.py --full --ablation  # population 144, 10 min per model
"""

from __future__ import annotations

import argparse
import datetime
import logging
import math
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from spartan.dnn import zoo  # noqa: E402
from spartan.dnn.graph import Graph  # noqa: E402
from spartan.dnn.hardware import V100, Accelerator, GiB  # noqa: E402
from spartan.dnn.swap import InfeasiblePlan, Workload  # noqa: E402
from spartan.dnn.swap.baselines import (  # noqa: E402
    best_random,
    odswap,
    odswap_byte_budget,
    tflms,
    vdnn,
)
from spartan.dnn.swap.genetic import GAConfig, search  # noqa: E402
from spartan.dnn.swap.plan import SWAP_IN, SWAP_OUT  # noqa: E402

log = logging.getLogger("spartan")
#: the tracked results folder (``--save``); a plain run writes into the ignored ``OUT``
RESULTS = Path(__file__).resolve().parent / "results"
OUT = Path(__file__).resolve().parent / "out"
MB = 2**20
KEEP = "<!-- hand-written below: kept across runs -->"


@dataclass(frozen=True)
class Model:
    name: str
    build: Callable[[], Graph]
    paper: str  # the paper's normalized throughput at 16 GB (SwapAdvisor / ODSwap)
    paper_stats: str  # the paper's Table 1: memory / ops / tensor sizes
    why: str  # what differs from the paper's setting, structurally


MODELS = [
    Model(
        "WResNet-152-10 b64",
        lambda: zoo.wresnet152(10, 64),
        "95% / 80%",
        "180 GB / 882 / 26",
        "graph has bn, relu and add as ops (1964 ops, 40 sizes); op times from a roofline",
    ),
    Model(
        "Inception-4 b16",
        lambda: zoo.inception_v4(16, scale=4),
        "~80% / SA 1.2-2.5x",
        "-",
        "peak need is 0.8x a V100 at b16, so only the 1.0x and 2.0x ratios squeeze it",
    ),
    Model(
        "Inception-4 b64",
        lambda: zoo.inception_v4(64, scale=4),
        "<=65% / SA 1.2-2.5x",
        "71 GB / 830 / 64",
        "scale 4 holds 159 GB (paper 71 GB: its width factor is not given), so a V100 is "
        "squeezed harder",
    ),
    Model(
        "RNN-8-8K b256 s10",
        lambda: zoo.rnn(8, 8192, 256, 10),
        "70-80% / <1%",
        "118 GB / 8594 / 7",
        "10 steps (paper's length not given; its 8594 ops suggest about 25); our graph order "
        "is layer by layer, the swap-friendly order MXNet's default lacked",
    ),
    Model(
        "BRNN-4-8K b128 s10",
        lambda: zoo.rnn(4, 8192, 128, 10, bidirectional=True),
        "70-80% / <1%",
        "99 GB / 9034 / 9",
        "as RNN; each direction's weights are 8K wide, so one step's weights and gradients "
        "alone fill a large part of the device",
    ),
    Model(
        "GPT-2 large b4 s1024",
        lambda: zoo.gpt2("large", 4),
        "(NasNet-25 b64: 53%)",
        "(NasNet-25: 193 GB / 5533 / 65)",
        "stands in for NasNet-25 (not in the zoo); no paper number for this model",
    ),
]

RATIOS = (1.0, 2.0)  # peak need / device memory, beside the 16 GiB V100 itself

PAPER_INFERENCE = {  # ResNet-152 inference, seconds per batch (thesis Table 5.2)
    64: {1: "0.024", 16: "N/A", 32: "N/A", 64: "N/A"},
    128: {1: "0.022", 16: "0.077", 32: "N/A", 64: "N/A"},
    192: {1: "0.018", 16: "0.044", 32: "N/A", 64: "N/A"},
    256: {1: "0.017", 16: "0.043", 32: "0.130", 64: "N/A"},
    512: {1: "0.017", 16: "0.040", 32: "0.067", 64: "0.238"},
    1024: {1: "0.017", 16: "0.040", 32: "0.067", 64: "0.121"},
}


def ratio(ideal: float, t: float) -> str:
    return f"{ideal / t:.0%}" if math.isfinite(t) and t > 0 else "n/a"


def baseline_time(fn, wl: Workload) -> float:
    try:
        return fn(wl).iteration_time()
    except InfeasiblePlan:
        return math.inf


def training_rows(accel: Accelerator, cfg: GAConfig, models: list[Model]) -> list[list[str]]:
    rows = []
    for m in models:
        g = m.build()
        full = Workload.from_graph(g, accel=accel)
        peak = full.peak_bytes()
        points = [(f"{r:.1f}x", peak / r) for r in RATIOS]
        if peak / accel.memory > 1.05:
            points.append((f"{peak / accel.memory:.1f}x (16 GiB)", float(accel.memory)))
        for label, capacity in points:
            wl = full.with_capacity(capacity)
            t0 = perf_counter()
            try:
                result = search(wl, cfg)
                sa, evaluated = result.best_time, result.history[-1].evaluated
            except ValueError:
                sa, evaluated = math.inf, 0
            search_s = perf_counter() - t0
            ideal = wl.compute_time
            od, odb, vd, tf = (
                baseline_time(f, wl) for f in (odswap, odswap_byte_budget, vdnn, tflms)
            )
            at_paper = "16 GiB" in label
            rows.append(
                [
                    m.name,
                    f"{len(g.ops)} / {len(wl.sizes)}",
                    label,
                    ratio(ideal, sa),
                    ratio(ideal, od),
                    ratio(ideal, odb),
                    ratio(ideal, vd),
                    ratio(ideal, tf),
                    f"{od / sa:.2f}x" if math.isfinite(od) and math.isfinite(sa) else "-",
                    m.paper if at_paper else "",
                    m.why if at_paper else "",
                    f"{search_s:.0f} s / {evaluated}",
                ]
            )
            log.info("%s", " | ".join(rows[-1]))
    return rows


def inference_rows(cfg: GAConfig) -> list[list[str]]:
    batches = (1, 16, 32, 64)
    graphs = {b: zoo.resnet(152, b, training=False) for b in batches}
    rows = []
    for mem_mb in PAPER_INFERENCE:
        row = [f"{mem_mb} MB"]
        for b in batches:
            wl = Workload.from_graph(graphs[b], accel=V100, capacity=mem_mb * MB)
            try:
                sa = f"{search(wl, cfg).best_time:.3f}"
            except ValueError:  # no pool fits: some op alone needs more memory
                sa = "N/A"
            od, odb = (baseline_time(f, wl) for f in (odswap, odswap_byte_budget))
            od_s, odb_s = (f"{t:.3f}" if math.isfinite(t) else "N/A" for t in (od, odb))
            row.append(f"{PAPER_INFERENCE[mem_mb][b]} / {sa} / {od_s} / {odb_s}")
        rows.append(row)
        log.info("inference %s", " | ".join(row))
    ideal = ["ideal (unlimited)"]
    ideal += [
        f"- / {Workload.from_graph(graphs[b], accel=V100).compute_time:.3f} / - / -"
        for b in batches
    ]
    peak = ["peak need without swapping"]
    peak += [
        f"{Workload.from_graph(graphs[b], accel=V100).peak_bytes() / MB:.0f} MB" for b in batches
    ]
    return rows + [ideal, peak]


ABLATION_MODELS = [
    # Smaller than the paper's, so that the search gets generations within the budget.
    ("RNN-2-2K b64 s5 at 3x", lambda: zoo.rnn(2, 2048, 64, 5), 3.0, "allocation only 7%"),
    (
        "Inception-4 b16 at 3x",
        lambda: zoo.inception_v4(16, scale=1),
        3.0,
        "allocation only 93%; GA +50% over best random",
    ),
]


def ablation_rows(cfg: GAConfig) -> list[list[str]]:
    """Joint search against schedule-only, allocation-only and the best of as many random
    samples as the joint search scored; all from random starts (the paper's setting)."""
    rows = []
    for name, build, r, paper in ABLATION_MODELS:
        full = Workload.from_graph(build(), accel=V100)
        wl = full.with_capacity(full.peak_bytes() / r)
        base = replace(cfg, heuristic_seeds=False)
        joint = search(wl, base)
        sched_only = search(wl, replace(base, search_allocation=False))
        alloc_only = search(wl, replace(base, search_schedule=False))
        n = joint.history[-1].evaluated
        _, rand_t = best_random(wl, n, seed=cfg.seed + 1)
        ideal = wl.compute_time
        od = baseline_time(odswap, wl)
        rows.append(
            [
                name,
                f"{wl.n_ops} / {len(wl.sizes)}",
                ratio(ideal, joint.best_time),
                f"{ratio(ideal, sched_only.best_time)} ({joint.best_time / sched_only.best_time:.0%})",
                f"{ratio(ideal, alloc_only.best_time)} ({joint.best_time / alloc_only.best_time:.0%})",
                f"{ratio(ideal, rand_t)} (GA {rand_t / joint.best_time - 1:+.0%})",
                ratio(ideal, joint.history[0].best),
                ratio(ideal, od),
                f"{n} / {len(joint.history) - 1}",
                paper,
            ]
        )
        log.info("ablation %s", " | ".join(rows[-1]))
    return rows


EXECUTE_MODELS = [
    ("MLP 256 x [1024]x4 -> 10", lambda: zoo.mlp(256, [1024, 1024, 1024, 1024, 10])),
    ("small CNN b32 (conv, relu, maxpool)", lambda: zoo.small_cnn(32)),
    ("every op of the IR (op_coverage b4)", lambda: zoo.op_coverage(4)),
]
EXECUTE_HEADER = [
    "model",
    "ops",
    "backend",
    "plan",
    "peak need (no swapping) kB",
    "worker memory limit kB",
    "worker peak kB (measured)",
    "swap-ins / outs per step",
    "kB to / from host per step",
    "max abs diff vs NumPy",
    "step ms (median of 3)",
]


def execute_rows(cfg: GAConfig) -> list[list[str]]:
    """Each model at two memory points -- the smallest valid pool (the graph's order) and
    half the peak need (a GA-searched plan) -- executed for 3 iterations with worker 0 as
    the device, on the local backend and on Ray; compared with NumPy's unconstrained run."""
    import ray

    import spartan
    from spartan.dnn.swap import PoolModel, plan_swaps
    from spartan.dnn.swap.executor import random_feeds, run_unconstrained
    from spartan.dnn.swap.workers import inplace_slack, run_on_worker

    cases = []
    for name, build in EXECUTE_MODELS:
        g = build()
        full = Workload.from_graph(g, accel=V100, keep=["loss:out"])
        pm = PoolModel(full)
        tight = full.with_capacity(pm.bytes(pm.smallest))
        smallest = plan_swaps(tight, tight.default_schedule(), PoolModel(tight).smallest)
        # half the peak need, or the smallest pool where one op's tensors need more
        half = full.with_capacity(max(full.peak_bytes() / 2, tight.capacity))
        searched = search(half, cfg).plan(half)
        ga_label = f"GA, {half.capacity / full.peak_bytes():.2f}x peak"
        feeds, state = random_feeds(g, seed=0)
        ref = run_unconstrained(g, feeds, state, iterations=3, keep=["loss:out"])
        cases.append((name, g, full, feeds, state, ref, [("smallest pool", smallest),
                                                         (ga_label, searched)]))  # fmt: skip
    rows = []
    for backend in ("local", "ray"):
        if backend == "ray":
            ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)  # fmt: skip
        be = spartan.init(backend=backend, num_workers=2)
        try:
            for name, g, full, feeds, state, ref, plans in cases:
                for label, plan in plans:
                    limit = int(plan.workload.capacity) + inplace_slack(plan)
                    got = run_on_worker(plan, g, feeds, state, 3, backend=be, memory_limit=limit)
                    diff = max(
                        max(float(np.max(np.abs(a["loss:out"] - b["loss:out"])))
                            for a, b in zip(ref.outputs, got.outputs, strict=True)),
                        max(float(np.max(np.abs(ref.state[k] - got.state[k]))) for k in ref.state),
                    )  # fmt: skip
                    moved = [
                        sum(plan.workload.nbytes[r] for r, k in zip(plan.ref, plan.kind,
                                                                    strict=True) if k == kind)
                        for kind in (SWAP_IN, SWAP_OUT)
                    ]  # fmt: skip
                    rows.append(
                        [
                            name,
                            str(len(g.ops)),
                            backend,
                            label,
                            f"{full.peak_bytes() / 1e3:,.0f}",
                            f"{limit / 1e3:,.0f}",
                            f"{got.peak_device_bytes / 1e3:,.0f}",
                            f"{plan.n_swap_in} / {plan.n_swap_out}",
                            f"{moved[0] / 1e3:,.0f} / {moved[1] / 1e3:,.0f}",
                            f"{diff:.1e}",
                            f"{1e3 * sorted(got.iteration_s)[1]:.0f}",
                        ]
                    )
                    log.info("execute %s", " | ".join(rows[-1]))
        finally:
            be.shutdown()
            if backend == "ray":
                ray.shutdown()
    return rows


GA_VS_RANDOM_HEADER = [
    "seed",
    "GA (first generation / 1/4 / 1/2 / all generations)",
    "best random sample, as many plans",
    "GA gain over best random",
    "plans / generations",
    "GA s / random s",
]


def ga_vs_random_rows(cfg: GAConfig, seeds: int, paper_model: bool = False) -> list[list[str]]:
    """The ablation's Inception-4 (b16, 3x squeeze) again with more generations and
    several seeds: the GA from random starts (no heuristic seeds) against the best of as
    many random samples (random order, pool and eviction rule: the GA's random individual),
    each seed's random samples drawn independently of the GA's. ``paper_model``: the
    thesis's Figure 4.4 model instead (Inception-V4, width scale 4, b32) on a 16 GiB V100."""
    if paper_model:
        full = Workload.from_graph(zoo.inception_v4(32, scale=4), accel=V100)
        wl = full.with_capacity(V100.memory)
    else:
        _, build, r, _ = ABLATION_MODELS[1]
        full = Workload.from_graph(build(), accel=V100)
        wl = full.with_capacity(full.peak_bytes() / r)
    ideal = wl.compute_time
    rows = []
    for seed in range(seeds):
        t0 = perf_counter()
        ga = search(wl, replace(cfg, heuristic_seeds=False, seed=seed))
        t1 = perf_counter()
        n = ga.history[-1].evaluated
        _, rand_t = best_random(wl, n, seed=1000 + seed)
        t2 = perf_counter()
        g = len(ga.history) - 1
        curve = [ga.history[i].best for i in (0, g // 4, g // 2, g)]
        rows.append(
            [
                str(seed),
                " / ".join(ratio(ideal, t) for t in curve),
                ratio(ideal, rand_t),
                f"{rand_t / ga.best_time - 1:+.0%}",
                f"{n} / {g}",
                f"{t1 - t0:.0f} / {t2 - t1:.0f}",
            ]
        )
        log.info("ga vs random %s", " | ".join(rows[-1]))
    return rows


def markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


TRAIN_HEADER = [
    "model",
    "ops / sizes",
    "memory ratio",
    "SwapAdvisor",
    "ODSwap",
    "ODSwap, byte-budget allocator",
    "vDNN-like",
    "TFLMS-like",
    "ODSwap time / SA time",
    "paper SA / ODSwap (16 GB)",
    "why different",
    "search (time / plans)",
]
ABLATION_HEADER = [
    "model",
    "ops / sizes",
    "joint",
    "schedule only (% of joint)",
    "allocation only (% of joint)",
    "best random sample (GA gain)",
    "first generation",
    "ODSwap",
    "plans / generations",
    "paper (of joint)",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="smoke run")
    mode.add_argument("--full", action="store_true", help="population 144, 10 min per search")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-write", action="store_true", help="write no file")
    ap.add_argument(
        "--save", action="store_true", help="write to bench/results/ (default: bench/out/)"
    )
    ap.add_argument("--ablation", action="store_true", help="add joint vs partial vs random")
    ap.add_argument("--execute", action="store_true", help="add plans run on spartan workers")
    ap.add_argument(
        "--ga-vs-random",
        type=int,
        metavar="GENERATIONS",
        help="add Inception-4's GA vs random sampling over 3 seeds, this many generations",
    )
    ap.add_argument(
        "--ga-population", type=int, help="population of --ga-vs-random (default: the ablation's)"
    )
    ap.add_argument(
        "--ga-paper-model",
        action="store_true",
        help="--ga-vs-random on the thesis's Figure 4.4 model (scale 4, b32, 16 GiB V100)",
    )
    ap.add_argument("--no-training", action="store_true", help="skip the training table")
    ap.add_argument("--only", help="comma-separated texts; train only models containing one")
    ap.add_argument("--no-inference", action="store_true", help="skip the inference table")
    ap.add_argument("--output", help="result file (default: swap.md in the folder written to)")
    args = ap.parse_args()
    if args.save and args.no_training and not args.output:
        ap.error("--save rewrites bench/results/swap.md: keep the training table (or --output)")
    folder = RESULTS if args.save else OUT
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    w = args.workers
    if args.full:
        train = GAConfig(population=144, budget_s=600, patience_s=300, workers=w)
        infer = GAConfig(population=144, budget_s=60, patience_s=30, workers=w)
        ablate = GAConfig(population=144, budget_s=600, patience_s=600, workers=w)
        label = "full: population 144, 600 s per training search, 60 s per inference cell"
    elif args.quick:
        train = GAConfig(population=8, budget_s=2, patience_s=2, workers=w)
        infer = GAConfig(population=8, budget_s=0.5, patience_s=0.5, workers=w)
        ablate = GAConfig(population=8, max_generations=2, budget_s=1e9, patience_s=1e9, workers=w)
        label = "quick: population 8, 2 s per training search, 0.5 s per inference cell"
    else:
        train = GAConfig(population=16, budget_s=5, patience_s=5, workers=w)
        infer = GAConfig(population=12, budget_s=1, patience_s=1, workers=w)
        ablate = GAConfig(population=16, max_generations=8, budget_s=1e9, patience_s=1e9, workers=w)
        label = (
            "short: population 16 and 5 s per training search (a few generations, not the "
            "paper's 30 min on 72 cores), 1 s per inference cell, ablation 8 generations"
        )
    for cfg in (train, infer, ablate):
        cfg.progress = False
    wanted = [x.strip().lower() for x in args.only.split(",")] if args.only else [""]
    models = [m for m in MODELS if any(x in m.name.lower() for x in wanted)]
    start = perf_counter()
    sections = []
    rows = [] if args.no_training else training_rows(V100, train, models)
    ok = sum(1 for r in rows if r[8] == "-" or float(r[8].rstrip("x")) >= 1.0 - 1e-9)
    title = (
        f"## Training on V100 ({V100.memory / GiB:.0f} GiB, host link {V100.host_bw / 1e9:.0f}"
        " GB/s per direction): normalized throughput (ideal / simulated) vs memory ratio"
    )
    if rows:
        sections.append(
            f"{title}\n\nMemory ratio = peak need without swapping / device memory. "
            f"SwapAdvisor >= ODSwap (same allocator model) in {ok} of {len(rows)} rows.\n\n"
            + markdown(TRAIN_HEADER, rows)
        )
        print(sections[-1])
    if not args.no_inference:
        title = (
            "## ResNet-152 inference on V100: seconds per batch by memory limit, "
            "paper (thesis Table 5.2) / SwapAdvisor / ODSwap / ODSwap on the byte-budget allocator"
        )
        md = markdown(
            ["memory", "batch 1", "batch 16", "batch 32", "batch 64"], inference_rows(infer)
        )
        sections.append(f"{title}\n\n{md}")
        print(sections[-1])
    if args.ablation:
        title = (
            "## Joint vs partial search from random starts, equal evaluation budgets (V100 "
            "constants; paper: without schedule search the RNN reaches 7% of the joint result, "
            "Inception-4 93%; the GA beats the best random sample by 50% on Inception-4)\n\n"
            "Partial searches fix the other half at the framework default: the graph's order, "
            "or the on-demand allocator's pool. Throughput vs ideal, and in parentheses as a "
            "share of the joint search's."
        )
        sections.append(f"{title}\n\n{markdown(ABLATION_HEADER, ablation_rows(ablate))}")
        print(sections[-1])
    if args.ga_vs_random:
        which = (
            "Inception-V4 scale 4 b32 on a 16 GiB V100 (the thesis's Figure 4.4 model)"
            if args.ga_paper_model
            else "Inception-4 b16 at 3x (longer than the ablation)"
        )
        title = (
            f"## GA vs random sampling from random starts, {which}; paper: the GA beats the "
            "best random sample by 50%\n\nThroughput "
            f"vs ideal; population {args.ga_population or ablate.population}, "
            f"{args.ga_vs_random} generations, "
            "mutation, selection and immigrants as in the ablation."
        )
        cfg = replace(ablate, max_generations=args.ga_vs_random)
        if args.ga_population:
            cfg = replace(cfg, population=args.ga_population)
        md = markdown(GA_VS_RANDOM_HEADER, ga_vs_random_rows(cfg, 3, args.ga_paper_model))
        sections.append(f"{title}\n\n{md}")
        print(sections[-1])
    if args.execute:
        title = (
            "## Plans executed on spartan workers: worker 0 is the device, the driver is host "
            "memory\n\nEach model planned at two memory points (the smallest valid pool in the "
            "graph's order; a GA-searched plan at half the peak need or the smallest pool, "
            "whichever is larger; V100 op times), run for 3 "
            "iterations on the local backend and on Ray (2 workers). Worker memory limit = the "
            "plan's device capacity plus one op's in-place updates (stored values are immutable, "
            "so an in-place update briefly holds old and new versions); the worker's measured "
            "peak is the backend's own byte counter. Max abs diff = the largest difference of "
            "the 3 losses and of every updated parameter from NumPy's run with no memory limit. "
            "The streams do not overlap on workers (one driver thread sends everything in "
            "order), so the step times check nothing about the plan's overlap."
        )
        sections.append(f"{title}\n\n{markdown(EXECUTE_HEADER, execute_rows(train))}")
        print(sections[-1])
    total = perf_counter() - start
    if not args.no_write:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        text = "\n\n".join(
            [
                "# SwapAdvisor benchmark (simulation)",
                f"Measured {stamp} on a 2-core {platform.machine()} machine (shared); "
                f"`python {' '.join(sys.argv)}` in {total:.0f} s. Budget: {label}. Op times: "
                "roofline of the V100 preset (`spartan.dnn.hardware`), copies at 12 GB/s, each "
                "direction independent (the paper's 20 GB/s duplex cap is not modelled). Every "
                "policy plans on the same size-class pool model; the byte-budget column is the "
                "idealized allocator the earlier comparison gave ODSwap.",
                *sections,
            ]
        )
        out = Path(args.output) if args.output else folder / "swap.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        # Hand-written sections (the analysis, the GPU run) follow KEEP and survive reruns.
        old = out.read_text() if out.exists() else ""
        kept = old[old.index(KEEP) :] if KEEP in old else ""
        out.write_text(text + "\n\n" + kept if kept else text + "\n")
        print(f"\nwrote {out} ({total:.0f} s)")


if __name__ == "__main__":
    main()
