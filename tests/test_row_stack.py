"""RowStack: a region cut only along its rows reaches a row-chunked task in pieces."""

from __future__ import annotations

import numpy
import pytest

import spartan as sp
from spartan.backend.base import Piece, Region
from spartan.backend.worker import RowStack


def _rows(*bounds: int, cols: int = 3) -> tuple[Region, list[numpy.ndarray]]:
    data = numpy.arange(bounds[-1] * cols, dtype=float).reshape(bounds[-1], cols)
    pieces, parts = [], []
    for lo, hi in zip(bounds, bounds[1:]):
        pieces.append(Piece(0, ("k", lo), (), (slice(lo, hi), slice(None))))
        parts.append(data[lo:hi])
    return Region(data.shape, data.dtype, tuple(pieces)), parts


def test_rows_within_a_piece_are_a_view_across_pieces_a_copy():
    region, parts = _rows(0, 4, 9, 10)
    stack = RowStack.of(region, parts)
    whole = numpy.concatenate(parts)
    assert stack is not None and stack.shape == whole.shape
    assert numpy.shares_memory(stack[5:8], parts[1])
    for lo, hi in [(0, 4), (2, 7), (3, 10), (9, 10), (0, 10), (6, 6)]:
        numpy.testing.assert_array_equal(stack[lo:hi], whole[lo:hi])
    assert stack[6:6].shape == (0, 3)


def test_regions_not_cut_by_rows_alone_are_assembled():
    data = numpy.ones((4, 6))
    cols = Region(
        data.shape,
        data.dtype,
        (
            Piece(0, "a", (), (slice(None), slice(0, 3))),
            Piece(1, "b", (), (slice(None), slice(3, 6))),
        ),
    )
    assert RowStack.of(cols, [data[:, :3], data[:, 3:]]) is None
    region, parts = _rows(0, 5)
    assert RowStack.of(region, parts) is None  # one piece: a view already


def _star(np, u):
    c = u[2:-2, 2:-2]
    near = u[1:-3, 2:-2] + u[3:-1, 2:-2] + u[2:-2, 1:-3] + u[2:-2, 3:-1]
    far = u[:-4, 2:-2] + u[4:, 2:-2] + u[2:-2, :-4] + u[2:-2, 4:]
    return (0.5 * c + 0.1 * near + 0.025 * far).sum(axis=0)


@pytest.mark.parametrize("chunk", [64, 1 << 20])
def test_stencil_rows_cross_tiles(backend, tiling, chunk):
    """Shifted row views read across tile boundaries in row chunks equal NumPy's."""
    old = sp.config.pipeline_chunk_bytes
    sp.config.pipeline_chunk_bytes = chunk
    try:
        u = numpy.random.default_rng(5).random((23, 11))
        got = _star(sp, sp.asarray(u, tiling=tiling)).to_numpy()
    finally:
        sp.config.pipeline_chunk_bytes = old
    numpy.testing.assert_allclose(got, _star(numpy, u), rtol=1e-12)
