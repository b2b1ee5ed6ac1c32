"""Random arrays that do not depend on tiling or worker count.

Each value is a counter-based hash (SplitMix64) of the stream key and the element's
global flat index, so ``seed(0); rand(n)`` gives the same array on 1 or 64 workers.

>>> sp.random.seed(0); a = sp.random.rand(4, 3)
"""

from __future__ import annotations

import functools
import itertools
import operator
from typing import Any

import numpy as np

from spartan.frontend.array import Array
from spartan.frontend.creation import newarray, normalize_shape
from spartan.tiling import Box

_M = np.uint64(0xFFFFFFFFFFFFFFFF)


def _flat_indices(box: Box, shape: tuple[int, ...]) -> np.ndarray:
    if not shape:
        return np.zeros((), np.uint64)
    grids = np.ix_(*[np.arange(lo, hi, dtype=np.uint64) for lo, hi in box])
    flat = np.zeros([hi - lo for lo, hi in box], np.uint64)
    stride = 1
    for g, n in zip(reversed(grids), reversed(shape)):
        flat += g * np.uint64(stride)
        stride *= n
    return flat


def _splitmix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _uniform_bits(key: int, shape: tuple[int, ...], box: Box, lane: int = 0) -> np.ndarray:
    with np.errstate(over="ignore"):
        counter = _flat_indices(box, shape) * np.uint64(2) + np.uint64(lane)
        return _splitmix(counter ^ np.uint64(key))


def _to_unit(bits: np.ndarray) -> np.ndarray:
    """53 random bits as a float in [0, 1)."""
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def _uniform(key: int, shape, low: float, high: float, box: Box, dtype) -> np.ndarray:
    u = _to_unit(_uniform_bits(key, shape, box))
    return (low + (high - low) * u).astype(dtype)


def _normal(key: int, shape, loc: float, scale: float, box: Box, dtype) -> np.ndarray:
    u1 = 1.0 - _to_unit(_uniform_bits(key, shape, box, 0))  # (0, 1]: log is finite
    u2 = _to_unit(_uniform_bits(key, shape, box, 1))
    z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return (loc + scale * z).astype(dtype)


def _integers(key: int, shape, low: int, high: int, box: Box, dtype) -> np.ndarray:
    """Integers in [low, high). The span may be up to 2**64 (int64's or uint64's whole
    range): the sum is taken in wrapping uint64 arithmetic and read back in ``dtype``."""
    bits = _uniform_bits(key, shape, box)
    span = high - low
    offset = bits if span == 1 << 64 else bits % np.uint64(span)
    with np.errstate(over="ignore"):
        wrapped = offset + np.uint64(low % (1 << 64))
    return (wrapped.view(np.int64) if low < 0 else wrapped).astype(dtype)


def _exponential(key: int, shape, scale: float, box: Box, dtype) -> np.ndarray:
    u = 1.0 - _to_unit(_uniform_bits(key, shape, box))  # (0, 1]: log is finite
    return (-scale * np.log(u)).astype(dtype)


def _open_unit(key: int, shape, box: Box, dtype=np.float64) -> np.ndarray:
    """Uniforms in (0, 1) (the inverse CDFs are finite there)."""
    return (_to_unit(_uniform_bits(key, shape, box)) + 0.5 / (1 << 53)).astype(np.float64)


def _ppf(kind: str, name: str, dtype: Any, u: np.ndarray, *params: Any) -> np.ndarray:
    """The distribution ``name`` at the uniforms ``u`` by its inverse CDF: spartan's own
    (``kind == "quantile"``) or SciPy's ``ppf`` (``"scipy"``), its parameters scalars or
    arrays broadcast against ``u``."""
    with np.errstate(all="ignore"):
        if kind == "quantile":
            out = _QUANTILES[name](u, *params)
        else:
            import scipy.stats

            out = getattr(scipy.stats, name).ppf(u, *params)
    return np.asarray(out).astype(dtype)


def _inverse_cdf(key: int, shape, name: str, params: tuple, box: Box, dtype) -> np.ndarray:
    """A distribution by inverting its CDF at a uniform in (0, 1)."""
    return _ppf("quantile", name, dtype, _open_unit(key, shape, box), *params)


def _triangular(u, left, mode, right):
    with np.errstate(all="ignore"):
        c = np.where(right > left, (mode - left) / (right - left), 0.5)
    return np.where(
        u < c,
        left + np.sqrt(u * (right - left) * (mode - left)),
        right - np.sqrt((1 - u) * (right - left) * (right - mode)),
    )


