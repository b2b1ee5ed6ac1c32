"""Row pipelines (row-local operators computed inside the product or fold that sums
over their rows) and the replication of small computed arrays.

Each program runs on both backends and every input tiling, with chunks of a few rows
so a group really is cut into many chunks; results are compared with NumPy's, and a
pipelined intermediate must never have been materialized.
"""

from __future__ import annotations

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spartan as sp
from spartan.frontend.view import View


@pytest.fixture(autouse=True)
def _tiny_chunks():
    old = sp.config.pipeline_chunk_bytes
    sp.config.pipeline_chunk_bytes = 64  # a chunk of one or two rows
    yield
    sp.config.pipeline_chunk_bytes = old


def _gradient(np, X, y, w):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return p, X.T @ (p - y)


def _kmeans_step(np, X, centers):
    k = centers.shape[0]
    dist = (centers * centers).sum(axis=1) - 2 * (X @ centers.T)
    labels = dist.argmin(axis=1)
    onehot = (labels[:, None] == np.arange(k)).astype(X.dtype)
    return labels, onehot, onehot.sum(axis=0), onehot.T @ X


def test_gradient_is_one_pass(backend, tiling):
    rng = numpy.random.default_rng(0)
    X, y, w = rng.standard_normal((37, 5)), (rng.random(37) > 0.5) * 1.0, rng.standard_normal(5)
    Xs = sp.asarray(X, tiling=tiling)
    p, g = _gradient(sp, Xs, sp.asarray(y), sp.asarray(w))
    _, want = _gradient(numpy, X, y, w)
    numpy.testing.assert_allclose(g.to_numpy(), want, rtol=1e-12)
    if tiling != "dup":  # the whole probability vector never existed as tiles
        assert p._expr.data is None


def test_kmeans_step_two_consumers(backend, tiling):
    """The one-hot matrix feeds a fold (counts) and a product (sums): both compute it,
    from labels made once by a pipeline over the distances (never materialized)."""
    rng = numpy.random.default_rng(1)
    X = rng.random((41, 3))
    centers = X[:4].copy()
    step = _kmeans_step(sp, sp.asarray(X, tiling=tiling), sp.asarray(centers))
    labels, onehot, counts, sums = step
    *_, want_counts, want_sums = _kmeans_step(numpy, X, centers)
    sp.evaluate(counts, sums)
    numpy.testing.assert_array_equal(counts.to_numpy(), want_counts)
    numpy.testing.assert_allclose(sums.to_numpy(), want_sums, rtol=1e-12)
    if tiling != "dup":
        assert onehot._expr.data is None
        assert labels._expr.data is not None


def test_labels_from_distances_never_materialized(backend, tiling):
    """``argmin`` of a distance matrix, wanted as a result, computes its rows of the
    distances chunk by chunk; the distances never exist as tiles."""
    rng = numpy.random.default_rng(5)
    X = rng.random((45, 3))
    centers = X[:6].copy()

    def labels(np, X, c):
        dist = (c * c).sum(axis=1) - 2 * (X @ c.T)
        return dist, dist.argmin(axis=1), dist.min(axis=1).sum()

    dist, lab, best = labels(sp, sp.asarray(X, tiling=tiling), sp.asarray(centers))
    _, want, want_best = labels(numpy, X, centers)
    sp.evaluate(lab, best)
    numpy.testing.assert_array_equal(lab.to_numpy(), want)
    numpy.testing.assert_allclose(float(best), want_best, rtol=1e-12)
    # (column-tiled X: row groups would fetch every row from all the column tiles, spread
    # over the workers; the plan may take X @ c.T by inner blocks, read in place, instead)
    if tiling not in ("dup", "column"):
        assert dist._expr.data is None


def test_intermediate_wanted_too_is_kept(backend):
    """An intermediate the caller also asks for is materialized, and equal."""
    rng = numpy.random.default_rng(2)
    X, y, w = rng.standard_normal((30, 4)), rng.random(30), rng.standard_normal(4)
    p, g = _gradient(sp, sp.asarray(X), sp.asarray(y), sp.asarray(w))
    sp.evaluate(p, g)
    want_p, want_g = _gradient(numpy, X, y, w)
    assert p._expr.data is not None
    numpy.testing.assert_allclose(p.to_numpy(), want_p, rtol=1e-12)
    numpy.testing.assert_allclose(g.to_numpy(), want_g, rtol=1e-12)


