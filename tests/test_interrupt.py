"""Ctrl-C during an evaluation: its outstanding tasks are cancelled, the arrays stay
whole, the next operation runs at once, and the user sees a one-line note."""

from __future__ import annotations

import functools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import spartan

#: the checkout under test (the program imports spartan from it)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the program a Ctrl-C interrupts: its evaluation's workload is a user function that
#: sleeps in every tile; the first tile says so on the driver's stdout
SCRIPT = r"""
import json, os, signal, sys, time, traceback

signaled = None


def on_sigint(signum, frame):
    global signaled
    signaled = time.perf_counter()
    raise KeyboardInterrupt


# (also where the shell that started the tests left SIGINT ignored)
signal.signal(signal.SIGINT, on_sigint)
backend, TILE_S, MARK = sys.argv[1], float(sys.argv[2]), sys.argv[3]
import numpy as np

if backend == "ray":
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False)
import spartan

spartan.init(backend=backend, num_workers=2)
spartan.config.replicate_below_bytes = 0
spartan.config.local_below_bytes = 0  # (small arrays would stay in the driver)
spartan.config.tiles_per_worker = 24
DRIVER = os.getpid()


def slow(tile):
    try:
        os.close(os.open(MARK, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        pass
    else:  # the first tile: straight to the test, through the driver's stdout
        with open(f"/proc/{DRIVER}/fd/1", "w") as out:
            out.write("working\n")
    time.sleep(TILE_S)
    return tile * 2 + 1


base = np.arange(256 * 4, dtype=np.float64).reshape(256, 4)
x = spartan.asarray(base)
spartan.evaluate(x)
y = spartan.map(slow, x, dtype=np.float64)
out = {}
try:
    y.to_numpy()
    out["finished"] = True
except KeyboardInterrupt as e:
    out["handled_s"] = time.perf_counter() - signaled
    out["message"] = str(e)
    out["ray_frames"] = [
        f.filename for f in traceback.extract_tb(e.__traceback__) if "/ray/" in f.filename
    ]
    out["context_shown"] = e.__cause__ is not None or not e.__suppress_context__
start = time.perf_counter()
got = float((x + 1).sum())  # on the workers, behind what was cancelled
out["next_s"] = time.perf_counter() - start
out["next_ok"] = got == float((base + 1).sum())
out["again_ok"] = bool(np.array_equal(y.to_numpy(), base * 2 + 1))
out["reader_ok"] = float((y + 1).sum()) == float((base * 2 + 2).sum())
print(json.dumps(out), flush=True)
"""


def _lines(stream, into: queue.Queue) -> None:
    for line in stream:
        into.put(line)
    into.put(None)


@pytest.mark.parametrize("backend", ["ray", "local"])
def test_ctrl_c_cancels_the_running_evaluation(backend, tmp_path):
    """SIGINT once the first tile runs: the interrupt comes back at once as a one-line
    note (no Ray traceback, on stderr either), a small operation on the same workers
    then takes well under a second, and the interrupted array and its readers come out
    right."""
    pytest.importorskip("ray")
    path = [ROOT, *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, RAY_ACCEPT_TOOLS_WARNING="1", PYTHONPATH=os.pathsep.join(path))
    started, rest = False, []
    with open(tmp_path / "stderr", "w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, backend, "0.1", str(tmp_path / "mark")],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
        )
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_lines, args=(proc.stdout, lines), daemon=True).start()
        deadline = time.monotonic() + 120  # (Ray starts slowly on a busy machine)
        try:
            while (line := lines.get(timeout=max(0.0, deadline - time.monotonic()))) is not None:
                if line == "working\n" and not started:
                    proc.send_signal(signal.SIGINT)
                    started = True
                else:
                    rest.append(line)
            proc.wait(timeout=30)
        finally:
            proc.kill()
            proc.wait()
        err.seek(0)
        stderr = err.read()
    results = [line for line in rest if line.startswith("{")]
    assert started and proc.returncode == 0 and results, stderr
    out = json.loads(results[-1])
    assert "finished" not in out
    assert out["message"].startswith("spartan: evaluation interrupted"), out
    if backend == "ray":
        assert out["message"].endswith("tasks cancelled"), out
    assert out["handled_s"] < 2.0, out
    assert not out["ray_frames"] and not out["context_shown"], out
    assert out["next_s"] < 1.0, out
    assert out["next_ok"] and out["again_ok"] and out["reader_ok"], out
    assert "Traceback" not in stderr and "ray.exceptions" not in stderr, stderr
    assert "KeyboardInterrupt" not in stderr, stderr


def _slow_add(a):
    time.sleep(0.05)  # the workload
    return a + 1


def _add_when_open(a, gate):
    """``a + 1`` once the test opens ``gate`` (a file; 60 s at most): the tasks queued
    behind it are still waiting when the test cancels, however slow the machine."""
    deadline = time.monotonic() + 60
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.001)  # (polling the condition, not a guess at how long it takes)
    return a + 1


