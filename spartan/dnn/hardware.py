"""Accelerator models and op-time estimates (roofline or measured profiles).

>>> from spartan.dnn.graph import Graph, Phase, TensorKind
>>> g = Graph()
>>> for n, s in [("x", (1024, 1024)), ("w", (1024, 1024)), ("y", (1024, 1024))]:
...     _ = g.add_tensor(n, s, TensorKind.ACTIVATION if n == "y" else TensorKind.INPUT)
>>> op = g.add_op("mm", "matmul", ["x", "w"], ["y"], Phase.FORWARD, flops=2 * 1024**3)
>>> round(op_time(op, g, V100) * 1e6)  # compute-bound: 2.1 GFLOP / 15.7 TFLOP/s + launch
142
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from spartan.dnn.graph import Graph, Op

GB = 1e9
GiB = 2**30

LAUNCH_OVERHEAD_S = 5e-6
"""Fixed per-op cost (kernel launch and dispatch), added to every roofline estimate."""


@dataclass(frozen=True)
class Accelerator:
    """A device: peak ``flops`` (FLOP/s), memory bandwidth ``mem_bw`` (B/s), ``memory``
    capacity (bytes), ``host_bw`` (device<->host B/s, one direction) and ``link_bw``
    (device<->device B/s, one direction)."""

    name: str
    flops: float
    mem_bw: float
    memory: float
    host_bw: float
    link_bw: float

    def __post_init__(self) -> None:
        for f in ("flops", "mem_bw", "memory", "host_bw", "link_bw"):
            if getattr(self, f) <= 0:
                raise ValueError(f"Accelerator {self.name!r}: {f} must be > 0")

    def with_(self, **changes: float | str) -> Accelerator:
        """A copy with some fields changed, e.g. ``V100.with_(memory=8 * GiB)``."""
        return replace(self, **changes)


# Published fp32 (non tensor-core) peaks; host links are practical PCIe rates.
V100 = Accelerator("V100", 15.7e12, 900 * GB, 16 * GiB, 12 * GB, 150 * GB)  # SXM2, NVLink2
P100 = Accelerator("P100", 10.6e12, 732 * GB, 16 * GiB, 12 * GB, 80 * GB)  # SXM2, NVLink1
K80 = Accelerator("K80", 4.37e12, 240 * GB, 12 * GiB, 10 * GB, 10 * GB)  # one GK210, PCIe peers
H100 = Accelerator("H100", 67e12, 3350 * GB, 80 * GiB, 50 * GB, 450 * GB)  # SXM5, NVLink4
# A host CPU as a device beside the GPUs (heterogeneous placement): two 20-core AVX-512 sockets
# at 2.2 GHz (2 x 20 x 2.2e9 x 32 fp32 FLOP/cycle), six DDR4-2666 channels per socket; it
# reaches a GPU over PCIe, so its link is the host link.
XEON = Accelerator("Xeon", 2.8e12, 256 * GB, 192 * GiB, 12 * GB, 12 * GB)

PRESETS: dict[str, Accelerator] = {a.name: a for a in (V100, P100, K80, H100, XEON)}


def accelerator(name: str) -> Accelerator:
    """Look up a preset by name (case-insensitive)."""
    for key, acc in PRESETS.items():
        if key.lower() == name.lower():
            return acc
    raise ValueError(f"unknown accelerator {name!r}; presets: {sorted(PRESETS)}")


def op_time(op: Op, graph: Graph, accel: Accelerator) -> float:
    """Roofline estimate in seconds: ``max(flops/peak, bytes/mem_bw) + launch``."""
    return max(op.flops / accel.flops, graph.op_bytes(op) / accel.mem_bw) + LAUNCH_OVERHEAD_S


def transfer_time(nbytes: float, bandwidth: float) -> float:
    """Seconds to move ``nbytes`` over a link of ``bandwidth`` B/s."""
    if bandwidth <= 0:
        raise ValueError(f"bandwidth must be > 0, got {bandwidth}")
    return nbytes / bandwidth


@dataclass
class Profile:
    """Measured per-op times (seconds) on one accelerator, falling back to the roofline.

    >>> from spartan.dnn.zoo import mlp
    >>> g = mlp(32, [64, 10])
    >>> prof = Profile(V100, {"fc1": 1e-3})
    >>> prof.time(g.op("fc1"), g), prof.time(g.op("fc1.bias"), g) == op_time(g.op("fc1.bias"), g, V100)
    (0.001, True)
    """

    accel: Accelerator
    times: dict[str, float] = field(default_factory=dict)

    def time(self, op: Op, graph: Graph) -> float:
        t = self.times.get(op.name)
        return op_time(op, graph, self.accel) if t is None else t

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps({"accel": self.accel.__dict__, "times": self.times}))

    @classmethod
    def load(cls, path: str | Path) -> Profile:
        data = json.loads(Path(path).read_text())
        return cls(Accelerator(**data["accel"]), {k: float(v) for k, v in data["times"].items()})
