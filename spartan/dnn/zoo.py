"""Model zoo: builders for training (or inference) dataflow graphs of common DNNs.

Models are written against :class:`Net`, a small layer API that records forward ops and
derives the backward pass (reverse-mode, one ``"<type>_grad"`` op per differentiated
input, partial gradients summed with ``"add"``) and the optimizer update ops.

>>> g = mlp(64, [784, 256, 10])
>>> g.param_count(), len(g.ops_in(Phase.UPDATE))
(203530, 4)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from spartan.dnn.graph import Graph, Op, Phase, TensorKind

ELEMENTWISE_UNARY = ("relu", "tanh", "sigmoid", "gelu")


def _conv_out(n: int, k: int, stride: int, pad: int) -> int:
    out = (n + 2 * pad - k) // stride + 1
    if out < 1:
        raise ValueError(f"window {k} (stride {stride}, pad {pad}) does not fit a size-{n} input")
    return out


class Net:
    """Records a forward graph layer by layer, then adds backward and update ops.

    >>> net = Net("toy")
    >>> x = net.input("x", (8, 4))
    >>> y = net.dense(x, 3, name="fc")
    >>> g = net.build(loss=net.softmax_xent(y, net.input("labels", (8,), dtype="int32")))
    >>> sorted(o.type for o in g.ops_in(Phase.BACKWARD))
    ['bias_add_grad', 'matmul_grad', 'softmax_xent_grad']
    """

    def __init__(self, name: str, dtype: str = "float32") -> None:
        self.graph = Graph(name)
        self.dtype = dtype
        self._counts: dict[str, int] = {}
        self._built = False

    # ---- tensors --------------------------------------------------------------------
    def _unique(self, base: str) -> str:
        """A fresh name ``base``, ``base_1``, ... for layers the caller did not name."""
        n = self._counts.get(base, 0)
        name = base if n == 0 else f"{base}_{n}"
        while self.graph.has_op(name) or f"{name}:out" in self.graph.tensors:
            n += 1
            name = f"{base}_{n}"
        self._counts[base] = n + 1
        return name

    def input(self, name: str, shape: Sequence[int], dtype: str | None = None) -> str:
        """A data input (no gradient is computed for it)."""
        return self.graph.add_tensor(name, tuple(shape), TensorKind.INPUT, dtype or self.dtype).name

    def param(self, name: str, shape: Sequence[int]) -> str:
        return self.graph.add_tensor(name, tuple(shape), TensorKind.PARAM, self.dtype).name

    def shape(self, t: str) -> tuple[int, ...]:
        return self.graph.tensors[t].shape

    def op(
        self,
        type: str,
        inputs: Sequence[str],
        out_shape: Sequence[int],
        flops: float,
        name: str | None = None,
        **attrs: object,
    ) -> str:
        """Add a forward op with one new activation output; returns the output name."""
        if self._built:
            raise RuntimeError("Net already built; create a new Net to add layers")
        op_name = name or self._unique(type)
        # Layout ops keep their input's dtype (a reshaped bool mask stays bool: executors
        # that store tensors by their declared dtype would turn it into 0/1 floats).
        keeps = type in _LAYOUT_OPS and inputs
        dtype = self.graph.tensors[inputs[0]].dtype if keeps else self.dtype
        if type in ("compare", "logical_not"):
            dtype = "bool"
        out = self.graph.add_tensor(
            f"{op_name}:out", tuple(out_shape), TensorKind.ACTIVATION, dtype
        ).name
        self.graph.add_op(op_name, type, inputs, [out], Phase.FORWARD, flops, attrs)
        return out

    # ---- layers ---------------------------------------------------------------------
    def matmul(
        self, x: str, w: str, ta: bool = False, tb: bool = False, name: str | None = None
    ) -> str:
        """``op(x) @ op(w)`` for 2-D operands (rows of ``x`` = samples); ``ta``/``tb``
        transpose an operand (a tied output layer reads its embedding table with ``tb``)."""
        (m, k), (k2, n) = self.shape(x), self.shape(w)
        if ta:
            m, k = k, m
        if tb:
            k2, n = n, k2
        if k != k2:
            raise ValueError(f"matmul: shapes {self.shape(x)} and {self.shape(w)} not aligned")
        return self.op("matmul", [x, w], (m, n), 2 * m * k * n, name, ta=ta, tb=tb)

    def bias_add(self, x: str, b: str, axis: int = -1, name: str | None = None) -> str:
        """Add a 1-D bias along ``axis`` (channels: 1 for NCHW, -1 for dense)."""
        axis = axis % len(self.shape(x))
        if self.shape(b) != (self.shape(x)[axis],):
            raise ValueError(f"bias_add: bias {self.shape(b)} does not match axis {axis}")
        return self.op("bias_add", [x, b], self.shape(x), math.prod(self.shape(x)), name, axis=axis)

    def dense(self, x: str, units: int, bias: bool = True, name: str | None = None) -> str:
        """Fully connected layer: ``x @ W (+ b)``; flattens ``x`` to 2-D first."""
        if len(self.shape(x)) != 2:
            x = self.flatten(x)
        base = name or self._unique("fc")
        w = self.param(f"{base}.w", (self.shape(x)[1], units))
        y = self.matmul(x, w, name=base)
        if bias:
            y = self.bias_add(y, self.param(f"{base}.b", (units,)), name=f"{base}.bias")
        return y

    def conv2d(
        self,
        x: str,
        channels: int,
        kernel: int | tuple[int, int],
        stride: int = 1,
        padding: int | tuple[int, int] = 0,
        bias: bool = True,
        name: str | None = None,
    ) -> str:
        """2-D convolution over an NCHW input."""
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        ph, pw = (padding, padding) if isinstance(padding, int) else padding
        n, c, h, w = self.shape(x)
        base = name or self._unique("conv")
        wt = self.param(f"{base}.w", (channels, c, kh, kw))
        ho, wo = _conv_out(h, kh, stride, ph), _conv_out(w, kw, stride, pw)
        flops = 2 * n * channels * ho * wo * c * kh * kw
        y = self.op(
            "conv2d", [x, wt], (n, channels, ho, wo), flops, base, stride=stride, padding=(ph, pw)
        )
        if bias:
            y = self.bias_add(y, self.param(f"{base}.b", (channels,)), axis=1, name=f"{base}.bias")
        return y

    def _pool(
        self, type: str, x: str, kernel: int, stride: int, padding: int, name: str | None
    ) -> str:
        n, c, h, w = self.shape(x)
        ho, wo = _conv_out(h, kernel, stride, padding), _conv_out(w, kernel, stride, padding)
        flops = n * c * ho * wo * kernel * kernel
        return self.op(
            type, [x], (n, c, ho, wo), flops, name, kernel=kernel, stride=stride, padding=padding
        )

    def maxpool(
        self,
        x: str,
        kernel: int,
        stride: int | None = None,
        padding: int = 0,
        name: str | None = None,
    ) -> str:
        return self._pool("maxpool", x, kernel, stride or kernel, padding, name)

    def avgpool(
        self,
        x: str,
        kernel: int,
        stride: int | None = None,
        padding: int = 0,
        name: str | None = None,
    ) -> str:
        return self._pool("avgpool", x, kernel, stride or kernel, padding, name)

    def global_avgpool(self, x: str, name: str | None = None) -> str:
        """Mean over the spatial axes: (N, C, H, W) -> (N, C)."""
        n, c, _, _ = self.shape(x)
        return self.op("global_avgpool", [x], (n, c), math.prod(self.shape(x)), name)

    def unary(self, type: str, x: str, name: str | None = None, **attrs: object) -> str:
        """An element-wise activation; ``attrs`` such as ``approximate="tanh"`` for GELU."""
        if type not in ELEMENTWISE_UNARY:
            raise ValueError(f"unknown activation {type!r}; one of {ELEMENTWISE_UNARY}")
        return self.op(type, [x], self.shape(x), math.prod(self.shape(x)), name, **attrs)

    def relu(self, x: str, name: str | None = None) -> str:
        return self.unary("relu", x, name)

    def tanh(self, x: str, name: str | None = None) -> str:
        return self.unary("tanh", x, name)

    def sigmoid(self, x: str, name: str | None = None) -> str:
        return self.unary("sigmoid", x, name)

    def gelu(self, x: str, name: str | None = None) -> str:
        return self.unary("gelu", x, name)

    def _binary(self, type: str, a: str, b: str, name: str | None) -> str:
        if self.shape(a) != self.shape(b):
            raise ValueError(f"{type}: shapes {self.shape(a)} and {self.shape(b)} differ")
        return self.op(type, [a, b], self.shape(a), math.prod(self.shape(a)), name)

    def add(self, a: str, b: str, name: str | None = None) -> str:
        return self._binary("add", a, b, name)

    def mul(self, a: str, b: str, name: str | None = None) -> str:
        return self._binary("mul", a, b, name)

    def batchnorm(
        self,
        x: str,
        name: str | None = None,
        eps: float = 1e-5,
        params: tuple[str, str] | None = None,
    ) -> str:
        """Batch normalization over channel axis 1 with the batch's statistics (learned
        scale and shift; ``params`` names existing ``(gamma, beta)`` tensors)."""
        c = self.shape(x)[1]
        base = name or self._unique("bn")
        gamma, beta = params or (
            self.param(f"{base}.gamma", (c,)),
            self.param(f"{base}.beta", (c,)),
        )
        flops = 8 * math.prod(self.shape(x))
        return self.op("batchnorm", [x, gamma, beta], self.shape(x), flops, base, eps=eps)

    def layernorm(
        self,
        x: str,
        name: str | None = None,
        eps: float = 1e-5,
        params: tuple[str, str] | None = None,
    ) -> str:
        """Layer normalization over the last axis (learned scale and shift; ``params``
        names existing ``(gamma, beta)`` tensors)."""
        d = self.shape(x)[-1]
        base = name or self._unique("ln")
        gamma, beta = params or (
            self.param(f"{base}.gamma", (d,)),
            self.param(f"{base}.beta", (d,)),
        )
        flops = 8 * math.prod(self.shape(x))
        return self.op("layernorm", [x, gamma, beta], self.shape(x), flops, base, eps=eps)

    def reshape(self, x: str, shape: Sequence[int], name: str | None = None) -> str:
        shape = tuple(shape)
        if math.prod(shape) != math.prod(self.shape(x)):
            raise ValueError(f"reshape: cannot reshape {self.shape(x)} to {shape}")
        return self.op("reshape", [x], shape, 0, name, shape=shape)

    def flatten(self, x: str, name: str | None = None) -> str:
        s = self.shape(x)
        return self.reshape(x, (s[0], math.prod(s[1:])), name or "flatten")

    def transpose(self, x: str, perm: Sequence[int], name: str | None = None) -> str:
        perm = tuple(perm)
        s = self.shape(x)
        if sorted(perm) != list(range(len(s))):
            raise ValueError(f"transpose: {perm} is not a permutation of {len(s)} axes")
        return self.op("transpose", [x], tuple(s[p] for p in perm), 0, name, perm=perm)

    def concat(self, xs: Sequence[str], axis: int = 1, name: str | None = None) -> str:
        shapes = [self.shape(x) for x in xs]
        ref = shapes[0]
        axis = axis % len(ref)
        for s in shapes:
            if len(s) != len(ref) or any(
                a != b for i, (a, b) in enumerate(zip(s, ref)) if i != axis
            ):
                raise ValueError(f"concat: shapes {shapes} differ off axis {axis}")
        out = list(ref)
        out[axis] = sum(s[axis] for s in shapes)
        return self.op(
            "concat", list(xs), out, 0, name, axis=axis, sizes=tuple(s[axis] for s in shapes)
        )

    def slice(self, x: str, axis: int, start: int, stop: int, name: str | None = None) -> str:
        s = list(self.shape(x))
        axis = axis % len(s)
        if not 0 <= start < stop <= s[axis]:
            raise ValueError(f"slice: [{start}, {stop}) out of range for axis of {s[axis]}")
        s[axis] = stop - start
        return self.op("slice", [x], s, 0, name, axis=axis, start=start, stop=stop)

    def batch_matmul(
        self, a: str, b: str, ta: bool = False, tb: bool = False, name: str | None = None
    ) -> str:
        """Batched ``a @ b`` over a leading batch axis, optionally transposing operands."""
        (ba, m, k), (bb, k2, n) = self.shape(a), self.shape(b)
        if ta:
            m, k = k, m
        if tb:
            k2, n = n, k2
        if ba != bb or k != k2:
            raise ValueError(
                f"batch_matmul: shapes {self.shape(a)} and {self.shape(b)} not aligned"
            )
        return self.op("batch_matmul", [a, b], (ba, m, n), 2 * ba * m * k * n, name, ta=ta, tb=tb)

    def softmax(self, x: str, name: str | None = None) -> str:
        """Softmax over the last axis."""
        return self.op("softmax", [x], self.shape(x), 5 * math.prod(self.shape(x)), name)

    def causal_mask(self, x: str, name: str | None = None) -> str:
        """Set attention scores of keys after the query to -inf over the last two axes
        (query ``i`` sees keys ``j <= i``), before a softmax."""
        return self.op("causal_mask", [x], self.shape(x), math.prod(self.shape(x)), name)

    def attn_mask(self, x: str, mask: Any, name: str | None = None) -> str:
        """Add a constant float ``mask`` (0 where allowed, -inf where masked) to attention
        scores; ``mask`` has the shape of ``x``'s last two axes or of ``x``, and axes of
        size 1 broadcast."""
        m = np.asarray(mask, dtype=np.float64)
        if m.ndim not in (2, len(self.shape(x))):
            raise ValueError(f"attn_mask: a {m.shape} mask for scores of {self.shape(x)}")
        return self.op("attn_mask", [x], self.shape(x), math.prod(self.shape(x)), name, mask=m)

    def input_mask(
        self, x: str, mask: str, keep_if_true: bool = True, name: str | None = None
    ) -> str:
        """Add the mask held by tensor ``mask`` (an input, or computed from one) to attention
        scores ``x``: a float mask is added as it is; a bool mask keeps its ``True``
        entries (``keep_if_true``, as torch's scaled_dot_product_attention) or masks them
        (MultiheadAttention's ``attn_mask``/``key_padding_mask``). ``mask`` broadcasts
        against ``x`` (trailing axes aligned, axes of length 1 broadcast)."""
        sx, sm = self.shape(x), self.shape(mask)
        if len(sm) > len(sx) or any(m not in (1, d) for m, d in zip(sm[::-1], sx[::-1])):
            raise ValueError(f"input_mask: a {sm} mask does not broadcast to scores of {sx}")
        size = math.prod(sx)
        return self.op("input_mask", [x, mask], sx, size, name, keep_if_true=bool(keep_if_true))

    def compare(self, x: str, cmp: str, value: float, name: str | None = None) -> str:
        """The bool tensor ``x <cmp> value`` (``cmp``: eq, ne, lt, le, gt, ge), e.g. a
        padding mask from token ids; it carries no gradient."""
        if cmp not in _COMPARISONS:
            raise ValueError(f"compare: unknown comparison {cmp!r}; one of {sorted(_COMPARISONS)}")
        size = math.prod(self.shape(x))
        return self.op("compare", [x], self.shape(x), size, name, cmp=cmp, value=float(value))

    def logical_not(self, x: str, name: str | None = None) -> str:
        """``~x`` of a bool tensor."""
        if self.graph.tensors[x].dtype != "bool":
            raise ValueError(f"logical_not of {x!r}: a {self.graph.tensors[x].dtype} tensor")
        return self.op("logical_not", [x], self.shape(x), math.prod(self.shape(x)), name)

    def masked_fill(self, x: str, mask: str, value: float, name: str | None = None) -> str:
        """``x`` with ``value`` where the bool tensor ``mask`` (broadcast against ``x``)
        is True, as torch's ``masked_fill``; no gradient flows to filled entries."""
        sx, sm = self.shape(x), self.shape(mask)
        if self.graph.tensors[mask].dtype != "bool":
            raise ValueError(f"masked_fill: the mask {mask!r} is not a bool tensor")
        if len(sm) > len(sx) or any(m not in (1, d) for m, d in zip(sm[::-1], sx[::-1])):
            raise ValueError(f"masked_fill: a {sm} mask does not broadcast to {sx}")
        size = math.prod(sx)
        return self.op("masked_fill", [x, mask], sx, size, name, value=float(value))

    def scale(self, x: str, factor: float, name: str | None = None) -> str:
        return self.op("scale", [x], self.shape(x), math.prod(self.shape(x)), name, factor=factor)

    def embedding(self, ids: str, vocab: int, dim: int, name: str | None = None) -> str:
        """Look up rows of a (vocab, dim) table: ids of shape S -> S + (dim,)."""
        base = name or self._unique("embed")
        table = self.param(f"{base}.table", (vocab, dim))
        out = (*self.shape(ids), dim)
        return self.op("embedding", [ids, table], out, math.prod(out), base)

    def softmax_xent(self, logits: str, labels: str, name: str | None = None) -> str:
        """Mean softmax cross-entropy of (N, classes) logits against (N,) int labels."""
        n, c = self.shape(logits)
        if self.shape(labels) != (n,):
            raise ValueError(
                f"softmax_xent: labels {self.shape(labels)} do not match logits {(n, c)}"
            )
        return self.op("softmax_xent", [logits, labels], (), 6 * n * c, name or "loss")

    # ---- training graph -------------------------------------------------------------
    def build(
        self,
        loss: str | None = None,
        training: bool = True,
        output: str | None = None,
        optimizer: str = "sgd",
        lr: float = 0.01,
    ) -> Graph:
        """Finish the graph; for training add backward ops and optimizer updates.

        Backpropagation starts at the scalar ``loss``, or, when ``loss`` is None, at a
        given gradient seed ``d<output>`` (a GRADIENT source tensor) of ``output``.
        ``optimizer`` is ``"sgd"``, ``"momentum"`` or ``"adam"``.
        """
        if self._built:
            raise RuntimeError("Net already built")
        self._built = True
        g = self.graph
        if training:
            if (loss is None) == (output is None):
                raise ValueError("training needs exactly one of loss= or output=")
            root = loss if loss is not None else output
            assert root is not None  # exactly one of them, checked above
            grads = backward(g, root, seed=loss is None)
            add_updates(g, grads, optimizer, lr)
        g.validate()
        return g


_LAYOUT_OPS = frozenset({"reshape", "transpose", "slice", "concat"})
_COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})

