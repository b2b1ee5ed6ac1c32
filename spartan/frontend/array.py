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

import math
import operator
from typing import Any

import numpy as np

from spartan.backend import session
from spartan.config import config
from spartan.frontend.aliasing import Buffer
from spartan.frontend.expr import Expr
from spartan.tiling import Tiling


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
        return _ns().matrix_transpose(self)

    @property
    def tiling(self) -> Tiling | None:
        """The tiling of an evaluated array (None while it is pending, or for a small
        array held in the driver)."""
        if self._np is not None:
            return None
        e = self._expr
        if e.is_view:
            return e.induced_tiling(e.base.data.tiling) if e.base.data is not None else None
        return e.data.tiling if e.data is not None else None

    @property
    def real(self) -> Array:
        return _ns().real(self)

    @property
    def imag(self) -> Array:
        return _ns().imag(self)

    # ---- forcing ---------------------------------------------------------------------------
    def evaluate(self) -> Array:
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

    def item(self, *args: Any) -> Any:
        if self._np is not None:
            return self._np.item(*args)
        if args:
            return self[args if len(args) > 1 else args[0]].item()
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.to_numpy().item()

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
        return _ns().round(self, ndigits)

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
        impl = _ns().numpy_function(func)
        if impl is None:
            return NotImplemented
        return impl(*args, **kwargs)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The ``spartan`` module, which implements array API standard versions
        2021.12 to 2024.12 (ValueError for any other ``api_version``).

        >>> xp = x.__array_namespace__(api_version="2023.12")
        """
        from spartan.frontend.array_api import API_VERSIONS

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
            data = e.base.data if e.is_view else e.data
            backend = getattr(data, "backend", None)
            if backend is not None and getattr(backend, "device", None) is not None:
                return backend.device
        return session_device()

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

    def copy(self) -> Array:
        if self._np is not None:
            return Array._local(self._np.copy())
        return _ns().copy(self)

    def astype(
        self,
        dtype: Any,
        order: str = "K",
        casting: str = "unsafe",
        subok: bool = True,
        copy: bool = True,
        *,
        device: Any = None,
    ) -> Array:
        """This array cast to ``dtype``: a new array, or this one where ``copy=False``
        and the dtype is already ``dtype``. ``casting`` is NumPy's rule (TypeError for
        a cast it forbids); ``device`` must be this array's (see :meth:`to_device`).

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
        return _ns().astype(self, target, copy=copy)

    def reshape(self, *shape: Any, order: str = "C", copy: bool | None = None) -> Array:
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if self._np is not None:
            return small.wrap(self._np.reshape(shape, order=order, copy=copy), (self,))
        return _ns().reshape(self, shape, order=order, copy=copy)

    def transpose(self, *axes: Any) -> Array:
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if self._np is not None:
            return Array._local(self._np.transpose(*axes), self._buf)
        return _ns().transpose(self, axes or None)

    def retile(self, tiling: Any) -> Array:
        return _ns().retile(self, tiling)


def _small_values(expr: Expr) -> np.ndarray | None:
    """The values of a small new array made in the driver, or None to keep it lazy."""
    if expr.tiling_hint is not None or expr.nbytes >= config.local_below_bytes:
        return None
    values = expr.small_values()
    if values is None and expr.children:
        values = small.computed_in_driver(expr)
    return values


def _ns():  # the namespace is built after this class (it imports it)
    import spartan

    return spartan


