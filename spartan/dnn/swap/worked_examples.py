"""The papers' worked examples as workloads (sizes in MB-units, one time unit per op/MB).

Figure 1 of SwapAdvisor (thesis Fig. 4.1): ``Data -> A0``; a left branch
``Conv1(A0, W1) -> A1`` and a right branch ``Conv2(A0, W2) -> A2 -> Conv3 -> A3 -> Conv4 ->
A4``; ``Concat(A1, A4) -> A5``. All tensors 1 MB except A2 and A5 (2 MB); a 10 MB device;
activations are kept for the (omitted) backward pass.

Figure 3: ``op1(W1) -> A1``, ``op2(W2) -> A2``, ``op3(A1, A2, W3) -> A3``; unit tensors and
a device of 4 units.

>>> wl = figure1_workload()
>>> wl.op_names, wl.sizes, wl.capacity
(('Data', 'Conv1', 'Conv2', 'Conv3', 'Conv4', 'Concat'), (1, 2), 10.0)
"""

from __future__ import annotations

from spartan.dnn.graph import Graph, Phase, TensorKind
from spartan.dnn.swap.pool import Allocation
from spartan.dnn.swap.workload import Workload

__all__ = [
    "figure1_graph",
    "figure1_workload",
    "figure3_workload",
    "LEFT_FIRST",
    "RIGHT_FIRST",
    "FINE_POOL",
    "COARSE_POOL",
]

LEFT_FIRST = ["Data", "Conv1", "Conv2", "Conv3", "Conv4", "Concat"]
RIGHT_FIRST = ["Data", "Conv2", "Conv3", "Conv4", "Conv1", "Concat"]
FINE_POOL = Allocation((0, 1), (8, 1))  # eight 1 MB objects and one 2 MB object
COARSE_POOL = Allocation((0, 0), (5,))  # five 2 MB objects


def _unit_graph(name: str, tensors: dict[str, tuple[int, TensorKind]], ops) -> Graph:
    g = Graph(name)
    for t, (mb, kind) in tensors.items():
        g.add_tensor(t, (mb,), kind, dtype="uint8")
    for op, ins, outs in ops:
        g.add_op(op, "toy", ins, outs, Phase.FORWARD)
    return g


def figure1_graph() -> Graph:
    """The Figure 1 graph in left-first order."""
    A, W = TensorKind.ACTIVATION, TensorKind.PARAM
    tensors = {f"W{i}": (1, W) for i in range(1, 5)}
    tensors.update({f"A{i}": (2 if i in (2, 5) else 1, A) for i in range(6)})
    ops = [
        ("Data", [], ["A0"]),
        ("Conv1", ["A0", "W1"], ["A1"]),
        ("Conv2", ["A0", "W2"], ["A2"]),
        ("Conv3", ["A2", "W3"], ["A3"]),
        ("Conv4", ["A3", "W4"], ["A4"]),
        ("Concat", ["A1", "A4"], ["A5"]),
    ]
    return _unit_graph("figure1", tensors, ops)


def figure1_workload() -> Workload:
    """Figure 1 on a 10 MB device: 1 time unit per op and per MB copied."""
    g = figure1_graph()
    return Workload.from_graph(
        g,
        op_times={o.name: 1.0 for o in g.ops},
        capacity=10,
        host_bw=1.0,
        keep=[f"A{i}" for i in range(6)],
    )


def figure3_workload() -> Workload:
    """Figure 3 on a device of 4 unit objects."""
    A, W = TensorKind.ACTIVATION, TensorKind.PARAM
    tensors = {n: (1, W if n[0] == "W" else A) for n in ("W1", "W2", "W3", "A1", "A2", "A3")}
    ops = [("op1", ["W1"], ["A1"]), ("op2", ["W2"], ["A2"]), ("op3", ["A1", "A2", "W3"], ["A3"])]
    g = _unit_graph("figure3", tensors, ops)
    return Workload.from_graph(g, op_times={o.name: 1.0 for o in g.ops}, capacity=4, host_bw=1.0)
