"""The shared kernel table runs every IR op type in the swap and placement executors too.

A graph using every forward op type (conv, batchnorm, pooling, concat, GELU, embedding,
layernorm, transpose, batched matmul, softmax, slice, ...) is trained one step by the
placement executor on spartan workers and by the swap executor on its emulated device;
both must equal the serial NumPy step of the tiling executor's reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from dnn_steps import swapped_step

from spartan.dnn.execute_tiling import random_values, serial_step
from spartan.dnn.zoo import op_coverage


def _reference(seed: int):
    g = op_coverage()
    values = random_values(g, seed=seed)
    return g, values, serial_step(g, values)


def test_every_op_graph_in_placement_executor(backend):
    from spartan.dnn.placement.execute import run_step
    from spartan.dnn.placement.taskgraph import TaskGraph

    g, values, ref = _reference(7)
    tg = TaskGraph.from_graph(g, op_time=lambda op: 1.0)
    run = run_step(g, tg, np.arange(tg.n) % 2, values, backend=backend)
    for t in g.params():
        np.testing.assert_allclose(run.outputs[t.name], ref[t.name], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(run.outputs["loss:out"], ref["loss:out"], rtol=1e-5)


def test_every_op_graph_in_swap_executor():
    g, values, ref = _reference(8)
    got = swapped_step(g, values)
    state = {t.name: values[t.name] for t in g.params()}
    np.testing.assert_allclose(got.outputs[0]["loss:out"], ref["loss:out"], rtol=1e-5)
    for name in state:
        np.testing.assert_allclose(got.state[name], ref[name], rtol=1e-5, atol=1e-6)


def test_adam_without_a_step_is_refused_not_bias_corrected_as_the_first():
    """The swap and placement executors keep no step counter: an Adam update there
    would correct every step as step 1, so the kernel refuses it by name."""
    from spartan.dnn.kernels import run_kernel

    p, g = np.ones(3), np.full(3, 0.5)
    with pytest.raises(ValueError, match="step"):
        run_kernel(np, "adam", [p, g, np.zeros(3), np.zeros(3)], {"lr": 0.1})
    p2, m, v = run_kernel(np, "adam", [p, g, np.zeros(3), np.zeros(3)], {"lr": 0.1, "step": 1})
    np.testing.assert_allclose(p2, 1 - 0.1)  # step 1: m_hat / sqrt(v_hat) = sign(g)


def test_an_adam_graph_steps_only_with_its_step_number():
    """Left out, the step would bias-correct every step as the first (torch's Adam
    diverges from step 2): the serial and tiled steps refuse instead."""
    from spartan.dnn.zoo import mlp

    g = mlp(4, [6, 5, 3], optimizer="adam")
    values = random_values(g, seed=1)
    values.update(  # Adam's moments start at zero
        {n: np.zeros(t.shape, t.dtype) for n, t in g.tensors.items() if n.endswith((".m", ".v"))}
    )
    with pytest.raises(ValueError, match="step"):
        serial_step(g, values)
    first, second = serial_step(g, values, step=1), serial_step(g, values, step=2)
    w = g.params()[0].name
    assert not np.allclose(first[w], second[w])  # the correction depends on the step
