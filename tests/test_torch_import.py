"""Import fidelity of torch models and execution of the imported graphs, against torch.

The zoo's four torch twins (an MLP, a CNN with batchnorm and a residual, a transformer
block with hand-written attention, an LSTM step) are imported with ``from_torch``; their
parameter counts, forward outputs and SGD steps must equal torch's -- serially, on spartan
workers under a tiling plan (local and Ray backends), and in the swap and placement
executors. CI does not install torch: the module is skipped there.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dnn_steps import swapped_step  # noqa: E402

from spartan.dnn.execute_tiling import execute, serial_step  # noqa: E402
from spartan.dnn.graph import Phase  # noqa: E402
from spartan.dnn.kernels import kernel_types  # noqa: E402
from spartan.dnn.tiling import plan  # noqa: E402
from spartan.dnn.torch_import import (  # noqa: E402
    UnsupportedTorchOp,
    from_torch,
    torch_parameters,
)
from spartan.dnn.zoo import TORCH_TWINS, torch_twin  # noqa: E402

nn, F = torch.nn, torch.nn.functional
BATCH = 4


def _inputs(twin, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in twin.inputs]


def _labels(twin, out: np.ndarray, seed: int = 1) -> np.ndarray:
    classes = math.prod(out.shape[1:])
    return np.random.default_rng(seed).integers(0, classes, size=BATCH).astype(np.int32)


def _values(twin, graph, xs, labels=None) -> dict[str, np.ndarray]:
    inputs = [t for t, v in graph.tensors.items() if v.kind.value == "input"]
    values = dict(torch_parameters(twin.module))
    values.update(zip(inputs, xs))  # placeholders come first, in forward's order
    if labels is not None:
        values["labels"] = labels
    return values


def _torch_step(twin, xs, labels, lr: float = 0.01):
    """Torch's forward, mean cross-entropy and one SGD step, on a copy of the module."""
    import copy

    model = copy.deepcopy(twin.module)
    out = model(*(torch.from_numpy(x) for x in xs))
    loss = F.cross_entropy(out.reshape(out.shape[0], -1), torch.from_numpy(labels).long())
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=lr).step()
    return loss.item(), {n: p.detach().numpy() for n, p in model.named_parameters()}


@pytest.fixture(scope="module", params=TORCH_TWINS)
def twin(request):
    return torch_twin(request.param, batch=BATCH)


def test_parameter_count_and_names_equal_torchs(twin):
    g = twin.graph
    assert g.param_count() == sum(p.numel() for p in twin.module.parameters())
    params = torch_parameters(twin.module)
    assert sorted(t.name for t in g.params()) == sorted(params)
    for t in g.params():  # torch's layouts, no transposing
        assert t.shape == params[t.name].shape


def test_every_twin_op_has_a_kernel(twin):
    missing = {o.type for o in twin.graph.ops} - kernel_types()
    assert not missing


def test_forward_equals_torch(twin):
    g = torch_twin(twin.name, batch=BATCH, training=False).graph
    assert not g.ops_in(Phase.BACKWARD)
    xs = _inputs(twin)
    env = serial_step(g, _values(twin, g, xs))
    with torch.no_grad():
        ref = twin.module(*(torch.from_numpy(x) for x in xs)).numpy()
    (out,) = g.outputs
    np.testing.assert_allclose(env[out], ref, rtol=1e-4, atol=1e-5)


