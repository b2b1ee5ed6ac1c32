"""The size-class memory pool and its (CLS, CNT) encoding (SwapAdvisor §5.3).

``TS`` is the sorted list of unique tensor sizes. ``CLS[i]`` is the size class of ``TS[i]``:
``CLS[0] == 0`` and every step is 0 or +1, so consecutive sizes share or neighbour a class
(this prunes the O(N^N) mappings to O(2^N)). A class's object size is its largest member and
``CNT[k]`` objects of class ``k`` are preallocated; ``sum(CNT[k] * objsize[k])`` must fit the
device. Swapping happens whenever a class has no free object, not only when memory is full.

>>> ts = (1, 2, 3, 4)
>>> object_sizes(ts, (0, 1, 1, 1)), expand_cnt((0, 1, 1, 1), (8, 1))
((1, 4), (8, 1, 1, 1))
>>> repair_cnt((8, 3), (1, 4), capacity=12, minimum=(1, 1))
(4, 2)
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from spartan.dnn.swap.workload import Workload

__all__ = [
    "Allocation",
    "PoolModel",
    "repair_cls",
    "object_sizes",
    "expand_cnt",
    "regroup_cnt",
    "repair_cnt",
]


@dataclass(frozen=True)
class Allocation:
    """A pool configuration: ``cls`` maps each size index to a class, ``cnt`` counts objects.

    >>> Allocation((0, 0, 1), (5, 2)).n_classes
    2
    """

    cls: tuple[int, ...]
    cnt: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "cls", tuple(int(c) for c in self.cls))
        object.__setattr__(self, "cnt", tuple(int(c) for c in self.cnt))
        if repair_cls(self.cls) != self.cls:
            raise ValueError(f"CLS {self.cls} must start at 0 and step by 0 or +1")
        if len(self.cnt) != self.n_classes:
            raise ValueError(f"CNT has {len(self.cnt)} entries for {self.n_classes} classes")
        if any(c < 0 for c in self.cnt):
            raise ValueError(f"CNT {self.cnt} has a negative count")

    @property
    def n_classes(self) -> int:
        return self.cls[-1] + 1 if self.cls else 0


def repair_cls(cls: Sequence[int]) -> tuple[int, ...]:
    """Make ``cls`` valid: start at 0 and clamp every step to 0 or +1. For a drop this is
    the paper's minimal raise; after a jump it keeps the shape of the rest of the list.

    >>> repair_cls([1, 2, 1, 1]), repair_cls([0, 0, 3, 3])
    ((0, 1, 1, 1), (0, 0, 1, 1))
    """
    out: list[int] = []
    for i, c in enumerate(cls):
        out.append(0 if i == 0 else out[-1] + (1 if c > cls[i - 1] else 0))
    return tuple(out)


def object_sizes(ts: Sequence[int], cls: Sequence[int]) -> tuple[int, ...]:
    """Object size of every class: its largest member size."""
    sizes = [0] * (cls[-1] + 1 if cls else 0)
    for size, c in zip(ts, cls, strict=True):
        sizes[c] = max(sizes[c], size)
    return tuple(sizes)


def expand_cnt(cls: Sequence[int], cnt: Sequence[int]) -> tuple[int, ...]:
    """CNT_EXT: the object count available to each tensor size."""
    return tuple(cnt[c] for c in cls)


def regroup_cnt(cls: Sequence[int], cnt_ext: Sequence[int]) -> tuple[int, ...]:
    """Per-class counts from per-size counts: the rounded mean over each class's sizes.

    >>> regroup_cnt((0, 1, 1, 1), (8, 1, 4, 4))
    (8, 3)
    """
    n = cls[-1] + 1 if cls else 0
    total = [0] * n
    members = [0] * n
    for c, k in zip(cls, cnt_ext, strict=True):
        total[c] += k
        members[c] += 1
    return tuple(int(math.floor(t / m + 0.5)) for t, m in zip(total, members, strict=True))


def repair_cnt(
    cnt: Sequence[int], objsize: Sequence[int], capacity: float, minimum: Sequence[int]
) -> tuple[int, ...] | None:
    """Fit the pool under ``capacity``: lower each count in inverse proportion to its object
    size (each class gives back an equal share of the excess bytes), never below
    ``minimum``. Returns None when even the minimum does not fit.
    """
    out = [max(int(c), m) for c, m in zip(cnt, minimum, strict=True)]
    if sum(m * s for m, s in zip(minimum, objsize, strict=True)) > capacity:
        return None
    while (used := sum(c * s for c, s in zip(out, objsize, strict=True))) > capacity:
        movable = [k for k, c in enumerate(out) if c > minimum[k]]
        share = (used - capacity) / len(movable)
        for k in movable:
            out[k] = max(minimum[k], out[k] - max(1, math.ceil(share / objsize[k] - 1e-9)))
    return tuple(out)


class PoolModel:
    """Everything about a workload's sizes that allocations need.

    >>> from spartan.dnn.swap.worked_examples import figure3_workload
    >>> pm = PoolModel(figure3_workload())
    >>> pm.ts, pm.minimum_counts((0,))
    ((1,), (4,))
    """

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.ts: tuple[int, ...] = workload.sizes
        index = {s: i for i, s in enumerate(self.ts)}
        self.size_index: tuple[int, ...] = tuple(index[b] for b in workload.nbytes)
        self._tensors_per_size = [0] * len(self.ts)
        for i in self.size_index:
            self._tensors_per_size[i] += 1

    @functools.cached_property
    def _op_size_counts(self) -> list[dict[int, int]]:
        """Per op: how many of its distinct tensors have each size index."""
        out = []
        for op in range(self.workload.n_ops):
            counts: dict[int, int] = {}
            for t in self.workload.op_tensors(op):
                counts[self.size_index[t]] = counts.get(self.size_index[t], 0) + 1
            out.append(counts)
        return out

    def tensor_classes(self, cls: Sequence[int]) -> list[int]:
        """The class of every tensor under ``cls``."""
        return [cls[i] for i in self.size_index]

    def minimum_counts(self, cls: Sequence[int]) -> tuple[int, ...]:
        """The fewest objects per class with which every op's tensors fit at once.

        A tensor takes an object of its own class, or borrows a larger one when its class
        has nothing it may evict (the planner's rule). So an op fits iff, for every class
        ``k``, the objects of classes ``>= k`` outnumber its tensors of classes ``>= k``
        (Hall's condition for this nested matching); the minimum counts fill that
        condition from the largest class down.

        >>> from spartan.dnn.swap.worked_examples import figure1_workload
        >>> PoolModel(figure1_workload()).minimum_counts((0, 1))
        (2, 1)
        """
        n = cls[-1] + 1 if cls else 0
        suffix = [0] * (n + 1)  # suffix[k]: most tensors of classes >= k any op holds
        for counts in self._op_size_counts:
            per_class = [0] * (n + 1)
            for i, k in counts.items():
                per_class[cls[i]] += k
            run = 0
            for c in range(n - 1, -1, -1):
                run += per_class[c]
                suffix[c] = max(suffix[c], run)
        return tuple(suffix[c] - suffix[c + 1] for c in range(n))

    def bytes(self, alloc: Allocation) -> int:
        """Device bytes the pool preallocates."""
        sizes = object_sizes(self.ts, alloc.cls)
        return sum(c * s for c, s in zip(alloc.cnt, sizes, strict=True))

    def own_class_counts(self, cls: Sequence[int]) -> tuple[int, ...]:
        """Objects each class needs so that every op's tensors fit in their own classes
        (no borrowing): the paper's validity rule, at least :meth:`minimum_counts`."""
        need = [0] * (cls[-1] + 1)
        for counts in self._op_size_counts:
            per_class: dict[int, int] = {}
            for i, k in counts.items():
                per_class[cls[i]] = per_class.get(cls[i], 0) + k
            for c, k in per_class.items():
                need[c] = max(need[c], k)
        return tuple(need)

    def floor_counts(self, cls: Sequence[int]) -> tuple[int, ...]:
        """The counts a repair never goes below: :meth:`own_class_counts` when they fit
        the device, else :meth:`minimum_counts`. Without the first, repairing by equal
        bytes per class would empty the small classes and have their tensors borrow
        large objects even where memory allows better."""
        own = self.own_class_counts(cls)
        sizes = object_sizes(self.ts, cls)
        if sum(c * s for c, s in zip(own, sizes, strict=True)) <= self.workload.capacity:
            return own
        return self.minimum_counts(cls)

    def repair(self, cls: Sequence[int], cnt: Sequence[int]) -> Allocation | None:
        """A valid allocation close to (cls, cnt), or None if its minimum cannot fit.
        Bytes the counts leave unused are handed out again *(ours)*: an object more in
        some class never hurts, and a child that leaves memory idle loses to a random
        allocation (which spreads all spare bytes) for that reason alone."""
        cls = repair_cls(cls)
        sizes = object_sizes(self.ts, cls)
        fixed = repair_cnt(cnt, sizes, self.workload.capacity, self.floor_counts(cls))
        if fixed is None:
            return None
        return Allocation(cls, self._fill(cls, fixed, sizes))

    def _fill(
        self, cls: Sequence[int], cnt: Sequence[int], sizes: Sequence[int]
    ) -> tuple[int, ...]:
        """Add objects while they fit: each round gives every class that can still use
        one (fewer objects than tensors) a share of the spare bytes in proportion to the
        bytes it already holds, then single objects smallest-class first."""
        members = [0] * len(sizes)
        for i, c in enumerate(cls):
            members[c] += self._tensors_per_size[i]
        out = list(cnt)
        spare = self.workload.capacity - sum(c * s for c, s in zip(out, sizes, strict=True))
        open_ = [k for k in range(len(out)) if out[k] < members[k] and sizes[k] <= spare]
        while open_ and spare > 0:
            held = sum(max(out[k], 1) * sizes[k] for k in open_)
            added = False
            for k in open_:
                want = int(spare * max(out[k], 1) * sizes[k] / held / sizes[k])
                n = min(want, members[k] - out[k])
                if n > 0 and n * sizes[k] <= spare:
                    out[k] += n
                    spare -= n * sizes[k]
                    added = True
            if not added:
                for k in sorted(open_, key=lambda k: sizes[k]):
                    if sizes[k] <= spare and out[k] < members[k]:
                        out[k] += 1
                        spare -= sizes[k]
                        added = True
                        break
            if not added:
                break
            open_ = [k for k in open_ if out[k] < members[k] and sizes[k] <= spare]
        return tuple(out)

    def unlimited(self) -> Allocation:
        """One class per size with an object for every tensor: never swaps."""
        cls = tuple(range(len(self.ts)))
        return Allocation(cls, tuple(self._tensors_per_size))

    def live_count_matrix(self, schedule: Sequence[int] | None = None) -> np.ndarray:
        """``[pos, i]``: tensors of size index ``i`` live while the op at ``pos`` runs with
        unlimited memory (persistent tensors always; others from first use to last use)."""
        wl = self.workload
        order = wl.default_schedule() if schedule is None else list(schedule)
        first = [-1] * wl.n_tensors
        last = [-1] * wl.n_tensors
        for pos, op in enumerate(order):
            for t in wl.op_tensors(op):
                if first[t] < 0:
                    first[t] = pos
                last[t] = pos
        delta = np.zeros((len(order) + 1, len(self.ts)), dtype=np.int64)
        for t in range(wl.n_tensors):
            if first[t] < 0 and not wl.persistent[t]:
                continue
            i = self.size_index[t]
            lo, hi = first[t], last[t] + 1
            if wl.persistent[t] or wl.keep[t] or lo < 0:
                lo, hi = 0, len(order)
            delta[lo, i] += 1
            delta[hi, i] -= 1
        return np.cumsum(delta, axis=0)[: len(order)]

    @functools.cached_property
    def smallest(self) -> Allocation:
        """The valid allocation with the fewest pool bytes: one class per size, with
        :meth:`minimum_counts` objects. Splitting a class never costs bytes under the
        borrowing rule (smaller objects, same suffix totals), so this is the minimum over
        every CLS; a workload has a valid allocation iff this one fits the device.

        >>> from spartan.dnn.swap.worked_examples import figure1_workload
        >>> pm = PoolModel(figure1_workload())
        >>> pm.smallest, pm.bytes(pm.smallest)
        (Allocation(cls=(0, 1), cnt=(2, 1)), 4)
        """
        cls = tuple(range(len(self.ts)))
        return Allocation(cls, self.minimum_counts(cls))

    def fits(self) -> bool:
        """True if some valid allocation fits the device."""
        return self.bytes(self.smallest) <= self.workload.capacity

    def demand(self, schedule: Sequence[int] | None = None) -> Allocation | None:
        """The pool an on-demand allocator settles into on ``schedule``: one class per
        tensor size (per-size free lists, as in a framework's caching allocator), as many
        objects as that size has live tensors at the peak with unlimited memory, then all
        counts scaled by the largest common factor that fits the device, never below
        :meth:`minimum_counts`. None if no valid allocation fits. The baselines use it,
        so every policy runs on the same allocator model.

        >>> from spartan.dnn.swap.worked_examples import figure1_workload
        >>> PoolModel(figure1_workload()).demand()
        Allocation(cls=(0, 1), cnt=(6, 2))
        """
        cls = tuple(range(len(self.ts)))
        live = [int(c) for c in self.live_count_matrix(schedule).max(axis=0, initial=0)]
        minimum = self.floor_counts(cls)
        cap = self.workload.capacity

        def scaled(f: float) -> tuple[int, ...]:
            return tuple(max(m, math.ceil(k * f)) for k, m in zip(live, minimum, strict=True))

        def fits(cnt: tuple[int, ...]) -> bool:
            return sum(c * s for c, s in zip(cnt, self.ts, strict=True)) <= cap

        if not fits(minimum):
            return None
        # Every size keeps the same share of its peak demand (a caching allocator under
        # pressure frees cached blocks of all sizes alike), the largest share that fits.
        lo, hi = 0.0, 1.0
        if fits(scaled(hi)):
            lo = hi
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if fits(scaled(mid)) else (lo, mid)
        return Allocation(cls, scaled(lo))

    def random(self, rng: random.Random, attempts: int = 20) -> Allocation | None:
        """A random valid allocation: random 0/+1 class steps, then the bytes left after
        the minimum counts spread over classes in random proportion to their demand. The
        last attempt uses one class per size, the mapping with the least rounding; when
        no random mapping fits, the classes of :attr:`smallest` (None only when no valid
        allocation exists at all)."""
        for attempt in range(attempts + 1):
            if attempt < attempts:
                density = 1.0 if attempt == attempts - 1 else rng.random()
                cls = tuple(_cumsum([0] + [int(rng.random() < density) for _ in self.ts[1:]]))
            elif self.fits():
                cls = self.smallest.cls
            else:
                return None
            sizes = object_sizes(self.ts, cls)
            minimum = self.floor_counts(cls)
            spare = self.workload.capacity - sum(m * s for m, s in zip(minimum, sizes, strict=True))
            if spare < 0:
                continue
            members = [0] * len(sizes)
            for i, c in enumerate(cls):
                members[c] += self._tensors_per_size[i]
            weights = [k * s * rng.random() for k, s in zip(members, sizes, strict=True)]
            total = sum(weights) or 1.0
            cnt = tuple(
                max(m, min(k, m + int(spare * w / total / s)))
                for m, k, w, s in zip(minimum, members, weights, sizes, strict=True)
            )
            return Allocation(cls, cnt)
        return None


def _cumsum(steps: Sequence[int]) -> list[int]:
    return list(itertools.accumulate(steps))
