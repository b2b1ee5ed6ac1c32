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

    >>> spartan.init(backend="local", num_workers=4)   # doctest: +SKIP
    """
    global _current
    backend = backend or os.environ.get("SPARTAN_BACKEND", "ray")
    if num_workers is None and os.environ.get("SPARTAN_NUM_WORKERS"):
        num_workers = int(os.environ["SPARTAN_NUM_WORKERS"])
    device = device or os.environ.get("SPARTAN_DEVICE", "cpu")
    if device not in ("cpu", "gpu", "auto"):
        raise ValueError(f"unknown device {device!r}; expected 'cpu', 'gpu' or 'auto'")
    if _current is not None:
        shutdown()
    if backend == "local":
        from spartan.backend.device import cupy_module
        from spartan.backend.local import LocalBackend

        if device == "auto":
            device = "gpu" if cupy_module() is not None else "cpu"
        if device == "gpu" and cupy_module() is None:
            raise RuntimeError("device='gpu' needs CuPy and a GPU (pip install 'spartan[gpu]')")
        _current = LocalBackend(
            num_workers or (1 if device == "gpu" else os.cpu_count() or 1), device
        )
    elif backend == "ray":
        import ray

        from spartan.backend.ray_backend import RayBackend

        if not ray.is_initialized():
            if address is None:
                # inside `ray job submit` join the job's cluster; otherwise start our own
                # instance even if a `ray start` cluster is running on this machine
                address = "auto" if os.environ.get("RAY_ADDRESS") else "local"
            ray.init(address=address, log_to_driver=True, **ray_options)
        if device == "auto":
            device = "gpu" if ray.cluster_resources().get("GPU", 0) > 0 else "cpu"
        if device == "gpu":
            if ray.cluster_resources().get("GPU", 0) <= 0:
                raise RuntimeError("device='gpu' but the Ray cluster offers no GPUs")
            _current = RayBackend(num_workers, 1, gpus_per_worker, "gpu")
        else:
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
