"""Settings read at evaluation time, in two tiers: user settings and a tuning section.

Change them on ``spartan.config``, for good or for a ``with`` block:

>>> import spartan
>>> spartan.config.tiles_per_worker = 4      # more, smaller tiles, from now on
>>> before = spartan.config.local_below_bytes
>>> with spartan.config.set(local_below_bytes=0, task_timeout=60.0):
...     pass                                 # every array distributed, a 60 s limit
>>> spartan.config.local_below_bytes == before   # put back
True

The user settings are the attributes of ``spartan.config`` itself; the tuning section,
``spartan.config.tuning``, holds the knobs of the optimizer and of the processes (each
also reachable as ``spartan.config.NAME``). ``docs/tuning.md`` says what each knob does
and what measurement stands behind its default. A process-level knob (the Ray workers'
niceness, glibc's copy threshold, the freed memory a worker keeps, the landing zone and
its lending) is on by default only where ``bench/apps.py --quick`` on a stock host showed
it pays; the others are opt-in.

Every setting ``NAME`` can come from the environment variable ``SPARTAN_NAME`` (booleans:
``1/0``, ``true/false``, ``yes/no``, ``on/off``; ``none`` for a setting that may be None;
an empty variable counts as unset). The environment is read when a setting is first
read and again by every ``spartan.init``; a value set in code wins over it. A bad value
raises ``ValueError`` naming the variable.
"""

from __future__ import annotations

import contextlib
import difflib
import glob
import numbers
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import TracebackType
from typing import Any

#: where Linux describes the first CPU's caches
CACHE_DIR = "/sys/devices/system/cpu/cpu0/cache"
#: the prefix of the environment variables that set spartan's settings
ENV_PREFIX = "SPARTAN_"
#: what an environment variable may say for a boolean setting
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def l2_cache_bytes(cache_dir: str = CACHE_DIR) -> int:
    """One core's L2 cache (data or unified) in bytes; 0 where the system does not say.

    >>> l2_cache_bytes("/nonexistent")
    0
    """
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    for index in sorted(glob.glob(os.path.join(cache_dir, "index*"))):
        try:
            level, kind, size = (_read(os.path.join(index, n)) for n in ("level", "type", "size"))
        except OSError:
            continue
        if level == "2" and kind != "Instruction" and size:
            scale = units.get(size[-1].upper(), 1)
            digits = size[:-1] if size[-1].upper() in units else size
            return int(digits) * scale if digits.isdigit() else 0
    return 0


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def default_chunk_bytes(l2: int | None = None) -> int:
    """Bytes per pipeline chunk: one core's L2 cache (``l2``; default: this machine's)
    where that holds 2 MB or more, else 8 MB.

    A chunk that fits a large private L2 avoids the slower shared L3; where the L2 is
    small, the per-chunk calls of L2-sized chunks add up, and 8 MB chunks (within a
    typical L3 share) do better (docs/tuning.md).

    >>> default_chunk_bytes(2 << 20) >> 20, default_chunk_bytes(512 << 10) >> 20
    (2, 8)
    """
    l2 = l2_cache_bytes() if l2 is None else l2
    return l2 if l2 >= 2 << 20 else 8 << 20


