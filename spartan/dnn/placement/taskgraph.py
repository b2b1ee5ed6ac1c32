"""The placement problem: a weighted DAG of operations and a set of devices (speeds may differ).

Planners work on a :class:`TaskGraph`, a flat array form of a DNN graph in which node ids are a
topological order (every edge goes from a lower to a higher id), so one pass over ``range(n)``
visits producers before consumers. Node classes follow ParDNN (thesis §4.1.2):

* ``RESIDUAL`` nodes hold state that survives the iteration (weights, optimizer state); their
  bytes are resident on their device for the whole step.
* ``REFERENCE`` nodes mutate a residual tensor in place (the SGD update); they allocate nothing
  and must run on their anchor's device.
* ``NORMAL`` nodes allocate their output when they start and free it after their last consumer.

Example
-------
>>> tg = TaskGraph(["w", "mm", "relu"], comp=[0.0, 2.0, 1.0], mem=[64, 32, 32],
...                kind=[NodeKind.RESIDUAL, NodeKind.NORMAL, NodeKind.NORMAL],
...                edges=[(0, 1, 64), (1, 2, 32)])
>>> tg.n, tg.m, list(tg.succs[1])
(3, 2, [2])
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from spartan.dnn.graph import Graph, Op

__all__ = ["NodeKind", "TaskGraph", "Machine"]


class NodeKind(enum.IntEnum):
    """Memory class of a node (ParDNN's normal / residual / reference nodes)."""

    NORMAL = 0
    RESIDUAL = 1
    REFERENCE = 2


class TaskGraph:
    """Operations (nodes, numbered topologically) and tensors flowing between them (edges).

    ``comp`` is each node's run time in seconds on one device, ``mem`` its output bytes (for a
    residual node: its resident bytes), ``edges`` are ``(src, dst, bytes)`` with ``src < dst``;
    parallel edges are merged (bytes summed). ``anchor[i]`` is the residual node a reference
    node must share a device with (``-1`` for other nodes).
    """

    def __init__(
        self,
        names: Sequence[str],
        comp: Sequence[float] | np.ndarray,
        mem: Sequence[int] | np.ndarray,
        kind: Sequence[int] | np.ndarray,
        edges: Sequence[tuple[int, int, int]] | np.ndarray,
        anchor: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        n = len(names)
        self.names = tuple(names)
        self.comp = np.asarray(comp, dtype=np.float64).reshape(-1)
        self.mem = np.asarray(mem, dtype=np.int64).reshape(-1)
        self.kind = np.asarray(kind, dtype=np.int8).reshape(-1)
        self.anchor = (
            np.full(n, -1, dtype=np.int64)
            if anchor is None
            else np.asarray(anchor, dtype=np.int64).reshape(-1)
        )
        for field_name in ("comp", "mem", "kind", "anchor"):
            if len(getattr(self, field_name)) != n:
                raise ValueError(
                    f"{field_name} has {len(getattr(self, field_name))} entries, expected {n}"
                )
        if n and (self.comp.min() < 0 or self.mem.min() < 0):
            raise ValueError("comp and mem must be non-negative")
        if n and not np.isin(self.kind, list(NodeKind)).all():
            raise ValueError("kind must hold NodeKind values")
        self._check_anchors()
        e = np.asarray(edges, dtype=np.int64).reshape(-1, 3)
        if len(e) and (e[:, :2].min() < 0 or e[:, :2].max() >= n):
            raise ValueError("edge endpoint out of range")
        if len(e) and (e[:, 0] >= e[:, 1]).any():
            bad = e[e[:, 0] >= e[:, 1]][0]
            raise ValueError(
                f"edge {tuple(bad[:2])} does not go from a lower to a higher node id; "
                "number nodes in a topological order"
            )
        if len(e) and e[:, 2].min() < 0:
            raise ValueError("edge bytes must be non-negative")
        # Merge parallel edges and sort by (src, dst) so edge ids are deterministic.
        key = e[:, 0] * n + e[:, 1]
        uniq, inv = np.unique(key, return_inverse=True)
        self.src = (uniq // max(n, 1)).astype(np.int64)
        self.dst = (uniq % max(n, 1)).astype(np.int64)
        self.nbytes = np.bincount(inv, weights=e[:, 2], minlength=len(uniq)).astype(np.int64)
        self._build_adjacency()

    #: Names of the source tensors of a graph built by :meth:`from_graph` (nodes ``0..len-1``).
    source_tensors: tuple[str, ...] = ()

    @classmethod
    def from_graph(
        cls, graph: Graph, accel: object | None = None, op_time: Callable[[Op], float] | None = None
    ) -> TaskGraph:
        """Flatten a DNN :class:`~spartan.dnn.graph.Graph` into a task graph.

        Source tensors become nodes ``0..S-1`` (parameters and optimizer state RESIDUAL,
        inputs NORMAL with zero time), then one node per op in graph order; ops updating a
        residual tensor in place are REFERENCE nodes anchored to it. Reads follow the latest
        writer of a tensor, and an in-place writer waits for every earlier reader (a 0-byte
        control edge). Op times come from ``op_time(op)`` or the roofline
        ``spartan.dnn.hardware.op_time(op, graph, accel)``.

        >>> from spartan.dnn.zoo import mlp
        >>> from spartan.dnn.hardware import V100
        >>> tg = TaskGraph.from_graph(mlp(32, [64, 64, 10]), V100)
        >>> int((tg.kind == NodeKind.REFERENCE).sum()) == len(tg.source_tensors) - 2
        True
        """
        from spartan.dnn.graph import TensorKind

        if op_time is None:
            if accel is None:
                raise TypeError("from_graph needs an accelerator or an op_time function")
            from spartan.dnn.hardware import op_time as roofline

            def op_time(op: Op) -> float:
                return float(roofline(op, graph, accel))

        sources = [t for t in graph.tensors if graph.producer(t) is None and graph.consumers(t)]
        names: list[str] = []
        comp: list[float] = []
        mem: list[int] = []
        kind: list[int] = []
        anchor: list[int] = []
        owner: dict[str, int] = {}  # node holding the latest version of a tensor
        home: dict[str, int] = {}  # residual node of a parameter / optimizer-state tensor
        for t in sources:
            tensor = graph.tensors[t]
            owner[t] = len(names)
            names.append(t)
            comp.append(0.0)
            mem.append(tensor.nbytes)
            residual = tensor.kind in (TensorKind.PARAM, TensorKind.OPT_STATE)
            kind.append(NodeKind.RESIDUAL if residual else NodeKind.NORMAL)
            anchor.append(-1)
            if residual:
                home[t] = owner[t]
        readers: dict[str, list[int]] = {}
        edges: list[tuple[int, int, int]] = []
        for op in graph.ops:
            i = len(names)
            inplace = op.inplace
            for t in dict.fromkeys(op.inputs):
                edges.append((owner[t], i, graph.tensors[t].nbytes))
            for t in inplace:
                edges.extend((r, i, 0) for r in readers.get(t, ()) if r != i)
            for t in dict.fromkeys(op.inputs):
                readers.setdefault(t, []).append(i)
            anchors = [home[t] for t in inplace if t in home]
            names.append(op.name)
            comp.append(op_time(op))
            mem.append(sum(graph.tensors[t].nbytes for t in op.outputs if t not in inplace))
            kind.append(NodeKind.REFERENCE if anchors else NodeKind.NORMAL)
            anchor.append(anchors[0] if anchors else -1)
            for t in op.outputs:
                owner[t] = i
                readers[t] = []
        tg = cls(names, comp, mem, kind, edges, anchor)
        tg.source_tensors = tuple(sources)
        return tg

    def _check_anchors(self) -> None:
        refs = np.flatnonzero(self.kind == NodeKind.REFERENCE)
        if (self.anchor[refs] < 0).any():
            raise ValueError("every REFERENCE node needs an anchor")
        if len(refs) and (self.kind[self.anchor[refs]] != NodeKind.RESIDUAL).any():
            raise ValueError("a REFERENCE node's anchor must be a RESIDUAL node")
        others = np.flatnonzero(self.kind != NodeKind.REFERENCE)
        if (self.anchor[others] >= 0).any():
            raise ValueError("only REFERENCE nodes have an anchor")

    def _build_adjacency(self) -> None:
        n = self.n
        succs: list[list[int]] = [[] for _ in range(n)]
        preds: list[list[int]] = [[] for _ in range(n)]
        succ_edges: list[list[int]] = [[] for _ in range(n)]
        pred_edges: list[list[int]] = [[] for _ in range(n)]
        for e, (s, d) in enumerate(zip(self.src.tolist(), self.dst.tolist())):
            succs[s].append(d)
            succ_edges[s].append(e)
            preds[d].append(s)
            pred_edges[d].append(e)
        self.succs, self.preds = succs, preds
        self.succ_edges, self.pred_edges = succ_edges, pred_edges

    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.names)

    @property
    def m(self) -> int:
        """Number of (merged) edges."""
        return len(self.src)

    @property
    def movable(self) -> np.ndarray:
        """Ids of the nodes a planner chooses a device for (all but reference nodes)."""
        return np.flatnonzero(self.kind != NodeKind.REFERENCE)

    def colocate(self, assign: np.ndarray) -> np.ndarray:
        """Return ``assign`` with every reference node moved to its anchor's device."""
        out = np.asarray(assign, dtype=np.int64).copy()
        refs = np.flatnonzero(self.kind == NodeKind.REFERENCE)
        out[refs] = out[self.anchor[refs]]
        return out

    def resident_bytes(self) -> int:
        """Bytes of state that stays resident across iterations (all residual nodes)."""
        return int(self.mem[self.kind == NodeKind.RESIDUAL].sum())

    def __repr__(self) -> str:
        return f"TaskGraph(n={self.n}, m={self.m}, comp={self.comp.sum():.3g}s, resident={self.resident_bytes()}B)"


@dataclass(frozen=True)
class Machine:
    """``devices`` devices with ``memory`` bytes each, joined by links.

    A transfer of ``b`` bytes takes ``latency + b / link_bw`` seconds on the sending device's
    egress link (one transfer at a time per link). ``headroom`` is the fraction of memory
    ParDNN keeps free (10% in the thesis). ``speed`` makes the devices heterogeneous (e.g. a
    CPU beside a GPU): node ``i`` takes ``comp[i] / speed[d]`` seconds on device ``d``
    (``None``: every device runs at speed 1, i.e. ``comp`` as given).

    >>> Machine(4, memory=16e9, link_bw=12e9).comm_time(12e9)
    1.00001
    >>> Machine(2, memory=16e9, link_bw=12e9, speed=(1.0, 4.0)).device_time(2.0, 1)
    0.5
    """

    devices: int
    memory: float
    link_bw: float
    latency: float = 1e-5
    headroom: float = 0.1
    speed: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if int(self.devices) != self.devices or self.devices < 1:
            raise ValueError(f"devices must be a positive integer, got {self.devices!r}")
        if self.memory <= 0 or self.link_bw <= 0:
            raise ValueError("memory and link_bw must be positive")
        if self.latency < 0 or not 0 <= self.headroom < 1:
            raise ValueError("latency must be >= 0 and headroom in [0, 1)")
        if self.speed is not None:
            speed = tuple(float(x) for x in self.speed)
            if len(speed) != self.devices:
                raise ValueError(f"speed has {len(speed)} entries for {self.devices} devices")
            if min(speed) <= 0 or not np.isfinite(speed).all():
                raise ValueError(f"every device speed must be positive and finite, got {speed}")
            object.__setattr__(self, "speed", speed)

    @classmethod
    def of(cls, accel: object, devices: int, memory: float | None = None, **kw: Any) -> Machine:
        """A machine of ``devices`` copies of an accelerator preset (memory overridable).

        >>> from spartan.dnn.hardware import V100
        >>> Machine.of(V100, 4).devices
        4
        """
        return cls(
            devices,
            memory=float(accel.memory if memory is None else memory),  # type: ignore[attr-defined]
            link_bw=float(accel.link_bw),  # type: ignore[attr-defined]
            **kw,
        )

    @classmethod
    def mixed(
        cls,
        accels: Sequence[Any],
        memory: float | None = None,
        link_bw: float | None = None,
        **kw: Any,
    ) -> Machine:
        """A heterogeneous machine, one device per accelerator preset (e.g. a CPU and a GPU).

        Speeds are peak FLOP/s relative to the first device, so a task graph's ``comp`` must
        hold times on ``accels[0]``. Memory defaults to the smallest device's (planners give
        every device the same capacity); links to the slowest preset's ``host_bw`` when the
        presets differ (a CPU-GPU pair talks over PCIe), else their ``link_bw``.

        >>> from spartan.dnn.hardware import V100, XEON
        >>> m = Machine.mixed([XEON, V100])
        >>> m.devices, round(m.speed[1], 1), m.link_bw == XEON.host_bw
        (2, 5.6, True)
        """
        if not accels:
            raise ValueError("mixed needs at least one accelerator")
        flops = [float(a.flops) for a in accels]
        mem = min(float(a.memory) for a in accels) if memory is None else memory
        if link_bw is None:
            same = len({a.name for a in accels}) == 1
            link_bw = min(float(a.link_bw if same else min(a.link_bw, a.host_bw)) for a in accels)
        speed = tuple(f / flops[0] for f in flops)
        return cls(len(accels), memory=float(mem), link_bw=float(link_bw), speed=speed, **kw)

    @property
    def heterogeneous(self) -> bool:
        """Whether devices run at different speeds (device renaming then changes makespans)."""
        return self.speed is not None and len(set(self.speed)) > 1

    @property
    def speeds(self) -> np.ndarray:
        """Speed of every device (ones when ``speed`` is None)."""
        return np.ones(self.devices) if self.speed is None else np.asarray(self.speed)

    def device_time(self, comp: float | np.ndarray, device: int | np.ndarray) -> float | np.ndarray:
        """Seconds that work of ``comp`` seconds at speed 1 takes on ``device``."""
        t = np.asarray(comp, dtype=np.float64) / self.speeds[np.asarray(device)]
        return float(t) if t.ndim == 0 else t

    @property
    def limit(self) -> float:
        """Usable bytes per device once the headroom is kept free."""
        return self.memory * (1.0 - self.headroom)

    def comm_time(self, nbytes: float | np.ndarray) -> float | np.ndarray:
        """Seconds to move ``nbytes`` over one link."""
        t = self.latency + np.asarray(nbytes, dtype=np.float64) / self.link_bw
        return float(t) if t.ndim == 0 else t
