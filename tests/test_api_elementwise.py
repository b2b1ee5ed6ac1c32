"""Element-wise functions (non-ufunc) against NumPy, hypothesis-generated values."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spartan as sp

FAST = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
floats = hnp.arrays(
    np.float64,
    hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=7),
    elements=st.floats(-1e3, 1e3) | st.sampled_from([np.nan, np.inf, -np.inf]),
)


@FAST
@given(a=floats)
def test_elementwise_functions(local, a):
    x = sp.array(a)
    with np.errstate(all="ignore"):
        cases = [
            (sp.clip(x, -1, 1), np.clip(a, -1, 1)),
            (sp.clip(x, None, 2.5), np.clip(a, None, 2.5)),
            (sp.round(x, 1), np.round(a, 1)),
            (sp.around(x), np.around(a)),
            (sp.fix(x), np.fix(a)),
            (sp.nan_to_num(x), np.nan_to_num(a)),
            (sp.nan_to_num(x, nan=-1.0, posinf=9.0), np.nan_to_num(a, nan=-1.0, posinf=9.0)),
            (sp.isposinf(x), np.isposinf(a)),
            (sp.isneginf(x), np.isneginf(a)),
            (sp.sinc(x), np.sinc(a)),
            (sp.isclose(x, a + 1e-9), np.isclose(a, a + 1e-9)),
            (sp.isclose(x, a, equal_nan=True), np.isclose(a, a, equal_nan=True)),
            (sp.where(x > 0, x, 0.5), np.where(a > 0, a, 0.5)),
        ]
    for got, expected in cases:
        g = got.to_numpy()
        assert g.dtype == expected.dtype
        np.testing.assert_array_equal(g, expected)


def test_dtypes_follow_nep50(local):
    x = sp.arange(5, dtype=np.int8)
    assert sp.clip(x, 0, 3).dtype == np.clip(np.arange(5, dtype=np.int8), 0, 3).dtype
    assert sp.round(sp.ones(3, dtype=np.float32), 2).dtype == np.float32
    z = sp.array(np.array([1 + 2j, -3j]))
    np.testing.assert_allclose(sp.real(z).to_numpy(), [1, 0])
    np.testing.assert_allclose(sp.imag(z).to_numpy(), [2, -3])
    np.testing.assert_allclose(sp.angle(z).to_numpy(), np.angle([1 + 2j, -3j]))
    assert sp.iscomplexobj(z) and not sp.isrealobj(z)
    np.testing.assert_array_equal(sp.iscomplex(z).to_numpy(), [True, True])
    assert sp.real_if_close(sp.array(np.array([1 + 0j]))).dtype == np.float64


def test_whole_array_predicates(local, tiling):
    a = np.arange(12.0).reshape(3, 4)
    x = sp.array(a, tiling=tiling)
    assert sp.allclose(x, a + 1e-12)
    assert not sp.allclose(x, a + 1)
    assert sp.array_equal(x, a) and not sp.array_equal(x, a[:2])
    assert sp.array_equiv(x, a) and sp.array_equiv(x[:1], a[:1] * np.ones((3, 1)))
    n = np.array([np.nan, 1.0])
    assert sp.array_equal(sp.array(n), n, equal_nan=True)
    assert not sp.array_equal(sp.array(n), n)


def test_errors_at_build_time(local):
    with pytest.raises(ValueError):
        sp.where(sp.ones(3) > 0, sp.ones(3))
    with pytest.raises(TypeError):
        sp.clip(sp.ones(3), 0, 1, foo=2)
    with pytest.raises(ValueError):
        sp.clip(sp.ones(3), sp.ones(2), 1)
