"""Array kernels for every op type of the DNN IR, shared by all three executors.

One table, :data:`KERNELS`, serves the tiling executor (:mod:`spartan.dnn.execute_tiling`,
which runs kernels on tiles), the swap executor (:mod:`spartan.dnn.swap.executor`, NumPy or
CuPy) and the placement executor (:mod:`spartan.dnn.placement.execute`). Each kernel takes
the array module ``xp`` (``numpy`` or ``cupy``), the op's input arrays in ``op.inputs``
order and the op's attrs, and returns its output (a tuple for multi-output optimizer ops).

Three attrs carry what a kernel cannot see in its inputs; each has a whole-array default
so an executor that runs whole ops can pass ``op.attrs`` unchanged:

* ``out_shape`` -- the output's shape (gradients of reshape, pooling, slices, convolutions
  and lookups). :func:`spartan.dnn.zoo.backward` records it on every gradient op; an
  executor running a tile passes the tile's shape instead.
* ``batch`` -- the full batch the cross-entropy loss is averaged over (default: the rows
  of the logits). A tile of a batch-split loss divides by the *full* batch, so summing
  the tiles' results gives the mean.
* ``in_offsets`` -- per input, the index of its first element in the whole tensor (zeros
  by default). Only a vocabulary-split embedding lookup needs it.

Kernels never modify their inputs, except the UPDATE ops (``sgd``, ``momentum``, ``adam``),
which update their parameter and state inputs in place and return them (an executor
that must keep the old value passes a copy).

>>> import numpy as np
>>> run_kernel(np, "relu_grad", [np.array([1.0, 2.0]), np.array([0.0, 3.0])], {})
array([0., 2.])
>>> x = np.arange(6.0).reshape(2, 3)
>>> run_kernel(np, "layernorm", [x, np.ones(3), np.zeros(3)], {}).round(3)
array([[-1.225,  0.   ,  1.225],
       [-1.225,  0.   ,  1.225]])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["KERNELS", "OpTask", "run_kernel", "kernel_types"]

Array = Any
Kernel = Callable[[Any, Sequence[Array], dict], Any]


def _t(a: Array, flag: object) -> Array:
    return a.swapaxes(-1, -2) if flag else a


def _out_shape(attrs: dict, default: tuple[int, ...] | None = None) -> tuple[int, ...]:
    shape = attrs.get("out_shape", default)
    if shape is None:
        raise ValueError(
            "this gradient kernel needs the output shape in attrs['out_shape'] "
            "(spartan.dnn.zoo.backward records it)"
        )
    return tuple(int(d) for d in shape)


# ---- matrix products ----------------------------------------------------------------------


def _matmul(xp, ins, attrs):
    x, w = ins
    return xp.matmul(_t(x, attrs.get("ta")), _t(w, attrs.get("tb")))


def _matmul_grad(xp, ins, attrs):
    """Gradients of ``Y = op(x) @ op(w)``: ``d op(x) = dY op(w)^T``, ``d op(w) = op(x)^T dY``;
    works for 2-D and batched (3-D) operands alike."""
    dy, other = ins
    ta, tb = attrs.get("ta"), attrs.get("tb")
    if attrs["wrt"] == 0:  # other = w
        b = _t(other, tb)
        return xp.matmul(b, _t(dy, True)) if ta else xp.matmul(dy, _t(b, True))
    a = _t(other, ta)  # other = x
    return xp.matmul(_t(dy, True), a) if tb else xp.matmul(_t(a, True), dy)


# ---- element-wise -------------------------------------------------------------------------


def _bias_view(x: Array, b: Array, axis: int) -> Array:
    shape = [1] * x.ndim
    shape[axis % x.ndim] = b.shape[0]
    return b.reshape(shape)


def _bias_add_grad(xp, ins, attrs):
    (dy,) = ins
    axis = attrs.get("axis", -1) % dy.ndim
    return dy.sum(axis=tuple(i for i in range(dy.ndim) if i != axis))


def _erf(xp, x: Array) -> Array:
    if xp.__name__ == "numpy":
        from scipy.special import erf
    else:  # pragma: no cover - needs CuPy
        from cupyx.scipy.special import erf
    return erf(x)


_GELU_C = math.sqrt(2 / math.pi)


def _gelu(xp, ins, attrs):
    (x,) = ins
    if attrs.get("approximate", "none") == "tanh":
        return 0.5 * x * (1 + xp.tanh(_GELU_C * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(xp, x / math.sqrt(2)))


def _gelu_grad(xp, ins, attrs):
    dy, x = ins
    if attrs.get("approximate", "none") == "tanh":
        u = _GELU_C * (x + 0.044715 * x**3)
        t = xp.tanh(u)
        du = _GELU_C * (1 + 3 * 0.044715 * x * x)
        return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du)
    cdf = 0.5 * (1 + _erf(xp, x / math.sqrt(2)))
    pdf = xp.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)
    return dy * (cdf + x * pdf)


# ---- convolution and pooling (NCHW) -------------------------------------------------------


def _pad(xp, x: Array, pad: tuple[int, int], value: float = 0.0) -> Array:
    if pad == (0, 0):
        return x
    widths = ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1]))
    return xp.pad(x, widths, constant_values=value)


def _windows(xp, x: Array, k: tuple[int, int], stride: int, pad: tuple[int, int], value=0.0):
    """(N, C, Ho, Wo, kh, kw) sliding windows of a padded NCHW array (a copy; no
    stride tricks, so it works for CuPy too)."""
    xp_ = _pad(xp, x, pad, value)
    ho = (xp_.shape[2] - k[0]) // stride + 1
    wo = (xp_.shape[3] - k[1]) // stride + 1
    cols = [
        xp_[:, :, i : i + stride * (ho - 1) + 1 : stride, j : j + stride * (wo - 1) + 1 : stride]
        for i in range(k[0])
        for j in range(k[1])
    ]
    return xp.stack(cols, axis=-1).reshape(*cols[0].shape, k[0], k[1])


def _unwindow(xp, cols: Array, xshape: tuple, k: tuple[int, int], stride: int, pad):
    """Adjoint of :func:`_windows`: scatter-add (N, C, Ho, Wo, kh, kw) back to NCHW."""
    n, c, h, w = xshape
    out = xp.zeros((n, c, h + 2 * pad[0], w + 2 * pad[1]), dtype=cols.dtype)
    ho, wo = cols.shape[2], cols.shape[3]
    for i in range(k[0]):
        for j in range(k[1]):
            out[:, :, i : i + stride * ho : stride, j : j + stride * wo : stride] += cols[..., i, j]
    return out[:, :, pad[0] : pad[0] + h, pad[1] : pad[1] + w]


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    return (int(v), int(v)) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _conv(xp, ins, attrs):
    x, w = ins
    win = _windows(xp, x, w.shape[2:], attrs["stride"], _pair(attrs["padding"]))
    y = xp.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3]))  # (N, Ho, Wo, O)
    return xp.ascontiguousarray(y.transpose(0, 3, 1, 2))


def _conv_grad(xp, ins, attrs):
    dy, other = ins
    s, p = attrs["stride"], _pair(attrs["padding"])
    shape = _out_shape(attrs)
    if attrs["wrt"] == 0:  # other = w; dx
        cols = xp.tensordot(dy, other, axes=([1], [0]))  # (N, Ho, Wo, C, kh, kw)
        return _unwindow(xp, cols.transpose(0, 3, 1, 2, 4, 5), shape, other.shape[2:], s, p)
    win = _windows(xp, other, shape[2:], s, p)  # other = x; dw (O, C, kh, kw)
    return xp.tensordot(dy, win, axes=([0, 2, 3], [0, 2, 3]))


def _pool_args(attrs) -> tuple[tuple[int, int], int, tuple[int, int]]:
    k, pad = _pair(attrs["kernel"]), _pair(attrs["padding"])
    return k, int(attrs["stride"]), pad


def _maxpool(xp, ins, attrs):
    k, s, p = _pool_args(attrs)
    return _windows(xp, ins[0], k, s, p, value=-xp.inf).max(axis=(-1, -2))


def _maxpool_grad(xp, ins, attrs):
    dy, x, y = ins
    k, s, p = _pool_args(attrs)
    win = _windows(xp, x, k, s, p, value=-xp.inf)
    mask = win == y[..., None, None]
    mask = mask / mask.sum(axis=(-1, -2), keepdims=True)  # ties share the gradient
    return _unwindow(xp, (mask * dy[..., None, None]).astype(dy.dtype), x.shape, k, s, p)


def _avgpool(xp, ins, attrs):
    # Padding counts as zeros in the mean (torch's count_include_pad=True).
    k, s, p = _pool_args(attrs)
    return _windows(xp, ins[0], k, s, p).mean(axis=(-1, -2))


def _avgpool_grad(xp, ins, attrs):
    (dy,) = ins
    k, s, p = _pool_args(attrs)
    cols = xp.broadcast_to((dy / (k[0] * k[1]))[..., None, None], (*dy.shape, *k))
    return _unwindow(xp, cols, _out_shape(attrs), k, s, p)


def _global_avgpool_grad(xp, ins, attrs):
    (dy,) = ins
    shape = _out_shape(attrs)
    return xp.broadcast_to((dy / (shape[2] * shape[3]))[..., None, None], shape).copy()


# ---- normalization ------------------------------------------------------------------------
# batchnorm normalizes each channel (axis 1) over every other axis with the batch's own
# statistics (training mode); layernorm normalizes each row over the last axis. Both use
# the biased variance and eps inside the square root, as torch does.


def _norm_axes(op_type: str, x: Array) -> tuple[int, ...]:
    if op_type.startswith("batchnorm"):
        return (0, *range(2, x.ndim))
    return (x.ndim - 1,)


def _param_view(op_type: str, x: Array, p: Array) -> Array:
    return _bias_view(x, p, 1 if op_type.startswith("batchnorm") else -1)


def _normalize(op_type: str, xp, x: Array, eps: float) -> tuple[Array, Array]:
    axes = _norm_axes(op_type, x)
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    rstd = 1 / xp.sqrt(var + eps)
    return (x - mu) * rstd, rstd


def _norm(op_type: str) -> Kernel:
    def forward(xp, ins, attrs):
        x, gamma, beta = ins
        xhat, _ = _normalize(op_type, xp, x, attrs.get("eps", 1e-5))
        return xhat * _param_view(op_type, x, gamma) + _param_view(op_type, x, beta)

    return forward


def _norm_grad(op_type: str) -> Kernel:
    def grad(xp, ins, attrs):
        wrt, dy = attrs["wrt"], ins[0]
        axes = _norm_axes(op_type, dy)
        # scale/shift gradients sum over every axis but the parameter's own
        param_axis = 1 if op_type.startswith("batchnorm") else dy.ndim - 1
        others = tuple(i for i in range(dy.ndim) if i != param_axis)
        if wrt == 2:  # dbeta
            return dy.sum(axis=others)
        x = ins[1]
        xhat, rstd = _normalize(op_type, xp, x, attrs.get("eps", 1e-5))
        if wrt == 1:  # dgamma
            return (dy * xhat).sum(axis=others)
        dxhat = dy * _param_view(op_type, x, ins[2])
        mean = dxhat.mean(axis=axes, keepdims=True)
        mean_x = (dxhat * xhat).mean(axis=axes, keepdims=True)
        return rstd * (dxhat - mean - xhat * mean_x)

    return grad


# ---- shape ops ----------------------------------------------------------------------------


def _reshape(xp, ins, attrs):
    return ins[0].reshape(_out_shape(attrs, attrs.get("shape")))


def _inverse(perm: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def _concat_grad(xp, ins, attrs):
    (dy,) = ins
    sizes, i, axis = attrs["sizes"], attrs["wrt"], attrs["axis"]
    start = sum(sizes[:i])
    index = [slice(None)] * dy.ndim
    index[axis] = slice(start, start + sizes[i])
    return dy[tuple(index)]


def _slice(xp, ins, attrs):
    (x,) = ins
    index = [slice(None)] * x.ndim
    index[attrs["axis"]] = slice(attrs["start"], attrs["stop"])
    return x[tuple(index)]


def _slice_grad(xp, ins, attrs):
    (dy,) = ins
    out = xp.zeros(_out_shape(attrs), dtype=dy.dtype)
    index = [slice(None)] * dy.ndim
    index[attrs["axis"]] = slice(attrs["start"], attrs["stop"])
    out[tuple(index)] = dy
    return out


# ---- softmax and the loss -----------------------------------------------------------------


def _causal_allowed(xp, x: Array, attrs: dict) -> Array:
    """Query ``i`` may attend to key ``j`` iff ``j <= i`` (torch's ``is_causal``, aligned
    top-left), over the last two axes; a tile's offsets place its rows and columns."""
    offsets = attrs.get("in_offsets")
    r0, c0 = (int(offsets[0][-2]), int(offsets[0][-1])) if offsets else (0, 0)
    rows = xp.arange(r0, r0 + x.shape[-2])[:, None]
    cols = xp.arange(c0, c0 + x.shape[-1])[None, :]
    return cols <= rows


