"""Distributed discrete Fourier transforms (``spartan.fft``), equal to ``numpy.fft``.

How a transform along ``axis`` runs depends on how many *lanes* (1-d runs along the
transformed axes) the array has:

* Many lanes (or a small array): one :func:`~spartan.frontend.alongaxis.along_axes`
  ``join_update``. A group reads its lanes whole and transforms them with the tile's
  own array module (``numpy.fft``, or ``cupy.fft`` on GPU tiles). When the tiling keeps
  the transformed axes whole, each group is a tile and nothing moves; when it cuts
  one, the groups' reads re-tile the array so the axis is whole (the transpose of
  transpose-FFT-transpose; the transpose back is a view). Those bytes are in the
  optimizer's cost model (the join's read terms), which may as well choose to tile the
  input along another axis in the first place.
* Few long lanes (a 1-d array): the four-step (Cooley-Tukey) split
  ``L = n1 * n2``: the lanes become ``(n1, n2)`` matrices, FFTs of length ``n1`` run
  along the columns, a twiddle factor multiplies, FFTs of length ``n2`` run along the
  rows, and a transpose puts the result in order. Each step has ``~sqrt(L)`` lanes, so
  no task ever holds a whole lane. A length with no useful split (a large prime) goes
  through Bluestein's chirp-z algorithm: a convolution of power-of-two length, itself
  computed by four-step FFTs.

n-d transforms run one axis group at a time: all the axes together when other axes
give enough lanes, else the leading axis apart from the rest (as NumPy's loop would).

>>> X = spartan.fft.fft(x)
>>> y = spartan.ones((4, 6))
>>> bool(spartan.allclose(spartan.fft.irfftn(spartan.fft.rfftn(y), y.shape), y))
True
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from spartan.backend.device import array_module
from spartan.frontend.alongaxis import along_axes
from spartan.frontend.array import Array
from spartan.frontend.creation import asarray, newarray, zeros
from spartan.frontend.manipulation import concatenate, moveaxis, roll, swapaxes, transpose
from spartan.frontend.ufuncs import _store
from spartan.tiling import Box

#: a transform moving at most this many bytes (in or out) may run as one task per lane
#: group even with few lanes: the split's steps cost more than sending it to one worker
ONE_TASK_BELOW_BYTES = 1 << 20
#: a transform with at least this many lanes is spread over workers by its lanes alone
MIN_LANES = 16
#: the shorter side of a four-step split must be at least this long; shorter (a large
#: prime, or twice one) goes through Bluestein's algorithm instead
MIN_SPLIT = 16

#: one-axis transforms: those taking a real input / giving a real output
ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
#: n-d transforms and the one-axis transform each applies to its last axis
ND = {"fftn": "fft", "ifftn": "ifft", "rfftn": "rfft", "irfftn": "irfft"}

_SWAP = {"backward": "forward", None: "forward", "ortho": "ortho", "forward": "backward"}


def _check_norm(norm: Any) -> str:
    """``norm`` as one of NumPy's three names (None: ``backward``), NumPy's error else."""
    if norm is None or norm in ("backward", "ortho", "forward"):
        return norm or "backward"
    raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _swap(norm: str) -> str:
    return _SWAP[norm]


def _check_n(n: Any) -> int:
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _axis(axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _out_length(name: str, n: int) -> int:
    """The output length of a one-axis transform of ``n`` points."""
    return n // 2 + 1 if name in ("rfft", "ihfft") else n


def _result_dtype(name: str, dtype: np.dtype) -> np.dtype:
    """NumPy's result dtype of ``numpy.fft.<name>`` on ``dtype`` (and its TypeError for
    an input it does not take, e.g. a complex input to ``rfft``), from an empty probe."""
    probe = np.zeros((0, 2), dtype)
    if name in ND:
        return getattr(np.fft, name)(probe, s=(2,), axes=(1,)).dtype
    return getattr(np.fft, name)(probe, n=2, axis=1).dtype


def _complex_of(dtype: np.dtype) -> np.dtype:
    """The complex dtype a transform with ``dtype`` results computes in."""
    return np.result_type(dtype, np.complex64)


# ---- the lane path --------------------------------------------------------------------
class _LaneFFT:
    """``f`` of :func:`along_axes`: ``numpy.fft.<name>`` (or CuPy's) over the lanes of an
    ``(m, K)`` block, each lane reshaped to the transformed axes' input lengths."""

    def __init__(
        self,
        name: str,
        lengths: tuple[int, ...],
        s: tuple[int, ...],
        axes: tuple[int, ...],
        norm: str,
        dtype: np.dtype,
    ) -> None:
        self.name, self.lengths, self.s, self.axes = name, lengths, s, axes
        self.norm, self.dtype = norm, dtype

    def __call__(self, block: Any) -> Any:
        xp = array_module(block)
        m = block.shape[0]
        lanes = block.reshape((m,) + self.lengths)
        fn = getattr(xp.fft, self.name)
        if self.name in ND:
            out = fn(lanes, s=self.s, axes=self.axes, norm=self.norm)
        else:
            out = fn(lanes, n=self.s[0], axis=self.axes[0], norm=self.norm)
        return out.reshape(m, math.prod(out.shape[1:])).astype(self.dtype, copy=False)


def _lanes(name: str, x: Array, s: Sequence[int], axes: Sequence[int], norm: str) -> Array:
    """``numpy.fft.<name>(x, s, axes)`` (one axis: ``n=s[0], axis=axes[0]``) as one
    ``join_update`` over the lanes along ``axes`` (distinct, non-negative)."""
    order = sorted(range(len(axes)), key=lambda i: axes[i])
    ordered = tuple(axes[i] for i in order)  # along_axes keeps the lane axes in this order
    block_axes = tuple(1 + ordered.index(a) for a in axes)
    lengths = tuple(x.shape[a] for a in ordered)
    dtype = _result_dtype(name, x.dtype)
    out_len = {a: int(n) for a, n in zip(axes, s)}
    if name not in ND:
        out_len[axes[0]] = _out_length(name, int(s[0]))
    elif name in ("rfftn",):
        out_len[axes[-1]] = int(s[-1]) // 2 + 1
    tail = tuple(out_len[a] for a in ordered)
    out_shape = tuple(out_len.get(i, n) for i, n in enumerate(x.shape))
    if math.prod(out_shape) == 0 or x.size == 0:  # the transform of no data is zeros
        return zeros(out_shape, dtype)
    fn = _LaneFFT(name, lengths, tuple(int(n) for n in s), block_axes, norm, dtype)
    # groups follow the tiles of the first kept axis (tile by tile where the tiling cuts
    # it); a short one gives few groups, so then the longest goes first: a (1, k, n)
    # array has k groups, not one task with all of it
    kept = [i for i in range(x.ndim) if i not in ordered]
    first = kept[0] if kept else None
    if kept and x.shape[first] < MIN_LANES:
        first = max(kept, key=lambda i: x.shape[i])
    if kept and first != kept[0]:
        perm = [first] + [i for i in range(x.ndim) if i != first]
        back = tuple(int(i) for i in np.argsort(perm))
        moved = transpose(x, perm)
        return transpose(_lanes(name, moved, s, [perm.index(a) for a in axes], norm), back)
    out = along_axes(fn, x, ordered, tail, dtype, name=name)
    k = len(ordered)
    return moveaxis(out, tuple(range(x.ndim - k, x.ndim)), ordered) if kept else out


def _lane_count(x: Array, axes: Sequence[int]) -> int:
    return math.prod(n for i, n in enumerate(x.shape) if i not in axes)


def _few_lanes(x: Array, axes: Sequence[int], out_shape: Sequence[int], dtype: np.dtype) -> bool:
    """Whether the lanes alone would spread this transform over too few tasks, for an
    array worth spreading: then a lane is split (four-step) instead."""
    nbytes = max(x.nbytes, math.prod(out_shape) * np.dtype(dtype).itemsize)
    return _lane_count(x, axes) < MIN_LANES and nbytes > ONE_TASK_BELOW_BYTES


# ---- long lanes: four-step and Bluestein ----------------------------------------------
def _split(n: int) -> int:
    """The largest divisor of ``n`` not above its square root (1 for a prime)."""
    for d in range(math.isqrt(n), 1, -1):
        if n % d == 0:
            return d
    return 1


class _Twiddle:
    """``newarray`` init: ``exp(sign * 2j*pi * k1*j2 / L)`` over an ``(n1, n2)`` box."""

    def __init__(self, length: int, sign: int) -> None:
        self.length, self.sign = length, sign

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        (r0, r1), (c0, c1) = box
        k1 = np.arange(r0, r1, dtype=np.int64)[:, None]
        j2 = np.arange(c0, c1, dtype=np.int64)[None, :]
        # (the product reduced mod L first: the angle stays in [0, 2*pi))
        phase = ((k1 * j2) % self.length).astype(np.float64) * (2 * np.pi / self.length)
        return np.exp(self.sign * 1j * phase).astype(dtype)


class _Chirp:
    """``newarray`` init: Bluestein's chirp ``exp(sign * 1j*pi * k^2 / L)`` at positions
    ``k`` of a length-``M`` array read circularly (``k`` and ``M - k`` alike); zero where
    ``min(k, M - k) >= L`` (``M = L``: the plain chirp)."""

    def __init__(self, length: int, size: int, sign: int) -> None:
        self.length, self.size, self.sign = length, size, sign

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        ((lo, hi),) = box
        k = np.arange(lo, hi, dtype=np.int64)
        k = np.minimum(k, self.size - k) if self.size != self.length else k
        # exp(i*pi*k^2/L) has period 2L in k^2: reduce it exactly in integers first
        phase = ((k * k) % (2 * self.length)).astype(np.float64) * (np.pi / self.length)
        out = np.exp(self.sign * 1j * phase)
        out[k >= self.length] = 0
        return out.astype(dtype)


def _four_step(y: Array, forward: bool, norm: str) -> Array:
    """The DFT of ``y`` along its last axis (length ``L = n1 * n2``, ``n1 >= 2``), by
    FFTs over ``n1 x n2`` matrices: columns, twiddle, rows, transpose."""
    length = y.shape[-1]
    n1 = _split(length)
    n2 = length // n1
    kept = y.shape[:-1]
    nd = y.ndim + 1
    name = "fft" if forward else "ifft"
    z = y.reshape(kept + (n1, n2))  # z[..., j1, j2] = y[..., n2*j1 + j2]
    z = _lanes(name, z, (n1,), (nd - 2,), norm)  # [..., k1, j2]
    twiddle = newarray((n1, n2), _Twiddle(length, -1 if forward else 1), y.dtype, name="twiddle")
    z = z * twiddle
    z = _lanes(name, z, (n2,), (nd - 1,), norm)  # [..., k1, k2] = X[..., k1 + n1*k2]
    return swapaxes(z, -1, -2).reshape(kept + (length,))


def _bluestein(y: Array, norm: str) -> Array:
    """The forward DFT of ``y`` along its last axis (any length ``L >= 2``) as a
    circular convolution of power-of-two length ``M >= 2L - 1`` (Bluestein), the
    convolution's FFTs four-step ones; computed in complex128."""
    length = y.shape[-1]
    size = 1 << (2 * length - 2).bit_length()
    work = np.result_type(y.dtype, np.complex128)
    kept = y.shape[:-1]
    chirp = newarray((length,), _Chirp(length, length, -1), work, name="chirp")
    a = y.astype(work) * chirp
    a = concatenate([a, zeros(kept + (size - length,), work)], axis=-1)
    kernel = newarray((size,), _Chirp(length, size, 1), work, name="chirp kernel")
    spectrum = _four_step(a, True, "backward") * _four_step(kernel, True, "backward")
    conv = _four_step(spectrum, False, "backward")
    out = conv[..., :length] * chirp
    if norm == "ortho":
        out = out * (1 / math.sqrt(length))
    elif norm == "forward":
        out = out * (1 / length)
    return out.astype(y.dtype)


def _c2c_long(y: Array, forward: bool, norm: str) -> Array:
    """The complex transform of ``y`` along its last axis when it has few, long lanes."""
    length = y.shape[-1]
    if length == 1 or _split(length) >= MIN_SPLIT or (length & (length - 1)) == 0:
        if length == 1:
            return _lanes("fft" if forward else "ifft", y, (1,), (y.ndim - 1,), norm)
        return _four_step(y, forward, norm)
    if not forward:  # ifft(y) = conj(fft(conj(y))) with the scaling of the other side
        return _bluestein(y.conj(), _swap(norm)).conj()
    return _bluestein(y, norm)


def _resize(y: Array, n: int) -> Array:
    """``y`` cut or zero-padded to ``n`` along its last axis (as NumPy's ``n=``)."""
    k = y.shape[-1]
    if n < k:
        return y[..., :n]
    if n > k:
        return concatenate([y, zeros(y.shape[:-1] + (n - k,), y.dtype)], axis=-1)
    return y


def _long(name: str, y: Array, n: int, norm: str, dtype: np.dtype) -> Array:
    """``numpy.fft.<name>(y, n, axis=-1)`` for few long lanes."""
    if name in ("fft", "ifft"):
        return _c2c_long(_resize(y, n).astype(dtype), name == "fft", norm)
    if name == "rfft":
        full = _c2c_long(_resize(y, n).astype(dtype), True, norm)
        return full[..., : n // 2 + 1]
    if name == "ihfft":
        return _long("rfft", y, n, _swap(norm), dtype).conj()
    if name == "hfft":
        return _long("irfft", y.conj(), n, _swap(norm), dtype)
    # irfft: the Hermitian spectrum of length n from its first n//2 + 1 entries (the
    # imaginary parts of entries 0 and n/2 drop out of the real part, as in NumPy's c2r)
    half = n // 2 + 1
    work = _complex_of(dtype)
    z = _resize(y, half).astype(work)
    mirror = z[..., 1 : n - half + 1][..., ::-1].conj()
    full = concatenate([z, mirror], axis=-1) if mirror.shape[-1] else z
    return _c2c_long(full, False, norm).real.astype(dtype)


# ---- public transforms ----------------------------------------------------------------
def transform(name: str, a: Any, n: Any = None, axis: Any = -1, norm: Any = None) -> Array:
    """``numpy.fft.<name>(a, n, axis, norm)`` for a one-axis transform ``name``."""
    x = asarray(a)
    ax = _axis(axis, x.ndim)
    norm = _check_norm(norm)
    if n is None:
        n = (x.shape[ax] - 1) * 2 if name in ("irfft", "hfft") else x.shape[ax]
    n = _check_n(n)
    dtype = _result_dtype(name, x.dtype)
    out_shape = x.shape[:ax] + (_out_length(name, n),) + x.shape[ax + 1 :]
    if not _few_lanes(x, (ax,), out_shape, dtype) or x.size == 0:
        return _lanes(name, x, (n,), (ax,), norm)
    out = _long(name, moveaxis(x, ax, -1), n, norm, dtype)
    return moveaxis(out, -1, ax).astype(dtype, copy=False)


def cook_nd_args(x: Array, s: Any, axes: Any, invreal: bool) -> tuple[list[int], list[int]]:
    """NumPy's ``s``/``axes`` rules for the n-d transforms (and its deprecation warnings:
    ``axes=None`` with ``s``, ``None`` inside ``s``); axes normalized."""
    shapeless = s is None
    if axes is not None:
        axes = [_axis(a, x.ndim) for a in (axes if np.ndim(axes) else [axes])]
    if s is None:
        s = list(x.shape) if axes is None else [x.shape[a] for a in axes]
    else:
        s = list(s) if np.ndim(s) else [s]
    if axes is None:
        if not shapeless:
            warnings.warn(
                "`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy "
                "2.0). In a future version of NumPy, this will raise an error and `s[i]` "
                "will correspond to the size along the transformed axis specified by "
                "`axes[i]`. To retain current behaviour, pass a sequence [0, ..., k-1] "
                "to `axes` for an array of dimension k.",
                DeprecationWarning,
                stacklevel=5,  # (the caller of spartan.fft.fftn)
            )
        axes = [_axis(a, x.ndim) for a in range(-len(s), 0)]
    if len(s) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    if invreal and shapeless:
        s[-1] = (x.shape[axes[-1]] - 1) * 2
    if any(v is None for v in s):
        warnings.warn(
            "Passing an array containing `None` values to `s` is deprecated in NumPy "
            "2.0 and will raise an error in a future version of NumPy. To use the "
            "default behaviour of the corresponding 1-D transform, pass the value "
            "matching the default for its `n` parameter. To use the default behaviour "
            "for every axis, the `s` argument can be omitted.",
            DeprecationWarning,
            stacklevel=5,  # (the caller of spartan.fft.fftn)
        )
    cooked = []
    for v, a, last in zip(s, axes, range(len(axes) - 1, -1, -1)):
        if v is None:  # the 1-d transform's default n
            v = (x.shape[a] - 1) * 2 if invreal and last == 0 else x.shape[a]
        v = operator.index(v)
        cooked.append(x.shape[a] if v == -1 else v)
    return cooked, axes


def transform_nd(name: str, a: Any, s: Any = None, axes: Any = None, norm: Any = None) -> Array:
    """``numpy.fft.<name>(a, s, axes, norm)`` for an n-d transform ``name``."""
    x = asarray(a)
    s, axes = cook_nd_args(x, s, axes, name == "irfftn")
    norm = _check_norm(norm)
    if not axes:
        if name in ("rfftn", "irfftn"):
            raise IndexError("list index out of range")  # NumPy's, from its s[-1]
        return x
    for v in s:
        _check_n(v)
    return _nd(name, x, s, axes, norm)


def _nd(name: str, x: Array, s: list[int], axes: list[int], norm: str) -> Array:
    one = ND[name]
    c2c = "ifft" if name in ("ifftn", "irfftn") else "fft"
    if len(set(axes)) != len(axes):  # an axis twice: NumPy's loop, one axis at a time
        if name == "irfftn":
            for n, ax in zip(s[:-1], axes[:-1]):
                x = transform(c2c, x, n, ax, norm)
            return transform(one, x, s[-1], axes[-1], norm)
        x = transform(one, x, s[-1], axes[-1], norm)
        for n, ax in zip(s[-2::-1], axes[-2::-1]):
            x = transform(c2c, x, n, ax, norm)
        return x
    if len(axes) == 1:
        return transform(one, x, s[0], axes[0], norm)
    dtype = _result_dtype(name, x.dtype)
    out_len = dict(zip(axes, s))
    if name == "rfftn":
        out_len[axes[-1]] = s[-1] // 2 + 1
    out_shape = tuple(out_len.get(i, n) for i, n in enumerate(x.shape))
    if not _few_lanes(x, axes, out_shape, dtype):
        return _lanes(name, x, s, axes, norm)
    # the leading axis apart from the rest: each part has the other's lanes
    if name == "irfftn":
        x = transform(c2c, x, s[0], axes[0], norm)
        return _nd(name, x, s[1:], axes[1:], norm)
    return transform(c2c, _nd(name, x, s[1:], axes[1:], norm), s[0], axes[0], norm)


def fft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Array:
    """The 1-d discrete Fourier transform along ``axis`` (see :func:`numpy.fft.fft`).

    >>> complex(spartan.fft.fft(spartan.ones(8))[0])
    (8+0j)
    """
    return _store(transform("fft", a, n, axis, norm), out)


def ifft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Array:
    """The inverse of :func:`fft` (see :func:`numpy.fft.ifft`).

    >>> bool(spartan.allclose(spartan.fft.ifft(spartan.fft.fft(x)), x))
    True
    """
    return _store(transform("ifft", a, n, axis, norm), out)


def rfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Array:
    """The FFT of a real input, ``n // 2 + 1`` outputs (see :func:`numpy.fft.rfft`).

    >>> spartan.fft.rfft(spartan.ones(8)).shape
    (5,)
    """
    return _store(transform("rfft", a, n, axis, norm), out)


def irfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Array:
    """The inverse of :func:`rfft`: ``n`` real outputs (see :func:`numpy.fft.irfft`).

    >>> bool(spartan.allclose(spartan.fft.irfft(spartan.fft.rfft(x), n=x.shape[-1]), x))
    True
    """
    return _store(transform("irfft", a, n, axis, norm), out)


def hfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Array:
    """The FFT of a Hermitian-symmetric signal given by its first half: real outputs
    (see :func:`numpy.fft.hfft`).

    >>> spartan.fft.hfft(spartan.asarray([1, 2, 3, 4])).shape
    (6,)
    """
    return _store(transform("hfft", a, n, axis, norm), out)


def ihfft(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Array:
    """The inverse of :func:`hfft` (see :func:`numpy.fft.ihfft`).

    >>> spartan.fft.ihfft(spartan.ones(6)).shape
    (4,)
    """
    return _store(transform("ihfft", a, n, axis, norm), out)


def fftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Array:
    """The n-d FFT over ``axes`` (all by default; see :func:`numpy.fft.fftn`).

    >>> spartan.fft.fftn(x, axes=(0, 1)).shape
    (2, 3)
    """
    return _store(transform_nd("fftn", a, s, axes, norm), out)


def ifftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Array:
    """The inverse of :func:`fftn` (see :func:`numpy.fft.ifftn`).

    >>> bool(spartan.allclose(spartan.fft.ifftn(spartan.fft.fftn(x)), x))
    True
    """
    return _store(transform_nd("ifftn", a, s, axes, norm), out)


def rfftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Array:
    """The n-d FFT of a real input, halved along the last axis (see
    :func:`numpy.fft.rfftn`).

    >>> spartan.fft.rfftn(spartan.ones((4, 6))).shape
    (4, 4)
    """
    return _store(transform_nd("rfftn", a, s, axes, norm), out)


def irfftn(a: Any, s: Any = None, axes: Any = None, norm: Any = None, out: Any = None) -> Array:
    """The inverse of :func:`rfftn` (see :func:`numpy.fft.irfftn`).

    >>> y = spartan.ones((4, 6))
    >>> bool(spartan.allclose(spartan.fft.irfftn(spartan.fft.rfftn(y), y.shape), y))
    True
    """
    return _store(transform_nd("irfftn", a, s, axes, norm), out)


def fft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Array:
    """The 2-d FFT over the last two axes (see :func:`numpy.fft.fft2`).

    >>> spartan.fft.fft2(spartan.ones((4, 4))).shape
    (4, 4)
    """
    return _store(transform_nd("fftn", a, s, axes, norm), out)


def ifft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Array:
    """The inverse of :func:`fft2` (see :func:`numpy.fft.ifft2`).

    >>> bool(spartan.allclose(spartan.fft.ifft2(spartan.fft.fft2(x)), x))
    True
    """
    return _store(transform_nd("ifftn", a, s, axes, norm), out)


def rfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Array:
    """The 2-d FFT of a real input (see :func:`numpy.fft.rfft2`).

    >>> spartan.fft.rfft2(spartan.ones((4, 6))).shape
    (4, 4)
    """
    return _store(transform_nd("rfftn", a, s, axes, norm), out)


def irfft2(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None, out: Any = None) -> Array:
    """The inverse of :func:`rfft2` (see :func:`numpy.fft.irfft2`).

    >>> y = spartan.ones((4, 6))
    >>> bool(spartan.allclose(spartan.fft.irfft2(spartan.fft.rfft2(y), y.shape), y))
    True
    """
    return _store(transform_nd("irfftn", a, s, axes, norm), out)


# ---- frequencies and shifts -----------------------------------------------------------
class _Freq:
    """``newarray`` init: the sample frequencies ``k * val`` of positions ``k``, the
    upper ones wrapped to negative (``k - n`` from ``first_negative`` on)."""

    def __init__(self, n: int, first_negative: int, val: Any) -> None:
        self.n, self.first_negative, self.val = n, first_negative, val

    def __call__(self, box: Box, dtype: np.dtype) -> np.ndarray:
        ((lo, hi),) = box
        k = np.arange(lo, hi)  # NumPy's int, as in numpy.fft.fftfreq
        k = np.where(k < self.first_negative, k, k - self.n)
        return (k * self.val).astype(dtype, copy=False)


def _freq(n: Any, d: Any, size: int, first_negative: int, dtype: Any, device: Any) -> Array:
    val = 1.0 / (n * d)
    natural = (np.zeros(0, int) * val).dtype
    dtype = natural if dtype is None else np.dtype(dtype)
    out = newarray((size,), _Freq(n, first_negative, val), dtype, name="fftfreq")
    return out if device is None else out.to_device(device)


def _integer(n: Any) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, (bool, np.bool_)):
        raise ValueError("n should be an integer")
    return int(n)


def fftfreq(n: int, d: Any = 1.0, device: Any = None, *, dtype: Any = None) -> Array:
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d`` (see
    :func:`numpy.fft.fftfreq`; ``dtype=``/``device=`` from the array API standard).

    >>> spartan.fft.fftfreq(4, d=0.5).to_numpy()
    array([ 0. ,  0.5, -1. , -0.5])
    """
    n = _integer(n)
    return _freq(n, d, n, (n - 1) // 2 + 1, dtype, device)


def rfftfreq(n: int, d: Any = 1.0, device: Any = None, *, dtype: Any = None) -> Array:
    """The sample frequencies of :func:`rfft` (see :func:`numpy.fft.rfftfreq`).

    >>> spartan.fft.rfftfreq(4).to_numpy()
    array([0.  , 0.25, 0.5 ])
    """
    n = _integer(n)
    return _freq(n, d, n // 2 + 1, n // 2 + 1, dtype, device)


def _shift(x: Any, axes: Any, sign: int) -> Array:
    """``x`` rolled by half of each axis of ``axes`` (all: None), as NumPy rolls it."""
    x = asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    if isinstance(axes, (int, np.integer)):
        return roll(x, sign * (x.shape[_axis(axes, x.ndim)] // 2), int(axes))
    axes = tuple(axes)
    if not axes:  # nothing to roll: NumPy's roll copies
        return x.copy()
    return roll(x, [sign * (x.shape[_axis(a, x.ndim)] // 2) for a in axes], axes)


def fftshift(x: Any, axes: Any = None) -> Array:
    """The zero frequency moved to the middle (see :func:`numpy.fft.fftshift`).

    >>> spartan.fft.fftshift(spartan.fft.fftfreq(4)).to_numpy()
    array([-0.5 , -0.25,  0.  ,  0.25])
    """
    return _shift(x, axes, 1)


def ifftshift(x: Any, axes: Any = None) -> Array:
    """The inverse of :func:`fftshift` (see :func:`numpy.fft.ifftshift`).

    >>> spartan.fft.ifftshift(spartan.fft.fftshift(x))
    array([[0., 1., 2.],
           [3., 4., 5.]])
    """
    return _shift(x, axes, -1)


__all__ = [
    "fft",
    "ifft",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftfreq",
    "rfftfreq",
    "fftshift",
    "ifftshift",
]