_QUANTILES = {
    "laplace": lambda u, loc, s: loc - s * np.sign(u - 0.5) * np.log1p(-2 * np.abs(u - 0.5)),
    "logistic": lambda u, loc, s: loc + s * np.log(u / (1 - u)),
    "gumbel": lambda u, loc, s: loc - s * np.log(-np.log(u)),
    "rayleigh": lambda u, s: s * np.sqrt(-2 * np.log(u)),
    "weibull": lambda u, a: (-np.log(u)) ** (1.0 / a),
    "pareto": lambda u, a: u ** (-1.0 / a) - 1,
    "power": lambda u, a: u ** (1.0 / a),
    "standard_cauchy": lambda u: np.tan(np.pi * (u - 0.5)),
    "triangular": _triangular,
    "geometric": lambda u, p: np.maximum(1, np.ceil(np.log(u) / np.log1p(-p))),
}


def _vonmises(u: np.ndarray, mu: Any, kappa: Any) -> np.ndarray:
    """The von Mises distribution's inverse CDF (SciPy's), centred on ``mu`` and wrapped
    to [-pi, pi) as NumPy's draws are; ``kappa == 0`` is the uniform circle."""
    import scipy.stats

    kappa = np.asarray(kappa, dtype=np.float64)
    safe = np.where(kappa > 0, kappa, 1.0)
    x = np.where(kappa > 0, scipy.stats.vonmises.ppf(u, safe), 2 * np.pi * u - np.pi)
    return np.mod(x + mu + np.pi, 2 * np.pi) - np.pi


_QUANTILES["vonmises"] = _vonmises


def _scipy_quantile(key: int, shape, dist: str, params: tuple, box: Box, dtype) -> np.ndarray:
    """A distribution by SciPy's inverse CDF (``ppf``) at a uniform in (0, 1)."""
    return _ppf("scipy", dist, dtype, _open_unit(key, shape, box), *params)


def _affine(dtype: Any, z: np.ndarray, loc: Any, scale: Any) -> np.ndarray:
    """``loc + scale * z`` (a standard variate moved and scaled), as the scalar paths."""
    return (loc + scale * z).astype(dtype)


def _between(dtype: Any, u: np.ndarray, low: Any, high: Any) -> np.ndarray:
    return (low + (high - low) * u).astype(dtype)


def _int_in(dtype: Any, bits: np.ndarray, low: Any, high: Any) -> np.ndarray:
    """Integers in ``[low, high)`` from 64 random bits each (as ``_integers``)."""
    low = np.asarray(low, dtype=np.int64)
    span = (np.asarray(high, dtype=np.int64) - low).astype(np.uint64)
    return (low + (bits % np.maximum(span, np.uint64(1))).astype(np.int64)).astype(dtype)


def _bits(key: int, shape, box: Box, dtype=np.uint64) -> np.ndarray:
    return _uniform_bits(key, shape, box)


def _hypergeom_ppf_frac(total: int, good: int, u: np.ndarray, left: np.ndarray) -> np.ndarray:
    import scipy.stats

    with np.errstate(all="ignore"):
        return np.nan_to_num(scipy.stats.hypergeom.ppf(u, total, good, left)).astype(np.int64)


def _binomial_ppf_frac(p: float, u: np.ndarray, n: np.ndarray) -> np.ndarray:
    import scipy.stats

    with np.errstate(all="ignore"):
        return np.nan_to_num(scipy.stats.binom.ppf(u, n, p)).astype(np.int64)


def _size(size: Any) -> tuple[int, ...]:
    return () if size is None else normalize_shape(size)


def _is_array(v: Any) -> bool:
    """A parameter that varies by element (drawn element-wise), not one scalar."""
    return isinstance(v, Array) or np.ndim(v) > 0


def _param(v: Any) -> Any:
    """A parameter as the draws take it: spartan arrays as they are, anything else
    array-like as a NumPy array, scalars as they are."""
    if isinstance(v, Array) or np.ndim(v) == 0:
        return v
    return np.asarray(v)


def _shape_of(size: Any, params: tuple) -> tuple[int, ...]:
    """The shape of the draws: ``size``, which the parameters must broadcast to, or
    their broadcast shape (NumPy's rule for every distribution)."""
    shapes = [tuple(np.shape(p)) if not isinstance(p, Array) else p.shape for p in params]
    try:
        common = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(
            "shape mismatch: objects cannot be broadcast to a single shape: the "
            f"parameters have shapes {', '.join(map(str, shapes))}"
        ) from None
    if size is None:
        return common
    shape = _size(size)
    try:
        ok = tuple(np.broadcast_shapes(shape, common)) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"shape mismatch: objects cannot be broadcast to a single shape: size {shape} "
            f"and parameters of shape {common}"
        )
    return shape


def _any(test: Any, v: Any) -> bool:
    """Whether ``test`` holds for any element of the parameter ``v`` (a spartan array is
    read by one small forced reduction)."""
    if isinstance(v, Array):
        from spartan.frontend.reductions import any as _any_of

        return bool(_any_of(test(v)))
    with np.errstate(invalid="ignore"):
        return bool(np.any(test(np.asarray(v))))


