"""Place a DNN training step on devices that cannot hold it alone, then run one on workers.

    python examples/placement.py                          # VGG-16 b64 on 4 simulated V100s
    python examples/placement.py --model resnet50 --devices 8 --memory 0.3
    python examples/placement.py --backend ray --workers 2  # the executed MLP step on Ray

Part 1 plans a zoo model with every planner (memory per device = ``--memory`` x the peak of
the whole step on one device) and prints each one's simulated step time, worst device
memory and planning time. Part 2 places a small MLP with ParDNN on ``--workers`` spartan
workers, runs the training step there (each op a task on its device's worker) and checks the
updated weights against the same step in NumPy.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

import spartan  # noqa: E402
from spartan.dnn import zoo  # noqa: E402
from spartan.dnn.hardware import V100  # noqa: E402
from spartan.dnn.placement import PLANNERS, Machine, TaskGraph, place, simulate_placement  # noqa: E402
from spartan.dnn.placement.execute import random_values, run_serial, run_step  # noqa: E402

MODELS = {
    "alexnet": lambda: zoo.alexnet(128),
    "vgg16": lambda: zoo.vgg16(64),
    "resnet50": lambda: zoo.resnet(50, 64),
    "inception_v4": lambda: zoo.inception_v4(32),
    "bert_large": lambda: zoo.bert_large(8),
}


def plan_model(name: str, devices: int, memory: float) -> None:
    tg = TaskGraph.from_graph(MODELS[name](), V100)
    one = simulate_placement(
        tg, numpy.zeros(tg.n, dtype=numpy.int64), Machine(1, memory=1e30, link_bw=V100.link_bw)
    )
    machine = Machine.of(V100, devices, memory=memory * float(one.peak[0]))
    print(
        f"{name}: {tg.n} nodes; one device: {one.makespan * 1e3:.1f} ms, peak {one.peak[0] / 1e9:.2f} GB; "
        f"{devices} x V100 with {machine.memory / 1e9:.2f} GB each"
    )
    print(f"{'planner':12} {'step ms':>9} {'speedup':>8} {'max mem':>8} {'fits':>5} {'plan s':>7}")
    for method in PLANNERS:
        opts = {"population": 16, "generations": 10} if method == "genetic" else {}
        p = place(tg, machine, method, **opts)
        print(
            f"{method:12} {p.makespan * 1e3:9.2f} {one.makespan / p.makespan:7.2f}x "
            f"{p.peak.max() / machine.memory:8.2f} {'yes' if p.feasible else 'NO':>5} {p.plan_seconds:7.2f}"
        )


def run_mlp(backend: str, workers: int) -> None:
    g = zoo.mlp(256, [512, 1024, 1024, 10])
    tg = TaskGraph.from_graph(g, V100)
    one = simulate_placement(
        tg, numpy.zeros(tg.n, dtype=numpy.int64), Machine(1, memory=1e30, link_bw=V100.link_bw)
    )
    machine = Machine.of(V100, workers, memory=min(0.8, 2.0 / workers) * float(one.peak[0]))
    p = place(tg, machine, "pardnn")
    values = random_values(g, seed=0)
    spartan.init(backend=backend, num_workers=workers)
    try:
        run = run_step(g, tg, p.assign, values)
    finally:
        spartan.shutdown()
    ref, _ = run_serial(g, values)
    worst = max(float(numpy.abs(run.outputs[k] - ref[k]).max()) for k in ref)
    print(
        f"\nMLP step on {workers} {backend} workers (ParDNN placement, ops per worker "
        f"{numpy.bincount(p.assign[len(tg.source_tensors) :], minlength=workers).tolist()}): "
        f"{run.seconds * 1e3:.1f} ms, {run.bytes_moved / 1e6:.1f} MB between workers, "
        f"peak MB per worker {[round(b / 1e6, 1) for b in run.peak_bytes]}; "
        f"max |difference| to the NumPy step {worst:.2e}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", choices=sorted(MODELS), default="vgg16")
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--memory", type=float, default=0.5, help="memory per device / one-device peak")
    ap.add_argument("--backend", choices=["local", "ray"], default="local")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    if args.devices < 1 or args.workers < 1 or args.memory <= 0:
        ap.error("--devices and --workers must be >= 1 and --memory > 0")
    plan_model(args.model, args.devices, args.memory)
    run_mlp(args.backend, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
