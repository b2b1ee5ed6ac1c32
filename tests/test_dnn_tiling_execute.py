"""Executing tiling plans on spartan workers: equal to serial NumPy, bytes as predicted."""

import numpy as np
import pytest

from spartan.backend.local import LocalBackend
from spartan.dnn.execute_tiling import execute, random_values, region, serial_step
from spartan.dnn.kernels import kernel_types
from spartan.dnn.tiling import BASELINES, REP, plan
from spartan.dnn.zoo import mlp, op_coverage, rnn, small_cnn, transformer


@pytest.fixture(scope="module")
def backend():
    be = LocalBackend(num_workers=4)  # own workers: the global backend is left alone
    yield be
    be.shutdown()


GRAPHS = {
    "mlp": lambda: mlp(16, [8, 16, 16, 4]),
    "cnn": lambda: small_cnn(8, image=8, channels=(4, 8)),
}


def test_region_halves_by_device_bits():
    assert region((8, 6), [0, 1], 0) == ((0, 4), (0, 3))
    assert region((8, 6), [0, 1], 3) == ((4, 8), (3, 6))
    assert region((8, 6), [REP, 0], 2) == ((0, 4), (0, 6))  # first cut replicated


def test_serial_step_gradients_match_finite_differences():
    g = mlp(4, [3, 5, 2], activation="tanh")
    values = random_values(g, seed=1)  # in float64: kernels keep their inputs' dtype
    values = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in values.items()}
    env = serial_step(g, values)
    w, eps = "fc1.w", 1e-6
    analytic = env["dfc1.w"]
    numeric = np.zeros_like(values[w])
    for idx in np.ndindex(values[w].shape):
        for sign in (1, -1):
            v = dict(values)
            v[w] = values[w].copy()
            v[w][idx] += sign * eps
            numeric[idx] += sign * serial_step(g, v)["loss:out"] / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("name", list(GRAPHS))
@pytest.mark.parametrize("devices", [2, 4])
def test_planned_step_equals_serial_and_bytes_match(backend, name, devices):
    g = GRAPHS[name]()
    values = random_values(g, seed=0)
    ref = serial_step(g, values)
    p = plan(g, devices)
    run = execute(p, values, backend)
    for t in g.params():
        np.testing.assert_allclose(run.values[t.name], ref[t.name], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run.values["loss:out"], ref["loss:out"], rtol=1e-5)
    assert run.measured_bytes == run.predicted_bytes
    assert run.measured_bytes == p.total  # the planner's cost is the bytes really moved


@pytest.mark.parametrize("strategy", list(BASELINES))
def test_baselines_execute_correctly(backend, strategy):
    g = GRAPHS["cnn"]()
    values = random_values(g, seed=2)
    ref = serial_step(g, values)
    p = BASELINES[strategy](g, 1)
    run = execute(p, values, backend)
    for t in g.params():
        np.testing.assert_allclose(run.values[t.name], ref[t.name], rtol=1e-5, atol=1e-6)
    assert run.measured_bytes == run.predicted_bytes == p.total


def test_execute_rejects_too_few_workers(backend):
    g = GRAPHS["mlp"]()
    with pytest.raises(ValueError, match="workers"):
        execute(plan(g, 8), random_values(g), backend)


def test_planned_step_on_ray_workers(ray_backend):
    g = GRAPHS["cnn"]()
    values = random_values(g, seed=3)
    ref = serial_step(g, values)
    p = plan(g, 2)
    run = execute(p, values, ray_backend)
    for t in g.params():
        np.testing.assert_allclose(run.values[t.name], ref[t.name], rtol=1e-5, atol=1e-6)
    assert run.measured_bytes == run.predicted_bytes == p.total


def test_every_ir_op_type_has_a_kernel():
    graphs = [
        op_coverage(),
        transformer(
            1, 8, 2, seq=4, batch=2, vocab=16, max_pos=8, type_vocab=2, pooler=True, mlm_head=True
        ),  # fmt: skip
        rnn(1, 4, batch=2, seq=2, bidirectional=True, classes=3),
        small_cnn(2, image=4, channels=(2,)),
    ]
    types = {o.type for g in graphs for o in g.ops}
    assert not types - kernel_types()
    assert len(types) > 40


