"""Small arrays are held in the driver and computed with NumPy (spartan.frontend.small):
the same results as NumPy, NumPy's views, no worker involved, and correct hand-offs to
and from distributed arrays."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy
import pytest

import spartan as sp
from spartan.config import Config


@pytest.fixture
def driver(backend):
    """Small arrays in the driver (the default threshold), on either backend."""
    sp.config.local_below_bytes = Config.local_below_bytes
    return backend


def _stats(backend):
    return backend.stats().as_dict()["tasks"]


def test_small_arrays_never_reach_the_workers(driver):
    before = _stats(driver)
    x = sp.zeros((20, 20))
    for i in range(20):
        for j in range(20):
            x[i, j] = i * j
    y = (x + 1) * 2
    assert x.tiling is None and y.tiling is None
    assert float(y.sum()) == float(((numpy.outer(range(20), range(20)) + 1) * 2).sum())
    labels = sp.arange(100) % 4
    data = sp.arange(100.0)
    means = [float(data[labels == g].mean()) for g in range(4)]
    assert means == [
        float(numpy.arange(100.0)[numpy.arange(100) % 4 == g].mean()) for g in range(4)
    ]
    assert _stats(driver) == before


def test_numpy_functions_and_ufunc_methods_on_small_arrays(driver):
    a = numpy.arange(12.0).reshape(3, 4)
    x = sp.array(a)
    cases = [
        (lambda m, v: m.concatenate([v, v]), None),
        (lambda m, v: m.cumsum(v, axis=1), None),
        (lambda m, v: m.add.reduce(v, axis=0), None),
        (lambda m, v: m.maximum.accumulate(v, axis=1), None),
        (lambda m, v: m.linalg.norm(v), None),
        (lambda m, v: m.where(v > 4, v, -v), None),
        (lambda m, v: m.sort(v[:, ::-1], axis=1), None),
        (lambda m, v: v.T @ v, None),
        (lambda m, v: m.exp(v).mean(axis=0), None),
    ]
    for f, _ in cases:
        want = f(numpy, a)
        got = f(sp, x)
        assert isinstance(got, sp.ndarray)
        numpy.testing.assert_allclose(numpy.asarray(got), want)
        # NumPy's own functions dispatch here too
        numpy.testing.assert_allclose(numpy.asarray(f(numpy, x)), want)


def test_in_place_numpy_functions_write_small_arrays(driver):
    x = sp.zeros((3, 3))
    numpy.fill_diagonal(x, 5)
    numpy.add.at(x, ([0, 0], [1, 1]), 1)
    numpy.copyto(x[2], 7)
    want = numpy.zeros((3, 3))
    numpy.fill_diagonal(want, 5)
    numpy.add.at(want, ([0, 0], [1, 1]), 1)
    want[2] = 7
    numpy.testing.assert_array_equal(numpy.asarray(x), want)


def test_small_values_are_copied_into_a_distributed_expression(driver):
    w = sp.ones(4)
    big = sp.ones((8, 4), tiling="row")
    y = big * w  # built now: NumPy would compute it now
    w[0] = 100
    numpy.testing.assert_array_equal(numpy.asarray(y), numpy.ones((8, 4)))
    numpy.testing.assert_array_equal(numpy.asarray(big * w)[:, 0], numpy.full(8, 100.0))


def test_a_result_that_grows_goes_to_the_workers(driver):
    sp.config.local_below_bytes = 1 << 10
    a = sp.arange(64.0)
    assert a.tiling is None
    outer = sp.outer(a, a)  # 32 KB: past the threshold
    numpy.testing.assert_array_equal(
        numpy.asarray(outer), numpy.outer(numpy.arange(64.0), numpy.arange(64.0))
    )
    assert outer.tiling is not None


def test_small_random_arrays_equal_distributed_ones(driver):
    sp.random.seed(3)
    small = sp.random.rand(6, 5)
    sp.config.local_below_bytes = 0
    sp.random.seed(3)
    tiled = sp.random.rand(6, 5)
    assert small.tiling is None and tiled.tiling is None  # (tiled: not yet evaluated)
    numpy.testing.assert_array_equal(numpy.asarray(small), numpy.asarray(tiled))


def test_scalar_idioms(driver):
    for x in (sp.arange(10.0), sp.arange(10.0, tiling="row")):
        s = x.sum()
        assert f"{s:.2f}" == "45.00"
        assert round(s) == 45 and isinstance(round(s), int)
        assert float(round(s / 7, 2)) == round(45 / 7, 2)
        assert {s: "a"}[45.0] == "a"
        assert list(range(10))[x.argmax()] == 9  # __index__
        assert f"{x.max()}" == "9.0"


def _prints_ok(script: str) -> None:
    """``script`` run in a fresh interpreter (no Ray started yet) prints ok."""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_small_operations_do_not_start_ray():
    script = textwrap.dedent(
        """
        import spartan, sys
        x = spartan.arange(100.0).reshape(10, 10)
        x[2] += 1
        assert float(x.sum()) == 4960.0, float(x.sum())
        spartan.evaluate(x)
        assert spartan.compute(x, 3)[0].shape == (10, 10)
        from spartan.backend import session
        assert session._current is None
        assert "ray" not in sys.modules or not sys.modules["ray"].is_initialized()
        print("ok")
        """
    )
    _prints_ok(script)


def test_spartan_operators_on_small_arrays_stay_in_the_driver():
    script = textwrap.dedent(
        """
        import numpy, spartan, sys
        x = spartan.arange(12.0).reshape(3, 4)
        y = spartan.map(lambda t: t * 2 + 1, x)
        s = spartan.fold(numpy.add, y, axis=0)
        spartan.random.seed(1)
        p = spartan.random.permutation(10)
        assert y.tiling is None and s.tiling is None and p.tiling is None
        numpy.testing.assert_array_equal(numpy.asarray(s), (numpy.arange(12.0).reshape(3, 4) * 2 + 1).sum(axis=0))
        assert sorted(p.tolist()) == list(range(10))
        assert "ray" not in sys.modules or not sys.modules["ray"].is_initialized()
        print("ok")
        """
    )
    _prints_ok(script)


def test_a_small_array_is_sent_again_only_after_a_write(driver):
    big = sp.ones((8, 4), tiling="row")
    w = sp.arange(4.0)
    want = numpy.arange(4.0)
    writes = [
        lambda a: a.__setitem__(0, 10),
        lambda a: a.__iadd__(1),
        lambda a: a[1:].__setitem__(slice(None), 3),  # through a view of it
        lambda a: numpy.copyto(a, 2.0),
        lambda a: numpy.add(a, 1, out=a),
        lambda a: a.sort(),
        lambda a: numpy.negative.at(a, [0]),
        lambda a: a.reshape(2, 2).__setitem__((1, 1), -4),
    ]
    for write in writes:
        numpy.testing.assert_array_equal(numpy.asarray((big * w).sum(axis=0)), 8 * want)
        assert w._expr is w._expr  # unchanged: the copy on the workers is used again
        write(w)
        write(want)
        numpy.testing.assert_array_equal(numpy.asarray((big * w).sum(axis=0)), 8 * want)
