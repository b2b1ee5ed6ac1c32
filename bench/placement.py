"""Placement planners side by side: ParDNN, HEFT, GA and the baselines, on zoo and generated graphs.

For every graph and device count K the memory per device is ``min(3/K, 0.8)`` x the peak of the
whole step on one device, so one device can never hold the step and the K devices together hold
3x it (2.4x at K=2). Each planner's placement is scored by the multi-device FIFO event simulation
(:func:`spartan.dnn.placement.simulate_placement`): makespan, speedup over one (unbounded) device, the worst
device's peak as a fraction of its memory, and whether every device fits. Then ParDNN's planning
time against graph size, and agreement with exhaustive search on small random graphs.

Then the ParDNN thesis's own experiments (bench/placement_paper.py): batch-size scaling against
data parallelism (Table 6.1), the refinement ablation (§6.4.1) and HEFT on heterogeneous devices,
and a placed step executed on Ray workers. A plain run writes ``bench/out/placement.md``;
``--save`` writes the tracked ``bench/results/placement.md``.

    python bench/placement.py            # default, ~10 minutes on 2 cores
    python bench/placement.py --quick    # a few minutes
    python bench/placement.py --large    # adds 50k-node graphs
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from time import perf_counter

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout

from bench.placement_paper import (  # noqa: E402
    batch_scaling,
    heterogeneous,
    refinement_ablation,
    wide_branches,
)
from bench.provenance import run_header  # noqa: E402
from spartan.dnn import zoo  # noqa: E402
from spartan.dnn.hardware import V100  # noqa: E402
from spartan.dnn.placement import (  # noqa: E402
    Machine,
    NodeKind,
    TaskGraph,
    exhaustive,
    heft,
    place,
    random_dnn,
    simulate_placement,
)
from spartan.dnn.placement.execute import (  # noqa: E402
    calibrate,
    profile_ops,
    random_values,
    run_serial,
    run_step,
    simulated_step,
)  # noqa: E402
from spartan.dnn.placement.generator import small_dag  # noqa: E402

log = logging.getLogger("spartan")

PLANNERS = ["single", "round_robin", "contiguous", "random", "heft", "genetic", "pardnn"]


def progress(items: list, desc: str) -> Iterable:
    """tqdm when interactive, log lines otherwise."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(items, desc=desc)

    def logged() -> Iterable:
        for i, item in enumerate(items):
            log.info("%s %d/%d", desc, i + 1, len(items))
            yield item

    return logged()


def zoo_graphs(quick: bool) -> list[tuple[str, Callable[[], object]]]:
    graphs = [
        ("alexnet b128", lambda: zoo.alexnet(128)),
        ("vgg16 b64", lambda: zoo.vgg16(64)),
        ("resnet50 b64", lambda: zoo.resnet(50, 64)),
    ]
    if not quick:
        graphs += [
            ("inception_v4 b32", lambda: zoo.inception_v4(32)),
            ("lstm 4x1024 b64 s20", lambda: zoo.rnn(4, 1024, 64, 20)),
            ("bert_large b8", lambda: zoo.bert_large(8)),
        ]
    return graphs


def tight_machine(tg: TaskGraph, k: int, link_bw: float) -> tuple[Machine, float, int]:
    """Machine of k devices whose memory forces partitioning; also the 1-device makespan/peak."""
    one = simulate_placement(
        tg, np.zeros(tg.n, dtype=np.int64), Machine(1, memory=1e30, link_bw=link_bw)
    )
    memory = min(3.0 / k, 0.8) * float(one.peak[0])
    return Machine(k, memory=memory, link_bw=link_bw), one.makespan, int(one.peak[0])


def memory_floor(tg: TaskGraph) -> int:
    """Bytes some device must hold at once in any placement: the largest op's inputs plus its
    output, all resident while it runs (ops are never split, so no placement goes below)."""
    into = np.bincount(tg.dst, weights=tg.nbytes, minlength=tg.n)
    own = np.where(tg.kind == NodeKind.REFERENCE, 0, tg.mem)
    return int((into + own).max()) if tg.n else 0


