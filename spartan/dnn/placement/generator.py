"""Random training-step graphs shaped like DNNs, from a few nodes to 50k+, for benchmarks.

The forward pass is a chain of fork-join blocks (1..``max_branches`` parallel branches of 1..3
ops each, joined by an add), each compute op reading a weight with probability
``param_prob``. The backward pass mirrors it: every forward op gets an input-gradient op that
reads the saved forward inputs, and every weighted op a weight-gradient op and an in-place SGD
update (a REFERENCE node anchored to the weight). Times and sizes are log-normal around the
given means, so memory has the shape of training (weights resident, activations alive from the
forward op until its backward use).

>>> tg = random_dnn(1000, seed=0)
>>> 900 <= tg.n <= 1100, random_dnn(1000, seed=0).comp.tolist() == tg.comp.tolist()
(True, True)
"""

from __future__ import annotations

import numpy as np

from spartan.dnn.placement.taskgraph import NodeKind, TaskGraph

__all__ = ["random_dnn", "small_dag"]


def small_dag(rng: np.random.Generator, n: int, *, varied_sizes: bool = True) -> TaskGraph:
    """A small random DAG of ``n`` ops for exact checks and benchmarks: each edge
    ``i -> j`` (``i < j``) present with probability 0.3 and carrying 1-9 MB, op times
    0.1-1 ms, outputs of 1-9 MB (``varied_sizes``) or all 1 MB.

    >>> small_dag(np.random.default_rng(0), 6).n
    6
    """
    edges = [
        (i, j, int(rng.integers(1, 10) * 1e6))
        for j in range(1, n)
        for i in range(j)
        if rng.random() < 0.3
    ]
    comp = rng.uniform(1e-4, 1e-3, n)
    mem = rng.integers(1, 10, n) * 10**6 if varied_sizes else [10**6] * n
    return TaskGraph([f"op{i}" for i in range(n)], comp, mem, [0] * n, edges)


def random_dnn(
    nodes: int,
    seed: int = 0,
    *,
    max_branches: int = 3,
    param_prob: float = 0.7,
    op_time: float = 2e-4,
    activation_bytes: float = 1 << 20,
    param_bytes: float = 2 << 20,
    sigma: float = 0.6,
) -> TaskGraph:
    """A random DNN-like training graph of about ``nodes`` nodes (deterministic in ``seed``)."""
    if nodes < 8:
        raise ValueError(f"nodes must be >= 8, got {nodes}")
    if max_branches < 1 or not 0 <= param_prob <= 1:
        raise ValueError("max_branches must be >= 1 and param_prob in [0, 1]")
    rng = np.random.default_rng(seed)
    names: list[str] = []
    comp: list[float] = []
    mem: list[int] = []
    kind: list[int] = []
    anchor: list[int] = []
    edges: list[tuple[int, int, int]] = []

    def lognormal(mean: float) -> float:
        return float(mean * rng.lognormal(-sigma * sigma / 2, sigma))

    def node(name: str, t: float, b: int, k: NodeKind = NodeKind.NORMAL, anc: int = -1) -> int:
        names.append(name)
        comp.append(t)
        mem.append(b)
        kind.append(k)
        anchor.append(anc)
        return len(names) - 1

    # Forward: record (op, inputs, weight) to mirror in the backward pass.
    fwd: list[tuple[int, list[int], int]] = []
    x = node("input", 0.0, int(lognormal(activation_bytes)))
    per_op = 2 + 3 * param_prob  # fwd + dgrad, and param + wgrad + update when weighted
    budget = max(2, int((nodes - 2) / per_op))
    while len(fwd) < budget:
        branches = int(rng.integers(1, max_branches + 1))
        tails = []
        for _ in range(branches):
            h = x
            for _ in range(int(rng.integers(1, 4))):
                ins = [h]
                w = -1
                if rng.random() < param_prob:
                    w = node(f"w{len(fwd)}", 0.0, int(lognormal(param_bytes)), NodeKind.RESIDUAL)
                    ins.append(w)
                op = node(f"f{len(fwd)}", lognormal(op_time), int(lognormal(activation_bytes)))
                edges.extend((i, op, mem[i]) for i in ins)
                fwd.append((op, [h], w))
                h = op
            tails.append(h)
        if len(tails) > 1:
            join = node(f"add{len(fwd)}", 0.1 * lognormal(op_time), mem[tails[0]])
            edges.extend((t, join, mem[t]) for t in tails)
            fwd.append((join, tails, -1))
            x = join
        else:
            x = tails[0]
    loss = node("loss", lognormal(op_time), 4)
    edges.append((x, loss, mem[x]))
    # Backward: the gradient of an op's output is the sum over its consumers' input-gradients.
    grads: dict[int, list[int]] = {x: [loss]}
    for op, inputs, w in reversed(fwd):
        g_in = grads.get(op, [])
        dx = node(f"d{names[op]}", lognormal(op_time), sum(mem[i] for i in inputs))
        edges.extend((g, dx, mem[g]) for g in g_in)
        edges.extend((i, dx, mem[i]) for i in inputs)
        if w >= 0:
            edges.append((w, dx, mem[w]))
            dw = node(f"dw{names[op]}", lognormal(op_time), mem[w])
            edges.extend((g, dw, mem[g]) for g in g_in)
            edges.extend((i, dw, mem[i]) for i in inputs)
            upd = node(f"sgd{names[op]}", 0.05 * lognormal(op_time), 0, NodeKind.REFERENCE, w)
            edges.append((dw, upd, mem[dw]))
            edges.extend((r, upd, 0) for r in (op, dx))  # write after the weight's last reads
        for i in inputs:
            grads.setdefault(i, []).append(dx)
    return TaskGraph(names, comp, mem, kind, edges, anchor)
