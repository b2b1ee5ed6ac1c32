"""Order statistics and counting: median, percentile, quantile, average, bincount,
histogram.

Along axes, order statistics run lane by lane in one ``join_update``
(:func:`~spartan.frontend.alongaxis.along_axes`); over the whole array they read a few
ranks of the distributed sample sort, so nothing is gathered. ``bincount`` and
``histogram`` add per-tile counts with a ``join_update`` (only counts travel).

>>> float(sp.median(x))
2.5
>>> sp.percentile(x, [0, 100], axis=0)
array([[0., 1., 2.],
       [3., 4., 5.]])
>>> sp.bincount(sp.asarray([0, 1, 1, 3]))
array([1, 2, 0, 1])
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
import warnings
from typing import Any

import numpy as np

from spartan.frontend.alongaxis import along_axes
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray
from spartan.frontend.join_update import JoinUpdate
from spartan.frontend.reductions import _out, keep_dims, normalize_axes
from spartan.frontend.sorting import sort
from spartan.frontend.ufuncs import elementwise

_METHODS = (
    "linear",
    "lower",
    "higher",
    "nearest",
    "midpoint",
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "median_unbiased",
    "normal_unbiased",
)


def _lanes_quantile(q: np.ndarray, method: str, nan: bool, m: np.ndarray) -> np.ndarray:
    fn = np.nanquantile if nan else np.quantile
    with np.errstate(all="ignore"):
        out = fn(m, q, axis=1, method=method)
    return np.moveaxis(np.asarray(out), -1, 0) if q.ndim else out


def _lanes_median(nan: bool, m: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (an empty lane: NaN, as in NumPy)
        return (np.nanmedian if nan else np.median)(m, axis=1)


def _ranked(s: Array, q: np.ndarray, method: str, dtype: np.dtype) -> Array:
    """Quantiles ``q`` of the sorted 1-d ``s`` by reading a few ranks (views)."""
    from spartan.frontend.manipulation import stack

    n = s.shape[0]
    vals = []
    for qi in q.ravel():
        # NumPy's own rule on a stand-in of n ranks gives the two ranks and the weight
        probe = np.quantile(np.arange(n, dtype=np.float64), qi, method=method)
        lo = int(math.floor(probe))
        hi = min(lo + 1, n - 1)
        frac = probe - lo
        a = s[lo].astype(dtype)
        vals.append(a if frac == 0 else a + (s[hi].astype(dtype) - a) * frac)
    out = stack(vals) if vals else s[:0].astype(dtype)
    return out.reshape(q.shape)


def _result_dtype(name: str, dtype: np.dtype, q_user: Any, method: str) -> np.dtype:
    """NumPy's own result dtype (it depends on whether ``q`` is a scalar or a list)."""
    probe = np.ones(2, dtype)
    with np.errstate(all="ignore"):
        if name in ("median", "nanmedian"):
            return getattr(np, name)(probe).dtype
        q = q_user.to_numpy() if isinstance(q_user, Array) else q_user
        return np.asarray(getattr(np, name)(probe, q, method=method)).dtype


def _quantile(
    a: Any,
    q: Any,
    axis: Any,
    method: str,
    keepdims: bool,
    nan: bool,
    out: Any,
    name: str,
    q_user: Any = 0.5,
) -> Any:
    if method not in _METHODS:
        raise ValueError(f"'{method}' is not a valid method. Use one of: {_METHODS}")
    x = asarray(a)
    q = np.asanyarray(q, dtype=np.float64) if not isinstance(q, Array) else q.to_numpy()
    if np.any((q < 0) | (q > 1)) or np.any(np.isnan(q)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    axes = normalize_axes(axis, x.ndim)
    dtype = _result_dtype(name, x.dtype, q_user, method)
    kept = [i for i in range(x.ndim) if i not in axes]
    if x.size == 0 and not kept:
        if name in ("quantile", "percentile"):  # NumPy's own error for an empty array
            raise IndexError("index -1 is out of bounds for axis 0 with size 0")
        from spartan.frontend.creation import full

        result = full(q.shape, np.nan, dtype=dtype)  # median, nan*: NaN like NumPy
    elif kept or nan or x.size == 0:
        fn = functools.partial(_lanes_quantile, q, method, nan)
        if name in ("median", "nanmedian"):  # NumPy's median takes booleans and empty lanes
            fn = functools.partial(_lanes_median, nan)
        result = along_axes(fn, x, axes, q.shape, dtype, name=name)
        if q.ndim:  # NumPy puts the quantile axes first
            nq, nk = q.ndim, result.ndim - q.ndim
            result = result.transpose(tuple(range(nk, nk + nq)) + tuple(range(nk)))
    else:
        s = sort(x.ravel())
        result = _ranked(s, q, method, dtype)
        if x.dtype.kind in "fc":  # a NaN anywhere makes the result NaN, as in NumPy
            last = s[x.size - 1]
            result = elementwise(np.where, elementwise(np.isnan, last), np.nan, result)
            result = result.astype(dtype)
    if keepdims:
        result = keep_dims(result, [q.ndim + i for i in axes], q.ndim + x.ndim)
    return _out(result, out)


def quantile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
    interpolation: Any = None,
) -> Any:
    """The ``q``-th quantiles (``0 <= q <= 1``) along ``axis`` (see :func:`numpy.quantile`)."""
    if weights is not None:
        raise TypeError("spartan.quantile does not take weights")
    return _quantile(a, q, axis, interpolation or method, keepdims, False, out, "quantile", q)