def _setting(
    default: Any, kind: type, *, none: bool = False, tuning: bool = False, **kw: Any
) -> Any:
    """A field of :class:`Config`: ``kind`` (bool, int, float or str) is what a value must
    be (and what its environment variable is parsed as), ``none`` whether it may be
    None, ``tuning`` whether it belongs to the tuning section."""
    meta = {"kind": kind, "none": none, "tuning": tuning, "choices": kw.pop("choices", None)}
    if "default_factory" in kw:
        return field(default_factory=kw["default_factory"], metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(repr=False)
class Config:
    """spartan's settings (the module's ``config`` is the one in use). A user setting or
    tuning knob is an attribute; an unknown name raises ``AttributeError``."""

    # ---- user settings ----------------------------------------------------------------
    #: largest tile the default tiling makes, in bytes
    max_tile_bytes: int = _setting(64 << 20, int)
    #: if set, every default tiling has this many tiles per worker
    tiles_per_worker: int | None = _setting(None, int, none=True)
    #: arrays of fewer bytes, made without a ``tiling=``, are held in the driver and
    #: computed eagerly with NumPy (:mod:`spartan.frontend.small`); 0 distributes every
    #: array. ``bench/local_threshold.py`` measures where the workers start to beat the
    #: driver (docs/tuning.md).
    local_below_bytes: int = _setting(4 << 20, int)
    #: what ``numpy.asarray(x)`` (``x.__array__``) does when it would fetch a distributed
    #: array of more than ``implicit_fetch_bytes`` into the driver -- the path by which a
    #: library written for NumPy (scikit-learn without array API dispatch, SciPy outside
    #: its array API list, xarray's ``interp``) gathers an array: "warn" (a
    #: :class:`spartan.ImplicitFetchWarning` naming the caller), "raise" (``TypeError``)
    #: or "allow". ``x.to_numpy()`` and ``spartan.compute`` are explicit and never warn.
    implicit_fetch: str = _setting("warn", str, choices=("warn", "raise", "allow"))
    #: distributed arrays up to this many bytes are fetched by ``numpy.asarray`` silently
    implicit_fetch_bytes: int = _setting(64 << 20, int)
    #: memory one worker may use, in bytes (None: a share of the machine's available memory)
    worker_memory_bytes: int | None = _setting(None, int, none=True)
    #: directory for periodic checkpoints of evaluated tiles (None: off)
    checkpoint_dir: str | None = _setting(None, str, none=True)
    #: seconds between periodic checkpoints
    checkpoint_interval: float = _setting(60.0, float)
    #: periodic checkpoints kept on disk (the newest; at least 1): of older ones only
    #: the arrays a live array's rebuild still reads stay
    checkpoint_keep: int = _setting(2, int)
    #: recoveries from lost workers one evaluation (or fetch) may make; a further loss
    #: raises :class:`spartan.WorkerLostError` (the session stays usable: the next
    #: evaluation replaces the lost workers). A loss while a recovery rebuilds counts too
    recovery_attempts: int = _setting(3, int)
    #: seconds one evaluation may take on the workers before it raises ``TimeoutError``
    #: naming the user function still running; the workers stuck in it are stopped and
    #: replaced at the next evaluation (None: no limit)
    task_timeout: float | None = _setting(None, float, none=True)
    #: seconds a cancel (Ctrl-C) waits for the tasks running to finish before it stops
    #: their workers, which the next evaluation replaces (None: waits as long as they
    #: run; a second Ctrl-C stops them at once)
    cancel_timeout: float | None = _setting(10.0, float, none=True)
    #: show a progress bar for evaluations longer than this many seconds (None: never)
    progress_after: float | None = _setting(1.0, float, none=True)

    # ---- tuning: the optimizer and the evaluation (docs/tuning.md) ---------------------
    #: largest default tile on a GPU worker (few big tiles keep a GPU busy)
    gpu_max_tile_bytes: int = _setting(1 << 31, int, tuning=True)
    #: evaluate automatically once this many unevaluated nodes pile up
    max_graph_size: int = _setting(2000, int, tuning=True)
    #: evaluate automatically once a path of this many unevaluated nodes forms (a loop's
    #: chain is as deep as the loop; :func:`spartan.frontend.evaluate.too_deep`). No walk
    #: of the graph recurses per node, so this is a backstop: a walk recursing at 3
    #: frames per node stays under 800 of Python's 1000, leaving 200 to user code.
    max_graph_depth: int = _setting(250, int, tuning=True)
    #: computed arrays of at most this many bytes get a full copy on every worker
    #: (0: the optimizer tiles them like any other array)
    replicate_below_bytes: int = _setting(1 << 16, int, tuning=True)
    #: compute row-local operators inside the product (``X.T @ ...``) or fold that
    #: consumes them, in cache-sized row chunks (:mod:`spartan.frontend.pipeline`)
    pipeline_rows: bool = _setting(True, bool, tuning=True)
    #: bytes one pipeline chunk touches (its inputs and every intermediate): one core's
    #: L2 cache where that holds 2 MB or more, else 8 MB (see :func:`default_chunk_bytes`)
    pipeline_chunk_bytes: int = _setting(
        None, int, tuning=True, default_factory=default_chunk_bytes
    )
    #: tall matrices of fewer bytes are QR-factored by one task, not by TSQR
    #: (:func:`spartan.linalg.qr`): its stages' round trips cost more than the move
    tsqr_min_bytes: int = _setting(4 << 20, int, tuning=True)
    #: bytes the optimizer may spend on duplicated (replicated) arrays
    dup_budget_bytes: int = _setting(0, int, tuning=True)
    #: let the optimizer re-tile evaluated arrays where that moves fewer bytes in total
    retile_inputs: bool = _setting(True, bool, tuning=True)
    #: raise optimizer errors instead of falling back to local tiling rules (tests)
    strict_optimizer: bool = _setting(False, bool, tuning=True)
    #: workers of one Ray node get consecutive indices, so neighbouring tiles share a
    #: node (False: nodes take turns, worker by worker, which measures what grouping
    #: saves: bench/netem_cluster.py). Read when the workers start.
    group_workers_by_node: bool = _setting(True, bool, tuning=True)
    #: a Ray node with at least this many workers (and 2) gets a relay actor: the steps
    #: the driver releases to several of its workers at once go as one call to the
    #: relay, which forwards them on the node (docs/cluster.md, "Per-node dispatch").
    #: 0 (the default): no relays; on a 2-core VM a relay sent fewer calls but made
    #: the driver and the evaluation slower. Read when the workers start.
    node_dispatch_min_workers: int = _setting(0, int, tuning=True)

    # ---- tuning: process-level changes, on only where measured to pay (docs/tuning.md) -
    #: freed memory a Ray worker keeps in its heap for its next blocks, in bytes (None:
    #: an eighth of the worker's share of the node's memory, at most 1 GB; 0: returned
    #: to the system, as malloc does); see :mod:`spartan.backend.heap`. Read when the
    #: workers start.
    worker_keep_freed_bytes: int | None = _setting(None, int, none=True, tuning=True)
    #: copies a Ray worker makes of at least this many bytes write past the cache
    #: (non-temporal stores, set through ``GLIBC_TUNABLES``; None: glibc's own threshold,
    #: opt-in: 4 MiB helps where a VM reports its host's whole L3); see
    #: :mod:`spartan.backend.streaming_copies`. Read when the workers start.
    worker_streaming_copy_bytes: int | None = _setting(None, int, none=True, tuning=True)
    #: how far the Ray workers' niceness is raised above that of Ray's own processes
    #: (None: Ray's own choice, 15; opt-in: 0, so that the driver's and Ray's threads do
    #: not preempt the workers at will); see
    #: :func:`spartan.backend.worker_env.worker_env`. Read when the workers start.
    worker_niceness: int | None = _setting(None, int, none=True, tuning=True)
    #: largest result the driver fetches through its shared-memory landing zone, which
    #: it keeps (at up to this size) for every later fetch (0: always through Ray's
    #: object store); see :mod:`spartan.backend.shared_output`
    landing_zone_bytes: int = _setting(1 << 30, int, tuning=True)
    #: a fetched result that fills most of the landing zone is the zone's memory, lent
    #: to it until it is freed, instead of a copy (the zone is made anew for the fetches
    #: meanwhile). Being a shared mapping, a lent result is not copied on write in a
    #: process forked while it lives: turn this off before forking writers
    landing_zone_lends: bool = _setting(True, bool, tuning=True)

    def __post_init__(self) -> None:
        #: names set in code (by assignment or :meth:`set`): the environment leaves them
        object.__setattr__(self, "_explicit", set())
        #: the values the environment does not set (the code's defaults)
        object.__setattr__(self, "_defaults", {f.name: getattr(self, f.name) for f in fields(self)})
        object.__setattr__(self, "_lock", threading.RLock())

    # ---- reading and writing ----------------------------------------------------------
    def __getattribute__(self, name: str) -> Any:
        if name[0] != "_" and not object.__getattribute__(self, "_env_read"):
            object.__getattribute__(self, "load_env")()
        return object.__getattribute__(self, name)

    #: whether the environment has been read (the module's ``config`` reads it on first
    #: use; other instances never)
    _env_read = True

    def __setattr__(self, name: str, value: Any) -> None:
        if "_lock" not in self.__dict__:  # (the dataclass's __init__: defaults)
            object.__setattr__(self, name, value)
            return
        if name not in _FIELDS:
            raise AttributeError(_unknown(name, "spartan.config has no setting"))
        value = _checked(name, value)
        with self._lock:
            object.__setattr__(self, name, value)
            self._explicit.add(name)

    def set(self, **settings: Any) -> _Restore:
        """Set ``settings`` now; as a context manager, put back their earlier values
        when the ``with`` block ends (nested blocks restore in turn). The settings are
        the process's, not the thread's: other threads see them meanwhile. An unknown
        name raises ``TypeError`` and a bad value ``TypeError``/``ValueError``, with
        nothing changed.

        >>> import spartan
        >>> with spartan.config.set(tiles_per_worker=8):
        ...     spartan.config.tiles_per_worker
        8
        """
        for name in settings:
            if name not in _FIELDS:
                raise TypeError(_unknown(name, "spartan.config.set() got an unknown setting"))
        checked = {name: _checked(name, value) for name, value in settings.items()}
        with self._lock:
            before = {n: (getattr(self, n), n in self._explicit) for n in checked}
            for name, value in checked.items():
                object.__setattr__(self, name, value)
                self._explicit.add(name)
        return _Restore(self, before)

    def load_env(self, environ: Mapping[str, str] | None = None) -> None:
        """Read every setting not set in code from ``environ`` (default ``os.environ``):
        ``SPARTAN_NAME`` for setting ``name``, else the default. ``spartan.init`` calls
        it; a backend made directly (``RayBackend(...)``) does not. Raises
        ``ValueError`` naming the variable on a value that does not parse (even for a
        setting set in code), before changing anything.

        >>> c = Config()
        >>> c.load_env({"SPARTAN_STRICT_OPTIMIZER": "0", "SPARTAN_TILES_PER_WORKER": "4"})
        >>> c.strict_optimizer, c.tiles_per_worker
        (False, 4)
        """
        environ = os.environ if environ is None else environ
        with self._lock:
            explicit = self._explicit
            values = {}
            for name in _FIELDS:
                raw = environ.get(ENV_PREFIX + name.upper(), "").strip()
                value = _parsed(name, raw) if raw else self._defaults[name]
                if name not in explicit:
                    values[name] = value
            for name, value in values.items():
                object.__setattr__(self, name, value)
            object.__setattr__(self, "_env_read", True)

    def reset(self, *names: str, environ: Mapping[str, str] | None = None) -> None:
        """Forget that ``names`` (default: every setting) were set in code: they take
        their environment variable's value (from ``environ``, default ``os.environ``)
        or the default again.

        >>> c = Config()
        >>> c.max_graph_size = 5
        >>> c.reset("max_graph_size", environ={})
        >>> c.max_graph_size
        2000
        """
        for name in names:
            if name not in _FIELDS:
                raise TypeError(_unknown(name, "spartan.config.reset() got an unknown setting"))
        with self._lock:
            self._explicit.difference_update(names or _FIELDS)
            self.load_env(environ)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]  # (a lock does not pickle; a copy gets its own)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.RLock())

    @property
    def tuning(self) -> Tuning:
        """The tuning section: the optimizer's and the processes' knobs (docs/tuning.md)."""
        return Tuning(self)

    def __repr__(self) -> str:
        user = ", ".join(f"{n}={getattr(self, n)!r}" for n in _USER)
        return f"Config({user}, tuning={self.tuning!r})"


