"""Check kinds on individual kept paths (synthetic paths): each one can PASS and can FAIL."""
import math

import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.figures.checks import evaluate, validate
from sgi_run.figures.results import FAIL, PASS, SKIP, Series
from tests.figures.checks.helpers import EXACT, T, check, kept, series


DRIFT = 1 + 1e-9 * T / 100          # a Casimir drifting to 1e-9 at t = 100
ROUNDOFF = 1 + 1e-14 * np.sin(T)    # one conserved to round-off


def test_path_deviation_pass_and_fail():
    ok = check("path_deviation", kept(ROUNDOFF), max=1e-12)
    assert ok.verdict == PASS and ok.value == pytest.approx(np.abs(1e-14 * np.sin(T)).max(), rel=0.02) and ok.se is None
    bad = check("path_deviation", kept(DRIFT), max=1e-12)
    assert bad.verdict == FAIL and bad.value == pytest.approx(1e-9) and bad.t == 100
    assert check("path_deviation", kept(DRIFT), min=1e-11, max=1e-6).verdict == PASS
    assert check("path_deviation", kept(ROUNDOFF), min=1e-11, max=1e-6).verdict == FAIL


def test_a_path_checks_value_names_the_observable_it_reads():
    from sgi_run.figures.results import RunData
    data = RunData({"H": kept(ROUNDOFF), "C1": kept(DRIFT)}, "H")
    drift = evaluate({"id": "c", "kind": "path_deviation", "observable": "C1", "max": 1e-12}, "run", data)
    assert drift.measured().startswith("max_t |C1 - C1(0)| = 1e-09 at t=100 (band <= 1e-12")
    energy = evaluate({"id": "c", "kind": "path_extent", "statistic": "min", "min": 0}, "run", data)
    assert energy.measured().startswith("min_t H = ")
    relative = check("path_deviation", kept(DRIFT), reference=1, relative=True, max=1)
    assert relative.measured().startswith("max_t |x - reference| / |reference| = 1e-09")


def test_path_deviation_from_a_number_and_over_a_window():
    offset = kept(np.full_like(T, 1.5))
    assert check("path_deviation", offset, max=1e-12).verdict == PASS          # from x(0): constant
    assert check("path_deviation", offset, reference=1, max=1e-12).verdict == FAIL
    assert check("path_deviation", kept(DRIFT), max=3.1e-10, end=30).verdict == PASS
    assert check("path_deviation", kept(DRIFT), max=1e-9, end=500).verdict == SKIP   # beyond the run


def test_path_deviation_relative_to_its_start():
    """Figs 8-9 of Luesink et al. (2023): |x(t) - x(0)| / |x(0)|; a Casimir of size 0.05 drifting by 1e-9 is 2e-8 relative."""
    small = kept(0.05 * DRIFT)
    absolute, relative = (check("path_deviation", small, max=1e-10, relative=r) for r in (False, True))
    assert absolute.verdict == PASS and absolute.value == pytest.approx(5e-11)
    assert relative.verdict == FAIL and relative.value == pytest.approx(1e-9)
    assert check("path_deviation", kept(-0.05 * DRIFT), relative=True, max=1e-9 * 1.01).verdict == PASS


def test_path_deviation_reads_the_kept_path_not_the_mean():
    s = Series(T, np.ones_like(T), np.zeros_like(T), None, kept=np.array([np.ones_like(T), DRIFT]))
    assert check("path_deviation", s, max=1e-12).verdict == PASS
    assert check("path_deviation", s, max=1e-12, path=1).verdict == FAIL


def test_path_deviation_of_a_blown_up_path_fails():
    blown = np.where(T < 50, 1.0, np.nan)
    assert check("path_deviation", kept(blown), max=1e-12).verdict == FAIL


def test_path_checks_need_a_kept_path():
    with pytest.raises(ConfigError, match="keep_paths"):
        check("path_deviation", series(EXACT), max=1)
    with pytest.raises(ConfigError, match="path 3"):
        check("path_deviation", kept(DRIFT), max=1, path=3)


def test_path_deviation_ratio_pass_and_fail():
    spec = {"id": "c", "kind": "path_deviation_ratio", "other": "tmk", "min": 100}
    validate(spec, "test")
    runs = {"tmk": kept(ROUNDOFF)}
    result = evaluate(spec, "im", kept(DRIFT), runs)
    assert result.verdict == PASS and result.value == pytest.approx(1e-9 / np.abs(1e-14 * np.sin(T)).max(), rel=0.02)
    assert evaluate(spec, "im", kept(1 + 1e-13 * T / 100), runs).verdict == FAIL