def _float_dtype(dtype: Any, name: str) -> np.dtype:
    """NumPy's Generator draws these in float32 or float64 only."""
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"Unsupported dtype {dt!r} for {name}")
    return dt


def _into(result: Array, out: Any) -> Array:
    """``out=``: the given spartan array rebound to the draws (NumPy fills it)."""
    if out is None:
        return result
    from spartan.frontend.ufuncs import _store

    if not isinstance(out, Array):
        raise TypeError("out= must be a spartan array")
    if out.dtype != result.dtype:
        raise TypeError(
            f"Supplied output array has the wrong type. Expected {result.dtype}, got {out.dtype}"
        )
    return _store(result, out)


def _out_shape(size: Any, out: Any) -> Any:
    if out is None:
        return size
    if size is not None and _size(size) != out.shape:
        raise ValueError("size must match out.shape when used together")
    return out.shape


class Generator:
    """Counter-based random streams: every call draws a fresh stream key from
    ``(seed, call number)``, and each element hashes its global flat index, so the
    arrays do not depend on tiling or worker count.

    Parameters may be arrays (NumPy's or spartan's): they broadcast with each other and
    with ``size`` as in :class:`numpy.random.Generator`, each element drawn with its
    own parameters. The values are spartan's own (not NumPy's bit stream).

    >>> rng = sp.random.default_rng(42)
    >>> rng.normal(size=(3, 3)).shape
    (3, 3)
    >>> rng.poisson([1.0, 10.0, 100.0], size=(4, 3)).shape
    (4, 3)
    """

    def __init__(self, seed: int | None = None) -> None:
        self._seed = int(seed or 0) & 0xFFFFFFFFFFFFFFFF
        self._counter = itertools.count()

    def _stream(self) -> int:
        return (
            self._seed * 0x9E3779B97F4A7C15 + next(self._counter) * 0xBF58476D1CE4E5B9
        ) & 0xFFFFFFFFFFFFFFFF

    def spawn(self, n_children: int) -> list[Generator]:
        """``n_children`` independent generators, each seeded from a stream of this one
        (so they repeat with this generator's seed)."""
        return [Generator(self._stream()) for _ in range(operator.index(n_children))]

    def bytes(self, length: int) -> bytes:  # noqa: A003
        """``length`` random bytes (Python ``bytes``, made in the driver as NumPy's)."""
        n = operator.index(length)
        key = self._stream()
        bits = _uniform_bits(key, (n,), ((0, n),)) if n else np.zeros(0, np.uint64)
        return (bits >> np.uint64(56)).astype(np.uint8).tobytes()

    def _draw(
        self,
        kind: str,
        name: str,
        params: tuple,
        size: Any,
        dtype: Any = np.float64,
        tiling: Any = None,
    ) -> Array:
        """Draws of ``name`` by its inverse CDF (``kind``: ``"quantile"`` or ``"scipy"``,
        see :func:`_ppf`): one uniform stream, the parameters' arrays broadcast."""
        params = tuple(_param(p) for p in params)
        shape = _shape_of(size, params)
        key = self._stream()
        if not any(_is_array(p) for p in params):
            fn = _inverse_cdf if kind == "quantile" else _scipy_quantile
            init = functools.partial(fn, key, shape, name, params)
            return newarray(shape, init, dtype, tiling, name)
        from spartan.frontend.ufuncs import elementwise

        u = newarray(shape, functools.partial(_open_unit, key, shape), np.float64, tiling, "u")
        fn = functools.partial(_ppf, kind, name, np.dtype(dtype))
        return elementwise(fn, u, *params, name=name, dtype=dtype)

    def _standard(
        self, fn: Any, args: tuple, shape: tuple[int, ...], tiling: Any, name: str
    ) -> Array:
        """float64 draws ``fn(key, shape, *args, box, dtype)`` of one fresh stream."""
        init = functools.partial(fn, self._stream(), shape, *args)
        return newarray(shape, init, np.float64, tiling, name)

    def random(
        self, size: Any = None, dtype: Any = np.float64, out: Any = None, tiling: Any = None
    ) -> Array:
        """Uniform floats in [0, 1)."""
        dtype = _float_dtype(dtype, "random")
        draws = self.uniform(0.0, 1.0, _out_shape(size, out), dtype=dtype, tiling=tiling)
        return _into(draws, out)

    def uniform(
        self,
        low: Any = 0.0,
        high: Any = 1.0,
        size: Any = None,
        dtype: Any = np.float64,
        tiling: Any = None,
    ) -> Array:
        """Uniform floats in ``[low, high)`` (array bounds broadcast)."""
        low, high = _param(low), _param(high)
        shape = _shape_of(size, (low, high))
        if not (_is_array(low) or _is_array(high)):
            init = functools.partial(_uniform, self._stream(), shape, low, high)
            return newarray(shape, init, dtype, tiling, "uniform")
        from spartan.frontend.ufuncs import elementwise

        u = self._standard(_uniform, (0.0, 1.0), shape, tiling, "uniform")
        fn = functools.partial(_between, np.dtype(dtype))
        return elementwise(fn, u, low, high, name="uniform", dtype=dtype)

    def normal(
        self,
        loc: Any = 0.0,
        scale: Any = 1.0,
        size: Any = None,
        dtype: Any = np.float64,
        tiling: Any = None,
    ) -> Array:
        """Normal draws of mean ``loc`` and standard deviation ``scale`` (arrays broadcast)."""
        loc, scale = _param(loc), _param(scale)
        if _any(lambda v: v < 0, scale):
            raise ValueError("scale < 0")
        shape = _shape_of(size, (loc, scale))
        if not (_is_array(loc) or _is_array(scale)):
            init = functools.partial(_normal, self._stream(), shape, loc, scale)
            return newarray(shape, init, dtype, tiling, "normal")
        from spartan.frontend.ufuncs import elementwise

        z = self._standard(_normal, (0.0, 1.0), shape, tiling, "normal")
        fn = functools.partial(_affine, np.dtype(dtype))
        return elementwise(fn, z, loc, scale, name="normal", dtype=dtype)

    def standard_normal(
        self, size: Any = None, dtype: Any = np.float64, out: Any = None, tiling: Any = None
    ) -> Array:
        dtype = _float_dtype(dtype, "standard_normal")
        draws = self.normal(0.0, 1.0, _out_shape(size, out), dtype, tiling)
        return _into(draws, out)

    def exponential(self, scale: Any = 1.0, size: Any = None, tiling: Any = None) -> Array:
        scale = _param(scale)
        if _any(lambda v: v < 0, scale):
            raise ValueError("scale < 0")
        shape = _shape_of(size, (scale,))
        if not _is_array(scale):
            init = functools.partial(_exponential, self._stream(), shape, scale)
            return newarray(shape, init, np.float64, tiling, "exponential")
        from spartan.frontend.ufuncs import elementwise

        e = self._standard(_exponential, (1.0,), shape, tiling, "exponential")
        fn = functools.partial(_affine, np.dtype(np.float64))
        return elementwise(fn, e, 0.0, scale, name="exponential", dtype=np.float64)

    def standard_exponential(
        self,
        size: Any = None,
        dtype: Any = np.float64,
        method: str = "zig",
        out: Any = None,
        tiling: Any = None,
    ) -> Array:
        """Exponential draws of scale 1 (``method`` is accepted as NumPy's, which reads
        anything but ``"zig"`` as ``"inv"``; spartan inverts the CDF for both)."""
        dtype = _float_dtype(dtype, "standard_exponential")
        draws = self.exponential(1.0, _out_shape(size, out), tiling).astype(dtype, copy=False)
        return _into(draws, out)

    def _quantile(self, name: str, params: tuple, size: Any, dtype: Any = np.float64) -> Array:
        return self._draw("quantile", name, params, size, dtype)

    def laplace(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Array:
        return self._quantile("laplace", (loc, _nonneg(scale, "scale")), size)

    def logistic(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Array:
        return self._quantile("logistic", (loc, _nonneg(scale, "scale")), size)

    def gumbel(self, loc: Any = 0.0, scale: Any = 1.0, size: Any = None) -> Array:
        return self._quantile("gumbel", (loc, _nonneg(scale, "scale")), size)

    def lognormal(self, mean: Any = 0.0, sigma: Any = 1.0, size: Any = None) -> Array:
        from spartan.frontend.ufunc_objects import UFunc  # (spartan.exp)

        return UFunc(np.exp)(self.normal(mean, _nonneg(sigma, "sigma"), size))

    def rayleigh(self, scale: Any = 1.0, size: Any = None) -> Array:
        return self._quantile("rayleigh", (_nonneg(scale, "scale"),), size)

    def weibull(self, a: Any, size: Any = None) -> Array:
        return self._quantile("weibull", (_nonneg(a, "a"),), size)

    def pareto(self, a: Any, size: Any = None) -> Array:
        return self._quantile("pareto", (_positive(a, "a"),), size)

    def power(self, a: Any, size: Any = None) -> Array:
        return self._quantile("power", (_positive(a, "a"),), size)

    def standard_cauchy(self, size: Any = None) -> Array:
        return self._quantile("standard_cauchy", (), size)

    def triangular(self, left: Any, mode: Any, right: Any, size: Any = None) -> Array:
        if _any(lambda v: v, _param(left) > _param(mode)):
            raise ValueError("left > mode")
        if _any(lambda v: v, _param(mode) > _param(right)):
            raise ValueError("mode > right")
        if _any(lambda v: v, _param(left) == _param(right)):
            raise ValueError("left == right")
        return self._quantile("triangular", (left, mode, right), size)

    def geometric(self, p: Any, size: Any = None) -> Array:
        if _any(lambda v: ~((v > 0) & (v <= 1)), _param(p)):
            raise ValueError("p <= 0, p > 1 or p contains NaNs")
        return self._quantile("geometric", (p,), size, np.int64)

    def vonmises(self, mu: Any, kappa: Any, size: Any = None) -> Array:
        """Von Mises draws on [-pi, pi) around ``mu`` with concentration ``kappa``."""
        return self._quantile("vonmises", (mu, _nonneg(kappa, "kappa")), size)

    def _scipy(self, dist: str, params: tuple, size: Any, dtype: Any = np.float64) -> Array:
        return self._draw("scipy", dist, params, size, dtype)

    def standard_gamma(
        self, shape: Any, size: Any = None, dtype: Any = np.float64, out: Any = None
    ) -> Array:
        """Gamma draws of scale 1 (``dtype``: float64 or float32, as NumPy's)."""
        dtype = _float_dtype(dtype, "standard_gamma")
        draws = self._scipy("gamma", (_nonneg(shape, "shape"),), _out_shape(size, out), dtype)
        return _into(draws, out)

    def gamma(self, shape: Any, scale: Any = 1.0, size: Any = None) -> Array:
        return self._scipy("gamma", (_nonneg(shape, "shape"), 0.0, _nonneg(scale, "scale")), size)

    def beta(self, a: Any, b: Any, size: Any = None) -> Array:
        return self._scipy("beta", (_positive(a, "a"), _positive(b, "b")), size)

    def chisquare(self, df: Any, size: Any = None) -> Array:
        return self._scipy("chi2", (_positive(df, "df"),), size)

    def noncentral_chisquare(self, df: Any, nonc: Any, size: Any = None) -> Array:
        return self._scipy("ncx2", (_positive(df, "df"), _nonneg(nonc, "nonc")), size)

    def f(self, dfnum: Any, dfden: Any, size: Any = None) -> Array:
        return self._scipy("f", (_positive(dfnum, "dfnum"), _positive(dfden, "dfden")), size)

    def noncentral_f(self, dfnum: Any, dfden: Any, nonc: Any, size: Any = None) -> Array:
        params = (_positive(dfnum, "dfnum"), _positive(dfden, "dfden"), _nonneg(nonc, "nonc"))
        return self._scipy("ncf", params, size)

    def standard_t(self, df: Any, size: Any = None) -> Array:
        return self._scipy("t", (_positive(df, "df"),), size)

    def wald(self, mean: Any, scale: Any, size: Any = None) -> Array:
        m, sc = _param(_positive(mean, "mean")), _param(_positive(scale, "scale"))
        return self._scipy("invgauss", (m / sc, 0.0, sc), size)

    def poisson(self, lam: Any = 1.0, size: Any = None) -> Array:
        """Poisson counts of mean ``lam`` (a scalar or an array, broadcast with ``size``)."""
        return self._scipy("poisson", (_nonneg(lam, "lam"),), size, np.int64)

    def binomial(self, n: Any, p: Any, size: Any = None) -> Array:
        if _any(lambda v: ~((v >= 0) & (v <= 1)), _param(p)):
            raise ValueError("p < 0, p > 1 or p is NaN")
        return self._scipy("binom", (_nonneg(n, "n"), p), size, np.int64)

    def negative_binomial(self, n: Any, p: Any, size: Any = None) -> Array:
        if _any(lambda v: ~((v > 0) & (v <= 1)), _param(p)):
            raise ValueError("p < 0, p > 1 or p is NaN")
        return self._scipy("nbinom", (_positive(n, "n"), p), size, np.int64)

    def hypergeometric(self, ngood: Any, nbad: Any, nsample: Any, size: Any = None) -> Array:
        """Good items among ``nsample`` drawn without replacement from ``ngood`` good
        and ``nbad`` bad ones (each a scalar or an array, broadcast with ``size``)."""
        good, bad, n = (
            _param(_nonneg(v, k))
            for v, k in ((ngood, "ngood"), (nbad, "nbad"), (nsample, "nsample"))
        )
        if _any(lambda v: v, n > good + bad):
            raise ValueError("ngood + nbad < nsample")
        return self._scipy("hypergeom", (good + bad, good, n), size, np.int64)

    def logseries(self, p: Any, size: Any = None) -> Array:
        if _any(lambda v: ~((v >= 0) & (v < 1)), _param(p)):
            raise ValueError("p < 0, p >= 1 or p is NaN")
        return self._scipy("logser", (p,), size, np.int64)

    def zipf(self, a: Any, size: Any = None) -> Array:
        """Zipf (zeta) draws of exponent ``a > 1``."""
        if _any(lambda v: ~(v > 1), _param(a)):
            raise ValueError("a <= 1.0")
        return self._scipy("zipf", (a,), size, np.int64)

    def multivariate_hypergeometric(
        self, colors: Any, nsample: int, size: Any = None, method: str = "marginals"
    ) -> Array:
        """Counts of each color among ``nsample`` items drawn without replacement from
        ``colors[i]`` items of color ``i``: conditional hypergeometric draws, one uniform
        stream per color (``method`` is accepted as NumPy's; both give this law)."""
        from spartan.frontend.creation import full
        from spartan.frontend.manipulation import stack
        from spartan.frontend.ufuncs import elementwise

        if method not in ("count", "marginals"):
            raise ValueError('method must be "count" or "marginals".')
        c = np.asarray(colors)
        if c.ndim != 1 or c.dtype.kind not in "iu":
            raise ValueError("colors must be a one-dimensional sequence of nonnegative integers")
        if np.any(c < 0):
            raise ValueError("colors must be a one-dimensional sequence of nonnegative integers")
        nsample = operator.index(nsample)
        total = int(c.sum())
        if nsample < 0:
            raise ValueError("nsample must be nonnegative.")
        if nsample > total:
            raise ValueError("nsample > sum(colors)")
        shape = _size(size)
        left = full(shape, nsample, dtype=np.int64)
        counts = []
        for cj in c[:-1]:
            u = self._standard(_open_unit, (), shape, None, "u")
            fn = functools.partial(_hypergeom_ppf_frac, total, int(cj))
            k = elementwise(fn, u, left, name="multivariate_hypergeometric", dtype=np.int64)
            counts.append(k)
            left = left - k
            total -= int(cj)
        counts.append(left)
        return stack(counts, axis=-1)

    def multivariate_normal(
        self,
        mean: Any,
        cov: Any,
        size: Any = None,
        check_valid: str = "warn",
        tol: float = 1e-8,
        *,
        method: str = "svd",
    ) -> Array:
        """Normal vectors ``mean + z @ A.T`` with ``A A^T = cov`` (``cov`` is small: its
        factor is computed on the driver), ``z`` standard normal."""
        from spartan.frontend.products import dot

        mu = np.asarray(mean, dtype=np.float64)
        c = np.asarray(cov, dtype=np.float64)
        if mu.ndim != 1 or c.shape != (mu.size, mu.size):
            raise ValueError("mean must be 1 dimensional and cov must be 2 dimensional and square")
        u, s, _ = np.linalg.svd(c)
        factor = u * np.sqrt(np.maximum(s, 0))
        shape = _size(size) + (mu.size,)
        z = self.standard_normal(shape)
        flat = z.reshape(-1, mu.size)
        return (dot(flat, factor.T) + mu).reshape(shape)

    def multinomial(self, n: int, pvals: Any, size: Any = None) -> Array:
        """Category counts of ``n`` draws: conditional binomials, one uniform stream per
        category (``count_j ~ Binomial(n - counts so far, p_j / remaining p)``)."""
        from spartan.frontend.creation import full
        from spartan.frontend.manipulation import stack
        from spartan.frontend.ufuncs import elementwise

        p = np.asarray(pvals, dtype=np.float64)
        if p.ndim != 1 or p.size == 0:
            raise ValueError("pvals must be a 1-d sequence")
        if np.any(p < 0) or p[:-1].sum() > 1.0 + 1e-12:
            raise ValueError("pvals < 0, pvals > 1 or pvals contains NaNs")
        if n < 0:
            raise ValueError("n < 0")
        shape = _size(size)
        left = full(shape, int(n), dtype=np.int64)
        rest, counts = 1.0, []
        for pj in p[:-1]:
            frac = min(1.0, pj / rest) if rest > 0 else 0.0
            u = self.random(shape)
            c = elementwise(
                functools.partial(_binomial_ppf_frac, frac),
                u,
                left,
                name="multinomial",
                dtype=np.int64,
            )
            counts.append(c)
            left = left - c
            rest -= pj
        counts.append(left)
        return stack(counts, axis=-1)

    def dirichlet(self, alpha: Any, size: Any = None) -> Array:
        """Dirichlet vectors: independent gamma variates normalised per row."""
        from spartan.frontend.manipulation import stack
        from spartan.frontend.reductions import sum as _sum

        a = np.asarray(alpha, dtype=np.float64)
        if a.ndim != 1 or np.any(a <= 0):
            raise ValueError("alpha <= 0" if a.ndim == 1 else "alpha must be 1-d")
        shape = _size(size)
        cols = [self.standard_gamma(float(ai), shape) for ai in a]
        g = stack(cols, axis=-1)
        return g / _sum(g, axis=-1, keepdims=True)

    def integers(
        self,
        low: Any,
        high: Any = None,
        size: Any = None,
        dtype: Any = np.int64,
        endpoint: bool = False,
        tiling: Any = None,
    ) -> Array:
        """Integers in ``[low, high)`` (``[low, high]`` with ``endpoint``); array bounds
        broadcast, and must lie within ``dtype`` (NumPy's errors)."""
        if high is None:
            low, high = 0, low
        low, high = _param(low), _param(high)
        dt = np.dtype(dtype)
        if dt.kind not in "biu":
            raise TypeError(f"Unsupported dtype {dt!r} for integers")
        lo_ok, hi_ok = (0, 1) if dt.kind == "b" else (np.iinfo(dt).min, np.iinfo(dt).max)
        top = high if endpoint else high - 1  # the largest value asked for
        if _any(lambda v: v < lo_ok, low):
            raise ValueError(f"low is out of bounds for {dt}")
        if _any(lambda v: v > hi_ok, top):
            raise ValueError(f"high is out of bounds for {dt}")
        if _any(lambda v: v, low > top):
            raise ValueError("low > high" if endpoint else "low >= high")
        shape = _shape_of(size, (low, high))
        if not (_is_array(low) or _is_array(high)):
            hi = int(high) + (1 if endpoint else 0)
            init = functools.partial(_integers, self._stream(), shape, int(low), hi)
            return newarray(shape, init, dtype, tiling, "integers")
        from spartan.frontend.ufuncs import elementwise

        bits = newarray(
            shape, functools.partial(_bits, self._stream(), shape), np.uint64, tiling, "bits"
        )
        fn = functools.partial(_int_in, dt)
        return elementwise(fn, bits, low, high + 1 if endpoint else high, name="integers", dtype=dt)

    def permutation(self, x: Any, axis: int = 0) -> Array:
        """A random permutation of ``range(x)`` or of ``x`` along ``axis``: random keys
        argsorted by the distributed sample sort, then a ``take``."""
        from spartan.frontend.creation import asarray
        from spartan.frontend.fancy import take
        from spartan.frontend.sorting import argsort

        if isinstance(x, (int, np.integer)):
            n, arr = int(x), None
        else:
            arr = asarray(x)
            if arr.ndim == 0:
                raise np.exceptions.AxisError(axis, 0)
            n = arr.shape[axis]
        keys = self.integers(0, 1 << 62, size=n)
        perm = argsort(keys) if n else keys.astype(np.intp)
        return perm if arr is None else take(arr, perm, axis)

    def permuted(self, x: Any, axis: int | None = None, out: Any = None) -> Array:
        """``x`` with each slice along ``axis`` shuffled independently (all elements
        when None): random keys sorted lane by lane, then ``take_along_axis``."""
        from spartan.frontend.creation import asarray
        from spartan.frontend.fancy import take_along_axis
        from spartan.frontend.sorting import argsort

        a = asarray(x)
        if axis is None:
            flat = a.ravel()
            return flat[self.permutation(flat.shape[0])].reshape(a.shape)
        keys = self.integers(0, 1 << 62, size=a.shape)
        result = take_along_axis(a, argsort(keys, axis=axis), axis)
        if out is not None:
            out._expr = result._expr
            return out
        return result

    def shuffle(self, x: Array, axis: int = 0) -> None:
        """Shuffle ``x`` along ``axis`` (rebinds it to the permuted array)."""
        from spartan.frontend.array import Array as _Array

        if not isinstance(x, _Array):
            raise TypeError("shuffle needs a spartan array")
        x._expr = self.permutation(x, axis)._expr

    def choice(
        self,
        a: Any,
        size: Any = None,
        replace: bool = True,
        p: Any = None,
        axis: int = 0,
        shuffle: bool = True,
    ) -> Any:
        """Random samples from ``a`` (an array, or ``range(a)`` for an integer)."""
        from spartan.frontend.creation import arange, asarray
        from spartan.frontend.fancy import take

        pop = arange(int(a)) if isinstance(a, (int, np.integer)) else asarray(a)
        if pop.ndim == 0:
            raise ValueError("a must be a sequence or an integer, not a 0-d array")
        n = pop.shape[axis]
        shape = _size(size)
        count = int(np.prod(shape)) if shape else 1
        if n == 0 and count:
            raise ValueError("a cannot be empty unless no samples are taken")
        if p is not None:
            pv = np.asarray(p, dtype=np.float64)
            if pv.shape != (n,):
                raise ValueError("a and p must have same size")
            if np.any(pv < 0) or not np.isclose(pv.sum(), 1.0):
                raise ValueError(
                    "probabilities are not non-negative"
                    if np.any(pv < 0)
                    else "probabilities do not sum to 1"
                )
            if not replace:
                raise ValueError("spartan choice with p= draws with replacement")
            from spartan.frontend.sorting import searchsorted

            cdf = np.cumsum(pv)
            cdf /= cdf[-1]
            idx = searchsorted(cdf, self.random(count), side="right")
        elif replace:
            idx = self.integers(0, n, size=count)
        else:
            if count > n:
                raise ValueError("Cannot take a larger sample than population when replace=False")
            idx = self.permutation(n)[:count]
        out = take(pop, idx, axis)
        if not shape:
            return out[(slice(None),) * axis + (0,)]
        return out.reshape(pop.shape[:axis] + shape + pop.shape[axis + 1 :])


def _nonneg(v: Any, name: str) -> Any:
    """``v`` (a scalar or an array), NumPy's ValueError if any of it is negative."""
    if _any(lambda a: a < 0, _param(v)):
        raise ValueError(f"{name} < 0")
    return v


def _positive(v: Any, name: str) -> Any:
    if _any(lambda a: a <= 0, _param(v)):
        raise ValueError(f"{name} <= 0")
    return v


_global = Generator(0)


def default_rng(seed: int | None = None) -> Generator:
    """A new :class:`Generator` (the same seed gives the same arrays)."""
    return Generator(seed)


def seed(value: int | None = None) -> None:
    """Restart the global random streams from ``value``."""
    global _global
    _global = Generator(value)


def random(size: Any = None, dtype: Any = np.float64, tiling: Any = None) -> Array:
    """Uniform floats in [0, 1) of shape ``size``."""
    return _global.random(size, dtype, tiling)


random_sample = ranf = sample = random


def rand(*shape: int, tiling: Any = None) -> Array:
    return _global.random(shape, tiling=tiling)


def uniform(
    low: float = 0.0,
    high: float = 1.0,
    size: Any = None,
    dtype: Any = np.float64,
    tiling: Any = None,
) -> Array:
    return _global.uniform(low, high, size, dtype, tiling)


def normal(
    loc: float = 0.0,
    scale: float = 1.0,
    size: Any = None,
    dtype: Any = np.float64,
    tiling: Any = None,
) -> Array:
    return _global.normal(loc, scale, size, dtype, tiling)


def randn(*shape: int, tiling: Any = None) -> Array:
    return _global.normal(0.0, 1.0, shape, tiling=tiling)


def standard_normal(size: Any = None, tiling: Any = None) -> Array:
    return _global.normal(0.0, 1.0, size, tiling=tiling)


def exponential(scale: float = 1.0, size: Any = None, tiling: Any = None) -> Array:
    return _global.exponential(scale, size, tiling)


def standard_exponential(size: Any = None, tiling: Any = None) -> Array:
    return _global.exponential(1.0, size, tiling)


def randint(
    low: int, high: int | None = None, size: Any = None, dtype: Any = np.int64, tiling: Any = None
) -> Array:
    return _global.integers(low, high, size, dtype, tiling=tiling)


def random_integers(low: int, high: int | None = None, size: Any = None) -> Array:
    """Integers in ``[low, high]`` (the legacy inclusive form)."""
    if high is None:
        low, high = 1, low
    return _global.integers(low, high, size, endpoint=True)


def permutation(x: Any) -> Array:
    return _global.permutation(x)


def shuffle(x: Array) -> None:
    _global.shuffle(x)


def choice(a: Any, size: Any = None, replace: bool = True, p: Any = None) -> Any:
    return _global.choice(a, size, replace, p)


def _module_function(name: str):
    def fn(*args: Any, **kwargs: Any) -> Any:
        return getattr(_global, name)(*args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = f"``{name}`` from the global generator (see :meth:`Generator.{name}`)."
    return fn


laplace = _module_function("laplace")
logistic = _module_function("logistic")
gumbel = _module_function("gumbel")
lognormal = _module_function("lognormal")
rayleigh = _module_function("rayleigh")
weibull = _module_function("weibull")
pareto = _module_function("pareto")
power = _module_function("power")
standard_cauchy = _module_function("standard_cauchy")
triangular = _module_function("triangular")
geometric = _module_function("geometric")
standard_gamma = _module_function("standard_gamma")
vonmises = _module_function("vonmises")
zipf = _module_function("zipf")
bytes = _module_function("bytes")  # noqa: A001
gamma = _module_function("gamma")
beta = _module_function("beta")
chisquare = _module_function("chisquare")
noncentral_chisquare = _module_function("noncentral_chisquare")
f = _module_function("f")
noncentral_f = _module_function("noncentral_f")
standard_t = _module_function("standard_t")
wald = _module_function("wald")
poisson = _module_function("poisson")
binomial = _module_function("binomial")
negative_binomial = _module_function("negative_binomial")
hypergeometric = _module_function("hypergeometric")
logseries = _module_function("logseries")


multivariate_normal = _module_function("multivariate_normal")
dirichlet = _module_function("dirichlet")
multinomial = _module_function("multinomial")
