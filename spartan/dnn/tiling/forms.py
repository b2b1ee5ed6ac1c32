"""One-cut tilings, their conversion costs, and each op type's aligned tilings.

A *one-cut tiling* splits a tensor in two along one axis (``P_a``, written as the axis
number ``a``) or replicates it (:data:`REP`). An op's *aligned forms* are the tilings of
its inputs and outputs under which every device computes its half locally, with no
communication and no redundant work (SoyBean §4.2.1, §4.5). An output may be left as
:data:`RED` — each device holds a full-size partial sum that must still be reduced.

Conversion cost ``c(src -> dst)`` is the data the two devices need and do not hold
(the "ghost area"), summed over both devices, for a tensor of ``S`` elements::

    src \\ dst   P_a    P_b    r
    P_a          0     S/2    S       (b != a: each device holds a quarter of what it needs)
    r            0      0     0
    red          S      S     2S      (reduce-scatter; all-reduce)

>>> conversion(0, 1, 400.0), conversion(RED, REP, 400.0), conversion(REP, 0, 400.0)
(200.0, 800.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from spartan.dnn.graph import Graph, Op

REP = -1
"""Replicated: every device holds the whole tensor."""
RED = -2
"""Partial sums: every device holds a full-size summand (an op output form only)."""

Shapes = Mapping[str, tuple[int, ...]]


def tiling_name(t: int) -> str:
    """``"P0"``, ``"P1"``, ... ``"r"`` or ``"red"``."""
    return "r" if t == REP else "red" if t == RED else f"P{t}"


def matrix_name(t: int) -> str:
    """The paper's names for matrices: ``"R"`` (rows), ``"C"`` (columns), ``"r"``, ``"red"``."""
    return {0: "R", 1: "C", REP: "r", RED: "red"}.get(t, tiling_name(t))


def conversion(src: int, dst: int, size: float) -> float:
    """Elements moved (both devices together) to turn one-cut tiling ``src`` into ``dst``."""
    if dst == RED:
        raise ValueError("red is an op output form, never a conversion target")
    if src == dst or src == REP:
        return 0.0
    if src == RED:
        return 2.0 * size if dst == REP else size
    return size if dst == REP else size / 2


@dataclass(frozen=True)
class Form:
    """Aligned tilings of an op's inputs and outputs (by position)."""

    ins: tuple[int, ...]
    outs: tuple[int, ...]


def splittable(shape: tuple[int, ...], axis: int) -> bool:
    """Even tilings only: an axis can be halved when its length is even."""
    return 0 <= axis < len(shape) and shape[axis] >= 2 and shape[axis] % 2 == 0


# ---- form generators per op type ------------------------------------------------------


def _same_axis(op: Op, shapes: Shapes) -> list[Form]:
    """Element-wise ops: inputs and outputs share one split axis."""
    nd = len(shapes[op.outputs[0]])
    return [Form((a,) * len(op.inputs), (a,) * len(op.outputs)) for a in range(nd)]


def _contraction(left: tuple[int, bool], right: tuple[int, bool], batch: bool) -> list[Form]:
    """Forms of ``out = op(L) @ op(R)`` (Figure 6) with the operands at input positions
    ``left[0]``, ``right[0]`` transposed when ``left[1]``/``right[1]``. Returns forms over
    a two-input op, mapping logical rows/columns to tensor axes."""
    off = 1 if batch else 0

    def axes(transposed: bool) -> tuple[int, int]:  # (logical row axis, logical col axis)
        return (off + 1, off) if transposed else (off, off + 1)

    (li, lt), (ri, rt) = left, right
    lrow, lcol = axes(lt)
    rrow, rcol = axes(rt)
    combos = [
        ((lrow, REP), off),  # L rows split, R replicated -> out rows split
        ((REP, rcol), off + 1),  # L replicated, R cols split -> out cols split
        ((lcol, rrow), RED),  # contraction axis split -> partial sums
    ]
    if batch:
        combos.append(((0, 0), 0))
    forms = []
    for (tl, tr), out in combos:
        ins = [0, 0]
        ins[li], ins[ri] = tl, tr
        forms.append(Form(tuple(ins), (out,)))
    return forms