# ---- reverse-mode differentiation -------------------------------------------------------

# For each op type: per differentiable input index, the forward tensors its gradient op
# reads besides dy ("x<i>" = forward input i, "y" = forward output).
_SAVED: dict[str, dict[int, tuple[str, ...]]] = {
    "matmul": {0: ("x1",), 1: ("x0",)},
    "batch_matmul": {0: ("x1",), 1: ("x0",)},
    "conv2d": {0: ("x1",), 1: ("x0",)},
    "bias_add": {1: ()},
    "relu": {0: ("y",)},
    "tanh": {0: ("y",)},
    "sigmoid": {0: ("y",)},
    "gelu": {0: ("x0",)},
    "mul": {0: ("x1",), 1: ("x0",)},
    "maxpool": {0: ("x0", "y")},
    "avgpool": {0: ()},
    "global_avgpool": {0: ()},
    "batchnorm": {0: ("x0", "x1"), 1: ("x0",), 2: ()},
    "layernorm": {0: ("x0", "x1"), 1: ("x0",), 2: ()},
    "reshape": {0: ()},
    "transpose": {0: ()},
    "slice": {0: ()},
    "softmax": {0: ("y",)},
    "scale": {0: ()},
    "causal_mask": {0: ()},
    "attn_mask": {0: ()},
    "input_mask": {0: ("x1",)},
    "masked_fill": {0: ("x1",)},
    "embedding": {1: ("x0",)},
    "softmax_xent": {0: ("x0", "x1")},
}
_FLOAT_DTYPES = frozenset({"float64", "float32", "float16", "bfloat16"})
_ONE = "<d(loss)/d(loss)>"  # the implicit unit gradient of a scalar loss; never a tensor
# Gradients that pass dy through unchanged (no op: the gradient tensor is aliased).
_IDENTITY: dict[str, tuple[int, ...]] = {"bias_add": (0,), "add": (0, 1)}


