"""Implicit fetches: ``numpy.asarray(x)`` on a large distributed array.

``Array.__array__`` is how code written for NumPy turns a spartan array into a NumPy
one, and so how a library without array API support (scikit-learn with dispatch off,
SciPy outside its array API list, xarray's ``interp``) would gather a whole distributed
array into one process without the user asking. Above
``spartan.config.implicit_fetch_bytes`` such a fetch is not silent:
``config.implicit_fetch`` chooses a warning naming the caller (the default), a
``TypeError``, or nothing. ``x.to_numpy()`` and ``spartan.compute`` say what they do and
never come here.

>>> import warnings, numpy, spartan
>>> spartan.config.implicit_fetch = "raise"
>>> big = spartan.ones(10**7)     # 80 MB, above implicit_fetch_bytes
>>> numpy.asarray(big)
Traceback (most recent call last):
TypeError: a NumPy conversion (numpy.asarray, called from ...) fetches a distributed ...
"""

from __future__ import annotations

import os
import sys
import warnings
from types import FrameType

import numpy as np

from spartan.config import config

POLICIES = ("warn", "raise", "allow")

# frames in these folders are the fetch's machinery, not its caller
_INSIDE = (
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
    os.path.dirname(os.path.abspath(np.__file__)) + os.sep,
)


class ImplicitFetchWarning(UserWarning):
    """``numpy.asarray`` (``__array__``) fetched a large distributed array into the
    driver; see ``spartan.config.implicit_fetch``."""

    __module__ = "spartan"


def _caller() -> tuple[str, int]:
    """(where, stacklevel) of the first frame outside spartan and NumPy: the code that
    asked NumPy for an array, and the ``warnings.warn`` stacklevel that points at it."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_INSIDE):
        frame, level = frame.f_back, level + 1
    if frame is None:
        return "?", 1
    return f"{frame.f_code.co_filename}:{frame.f_lineno}", level


def check(nbytes: int, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Apply ``config.implicit_fetch`` to an implicit fetch of ``nbytes`` bytes."""
    policy = config.implicit_fetch
    if policy not in POLICIES:
        raise ValueError(f"spartan.config.implicit_fetch is {policy!r}; expected one of {POLICIES}")
    if policy == "allow" or nbytes <= config.implicit_fetch_bytes:
        return
    where, level = _caller()
    what = (
        f"a NumPy conversion (numpy.asarray, called from {where}) fetches a distributed "
        f"spartan array of shape {shape}, {dtype} ({nbytes:,} bytes) whole into the driver"
    )
    advice = (
        "call x.to_numpy() where that is meant; a library that gathers here does not "
        "support spartan arrays through the array API for this call"
    )
    if policy == "raise":
        raise TypeError(f"{what}; spartan.config.implicit_fetch is 'raise': {advice}")
    warnings.warn(f"{what}: {advice}", ImplicitFetchWarning, stacklevel=level)
