"""xarray as a client of spartan arrays: a ``DataArray``/``Dataset`` wrapping a spartan
array stays a lazy, distributed spartan array through xarray's operations, and only
``.values``/``.to_numpy()``/``np.asarray`` fetch it.

xarray takes a spartan array as a duck array (it has ``shape``/``dtype``/``ndim`` and
``__array_namespace__``), indexes it through ``ArrayApiIndexingAdapter`` (basic and
orthogonal indexing; no vectorized indexing) and computes with ``xp = spartan``:
``xp.where``, ``xp.result_type``, ``xp.lib.stride_tricks.sliding_window_view`` (rolling)
and NumPy functions through ``__array_function__``. Each operation is checked against
the same call on a NumPy-backed object, and its data must be a spartan ``Array`` with
nothing computed (no task ran) and nothing fetched to the driver. The limits (what
xarray cannot do on a spartan array, and the calls that hand the data to NumPy-only
code) are listed in docs and checked at the end of this file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray", reason="xarray is not installed (pip install '.[test]')")

import spartan as sp  # noqa: E402
from spartan.frontend.array import Array  # noqa: E402

RNG = np.random.default_rng(7)
DATA = RNG.standard_normal((6, 8))
DATA[1, 2] = DATA[4, 5] = np.nan  # skipna paths (nanmean, nansum...) are exercised
INTS = np.arange(48).reshape(6, 8)
COORDS = {
    "x": [10, 20, 30, 40, 50, 60],
    "y": np.array([0.0, 0.5, 1.5, 2.0, 3.5, 4.0, 6.0, 7.5]),  # uneven: differentiate
    "g": ("x", [1, 1, 2, 2, 2, 3]),  # a non-dimension coordinate to group by
    "lbl": ("y", list("aabbccdd")),
}


def _dataarray(values: Any) -> Any:
    return xr.DataArray(values, dims=("x", "y"), coords=COORDS, name="v", attrs={"units": "m"})


def _dataset(values: Any, ints: Any, col: Any) -> Any:
    return xr.Dataset(
        {"v": (("x", "y"), values), "i": (("x", "y"), ints), "t": ("x", col)}, coords=COORDS
    )


@pytest.fixture
def fetches(monkeypatch) -> list[tuple[int, ...]]:
    """The shape of every array fetched whole to the driver: ``__array__``, ``.item()``,
    ``bool()`` and ``to_numpy`` all go through ``Array.to_numpy``."""
    calls: list[tuple[int, ...]] = []
    fetch = Array.to_numpy

    def counted(self: Array) -> np.ndarray:
        calls.append(self.shape)
        return fetch(self)

    monkeypatch.setattr(Array, "to_numpy", counted)
    return calls


def _data_vars(obj: Any) -> list[Any]:
    return list(obj.data_vars.values()) if isinstance(obj, xr.Dataset) else [obj]


def _same(got: Any, expected: Any) -> None:
    """``got`` (spartan-backed) equals ``expected`` (NumPy-backed): values, dtypes,
    dims, coordinates, names and attributes."""
    got = got.as_numpy()  # (the fetch)
    assert type(got) is type(expected)
    for g, e in zip(_data_vars(got), _data_vars(expected), strict=True):
        assert g.dtype == e.dtype, (g.name, g.dtype, e.dtype)
    xr.testing.assert_allclose(got, expected)
    assert got.attrs == expected.attrs


def _lazy(result: Any, fetches: list) -> None:
    """Every data variable is a spartan array, and nothing ran or came to the driver."""
    for var in _data_vars(result):
        assert type(var.data) is Array, (var.name, type(var.data))
    assert fetches == []
    stats = sp.stats()
    assert stats["bytes_to_driver"] == 0 and stats["tasks"] == 0, stats


Op = Callable[[Any], Any]

DATAARRAY_OPS: dict[str, Op] = {
    # arithmetic, ufuncs, comparisons
    "add": lambda d: d + 1,
    "radd-mul": lambda d: 2 * d * d - 1,
    "pow-neg-abs": lambda d: abs(-(d**2)),
    "compare": lambda d: d > 0.1,
    "broadcast": lambda d: d - d.isel(y=0),
    "align": lambda d: d + d.isel(x=slice(0, 3)),
    "numpy-ufunc": lambda d: np.exp(d) + np.sin(d),
    "xarray-ufunc": lambda d: xr.ufuncs.sqrt(abs(d)),
    "apply_ufunc": lambda d: xr.apply_ufunc(np.tanh, d),
    "astype": lambda d: d.astype(np.float32),
    "clip-round": lambda d: d.clip(-0.5, 0.5).round(2),
    # reductions (NaN-skipping by default, like xarray's)
    "mean-dim": lambda d: d.mean("x"),
    "mean-all": lambda d: d.mean(),
    "mean-noskip": lambda d: d.mean("y", skipna=False),
    "sum": lambda d: d.sum("y"),
    "sum-min_count": lambda d: d.sum("x", min_count=6),
    "std-ddof": lambda d: d.std("x", ddof=1),
    "var": lambda d: d.var(("x", "y")),
    "min-max": lambda d: d.max("y") - d.min("y"),
    "prod": lambda d: d.prod("x"),
    "median": lambda d: d.median("y"),
    "quantile": lambda d: d.quantile([0.25, 0.75], dim="x"),
    "count": lambda d: d.count("x"),
    "any-all": lambda d: (d > 0).any("x") & (d > -3).all("x"),
    "argmax": lambda d: d.fillna(0).argmax("y"),
    "idxmin": lambda d: d.idxmin("x"),
    "cumsum": lambda d: d.cumsum("y"),
    "reduce-np": lambda d: d.reduce(np.nansum, "x"),
    "keepdims": lambda d: d.mean("y", keepdims=True),
    # selection
    "isel-slice": lambda d: d.isel(x=slice(1, 5), y=slice(None, None, -2)),
    "isel-int": lambda d: d.isel(x=2),
    "isel-outer": lambda d: d.isel(x=[0, 4, 2], y=[1, 3]),
    "sel-label": lambda d: d.sel(x=30),
    "sel-slice": lambda d: d.sel(x=slice(20, 50), y=slice(1.0, 4.0)),
    "sel-list": lambda d: d.sel(y=[0.5, 6.0]),
    "sel-nearest": lambda d: d.sel(y=1.4, method="nearest"),
    "loc": lambda d: d.loc[20:40, 2.0:],
    "sel-coord-mask": lambda d: d.sel(x=d.x > 25),
    "head-tail-thin": lambda d: d.head(x=4).tail(y=6).thin(y=2),
    "drop_sel": lambda d: d.drop_sel(x=20),
    # shape
    "transpose": lambda d: d.transpose("y", "x"),
    ".T": lambda d: d.T,
    "expand_dims": lambda d: d.expand_dims(z=2).transpose("y", ...),
    "squeeze": lambda d: d.isel(x=[1]).squeeze(),
    "stack-unstack": lambda d: d.stack(z=("x", "y")).mean("z"),
    "concat": lambda d: xr.concat([d, d + 1], dim="x"),
    "concat-new-dim": lambda d: xr.concat([d, -d], dim="run"),
    "pad": lambda d: d.pad(y=(1, 2), constant_values=0.0),
    "shift-roll": lambda d: d.shift(y=1) + d.roll(x=2),
    "diff": lambda d: d.diff("y", n=2),
    "reindex": lambda d: d.reindex(x=[60, 10, 20, 25]),
    "sortby-coord": lambda d: d.sortby("x", ascending=False),
    # missing data
    "where": lambda d: d.where(d > 0),
    "where-other": lambda d: d.where(d > 0, -1.0),
    "where-coord": lambda d: d.where(d.x > 25),
    "xr.where": lambda d: xr.where(d > 0, d, -d),
    "isnull": lambda d: d.isnull() | d.notnull(),
    "fillna": lambda d: d.fillna(d.mean("x")),
    "combine_first": lambda d: d.combine_first(d * 0),
    "isin": lambda d: d.fillna(0).round().isin([0.0, 1.0]),
    # groupby, rolling, coarsen, resample, weighted
    "groupby-mean": lambda d: d.groupby("g").mean(),
    "groupby-sum-y": lambda d: d.groupby("lbl").sum(),
    "groupby-std": lambda d: d.groupby("g").std(),
    "groupby-median": lambda d: d.groupby("g").median(),
    "groupby-anomaly": lambda d: d.groupby("g") - d.groupby("g").mean(),
    "groupby-map": lambda d: d.groupby("g").map(lambda v: v / v.max()),
    "groupby-first-noskip": lambda d: d.groupby("g").first(skipna=False),
    "groupby_bins": lambda d: d.groupby_bins("x", [0, 25, 70]).mean(),
    "resample": lambda d: (
        d.assign_coords(x=np.datetime64("2020-01-28") + np.arange(6) * np.timedelta64(2, "D"))
        .resample(x="MS")
        .mean()
    ),
    "rolling-mean": lambda d: d.rolling(y=3).mean(),
    "rolling-center": lambda d: d.rolling(y=3, center=True, min_periods=1).sum(),
    "rolling-2d": lambda d: d.rolling(x=2, y=2).max(),
    "rolling-construct": lambda d: d.rolling(x=2).construct("w"),
    "cumulative": lambda d: d.cumulative("y").mean(),
    "coarsen": lambda d: d.drop_vars("lbl").coarsen(y=2).mean(),
    "coarsen-trim": lambda d: d.drop_vars("lbl").coarsen(x=4, boundary="trim").sum(),
    "weighted": lambda d: d.weighted(xr.DataArray(np.arange(1.0, 7.0), dims="x")).mean("x"),
    # linear algebra and calculus
    "dot": lambda d: d.fillna(0).dot(d.fillna(0), dim="y"),
    "matmul": lambda d: d.fillna(0) @ d.fillna(0).rename(x="x2"),
    "cov-corr": lambda d: xr.cov(d, d * 2, dim="y") + xr.corr(d, d**2, dim="y"),
    "differentiate": lambda d: d.differentiate("y"),
    "differentiate-2": lambda d: d.differentiate("x", edge_order=2),
    "integrate": lambda d: d.fillna(0).integrate("y"),
    # metadata only
    "rename-assign": lambda d: d.rename(x="xx").assign_coords(xx=np.arange(6) * 2),
    "swap_dims": lambda d: d.swap_dims(x="g"),
    "copy-deep": lambda d: d.copy(deep=True),
}

DATASET_OPS: dict[str, Op] = {
    "ds-arith": lambda ds: ds * 2 + ds,
    "ds-mean": lambda ds: ds.mean("x"),
    "ds-std": lambda ds: ds.std(),
    "ds-sel-isel": lambda ds: ds.sel(x=slice(20, 50)).isel(y=[0, 2]),
    "ds-where": lambda ds: ds.where(ds.x > 25),
    "ds-groupby": lambda ds: ds.groupby("g").mean(),
    "ds-transpose": lambda ds: ds.transpose("y", "x"),
    "ds-concat": lambda ds: xr.concat([ds, ds], "x"),
    "ds-map": lambda ds: ds.map(np.abs),
    "ds-assign": lambda ds: ds.assign(s=ds.i + ds.t),
    "ds-fillna": lambda ds: ds.where(ds.x > 25).fillna(-1),
    "ds-rolling": lambda ds: ds.rolling(y=2).mean(),
    "ds-reduce": lambda ds: ds.reduce(np.mean, "x"),
    "ds-int-where": lambda ds: ds.i.where(ds.i % 3 == 0).to_dataset(),  # int → float NaN
}


def _objects(make_spartan: Callable[[np.ndarray], Any]) -> tuple[Any, Any, Any, Any]:
    return (
        _dataarray(make_spartan(DATA)),
        _dataarray(DATA.copy()),
        _dataset(make_spartan(DATA), make_spartan(INTS), make_spartan(DATA[:, 0])),
        _dataset(DATA.copy(), INTS.copy(), DATA[:, 0].copy()),
    )


@pytest.mark.parametrize("name", list(DATAARRAY_OPS))
def test_dataarray_stays_lazy_and_equals_numpy(local, fetches, name):
    op = DATAARRAY_OPS[name]
    da, expected_da, _, _ = _objects(sp.array)
    sp.reset_stats()
    got = op(da)
    _lazy(got, fetches)
    _same(got, op(expected_da))


@pytest.mark.parametrize("name", list(DATASET_OPS))
def test_dataset_stays_lazy_and_equals_numpy(local, fetches, name):
    op = DATASET_OPS[name]
    _, _, ds, expected_ds = _objects(sp.array)
    sp.reset_stats()
    got = op(ds)
    _lazy(got, fetches)
    _same(got, op(expected_ds))


def test_values_to_numpy_and_asarray_fetch(local, fetches):
    """The explicit fetches: one whole-array fetch each, NumPy out, equal values."""
    da = _dataarray(sp.array(DATA))
    result = (da - da.mean("x")).groupby("g").mean()
    expected = (_dataarray(DATA) - _dataarray(DATA).mean("x")).groupby("g").mean()
    for fetch in (lambda r: r.values, lambda r: r.to_numpy(), np.asarray, lambda r: r.data[...]):
        fetches.clear()
        sp.reset_stats()
        out = fetch(result)
        if isinstance(out, Array):  # (indexing the data stays lazy: the last case)
            assert fetches == [] and sp.stats()["bytes_to_driver"] == 0
            out = np.asarray(out)
        else:
            assert len(fetches) == 1
            assert sp.stats()["bytes_to_driver"] >= expected.nbytes
        assert type(out) is np.ndarray
        np.testing.assert_allclose(out, expected.values)


def test_repr_fetches_only_the_printed_corners(local):
    """``repr``/``_repr_html_`` (a notebook cell) evaluate and print the corners of a
    large array, not the whole of it."""
    values = RNG.standard_normal((60, 80))
    da = xr.DataArray(sp.array(values), dims=("x", "y"))
    sp.reset_stats()
    text = repr(da * 2)
    assert "..." in text and f"{2 * values[0, 0]:.8f}"[:6] in text
    da._repr_html_()
    assert 0 < sp.stats()["bytes_to_driver"] < values.nbytes // 10
    assert repr(da.to_dataset(name="v")).count("...") >= 1


def test_compute_and_load_keep_the_spartan_array(local, fetches):
    """xarray's ``.compute()``/``.load()`` load lazy *backends* (files, dask); a spartan
    array is already in (distributed) memory, so they hand it back unchanged."""
    da = _dataarray(sp.array(DATA)) + 1
    sp.reset_stats()
    for out in (da.compute(), da.load()):
        assert type(out.data) is Array
    assert fetches == []


DATA_DEPENDENT: dict[str, Op] = {
    "where-drop": lambda d: d.where(d > 0.5, drop=True),
    "dropna": lambda d: d.dropna("x", how="any"),
    "sortby-data": lambda d: d.sortby(d.isel(y=0)),
    "isel-spartan-indexer": lambda d: d.isel(x=xr.DataArray(sp.array([5, 0, 3]), dims="x")),
}


@pytest.mark.parametrize("name", list(DATA_DEPENDENT))
def test_data_dependent_selection_fetches_only_the_labels(local, name):
    """Where the *shape* of the result depends on the data, xarray needs the selected
    labels in the driver: spartan fetches those (one value per label of the
    dimension), never the array."""
    op = DATA_DEPENDENT[name]
    values = RNG.standard_normal((40, 50))
    values[3, 4] = np.nan
    da = xr.DataArray(sp.array(values), dims=("x", "y"), coords={"x": np.arange(40)})
    sp.reset_stats()
    got = op(da)
    assert type(got.data) is Array
    assert sp.stats()["bytes_to_driver"] <= 8 * 50 * 3  # a few label vectors
    _same(got, op(xr.DataArray(values, dims=("x", "y"), coords={"x": np.arange(40)})))


@pytest.mark.parametrize("tiling", ["row", "column", "block"])
def test_tilings_give_the_same_answers(local, fetches, tiling):
    """The same xarray pipeline over arrays cut along either axis or both."""
    da = _dataarray(sp.array(DATA, tiling=tiling))
    expected = _dataarray(DATA)

    def pipeline(d: Any) -> Any:
        anomaly = d.groupby("g") - d.groupby("g").mean()
        return anomaly.rolling(y=3, min_periods=1).mean().where(d.x > 15).std("x")

    sp.reset_stats()
    got = pipeline(da)
    _lazy(got, fetches)
    _same(got, pipeline(expected))


SMALL_OPS = ["mean-dim", "where", "groupby-mean", "rolling-mean", "isel-outer", "differentiate"]


@pytest.mark.parametrize("name", SMALL_OPS)
def test_small_arrays_held_in_the_driver(local, name):
    """Below ``local_below_bytes`` spartan computes with NumPy in the driver: xarray's
    calls take that path too, and the data stays a spartan array."""
    old = sp.config.local_below_bytes
    sp.config.local_below_bytes = 1 << 20
    try:
        da = _dataarray(sp.array(DATA))
        assert da.data.tiling is None  # held in the driver
        got = DATAARRAY_OPS[name](da)
        assert type(got.data) is Array
        _same(got, DATAARRAY_OPS[name](_dataarray(DATA)))
    finally:
        sp.config.local_below_bytes = old


# ---- Ray ----------------------------------------------------------------------------------


def test_on_ray_dataarray_pipeline(on_ray):
    """The same calls on Ray workers: lazy until ``.values``, then equal to NumPy's."""
    values = RNG.standard_normal((30, 40))
    coords = {"x": np.arange(30), "g": ("x", np.arange(30) % 4)}
    da = xr.DataArray(sp.array(values), dims=("x", "y"), coords=coords)
    expected = xr.DataArray(values, dims=("x", "y"), coords=coords)

    def pipeline(d: Any) -> Any:
        clim = d.groupby("g").mean()
        return (d.groupby("g") - clim).where(d > -1).isel(y=slice(2, 30)).mean("y")

    sp.reset_stats()
    got = pipeline(da)
    assert type(got.data) is Array
    assert sp.stats()["bytes_to_driver"] == 0
    np.testing.assert_allclose(got.values, pipeline(expected).values)