def _grad_flops(op: Op, wrt: int, graph: Graph) -> float:
    if op.type in ("matmul", "batch_matmul", "conv2d"):
        return op.flops
    if op.type == "concat":
        return 0.0
    # elementwise gradients touch the input; reductions (bias, pooling, ...) all of dy
    return float(max(graph.tensors[op.inputs[wrt]].size, graph.tensors[op.outputs[0]].size))


def backward(graph: Graph, root: str, seed: bool = False) -> dict[str, str]:
    """Append BACKWARD ops computing gradients of ``root`` w.r.t. every parameter.

    With ``seed=True`` the gradient of ``root`` is a given GRADIENT source ``d<root>``;
    otherwise ``root`` is a scalar loss. Returns ``{param: gradient tensor}``.
    """
    needs: set[str] = {t.name for t in graph.params()}
    fwd = [o for o in graph.ops if o.phase is Phase.FORWARD]
    for op in fwd:
        if any(t in needs for t in op.inputs):  # (bool and int tensors carry no gradient)
            needs.update(t for t in op.outputs if graph.tensors[t].dtype in _FLOAT_DTYPES)
    if root not in needs:
        raise ValueError(f"{root!r} does not depend on any parameter")
    fan: dict[str, int] = {}  # gradient contributions each tensor will receive
    for op in fwd:
        if any(t in needs for t in op.outputs):
            for x in op.inputs:
                if x in needs:
                    fan[x] = fan.get(x, 0) + 1
    partial: dict[str, list[str]] = {}
    grad: dict[str, str] = {}
    if seed:
        t = graph.tensors[root]
        grad[root] = graph.add_tensor(f"d{root}", t.shape, TensorKind.GRADIENT, t.dtype).name
    else:
        grad[root] = _ONE

    def finish(t: str) -> str | None:
        """The full gradient of ``t``: one partial, or the sum of several."""
        if t in grad:
            return grad[t]
        parts = partial.get(t)
        if not parts:
            return None
        if len(parts) > 1 and _ONE in parts:
            raise ValueError(f"the loss {t!r} is used by other ops; only a final loss is supported")
        acc = parts[0]
        for i, p in enumerate(parts[1:], 1):
            name = f"d{t}" if i == len(parts) - 1 else f"d{t}#acc{i}"
            tt = graph.tensors[t]
            graph.add_tensor(name, tt.shape, TensorKind.GRADIENT, tt.dtype)
            graph.add_op(f"grad_acc:{name}", "add", [acc, p], [name], Phase.BACKWARD, tt.size)
            acc = name
        grad[t] = acc
        return acc

    for op in reversed(fwd):
        (y,) = op.outputs
        if y not in needs:
            continue
        dy = finish(y)
        if dy is None:
            continue  # output does not reach the root
        for i, x in enumerate(op.inputs):
            if x not in needs:
                continue
            if i in _IDENTITY.get(op.type, ()):
                partial.setdefault(x, []).append(dy)
                continue
            if op.type == "concat":
                saved: tuple[str, ...] = ()
            elif op.type in _SAVED and i in _SAVED[op.type]:
                saved = _SAVED[op.type][i]
            else:
                raise ValueError(f"no gradient rule for input {i} of {op.type!r} op {op.name!r}")
            reads = [op.inputs[int(s[1:])] if s.startswith("x") else y for s in saved]
            xt = graph.tensors[x]
            k = len(partial.get(x, ()))
            gname = f"d{x}" if fan[x] == 1 else f"d{x}#{k}"
            graph.add_tensor(gname, xt.shape, TensorKind.GRADIENT, xt.dtype)
            inputs = ([dy] if dy != _ONE else []) + reads
            # out_shape: the gradient's shape, which kernels of shape-changing ops need
            attrs = {**op.attrs, "of": op.name, "wrt": i, "out_shape": xt.shape}
            graph.add_op(
                f"{op.name}:grad{i}",
                f"{op.type}_grad",
                inputs,
                [gname],
                Phase.BACKWARD,
                _grad_flops(op, i, graph),
                attrs,
            )
            partial.setdefault(x, []).append(gname)
    out: dict[str, str] = {}
    for p in graph.params():
        g = finish(p.name)
        if g is not None:
            out[p.name] = g
    return out


