"""The Python array API standard (2024.12) inspection namespace and DLPack import.

``spartan.__array_namespace_info__()`` describes what the namespace supports, true to
what spartan does: its one device is where the session keeps its tiles ("cpu": NumPy
memory, "gpu": CuPy memory; see :func:`spartan.backend.device.session_device`), the
dtypes are those tiles can hold there, and boolean indexing gives data-dependent shapes.

>>> info = sp.__array_namespace_info__()
>>> info.devices(), info.default_device()
(['cpu'], 'cpu')
>>> x = sp.zeros(3); x.device == info.default_device()
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from spartan.backend.device import check_device, session_device
from spartan.frontend.array import API_VERSIONS as _API_VERSIONS

if TYPE_CHECKING:
    from spartan.frontend.array import Array

#: the version of the standard spartan implements (``spartan.__array_api_version__``)
API_VERSION = "2024.12"
#: the versions ``x.__array_namespace__(api_version=...)`` accepts (defined with the
#: method, in the core module that must not import this one)
API_VERSIONS = _API_VERSIONS

#: the most axes an array may have: spartan computes shapes with NumPy's
#: ``broadcast_shapes``, which takes at most 32 (tests/test_array_api_device.py checks
#: that 32 works)
MAX_DIMENSIONS = 32

_INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
_KINDS = {
    "bool": ["bool"],
    "signed integer": _INTEGERS[:4],
    "unsigned integer": _INTEGERS[4:],
    "integral": _INTEGERS,
    "real floating": ["float32", "float64"],
    "complex floating": ["complex64", "complex128"],
    "numeric": [*_INTEGERS, "float32", "float64", "complex64", "complex128"],
}


class Info:
    """What ``spartan.__array_namespace_info__()`` returns (see the array API standard).

    Every method that takes ``device=`` raises ValueError for a device this session
    does not have (see :func:`~spartan.backend.device.check_device`).
    """

    __module__ = "spartan"

    def capabilities(self) -> dict[str, Any]:
        """``{"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 32}``:
        ``x[mask]``, ``nonzero`` and ``unique_*`` work on distributed arrays."""
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": MAX_DIMENSIONS,
        }

    def default_device(self) -> str:
        """Where new arrays' tiles live: the session's device, ``"cpu"`` or ``"gpu"``."""
        return session_device()

    def devices(self) -> list[str]:
        """The devices arrays may be on: a session has one (``spartan.init(device=)``)."""
        return [session_device()]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        """NumPy's defaults (the same on either device)."""
        check_device(device, "default_dtypes")
        return {
            "real floating": np.dtype(np.float64),
            "complex floating": np.dtype(np.complex128),
            "integral": np.dtype(np.intp),
            "indexing": np.dtype(np.intp),
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        """The standard's dtypes of ``kind`` (a kind name or a tuple of them; None: all).
        CuPy holds every one of them, so a GPU session has the same as a CPU one."""
        check_device(device, "dtypes")
        if kind is None:
            names = _KINDS["bool"] + _KINDS["numeric"]
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            names = []
            for k in kinds:
                if not isinstance(k, str) or k not in _KINDS:
                    raise ValueError(
                        f"unsupported dtype kind {k!r}; expected one of {', '.join(_KINDS)}"
                    )
                names += [n for n in _KINDS[k] if n not in names]
        return {n: np.dtype(n) for n in names}


def array_namespace_info() -> Info:
    """The array API inspection object for spartan's namespace.

    >>> sp.__array_namespace_info__().capabilities()["max dimensions"]
    32
    """
    return Info()


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """A spartan array from any DLPack-capable object.

    A spartan array comes back as it is (``copy=True``: a copy). Another library's
    buffer is copied into spartan's memory (sent from the driver once): spartan never
    shares memory with another library's array, so ``copy=False`` raises BufferError.

    >>> sp.from_dlpack(np.arange(3.0))
    array([0., 1., 2.])
    """
    from spartan.frontend.array import Array
    from spartan.frontend.creation import asarray

    check_device(device, "from_dlpack")
    if isinstance(x, Array):
        return x.copy() if copy else x
    if copy is False:
        raise BufferError(
            f"from_dlpack: a spartan array never shares memory with a "
            f"{type(x).__module__}.{type(x).__name__}; its data must be copied "
            "(pass copy=None or copy=True)"
        )
    # the host copy NumPy makes of a GPU buffer (copy=True) is ours to keep
    host = np.from_dlpack(x, device="cpu", copy=None if copy is None else True)
    return asarray(host)
