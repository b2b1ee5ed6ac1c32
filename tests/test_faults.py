"""The fault-injection harness (``bench/faults.py``) at a small size: seeded worker
kills at reproducible points of small workloads on Ray, during evaluations, between
them and during recovery, all survived with the fault-free result and no data lost.
``python bench/faults.py`` runs it long (hundreds of kills)."""

from __future__ import annotations

import numpy as np
import pytest

from bench import faults


def test_plans_depend_on_the_seed_alone():
    ref = faults.Reference(np.zeros(3), tasks=40, waits=5, seconds=0.0)

    def plans(seed):
        rng = np.random.default_rng(seed)
        return [faults.draw(rng, kind, ref, 3) for kind in faults.KINDS]

    assert plans(1) == plans(1)
    assert plans(1) != plans(2)
    for plan in plans(3):
        assert 1 <= plan.at <= (ref.waits if plan.kind == "wait" else ref.tasks)
        assert all(0 <= w < 3 for w in plan.workers)


def test_a_killer_without_a_plan_only_counts(on_ray):
    data = {"a": np.arange(96.0 * 12).reshape(96, 12), "b": np.ones((12, 10))}
    ref = faults.reference(on_ray, "matmul", data)
    np.testing.assert_array_equal(ref.result, data["a"] @ data["b"])
    assert ref.tasks > 0 and ref.waits > 0
    # the driver's events are the same on a second run: the points are reproducible
    assert faults.reference(on_ray, "matmul", data).tasks == ref.tasks


@pytest.mark.parametrize("seed", [0])
def test_seeded_kills_are_survived(on_ray, seed):
    outcomes = faults.run(
        on_ray,
        trials=8,
        seed=seed,
        kinds=("task", "recovery", "wait", "two"),
        workloads=("reduce", "cumsum", "kmeans", "updates"),
    )
    bad = [o for o in outcomes if not o.survived or o.data_lost]
    assert not bad, bad
    assert sum(o.kills for o in outcomes) >= len(outcomes)
    assert all(o.bit_identical for o in outcomes if o.ended == "result")
