"""``ufunc.reduceat``, ``accumulate``, ``outer`` and ``at`` against NumPy, through NumPy's
``__array_ufunc__`` and through spartan's own ufunc objects; and errors that never
compute the arrays they are about."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spartan as sp

FAST = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))

INTS = np.arange(1, 36, dtype=np.int64).reshape(7, 5) % 11 + 1  # no zeros: divide is finite
FLOATS = np.random.default_rng(0).uniform(0.5, 2.0, (7, 5))
BOOLS = (np.arange(35).reshape(7, 5) % 3).astype(bool)
#: ufuncs NumPy reorders (partials combined per segment) and ones it does not (whole lanes)
REORDERABLE = ["add", "multiply", "maximum", "minimum", "fmax", "logaddexp"]
ORDERED = ["subtract", "divide", "power", "arctan2", "floor_divide"]
INDICES = [[0, 2, 4], [0, 3, 1, 4], [4], [0, 0, 0], [3, 1, 2, 2, 4, 0], [1, 4, 2]]


def check(got, expected, exact):
    """Equal to NumPy's result; bit for bit where ``exact`` or the values are integers
    (a reorderable ufunc's partials may round floats differently)."""
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if exact or expected.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_reduceat_matches_numpy(backend, tiling):
    x, xi, xb = (sp.array(a, tiling=tiling) for a in (FLOATS, INTS, BOOLS))
    cases = []  # (spartan result, NumPy's, exact)
    for name in REORDERABLE + ORDERED:
        uf = getattr(np, name)
        exact = name in ORDERED  # NumPy's own order, so NumPy's own rounding
        for ind in INDICES:
            for axis in (0, -1):
                cases.append(
                    (uf.reduceat(x, ind, axis=axis), uf.reduceat(FLOATS, ind, axis=axis), exact)
                )
        cases.append(
            (getattr(sp, name).reduceat(xi, [0, 5, 2, 6]), uf.reduceat(INTS, [0, 5, 2, 6]), exact)
        )
    for name in ["logical_and", "logical_or", "logical_xor", "bitwise_or", "add", "maximum"]:
        uf = getattr(np, name)
        cases.append(
            (uf.reduceat(xb, [0, 3, 1], axis=1), uf.reduceat(BOOLS, [0, 3, 1], axis=1), True)
        )
        if name.startswith("bitwise"):
            cases.append((uf.reduceat(xi, [1, 6, 2]), uf.reduceat(INTS, [1, 6, 2]), True))
    # dtype=, and indices from a NumPy array, a spartan array and a tuple
    cases.append(
        (
            np.add.reduceat(xi, np.array([0, 4]), dtype=np.float32),
            np.add.reduceat(INTS, [0, 4], dtype=np.float32),
            True,
        )
    )
    cases.append(
        (
            sp.multiply.reduceat(x, sp.array(np.array([2, 0, 6]), tiling=tiling), 0, np.float64),
            np.multiply.reduceat(FLOATS, [2, 0, 6], 0, np.float64),
            False,
        )
    )
    cases.append(
        (
            np.minimum.reduceat(xi, (4, 4, 1), axis=1),
            np.minimum.reduceat(INTS, (4, 4, 1), axis=1),
            True,
        )
    )
    got = sp.compute(*(c[0] for c in cases))
    for g, (_, expected, exact) in zip(got, cases):
        check(g, expected, exact)


def test_accumulate_matches_numpy(backend, tiling):
    x, xi = sp.array(FLOATS, tiling=tiling), sp.array(INTS, tiling=tiling)
    cases = []
    for name in REORDERABLE + ORDERED:
        uf = getattr(np, name)
        exact = name in ORDERED
        for axis in (0, 1, -1):
            cases.append((uf.accumulate(x, axis=axis), uf.accumulate(FLOATS, axis=axis), exact))
        cases.append((getattr(sp, name).accumulate(xi, 1), uf.accumulate(INTS, 1), exact))
    for name in ["logical_and", "logical_or", "bitwise_xor", "gcd"]:
        cases.append(
            (getattr(np, name).accumulate(xi % 3), getattr(np, name).accumulate(INTS % 3), True)
        )
    one_d = sp.array(FLOATS[:, 0], tiling="row")
    cases.append(
        (np.subtract.accumulate(one_d, axis=None), np.subtract.accumulate(FLOATS[:, 0]), True)
    )
    cases.append(
        (
            np.add.accumulate(xi, axis=(1,), dtype=np.float32),
            np.add.accumulate(INTS, axis=1, dtype=np.float32),
            True,
        )
    )
    cases.append(
        (sp.divide.accumulate(xi, 0, np.float32), np.divide.accumulate(INTS, 0, np.float32), True)
    )
    got = sp.compute(*(c[0] for c in cases))
    for g, (_, expected, exact) in zip(got, cases):
        check(g, expected, exact)


def test_outer_matches_numpy(backend, tiling):
    x = sp.array(FLOATS, tiling=tiling)
    v = sp.array(INTS[0], tiling="row")
    cases = [
        (np.add.outer(x, v), np.add.outer(FLOATS, INTS[0])),
        (np.subtract.outer(v, x), np.subtract.outer(INTS[0], FLOATS)),
        (sp.maximum.outer(x[:3], x[1]), np.maximum.outer(FLOATS[:3], FLOATS[1])),
        (sp.divide.outer([1.0, 2.0], v), np.divide.outer([1.0, 2.0], INTS[0])),
        (np.multiply.outer(v, 3), np.multiply.outer(INTS[0], 3)),
        (sp.power.outer(2, v), np.power.outer(2, INTS[0])),
        (
            np.logical_and.outer(v > 3, [True, False]),
            np.logical_and.outer(INTS[0] > 3, [True, False]),
        ),
        (np.add.outer(v, v, dtype=np.float32), np.add.outer(INTS[0], INTS[0], dtype=np.float32)),
        (sp.add.outer(v, sp.array(np.float64(2.5), tiling="dup")), np.add.outer(INTS[0], 2.5)),
    ]
    quotient, remainder = np.divmod.outer(v, [2, 3])
    cases += [
        (quotient, np.floor_divide.outer(INTS[0], [2, 3])),
        (remainder, np.mod.outer(INTS[0], [2, 3])),
    ]
    got = sp.compute(*(c[0] for c in cases))
    for g, (_, expected) in zip(got, cases):
        check(g, expected, exact=True)
    assert sp.add.outer(2, 3) == np.add.outer(2, 3)  # two scalars: NumPy's own scalar


def test_out_and_where(local):
    x = sp.array(FLOATS, tiling="row")
    out = sp.zeros((2, 5), tiling="row")
    r = np.add.reduceat(x, [0, 3], axis=0, out=out)
    assert r is out
    np.testing.assert_allclose(out.to_numpy(), np.add.reduceat(FLOATS, [0, 3]))
    acc = sp.zeros((7, 5), dtype=np.float32, tiling="column")
    sp.subtract.accumulate(x, axis=1, out=acc)
    np.testing.assert_array_equal(
        acc.to_numpy(), np.subtract.accumulate(FLOATS, axis=1).astype(np.float32)
    )
    o = sp.zeros((5, 5), tiling="block")
    mask = np.arange(5) % 2 == 0
    np.add.outer(x[0], x[1], out=(o,), where=mask)
    expected = np.where(mask, np.add.outer(FLOATS[0], FLOATS[1]), 0)
    np.testing.assert_allclose(o.to_numpy(), expected)
    with pytest.raises(TypeError, match="spartan array"):
        np.add.reduceat(x, [0], out=np.zeros((1, 5)))
    with pytest.raises(ValueError, match="broadcast"):
        np.add(x, 1, where=np.ones((2, 7, 5), bool))


def test_at_through_numpy(local):
    a = FLOATS.copy()
    x = sp.array(FLOATS, tiling="row")
    assert np.add.at(x, [0, 0, 6], 1.5) is None
    np.add.at(a, [0, 0, 6], 1.5)
    np.testing.assert_array_equal(x.to_numpy(), a)
    with pytest.raises(TypeError, match="NumPy array"):
        np.add.at(np.zeros(3), [0], sp.ones(1, tiling="row"))


def test_reduceat_errors_like_numpy(local):
    a = FLOATS
    x = sp.array(a, tiling="block")
    for call in [
        lambda m, X: m.add.reduceat(X, [0, 7]),
        lambda m, X: m.add.reduceat(X, [-1]),
        lambda m, X: m.add.reduceat(X, [[0]]),
        lambda m, X: m.add.reduceat(X, 2),
        lambda m, X: m.add.reduceat(X, np.array([0.5])),
        lambda m, X: m.add.reduceat(X, np.array([0], dtype=np.uint64)),
        lambda m, X: m.add.reduceat(X, [0], axis=None),
        lambda m, X: m.add.reduceat(X, [0], axis=2),
        lambda m, X: m.add.reduceat(X, [0], axis=1.0),
        lambda m, X: m.exp.reduceat(X, [0]),
        lambda m, X: m.divmod.reduceat(X, [0]),
        lambda m, X: m.matmul.reduceat(X, [0]),
        lambda m, X: m.add.reduceat(X[0, 0], [0]),
        lambda m, X: m.add.accumulate(X, axis=None),
        lambda m, X: m.add.accumulate(X, axis=(0, 1)),
        lambda m, X: m.add.accumulate(X, axis=3),
        lambda m, X: m.add.accumulate(X[0, 0]),
        lambda m, X: m.exp.accumulate(X),
        lambda m, X: m.divmod.accumulate(X),
        lambda m, X: m.exp.outer(X, X),
        lambda m, X: m.matmul.outer(X, X),
        lambda m, X: m.add.outer(X, X, axis=0),
    ]:
        try:
            call(np, a)
        except Exception as e:  # noqa: BLE001
            expected = type(e)
        else:
            raise AssertionError("NumPy raised nothing")
        for module in (np, sp):  # through __array_ufunc__, and spartan's ufunc objects
            with pytest.raises(expected):
                call(module, x)
    for kw in ("keepdims", "initial", "where"):
        with pytest.raises(TypeError, match=kw):
            np.add.reduceat(x, [0], **{kw: True})
        with pytest.raises(TypeError, match=kw):
            sp.add.reduceat(x, [0], **{kw: True})
    # NumPy's answers for the empty cases: no indices, an empty axis, empty other axes
    for arr, ind, axis in [(a, [], 0), (np.zeros(0), [], 0), (np.ones((2, 0)), [0, 1], 0)]:
        got = np.add.reduceat(sp.array(arr, tiling="row"), ind, axis=axis)
        check(got.to_numpy(), np.add.reduceat(arr, ind, axis=axis), exact=True)
    with pytest.raises(IndexError, match=r"out-of-bounds in add.reduceat \[0, 0\)"):
        np.add.reduceat(sp.array(np.zeros(0), tiling="row"), [0])


def test_reduceat_moves_partials_only(local):
    """A row-tiled vector reduced at a few indices: each tile's part of each segment is
    reduced where the tile lives; only the partials travel."""
    a = np.arange(60_000, dtype=np.float64)
    x = sp.array(a, tiling="row").evaluate()
    local.reset_stats()
    got = np.add.reduceat(x, [0, 7, 30_000, 31_000, 45_123]).to_numpy()
    np.testing.assert_allclose(got, np.add.reduceat(a, [0, 7, 30_000, 31_000, 45_123]))
    assert sp.stats()["bytes_moved"] < a.nbytes // 100


@FAST
@given(
    n=st.integers(1, 13),
    cols=st.integers(1, 4),
    data=st.data(),
)
def test_reduceat_random_indices(local, n, cols, data):
    a = np.arange(n * cols, dtype=np.int64).reshape(n, cols) * 7 % 13 - 4
    tiling = data.draw(st.sampled_from(["row", "column", "block", "dup"]))
    ind = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=9))
    x = sp.array(a, tiling=tiling)
    results = [np.add.reduceat(x, ind), np.maximum.reduceat(x, ind), np.subtract.reduceat(x, ind)]
    results.append(np.multiply.reduceat(x[:, 0], ind))
    got = sp.compute(*results)
    expected = [np.add.reduceat(a, ind), np.maximum.reduceat(a, ind), np.subtract.reduceat(a, ind)]
    expected.append(np.multiply.reduceat(a[:, 0], ind))
    for g, e in zip(got, expected):
        check(g, e, exact=True)
    bad = data.draw(st.sampled_from([n, n + 3, -1]))
    with pytest.raises(IndexError, match=f"index {bad} out-of-bounds"):
        np.add.reduceat(x, ind + [bad])