def test_pipelines_off_gives_the_same(local):
    rng = numpy.random.default_rng(3)
    X, y, w = rng.standard_normal((25, 3)), rng.random(25), rng.standard_normal(3)
    sp.config.pipeline_rows = False
    try:
        p, g = _gradient(sp, sp.asarray(X), sp.asarray(y), sp.asarray(w))
        off = g.to_numpy()
    finally:
        sp.config.pipeline_rows = True
    _, on = _gradient(sp, sp.asarray(X), sp.asarray(y), sp.asarray(w))
    numpy.testing.assert_allclose(on.to_numpy(), off, rtol=1e-12)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    n=st.integers(2, 40),
    d=st.integers(1, 6),
    tiling=st.sampled_from(["row", "column", "block", "dup"]),
    chunk=st.integers(1, 400),
    seed=st.integers(0, 2**16),
)
def test_gradient_matches_numpy(local, n, d, tiling, chunk, seed):
    sp.config.pipeline_chunk_bytes = chunk
    rng = numpy.random.default_rng(seed)
    X, y, w = rng.standard_normal((n, d)), rng.random(n), rng.standard_normal(d)
    p, g = _gradient(sp, sp.asarray(X, tiling=tiling), sp.asarray(y), sp.asarray(w))
    mean = (p * y).sum(axis=0) / n  # p feeds two pipelines: each computes it
    _, want = _gradient(numpy, X, y, w)
    numpy.testing.assert_allclose(g.to_numpy(), want, rtol=1e-10, atol=1e-12)
    want_p = 1.0 / (1.0 + numpy.exp(-(X @ w)))
    numpy.testing.assert_allclose(float(mean), (want_p * y).sum() / n, rtol=1e-10)


def test_small_computed_arrays_are_replicated(backend):
    """Below ``replicate_below_bytes`` a computed array has a copy on every worker;
    larger ones are cut."""
    sp.config.replicate_below_bytes = 1024
    rng = numpy.random.default_rng(4)
    X = rng.standard_normal((200, 4))
    Xs = sp.asarray(X)
    g = Xs.T @ Xs[:, 0]  # 4 float64: replicated
    big = Xs * 2  # 6400 bytes: cut
    sp.evaluate(g, big)
    assert g.tiling.replicated
    assert not big.tiling.replicated
    numpy.testing.assert_allclose(g.to_numpy(), X.T @ X[:, 0], rtol=1e-12)
    numpy.testing.assert_allclose(big.to_numpy(), X * 2)


def test_join_of_replicated_arrays_runs_everywhere(backend):
    """A product whose inputs and output are all replicated is computed by every worker
    from its own copies, in one task each: nothing moves, and the plan predicts exactly
    that."""
    sp.config.replicate_below_bytes = 1024
    rng = numpy.random.default_rng(6)
    p, q = rng.standard_normal(9), rng.standard_normal((9, 3))
    ps, qs = sp.asarray(p), sp.asarray(q)
    sp.evaluate(ps, qs)
    assert ps.tiling.replicated and qs.tiling.replicated
    backend.reset_stats()
    r = ps @ qs
    numpy.testing.assert_allclose(r.to_numpy(), p @ q, rtol=1e-12)
    assert r.tiling.replicated
    assert sp.stats()["bytes_moved"] == 0
    assert sp.stats()["tasks"] == backend.nworkers
    assert sp.explain(r).planned.plan.total == 0


