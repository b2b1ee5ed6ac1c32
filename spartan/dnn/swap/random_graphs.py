"""Random training-like graphs and swap problems, for property tests and experiments.

>>> wl, schedule, alloc = random_problem(3)
>>> from spartan.dnn.swap.planner import is_topological
>>> is_topological(wl, schedule)
True
"""

from __future__ import annotations

import random

from spartan.dnn.graph import Graph, Phase, TensorKind
from spartan.dnn.swap.genetic import mutate_schedule
from spartan.dnn.swap.pool import Allocation, PoolModel
from spartan.dnn.swap.workload import Workload

__all__ = ["random_training_graph", "random_problem"]


def random_training_graph(seed: int, n_forward: int, with_inputs: bool = False) -> Graph:
    """Forward ops over earlier activations and fresh parameters (1-4 byte tensors), then
    one in-place ``sgd`` update per parameter reading a random activation as its gradient.
    Without ``with_inputs`` the data comes from a producer op instead of an INPUT tensor."""
    rng = random.Random(seed)
    g = Graph(f"rand{seed}")
    acts: list[str] = []
    params: list[str] = []
    if with_inputs:
        g.add_tensor("x", (rng.choice([1, 2, 4]),), TensorKind.INPUT, "uint8")
        acts.append("x")
    else:
        g.add_tensor("a0", (rng.choice([1, 2, 4]),), TensorKind.ACTIVATION, "uint8")
        g.add_op("data", "toy", [], ["a0"], Phase.FORWARD)
        acts.append("a0")
    for i in range(n_forward):
        ins = rng.sample(acts, min(len(acts), rng.choice([1, 1, 2])))
        if rng.random() < 0.6:
            p = f"w{i}"
            g.add_tensor(p, (rng.choice([1, 2, 3, 4]),), TensorKind.PARAM, "uint8")
            params.append(p)
            ins.append(p)
        out = f"a{i + 1}"
        g.add_tensor(out, (rng.choice([1, 2, 3, 4]),), TensorKind.ACTIVATION, "uint8")
        g.add_op(f"f{i}", "toy", ins, [out], Phase.FORWARD)
        acts.append(out)
    for p in params:
        g.add_op(f"sgd:{p}", "sgd", [p, rng.choice(acts[1:])], [p], Phase.UPDATE)
    return g


def random_problem(
    seed: int, with_inputs: bool = False
) -> tuple[Workload, list[int], Allocation | None]:
    """A random graph of 2-12 forward ops with random op times and host bandwidth, a device
    between twice the largest op footprint and all tensor bytes, a random topological
    schedule and a random pool (None when none fits)."""
    rng = random.Random(seed)
    g = random_training_graph(seed, rng.randint(2, 12), with_inputs)
    times = {o.name: rng.choice([0.5, 1.0, 2.0]) for o in g.ops}
    wl = Workload.from_graph(g, op_times=times, capacity=1e9, host_bw=rng.choice([1.0, 4.0]))
    need = max(sum(wl.nbytes[t] for t in wl.op_tensors(o)) for o in range(wl.n_ops))
    wl = wl.with_capacity(rng.uniform(2 * need, max(2 * need, wl.total_bytes) + 1))
    schedule = mutate_schedule(wl.default_schedule(), wl.op_preds, wl.op_succs, 1.0, rng)
    return wl, schedule, PoolModel(wl).random(rng)