def test_on_ray_dataset_reductions_and_rolling(on_ray):
    values = RNG.standard_normal((24, 16))
    ds = xr.Dataset({"a": (("x", "y"), sp.array(values)), "b": (("x", "y"), sp.array(values * 2))})
    expected = xr.Dataset({"a": (("x", "y"), values), "b": (("x", "y"), values * 2)})
    sp.reset_stats()
    got = (ds.rolling(x=3).mean() + ds.std("y")).sum("x")
    for var in got.data_vars.values():
        assert type(var.data) is Array
    assert sp.stats()["bytes_to_driver"] == 0
    xr.testing.assert_allclose(
        got.as_numpy(), (expected.rolling(x=3).mean() + expected.std("y")).sum("x")
    )


# ---- limits (docs: the xarray calls spartan arrays cannot take, and why) --------------------


def test_vectorized_indexing_is_refused_by_xarray(local, fetches):
    """Pointwise (vectorized) indexing: xarray's adapter for array-API arrays refuses it
    before spartan sees the key. Orthogonal indexing and spartan's own fancy indexing
    on ``.data`` do the job."""
    da = _dataarray(sp.array(DATA))
    points = {"x": xr.DataArray([0, 2, 5], dims="p"), "y": xr.DataArray([1, 1, 7], dims="p")}
    with pytest.raises(TypeError, match="Vectorized indexing is not supported"):
        da.isel(points)
    pointwise = xr.DataArray(da.data[[0, 2, 5], [1, 1, 7]], dims="p")
    assert type(pointwise.data) is Array and fetches == []
    np.testing.assert_allclose(pointwise.values, DATA[[0, 2, 5], [1, 1, 7]])