def run_graph(
    name: str, tg: TaskGraph, devices: list[int], ga_max: int, link_bw: float
) -> list[dict]:
    rows = []
    floor = memory_floor(tg)
    for k in devices:
        machine, single_time, single_peak = tight_machine(tg, k, link_bw)
        for method in PLANNERS:
            if method == "genetic" and tg.n > ga_max:
                continue
            opts: dict = {}
            if method == "genetic":
                opts = dict(population=16, generations=15, seeds=[heft(tg, machine)])
            if method == "pardnn":
                opts = dict(stats={})
            p = place(tg, machine, method, **opts)
            rows.append(
                dict(
                    graph=name,
                    n=tg.n,
                    k=k,
                    method=method,
                    makespan=p.makespan,
                    speedup=single_time / p.makespan if p.makespan else 1.0,
                    peak=float(p.peak.max()) / machine.memory,
                    feasible=p.feasible,
                    plan_s=p.plan_seconds,
                    mem_gb=machine.memory / 1e9,
                    single_gb=single_peak / 1e9,
                    impossible=floor > machine.memory,
                    stats=opts.get("stats"),
                )
            )
    return rows


def placement_table(rows: list[dict]) -> list[str]:
    out = [
        "| graph | nodes | K | mem/dev GB (1-dev peak GB) | "
        + " | ".join(PLANNERS)
        + " | ParDNN vs RR | ParDNN vs HEFT |",
        "|" + "---|" * (len(PLANNERS) + 6),
    ]
    keys = sorted({(r["graph"], r["n"], r["k"]) for r in rows}, key=lambda x: (x[1], x[0], x[2]))
    for graph, n, k in keys:
        by = {r["method"]: r for r in rows if (r["graph"], r["k"]) == (graph, k)}
        cells = []
        for m in PLANNERS:
            r = by.get(m)
            if r is None:
                cells.append("–")
                continue
            mark = "" if r["feasible"] else " ✗"
            cells.append(f"{r['speedup']:.2f}× / {r['peak']:.2f}{mark}")
        pd, rr, hf = by["pardnn"], by["round_robin"], by["heft"]
        some = next(iter(by.values()))
        floor = " ‡" if some["impossible"] else ""
        out.append(
            f"| {graph} | {n} | {k}{floor} | {some['mem_gb']:.2f} ({some['single_gb']:.2f}) | "
            + " | ".join(cells)
            + f" | {rr['makespan'] / pd['makespan']:.2f}× | {hf['makespan'] / pd['makespan']:.2f}× |"
        )
    return out


def planning_time_table(rows: list[dict]) -> list[str]:
    out = [
        "| nodes | K | ParDNN total s | slicing | mapping | refinement | memory repair | nodes moved | HEFT s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted((r for r in rows if r["method"] == "pardnn" and r["graph"].startswith("random")),
                    key=lambda r: (r["n"], r["k"])):  # fmt: skip
        s = r["stats"]
        heft_s = next(
            x["plan_s"]
            for x in rows
            if (x["graph"], x["k"], x["method"]) == (r["graph"], r["k"], "heft")
        )
        out.append(
            f"| {r['n']} | {r['k']} | {r['plan_s']:.2f} | {s['slicing_s']:.2f} | {s['mapping_s']:.2f} | "
            f"{s['refinement_s']:.2f} | {s['memory_s']:.2f} | {s['memory_moved']} | {heft_s:.2f} |"
        )
    return out


def small_graph(rng: np.random.Generator, n: int) -> TaskGraph:
    """A random DAG of n ops (edge probability 0.3), times and sizes varying 10x."""
    return small_dag(rng, n)