def _causal_mask(xp, ins, attrs):
    (x,) = ins
    return xp.where(_causal_allowed(xp, x, attrs), x, xp.asarray(-xp.inf, dtype=x.dtype))


def _mask_tile(xp, x: Array, attrs: dict) -> Array:
    """The additive mask (0 or -inf, or any float) for tile ``x`` of the scores: the
    stored mask covers the last two axes, or every axis; a tile's offsets place it."""
    mask = xp.asarray(attrs["mask"], dtype=x.dtype)
    offsets = attrs.get("in_offsets")
    off = tuple(int(o) for o in offsets[0]) if offsets else (0,) * x.ndim
    index = tuple(
        slice(o, o + n) if m != 1 else slice(None)
        for o, n, m in zip(off[x.ndim - mask.ndim :], x.shape[x.ndim - mask.ndim :], mask.shape)
    )
    return mask[index]


def _attn_mask(xp, ins, attrs):
    (x,) = ins
    return x + _mask_tile(xp, x, attrs)


def _attn_mask_grad(xp, ins, attrs):
    (dy,) = ins
    return dy * xp.isfinite(_mask_tile(xp, dy, attrs))


def _additive(xp, mask: Array, attrs: dict, dtype: Any) -> Array:
    """A mask tensor as an additive mask of ``dtype``: a bool mask keeps its ``True``
    entries (``keep_if_true``, SDPA's meaning) or masks them (MultiheadAttention's);
    a float mask is added as it is."""
    if mask.dtype == bool:
        keep = mask if attrs.get("keep_if_true", True) else ~mask
        return xp.where(keep, xp.asarray(0, dtype=dtype), xp.asarray(-xp.inf, dtype=dtype))
    return mask.astype(dtype, copy=False)


