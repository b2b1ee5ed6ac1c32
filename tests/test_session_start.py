"""Starting the default backend in a background thread (``session.start_in_background``).

The real Ray start runs in a fresh interpreter (this test session has Ray up already);
the rest runs in-process with ``_make`` replaced, on in-process (local) backends.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import traceback

import pytest

from spartan.backend import session
from spartan.backend.local import LocalBackend

#: a fresh interpreter: start Ray in the background, show the main thread runs (the start
#: cannot go on until it has), then evaluate on the backend current() hands over
SCRIPT = textwrap.dedent(
    """
    import threading

    import numpy

    import spartan
    from spartan.backend import session
    from spartan.backend.ray_backend import RayBackend

    real_ensure_ray = session._ensure_ray
    main_worked = threading.Event()
    ray_thread = []

    def gated(args):
        ray_thread.append(threading.current_thread())
        main_worked.wait()  # the start goes on only after the main thread has worked
        return real_ensure_ray(args)

    session._ensure_ray = gated
    session.start_in_background(num_workers=1, num_cpus=1, include_dashboard=False)
    session.start_in_background()  # idempotent: still the one start
    assert session._current is None and session._pending is not None

    # had start_in_background waited for the start, this line would never be reached
    work = float(numpy.sqrt(numpy.arange(100_000.0)).sum())
    main_worked.set()

    backend = session.current()
    assert isinstance(backend, RayBackend) and backend.nworkers == 1, backend
    assert ray_thread and ray_thread[0] is not threading.main_thread()
    # Ray's processes die with the thread that started them (PR_SET_PDEATHSIG)
    assert ray_thread[0].is_alive()
    x = spartan.arange(1000, dtype=float)
    assert numpy.isclose(float(spartan.sqrt(x).sum()), numpy.sqrt(numpy.arange(1000.0)).sum())
    assert session.current() is backend and session._pending is None
    print("ok", work > 0)
    """
)


def test_ray_starts_in_a_background_thread():
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().endswith("ok True"), proc.stdout + proc.stderr
    assert "SIGTERM handler is not set" not in proc.stderr


@pytest.fixture
def no_backend(monkeypatch):
    """No current backend, and ``_make`` counting the backends it makes (in-process ones),
    each after ``gate`` opens; the previous backend restored afterwards."""
    previous = session._current
    session.use(None)
    made: list[tuple[dict, LocalBackend]] = []
    gate = threading.Event()
    gate.set()

    def make(args):
        gate.wait()
        backend = LocalBackend(args["num_workers"] or 1)
        made.append((args, backend))
        return backend

    monkeypatch.setattr(session, "_make", make)
    yield made, gate
    session.shutdown()
    session.use(previous)


def test_current_waits_for_the_background_start(no_backend):
    made, gate = no_backend
    gate.clear()
    session.start_in_background(backend="local", num_workers=2)
    assert session._current is None and not made  # still held at the gate
    gate.set()
    backend = session.current()
    assert made == [(made[0][0], backend)] and backend.nworkers == 2
    assert session.current() is backend


def test_concurrent_starts_make_one_backend(no_backend):
    made, gate = no_backend
    gate.clear()
    threads = [
        threading.Thread(target=session.start_in_background, kwargs={"backend": "local"})
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    gate.set()
    backend = session.current()
    assert [b for _, b in made] == [backend]
    session.start_in_background(backend="local")  # a backend is current: nothing to do
    assert len(made) == 1 and session._pending is None


def test_init_during_a_background_start_replaces_it(no_backend):
    """The explicit init waits for the start under way and releases its workers: one
    live backend, never two."""
    made, gate = no_backend
    gate.clear()
    session.start_in_background(backend="local", num_workers=2)
    result = []
    caller = threading.Thread(
        target=lambda: result.append(session.init(backend="local", num_workers=3))
    )
    caller.start()
    gate.set()
    caller.join()
    (_, background), (_, explicit) = made
    assert result == [explicit] and session.current() is explicit
    assert background.nworkers == 0 and explicit.nworkers == 3


def test_init_with_the_same_arguments_keeps_the_background_backend(no_backend):
    made, _ = no_backend
    session.start_in_background(backend="local", num_workers=2)
    backend = session.init(backend="local", num_workers=2)
    assert [b for _, b in made] == [backend] and backend.nworkers == 2


def test_shutdown_releases_a_background_start(no_backend):
    made, _ = no_backend
    session.start_in_background(backend="local", num_workers=2)
    session.shutdown()
    ((_, background),) = made
    assert background.nworkers == 0 and session._pending is None and session._current is None


def test_an_interrupted_wait_leaves_the_start_pending(no_backend):
    """Ctrl-C while current() waits: the next call waits for the same start, never
    beginning a second one beside it."""
    made, gate = no_backend
    gate.clear()
    session.start_in_background(backend="local", num_workers=2)
    start = session._pending

    class Interrupted:
        def wait(self):
            start.done = real  # once
            raise KeyboardInterrupt

    real, start.done = start.done, Interrupted()
    with pytest.raises(KeyboardInterrupt):
        session.current()
    assert session._pending is start and session._current is None
    gate.set()
    backend = session.current()
    assert [b for _, b in made] == [backend]


class StartFailed(Exception):
    pass


def test_a_failed_start_raises_its_own_exception_at_current(no_backend, monkeypatch):
    def fail(args):
        raise StartFailed("no workers today")

    monkeypatch.setattr(session, "_make", fail)
    session.start_in_background(backend="local")
    with pytest.raises(StartFailed, match="no workers today") as info:
        session.current()
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "fail" in frames  # the background thread's own frames, not a new exception
    assert session._pending is None  # reported once; the next current() starts afresh


def test_unknown_backend_is_refused_before_any_start(no_backend):
    with pytest.raises(ValueError, match="unknown backend"):
        session.start_in_background(backend="mpi")
    assert session._pending is None


def _run(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=300
    )


def test_a_failed_ray_start_raises_its_own_exception_at_current():
    proc = _run(
        """
        import traceback
        from spartan.backend import session

        session.start_in_background(not_a_ray_option=1)  # ray.init refuses it
        try:
            session.current()
        except RuntimeError as e:
            frames = [f.name for f in traceback.extract_tb(e.__traceback__)]
            assert "not_a_ray_option" in str(e) and "_ensure_ray" in frames, frames
            print("raised")
        """
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "raised", proc.stdout + proc.stderr


def test_init_with_other_ray_options_restarts_the_background_ray():
    """One Ray instance, the one ``init`` asked for: the background start's is shut down."""
    proc = _run(
        """
        import os
        import ray
        import spartan
        from spartan.backend import session

        def gcs_children():
            found = []
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        stat = f.read()
                except OSError:
                    continue
                name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")", 1)[1]
                if name == "gcs_server" and int(rest.split()[1]) == os.getpid():
                    found.append(pid)
            return found

        session.start_in_background(num_workers=1, num_cpus=1, include_dashboard=False)
        backend = spartan.init(num_workers=1, num_cpus=2, include_dashboard=False)
        assert ray.cluster_resources()["CPU"] == 2, ray.cluster_resources()
        assert len(gcs_children()) == 1, gcs_children()
        assert float(spartan.arange(10).sum()) == 45 and session.current() is backend
        print("one ray")
        """
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "one ray", proc.stdout + proc.stderr


def test_init_takes_log_to_driver():
    """A Ray option spartan also sets (``log_to_driver``) is the user's to choose."""
    proc = _run(
        """
        import spartan

        spartan.init(num_workers=1, num_cpus=1, include_dashboard=False, log_to_driver=False)
        assert float(spartan.arange(10, tiling="row").sum()) == 45
        print("ok")
        """
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
