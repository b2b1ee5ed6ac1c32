"""Pieces of blocks sent from the driver are read in place from the object store."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from spartan.backend.base import Piece, Region

pytest.importorskip("ray")


def _copy(x):
    return np.array(x)


def _region(key, src, perm, shape):
    return Region(shape, np.dtype(float), (Piece(0, key, src, (), perm),))


def test_put_block_travels_whole_and_the_reader_cuts_its_piece(ray_backend):
    be = ray_backend
    x = np.arange(48.0).reshape(6, 8)
    be.put(("pc", "x"), x, 0)
    piece = Piece(0, ("pc", "x"), (slice(1, 5), slice(2, 5)), (), (1, 0))
    reader = SimpleNamespace(seq=1 << 62, worker=1)  # a task logged after the put
    assert be._get_piece(piece, reader)[1] is True  # same node: no copy by worker 0
    be.reset_stats()
    be.submit(1, _copy, [_region(("pc", "x"), piece.src, piece.perm, (3, 4))], [("pc", "y")])
    be.wait()
    np.testing.assert_array_equal(be.fetch(("pc", "y")), x[1:5, 2:5].T)
    # what counts as moved is the piece, not the block it was cut from
    assert be.stats().bytes_moved == x[1:5, 2:5].nbytes
    be.delete([("pc", "x"), ("pc", "y")])


def test_computed_block_is_copied_by_its_owner(ray_backend):
    be = ray_backend
    be.put(("pc2", "x"), np.arange(6.0), 0)
    be.submit(0, _copy, [("pc2", "x")], [("pc2", "c")])
    region = _region(("pc2", "c"), (slice(2, 4),), None, (2,))
    (piece,) = region.pieces
    reader = SimpleNamespace(seq=1 << 62, worker=1, inputs=(region,))
    letter, whole = be._get_piece(piece, reader)
    assert whole is False
    # its size is known: it never goes apart, so the letter carries no object ref (one
    # in an argument's field cost the reader's call ~0.5 ms)
    assert letter.apart is None
    be.submit(1, _copy, [region], [("pc2", "y")])
    be.wait()
    np.testing.assert_array_equal(be.fetch(("pc2", "y")), [2.0, 3.0])
    be.delete([("pc2", "x"), ("pc2", "c"), ("pc2", "y")])


def test_reader_sees_the_put_before_it_not_a_later_one(ray_backend):
    be = ray_backend
    be.put(("pc3", "x"), np.zeros(4), 0)
    be.wait()
    be.submit(1, _copy, [_region(("pc3", "x"), (slice(0, 4),), None, (4,))], [("pc3", "y")])
    be.put(("pc3", "x"), np.ones(4), 0)  # logged after the reader, sent in the same flush
    be.wait()
    np.testing.assert_array_equal(be.fetch(("pc3", "y")), np.zeros(4))
    be.delete([("pc3", "x"), ("pc3", "y")])


def test_small_piece_is_copied_out_of_the_block(ray_backend):
    """A pass-through task must not store a view pinning the whole put block."""
    import ray

    be = ray_backend
    be.put(("pc4", "x"), np.arange(1000.0), 0)
    be.submit(1, _ident, [_region(("pc4", "x"), (slice(3, 13),), None, (10,))], [("pc4", "y")])
    be.wait()
    held = ray.get(
        be.actors[1].__ray_call__.remote(lambda w: getattr(w.store[("pc4", "y")].base, "nbytes", 0))
    )
    assert held <= 10 * 8  # its own 10 elements, not a view of the 8000-byte block
    np.testing.assert_array_equal(be.fetch(("pc4", "y")), np.arange(3.0, 13.0))
    be.delete([("pc4", "x"), ("pc4", "y")])


def _ident(x):
    return x


def test_exchange_serves_the_other_reader_before_its_own(ray_backend, actor_calls):
    """Each worker reads a piece of a block the other made in the same flush (a
    reduce-scatter): each owner is asked for its piece before it gets its own reader,
    which waits for the other's piece; else the second exchange waits for the first."""
    be = ray_backend
    for w in (0, 1):
        be.put(("ex", "x", w), np.full(4, float(w)), w)
    be.wait()
    actor_calls.clear()
    for w in (0, 1):
        be.submit(w, _copy, [("ex", "x", w)], [("ex", "made", w)])
    for w in (0, 1):
        other = Region(
            (4,), np.dtype(float), (Piece(1 - w, ("ex", "made", 1 - w), (slice(0, 4),), ()),)
        )
        be.submit(w, _copy, [other], [("ex", "got", w)])
    be.wait()
    # each worker: its producer and the post of the piece the other reads (both are on
    # this node: a letter) in one call, then its reader
    for w in (0, 1):
        assert [method for worker, method in actor_calls if worker == w] == [
            "run_batch",
            "run_task",
        ]
    for w in (0, 1):
        np.testing.assert_array_equal(be.fetch(("ex", "got", w)), np.full(4, float(1 - w)))
    be.delete([("ex", k, w) for k in ("x", "made", "got") for w in (0, 1)])