def test_shorter_operand_is_broadcast_not_cut_by_rows(backend, tiling):
    """A length-n vector in an n x n map lines up with the columns (NumPy broadcasting):
    a pipeline must pass it whole, not slice it by the chunk's rows."""
    rng = numpy.random.default_rng(7)
    X, v = rng.standard_normal((8, 8)), rng.standard_normal(8)
    Xs, vs = sp.asarray(X, tiling=tiling), sp.asarray(v)
    col = ((Xs + 1) * vs).sum(axis=0)
    prod = Xs.T @ ((Xs + 1) * sp.exp(vs))
    sp.evaluate(col, prod)
    numpy.testing.assert_allclose(col.to_numpy(), ((X + 1) * v).sum(axis=0), rtol=1e-12)
    numpy.testing.assert_allclose(prod.to_numpy(), X.T @ ((X + 1) * numpy.exp(v)), rtol=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    n=st.integers(2, 30),
    d=st.integers(1, 5),
    operand=st.sampled_from(["row", "col", "scalar", "full", "vec_d", "vec_n", "view"]),
    op=st.sampled_from(["add", "multiply", "maximum"]),
    consumer=st.sampled_from(["sum0", "product", "rows_product", "argmax1", "max1", "sum_all"]),
    tiling=st.sampled_from(["row", "column", "block", "dup"]),
    chunk=st.integers(1, 300),
    seed=st.integers(0, 2**16),
)
def test_random_row_local_programs_match_numpy(
    local, n, d, operand, op, consumer, tiling, chunk, seed
):
    """Maps over X with operands broadcast every way, through a view or not, feeding
    each kind of pipeline consumer: equal to NumPy for any chunk size and tiling."""
    sp.config.pipeline_chunk_bytes = chunk
    rng = numpy.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    other = {
        "row": rng.standard_normal((1, d)),
        "col": rng.standard_normal((n, 1)),
        "scalar": 1.5,
        "full": rng.standard_normal((n, d)),
        "vec_d": rng.standard_normal(d),
        "vec_n": rng.standard_normal(n),
        "view": None,
    }[operand]

    def program(np, X, other):
        if operand == "view":
            other = X[:, ::-1] * 2
        elif operand == "vec_n":
            other = other[:, None]
        t = getattr(np, op)(np.exp(X) - 1, other)
        if consumer == "sum0":
            return t.sum(axis=0)
        if consumer == "product":
            return X.T @ t
        if consumer == "rows_product":
            return t @ (np.arange(2 * d).reshape(d, 2) / d)
        if consumer == "argmax1":
            return t.argmax(axis=1)
        if consumer == "max1":
            return (t.max(axis=1) * 2).sum()
        return t.sum()

    Xs = sp.asarray(X, tiling=tiling)
    os_ = other if not isinstance(other, numpy.ndarray) else sp.asarray(other)
    got = numpy.asarray(program(sp, Xs, os_).to_numpy())
    want = program(numpy, X, other)
    if consumer == "argmax1":
        numpy.testing.assert_array_equal(got, want)
    else:
        numpy.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_row_product_of_a_map_and_transposed_maps(backend, tiling):
    """ALS' half steps: ``(R * W) @ V`` computes the map inside the product's row
    groups, and ``R.T * W.T`` is ``(R * W).T``, so ``(R.T * W.T) @ U`` is a product
    over R's rows with the map inside too; neither map ever exists as tiles."""
    rng = numpy.random.default_rng(3)
    R, W = rng.random((23, 9)), (rng.random((23, 9)) > 0.5) * 1.0
    V, U = rng.random((9, 2)), rng.random((23, 2))
    Rs, Ws = sp.asarray(R, tiling=tiling), sp.asarray(W, tiling=tiling)
    rows, cols = Rs * Ws, Rs.T * Ws.T
    assert isinstance(cols._expr, View) and cols._expr.base.label == rows._expr.label
    a, b = rows @ sp.asarray(V), cols @ sp.asarray(U)
    sp.evaluate(a, b)
    numpy.testing.assert_allclose(a.to_numpy(), (R * W) @ V, rtol=1e-12)
    numpy.testing.assert_allclose(b.to_numpy(), (R.T * W.T) @ U, rtol=1e-12)
    # the optimizer picks the algorithms: column-tiled R is read in place by its columns
    by_rows = (a._expr.name, b._expr.name) == ("dot(a)", "dot(b)")
    assert by_rows or tiling in ("column", "dup")
    # (block-tiled R and W read by rows would move 1.8x the bytes of the map's own
    # aligned tiles: the plan makes the map as tiles there, Planned.pipelines)
    if tiling not in ("dup", "block") and by_rows:
        assert rows._expr.data is None and cols._expr.base.data is None


