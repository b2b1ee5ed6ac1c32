"""SwapAdvisor: train models larger than device memory by planned swapping.

Pipeline: a :class:`Workload` (graph + op times + device) -> a chromosome (schedule,
:class:`Allocation`) -> :func:`plan_swaps` (augmented graph, :class:`SwapPlan`) -> the
three-stream simulation (iteration time). :func:`search` is the genetic algorithm over
chromosomes; :mod:`.baselines` holds ideal / ODSwap / vDNN-like / TFLMS-like plans;
:mod:`.executor` replays a plan on an emulated (CPU) or CuPy device, :mod:`.workers` on a
spartan worker (local or Ray) as the memory-limited device with the driver as host memory.

>>> from spartan.dnn.swap import GAConfig, search
>>> from spartan.dnn.swap.worked_examples import figure1_workload
>>> wl = figure1_workload()
>>> result = search(wl, GAConfig(population=8, max_generations=10, workers=1, progress=False))
>>> result.best_time  # Figure 1's optimum: every copy hidden behind compute
6.0
"""

from spartan.dnn.swap.genetic import GAConfig, SearchResult, search
from spartan.dnn.swap.plan import COMPUTE, SWAP_IN, SWAP_OUT, InfeasiblePlan, SwapPlan
from spartan.dnn.swap.planner import is_topological, plan_swaps
from spartan.dnn.swap.pool import Allocation, PoolModel
from spartan.dnn.swap.workload import Workload

__all__ = [
    "COMPUTE",
    "SWAP_IN",
    "SWAP_OUT",
    "Allocation",
    "GAConfig",
    "SearchResult",
    "search",
    "InfeasiblePlan",
    "PoolModel",
    "SwapPlan",
    "Workload",
    "is_topological",
    "plan_swaps",
]
