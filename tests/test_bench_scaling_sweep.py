"""The scaling sweep's workloads (bench/scaling.py --sweep) equal NumPy on spartan.

The sweep runs on a lent 16-core machine, where a wrong input or program would cost a
whole time-boxed run: its inputs (made from a formula on the workers) and programs are
checked here on tiny sizes, under the in-process and Ray backends, and its table
renderer on rows of the shape the sweep writes.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import spartan as sp

# loaded from its file: bench/ on sys.path would shadow packages (bench/sklearn.py)
_spec = importlib.util.spec_from_file_location(
    "scaling", Path(__file__).resolve().parent.parent / "bench" / "scaling.py"
)
assert _spec is not None and _spec.loader is not None
scaling = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scaling)


def _leaves(result):
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("name", scaling.SWEEP_WORKLOADS)
def test_sweep_workloads_equal_numpy(backend, name):
    size = 48 if name == "matmul" else 24 * 32 * 8  # matmul: n; else bytes of X
    inputs = scaling._sweep_inputs(sp, name, size, lambda *shape: None)
    want_inputs = scaling._sweep_inputs(np, name, size, lambda *shape: None)
    for got, want in zip(inputs, want_inputs, strict=True):
        np.testing.assert_array_equal(np.asarray(got), want)  # the same bits, made apart
    got = _leaves(scaling._sweep_program(sp, name, *inputs))
    want = _leaves(scaling._sweep_program(np, name, *want_inputs))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)


def test_sweep_table_efficiency():
    rows = [
        {"system": "spartan", "mode": "strong", "workload": "kmeans", "workers": w,
         "size": "8 MiB", "seconds": s, "check": "ok"}
        for w, s in ((1, 8.0), (4, 2.5), (16, 1.0))
    ]  # fmt: skip
    text = scaling.sweep_table(rows)
    # strong: T(1) / (w T(w)) -> 80% at 4 workers, 50% at 16
    assert "| kmeans   | spartan | 8.000 | 2.500 | 1.000  | 80%     | 50%      |" in text
    assert "Weak" not in text
