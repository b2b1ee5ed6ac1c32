"""The current backend: created by :func:`init`, or implicitly on first use.

The implicit start can begin early, in a background thread (:func:`start_in_background`),
so that the first evaluation waits only for what is left of it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

from spartan.backend.base import Backend

log = logging.getLogger("spartan")
_current: Backend | None = None
#: the background start not yet taken over by current() / init() / shutdown()
_pending: _Start | None = None
#: serializes every change of the current backend; held while waiting for a start
_lock = threading.RLock()


def _resolve(
    address: str | None,
    num_workers: int | None,
    backend: str | None,
    device: str | None,
    gpus_per_worker: float,
    ray_options: dict[str, Any],
) -> dict[str, Any]:
    """The arguments of a start, defaults and environment applied (and checked)."""
    backend = backend or os.environ.get("SPARTAN_BACKEND", "ray")
    if backend not in ("ray", "local"):
        raise ValueError(f"unknown backend {backend!r}; expected 'ray' or 'local'")
    if num_workers is None and os.environ.get("SPARTAN_NUM_WORKERS"):
        num_workers = int(os.environ["SPARTAN_NUM_WORKERS"])
    device = device or os.environ.get("SPARTAN_DEVICE", "cpu")
    if device not in ("cpu", "gpu", "auto"):
        raise ValueError(f"unknown device {device!r}; expected 'cpu', 'gpu' or 'auto'")
    return {
        "address": address,
        "num_workers": num_workers,
        "backend": backend,
        "device": device,
        "gpus_per_worker": gpus_per_worker,
        "ray_options": dict(ray_options),
    }


def _ensure_ray(args: dict[str, Any]) -> bool:
    """Start (or join) Ray unless it is up; whether this call started it."""
    import ray

    if ray.is_initialized():
        return False
    address = args["address"]
    if address is None:
        # inside `ray job submit` join the job's cluster; otherwise start our own
        # instance even if a `ray start` cluster is running on this machine
        address = "auto" if os.environ.get("RAY_ADDRESS") else "local"
    # the user's Ray options win over spartan's defaults (log_to_driver=False is theirs)
    ray.init(address=address, **{"log_to_driver": True, **args["ray_options"]})
    return True


def _make(args: dict[str, Any]) -> Backend:
    """A new backend for resolved ``args``; touches no module state, so that it runs in
    the background thread too."""
    device = args["device"]
    num_workers = args["num_workers"]
    if args["backend"] == "local":
        from spartan.backend.device import cupy_module
        from spartan.backend.local import LocalBackend

        if device == "auto":
            device = "gpu" if cupy_module() is not None else "cpu"
        if device == "gpu" and cupy_module() is None:
            raise RuntimeError("device='gpu' needs CuPy and a GPU (pip install 'spartan[gpu]')")
        return LocalBackend(num_workers or (1 if device == "gpu" else os.cpu_count() or 1), device)

    import ray

    from spartan.backend.ray_backend import RayBackend

    _ensure_ray(args)
    if device == "auto":
        device = "gpu" if ray.cluster_resources().get("GPU", 0) > 0 else "cpu"
    if device == "gpu":
        if ray.cluster_resources().get("GPU", 0) <= 0:
            raise RuntimeError("device='gpu' but the Ray cluster offers no GPUs")
        return RayBackend(num_workers, 1, args["gpus_per_worker"], "gpu")
    return RayBackend(num_workers)


class _Start:
    """One background start: its arguments, and its backend or error once ``done``."""

    def __init__(self, args: dict[str, Any]) -> None:
        self.args = args
        self.done = threading.Event()
        self.backend: Backend | None = None
        self.error: BaseException | None = None
        self.started_ray = False

    def run(self) -> None:
        quiet = _OffMainThreadWarning()
        ray_logger = logging.getLogger("ray._private.worker")
        ray_logger.addFilter(quiet)
        try:
            if self.args["backend"] == "ray":
                # known before the workers start: a failed start may leave Ray up
                self.started_ray = _ensure_ray(self.args)
            self.backend = _make(self.args)
        except BaseException as e:  # noqa: BLE001 -- handed to the thread that waits
            self.error = e
        finally:
            ray_logger.removeFilter(quiet)
            self.done.set()
        if self.started_ray:
            # Ray starts its GCS, raylet and helpers with PR_SET_PDEATHSIG, which Linux
            # fires when the *thread* that spawned them ends, not the process: were this
            # thread to return, Ray would be SIGKILLed under the driver. It lives as long
            # as the process (a daemon thread), just as the main thread would.
            threading.Event().wait()

    def wait(self) -> Backend:
        """Its backend once started; its own exception (with its traceback) if it failed."""
        self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.backend is not None
        return self.backend


class _OffMainThreadWarning(logging.Filter):
    """Drops Ray's warning that it set no SIGTERM handler (only the main thread may set
    one). Without it a SIGTERM ends the driver at once, and the kernel kills Ray's
    processes with it (their starting thread ends with the process) instead of Ray's
    orderly shutdown: nothing is left running either way."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("SIGTERM handler is not set")


