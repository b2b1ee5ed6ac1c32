"""The DNN dataflow-graph IR shared by the tiling, swap and placement planners.

A :class:`Graph` holds named :class:`Tensor` s (shape, dtype, kind) and a list of
:class:`Op` s kept in a valid topological order. A training graph has FORWARD ops,
BACKWARD ops (gradients of activations and weights, types ``"<fwd>_grad"``) and UPDATE
ops (e.g. ``"sgd"``: ``w -= lr * dw``).

Update ops write parameters and optimizer state *in place*: such a tensor appears in
both the op's inputs and outputs. It keeps its creator (``producer``) and the in-place
writer orders after every earlier reader (write-after-read edges in ``preds``/``succs``),
so the dependency graph stays acyclic and memory planners see one buffer per parameter.

>>> g = Graph("tiny")
>>> _ = g.add_tensor("x", (4, 3), TensorKind.INPUT)
>>> _ = g.add_tensor("w", (3, 2), TensorKind.PARAM)
>>> _ = g.add_tensor("y", (4, 2), TensorKind.ACTIVATION)
>>> op = g.add_op("fc", "matmul", ["x", "w"], ["y"], Phase.FORWARD, flops=2 * 4 * 3 * 2)
>>> [o.name for o in g.consumers("w")], g.producer("y").name, g.param_count()
(['fc'], 'fc', 6)
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

DTYPE_BYTES: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}


class TensorKind(enum.Enum):
    """What a tensor holds; planners treat kinds differently (params persist, ...)."""

    INPUT = "input"
    PARAM = "param"
    ACTIVATION = "activation"
    GRADIENT = "gradient"
    OPT_STATE = "opt_state"
    SCRATCH = "scratch"


class Phase(enum.Enum):
    """Which pass of a training step an op belongs to."""

    FORWARD = "forward"
    BACKWARD = "backward"
    UPDATE = "update"


@dataclass(frozen=True)
class Tensor:
    """A named tensor value. ``shape=()`` is a scalar.

    >>> Tensor("w", (300, 300), TensorKind.PARAM).nbytes
    360000
    """

    name: str
    shape: tuple[int, ...]
    kind: TensorKind
    dtype: str = "float32"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if any(d < 0 for d in self.shape):
            raise ValueError(f"tensor {self.name!r}: negative dimension in {self.shape}")
        if self.dtype not in DTYPE_BYTES:
            raise TypeError(f"tensor {self.name!r}: unsupported dtype {self.dtype!r}")
        if not isinstance(self.kind, TensorKind):
            raise TypeError(f"tensor {self.name!r}: kind must be a TensorKind, got {self.kind!r}")

    @property
    def size(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)


@dataclass
class Op:
    """One operation: reads ``inputs`` and writes ``outputs`` (tensor names).

    ``flops`` counts floating-point operations (a multiply-add is 2). ``attrs`` holds
    type-specific settings (stride, padding, transposes, the forward op a gradient
    belongs to as ``"of"`` and the input index it differentiates as ``"wrt"``).
    """

    name: str
    type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    phase: Phase
    flops: float = 0.0
    attrs: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.inputs = tuple(self.inputs)
        self.outputs = tuple(self.outputs)
        if not isinstance(self.phase, Phase):
            raise TypeError(f"op {self.name!r}: phase must be a Phase, got {self.phase!r}")
        if self.flops < 0:
            raise ValueError(f"op {self.name!r}: flops must be >= 0, got {self.flops}")

    @property
    def inplace(self) -> tuple[str, ...]:
        """Tensors this op updates in place (listed as both input and output)."""
        return tuple(t for t in self.outputs if t in self.inputs)

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        return self is other


class Graph:
    """A DNN dataflow graph: tensors by name and ops in topological order.

    ``add_op`` enforces the order: every input must already exist and, unless it is a
    source (INPUT/PARAM/OPT_STATE or a gradient seed), already have a producer.
    """

    def __init__(self, name: str = "graph") -> None:
        self.name = name
        # The model's output tensors, where a builder records them (e.g. from_torch):
        # informational only; planners and executors ignore it.
        self.outputs: tuple[str, ...] = ()
        self.tensors: dict[str, Tensor] = {}
        self.ops: list[Op] = []
        self._ops_by_name: dict[str, Op] = {}
        self._producer: dict[str, Op] = {}
        self._consumers: dict[str, list[Op]] = {}
        self._writers: dict[str, list[Op]] = {}  # in-place writers, in order
        self._pos: dict[str, int] = {}
        self._deps: tuple[dict[str, list[Op]], dict[str, list[Op]]] | None = None

    # ---- construction ---------------------------------------------------------------
    def add_tensor(
        self,
        name: str | Tensor,
        shape: Iterable[int] = (),
        kind: TensorKind = TensorKind.ACTIVATION,
        dtype: str = "float32",
    ) -> Tensor:
        """Add a tensor (or an existing :class:`Tensor` object) and return it."""
        t = name if isinstance(name, Tensor) else Tensor(name, tuple(shape), kind, dtype)
        if t.name in self.tensors:
            raise ValueError(f"graph {self.name!r}: tensor {t.name!r} already exists")
        self.tensors[t.name] = t
        self._consumers[t.name] = []
        return t

    def add_op(
        self,
        name: str | Op,
        type: str = "",
        inputs: Iterable[str] = (),
        outputs: Iterable[str] = (),
        phase: Phase = Phase.FORWARD,
        flops: float = 0.0,
        attrs: dict | None = None,
    ) -> Op:
        """Append an op; its inputs must be available (created earlier or sources)."""
        op = (
            name
            if isinstance(name, Op)
            else Op(
                name, type, tuple(inputs), tuple(outputs), phase, float(flops), dict(attrs or {})
            )
        )
        if op.name in self._ops_by_name:
            raise ValueError(f"graph {self.name!r}: op {op.name!r} already exists")
        for t in (*op.inputs, *op.outputs):
            if t not in self.tensors:
                raise KeyError(f"op {op.name!r}: unknown tensor {t!r}")
        for t in op.outputs:
            if t in op.inputs:
                continue
            if t in self._producer:
                raise ValueError(
                    f"op {op.name!r}: tensor {t!r} already produced by {self._producer[t].name!r}"
                )
            if self._consumers[t]:
                raise ValueError(f"op {op.name!r}: tensor {t!r} is read before it is produced")
        self._pos[op.name] = len(self.ops)
        self.ops.append(op)
        self._ops_by_name[op.name] = op
        self._deps = None
        for t in dict.fromkeys(op.inputs):
            self._consumers[t].append(op)
        for t in op.outputs:
            if t in op.inputs:
                self._writers.setdefault(t, []).append(op)
            else:
                self._producer[t] = op
        return op

    # ---- queries --------------------------------------------------------------------
    def op(self, name: str) -> Op:
        return self._ops_by_name[name]

    def has_op(self, name: str) -> bool:
        return name in self._ops_by_name

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def producer(self, tensor: str) -> Op | None:
        """The op that creates ``tensor`` (None for sources such as inputs and params)."""
        return self._producer.get(tensor)

    def consumers(self, tensor: str) -> list[Op]:
        """Ops reading ``tensor``, in graph order (in-place updaters included)."""
        return list(self._consumers[tensor])

    def writers(self, tensor: str) -> list[Op]:
        """Ops updating ``tensor`` in place, in graph order."""
        return list(self._writers.get(tensor, ()))

    def preds(self, op: Op) -> list[Op]:
        """Ops that must run before ``op``: producers of its inputs, earlier in-place
        writers of them, and for tensors it updates in place every earlier reader."""
        return list(self._dep_maps()[0][op.name])

    def succs(self, op: Op) -> list[Op]:
        """Ops that must run after ``op`` (inverse of :meth:`preds`)."""
        return list(self._dep_maps()[1][op.name])

    def topo_order(self) -> list[Op]:
        """The ops in a valid execution order (the order they were added)."""
        return list(self.ops)

    def params(self) -> list[Tensor]:
        return [t for t in self.tensors.values() if t.kind is TensorKind.PARAM]

    def param_count(self) -> int:
        """Total number of trainable parameters (elements)."""
        return sum(t.size for t in self.params())

    def op_bytes(self, op: Op) -> int:
        """Bytes read plus bytes written by ``op`` (an in-place tensor counts twice)."""
        read = sum(self.tensors[t].nbytes for t in dict.fromkeys(op.inputs))
        written = sum(self.tensors[t].nbytes for t in dict.fromkeys(op.outputs))
        return read + written

    def ops_in(self, phase: Phase) -> list[Op]:
        return [o for o in self.ops if o.phase is phase]

    def total_flops(self) -> float:
        return sum(o.flops for o in self.ops)

    def edges(self) -> Iterator[tuple[Op, Op, str]]:
        """Data edges ``(producer, consumer, tensor)`` over created tensors."""
        for t, p in self._producer.items():
            for c in self._consumers[t]:
                yield p, c, t

    def validate(self) -> None:
        """Check the invariants planners rely on; raise ValueError on the first breach.

        Every tensor read is created earlier or is a source, every non-source tensor has
        exactly one producer, and in-place updates only happen in the UPDATE phase.
        """
        created: set[str] = set()
        for op in self.ops:
            for t in op.inputs:
                if t in self._producer and t not in created:
                    raise ValueError(f"op {op.name!r} reads {t!r} before it is produced")
            for t in op.outputs:
                if t in op.inputs and op.phase is not Phase.UPDATE:
                    raise ValueError(f"op {op.name!r} updates {t!r} in place outside UPDATE")
                created.add(t)
        for name, tensor in self.tensors.items():
            kind = tensor.kind
            if kind in (TensorKind.ACTIVATION, TensorKind.SCRATCH) and name not in self._producer:
                raise ValueError(f"{kind.value} tensor {name!r} has no producer")

    # ---- internals ------------------------------------------------------------------
    def _dep_maps(self) -> tuple[dict[str, list[Op]], dict[str, list[Op]]]:
        if self._deps is None:
            pos = self._pos
            preds: dict[str, list[Op]] = {}
            succs: dict[str, list[Op]] = {o.name: [] for o in self.ops}
            for op in self.ops:
                here = pos[op.name]
                seen: dict[str, Op] = {}
                for t in op.inputs:
                    p = self._producer.get(t)
                    if p is not None:
                        seen[p.name] = p
                    for w in self._writers.get(t, ()):
                        if pos[w.name] < here:
                            seen[w.name] = w
                for t in op.inplace:
                    for r in self._consumers[t]:
                        if pos[r.name] < here:
                            seen[r.name] = r
                seen.pop(op.name, None)
                preds[op.name] = sorted(seen.values(), key=lambda o: pos[o.name])
                for p in preds[op.name]:
                    succs[p.name].append(op)
            self._deps = (preds, succs)
        return self._deps

    def __repr__(self) -> str:
        return (
            f"Graph({self.name!r}, {len(self.ops)} ops, {len(self.tensors)} tensors, "
            f"{self.param_count():,} params)"
        )
