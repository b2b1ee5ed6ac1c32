"""Random arrays that do not depend on tiling or worker count.

Each value is a counter-based hash (SplitMix64) of the stream key and the element's
global flat index, so ``seed(0); rand(n)`` gives the same array on 1 or 64 workers.

>>> sp.random.seed(0); a = sp.random.rand(4, 3)       # doctest: +SKIP
"""

from __future__ import annotations

import functools
import itertools
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
    span = np.uint64(high - low)
    return (low + (_uniform_bits(key, shape, box) % span).astype(np.int64)).astype(dtype)


def _exponential(key: int, shape, scale: float, box: Box, dtype) -> np.ndarray:
    u = 1.0 - _to_unit(_uniform_bits(key, shape, box))  # (0, 1]: log is finite
    return (-scale * np.log(u)).astype(dtype)


def _inverse_cdf(key: int, shape, name: str, params: tuple, box: Box, dtype) -> np.ndarray:
    """A distribution by inverting its CDF at a uniform in (0, 1)."""
    u = (_to_unit(_uniform_bits(key, shape, box)) + 0.5 / (1 << 53)).astype(np.float64)
    with np.errstate(all="ignore"):
        out = _QUANTILES[name](u, *params)
    return np.asarray(out).astype(dtype)


def _triangular(u, left, mode, right):
    c = (mode - left) / (right - left) if right > left else 0.5
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


def _scipy_quantile(key: int, shape, dist: str, params: tuple, box: Box, dtype) -> np.ndarray:
    """A distribution by SciPy's inverse CDF (``ppf``) at a uniform in (0, 1)."""
    import scipy.stats

    u = _to_unit(_uniform_bits(key, shape, box)) + 0.5 / (1 << 53)
    with np.errstate(all="ignore"):
        out = getattr(scipy.stats, dist).ppf(u, *params)
    return np.asarray(out).astype(dtype)


def _binomial_ppf_frac(p: float, u: np.ndarray, n: np.ndarray) -> np.ndarray:
    import scipy.stats

    with np.errstate(all="ignore"):
        return np.nan_to_num(scipy.stats.binom.ppf(u, n, p)).astype(np.int64)


def _size(size: Any) -> tuple[int, ...]:
    return () if size is None else normalize_shape(size)