@pytest.mark.parametrize("statistic, value", [("max", 0.94), ("min", 0.0), ("range", 0.94), ("max_abs", 0.94),
                                              ("min_abs", 0.0)])
def test_path_extent_statistics(statistic, value):
    x = 0.47 * (1 - np.cos(T))     # in [0, 0.94]
    x = np.where(T == 0, 0.0, x)
    x[np.argmax(x)] = 0.94
    result = check("path_extent", kept(x), statistic=statistic, min=value - 1e-9, max=value + 1e-9)
    assert result.verdict == PASS and result.value == pytest.approx(value)
    assert check("path_extent", kept(x), statistic=statistic, min=value + 0.1).verdict == FAIL


def test_path_extent_refuses_an_unknown_statistic_and_fails_a_nonfinite_path():
    with pytest.raises(ConfigError, match="statistic"):
        check("path_extent", kept(DRIFT), statistic="median", max=1)
    assert check("path_extent", kept(np.where(T < 50, 0.0, np.inf)), statistic="max", max=1).verdict == FAIL


def test_path_period_pass_fail_and_skip():
    t = np.arange(0.0, 100.0, 0.1)
    wave = Series(t, np.sin(2 * np.pi * t / 7.31), np.full_like(t, np.nan), None,
                  kept=np.sin(2 * np.pi * t / 7.31)[None])
    ok = check("path_period", wave, min=7.29, max=7.33)
    assert ok.verdict == PASS and ok.value == pytest.approx(7.31, abs=2e-3)
    assert check("path_period", wave, min=5.0, max=5.2).verdict == FAIL
    short = Series(t[:40], wave.mean[:40], wave.sem[:40], None, kept=wave.kept[:, :40])
    assert check("path_period", short, min=7.29, max=7.33).verdict == SKIP


def test_path_extent_of_a_kept_vectors_length():
    from sgi_run.figures.results import RunData
    angle = 2 * np.pi * T / 40
    pi = np.stack([np.cos(angle), np.sin(angle), np.zeros_like(T)], -1) * (1 + T / 50)[:, None]   # |pi| 1 -> 3
    run = RunData({"pi3": kept(pi[:, 2])}, "pi3", kept={"pi": pi[None]})
    spec = {"id": "c", "kind": "path_extent", "norm_of": "pi", "statistic": "max", "min": 2.99, "max": 3.01}
    validate(spec, "test")
    assert evaluate(spec, "run", run).verdict == PASS
    assert evaluate({**spec, "statistic": "range", "min": 2.5, "max": None}, "run", run).verdict == FAIL
    with pytest.raises(ConfigError, match="gamma"):
        evaluate({**spec, "norm_of": "gamma"}, "run", run)


def test_solver_statistic_reads_what_the_runs_solves_did():
    from sgi_run.figures.results import RunData
    solved = {"per_step": 3.2, "max_iterations": 7.0, "unconverged_steps": 4.0, "unconverged_fraction": 0.01}
    run = RunData({"C2": kept(np.ones_like(T))}, "C2", dt=0.5, solver=solved)
    spec = {"id": "c", "kind": "solver_statistic", "statistic": "unconverged_steps", "max": 0}
    validate(spec, "test")
    failed = evaluate(spec, "run", run)
    assert failed.verdict == FAIL and failed.value == 4.0
    assert evaluate({**spec, "statistic": "per_step", "min": 3, "max": 4}, "run", run).verdict == PASS
    with pytest.raises(ConfigError, match=r"^test\.statistic='mean' is not allowed: one of "):
        validate({**spec, "statistic": "mean"}, "test")
    with pytest.raises(ConfigError, match="has none"):     # an explicit method: no solves to judge
        evaluate(spec, "run", RunData({"C2": kept(np.ones_like(T))}, "C2", dt=0.5))


