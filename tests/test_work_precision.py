"""Work-precision series (``sgi_run.work_precision``): kept in HDF5 under a key of exactly what they measure,
reused only for that, resumed after an interruption, and tabled with the studies' errors."""
import numpy as np
import pytest

from sgi_run import store, work_precision
from sgi_run.engine import cost
from sgi_run.engine.convergence import ConvergenceResult
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.systems import Kubo

PLAN = ConvergencePlan(dts=[0.25, 0.125], paths=10, T=1.0, seed=0)


@pytest.fixture
def studies(make_integrator):
    return {name: (Kubo(), make_integrator(name), PLAN) for name in ("heun", "midpoint")}


def test_a_series_is_kept_and_reused_only_for_exactly_what_it_measures(studies, tmp_path, monkeypatch):
    hashes = {"heun": "a" * 12, "midpoint": "b" * 12}
    costs, path, reused = work_precision.measure(studies, hashes, paths=3, repeats=2, root=tmp_path, log=lambda s: None)
    assert not reused and path.is_file() and list(costs) == ["heun", "midpoint"]
    data, attrs, verified = store.checked_read(path)
    assert verified and attrs["complete"] and data["seconds"].shape == (4, 2)
    assert [m.decode() for m in data["method"]] == ["heun", "heun", "midpoint", "midpoint"]
    np.testing.assert_array_equal(costs["midpoint"].seconds, data["seconds"][2:])
    again, same, reused = work_precision.measure(studies, hashes, paths=3, repeats=2, root=tmp_path, log=lambda s: None)
    assert reused and same == path
    np.testing.assert_array_equal(again["heun"].seconds, costs["heun"].seconds)
    # Another study config, count, repeat count or device: another series.
    keys = {work_precision.series_key(hashes, 3, 2), work_precision.series_key({**hashes, "heun": "c" * 12}, 3, 2),
            work_precision.series_key(hashes, 4, 2), work_precision.series_key(hashes, 3, 3)}
    monkeypatch.setattr("sgi_run.engine.device.describe", lambda: "cpu (another one)")
    keys.add(work_precision.series_key(hashes, 3, 2))
    assert len(keys) == 5
    # cache=off measures again.
    fresh = work_precision.measure(studies, hashes, paths=3, repeats=2, root=tmp_path, cache="off", log=lambda s: None)
    assert not fresh[2]


def test_an_interrupted_series_resumes_from_its_last_round(studies, tmp_path, monkeypatch):
    hashes = {"heun": "a" * 12, "midpoint": "b" * 12}
    measure = cost.measure

    def interrupted(cells, repeats, done=None, on_round=None, log=None):
        def stop_after_first(timings):
            on_round(timings)
            raise KeyboardInterrupt
        return measure(cells, repeats, done, on_round=stop_after_first)

    monkeypatch.setattr(cost, "measure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        work_precision.measure(studies, hashes, paths=3, repeats=3, root=tmp_path, log=lambda s: None)
    monkeypatch.setattr(cost, "measure", measure)
    path = next(tmp_path.rglob(work_precision.FILE_NAME))
    kept, attrs, _ = store.checked_read(path)
    assert not attrs["complete"] and kept["seconds"].shape == (4, 1)
    lines = []
    costs, _, reused = work_precision.measure(studies, hashes, paths=3, repeats=3, root=tmp_path, log=lines.append)
    assert not reused and "resuming after round 1" in lines[0]
    np.testing.assert_array_equal(costs["heun"].seconds[:, :1], kept["seconds"][:2])
    assert costs["heun"].seconds.shape == (2, 3)


def test_the_rows_pair_each_step_sizes_error_with_its_cost():
    dts = np.array([0.25, 0.125])
    result = ConvergenceResult("strong", "exact", "shared", dts, np.array([0.2, 0.1]), np.array([0.01, 0.005]),
                               np.array([True, True]), 1.0, (0.9, 1.1), np.zeros(2), 10,
                               invariants=("H",), drift_max=np.array([[1e-3], [5e-4]]))
    timed = work_precision.MethodCost(dts[::-1], 4, np.array([8, 4]), np.array([1.0, 1.1]),
                                      np.array([[0.4, 0.8, 0.6], [0.2, 0.3, 0.1]]), "cpu (test)")
    rows = work_precision.rows("heun", "Heun", result, timed)
    assert [r["dt"] for r in rows] == [0.25, 0.125]
    coarse = rows[0]      # dt 0.25 is the timings' second cell
    assert coarse["seconds_per_path"] == pytest.approx(0.2 / 4) and coarse["seconds_per_path_low"] == pytest.approx(0.1 / 4)
    assert coarse["seconds_per_path_high"] == pytest.approx(0.3 / 4)
    assert coarse["path_steps_per_s"] == pytest.approx(4 * 4 / 0.2) and coarse["first_call_s"] == 1.1
    assert coarse["error"] == 0.2 and coarse["drift_H"] == 1e-3 and rows[1]["drift_H"] == 5e-4


def _row(label, error, seconds, resolvable=True):
    return {"label": label, "error": error, "seconds_per_path": seconds, "resolvable": resolvable}


def test_the_cheapest_method_at_each_error_is_interpolated_log_log_and_a_bound_is_said():
    # A: error 0.1 at 1 s, 0.01 at 100 s (cost ~ error^-2); B: error 0.04 at 2 s, 0.004 at 20 s (cost ~ error^-1).
    rows = [_row("A", 0.1, 1.0), _row("A", 0.01, 100.0), _row("B", 0.04, 2.0), _row("B", 0.004, 20.0),
            _row("C", 1e-9, 1e-9, resolvable=False)]
    found = {w["error"]: w for w in work_precision.cheapest(rows)}
    # 0.1: A measured (1 s); B below it already at its coarsest (at most 2 s): A is cheaper than B's bound only
    # as a bound, so undecided and left out. 0.02: A interpolates to 25 s, B to 4 s.
    assert 0.1 not in found
    assert found[0.02]["method"] == "B" and found[0.02]["seconds_per_path"] == pytest.approx(4.0)
    assert found[0.02]["runner_up"] == "A" and found[0.02]["ratio"] == pytest.approx(25.0 / 4.0)
    assert not found[0.02]["at_most"]
    # 0.05: B is below it at its coarsest (at most 2 s), A interpolates to 4 s: B, as a bound.
    assert found[0.05]["method"] == "B" and found[0.05]["at_most"] and found[0.05]["seconds_per_path"] == 2.0
    assert 0.005 not in found and 0.002 not in found          # only B reaches them
    assert work_precision.cheapest(rows[:2]) == []             # one method: nothing to compare
