"""The current backend: created by :func:`init`, or implicitly on first use.

The implicit start can begin early, in a background thread (:func:`start_in_background`),
so that the first evaluation waits only for what is left of it.
"""

from __future__ import annotations

import contextlib
import glob
import ipaddress
import json
import logging
import os
import socket
import threading
import time
import urllib.parse
import warnings
from collections.abc import Iterator
from typing import Any

from spartan.backend.base import Backend

log = logging.getLogger("spartan")
_current: Backend | None = None
#: the background start not yet taken over by current() / init() / shutdown()
_pending: _Start | None = None
#: serializes every change of the current backend; held while waiting for a start
_lock = threading.RLock()
#: a backend :func:`borrowed` by one thread (``.backend``), current in that thread only
_borrowed = threading.local()


def _resolve(
    address: str | None,
    num_workers: int | None,
    backend: str | None,
    device: str | None,
    gpus_per_worker: float,
    ray_options: dict[str, Any],
    cpus_per_worker: float = 1.0,
) -> dict[str, Any]:
    """The arguments of a start, defaults and environment applied (and checked); the
    settings not set in code are read from the environment again (``SPARTAN_*``)."""
    from spartan.config import config

    config.load_env()
    if not cpus_per_worker >= 0:
        raise ValueError(f"cpus_per_worker must be >= 0, got {cpus_per_worker!r}")
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
        "cpus_per_worker": cpus_per_worker,
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
    defaults: dict[str, Any] = {"log_to_driver": True}
    if address == "local":
        # no dashboard and no job server (which runs whatever code is posted to it)
        # unless asked for: a faster start, and fewer processes to outlive a killed driver
        defaults["include_dashboard"] = False
    # the user's Ray options win over spartan's defaults (log_to_driver=False is theirs)
    ray.init(address=address, **{**defaults, **args["ray_options"]})
    try:
        if address == "local":
            _record_ray_processes()
        reap_dead_ray_instances()
    except Exception:  # noqa: BLE001 -- housekeeping never fails a start
        log.debug("spartan: could not note or reap Ray processes", exc_info=True)
    if address != "local":
        gcs = None if address.startswith("ray://") else ray.get_runtime_context().gcs_address
        check_cluster_security(address, gcs)
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
    cpus = args["cpus_per_worker"]
    if device == "auto":
        device = "gpu" if ray.cluster_resources().get("GPU", 0) > 0 else "cpu"
    gpus = args["gpus_per_worker"] if device == "gpu" else 0
    if device == "gpu" and ray.cluster_resources().get("GPU", 0) <= 0:
        raise RuntimeError("device='gpu' but the Ray cluster offers no GPUs")
    if num_workers is None and joined_cluster():
        num_workers = _free_share(cpus, gpus)
    return RayBackend(num_workers, cpus, gpus, device)


def joined_cluster() -> bool:
    """Whether this driver joined a Ray instance it did not start (a cluster other
    drivers may use too), rather than starting its own; False when Ray is not up."""
    import ray

    if not ray.is_initialized():
        return False
    node = getattr(ray._private.worker, "_global_node", None)
    return node is None or not getattr(node, "head", False)  # (None: a ray:// client)


def _free_share(cpus: float, gpus: float) -> int:
    """The default number of workers on a joined cluster: as many as its free resources
    hold now (other drivers' workers keep theirs); RuntimeError, saying how to share,
    when that is none. Taking every CPU, free or not, would leave the workers waiting
    for the other driver to exit."""
    import ray

    from spartan.backend.worker_env import free_workers

    n = free_workers(cpus, gpus)
    if n >= 1:
        return n
    kind, each = ("GPU", gpus) if gpus else ("CPU", cpus)
    total = ray.cluster_resources().get(kind, 0)
    held = total - ray.available_resources().get(kind, 0)
    share = (
        "gpus_per_worker= a fraction, in every driver, to share each GPU"
        if gpus
        else "cpus_per_worker=0 here for workers that share the cores without holding any"
    )
    raise RuntimeError(
        f"the Ray cluster's {kind}s are all held by other drivers ({held:g} of {total:g} "
        f"held; a spartan worker needs {each:g}): pass num_workers= to the other drivers "
        f"to leave some free, {share}, or stop the other drivers"
    )