def test_serial_sgd_step_equals_torch(twin):
    g, xs = twin.graph, _inputs(twin)
    with torch.no_grad():
        out = twin.module(*(torch.from_numpy(x) for x in xs)).numpy()
    labels = _labels(twin, out)
    loss, params = _torch_step(twin, xs, labels)
    env = serial_step(g, _values(twin, g, xs, labels))
    np.testing.assert_allclose(env["loss:out"], loss, rtol=1e-5)
    for name, ref in params.items():
        np.testing.assert_allclose(env[name], ref, rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("name", TORCH_TWINS)
def test_tiled_step_on_workers_equals_torch(backend, name):
    """Every op of the twin runs tiled on 2 spartan workers (local and Ray)."""
    tw = torch_twin(name, batch=BATCH)
    xs = _inputs(tw)
    with torch.no_grad():
        out = tw.module(*(torch.from_numpy(x) for x in xs)).numpy()
    labels = _labels(tw, out)
    loss, params = _torch_step(tw, xs, labels)
    p = plan(tw.graph, 2)
    run = execute(p, _values(tw, tw.graph, xs, labels), backend)
    np.testing.assert_allclose(run.values["loss:out"], loss, rtol=1e-5)
    for n, ref in params.items():
        np.testing.assert_allclose(run.values[n], ref, rtol=1e-4, atol=1e-6, err_msg=n)
    assert run.measured_bytes == run.predicted_bytes


def test_transformer_step_in_placement_executor_equals_torch(local_backend):
    from spartan.dnn.placement.execute import run_step
    from spartan.dnn.placement.taskgraph import TaskGraph

    tw = torch_twin("transformer_block", batch=BATCH)
    xs = _inputs(tw)
    with torch.no_grad():
        out = tw.module(*(torch.from_numpy(x) for x in xs)).numpy()
    labels = _labels(tw, out)
    loss, params = _torch_step(tw, xs, labels)
    tg = TaskGraph.from_graph(tw.graph, op_time=lambda op: 1.0)
    run = run_step(tw.graph, tg, np.arange(tg.n) % 2, _values(tw, tw.graph, xs, labels))
    for n, ref in params.items():
        np.testing.assert_allclose(run.outputs[n], ref, rtol=1e-4, atol=1e-6, err_msg=n)


def test_cnn_step_in_swap_executor_equals_torch():
    tw = torch_twin("cnn", batch=BATCH)
    g, xs = tw.graph, _inputs(tw)
    with torch.no_grad():
        out = tw.module(*(torch.from_numpy(x) for x in xs)).numpy()
    labels = _labels(tw, out)
    loss, params = _torch_step(tw, xs, labels)
    values = _values(tw, g, xs, labels)
    got = swapped_step(g, values)
    np.testing.assert_allclose(got.outputs[0]["loss:out"], loss, rtol=1e-5)
    for n, ref in params.items():
        np.testing.assert_allclose(got.state[n], ref, rtol=1e-4, atol=1e-6, err_msg=n)


# ---- the importer on single ops ---------------------------------------------------------


def _forward(model, *shapes, rtol=1e-4):
    """Import ``model`` for inference and compare its forward output with torch's."""
    torch.manual_seed(0)
    xs = [torch.randn(*s) for s in shapes]
    g = from_torch(model, list(shapes), training=False)
    inputs = [t for t, v in g.tensors.items() if v.kind.value == "input"]
    values = {**torch_parameters(model), **dict(zip(inputs, (x.numpy() for x in xs)))}
    env = serial_step(g, values)
    with torch.no_grad():
        ref = model(*xs)
    np.testing.assert_allclose(env[g.outputs[0]], ref.numpy(), rtol=rtol, atol=1e-5)
    return g


def test_linear_on_3d_input_keeps_torchs_parameters():
    model = nn.Linear(64, 64)
    g = _forward(model, (2, 5, 64))
    assert g.param_count() == 4160 == sum(p.numel() for p in model.parameters())
    assert g.tensors["weight"].shape == (64, 64) and g.tensors[g.outputs[0]].shape == (2, 5, 64)


@pytest.mark.parametrize("causal", [False, True])
def test_scaled_dot_product_attention(causal):
    class SDPA(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(x).split(d, dim=2)
            q, k, v = (t.reshape(b, s, 2, d // 2).permute(0, 2, 1, 3) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return y.permute(0, 2, 1, 3).flatten(2)

    g = _forward(SDPA(), (2, 3, 8))
    assert {"batch_matmul", "softmax", "scale"} <= {o.type for o in g.ops}
    assert ("causal_mask" in {o.type for o in g.ops}) == causal


def test_pooling_embedding_and_functional_ops():
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, stride=2, padding="valid")
            self.bn = nn.BatchNorm2d(4)
            self.avg = nn.AvgPool2d(3, 1, 1)

        def forward(self, x):
            h = F.max_pool2d(F.gelu(self.bn(self.conv(x)), approximate="tanh"), 2, padding=1)
            h = torch.cat([h, self.avg(h) * 2.0], dim=1)
            return F.adaptive_avg_pool2d(torch.sigmoid(h) - h / 3, 1).squeeze(-1).squeeze(-1)

    _forward(Mixed(), (3, 2, 9, 9))

    emb = nn.Sequential(nn.Embedding(10, 4), nn.LayerNorm(4), nn.Tanh())
    ids = torch.tensor([[1, 9, 0], [3, 3, 2]])
    g = from_torch(emb, ids, training=False)
    (name,) = [t for t, v in g.tensors.items() if v.kind.value == "input"]
    assert g.tensors[name].dtype == "int64"
    env = serial_step(g, {name: ids.numpy(), **torch_parameters(emb)})
    with torch.no_grad():
        np.testing.assert_allclose(env[g.outputs[0]], emb(ids).numpy(), rtol=1e-5, atol=1e-6)


def test_basic_indexing_pools_the_first_token():
    class Cls(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 3)

        def forward(self, x):
            return self.fc(x[:, 0]) + self.fc(x[..., 1, :]) + x[:, -1, None, 1:4].flatten(1)

    g = _forward(Cls(), (2, 5, 6))
    assert "slice" in {o.type for o in g.ops}


def test_tied_parameter_counts_once():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 6)

        def forward(self, x):
            return self.fc(torch.relu(self.fc(x)))

    g = _forward(Tied(), (3, 6))
    assert g.param_count() == 42


@pytest.mark.parametrize(
    "make, op",
    [
        (lambda: nn.Sequential(nn.Linear(4, 4), nn.Softplus()), "Softplus"),
        (lambda: nn.Sequential(nn.Linear(4, 4), nn.LSTM(4, 4)), "LSTM"),
        (lambda: _Lambda(lambda x: torch.exp(x)), "exp"),
        (lambda: _Lambda(lambda x: x.softmax(dim=0)), "softmax over axis 0"),
        (lambda: _Lambda(lambda x: x + 1.0), "add"),
        (lambda: _Lambda(lambda x: x[:, ::2]), "indexing with slice"),
        (lambda: _Lambda(lambda x: x * x.sum()), "sum"),
    ],
)
def test_unsupported_op_is_refused_by_name(make, op):
    with pytest.raises(UnsupportedTorchOp, match=op) as info:
        from_torch(make(), (2, 4))
    assert isinstance(info.value, NotImplementedError) and isinstance(info.value, ValueError)
    assert "node" in str(info.value)


def test_batchnorm_in_eval_mode_is_refused():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).eval()
    with pytest.raises(UnsupportedTorchOp, match="eval mode"):
        from_torch(model, (2, 3, 6, 6), training=False)


class _Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)
