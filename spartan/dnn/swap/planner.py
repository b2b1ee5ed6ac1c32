"""The swap planner: given a schedule and a memory pool, decide what to swap and when.

Walk the ops in schedule order tracking which tensors are resident. When a tensor needs a
pool object and its class has none free, evict a resident of that class (Belady: the one
used furthest in the future, skipping the current op's tensors and, while others exist,
those used less than ``threshold`` seconds ago). A clean victim (its host copy is current:
a parameter not yet updated, an input, a tensor swapped in and not written since) is
dropped for free; a dirty one is copied out. Edges: last user -> swap-out(victim) ->
swap-in(T) -> consumer(T); a new output waits for its object's release instead. Every
swap-in is issued as early as those edges allow (prefetch).

Training repeats, so the plan must leave the persistent tensors (parameters, optimizer
state) where it found them: pass 1 starts with them all on the host; the ones resident at
its end start resident in pass 2, minus those pass 2 had to evict untouched (extra
pressure); passes repeat until the starting set stays resident to the end. Persistent
tensors resident at the end but not in that set are copied out if they were updated.

Baselines reuse the same walk with other knobs: ``eviction="lru"``, a byte budget instead
of size classes, ``pinned`` tensors that are never evicted, ``offload`` tensors copied out
right after their last forward use.

>>> from spartan.dnn.swap.worked_examples import figure3_workload
>>> from spartan.dnn.swap.pool import Allocation
>>> wl = figure3_workload()
>>> plan = plan_swaps(wl, [0, 1, 2], Allocation((0,), (4,)), steady_state=False)
>>> [plan.node_name(i) for i in plan.stream(1)]
['in:W1#0', 'in:W2#2', 'in:W3#4']
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Collection, Sequence
from typing import Literal

from spartan.dnn.swap.plan import COMPUTE, SWAP_IN, SWAP_OUT, InfeasiblePlan, Slot, SwapPlan
from spartan.dnn.swap.pool import Allocation, PoolModel, object_sizes
from spartan.dnn.swap.workload import Workload

__all__ = ["plan_swaps", "is_topological"]

Eviction = Literal["belady", "lru"]
MAX_STEADY_PASSES = 6
INF = math.inf


def is_topological(workload: Workload, schedule: Sequence[int]) -> bool:
    """True if ``schedule`` is a permutation of the ops respecting every dependency."""
    if sorted(schedule) != list(range(workload.n_ops)):
        return False
    pos = {op: i for i, op in enumerate(schedule)}
    return all(pos[p] < pos[op] for op in schedule for p in workload.op_preds[op])


def plan_swaps(
    workload: Workload,
    schedule: Sequence[int],
    pool: Allocation | float,
    *,
    eviction: Eviction = "belady",
    threshold: float | None = None,
    pinned: Collection[int] = (),
    offload: Collection[int] = (),
    steady_state: bool = True,
    label: str = "",
) -> SwapPlan:
    """Plan swaps for ``schedule`` (a topological order of op ids) on ``pool``.

    ``pool`` is an :class:`Allocation` (size classes) or a byte budget (one shared pool, a
    general allocator without fragmentation). ``threshold`` (seconds) protects tensors used
    less than that long ago from eviction; by default a tensor is protected when it could
    not be released (and the object refilled, for a swap-in) before the op is due. Raises
    :class:`InfeasiblePlan` when some op's tensors cannot all be resident at once.
    """
    if len(schedule) != workload.n_ops or not is_topological(workload, schedule):
        raise ValueError("schedule must be a topological order of all ops")
    if eviction not in ("belady", "lru"):
        raise ValueError(f"unknown eviction {eviction!r}; expected 'belady' or 'lru'")
    if isinstance(pool, Allocation):
        pm = PoolModel(workload)
        if len(pool.cls) != len(pm.ts):
            raise ValueError(f"allocation has {len(pool.cls)} size entries, workload {len(pm.ts)}")
        classes = pm.tensor_classes(pool.cls)
        sizes: tuple[int, ...] | None = object_sizes(pm.ts, pool.cls)
    else:
        if pool <= 0:
            raise ValueError(f"byte budget must be > 0, got {pool}")
        classes, sizes = [0] * workload.n_tensors, None

    def run(initial: set[int]) -> _Pass:
        p = _Pass(workload, list(schedule), pool, classes, sizes, eviction, threshold)
        p.run(initial, set(pinned), set(offload))
        return p

    pinned_set = set(pinned)
    first = run(pinned_set)
    if steady_state:
        resident = first.end_resident
        for _ in range(MAX_STEADY_PASSES):
            p = run(resident)
            start = resident - p.removed
            if start <= p.end_resident:
                return p.finish(start, label)
            resident = start & p.end_resident
    return first.finish(pinned_set, label)


class _Pass:
    """One walk over the schedule (all state of the planner lives here)."""

    def __init__(
        self,
        wl: Workload,
        schedule: list[int],
        pool: Allocation | float,
        classes: list[int],
        sizes: tuple[int, ...] | None,
        eviction: Eviction,
        threshold: float | None,
    ) -> None:
        self.wl = wl
        self.schedule = schedule
        self.classes = classes
        self.eviction = eviction
        self.threshold = threshold
        n = wl.n_tensors
        self.plan = SwapPlan(wl, schedule)
        # Free memory in release order: per class (object index, releasing node or -1), or
        # for a byte budget one list of (bytes, releasing node or -1) chunks.
        self.byte_pool = not isinstance(pool, Allocation)
        if isinstance(pool, Allocation):
            self.plan.object_sizes, self.plan.object_counts = sizes, pool.cnt
            self.free: list[deque] = [deque((j, -1) for j in range(c)) for c in pool.cnt]
        else:
            self.free = [deque([(int(pool), -1)])]
            self.free_bytes = int(pool)
        self.resident = [False] * n
        self.slot: list[Slot | None] = [None] * n
        self.host_valid = list(wl.source)
        self.last_node = [-1] * n
        self.last_pos = [-1] * n
        self.so_node = [-1] * n
        self.version = [0] * n
        self.heaps: list[list] = [[] for _ in self.free]
        self.removed: set[int] = set()
        self.untouched: set[int] = set()
        # Positions (in the schedule) where each tensor is used, and estimated op times.
        self.uses: list[list[int]] = [[] for _ in range(n)]
        self.est_start: list[float] = []
        t = 0.0
        for pos, op in enumerate(schedule):
            for x in wl.op_tensors(op):
                self.uses[x].append(pos)
            self.est_start.append(t)
            t += wl.durations[op]
        self.next_idx = [0] * n

    # ---- pool ------------------------------------------------------------------------
    def take(self, t: int) -> tuple[Slot | None, list[int]] | None:
        k = self.classes[t]
        free = self.free[k]
        if not self.byte_pool:
            if not free:
                return None
            j, rel = free.popleft()
            return (k, j), ([rel] if rel >= 0 else [])
        need = self.wl.nbytes[t]
        if self.free_bytes < need:
            return None
        deps = []
        while need > 0:
            b, rel = free.popleft()
            if rel >= 0:
                deps.append(rel)
            if b > need:
                free.appendleft((b - need, rel))
            need -= min(b, need)
        self.free_bytes -= self.wl.nbytes[t]
        return None, deps

    def give(self, t: int, rel: int) -> None:
        if rel >= 0:
            self.plan.release[rel].append((t, self.slot[t]))
        if not self.byte_pool:
            k, j = self.slot[t]
            self.free[k].append((j, rel))
        else:
            self.free[0].append((self.wl.nbytes[t], rel))
            self.free_bytes += self.wl.nbytes[t]
        self.resident[t] = False
        self.slot[t] = None
        self.version[t] += 1

    # ---- eviction --------------------------------------------------------------------
    def next_use(self, t: int) -> float:
        u = self.uses[t]
        i = self.next_idx[t]
        return u[i] if i < len(u) else INF

    def push(self, t: int) -> None:
        if t in self.pinned:
            return
        dirty = 0 if self.host_valid[t] else 1
        if self.eviction == "belady":
            key = (-self.next_use(t), dirty, self.last_pos[t])
        else:
            key = (self.last_pos[t], dirty, -self.next_use(t))
        heapq.heappush(self.heaps[self.classes[t]], (key, self.version[t], t))

    def victim(self, t: int, in_use: set[int], pos: int, swap_in: bool) -> int | None:
        """Best resident of ``t``'s class to evict for ``t``; tensors that could not be
        released in time (recently used) only when nothing else is left."""
        heap = self.heaps[self.classes[t]]
        stash, recent = [], []
        chosen = None
        now = self.est_start[pos]
        fill = self.wl.transfer_time(t) if swap_in else 0.0
        while heap:
            entry = heapq.heappop(heap)
            _, ver, v = entry
            if ver != self.version[v] or not self.resident[v]:
                continue
            if v in in_use:
                stash.append(entry)
            elif self.eviction == "belady" and self.recent(v, now, fill):
                recent.append(entry)
            else:
                chosen = v
                break
        if chosen is None and recent:
            chosen = recent.pop(0)[2]
        for entry in stash + recent:
            heapq.heappush(heap, entry)
        return chosen

    def recent(self, v: int, now: float, fill: float) -> bool:
        last = self.last_pos[v]
        if last < 0:
            return False
        freed = self.est_start[last] + self.wl.durations[self.schedule[last]]
        if self.threshold is not None:
            return now - freed < self.threshold
        # Default: too recent if releasing v (copying it out when dirty) and filling the
        # object (when swapping in) cannot both finish by the time the op should start.
        copy_out = 0.0 if self.host_valid[v] else self.wl.transfer_time(v)
        return freed + copy_out + fill > now

    def evict(self, v: int) -> None:
        rel = self.last_node[v]
        if rel < 0 and v in self.untouched:
            # Pressure the previous pass did not see: start without it (the previous
            # iteration leaves it on the host), so its object is free from time 0.
            self.removed.add(v)
            self.untouched.discard(v)
            self.host_valid[v] = True
        elif not self.host_valid[v]:
            rel = self.plan.add(SWAP_OUT, v, [rel] if rel >= 0 else [], self.wl.transfer_time(v))
            self.so_node[v] = rel
            self.host_valid[v] = True
        self.give(v, rel)

    def acquire(
        self, t: int, in_use: set[int], pos: int, swap_in: bool
    ) -> tuple[Slot | None, list[int]]:
        while (got := self.take(t)) is None:
            v = self.victim(t, in_use, pos, swap_in)
            if v is None:
                raise InfeasiblePlan(
                    f"op {self.wl.op_names[self.schedule[pos]]!r}: no room for tensor "
                    f"{self.wl.tensor_names[t]!r} ({self.wl.nbytes[t]} B)"
                )
            self.evict(v)
        slot, deps = got
        self.resident[t] = True
        self.slot[t] = slot
        self.version[t] += 1
        return slot, deps

    # ---- the walk --------------------------------------------------------------------
    def run(self, initial: set[int], pinned: set[int], offload: set[int]) -> None:
        wl, plan = self.wl, self.plan
        self.pinned = pinned
        for t in sorted(initial | pinned):
            got = self.take_slot(t)
            self.resident[t] = True
            self.slot[t] = got
            self.host_valid[t] = not wl.updated[t]  # resident since the last iteration
            plan.initial[t] = got
            self.untouched.add(t)
            self.push(t)
        for pos, op in enumerate(self.schedule):
            in_use = set(wl.op_tensors(op))
            deps: list[int] = []
            swapped_in = []
            for t in wl.op_inputs[op]:
                if self.resident[t]:
                    continue
                if not self.host_valid[t]:
                    raise InfeasiblePlan(f"tensor {wl.tensor_names[t]!r} read before written")
                slot, rel = self.acquire(t, in_use, pos, swap_in=True)
                if self.so_node[t] >= 0:
                    rel.append(self.so_node[t])
                si = plan.add(SWAP_IN, t, rel, wl.transfer_time(t))
                plan.place[si].append((t, slot))
                deps.append(si)
                swapped_in.append(t)
            placed = []
            for t in wl.op_outputs[op]:
                slot, rel = self.acquire(t, in_use, pos, swap_in=False)
                deps.extend(rel)
                self.host_valid[t] = False
                placed.append((t, slot))
            node = plan.add(COMPUTE, op, deps, wl.durations[op])
            plan.place[node].extend(placed)
            for t in wl.op_inplace[op]:
                self.host_valid[t] = False
            forward = not wl.backward[op]
            for t in in_use:
                self.untouched.discard(t)
                self.last_node[t] = node
                self.last_pos[t] = pos
                self.next_idx[t] += 1
                self.version[t] += 1
                nxt = self.next_use(t)
                if nxt == INF and not wl.persistent[t] and not wl.keep[t]:
                    self.give(t, node)
                elif t in offload and forward and nxt != INF and wl.backward[self.schedule[nxt]]:
                    self.evict(t)
                else:
                    self.push(t)

    def take_slot(self, t: int) -> Slot | None:
        got = self.take(t)
        if got is None:
            raise InfeasiblePlan(f"initially resident {self.wl.tensor_names[t]!r} does not fit")
        return got[0]

    @property
    def end_resident(self) -> set[int]:
        return {t for t in range(self.wl.n_tensors) if self.resident[t] and self.wl.persistent[t]}

    def finish(self, start: set[int], label: str) -> SwapPlan:
        """Close the iteration: copy out updated persistent tensors that the next
        iteration expects on the host."""
        plan = self.plan
        for t in sorted(self.end_resident - start):
            if not self.host_valid[t]:
                n = plan.add(SWAP_OUT, t, [self.last_node[t]], self.wl.transfer_time(t))
                plan.release[n].append((t, self.slot[t]))
        plan.initial = {t: s for t, s in plan.initial.items() if t in start}
        plan.label = label
        return plan
