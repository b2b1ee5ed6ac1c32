"""Array kernels for the IR's op types, written once for NumPy and CuPy (``xp``).

Each kernel takes the op's input arrays (in ``op.inputs`` order) and the op's attrs and
returns its outputs; in-place update ops (``sgd``) write their first input and return it.
Covers the MLP/transformer-style op set: matmul, bias_add, add, mul, scale, relu, tanh,
sigmoid, softmax_xent (mean over the batch), their gradients, and sgd / momentum / adam.

>>> import numpy as np
>>> run_kernel(np, "relu_grad", [np.array([1.0, 2.0]), np.array([0.0, 3.0])], {})
array([0., 2.])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["run_kernel", "KERNELS"]

Array = Any


def _op(x: Array, transpose: bool) -> Array:
    return x.T if transpose else x


def _matmul(xp, ins, attrs):
    x, w = ins
    return xp.matmul(_op(x, attrs.get("ta", False)), _op(w, attrs.get("tb", False)))


def _matmul_grad(xp, ins, attrs):
    dy, other = ins
    ta, tb = attrs.get("ta", False), attrs.get("tb", False)
    if attrs["wrt"] == 0:  # d op(x) = dy @ op(w).T
        da = xp.matmul(dy, _op(other, tb).T)
        return da.T if ta else da
    db = xp.matmul(_op(other, ta).T, dy)  # d op(w) = op(x).T @ dy
    return db.T if tb else db


def _bias_shape(x: Array, axis: int) -> tuple[int, ...]:
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]
    return tuple(shape)


def _bias_add(xp, ins, attrs):
    x, b = ins
    return x + b.reshape(_bias_shape(x, attrs.get("axis", -1) % x.ndim))


def _bias_add_grad(xp, ins, attrs):
    (dy,) = ins
    axis = attrs.get("axis", -1) % dy.ndim
    return dy.sum(axis=tuple(i for i in range(dy.ndim) if i != axis))


def _softmax(xp, z):
    # One temporary of z's size (device memory is tight under a swap plan).
    e = z - z.max(axis=-1, keepdims=True)
    xp.exp(e, out=e)
    e /= e.sum(axis=-1, keepdims=True)
    return e


def _softmax_xent(xp, ins, attrs):
    logits, labels = ins
    p = _softmax(xp, logits)
    n = logits.shape[0]
    picked = p[xp.arange(n), labels.astype(xp.int64)]
    return -xp.log(picked + 1e-30).mean().astype(logits.dtype)


def _softmax_xent_grad(xp, ins, attrs):
    if len(ins) == 3:  # an explicit loss gradient seed comes first
        dl, logits, labels = ins
    else:
        (logits, labels), dl = ins, 1.0
    g = _softmax(xp, logits)
    n = logits.shape[0]
    g[xp.arange(n), labels.astype(xp.int64)] -= 1.0
    g *= dl / n
    return g


def _sgd(xp, ins, attrs):
    p, dp = ins[0], ins[1]
    p -= attrs.get("lr", 0.01) * dp
    return p


def _momentum(xp, ins, attrs):
    p, dp, m = ins
    m *= attrs.get("momentum", 0.9)
    m += dp
    p -= attrs.get("lr", 0.01) * m
    return p, m


def _adam(xp, ins, attrs):
    # Without a step counter the update skips Adam's bias correction.
    p, dp, m, v = ins
    b1, b2 = attrs.get("beta1", 0.9), attrs.get("beta2", 0.999)
    m *= b1
    m += (1 - b1) * dp
    v *= b2
    v += (1 - b2) * dp * dp
    p -= attrs.get("lr", 0.01) * m / (xp.sqrt(v) + attrs.get("eps", 1e-8))
    return p, m, v


KERNELS: dict[str, Callable[[Any, Sequence[Array], dict], Array]] = {
    "matmul": _matmul,
    "matmul_grad": _matmul_grad,
    "bias_add": _bias_add,
    "bias_add_grad": _bias_add_grad,
    "add": lambda xp, ins, a: ins[0] + ins[1],
    "mul": lambda xp, ins, a: ins[0] * ins[1],
    "mul_grad": lambda xp, ins, a: ins[0] * ins[1],
    "scale": lambda xp, ins, a: ins[0] * a["factor"],
    "scale_grad": lambda xp, ins, a: ins[0] * a["factor"],
    "relu": lambda xp, ins, a: xp.maximum(ins[0], 0),
    "relu_grad": lambda xp, ins, a: ins[0] * (ins[1] > 0),
    "tanh": lambda xp, ins, a: xp.tanh(ins[0]),
    "tanh_grad": lambda xp, ins, a: ins[0] * (1 - ins[1] * ins[1]),
    "sigmoid": lambda xp, ins, a: 1 / (1 + xp.exp(-ins[0])),
    "sigmoid_grad": lambda xp, ins, a: ins[0] * ins[1] * (1 - ins[1]),
    "softmax_xent": _softmax_xent,
    "softmax_xent_grad": _softmax_xent_grad,
    "sgd": _sgd,
    "momentum": _momentum,
    "adam": _adam,
}


def run_kernel(xp: Any, op_type: str, inputs: Sequence[Array], attrs: dict) -> Array:
    """Compute one op with array module ``xp`` (numpy or cupy)."""
    kernel = KERNELS.get(op_type)
    if kernel is None:
        raise ValueError(
            f"no executor kernel for op type {op_type!r}; supported: {sorted(KERNELS)}"
        )
    return kernel(xp, inputs, attrs)
