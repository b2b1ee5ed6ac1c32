"""Train an MLP that needs more memory than the device has, with a SwapAdvisor plan.

1. Build the training graph (forward, backward, momentum updates) and its peak memory need.
2. Give the device a fraction of that memory; search a (schedule, pool) with the genetic
   algorithm; print the plan against the baselines; save its timeline and the GA's
   convergence curve as PNGs.
3. Execute the plan for a few iterations: on the emulated CPU device (default; numerics
   must equal an unconstrained run exactly, peak device bytes within the limit), or with
   ``--gpu`` on a CUDA device with CuPy (op times and host bandwidth profiled on the GPU
   first; prints measured throughput against an unlimited run and the pool's peak bytes).

    python examples/swap_training.py                  # CPU, ~30 s
    python examples/swap_training.py --gpu            # GPU with CuPy, < 5 min on an H100
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout

from spartan.dnn import zoo  # noqa: E402
from spartan.dnn.hardware import V100  # noqa: E402
from spartan.dnn.swap import PoolModel, Workload, plan_swaps  # noqa: E402
from spartan.dnn.swap.baselines import BASELINES  # noqa: E402
from spartan.dnn.swap.executor import (  # noqa: E402
    profile_cupy,
    random_feeds,
    run_cupy,
    run_emulated,
    run_unconstrained,
)
from spartan.dnn.swap.genetic import GAConfig, search  # noqa: E402
from spartan.dnn.swap.plan import InfeasiblePlan  # noqa: E402
from spartan.dnn.swap.timeline import plot_convergence, plot_timeline  # noqa: E402

KEEP = ["loss:out"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--gpu", action="store_true", help="execute with CuPy on a CUDA device")
    ap.add_argument("--batch", type=int, help="batch size (default 64 on CPU, 8192 on GPU)")
    ap.add_argument("--width", type=int, help="layer width (default 512 on CPU, 8192 on GPU)")
    ap.add_argument("--layers", type=int, default=8, help="hidden layers (default 8)")
    ap.add_argument("--ratio", type=float, default=2.5, help="memory need / device limit")
    ap.add_argument("--budget", type=float, default=20.0, help="GA seconds (default 20)")
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--out", default="swap_example", help="folder for the PNGs")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    batch = args.batch or (8192 if args.gpu else 64)
    width = args.width or (8192 if args.gpu else 512)

    g = zoo.mlp(batch, [width] * (args.layers + 1), optimizer="momentum")
    feeds, state = random_feeds(g, seed=0)
    if args.gpu:
        op_times, host_bw = profile_cupy(g, feeds, state)
        print(f"profiled {len(op_times)} ops on the GPU; host link {host_bw / 1e9:.1f} GB/s")
        full = Workload.from_graph(g, op_times=op_times, capacity=1, host_bw=host_bw, keep=KEEP)
    else:
        full = Workload.from_graph(g, accel=V100, capacity=1, keep=KEEP)
    need = full.peak_bytes()
    limit = need / args.ratio
    # Kernels allocate their result (and a temporary or two) before it is copied into the
    # pool object: keep room for three of the largest tensors outside the pool.
    headroom = 3 * max(full.nbytes)
    wl = full.with_capacity(limit - headroom)
    print(
        f"{g.name}: {len(g.ops)} ops, peak need {need / 2**20:.0f} MiB without swapping; "
        f"device limit {limit / 2**20:.0f} MiB ({args.ratio:.1f}x less), pool <= "
        f"{wl.capacity / 2**20:.0f} MiB"
    )

    result = search(wl, GAConfig(population=24, budget_s=args.budget, patience_s=args.budget))
    plan = result.plan(wl)
    print(f"\nsimulated s/iteration (ideal = {wl.compute_time:.4f}):")
    print(f"  SwapAdvisor  {result.best_time:.4f}  ({wl.compute_time / result.best_time:.0%})")
    for name, fn in BASELINES.items():
        if name == "ideal":
            continue
        try:
            t = fn(wl).iteration_time()
            print(f"  {name:12s} {t:.4f}  ({wl.compute_time / t:.0%})")
        except InfeasiblePlan:
            print(f"  {name:12s} infeasible (parameters do not fit)")
    out = Path(args.out)
    print(f"  pictures: {plot_timeline(plan, out / 'timeline.png')}, ", end="")
    print(plot_convergence(result.history, out / "convergence.png", ideal=wl.compute_time))

    if args.gpu:
        run_gpu(g, feeds, state, plan, wl, limit, args.iterations)
    else:
        run_cpu(g, feeds, state, plan, limit, args.iterations)


def run_cpu(g, feeds, state, plan, limit, iterations) -> None:
    ref = run_unconstrained(g, feeds, state, iterations, keep=KEEP)
    got = run_emulated(plan, g, feeds, state, iterations)
    same = all(
        np.array_equal(a["loss:out"], b["loss:out"])
        for a, b in zip(ref.outputs, got.outputs, strict=True)
    ) and all(np.array_equal(ref.state[k], got.state[k]) for k in ref.state)
    print("\nemulated device:")
    print(f"  losses        {[round(float(o['loss:out']), 5) for o in got.outputs]}")
    print(f"  equal to the unconstrained run: {same}")
    print(
        f"  device bytes: pool {got.pool_bytes / 2**20:.1f} MiB, peak live "
        f"{got.peak_live_bytes / 2**20:.1f} MiB, limit {limit / 2**20:.1f} MiB"
    )
    print(f"  stream busy s: { {k: round(v, 3) for k, v in got.busy_s.items()} }")
    if not same or got.pool_bytes > limit:
        raise SystemExit("emulated run disagrees with the reference or exceeds the limit")


def run_gpu(g, feeds, state, plan, wl, limit, iterations) -> None:
    unlimited_wl = wl.with_capacity(float("inf"))
    unlimited = plan_swaps(unlimited_wl, plan.schedule, PoolModel(unlimited_wl).unlimited())
    base = run_cupy(unlimited, g, feeds, state, iterations)
    got = run_cupy(plan, g, feeds, state, iterations, memory_limit=limit)
    t_base = statistics.median(base.iteration_s[1:] or base.iteration_s)
    t_plan = statistics.median(got.iteration_s[1:] or got.iteration_s)
    close = all(
        np.allclose(a["loss:out"], b["loss:out"], rtol=1e-3)
        for a, b in zip(base.outputs, got.outputs, strict=True)
    )
    print(f"\nCuPy on {os.environ.get('CUDA_VISIBLE_DEVICES', 'GPU 0')}:")
    print(f"  losses (swapping)  {[round(float(o['loss:out']), 5) for o in got.outputs]}")
    print(f"  losses (unlimited) {[round(float(o['loss:out']), 5) for o in base.outputs]}")
    print(f"  numerics match the unlimited run: {close}")
    print(
        f"  s/iteration: swapping {t_plan:.4f} (simulated {plan.iteration_time():.4f}), "
        f"unlimited {t_base:.4f} -> throughput {t_base / t_plan:.0%} of unlimited"
    )
    print(
        f"  device bytes: pool {got.pool_bytes / 2**20:.0f} MiB, CuPy pool peak "
        f"{got.peak_device_bytes / 2**20:.0f} MiB, limit {limit / 2**20:.0f} MiB, "
        f"unlimited run {base.peak_device_bytes / 2**20:.0f} MiB"
    )


if __name__ == "__main__":
    main()
