"""Every DNN executor kernel on CuPy equals its NumPy twin (runs only where a GPU is).

The op-coverage graph (conv, batchnorm, pooling, attention pieces, embedding, layernorm,
softmax, ...) is trained one step by the swap executor on the CUDA device with its streams,
under a memory limit, and must equal the serial NumPy step; each kernel is also run alone on
CuPy arrays against NumPy, so a failure names the op.
"""

from __future__ import annotations

import numpy as np
import pytest
from dnn_steps import cupy_or_skip, roomy_swap_plan

from spartan.dnn.execute_tiling import random_values, serial_step
from spartan.dnn.zoo import op_coverage

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp():
    return cupy_or_skip()


def test_every_op_graph_in_the_cupy_swap_executor(cp):
    from spartan.dnn.swap.executor import run_cupy

    g = op_coverage()
    values = random_values(g, seed=8)
    ref = serial_step(g, values)
    plan, feeds, state = roomy_swap_plan(g, values)
    total = sum(t.nbytes for t in g.tensors.values())
    # the pool also holds CuPy's own workspace (cuBLAS, cuDNN) beside the planned tensors
    got = run_cupy(plan, g, feeds, state, memory_limit=total + (256 << 20))
    np.testing.assert_allclose(got.outputs[0]["loss:out"], ref["loss:out"], rtol=1e-5)
    for name in state:
        np.testing.assert_allclose(got.state[name], ref[name], rtol=1e-5, atol=1e-6)


def test_each_kernel_on_cupy_equals_numpy(cp):
    from spartan.dnn.kernels import run_kernel

    g = op_coverage()
    values = random_values(g, seed=3)
    # forward ops in graph order, each fed NumPy's own outputs so one op's error stays its own
    for op in g.ops:
        if any(name not in values for name in op.inputs):
            continue
        args = [values[name] for name in op.inputs]
        want = run_kernel(np, op.type, [a.copy() for a in args], dict(op.attrs))
        got = run_kernel(cp, op.type, [cp.asarray(a) for a in args], dict(op.attrs))
        wants = want if isinstance(want, tuple) else (want,)
        gots = got if isinstance(got, tuple) else (got,)
        for name, w, h in zip(op.outputs, wants, gots, strict=True):
            # cuBLAS/cuDNN sum in another order than NumPy: float32 differs in its last bits
            tol = 1e-4 if np.asarray(w).dtype == np.float32 else 1e-9
            np.testing.assert_allclose(
                cp.asnumpy(h), w, rtol=tol, atol=tol, err_msg=f"{op.type} ({op.name})"
            )
            values.setdefault(name, np.asarray(w))
