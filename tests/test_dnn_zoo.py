"""Model zoo: parameter counts match the published models, graphs are well formed."""

import pytest

from spartan.dnn.graph import Phase, TensorKind
from spartan.dnn.zoo import (
    Net,
    alexnet,
    bert_large,
    gpt2,
    inception_v4,
    mlp,
    resnet,
    rnn,
    small_cnn,
    transformer,
    vgg16,
    wresnet152,
)

# Published counts (torchvision / timm / HuggingFace reference implementations).
PUBLISHED = [
    (lambda: alexnet(2), 61_100_840),
    (lambda: vgg16(2), 138_357_544),
    (lambda: resnet(50, 2), 25_557_032),
    (lambda: resnet(152, 2), 60_192_808),
    (lambda: resnet(50, 2, width=2), 68_883_240),  # torchvision wide_resnet50_2
    (lambda: inception_v4(2), 42_679_816),  # timm inception_v4
    (lambda: bert_large(1, 8), 336_226_108),  # HF BertForPreTraining, bert-large
    (lambda: gpt2("small", 1, 8), 124_439_808),
    (lambda: gpt2("medium", 1, 8), 354_823_168),
]


@pytest.mark.parametrize("build,expected", PUBLISHED)
def test_parameter_counts_match_published(build, expected):
    g = build()
    assert g.param_count() == expected


def test_rounded_headline_counts_within_one_percent():
    # the figures quoted in papers (issue 8): AlexNet 61.1M, VGG-16 138.36M, ResNet 25.56M/60.19M
    for build, quoted in [
        (lambda: alexnet(1), 61.1e6),
        (lambda: vgg16(1), 138.36e6),
        (lambda: resnet(50, 1), 25.56e6),
        (lambda: resnet(152, 1), 60.19e6),
        (lambda: inception_v4(1), 42.7e6),
    ]:
        assert abs(build().param_count() / quoted - 1) < 0.01
    # BERT-Large's quoted "340M" is rounded: the exact reference count is 1.1% lower
    assert abs(bert_large(1, 8).param_count() / 340e6 - 1) < 0.012


def test_lstm_parameter_formula():
    layers, hidden, inp = 2, 32, 16
    g = rnn(layers, hidden, batch=3, seq=4, input_size=inp, classes=5)
    per = lambda i: 4 * hidden * (i + hidden + 1)  # noqa: E731
    assert g.param_count() == per(inp) + per(hidden) + hidden * 5 + 5
    gb = rnn(layers, hidden, batch=3, seq=4, input_size=inp, classes=5, bidirectional=True)
    assert gb.param_count() == 2 * per(inp) + 2 * per(2 * hidden) + 2 * hidden * 5 + 5


def test_wide_variants_grow():
    assert wresnet152(2, 1).param_count() > resnet(152, 1).param_count()
    assert inception_v4(1, scale=2).param_count() > 3.5 * inception_v4(1).param_count()


@pytest.mark.parametrize(
    "build",
    [
        lambda t: mlp(8, [16, 8, 4], training=t),
        lambda t: small_cnn(2, training=t),
        lambda t: resnet(50, 1, training=t),
        lambda t: inception_v4(1, training=t),
        lambda t: rnn(2, 8, 2, 3, bidirectional=True, training=t),
        lambda t: transformer(2, 32, 4, 8, 2, vocab=50, max_pos=8, pooler=True, training=t),
    ],
)
def test_graph_well_formed(build):
    g = build(True)
    g.validate()
    updates = g.ops_in(Phase.UPDATE)
    assert {o.inputs[0] for o in updates} == {p.name for p in g.params()}
    for o in updates:
        p, dp = (g.tensors[t] for t in o.inputs[:2])
        assert dp.kind is TensorKind.GRADIENT and dp.shape == p.shape
    for o in g.ops_in(Phase.BACKWARD):
        assert o.type.endswith("_grad") or o.type == "add"
    assert all(o.flops >= 0 for o in g.ops)
    inference = build(False)
    assert len(inference.ops) == len(g.ops_in(Phase.FORWARD))
    assert inference.param_count() == g.param_count()


def test_batch_scales_flops_linearly():
    f1, f4 = vgg16(1).total_flops(), vgg16(4).total_flops()
    params = vgg16(1).param_count()
    # updates do not depend on the batch; everything else does
    assert f4 - 2 * params == pytest.approx(4 * (f1 - 2 * params), rel=1e-9)
    # VGG-16 forward is ~15.5 GFLOP per 224x224 image (2 x 7.7 GMACs)
    fwd = sum(o.flops for o in vgg16(1, training=False).ops)
    assert fwd == pytest.approx(31e9, rel=0.03)


def test_bad_arguments():
    with pytest.raises(ValueError):
        resnet(34, 1)
    with pytest.raises(ValueError):
        gpt2("huge")
    with pytest.raises(ValueError):
        mlp(4, [3])
    with pytest.raises(ValueError):
        transformer(1, 30, 4, 8, 1)  # 30 not divisible by 4 heads
    net = Net("bad")
    x = net.input("x", (2, 3))
    with pytest.raises(ValueError, match="not aligned"):
        net.matmul(x, net.param("w", (4, 5)))
    with pytest.raises(ValueError):
        net.conv2d(net.input("img", (1, 3, 2, 2)), 4, 5)
    with pytest.raises(ValueError, match="does not depend"):
        Net("nop").build(loss=Net("nop").input("z", ()))


# ---- torch.fx importer (PyTorch is an optional extra: these skip without it) ------------


def _torch():
    return pytest.importorskip("torch")


def _residual_model(torch):
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(8, 10)

        def forward(self, x):
            h = torch.relu(self.bn(self.conv(x)))
            h = h + nn.functional.relu(self.conv2(h))
            return self.fc(torch.flatten(self.pool(h), 1))

    return Residual()


def test_torch_mlp_import_matches_parameters_and_trains():
    torch = _torch()
    from spartan.dnn.tiling import plan
    from spartan.dnn.torch_import import from_torch

    nn = torch.nn
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 4))
    g = from_torch(model, (32, 8))
    g.validate()
    assert g.param_count() == sum(p.numel() for p in model.parameters())
    assert [o.type for o in g.ops_in(Phase.FORWARD)] == [
        "matmul", "bias_add", "relu", "matmul", "bias_add", "softmax_xent",
    ]  # fmt: skip
    assert len(g.ops_in(Phase.UPDATE)) == 4
    assert plan(g, 4).total > 0


def test_torch_cnn_with_residual_and_batchnorm():
    torch = _torch()
    from spartan.dnn.torch_import import from_torch

    model = _residual_model(torch)
    g = from_torch(model, (4, 3, 8, 8))
    assert g.param_count() == sum(p.numel() for p in model.parameters())
    types = {o.type for o in g.ops}
    assert {"conv2d", "batchnorm", "add", "global_avgpool", "conv2d_grad", "sgd"} <= types
    assert not from_torch(model, (4, 3, 8, 8), training=False).ops_in(Phase.BACKWARD)


def test_torch_unsupported_layer_is_a_clear_error():
    torch = _torch()
    from spartan.dnn.torch_import import from_torch

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Softplus())
    with pytest.raises(ValueError, match="Softplus"):
        from_torch(model, (2, 4))
