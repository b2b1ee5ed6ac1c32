"""Run a tiling plan's training step on spartan workers, with NumPy kernels.

Device ``d`` of ``2**k`` takes half ``bit_j(d)`` at cut ``j`` (the first cut is the most
significant bit, i.e. the slowest link). Under a plan every tensor has a *home* tile per
device; every op becomes one sub-op per device that (1) fetches the region its aligned
form needs — the receiver pulls each shard from a device holding it, and sender slices
and receiver concatenation happen inside one backend :class:`Region` — (2) runs the
kernel locally, and (3) converts its result to the output's home tiling; partial sums
(``red``) are fetched from every partner and added. Bytes are predicted exactly from the
same fetch lists, and the backend measures what really moves.

>>> import spartan
>>> from spartan.dnn.zoo import mlp
>>> from spartan.dnn.tiling import plan
>>> be = spartan.init(backend="local", num_workers=2)
>>> g = mlp(8, [4, 6, 2])
>>> values = random_values(g, seed=0)
>>> run = execute(plan(g, 2), values, be)
>>> ref = serial_step(g, values)
>>> all(np.allclose(run.values[p.name], ref[p.name]) for p in g.params())
True
>>> run.measured_bytes == run.predicted_bytes
True
>>> spartan.shutdown()
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from spartan.backend.base import Backend, Piece, Region
from spartan.dnn.graph import Graph, Op, TensorKind
from spartan.dnn.tiling.forms import RED
from spartan.dnn.tiling.plan import Plan

Box = tuple[tuple[int, int], ...]

# ---- NumPy kernels (whole arrays or tiles: every kernel is region-consistent) ------------


def _t(a: np.ndarray, flag: object) -> np.ndarray:
    return a.swapaxes(-1, -2) if flag else a


def _windows(x: np.ndarray, k: tuple[int, int], stride: int, pad: tuple[int, int]) -> np.ndarray:
    """(N, C, Ho, Wo, kh, kw) sliding windows of a padded NCHW array."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    win = np.lib.stride_tricks.sliding_window_view(xp, k, axis=(2, 3))
    return win[:, :, ::stride, ::stride]


def _unwindow(
    cols: np.ndarray, xshape: tuple, k: tuple[int, int], stride: int, pad: tuple[int, int]
) -> np.ndarray:
    """Adjoint of :func:`_windows`: scatter-add (N, C, Ho, Wo, kh, kw) back to NCHW."""
    n, c, h, w = xshape
    out = np.zeros((n, c, h + 2 * pad[0], w + 2 * pad[1]), dtype=cols.dtype)
    ho, wo = cols.shape[2], cols.shape[3]
    for i, j in itertools.product(range(k[0]), range(k[1])):
        out[:, :, i : i + stride * ho : stride, j : j + stride * wo : stride] += cols[..., i, j]
    return out[:, :, pad[0] : pad[0] + h, pad[1] : pad[1] + w]


