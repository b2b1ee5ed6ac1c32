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

Eviction = Literal["auto", "belady", "lru"]
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
    eviction: Eviction = "auto",
    threshold: float | None = None,
    pinned: Collection[int] = (),
    offload: Collection[int] = (),
    steady_state: bool = True,
    label: str = "",
) -> SwapPlan:
    """Plan swaps for ``schedule`` (a topological order of op ids) on ``pool``.

    ``pool`` is an :class:`Allocation` (size classes) or a byte budget (one shared pool, a
    general allocator without fragmentation). ``eviction`` picks the victim when a
    class is full: ``"belady"`` (the paper: furthest next use), ``"lru"``, or
    ``"auto"`` (both, keeping the faster plan). ``threshold`` (seconds) protects tensors used
    less than that long ago from eviction; by default a tensor is protected when it could
    not be released (and the object refilled, for a swap-in) before the op is due. Raises
    :class:`InfeasiblePlan` when some op's tensors cannot all be resident at once.
    """
    if len(schedule) != workload.n_ops or not is_topological(workload, schedule):
        raise ValueError("schedule must be a topological order of all ops")
    if eviction not in ("auto", "belady", "lru"):
        raise ValueError(f"unknown eviction {eviction!r}; expected 'auto', 'belady' or 'lru'")
    if eviction == "auto":
        # Belady's furthest-next-use rule minimises evictions, not time: it ignores when
        # a copy can overlap compute, and loses to LRU on some schedules (about one random
        # training graph in ten). Plan both and keep the faster, so a plan is never
        # worse than LRU on the same pool (ties keep Belady, the paper's rule).
        plans: list[SwapPlan] = []
        error: InfeasiblePlan | None = None
        rules: tuple[Eviction, Eviction] = ("belady", "lru")
        for rule in rules:
            try:
                plans.append(
                    plan_swaps(
                        workload,
                        schedule,
                        pool,
                        eviction=rule,
                        threshold=threshold,
                        pinned=pinned,
                        offload=offload,
                        steady_state=steady_state,
                        label=label,
                    )
                )
            except InfeasiblePlan as e:
                error = e
        if not plans:
            assert error is not None
            raise error
        return min(plans, key=SwapPlan.iteration_time)
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
        self.tight = [False] * wl.n_ops  # op has more tensors of some class than objects
        if isinstance(pool, Allocation):
            self.plan.object_sizes, self.plan.object_counts = sizes, pool.cnt
            self.free: list[deque] = [deque((j, -1) for j in range(c)) for c in pool.cnt]
            for op in range(wl.n_ops):
                per_class: dict[int, int] = {}
                for x in wl.op_tensors(op):
                    per_class[classes[x]] = per_class.get(classes[x], 0) + 1
                self.tight[op] = any(k > pool.cnt[c] for c, k in per_class.items())
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
    def take(self, t: int, k: int | None = None) -> tuple[Slot | None, list[int]] | None:
        """A free object for ``t``: of class ``k`` (default: ``t``'s own class)."""
        if k is None:
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
        slot = self.slot[t]
        k = 0 if slot is None else slot[0]  # the heap of the object it holds
        heapq.heappush(self.heaps[k], (key, self.version[t], t))

    def victim(
        self, t: int, in_use: set[int], pos: int, swap_in: bool, k: int | None = None
    ) -> int | None:
        """Best holder of a class-``k`` object (default: ``t``'s class) to evict for ``t``;
        tensors that could not be released in time (recently used) only when nothing
        else is left."""
        heap = self.heaps[self.classes[t] if k is None else k]
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
                got = self.borrow(t, in_use, pos, swap_in)
                break
            self.evict(v)
        slot, deps = got
        self.resident[t] = True
        self.slot[t] = slot
        self.version[t] += 1
        return slot, deps

    def borrow(
        self, t: int, in_use: set[int], pos: int, swap_in: bool
    ) -> tuple[Slot | None, list[int]]:
        """Every object of ``t``'s class holds a tensor the op needs: take the smallest
        free object of a larger class, else evict from the smallest larger class that
        has a victim (a caching allocator rounding a request up). With this rule a pool
        fits an op iff :meth:`PoolModel.minimum_counts` holds."""
        larger = range(self.classes[t] + 1, len(self.free)) if not self.byte_pool else ()
        for k in larger:
            if (got := self.take(t, k)) is not None:
                return got
        for k in larger:
            v = self.victim(t, in_use, pos, swap_in, k)
            if v is not None:
                self.evict(v)
                got = self.take(t, k)
                assert got is not None  # the victim's object is free now
                return got
        raise InfeasiblePlan(
            f"op {self.wl.op_names[self.schedule[pos]]!r}: no room for tensor "
            f"{self.wl.tensor_names[t]!r} ({self.wl.nbytes[t]} B)"
        )

    # ---- the walk --------------------------------------------------------------------
    def run(self, initial: set[int], pinned: set[int], offload: set[int]) -> None:
        wl, plan = self.wl, self.plan
        self.pinned = pinned
        # Pinned tensors first: they must fit; the others start resident while they fit
        # (own class, else a larger one), and one that does not is left on the host.
        for t in sorted(pinned) + sorted(initial - pinned):
            got = self.take_slot(t, required=t in pinned)
            if got is False:
                self.removed.add(t)
                continue
            self.resident[t] = True
            self.slot[t] = got
            self.host_valid[t] = not wl.updated[t]  # resident since the last iteration
            plan.initial[t] = got
            self.untouched.add(t)
            self.push(t)
        for pos, op in enumerate(self.schedule):
            in_use = set(wl.op_tensors(op))
            deps: list[int] = []
            items = [(t, True) for t in wl.op_inputs[op]] + [(t, False) for t in wl.op_outputs[op]]
            # An input still in a borrowed (larger) object could leave this op's own
            # tensors of that class without one: copy it out and back into its class.
            # With every resident of the op in its own class, placing the largest first
            # always fits a pool that meets PoolModel.minimum_counts (borrowing only
            # happens when some class is short: a "tight" op).
            for u in () if self.byte_pool else wl.op_inputs[op]:
                slot = self.slot[u]
                if slot is not None and slot[0] != self.classes[u] and u not in self.pinned:
                    self.evict(u)
            if self.tight[op]:
                items.sort(key=lambda item: -wl.nbytes[item[0]])
            placed = []
            for t, is_input in items:
                if not is_input:
                    slot, rel = self.acquire(t, in_use, pos, swap_in=False)
                    deps.extend(rel)
                    self.host_valid[t] = False
                    placed.append((t, slot))
                    continue
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

    def take_slot(self, t: int, required: bool) -> Slot | None | Literal[False]:
        """An object for an initially resident tensor; False when none is free. Only
        pinned tensors may start in a larger class's object: a borrowed object held from
        the start could leave some op without the objects its own tensors need."""
        last = len(self.free) if required else self.classes[t] + 1
        for k in range(self.classes[t], last):
            if (got := self.take(t, k)) is not None:
                return got[0]
        if required:
            raise InfeasiblePlan(f"initially resident {self.wl.tensor_names[t]!r} does not fit")
        return False

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
