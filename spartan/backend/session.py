"""The current backend: created by :func:`init`, or implicitly on first use."""

from __future__ import annotations

import logging
import os
from typing import Any

from spartan.backend.base import Backend

log = logging.getLogger("spartan")
_current: Backend | None = None


def init(
    address: str | None = None,
    num_workers: int | None = None,
    backend: str | None = None,
    **ray_options: Any,
) -> Backend:
    """Start (or join) the workers and make them current.

    ``backend="ray"`` (default) starts a local Ray instance, or joins ``address``
    (``"auto"``, ``"ray://host:port"``); ``backend="local"`` runs workers in-process.
    ``SPARTAN_BACKEND`` and ``SPARTAN_NUM_WORKERS`` set the defaults.

    >>> spartan.init(backend="local", num_workers=4)   # doctest: +SKIP
    """
    global _current
    backend = backend or os.environ.get("SPARTAN_BACKEND", "ray")
    if num_workers is None and os.environ.get("SPARTAN_NUM_WORKERS"):
        num_workers = int(os.environ["SPARTAN_NUM_WORKERS"])
    if _current is not None:
        shutdown()
    if backend == "local":
        from spartan.backend.local import LocalBackend

        _current = LocalBackend(num_workers or os.cpu_count() or 1)
    elif backend == "ray":
        import ray

        from spartan.backend.ray_backend import RayBackend

        if not ray.is_initialized():
            if address is None:
                # inside `ray job submit` join the job's cluster; otherwise start our own
                # instance even if a `ray start` cluster is running on this machine
                address = "auto" if os.environ.get("RAY_ADDRESS") else "local"
            ray.init(address=address, log_to_driver=True, **ray_options)
        _current = RayBackend(num_workers)
    else:
        raise ValueError(f"unknown backend {backend!r}; expected 'ray' or 'local'")
    return _current


def use(backend: Backend) -> Backend:
    """Make an existing backend current (without shutting down the previous one)."""
    global _current
    _current = backend
    return backend


def current() -> Backend:
    """The current backend, starting the default one on first use."""
    return _current if _current is not None else init()


def shutdown() -> None:
    """Release the workers (Ray itself stays up for the next ``init``)."""
    global _current
    if _current is not None:
        _current.shutdown()
        _current = None