def _input_mask(xp, ins, attrs):
    """Scores plus a mask given as a tensor (a model input, or computed from one), which
    broadcasts against the scores; under a tiling the mask's tile is aligned with the
    scores' tile on every axis where the mask is not 1 long, so broadcasting is exact."""
    x, mask = ins
    return x + _additive(xp, mask, attrs, x.dtype)


_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
            "gt": "greater", "ge": "greater_equal"}  # fmt: skip


def _masked_fill(xp, ins, attrs):
    x, mask = ins
    return xp.where(mask, xp.asarray(attrs["value"], dtype=x.dtype), x)


def _softmax(xp, ins, attrs):
    z = ins[0] - ins[0].max(axis=-1, keepdims=True)
    e = xp.exp(z)
    e /= e.sum(axis=-1, keepdims=True)
    return e


def _softmax_grad(xp, ins, attrs):
    dy, y = ins
    return y * (dy - (dy * y).sum(axis=-1, keepdims=True))


def _log_softmax(xp, z: Array) -> Array:
    z = z - z.max(axis=-1, keepdims=True)
    return z - xp.log(xp.exp(z).sum(axis=-1, keepdims=True))


def _softmax_xent(xp, ins, attrs):
    """Cross-entropy summed over these rows, divided by the full batch (a partial mean)."""
    logits, labels = ins
    n = attrs.get("batch", logits.shape[0])
    logp = _log_softmax(xp, logits)
    picked = xp.take_along_axis(logp, labels.astype(xp.int64)[:, None], axis=1)
    return xp.asarray(-picked.sum() / n, dtype=logits.dtype)


