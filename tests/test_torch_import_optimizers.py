"""Momentum SGD and Adam in the tiling executor: several steps on 2 local workers equal
torch.optim.SGD(momentum=0.9) and torch.optim.Adam on the zoo's torch MLP twin. CI does
not install torch: the module is skipped there."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spartan.dnn.execute_tiling import execute, serial_step  # noqa: E402
from spartan.dnn.graph import TensorKind  # noqa: E402
from spartan.dnn.tiling import plan  # noqa: E402
from spartan.dnn.torch_import import from_torch, torch_parameters  # noqa: E402
from spartan.dnn.zoo import torch_mlp  # noqa: E402

BATCH, STEPS = 8, 3


def _data(step: int, classes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(step)
    x = rng.standard_normal((BATCH, 8)).astype(np.float32)
    return x, rng.integers(0, classes, size=BATCH).astype(np.int32)


@pytest.mark.parametrize(
    "optimizer, make",
    [
        ("momentum", lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
        ("adam", lambda ps: torch.optim.Adam(ps, lr=0.01)),
    ],
)
def test_optimizer_steps_on_workers_equal_torch_optim(local_backend, optimizer, make):
    torch.manual_seed(0)
    module = torch_mlp()
    model = copy.deepcopy(module)
    lr = 0.1 if optimizer == "momentum" else 0.01
    g = from_torch(module, (BATCH, 8), optimizer=optimizer, lr=lr)
    classes = g.tensors[g.outputs[0]].shape[-1]
    x_name = next(t for t, v in g.tensors.items() if v.kind is TensorKind.INPUT)
    state = dict(torch_parameters(module))
    state.update(
        {
            t.name: np.zeros(t.shape, np.float32)
            for t in g.tensors.values()
            if t.kind is TensorKind.OPT_STATE
        }  # fmt: skip
    )
    assert len(state) > len(torch_parameters(module))  # the optimizer keeps state
    opt, p = make(model.parameters()), plan(g, 2)
    for step in range(1, STEPS + 1):
        x, labels = _data(step, classes)
        values = {**state, x_name: x, "labels": labels}
        run = execute(p, values, local_backend, step=step)
        ref = serial_step(g, values, step=step)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)),
                                                 torch.from_numpy(labels).long())  # fmt: skip
        loss.backward()
        opt.step()
        np.testing.assert_allclose(run.values["loss:out"], loss.item(), rtol=1e-5)
        state = {n: run.values[n] for n in state}
        for n, tp in model.named_parameters():
            np.testing.assert_allclose(state[n], tp.detach().numpy(), rtol=1e-4, atol=1e-6,
                                       err_msg=f"{optimizer} step {step}: {n}")  # fmt: skip
            np.testing.assert_allclose(ref[n], state[n], rtol=1e-5, atol=1e-7)
    assert run.measured_bytes == run.predicted_bytes
