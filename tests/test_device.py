"""The array-module seam on the CPU (what CI runs): the same code paths a GPU worker
takes, with NumPy as the array module."""

from __future__ import annotations

import numpy as np

import spartan as sp
from spartan.backend.device import accumulate, array_module, to_device, to_host


def test_seam_is_the_identity_on_cpu():
    a = np.arange(6.0).reshape(2, 3)
    assert array_module(a) is np
    assert to_device(a, "cpu") is a
    assert to_host(a) is a
    rec = np.zeros(3, [("v", "f8"), ("i", "i8")])
    assert to_device(rec, "gpu") is rec  # structured partials stay on the host
    np.testing.assert_array_equal(accumulate(np.add, a, 1, None), np.cumsum(a, axis=1))
    np.testing.assert_array_equal(
        accumulate(np.maximum, a[::-1], 0, None), np.maximum.accumulate(a[::-1], axis=0)
    )


def test_user_functions_can_pick_the_module(backend, tiling):
    def softplus(t):
        xp = sp.get_array_module(t)
        return xp.log1p(xp.exp(t))

    a = np.linspace(-3, 3, 35).reshape(7, 5)
    got = sp.map(softplus, sp.array(a, tiling=tiling)).to_numpy()
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, np.log1p(np.exp(a)))


def test_init_rejects_unknown_devices():
    import pytest

    with pytest.raises(ValueError, match="unknown device"):
        sp.init(backend="local", device="tpu")
