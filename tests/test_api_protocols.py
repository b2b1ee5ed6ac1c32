"""NumPy dispatch (``__array_function__``/``__array_ufunc__``) and the array API namespace."""

from __future__ import annotations

import numpy as np

import spartan as sp


def test_numpy_functions_dispatch_to_spartan(local):
    a = np.arange(12.0).reshape(3, 4)
    x = sp.array(a)
    for fn, args in [
        (np.median, ()),
        (np.sort, ()),
        (np.unique, ()),
        (np.flip, ()),
        (np.nanmean, ()),
        (np.clip, (1, 5)),
        (np.diff, ()),
        (np.pad, (1,)),
        (np.cumsum, ()),
        (np.take, ([0, 5],)),
        (np.percentile, (50,)),
    ]:
        out = fn(x, *args)
        assert isinstance(out, sp.Array), fn.__name__
        np.testing.assert_allclose(out.to_numpy(), fn(a, *args))
    assert isinstance(np.linalg.norm(x), sp.Array)
    assert isinstance(np.einsum("ij->j", x), sp.Array)


def test_array_namespace(local):
    x = sp.ones((2, 3))
    xp = x.__array_namespace__()
    assert xp is sp
    for name in [
        "permute_dims",
        "concat",
        "unique_values",
        "unique_counts",
        "unique_inverse",
        "unique_all",
        "cumulative_sum",
        "matrix_transpose",
        "astype",
        "unstack",
        "isdtype",
    ]:
        assert callable(getattr(xp, name)), name
    np.testing.assert_array_equal(xp.permute_dims(x, (1, 0)).to_numpy(), np.ones((3, 2)))


def test_methods(local):
    a = np.arange(6).reshape(2, 3)
    x = sp.array(a)
    y = sp.array(a[::-1])
    assert y.sort(axis=0) is None  # in place, like ndarray.sort
    np.testing.assert_array_equal(y.to_numpy(), np.sort(a[::-1], axis=0))
    np.testing.assert_array_equal(x.take([0, 4]).to_numpy(), a.take([0, 4]))
    np.testing.assert_array_equal(x.repeat(2).to_numpy(), a.repeat(2))
    np.testing.assert_array_equal(x.diagonal().to_numpy(), a.diagonal())
    assert x.trace().item() == a.trace()
    np.testing.assert_array_equal(x.clip(1, 4).to_numpy(), a.clip(1, 4))
    np.testing.assert_array_equal(x.nonzero()[1].to_numpy(), a.nonzero()[1])
    assert sp.isdtype(x.dtype, "integral")


def test_coverage_table():
    from spartan import api_coverage

    c = api_coverage.counts()
    assert c["numpy"][api_coverage.IMPLEMENTED] >= 200
    assert c["numpy.linalg"][api_coverage.MISSING] <= 2
    text = api_coverage.markdown()
    assert (
        "| `sort` | implemented |" in text
        and "| `exp` | implemented (element-wise ufunc) |" in text
    )


def test_array_namespace_info_and_dlpack(local):
    info = sp.array_namespace_info()
    assert info.default_dtypes()["real floating"] == np.float64
    assert set(info.dtypes(kind="real floating")) == {"float32", "float64"}
    assert info.capabilities()["boolean indexing"]
    assert info.devices() == [info.default_device()]
    x = sp.from_dlpack(np.arange(4.0))
    np.testing.assert_array_equal(x.to_numpy(), np.arange(4.0))


def test_every_implemented_function_is_dispatched():
    """``numpy.<fn>(spartan_array)`` reaches spartan for every implemented name."""
    from spartan import api_coverage

    for ns, name, status in api_coverage.rows():
        if status == api_coverage.IMPLEMENTED and ns in ("numpy", "numpy.linalg"):
            func = getattr(np if ns == "numpy" else np.linalg, name)
            assert sp.numpy_function(func) is not None, f"{ns}.{name}"
