"""Shared fixtures: one Ray instance per test session, backends, tilings.

``backend`` runs a test on the in-process backend (3 workers) and on Ray (2 workers,
started once); ``tiling`` runs it under row, column, block and duplicated tilings.
Tiles are tiny (``tiles_per_worker=2``), small arrays are distributed
(``local_below_bytes=0``: tests of arrays held in the driver set it back) and cut like
big ones (``replicate_below_bytes=0``; ``SPARTAN_TEST_REPLICATE_BELOW=65536`` runs the suite with
the default replication instead) so partitioning is really exercised. An optimizer
exception fails the test (``strict_optimizer``) instead of becoming a warning.
"""

from __future__ import annotations

import gc
import os

import pytest

os.environ.setdefault("RAY_ACCEPT_TOOLS_WARNING", "1")
# SciPy reads this once, when it is first imported (scikit-learn's array API dispatch
# needs it too): set here, before any test module imports scipy (tests/test_clients.py)
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import spartan  # noqa: E402
from spartan.backend import session  # noqa: E402

TILINGS = ["row", "column", "block", "dup"]
#: run the whole suite with GPU tiles: SPARTAN_TEST_DEVICE=gpu pytest
DEVICE = os.environ.get("SPARTAN_TEST_DEVICE", "cpu")


_live: dict[str, object] = {}  # the backends in use (a test's spartan.init may end one)


@pytest.fixture(scope="session")
def _ray_session():
    """Ray itself, started once per session with ``num_cpus=2``."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(
            address="local",
            num_cpus=2,
            num_gpus=1 if DEVICE == "gpu" else 0,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    yield
    if _live.get("ray") is not None:
        _live.pop("ray").shutdown()
    if started:
        ray.shutdown()


@pytest.fixture
def ray_backend(_ray_session):
    """A Ray backend with 2 workers, made once (again only if a test shut it down)."""
    from spartan.backend.ray_backend import RayBackend

    be = _live.get("ray")
    if be is None or not be.nworkers:
        gpus = 0.5 if DEVICE == "gpu" else 0
        be = _live["ray"] = RayBackend(num_workers=2, num_gpus_per_worker=gpus, device=DEVICE)
    return be


class _Spy:
    """An actor handle that logs ``(worker, method)`` of every call, then makes it."""

    def __init__(self, calls, worker, actor):
        self.calls, self.worker, self.actor = calls, worker, actor

    def __getattr__(self, name):
        method = getattr(self.actor, name)
        spy = self

        class Method:
            def __init__(self, made=method):
                self.made = made

            def options(self, **options):
                return Method(method.options(**options))

            def remote(self, *args, **kwargs):
                spy.calls.append((spy.worker, name))
                return self.made.remote(*args, **kwargs)

        return Method()


@pytest.fixture
def actor_calls(ray_backend, monkeypatch):
    """``(worker, method)`` of every call the Ray backend makes to its actors."""
    gc.collect()  # earlier tests' garbage: its deletes are not this test's calls
    ray_backend.release_held()
    calls = []
    spies = [_Spy(calls, w, a) for w, a in enumerate(ray_backend.actors)]
    monkeypatch.setattr(ray_backend, "actors", spies)
    return calls


@pytest.fixture
def local_backend():
    """The in-process backend with 3 workers (made again if a test shut it down)."""
    from spartan.backend.local import LocalBackend

    be = _live.get("local")
    if be is None or not be.nworkers:
        be = _live["local"] = LocalBackend(num_workers=3, device=DEVICE)
    return be


@pytest.fixture(autouse=True)
def _small_tiles():
    """Tiny tiles, tiny arrays cut like big ones instead of replicated whole, and an
    optimizer exception failing the test (users get a warning and the local tiling
    rules instead, which would hide an optimizer bug from the suite)."""
    cfg = spartan.config
    old = cfg.tiles_per_worker, cfg.replicate_below_bytes, cfg.local_below_bytes
    strict = cfg.strict_optimizer
    cfg.tiles_per_worker = 2
    cfg.replicate_below_bytes = int(os.environ.get("SPARTAN_TEST_REPLICATE_BELOW", 0))
    cfg.local_below_bytes = 0
    cfg.strict_optimizer = True
    yield
    cfg.tiles_per_worker, cfg.replicate_below_bytes, cfg.local_below_bytes = old
    cfg.strict_optimizer = strict


@pytest.fixture(params=["local", "ray"])
def backend(request):
    """Each test twice: in-process workers and Ray workers."""
    be = request.getfixturevalue(f"{request.param}_backend")
    session.use(be)
    be.reset_stats()
    yield be
    if _live.get("local") is not None:  # later tests default to in-process workers
        session.use(_live["local"])


@pytest.fixture
def local(local_backend):
    """The in-process backend only (for tests that do not need Ray)."""
    session.use(local_backend)
    local_backend.reset_stats()
    return local_backend


@pytest.fixture
def on_ray(ray_backend):
    """The Ray backend as spartan's session for one test (for Ray's own paths)."""
    session.use(ray_backend)
    yield ray_backend
    if _live.get("local") is not None:  # later tests default to in-process workers
        session.use(_live["local"])


@pytest.fixture(params=TILINGS)
def tiling(request):
    return request.param


class Gate:
    """A file a worker's task waits for (``os.path.exists(gate.path)``, polled): the test
    opens it once it has seen what happens while the task runs, so no sleep has to
    outlast the test's own steps on a slow machine."""

    def __init__(self, path: str) -> None:
        self.path = path

    def open(self) -> None:
        with open(self.path, "a"):
            pass


@pytest.fixture
def gate(tmp_path):
    """A closed :class:`Gate`, opened at the end of the test whatever happened (so a
    failed test leaves no task waiting)."""
    g = Gate(str(tmp_path / "gate"))
    yield g
    g.open()


def pytest_runtest_setup(item):
    """Ray workers cannot import test modules: ship their functions by value."""
    try:
        import ray.cloudpickle
    except ImportError:  # no Ray here (its tests skip)
        return
    module = getattr(item, "module", None)
    if module is not None and module.__name__ not in _by_value:
        ray.cloudpickle.register_pickle_by_value(module)
        _by_value.add(module.__name__)


_by_value: set[str] = set()
