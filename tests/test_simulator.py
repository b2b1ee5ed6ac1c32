"""Tests of the shared discrete-event simulator (spartan/dnn/simulator.py)."""

import random
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spartan.dnn.simulator import Buffer, Task, simulate


def test_three_streams_overlap():
    tasks = [
        Task("op1", "compute", 1.0),
        Task("out1", "swap_out", 2.0, deps=("op1",)),
        Task("op2", "compute", 1.0, deps=("op1",)),
        Task("in3", "swap_in", 1.5, deps=("out1",)),
        Task("op3", "compute", 1.0, deps=("op2", "in3")),
    ]
    r = simulate(tasks)
    assert r.start["out1"] == 1.0 and r.end["out1"] == 3.0
    assert r.start["op2"] == 1.0
    assert r.start["in3"] == 3.0 and r.start["op3"] == 4.5
    assert r.makespan == 5.5
    assert r.busy == {"compute": 3.0, "swap_out": 2.0, "swap_in": 1.5}
    assert r.utilization("compute") == pytest.approx(3.0 / 5.5)


def test_fixed_order_is_respected_even_when_later_task_is_ready():
    tasks = [
        Task("slow", None, 5.0),
        Task("a", "gpu", 1.0, deps=("slow",)),
        Task("b", "gpu", 1.0),
    ]
    fixed = simulate(tasks)
    assert fixed.start["b"] == 6.0  # waits behind "a" in list order
    assert simulate(tasks, order={"gpu": ["b", "a"]}).makespan == 6.0
    fifo = simulate(tasks, policy="fifo")
    assert fifo.start["b"] == 0.0 and fifo.start["a"] == 5.0


def test_fifo_ties_broken_by_list_order():
    tasks = [Task("x", None, 1.0), Task("p", "r", 1.0, ("x",)), Task("q", "r", 1.0, ("x",))]
    r = simulate(tasks, policy="fifo")
    assert (r.start["p"], r.start["q"]) == (1.0, 2.0)


def test_memory_task_alloc_free_and_buffers():
    tasks = [
        Task("a", "c", 1.0, alloc={0: 10}),
        Task("b", "c", 1.0, deps=("a",), alloc={0: 5}, free={0: 10}),
        Task("c", "c", 1.0, deps=("b",), free={0: 5}),
    ]
    bufs = [Buffer(0, 100), Buffer(1, 7, alloc_at="b", free_after=("b", "c"))]
    r = simulate(tasks, buffers=bufs, record_memory=True)
    assert r.peak_memory == {0: 115, 1: 7}
    assert r.memory_timeline[1] == [(1.0, 7), (3.0, 0)]
    assert r.memory_timeline[0][-1] == (3.0, 100)


def test_free_before_alloc_at_same_instant():
    tasks = [
        Task("a", "c", 1.0, alloc={"g": 8}, free={"g": 8}),
        Task("b", "c", 1.0, ("a",), {"g": 8}),
    ]
    assert simulate(tasks).peak_memory["g"] == 8


@pytest.mark.parametrize(
    "tasks, kwargs, match",
    [
        ([Task("a", "c", 1), Task("a", "c", 1)], {}, "duplicate"),
        ([Task("a", "c", 1, deps=("z",))], {}, "unknown task"),
        ([Task("a", "c", -1)], {}, "negative"),
        ([Task("a", "c", 1, ("b",)), Task("b", "c", 1, ("a",))], {}, "deadlock"),
        ([Task("a", "c", 1, ("b",)), Task("b", "c", 1, ("a",))], {"policy": "fifo"}, "deadlock"),
        ([Task("a", "c", 1), Task("b", "c", 1, ("a",))], {"order": {"c": ["b", "a"]}}, "deadlock"),
        ([Task("a", "c", 1)], {"order": {"c": ["a", "a"]}}, "exactly once"),
        ([Task("a", "c", 1)], {"order": {"d": ["a"]}}, "no tasks"),
        ([Task("a", "c", 1)], {"policy": "lifo"}, "unknown policy"),
        ([Task("a", "c", 1)], {"buffers": [Buffer(0, 1, "q")]}, "unknown task"),
    ],
)
def test_bad_input_raises_value_error(tasks, kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate(tasks, **kwargs)


def test_empty():
    r = simulate([])
    assert r.makespan == 0.0 and r.utilization("c") == 0.0


@st.composite
def random_dags(draw):
    n = draw(st.integers(1, 25))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    res = ["r0", "r1", "r2", None]
    tasks = []
    for i in range(n):
        deps = tuple(f"t{j}" for j in range(i) if rng.random() < 0.2)
        tasks.append(Task(f"t{i}", rng.choice(res), rng.choice([0.0, 0.5, 1.0, 2.0, 3.5]), deps))
    return tasks


@settings(max_examples=150, deadline=None)
@given(random_dags(), st.sampled_from(["fixed", "fifo"]))
def test_schedule_is_feasible(tasks, policy):
    r = simulate(tasks, policy=policy)
    by_res = {}
    for t in tasks:
        assert r.end[t.name] == pytest.approx(r.start[t.name] + t.duration)
        for d in t.deps:
            assert r.start[t.name] >= r.end[d] - 1e-12
        if t.resource is not None:
            by_res.setdefault(t.resource, []).append(t)
    for res, ts in by_res.items():
        spans = sorted((r.start[t.name], r.end[t.name]) for t in ts if t.duration > 0)
        for (_, e0), (s1, _) in pairwise(spans):
            assert s1 >= e0 - 1e-12  # one task at a time
        assert r.makespan >= sum(t.duration for t in ts) - 1e-9
        assert r.busy[res] == pytest.approx(sum(t.duration for t in ts))
        if policy == "fixed":  # list order kept
            starts = [r.start[t.name] for t in ts]
            assert starts == sorted(starts)
    # Critical-path lower bound.
    longest = {}
    for t in tasks:
        longest[t.name] = t.duration + max((longest[d] for d in t.deps), default=0.0)
    assert r.makespan >= max(longest.values()) - 1e-9


@settings(max_examples=100, deadline=None)
@given(random_dags())
def test_fifo_is_work_conserving(tasks):
    # Under fifo a resource never idles while one of its tasks is ready: the interval between
    # a task's readiness and its start is covered by other tasks on the same resource.
    r = simulate(tasks, policy="fifo")
    for t in tasks:
        if t.resource is None:
            continue
        t_ready = max((r.end[d] for d in t.deps), default=0.0)
        covered = t_ready
        for s0, e0 in sorted(
            (r.start[u.name], r.end[u.name])
            for u in tasks
            if u.resource == t.resource and u is not t
        ):
            if s0 <= covered + 1e-12:
                covered = max(covered, e0)
        assert covered >= r.start[t.name] - 1e-12