def _softmax_xent_grad(xp, ins, attrs):
    if len(ins) == 3:  # an explicit loss gradient seed comes first
        dl, logits, labels = ins
    else:
        (logits, labels), dl = ins, 1.0
    n = attrs.get("batch", logits.shape[0])
    g = xp.exp(_log_softmax(xp, logits))
    g[xp.arange(logits.shape[0]), labels.astype(xp.int64)] -= 1.0
    g *= dl / n
    return g


# ---- embedding lookups --------------------------------------------------------------------


def _embedding(xp, ins, attrs):
    """Rows of ``table`` for ``ids``; a table tile holding rows [lo, lo + V) returns zero
    rows for ids it does not hold (the tiles' results are then summed)."""
    ids, table = ins
    if "in_offsets" not in attrs:  # the whole table: an id outside it is an error
        bad = (ids < 0) | (ids >= table.shape[0])
        if bool(bad.any()):
            raise IndexError(
                f"embedding: id {int(ids[bad].reshape(-1)[0])} out of range for a table "
                f"of {table.shape[0]} rows"
            )
    lo = int(attrs.get("in_offsets", ((), (0, 0)))[1][0])
    local = ids.astype(xp.int64) - lo
    held = (local >= 0) & (local < table.shape[0])
    rows = table[xp.clip(local, 0, table.shape[0] - 1)]
    return rows * held[..., None].astype(table.dtype)


