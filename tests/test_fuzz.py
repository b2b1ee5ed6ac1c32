"""The differential fuzz harness (``bench/fuzz.py``) at a small size: random NumPy
programs -- element-wise operators with broadcasting, reductions over every axis, scans,
sorts, slices, reshapes, products, filters, fancy indexing, in-place updates, and
mistakes NumPy rejects -- run by NumPy and by spartan under random tilings with tiny
tiles, on in-process workers and on Ray; spartan must give NumPy's shape, dtype and
values, or raise NumPy's exception type. ``python bench/fuzz.py`` runs thousands.

Below them, each wrong result the harness found, as a named differential test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import spartan as sp
from bench import fuzz

#: the seeds CI runs (a case is its seed: ``python bench/fuzz.py --show SEED``)
LOCAL_SEEDS = range(0, 400)
RAY_SEEDS = range(20_000, 20_150)


def _failures(outcomes: list[fuzz.Outcome]) -> str:
    bad = [o for o in outcomes if not o.passed]
    return "\n\n".join(f"{o.detail}\n{o.case.program}" for o in bad[:5])


def test_a_case_is_its_seed():
    a, b = fuzz.make_case(7), fuzz.make_case(7)
    assert a.program == b.program and a.tilings == b.tilings
    assert fuzz.make_case(8).program != a.program
    cases = [fuzz.make_case(s) for s in LOCAL_SEEDS]
    # programs of several statements, and some that NumPy rejects (errors compared too)
    assert sum(len(c.lines) for c in cases) > 2 * len(cases)
    assert 10 < sum(isinstance(c.expected, BaseException) for c in cases) < len(cases) // 4
    assert {t for c in cases for t in c.tilings.values()} == {
        None, "row", "column", "block", "dup"
    }  # fmt: skip


def test_random_programs_match_numpy_in_process(local):
    outcomes = fuzz.run(LOCAL_SEEDS)
    assert all(o.passed for o in outcomes), _failures(outcomes)


def test_random_programs_match_numpy_on_ray(on_ray):
    outcomes = fuzz.run(RAY_SEEDS)
    assert all(o.passed for o in outcomes), _failures(outcomes)


def test_the_harness_sees_a_wrong_result(local, monkeypatch):
    """A cumsum off by one is caught (the harness is not vacuous)."""
    cumsum = sp.cumsum
    monkeypatch.setattr(sp, "cumsum", lambda *a, **k: cumsum(*a, **k) + 1)
    assert not all(o.passed for o in fuzz.run(range(200)))


# ---- wrong results found by the harness ------------------------------------------------


def test_sorting_and_medians_of_lanes_of_an_empty_array(backend):
    for shape, axis in [((0, 3), 1), ((0, 1), 1), ((3, 0), 0), ((0, 3), 0), ((2, 0), 1)]:
        a = np.zeros(shape)
        for name in ("sort", "argsort", "median", "nanmedian"):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's empty-slice note
                want = getattr(np, name)(a, axis=axis)
                got = np.asarray(getattr(sp, name)(sp.array(a), axis=axis))
            assert got.shape == want.shape and got.dtype == want.dtype, (name, shape, axis)
            np.testing.assert_array_equal(got, want)


def test_median_of_booleans_along_an_axis(backend, tiling):
    a = np.array([[False, True, True], [True, False, True], [True, False, False]])
    for axis in (None, 0, 1):
        got = np.asarray(sp.median(sp.array(a, tiling=tiling), axis=axis))
        np.testing.assert_array_equal(got, np.median(a, axis=axis))


def test_a_vector_times_a_stack_checks_the_summed_length(backend):
    v, stack = sp.array(np.arange(5.0)), sp.array(np.ones((1, 1, 5)))
    with pytest.raises(ValueError, match="mismatch in its core dimension 0"):
        np.matmul(np.arange(5.0), np.ones((1, 1, 5)))
    with pytest.raises(ValueError, match="mismatch in its core dimension 0"):
        v @ stack  # (einsum broadcast the stack's length-1 axis: a (1, 5) of tens)
    with pytest.raises(ValueError, match="mismatch in its core dimension 0"):
        sp.matmul(sp.array(np.ones((2, 3, 4))), v)
    got = sp.matmul(sp.array(np.arange(3.0)), sp.array(np.ones((2, 3, 4)))).to_numpy()
    np.testing.assert_array_equal(got, np.matmul(np.arange(3.0), np.ones((2, 3, 4))))


def test_argmax_takes_one_integer_axis(backend):
    a = np.arange(6.0).reshape(2, 3)
    for fn in ("argmax", "argmin"):
        with pytest.raises(TypeError):
            getattr(np, fn)(a, axis=(0, 1))
        with pytest.raises(TypeError):  # (it gave the flat index, as for axis=None)
            getattr(sp, fn)(sp.array(a), axis=(0, 1))
        got = getattr(sp, fn)(sp.array(a), axis=np.int64(1)).to_numpy()
        np.testing.assert_array_equal(got, getattr(np, fn)(a, axis=1))


def test_cumsum_of_a_scalar_is_one_element(backend):
    for fn in ("cumsum", "cumprod"):
        for axis in (None, 0, -1):
            want = getattr(np, fn)(np.array(3), axis=axis)
            got = getattr(sp, fn)(sp.array(np.array(3)), axis=axis).to_numpy()
            assert got.shape == want.shape == (1,) and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
        with pytest.raises(np.exceptions.AxisError):
            getattr(sp, fn)(sp.array(np.array(3)), axis=1)
