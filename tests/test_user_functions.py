"""User functions given to ``map``, ``fold``, ``scan`` and ``join_update`` are checked.

A returned block of the wrong shape or of a dtype that does not cast (``same_kind``)
raises ``ValueError`` naming the function, the tile and both shapes or dtypes; nothing
is broadcast. A user function's exception reaches the caller with its type, message and
the user's own frames, and a note naming the tile. Arrays are cut so that every tile has
at least two rows and two columns (``t[:1]`` is then never a whole tile).
"""

from __future__ import annotations

import os
import sys
import traceback

import numpy as np
import pytest

import spartan as sp
from spartan.backend.device import array_module

SHAPE = (24, 6)
NOTES = sys.version_info >= (3, 11)  # exception notes (PEP 678)
GPU = os.environ.get("SPARTAN_TEST_DEVICE", "cpu") == "gpu"  # tiles are CuPy arrays
NO_STR_ON_GPU = pytest.mark.skipif(GPU, reason="CuPy has no string or object arrays")


def data(shape=SHAPE, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def on(t, a):
    """NumPy array ``a`` where tile ``t`` is (a user function on GPU tiles needs it)."""
    return array_module(t).asarray(a)


def first_row(t):
    return t[:1]


def total(t):
    return t.sum()


def _explode_helper(t):
    raise KeyError(f"boom {t.shape[1]}")


def explode(t):
    return _explode_helper(t)


def user_frames(exc):
    """The names of the traceback's frames from the first user frame on."""
    names = [f.name for f in traceback.extract_tb(exc.__traceback__)]
    start = next(i for i, n in enumerate(names) if n in ("explode", "join_explode"))
    return names[start:]


# ---- map: shapes ----------------------------------------------------------------------


def test_map_returning_the_first_row_raises_instead_of_broadcasting(backend, tiling):
    x = sp.array(data(), tiling=tiling)
    y = sp.map(first_row, x)
    with pytest.raises(ValueError, match=r"first_row\) returned shape \(1, \d+\)") as info:
        y.to_numpy()
    assert re_search(r"output tile \(\d+, \d+\), whose shape is \(\d+, \d+\)", info.value)


def test_map_returning_a_scalar_raises_instead_of_filling_the_tile(backend, tiling):
    x = sp.array(data(), tiling=tiling)
    with pytest.raises(ValueError, match=r"total\) returned shape \(\) for output tile"):
        sp.map(total, x, dtype=float).to_numpy()


def test_a_checked_map_fused_into_its_consumers_still_raises(backend):
    x = sp.array(data(), tiling="row")
    with pytest.raises(ValueError, match="first_row"):
        (sp.map(first_row, x) + 1).to_numpy()
    with pytest.raises(ValueError, match="first_row"):
        sp.map(first_row, x).sum(axis=0).to_numpy()
    # a correct map fused the same ways is still right
    a = data()
    got = sp.map(lambda t: 2 * t, sp.array(a, tiling="row"))
    np.testing.assert_allclose((got + 1).to_numpy(), 2 * a + 1)
    np.testing.assert_allclose(got.sum(axis=0).to_numpy(), (2 * a).sum(axis=0))


def test_a_map_over_broadcast_inputs_returns_the_broadcast_block(backend, tiling):
    a, b = data((24, 1), 1), data((1, 12), 2)
    got = sp.map(lambda s, t: s * t, sp.array(a, tiling=tiling), sp.array(b))
    np.testing.assert_allclose(got.to_numpy(), a * b)
    with pytest.raises(ValueError, match=r"returned shape \(\d+, 1\)"):
        sp.map(lambda s, t: s + 0 * t[:, :1], sp.array(a, tiling=tiling), sp.array(b)).to_numpy()


# ---- map: t @ W and dtype inference ----------------------------------------------------


def test_map_t_matmul_w_without_dtype_equals_numpy(backend, tiling):
    a, w = data(), data((SHAPE[1], 3), 1)
    x = sp.array(a, tiling=tiling)
    y = sp.map(lambda t: t @ on(t, w), x, shape=(SHAPE[0], 3))
    assert y.shape == (SHAPE[0], 3) and y.dtype == np.float64
    np.testing.assert_allclose(y.to_numpy(), a @ w)
    # rows of another input cut alike, a constant and a small input read whole
    b, c = data((SHAPE[0], 3), 2), data((3,), 3)
    z = sp.map(
        lambda t, u, s, v: t @ on(t, w) + u * s + v, x, sp.array(b), 2.0, sp.array(c), shape=(24, 3)
    )
    np.testing.assert_allclose(z.to_numpy(), a @ w + b * 2.0 + c)


def test_map_t_matmul_square_w_without_dtype_or_shape_equals_numpy(backend):
    a, w = data(), data((SHAPE[1], SHAPE[1]), 1)
    y = sp.map(lambda t: t @ on(t, w), sp.array(a, tiling="row"))
    assert y.dtype == np.float64
    np.testing.assert_allclose(y.to_numpy(), a @ w)


def test_dtype_is_inferred_on_one_row_of_ones_with_the_real_trailing_axes(local):
    seen = []

    def spy(t, v):
        seen.append((t.shape, v.shape))
        return (t @ array_module(t).ones((6, 2), np.float32)).astype(np.float32)

    x = sp.array(np.ones((24, 6), np.int32))
    v = sp.array(np.ones(5))
    y = sp.map(spy, x, v, shape=(24, 2))
    assert seen == [((1, 6), (5,))] and y.dtype == np.float32
    np.testing.assert_array_equal(y.to_numpy(), np.full((24, 2), 6, np.float32))


def test_a_function_that_changes_the_rows_length_is_told_about_shape(local):
    w = data((6, 3), 1)
    with pytest.raises(ValueError, match=r"returned shape \(\d+, 3\).*needs map\(\.\.\., shape=\)"):
        sp.map(lambda t: t @ on(t, w), sp.array(data(), tiling="row")).to_numpy()


def test_map_shape_needs_an_input_with_that_many_rows(local):
    with pytest.raises(ValueError, match="one must have 7 rows"):
        sp.map(lambda t: t, sp.ones((24, 6)), shape=(7, 6))


def test_a_function_the_dtype_probe_breaks_raises_its_own_error_with_a_hint(local):
    def needs_two_rows(t):
        if len(t) < 2:
            raise IndexError("need two rows")
        return t

    with pytest.raises(IndexError, match="need two rows") as info:
        sp.map(needs_two_rows, sp.ones((24, 6)))
    if NOTES:
        assert any("pass dtype=" in n for n in info.value.__notes__)
    got = sp.map(needs_two_rows, sp.array(data(), tiling="row"), dtype=float)
    np.testing.assert_allclose(got.to_numpy(), data())


# ---- map: dtypes -----------------------------------------------------------------------


def test_map_casts_a_same_kind_dtype_to_the_declared_one(backend, tiling):
    a = data()
    y = sp.map(lambda t: t * 2, sp.array(a, tiling=tiling), dtype=np.float32)
    got = y.to_numpy()
    assert y.dtype == np.float32 and got.dtype == np.float32
    np.testing.assert_allclose(got, (2 * a).astype(np.float32))
    ints = sp.map(lambda t: (t > 0).astype(np.int64), sp.array(a, tiling=tiling), dtype=np.int8)
    np.testing.assert_array_equal(ints.to_numpy(), (a > 0).astype(np.int8))


@pytest.mark.parametrize(
    "fn, dtype, got",
    [
        pytest.param(lambda t: t.astype(str), float, "<U", marks=NO_STR_ON_GPU),
        pytest.param(lambda t: t.astype(object), float, "object", marks=NO_STR_ON_GPU),
        (lambda t: t * 1.5, np.int64, "float64"),
        (lambda t: t + 1j, float, "complex128"),
    ],
)
def test_map_returning_a_dtype_that_does_not_cast_raises(backend, fn, dtype, got):
    x = sp.array(data(), tiling="block")
    with pytest.raises(ValueError, match=rf"returned dtype {got}.*declared {np.dtype(dtype)}"):
        sp.map(fn, x, dtype=dtype).to_numpy()


# ---- exceptions ------------------------------------------------------------------------


def test_an_exception_in_a_user_function_keeps_type_message_and_user_frames(backend):
    x = sp.array(data(), tiling="row")
    with pytest.raises(KeyError) as info:
        sp.map(explode, x, dtype=float).to_numpy()
    exc = info.value
    assert exc.args == ("boom 6",)
    # the user's two frames, in order, with nothing of spartan's or Ray's after them
    assert user_frames(exc) == ["explode", "_explode_helper"]
    assert not any(
        "site-packages/ray" in f.filename for f in traceback.extract_tb(exc.__traceback__)
    )
    if NOTES:
        assert any("spartan.map(explode)" in n and "output tile (" in n for n in exc.__notes__)
    printed = "".join(traceback.format_exception(exc))
    assert "raise KeyError" in printed and "return _explode_helper(t)" in printed
    # the backend still works afterwards
    assert float(sp.ones((4, 4)).sum()) == 16


def test_an_exception_in_f_join_names_its_group_and_keeps_user_frames(backend):
    def join_explode(ext, xt):
        return _explode_helper(xt)

    x = sp.array(data(), tiling="row")
    with pytest.raises(KeyError, match="boom 6") as info:
        sp.join_update(join_explode, None, [x], [0], SHAPE).to_numpy()
    assert user_frames(info.value) == ["join_explode", "_explode_helper"]
    if NOTES:
        assert any("group of blocks [" in n for n in info.value.__notes__)


# ---- fold and scan ---------------------------------------------------------------------


def test_fold_and_scan_with_python_functions_equal_numpy(backend, tiling):
    a = data()
    x = sp.array(a, tiling=tiling)
    np.testing.assert_allclose(sp.fold(lambda p, q: p + q, x, axis=0).to_numpy(), a.sum(0))
    np.testing.assert_allclose(sp.fold(lambda p, q: p + q, x).to_numpy(), a.sum())
    np.testing.assert_allclose(sp.scan(lambda p, q: p + q, x, axis=0).to_numpy(), a.cumsum(0))
    np.testing.assert_allclose(sp.scan(lambda p, q: p + q, x, axis=1).to_numpy(), a.cumsum(1))


def test_fold_combines_partials_element_by_element_too(backend):
    """Partials meet as elements within a tile do (issue 35, 2b): a function of two
    values works for every tiling (it raised once several partials were combined)."""
    x = sp.array(data(), tiling="row")  # several partials per output tile: combined
    got = sp.fold(lambda p, q: np.sum(p + q), x, axis=0).to_numpy()
    np.testing.assert_allclose(got, data().sum(axis=0))


def test_fold_and_scan_values_that_do_not_cast_raise(backend, tiling):
    x = sp.array(data(), tiling=tiling)
    with pytest.raises(ValueError, match=r"spartan.fold\(.*returned dtype <U.*declared float64"):
        sp.fold(lambda p, q: "s", x, axis=0).to_numpy()
    with pytest.raises(ValueError, match=r"spartan.scan\(.*declared float64"):
        sp.scan(lambda p, q: "s", x, axis=0).to_numpy()
    with pytest.raises(ValueError, match=r"returned dtype float64.*declared int64"):
        sp.scan(lambda p, q: p / 2 + q, sp.array(np.ones(SHAPE, int), tiling=tiling)).to_numpy()


# ---- join_update -----------------------------------------------------------------------


def test_join_update_updates_must_have_their_locations_shape(backend, tiling):
    x = sp.array(data(), tiling=tiling)

    def first_rows(ext, xt):
        return [(ext[0].rows, xt[:1])]

    def scalar(ext, xt):
        return [(ext[0].rows, xt.sum())]

    with pytest.raises(ValueError, match=r"update of shape \(1, 6\) for location"):
        sp.join_update(first_rows, None, [x], [0], SHAPE).to_numpy()
    with pytest.raises(ValueError, match=r"update of shape \(\) for location"):
        sp.join_update(scalar, np.add, [x], [0], SHAPE).to_numpy()


def test_join_update_integer_locations_and_dtypes(backend):
    a = data()
    x = sp.array(a, tiling="row")

    def row_sums(ext, xt):  # an integer drops its axis, as in NumPy
        lo = ext[0].box[0][0]
        return [((lo + i,), row) for i, row in enumerate(xt)]

    got = sp.join_update(row_sums, None, [x], [0], SHAPE, dtype=np.float32)
    assert got.to_numpy().dtype == np.float32
    np.testing.assert_allclose(got.to_numpy(), a.astype(np.float32))

    def as_text(ext, xt):
        return [(ext[0].rows, xt.astype(str))]

    if GPU:
        return
    with pytest.raises(ValueError, match=r"returned dtype <U.*declared float64"):
        sp.join_update(as_text, None, [x], [0], SHAPE).to_numpy()


def test_join_update_f_accum_must_keep_the_accumulators_shape(backend):
    a = data()
    x = sp.array(a, tiling="row")

    def column_sums(ext, xt):
        return [((slice(None),), xt.sum(axis=0))]

    got = sp.join_update(column_sums, lambda acc, u: acc + u, [x], [0], (6,))
    np.testing.assert_allclose(got.to_numpy(), a.sum(axis=0))
    with pytest.raises(ValueError, match=r"f_accum=.*returned shape \(\).*whose shape is \(6,\)"):
        sp.join_update(column_sums, lambda acc, u: (acc + u).sum(), [x], [0], (6,)).to_numpy()


def re_search(pattern, exc):
    import re

    return re.search(pattern, str(exc)) is not None


def test_the_dtype_probe_retries_on_real_values(backend):
    def not_on_ones(t):
        if (t == 1).all():
            raise ValueError("a block of ones")
        return t * 2

    x = sp.array(data(), tiling="row")
    x.evaluate()
    got = sp.map(not_on_ones, x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got.to_numpy(), data() * 2)


def test_a_failed_evaluation_frees_its_arrays(local):
    """The in-process workers store a failed task's error: the copy raised on the driver
    carries the driver's traceback, not the stored one (its frames would keep the
    evaluation's arrays alive)."""
    import gc

    def boom(t):
        raise KeyError("boom")

    def fail_once():
        x = sp.ones((64, 8), tiling="row")
        with pytest.raises(KeyError):
            np.asarray(sp.map(boom, x, dtype=float))

    gc.collect()
    before = sum(len(w.store) for w in local.workers)
    for _ in range(3):
        fail_once()
    gc.collect()
    assert sum(len(w.store) for w in local.workers) == before