def _matmul(op: Op, shapes: Shapes) -> list[Form]:
    ta, tb = bool(op.attrs.get("ta")), bool(op.attrs.get("tb"))
    batch = op.type.startswith("batch_")
    if not op.type.endswith("_grad"):  # inputs (x, w): out = op(x) @ op(w)
        return _contraction((0, ta), (1, tb), batch)
    # Gradients of Y = A B with A = op(x), B = op(w): dA = dY B^T, dB = A^T dY.
    if op.attrs["wrt"] == 0:  # inputs (dy, w) -> dx
        if not ta:  # dx = dy @ op(w)^T
            return _contraction((0, False), (1, not tb), batch)
        return _contraction((1, tb), (0, True), batch)  # dx = op(w) @ dy^T
    if not tb:  # inputs (dy, x) -> dw = op(x)^T @ dy
        return _contraction((1, not ta), (0, False), batch)
    return _contraction((0, True), (1, ta), batch)  # dw = dy^T @ op(x)


def _conv2d(op: Op, shapes: Shapes) -> list[Form]:
    """Batch split (data parallel) or channel splits (model parallel); no spatial splits."""
    if op.type == "conv2d":  # (x, w) -> y
        table = [((0, REP), 0), ((REP, 0), 1), ((1, 1), RED)]
    elif op.attrs["wrt"] == 0:  # (dy, w) -> dx
        table = [((0, REP), 0), ((1, 0), RED), ((REP, 1), 1)]
    else:  # (dy, x) -> dw
        table = [((0, 0), RED), ((1, REP), 0), ((REP, 1), 1)]
    return [Form(ins, (out,)) for ins, out in table]


def _bias_add(op: Op, shapes: Shapes) -> list[Form]:
    c = op.attrs["axis"]
    nd = len(shapes[op.inputs[0]])
    if op.type == "bias_add":  # (x, b) -> y
        return [Form((a, 0 if a == c else REP), (a,)) for a in range(nd)]
    return [Form((a,), (0 if a == c else RED,)) for a in range(nd)]  # (dy) -> db


def _norm(op: Op, shapes: Shapes) -> list[Form]:
    """batchnorm: batch or channel splits; layernorm: any axis but the normalized last."""
    x = shapes[op.inputs[0]]  # x or dy: same shape
    if op.type.startswith("batchnorm"):
        # Batch statistics couple every sample, so only a channel split is exact; dbeta
        # (a plain sum of dy) may still split the batch into partial sums.
        dbeta = op.type == "batchnorm_grad" and op.attrs["wrt"] == 2
        axes = {0: REP, 1: 0} if dbeta else {1: 0}  # split axis -> (C,) scale/shift tiling
    else:
        axes = {a: REP for a in range(len(x) - 1)}
    forms = []
    for a, p in axes.items():
        reduced = RED if p == REP else p  # per-channel gradients of a batch split are partial
        if op.type in ("batchnorm", "layernorm"):  # (x, gamma, beta) -> y
            forms.append(Form((a, p, p), (a,)))
        elif op.attrs["wrt"] == 0:  # (dy, x, gamma) -> dx
            forms.append(Form((a, a, p), (a,)))
        elif op.attrs["wrt"] == 1:  # (dy, x) -> dgamma
            forms.append(Form((a, a), (reduced,)))
        else:  # (dy) -> dbeta
            forms.append(Form((a,), (reduced,)))
    return forms


def _broadcast_mask(op: Op, shapes: Shapes) -> list[Form]:
    """A mask tensor added to scores (or to their gradient): (scores, mask) -> scores.
    The mask splits with the scores on an axis where it has the scores' length and is
    replicated where it broadcasts (length 1, or an axis it lacks)."""
    nd = len(shapes[op.outputs[0]])
    mask = shapes[op.inputs[1]]
    forms = []
    for a in range(nd):
        ma = a - (nd - len(mask))
        forms.append(Form((a, REP if ma < 0 or mask[ma] == 1 else ma), (a,)))
    return forms


def _batch_or_channel(op: Op, shapes: Shapes) -> list[Form]:
    """Pooling (and its gradients): every tensor split on batch or on channels."""
    return [Form((a,) * len(op.inputs), (a,) * len(op.outputs)) for a in (0, 1)]


def _reshape_pairs(src: tuple[int, ...], dst: tuple[int, ...]) -> list[tuple[int, int]]:
    """Axis pairs whose halves hold the same elements: with equal products of the leading
    axes, both halvings cut every leading block in the middle."""
    return [
        (a, b)
        for a in range(len(src))
        for b in range(len(dst))
        if math.prod(src[:a]) == math.prod(dst[:b]) and src[a] % 2 == 0 and dst[b] % 2 == 0
    ]


