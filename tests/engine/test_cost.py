"""Timing a method at its step sizes (``engine.cost``): what is timed and how a series resumes. No test asserts a
speed (speed is measured in benchmarks, not asserted)."""
import numpy as np

from sgi_run.engine import cost
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.systems import Kubo


def _cells(make_integrator, paths=4):
    plan = ConvergencePlan(dts=[0.25, 0.125], paths=10, T=1.0, truncate=2.0, seed=3)
    return cost.cells_of("heun", Kubo(), make_integrator("heun"), plan, paths)


def test_a_cell_is_the_studys_step_size_seed_and_truncation_over_the_timed_paths(make_integrator):
    cells = _cells(make_integrator)
    assert [c.dt for c in cells] == [0.25, 0.125]
    assert all(c.plan.paths == 4 and c.plan.T == 1.0 and c.plan.seed == 3 and c.plan.truncate == 2.0
               and c.plan.shard_count == 1 for c in cells)
    assert [c.path_steps for c in cells] == [16, 32]


def test_every_cell_is_timed_once_a_round_and_an_interrupted_series_resumes(make_integrator):
    cells, rounds = _cells(make_integrator), []
    first = cost.measure(cells, repeats=1, on_round=rounds.append)
    assert first.seconds.shape == (2, 1) and np.all(first.seconds > 0) and np.all(first.first_call_s > 0)
    assert len(rounds) == 1
    resumed = cost.measure(cells, repeats=3, done=first, on_round=rounds.append)
    assert resumed.seconds.shape == (2, 3) and len(rounds) == 3
    np.testing.assert_array_equal(resumed.seconds[:, :1], first.seconds)        # the kept round is kept
    np.testing.assert_array_equal(resumed.first_call_s, first.first_call_s)     # and its first calls