# --- the rigid body's kept paths on its momentum sphere (Gay-Balmaz & Wu 2024 Figs 1, 2) -------------------------------
def _rigid_body_paths():
    """Four kept paths of a rigid body with I = diag(1, 2, 3) on the unit sphere (separatrix E = 1/4) and the
    deterministic orbit (a circle about -e_x): path 1 keeps closest to E0 = 0.28, path 3 crosses and stays near
    the orbit, path 2 crosses and wanders 0.5 from it; path 0 never crosses but changes its energy most."""
    import jax.numpy as jnp
    from types import SimpleNamespace

    from sgi_run.figures.results import RunData
    angle = 2 * np.pi * T / 50
    orbit = np.stack([-np.full_like(T, 0.6), 0.8 * np.cos(angle), 0.8 * np.sin(angle)], -1)
    lift = lambda d: orbit + np.array([d, 0.0, 0.0]) * np.sin(np.pi * T / 100)[:, None]
    pi = np.stack([lift(0.05), lift(0.0), lift(0.5), lift(0.1)])
    energy = 0.28 + np.array([[0.015], [0.002], [-0.04], [-0.035]]) * np.sin(np.pi * T / 100)
    system = SimpleNamespace(hamiltonian=lambda mu: 0.5 * jnp.sum(jnp.asarray(mu) ** 2 / jnp.array([1.0, 2.0, 3.0])))
    candidates = RunData({"H": kept(*energy), "pi1": kept(*pi[:, :, 0])}, "H", system, kept={"pi": pi})
    deterministic = RunData({"H": kept(np.full_like(T, 0.28)), "pi1": kept(orbit[:, 0])}, "H", system,
                            kept={"pi": orbit[None]})
    return candidates, deterministic


def test_path_checks_pick_a_kept_path_by_a_selection_rule():
    candidates, deterministic = _rigid_body_paths()
    runs = {"deterministic": deterministic}
    left = {"id": "c", "kind": "path_deviation", "observable": "H", "select": "least_energy_change", "max": 0.003}
    validate(left, "test")
    result = evaluate(left, "candidates", candidates, runs)
    assert result.verdict == PASS and result.value == pytest.approx(0.002) and "picked path 1" in result.detail
    right = {"id": "c", "kind": "path_extent", "observable": "H", "statistic": "min", "select": "farthest_crossing",
             "other": "deterministic", "max": 0.25}
    validate(right, "test")
    result = evaluate(right, "candidates", candidates, runs)
    assert result.verdict == PASS and result.value == pytest.approx(0.24) and "picked path 2" in result.detail
    assert "2 of 4 kept paths fall below the separatrix E = 0.25" in result.detail
    assert evaluate({**right, "end": 500}, "candidates", candidates, runs).verdict == SKIP
    with pytest.raises(ConfigError, match="orbit"):
        evaluate({k: v for k, v in right.items() if k != "other"}, "candidates", candidates, runs)


def test_a_selection_with_no_qualifying_path_fails_and_path_selection_counts_them():
    candidates, deterministic = _rigid_body_paths()
    runs = {"deterministic": deterministic}
    never = {"id": "c", "kind": "path_selection", "select": "least_energy_change", "min": 1}
    validate(never, "test")
    assert evaluate(never, "candidates", candidates, runs).value == 2
    crossing = {"id": "c", "kind": "path_extent", "observable": "H", "statistic": "min", "select": "farthest_crossing",
                "other": "deterministic", "max": 0.25}
    result = evaluate(crossing, "deterministic", deterministic, runs)
    assert result.verdict == FAIL and math.isnan(result.value) and "0 of 1 kept paths" in result.detail
    assert evaluate({**never, "select": "farthest_crossing", "min": 3}, "candidates", candidates, runs).verdict == FAIL
    with pytest.raises(ConfigError, match=r"^test\.select='nearest' is not allowed: one of "):
        validate({**never, "select": "nearest"}, "test")


def test_path_deviation_of_a_vectors_length_over_every_kept_path():
    candidates, _ = _rigid_body_paths()
    spec = {"id": "c", "kind": "path_deviation", "observable": "pi1", "norm_of": "pi", "all_paths": True}
    validate(spec, "test")
    result = evaluate({**spec, "max": 1.0}, "candidates", candidates)
    lengths = np.linalg.norm(candidates.kept["pi"], axis=-1)
    assert result.value == pytest.approx(np.max(np.abs(lengths - lengths[:, :1]))) and "the largest on path 2" in result.detail
    assert evaluate({**spec, "max": 1e-12, "all_paths": False}, "candidates", candidates).verdict == FAIL