def percentile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    *,
    weights: Any = None,
    interpolation: Any = None,
) -> Any:
    """The ``q``-th percentiles (``0 <= q <= 100``) along ``axis``."""
    if weights is not None:
        raise TypeError("spartan.percentile does not take weights")
    qq = np.true_divide(np.asanyarray(q, dtype=np.float64), 100)
    if np.any((qq < 0) | (qq > 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantile(a, qq, axis, interpolation or method, keepdims, False, out, "percentile", q)


def median(
    a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False
) -> Any:
    """The median along ``axis`` (NaN if the lane holds a NaN, like NumPy)."""
    return _quantile(a, 0.5, axis, "linear", keepdims, False, out, "median")


def nanquantile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    **kw: Any,
) -> Any:
    """Quantiles ignoring NaN."""
    return _quantile(
        a,
        np.asanyarray(q, dtype=np.float64),
        axis,
        method,
        keepdims,
        True,
        out,
        "nanquantile",
        q,
    )


def nanpercentile(
    a: Any,
    q: Any,
    axis: Any = None,
    out: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    **kw: Any,
) -> Any:
    """Percentiles ignoring NaN."""
    qq = np.true_divide(np.asanyarray(q, dtype=np.float64), 100)
    if np.any((qq < 0) | (qq > 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantile(a, qq, axis, method, keepdims, True, out, "nanpercentile", q)


def nanmedian(
    a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False, keepdims: bool = False
) -> Any:
    """The median ignoring NaN."""
    return _quantile(a, 0.5, axis, "linear", keepdims, True, out, "nanmedian")


def average(
    a: Any,
    axis: Any = None,
    weights: Any = None,
    returned: bool = False,
    *,
    keepdims: Any = np._NoValue,
) -> Any:
    """Weighted mean along ``axis`` (see :func:`numpy.average`); with ``returned``, also
    the sum of the weights (the element count without weights), of the result's shape.

    Weights summing to zero raise NumPy's ``ZeroDivisionError``: that check reads the
    sums of the weights (one small reduction, forced).

    >>> sp.average(sp.arange(4.0), weights=[1, 1, 1, 5]).item()
    2.25
    """
    from spartan.frontend.manipulation import broadcast_to
    from spartan.frontend.reductions import any as _any
    from spartan.frontend.reductions import mean
    from spartan.frontend.reductions import sum as _sum

    x = asarray(a)
    kd = {} if keepdims is np._NoValue else {"keepdims": keepdims}
    if weights is None:
        avg = mean(x, axis, **kd)
        if not returned:
            return avg
        count = np.asarray(avg.dtype.type(x.size / max(avg.size, 1)))
        return avg, broadcast_to(asarray(count), avg.shape).copy()
    w = asarray(weights)
    user_axes: tuple[int, ...] | None = None
    if axis is not None:
        one = axis if isinstance(axis, (tuple, list)) else (axis,)
        user_axes = tuple(normalize_axes(i, x.ndim)[0] for i in one)  # in the user's order
        if len(set(user_axes)) != len(user_axes):
            raise ValueError("repeated axis")
    axes = normalize_axes(axis, x.ndim)
    if w.shape != x.shape:
        if user_axes is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if w.shape != tuple(x.shape[i] for i in user_axes):
            raise ValueError(
                "Shape of weights must be consistent with shape of a along specified axis."
            )
        # the weights' axes follow the user's axis order: put them in the array's order
        w = w.transpose(list(np.argsort(user_axes)))
        w = w.reshape(tuple(x.shape[i] if i in axes else 1 for i in range(x.ndim)))
    if x.dtype.kind in "biu":
        rdtype = np.result_type(x.dtype, w.dtype, np.float64)
    else:
        rdtype = np.result_type(x.dtype, w.dtype)
    scl = _sum(broadcast_to(w, x.shape).astype(rdtype), axes, **kd)
    if bool(_any(scl == 0.0)):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    total = _sum(x.astype(rdtype) * w.astype(rdtype), axes, **kd)
    avg = elementwise(np.true_divide, total, scl)
    if returned:
        return avg, scl
    return avg


class _BinCount:
    def __init__(self, length: int, weighted: bool):
        self.length, self.weighted = length, weighted

    def __call__(self, extents, x: np.ndarray, *w: np.ndarray):
        counts = np.bincount(x, weights=w[0] if self.weighted else None, minlength=self.length)
        return [((), counts)]


def bincount(x: Any, weights: Any = None, minlength: int = 0) -> Array:
    """Occurrences of each non-negative integer (summed weights with ``weights``).

    The output length is ``max(x) + 1``: one forced scalar reduction gives it (the
    documented data-dependent step); the counts of every tile are then added by a
    ``join_update`` (communication: one count vector per tile).
    """
    from spartan.frontend.reductions import max as _max
    from spartan.frontend.reductions import min as _min

    v = asarray(x)
    if v.ndim != 1:
        raise ValueError("object too deep for desired array")
    if v.dtype.kind not in "biu":
        raise TypeError(
            "Cannot cast array data from dtype('float64') to dtype('int64') "
            "according to the rule 'safe'"
        )
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    length = minlength
    if v.size:
        if int(_min(v)) < 0:
            raise ValueError("'list' argument must have no negative elements")
        length = max(length, int(_max(v)) + 1)
    inputs = [v._expr]
    dtype = np.intp
    if weights is not None:
        w = asarray(weights)
        if w.shape != v.shape:
            raise ValueError("The weights and list don't have the same length.")
        inputs.append(w.astype(np.float64)._expr)
        dtype = np.float64
    expr = JoinUpdate(
        _BinCount(length, weights is not None),
        np.add,
        inputs,
        [0] * len(inputs),
        (length,),
        dtype,
        name="bincount",
    )
    return Array(expr)


class _Histogram:
    def __init__(self, edges: np.ndarray, weighted: bool):
        self.edges, self.weighted = edges, weighted

    def __call__(self, extents, x: np.ndarray, *w: np.ndarray):
        h, _ = np.histogram(x, self.edges, weights=w[0] if self.weighted else None)
        return [((), h)]


def histogram(
    a: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[Array, np.ndarray]:
    """Counts of ``a`` in ``bins`` and the bin edges (see :func:`numpy.histogram`).

    The edges come from :func:`histogram_bin_edges` (small driver-side data); per-tile
    histograms are added by a ``join_update``.
    """
    x = asarray(a).ravel()
    edges = histogram_bin_edges(x, bins, range)
    inputs = [x._expr]
    dtype = np.intp
    if weights is not None:
        w = asarray(weights).ravel()
        if w.shape != x.shape:
            raise ValueError("weights should have the same shape as a.")
        inputs.append(w._expr)
        dtype = np.result_type(w.dtype, np.float64) if w.dtype.kind in "f" else w.dtype
    expr = JoinUpdate(
        _Histogram(edges, weights is not None),
        np.add,
        inputs,
        [0] * len(inputs),
        (len(edges) - 1,),
        dtype,
        name="histogram",
    )
    hist = Array(expr)
    if density:
        widths = np.diff(edges).astype(np.float64)
        from spartan.frontend.reductions import sum as _sum

        hist = hist / _sum(hist) / widths
    return hist, edges


def _sample_weights(v: Any, n: int, name: str) -> Any:
    """``fweights``/``aweights`` as float64, checked as NumPy checks them (a spartan
    array's checks are small forced reductions; NumPy's arrays are checked here)."""
    if isinstance(v, Array):
        from spartan.frontend.reductions import all as _all
        from spartan.frontend.reductions import any as _any

        w = v.astype(np.float64)
        is_integral = lambda: bool(_all(w == np.round(w)))  # noqa: E731
        is_negative = lambda: bool(_any(w < 0))  # noqa: E731
    else:
        w = np.asarray(v, dtype=float)
        is_integral = lambda: bool(np.all(w == np.around(w)))  # noqa: E731
        is_negative = lambda: bool(np.any(w < 0))  # noqa: E731
    if name == "fweights" and not is_integral():
        raise TypeError("fweights must be integer")
    if w.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if w.shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if is_negative():
        raise ValueError(f"{name} cannot be negative")
    return w


def cov(
    m: Any,
    y: Any = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: Any = None,
    fweights: Any = None,
    aweights: Any = None,
    *,
    dtype: Any = None,
) -> Array:
    """Covariance matrix of the rows (variables) of ``m`` (see :func:`numpy.cov`): a
    ``dot`` of the centred data, with frequency (``fweights``) and reliability
    (``aweights``) weights of the samples as NumPy.

    With weights, the normalisation reads the weights' sum (one forced scalar), as
    NumPy warns when it is not positive.

    >>> sp.cov(sp.random.rand(3, 100), aweights=sp.ones(100)).shape
    (3, 3)
    """
    from spartan.frontend.manipulation import concatenate
    from spartan.frontend.products import dot
    from spartan.frontend.reductions import sum as _sum

    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    x = asarray(m)
    if x.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    yy = None
    if y is not None:
        yy = asarray(y)
        if yy.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(x.dtype, *([yy.dtype] if yy is not None else []), np.float64)
    X = x.astype(dtype).reshape((1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x.astype(dtype)
    if not rowvar and x.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return asarray(np.array([]).reshape(0, 0))
    if yy is not None:
        Y = yy.astype(dtype)
        Y = Y.reshape((1,) * (2 - Y.ndim) + Y.shape) if Y.ndim < 2 else Y
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = concatenate([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = X.shape[1]
    w = aw = None
    if fweights is not None:
        w = _sample_weights(fweights, n, "fweights")
    if aweights is not None:
        aw = _sample_weights(aweights, n, "aweights")
        w = aw if w is None else w * aw
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    if w is None:
        fact = n - ddof
    else:
        # one scalar, read: NumPy's warning below depends on it, and a Python number
        # keeps the result's dtype (a float64 array would promote a float32 result)
        w_sum = float(w_sum[0])
        if ddof == 0:
            fact = w_sum
        elif aw is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * float(_sum(w * aw)) / w_sum
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    X = X - avg[:, None]
    X_T = (X if w is None else X * w).T
    c = dot(X, X_T.conj() if X_T.dtype.kind == "c" else X_T)
    with np.errstate(divide="ignore"):
        scale = np.true_divide(1, fact)
    # NumPy scales in place (c *= scale): computed with the float64 scale, kept in c's dtype
    return (c * scale).astype(c.dtype, copy=False).squeeze()


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, *, dtype: Any = None) -> Array:
    """Pearson correlation coefficients: ``cov`` normalised by the standard deviations,
    real and imaginary parts clipped to [-1, 1] as NumPy.

    >>> sp.corrcoef(sp.random.rand(3, 100)).shape
    (3, 3)
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    from spartan.frontend.elementwise import clip
    from spartan.frontend.products import diagonal

    d = np.sqrt(diagonal(c).real)
    out = c / d[:, None] / d[None, :]
    if out.dtype.kind != "c":
        return clip(out, -1, 1)
    return clip(out.real, -1, 1) + 1j * clip(out.imag, -1, 1)


_RULES = ("auto", "fd", "doane", "rice", "scott", "sqrt", "sturges")


def _rule_width(rule: str, x: Array, ptp: float) -> float:
    """NumPy's bin width estimators, from forced scalar statistics of ``x`` (``ptp``
    is the data's own range)."""
    from spartan.frontend.reductions import mean, std

    n = x.size
    if rule == "sqrt":
        return ptp / np.sqrt(n)
    if rule == "sturges":
        return ptp / (np.log2(n) + 1.0)
    if rule == "rice":
        return ptp / (2.0 * n ** (1.0 / 3))
    if rule == "scott":
        return (24.0 * np.pi**0.5 / n) ** (1.0 / 3.0) * float(std(x))
    if rule == "fd":
        q75, q25 = (float(v) for v in percentile(x, [75, 25]).to_numpy())
        return 2.0 * (q75 - q25) * n ** (-1.0 / 3.0)
    if rule == "doane":
        if n <= 2:
            return 0.0
        sg1 = np.sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)))
        sigma = float(std(x))
        if sigma <= 0:
            return 0.0
        g1 = float(mean(((x - mean(x)) / sigma) ** 3))
        return ptp / (1.0 + np.log2(n) + np.log2(1.0 + abs(g1) / sg1))
    fd = _rule_width("fd", x, ptp)
    sturges = _rule_width("sturges", x, ptp)
    return min(fd, sturges) if fd else sturges


def histogram_bin_edges(
    a: Any, bins: Any = 10, range: Any = None, weights: Any = None
) -> np.ndarray:
    """The bin edges :func:`histogram` uses: a count, explicit edges, or one of NumPy's
    rules (``auto``, ``fd``, ``doane``, ``rice``, ``scott``, ``sqrt``, ``sturges``).

    Data-dependent edges come from forced scalars (min, max and, for the rules, std,
    quartiles or skewness); the edges themselves are small driver-side data."""
    from spartan.frontend.indexing import compress_mask
    from spartan.frontend.reductions import max as _max
    from spartan.frontend.reductions import min as _min

    x = asarray(a).ravel()
    if np.ndim(bins) == 1:
        edges = np.asarray(bins)
        if np.any(edges[:-1] > edges[1:]):
            raise ValueError("`bins` must increase monotonically, when an array")
        return edges
    if isinstance(bins, str) and bins not in _RULES:
        raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
    if range is None:
        lo, hi = (float(_min(x)), float(_max(x))) if x.size else (0.0, 1.0)
    else:
        lo, hi = (float(v) for v in range)
        if lo > hi:
            raise ValueError("max must be larger than min in range parameter.")
    data_lo, data_hi = lo, hi
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    if isinstance(bins, str):
        if weights is not None:
            raise TypeError(
                "Automated estimation of the number of bins is not supported for weighted data"
            )
        data = x
        if range is not None:  # NumPy estimates from the data inside the range
            data = compress_mask(x, (x >= lo) & (x <= hi))
            data_lo, data_hi = (float(_min(data)), float(_max(data))) if data.size else (0, 0)
        width = _rule_width(bins, data, data_hi - data_lo) if data.size else 0.0
        if width and x.dtype.kind in "iu" and width < 1:
            width = 1
        count = int(np.ceil((hi - lo) / width)) if width else 1
    else:
        count = operator.index(bins)
        if count < 1:
            raise ValueError("`bins` must be positive, when an integer")
    return np.histogram_bin_edges(np.array([lo, hi]), count, range=(lo, hi))


class _HistogramDD:
    def __init__(self, edges: list[np.ndarray], weighted: bool):
        self.edges, self.weighted = edges, weighted

    def __call__(self, extents, sample: np.ndarray, *w: np.ndarray):
        h, _ = np.histogramdd(sample, self.edges, weights=w[0] if self.weighted else None)
        return [((), h)]


def histogramdd(
    sample: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[Array, list[np.ndarray]]:
    """Multidimensional histogram of ``(N, D)`` samples: per-tile counts added by a
    ``join_update``; bin edges from forced per-column min/max without ``range``."""
    from spartan.frontend.manipulation import stack
    from spartan.frontend.reductions import max as _max
    from spartan.frontend.reductions import min as _min

    if isinstance(sample, (list, tuple)):
        x = stack([asarray(s) for s in sample], axis=1)
    else:
        x = asarray(sample)
        x = x.reshape(-1, 1) if x.ndim == 1 else x
    n, d = x.shape
    bins_per = list(bins) if np.ndim(bins) or isinstance(bins, (list, tuple)) else [bins] * d
    if len(bins_per) != d:
        raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    if range is None and any(np.ndim(b) == 0 for b in bins_per):
        lo = _min(x, axis=0).to_numpy() if n else np.zeros(d)
        hi = _max(x, axis=0).to_numpy() if n else np.ones(d)
        range = list(zip(lo, hi))
    edges = []
    for i, b in enumerate(bins_per):
        if np.ndim(b) == 0:
            lo_i, hi_i = range[i]
            edges.append(np.histogram_bin_edges(np.array([lo_i, hi_i]), int(b), range=(lo_i, hi_i)))
        else:
            edges.append(np.asarray(b, dtype=float))
    inputs = [x._expr]
    if weights is not None:
        inputs.append(asarray(weights).astype(np.float64)._expr)
    shape = tuple(len(e) - 1 for e in edges)
    hist = Array(
        JoinUpdate(
            _HistogramDD(edges, weights is not None),
            np.add,
            inputs,
            [0] * len(inputs),
            shape,
            np.float64,
            name="histogramdd",
        )
    )
    if density:
        from spartan.frontend.reductions import sum as _sum

        vol = np.ones(shape)
        for i, e in enumerate(edges):
            vol = vol * np.diff(e).reshape([-1 if j == i else 1 for j in builtins.range(d)])
        hist = hist / _sum(hist) / vol
    return hist, edges


def histogram2d(
    x: Any, y: Any, bins: Any = 10, range: Any = None, density: Any = None, weights: Any = None
) -> tuple[Array, np.ndarray, np.ndarray]:
    """Two-dimensional histogram (see :func:`histogramdd`)."""
    if np.ndim(bins) == 1 and len(bins) != 2:
        bins = [bins, bins]
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]