HANDED_TO_NUMPY: dict[str, Op] = {
    "interp": lambda d: d.interp(x=[15, 25]),  # scipy.interpolate: np.asarray
    "interpolate_na": lambda d: d.interpolate_na("y"),  # a NumPy-only loop
    "groupby-first": lambda d: d.groupby("g").first(),  # pandas.isnull
    "np.nansum": lambda d: np.nansum(d),  # a DataArray has no __array_function__
}


@pytest.mark.parametrize("name", list(HANDED_TO_NUMPY))
def test_calls_that_hand_the_data_to_numpy_only_code(local, fetches, name):
    """xarray calls that give the data to NumPy-only code (SciPy, pandas, a NumPy
    function called on the DataArray): the array is fetched through ``__array__``, as
    for ``.values``, and the answer is NumPy's. The limits list names the lazy way for
    each (``skipna=False``, ``da.sum()``...)."""
    op = HANDED_TO_NUMPY[name]
    got = op(_dataarray(sp.array(DATA)))
    assert fetches, "fetched: if this now stays lazy, update the xarray limits list"
    expected = op(_dataarray(DATA))
    np.testing.assert_allclose(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("name", list(HANDED_TO_NUMPY))
def test_gathers_are_never_silent(local, monkeypatch, name):
    """Each call above gathers through ``numpy.asarray``: past
    ``config.implicit_fetch_bytes`` that warns, naming the caller, and with
    ``config.implicit_fetch = "raise"`` it is a TypeError at the xarray call."""
    from spartan import config

    monkeypatch.setattr(config, "implicit_fetch_bytes", 0)
    op = HANDED_TO_NUMPY[name]
    monkeypatch.setattr(config, "implicit_fetch", "warn")
    with pytest.warns(sp.ImplicitFetchWarning, match="fetches a distributed spartan array"):
        op(_dataarray(sp.array(DATA)))
    monkeypatch.setattr(config, "implicit_fetch", "raise")
    with pytest.raises(TypeError, match="implicit_fetch is 'raise'"):
        op(_dataarray(sp.array(DATA)))