def _view(op: Op, shapes: Shapes) -> list[Form]:
    """reshape/transpose (and gradients): split axes map through; replicated passes too
    (a view computes nothing, so a replicated view is not redundant work)."""
    src, dst = shapes[op.inputs[0]], shapes[op.outputs[0]]
    if op.type.startswith("transpose"):
        perm = op.attrs["perm"]
        if op.type == "transpose":
            pairs = [(perm[b], b) for b in range(len(perm))]
        else:
            pairs = [(b, perm[b]) for b in range(len(perm))]
    else:
        pairs = _reshape_pairs(src, dst)
    return [Form((a,), (b,)) for a, b in pairs] + [Form((REP,), (REP,))]


def _off_axis(op: Op, shapes: Shapes) -> list[Form]:
    """concat/slice/softmax (and gradients): any axis but the one operated on."""
    nd = len(shapes[op.outputs[0]])
    skip = nd - 1 if op.type.startswith("softmax") else op.attrs["axis"]
    return [Form((a,) * len(op.inputs), (a,) * len(op.outputs)) for a in range(nd) if a != skip]


def _xent(op: Op, shapes: Shapes) -> list[Form]:
    """Softmax cross-entropy: batch split only; the scalar loss is a partial sum."""
    if op.type == "softmax_xent":  # (logits, labels) -> loss
        return [Form((0, 0), (RED,))]
    ins = (REP, 0, 0) if len(op.inputs) == 3 else (0, 0)  # ([dloss], logits, labels)
    return [Form(ins, (0,))]


def _embedding(op: Op, shapes: Shapes) -> list[Form]:
    """Lookups split by ids (data), by embedding dim, or by vocabulary (partial sums)."""
    if op.type == "embedding":  # (ids, table) -> out
        ids_nd = len(shapes[op.inputs[0]])
        forms = [Form((a, REP), (a,)) for a in range(ids_nd)]
        return forms + [Form((REP, 1), (ids_nd,)), Form((REP, 0), (RED,))]
    ids_nd = len(shapes[op.inputs[1]])  # (dy, ids) -> dtable
    forms = [Form((a, a), (RED,)) for a in range(ids_nd)]
    return forms + [Form((ids_nd, REP), (1,))]


ELEMENTWISE = {"relu", "tanh", "sigmoid", "gelu", "add", "mul", "scale", "sgd", "momentum", "adam",
               "causal_mask", "attn_mask", "compare", "logical_not"}  # fmt: skip

_RULES: dict[str, Callable[[Op, Shapes], list[Form]]] = {
    "matmul": _matmul,
    "batch_matmul": _matmul,
    "conv2d": _conv2d,
    "bias_add": _bias_add,
    "batchnorm": _norm,
    "layernorm": _norm,
    "maxpool": _batch_or_channel,
    "avgpool": _batch_or_channel,
    "global_avgpool": _batch_or_channel,
    "reshape": _view,
    "transpose": _view,
    "concat": _off_axis,
    "slice": _off_axis,
    "softmax": _off_axis,
    "softmax_xent": _xent,
    "embedding": _embedding,
    "input_mask": _broadcast_mask,
    "masked_fill": _broadcast_mask,
}


def rule_for(op_type: str) -> Callable[[Op, Shapes], list[Form]]:
    base = op_type[: -len("_grad")] if op_type.endswith("_grad") else op_type
    if base in ELEMENTWISE:
        return _same_axis
    if base in _RULES:
        return _RULES[base]
    raise ValueError(f"no aligned tilings known for op type {op_type!r}")


def aligned_forms(op: Op, shapes: Shapes) -> list[Form]:
    """The op's aligned forms that are valid for the current (tile) shapes.

    A form that splits an odd-length axis is dropped. An op left with no form (e.g. on
    scalars) runs replicated — the only case where redundant compute is allowed.
    """
    valid = []
    for f in rule_for(op.type)(op, shapes):
        tensors = (*op.inputs, *op.outputs)
        ok = all(
            t in (REP, RED) or splittable(shapes[name], t)
            for name, t in zip(tensors, (*f.ins, *f.outs))
        )
        if ok and f not in valid:
            valid.append(f)
    if not valid:
        valid.append(Form((REP,) * len(op.inputs), (REP,) * len(op.outputs)))
    return valid


def graph_shapes(graph: Graph) -> dict[str, tuple[int, ...]]:
    return {name: t.shape for name, t in graph.tensors.items()}