_OPT_STATES = {"sgd": (), "momentum": ("m",), "adam": ("m", "v")}
_OPT_FLOPS = {"sgd": 2, "momentum": 4, "adam": 12}


def add_updates(
    graph: Graph, grads: dict[str, str], optimizer: str = "sgd", lr: float = 0.01
) -> None:
    """Append UPDATE ops: one optimizer op per parameter, updating it in place."""
    if optimizer not in _OPT_STATES:
        raise ValueError(f"unknown optimizer {optimizer!r}; one of {sorted(_OPT_STATES)}")
    for p, dp in grads.items():
        t = graph.tensors[p]
        states = [
            graph.add_tensor(f"{p}.{s}", t.shape, TensorKind.OPT_STATE, t.dtype).name
            for s in _OPT_STATES[optimizer]
        ]
        graph.add_op(
            f"{optimizer}:{p}",
            optimizer,
            [p, dp, *states],
            [p, *states],
            Phase.UPDATE,
            _OPT_FLOPS[optimizer] * t.size,
            {"lr": lr},
        )


# ---- models -----------------------------------------------------------------------------


def mlp(
    batch: int,
    widths: Sequence[int],
    activation: str | None = "relu",
    bias: bool = True,
    loss: bool = True,
    training: bool = True,
    optimizer: str = "sgd",
) -> Graph:
    """Multi-layer perceptron with layer sizes ``widths`` (input first).

    With ``loss=False`` the backward pass starts from a given gradient ``d<output>``
    (the setting of SoyBean's exact examples).
    """
    if len(widths) < 2:
        raise ValueError("mlp needs at least an input and an output width")
    net = Net(f"mlp{len(widths) - 1}")
    h = net.input("x", (batch, widths[0]))
    for i, w in enumerate(widths[1:], 1):
        h = net.dense(h, w, bias=bias, name=f"fc{i}")
        if activation and i < len(widths) - 1:
            h = net.unary(activation, h, name=f"{activation}{i}")
    if not loss:
        return net.build(output=h if training else None, training=training, optimizer=optimizer)
    xent = net.softmax_xent(h, net.input("labels", (batch,), dtype="int32"))
    return net.build(loss=xent, training=training, optimizer=optimizer)


def small_cnn(
    batch: int,
    image: int = 16,
    channels: Sequence[int] = (8, 16),
    classes: int = 10,
    training: bool = True,
    optimizer: str = "sgd",
) -> Graph:
    """A small LeNet-style CNN: [conv3x3 -> relu -> maxpool2] per entry of ``channels``,
    then a dense classifier. Cheap enough to execute in tests."""
    net = Net("small_cnn")
    h = net.input("x", (batch, 3, image, image))
    for i, c in enumerate(channels, 1):
        h = net.conv2d(h, c, 3, padding=1, name=f"conv{i}")
        h = net.relu(h, name=f"relu{i}")
        h = net.maxpool(h, 2, name=f"pool{i}")
    logits = net.dense(h, classes, name="fc")
    xent = net.softmax_xent(logits, net.input("labels", (batch,), dtype="int32"))
    return net.build(loss=xent, training=training, optimizer=optimizer)


