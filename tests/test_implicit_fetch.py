"""``numpy.asarray`` of a large distributed array is never a silent gather."""

import warnings

import numpy as np
import pytest

import spartan as sp
from spartan import config


@pytest.fixture
def tiny_limit(monkeypatch):
    monkeypatch.setattr(config, "implicit_fetch_bytes", 64)
    monkeypatch.setattr(config, "implicit_fetch", "warn")


def test_warns_naming_the_caller(backend, tiny_limit):
    a = np.arange(40.0).reshape(8, 5)
    x = sp.asarray(a)
    with pytest.warns(sp.ImplicitFetchWarning, match=r"test_implicit_fetch\.py:\d+") as rec:
        got = np.asarray(x)
    assert rec[0].filename == __file__  # (the warning points at the caller's line)
    np.testing.assert_array_equal(got, a)


def test_explicit_fetches_and_small_arrays_stay_quiet(backend, tiny_limit):
    a = np.arange(40.0).reshape(8, 5)
    x = sp.asarray(a)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sp.ImplicitFetchWarning)
        np.testing.assert_array_equal(x.to_numpy(), a)
        np.testing.assert_array_equal(sp.compute(x)[0], a)
        np.asarray(x[:2, :2])  # 32 bytes: under the limit
        np.asarray(sp.asarray(a, tiling=None)[0])


def test_raise_policy(backend, tiny_limit, monkeypatch):
    monkeypatch.setattr(config, "implicit_fetch", "raise")
    x = sp.ones((8, 5))
    with pytest.raises(TypeError, match="implicit_fetch is 'raise'.*to_numpy"):
        np.asarray(x)
    np.testing.assert_array_equal(x.to_numpy(), np.ones((8, 5)))  # explicit still works


def test_allow_policy_and_bad_setting(backend, tiny_limit, monkeypatch):
    x = sp.ones((8, 5))
    monkeypatch.setattr(config, "implicit_fetch", "allow")
    with warnings.catch_warnings():
        warnings.simplefilter("error", sp.ImplicitFetchWarning)
        np.testing.assert_array_equal(np.asarray(x), np.ones((8, 5)))
    with pytest.raises(ValueError, match="implicit_fetch"):  # refused when set
        monkeypatch.setattr(config, "implicit_fetch", "quietly")
