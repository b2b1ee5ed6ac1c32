"""Import a PyTorch model into the DNN graph IR through ``torch.fx`` (optional extra).

The module is traced symbolically, shapes are propagated with an example input, and each
node is replayed on a :class:`spartan.dnn.zoo.Net`, which then derives the backward pass
and optimizer updates. Supported: Linear, Conv2d (groups=1), ReLU/Tanh/Sigmoid/GELU,
Max/AvgPool2d, AdaptiveAvgPool2d to 1x1, BatchNorm2d, LayerNorm over the last axis,
Dropout/Identity (dropped), flatten/view/reshape, residual ``+`` and ``*``.

>>> import torch  # needs the torch extra  # doctest: +SKIP
>>> nn = torch.nn  # doctest: +SKIP
>>> model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))  # doctest: +SKIP
>>> g = from_torch(model, (32, 8))  # doctest: +SKIP
>>> g.param_count() == sum(p.numel() for p in model.parameters())  # doctest: +SKIP
True
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

from spartan.dnn.graph import Graph
from spartan.dnn.zoo import Net


def _torch() -> Any:
    try:
        import torch
        import torch.fx  # noqa: F401
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("from_torch needs PyTorch: pip install 'spartan[torch]'") from e
    return torch


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def from_torch(
    module: Any,
    input_shape: Sequence[int],
    training: bool = True,
    optimizer: str = "sgd",
    name: str | None = None,
) -> Graph:
    """Trace ``module`` on an input of ``input_shape`` (batch first) into a Graph.

    With ``training`` the output is treated as class logits under a softmax
    cross-entropy loss, and backward and update ops are added.
    """
    torch = _torch()
    from torch.fx.passes.shape_prop import ShapeProp

    nn, F = torch.nn, torch.nn.functional
    traced = torch.fx.symbolic_trace(module)
    ShapeProp(traced).propagate(torch.zeros(tuple(input_shape)))
    modules = dict(traced.named_modules())
    net = Net(name or type(module).__name__.lower())
    env: dict[str, str] = {}
    unary = {
        nn.ReLU: "relu", nn.Tanh: "tanh", nn.Sigmoid: "sigmoid", nn.GELU: "gelu",
        F.relu: "relu", torch.relu: "relu", torch.tanh: "tanh", torch.sigmoid: "sigmoid",
        F.gelu: "gelu", F.tanh: "tanh", F.sigmoid: "sigmoid",
    }  # fmt: skip
    out: str | None = None

    def shape_of(node: Any) -> tuple[int, ...]:
        return tuple(int(d) for d in node.meta["tensor_meta"].shape)

    for node in traced.graph.nodes:
        label = node.name.replace("_", ".")
        if node.op == "placeholder":
            if node.name in env or len(env):
                raise ValueError("from_torch supports modules with a single tensor input")
            env[node.name] = net.input("x", tuple(input_shape))
            continue
        if node.op == "output":
            (res,) = node.args
            out = env[res.name]
            continue
        args = [env[a.name] for a in node.args if hasattr(a, "name") and a.name in env]
        if node.op == "call_module":
            m = modules[node.target]
            kind = type(m)
            if isinstance(m, nn.Linear):
                env[node.name] = net.dense(
                    args[0], m.out_features, bias=m.bias is not None, name=label
                )
            elif isinstance(m, nn.Conv2d):
                if m.groups != 1 or _pair(m.dilation) != (1, 1) or isinstance(m.padding, str):
                    raise ValueError(
                        f"{node.target}: only groups=1, dilation=1, numeric padding supported"
                    )
                s = _pair(m.stride)
                if s[0] != s[1]:
                    raise ValueError(f"{node.target}: only square strides are supported")
                env[node.name] = net.conv2d(
                    args[0], m.out_channels, _pair(m.kernel_size), s[0], _pair(m.padding),
                    bias=m.bias is not None, name=label,
                )  # fmt: skip
            elif kind in unary:
                env[node.name] = net.unary(unary[kind], args[0], name=label)
            elif isinstance(m, nn.MaxPool2d | nn.AvgPool2d):
                k, s, p = (
                    _pair(v)[0] for v in (m.kernel_size, m.stride or m.kernel_size, m.padding)
                )
                pool = net.maxpool if isinstance(m, nn.MaxPool2d) else net.avgpool
                env[node.name] = pool(args[0], k, s, p, name=label)
            elif isinstance(m, nn.AdaptiveAvgPool2d):
                if _pair(m.output_size) != (1, 1):
                    raise ValueError(f"{node.target}: only AdaptiveAvgPool2d to 1x1 is supported")
                n, c = shape_of(node)[:2]
                env[node.name] = net.reshape(
                    net.global_avgpool(args[0], name=label), (n, c, 1, 1), name=f"{label}.4d"
                )
            elif isinstance(m, nn.BatchNorm2d):
                env[node.name] = net.batchnorm(args[0], name=label)
            elif isinstance(m, nn.LayerNorm):
                if len(m.normalized_shape) != 1:
                    raise ValueError(
                        f"{node.target}: only LayerNorm over the last axis is supported"
                    )
                env[node.name] = net.layernorm(args[0], name=label)
            elif isinstance(m, nn.Dropout | nn.Identity):
                env[node.name] = args[0]
            elif isinstance(m, nn.Flatten):
                env[node.name] = net.reshape(args[0], shape_of(node), name=label)
            else:
                raise ValueError(
                    f"from_torch: unsupported module {kind.__name__} at {node.target!r}"
                )
        elif node.op == "call_function":
            fn = node.target
            if fn in unary:
                env[node.name] = net.unary(unary[fn], args[0], name=label)
            elif fn in (operator.add, torch.add):
                env[node.name] = net.add(args[0], args[1], name=label)
            elif fn in (operator.mul, torch.mul):
                env[node.name] = net.mul(args[0], args[1], name=label)
            elif fn in (torch.flatten, torch.reshape):
                env[node.name] = net.reshape(args[0], shape_of(node), name=label)
            elif fn is F.dropout:
                env[node.name] = args[0]
            else:
                raise ValueError(
                    f"from_torch: unsupported function {getattr(fn, '__name__', fn)!r}"
                )
        elif node.op == "call_method":
            if node.target in ("view", "reshape", "flatten"):
                env[node.name] = net.reshape(args[0], shape_of(node), name=label)
            elif node.target in ("relu", "tanh", "sigmoid"):
                env[node.name] = net.unary(node.target, args[0], name=label)
            else:
                raise ValueError(f"from_torch: unsupported method .{node.target}()")
        else:
            raise ValueError(f"from_torch: unsupported node {node.op} {node.target!r}")
    if out is None:
        raise ValueError("traced module has no output")
    if not training:
        return net.build(training=False)
    if len(net.shape(out)) != 2:
        out = net.reshape(out, (input_shape[0], math.prod(net.shape(out)[1:])), name="logits")
    labels = net.input("labels", (input_shape[0],), dtype="int32")
    return net.build(loss=net.softmax_xent(out, labels), optimizer=optimizer)
