"""Letters: small pieces passed worker to worker through shared memory (no Ray here)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from spartan.backend import channel

pytestmark = pytest.mark.skipif(
    not channel.Mailbox.available(), reason="no POSIX shared memory here"
)


@pytest.fixture
def mailbox():
    mail = channel.Mailbox()
    yield mail
    mail.close()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_letter_carries_its_value_and_is_removed_once_read(mailbox):
    letter = channel.Letter(mailbox.name(), os.getpid())
    value = (np.arange(6.0).reshape(2, 3), "meta")
    channel.post(letter.path, value)
    got = letter.receive()
    np.testing.assert_array_equal(got[0], value[0])
    assert got[1] == "meta"
    assert not os.path.exists(letter.path)
    assert mailbox.name() != letter.path  # every letter has its own name


def test_the_reader_waits_for_a_letter_posted_later(mailbox):
    letter = channel.Letter(mailbox.name(), os.getpid())
    threading.Timer(0.05, channel.post, (letter.path, np.ones(3))).start()
    np.testing.assert_array_equal(letter.receive(), np.ones(3))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="doorbells are Linux's")
def test_a_ring_wakes_the_doorbell_and_every_earlier_ring_is_answered_by_one_look():
    bell = channel.doorbell()
    assert bell is channel.doorbell()  # one per process
    assert bell.wait(0) is False
    for _ in range(3):
        channel.ring(os.getpid())
    assert bell.wait(30) is True  # (a lost ring would sleep the whole 30 s, then fail)
    assert bell.wait(0) is False
    channel.ring(_dead_pid())  # no such doorbell: nothing happens


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="doorbells are Linux's")
def test_a_worker_rings_its_readers_doorbell_after_posting(mailbox):
    pytest.importorskip("ray")
    from spartan.backend.ray_backend import Post, RayWorker
    from spartan.backend.worker import Worker

    worker = object.__new__(RayWorker)  # in this process: no actor, no heap policy
    Worker.__init__(worker, 0)
    worker.put("x", np.arange(4.0))
    bell = channel.doorbell()
    bell.wait(0)
    post = Post(mailbox.name(), "x", (slice(1, 3),), None, False, os.getpid())
    worker.post(*post.fields())
    assert bell.wait(30) is True
    np.testing.assert_array_equal(channel.Letter(post.path, os.getpid()).receive(), [1.0, 2.0])


def test_a_letter_whose_writer_died_unsent_raises_peer_lost(mailbox, monkeypatch):
    monkeypatch.setattr(channel, "CHECK_WRITER_S", 0.01)
    letter = channel.Letter(mailbox.name(), _dead_pid())
    start = time.monotonic()
    with pytest.raises(channel.PeerLost, match="died before sending"):
        letter.receive()
    assert time.monotonic() - start < 5


def test_a_letter_posted_before_its_writer_died_is_still_read(mailbox, monkeypatch):
    monkeypatch.setattr(channel, "CHECK_WRITER_S", 0.0)
    letter = channel.Letter(mailbox.name(), _dead_pid())
    channel.post(letter.path, [1, 2])
    assert letter.receive() == [1, 2]


def test_close_removes_unread_letters(mailbox):
    unread = channel.Letter(mailbox.name(), os.getpid())
    channel.post(unread.path, 1)
    spilled = channel.spill_path(mailbox.name())
    channel._write(spilled, channel.encode(2, b"k", "x"))
    mailbox.close()
    assert not os.path.exists(unread.path) and not os.path.exists(spilled)


def test_a_value_the_letter_cannot_carry_leaves_it_empty_meaning_sent_apart(mailbox):
    letter = channel.Letter(mailbox.name(), os.getpid())
    assert channel.post(letter.path, lambda: 0) is False  # not plain data
    assert letter.receive() is channel.SentApart
    assert not [n for n in os.listdir(os.path.dirname(letter.path)) if n.endswith(".part")]
    other = channel.Letter(mailbox.name(), os.getpid())
    channel.post_apart(other.path)
    assert other.receive() is channel.SentApart
    objects = channel.Letter(mailbox.name(), os.getpid())
    assert channel.post(objects.path, np.array([None, "x"], dtype=object)) is False
    assert objects.receive() is channel.SentApart


def test_a_letter_with_nowhere_else_to_go_is_spilled(mailbox, monkeypatch):
    """With ``spill``, plain data shared memory has no room for goes to the session's
    directory on disk, which the empty letter points to; with no room anywhere, the
    post raises. Closing the mailbox removes spilled letters never read."""
    real = channel._write
    shm = os.path.dirname(mailbox.name())
    # (an empty letter needs no room)
    monkeypatch.setattr(channel, "_write", lambda p, d: (not d or shm not in p) and real(p, d))
    letter = channel.Letter(mailbox.name(), os.getpid())
    spill_dir = os.path.dirname(channel.spill_path(letter.path))
    assert spill_dir != shm and os.path.isdir(spill_dir)
    assert (os.stat(spill_dir).st_mode & 0o777) == 0o700
    assert channel.post(letter.path, (np.arange(3), "x"), spill=True)
    assert os.path.getsize(letter.path) == 0
    got = letter.receive()
    np.testing.assert_array_equal(got[0], np.arange(3))
    assert got[1] == "x"
    assert os.listdir(spill_dir) == []
    unread = mailbox.name()
    channel.post(unread, np.ones(2), spill=True)
    mailbox.close()
    assert os.listdir(spill_dir) == [] and not os.path.exists(unread)
    monkeypatch.setattr(channel, "_write", lambda p, d: not d and real(p, d))
    with pytest.raises(OSError, match="no room"):
        channel.post(mailbox.name(), 1, spill=True)


def test_a_value_that_is_not_plain_data_is_spilled_through_ray_not_a_file(mailbox, ray_backend):
    """With ``spill``, a value the letter's format does not carry (a function, an
    exception) waits in Ray's store; the letter only says so. Without Ray, the post
    raises (its reader would wait for nothing)."""
    letter = channel.Letter(mailbox.name(), os.getpid())
    assert channel.post(letter.path, lambda: 7, spill=True)
    with open(letter.path, "rb") as f:
        assert b"lambda" not in f.read() and not os.path.exists(channel.spill_path(letter.path))
    assert letter.receive()() == 7
    failed = channel.Letter(mailbox.name(), os.getpid())
    channel.post(failed.path, KeyError("tile"), spill=True)
    assert repr(failed.receive()) == "KeyError('tile')"
    unread = mailbox.name()
    channel.post(unread, ValueError("never read"), spill=True)
    mailbox.close()  # takes its value out of Ray's store too
    with pytest.raises(channel.PieceRejected, match="not in Ray's store"):
        channel._from_ray(channel._name(unread))


def test_a_value_that_is_not_plain_data_cannot_be_spilled_without_ray(mailbox, monkeypatch):
    from ray.experimental import internal_kv

    monkeypatch.setattr(internal_kv, "_internal_kv_initialized", lambda: False)
    with pytest.raises(OSError, match="could not pass a function"):
        channel.post(mailbox.name(), lambda: 7, spill=True)
