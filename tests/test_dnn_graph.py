"""The DNN graph IR: construction rules, dependency queries, byte counts, roofline."""

import pytest

from spartan.dnn.graph import Graph, Op, Phase, Tensor, TensorKind
from spartan.dnn.hardware import LAUNCH_OVERHEAD_S, V100, Accelerator, Profile, accelerator, op_time
from spartan.dnn.zoo import mlp, small_cnn


def _tiny() -> Graph:
    g = Graph("tiny")
    g.add_tensor("x", (4, 3), TensorKind.INPUT)
    g.add_tensor("w", (3, 2), TensorKind.PARAM)
    g.add_tensor("y", (4, 2))
    g.add_tensor("dy", (4, 2), TensorKind.GRADIENT)
    g.add_tensor("dw", (3, 2), TensorKind.GRADIENT)
    g.add_op("fc", "matmul", ["x", "w"], ["y"], Phase.FORWARD, 48)
    g.add_op("fc:grad1", "matmul_grad", ["dy", "x"], ["dw"], Phase.BACKWARD, 48, {"wrt": 1})
    g.add_op("sgd:w", "sgd", ["w", "dw"], ["w"], Phase.UPDATE, 12)
    return g


def test_tensor_sizes_and_validation():
    t = Tensor("w", (300, 300), TensorKind.PARAM)
    assert (t.size, t.nbytes, t.ndim) == (90000, 360000, 2)
    assert Tensor("s", (), TensorKind.ACTIVATION, "float16").nbytes == 2
    with pytest.raises(TypeError):
        Tensor("w", (2,), TensorKind.PARAM, "complex999")
    with pytest.raises(ValueError):
        Tensor("w", (-1,), TensorKind.PARAM)
    with pytest.raises(ValueError):
        Op("o", "relu", (), (), Phase.FORWARD, flops=-1)


def test_queries_and_inplace_dependencies():
    g = _tiny()
    g.validate()
    fc, grad, sgd = g.ops
    assert g.producer("y") is fc and g.producer("w") is None and g.producer("dw") is grad
    assert g.consumers("w") == [fc, sgd]
    assert g.writers("w") == [sgd] and sgd.inplace == ("w",)
    # the in-place update runs after every earlier reader of w (write-after-read)
    assert g.preds(sgd) == [fc, grad]
    assert g.succs(fc) == [sgd] and g.succs(grad) == [sgd]
    assert g.param_count() == 6
    assert g.op_bytes(sgd) == 24 + 24 + 24  # read w and dw, write w
    assert [e[2] for e in g.edges()] == ["dw"]


def test_construction_errors():
    g = _tiny()
    with pytest.raises(ValueError, match="already exists"):
        g.add_tensor("x", (1,), TensorKind.INPUT)
    with pytest.raises(KeyError):
        g.add_op("bad", "relu", ["nope"], ["y"], Phase.FORWARD)
    with pytest.raises(ValueError, match="already produced"):
        g.add_op("again", "relu", ["x"], ["y"], Phase.FORWARD)
    g.add_tensor("late", (4, 3))
    with pytest.raises(ValueError, match="read before"):
        g.add_op("writer", "relu", ["late"], ["x"], Phase.FORWARD)  # x was already read


def test_validate_rejects_orphan_activation_and_forward_inplace():
    g = Graph()
    g.add_tensor("a", (2,))
    with pytest.raises(ValueError, match="no producer"):
        g.validate()
    g2 = Graph()
    g2.add_tensor("w", (2,), TensorKind.PARAM)
    g2.add_op("upd", "sgd", ["w"], ["w"], Phase.FORWARD)
    with pytest.raises(ValueError, match="in place"):
        g2.validate()


@pytest.mark.parametrize("build", [lambda: mlp(16, [8, 6, 4]), lambda: small_cnn(4)])
def test_training_graph_structure(build):
    g = build()
    g.validate()
    phases = [o.phase for o in g.ops]
    # forward, then backward, then update: phases never go back
    assert phases == sorted(phases, key=[Phase.FORWARD, Phase.BACKWARD, Phase.UPDATE].index)
    grads_updated = {o.inputs[1] for o in g.ops_in(Phase.UPDATE)}
    for p in g.params():
        (upd,) = g.writers(p.name)
        assert upd.inputs[0] == p.name
        assert g.tensors[upd.inputs[1]].shape == p.shape
    assert len(grads_updated) == len(g.params())
    # every op's preds come earlier in topological order
    pos = {o.name: i for i, o in enumerate(g.topo_order())}
    assert all(pos[p.name] < pos[o.name] for o in g.ops for p in g.preds(o))


def test_inference_graph_has_no_backward():
    g = mlp(16, [8, 6, 4], training=False)
    assert not g.ops_in(Phase.BACKWARD) and not g.ops_in(Phase.UPDATE)
    assert mlp(16, [8, 6, 4]).param_count() == g.param_count() == 8 * 6 + 6 + 6 * 4 + 4


def test_roofline_and_profile():
    g = mlp(1024, [1024, 1024], loss=False, training=False, bias=False)
    mm = g.op("fc1")
    assert mm.flops == 2 * 1024**3
    assert op_time(mm, g, V100) == pytest.approx(2 * 1024**3 / 15.7e12 + LAUNCH_OVERHEAD_S)
    slow_mem = V100.with_(mem_bw=1e6)
    assert op_time(mm, g, slow_mem) == pytest.approx(g.op_bytes(mm) / 1e6 + LAUNCH_OVERHEAD_S)
    prof = Profile(V100, {"fc1": 0.5})
    assert prof.time(mm, g) == 0.5
    assert accelerator("v100") is V100
    with pytest.raises(ValueError):
        accelerator("tpu9")
    with pytest.raises(ValueError):
        Accelerator("bad", 0, 1, 1, 1, 1)


def test_profile_roundtrip(tmp_path):
    prof = Profile(V100, {"a": 1.5e-3})
    prof.save(tmp_path / "p.json")
    back = Profile.load(tmp_path / "p.json")
    assert back.accel == V100 and back.times == {"a": 1.5e-3}
