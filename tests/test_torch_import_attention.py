"""nn.MultiheadAttention and attention masks through ``from_torch``, against torch:
parameter counts, forward output, and a training step in the tiling and placement
executors. CI does not install torch: the module is skipped there."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dnn_steps import swapped_step  # noqa: E402

from spartan.dnn.execute_tiling import execute, serial_step  # noqa: E402
from spartan.dnn.tiling import plan  # noqa: E402
from spartan.dnn.torch_import import UnsupportedTorchOp, from_torch, torch_parameters  # noqa: E402

nn, F = torch.nn, torch.nn.functional
SEQ, BATCH, D = 5, 2, 8


class MHABlock(nn.Module):
    """Pre-LN block: self-attention with a causal bool mask and a key padding mask,
    then cross-attention-shaped use (query differs from key/value) with a float mask."""

    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, 2, batch_first=batch_first)
        self.attn2 = nn.MultiheadAttention(D, 2, batch_first=batch_first, bias=False)
        self.fc = nn.Linear(D, 3)
        self.register_buffer("causal", torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1))
        self.register_buffer("pad", torch.tensor([[False] * SEQ, [False] * 3 + [True] * 2]))
        self.register_buffer("fmask", torch.linspace(-1, 1, SEQ * SEQ).reshape(SEQ, SEQ))

    def forward(self, x):
        y = self.ln(x)
        a = self.attn(y, y, y, attn_mask=self.causal, key_padding_mask=self.pad,
                      need_weights=False)[0]  # fmt: skip
        h = x + a
        b, _ = self.attn2(h, y, y, attn_mask=self.fmask)  # (the weights left unread)
        return self.fc(h + b)


def _shape(batch_first: bool) -> tuple[int, int, int]:
    return (BATCH, SEQ, D) if batch_first else (SEQ, BATCH, D)


def _check_forward(model, x) -> None:
    g = from_torch(model, tuple(x.shape), training=False)
    assert g.param_count() == sum(p.numel() for p in model.parameters())
    (inp,) = [t for t, v in g.tensors.items() if v.kind.value == "input"]
    env = serial_step(g, {**torch_parameters(model), inp: x.numpy()})
    with torch.no_grad():
        ref = model(x).numpy()
    np.testing.assert_allclose(env[g.outputs[0]], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_forward_equals_torch(batch_first):
    torch.manual_seed(0)
    model = MHABlock(batch_first)
    g = from_torch(model, _shape(batch_first), training=False)
    assert sorted(t.name for t in g.params()) == sorted(torch_parameters(model))
    assert g.tensors["attn.in_proj_weight"].shape == (3 * D, D)  # torch's layout
    _check_forward(model, torch.randn(*_shape(batch_first)))


@pytest.mark.parametrize("mask", ["bool", "float", "causal", "per_head"])
def test_sdpa_masks_forward_equal_torch(mask):
    class SDPA(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(D, 3 * D)
            g = torch.Generator().manual_seed(1)
            keep = torch.rand(SEQ, SEQ, generator=g) > 0.4
            keep |= torch.eye(SEQ, dtype=torch.bool)  # no fully masked row (NaN in torch)
            self.register_buffer("keep", keep)
            self.register_buffer("bias", torch.randn(1, 2, SEQ, SEQ, generator=g))

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(x).split(d, dim=2)
            q, k, v = (t.reshape(b, s, 2, d // 2).transpose(1, 2) for t in (q, k, v))
            if mask == "bool":
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.keep)
            elif mask == "float":
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.keep.float() * 0.5)
            elif mask == "causal":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)
            return y.transpose(1, 2).flatten(2)

    torch.manual_seed(0)
    _check_forward(SDPA(), torch.randn(BATCH, SEQ, D))


def test_attention_weights_are_refused():
    class Weights(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(D, 2, batch_first=True)

        def forward(self, x):
            out, w = self.attn(x, x, x)
            return out + w.sum()

    with pytest.raises(UnsupportedTorchOp, match="attention weights"):
        from_torch(Weights(), (BATCH, SEQ, D), training=False)
    # (masks held by input tensors are imported: tests/test_dnn_input_masks.py)


def _torch_step(model, x, labels, lr=0.01):
    model = copy.deepcopy(model)
    out = model(x)
    loss = F.cross_entropy(out.reshape(out.shape[0], -1), torch.from_numpy(labels).long())
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=lr).step()
    return loss.item(), {n: p.detach().numpy() for n, p in model.named_parameters()}


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_step_in_executors_equals_torch(local_backend, batch_first):
    """A training step of the MHA block tiled on 2 local workers, placed on 2 devices and
    run under a swap plan."""
    from spartan.dnn.placement.execute import run_step
    from spartan.dnn.placement.taskgraph import TaskGraph

    torch.manual_seed(0)
    model = MHABlock(batch_first)
    x = torch.randn(*_shape(batch_first))
    g = from_torch(model, tuple(x.shape))
    classes = x.shape[1] * 3  # the (rows, seq-or-batch * 3) logits
    labels = np.random.default_rng(1).integers(0, classes, size=x.shape[0]).astype(np.int32)
    loss, params = _torch_step(model, x, labels)
    inp = next(t for t, v in g.tensors.items() if v.kind.value == "input")  # forward's x
    values = {**torch_parameters(model), inp: x.numpy(), "labels": labels}
    run = execute(plan(g, 2), values, local_backend)
    np.testing.assert_allclose(run.values["loss:out"], loss, rtol=1e-5)
    tg = TaskGraph.from_graph(g, op_time=lambda op: 1.0)
    placed = run_step(g, tg, np.arange(tg.n) % 2, values)
    swapped = swapped_step(g, values)
    np.testing.assert_allclose(swapped.outputs[0]["loss:out"], loss, rtol=1e-5)
    for n, ref in params.items():
        np.testing.assert_allclose(run.values[n], ref, rtol=1e-4, atol=1e-6, err_msg=n)
        np.testing.assert_allclose(placed.outputs[n], ref, rtol=1e-4, atol=1e-6, err_msg=n)
        np.testing.assert_allclose(swapped.state[n], ref, rtol=1e-4, atol=1e-6, err_msg=n)
