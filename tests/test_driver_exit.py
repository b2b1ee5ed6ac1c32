"""A driver killed outright (SIGKILL) leaves no process behind on the host, and one that
exits normally neither.

Ray's GCS, raylet and workers die with a killed driver, but its dashboard and
runtime-env agents spend a minute reporting the raylet's death to a GCS that is gone;
the next spartan start stops them (``session.reap_dead_ray_instances``, proving the
driver dead by its pid and start time). The rest runs without Ray: the janitor kills
only what a marker of this user names, of a dead driver, with the recorded start times.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from spartan.backend import session

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: a driver: starts its own Ray instance, evaluates, says so, then exits when told
DRIVER = """
import sys
import spartan

spartan.init(num_workers=1)
x = spartan.arange(1000, dtype=float)
assert float((x * 2).sum()) == 999000.0
print("ready", flush=True)
sys.stdin.readline()
"""


def _start_driver(log) -> subprocess.Popen:
    """A driver running :data:`DRIVER`, once it has evaluated."""
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=240)
    except queue.Empty:
        line = ""
    if line.strip() != "ready":
        proc.kill()
        proc.wait()
        log.seek(0)
        pytest.fail(f"the driver did not start:\n{log.read()[-3000:]}")
    return proc


def _survivors(procs: list[psutil.Process], within: float) -> list[str]:
    """Those of ``procs`` still running after at most ``within`` seconds (polled)."""
    deadline = time.monotonic() + within
    while True:
        alive = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{p.pid} {p.name()}")
            except psutil.NoSuchProcess:
                continue
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def test_a_killed_driver_leaves_no_process_once_the_next_driver_starts(tmp_path):
    with open(tmp_path / "killed.log", "w+") as log_a, open(tmp_path / "next.log", "w+") as log_b:
        killed = _start_driver(log_a)
        procs = psutil.Process(killed.pid).children(recursive=True)
        assert any(p.name() == "raylet" for p in procs), [p.name() for p in procs]
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()

        after = _start_driver(log_b)  # its start stops what the killed one left
        procs += psutil.Process(after.pid).children(recursive=True)
        after.stdin.close()  # exits normally: Ray shuts down at exit
        assert after.wait(timeout=120) == 0
        # Ray's agents alone would stay a minute more: this bound fails without the janitor
        assert _survivors(procs, within=30) == []


def _process_that_waits() -> tuple[subprocess.Popen, float]:
    """A process of this user that waits for its stdin to close, and its start time."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    return proc, psutil.Process(proc.pid).create_time()


@pytest.fixture
def dead_driver():
    """The pid and start time of a process that has exited (a dead driver)."""
    proc, created = _process_that_waits()
    proc.stdin.close()
    proc.wait()
    return proc.pid, created


@pytest.fixture
def victims():
    """Two live processes; both stopped afterwards."""
    made = [_process_that_waits() for _ in range(2)]
    yield made
    for proc, _ in made:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def _marker(root, driver, processes, name="session_2026-01-01_00-00-00_000000_1") -> str:
    d = root / name
    d.mkdir()
    path = d / session.MARKER
    path.write_text(json.dumps({"driver": list(driver), "processes": processes}))
    return str(path)


def test_reap_kills_only_the_recorded_processes_of_a_dead_driver(tmp_path, dead_driver, victims):
    (victim, created), (bystander, bystander_created) = victims
    path = _marker(
        tmp_path,
        dead_driver,
        [
            [victim.pid, created, "python"],
            [bystander.pid, bystander_created + 5, "python"],  # the pid of another process
        ],
    )
    assert session.reap_dead_ray_instances(str(tmp_path)) == [victim.pid]
    assert victim.wait(timeout=30) == -signal.SIGKILL
    assert bystander.poll() is None
    assert not os.path.exists(path)  # done with
    assert session.reap_dead_ray_instances(str(tmp_path)) == []


def test_reap_leaves_the_processes_of_a_live_driver(tmp_path, victims):
    (victim, created), _ = victims
    me = psutil.Process()
    path = _marker(tmp_path, (me.pid, me.create_time()), [[victim.pid, created, "python"]])
    assert session.reap_dead_ray_instances(str(tmp_path)) == []
    assert victim.poll() is None and os.path.exists(path)


def test_reap_trusts_no_marker_it_did_not_write(tmp_path, dead_driver, victims):
    """Ray's session directories are world-writable: a marker planted through a link,
    or owned by another user, or malformed, is ignored."""
    (victim, created), _ = victims
    real = _marker(tmp_path, dead_driver, [[victim.pid, created, "python"]], name="elsewhere")
    linked = tmp_path / "session_linked"
    linked.mkdir()
    os.symlink(real, linked / session.MARKER)
    broken = tmp_path / "session_broken"
    broken.mkdir()
    (broken / session.MARKER).write_text('{"driver": [1], "processes": "x"}')
    if os.getuid() == 0:  # (only root can give a file away)
        theirs = _marker(tmp_path, dead_driver, [[victim.pid, created, "python"]], "session_t")
        os.chown(theirs, 65534, 65534)
    assert session.reap_dead_ray_instances(str(tmp_path)) == []
    assert victim.poll() is None
