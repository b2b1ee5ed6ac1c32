"""The Python array API standard (2023.12) inspection namespace for spartan.

``spartan.__array_namespace_info__()`` (the lead binds the dunder name in
``spartan/__init__.py``) describes what the namespace supports: devices, default and
available dtypes, and capabilities (boolean indexing gives data-dependent shapes).

>>> info = sp.__array_namespace_info__(); info.default_dtypes()   # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spartan.frontend.array import Array

_KINDS = {
    "bool": ["bool"],
    "signed integer": ["int8", "int16", "int32", "int64"],
    "unsigned integer": ["uint8", "uint16", "uint32", "uint64"],
    "integral": ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"],
    "real floating": ["float32", "float64"],
    "complex floating": ["complex64", "complex128"],
    "numeric": [
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ],
}


class Info:
    """What :func:`array_namespace_info` returns (see the array API standard)."""

    __module__ = "spartan"

    def capabilities(self) -> dict[str, Any]:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        return "cpu"

    def devices(self) -> list[str]:
        return ["cpu"]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        return {
            "real floating": np.dtype(np.float64),
            "complex floating": np.dtype(np.complex128),
            "integral": np.dtype(np.intp),
            "indexing": np.dtype(np.intp),
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        if kind is None:
            names = _KINDS["bool"] + _KINDS["numeric"]
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            names = []
            for k in kinds:
                if k not in _KINDS:
                    raise ValueError(f"unsupported dtype kind {k!r}")
                names += [n for n in _KINDS[k] if n not in names]
        return {n: np.dtype(n) for n in names}


def array_namespace_info() -> Info:
    """The array API inspection object for spartan's namespace."""
    return Info()


def from_dlpack(x: Any, /, *, device: Any = None, copy: Any = None) -> Array:
    """A spartan array from any DLPack-capable object (sent from the driver once)."""
    from spartan.frontend.creation import array

    return array(np.from_dlpack(x))