def _classify(net: Net, h: str, batch: int, training: bool, optimizer: str) -> Graph:
    xent = net.softmax_xent(h, net.input("labels", (batch,), dtype="int32"))
    return net.build(loss=xent, training=training, optimizer=optimizer)


def alexnet(
    batch: int, classes: int = 1000, training: bool = True, optimizer: str = "sgd"
) -> Graph:
    """AlexNet (single-tower variant as in torchvision; 61.1M parameters)."""
    net = Net("alexnet")
    h = net.input("x", (batch, 3, 224, 224))
    for i, (c, k, s, p, pool) in enumerate(
        [(64, 11, 4, 2, True), (192, 5, 1, 2, True), (384, 3, 1, 1, False),
         (256, 3, 1, 1, False), (256, 3, 1, 1, True)], 1
    ):  # fmt: skip
        h = net.relu(net.conv2d(h, c, k, stride=s, padding=p, name=f"conv{i}"), name=f"relu{i}")
        if pool:
            h = net.maxpool(h, 3, stride=2, name=f"pool{i}")
    for i, units in enumerate([4096, 4096], 6):
        h = net.relu(net.dense(h, units, name=f"fc{i}"), name=f"relu{i}")
    return _classify(net, net.dense(h, classes, name="fc8"), batch, training, optimizer)


VGG16_CONFIG = (
    64,
    64,
    "M",
    128,
    128,
    "M",
    256,
    256,
    256,
    "M",
    512,
    512,
    512,
    "M",
    512,
    512,
    512,
    "M",
)


def vgg16(batch: int, classes: int = 1000, training: bool = True, optimizer: str = "sgd") -> Graph:
    """VGG-16 (configuration D; 138.36M parameters)."""
    net = Net("vgg16")
    h = net.input("x", (batch, 3, 224, 224))
    conv = 0
    for v in VGG16_CONFIG:
        if v == "M":
            h = net.maxpool(h, 2, name=f"pool{conv}")
        else:
            conv += 1
            h = net.relu(
                net.conv2d(h, int(v), 3, padding=1, name=f"conv{conv}"), name=f"relu{conv}"
            )
    for i, units in enumerate([4096, 4096], 14):
        h = net.relu(net.dense(h, units, name=f"fc{i}"), name=f"relu{i}")
    return _classify(net, net.dense(h, classes, name="fc16"), batch, training, optimizer)


# ---- residual networks --------------------------------------------------------------------

RESNET_BLOCKS = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3)}


def _conv_bn(net: Net, x: str, c: int, k: int | tuple[int, int], stride: int = 1,
             padding: int | tuple[int, int] = 0, relu: bool = True, name: str = "") -> str:  # fmt: skip
    """conv (no bias) -> batchnorm -> optional relu, the unit of ResNet and Inception."""
    h = net.conv2d(x, c, k, stride=stride, padding=padding, bias=False, name=name)
    h = net.batchnorm(h, name=f"{name}.bn")
    return net.relu(h, name=f"{name}.relu") if relu else h


def resnet(
    depth: int = 50,
    batch: int = 32,
    width: float = 1,
    classes: int = 1000,
    training: bool = True,
    optimizer: str = "sgd",
) -> Graph:
    """Bottleneck ResNet-50/101/152 (25.56M / 44.55M / 60.19M parameters).

    ``width`` scales the bottleneck's inner channels, as in wide ResNets
    (``resnet(50, width=2)`` is torchvision's wide_resnet50_2).
    """
    if depth not in RESNET_BLOCKS:
        raise ValueError(f"resnet depth must be one of {sorted(RESNET_BLOCKS)}, got {depth}")
    if width <= 0:
        raise ValueError(f"width must be > 0, got {width}")
    suffix = "" if width == 1 else f"_w{width:g}"
    net = Net(f"resnet{depth}{suffix}")
    h = net.input("x", (batch, 3, 224, 224))
    h = _conv_bn(net, h, 64, 7, stride=2, padding=3, name="conv1")
    h = net.maxpool(h, 3, stride=2, padding=1, name="pool1")
    cin = 64
    for stage, (blocks, planes) in enumerate(zip(RESNET_BLOCKS[depth], (64, 128, 256, 512)), 1):
        inner, out = int(planes * width), planes * 4
        for b in range(blocks):
            stride = 2 if b == 0 and stage > 1 else 1
            base = f"layer{stage}.{b}"
            y = _conv_bn(net, h, inner, 1, name=f"{base}.conv1")
            y = _conv_bn(net, y, inner, 3, stride=stride, padding=1, name=f"{base}.conv2")
            y = _conv_bn(net, y, out, 1, relu=False, name=f"{base}.conv3")
            if b == 0 and (stride != 1 or cin != out):
                h = _conv_bn(net, h, out, 1, stride=stride, relu=False, name=f"{base}.down")
            h = net.relu(net.add(y, h, name=f"{base}.add"), name=f"{base}.relu")
            cin = out
    h = net.global_avgpool(h, name="avgpool")
    return _classify(net, net.dense(h, classes, name="fc"), batch, training, optimizer)


def wresnet152(
    scale: float = 2, batch: int = 32, training: bool = True, optimizer: str = "sgd"
) -> Graph:
    """WResNet-152-X: ResNet-152 with bottleneck width scaled by ``scale`` (SwapAdvisor)."""
    return resnet(152, batch, width=scale, training=training, optimizer=optimizer)


# ---- Inception-v4 ---------------------------------------------------------------------------