def agreement(graphs: int, n: int, devices: list[int], seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    methods = ["pardnn", "heft", "genetic", "round_robin", "contiguous"]
    out = [
        "| K | graphs | placements each | "
        + " | ".join(f"{m} optimal / mean ratio" for m in methods)
        + " | optimum vs 1 device | share of placements beating 1 device |",
        "|" + "---|" * (len(methods) + 5),
    ]
    for k in devices:
        ratio = {m: [] for m in methods}
        gain, beat, evaluated = [], [], 0
        for _ in progress(range(graphs), f"exhaustive K={k}"):
            tg = small_graph(rng, n)
            machine = Machine(k, memory=1e12, link_bw=12e9)
            _, info = exhaustive(tg, machine)
            evaluated = info["evaluated"]
            best = info["makespan"]
            one = simulate_placement(tg, np.zeros(n, dtype=np.int64), machine).makespan
            gain.append(one / best)
            beat.append(float((info["all_makespans"] < one - 1e-15).mean()))
            for m in methods:
                opts = dict(population=16, generations=15) if m == "genetic" else {}
                ratio[m].append(place(tg, machine, m, **opts).makespan / best)
        cells = [
            f"{np.mean(np.isclose(ratio[m], 1.0)):.0%} / {np.mean(ratio[m]):.3f}" for m in methods
        ]
        out.append(
            f"| {k} | {graphs} | {evaluated} | "
            + " | ".join(cells)
            + f" | {np.mean(gain):.2f}× | {np.mean(beat):.0%} |"
        )
    return out


def executed_steps(workers: int, repeats: int) -> list[str]:
    """Place two graphs with each planner, run the step on Ray workers, compare with the
    simulator and with the same step on one worker.

    The MLP overlaps only in its backward pass (weight and input gradients); the wide graph
    has independent heavy branches and is placed from the op times measured inside a worker,
    as ParDNN places from a profile; a hand placement (branch b on worker b % K) is the
    reference for what the planners could find. Runs of the placements are interleaved so load
    from other processes hits them alike."""
    import ray

    import spartan

    # A private local instance (address="local"), even if another Ray runs on this machine.
    ray.init(
        address="local",
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    be = spartan.init(backend="ray", num_workers=workers)
    out: list[str] = []
    try:
        cost = calibrate(be, nbytes=1 << 24, repeats=repeats)
        out += [
            f"{workers} Ray workers ({workers} CPUs). Calibrated: task overhead "
            f"{cost.task_overhead * 1e3:.2f} ms, copy latency {cost.latency * 1e3:.2f} ms, "
            f"{cost.bandwidth / 1e9:.2f} GB/s. Simulated = the FIFO simulation with the op times "
            "measured inside a worker (+ overhead) and those link costs; speedup = the `single` "
            "row's measured step / this row's.",
            "",
            "| graph | placement | max abs diff vs NumPy | measured step ms (median) | speedup vs one worker "
            "| simulated ms | measured/simulated | MB between workers | measured peak MB per worker |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        graphs = [
            ("MLP 512 x [2048]x4 -> 10", zoo.mlp(512, [2048, 2048, 2048, 2048, 10]), False),
            ("wide: 4 branches x 2 dense(2048)+GELU, b512 d1024", wide_branches(), True),
        ]
        for label, g, from_profile in graphs:
            values = random_values(g, seed=0)
            ref, _ = run_serial(g, values)
            op_seconds = profile_ops(g, values, be, repeats=repeats)
            if from_profile:
                times = {op.name: t + cost.task_overhead for op, t in zip(g.ops, op_seconds)}
                tg = TaskGraph.from_graph(g, op_time=lambda op, times=times: times[op.name])
                machine = Machine(
                    workers, memory=1e30, link_bw=cost.bandwidth, latency=cost.latency
                )
            else:
                tg = TaskGraph.from_graph(g, V100)
                one = simulate_placement(
                    tg,
                    np.zeros(tg.n, dtype=np.int64),
                    Machine(1, memory=1e30, link_bw=V100.link_bw),
                )
                machine = Machine.of(V100, workers, memory=0.8 * float(one.peak[0]))
            methods = ("single", "round_robin", "heft", "pardnn")
            assign = {m: place(tg, machine, m).assign for m in methods}
            if from_profile:  # the obvious placement: branch b on worker b % K, the rest on 0
                hand = [
                    int(n[1]) % workers if n[:1] == "b" and n[1:2].isdigit() else 0
                    for n in tg.names
                ]
                methods += ("by branch (hand)",)
                assign["by branch (hand)"] = tg.colocate(np.array(hand))
            runs: dict[str, list] = {m: [] for m in methods}
            for _ in range(repeats):
                for m in methods:
                    runs[m].append(run_step(g, tg, assign[m], values, backend=be))
            base = float(np.median([r.seconds for r in runs["single"]]))
            for m in methods:
                diff = max(float(np.abs(runs[m][0].outputs[k] - ref[k]).max()) for k in ref)
                measured = float(np.median([r.seconds for r in runs[m]]))
                sim = simulated_step(g, assign[m], list(op_seconds), cost)
                peaks = [round(b / 1e6, 1) for b in runs[m][0].peak_bytes]
                out.append(
                    f"| {label} | {m} | {diff:.1e} | {measured * 1e3:.1f} | {base / measured:.2f}× | "
                    f"{sim.makespan * 1e3:.1f} | {measured / sim.makespan:.2f} | "
                    f"{runs[m][0].bytes_moved / 1e6:.1f} | {peaks} |"
                )
    finally:
        spartan.shutdown()
        ray.shutdown()
    return out


EXECUTED_NOTES = (
    "Speedup needs workers that run at once: the local backend runs each task when it is "
    "submitted, one after another in the driver (the debugging backend), so there a placement "
    "can only add copies. On Ray, the MLP's backward pass has independent products (each "
    "layer's weight and input gradients), which two workers overlap. The wide graph's four "
    "branches are independent by construction, yet only the hand placement (branch b on worker "
    "b % 2, 17 MB between workers) beat one worker; the planners' placements move 6-14x more "
    "bytes between the branches and the head and run at about twice their simulated time. The "
    "simulator starts a copy when its producer ends; on the Ray backend a piece is requested "
    "by an actor call that runs after every call sent earlier to its owner, and the step is "
    "sent whole before the wait, so a reader waits for the owner's earlier queue too. The "
    "calibrated bandwidth is meaningless when the large fetch is no slower than the small one "
    "(shown as 16777216 GB/s: the simulator then treats copies as free). Timings vary with the "
    "load of other processes (load average in the header)."
)


def _range(xs: list[float]) -> str:
    return f"{min(xs):.2f}–{max(xs):.2f}×" if xs else "–"


def paper_sections(
    paper: dict[str, tuple[list[str], dict[str, list[float]]]], rows: list[dict]
) -> list[str]:
    """The thesis's experiments: a paper | ours | why table, then each experiment's table."""
    if not paper:
        return ["(thesis experiments skipped: --no-paper)", ""]
    refine_lines, gains = paper["refine"]
    hetero_lines = paper["hetero"][0]
    batch_lines, ratios = paper["batch"]
    pardnn_rows = [r for r in rows if r["method"] == "pardnn"]
    rr = {(r["graph"], r["k"]): r for r in rows if r["method"] == "round_robin"}
    vs_rr = [rr[(r["graph"], r["k"])]["makespan"] / r["makespan"] for r in pardnn_rows]
    moved = [r["stats"]["memory_moved"] / r["n"] for r in pardnn_rows if r["stats"]]
    big = [r for r in pardnn_rows if r["graph"].startswith("random") and r["n"] >= 10_000]
    geo = float(np.exp(np.mean(np.log(vs_rr)))) if vs_rr else float("nan")
    best_dp = max(ratios["pardnn"], default=float("nan"))
    best_bound = max(ratios["bound"], default=float("nan"))
    return [
        "## The ParDNN thesis's results: paper | ours | why different",
        "",
        "| result | paper | ours | why different |",
        "|---|---|---|---|",
        f"| ParDNN vs round-robin (step time) | ~2× on average (Fig. 6.6, RR + step 2) | "
        f"geometric mean {geo:.2f}× ({_range(vs_rr)}) over the table above; "
        f"{_range(gains['rr'])} against RR + memory repair in the refinement table | "
        "the gain is what RR loses to communication and imbalance: large on graphs with a high "
        "communication/computation ratio (LSTM, ResNet), small on chains (AlexNet, VGG: any "
        "placement runs at the critical path) and on our random DAGs (RR's interleaving already "
        "balances them); the thesis's TensorFlow graphs on DGX-2 had CCR 0.6–1.6 |",
        f"| refinement stage | 5–25% (§6.4.1) | thesis refinements {_range(gains['thesis'])}; "
        f"with ours (moves off the emulated schedule's critical path) {_range(gains['ours'])} | "
        "the thesis's node switching shortens the communication-weighted critical path, but "
        "device contention sets most of our makespans (the busiest device, not that path); "
        "where mapping is already at the lower bound max(critical path, work / K) (AlexNet, "
        "VGG) nothing is left to earn. Moves off the schedule's own critical path, each kept "
        "only when the emulated step gets shorter, recover the rest |",
        f"| batch size over ideal data parallelism | up to 16× (use case 1), > 9× on average "
        f"(Table 6.1) | ParDNN at most {best_dp:.2g}× ; the memory bound at most "
        f"{best_bound:.2g}× | in our graphs activation bytes grow linearly with the batch, so the "
        "only saving over data parallelism is not replicating the weights and their gradients "
        "(large for WRN, small for GPT-2): no placement can beat the memory-bound column. The "
        "thesis's TensorFlow graphs had outputs that do not grow with the batch (batch as the "
        "inner matmul dimension, §6.2.1), which is where its superlinear scaling comes from; "
        "ParDNN's memory repair also stops short of the bound at large K (table below) |",
        f"| nodes moved by memory repair | 8% on average | {100 * np.mean(moved):.0f}% on average "
        "(main table) | our memory per device is set to force partitioning (min(3/K, 0.8) x "
        "the one-device peak), tighter than the thesis's largest batch that fits |",
        f"| planning time | 18–117 s for 10k–190k nodes | "
        f"{max((r['plan_s'] for r in big), default=float('nan')):.0f} s at most for "
        "10k–20k nodes | pure Python on a shared 2-core VM; same stages and complexity |",
        "",
        "## Batch-size scaling (Table 6.1): largest power-of-two batch that fits",
        "",
        "V100 32 GiB per device (the thesis's DGX-2), 10% headroom for ParDNN's repair; a "
        "placement fits when no device's simulated peak exceeds 32 GiB. Ideal DP = K x the "
        "largest batch one device fits (the thesis's reference). Memory bound = the largest "
        "batch whose one-device peak is at most K x 28.8 GiB and whose largest op fits one "
        "device. ParDNN runs with a schedule-refinement budget of 8 simulations here.",
        "",
        *batch_lines,
        "",
        "## Refinement (§6.4.1): makespans relative to ParDNN without refinement",
        "",
        "Memory per device as in the main table; every placement ends with memory repair. "
        "Columns are the column's makespan / unrefined ParDNN's (below 1 = faster); CCR = total "
        "communication / total computation; lower bound = max(critical path without "
        "communication, work / K): no placement goes below it.",
        "",
        *refine_lines,
        "",
        "## HEFT on heterogeneous devices (exhaustive search as the reference)",
        "",
        "Random 8-op DAGs; Xeon = 2.8 TFLOP/s, V100 = 15.7 TFLOP/s (speed 5.6), 12 GB/s PCIe "
        "between them. Ratios are makespan / the exhaustive optimum over all K^n placements; "
        "speed-blind planners plan as if the devices were identical and are scored on the real "
        "machine. ParDNN, like the thesis, assumes identical devices.",
        "",
        *hetero_lines,
        "",
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes, under a minute")
    ap.add_argument("--large", action="store_true", help="also 50k-node generated graphs")
    ap.add_argument("--devices", type=int, nargs="+", default=[2, 4, 8, 16])
    ap.add_argument("--ga-max-nodes", type=int, default=3000, help="skip the GA on larger graphs")
    ap.add_argument("--no-execute", action="store_true", help="skip the executed step on Ray")
    ap.add_argument(
        "--sizes", type=int, nargs="+", help="generated graph sizes (overrides defaults)"
    )
    ap.add_argument("--no-zoo", action="store_true", help="skip the zoo graphs")
    ap.add_argument("--no-exhaustive", action="store_true", help="skip exhaustive-search agreement")
    ap.add_argument("--no-paper", action="store_true", help="skip the thesis experiments")
    ap.add_argument(
        "--execute-only", action="store_true", help="only the executed step on Ray workers"
    )
    ap.add_argument(
        "--save", action="store_true", help="write bench/results/ (default: bench/out/)"
    )
    ap.add_argument("--out", help="results file (overrides --save)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("spartan").setLevel(logging.INFO)
    sizes = [1000, 5000] if args.quick else [1000, 5000, 10000, 20000]
    if args.large:
        sizes.append(50000)
    if args.sizes:
        sizes = args.sizes
    link_bw = V100.link_bw
    t0 = perf_counter()
    if args.execute_only:
        executed = executed_steps(2, 3 if args.quick else 5)
        command = " ".join(["python bench/placement.py", *(sys.argv[1:] if argv is None else argv)])
        text = "\n".join(
            [
                "## A placed step executed on spartan workers (Ray) vs the simulator",
                "",
                run_header(command, f"{perf_counter() - t0:.0f} s"),
                "",
                *executed,
                "",
                EXECUTED_NOTES,
                "",
            ]
        )
        print(text)
        out = ROOT / "bench" / "out" / "placement_execute.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        return
    rows: list[dict] = []
    for name, build in progress([] if args.no_zoo else zoo_graphs(args.quick), "zoo graphs"):
        rows += run_graph(
            name, TaskGraph.from_graph(build(), V100), args.devices, args.ga_max_nodes, link_bw
        )
    for size in progress(sizes, "generated graphs"):
        rows += run_graph(
            f"random {size}", random_dnn(size, seed=size), args.devices, args.ga_max_nodes, link_bw
        )
    exh = (
        []
        if args.no_exhaustive
        else agreement(6 if args.quick else 20, 9 if args.quick else 10, [2, 3])
    )
    paper: dict[str, tuple[list[str], dict[str, list[float]]]] = {}
    if not args.no_paper:
        paper["refine"] = refinement_ablation([2, 4, 8], link_bw)
        paper["hetero"] = (heterogeneous(6 if args.quick else 12), {})
        paper["batch"] = batch_scaling(
            [1, 2, 4] if args.quick else [1, 2, 4, 8, 16],
            ["pardnn", "round_robin", "contiguous", "heft"],
        )
    executed = [] if args.no_execute else executed_steps(2, 3 if args.quick else 5)
    elapsed = perf_counter() - t0
    command = " ".join(["python bench/placement.py", *(sys.argv[1:] if argv is None else argv)])
    pardnn_rows = [r for r in rows if r["method"] == "pardnn"]
    rr = {(r["graph"], r["k"]): r for r in rows if r["method"] == "round_robin"}
    summary = [
        f"- ParDNN fits memory in {sum(r['feasible'] for r in pardnn_rows)}/{len(pardnn_rows)} configurations; "
        f"round-robin in {sum(r['feasible'] for r in rr.values())}/{len(rr)}; "
        f"one device in 0/{len(rr)} (by construction).",
        f"- ParDNN makespan / round-robin makespan: geometric mean "
        f"{np.exp(np.mean([np.log(r['makespan'] / rr[(r['graph'], r['k'])]['makespan']) for r in pardnn_rows])):.3f}, "
        f"worst {max(r['makespan'] / rr[(r['graph'], r['k'])]['makespan'] for r in pardnn_rows):.3f}.",
    ] if pardnn_rows else []  # fmt: skip
    lines = [
        "# Placement planners (simulated)",
        "",
        run_header(command, f"{elapsed:.0f} s"),
        "",
        f"Devices: V100 roofline op times, {link_bw / 1e9:.0f} GB/s links, "
        "memory per device = min(3/K, 0.8) x the one-device peak (one device never fits).",
        "",
        "Cells: speedup over one unbounded device (simulated makespan ratio) / worst device peak as a "
        "fraction of its memory; ✗ = does not fit; ‡ = no placement can fit, because some op's inputs "
        "plus output exceed one device (ops are not split). Last columns: how much "
        "faster ParDNN is than round-robin and HEFT. The GA is seeded with HEFT (population 16, 15 generations) and skipped "
        f"above {args.ga_max_nodes} nodes.",
        "",
        *summary,
        "",
        *placement_table(rows),
        "",
        "## Planning time vs graph size (generated graphs)",
        "",
        *planning_time_table(rows),
        "",
        "## Agreement with exhaustive search (random DAGs, placements up to device renaming)",
        "",
        *(exh or ["(skipped: --no-exhaustive)"]),
        "",
        *paper_sections(paper, rows),
        "## A placed step executed on spartan workers (Ray) vs the simulator",
        "",
        *(executed or ["(skipped: --no-execute)"]),
        "",
        EXECUTED_NOTES,
        "",
    ]
    text = "\n".join(lines)
    print(text)
    out = (
        Path(args.out)
        if args.out
        else ROOT / "bench" / ("results" if args.save else "out") / "placement.md"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
