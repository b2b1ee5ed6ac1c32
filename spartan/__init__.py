"""Spartan: distributed NumPy on Ray with automatic tiling.

>>> import spartan as np
>>> x = np.random.rand(1000, 10)
>>> x.shape, float((x * 0 + 2).sum())
((1000, 10), 20000.0)

Arrays are lazy; operations build an expression graph that is tiled, fused and run
on the workers when a result is needed. Start workers with :func:`init` (or let the
first evaluation start a local Ray instance).
"""

from __future__ import annotations

__version__ = "0.2.0"
#: the array API standard version this namespace implements (see docs/array-api.md)
__array_api_version__ = "2024.12"

from typing import Any

import numpy as _np

from spartan import backend
from spartan.backend.base import WorkerLostError
from spartan.backend.base import driver_time as _driver_time
from spartan.backend.device import array_module as get_array_module
from spartan.backend.seen import TileChangedError
from spartan.backend.session import InsecureClusterWarning, init, shutdown
from spartan.config import config
from spartan.frontend.array import Array, ndarray
from spartan.frontend.evaluate import compute as _compute
from spartan.frontend.evaluate import evaluate as _evaluate
from spartan.frontend.implicit_fetch import ImplicitFetchWarning
from spartan.numpy_api import *  # noqa: F403
from spartan.numpy_api import array_namespace_info as __array_namespace_info__
from spartan.tiling import Tiling

#: functions that handle small arrays themselves (NumPy's would share their memory)
_OWN_SMALL = frozenset({"from_dlpack"})


def _device_checked(function: Any, impl: Any) -> Any:
    """``function`` (``impl`` run NumPy-first) with its ``device=`` checked and kept
    from NumPy: NumPy knows only "cpu", and a session has one device, so once checked
    the keyword changes nothing."""
    import functools
    import inspect

    from spartan.backend.device import check_device

    if "device" not in inspect.signature(impl).parameters:
        return function

    @functools.wraps(impl)
    def checked(*args: Any, **kwargs: Any) -> Any:
        check_device(kwargs.pop("device", None), impl.__name__)
        return function(*args, **kwargs)

    return checked


def _numpy_first() -> None:
    """Every NumPy function of the namespace (and of ``spartan.linalg``, ``spartan.fft``) runs NumPy in
    the driver when its spartan array arguments are all small (spartan.frontend.small)."""
    from spartan import fft as _fft
    from spartan import linalg as _linalg
    from spartan.frontend.small import local_first

    for space, reference in ((globals(), _np), (vars(_linalg), _np.linalg), (vars(_fft), _np.fft)):
        for name, impl in list(space.items()):
            np_func = getattr(reference, name, None)
            if (
                name.startswith("_")
                or name in _OWN_SMALL
                or not callable(impl)
                or isinstance(impl, type)
                or getattr(impl, "__module__", "").startswith("numpy")
                or not callable(np_func)
                or isinstance(np_func, (type, _np.ufunc))  # spartan's ufuncs do it themselves
            ):
                continue
            space[name] = _device_checked(local_first(np_func, impl), impl)


_numpy_first()


def evaluate(*arrays: Array) -> Array | tuple[Array, ...]:
    """Compute ``arrays`` now (together, sharing common work) and keep the results.

    >>> a, b = spartan.evaluate(x + 1, x * 2)
    """
    _evaluate(*(a._expr for a in arrays if a._np is None))  # (small ones are computed)
    return arrays[0] if len(arrays) == 1 else arrays


def compute(*arrays: Any) -> tuple[Any, ...]:
    """``arrays`` as NumPy arrays on the driver, like ``dask.compute``: evaluated
    together (sharing common work) and fetched in the same round trip. Arguments that
    are not spartan arrays come back as they are.

    >>> x_np, norm = spartan.compute(x, spartan.linalg.norm(x))
    """
    lazy = [a for a in arrays if isinstance(a, Array) and a._np is None]
    values = iter(_compute(*(a._expr for a in lazy)))
    return tuple(
        (a.to_numpy() if a._np is not None else next(values)) if isinstance(a, Array) else a
        for a in arrays
    )


def stats() -> dict[str, Any]:
    """Worker counters since :func:`reset_stats`: tasks, bytes moved between workers
    (and between nodes), bytes pulled to and pushed from the driver; and the driver's
    own seconds per evaluation phase, ``driver_seconds`` (plan, lower, dispatch, wait:
    :class:`spartan.backend.base.DriverTime`)."""
    return backend.current().stats().as_dict()


def reset_stats() -> None:
    backend.current().reset_stats()
    _driver_time.reset()


def numpy_function(func: Any) -> Any:
    """The spartan implementation of a NumPy function (for ``__array_function__``)."""
    name = getattr(func, "__name__", None)
    module = getattr(func, "__module__", "") or ""
    if module.startswith("numpy.linalg"):
        from spartan import linalg as _linalg

        return getattr(_linalg, name, None)
    if module.startswith("numpy.fft"):
        from spartan import fft as _fft

        return getattr(_fft, name, None)
    if module.startswith("numpy.lib.stride_tricks"):
        from spartan.frontend import stride_tricks

        return getattr(stride_tricks, name, None)
    if module.startswith(("numpy.random", "numpy.ma", "numpy.polynomial")):
        return None
    impl = globals().get(name)
    # a name spartan re-exports from NumPy is NumPy's function itself: calling it again
    # would come back here forever
    if impl is func or not callable(impl) or isinstance(impl, type):
        return None
    return impl


def __getattr__(name: str) -> Any:
    """A NumPy name spartan has no distributed version of: say so clearly."""
    if not name.startswith("_") and hasattr(_np, name):
        raise AttributeError(
            f"spartan has no distributed version of numpy.{name}; if the data fits in one "
            f"process, call numpy.{name} on x.to_numpy() explicitly"
        )
    raise AttributeError(f"module 'spartan' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(n for n in globals() if not n.startswith("_"))


from spartan.frontend.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from spartan.frontend.explain import explain  # noqa: E402
