"""The augmented dataflow graph a swap planner produces, and its three-stream simulation.

A :class:`SwapPlan` holds the original ops in schedule order (compute stream) plus swap-in
nodes (host-to-device stream) and swap-out nodes (device-to-host stream), each stream in the
order the planner issued them, and the control edges between nodes: a swap-in waits for
the release of the pool object it fills and for the tensor's last swap-out, an op waits
for its swap-ins and for the objects of its outputs. Nodes also record which pool object
(``(class, index)``) each tensor occupies and which tensors leave the device after them,
so an executor can replay the plan exactly.

The simulator is :func:`spartan.dnn.simulator.simulate` with one resource per stream:
node start = max(stream free, all dependencies done), copy time = bytes / host bandwidth.

>>> from spartan.dnn.swap.worked_examples import figure3_workload
>>> from spartan.dnn.swap.planner import plan_swaps
>>> from spartan.dnn.swap.pool import Allocation
>>> wl = figure3_workload()
>>> p = plan_swaps(wl, wl.default_schedule(), Allocation((0,), (4,)), steady_state=False)
>>> p.iteration_time(), p.n_swap_in, p.n_swap_out
(4.0, 3, 0)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from spartan.dnn.simulator import SimResult, Task, simulate
from spartan.dnn.swap.workload import Workload

__all__ = ["COMPUTE", "SWAP_IN", "SWAP_OUT", "STREAMS", "Slot", "SwapPlan", "InfeasiblePlan"]

COMPUTE, SWAP_IN, SWAP_OUT = 0, 1, 2
STREAMS = ("compute", "swap_in", "swap_out")

Slot = tuple[int, int]
"""A pool object: (size class, index within the class)."""


class InfeasiblePlan(ValueError):
    """The memory configuration cannot run the schedule (e.g. an op's tensors do not fit)."""


@dataclass
class SwapPlan:
    """An augmented graph: ``kind[i]`` (COMPUTE/SWAP_IN/SWAP_OUT), ``ref[i]`` (op id or
    tensor id), ``deps[i]`` (earlier node ids), ``duration[i]`` seconds, ``place[i]``
    (tensors put into pool objects by node i), ``release[i]`` (tensors and the objects they
    leave once node i is done; a dropped tensor may already have a newer copy elsewhere). ``initial`` maps the tensors resident when the iteration starts
    to their objects; ``object_sizes`` is the pool (None for a byte-budget pool)."""

    workload: Workload
    schedule: list[int]
    kind: list[int] = field(default_factory=list)
    ref: list[int] = field(default_factory=list)
    deps: list[list[int]] = field(default_factory=list)
    duration: list[float] = field(default_factory=list)
    place: list[list[tuple[int, Slot | None]]] = field(default_factory=list)
    release: list[list[tuple[int, Slot | None]]] = field(default_factory=list)
    initial: dict[int, Slot | None] = field(default_factory=dict)
    object_sizes: tuple[int, ...] | None = None
    object_counts: tuple[int, ...] | None = None
    label: str = ""
    _time: float | None = None

    def add(self, kind: int, ref: int, deps: list[int], duration: float) -> int:
        """Append a node; returns its id."""
        self.kind.append(kind)
        self.ref.append(ref)
        self.deps.append(deps)
        self.duration.append(duration)
        self.place.append([])
        self.release.append([])
        self._time = None
        return len(self.kind) - 1

    def __len__(self) -> int:
        return len(self.kind)

    def node_name(self, i: int) -> str:
        wl = self.workload
        if self.kind[i] == COMPUTE:
            return wl.op_names[self.ref[i]]
        prefix = "in" if self.kind[i] == SWAP_IN else "out"
        return f"{prefix}:{wl.tensor_names[self.ref[i]]}#{i}"

    def stream(self, kind: int) -> Iterator[int]:
        """Node ids of one stream, in issue order."""
        return (i for i, k in enumerate(self.kind) if k == kind)

    def tasks(self) -> list[Task]:
        """The plan as simulator tasks (one resource per stream)."""
        names = [self.node_name(i) for i in range(len(self))]
        return [
            Task(names[i], STREAMS[k], self.duration[i], tuple(names[d] for d in self.deps[i]))
            for i, k in enumerate(self.kind)
        ]

    def simulate(self, record_memory: bool = False) -> SimResult:
        """Run the shared event simulator on the plan."""
        return simulate(self.tasks(), record_memory=record_memory)

    def iteration_time(self) -> float:
        """Simulated seconds per iteration (cached). Same model as :meth:`simulate`, but
        computed in one pass over the node ids: they are a topological order and each
        stream runs in id order, so start = max(previous node on the stream, deps)."""
        if self._time is None:
            end = [0.0] * len(self)
            stream_free = [0.0, 0.0, 0.0]
            for i, (k, deps, d) in enumerate(zip(self.kind, self.deps, self.duration, strict=True)):
                start = stream_free[k]
                for j in deps:
                    if end[j] > start:
                        start = end[j]
                end[i] = stream_free[k] = start + d
            self._time = max(end, default=0.0)
        return self._time

    @property
    def n_swap_in(self) -> int:
        return self.kind.count(SWAP_IN)

    @property
    def n_swap_out(self) -> int:
        return self.kind.count(SWAP_OUT)

    def swap_bytes(self, kind: int) -> int:
        """Bytes moved by all nodes of one swap stream."""
        nb = self.workload.nbytes
        return sum(nb[r] for k, r in zip(self.kind, self.ref, strict=True) if k == kind)

    @property
    def pool_bytes(self) -> int | None:
        """Device bytes of the pool (None for a byte-budget pool)."""
        if self.object_sizes is None or self.object_counts is None:
            return None
        return sum(s * c for s, c in zip(self.object_sizes, self.object_counts, strict=True))

    def summary(self) -> dict[str, float | int | str]:
        """Headline figures of the plan."""
        t = self.iteration_time()
        ideal = self.workload.compute_time
        return {
            "plan": self.label,
            "time_s": t,
            "ideal_s": ideal,
            "throughput_vs_ideal": ideal / t if t > 0 else 1.0,
            "swap_in": self.n_swap_in,
            "swap_out": self.n_swap_out,
            "swap_in_GB": self.swap_bytes(SWAP_IN) / 1e9,
            "swap_out_GB": self.swap_bytes(SWAP_OUT) / 1e9,
            "initial_resident": len(self.initial),
        }