def start_in_background(
    address: str | None = None,
    num_workers: int | None = None,
    backend: str | None = None,
    device: str | None = None,
    gpus_per_worker: float = 1.0,
    **ray_options: Any,
) -> None:
    """Begin starting the default backend in a background thread and return at once.

    Takes :func:`init`'s arguments. Does nothing when a backend is current or a start is
    already under way (idempotent, thread-safe). :func:`current` then waits only for
    what is left of the start, and raises the start's own exception if it failed;
    :func:`init` waits for it and keeps its backend when asked for the same one,
    otherwise replaces it (restarting Ray only where the start began Ray itself and
    ``init`` asks for another address or other Ray options); :func:`shutdown` waits for
    it and releases its workers. Ray's start runs off the main thread, which stays free.

    >>> session.start_in_background()   # returns at once  # doctest: +SKIP
    >>> y = numpy.arange(10) * 2        # meanwhile the main thread goes on  # doctest: +SKIP
    >>> session.current().nworkers      # waits for the rest of the start  # doctest: +SKIP
    2
    """
    global _pending
    if _current is not None or _pending is not None:
        return  # (the common case, checked again under the lock)
    args = _resolve(address, num_workers, backend, device, gpus_per_worker, ray_options)
    with _lock:
        if _current is not None or _pending is not None:
            return
        start = _Start(args)
        try:
            threading.Thread(target=start.run, name="spartan-start", daemon=True).start()
        except RuntimeError:  # no new threads at interpreter exit: current() starts it
            return
        _pending = start


def _take_pending() -> _Start | None:
    """The background start, finished (waited for) and no longer pending; call under _lock."""
    global _pending
    pending = _pending
    if pending is not None:
        # still pending until it is over: a wait cut short (Ctrl-C) leaves it to the
        # next caller, which must not start a second Ray beside it
        pending.done.wait()
        _pending = None
    return pending


def init(
    address: str | None = None,
    num_workers: int | None = None,
    backend: str | None = None,
    device: str | None = None,
    gpus_per_worker: float = 1.0,
    **ray_options: Any,
) -> Backend:
    """Start (or join) the workers and make them current.

    ``backend="ray"`` (default) starts a local Ray instance, or joins ``address``
    (``"auto"``, ``"ray://host:port"``); ``backend="local"`` runs workers in-process.
    ``device="gpu"`` keeps tiles in CuPy device memory, one GPU (or
    ``gpus_per_worker`` of one) per worker; ``"auto"`` picks GPUs when there are any.
    ``SPARTAN_BACKEND``, ``SPARTAN_NUM_WORKERS`` and ``SPARTAN_DEVICE`` set the defaults.
    A start under way in the background (:func:`start_in_background`) is waited for:
    its backend is kept when these arguments ask for the same one, else replaced.

    >>> spartan.init(backend="local", num_workers=4)   # doctest: +SKIP
    """
    global _current
    args = _resolve(address, num_workers, backend, device, gpus_per_worker, ray_options)
    with _lock:
        pending = _take_pending()
        restart_ray = False
        if pending is not None and pending.error is not None:
            log.info("superseding a failed background start: %r", pending.error)
        elif pending is not None:
            if _current is None and args == pending.args:
                _current = pending.backend
                return _current
            assert pending.backend is not None
            pending.backend.shutdown()
            # the background start chose Ray's address and options; init's own win
            restart_ray = pending.started_ray and (
                args["address"] not in (None, "local")
                or args["ray_options"] != pending.args["ray_options"]
            )
        if _current is not None:
            shutdown()
        if restart_ray:
            import ray

            ray.shutdown()
        _current = _make(args)
        return _current


def use(backend: Backend | None) -> Backend | None:
    """Make an existing backend current (without shutting down the previous one)."""
    global _current
    with _lock:
        _current = backend
    return backend


@contextlib.contextmanager
def borrowed(backend: Backend) -> Iterator[Backend]:
    """``backend`` current for the ``with`` block only (other threads wait meanwhile);
    a background start under way is left to finish for the backend after it.

    >>> with session.borrowed(LocalBackend(1)):   # doctest: +SKIP
    ...     spartan.compute(x)
    """
    global _current
    with _lock:
        before = _current
        _current = backend
        try:
            yield backend
        finally:
            _current = before


def peek() -> Backend | None:
    """The current backend if there is one; never starts or waits for one."""
    return _current


def current() -> Backend:
    """The current backend: the one made current, else the background start's (waiting
    for what is left of it, and raising its exception if it failed), else a new default
    one (:func:`init`)."""
    global _current
    found = _current
    if found is not None:
        return found
    with _lock:
        if _current is not None:
            return _current
        pending = _take_pending()
        if pending is None:
            return init()
        _current = pending.wait()
        return _current


def shutdown() -> None:
    """Release the workers (Ray itself stays up for the next ``init``); a background
    start under way is waited for and its workers released too."""
    global _current
    with _lock:
        pending = _take_pending()
        if pending is not None and pending.backend is not None:
            pending.backend.shutdown()
        if _current is not None:
            _current.shutdown()
            _current = None
