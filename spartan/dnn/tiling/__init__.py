"""SoyBean-style optimal tensor tiling of DNN graphs (hybrid data/model parallelism).

>>> from spartan.dnn.zoo import mlp
>>> from spartan.dnn.tiling.onecut import one_cut
>>> g = mlp(400, [300] * 4, activation=None, bias=False, loss=False)
>>> one_cut(g, fixed={"x": 0, "dfc3:out": 0}, unit="elements").cost
540000.0
"""

from spartan.dnn.tiling.baselines import (
    BASELINES,
    data_parallel,
    megatron,
    model_parallel,
    one_weird_trick,
)
from spartan.dnn.tiling.exact import joint_optimum, local_search, moved
from spartan.dnn.tiling.forms import RED, REP, Form, aligned_forms, conversion
from spartan.dnn.tiling.kcut import k_cuts, k_cuts_exhaustive
from spartan.dnn.tiling.onecut import OneCut, build_problem, one_cut, one_cut_exhaustive
from spartan.dnn.tiling.plan import Plan, evaluate
from spartan.dnn.tiling.planner import plan

__all__ = [
    "BASELINES",
    "Plan",
    "data_parallel",
    "evaluate",
    "joint_optimum",
    "local_search",
    "moved",
    "k_cuts",
    "k_cuts_exhaustive",
    "megatron",
    "model_parallel",
    "one_weird_trick",
    "plan",
    "RED",
    "REP",
    "Form",
    "OneCut",
    "aligned_forms",
    "build_problem",
    "conversion",
    "one_cut",
    "one_cut_exhaustive",
]