def _never(tile):
    raise AssertionError("an error message computed an array")


def test_errors_never_compute(local):
    """Every error about spartan arrays names them by shape and dtype: building it never
    evaluates anything (``repr`` of a spartan array would)."""
    x = sp.map(_never, sp.ones((2048, 2048)), dtype=np.float64)  # 32 MB, never computed
    local.reset_stats()
    calls = [
        (TypeError, lambda: np.add(x, "a")),
        (TypeError, lambda: np.add.reduceat(x, [0], keepdims=True)),
        (IndexError, lambda: np.add.reduceat(x, [0, 4096])),
        (ValueError, lambda: np.add.reduceat(x, [[0]])),
        (ValueError, lambda: np.exp.reduceat(x, [0])),
        (ValueError, lambda: np.exp.accumulate(x)),
        (ValueError, lambda: np.add.accumulate(x, axis=None)),
        (ValueError, lambda: np.exp.outer(x, x)),
        (TypeError, lambda: np.matmul.outer(x, x)),
        (TypeError, lambda: np.add.outer(x, x, axis=0)),
        (TypeError, lambda: np.add(x, 1, out=(np.zeros((2048, 2048)),))),
        (TypeError, lambda: np.add.at(np.zeros(3), [0], x[0, :1])),
        (ValueError, lambda: np.add(x, sp.ones(3))),
        (TypeError, lambda: np.packbits(x > 0)),  # (no distributed version)
        (ValueError, lambda: np.fft.fft(x, norm="bogus")),
        (TypeError, lambda: np.add(x, object())),
    ]
    for kind, call in calls:
        with pytest.raises(kind) as info:
            call()
        assert "array([" not in str(info.value)  # (NumPy's message would print x)
    assert "spartan.Array(shape=(2048, 2048), dtype=float64)" in str(
        pytest.raises(TypeError, lambda: np.add(x, "a")).value
    )
    assert sp.stats()["tasks"] == 0
