"""One table of functions, each checked against NumPy on hypothesis-generated shapes,
dtypes and values, under every tiling (tiny tiles)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spartan as sp

FAST = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
DTYPES = st.sampled_from([np.int8, np.int32, np.int64, np.float32, np.float64])


def arrays(min_dims=1):
    return DTYPES.flatmap(
        lambda dt: hnp.arrays(
            dt,
            hnp.array_shapes(min_dims=min_dims, max_dims=3, min_side=1, max_side=6),
            elements={"min_value": -20, "max_value": 20},
        )
    )


# (name, function applied to both modules, needs exact equality)
FUNCTIONS = [
    ("sort", lambda m, a: m.sort(a, axis=-1), True),
    ("sort-None", lambda m, a: m.sort(a, axis=None), True),
    ("argsort", lambda m, a: m.argsort(a, axis=0, kind="stable"), True),
    ("flip", lambda m, a: m.flip(a), True),
    ("roll", lambda m, a: m.roll(a, 3, axis=0), True),
    ("cumsum", lambda m, a: m.cumsum(a, axis=-1), False),
    ("nancumsum", lambda m, a: m.nancumsum(a), False),
    ("diff", lambda m, a: m.diff(a, axis=0), True),
    ("median", lambda m, a: m.median(a, axis=-1), False),
    ("median-all", lambda m, a: m.median(a), False),
    ("quantile", lambda m, a: m.quantile(a, [0.1, 0.7], axis=0), False),
    ("nanmean", lambda m, a: m.nanmean(a, axis=0), False),
    ("nanmax", lambda m, a: m.nanmax(a, axis=-1), True),
    ("ptp", lambda m, a: m.ptp(a, axis=0), True),
    ("unique", lambda m, a: m.unique(a), True),
    ("clip", lambda m, a: m.clip(a, -5, 7), True),
    ("round", lambda m, a: m.round(a, 1), False),
    ("tile", lambda m, a: m.tile(a, 2), True),
    ("repeat", lambda m, a: m.repeat(a, 2, axis=0), True),
    ("pad", lambda m, a: m.pad(a, 2, mode="reflect"), True),
    ("take", lambda m, a: m.take(a, [0, -1, 0], axis=0), True),
    ("count_nonzero", lambda m, a: m.count_nonzero(a > 0, axis=0), True),
    ("searchsorted", lambda m, a: m.searchsorted(m.sort(a, axis=None), [-3, 0, 5]), True),
    ("isin", lambda m, a: m.isin(a, [1, 2, 3]), True),
    ("average", lambda m, a: m.average(a, axis=0), False),
    ("var-ddof", lambda m, a: m.var(a, axis=0, ddof=0), False),
]


@pytest.mark.parametrize("name, fn, exact", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_function_matches_numpy(local, tiling, name, fn, exact):
    @FAST
    @given(a=arrays())
    def check(a):
        expected = fn(np, a)
        got = fn(sp, sp.array(a, tiling=tiling)).to_numpy()
        assert got.shape == np.shape(expected)
        assert got.dtype == np.asarray(expected).dtype, (got.dtype, np.asarray(expected).dtype)
        if exact:
            np.testing.assert_array_equal(got, expected)
        else:
            f32 = a.dtype == np.float32
            np.testing.assert_allclose(
                got, expected, rtol=1e-5 if f32 else 1e-9, atol=1e-4 if f32 else 1e-9
            )

    check()