def inception_v4(
    batch: int = 32, scale: float = 1, classes: int = 1000, training: bool = True,
    optimizer: str = "sgd",
) -> Graph:  # fmt: skip
    """Inception-v4 (Szegedy et al. 2016; 42.7M parameters at ``scale=1``).

    ``scale`` multiplies every convolution's channel count (the wide Inception-v4-X of
    SwapAdvisor).
    """
    if scale <= 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    net = Net("inception_v4" if scale == 1 else f"inception_v4_x{scale:g}")

    def cbr(x: str, c: int, k: int | tuple[int, int], stride: int = 1,
            padding: int | tuple[int, int] = 0, name: str = "") -> str:  # fmt: skip
        return _conv_bn(net, x, max(1, round(c * scale)), k, stride, padding, name=name)

    def chain(x: str, base: str, *layers: tuple) -> str:
        for i, (c, k, *rest) in enumerate(layers):
            stride, pad = (rest + [1, 0])[:2] if rest else (1, 0)
            x = cbr(x, c, k, stride, pad, name=f"{base}.{i}")
        return x

    def avg_branch(x: str, c: int, base: str) -> str:
        return cbr(net.avgpool(x, 3, stride=1, padding=1, name=f"{base}.pool"), c, 1, name=base)

    h = net.input("x", (batch, 3, 299, 299))
    h = chain(h, "stem", (32, 3, 2, 0), (32, 3), (64, 3, 1, 1))
    h = net.concat(
        [net.maxpool(h, 3, 2, name="mixed3a.pool"), cbr(h, 96, 3, 2, name="mixed3a.conv")]
    )
    h = net.concat([
        chain(h, "mixed4a.b0", (64, 1), (96, 3)),
        chain(h, "mixed4a.b1", (64, 1), (64, (1, 7), 1, (0, 3)), (64, (7, 1), 1, (3, 0)), (96, 3)),
    ])  # fmt: skip
    h = net.concat(
        [cbr(h, 192, 3, 2, name="mixed5a.conv"), net.maxpool(h, 3, 2, name="mixed5a.pool")]
    )
    for i in range(4):
        b = f"incA{i}"
        h = net.concat([
            cbr(h, 96, 1, name=f"{b}.b0"),
            chain(h, f"{b}.b1", (64, 1), (96, 3, 1, 1)),
            chain(h, f"{b}.b2", (64, 1), (96, 3, 1, 1), (96, 3, 1, 1)),
            avg_branch(h, 96, f"{b}.b3"),
        ])  # fmt: skip
    h = net.concat([
        cbr(h, 384, 3, 2, name="redA.b0"),
        chain(h, "redA.b1", (192, 1), (224, 3, 1, 1), (256, 3, 2, 0)),
        net.maxpool(h, 3, 2, name="redA.pool"),
    ])  # fmt: skip
    for i in range(7):
        b = f"incB{i}"
        h = net.concat([
            cbr(h, 384, 1, name=f"{b}.b0"),
            chain(h, f"{b}.b1", (192, 1), (224, (1, 7), 1, (0, 3)), (256, (7, 1), 1, (3, 0))),
            chain(h, f"{b}.b2", (192, 1), (192, (7, 1), 1, (3, 0)), (224, (1, 7), 1, (0, 3)),
                  (224, (7, 1), 1, (3, 0)), (256, (1, 7), 1, (0, 3))),
            avg_branch(h, 128, f"{b}.b3"),
        ])  # fmt: skip
    h = net.concat([
        chain(h, "redB.b0", (192, 1), (192, 3, 2, 0)),
        chain(h, "redB.b1", (256, 1), (256, (1, 7), 1, (0, 3)), (320, (7, 1), 1, (3, 0)),
              (320, 3, 2, 0)),
        net.maxpool(h, 3, 2, name="redB.pool"),
    ])  # fmt: skip
    for i in range(3):
        b = f"incC{i}"
        b1 = cbr(h, 384, 1, name=f"{b}.b1")
        b2 = chain(h, f"{b}.b2", (384, 1), (448, (3, 1), 1, (1, 0)), (512, (1, 3), 1, (0, 1)))
        h = net.concat([
            cbr(h, 256, 1, name=f"{b}.b0"),
            cbr(b1, 256, (1, 3), padding=(0, 1), name=f"{b}.b1a"),
            cbr(b1, 256, (3, 1), padding=(1, 0), name=f"{b}.b1b"),
            cbr(b2, 256, (1, 3), padding=(0, 1), name=f"{b}.b2a"),
            cbr(b2, 256, (3, 1), padding=(1, 0), name=f"{b}.b2b"),
            avg_branch(h, 256, f"{b}.b3"),
        ])  # fmt: skip
    h = net.global_avgpool(h, name="avgpool")
    return _classify(net, net.dense(h, classes, name="fc"), batch, training, optimizer)


# ---- recurrent networks ---------------------------------------------------------------------


def rnn(
    layers: int = 2,
    hidden: int = 512,
    batch: int = 32,
    seq: int = 20,
    bidirectional: bool = False,
    input_size: int | None = None,
    classes: int = 1000,
    training: bool = True,
    optimizer: str = "sgd",
) -> Graph:
    """An LSTM RNN (or BRNN with ``bidirectional=True``), unrolled over ``seq`` steps.

    Each layer (and direction) has ``Wx (in, 4H)``, ``Wh (H, 4H)`` and one bias ``(4H,)``;
    weights are shared over time, so their gradients sum one partial per step. A dense
    classifier reads the last layer's final hidden state(s).
    """
    if min(layers, hidden, batch, seq) < 1:
        raise ValueError("rnn: layers, hidden, batch and seq must be >= 1")
    net = Net(f"{'b' if bidirectional else ''}lstm{layers}x{hidden}")
    xin = input_size or hidden
    xs = [net.input(f"x[{t}]", (batch, xin)) for t in range(seq)]
    zero = net.input("zeros", (batch, hidden))
    finals: list[str] = []
    for layer in range(layers):
        outs_by_dir = []
        for d, direction in enumerate(("fw", "bw") if bidirectional else ("fw",)):
            base = f"l{layer}.{direction}"
            in_dim = net.shape(xs[0])[1]
            wx = net.param(f"{base}.wx", (in_dim, 4 * hidden))
            wh = net.param(f"{base}.wh", (hidden, 4 * hidden))
            b = net.param(f"{base}.b", (4 * hidden,))
            h, c = zero, zero
            outs: list[str] = [""] * seq
            steps = range(seq) if d == 0 else range(seq - 1, -1, -1)
            for t in steps:
                s = f"{base}.t{t}"
                z = net.add(
                    net.matmul(xs[t], wx, name=f"{s}.mx"),
                    net.matmul(h, wh, name=f"{s}.mh"),
                    name=f"{s}.z",
                )
                z = net.bias_add(z, b, name=f"{s}.zb")
                i, f, g, o = (net.slice(z, 1, k * hidden, (k + 1) * hidden, name=f"{s}.{n}")
                              for k, n in enumerate("ifgo"))  # fmt: skip
                i, f, o = (
                    net.sigmoid(v, name=f"{s}.sig{n}") for v, n in ((i, "i"), (f, "f"), (o, "o"))
                )
                g = net.tanh(g, name=f"{s}.tanhg")
                c = net.add(
                    net.mul(f, c, name=f"{s}.fc"), net.mul(i, g, name=f"{s}.ig"), name=f"{s}.c"
                )
                h = net.mul(o, net.tanh(c, name=f"{s}.tanhc"), name=f"{s}.h")
                outs[t] = h
            outs_by_dir.append(outs)
            finals.append(h)
        if bidirectional:
            xs = [
                net.concat([fw, bw], axis=1, name=f"l{layer}.cat{t}")
                for t, (fw, bw) in enumerate(zip(*outs_by_dir))
            ]
        else:
            xs = outs_by_dir[0]
    last = finals[-2:] if bidirectional else finals[-1:]
    h = net.concat(last, axis=1, name="final") if bidirectional else last[0]
    return _classify(net, net.dense(h, classes, name="classifier"), batch, training, optimizer)


# ---- transformers ---------------------------------------------------------------------------


