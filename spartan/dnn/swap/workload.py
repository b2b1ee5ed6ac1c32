"""The swap planner's view of a DNN graph: integer-indexed ops and tensors with times.

A :class:`Workload` freezes everything the planner, the simulator and the genetic search
need about one training (or inference) iteration: per-op compute time, per-tensor bytes and
lifetime class, op inputs/outputs as tensor ids, the dependency lists, device capacity and
host link bandwidth. It is cheap to pickle, so worker processes receive it once.

>>> from spartan.dnn.graph import Graph, Phase, TensorKind
>>> g = Graph("toy")
>>> for n, k in [("x", TensorKind.INPUT), ("w", TensorKind.PARAM), ("y", TensorKind.ACTIVATION)]:
...     _ = g.add_tensor(n, (256, 256), k)
>>> _ = g.add_op("fc", "matmul", ["x", "w"], ["y"], Phase.FORWARD, flops=2 * 256**3)
>>> wl = Workload.from_graph(g, capacity=1 << 20, host_bw=12e9, op_times={"fc": 1e-3})
>>> wl.n_ops, wl.sizes, wl.compute_time, wl.peak_bytes()
(1, (262144,), 0.001, 786432)
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from spartan.dnn.graph import Graph, TensorKind
from spartan.dnn.hardware import Accelerator, Profile, op_time

__all__ = ["Workload"]

PERSISTENT_KINDS = (TensorKind.PARAM, TensorKind.OPT_STATE)


@dataclass(frozen=True)
class Workload:
    """One iteration of a graph, indexed for planning.

    Tensor flags: ``persistent`` tensors (parameters, optimizer state) outlive the iteration;
    ``source`` tensors have no producer and start in host memory (inputs, parameters);
    ``updated`` tensors are written in place (so a resident copy is newer than the host's);
    ``keep`` tensors stay live until the end of the iteration even without later readers.
    """

    name: str
    op_names: tuple[str, ...]
    tensor_names: tuple[str, ...]
    durations: tuple[float, ...]
    nbytes: tuple[int, ...]
    op_inputs: tuple[tuple[int, ...], ...]
    op_outputs: tuple[tuple[int, ...], ...]  # newly created tensors only
    op_inplace: tuple[tuple[int, ...], ...]
    op_preds: tuple[tuple[int, ...], ...]
    persistent: tuple[bool, ...]
    source: tuple[bool, ...]
    updated: tuple[bool, ...]
    keep: tuple[bool, ...]
    backward: tuple[bool, ...]  # op is in the backward or update phase
    activation: tuple[bool, ...]  # tensor is a forward activation (vDNN offloads these)
    capacity: float
    host_bw: float

    @classmethod
    def from_graph(
        cls,
        graph: Graph,
        *,
        accel: Accelerator | None = None,
        profile: Profile | None = None,
        op_times: Mapping[str, float] | None = None,
        capacity: float | None = None,
        host_bw: float | None = None,
        keep: Sequence[str] = (),
    ) -> Workload:
        """Index ``graph``; op times come from ``op_times``, else ``profile``, else the
        roofline of ``accel``; ``capacity``/``host_bw`` default to the accelerator's."""
        if op_times is None and profile is None and accel is None:
            raise ValueError("give op_times, a profile or an accelerator to time the ops")
        device = profile.accel if profile is not None else accel
        if capacity is None or host_bw is None:
            if device is None:
                raise ValueError("capacity and host_bw are required without an accelerator")
            capacity = device.memory if capacity is None else capacity
            host_bw = device.host_bw if host_bw is None else host_bw
        if capacity <= 0 or host_bw <= 0:
            raise ValueError(f"capacity and host_bw must be > 0, got {capacity}, {host_bw}")
        graph.validate()
        tnames = tuple(graph.tensors)
        tid = {n: i for i, n in enumerate(tnames)}
        ops = graph.topo_order()
        oid = {o.name: i for i, o in enumerate(ops)}

        def duration(o) -> float:
            if op_times is not None and o.name in op_times:
                return float(op_times[o.name])
            if profile is not None:
                return profile.time(o, graph)
            if accel is None:
                raise ValueError(f"no time for op {o.name!r}")
            return op_time(o, graph, accel)

        missing = [n for n in keep if n not in tid]
        if missing:
            raise ValueError(f"keep names unknown tensors {missing}")
        tensors = [graph.tensors[n] for n in tnames]
        return cls(
            name=graph.name,
            op_names=tuple(o.name for o in ops),
            tensor_names=tnames,
            durations=tuple(duration(o) for o in ops),
            nbytes=tuple(max(1, t.nbytes) for t in tensors),
            op_inputs=tuple(tuple(tid[t] for t in dict.fromkeys(o.inputs)) for o in ops),
            op_outputs=tuple(tuple(tid[t] for t in o.outputs if t not in o.inputs) for o in ops),
            op_inplace=tuple(tuple(tid[t] for t in o.inplace) for o in ops),
            op_preds=tuple(tuple(oid[p.name] for p in graph.preds(o)) for o in ops),
            persistent=tuple(t.kind in PERSISTENT_KINDS for t in tensors),
            source=tuple(graph.producer(n) is None for n in tnames),
            updated=tuple(bool(graph.writers(n)) for n in tnames),
            keep=tuple(n in set(keep) for n in tnames),
            backward=tuple(o.phase.value != "forward" for o in ops),
            activation=tuple(t.kind is TensorKind.ACTIVATION for t in tensors),
            capacity=float(capacity),
            host_bw=float(host_bw),
        )

    @functools.cached_property
    def op_succs(self) -> tuple[tuple[int, ...], ...]:
        """Per op, the ops that depend on it (inverse of ``op_preds``)."""
        succs: list[list[int]] = [[] for _ in range(self.n_ops)]
        for op, preds in enumerate(self.op_preds):
            for p in preds:
                succs[p].append(op)
        return tuple(tuple(s) for s in succs)

    @property
    def n_ops(self) -> int:
        return len(self.op_names)

    @property
    def n_tensors(self) -> int:
        return len(self.tensor_names)

    @property
    def sizes(self) -> tuple[int, ...]:
        """TS: the sorted unique tensor sizes in bytes."""
        return tuple(sorted(set(self.nbytes)))

    @property
    def compute_time(self) -> float:
        """Sum of op times: the iteration time with infinite memory on one stream."""
        return sum(self.durations)

    @property
    def total_bytes(self) -> int:
        """Bytes of all tensors: the memory an iteration needs without any reuse."""
        return sum(self.nbytes)

    def peak_bytes(self, schedule: Sequence[int] | None = None) -> int:
        """Peak device bytes of ``schedule`` (default: graph order) with unlimited memory:
        persistent tensors always resident, others from production (or first use, for
        inputs) until their last use; the memory the iteration needs without swapping."""
        order = self.default_schedule() if schedule is None else list(schedule)
        last = [-1] * self.n_tensors
        for pos, op in enumerate(order):
            for t in self.op_tensors(op):
                last[t] = pos
        live = sum(b for b, p in zip(self.nbytes, self.persistent, strict=True) if p)
        peak = live
        resident = [p for p in self.persistent]
        for pos, op in enumerate(order):
            for t in self.op_tensors(op):
                if not resident[t]:
                    resident[t] = True
                    live += self.nbytes[t]
            peak = max(peak, live)
            for t in self.op_tensors(op):
                if last[t] == pos and not (self.persistent[t] or self.keep[t]):
                    resident[t] = False
                    live -= self.nbytes[t]
        return peak

    def transfer_time(self, tensor: int) -> float:
        """Seconds to copy ``tensor`` across the host link in one direction."""
        return self.nbytes[tensor] / self.host_bw

    def op_tensors(self, op: int) -> tuple[int, ...]:
        """Distinct tensors ``op`` touches (its inputs, then its new outputs)."""
        return self.op_inputs[op] + self.op_outputs[op]

    def default_schedule(self) -> list[int]:
        """The graph's own topological order."""
        return list(range(self.n_ops))

    def with_capacity(self, capacity: float) -> Workload:
        """The same workload on a device with ``capacity`` bytes."""
        return replace(self, capacity=float(capacity))
