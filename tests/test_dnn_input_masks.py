"""Attention masks held by tensors -- model inputs -- through ``from_torch``: the SDPA
``attn_mask`` (bool keeps, float adds) and MultiheadAttention's ``attn_mask`` and
``key_padding_mask`` (bool masks out), broadcast as torch does. Forward outputs and a
training step in the tiling, placement and swap executors equal torch's. The kernel and
tiling forms of ``input_mask`` are checked without torch; the rest is skipped without it."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from spartan.dnn.execute_tiling import execute, serial_step
from spartan.dnn.tiling import plan
from spartan.dnn.zoo import Net

SEQ, BATCH, D, VOCAB = 5, 2, 8, 11


def _masked_scores_graph():
    """Scores from a parameter, a (B, 1, 1, S) bool mask input, softmax, cross-entropy."""
    net = Net("masked")
    x = net.input("x", (BATCH, 2, SEQ, SEQ))
    m = net.input("m", (BATCH, 1, 1, SEQ), dtype="bool")
    w = net.param("w", (BATCH, 2, SEQ, SEQ))
    s = net.input_mask(net.op("mul", [x, w], (BATCH, 2, SEQ, SEQ), 1, "xw"), m, name="mask")
    flat = net.reshape(net.softmax(s, name="p"), (BATCH, 2 * SEQ * SEQ), name="flat")
    loss = net.softmax_xent(flat, net.input("labels", (BATCH,), dtype="int32"))
    return net.build(loss=loss)


def test_input_mask_op_tiles_and_matches_serial():
    from model_agreement import workers

    g = _masked_scores_graph()
    rng = np.random.default_rng(0)
    keep = np.ones((BATCH, 1, 1, SEQ), bool)
    keep[1, ..., 3:] = False
    values = {"x": rng.standard_normal((BATCH, 2, SEQ, SEQ)).astype(np.float32),
              "w": rng.standard_normal((BATCH, 2, SEQ, SEQ)).astype(np.float32),
              "m": keep, "labels": np.array([3, 7], np.int32)}  # fmt: skip
    ref = serial_step(g, values)
    assert np.isfinite(ref["loss:out"])
    # the masked keys get no probability and no gradient
    assert np.all(ref["p:out"][1, ..., 3:] == 0) and np.all(ref["p:out"][0] > 0)
    assert np.all(ref["dxw:out"][1, ..., 3:] == 0)
    for devices in (2, 4):
        p = plan(g, devices)
        with workers(devices) as be:
            run = execute(p, values, be)
        np.testing.assert_allclose(run.values["loss:out"], ref["loss:out"], rtol=1e-6)
        np.testing.assert_allclose(run.values["w"], ref["w"], rtol=1e-6, atol=1e-7)
        assert run.measured_bytes == run.predicted_bytes  # the mask's forms are costed right


def test_a_mask_that_does_not_broadcast_is_refused():
    net = Net("bad")
    x = net.input("x", (BATCH, SEQ, SEQ))
    m = net.input("m", (3, SEQ), dtype="bool")
    with pytest.raises(ValueError, match="does not broadcast"):
        net.input_mask(x, m)


# ---- through from_torch ------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _sdpa_model(torch):
    nn, F = torch.nn, torch.nn.functional

    class SDPA(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(D, 3 * D)
            self.fc = nn.Linear(D, 3)

        def forward(self, x, keep, bias):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q, k, v = (t.reshape(BATCH, SEQ, 2, D // 2).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)  # bool: True keeps
            y = F.scaled_dot_product_attention(y, k, v, attn_mask=bias)  # float: added
            return self.fc(y.transpose(1, 2).reshape(BATCH, SEQ, D))

    return SDPA()


def _mha_model(torch, batch_first: bool):
    nn = torch.nn

    class MHA(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.MultiheadAttention(D, 2, batch_first=batch_first)
            self.fc = nn.Linear(D, 3)

        def forward(self, x, pad, amask):
            a = self.attn(x, x, x, key_padding_mask=pad, attn_mask=amask, need_weights=False)
            return self.fc(x + a[0])

    return MHA()


def _tokens_model(torch):
    """Hand-written attention over embedded token ids: a padding mask computed from the
    ids (``ids == 0``) through ``masked_fill`` and, negated, as SDPA's bool mask; a
    constant causal mask from a buffer (``tril == 0``)."""
    nn, F = torch.nn, torch.nn.functional

    class Tokens(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, D)
            self.qkv = nn.Linear(D, 3 * D)
            self.fc = nn.Linear(D, 3)
            self.register_buffer("tril", torch.tril(torch.ones(SEQ, SEQ)))

        def forward(self, ids):
            x = self.emb(ids)  # (B, S, D)
            pad = ids == 0  # (B, S) bool, computed from the input
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            s = q @ k.transpose(-2, -1) * D**-0.5  # (B, S, S)
            s = s.masked_fill(pad[:, None, :], float("-inf"))  # padding keys
            s = s.masked_fill(self.tril == 0, float("-inf"))  # causal: a constant mask
            y = torch.softmax(s, dim=-1) @ v
            keep = ~pad[:, None, None, :]  # SDPA: True attends
            y = F.scaled_dot_product_attention(y[:, None], k[:, None], v[:, None], attn_mask=keep)
            return self.fc(y[:, 0])

    return Tokens()


def _case(torch, name: str):
    """model, example inputs (torch tensors, in forward's order)."""
    g = torch.Generator().manual_seed(0)
    if name == "tokens":
        ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g)
        ids[1, 3:] = 0  # padding at the end (no query row is left without a key)
        return _tokens_model(torch), [ids]
    if name == "sdpa":
        keep = torch.ones(BATCH, 1, SEQ, SEQ, dtype=torch.bool)
        keep[1, :, :, 3:] = False  # (B, 1, L, S): broadcast over heads
        bias = torch.randn(SEQ, SEQ, generator=g)  # (L, S): broadcast over batch and heads
        return _sdpa_model(torch), [torch.randn(BATCH, SEQ, D, generator=g), keep, bias]
    batch_first = name == "mha_batch_first"
    pad = torch.zeros(BATCH, SEQ, dtype=torch.bool)
    pad[0, 4:] = True  # key_padding_mask: True masks out
    amask = torch.zeros(BATCH * 2, SEQ, SEQ, dtype=torch.bool)  # (N*H, L, S): True masks
    amask[0::2, :, 1] = True  # key 1 hidden from every other head
    x = torch.randn(*((BATCH, SEQ, D) if batch_first else (SEQ, BATCH, D)), generator=g)
    return _mha_model(torch, batch_first), [x, pad, amask]


