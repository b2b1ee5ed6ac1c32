"""Import a PyTorch model into the DNN graph IR through ``torch.fx`` (optional extra).

The module is traced symbolically and run once on example inputs, which records every
node's output: tensors give the shapes, everything else (``x.shape``, ``x.size(-1)``,
arithmetic on them) is a constant. Each tensor node is then replayed on a
:class:`spartan.dnn.zoo.Net`, which derives the backward pass and optimizer updates.

Parameters keep torch's names (``"fc1.weight"``) and layouts (``nn.Linear``'s weight is
``(out, in)``; the IR multiplies by its transpose), so ``torch_parameters(module)`` gives
the values of the graph's parameters as they are. Supported (see ``docs/guide.md``):

* modules: Linear (on any number of leading batch axes), Conv2d, BatchNorm1d/2d (batch
  statistics, train mode), LayerNorm (last axis), Embedding, MaxPool2d, AvgPool2d,
  AdaptiveAvgPool2d(1), ReLU/GELU/Tanh/Sigmoid, Softmax, Dropout/Identity (dropped),
  Flatten, LSTMCell (with an explicit ``(h, c)``), MultiheadAttention (its weights output
  refused if read; constant ``attn_mask``/``key_padding_mask``);
* functions and methods: ``+ - * /`` (tensors of one shape, or a tensor and a number),
  ``@``/matmul/bmm, linear, relu/gelu/tanh/sigmoid/softmax, layer_norm, dropout, basic
  indexing (``x[:, 0]``, ``x[..., 1:3]``),
  scaled_dot_product_attention (``is_causal``, or a constant bool/float ``attn_mask``:
  a buffer or a tensor built from constants), view/reshape/flatten/
  squeeze/unsqueeze/contiguous, permute/transpose/``.T``, chunk/split/cat, pooling,
  and shape arithmetic (``x.shape``, ``x.size()``, ``x.dim()``, ``x.numel()``).

Anything else raises :class:`UnsupportedTorchOp` (a ``NotImplementedError`` and a
``ValueError``) naming the op and the fx node -- never a silently different model.

>>> import torch  # needs the torch extra  # doctest: +SKIP
>>> nn = torch.nn  # doctest: +SKIP
>>> model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))  # doctest: +SKIP
>>> g = from_torch(model, (32, 8))  # doctest: +SKIP
>>> g.param_count() == sum(p.numel() for p in model.parameters())  # doctest: +SKIP
True
>>> sorted(torch_parameters(model)) == sorted(t.name for t in g.params())  # doctest: +SKIP
True
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from spartan.dnn.graph import DTYPE_BYTES, Graph, TensorKind
from spartan.dnn.zoo import Net

__all__ = ["from_torch", "torch_parameters", "UnsupportedTorchOp"]


class UnsupportedTorchOp(NotImplementedError, ValueError):
    """A traced model uses an op (or an op setting) the importer cannot represent."""


def _torch() -> Any:
    try:
        import torch
        import torch.fx  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("from_torch needs PyTorch: pip install 'spartan[torch]'") from e
    return torch


@dataclass(frozen=True)
class _Ref:
    """A tensor value of the traced program: the IR tensor holding it."""

    name: str


@dataclass(frozen=True, eq=False)
class _Const:
    """A tensor computed from no input or parameter (a mask built in ``forward``, a
    buffer): its value as recorded, usable only where the IR takes a constant."""

    value: np.ndarray


@dataclass(frozen=True)
class _MaskTensor:
    """An attention mask held by a graph tensor (a model input, or computed from one):
    added to the scores at run time by an ``input_mask`` op."""

    ref: _Ref
    keep_if_true: bool  # bool masks: True keeps (SDPA) or masks (MultiheadAttention)


@dataclass(frozen=True)
class _Meta:
    """Recorded shape and dtype of a tensor a node produced."""

    shape: tuple[int, ...]
    dtype: str


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _ir_dtype(torch: Any, dtype: Any) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in DTYPE_BYTES:
        raise UnsupportedTorchOp(f"from_torch: tensors of dtype {dtype} are not supported")
    return name


def torch_parameters(module: Any) -> dict[str, np.ndarray]:
    """The values of ``module``'s parameters under the names :func:`from_torch` gives
    them (torch's own names and layouts; a tied parameter appears once).

    >>> import torch  # doctest: +SKIP
    >>> torch_parameters(torch.nn.Linear(3, 2))["weight"].shape  # doctest: +SKIP
    (2, 3)
    """
    return {name: p.detach().cpu().numpy().copy() for name, p in module.named_parameters()}


def _examples(torch: Any, inputs: Any) -> list[Any]:
    """Example tensors from a shape, a tensor, or a sequence of shapes/tensors."""

    def one(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return v.detach()
        return torch.zeros(tuple(int(d) for d in v))

    if isinstance(inputs, torch.Tensor) or (
        isinstance(inputs, Sequence) and all(isinstance(d, int) for d in inputs)
    ):
        return [one(inputs)]
    return [one(v) for v in inputs]


def _record(
    torch: Any, traced: Any, examples: list[Any], values: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run the traced module once; every node's output as a :class:`_Meta` for tensors
    (structures of them for tuples) or the concrete value for anything else. Tensor
    values go to ``values`` (for constants such as masks)."""
    seen: dict[str, Any] = {}

    def summarize(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return _Meta(tuple(int(d) for d in v.shape), str(v.dtype).removeprefix("torch."))
        if isinstance(v, tuple | list) and any(isinstance(x, torch.Tensor) for x in v):
            return tuple(summarize(x) for x in v)
        return v

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            seen[n.name] = summarize(out)
            if values is not None and isinstance(out, torch.Tensor):
                values[n.name] = out.detach().cpu().numpy().copy()
            return out

    with torch.no_grad():
        Recorder(traced).run(*examples)
    return seen


# Metadata reads of a tensor: their results are constants of the traced shapes.
_META_METHODS = ("size", "dim", "numel")
_META_ATTRS = ("shape", "ndim", "dtype", "device")
_SCALAR_OPS = (
    operator.add, operator.sub, operator.mul, operator.floordiv, operator.truediv,
    operator.mod, operator.pow, operator.neg, operator.getitem,
)  # fmt: skip


class _Importer:
    def __init__(
        self,
        torch: Any,
        module: Any,
        traced: Any,
        seen: dict[str, Any],
        name: str,
        values: dict[str, Any] | None = None,
    ):
        self.torch, self.nn, self.F = torch, torch.nn, torch.nn.functional
        self.module, self.traced, self.seen = module, traced, seen
        self.values = values or {}
        self.modules = dict(traced.named_modules())
        params = list(module.parameters())
        dtype = _ir_dtype(torch, params[0].dtype) if params else "float32"
        self.net = Net(name, dtype=dtype)
        self.env: dict[str, Any] = {}
        # torch's name for every parameter object (tied parameters share the first name)
        self.pname = {id(p): n for n, p in module.named_parameters()}
        self.outputs: list[str] = []
        self.node: Any = None

    # ---- helpers ----------------------------------------------------------------------
    def refuse(self, what: str) -> UnsupportedTorchOp:
        n = self.node
        return UnsupportedTorchOp(
            f"from_torch: {what} at node {n.name!r} ({n.op} {self.target_name(n)}) is not "
            "supported; see the supported ops in spartan.dnn.torch_import"
        )

    @staticmethod
    def target_name(n: Any) -> str:
        """``torch.exp``, ``operator.add``, or a method/module name as fx records it."""
        t = n.target
        if isinstance(t, str):
            return t
        name = getattr(t, "__name__", None) or repr(t)
        module = (getattr(t, "__module__", None) or "").removeprefix("_")
        return f"{module}.{name}" if module else name

    def val(self, a: Any) -> Any:
        """An argument with nodes replaced by their values (refs or constants)."""
        fx = self.torch.fx
        if isinstance(a, fx.Node):
            return self.env[a.name]
        if isinstance(a, tuple | list):
            return type(a)(self.val(x) for x in a)
        if isinstance(a, dict):
            return {k: self.val(v) for k, v in a.items()}
        return a

    def bind(self, args: Sequence[Any], kwargs: dict, names: Sequence[str], **defaults: Any):
        """Positional + keyword arguments by parameter name."""
        if len(args) > len(names):
            raise self.refuse(f"{len(args)} positional arguments")
        out = dict(defaults)
        out.update(zip(names, args))
        unknown = set(kwargs) - set(names)
        if unknown:
            raise self.refuse(f"argument(s) {sorted(unknown)}")
        out.update(kwargs)
        return out

    def shape(self, r: _Ref) -> tuple[int, ...]:
        return self.net.shape(r.name)

    def out_shape(self) -> tuple[int, ...]:
        meta = self.seen[self.node.name]
        if not isinstance(meta, _Meta):
            raise self.refuse("a node that does not produce one tensor")
        return meta.shape

    def tensor(self, v: Any, what: str) -> _Ref:
        if isinstance(v, _Const):
            raise self.refuse(f"{what} a constant tensor (only attention masks may be)")
        if not isinstance(v, _Ref):
            raise self.refuse(f"{what} that is not a tensor ({type(v).__name__})")
        return v

    def param(self, p: Any) -> str:
        """The IR parameter for torch parameter ``p`` (created on first use)."""
        if p is None:
            raise self.refuse("a missing parameter")
        name = self.pname.get(id(p))
        if name is None:
            raise self.refuse("a tensor that is not a parameter of the module")
        if name not in self.net.graph.tensors:
            self.net.param(name, tuple(p.shape))
        return name

    def axis(self, d: int, nd: int) -> int:
        if not -nd <= d < nd:
            raise self.refuse(f"axis {d} of a {nd}-d tensor")
        return d % nd

    # ---- building blocks --------------------------------------------------------------
    def reshape(self, x: _Ref, shape: Sequence[int], name: str) -> _Ref:
        shape = tuple(int(d) for d in shape)
        if shape == self.shape(x):
            return x
        return _Ref(self.net.reshape(x.name, shape, name=name))

    def linear(self, x: _Ref, w: str, b: str | None, name: str) -> _Ref:
        """``x @ w.T + b`` for ``w`` of torch's (out, in) layout; the leading axes of
        ``x`` are batch axes (flattened around a 2-D product and restored)."""
        s = self.shape(x)
        (out_f, in_f) = self.net.shape(w)
        if s[-1] != in_f:
            raise self.refuse(f"linear of a {s} input with a ({out_f}, {in_f}) weight")
        x2 = self.reshape(x, (math.prod(s[:-1]), in_f), f"{name}.flat")
        y = self.net.matmul(x2.name, w, tb=True, name=name)
        if b is not None:
            y = self.net.bias_add(y, b, name=f"{name}.bias")
        return self.reshape(_Ref(y), (*s[:-1], out_f), f"{name}.unflat")

    def matmul(self, a: _Ref, b: _Ref, name: str) -> _Ref:
        sa, sb = self.shape(a), self.shape(b)
        if len(sa) >= 2 and len(sb) == 2:
            a2 = self.reshape(a, (math.prod(sa[:-1]), sa[-1]), f"{name}.flat")
            y = _Ref(self.net.matmul(a2.name, b.name, name=name))
            return self.reshape(y, (*sa[:-1], sb[-1]), f"{name}.unflat")
        if len(sa) == len(sb) >= 3 and sa[:-2] == sb[:-2]:
            lead = math.prod(sa[:-2])
            a3 = self.reshape(a, (lead, *sa[-2:]), f"{name}.a3")
            b3 = self.reshape(b, (lead, *sb[-2:]), f"{name}.b3")
            y = _Ref(self.net.batch_matmul(a3.name, b3.name, name=name))
            return self.reshape(y, (*sa[:-1], sb[-1]), f"{name}.unflat")
        raise self.refuse(f"matmul of shapes {sa} and {sb} (broadcasting)")

    def attention(
        self,
        q: _Ref,
        k: _Ref,
        v: _Ref,
        scale: float | None,
        name: str,
        causal: bool = False,
        mask: np.ndarray | None = None,
        runtime: Sequence[_MaskTensor] = (),
    ) -> _Ref:
        """softmax(q k^T * scale + mask) v over the last two axes (leading axes are
        batch); with ``causal`` query i attends to keys j <= i. ``mask`` is additive
        (float; -inf where masked) and broadcasts to the scores' shape; ``runtime`` masks
        are tensors that broadcast to the scores' full shape (q's leading axes, L, S)."""
        sq, sk, sv = self.shape(q), self.shape(k), self.shape(v)
        if len(sq) < 3 or sq[:-2] != sk[:-2] or sk[:-1] != sv[:-1] or sq[-1] != sk[-1]:
            raise self.refuse(f"attention over shapes {sq}, {sk}, {sv}")
        lead = math.prod(sq[:-2])
        q3 = self.reshape(q, (lead, *sq[-2:]), f"{name}.q3")
        k3 = self.reshape(k, (lead, *sk[-2:]), f"{name}.k3")
        v3 = self.reshape(v, (lead, *sv[-2:]), f"{name}.v3")
        s = self.net.batch_matmul(q3.name, k3.name, tb=True, name=f"{name}.scores")
        factor = scale if scale is not None else 1 / math.sqrt(sq[-1])
        s = self.net.scale(s, float(factor), name=f"{name}.scaled")
        if causal:
            s = self.net.causal_mask(s, name=f"{name}.causal")
        if mask is not None:
            full = (*sq[:-1], sk[-2])
            try:
                m = np.broadcast_to(mask, np.broadcast_shapes(mask.shape, full))
            except ValueError as e:
                bad = f"an attention mask of shape {mask.shape} for scores {full}"
                raise self.refuse(bad) from e
            if m.shape != full:
                raise self.refuse(f"an attention mask of shape {mask.shape} for scores {full}")
            lead_is_one = all(d == 1 for d in mask.shape[:-2]) or mask.ndim <= 2
            m = m[(0,) * (m.ndim - 2)] if lead_is_one else m.reshape(lead, *full[-2:])
            s = self.net.attn_mask(s, np.ascontiguousarray(m), name=f"{name}.mask")
        if runtime:  # on the scores' full shape, so that the masks broadcast as in torch
            full = (*sq[:-1], sk[-2])
            s4 = self.reshape(_Ref(s), full, f"{name}.full")
            for i, rm in enumerate(runtime):
                sm = self.shape(rm.ref)
                try:
                    fits = np.broadcast_shapes(sm, full) == full
                except ValueError:
                    fits = False
                if not fits:
                    raise self.refuse(f"an attention mask of shape {sm} for scores {full}")
                s4 = _Ref(self.net.input_mask(s4.name, rm.ref.name, rm.keep_if_true,
                                              name=f"{name}.input_mask{i}"))  # fmt: skip
            s = self.reshape(s4, (lead, *full[-2:]), f"{name}.lead").name
        p = self.net.softmax(s, name=f"{name}.softmax")
        ctx = _Ref(self.net.batch_matmul(p, v3.name, name=name))
        return self.reshape(ctx, (*sq[:-1], sv[-1]), f"{name}.unflat")

    def mask_tensor(self, m: Any, keep_if_true: bool) -> _MaskTensor | None:
        """An attention mask held by a graph tensor (an input, or computed from one), or
        None for no mask or a constant one (:meth:`additive_mask`)."""
        if not isinstance(m, _Ref):
            return None
        dtype = self.net.graph.tensors[m.name].dtype
        if dtype != "bool" and not dtype.startswith(("float", "bfloat")):
            raise self.refuse(f"an attention mask of dtype {dtype} (bool or float only)")
        return _MaskTensor(m, keep_if_true)

    def additive_mask(self, m: Any, keep_if_true: bool) -> np.ndarray | None:
        """A constant attention mask as an additive float mask (0 or -inf for a bool
        mask: SDPA keeps ``True`` entries, MultiheadAttention masks them out); None for
        no mask or one held by a tensor (:meth:`mask_tensor`)."""
        if m is None or isinstance(m, _Ref):
            return None
        if not isinstance(m, _Const):
            raise self.refuse(f"an attention mask of type {type(m).__name__}")
        a = m.value
        if a.dtype == np.bool_:
            allowed = a if keep_if_true else ~a
            return np.where(allowed, 0.0, -np.inf)
        return a.astype(np.float64)

    def unary(self, kind: str, x: _Ref, name: str, **attrs: Any) -> _Ref:
        return _Ref(self.net.unary(kind, x.name, name=name, **attrs))

    def softmax(self, x: _Ref, dim: int | None, name: str) -> _Ref:
        nd = len(self.shape(x))
        if dim is None or self.axis(dim, nd) != nd - 1:
            raise self.refuse(f"softmax over axis {dim} (only the last axis is supported)")
        return _Ref(self.net.softmax(x.name, name=name))

    def arith(self, fn: str, a: Any, b: Any, name: str) -> _Ref:
        """Element-wise + - * / between same-shape tensors, or a tensor and a number."""
        num = (int, float)
        if isinstance(a, _Ref) and isinstance(b, _Ref):
            sa, sb = self.shape(a), self.shape(b)
            if sa != sb:
                pb = self.net.graph.tensors[b.name]
                if fn == "add" and len(sb) == 1 and sb[0] == sa[-1] and pb.kind is TensorKind.PARAM:
                    return _Ref(self.net.bias_add(a.name, b.name, name=name))
                raise self.refuse(f"{fn} of shapes {sa} and {sb} (broadcasting)")
            if fn == "add":
                return _Ref(self.net.add(a.name, b.name, name=name))
            if fn == "sub":
                nb = self.net.scale(b.name, -1.0, name=f"{name}.neg")
                return _Ref(self.net.add(a.name, nb, name=name))
            if fn == "mul":
                return _Ref(self.net.mul(a.name, b.name, name=name))
            raise self.refuse(f"{fn} of two tensors")
        if fn == "mul" and isinstance(b, _Ref) and isinstance(a, num):
            a, b = b, a
        if isinstance(a, _Ref) and isinstance(b, num) and not isinstance(b, bool):
            if fn == "mul":
                return _Ref(self.net.scale(a.name, float(b), name=name))
            if fn == "div" and b != 0:
                return _Ref(self.net.scale(a.name, 1.0 / float(b), name=name))
        raise self.refuse(f"{fn} of a tensor and a {type(b).__name__} (or a number first)")

    def pieces(self, x: _Ref, axis: int, sizes: Sequence[int], name: str) -> tuple[_Ref, ...]:
        """Split ``x`` along ``axis`` into consecutive pieces of ``sizes``."""
        if len(sizes) == 1:
            return (x,)
        out, start = [], 0
        for i, n in enumerate(sizes):
            out.append(_Ref(self.net.slice(x.name, axis, start, start + n, name=f"{name}.{i}")))
            start += n
        return tuple(out)

    # ---- node dispatch ----------------------------------------------------------------
    def run(self, examples: list[Any]) -> None:
        placeholders = [n for n in self.traced.graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(examples):
            raise ValueError(
                f"from_torch: the module takes {len(placeholders)} inputs, "
                f"{len(examples)} input shapes were given"
            )
        for node in self.traced.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                meta = self.seen[node.name]
                if node.name in self.pname.values():
                    raise ValueError(f"from_torch: input {node.name!r} clashes with a parameter")
                dtype = meta.dtype if meta.dtype in DTYPE_BYTES else "float32"
                self.env[node.name] = _Ref(self.net.input(node.name, meta.shape, dtype=dtype))
            elif node.op == "output":
                res = self.val(node.args[0])
                flat = res if isinstance(res, tuple | list) else (res,)
                self.outputs = [r.name for r in flat if isinstance(r, _Ref)]
                if not self.outputs:
                    raise self.refuse("a module without tensor outputs")
            elif node.op == "get_attr":
                p = self.traced
                for part in node.target.split("."):
                    p = getattr(p, part)
                if id(p) in self.pname:
                    self.env[node.name] = _Ref(self.param(p))
                else:  # a buffer: a constant (a mask); refused where a tensor is needed
                    self.env[node.name] = _Const(self.values[node.name])
            elif self.is_constant(node):
                self.env[node.name] = _Const(self.values[node.name])
            elif not self.produces_tensor(node):
                self.constant(node)
            elif node.op == "call_module":
                self.env[node.name] = self.call_module(node)
            elif node.op in ("call_function", "call_method"):
                self.env[node.name] = self.call(node)
            else:  # pragma: no cover - fx has no other node kinds
                raise self.refuse(f"node kind {node.op}")

    def is_constant(self, node: Any) -> bool:
        """A function/method producing one tensor from constants only (``torch.ones``,
        ``.tril()`` of a buffer): its recorded value stands in for it."""
        if node.op not in ("call_function", "call_method") or node.name not in self.values:
            return False
        found: list[Any] = []
        self.torch.fx.node.map_arg((node.args, node.kwargs), found.append)

        def has_ref(v: Any) -> bool:
            if isinstance(v, tuple | list):
                return any(has_ref(x) for x in v)
            return isinstance(v, _Ref)

        return not any(has_ref(self.env[a.name]) for a in found)

    def produces_tensor(self, node: Any) -> bool:
        out = self.seen[node.name]
        return isinstance(out, _Meta) or (
            isinstance(out, tuple) and any(isinstance(x, _Meta) for x in out)
        )

    def constant(self, node: Any) -> None:
        """A node computing a non-tensor: allowed for metadata reads of tensors (shape
        arithmetic); a value computed from a tensor's contents is refused."""
        args = [self.val(a) for a in node.args]
        reads_tensor = any(isinstance(a, _Ref) for a in args)
        if node.op == "call_method" and node.target in _META_METHODS:
            ok = True
        elif node.op == "call_function" and node.target is getattr:
            ok = args[1] in _META_ATTRS
        elif node.op == "call_function" and node.target in _SCALAR_OPS:
            ok = not reads_tensor
        else:
            ok = not reads_tensor and node.op == "call_function"
        if not ok:
            raise self.refuse("a non-tensor value computed from a tensor")
        self.env[node.name] = self.seen[node.name]

    def call_module(self, node: Any) -> Any:
        nn, m, n = self.nn, self.modules[node.target], node.name
        args = [self.val(a) for a in node.args]
        kind = type(m)
        if isinstance(m, nn.LSTMCell):
            return self.lstm_cell(m, args, n)
        if isinstance(m, nn.MultiheadAttention):
            return self.multihead_attention(node, m, args, n)
        x = self.tensor(args[0], f"the input of {kind.__name__}")
        if isinstance(m, nn.Linear):
            b = self.param(m.bias) if m.bias is not None else None
            return self.linear(x, self.param(m.weight), b, n)
        if isinstance(m, nn.Conv2d):
            return self.conv2d(x, m, n)
        if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
            if not m.affine:
                raise self.refuse(f"{kind.__name__} without affine parameters")
            if not m.training and m.track_running_stats:
                raise self.refuse(
                    f"{kind.__name__} in eval mode (running statistics); the IR normalizes "
                    "with the batch's statistics, as in train mode: call module.train()"
                )
            gb = (self.param(m.weight), self.param(m.bias))
            return _Ref(self.net.batchnorm(x.name, name=n, eps=m.eps, params=gb))
        if isinstance(m, nn.LayerNorm):
            if len(m.normalized_shape) != 1 or m.weight is None or m.bias is None:
                raise self.refuse("LayerNorm other than over the last axis with weight and bias")
            gb = (self.param(m.weight), self.param(m.bias))
            return _Ref(self.net.layernorm(x.name, name=n, eps=m.eps, params=gb))
        if isinstance(m, nn.Embedding):
            if m.padding_idx is not None or m.max_norm is not None:
                raise self.refuse("Embedding with padding_idx or max_norm")
            table = self.param(m.weight)
            out = (*self.shape(x), m.embedding_dim)
            return _Ref(self.net.op("embedding", [x.name, table], out, math.prod(out), n))
        if isinstance(m, nn.ReLU | nn.Tanh | nn.Sigmoid):
            return self.unary(kind.__name__.lower(), x, n)
        if isinstance(m, nn.GELU):
            return self.unary("gelu", x, n, approximate=m.approximate)
        if isinstance(m, nn.Softmax):
            return self.softmax(x, m.dim, n)
        if isinstance(m, nn.MaxPool2d | nn.AvgPool2d):
            return self.pool(x, "max" if isinstance(m, nn.MaxPool2d) else "avg", m, n)
        if isinstance(m, nn.AdaptiveAvgPool2d):
            return self.adaptive_avgpool(x, m.output_size, n)
        if isinstance(m, nn.Dropout | nn.Identity):
            return x
        if isinstance(m, nn.Flatten):
            return self.reshape(x, self.out_shape(), n)
        raise self.refuse(f"module {kind.__module__}.{kind.__name__} ({node.target!r})")

    def conv2d(self, x: _Ref, m: Any, n: str) -> _Ref:
        k = _pair(m.kernel_size)
        if m.groups != 1 or _pair(m.dilation) != (1, 1) or m.padding_mode != "zeros":
            raise self.refuse("Conv2d with groups, dilation or non-zero padding mode")
        s = _pair(m.stride)
        if s[0] != s[1]:
            raise self.refuse(f"Conv2d with stride {s} (only square strides)")
        if m.padding == "valid":
            pad = (0, 0)
        elif m.padding == "same":
            if k[0] % 2 == 0 or k[1] % 2 == 0:
                raise self.refuse("Conv2d padding='same' with an even kernel")
            pad = (k[0] // 2, k[1] // 2)
        else:
            pad = _pair(m.padding)
        if len(self.shape(x)) != 4:
            raise self.refuse(f"Conv2d on a {len(self.shape(x))}-d input (only NCHW)")
        out = self.out_shape()
        c = self.shape(x)[1]
        flops = 2 * math.prod(out) * c * k[0] * k[1]
        w = self.param(m.weight)
        y = self.net.op("conv2d", [x.name, w], out, flops, n, stride=s[0], padding=pad)
        if m.bias is not None:
            y = self.net.bias_add(y, self.param(m.bias), axis=1, name=f"{n}.bias")
        return _Ref(y)

    def pool(self, x: _Ref, kind: str, m: Any, n: str) -> _Ref:
        k, s, p = _pair(m.kernel_size), _pair(m.stride or m.kernel_size), _pair(m.padding)
        if getattr(m, "ceil_mode", False) or _pair(getattr(m, "dilation", 1)) != (1, 1):
            raise self.refuse(f"{kind}pool with ceil_mode or dilation")
        if kind == "avg" and (not m.count_include_pad or m.divisor_override is not None):
            raise self.refuse("AvgPool2d with count_include_pad=False or divisor_override")
        if k[0] != k[1] or s[0] != s[1] or p[0] != p[1]:
            raise self.refuse(f"{kind}pool with a non-square window {k}, stride {s}, pad {p}")
        pool = self.net.maxpool if kind == "max" else self.net.avgpool
        return _Ref(pool(x.name, k[0], s[0], p[0], name=n))

    def adaptive_avgpool(self, x: _Ref, size: Any, n: str) -> _Ref:
        if _pair(size) != (1, 1):
            raise self.refuse(f"adaptive average pooling to {size} (only to 1x1)")
        nb, c = self.shape(x)[:2]
        g = _Ref(self.net.global_avgpool(x.name, name=n))
        return self.reshape(g, (nb, c, 1, 1), f"{n}.4d")

    def multihead_attention(self, node: Any, m: Any, args: list[Any], n: str) -> tuple:
        """torch's MultiheadAttention: q/k/v from ``in_proj_weight`` (rows q, k, v; torch's
        (3E, E) layout), scaled dot-product attention per head, then ``out_proj``. The
        attention weights are refused if the model reads them (an unused ``_`` of
        ``out, _ = mha(x, x, x)`` is fine)."""
        names = ("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask",
                 "average_attn_weights", "is_causal")  # fmt: skip
        kwargs = {k: self.val(v) for k, v in node.kwargs.items()}
        p = self.bind(args, kwargs, names, key_padding_mask=None, need_weights=True,
                      attn_mask=None, average_attn_weights=True, is_causal=False)  # fmt: skip
        for user in node.users:  # (``out, _ = mha(...)`` makes an unused getitem 1)
            item = user.args[1] if user.target is operator.getitem else None
            if item == 0 or (item == 1 and not user.users):
                continue
            raise self.refuse(
                "reading MultiheadAttention's attention weights "
                f"(need_weights={p['need_weights']}; only the output [0] is imported)"
            )
        if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
            raise self.refuse("MultiheadAttention with kdim/vdim, add_bias_kv or add_zero_attn")
        q, k, v = (self.tensor(p[a], f"the {a} of MultiheadAttention") for a in names[:3])
        e, h = m.embed_dim, m.num_heads
        hd = e // h
        w, b = self.param(m.in_proj_weight), m.in_proj_bias
        bn = self.param(b) if b is not None else None
        if q == k == v:  # self-attention: one (E -> 3E) product, split in three
            qkv = self.linear(q, w, bn, f"{n}.in_proj")
            pq, pk, pv = self.pieces(qkv, len(self.shape(qkv)) - 1, [e] * 3, f"{n}.qkv")
        else:
            projected = []
            for i, x in enumerate((q, k, v)):
                wi = self.net.slice(w, 0, i * e, (i + 1) * e, name=f"{n}.w{i}")
                bi = self.net.slice(bn, 0, i * e, (i + 1) * e, name=f"{n}.b{i}") if bn else None
                projected.append(self.linear(x, wi, bi, f"{n}.proj{i}"))
            pq, pk, pv = projected

        def heads(x: _Ref, tag: str) -> _Ref:  # -> (N, H, L, hd)
            s = self.shape(x)
            x4 = self.reshape(x, (*s[:2], h, hd), f"{n}.{tag}4")
            perm = (0, 2, 1, 3) if m.batch_first else (1, 2, 0, 3)
            return _Ref(self.net.transpose(x4.name, perm, name=f"{n}.{tag}h"))

        qh, kh, vh = heads(pq, "q"), heads(pk, "k"), heads(pv, "v")
        nb, _, lq, _ = self.shape(qh)
        ls = self.shape(kh)[2]
        mask = self.additive_mask(p["attn_mask"], keep_if_true=False)
        if mask is not None and mask.ndim == 3:  # (N*H, L, S) -> (N, H, L, S)
            mask = mask.reshape(nb, h, lq, ls)
        kpm = self.additive_mask(p["key_padding_mask"], keep_if_true=False)
        if kpm is not None:  # (N, S) -> (N, 1, 1, S)
            kpm = kpm.reshape(nb, 1, 1, ls)
            mask = kpm if mask is None else mask + kpm
        runtime = []  # masks held by tensors: the same reshapes, as graph ops
        am = self.mask_tensor(p["attn_mask"], keep_if_true=False)
        if am is not None:
            if len(self.shape(am.ref)) == 3:
                am = _MaskTensor(self.reshape(am.ref, (nb, h, lq, ls), f"{n}.attn_mask4"), False)
            runtime.append(am)
        kt = self.mask_tensor(p["key_padding_mask"], keep_if_true=False)
        if kt is not None:
            if self.shape(kt.ref) != (nb, ls):
                raise self.refuse(f"a key_padding_mask of shape {self.shape(kt.ref)}")
            runtime.append(_MaskTensor(self.reshape(kt.ref, (nb, 1, 1, ls), f"{n}.kpm4"), False))
        ctx = self.attention(qh, kh, vh, None, f"{n}.attn", mask=mask, runtime=runtime)
        perm = (0, 2, 1, 3) if m.batch_first else (2, 0, 1, 3)
        ctx = _Ref(self.net.transpose(ctx.name, perm, name=f"{n}.ctx"))
        ctx = self.reshape(ctx, (*self.shape(ctx)[:2], e), f"{n}.merge")
        ob = self.param(m.out_proj.bias) if m.out_proj.bias is not None else None
        out = self.linear(ctx, self.param(m.out_proj.weight), ob, n)
        return (out, None)

    def lstm_cell(self, m: Any, args: list[Any], n: str) -> tuple[_Ref, _Ref]:
        """torch's LSTMCell: gates (i, f, g, o) = x W_ih^T + b_ih + h W_hh^T + b_hh."""
        if len(args) != 2 or not isinstance(args[1], tuple) or len(args[1]) != 2:
            raise self.refuse("LSTMCell without an explicit (h, c) state")
        x = self.tensor(args[0], "the input of LSTMCell")
        h, c = (self.tensor(v, "the state of LSTMCell") for v in args[1])
        net, hidden = self.net, m.hidden_size
        zx = self.linear(x, self.param(m.weight_ih), None, f"{n}.ih")
        zh = self.linear(h, self.param(m.weight_hh), None, f"{n}.hh")
        z = net.add(zx.name, zh.name, name=f"{n}.z")
        if m.bias:
            z = net.bias_add(z, self.param(m.bias_ih), name=f"{n}.bias_ih")
            z = net.bias_add(z, self.param(m.bias_hh), name=f"{n}.bias_hh")
        i, f, g, o = self.pieces(_Ref(z), 1, [hidden] * 4, f"{n}.gate")
        i, f, o = (
            self.unary("sigmoid", v, f"{n}.sig{k}") for v, k in ((i, "i"), (f, "f"), (o, "o"))
        )
        g = self.unary("tanh", g, f"{n}.tanh_g")
        c2 = net.add(
            net.mul(f.name, c.name, name=f"{n}.fc"), net.mul(i.name, g.name, name=f"{n}.ig"),
            name=f"{n}.c",
        )  # fmt: skip
        h2 = net.mul(o.name, net.tanh(c2, name=f"{n}.tanh_c"), name=f"{n}.h")
        return _Ref(h2), _Ref(c2)

    def call(self, node: Any) -> Any:
        """call_function / call_method nodes that produce tensors."""
        torch, F, n = self.torch, self.F, node.name
        args = [self.val(a) for a in node.args]
        kwargs = {k: self.val(v) for k, v in node.kwargs.items()}
        fn = node.target
        method = fn if node.op == "call_method" else None

        def is_(*targets: Any) -> bool:
            return node.op == "call_function" and any(fn is t for t in targets)

        def meth(*names: str) -> bool:
            return method in names

        if is_(operator.getitem):
            seq, idx = args
            if isinstance(seq, tuple) and isinstance(idx, int):
                return seq[idx]
            if isinstance(seq, _Ref):
                return self.index(seq, idx, n)
            raise self.refuse("indexing")
        arith = {"add": (operator.add, operator.iadd, torch.add),
                 "sub": (operator.sub, operator.isub, torch.sub),
                 "mul": (operator.mul, operator.imul, torch.mul),
                 "div": (operator.truediv, operator.itruediv, torch.div)}  # fmt: skip
        for name, fns in arith.items():
            if is_(*fns) or meth(name):
                if kwargs.get("alpha", 1) != 1 or kwargs.get("rounding_mode") is not None:
                    raise self.refuse(f"{name} with alpha or rounding_mode")
                return self.arith(name, args[0], args[1], n)
        compare = {"eq": (operator.eq, torch.eq), "ne": (operator.ne, torch.ne),
                   "lt": (operator.lt, torch.lt), "le": (operator.le, torch.le),
                   "gt": (operator.gt, torch.gt), "ge": (operator.ge, torch.ge)}  # fmt: skip
        for name, fns in compare.items():
            if is_(*fns) or meth(name):
                x, value = args[0], args[1]
                if not isinstance(x, _Ref) or not isinstance(value, int | float):
                    raise self.refuse(f"{name} other than between a tensor and a number")
                return _Ref(self.net.compare(x.name, name, float(value), name=n))
        if is_(operator.invert, torch.logical_not) or meth("logical_not", "__invert__"):
            x = self.tensor(args[0], "a logical not of")
            if self.net.graph.tensors[x.name].dtype != "bool":
                raise self.refuse("~ of a tensor that is not bool")
            return _Ref(self.net.logical_not(x.name, name=n))
        if is_(torch.masked_fill) or meth("masked_fill"):
            return self.masked_fill(args, kwargs, n)
        if is_(operator.neg, torch.neg) or meth("neg"):
            return _Ref(self.net.scale(self.tensor(args[0], "neg of").name, -1.0, name=n))
        if is_(operator.matmul, torch.matmul, torch.bmm, torch.mm) or meth("matmul", "bmm", "mm"):
            lhs, rhs = (self.tensor(v, "a matmul operand") for v in args[:2])
            return self.matmul(lhs, rhs, n)
        if is_(F.linear):
            p = self.bind(args, kwargs, ("input", "weight", "bias"), bias=None)
            bias = p["bias"].name if p["bias"] is not None else None
            x = self.tensor(p["input"], "the input of linear")
            return self.linear(x, self.tensor(p["weight"], "a weight").name, bias, n)
        unaries: tuple[tuple[str, tuple[Any, ...]], ...]
        unaries = (("relu", (F.relu, torch.relu)), ("tanh", (F.tanh, torch.tanh)),
                   ("sigmoid", (F.sigmoid, torch.sigmoid)))  # fmt: skip
        for kind, ufns in unaries:
            if is_(*ufns) or meth(kind):
                if kwargs.get("inplace"):
                    raise self.refuse(f"in-place {kind}")
                return self.unary(kind, self.tensor(args[0], f"{kind} of"), n)
        if is_(F.gelu):
            p = self.bind(args, kwargs, ("input", "approximate"), approximate="none")
            return self.unary("gelu", p["input"], n, approximate=p["approximate"])
        if is_(F.softmax, torch.softmax) or meth("softmax"):
            p = self.bind(args, kwargs, ("input", "dim", "_stacklevel", "dtype"), dim=None)
            if p.get("dtype") is not None:
                raise self.refuse("softmax with a dtype")
            return self.softmax(self.tensor(p["input"], "softmax of"), p["dim"], n)
        if is_(F.layer_norm):
            p = self.bind(args, kwargs, ("input", "normalized_shape", "weight", "bias", "eps"),
                          weight=None, bias=None, eps=1e-5)  # fmt: skip
            x = self.tensor(p["input"], "layer_norm of")
            if p["weight"] is None or p["bias"] is None or len(p["normalized_shape"]) != 1:
                raise self.refuse("layer_norm without weight and bias or over several axes")
            gb = (p["weight"].name, p["bias"].name)
            return _Ref(self.net.layernorm(x.name, name=n, eps=p["eps"], params=gb))
        if is_(F.dropout) or meth("contiguous", "clone"):
            return self.tensor(args[0], "the input")
        if is_(F.scaled_dot_product_attention):
            names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
                     "enable_gqa")  # fmt: skip
            p = self.bind(args, kwargs, names, attn_mask=None, dropout_p=0.0, is_causal=False,
                          scale=None, enable_gqa=False)  # fmt: skip
            if p["dropout_p"] or p["enable_gqa"]:
                raise self.refuse("scaled_dot_product_attention with dropout or GQA")
            q, k, v = (self.tensor(p[a], "an attention operand") for a in names[:3])
            mask = self.additive_mask(p["attn_mask"], keep_if_true=True)
            rt = self.mask_tensor(p["attn_mask"], keep_if_true=True)
            return self.attention(q, k, v, p["scale"], n, bool(p["is_causal"]), mask,
                                  runtime=[rt] if rt else [])  # fmt: skip
        if is_(torch.flatten, torch.reshape, torch.squeeze, torch.unsqueeze) or meth(
            "view", "reshape", "flatten", "squeeze", "unsqueeze", "view_as", "reshape_as"
        ):
            return self.reshape(self.tensor(args[0], "a reshape of"), self.out_shape(), n)
        if is_(torch.transpose, torch.permute, torch.t) or meth("transpose", "permute", "t"):
            return self.permute(node, args, kwargs)
        if node.op == "call_function" and fn is getattr and args[1] in ("T", "mT"):
            return self.permute(node, args, kwargs)
        if is_(torch.chunk, torch.split) or meth("chunk", "split"):
            x = self.tensor(args[0], "a split of")
            size_arg = "chunks" if "chunk" in str(getattr(fn, "__name__", fn)) else "sizes"
            p = self.bind(args, kwargs, ("input", size_arg, "dim"), dim=0)
            axis = self.axis(p["dim"], len(self.shape(x)))
            sizes = [meta.shape[axis] for meta in self.seen[n]]
            return self.pieces(x, axis, sizes, n)
        if is_(torch.cat, torch.concat, torch.concatenate):
            p = self.bind(args, kwargs, ("tensors", "dim"), dim=0)
            xs = [self.tensor(t, "a cat operand") for t in p["tensors"]]
            if len(xs) == 1:
                return xs[0]
            axis = self.axis(p["dim"], len(self.shape(xs[0])))
            return _Ref(self.net.concat([x.name for x in xs], axis=axis, name=n))
        if is_(F.max_pool2d, F.avg_pool2d):
            return self.functional_pool(node, args, kwargs)
        if is_(F.adaptive_avg_pool2d):
            return self.adaptive_avgpool(self.tensor(args[0], "pooling of"), args[1], n)
        if meth("to", "float", "type_as") or is_(torch.Tensor.to):
            x = self.tensor(args[0], "a conversion of")
            if self.seen[n].dtype != self.net.graph.tensors[x.name].dtype:
                raise self.refuse("a dtype conversion")
            return x
        what = f"method .{fn}()" if method else f"function {self.target_name(node)}"
        raise self.refuse(what)

    def masked_fill(self, args: list[Any], kwargs: dict[str, Any], name: str) -> _Ref:
        """``x.masked_fill(mask, value)``: a bool mask held by a tensor (an input, or
        computed from one) gives a ``masked_fill`` op; a constant mask is allowed with
        ``value=-inf`` (attention's form) and becomes a constant ``attn_mask``."""
        p = self.bind(args, kwargs, ("input", "mask", "value"))
        x = self.tensor(p["input"], "masked_fill of")
        mask, value = p["mask"], p["value"]
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.refuse(f"masked_fill with a value of type {type(value).__name__}")
        sx = self.shape(x)
        if isinstance(mask, _Ref):
            if self.net.graph.tensors[mask.name].dtype != "bool":
                raise self.refuse("masked_fill with a mask that is not bool")
            try:
                return _Ref(self.net.masked_fill(x.name, mask.name, float(value), name=name))
            except ValueError as e:
                raise self.refuse(
                    f"masked_fill of shape {sx} with a {self.shape(mask)} mask"
                ) from e
        if not isinstance(mask, _Const) or mask.value.dtype != np.bool_:
            raise self.refuse("masked_fill with a mask that is not a bool tensor")
        m = mask.value
        if value != -math.inf:
            raise self.refuse("masked_fill of a constant mask with a value other than -inf")
        if m.ndim > len(sx) or np.broadcast_shapes(m.shape, sx) != sx:
            raise self.refuse(f"masked_fill of shape {sx} with a {m.shape} mask")
        full = m.reshape((1,) * (len(sx) - m.ndim) + m.shape)
        additive = np.where(full, -np.inf, 0.0)
        return _Ref(self.net.attn_mask(x.name, np.ascontiguousarray(additive), name=name))

    def index(self, x: _Ref, idx: Any, name: str) -> _Ref:
        """Basic indexing ``x[...]`` with ints, unit-step slices, ``None`` and ``...``:
        one slice op per narrowed axis, then a reshape to the indexed shape."""
        items = list(idx) if isinstance(idx, tuple) else [idx]
        if any(isinstance(i, _Ref) for i in items):
            raise self.refuse("tensor indexing with a tensor (advanced indexing)")
        shape = self.shape(x)
        if items.count(Ellipsis) > 1:
            raise self.refuse("indexing with several '...'")
        if Ellipsis in items:
            at = items.index(Ellipsis)
            fill = len(shape) - sum(i is not None for i in items if i is not Ellipsis)
            items[at : at + 1] = [slice(None)] * fill
        axes = [i for i in items if i is not None]
        if len(axes) > len(shape) or not all(isinstance(i, int | slice) for i in axes):
            raise self.refuse(f"indexing a {shape} tensor with {idx!r}")
        y = x
        for axis, i in enumerate(axes):
            n = shape[axis]
            if isinstance(i, int):
                if not -n <= i < n:
                    raise self.refuse(f"index {i} out of range for an axis of {n}")
                start, stop = i % n, i % n + 1
            else:
                start, stop, step = i.indices(n)
                if step != 1 or stop <= start:
                    raise self.refuse(f"indexing with slice {i} (only non-empty unit steps)")
            if (start, stop) != (0, n):
                y = _Ref(self.net.slice(y.name, axis, start, stop, name=f"{name}.ax{axis}"))
        return self.reshape(y, self.out_shape(), f"{name}.shape")

    def permute(self, node: Any, args: list[Any], kwargs: dict) -> _Ref:
        x = self.tensor(args[0], "a transpose of")
        nd = len(self.shape(x))
        name = node.target if isinstance(node.target, str) else node.target.__name__
        if name in ("T", "mT", "t", "getattr"):
            if name == "getattr":
                name = args[1]
            if name in ("T", "t") and nd > 2:
                raise self.refuse(f".{name} of a {nd}-d tensor")
            perm = list(range(nd))
            perm[-2:] = perm[-1], perm[-2]
        elif name == "transpose":
            p = self.bind(args, kwargs, ("input", "dim0", "dim1"))
            a, b = self.axis(p["dim0"], nd), self.axis(p["dim1"], nd)
            perm = list(range(nd))
            perm[a], perm[b] = b, a
        else:  # permute(x, dims) or x.permute(*dims)
            dims = args[1:] if len(args) > 2 or isinstance(args[1], int) else args[1]
            dims = kwargs.get("dims", dims)
            perm = [self.axis(d, nd) for d in dims]
        if perm == list(range(nd)):
            return x
        return _Ref(self.net.transpose(x.name, perm, name=node.name))

    def functional_pool(self, node: Any, args: list[Any], kwargs: dict) -> _Ref:
        if node.target is self.F.max_pool2d:
            kind, names = "max", ("input", "kernel_size", "stride", "padding", "dilation",
                                  "ceil_mode", "return_indices")  # fmt: skip
        else:
            kind, names = "avg", ("input", "kernel_size", "stride", "padding", "ceil_mode",
                                  "count_include_pad", "divisor_override")  # fmt: skip
        p = self.bind(args, kwargs, names, stride=None, padding=0, ceil_mode=False, dilation=1,
                      count_include_pad=True, divisor_override=None, return_indices=False)  # fmt: skip
        if p["return_indices"]:
            raise self.refuse("max_pool2d with return_indices")
        spec = SimpleNamespace(**{k: v for k, v in p.items() if k != "input"})
        return self.pool(self.tensor(p["input"], "pooling of"), kind, spec, node.name)


def from_torch(
    module: Any,
    input_shape: Any,
    training: bool = True,
    optimizer: str = "sgd",
    name: str | None = None,
    lr: float = 0.01,
) -> Graph:
    """Trace ``module`` into a Graph; ``input_shape`` is the input's shape (batch first),
    an example tensor, or a sequence of shapes/tensors, one per ``forward`` argument
    (integer inputs such as token ids need an example tensor of their dtype).

    With ``training`` the first output is treated as class logits (flattened to
    ``(batch, -1)``) under a mean softmax cross-entropy against an int ``labels`` input,
    and backward and ``optimizer`` update ops (learning rate ``lr``) are added. The
    graph's ``outputs`` name the module's output tensors. Raises
    :class:`UnsupportedTorchOp` naming the op and node for anything unsupported.
    """
    torch = _torch()
    try:
        traced = torch.fx.symbolic_trace(module)
    except Exception as e:  # fx raises several types for untraceable Python
        raise UnsupportedTorchOp(
            f"from_torch: torch.fx cannot trace {type(module).__name__}: {e}"
        ) from e
    examples = _examples(torch, input_shape)
    values: dict[str, Any] = {}
    seen = _record(torch, traced, examples, values)
    imp = _Importer(torch, module, traced, seen, name or type(module).__name__.lower(), values)
    imp.run(examples)
    net, outs = imp.net, imp.outputs
    if not training:
        g = net.build(training=False)
        g.outputs = tuple(outs)
        return g
    out = outs[0]
    shape = net.shape(out)

    def free(base: str) -> str:  # fx node names never contain "."
        taken = net.graph.has_op(base) or base in net.graph.tensors
        return f"{base}.xent" if taken else base

    if len(shape) != 2:
        out = net.reshape(out, (shape[0], math.prod(shape[1:])), name=free("logits"))
    labels = net.input(free("labels"), (shape[0],), dtype="int32")
    loss = net.softmax_xent(out, labels, name=free("loss"))
    g = net.build(loss=loss, optimizer=optimizer, lr=lr)
    g.outputs = tuple(outs)
    return g
