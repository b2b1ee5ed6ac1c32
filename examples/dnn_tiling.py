"""Plan hybrid data/model parallelism for a DNN and compare it with the classic strategies.

python examples/dnn_tiling.py                   # VGG-16, batch 256, 8 devices
python examples/dnn_tiling.py --model alexnet --batch 1024 --devices 16
python examples/dnn_tiling.py --model mlp --run # also run the step on spartan workers
"""

from __future__ import annotations

import argparse

import numpy as np

import spartan
from spartan.dnn import zoo
from spartan.dnn.execute_tiling import execute, random_values, serial_step
from spartan.dnn.hardware import K80
from spartan.dnn.tiling import BASELINES, plan

MODELS = {
    "mlp": lambda b: zoo.mlp(b, [1024, 2048, 2048, 1000]),
    "cnn": lambda b: zoo.small_cnn(b),
    "alexnet": zoo.alexnet,
    "vgg16": zoo.vgg16,
    "resnet50": lambda b: zoo.resnet(50, b),
}


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--model", choices=sorted(MODELS), default="vgg16")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--devices", type=int, default=8, help="a power of two")
    ap.add_argument(
        "--run", action="store_true", help="execute one step on spartan workers (small models)"
    )
    args = ap.parse_args()

    graph = MODELS[args.model](args.batch)
    print(graph)
    best = plan(graph, args.devices)
    print(best.summary())

    gpu = K80.with_(link_bw=20e9)  # the SoyBean paper's p2.8xlarge: PCIe 20 GB/s
    k = args.devices.bit_length() - 1
    print(f"\n{'strategy':<10} {'MB/iteration':>14} {'vs SoyBean':>11} {'est. step (ms)':>15}")
    for name, p in [("soybean", best), *((n, f(graph, k)) for n, f in BASELINES.items())]:
        step = p.step_time(gpu)["step_s"] * 1e3
        print(f"{name:<10} {p.total / 1e6:>14,.1f} {p.total / best.total:>10.2f}x {step:>15,.1f}")

    if args.run:
        be = spartan.init(backend="local", num_workers=args.devices)
        values = random_values(graph, seed=0)
        run = execute(best, values, be)
        ref = serial_step(graph, values)
        err = max(float(np.max(np.abs(run.values[t.name] - ref[t.name]))) for t in graph.params())
        print(
            f"\nexecuted on {args.devices} workers: max |param - serial NumPy| = {err:.1e}; "
            f"bytes between workers measured {run.measured_bytes:,}, predicted {run.predicted_bytes:,} "
            f"(cost model {run.model_bytes:,.0f})"
        )
        spartan.shutdown()


if __name__ == "__main__":
    main()