CASES = ["sdpa", "mha_batch_first", "mha_seq_first", "tokens"]


@pytest.mark.parametrize("name", CASES)
def test_mask_inputs_forward_equals_torch(torch, name):
    from spartan.dnn.torch_import import from_torch, torch_parameters

    torch.manual_seed(0)
    model, xs = _case(torch, name)
    g = from_torch(model, xs, training=False)
    types = {o.type for o in g.ops}
    assert types >= ({"compare", "masked_fill", "logical_not", "attn_mask", "input_mask"}
                     if name == "tokens" else {"input_mask"})  # fmt: skip
    inputs = [t for t, v in g.tensors.items() if v.kind.value == "input"]
    assert [g.tensors[t].dtype for t in inputs] == [str(x.dtype).removeprefix("torch.") for x in xs]
    env = serial_step(g, {**torch_parameters(model), **dict(zip(inputs, (x.numpy() for x in xs)))})
    with torch.no_grad():
        ref = model(*xs).numpy()
    np.testing.assert_allclose(env[g.outputs[0]], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", CASES)
def test_mask_inputs_step_in_every_executor_equals_torch(torch, local_backend, name):
    from dnn_steps import swapped_step, worker_swapped_step

    from spartan.dnn.placement.execute import run_step
    from spartan.dnn.placement.taskgraph import TaskGraph
    from spartan.dnn.torch_import import from_torch, torch_parameters

    torch.manual_seed(0)
    model, xs = _case(torch, name)
    g = from_torch(model, xs)
    ref_model = copy.deepcopy(model)
    out = ref_model(*xs)
    rows = out.shape[0]
    labels = np.random.default_rng(1).integers(0, out[0].numel(), size=rows).astype(np.int32)
    loss = torch.nn.functional.cross_entropy(out.reshape(rows, -1), torch.from_numpy(labels).long())
    loss.backward()
    torch.optim.SGD(ref_model.parameters(), lr=0.01).step()
    want = {n: p.detach().numpy() for n, p in ref_model.named_parameters()}
    inputs = [t for t, v in g.tensors.items() if v.kind.value == "input" and t != "labels"]
    values = {**torch_parameters(model), **dict(zip(inputs, (x.numpy() for x in xs))),
              "labels": labels}  # fmt: skip
    tiled = execute(plan(g, 2), values, local_backend)
    assert tiled.measured_bytes == tiled.predicted_bytes
    tg = TaskGraph.from_graph(g, op_time=lambda op: 1.0)
    placed = run_step(g, tg, np.arange(tg.n) % 2, values, local_backend)
    swapped = swapped_step(g, values)
    on_worker, _ = worker_swapped_step(g, values, local_backend)
    np.testing.assert_allclose(tiled.values["loss:out"], loss.item(), rtol=1e-5)
    np.testing.assert_allclose(on_worker.outputs[0]["loss:out"], loss.item(), rtol=1e-5)
    for n, ref in want.items():
        for got in (tiled.values, placed.outputs, swapped.state, on_worker.state):
            np.testing.assert_allclose(got[n], ref, rtol=1e-4, atol=1e-6, err_msg=n)


def test_masks_the_ir_cannot_hold_are_refused_by_name(torch):
    from spartan.dnn.torch_import import UnsupportedTorchOp, from_torch

    class FiniteConst(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("m", torch.eye(SEQ, dtype=torch.bool))

        def forward(self, x):
            return x.masked_fill(self.m, 0.5)

    class TwoTensors(torch.nn.Module):
        def forward(self, x, y):
            return x.masked_fill(x == y, 0.0)

    with pytest.raises(UnsupportedTorchOp, match="constant mask with a value other than -inf"):
        from_torch(FiniteConst(), (SEQ, SEQ), training=False)
    with pytest.raises(UnsupportedTorchOp, match="eq other than between a tensor and a number"):
        from_torch(TwoTensors(), [(SEQ, SEQ), (SEQ, SEQ)], training=False)