def test_cancel_skips_what_was_sent_and_remakes_it_when_read(ray_backend, gate, monkeypatch):
    """Tasks queued at the workers are skipped; their blocks, and those of tasks that
    read them (another worker's included), are made again before a fetch or a task
    reads them, with the right values."""
    be = ray_backend
    be.put(("cancel", "x", 0), np.arange(4.0), 0)
    be.put(("cancel", "x", 1), np.arange(4.0) * 10, 1)
    keys = []
    first = functools.partial(_add_when_open, gate=gate.path)  # each worker busy with it
    for w in (0, 1):
        prev = ("cancel", "x", w)
        for i in range(8):
            key = ("cancel", w, i)
            be.submit(w, first if i == 0 else _slow_add, [prev], [key])
            keys.append(key)
            prev = key
    be.submit(1, _slow_add, [("cancel", 0, 7)], [("cancel", "read")])  # worker 0's block
    be.flush()
    # the workers are told to stop before their first tasks may end: the rest is skipped
    drain = be._drain
    monkeypatch.setattr(be, "_drain", lambda: (gate.open(), drain())[1])
    assert be.cancel() >= 2 * 7 + 1
    monkeypatch.undo()
    assert be.unmade
    np.testing.assert_array_equal(be.fetch(("cancel", "read")), np.arange(4.0) + 9)
    be.submit(0, _slow_add, [("cancel", 1, 7)], [("cancel", "after")])
    be.wait()
    np.testing.assert_array_equal(be.fetch(("cancel", "after")), np.arange(4.0) * 10 + 9)
    np.testing.assert_array_equal(be.fetch(("cancel", 0, 3)), np.arange(4.0) + 4)
    be.delete([*keys, ("cancel", "read"), ("cancel", "after"), ("cancel", "x", 0)])
    be.delete([("cancel", "x", 1)])
    assert not [pair for pair in be.unmade if pair[0][0] == "cancel"]


def test_ctrl_c_again_while_cancelling_stops_waiting(ray_backend, monkeypatch):
    """A second Ctrl-C while the workers are being told: the driver stops waiting for
    them, and every block logged since the last wait is made again when read."""
    from spartan.backend.ray_backend import RayBackend

    be = ray_backend
    be.put(("again", "x"), np.arange(4.0), 0)
    prev = ("again", "x")
    for i in range(6):
        be.submit(0, _slow_add, [prev], [("again", i)])
        prev = ("again", i)
    be.submit(1, _slow_add, [prev], [("again", "read")])

    def drain_interrupted(self):
        self.release_held()
        raise KeyboardInterrupt

    monkeypatch.setattr(RayBackend, "_drain", drain_interrupted)
    with pytest.raises(KeyboardInterrupt, match="interrupted again"):
        be.cancel()
    monkeypatch.undo()
    assert (("again", "read"), 1) in be.unmade
    np.testing.assert_array_equal(be.fetch(("again", "read")), np.arange(4.0) + 7)
    be.delete([("again", "x"), ("again", "read"), *[("again", i) for i in range(6)]])


def test_an_interrupt_before_the_wait_cancels_the_tasks_held_back(on_ray, monkeypatch):
    """Ctrl-C after lowering, before the fetched array's tasks went out: they are sent
    and skipped, and the array, evaluated, is made again when read."""
    from spartan.frontend import evaluate

    base = np.arange(64.0).reshape(16, 4)
    y = spartan.map(lambda t: t * 3, spartan.asarray(base), dtype=np.float64)

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluate, "_region", interrupted)
    with pytest.raises(KeyboardInterrupt, match=r"^spartan: evaluation interrupted; \d+ tasks"):
        spartan.compute(y)
    monkeypatch.undo()
    assert y._expr.data is not None and on_ray.unmade
    np.testing.assert_array_equal(y.to_numpy(), base * 3)


def test_an_interrupt_while_lowering_leaves_arrays_whole(local):
    """In-process, Ctrl-C stops the task running: arrays lowered before it keep their
    tiles, the one it belonged to stays pending and is computed when read."""
    base = np.arange(48.0).reshape(12, 4)
    calls = []

    def once_interrupted(t):
        calls.append(t.shape)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as Ctrl-C in this tile would
        return t * 2

    a = spartan.map(lambda t: t + 1, spartan.asarray(base), dtype=np.float64)
    b = spartan.map(once_interrupted, a, dtype=np.float64)
    with pytest.raises(KeyboardInterrupt, match="^spartan: evaluation interrupted$"):
        spartan.compute(a, b)
    assert a._expr.data is not None and b._expr.data is None
    np.testing.assert_array_equal(b.to_numpy(), (base + 1) * 2)
    np.testing.assert_array_equal(a.to_numpy(), base + 1)


def test_a_long_task_stops_between_its_row_chunks(local, monkeypatch):
    """A pipelined product runs a tile in row chunks; a cancel seen after its second chunk
    stops it there (TaskCancelled, which the Ray backend turns into a remade tile)."""
    from spartan.backend import worker

    monkeypatch.setattr(spartan.config, "pipeline_chunk_bytes", 1024)
    x = spartan.ones((4000, 8), tiling="row")
    x.evaluate()
    asked = []

    def cancelled_after_two_chunks() -> bool:
        asked.append(1)
        return len(asked) > 2

    with worker.cancel_check(cancelled_after_two_chunks):
        with pytest.raises(worker.TaskCancelled):
            (x.T @ (x @ np.ones(8))).to_numpy()
    assert len(asked) == 3  # stopped at the third chunk, not after every chunk of the tile
    np.testing.assert_allclose((x.T @ (x @ np.ones(8))).to_numpy(), np.full(8, 4000.0 * 8))