def _method(name: str):
    direct = hasattr(np.ndarray, name)  # else NumPy has only the function

    def method(self, *args: Any, **kwargs: Any) -> Any:
        if direct and self._np is not None:
            out = small.call_method(self, name, args, kwargs)
            if out is not small.NO:
                return out
        return getattr(_ns(), name)(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"See :func:`spartan.{name}`."
    return method


for _name in (
    "sum prod mean std var min max argmin argmax all any cumsum cumprod ravel flatten "
    "swapaxes squeeze dot clip round conj conjugate nonzero argsort ptp repeat "
    "take trace diagonal fill_diagonal searchsorted compress choose argpartition put"
).split():
    setattr(Array, _name, _method(_name))


def _conj_method(name: str):
    """``x.conj()``: like ``ndarray.conj``, a real array's is the array itself (NumPy's
    function ``np.conj`` would make booleans int8)."""
    general = getattr(Array, name)

    def method(self: Array, *args: Any, **kwargs: Any) -> Any:
        if self.dtype.kind != "c" and not args and not kwargs:
            return self
        return general(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = general.__doc__
    return method


Array.conj = _conj_method("conj")
Array.conjugate = _conj_method("conjugate")


def _in_place(name: str):
    """NumPy's in-place methods (``x.sort()``): the array (through a view: its base)
    gets the result; returns None."""

    def method(self: Array, *args: Any, **kwargs: Any) -> None:
        self[...] = getattr(_ns(), name)(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"In place, like ``numpy.ndarray.{name}`` (see :func:`spartan.{name}`)."
    return method


Array.sort = _in_place("sort")
Array.partition = _in_place("partition")


def _fill(self: Array, value: Any) -> None:
    """Set every element to ``value`` (like ``ndarray.fill``)."""
    self[...] = value


Array.fill = _fill


def _binary(op: str, reflected: bool = False):
    uf = getattr(np, op)

    def method(self: Array, other: Any) -> Any:
        if self._np is not None:
            b = small.operand(other)
            if b is not small.NO:
                return small.wrap(uf(b, self._np) if reflected else uf(self._np, b))
        from spartan.frontend import ufuncs

        try:
            return ufuncs.apply(uf, (other, self) if reflected else (self, other))
        except ufuncs.Unsupported:
            return NotImplemented

    return method


def _inplace(op: str):
    """``x += y``: NumPy's in-place operator writes into ``x`` (and so into the base a
    view shares), with ``same_kind`` casting."""
    uf = getattr(np, op)

    def method(self: Array, other: Any) -> Any:
        if self._np is not None:
            b = small.operand(other)
            if b is not small.NO:
                uf(self._np, b, out=self._np)
                self._buf.wrote()
                return self
        from spartan.frontend import ufuncs

        try:
            result = ufuncs.apply(uf, (self, other))
        except ufuncs.Unsupported:
            return NotImplemented
        if result.dtype != self.dtype and not np.can_cast(result.dtype, self.dtype, "same_kind"):
            # NumPy's own error (numpy._core._exceptions._UFuncOutputCastingError)
            uf(
                np.zeros((), self.dtype),
                np.zeros((), small.dtype_of(other)),
                out=np.zeros((), self.dtype),
            )
        if result.shape != self.shape:
            raise ValueError(
                f"non-broadcastable output operand with shape {self.shape} doesn't match "
                f"the broadcast shape {result.shape}"
            )
        self[...] = result
        return self

    return method


for _dunder, _uf in {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "true_divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "power",
    "matmul": "matmul",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "lshift": "left_shift",
    "rshift": "right_shift",
}.items():
    setattr(Array, f"__{_dunder}__", _binary(_uf))
    setattr(Array, f"__r{_dunder}__", _binary(_uf, reflected=True))
    setattr(Array, f"__i{_dunder}__", _inplace(_uf))
for _dunder, _uf in {
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
    "eq": "equal",
    "ne": "not_equal",
}.items():
    setattr(Array, f"__{_dunder}__", _binary(_uf))


def _unary(op: str):
    uf = getattr(np, op)

    def method(self: Array) -> Array:
        if self._np is not None:
            return small.wrap(uf(self._np))
        return uf(self)

    return method


Array.__neg__ = _unary("negative")
Array.__pos__ = _unary("positive")
Array.__abs__ = _unary("absolute")
Array.__invert__ = _unary("invert")
Array.__divmod__ = lambda self, other: np.divmod(self, other)
Array.__rdivmod__ = lambda self, other: np.divmod(other, self)

ndarray = Array

from spartan.frontend import small  # noqa: E402  (it wraps results in Array)
