"""Deep-learning dataflow graphs and the planners built on them.

>>> from spartan.dnn import zoo
>>> zoo.vgg16(32).param_count()
138357544
"""

from spartan.dnn.graph import Graph, Op, Phase, Tensor, TensorKind
from spartan.dnn.hardware import H100, K80, P100, V100, Accelerator, Profile, op_time

__all__ = [
    "H100",
    "K80",
    "P100",
    "V100",
    "Accelerator",
    "Graph",
    "Op",
    "Phase",
    "Profile",
    "Tensor",
    "TensorKind",
    "op_time",
]
