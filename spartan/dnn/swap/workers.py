"""Run a swap plan on a spartan worker: the worker is the device, the driver is host memory.

One worker (``worker``, default 0) plays the memory-limited device. The plan's nodes are
replayed in id order (a topological order of the augmented graph): a swap-in puts the
tensor's host copy on the worker, a compute node is one task on the worker, a swap-out
fetches the worker's copy into the host store, and each node's releases delete the
tensors that leave the device after it. So the worker holds exactly the plan's residents;
the backend's own counter of the bytes a worker holds (``stats().per_worker[w]
["peak_bytes"]``) shows it stayed within the plan's pool (plus, briefly, the old versions
of the tensors one op updates in place: stored values are immutable). The three streams do not
overlap here (one driver thread sends everything in order): this checks the plan's
memory behaviour and numerics on real workers (the local backend or Ray), not its
timing; :func:`spartan.dnn.swap.executor.run_cupy` overlaps copies on a GPU.

>>> import numpy as np, random, spartan
>>> from spartan.dnn import zoo
>>> from spartan.dnn.swap import PoolModel, Workload, plan_swaps
>>> from spartan.dnn.swap.executor import random_feeds, run_emulated
>>> g = zoo.mlp(4, [6, 5, 3])
>>> feeds, state = random_feeds(g, seed=0)
>>> wl = Workload.from_graph(g, op_times={o.name: 1.0 for o in g.ops}, capacity=900,
...                          host_bw=1.0, keep=["loss:out"])
>>> plan = plan_swaps(wl, wl.default_schedule(), PoolModel(wl).random(random.Random(1)))
>>> _ = spartan.init(backend="local", num_workers=1)
>>> got = run_on_worker(plan, g, feeds, state, iterations=2)
>>> ref = run_emulated(plan, g, feeds, state, iterations=2)
>>> bool(np.array_equal(got.outputs[1]["loss:out"], ref.outputs[1]["loss:out"]))
True
>>> 0 < got.peak_device_bytes <= plan.pool_bytes + inplace_slack(plan)
True
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from spartan.dnn.graph import Graph
from spartan.dnn.kernels import OpTask
from spartan.dnn.swap.executor import RunResult
from spartan.dnn.swap.plan import SWAP_IN, SWAP_OUT, SwapPlan

__all__ = ["run_on_worker", "inplace_slack"]


def inplace_slack(plan: SwapPlan) -> int:
    """Bytes a worker may hold beyond the pool: an op that updates tensors in place holds
    their old and new versions until the old ones are deleted (stored values are
    immutable), so the most in-place bytes of any one op."""
    wl = plan.workload
    return max((sum(wl.nbytes[t] for t in ts) for ts in wl.op_inplace), default=0)


def run_on_worker(
    plan: SwapPlan,
    graph: Graph,
    feeds: Mapping[str, np.ndarray],
    state: Mapping[str, np.ndarray],
    iterations: int = 1,
    *,
    backend: Any = None,
    worker: int = 0,
    memory_limit: int | None = None,
    step: int | None = None,
) -> RunResult:
    """Execute ``plan`` with spartan worker ``worker`` as the device and the driver's
    memory as the host; see the module docstring. ``memory_limit`` is the device memory
    the worker has for the plan (default: the plan's pool plus :func:`inplace_slack`).
    Raises ValueError for a byte-budget plan (no pool to stay within), a pool larger than
    ``memory_limit`` or a worker that does not exist, and RuntimeError when the worker's
    byte counter went above ``memory_limit`` during the run (its peak is a running
    maximum, so the check after the run misses no instant). ``step`` is the 1-based
    optimizer step of the first iteration (iteration ``i`` runs ``step + i``), which a
    graph trained with Adam needs.
    """
    import spartan

    be = backend if backend is not None else spartan.backend.current()
    if plan.pool_bytes is None:
        raise ValueError("run_on_worker runs size-class plans only (not byte-budget baselines)")
    limit = plan.pool_bytes + inplace_slack(plan) if memory_limit is None else memory_limit
    if plan.pool_bytes + inplace_slack(plan) > limit:
        raise ValueError(
            f"the plan's pool ({plan.pool_bytes} B, plus {inplace_slack(plan)} B for one op's "
            f"in-place updates) does not fit memory_limit={limit} B"
        )
    if not 0 <= worker < be.nworkers:
        raise ValueError(f"worker {worker} does not exist ({be.nworkers} workers)")
    wl = plan.workload
    names = wl.tensor_names
    tid = {n: i for i, n in enumerate(names)}
    ops = [graph.op(n) for n in wl.op_names]
    kernels = [OpTask(op) for op in ops]
    host: dict[int, np.ndarray] = {}
    for source in (feeds, state):
        for n, v in source.items():
            if n in tid:
                host[tid[n]] = np.array(v, copy=True)
    version = [0] * wl.n_tensors  # a new key per write: stored values are immutable
    on_device: set[int] = set()

    def key(t: int) -> tuple:
        return ("swap-device", names[t], version[t])

    def drop(t: int) -> None:
        if t in on_device:
            be.delete([key(t)])
            on_device.discard(t)

    outputs: list[dict[str, np.ndarray]] = []
    times: list[float] = []
    be.wait()
    be.reset_stats()
    # the worker may hold other arrays' blocks (the session's): the plan's memory is
    # what it holds above them
    held_before = int(be.stats().per_worker[worker]["held_bytes"])
    for it in range(iterations):
        t0 = time.perf_counter()
        if step is not None:  # the iteration's optimizer step (Adam's bias correction)
            kernels = [OpTask(op, step + it) for op in ops]
        # Start: the plan's initial residents on the device (kept there since the last
        # iteration, which the steady-state plan guarantees), everything else on the host.
        for t in sorted(on_device - set(plan.initial)):
            drop(t)  # kept outputs, and parameters the plan copied out at the end
        for t in sorted(plan.initial):
            if t not in on_device:
                be.put(key(t), host[t], worker)
                on_device.add(t)
        for t in range(wl.n_tensors):
            if not wl.persistent[t] and t not in on_device and not wl.source[t]:
                host.pop(t, None)  # last iteration's activations are dead
        for i, kind in enumerate(plan.kind):
            ref = plan.ref[i]
            if kind == SWAP_IN:
                if ref not in host:
                    raise RuntimeError(f"plan error: {names[ref]!r} swapped in with no host copy")
                be.put(key(ref), host[ref], worker)
                on_device.add(ref)
            elif kind == SWAP_OUT:
                host[ref] = np.asarray(be.fetch(key(ref)))
            else:
                op = ops[ref]
                ins = [tid[n] for n in op.inputs]
                missing = [names[t] for t in ins if t not in on_device]
                if missing:
                    raise RuntimeError(f"plan error: {op.name!r} runs without {missing}")
                in_keys = [key(t) for t in ins]
                old = {t: key(t) for t in (tid[n] for n in op.outputs) if t in on_device}
                out_ts = [tid[n] for n in op.outputs]
                for t in out_ts:
                    version[t] += 1
                be.submit(worker, kernels[ref], in_keys, [key(t) for t in out_ts])
                if old:
                    be.delete(list(old.values()))  # the in-place input's previous version
                on_device.update(out_ts)
            for t, _slot in plan.release[i]:
                drop(t)
        be.wait()
        times.append(time.perf_counter() - t0)
        kept = {}
        for t in range(wl.n_tensors):
            if wl.keep[t]:
                kept[names[t]] = (
                    np.asarray(be.fetch(key(t))) if t in on_device else np.array(host[t])
                )
        outputs.append(kept)
        if it == iterations - 1:
            break
    final = {}
    for t in range(wl.n_tensors):
        if wl.persistent[t]:
            final[names[t]] = np.asarray(be.fetch(key(t))) if t in on_device else host[t]
    stats = be.stats()
    peak = int(stats.per_worker[worker]["peak_bytes"]) - held_before
    for t in list(on_device):
        drop(t)
    be.wait()
    if peak > limit:
        raise RuntimeError(
            f"worker {worker} held {peak} B, more than its memory limit ({limit} B; the "
            f"plan's pool is {plan.pool_bytes} B)"
        )
    return RunResult(outputs, final, times, pool_bytes=plan.pool_bytes, peak_device_bytes=peak)
