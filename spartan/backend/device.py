"""The array-module seam: one code path for tiles in NumPy (CPU) or CuPy (GPU) memory.

Task functions call :func:`array_module` on their blocks and use what it returns
(``numpy`` or ``cupy``), so one body serves both devices; a GPU worker keeps its blocks
in device memory and sends pieces to other workers through host memory.

>>> def f(block):
...     xp = spartan.get_array_module(block)      # numpy here, cupy on a GPU worker
...     return xp.tanh(block)
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

import numpy as np

from spartan.backend.layout import copy_into


def cupy_module() -> ModuleType | None:
    """CuPy if it is installed and sees a GPU, else None."""
    try:
        import cupy

        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # noqa: BLE001 -- no CuPy, no driver or no device: all mean "no GPU"
        return None


#: where a session can keep its tiles: "cpu" (NumPy memory) or "gpu" (CuPy memory). A
#: session has exactly one of them (``spartan.init(device=...)``); the array API's device
#: objects are these strings, as NumPy's are "cpu"
DEVICES = ("cpu", "gpu")


def session_device() -> str:
    """Where the current session keeps its tiles, ``"cpu"`` or ``"gpu"``; starts nothing.

    The running backend's device if there is one (or a background start's, once it is
    done), else the device the next start would choose: ``SPARTAN_DEVICE`` (default
    ``"cpu"``), with ``"auto"`` read as "gpu" when CuPy sees a GPU here (a Ray start
    decides "auto" by the cluster's GPUs, which only a start can ask).

    >>> session_device()
    'cpu'
    """
    from spartan.backend import session

    found = session.peek()
    if found is not None:
        return getattr(found, "device", "cpu")
    # a start under way: read its state, never wait for it (that could take seconds)
    pending = getattr(session, "_pending", None)
    if pending is not None and pending.done.is_set() and pending.backend is not None:
        return getattr(pending.backend, "device", "cpu")
    if pending is not None:
        device = pending.args["device"]
    else:
        device = os.environ.get("SPARTAN_DEVICE") or "cpu"
    if device == "auto":
        return "gpu" if cupy_module() is not None else "cpu"
    if device not in DEVICES:
        raise ValueError(
            f"unknown device {device!r} in SPARTAN_DEVICE; expected 'cpu', 'gpu' or 'auto'"
        )
    return device


def check_device(device: Any, where: str) -> str:
    """``device`` as this session's device name (None: the session's); ValueError naming
    it when it is no device of spartan's, or not the one this session keeps tiles on.

    >>> check_device("cpu", "zeros")
    'cpu'
    """
    here = session_device()
    if device is None:
        return here
    if not isinstance(device, str) or device not in DEVICES:
        raise ValueError(
            f"{where}: unknown device {device!r}; spartan's devices are 'cpu' (tiles in "
            f"NumPy memory) and 'gpu' (tiles in CuPy memory), and this session's is {here!r}"
        )
    if device != here:
        raise ValueError(
            f"{where}: device {device!r} is not available: this session keeps its tiles on "
            f"{here!r} (a session has one device, chosen by spartan.init(device=...))"
        )
    return here


def array_module(*arrays: Any) -> ModuleType:
    """``cupy`` if any of ``arrays`` lives on a GPU, else ``numpy``."""
    cupy = sys.modules.get("cupy")
    if cupy is not None and any(isinstance(a, cupy.ndarray) for a in arrays):
        return cupy
    return np


def contiguous(block: Any) -> Any:
    """``block`` in C order with its shape kept (``ascontiguousarray`` makes 0-d arrays 1-d)."""
    if block.flags.c_contiguous:
        return block
    if not isinstance(block, np.ndarray):
        return block.copy(order="C")
    out = np.empty(block.shape, block.dtype)
    copy_into(out, block)
    return out


def to_host(value: Any) -> Any:
    """``value`` with every GPU array copied to host memory (tuples/lists too)."""
    if isinstance(value, np.ndarray):
        return value
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(value, cupy.ndarray):
        return cupy.asnumpy(value)
    if isinstance(value, (tuple, list)):
        return type(value)(to_host(v) for v in value)
    return value


def asarray_in(xp: ModuleType, value: Any) -> Any:
    """``value`` as an array of the array module ``xp`` (``numpy`` or ``cupy``), copied
    between host and GPU memory where it lives on the other one."""
    if xp is np:
        return np.asarray(to_host(value))
    return xp.asarray(value)


def to_device(value: Any, device: str) -> Any:
    """``value`` with its NumPy arrays moved to ``device`` (structured dtypes stay on
    the host: CuPy has none)."""
    if device != "gpu":
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.fields is not None or value.dtype == object:
            return value
        import cupy

        return cupy.asarray(value)
    if isinstance(value, (tuple, list)):
        return type(value)(to_device(v, device) for v in value)
    return value


_CUPY_REDUCE = {
    "add": "sum",
    "multiply": "prod",
    "maximum": "max",
    "minimum": "min",
    "logical_and": "all",
    "logical_or": "any",
}


def reduce(ufunc: np.ufunc, block: Any, axis: Any, dtype: Any) -> Any:
    """``ufunc.reduce`` on either device (CuPy has it for few ufuncs)."""
    xp = array_module(block)
    if xp is np:
        return ufunc.reduce(block, axis=axis, dtype=dtype)
    name = _CUPY_REDUCE.get(ufunc.__name__)
    if name is None:
        return xp.asarray(ufunc.reduce(to_host(block), axis=axis, dtype=dtype))  # via host
    kwargs = {"dtype": dtype} if name in ("sum", "prod") else {}
    out = getattr(xp, name)(block, axis=axis, **kwargs)
    return out if dtype is None or name in ("sum", "prod") else out.astype(dtype)


def accumulate(ufunc: np.ufunc, block: Any, axis: int, dtype: Any) -> Any:
    """``ufunc.accumulate`` on either device (CuPy lacks it for some ufuncs)."""
    xp = array_module(block)
    if xp is np:
        return ufunc.accumulate(block, axis=axis, dtype=dtype)
    special = {np.add: xp.cumsum, np.multiply: xp.cumprod}
    if ufunc in special:
        return special[ufunc](block, axis=axis, dtype=dtype)
    out = ufunc.accumulate(to_host(block), axis=axis, dtype=dtype)  # rare: via the host
    return xp.asarray(out)


def ufunc_at(ufunc: np.ufunc, out: Any, indices: Any, values: Any = None) -> Any:
    """``ufunc.at(out, indices[, values])`` on either device; returns the array holding
    the result: ``out`` itself, or a new one where CuPy lacks the method (it then runs
    on the host)."""
    args = () if ufunc.nin == 1 else (values,)
    xp = array_module(out)
    if xp is np:
        ufunc.at(out, indices, *args)
        return out
    method = getattr(getattr(xp, ufunc.__name__, None), "at", None)
    if method is not None and ufunc.nin == 2:
        try:  # CuPy scatters add, subtract, maximum, minimum ... (it checks before writing)
            method(out, xp.asarray(indices), xp.asarray(values))
            return out
        except (NotImplementedError, TypeError):
            pass
    host = to_host(out)
    ufunc.at(host, to_host(indices), *(to_host(a) for a in args))
    return xp.asarray(host)


def sync_device() -> None:
    """Wait for the kernels queued on this process's current GPU."""
    import cupy

    cupy.cuda.Device().synchronize()


def gpu_memory() -> int:
    """Free bytes on this process's current GPU (0 without one)."""
    cupy = cupy_module()
    if cupy is None:
        return 0
    free, _total = cupy.cuda.runtime.memGetInfo()
    return int(free)
