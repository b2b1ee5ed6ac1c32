"""Classic parallelization strategies written as tilings, costed like the planner's.

* data parallel: parameters (and optimizer state) replicated, everything else split by
  batch (axis 0) — SoyBean's ``T_data``;
* model parallel: parameters and their gradients split on axis 0 (R), activations on
  axis 1 (C: features/channels), activation gradients replicated — ``T_model``;
* one weird trick (Krizhevsky 2014): data parallel for the convolutional part (4-D
  tensors and conv parameters), model parallel for the fully connected part;
* Megatron-style: dense weights alternately column- then row-split (conv weights by
  output then input channels), the remaining tensors tiled optimally by the DP.

The same rule is applied at every cut (a split the tile can no longer take falls back
to replication), so e.g. data parallelism on 8 devices cuts the batch three times.

>>> from spartan.dnn.zoo import mlp
>>> g = mlp(400, [300] * 4, activation=None, bias=False, loss=False)
>>> data_parallel(g, 1, unit="elements").total
540000.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from spartan.dnn.graph import Graph, Phase, Tensor, TensorKind
from spartan.dnn.tiling.forms import REP, graph_shapes, splittable
from spartan.dnn.tiling.kcut import batch_inputs, pins_for
from spartan.dnn.tiling.onecut import one_cut
from spartan.dnn.tiling.plan import Plan, evaluate, halve

Rule = Callable[[Tensor], int]


def param_of(graph: Graph) -> dict[str, str]:
    """Map every parameter-like tensor (param, its gradient and partial gradients,
    optimizer state) to its parameter."""
    owner: dict[str, str] = {}
    for op in graph.ops_in(Phase.UPDATE):
        p, dp, *states = op.inputs
        for t in (p, dp, *states):
            owner[t] = p
    for name in graph.tensors:
        base = name.split("#")[0]
        if base != name and base in owner:
            owner[name] = owner[base]
    for param in graph.params():
        owner.setdefault(param.name, param.name)
    return owner


def _apply(
    graph: Graph, k: int, rule: Rule, unit: str, name: str, fixed: Mapping[str, int] | None
) -> Plan:
    fixed = batch_inputs(graph) if fixed is None else dict(fixed)
    shapes = graph_shapes(graph)
    cuts = []
    for _ in range(k):
        cut = {}
        for t, tensor in graph.tensors.items():
            a = fixed[t] if t in fixed else rule(tensor)
            cut[t] = a if a == REP or splittable(shapes[t], a) else REP
        cuts.append(cut)
        shapes = halve(shapes, cut)
    return evaluate(graph, cuts, unit, name=name, local_inputs=True)


def data_parallel(
    graph: Graph, k: int, unit: str = "bytes", fixed: Mapping[str, int] | None = None
) -> Plan:
    owner = param_of(graph)
    return _apply(graph, k, lambda t: REP if t.name in owner and t.kind is not TensorKind.GRADIENT else 0, unit, "data", fixed)  # fmt: skip


def _model_rule(graph: Graph) -> Rule:
    owner = param_of(graph)

    def rule(t: Tensor) -> int:
        if t.name in owner:
            return 0
        if t.kind is TensorKind.ACTIVATION:
            return 1 if t.ndim >= 2 else REP
        return REP

    return rule


def model_parallel(
    graph: Graph, k: int, unit: str = "bytes", fixed: Mapping[str, int] | None = None
) -> Plan:
    return _apply(graph, k, _model_rule(graph), unit, "model", fixed)


def one_weird_trick(
    graph: Graph, k: int, unit: str = "bytes", fixed: Mapping[str, int] | None = None
) -> Plan:
    owner = param_of(graph)
    model = _model_rule(graph)
    conv_params = {owner[t] for t in owner if graph.tensors[owner[t]].ndim == 4}
    for op in graph.ops:  # conv biases belong to the convolutional part
        if op.type == "bias_add" and graph.tensors[op.inputs[0]].ndim == 4:
            conv_params.add(op.inputs[1])

    def rule(t: Tensor) -> int:
        if t.name in owner:
            conv = owner[t.name] in conv_params
            return (REP if t.kind is not TensorKind.GRADIENT else 0) if conv else model(t)
        return 0 if t.ndim == 4 else model(t)

    return _apply(graph, k, rule, unit, "owt", fixed)


def megatron(
    graph: Graph, k: int, unit: str = "bytes", fixed: Mapping[str, int] | None = None
) -> Plan:
    """Column-then-row splits of consecutive weight layers; other tensors by the DP."""
    owner = param_of(graph)
    split: dict[str, int] = {}
    layer = 0
    for op in graph.ops_in(Phase.FORWARD):
        if op.type in ("matmul", "conv2d") and op.inputs[1] in owner:
            w = op.inputs[1]
            col = layer % 2 == 0
            if op.type == "matmul":
                split[w] = (
                    (0 if op.attrs.get("tb") else 1) if col else (1 if op.attrs.get("tb") else 0)
                )
            else:
                split[w] = 0 if col else 1
            layer += 1
    pins = batch_inputs(graph) if fixed is None else dict(fixed)
    for t, p in owner.items():
        if p in split:
            pins[t] = split[p]
    shapes = graph_shapes(graph)
    cuts = []
    for _ in range(k):
        res = one_cut(graph, shapes, pins_for(pins, shapes), unit)
        cuts.append(res.tiling)
        shapes = halve(shapes, res.tiling)
    return evaluate(graph, cuts, unit, name="megatron")


BASELINES: dict[str, Callable[..., Plan]] = {
    "data": data_parallel,
    "model": model_parallel,
    "owt": one_weird_trick,
    "megatron": megatron,
}