def test_every_op_gradient_matches_finite_differences():
    g = op_coverage()
    values = random_values(g, seed=4)
    values = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in values.items()}
    env = serial_step(g, values)
    rng = np.random.default_rng(0)
    eps = 1e-6
    for w in ("conv.w", "bn.gamma", "bn.beta", "embed.table", "ln.gamma", "fc.w"):
        flat = [np.unravel_index(i, values[w].shape) for i in range(values[w].size)]
        for idx in rng.permutation(len(flat))[:6]:
            numeric = 0.0
            for sign in (1, -1):
                v = dict(values)
                v[w] = values[w].copy()
                v[w][flat[idx]] += sign * eps
                numeric += sign * serial_step(g, v)["loss:out"] / (2 * eps)
            np.testing.assert_allclose(
                env[f"d{w}"][flat[idx]], numeric, rtol=1e-4, atol=1e-8, err_msg=w
            )


@pytest.mark.parametrize("devices", [2, 4])
def test_every_op_graph_tiled_equals_serial(backend, devices):
    g = op_coverage()
    values = random_values(g, seed=5)
    ref = serial_step(g, values)
    run = execute(plan(g, devices), values, backend)
    np.testing.assert_allclose(run.values["loss:out"], ref["loss:out"], rtol=1e-5)
    for t in g.params():
        np.testing.assert_allclose(run.values[t.name], ref[t.name], rtol=1e-4, atol=1e-6)
    assert run.measured_bytes == run.predicted_bytes


def test_tiny_bert_tiled_equals_serial(backend):
    g = transformer(1, 8, 2, seq=4, batch=2, vocab=16, max_pos=8, type_vocab=2, pooler=True,
                    mlm_head=True)  # fmt: skip
    values = random_values(g, seed=6)
    ref = serial_step(g, values)
    run = execute(plan(g, 4), values, backend)
    for t in g.params():
        np.testing.assert_allclose(run.values[t.name], ref[t.name], rtol=1e-4, atol=1e-6)


def test_vocabulary_split_lookup_sums_to_the_whole():
    """A table tile returns zero rows for ids it does not hold (offsets from the executor)."""
    from spartan.dnn.kernels import run_kernel

    rng = np.random.default_rng(0)
    table, ids = rng.standard_normal((6, 3)), np.array([[0, 5], [3, 2]])
    whole = run_kernel(np, "embedding", [ids, table], {})
    parts = [
        run_kernel(np, "embedding", [ids, table[lo : lo + 3]], {"in_offsets": ((0, 0), (lo, 0))})
        for lo in (0, 3)
    ]
    np.testing.assert_allclose(parts[0] + parts[1], whole)
    np.testing.assert_allclose(whole, table[ids])
    with pytest.raises(IndexError, match="out of range"):
        run_kernel(np, "embedding", [ids + 1, table], {})


def test_causal_mask_tiles_agree_with_the_whole():
    """A tile of scores masks by its global rows and columns (offsets from the executor)."""
    from spartan.dnn.kernels import run_kernel

    x = np.random.default_rng(1).standard_normal((2, 4, 6))
    whole = run_kernel(np, "causal_mask", [x], {})
    assert np.isneginf(whole[:, 0, 1:]).all() and np.isfinite(np.diagonal(whole, 0, 1, 2)).all()
    for r0, c0 in [(0, 0), (2, 0), (0, 3), (2, 3)]:
        tile = x[:, r0 : r0 + 2, c0 : c0 + 3]
        got = run_kernel(np, "causal_mask", [tile], {"in_offsets": ((0, r0, c0),)})
        np.testing.assert_array_equal(got, whole[:, r0 : r0 + 2, c0 : c0 + 3])


@pytest.mark.parametrize("full", [False, True])
def test_attn_mask_tiles_agree_with_the_whole(full):
    """A constant mask (last two axes, or every axis) is sliced by the tile's offsets;
    its gradient is zero exactly where the mask is -inf."""
    from spartan.dnn.kernels import run_kernel

    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 4, 6))
    mask = rng.standard_normal(x.shape if full else x.shape[1:])
    mask[..., 1, 2] = -np.inf
    whole = run_kernel(np, "attn_mask", [x], {"mask": mask})
    np.testing.assert_array_equal(whole, x + mask)
    grad = run_kernel(np, "attn_mask_grad", [np.ones_like(x)], {"mask": mask})
    assert (grad[:, 1, 2] == 0).all() and grad.sum() == x.size - 2
    for b0, r0, c0 in [(0, 0, 0), (1, 2, 0), (0, 0, 3), (1, 2, 3)]:
        tile = x[b0 : b0 + 1, r0 : r0 + 2, c0 : c0 + 3]
        attrs = {"mask": mask, "in_offsets": ((b0, r0, c0),)}
        got = run_kernel(np, "attn_mask", [tile], attrs)
        np.testing.assert_array_equal(got, whole[b0 : b0 + 1, r0 : r0 + 2, c0 : c0 + 3])