def _embedding_grad(xp, ins, attrs):
    dy, ids = ins
    out = xp.zeros(_out_shape(attrs), dtype=dy.dtype)
    flat_ids = ids.astype(xp.int64).reshape(-1)
    rows = dy.reshape(-1, dy.shape[-1])
    if hasattr(xp, "add") and hasattr(xp.add, "at"):
        xp.add.at(out, flat_ids, rows)
    else:  # pragma: no cover - CuPy
        import cupyx

        cupyx.scatter_add(out, flat_ids, rows)
    return out


# ---- optimizer updates (in place) ---------------------------------------------------------


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
    """torch.optim.Adam's update (no weight decay, not amsgrad) for step ``attrs["step"]``
    (1-based; the bias corrections need it), in torch's order."""
    p, dp, m, v = ins
    b1, b2 = attrs.get("beta1", 0.9), attrs.get("beta2", 0.999)
    if "step" not in attrs:  # (a step assumed would bias-correct every step as the first)
        raise ValueError(
            "adam needs the optimizer's 1-based step for its bias correction: pass step= "
            "to the executor (execute, serial_step, run_step, run_serial, run_emulated, "
            "run_on_worker, ...)"
        )
    t = int(attrs["step"])
    m *= b1
    m += (1 - b1) * dp
    v *= b2
    v += (1 - b2) * dp * dp
    denom = xp.sqrt(v) / math.sqrt(1 - b2**t) + attrs.get("eps", 1e-8)
    p -= attrs.get("lr", 0.001) / (1 - b1**t) * m / denom
    return p, m, v


