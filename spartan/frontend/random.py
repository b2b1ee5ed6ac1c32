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

_state = {"seed": 0, "counter": itertools.count()}
_M = np.uint64(0xFFFFFFFFFFFFFFFF)


def seed(value: int | None = None) -> None:
    """Restart the random streams from ``value``."""
    _state["seed"] = int(value or 0) & 0xFFFFFFFFFFFFFFFF
    _state["counter"] = itertools.count()


def _stream() -> int:
    return (
        _state["seed"] * 0x9E3779B97F4A7C15 + next(_state["counter"]) * 0xBF58476D1CE4E5B9
    ) & 0xFFFFFFFFFFFFFFFF


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


def _size(size: Any) -> tuple[int, ...]:
    return () if size is None else normalize_shape(size)


def random(size: Any = None, dtype: Any = np.float64, tiling: Any = None) -> Array:
    """Uniform floats in [0, 1) of shape ``size``."""
    return uniform(0.0, 1.0, size, dtype=dtype, tiling=tiling)


random_sample = random


def rand(*shape: int, tiling: Any = None) -> Array:
    return random(shape, tiling=tiling)


def uniform(
    low: float = 0.0,
    high: float = 1.0,
    size: Any = None,
    dtype: Any = np.float64,
    tiling: Any = None,
) -> Array:
    shape = _size(size)
    init = functools.partial(_uniform, _stream(), shape, low, high)
    return newarray(shape, init, dtype, tiling, "uniform")


def normal(
    loc: float = 0.0,
    scale: float = 1.0,
    size: Any = None,
    dtype: Any = np.float64,
    tiling: Any = None,
) -> Array:
    if scale < 0:
        raise ValueError("scale < 0")
    shape = _size(size)
    return newarray(
        shape, functools.partial(_normal, _stream(), shape, loc, scale), dtype, tiling, "normal"
    )


def randn(*shape: int, tiling: Any = None) -> Array:
    return normal(0.0, 1.0, shape, tiling=tiling)


standard_normal = functools.partial(normal, 0.0, 1.0)


def randint(
    low: int, high: int | None = None, size: Any = None, dtype: Any = np.int64, tiling: Any = None
) -> Array:
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError("low >= high")
    shape = _size(size)
    return newarray(
        shape, functools.partial(_integers, _stream(), shape, low, high), dtype, tiling, "randint"
    )