def _cpus_held(backend: Backend) -> tuple[float, float] | None:
    """For a Ray backend on a joined cluster: the cluster's free CPUs now and the CPUs
    its workers hold (see :func:`_await_release`); None otherwise."""
    if backend.name != "ray" or not backend.nworkers or not joined_cluster():
        return None
    import ray

    from spartan.backend.ray_backend import RayBackend

    assert isinstance(backend, RayBackend)  # (the only backend named "ray")
    return ray.available_resources().get("CPU", 0.0), backend.nworkers * backend.cpus


def _await_release(held: tuple[float, float] | None, timeout: float = 5.0) -> None:
    """Wait (at most ``timeout`` seconds) until Ray counts the CPUs of the workers just
    stopped as free: Ray frees them a moment after ``ray.kill``, and the next backend's
    default share (:func:`_free_share`) must count them."""
    if not held:
        return
    import ray

    free_before, released = held
    deadline = time.monotonic() + timeout
    while ray.available_resources().get("CPU", 0.0) < free_before + released - 1e-9:
        if time.monotonic() > deadline:
            return
        time.sleep(0.02)


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
    cpus_per_worker: float = 1.0,
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
    args = _resolve(
        address, num_workers, backend, device, gpus_per_worker, ray_options, cpus_per_worker
    )
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
    cpus_per_worker: float = 1.0,
    **ray_options: Any,
) -> Backend:
    """Start (or join) the workers and make them current.

    ``backend="ray"`` (default) starts a local Ray instance (no dashboard unless
    ``include_dashboard=True``; other keywords go to ``ray.init``), or joins
    ``address`` (``"auto"``, ``"host:6379"``, ``"ray://host:port"``);
    ``backend="local"`` runs workers in-process. Each worker holds ``cpus_per_worker``
    CPUs (0: it holds none and shares the cores). By default a new instance gets one
    worker per CPU; a joined cluster as many as its *free* CPUs hold now, so a second
    driver gets the CPUs the first left free (RuntimeError saying how to share when
    there are none), and joining one that accepts clients without a token on a
    network address warns (:class:`InsecureClusterWarning`).
    ``device="gpu"`` keeps tiles in CuPy device memory, one GPU (or
    ``gpus_per_worker`` of one) per worker; ``"auto"`` picks GPUs when there are any.
    ``SPARTAN_BACKEND``, ``SPARTAN_NUM_WORKERS`` and ``SPARTAN_DEVICE`` set the defaults;
    the ``SPARTAN_<NAME>`` variables of :mod:`spartan.config`'s settings are read again.
    A start under way in the background (:func:`start_in_background`) is waited for:
    its backend is kept when these arguments ask for the same one, else replaced.

    >>> spartan.init(backend="local", num_workers=4)   # doctest: +SKIP
    >>> spartan.init(address="auto", cpus_per_worker=0)   # share a busy cluster  # doctest: +SKIP
    """
    global _current
    args = _resolve(
        address, num_workers, backend, device, gpus_per_worker, ray_options, cpus_per_worker
    )
    with _lock:
        pending = _take_pending()
        restart_ray = False
        if pending is not None and pending.error is not None:
            log.info("superseding a failed background start: %r", pending.error)
        elif pending is not None:
            if _current is None and args == pending.args:
                assert pending.backend is not None  # (no error: it started)
                _current = pending.backend
                return _current
            assert pending.backend is not None
            held = _cpus_held(pending.backend)
            pending.backend.shutdown()
            _await_release(held)
            # the background start chose Ray's address and options; init's own win
            restart_ray = pending.started_ray and (
                args["address"] not in (None, "local")
                or args["ray_options"] != pending.args["ray_options"]
            )
        if _current is not None:
            held = _cpus_held(_current)
            shutdown()
            _await_release(held)
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
    """``backend`` current for the ``with`` block, in this thread only (other threads
    keep the current backend meanwhile); a background start under way is left to finish.

    >>> with session.borrowed(LocalBackend(1)):   # doctest: +SKIP
    ...     spartan.compute(x)
    """
    before = getattr(_borrowed, "backend", None)
    _borrowed.backend = backend
    try:
        yield backend
    finally:
        _borrowed.backend = before