class Tuning:
    """The tuning section of a :class:`Config`: reads and writes go to the config itself
    (``config.tuning.worker_niceness`` is ``config.worker_niceness``).

    >>> import spartan
    >>> with spartan.config.tuning.set(retile_inputs=False):
    ...     spartan.config.retile_inputs
    False
    """

    __slots__ = ("_config",)

    def __init__(self, config: Config) -> None:
        object.__setattr__(self, "_config", config)

    def __getattr__(self, name: str) -> Any:
        if name not in _TUNING:
            raise AttributeError(_unknown(name, "spartan.config.tuning has no knob", _TUNING))
        return getattr(self._config, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _TUNING:
            raise AttributeError(_unknown(name, "spartan.config.tuning has no knob", _TUNING))
        setattr(self._config, name, value)

    def set(self, **knobs: Any) -> _Restore:
        """:meth:`Config.set` for tuning knobs only."""
        for name in knobs:
            if name not in _TUNING:
                raise TypeError(
                    _unknown(name, "spartan.config.tuning.set() got an unknown knob", _TUNING)
                )
        return self._config.set(**knobs)

    def __dir__(self) -> list[str]:
        return [*_TUNING, "set"]

    def __repr__(self) -> str:
        return "Tuning(" + ", ".join(f"{n}={getattr(self._config, n)!r}" for n in _TUNING) + ")"


class _Restore(contextlib.AbstractContextManager["Config"]):
    """What :meth:`Config.set` returns: the settings are set already; leaving a ``with``
    block puts back their earlier values (and whether they had been set in code)."""

    def __init__(self, config: Config, before: dict[str, tuple[Any, bool]]) -> None:
        self._config, self._before = config, before

    def __enter__(self) -> Config:
        return self._config

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        c = self._config
        with c._lock:
            for name, (value, explicit) in self._before.items():
                object.__setattr__(c, name, value)
                if not explicit:
                    c._explicit.discard(name)


_FIELDS = {f.name: f.metadata for f in fields(Config)}
_USER = tuple(n for n, m in _FIELDS.items() if not m["tuning"])
_TUNING = tuple(n for n, m in _FIELDS.items() if m["tuning"])


def _unknown(name: str, what: str, names: Sequence[str] = tuple(_FIELDS)) -> str:
    """``what`` ``name``, with the closest known name if one is close."""
    close = difflib.get_close_matches(name, list(names), n=1)
    return f"{what} {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def _checked(name: str, value: Any) -> Any:
    """``value`` for setting ``name``, checked against its kind (a path becomes a str)."""
    meta = _FIELDS[name]
    kind, where = meta["kind"], f"spartan.config.{name}"
    if value is None:
        if meta["none"]:
            return None
        raise TypeError(f"{where} may not be None")
    if kind is bool:
        if isinstance(value, bool) or (isinstance(value, numbers.Integral) and value in (0, 1)):
            return bool(value)
        raise TypeError(f"{where} must be True or False, got {value!r}")
    if kind is int:
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        raise TypeError(f"{where} must be an integer, got {value!r}")
    if kind is float:
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
        raise TypeError(f"{where} must be a number, got {value!r}")
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a string, got {value!r}")
    if meta["choices"] and value not in meta["choices"]:
        raise ValueError(f"{where} must be one of {meta['choices']}, got {value!r}")
    return value


def _parsed(name: str, raw: str) -> Any:
    """The value environment variable ``SPARTAN_NAME`` = ``raw`` gives setting ``name``."""
    meta = _FIELDS[name]
    kind, var = meta["kind"], ENV_PREFIX + name.upper()
    if meta["none"] and raw.lower() == "none":
        return None
    low = raw.lower()
    try:
        if kind is bool:
            if low in _TRUE or low in _FALSE:
                return low in _TRUE
            raise ValueError("expected 1/0, true/false, yes/no or on/off")
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
        return _checked(name, raw)
    except ValueError as e:
        why = (
            str(e)
            if kind in (bool, str)
            else f"expected {'an integer' if kind is int else 'a number'}"
        )
        none = " or 'none'" if meta["none"] else ""
        raise ValueError(
            f"environment variable {var}={raw!r} (spartan.config.{name}): {why}{none}"
        ) from None


config = Config()
object.__setattr__(config, "_env_read", False)  # read on first use, and by spartan.init