def _conv(op: Op, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    win = _windows(x, w.shape[2:], op.attrs["stride"], op.attrs["padding"])
    return np.einsum("nchwij,ocij->nohw", win, w, optimize=True)


def _conv_grad(op: Op, dy: np.ndarray, other: np.ndarray, out_shape: tuple) -> np.ndarray:
    s, p = op.attrs["stride"], op.attrs["padding"]
    if op.attrs["wrt"] == 0:  # other = w; dx
        cols = np.einsum("nohw,ocij->nchwij", dy, other, optimize=True)
        return _unwindow(cols, out_shape, other.shape[2:], s, p)
    win = _windows(other, out_shape[2:], s, p)  # other = x; dw
    return np.einsum("nchwij,nohw->ocij", win, dy, optimize=True)


def _pool_windows(op: Op, x: np.ndarray) -> np.ndarray:
    k, pad = op.attrs["kernel"], op.attrs["padding"]
    return _windows(x, (k, k), op.attrs["stride"], (pad, pad))


def _maxpool_grad(op: Op, dy: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    k, s, pad = op.attrs["kernel"], op.attrs["stride"], op.attrs["padding"]
    win = _pool_windows(op, x)
    mask = win == y[..., None, None]
    mask = mask / mask.sum(axis=(-1, -2), keepdims=True)  # ties share the gradient
    return _unwindow(mask * dy[..., None, None], x.shape, (k, k), s, (pad, pad))


def _bias_shape(op: Op, x: np.ndarray, b: np.ndarray) -> np.ndarray:
    view = [1] * x.ndim
    view[op.attrs["axis"]] = b.shape[0]
    return b.reshape(view)


def _xent(logits: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Log-softmax of the logits and the one-hot labels."""
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return logp, np.eye(logits.shape[1], dtype=logits.dtype)[labels]


def _loss(logits: np.ndarray, labels: np.ndarray, n: int) -> np.ndarray:
    """Summed cross-entropy of these rows over the full batch ``n`` (a partial mean)."""
    logp, onehot = _xent(logits, labels)
    return np.asarray(-(logp * onehot).sum() / n, dtype=logits.dtype)


def _loss_grad(*args: np.ndarray, n: int) -> np.ndarray:
    *scale, logits, labels = args  # ([dloss], logits, labels)
    logp, onehot = _xent(logits, labels)
    g = (np.exp(logp) - onehot) / n
    return (g * scale[0] if scale else g).astype(logits.dtype)


def _matmul_grad(op: Op, dy: np.ndarray, other: np.ndarray) -> np.ndarray:
    ta, tb = op.attrs.get("ta"), op.attrs.get("tb")
    if op.attrs["wrt"] == 0:  # other = w
        b = _t(other, tb)
        return _t(b, False) @ _t(dy, True) if ta else dy @ _t(b, True)
    a = _t(other, ta)  # other = x
    return _t(dy, True) @ a if tb else _t(a, True) @ dy


Kernel = Callable[..., np.ndarray]

KERNELS: dict[str, Kernel] = {
    "matmul": lambda op, x, w, **_: _t(x, op.attrs.get("ta")) @ _t(w, op.attrs.get("tb")),
    "matmul_grad": lambda op, dy, o, **_: _matmul_grad(op, dy, o),
    "bias_add": lambda op, x, b, **_: x + _bias_shape(op, x, b),
    "bias_add_grad": lambda op, dy, **_: dy.sum(
        axis=tuple(a for a in range(dy.ndim) if a != op.attrs["axis"])
    ),
    "relu": lambda op, x, **_: np.maximum(x, 0),
    "relu_grad": lambda op, dy, y, **_: dy * (y > 0),
    "tanh": lambda op, x, **_: np.tanh(x),
    "tanh_grad": lambda op, dy, y, **_: dy * (1 - y * y),
    "sigmoid": lambda op, x, **_: 1 / (1 + np.exp(-x)),
    "sigmoid_grad": lambda op, dy, y, **_: dy * y * (1 - y),
    "add": lambda op, a, b, **_: a + b,
    "mul": lambda op, a, b, **_: a * b,
    "mul_grad": lambda op, dy, other, **_: dy * other,
    "conv2d": lambda op, x, w, **_: _conv(op, x, w),
    "conv2d_grad": lambda op, dy, o, out_shape, **_: _conv_grad(op, dy, o, out_shape),
    "maxpool": lambda op, x, **_: _pool_windows(op, x).max(axis=(-1, -2)),
    "maxpool_grad": lambda op, dy, x, y, **_: _maxpool_grad(op, dy, x, y),
    "reshape": lambda op, x, out_shape, **_: x.reshape(out_shape),
    "reshape_grad": lambda op, dy, out_shape, **_: dy.reshape(out_shape),
    "softmax_xent": lambda op, logits, labels, n, **_: _loss(logits, labels, n),
    "softmax_xent_grad": lambda op, *a, n, **_: _loss_grad(*a, n=n),
    "sgd": lambda op, w, dw, **_: w - op.attrs["lr"] * dw,
}


def run_kernel(op: Op, args: list[np.ndarray], out_shape: tuple, batch: int) -> np.ndarray:
    """Apply ``op`` to (tiles of) its inputs; ``batch`` is the full batch (loss scaling)."""
    if op.type not in KERNELS:
        raise ValueError(f"no NumPy kernel for op type {op.type!r}")
    out = KERNELS[op.type](op, *args, out_shape=out_shape, n=batch)
    return np.asarray(out, dtype=args[0].dtype)


def _batch(graph: Graph) -> int:
    return next(t.shape[0] for t in graph.tensors.values() if t.kind is TensorKind.INPUT)


def random_values(graph: Graph, seed: int = 0, classes: int | None = None) -> dict[str, np.ndarray]:
    """Random inputs, labels and parameters for a graph's sources."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, t in graph.tensors.items():
        if graph.producer(name) is not None or t.kind not in (
            TensorKind.INPUT,
            TensorKind.PARAM,
            TensorKind.GRADIENT,
        ):
            continue
        if t.dtype.startswith("int"):  # class labels of a softmax_xent
            logits = next(o for o in graph.consumers(name) if o.type == "softmax_xent").inputs[0]
            n = classes or graph.tensors[logits].shape[-1]
            out[name] = rng.integers(0, n, size=t.shape).astype(t.dtype)
        else:
            scale = (
                1 / np.sqrt(max(1, int(np.prod(t.shape[1:]))))
                if t.kind is TensorKind.PARAM
                else 1.0
            )
            out[name] = (rng.standard_normal(t.shape) * scale).astype(t.dtype)
    return out


def serial_step(graph: Graph, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One training step in plain NumPy on whole arrays; returns every tensor's value
    (parameters after their update)."""
    env = dict(values)
    n = _batch(graph)
    for op in graph.ops:
        out = graph.tensors[op.outputs[0]]
        env[out.name] = run_kernel(op, [env[t] for t in op.inputs], out.shape, n)
    return env


# ---- distributed execution ----------------------------------------------------------------


def region(shape: tuple[int, ...], cuts: list[int], device: int) -> Box:
    """The box of a tensor a device holds under per-cut tilings (``REP``/``RED`` keep it)."""
    box = [(0, n) for n in shape]
    k = len(cuts)
    for j, a in enumerate(cuts):
        if a >= 0:
            lo, hi = box[a]
            mid = lo + (hi - lo) // 2
            box[a] = (lo, mid) if not (device >> (k - 1 - j)) & 1 else (mid, hi)
    return tuple(box)


def _intersect(a: Box, b: Box) -> Box | None:
    out = tuple((max(x0, y0), min(x1, y1)) for (x0, x1), (y0, y1) in zip(a, b))
    return out if all(lo < hi for lo, hi in out) else None


def _size(box: Box) -> int:
    return int(np.prod([hi - lo for lo, hi in box]))


@dataclass
class Holding:
    """Where a tensor's current value lives: a key per device and the box it holds.
    ``red_cuts`` marks partial sums: devices differing in those bits hold summands."""

    key: object
    boxes: list[Box]
    red_cuts: tuple[int, ...] = ()


@dataclass
class Execution:
    """Result of :func:`execute`: final values, bytes predicted and measured."""

    values: dict[str, np.ndarray]
    predicted_bytes: int
    measured_bytes: int
    model_bytes: float
    tasks: int


class _Runner:
    def __init__(self, plan: Plan, backend: Backend) -> None:
        if backend.nworkers < plan.devices:
            raise ValueError(f"plan needs {plan.devices} workers, backend has {backend.nworkers}")
        self.plan, self.be, self.g = plan, backend, plan.graph
        self.k, self.p = len(plan.cuts), plan.devices
        self.hold: dict[str, Holding] = {}
        self.predicted = 0
        self.version = itertools.count()

    def cuts_of(self, tensor: str) -> list[int]:
        return [c[tensor] for c in self.plan.cuts]

    def home(self, tensor: str, d: int) -> Box:
        return region(self.g.tensors[tensor].shape, self.cuts_of(tensor), d)

    def gather(self, tensor: str, want: Box, d: int, red_member: int | None = None) -> object:
        """A region of ``tensor`` for device ``d`` from whoever holds it (local first).
        For partial sums, ``red_member`` selects the summand holders' red bits."""
        h = self.hold[tensor]
        t = self.g.tensors[tensor]
        mask = sum(1 << (self.k - 1 - j) for j in h.red_cuts)
        holders = [e for e in range(self.p) if red_member is None or (e & mask) == red_member]
        if h.boxes[d] == want and d in holders:
            return (h.key, d)
        pieces, seen = [], set()
        for e in sorted(holders, key=lambda e: e != d):
            box = h.boxes[e]
            if box in seen:
                continue
            seen.add(box)
            part = _intersect(box, want)
            if part is None:
                continue
            src = tuple(slice(lo - b0, hi - b0) for (lo, hi), (b0, _) in zip(part, box))
            dst = tuple(slice(lo - w0, hi - w0) for (lo, hi), (w0, _) in zip(part, want))
            pieces.append(Piece(e, (h.key, e), src, dst))
            if e != d:
                self.predicted += _size(part) * t.itemsize
        shape = tuple(hi - lo for lo, hi in want)
        return Region(shape, np.dtype(t.dtype), tuple(pieces))

    def put_sources(self, values: Mapping[str, np.ndarray]) -> None:
        for name, v in values.items():
            key = (name, next(self.version))
            boxes = [self.home(name, d) for d in range(self.p)]
            for d in range(self.p):
                self.be.put(
                    (key, d), np.ascontiguousarray(v[tuple(slice(*b) for b in boxes[d])]), d
                )
            self.hold[name] = Holding(key, boxes)

    def run_op(self, op: Op, form_per_cut: list) -> None:
        (out,) = op.outputs
        out_t = self.g.tensors[out]
        ins = [[f.ins[i] for f in form_per_cut] for i in range(len(op.inputs))]
        outs = [f.outs[0] for f in form_per_cut]
        raw = (f"{op.name}:raw", next(self.version))
        n = _batch(self.g)
        raw_boxes = []
        for d in range(self.p):
            args = [
                self.gather(t, region(self.g.tensors[t].shape, ins[i], d), d)
                for i, t in enumerate(op.inputs)
            ]
            obox = region(out_t.shape, outs, d)
            raw_boxes.append(obox)
            oshape = tuple(hi - lo for lo, hi in obox)
            fn = _task(op, oshape, n)
            self.be.submit(d, fn, args, [(raw, d)])
        red = tuple(j for j, a in enumerate(outs) if a == RED)
        self.hold[out] = Holding(raw, raw_boxes, red)
        if not red and outs == self.cuts_of(out):
            return  # computed exactly where the tensor lives
        key = (out, next(self.version))
        members = sorted(
            {
                sum(((e >> (self.k - 1 - j)) & 1) << (self.k - 1 - j) for j in red)
                for e in range(self.p)
            }
        )
        for d in range(self.p):
            want = self.home(out, d)
            parts = [self.gather(out, want, d, m if red else None) for m in members]
            self.be.submit(d, _summer(tuple(hi - lo for lo, hi in want)), parts, [(key, d)])
        self.hold[out] = Holding(key, [self.home(out, d) for d in range(self.p)])

    def fetch(self, tensor: str) -> np.ndarray:
        h = self.hold[tensor]
        t = self.g.tensors[tensor]
        full = np.empty(t.shape, dtype=t.dtype)
        for d in range(self.p):
            box = h.boxes[d]
            # reshape: the backend hands 0-d blocks back as shape (1,)
            tile = np.asarray(self.be.fetch((h.key, d))).reshape([hi - lo for lo, hi in box])
            full[tuple(slice(*b) for b in box)] = tile
        return full


def _task(op: Op, out_shape: tuple, batch: int) -> Callable[..., np.ndarray]:
    def sub_op(*args: np.ndarray) -> np.ndarray:
        return run_kernel(op, list(args), out_shape, batch)

    return sub_op


def _summer(shape: tuple[int, ...]) -> Callable[..., np.ndarray]:
    """Add the partial sums of a tile (one part when there is nothing to reduce)."""

    def reduce_parts(*parts: np.ndarray) -> np.ndarray:
        total = np.array(parts[0], copy=True).reshape(shape)
        for p in parts[1:]:
            total += p.reshape(shape)
        return total

    return reduce_parts


def execute(plan: Plan, values: Mapping[str, np.ndarray], backend: Backend) -> Execution:
    """Run one training step of ``plan.graph`` on ``plan.devices`` workers.

    ``values`` gives every source tensor (inputs, labels, parameters, gradient seeds);
    returns every tensor's final value, the bytes the fetch lists predict, the bytes the
    backend measured between workers, and the plan's cost-model bytes.
    """
    if plan.unit != "bytes":
        raise ValueError("execute needs a plan costed in bytes")
    run = _Runner(plan, backend)
    run.put_sources(values)
    backend.wait()
    backend.reset_stats()
    for op in plan.graph.ops:
        run.run_op(op, [f[op.name] for f in plan.forms])
    backend.wait()
    measured = backend.stats().bytes_moved
    tasks = backend.stats().tasks
    out = {t: run.fetch(t) for t in run.hold}
    return Execution(out, run.predicted, measured, plan.total, tasks)
