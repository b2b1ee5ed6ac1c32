"""``spartan.Array``: the lazy, NumPy-like handle users hold.

Shape and dtype are known without computing; arithmetic builds expression nodes;
``bool``, ``float``, ``repr``, ``np.asarray`` and friends force evaluation. NumPy's
``__array_ufunc__``/``__array_function__`` protocols route ``numpy.exp(x)`` or
``numpy.sum(x)`` here, and anything without a distributed implementation raises
``TypeError`` rather than silently gathering the array.

>>> import spartan as sp
>>> x = sp.arange(6).reshape(2, 3)
>>> (x * 2).sum(axis=0)
array([ 6, 10, 14])
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from spartan.backend import session
from spartan.config import config
from spartan.frontend.aliasing import Buffer
from spartan.frontend.docstrings import derived_from
from spartan.frontend.expr import Expr
from spartan.frontend.view import View
from spartan.tiling import Tiling

#: the array API standard versions ``x.__array_namespace__(api_version=...)`` accepts
#: (a later version only adds to an earlier one, so the namespace serves them all)
API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")
_NoValue: Any = np._NoValue  # NumPy's "argument not given" (initial=)
_Order = Literal["K", "A", "C", "F"]
_Casting = Literal["no", "equiv", "safe", "same_kind", "same_value", "unsafe"]


class Array:
    """A distributed n-dimensional array (lazy). Alias: ``spartan.ndarray``.

    A handle is one of two kinds. A *small* array (under
    ``spartan.config.local_below_bytes``, made without a ``tiling=``) holds a NumPy array
    in the driver and computes eagerly with NumPy, at NumPy's speed and with NumPy's
    views; it enters a distributed expression as a constant (a copy of its values when
    the expression is built). Any other array is lazy: it shares a
    :class:`~spartan.frontend.aliasing.Buffer` with its views (NumPy's ``base``), seen
    through a path of view links.
    """

    __slots__ = ("_buf", "_path", "_derived", "_np", "__weakref__")
    #: a lazy array's Buffer, or a small array's small.Memory: ``_np`` tells which
    #: (None: lazy), and each method branches on it
    _buf: Any
    __array_priority__ = 100

    def __init__(self, expr: Expr) -> None:
        if not isinstance(expr, Expr):
            raise TypeError("use spartan.array(...) to make an Array from data")
        self._path: tuple = ()
        self._derived: tuple | None = None
        self._np = _small_values(expr)
        if self._np is not None:
            self._buf = small.Memory()
            return
        self._buf = Buffer(expr)
        # the workers will be needed: start them now, while the driver goes on
        session.start_in_background()

        if expr.pending > config.max_graph_size:
            # ``pending`` sums over inputs, so shared sub-expressions are counted once per
            # path: an upper bound. Count exactly before forcing an evaluation.
            from spartan.frontend.evaluate import pending_order

            expr.pending = len(pending_order([expr]))
            if expr.pending > config.max_graph_size:
                self.evaluate()
        if expr.depth > config.max_graph_depth:  # a long loop: before recursion could matter
            from spartan.frontend.evaluate import too_deep

            if too_deep(expr):
                self.evaluate()

    @classmethod
    def _local(cls, values: np.ndarray, memory: Any = None) -> Array:
        """A small array holding ``values`` (not copied: NumPy views stay views), in
        ``memory`` (the :class:`~spartan.frontend.small.Memory` of the array it views)."""
        out = cls.__new__(cls)
        out._np, out._path, out._derived = values, (), None
        out._buf = small.Memory() if memory is None else memory
        return out

    def _linked(self, link: Any) -> Array:
        """A view of this array through ``link``: it shares this array's buffer."""
        from spartan.frontend.aliasing import extend

        if self._np is not None:  # a small array: a snapshot, like any other operand
            return Array(link.apply(self._expr))
        if math.prod(link.shape) == 0:  # nothing to share (NumPy: shares no memory)
            from spartan.frontend.source import FromNumpy

            return Array(FromNumpy(np.empty(link.shape, self.dtype)))
        out = Array.__new__(Array)
        out._np, out._buf, out._derived = None, self._buf, None
        out._path = extend(self._path, link)
        return out

    @property
    def _expr(self) -> Expr:
        """This array's expression: a view derived from its buffer's current contents,
        or, for a small array, a constant holding a copy of its values."""
        if self._np is not None:
            return small.snapshot(self)
        if not self._path:
            return self._buf.expr
        derived = self._derived
        if derived is not None and derived[0] is self._buf.expr:
            return derived[1]
        from spartan.frontend.aliasing import derive

        expr = derive(self._buf, self._path)
        self._derived = (self._buf.expr, expr)
        return expr

    @_expr.setter
    def _expr(self, expr: Expr) -> None:
        """Overwrite every element (through a view: in its base) with ``expr``'s."""
        self[...] = Array(expr)

    # ---- metadata (no computation) -----------------------------------------------------
    @property
    def _meta(self) -> Any:
        """What knows this array's shape and dtype without computing it."""
        return self._np if self._np is not None else self._expr

    @property
    def shape(self) -> tuple[int, ...]:
        return self._meta.shape

    @property
    def dtype(self) -> np.dtype:
        return self._meta.dtype

    @property
    def ndim(self) -> int:
        return len(self._meta.shape)

    @property
    def size(self) -> int:
        return math.prod(self._meta.shape)

    @property
    def itemsize(self) -> int:
        return self._meta.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self._meta.dtype.itemsize

    @property
    def T(self) -> Array:
        return self.transpose()

    @property
    def mT(self) -> Array:
        from spartan.frontend import manipulation

        return self._numpy_function("matrix_transpose", manipulation.matrix_transpose)

    @property
    def tiling(self) -> Tiling | None:
        """The tiling of an evaluated array (None while it is pending, or for a small
        array held in the driver)."""
        if self._np is not None:
            return None
        e = self._expr
        if isinstance(e, View):
            return e.induced_tiling(e.base.data.tiling) if e.base.data is not None else None
        return e.data.tiling if e.data is not None else None

    @property
    def real(self) -> Array:
        from spartan.frontend import elementwise

        return self._numpy_function("real", elementwise.real)

    @property
    def imag(self) -> Array:
        from spartan.frontend import elementwise

        return self._numpy_function("imag", elementwise.imag)

    # ---- forcing ---------------------------------------------------------------------------
    def evaluate(self) -> Array:
        """Compute this array now on the workers and keep the result (a small array
        held in the driver is computed already); returns the array itself.

        >>> (x + 1).evaluate().shape
        (2, 3)
        """
        if self._np is None:
            from spartan.frontend.evaluate import evaluate

            evaluate(self._expr)
        return self

    def to_numpy(self) -> np.ndarray:
        """The whole array as a NumPy array on the driver (a copy)."""
        if self._np is not None:
            return self._np.copy()
        from spartan.frontend.evaluate import to_numpy

        return to_numpy(self._expr)

    glom = to_numpy

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's conversion protocol: a copy of the values in the driver. A distributed
        array is fetched to the driver, so ``copy=False`` raises ValueError for it
        (NumPy 2's rule); for a small array it gives a read-only view of its memory
        (writes go through the spartan array, which tracks them)."""
        if copy is False:
            if self._np is None:
                raise ValueError(
                    "unable to avoid copy: a distributed spartan array is copied to the "
                    "driver to make a NumPy array (pass copy=None)"
                )
            if dtype is not None and np.dtype(dtype) != self.dtype:
                raise ValueError(
                    f"unable to avoid copy: casting a spartan array of {self.dtype} to "
                    f"{np.dtype(dtype)} makes a new array"
                )
            view = self._np.view()
            view.flags.writeable = False
            return view
        if self._np is None:
            from spartan.frontend import implicit_fetch

            implicit_fetch.check(self.nbytes, self.shape, self.dtype)
        out = self.to_numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    @derived_from(np.ndarray, note="A distributed array's element is fetched from its worker.")
    def item(self, *args: Any) -> Any:
        if self._np is not None:
            return self._np.item(*args)
        if len(args) == 1 and isinstance(args[0], (int, np.integer)):
            flat = int(args[0])  # one integer: a flat index, as NumPy's
            if not -self.size <= flat < self.size:
                raise IndexError(f"index {flat} is out of bounds for size {self.size}")
            return self[np.unravel_index(flat % self.size, self.shape)].item()
        if args:
            return self[args if len(args) > 1 else args[0]].item()
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.to_numpy().item()

    @derived_from(np.ndarray, note="A distributed array is fetched to the driver first.")
    def tolist(self) -> Any:
        return self._np.tolist() if self._np is not None else self.to_numpy().tolist()

    def __bool__(self) -> bool:
        if self._np is not None:
            return bool(self._np)
        if self.size != 1:
            raise ValueError(
                "The truth value of an array with more than one element is ambiguous. "
                "Use a.any() or a.all()"
            )
        return bool(self.item())

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __index__(self) -> int:
        if not np.issubdtype(self.dtype, np.integer):
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return operator.index(self._scalar("index"))

    def __round__(self, ndigits: int | None = None) -> Any:
        """``round(x)`` of a 0-d array: a Python int (``ndigits`` None) or a 0-d array."""
        if ndigits is None:
            return round(self._scalar("round"))
        from spartan.frontend import elementwise

        return self._numpy_function("round", elementwise.round, (ndigits,))

    def __format__(self, spec: str) -> str:
        """``f"{x:.2f}"``: a 0-d array formats as its scalar (NumPy's rule); other
        arrays only with an empty spec."""
        if self.ndim == 0:
            return format(self.to_numpy()[()], spec)
        if spec:
            raise TypeError(f"unsupported format string passed to {type(self).__name__}.__format__")
        return str(self)

    def __hash__(self) -> int:
        """Arrays are mutable, so only a 0-d one hashes: as its scalar, like a NumPy scalar
        a NumPy reduction returns (``{x.sum(): ...}``)."""
        if self.ndim != 0:
            raise TypeError(f"unhashable type: '{type(self).__name__}'")
        return hash(self.to_numpy()[()])

    def _scalar(self, kind: str) -> Any:
        if self.ndim != 0:
            if self.size == 1 and kind != "index":
                raise TypeError("only length-1 arrays can be converted to Python scalars")
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        if self._np is not None:
            return self._np.item()
        return self.to_numpy().reshape(()).item()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        # raised here, not at the first next(): np.iterable(x) calls iter(x) alone
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        from spartan.frontend.printing import array_repr

        return array_repr(self)

    def __str__(self) -> str:
        from spartan.frontend.printing import array_str

        return array_str(self)

    def _repr_html_(self) -> str:
        from spartan.frontend.printing import array_html

        return array_html(self)

    # ---- NumPy protocols ---------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        out = small.call(getattr(ufunc, method), inputs, kwargs)
        if out is not small.NO:
            return out
        from spartan.frontend import ufuncs

        return ufuncs.dispatch(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        # small arrays are in the driver already: any NumPy function runs on them
        out = small.call(func, args, kwargs)
        if out is not small.NO:
            return out
        import spartan  # (the whole namespace: NumPy's function names any of it)

        impl = spartan.numpy_function(func)
        if impl is None:
            return NotImplemented
        return impl(*args, **kwargs)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The ``spartan`` module, which implements array API standard versions
        2021.12 to 2024.12 (ValueError for any other ``api_version``).

        >>> xp = x.__array_namespace__(api_version="2023.12")
        """
        if api_version is not None and api_version not in API_VERSIONS:
            raise ValueError(
                f'Version "{api_version}" of the Array API Standard is not supported; '
                f"spartan implements {', '.join(API_VERSIONS)}"
            )
        import spartan

        return spartan

    # ---- devices and DLPack (the array API standard) -----------------------------------
    @property
    def device(self) -> str:
        """Where this array's tiles live: ``"cpu"`` (NumPy memory) or ``"gpu"`` (CuPy
        memory), the device of the session that computed it (or will). A small array
        held in the driver enters every computation as tiles on that device too. Asking
        starts no workers.

        >>> sp.zeros(3).device == sp.__array_namespace_info__().default_device()
        True
        """
        from spartan.backend.device import session_device

        if self._np is None:
            e = self._expr
            data = e.base.data if isinstance(e, View) else e.data
            if data is not None:
                return data.backend.device
        return session_device()

    @derived_from(
        np.ndarray,
        note="Spartan's devices are ``'cpu'`` and ``'gpu'``: the one a session keeps its "
        "tiles on (a ValueError for the other).",
    )
    def to_device(self, device: Any, /, *, stream: Any = None) -> Array:
        """This array on ``device``: itself, since a session keeps every tile on its
        one device (``spartan.init(device=...)``); ValueError for another device.

        >>> x.to_device(x.device) is x
        True
        """
        from spartan.backend.device import check_device

        if stream is not None:
            raise ValueError("to_device: spartan has no streams (stream must be None)")
        here = self.device
        if device != here:
            check_device(device, "to_device")  # (names an unknown device)
            raise ValueError(
                f"to_device: this array's tiles are on {here!r} and a spartan session keeps "
                f"every tile on one device; start a session with "
                f"spartan.init(device={device!r}) for arrays on {device!r}"
            )
        return self

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(1, 0)``, DLPack's CPU: :meth:`__dlpack__` exports a buffer in the
        driver's host memory (a GPU session's tiles are copied there too)."""
        return (1, 0)  # (kDLCPU, device 0)

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule of this array's values in the driver's host memory, for
        ``numpy.from_dlpack(x)``, ``torch.from_dlpack(x)`` and the like.

        A distributed array is fetched from its workers into one host buffer (that is
        what a DLPack consumer asks for): ``copy=False`` raises BufferError for it. A
        small array held in the driver exports a copy too, or with ``copy=False`` its
        own memory, read-only.

        >>> np.from_dlpack(sp.arange(3))
        array([0, 1, 2])
        """
        if self._np is not None and copy is False:
            # its own memory, read-only: a write through the consumer's array would
            # bypass the version spartan keeps of it (DLPack before 1.0 cannot say
            # read-only: NumPy then raises BufferError)
            host = self._np.view()
            host.flags.writeable = False
        elif copy is False:
            raise BufferError(
                "__dlpack__: a distributed spartan array is copied to the driver to "
                "export it, and copy=False forbids that copy"
            )
        else:
            host, copy = self.to_numpy(), None  # (a fresh buffer: no second copy)
        kwargs: dict[str, Any] = {"stream": stream}
        if max_version is not None:
            kwargs["max_version"] = max_version
        if dl_device is not None:
            kwargs["dl_device"] = dl_device
        if copy is not None:
            kwargs["copy"] = copy
        return host.__dlpack__(**kwargs)

    # ---- methods ---------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        if self._np is not None:
            return small.getitem(self, key)
        from spartan.frontend import indexing

        return indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if self._np is not None:
            small.setitem(self, key, value)
            return
        from spartan.frontend import aliasing

        aliasing.write(self, key, value)

    def __copy__(self) -> Array:
        return self.copy()

    def __deepcopy__(self, memo: dict) -> Array:
        return self.copy()

    # NumPy's methods, with numpy.ndarray's signatures (tests/test_signatures.py checks
    # them) and docstrings. Each runs NumPy's method (or NumPy's function of the same
    # name: _numpy_function) in the driver when this array and every array argument
    # are small (spartan.frontend.small), else the distributed
    # function of the same name. ``_given(...)`` passes on only the arguments the
    # caller changed from the defaults (NumPy's), so both see the call NumPy's method
    # would. The implementing modules import this one, so the methods import them in
    # their bodies; each is a core module (tests/test_layering.py).

    def _numpy_method(
        self, name: str, impl: Callable[..., Any], args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        """``self.name(*args, **kwargs)``: NumPy's ndarray method in the driver for a
        small array (with small array arguments), else ``impl(self, *args, **kwargs)``."""
        kwargs = kwargs or {}
        if self._np is not None:
            out = small.call_method(self, name, args, kwargs)
            if out is not small.NO:
                return out
        return impl(self, *args, **kwargs)

    def _numpy_function(
        self, name: str, impl: Callable[..., Any], args: tuple = (), kwargs: dict | None = None
    ) -> Any:
        """``numpy.name(self, *args, **kwargs)`` in the driver for a small array (with
        small array arguments), else ``impl(self, *args, **kwargs)``: what the
        namespace's ``spartan.name`` does (:func:`~spartan.frontend.small.local_first`)."""
        kwargs = kwargs or {}
        if self._np is not None:
            try:
                out = small.call(
                    getattr(impl, "driver_numpy", getattr(np, name)), (self, *args), kwargs
                )
            except TypeError:  # (an argument NumPy rejects: spartan's function says)
                out = small.NO
            if out is not small.NO:
                return out
        return impl(self, *args, **kwargs)

    # -- reductions
    @derived_from(np.ndarray)
    def sum(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = _NoValue,
        where: Any = True,
    ) -> Any:
        from spartan.frontend import reductions

        return self._numpy_method("sum", reductions.sum, (), _given(Array.sum, locals()))

    @derived_from(np.ndarray)
    def prod(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = _NoValue,
        where: Any = True,
    ) -> Any:
        from spartan.frontend import reductions

        return self._numpy_method("prod", reductions.prod, (), _given(Array.prod, locals()))

    @derived_from(np.ndarray)
    def mean(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        keepdims: bool = False,
        *,
        where: Any = True,
    ) -> Any:
        from spartan.frontend import reductions

        return self._numpy_method("mean", reductions.mean, (), _given(Array.mean, locals()))

    @derived_from(
        np.ndarray,
        note="It also takes ``correction=`` (``numpy.std``'s keyword, the array API's "
        "name for ``ddof``).",
    )
    def std(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: float = 0,
        keepdims: bool = False,
        *,
        where: Any = True,
        mean: Any = None,
        correction: Any = None,
    ) -> Any:
        from spartan.frontend import reductions

        kwargs = _given(Array.std, locals())
        if correction is not None:  # (NumPy's method lacks it; its function has it)
            return self._numpy_function("std", reductions.std, (), kwargs)
        return self._numpy_method("std", reductions.std, (), kwargs)

    @derived_from(
        np.ndarray,
        note="It also takes ``correction=`` (``numpy.var``'s keyword, the array API's "
        "name for ``ddof``).",
    )
    def var(
        self,
        axis: Any = None,
        dtype: Any = None,
        out: Any = None,
        ddof: float = 0,
        keepdims: bool = False,
        *,
        where: Any = True,
        mean: Any = None,
        correction: Any = None,
    ) -> Any:
        from spartan.frontend import reductions

        kwargs = _given(Array.var, locals())
        if correction is not None:
            return self._numpy_function("var", reductions.var, (), kwargs)
        return self._numpy_method("var", reductions.var, (), kwargs)

    @derived_from(np.ndarray)
    def min(
        self,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = _NoValue,
        where: Any = True,
    ) -> Any:
        from spartan.frontend import reductions

        return self._numpy_method("min", reductions.min, (), _given(Array.min, locals()))

    @derived_from(np.ndarray)
    def max(
        self,
        axis: Any = None,
        out: Any = None,
        keepdims: bool = False,
        initial: Any = _NoValue,
        where: Any = True,
    ) -> Any:
        from spartan.frontend import reductions

        return self._numpy_method("max", reductions.max, (), _given(Array.max, locals()))

    @derived_from(np.ndarray)
    def argmin(self, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        from spartan.frontend import reductions

        return self._numpy_method("argmin", reductions.argmin, (), _given(Array.argmin, locals()))

    @derived_from(np.ndarray)
    def argmax(self, axis: Any = None, out: Any = None, *, keepdims: bool = False) -> Any:
        from spartan.frontend import reductions

        return self._numpy_method("argmax", reductions.argmax, (), _given(Array.argmax, locals()))

    @derived_from(np.ndarray)
    def all(
        self, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True
    ) -> Any:
        from spartan.frontend import reductions

        return self._numpy_method("all", reductions.all, (), _given(Array.all, locals()))

    @derived_from(np.ndarray)
    def any(
        self, axis: Any = None, out: Any = None, keepdims: bool = False, *, where: Any = True
    ) -> Any:
        from spartan.frontend import reductions

        return self._numpy_method("any", reductions.any, (), _given(Array.any, locals()))

    @derived_from(
        np,
        name="ptp",
        note="NumPy 2 removed the method ``ndarray.ptp``; spartan keeps it: ``x.ptp(...)`` "
        "is ``numpy.ptp(x, ...)``.",
    )
    def ptp(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        from spartan.frontend import reductions

        return self._numpy_function("ptp", reductions.ptp, (), _given(Array.ptp, locals()))

    @derived_from(np.ndarray)
    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
        from spartan.frontend import scan

        return self._numpy_method("cumsum", scan.cumsum, (), _given(Array.cumsum, locals()))

    @derived_from(np.ndarray)
    def cumprod(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
        from spartan.frontend import scan

        return self._numpy_method("cumprod", scan.cumprod, (), _given(Array.cumprod, locals()))

    @derived_from(np.ndarray)
    def trace(
        self,
        offset: int = 0,
        axis1: int = 0,
        axis2: int = 1,
        dtype: Any = None,
        out: Any = None,
    ) -> Any:
        from spartan.frontend import products

        return self._numpy_method("trace", products.trace, (), _given(Array.trace, locals()))

    # -- shape and copies
    @derived_from(
        np.ndarray,
        note="``order=`` is checked as NumPy checks it; a distributed array's tiles have "
        "no memory layout to choose.",
    )
    def copy(self, order: _Order = "C") -> Array:
        if self._np is not None:
            return Array._local(self._np.copy(order))
        from spartan.frontend import manipulation

        return manipulation.copy(self, **_given(Array.copy, locals()))

    @derived_from(
        np.ndarray,
        note="``device=`` (the array API's keyword) must be this array's device (see "
        "``to_device``); ``order=`` and ``subok=`` change only a small array held in the "
        "driver (a distributed array's tiles have no memory layout, and there are no "
        "subclasses).",
    )
    def astype(
        self,
        dtype: Any,
        order: _Order = "K",
        casting: _Casting = "unsafe",
        subok: bool = True,
        copy: bool = True,
        *,
        device: Any = None,
    ) -> Array:
        """This array cast to ``dtype``: a new array, or this one where ``copy=False``
        and the dtype is already ``dtype``. ``casting`` is NumPy's rule (TypeError for
        a cast it forbids).

        >>> x.astype("float32", device=x.device).dtype
        dtype('float32')
        """
        if device is not None:
            from spartan.backend.device import check_device

            check_device(device, "astype")  # (one device per session)
        if self._np is not None:
            out = self._np.astype(dtype, order=order, casting=casting, subok=subok, copy=copy)
            return self if out is self._np else Array._local(out)  # (a copy)
        target = np.dtype(dtype)
        if not np.can_cast(self.dtype, target, casting):
            raise TypeError(
                f"Cannot cast array data from {self.dtype!r} to {target!r} according to "
                f"the rule {casting!r}"
            )
        from spartan.frontend import manipulation

        return manipulation.astype(self, target, copy=copy)

    @derived_from(np.ndarray)
    def reshape(
        self, *shape: Any, order: Literal["A", "C", "F"] = "C", copy: bool | None = None
    ) -> Array:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if self._np is not None:
            return small.wrap(self._np.reshape(shape, order=order, copy=copy), (self,))
        from spartan.frontend import manipulation

        return manipulation.reshape(self, shape, order=order, copy=copy)

    @derived_from(np.ndarray)
    def transpose(self, *axes: Any) -> Array:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if axes == (None,):
            axes = ()
        if self._np is not None:
            return Array._local(self._np.transpose(*axes), self._buf)
        from spartan.frontend import manipulation

        return manipulation.transpose(self, axes or None)

    def retile(self, tiling: Any) -> Array:
        """This array's values in a new array tiled by ``tiling`` (a
        :class:`~spartan.tiling.Tiling`, or ``"row"``/``"column"``...): a copy, like
        :func:`spartan.retile`. No NumPy counterpart."""
        from spartan.frontend import manipulation

        return manipulation.retile(self, tiling)

    @derived_from(np.ndarray)
    def ravel(self, order: str = "C") -> Array:
        from spartan.frontend import manipulation

        return self._numpy_method("ravel", manipulation.ravel, (), _given(Array.ravel, locals()))

    @derived_from(np.ndarray)
    def flatten(self, order: str = "C") -> Array:
        from spartan.frontend import manipulation

        return self._numpy_method(
            "flatten", manipulation.flatten, (), _given(Array.flatten, locals())
        )

    @derived_from(np.ndarray)
    def swapaxes(self, axis1: int, axis2: int) -> Array:
        from spartan.frontend import manipulation

        return self._numpy_method("swapaxes", manipulation.swapaxes, (axis1, axis2))

    @derived_from(np.ndarray)
    def squeeze(self, axis: Any = None) -> Array:
        from spartan.frontend import manipulation

        return self._numpy_method(
            "squeeze", manipulation.squeeze, (), _given(Array.squeeze, locals())
        )

    @derived_from(np.ndarray)
    def repeat(self, repeats: Any, axis: Any = None) -> Array:
        from spartan.frontend import manipulation

        return self._numpy_method(
            "repeat", manipulation.repeat, (repeats,), _given(Array.repeat, locals())
        )

    @derived_from(np.ndarray)
    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Array:
        from spartan.frontend import products

        return self._numpy_method(
            "diagonal", products.diagonal, (), _given(Array.diagonal, locals())
        )

    # -- element-wise
    @derived_from(
        np.ndarray,
        note="NumPy's ufunc keywords (``where=``, ``casting=``, ``dtype=``...) are not supported.",
    )
    def clip(self, min: Any = None, max: Any = None, out: Any = None) -> Array:
        from spartan.frontend import elementwise

        return self._numpy_method("clip", elementwise.clip, (), _given(Array.clip, locals()))

    @derived_from(np.ndarray)
    def round(self, decimals: int = 0, out: Any = None) -> Array:
        from spartan.frontend import elementwise

        return self._numpy_method("round", elementwise.round, (), _given(Array.round, locals()))

    @derived_from(np.ndarray)
    def conj(self) -> Array:
        if self.dtype.kind != "c":  # (NumPy's method: a real array's is itself)
            return self
        return self._numpy_method("conj", _conjugate)

    @derived_from(np.ndarray)
    def conjugate(self) -> Array:
        if self.dtype.kind != "c":
            return self
        return self._numpy_method("conjugate", _conjugate)

    @derived_from(np.ndarray)
    def dot(self, other: Any, out: Any = None) -> Any:
        from spartan.frontend import products

        return self._numpy_method("dot", products.dot, (other,), _given(Array.dot, locals()))

    # -- indexing, sorting, searching
    @derived_from(np.ndarray)
    def nonzero(self) -> tuple[Array, ...]:
        from spartan.frontend import indexing

        return self._numpy_method("nonzero", indexing.nonzero)

    @derived_from(np.ndarray)
    def take(self, indices: Any, axis: Any = None, out: Any = None, mode: str = "raise") -> Array:
        from spartan.frontend import fancy

        return self._numpy_method("take", fancy.take, (indices,), _given(Array.take, locals()))

    @derived_from(np.ndarray)
    def compress(self, condition: Any, axis: Any = None, out: Any = None) -> Array:
        from spartan.frontend import fancy

        kwargs = _given(Array.compress, locals())
        if self._np is not None:
            got = small.call_method(self, "compress", (condition,), kwargs)
            if got is not small.NO:
                return got
        return fancy.compress(condition, self, **kwargs)  # (numpy.compress's order)

    @derived_from(np.ndarray)
    def choose(self, choices: Any, out: Any = None, mode: str = "raise") -> Array:
        from spartan.frontend import fancy

        return self._numpy_method(
            "choose", fancy.choose, (choices,), _given(Array.choose, locals())
        )

    @derived_from(np.ndarray)
    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        from spartan.frontend import fancy

        return self._numpy_method("put", fancy.put, (indices, values), _given(Array.put, locals()))

    @derived_from(
        np,
        name="fill_diagonal",
        note="Not a method of ``numpy.ndarray``: ``x.fill_diagonal(val, wrap)`` is "
        "``numpy.fill_diagonal(x, val, wrap)``, in place.",
    )
    def fill_diagonal(self, val: Any, wrap: bool = False) -> None:
        from spartan.frontend import index_tricks

        return self._numpy_function(
            "fill_diagonal",
            index_tricks.fill_diagonal,
            (val,),
            _given(Array.fill_diagonal, locals()),
        )

    @derived_from(np.ndarray)
    def searchsorted(self, v: Any, side: str = "left", sorter: Any = None) -> Any:
        from spartan.frontend import sorting

        return self._numpy_method(
            "searchsorted", sorting.searchsorted, (v,), _given(Array.searchsorted, locals())
        )

    @derived_from(
        np.ndarray,
        note="The distributed sort is stable whatever ``kind=`` says (NumPy's ``kind='stable'``).",
    )
    def argsort(
        self, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None
    ) -> Array:
        from spartan.frontend import sorting

        return self._numpy_method("argsort", sorting.argsort, (), _given(Array.argsort, locals()))

    @derived_from(np.ndarray)
    def argpartition(
        self, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None
    ) -> Array:
        from spartan.frontend import sorting

        return self._numpy_method(
            "argpartition", sorting.argpartition, (kth,), _given(Array.argpartition, locals())
        )

    @derived_from(
        np.ndarray,
        note="The distributed sort is stable whatever ``kind=`` says (NumPy's ``kind='stable'``).",
    )
    def sort(
        self, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None
    ) -> None:
        from spartan.frontend import sorting

        if axis is None:  # (NumPy's method sorts along one axis only)
            raise TypeError("'NoneType' object cannot be interpreted as an integer")
        # in place: through a view, its base gets the sorted values (as in NumPy)
        self[...] = self._numpy_function("sort", sorting.sort, (), _given(Array.sort, locals()))

    @derived_from(np.ndarray)
    def partition(
        self, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None
    ) -> None:
        from spartan.frontend import sorting

        self[...] = self._numpy_function(
            "partition", sorting.partition, (kth,), _given(Array.partition, locals())
        )

    @derived_from(np.ndarray)
    def fill(self, value: Any) -> None:
        self[...] = value

    # -- operators: NumPy's ufuncs (``x + y`` is ``numpy.add(x, y)``); NotImplemented
    # for an operand spartan cannot take, so that Python asks the other operand

    def __add__(self, other: Any) -> Any:
        return _binary(np.add, self, other)

    def __radd__(self, other: Any) -> Any:
        return _binary(np.add, self, other, reflected=True)

    def __iadd__(self, other: Any) -> Any:
        return _inplace(np.add, self, other)

    def __sub__(self, other: Any) -> Any:
        return _binary(np.subtract, self, other)

    def __rsub__(self, other: Any) -> Any:
        return _binary(np.subtract, self, other, reflected=True)

    def __isub__(self, other: Any) -> Any:
        return _inplace(np.subtract, self, other)

    def __mul__(self, other: Any) -> Any:
        return _binary(np.multiply, self, other)

    def __rmul__(self, other: Any) -> Any:
        return _binary(np.multiply, self, other, reflected=True)

    def __imul__(self, other: Any) -> Any:
        return _inplace(np.multiply, self, other)

    def __truediv__(self, other: Any) -> Any:
        return _binary(np.true_divide, self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _binary(np.true_divide, self, other, reflected=True)

    def __itruediv__(self, other: Any) -> Any:
        return _inplace(np.true_divide, self, other)

    def __floordiv__(self, other: Any) -> Any:
        return _binary(np.floor_divide, self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return _binary(np.floor_divide, self, other, reflected=True)

    def __ifloordiv__(self, other: Any) -> Any:
        return _inplace(np.floor_divide, self, other)

    def __mod__(self, other: Any) -> Any:
        return _binary(np.remainder, self, other)

    def __rmod__(self, other: Any) -> Any:
        return _binary(np.remainder, self, other, reflected=True)

    def __imod__(self, other: Any) -> Any:
        return _inplace(np.remainder, self, other)

    def __pow__(self, other: Any) -> Any:
        return _binary(np.power, self, other)

    def __rpow__(self, other: Any) -> Any:
        return _binary(np.power, self, other, reflected=True)

    def __ipow__(self, other: Any) -> Any:
        return _inplace(np.power, self, other)

    def __matmul__(self, other: Any) -> Any:
        return _binary(np.matmul, self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _binary(np.matmul, self, other, reflected=True)

    def __imatmul__(self, other: Any) -> Any:
        return _inplace(np.matmul, self, other)

    def __and__(self, other: Any) -> Any:
        return _binary(np.bitwise_and, self, other)

    def __rand__(self, other: Any) -> Any:
        return _binary(np.bitwise_and, self, other, reflected=True)

    def __iand__(self, other: Any) -> Any:
        return _inplace(np.bitwise_and, self, other)

    def __or__(self, other: Any) -> Any:
        return _binary(np.bitwise_or, self, other)

    def __ror__(self, other: Any) -> Any:
        return _binary(np.bitwise_or, self, other, reflected=True)

    def __ior__(self, other: Any) -> Any:
        return _inplace(np.bitwise_or, self, other)

    def __xor__(self, other: Any) -> Any:
        return _binary(np.bitwise_xor, self, other)

    def __rxor__(self, other: Any) -> Any:
        return _binary(np.bitwise_xor, self, other, reflected=True)

    def __ixor__(self, other: Any) -> Any:
        return _inplace(np.bitwise_xor, self, other)

    def __lshift__(self, other: Any) -> Any:
        return _binary(np.left_shift, self, other)

    def __rlshift__(self, other: Any) -> Any:
        return _binary(np.left_shift, self, other, reflected=True)

    def __ilshift__(self, other: Any) -> Any:
        return _inplace(np.left_shift, self, other)

    def __rshift__(self, other: Any) -> Any:
        return _binary(np.right_shift, self, other)

    def __rrshift__(self, other: Any) -> Any:
        return _binary(np.right_shift, self, other, reflected=True)

    def __irshift__(self, other: Any) -> Any:
        return _inplace(np.right_shift, self, other)

    def __lt__(self, other: Any) -> Any:
        return _binary(np.less, self, other)

    def __le__(self, other: Any) -> Any:
        return _binary(np.less_equal, self, other)

    def __gt__(self, other: Any) -> Any:
        return _binary(np.greater, self, other)

    def __ge__(self, other: Any) -> Any:
        return _binary(np.greater_equal, self, other)

    def __eq__(self, other: object) -> Any:
        return _binary(np.equal, self, other)

    def __ne__(self, other: object) -> Any:
        return _binary(np.not_equal, self, other)

    def __neg__(self) -> Array:
        return _unary(np.negative, self)

    def __pos__(self) -> Array:
        return _unary(np.positive, self)

    def __abs__(self) -> Array:
        return _unary(np.absolute, self)

    def __invert__(self) -> Array:
        return _unary(np.invert, self)

    def __divmod__(self, other: Any) -> Any:
        return np.divmod(self, other)

    def __rdivmod__(self, other: Any) -> Any:
        return np.divmod(other, self)


def _small_values(expr: Expr) -> np.ndarray | None:
    """The values of a small new array made in the driver, or None to keep it lazy."""
    if expr.tiling_hint is not None or expr.nbytes >= config.local_below_bytes:
        return None
    values = expr.small_values()
    if values is None and expr.children:
        values = small.computed_in_driver(expr)
    return values


def _given(method: Callable[..., Any], values: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments among ``values`` (a method's ``locals()``) that differ
    from ``method``'s defaults. Its defaults are NumPy's, so NumPy's method called
    with only these does what it does with all; and an ``out=None`` not passed on
    does not mark a small array written (spartan.frontend.small.call_method)."""
    defaults = _defaults(method)
    return {k: v for k, v in values.items() if k in defaults and not _same(v, defaults[k])}


@functools.cache
def _defaults(method: Callable[..., Any]) -> dict[str, Any]:
    return {
        n: p.default
        for n, p in inspect.signature(method).parameters.items()
        if p.default is not p.empty
    }


def _same(value: Any, default: Any) -> bool:
    if value is default:
        return True
    return (
        type(value) is type(default) and isinstance(value, (int, float, str)) and value == default
    )


def _conjugate(x: Array) -> Array:
    from spartan.frontend import ufuncs

    return ufuncs.apply(np.conjugate, (x,))


def _binary(uf: np.ufunc, x: Array, other: Any, reflected: bool = False) -> Any:
    """``uf(x, other)`` (``uf(other, x)`` reflected) for an operator."""
    if x._np is not None:
        b = small.operand(other)
        if b is not small.NO:
            return small.wrap(uf(b, x._np) if reflected else uf(x._np, b))
    from spartan.frontend import ufuncs

    try:
        return ufuncs.apply(uf, (other, x) if reflected else (x, other))
    except ufuncs.Unsupported:
        return NotImplemented


def _inplace(uf: np.ufunc, x: Array, other: Any) -> Any:
    """``x += y``: NumPy's in-place operator writes into ``x`` (and so into the base a
    view shares), with ``same_kind`` casting."""
    if x._np is not None:
        b = small.operand(other)
        if b is not small.NO:
            uf(x._np, b, out=x._np)
            x._buf.wrote()
            return x
    from spartan.frontend import ufuncs

    try:
        result = ufuncs.apply(uf, (x, other))
    except ufuncs.Unsupported:
        return NotImplemented
    if result.dtype != x.dtype and not np.can_cast(result.dtype, x.dtype, "same_kind"):
        # NumPy's own error (numpy._core._exceptions._UFuncOutputCastingError)
        uf(
            np.zeros((), x.dtype),
            np.zeros((), small.dtype_of(other)),
            out=np.zeros((), x.dtype),
        )
    if result.shape != x.shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {x.shape} doesn't match "
            f"the broadcast shape {result.shape}"
        )
    x[...] = result
    return x


def _unary(uf: np.ufunc, x: Array) -> Array:
    if x._np is not None:
        return small.wrap(uf(x._np))
    return uf(x)


ndarray = Array

from spartan.frontend import small  # noqa: E402  (it wraps results in Array)