def peek() -> Backend | None:
    """The current backend if there is one; never starts or waits for one."""
    lent = getattr(_borrowed, "backend", None)
    return lent if lent is not None else _current


def current() -> Backend:
    """The current backend: the one made current, else the background start's (waiting
    for what is left of it, and raising its exception if it failed), else a new default
    one (:func:`init`)."""
    global _current
    found = peek()
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


# ---- the Ray instance: what a killed driver leaves, and who may drive a cluster --------

#: the file, in the session directory of a Ray instance a spartan driver started, that
#: names the driver and that instance's processes (see :func:`reap_dead_ray_instances`)
MARKER = "spartan-driver.json"
#: the most bytes of a marker read (a few hundred processes)
_MARKER_MAX = 1 << 20
#: how far two readings of one process's start time may differ (psutil counts it from
#: the boot time, in clock ticks)
_SAME_START = 0.05


def _record_ray_processes() -> None:
    """Note in the session directory of the Ray instance this driver has just started
    (:data:`MARKER`): this driver, and the processes of that instance with their start
    times. The file is this user's, mode 0600, never written through a link planted at
    its name (Ray makes session directories world-writable), and never replaced."""
    import psutil
    import ray

    node = ray._private.worker._global_node
    assert node is not None  # (this driver has just started Ray)
    roots = [info.process.pid for infos in node.all_processes.values() for info in infos]
    found: dict[int, list[Any]] = {}
    for pid in roots:
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(pid)
            for p in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    found[p.pid] = [p.pid, p.create_time(), p.name()]
    me = psutil.Process()
    record = {"driver": [me.pid, me.create_time()], "processes": list(found.values())}
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(os.path.join(node.get_session_dir_path(), MARKER), flags, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(record, f)


def _read_marker(path: str) -> dict[str, Any] | None:
    """The record at ``path`` if this user wrote it (a regular file of this user, not a
    link) and it is well formed; else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not (st.st_mode & 0o170000 == 0o100000 and st.st_uid == os.getuid()):
            return None
        try:
            record = json.loads(f.read(_MARKER_MAX))
            pid, created = record["driver"]
            procs = [(int(p), float(t), str(n)) for p, t, n in record["processes"]]
            return {"driver": (int(pid), float(created)), "processes": procs}
        except (ValueError, TypeError, KeyError):
            return None


def _same_process(pid: int, created: float) -> Any:
    """The live process ``pid`` of this user if it started at ``created`` (the pid not
    reused since); else None."""
    import psutil

    try:
        p = psutil.Process(pid)
        if abs(p.create_time() - created) > _SAME_START or p.uids().real != os.getuid():
            return None
        return None if p.status() == psutil.STATUS_ZOMBIE else p
    except psutil.Error:
        return None


def reap_dead_ray_instances(temp_dir: str | None = None) -> list[int]:
    """Stop what the Ray instances of spartan drivers now dead left running; the pids
    stopped. Every spartan start (:func:`init`) calls it.

    A driver killed outright (SIGKILL, the out-of-memory killer) takes its Ray
    instance's GCS, raylet and workers with it, but Ray's dashboard and runtime-env
    agents spend a minute or more reporting the raylet's death to a GCS that is gone.
    A driver counts as dead when no process has its pid and start time (as its
    :data:`MARKER` recorded them); only processes that marker names, of this user and
    with the recorded start times, are killed; the marker then goes.

    >>> session.reap_dead_ray_instances()   # doctest: +SKIP
    [40213, 40215]
    """
    import signal

    if temp_dir is None:
        import ray

        node = getattr(ray._private.worker, "_global_node", None)
        if node is None:
            return []
        temp_dir = node.get_temp_dir_path()
    killed = []
    for path in glob.glob(os.path.join(glob.escape(temp_dir), "session_*", MARKER)):
        if os.path.islink(os.path.dirname(path)):
            continue  # (session_latest: the same directory again)
        record = _read_marker(path)
        if record is None or _same_process(*record["driver"]) is not None:
            continue
        for pid, created, _ in record["processes"]:
            if _same_process(pid, created) is not None:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
        with contextlib.suppress(OSError):
            os.unlink(path)
    if killed:
        log.info("spartan: stopped %d Ray processes of dead drivers", len(killed))
    return killed


class InsecureClusterWarning(RuntimeWarning):
    """spartan joined a Ray cluster that runs code for anyone who reaches it: its token
    authentication is off and it listens on a network address (see docs/cluster.md)."""


#: a GCS call that reads the cluster's key-value store (which holds the pickled code of
#: every job): one a cluster with authentication cannot answer without a token
_PROBE = "/ray.rpc.InternalKVGcsService/InternalKVExists"


def cluster_auth_mode(gcs_address: str, timeout: float = 5.0) -> str:
    """Whether the Ray cluster whose GCS is at ``gcs_address`` (``host:port``) asks its
    clients for a token: ``"token"``, ``"disabled"``, or ``"unknown"`` (no answer).

    Asks the GCS the way an outsider would, with no token: a cluster with token
    authentication refuses (``UNAUTHENTICATED``), one without answers.

    >>> session.cluster_auth_mode(ray.get_runtime_context().gcs_address)  # doctest: +SKIP
    'token'
    """
    try:
        import grpc

        with grpc.insecure_channel(gcs_address) as channel:
            channel.unary_unary(_PROBE)(b"", timeout=timeout)  # (b"": an empty request)
    except Exception as e:  # noqa: BLE001 -- any other failure: no answer
        code = getattr(e, "code", None)
        if callable(code) and getattr(code(), "name", "") == "UNAUTHENTICATED":
            return "token"
        return "unknown"
    return "disabled"


def _is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) reaches only this machine."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def check_cluster_security(address: str, gcs_address: str | None) -> None:
    """Warn (:class:`InsecureClusterWarning`) when the cluster just joined at
    ``address`` (its GCS at ``gcs_address``; None for a ``ray://`` client) accepts
    clients without a token on an address other machines reach: anyone who reaches
    its ports can run code on it as the user who started it."""
    if gcs_address is None:
        host = urllib.parse.urlsplit(address).hostname or ""
        # (Ray's own typing of its compiled module lacks these)
        from ray._raylet import (  # type: ignore[attr-defined]
            AuthenticationMode,
            get_authentication_mode,
        )

        # this client sent no token, and the cluster let it in
        token = get_authentication_mode() != AuthenticationMode.DISABLED
        mode = "unknown" if token else "disabled"
    else:
        host = gcs_address.rsplit(":", 1)[0]
        mode = cluster_auth_mode(gcs_address)
    if mode == "disabled" and not _is_loopback(host):
        warnings.warn(
            f"spartan joined the Ray cluster at {gcs_address or address}, which runs code "
            "for anyone who reaches its ports: its token authentication is off. Start "
            "every node with RAY_AUTH_MODE=token and the same RAY_AUTH_TOKEN, and keep "
            "its ports behind a firewall (docs/cluster.md)",
            InsecureClusterWarning,
            stacklevel=2,
        )
