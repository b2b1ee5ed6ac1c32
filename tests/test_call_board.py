"""The shared-memory board where workers count their finished calls for the driver."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from spartan.backend.call_board import CallBoard, Slot


def test_a_worker_counts_its_calls_where_the_driver_reads_them():
    board = CallBoard.make(3)
    assert board is not None  # (Linux has /dev/shm)
    slot = Slot.attach(board.path, 2)
    slot.tick()
    slot.tick()
    assert [board.finished(w) for w in range(3)] == [0, 0, 2]
    board.reset(2)
    assert board.finished(2) == 0
    board.close()
    assert not os.path.exists(board.path)
    assert Slot.attach(board.path, 0) is None  # not on this host (or gone)
    assert Slot.attach(None, 0) is None


def test_no_board_without_shared_memory(monkeypatch):
    from spartan.backend import shared_output

    monkeypatch.setattr(shared_output, "SHM_DIR", "/nonexistent-spartan-shm")
    assert CallBoard.make(2) is None


def _copy_when_open(x, gate):
    """A copy made once the test opens ``gate`` (a file; 60 s at most): the worker is
    busy until then, however slow the machine."""
    deadline = time.monotonic() + 60
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.001)  # (polling the condition, not a guess at how long it takes)
    return np.array(x)


def test_the_driver_sees_a_worker_idle_by_its_count_without_asking_ray(ray_backend, gate):
    pytest.importorskip("ray")
    be = ray_backend
    be.wait()
    assert be.dispatch.on_board == set(range(be.nworkers))
    assert not any(be.busy(w) for w in range(be.nworkers))  # (each read off the board)
    assert be.dispatch.finished == be.dispatch.calls
    be.put(("board", "x"), np.arange(3.0), 0)
    be.wait()
    path = gate.path  # (a str: the Gate's class is the conftest's, which workers lack)
    be.submit(0, lambda x: _copy_when_open(x, path), [("board", "x")], [("board", "y")])
    be.flush()
    assert be.busy(0) and not be.busy(1)
    gate.open()
    deadline = time.monotonic() + 10
    while be.busy(0):  # no Ray call made meanwhile: the worker's count says it
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert be.dispatch.finished[0] == be.dispatch.calls[0]
    be.wait()
    np.testing.assert_array_equal(be.fetch(("board", "y")), np.arange(3.0))
    be.delete([("board", "x"), ("board", "y")])