@pytest.mark.parametrize(
    "program",
    [
        lambda np, x, y: x.T * y.T + 1,
        lambda np, x, y: np.maximum(x.T, 0.5) * 2,
        lambda np, x, y: x.T * y[:, ::-1].T,  # not a whole transpose: a plain map
        lambda np, x, y: x.T + y.T[:, :1],  # broadcast against a slice
    ],
)
def test_maps_of_transposes_match_numpy(backend, tiling, program):
    rng = numpy.random.default_rng(4)
    x, y = rng.random((7, 5)), rng.random((7, 5))
    got = program(sp, sp.asarray(x, tiling=tiling), sp.asarray(y, tiling=tiling))
    numpy.testing.assert_allclose(got.to_numpy(), program(numpy, x, y), rtol=1e-12)


def test_gram_of_a_map_computes_each_chunk_once(local, tiling, monkeypatch):
    """``Y.T @ Y`` with ``Y`` pipelined: both sides of a chunk are one computed array
    (NumPy's BLAS then does a rank-k update, half a general product's work)."""
    from spartan.frontend import pipeline

    rows, map_rows = [], pipeline._map_rows

    def counted(*node):
        run = map_rows(*node)

        def run_counted(blocks, lo, hi, first):
            rows.append(hi - lo)
            return run(blocks, lo, hi, first)

        return run_counted

    monkeypatch.setattr(pipeline, "_map_rows", counted)
    X = numpy.random.default_rng(4).random((29, 6))
    Y = sp.asarray(X, tiling=tiling) - 0.5
    G = Y.T @ Y
    sp.evaluate(G)
    numpy.testing.assert_allclose(G.to_numpy(), (X - 0.5).T @ (X - 0.5), rtol=1e-12)
    if tiling != "dup":
        assert Y._expr.data is None
        assert sum(rows) == X.shape[0]  # every row computed once, not once per side


def _map_then_fold(np, x, v, reduce):
    y = np.sin(x) + x.T * v + v[:, None]
    return getattr(y, reduce)(axis=0)


@pytest.mark.parametrize("reduce", ["sum", "max", "argmin", "mean", "std"])
def test_fold_over_rows_of_a_map_in_chunks(backend, tiling, reduce):
    """A fused element-wise map reduced over axis 0, its tiles holding whole columns
    (``x.T`` read in place), computed a few rows at a time, equals NumPy's."""
    rng = numpy.random.default_rng(3)
    a, v = rng.random((13, 13)), rng.random(13)
    got = _map_then_fold(sp, sp.asarray(a, tiling=tiling), sp.asarray(v), reduce).to_numpy()
    numpy.testing.assert_allclose(got, _map_then_fold(numpy, a, v, reduce), rtol=1e-12)