class Generator:
    """Counter-based random streams: every call draws a fresh stream key from
    ``(seed, call number)``, and each element hashes its global flat index, so the
    arrays do not depend on tiling or worker count.

    >>> rng = sp.random.default_rng(42); rng.normal(size=(3, 3))     # doctest: +SKIP
    """

    def __init__(self, seed: int | None = None) -> None:
        self._seed = int(seed or 0) & 0xFFFFFFFFFFFFFFFF
        self._counter = itertools.count()

    def _stream(self) -> int:
        return (
            self._seed * 0x9E3779B97F4A7C15 + next(self._counter) * 0xBF58476D1CE4E5B9
        ) & 0xFFFFFFFFFFFFFFFF

    def random(self, size: Any = None, dtype: Any = np.float64, tiling: Any = None) -> Array:
        """Uniform floats in [0, 1)."""
        return self.uniform(0.0, 1.0, size, dtype=dtype, tiling=tiling)

    def uniform(
        self,
        low: float = 0.0,
        high: float = 1.0,
        size: Any = None,
        dtype: Any = np.float64,
        tiling: Any = None,
    ) -> Array:
        shape = _size(size)
        init = functools.partial(_uniform, self._stream(), shape, low, high)
        return newarray(shape, init, dtype, tiling, "uniform")

    def normal(
        self,
        loc: float = 0.0,
        scale: float = 1.0,
        size: Any = None,
        dtype: Any = np.float64,
        tiling: Any = None,
    ) -> Array:
        if np.any(np.asarray(scale) < 0):
            raise ValueError("scale < 0")
        shape = _size(size)
        init = functools.partial(_normal, self._stream(), shape, loc, scale)
        return newarray(shape, init, dtype, tiling, "normal")

    def standard_normal(
        self, size: Any = None, dtype: Any = np.float64, tiling: Any = None
    ) -> Array:
        return self.normal(0.0, 1.0, size, dtype, tiling)

    def exponential(self, scale: float = 1.0, size: Any = None, tiling: Any = None) -> Array:
        if scale < 0:
            raise ValueError("scale < 0")
        shape = _size(size)
        init = functools.partial(_exponential, self._stream(), shape, scale)
        return newarray(shape, init, np.float64, tiling, "exponential")

    def standard_exponential(self, size: Any = None, tiling: Any = None) -> Array:
        return self.exponential(1.0, size, tiling)

    def _quantile(self, name: str, params: tuple, size: Any, dtype: Any = np.float64) -> Array:
        shape = _size(size)
        init = functools.partial(_inverse_cdf, self._stream(), shape, name, params)
        return newarray(shape, init, dtype, None, name)

    def laplace(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Array:
        return self._quantile("laplace", (loc, _nonneg(scale, "scale")), size)

    def logistic(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Array:
        return self._quantile("logistic", (loc, _nonneg(scale, "scale")), size)

    def gumbel(self, loc: float = 0.0, scale: float = 1.0, size: Any = None) -> Array:
        return self._quantile("gumbel", (loc, _nonneg(scale, "scale")), size)

    def lognormal(self, mean: float = 0.0, sigma: float = 1.0, size: Any = None) -> Array:
        import spartan

        return spartan.exp(self.normal(mean, _nonneg(sigma, "sigma"), size))

    def rayleigh(self, scale: float = 1.0, size: Any = None) -> Array:
        return self._quantile("rayleigh", (_nonneg(scale, "scale"),), size)

    def weibull(self, a: float, size: Any = None) -> Array:
        return self._quantile("weibull", (_nonneg(a, "a"),), size)

    def pareto(self, a: float, size: Any = None) -> Array:
        return self._quantile("pareto", (_positive(a, "a"),), size)

    def power(self, a: float, size: Any = None) -> Array:
        return self._quantile("power", (_positive(a, "a"),), size)

    def standard_cauchy(self, size: Any = None) -> Array:
        return self._quantile("standard_cauchy", (), size)

    def triangular(self, left: float, mode: float, right: float, size: Any = None) -> Array:
        if not left <= mode <= right:
            raise ValueError("left > mode" if left > mode else "mode > right")
        if left == right:
            raise ValueError("left == right")
        return self._quantile("triangular", (left, mode, right), size)

    def geometric(self, p: float, size: Any = None) -> Array:
        if not 0 < p <= 1:
            raise ValueError("p <= 0, p > 1 or p contains NaNs")
        return self._quantile("geometric", (p,), size, np.int64)

    def _scipy(self, dist: str, params: tuple, size: Any, dtype: Any = np.float64) -> Array:
        shape = _size(size)
        init = functools.partial(_scipy_quantile, self._stream(), shape, dist, params)
        return newarray(shape, init, dtype, None, dist)

    def standard_gamma(self, shape: float, size: Any = None) -> Array:
        return self._scipy("gamma", (_nonneg(shape, "shape"),), size)

    def gamma(self, shape: float, scale: float = 1.0, size: Any = None) -> Array:
        return self._scipy("gamma", (_nonneg(shape, "shape"), 0.0, _nonneg(scale, "scale")), size)

    def beta(self, a: float, b: float, size: Any = None) -> Array:
        return self._scipy("beta", (_positive(a, "a"), _positive(b, "b")), size)

    def chisquare(self, df: float, size: Any = None) -> Array:
        return self._scipy("chi2", (_positive(df, "df"),), size)

    def noncentral_chisquare(self, df: float, nonc: float, size: Any = None) -> Array:
        return self._scipy("ncx2", (_positive(df, "df"), _nonneg(nonc, "nonc")), size)

    def f(self, dfnum: float, dfden: float, size: Any = None) -> Array:
        return self._scipy("f", (_positive(dfnum, "dfnum"), _positive(dfden, "dfden")), size)

    def noncentral_f(self, dfnum: float, dfden: float, nonc: float, size: Any = None) -> Array:
        params = (_positive(dfnum, "dfnum"), _positive(dfden, "dfden"), _nonneg(nonc, "nonc"))
        return self._scipy("ncf", params, size)

    def standard_t(self, df: float, size: Any = None) -> Array:
        return self._scipy("t", (_positive(df, "df"),), size)

    def wald(self, mean: float, scale: float, size: Any = None) -> Array:
        m, sc = _positive(mean, "mean"), _positive(scale, "scale")
        return self._scipy("invgauss", (m / sc, 0.0, sc), size)

    def poisson(self, lam: float = 1.0, size: Any = None) -> Array:
        return self._scipy("poisson", (_nonneg(lam, "lam"),), size, np.int64)

    def binomial(self, n: int, p: float, size: Any = None) -> Array:
        if not 0 <= p <= 1:
            raise ValueError("p < 0, p > 1 or p is NaN")
        return self._scipy("binom", (_nonneg(n, "n"), p), size, np.int64)

    def negative_binomial(self, n: float, p: float, size: Any = None) -> Array:
        if not 0 < p <= 1:
            raise ValueError("p < 0, p > 1 or p is NaN")
        return self._scipy("nbinom", (_positive(n, "n"), p), size, np.int64)

    def hypergeometric(self, ngood: int, nbad: int, nsample: int, size: Any = None) -> Array:
        if nsample > ngood + nbad:
            raise ValueError("ngood + nbad < nsample")
        params = (
            _nonneg(ngood, "ngood") + _nonneg(nbad, "nbad"),
            ngood,
            _nonneg(nsample, "nsample"),
        )
        return self._scipy("hypergeom", params, size, np.int64)

    def logseries(self, p: float, size: Any = None) -> Array:
        if not 0 <= p < 1:
            raise ValueError("p < 0, p >= 1 or p is NaN")
        return self._scipy("logser", (p,), size, np.int64)

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
        from spartan.frontend.linalg import dot

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
        low: int,
        high: int | None = None,
        size: Any = None,
        dtype: Any = np.int64,
        endpoint: bool = False,
        tiling: Any = None,
    ) -> Array:
        """Integers in ``[low, high)`` (``[low, high]`` with ``endpoint``)."""
        if high is None:
            low, high = 0, low
        if endpoint:
            high += 1
        if high <= low:
            raise ValueError("low >= high" if not endpoint else "low > high")
        shape = _size(size)
        init = functools.partial(_integers, self._stream(), shape, int(low), int(high))
        return newarray(shape, init, dtype, tiling, "integers")

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

    def permuted(self, x: Any, *, axis: int | None = None, out: Any = None) -> Array:
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


def _nonneg(v: float, name: str) -> float:
    if v < 0:
        raise ValueError(f"{name} < 0")
    return v


def _positive(v: float, name: str) -> float:
    if v <= 0:
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