def test_pieces_for_a_reader_on_the_same_node_come_in_letters_unless_known_big(
    ray_backend, actor_calls
):
    """A small piece comes in a letter; one known to be over ``channel.MAX_BYTES`` the
    object store; a whole block of unknown size in a letter that, the block being big,
    says it went apart through the object store. All arrive whole."""
    from spartan.backend import channel

    be = ray_backend
    n = channel.MAX_BYTES // 8 + 1000
    be.put(("pc5", "x"), np.arange(float(n)), 0)
    be.submit(0, _copy, [("pc5", "x")], [("pc5", "made")])
    for key, stop in (("big", n), ("small", 10)):
        piece = Piece(0, ("pc5", "made"), (slice(0, stop),), ())
        be.submit(1, _copy, [Region((stop,), np.dtype(float), (piece,))], [("pc5", key)])
    be.submit(1, _copy, [("pc5", "made")], [("pc5", "whole")])
    be.wait()
    calls = [m for w, m in actor_calls if w == 0]
    # the small piece's post is held while worker 0 may still be copying; the whole
    # block's (size unknown) ends a call at once: with it, or in one of its own
    assert calls[:3] == ["put", "run_task", "get_piece"]
    assert calls[3:] in (["post", "post"], ["run_batch"])
    np.testing.assert_array_equal(be.fetch(("pc5", "big")), np.arange(float(n)))
    np.testing.assert_array_equal(be.fetch(("pc5", "small")), np.arange(10.0))
    np.testing.assert_array_equal(be.fetch(("pc5", "whole")), np.arange(float(n)))
    be.delete([("pc5", k) for k in ("x", "made", "big", "small", "whole")])


def _writeable(worker, key):
    return worker.store[key].flags.writeable


def test_a_big_block_from_the_driver_is_copied_out_of_the_object_store(ray_backend):
    """The worker keeps its own copy (huge pages, streamed faster) of a big block sent
    from the driver; the object store's copy stays the driver's, for recovery."""
    import ray

    from spartan.backend.ray_backend import OWN_MIN_BYTES

    be = ray_backend
    big = np.arange(OWN_MIN_BYTES // 8, dtype=float)
    be.put(("own", "big"), big, 0)
    be.put(("own", "small"), np.arange(16.0), 0)
    be.wait()
    actor = be.actors[0]
    assert ray.get(actor.__ray_call__.remote(_writeable, ("own", "big")))
    assert not ray.get(actor.__ray_call__.remote(_writeable, ("own", "small")))
    np.testing.assert_array_equal(be.fetch(("own", "big")), big)
    # the driver still holds the object-store copy it would rebuild the block from
    assert be.lineage.made_by[(("own", "big"), 0)].value is not None
    be.delete([("own", "big"), ("own", "small")])


def test_only_big_read_only_arrays_are_copied_and_only_with_memory_to_spare(monkeypatch):
    from spartan.backend import ray_worker as ray_backend

    block = np.zeros(ray_backend.OWN_MIN_BYTES // 8)
    block.flags.writeable = False  # as Ray hands out an array in the object store
    owned = ray_backend._owned(block)
    assert owned.flags.writeable and not np.shares_memory(owned, block)
    np.testing.assert_array_equal(owned, block)
    smaller, writeable = block[:-1], np.zeros_like(block)
    assert ray_backend._owned(smaller) is smaller
    assert ray_backend._owned(writeable) is writeable
    short = SimpleNamespace(total=8 * block.nbytes, available=2 * block.nbytes)
    monkeypatch.setattr(ray_backend.psutil, "virtual_memory", lambda: short)
    assert ray_backend._owned(block) is block