def test_fold_of_a_map_runs_by_rows_over_pieces(local, monkeypatch):
    """``(x + x.T).sum(axis=0)`` on column tiles: each tile's map is computed in row
    chunks, and rows of ``x`` held by several workers arrive in pieces, not copied."""
    from spartan.frontend import fold

    chunks, stacks = [], []
    by_rows = fold._LocalTask._by_rows

    def counted(self, blocks):
        chunks.append(-(-(self.box[0][1] - self.box[0][0]) // self.rows))
        stacks.extend(type(b).__name__ for b in blocks)
        return by_rows(self, blocks)

    monkeypatch.setattr(fold._LocalTask, "_by_rows", counted)
    a = numpy.random.default_rng(4).random((100, 100))  # big enough for column tiles
    x = sp.asarray(a, tiling="row")
    got = (x + x.T).sum(axis=0).to_numpy()
    numpy.testing.assert_allclose(got, (a + a.T).sum(axis=0), rtol=1e-12)
    assert chunks and min(chunks) > 1
    assert "RowStack" in stacks


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    n=st.integers(1, 40),
    tiling=st.sampled_from(["row", "column", "block", "dup"]),
    reduce=st.sampled_from(["sum", "prod", "max", "min", "mean", "var", "argmax"]),
    chunk=st.integers(1, 2000),
    seed=st.integers(0, 2**16),
)
def test_fold_over_rows_of_a_map_matches_numpy(local, n, tiling, reduce, chunk, seed):
    """Any chunk size, tiling and reduction over axis 0 of a map with transposed and
    broadcast operands equals NumPy's."""
    sp.config.pipeline_chunk_bytes = chunk
    rng = numpy.random.default_rng(seed)
    a, v = rng.random((n, n)) + 0.5, rng.random(n)
    got = _map_then_fold(sp, sp.asarray(a, tiling=tiling), sp.asarray(v), reduce).to_numpy()
    numpy.testing.assert_allclose(got, _map_then_fold(numpy, a, v, reduce), rtol=1e-10)


@pytest.mark.parametrize("tiles_per_worker", [1, 4])
def test_pipelines_fetch_a_whole_leaf_once_per_worker(backend, tiles_per_worker, monkeypatch):
    """A leaf the pipeline reads whole (``w`` in ``X.T @ sigmoid(X @ w)`` and in
    ``sigmoid(X @ w).sum(0)``), cut over the workers, is fetched once per worker (it
    was fetched per row group): a pipeline moves what the unfused plan moves, and the
    fold moves what the optimizer predicts."""
    monkeypatch.setattr(sp.config, "retile_inputs", False)
    monkeypatch.setattr(sp.config, "pipeline_chunk_bytes", 64)
    P = backend.nworkers
    rng = numpy.random.default_rng(8)
    X, w = rng.standard_normal((60, 8)), rng.standard_normal((8, 4))
    Xs = sp.array(X, tiling=sp.Tiling.row(X.shape, tiles_per_worker * P))
    ws = sp.array(w, tiling=sp.Tiling.row(w.shape, P))
    sp.evaluate(Xs, ws)
    p = 1 / (1 + numpy.exp(-(X @ w)))
    moved = {}
    for pipelined in (True, False):
        monkeypatch.setattr(sp.config, "pipeline_rows", pipelined)
        for result, want in (("product", X.T @ p), ("sum", p.sum(axis=0))):
            backend.reset_stats()
            q = 1 / (1 + sp.exp(-(Xs @ ws)))
            r = Xs.T @ q if result == "product" else q.sum(axis=0)
            sp.evaluate(r)
            moved[result, pipelined] = sp.stats()["bytes_moved"]
            if result == "sum":  # (a product's updates are estimated)
                assert moved[result, pipelined] == sp.explain(r).planned.plan.total
            numpy.testing.assert_allclose(r.to_numpy(), want, rtol=1e-12)
    assert moved["product", True] == moved["product", False]
    assert moved["sum", True] == moved["sum", False]


def _cache(root, index, level, kind, size):
    d = root / f"index{index}"
    d.mkdir()
    for name, value in (("level", level), ("type", kind), ("size", size)):
        (d / name).write_text(f"{value}\n")


def test_the_default_chunk_is_a_core_l2_cache_of_2_mb_or_more_else_8_mb(tmp_path):
    from spartan.config import default_chunk_bytes, l2_cache_bytes

    _cache(tmp_path, 0, 1, "Data", "48K")
    _cache(tmp_path, 1, 1, "Instruction", "64K")
    assert l2_cache_bytes(str(tmp_path)) == 0  # no L2 said
    _cache(tmp_path, 2, 2, "Unified", "2048K")
    _cache(tmp_path, 3, 3, "Unified", "480M")
    assert l2_cache_bytes(str(tmp_path)) == 2 << 20
    assert default_chunk_bytes(2 << 20) == 2 << 20
    assert default_chunk_bytes(4 << 20) == 4 << 20
    assert default_chunk_bytes(1280 << 10) == 8 << 20
    assert default_chunk_bytes(0) == 8 << 20
