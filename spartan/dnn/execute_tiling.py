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
from spartan.dnn import kernels
from spartan.dnn.graph import Graph, Op, TensorKind
from spartan.dnn.tiling.forms import RED
from spartan.dnn.tiling.plan import Plan

Box = tuple[tuple[int, int], ...]

# ---- kernels: the shared table, run on whole arrays or tiles ------------------------------
# Every kernel is region-consistent under the op's aligned forms (spartan.dnn.tiling.forms):
# a device's tile of the output is the kernel applied to its tiles of the inputs, given the
# tile's output shape, the full batch (the loss divides by it) and the tiles' offsets.

KERNELS = kernels.KERNELS


def run_kernel(
    op: Op,
    args: list[np.ndarray],
    out_shape: tuple,
    batch: int,
    offsets: tuple[tuple[int, ...], ...] | None = None,
    step: int | None = None,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """Apply ``op`` to (tiles of) its inputs; ``batch`` is the full batch (loss scaling),
    ``offsets`` each input tile's first index in its tensor. The output keeps the dtype
    of the first floating-point input (so a float64 run stays float64).

    Inputs the op updates in place (optimizer state) are copied first: a tile handed to
    a task may be the stored block of the old value.
    """
    if op.type not in KERNELS:
        raise ValueError(
            f"op {op.name!r}: no NumPy kernel for op type {op.type!r}; supported: {sorted(KERNELS)}"
        )
    args = [np.array(a, copy=True) if t in op.inplace else a for a, t in zip(args, op.inputs)]
    attrs = {**op.attrs, "out_shape": tuple(out_shape), "batch": batch}
    if step is not None:  # (Adam refuses to guess it)
        attrs["step"] = step
    if offsets is not None:
        attrs["in_offsets"] = offsets
    out = kernels.run_kernel(np, op.type, args, attrs)
    floats = [a.dtype for a in args if np.issubdtype(a.dtype, np.floating)]
    dtype = floats[0] if floats else None
    if np.asarray(out[0] if isinstance(out, tuple) else out).dtype == np.bool_:
        dtype = None  # a comparison's mask stays bool
    if isinstance(out, tuple):  # an optimizer with state: every output has the param's shape
        return tuple(np.asarray(o, dtype=dtype).reshape(out_shape) for o in out)
    return np.asarray(out, dtype=dtype).reshape(out_shape)


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
        if t.dtype.startswith("int"):  # class labels of a softmax_xent, or lookup ids
            user = next(o for o in graph.consumers(name) if o.type in ("softmax_xent", "embedding"))
            if user.type == "embedding":
                n = graph.tensors[user.inputs[1]].shape[0]
            else:
                n = classes or graph.tensors[user.inputs[0]].shape[-1]
            out[name] = rng.integers(0, n, size=t.shape).astype(t.dtype)
        else:
            scale = (
                1 / np.sqrt(max(1, int(np.prod(t.shape[1:]))))
                if t.kind is TensorKind.PARAM
                else 1.0
            )
            out[name] = (rng.standard_normal(t.shape) * scale).astype(t.dtype)
    return out


def serial_step(
    graph: Graph, values: Mapping[str, np.ndarray], step: int | None = None
) -> dict[str, np.ndarray]:
    """One training step in plain NumPy on whole arrays; returns every tensor's value
    (parameters and optimizer state after their update). ``step`` is the 1-based
    optimizer step, which Adam's bias correction needs (a graph trained with Adam is
    refused without it)."""
    env = dict(values)
    n = _batch(graph)
    for op in graph.ops:
        out = graph.tensors[op.outputs[0]]
        res = run_kernel(op, [env[t] for t in op.inputs], out.shape, n, step=step)
        env.update(zip(op.outputs, res if isinstance(res, tuple) else (res,)))
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
        self.step: int | None = None

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

    def run_multi(self, op: Op, form_per_cut: list) -> None:
        """An op with several outputs (an optimizer update with state): element-wise, so
        each device computes its home tiles of every output from its home tiles."""
        outs = [f.outs[0] for f in form_per_cut]
        for i, t in enumerate(op.outputs):
            if [f.outs[i] for f in form_per_cut] != outs or self.cuts_of(t) != outs:
                raise ValueError(
                    f"op {op.name!r}: its outputs are not all tiled like {op.outputs[0]!r}"
                )
        keys = [(t, next(self.version)) for t in op.outputs]
        n, shape = _batch(self.g), self.g.tensors[op.outputs[0]].shape
        ins = [[f.ins[i] for f in form_per_cut] for i in range(len(op.inputs))]
        for d in range(self.p):
            boxes = [region(self.g.tensors[t].shape, ins[i], d) for i, t in enumerate(op.inputs)]
            args = [self.gather(t, box, d) for t, box in zip(op.inputs, boxes)]
            offsets = tuple(tuple(lo for lo, _ in box) for box in boxes)
            oshape = tuple(hi - lo for lo, hi in region(shape, outs, d))
            fn = _task(op, oshape, n, offsets, self.step)
            self.be.submit(d, fn, args, [(k, d) for k in keys])
        for t, k in zip(op.outputs, keys):
            self.hold[t] = Holding(k, [self.home(t, d) for d in range(self.p)])

    def run_op(self, op: Op, form_per_cut: list) -> None:
        if len(op.outputs) > 1:
            return self.run_multi(op, form_per_cut)
        (out,) = op.outputs
        out_t = self.g.tensors[out]
        ins = [[f.ins[i] for f in form_per_cut] for i in range(len(op.inputs))]
        outs = [f.outs[0] for f in form_per_cut]
        raw = (f"{op.name}:raw", next(self.version))
        n = _batch(self.g)
        raw_boxes = []
        for d in range(self.p):
            boxes = [region(self.g.tensors[t].shape, ins[i], d) for i, t in enumerate(op.inputs)]
            args = [self.gather(t, box, d) for t, box in zip(op.inputs, boxes)]
            offsets = tuple(tuple(lo for lo, _ in box) for box in boxes)
            obox = region(out_t.shape, outs, d)
            raw_boxes.append(obox)
            oshape = tuple(hi - lo for lo, hi in obox)
            fn = _task(op, oshape, n, offsets, self.step)
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


def _task(
    op: Op,
    out_shape: tuple,
    batch: int,
    offsets: tuple[tuple[int, ...], ...],
    step: int | None = None,
) -> Callable[..., np.ndarray | tuple[np.ndarray, ...]]:
    def sub_op(*args: np.ndarray) -> np.ndarray | tuple[np.ndarray, ...]:
        return run_kernel(op, list(args), out_shape, batch, offsets, step)

    return sub_op


def _summer(shape: tuple[int, ...]) -> Callable[..., np.ndarray]:
    """Add the partial sums of a tile (one part when there is nothing to reduce)."""

    def reduce_parts(*parts: np.ndarray) -> np.ndarray:
        total = np.array(parts[0], copy=True).reshape(shape)
        for p in parts[1:]:
            total += p.reshape(shape)
        return total

    return reduce_parts


def execute(
    plan: Plan, values: Mapping[str, np.ndarray], backend: Backend, step: int | None = None
) -> Execution:
    """Run one training step of ``plan.graph`` on ``plan.devices`` workers.

    The optimizer is the graph's (``sgd``, ``momentum`` or ``adam``, chosen when the
    graph is built: ``mlp(..., optimizer="adam")``, ``from_torch(..., optimizer=...)``);
    its state tensors (``"w.m"``, ``"w.v"``) are sources like the parameters (zeros
    before the first step) and come back updated. ``step`` is the 1-based optimizer
    step, which Adam's bias correction needs (as torch.optim.Adam counts it; a graph
    trained with Adam is refused without it).
    ``values`` gives every source tensor (inputs, labels, parameters, gradient seeds);
    returns every tensor's final value, the bytes the fetch lists predict, the bytes the
    backend measured between workers, and the plan's cost-model bytes.
    """
    if plan.unit != "bytes":
        raise ValueError("execute needs a plan costed in bytes")
    run = _Runner(plan, backend)
    run.step = None if step is None else int(step)
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