def _attention(net: Net, h: str, batch: int, seq: int, heads: int, base: str) -> str:
    """Multi-head self-attention over ``h`` of shape (batch*seq, d)."""
    d = net.shape(h)[1]
    if d % heads:
        raise ValueError(f"d_model {d} is not divisible by heads {heads}")
    dh = d // heads

    def split(x: str, n: str) -> str:  # (B*S, d) -> (B*H, S, dh)
        x = net.reshape(x, (batch, seq, heads, dh), name=f"{base}.{n}.split")
        x = net.transpose(x, (0, 2, 1, 3), name=f"{base}.{n}.heads")
        return net.reshape(x, (batch * heads, seq, dh), name=f"{base}.{n}.bh")

    q, k, v = (split(net.dense(h, d, name=f"{base}.{n}"), n) for n in "qkv")
    scores = net.batch_matmul(q, k, tb=True, name=f"{base}.scores")
    probs = net.softmax(
        net.scale(scores, 1 / math.sqrt(dh), name=f"{base}.scaled"), name=f"{base}.softmax"
    )
    ctx = net.batch_matmul(probs, v, name=f"{base}.ctx")
    ctx = net.reshape(ctx, (batch, heads, seq, dh), name=f"{base}.ctx.split")
    ctx = net.transpose(ctx, (0, 2, 1, 3), name=f"{base}.ctx.merge")
    ctx = net.reshape(ctx, (batch * seq, d), name=f"{base}.ctx.flat")
    return net.dense(ctx, d, name=f"{base}.o")


def _ffn(net: Net, h: str, ffn: int, base: str) -> str:
    d = net.shape(h)[1]
    return net.dense(
        net.gelu(net.dense(h, ffn, name=f"{base}.fc1"), name=f"{base}.gelu"), d, name=f"{base}.fc2"
    )


def transformer(
    layers: int = 12,
    d_model: int = 768,
    heads: int = 12,
    seq: int = 128,
    batch: int = 8,
    ffn: int | None = None,
    vocab: int = 30522,
    max_pos: int = 512,
    type_vocab: int = 0,
    pre_ln: bool = False,
    pooler: bool = False,
    mlm_head: bool = False,
    name: str = "transformer",
    training: bool = True,
    optimizer: str = "sgd",
) -> Graph:
    """A Transformer stack over token and position embeddings, trained as a language model.

    ``pre_ln=False`` is a post-LN encoder (BERT); ``pre_ln=True`` a pre-LN decoder with a
    final LayerNorm (GPT-2; the causal mask changes no shape or parameter). The output
    layer is tied to the token embedding. ``type_vocab`` adds segment embeddings,
    ``pooler`` a tanh pooler over the first token with a 2-way classifier (BERT's NSP),
    ``mlm_head`` BERT's dense+GELU+LayerNorm transform with an output bias.
    """
    if seq > max_pos:
        raise ValueError(f"seq {seq} exceeds max_pos {max_pos}")
    ffn = ffn or 4 * d_model
    net = Net(name)
    ids = net.input("ids", (batch, seq), dtype="int32")
    emb = net.embedding(ids, vocab, d_model, name="tok_embed")
    table = "tok_embed.table"
    h = net.add(emb, net.embedding(net.input("pos_ids", (batch, seq), dtype="int32"), max_pos, d_model, name="pos_embed"), name="embed.add")  # fmt: skip
    if type_vocab:
        types = net.embedding(net.input("type_ids", (batch, seq), dtype="int32"), type_vocab, d_model, name="type_embed")  # fmt: skip
        h = net.add(h, types, name="embed.add_type")
    h = net.reshape(h, (batch * seq, d_model), name="embed.flat")
    if not pre_ln:
        h = net.layernorm(h, name="embed.ln")
    for i in range(layers):
        b = f"layer{i}"
        if pre_ln:
            h = net.add(h, _attention(net, net.layernorm(h, name=f"{b}.ln1"), batch, seq, heads, f"{b}.attn"), name=f"{b}.res1")  # fmt: skip
            h = net.add(
                h, _ffn(net, net.layernorm(h, name=f"{b}.ln2"), ffn, f"{b}.ffn"), name=f"{b}.res2"
            )
        else:
            h = net.layernorm(net.add(h, _attention(net, h, batch, seq, heads, f"{b}.attn"), name=f"{b}.res1"), name=f"{b}.ln1")  # fmt: skip
            h = net.layernorm(
                net.add(h, _ffn(net, h, ffn, f"{b}.ffn"), name=f"{b}.res2"), name=f"{b}.ln2"
            )
    if pre_ln:
        h = net.layernorm(h, name="final_ln")
    out = h
    if mlm_head:
        out = net.layernorm(
            net.gelu(net.dense(out, d_model, name="mlm.dense"), name="mlm.gelu"), name="mlm.ln"
        )
    logits = net.matmul(out, table, tb=True, name="lm_head")
    if mlm_head:
        logits = net.bias_add(logits, net.param("mlm.bias", (vocab,)), name="mlm.bias_add")
    loss = net.softmax_xent(
        logits, net.input("labels", (batch * seq,), dtype="int32"), name="lm_loss"
    )
    if pooler:
        first = net.reshape(net.slice(net.reshape(h, (batch, seq, d_model), name="pool.unflat"), 1, 0, 1, name="pool.first"), (batch, d_model), name="pool.cls")  # fmt: skip
        pooled = net.tanh(net.dense(first, d_model, name="pooler"), name="pooler.tanh")
        nsp = net.softmax_xent(net.dense(pooled, 2, name="nsp"), net.input("nsp_labels", (batch,), dtype="int32"), name="nsp_loss")  # fmt: skip
        loss = net.add(loss, nsp, name="loss")
    return net.build(loss=loss, training=training, optimizer=optimizer)


def bert_large(
    batch: int = 8, seq: int = 128, training: bool = True, optimizer: str = "sgd"
) -> Graph:
    """BERT-Large pre-training graph (24 layers, 1024 wide, 16 heads; 336.2M parameters
    with the pooler, NSP and MLM heads, i.e. HuggingFace's BertForPreTraining)."""
    return transformer(24, 1024, 16, seq, batch, vocab=30522, max_pos=512, type_vocab=2,
                       pooler=True, mlm_head=True, name="bert_large", training=training,
                       optimizer=optimizer)  # fmt: skip


GPT2_SIZES = {
    "small": (12, 768, 12),
    "medium": (24, 1024, 16),
    "large": (36, 1280, 20),
    "xl": (48, 1600, 25),
}


def gpt2(
    size: str = "small",
    batch: int = 8,
    seq: int = 1024,
    training: bool = True,
    optimizer: str = "sgd",
) -> Graph:
    """GPT-2 (small 124.4M, medium 354.8M, large 774.0M, xl 1557.6M parameters)."""
    if size not in GPT2_SIZES:
        raise ValueError(f"gpt2 size must be one of {sorted(GPT2_SIZES)}, got {size!r}")
    layers, d, heads = GPT2_SIZES[size]
    return transformer(layers, d, heads, seq, batch, vocab=50257, max_pos=1024, pre_ln=True,
                       name=f"gpt2_{size}", training=training, optimizer=optimizer)  # fmt: skip