KERNELS: dict[str, Kernel] = {
    "matmul": _matmul,
    "matmul_grad": _matmul_grad,
    "batch_matmul": _matmul,
    "batch_matmul_grad": _matmul_grad,
    "bias_add": lambda xp, ins, a: ins[0] + _bias_view(ins[0], ins[1], a.get("axis", -1)),
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
    "gelu": _gelu,
    "gelu_grad": _gelu_grad,
    "conv2d": _conv,
    "conv2d_grad": _conv_grad,
    "maxpool": _maxpool,
    "maxpool_grad": _maxpool_grad,
    "avgpool": _avgpool,
    "avgpool_grad": _avgpool_grad,
    "global_avgpool": lambda xp, ins, a: ins[0].mean(axis=(2, 3)),
    "global_avgpool_grad": _global_avgpool_grad,
    "batchnorm": _norm("batchnorm"),
    "batchnorm_grad": _norm_grad("batchnorm"),
    "layernorm": _norm("layernorm"),
    "layernorm_grad": _norm_grad("layernorm"),
    "reshape": _reshape,
    "reshape_grad": lambda xp, ins, a: ins[0].reshape(_out_shape(a)),
    "transpose": lambda xp, ins, a: xp.transpose(ins[0], a["perm"]),
    "transpose_grad": lambda xp, ins, a: xp.transpose(ins[0], _inverse(a["perm"])),
    "concat": lambda xp, ins, a: xp.concatenate(list(ins), axis=a["axis"]),
    "concat_grad": _concat_grad,
    "slice": _slice,
    "slice_grad": _slice_grad,
    "causal_mask": _causal_mask,
    "causal_mask_grad": lambda xp, ins, a: ins[0] * _causal_allowed(xp, ins[0], a),
    "attn_mask": _attn_mask,
    "attn_mask_grad": _attn_mask_grad,
    "input_mask": _input_mask,
    "compare": lambda xp, ins, a: getattr(xp, _COMPARE[a["cmp"]])(ins[0], a["value"]),
    "logical_not": lambda xp, ins, a: xp.logical_not(ins[0]),
    "masked_fill": _masked_fill,
    "masked_fill_grad": lambda xp, ins, a: xp.where(ins[1], xp.zeros_like(ins[0]), ins[0]),
    "input_mask_grad": lambda xp, ins, a: (
        ins[0] * xp.isfinite(_additive(xp, ins[1], a, ins[0].dtype))
    ),
    "softmax": _softmax,
    "softmax_grad": _softmax_grad,
    "embedding": _embedding,
    "embedding_grad": _embedding_grad,
    "softmax_xent": _softmax_xent,
    "softmax_xent_grad": _softmax_xent_grad,
    "sgd": _sgd,
    "momentum": _momentum,
    "adam": _adam,
}


def kernel_types() -> frozenset[str]:
    """The op types every executor can run.

    >>> {"conv2d", "layernorm_grad", "sgd"} <= kernel_types()
    True
    """
    return frozenset(KERNELS)


def run_kernel(xp: Any, op_type: str, inputs: Sequence[Array], attrs: dict) -> Any:
    """Compute one op with array module ``xp`` (numpy or cupy).

    >>> import numpy as np
    >>> run_kernel(np, "softmax", [np.zeros((1, 4))], {})
    array([[0.25, 0.25, 0.25, 0.25]])
    """
    kernel = KERNELS.get(op_type)
    if kernel is None:
        raise ValueError(
            f"no executor kernel for op type {op_type!r}; supported: {sorted(KERNELS)}"
        )
    return kernel(xp, inputs, attrs)


class OpTask:
    """One op as a picklable task function for spartan workers: inputs the op updates in
    place are copied first (a stored value is immutable on Ray), and every output comes
    back as a new NumPy array. Used by the swap and placement executors. ``step`` is the
    1-based optimizer step (Adam's bias correction needs it; other ops ignore it).

    >>> from types import SimpleNamespace
    >>> import numpy as np
    >>> relu = SimpleNamespace(type="relu", attrs={}, inputs=("x",), inplace=())
    >>> OpTask(relu)(np.array([-1.0, 2.0])).tolist()
    [0.0, 2.0]
    """

    def __init__(self, op: Any, step: int | None = None) -> None:
        self.type, self.attrs = op.type, dict(op.attrs)
        if step is not None:  # (Adam refuses to guess it)
            self.attrs["step"] = int(step)
        self.copy = [i for i, t in enumerate(op.inputs) if t in op.inplace]

    def __call__(self, *ins: Any) -> Any:
        import numpy as np

        args = [np.array(x, copy=True) if i in self.copy else x for i, x in enumerate(ins)]
        out = run_kernel(np, self.type, args, self.attrs)
        return tuple(np.asarray(o) for o in out) if isinstance(out, tuple) else np.asarray(out)
