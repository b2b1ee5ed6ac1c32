"""Cost geometry against element-level references: every element knows its worker."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from spartan.frontend.optimizer import Program, plan_for
from spartan.frontend.optimizer.geometry import layout, selections, strided_read_bytes
from spartan.tiling import Tiling, candidates, read_bytes

P = 3


def owners(shape, tiling: Tiling, nworkers: int) -> np.ndarray:
    """The worker holding each element."""
    out = np.empty(shape, dtype=np.int64)
    for idx, box in tiling.tiles(shape):
        out[tuple(slice(lo, hi) for lo, hi in box)] = tiling.worker_of(idx, nworkers)
    return out


shapes = st.lists(st.integers(1, 9), min_size=1, max_size=3).map(tuple)


@st.composite
def shape_and_tiling(draw, shape=None):
    shape = draw(shapes) if shape is None else shape
    t = draw(st.sampled_from(candidates(shape, draw(st.integers(1, 5)))))
    return shape, t


@settings(max_examples=60, deadline=None)
@given(shape_and_tiling(), st.integers(1, 5), st.data())
def test_unit_stride_reads_equal_tiling_read_bytes(st_, readers_pieces, data):
    shape, src = st_
    dst = data.draw(st.sampled_from(candidates(shape, readers_pieces)))
    boxes, workers = layout(shape, dst, P)
    reads = [(tuple(map(tuple, b)), int(w)) for b, w in zip(boxes.tolist(), workers)]
    expect = read_bytes(shape, 8, src, reads, P)
    assert strided_read_bytes(shape, 8, src, selections(boxes), workers, P) == expect


index_part = st.one_of(
    st.builds(
        slice,
        st.none() | st.integers(-9, 9),
        st.none() | st.integers(-9, 9),
        st.sampled_from([None, 1, 2, 3, -1, -2]),
    ),
    st.just(0),
)


@settings(max_examples=80, deadline=None)
@given(shape_and_tiling(), st.lists(index_part, max_size=3), st.data())
def test_map_through_strided_views_counts_remote_elements(st_, index, data):
    """A map over ``x[index].T`` reads exactly the elements a per-element check finds."""
    shape, src = st_
    index = tuple(index[: len(shape)])
    p = Program()
    x = p.source(shape, tiling=src)
    v = p.transpose(p.slice(x, index))
    vshape = p[v].shape
    if 0 in vshape:
        return
    out_t = data.draw(st.sampled_from(candidates(vshape, data.draw(st.integers(1, 5)))))
    y = p.map(v)
    plan = plan_for(p, P, {x: src, y: out_t})
    view_owner = owners(shape, src, P)[index].T
    expect = 0
    for idx, box in out_t.tiles(vshape):
        region = view_owner[tuple(slice(lo, hi) for lo, hi in box)]
        expect += int((region != out_t.worker_of(idx, P)).sum())
    assert plan.predicted[y] == expect * 8


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(
        [
            ((6, 4), (24,)),
            ((24,), (4, 6)),
            ((2, 3, 4), (6, 4)),
            ((6, 4), (2, 3, 4)),
            ((6, 1, 4), (6, 4)),
            ((5, 6), (5, 2, 3)),
        ]
    ),
    st.integers(1, 5),
    st.data(),
)
def test_reshape_counts_elements_by_c_order(shapes_, pieces, data):
    src_shape, dst_shape = shapes_
    src = data.draw(st.sampled_from(candidates(src_shape, pieces)))
    dst = data.draw(st.sampled_from(candidates(dst_shape, data.draw(st.integers(1, 5)))))
    p = Program()
    x = p.source(src_shape, tiling=src)
    y = p.reshape(x, dst_shape)
    moved_owner = owners(src_shape, src, P).reshape(dst_shape)
    expect = sum(
        int((moved_owner[tuple(slice(lo, hi) for lo, hi in box)] != dst.worker_of(idx, P)).sum())
        for idx, box in dst.tiles(dst_shape)
    )
    assert plan_for(p, P, {x: src, y: dst}).predicted[y] == expect * 8


@settings(max_examples=40, deadline=None)
@given(shape_and_tiling(), st.data())
def test_fold_sends_partials_to_output_owners(st_, data):
    shape, src = st_
    axis = data.draw(st.integers(0, len(shape) - 1))
    out_shape = shape[:axis] + shape[axis + 1 :]
    out_t = data.draw(st.sampled_from(candidates(out_shape, data.draw(st.integers(1, 5)))))
    p = Program()
    x = p.source(shape, tiling=src)
    y = p.fold(x, axis)
    out_owner = owners(out_shape, out_t, P)
    expect = 0
    sent = set()  # a worker combines its own tiles' partials first: one per kept box
    for idx, box in src.tiles(shape):
        kept = tuple((lo, hi) for d, (lo, hi) in enumerate(box) if d != axis)
        worker = src.worker_of(idx, P)
        if (kept, worker) in sent:
            continue
        sent.add((kept, worker))
        partial = tuple(slice(lo, hi) for lo, hi in kept)
        expect += int((out_owner[partial] != worker).sum())
    assert plan_for(p, P, {x: src, y: out_t}).predicted[y] == expect * 8


def test_duplicated_arrays_are_read_locally_and_cost_a_full_copy_to_make():
    shape = (8, 6)
    p = Program()
    x = p.source(shape, tiling=Tiling.row(shape, P))
    y = p.map(x)
    dup = Tiling.duplicated(shape)
    plan = plan_for(p, P, {x: Tiling.row(shape, P), y: dup})
    assert plan.predicted[y] == 8 * 6 * 8 * (P - 1)  # every worker reads what it lacks
    plan = plan_for(p, P, {x: dup, y: Tiling.column(shape, P)})
    assert plan.predicted[x] == 8 * 6 * 8 * (P - 1) and plan.predicted[y] == 0