def op_coverage(batch: int = 4) -> Graph:
    """A tiny training graph using every forward op type of the IR (conv, batchnorm,
    max/avg/global pooling, concat, GELU, embedding, layernorm, transpose, batched
    matmul, scale, causal and constant masks, softmax, mul, sigmoid, slice, dense): executors' tests
    run it.

    >>> {"conv2d", "embedding", "layernorm_grad"} <= {o.type for o in op_coverage().ops}
    True
    """
    net = Net("every_op")
    x = net.input("x", (batch, 2, 6, 6))
    h = net.batchnorm(net.conv2d(x, 4, 3, padding=1, bias=False, name="conv"), name="bn")
    h = net.maxpool(h, 3, stride=2, padding=1, name="mp")  # (b, 4, 3, 3)
    h = net.concat([h, net.avgpool(h, 3, stride=1, padding=1, name="ap")], axis=1, name="cat")
    h = net.global_avgpool(net.gelu(h, name="gelu"), name="gap")  # (b, 8)
    ids = net.input("ids", (batch,), dtype="int32")
    h = net.add(h, net.embedding(ids, 6, 8, name="embed"), name="plus")
    h = net.layernorm(net.reshape(h, (batch, 2, 4), name="r3"), name="ln")
    t = net.transpose(net.tanh(h, name="tanh"), (0, 2, 1), name="tr")  # (b, 4, 2)
    s = net.scale(net.batch_matmul(t, t, tb=True, name="bmm"), 0.5)
    mask = np.zeros((4, 4))
    mask[2, 0], mask[3, 1], mask[1, 0] = -np.inf, -np.inf, 0.25  # no row fully masked
    s = net.attn_mask(net.causal_mask(s, name="causal"), mask, name="mask")
    s = net.softmax(s, name="sm")
    s = net.slice(net.mul(s, net.sigmoid(s, name="sig"), name="mul"), 2, 0, 2, name="sl")
    h = net.reshape(s, (batch, 8), name="flat")
    logits = net.dense(h, 3, name="fc")
    return net.build(loss=net.softmax_xent(logits, net.input("labels", (batch,), dtype="int32")))


# ---- torch twins (the torch extra) ----------------------------------------------------------
# Small PyTorch models paired with their imported graphs, so that import fidelity and every
# executor can be checked against torch itself. The torch classes are defined inside the
# factories: importing this module never needs torch.

TORCH_TWINS = ("mlp", "cnn", "transformer_block", "lstm_step")


@dataclass
class TorchTwin:
    """A torch module, the shapes of its ``forward`` inputs, and its imported graph.

    Graph parameters carry torch's names and layouts: ``torch_parameters(twin.module)``
    (:mod:`spartan.dnn.torch_import`) gives their values as they are.
    """

    name: str
    module: Any
    inputs: tuple[tuple[int, ...], ...]
    graph: Graph


def torch_mlp(widths: Sequence[int] = (8, 16, 16, 4)) -> Any:
    """An ``nn.Sequential`` MLP: Linear layers with ReLU between them."""
    import torch.nn as tnn

    layers: list[Any] = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers += [tnn.Linear(a, b)] + ([tnn.ReLU()] if i < len(widths) - 2 else [])
    return tnn.Sequential(*layers)


def torch_cnn(channels: int = 4, classes: int = 10) -> Any:
    """A small CNN: conv -> batchnorm -> relu -> maxpool, a residual conv block, average
    pooling and a linear classifier (train mode: batchnorm uses the batch's statistics)."""
    import torch
    import torch.nn as tnn

    class SmallCNN(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = tnn.Conv2d(3, channels, 3, padding=1, bias=False)
            self.bn1 = tnn.BatchNorm2d(channels)
            self.pool = tnn.MaxPool2d(2)
            self.conv2 = tnn.Conv2d(channels, channels, 3, padding=1)
            self.bn2 = tnn.BatchNorm2d(channels)
            self.avg = tnn.AdaptiveAvgPool2d(1)
            self.fc = tnn.Linear(channels, classes)

        def forward(self, x: Any) -> Any:
            h = self.pool(torch.relu(self.bn1(self.conv1(x))))
            h = h + torch.relu(self.bn2(self.conv2(h)))
            return self.fc(torch.flatten(self.avg(h), 1))

    return SmallCNN()


def torch_transformer_block(d_model: int = 8, heads: int = 2, ffn: int = 16) -> Any:
    """A pre-LN transformer block with hand-written attention: the head split uses
    ``x.shape`` and ``.chunk``, the scores ``softmax(q k^T / sqrt(d)) v``."""
    import torch.nn as tnn

    class Block(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.heads = heads
            self.ln1 = tnn.LayerNorm(d_model)
            self.qkv = tnn.Linear(d_model, 3 * d_model)
            self.proj = tnn.Linear(d_model, d_model)
            self.ln2 = tnn.LayerNorm(d_model)
            self.fc1 = tnn.Linear(d_model, ffn)
            self.act = tnn.GELU()
            self.fc2 = tnn.Linear(ffn, d_model)
            self.drop = tnn.Dropout(0.0)

        def forward(self, x: Any) -> Any:
            b, s, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
            q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * q.size(-1) ** -0.5
            y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, d)
            x = x + self.drop(self.proj(y))
            return x + self.fc2(self.act(self.fc1(self.ln2(x))))

    return Block()


def torch_lstm_step(input_size: int = 6, hidden: int = 8, classes: int = 5) -> Any:
    """One step of ``nn.LSTMCell`` on ``(x, h, c)`` followed by a linear classifier of
    the new hidden state."""
    import torch.nn as tnn

    class LSTMStep(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.cell = tnn.LSTMCell(input_size, hidden)
            self.head = tnn.Linear(hidden, classes)

        def forward(self, x: Any, h: Any, c: Any) -> Any:
            h2, _ = self.cell(x, (h, c))
            return self.head(h2)

    return LSTMStep()


def torch_twin(name: str, batch: int = 4, training: bool = True, seed: int = 0) -> TorchTwin:
    """One of :data:`TORCH_TWINS` at test size, its torch weights seeded with ``seed``.

    >>> twin = torch_twin("mlp")  # doctest: +SKIP
    >>> twin.graph.param_count() == sum(p.numel() for p in twin.module.parameters())  # doctest: +SKIP
    True
    """
    import torch

    from spartan.dnn.torch_import import from_torch

    torch.manual_seed(seed)
    inputs: tuple[tuple[int, ...], ...]
    if name == "mlp":
        module, inputs = torch_mlp(), ((batch, 8),)
    elif name == "cnn":
        module, inputs = torch_cnn(), ((batch, 3, 8, 8),)
    elif name == "transformer_block":
        module, inputs = torch_transformer_block(), ((batch, 4, 8),)
    elif name == "lstm_step":
        module, inputs = torch_lstm_step(), ((batch, 6), (batch, 8), (batch, 8))
    else:
        raise ValueError(f"unknown torch twin {name!r}; one of {TORCH_TWINS}")
    module.train()
    graph = from_torch(module, list(inputs), training=training, name=f"torch_{name}")
    return TorchTwin(name, module, inputs, graph)
