"""The swap executor on spartan workers, against torch: each of the zoo's four torch twins
(MLP, CNN with batchnorm, transformer block, LSTM step) runs one SGD step with worker 0
(local backend and Ray) as a device whose memory is the smallest valid pool -- about half
the step's peak need -- swapping to the driver's memory through the planned schedule.
The loss and every updated parameter equal torch's step; the worker's own byte counter
stays within the pool (plus one op's in-place updates). CI does not install torch."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dnn_steps import worker_swapped_step  # noqa: E402

from spartan.dnn.swap.workers import inplace_slack  # noqa: E402
from spartan.dnn.torch_import import torch_parameters  # noqa: E402
from spartan.dnn.zoo import TORCH_TWINS, torch_twin  # noqa: E402

BATCH = 4


def _step_case(name: str):
    """The twin, its values (torch's weights, random inputs and labels) and torch's SGD
    step: loss and updated parameters."""
    import copy

    tw = torch_twin(name, batch=BATCH)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype(np.float32) for s in tw.inputs]
    model = copy.deepcopy(tw.module)
    out = model(*(torch.from_numpy(x) for x in xs))
    labels = rng.integers(0, math.prod(out.shape[1:]), size=BATCH).astype(np.int32)
    loss = torch.nn.functional.cross_entropy(
        out.reshape(out.shape[0], -1), torch.from_numpy(labels).long()
    )
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.01).step()
    g = tw.graph
    inputs = [t for t, v in g.tensors.items() if v.kind.value == "input"]
    values = dict(torch_parameters(tw.module))
    values.update(zip(inputs, xs))  # placeholders come first, in forward's order
    values["labels"] = labels
    params = {n: p.detach().numpy() for n, p in model.named_parameters()}
    return g, values, loss.item(), params


@pytest.mark.parametrize("name", TORCH_TWINS)
def test_swapped_step_on_a_memory_limited_worker_equals_torch(backend, name):
    g, values, loss, params = _step_case(name)
    got, plan = worker_swapped_step(g, values, backend)
    wl = plan.workload
    assert plan.n_swap_out > 0 and plan.n_swap_in > 0  # the worker really swapped
    assert plan.pool_bytes <= wl.capacity < wl.peak_bytes()  # a step that needs more
    assert 0 < got.peak_device_bytes <= plan.pool_bytes + inplace_slack(plan)
    np.testing.assert_allclose(got.outputs[0]["loss:out"], loss, rtol=1e-5)
    for n, ref in params.items():
        np.testing.assert_allclose(got.state[n], ref, rtol=1e-4, atol=1e-6, err_msg=n)
