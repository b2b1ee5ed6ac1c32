"""Timeline tables and pictures of swap plans and GA searches."""

from spartan.dnn.swap.genetic import GAConfig, search
from spartan.dnn.swap.planner import plan_swaps
from spartan.dnn.swap.timeline import plot_convergence, plot_timeline, timeline_table
from spartan.dnn.swap.worked_examples import (
    COARSE_POOL,
    FINE_POOL,
    LEFT_FIRST,
    RIGHT_FIRST,
    figure1_workload,
)


def _plan(order, pool):
    wl = figure1_workload()
    idx = {n: i for i, n in enumerate(wl.op_names)}
    return plan_swaps(wl, [idx[n] for n in order], pool, steady_state=False)


def test_figure1c_table_shows_the_idle_slot_waiting_for_w1():
    rows = timeline_table(_plan(RIGHT_FIRST, COARSE_POOL)).splitlines()
    compute = [c.strip() for c in rows[1].split("|")[1:]]
    swap_in = [c.strip() for c in rows[2].split("|")[1:]]
    assert compute == ["Data", "Conv2", "Conv3", "Conv4", "", "Conv1", "Concat"]
    assert swap_in[4] == "W1"


def test_figure1e_table_waits_for_a2_to_leave():
    rows = timeline_table(_plan(LEFT_FIRST, FINE_POOL)).splitlines()
    compute = [c.strip() for c in rows[1].split("|")[1:]]
    swap_out = [c.strip() for c in rows[3].split("|")[1:]]
    assert compute[5] == "" and compute[6] == "Concat"
    assert swap_out[4:6] == ["A2", "A2"]


def test_pictures_are_written(tmp_path):
    png = plot_timeline(_plan(RIGHT_FIRST, FINE_POOL), tmp_path / "t.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    result = search(figure1_workload(), GAConfig(population=4, max_generations=2, workers=1))
    curve = plot_convergence(result.history, tmp_path / "c.png", ideal=6.0)
    assert curve.stat().st_size > 1000
