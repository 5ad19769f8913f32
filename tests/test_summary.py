"""The summary a user reads: honest numbers (NaN where nothing was measured), the method's own exact
mean where known, full precision in summary.csv, and a terminal table that never cuts a number."""
import csv
import dataclasses
import io
import math

import h5py
import jax.numpy as jnp
import numpy as np
import pytest
from rich.console import Console

import sgi_run
from sgi_run import store, summary, systems
from sgi_run.config import build
from sgi_run.engine.linear_oracle import method_moments
from sgi_run.systems import CanonicalSystem, Kubo


def failed_ensemble(paths=5):
    """Every path non-finite after t = 0 (a deterministic start: s.e. 0 there)."""
    count = np.array([paths, 0, 0])
    return store.Ensemble(np.arange(3.0), {"H": {"mean": np.array([2.0, np.nan, np.nan]),
                                                 "var": np.array([0.0, np.nan, np.nan]), "count": count}},
                          {}, {"nonfinite_paths": np.array([0, paths, paths])}, {"paths": paths})


def test_a_run_where_every_path_failed_shows_nan_not_zero():
    [row] = summary.summarize(failed_ensemble(), Kubo())
    assert math.isnan(row["sem"]) and math.isnan(row["max_rel_mc_error"]) and math.isnan(row["mean"])
    assert math.isnan(row["error_in_sem"]) and row["nonfinite_paths"] == 5


def test_one_finite_path_has_no_standard_error():
    """A single path has no spread to measure, even where a variance of 0 was stored for it."""
    ens = failed_ensemble()
    ens.observables["H"].update(mean=np.array([2.0, 1.5, 1.5]), var=np.array([0.0, 0.0, 0.0]),
                                count=np.array([5, 1, 1]))
    [row] = summary.summarize(ens, Kubo())
    assert math.isnan(ens.sem("H")[-1]) and math.isnan(row["sem"]) and math.isnan(row["max_rel_mc_error"])


def test_an_observable_that_overflows_on_a_finite_state_is_counted_and_said():
    """Issue 45: a path with a finite state (q ~ 5.7e105, p ~ 2.7e216) but H = inf was left out of H's statistics
    and counted nowhere. Its non-finite values are in the row, the terminal table and a note."""
    ens = failed_ensemble()
    ens.observables["H"].update(mean=np.array([2.0, 1.5, 1.5]), var=np.array([0.0, 0.1, 0.1]),
                                count=np.array([5, 4, 2]))
    ens.diagnostics["nonfinite_paths"] = np.array([0, 0, 2])
    [row] = summary.summarize(ens, Kubo())
    assert row["nonfinite_paths"] == 2 and row["nonfinite_values"] == 3
    assert summary.nonfinite_value_lines(ens) == [
        "H was not finite on 1 more path(s) than had a non-finite state (the most, at t=1): left out of its mean "
        "and variance, counted in observables/H/nonfinite"]
    assert summary.note_lines(ens) == summary.nonfinite_value_lines(ens)
    header = rendered([row], 200).splitlines()[1:4]
    assert "paths" in header[2] and "values" in header[2] and header[1].count("non-finite") == 2


def test_unconverged_solves_under_on_fail_nan_typed_on_the_command_line_ended_their_paths():
    """``integrator.on_fail=nan`` on the command line is the float nan in the stored config: the rule nan all the same
    (the paths were ended), never "not a converged solution"."""
    ens = failed_ensemble()
    ens.attrs |= {"solver": "newton", "path_steps": 10,
                  "config": "integrator:\n  on_fail: .nan\n  max_iter: 1\n  tol: 1.0e-12\n"}
    ens.diagnostics |= {"newton_unconverged_steps": np.array([0, 5, 0]), "newton_stagnated_steps": np.zeros(3, int)}
    assert summary.unconverged_line(ens) == (
        "5 of 10 path-steps did not converge (newton, max_iter=1, tol=1e-12): those paths were ended and are counted "
        "non-finite; use a smaller plan.dt or a larger integrator.max_iter")


def test_relative_error_of_a_deterministic_start_at_zero_is_zero():
    assert summary.max_relative_error(np.array([0.0, 1.0]), np.array([0.0, 0.1])) == pytest.approx(0.1)
    assert math.isnan(summary.max_relative_error(np.array([1.0, np.nan]), np.array([0.1, np.nan])))


@pytest.fixture(scope="module")
def kubo_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    cfg = sgi_run.compose([f"output_root={root}", "progress=off", "plan.paths=400", "plan.T=10",
                           "plan.observables=[H,q,p]"])
    return cfg, sgi_run.run(cfg)


@pytest.mark.slow
def test_the_kubo_summary_holds_the_mean_against_the_methods_own_exact_mean(kubo_run):
    """z against the method's exact mean is Monte Carlo error only; the bias is the oracle's."""
    cfg, result = kubo_run
    setup = build(cfg)
    own = method_moments(setup.system, setup.integrator, setup.plan).mean_H[-1]
    h = result.summary[0]
    assert h["observable"] == "H" and h["method_reference"] == pytest.approx(own, rel=1e-12)
    assert h["method_bias"] == pytest.approx(own - Kubo().exact_mean_energy(np.array([10.0]))[0], rel=1e-12)
    assert abs(h["method_error_in_sem"]) < 4 and h["method_error_in_sem"] == pytest.approx((h["mean"] - own) / h["sem"])
    assert result.summary[1]["method_reference"] == ""      # no oracle for q


@pytest.mark.slow
def test_no_method_mean_where_the_oracle_does_not_hold(runs_root):
    result = sgi_run.run(sgi_run.compose(runs_root + ["system=van_der_pol", "integrator=heun", "plan.paths=20",
                                                      "plan.T=1"]))
    assert all(r["method_reference"] == "" for r in result.summary)


def test_rows_keep_the_plans_order_cached_or_not(kubo_run):
    cfg, result = kubo_run
    assert [r["observable"] for r in result.summary] == ["H", "q", "p"]
    again = sgi_run.run(cfg)
    assert again.cached and [r["observable"] for r in again.summary] == ["H", "q", "p"]


def test_summary_csv_holds_full_precision(kubo_run):
    """Every number reads back exactly, with Python's float() (no "np.float64(...)")."""
    _, result = kubo_run
    with open(result.run_dir / "summary.csv") as f:
        stored = list(csv.DictReader(f))
    assert len(stored) == len(result.summary)
    for row, written in zip(result.summary, stored):
        for key, value in row.items():
            if isinstance(value, float):
                assert float(written[key]) == value or (math.isnan(value) and written[key] == "nan"), key


def rendered(rows, width):
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(summary.render(rows, "kubo / midpoint", width=width))
    return console.export_text()


@pytest.mark.parametrize("width", [40, 60, 80, 100, 200])
def test_no_number_is_ever_cut(kubo_run, width):
    _, result = kubo_run
    rows = result.summary + [{**result.summary[0], "observable": "kinetic_temperature", "nonfinite_paths": 3,
                              "equilibrium": 0.979101351756422, "equilibrium_error_in_sem": 186.123}]
    text = rendered(rows, width)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    for row in rows:
        assert row["observable"] in text
        for key, shown in (("mean", "{:.6g}"), ("sem", "{:.2g}"), ("max_rel_mc_error", "{:.3g}"),
                           ("reference", "{:.6g}"), ("method_reference", "{:.6g}"),
                           ("method_error_in_sem", "{:+.2f}"), ("method_bias", "{:.3g}"),
                           ("equilibrium", "{:.6g}"), ("equilibrium_error_in_sem", "{:+.2f}")):
            if row[key] != "":
                assert shown.format(row[key]) in text, (key, width)


def test_a_wide_terminal_gets_one_table_a_log_two_a_narrow_one_a_block_per_observable(kubo_run):
    _, result = kubo_run
    wide, log, narrow = (rendered(result.summary, width) for width in (200, 80, 40))
    assert wide.count("± s.e.") == 1 and wide.count("obs ") == 1           # one table
    assert log.count("± s.e.") == 1 and log.count("obs ") == 2             # the comparisons apart
    assert "method's" in log and log.count("\n  H ") == 2 and log.count("\n  q ") == 1  # only H has one
    assert narrow.count("mean ± s.e.") == 3


def test_the_caption_says_what_both_numbers_mean(kubo_run):
    text = " ".join(rendered(kubo_run[1].summary, 200).split())
    assert "z vs method: how many s.e. the mean lies from the method's own exact mean" in text
    assert "bias vs SDE: the method's exact mean minus the SDE's exact mean" in text


@pytest.fixture(scope="module")
def unconverged_run(tmp_path_factory):
    """Van der Pol's midpoint rule with one Newton iteration per solve, the iterate kept: every step unconverged."""
    root = tmp_path_factory.mktemp("runs")
    return sgi_run.run(sgi_run.compose([f"output_root={root}", "progress=off", "system=van_der_pol",
                                        "integrator=midpoint", "integrator.on_fail=count", "integrator.max_iter=1",
                                        "plan.paths=20", "plan.T=1", "plan.seed=3"]))


@pytest.mark.slow
def test_summary_csv_carries_the_plan_and_the_unconverged_steps(unconverged_run):
    """dt, T, paths and seed join a sweep's summaries; the solver's counts are the run's totals."""
    with open(unconverged_run.run_dir / "summary.csv") as f:
        [row] = list(csv.DictReader(f))
    assert {k: row[k] for k in ("dt", "T", "paths", "seed", "unconverged_steps", "stagnated_steps", "path_steps")} == {
        "dt": "0.1", "T": "1.0", "paths": "20", "seed": "3", "unconverged_steps": "200", "stagnated_steps": "0",
        "path_steps": "200"}
    md = (unconverged_run.run_dir / "summary.md").read_text()
    assert "unconverged_steps" in md and "200 of 200 path-steps did not converge" in " ".join(md.split())


def test_an_explicit_method_has_no_solver_counts(runs_root):
    result = sgi_run.run(sgi_run.compose(runs_root + ["system=van_der_pol", "integrator=heun", "plan.paths=20",
                                                      "plan.T=1"]))
    assert all(r[k] == "" for r in result.summary for k in ("unconverged_steps", "stagnated_steps", "path_steps"))
    assert result.summary[0]["paths"] == 20 and summary.solver_lines(result.ensemble) == []


def test_unconverged_steps_are_said_with_the_solver_and_what_to_change(unconverged_run):
    [line] = summary.solver_lines(unconverged_run.ensemble)
    assert line == ("200 of 200 path-steps did not converge (newton, max_iter=1, tol=1e-12): the results are not a "
                    "converged solution; use a smaller plan.dt or a larger integrator.max_iter")
    assert "unconverged" in rendered(unconverged_run.summary, 200)


def test_stagnated_steps_are_reported_as_the_round_off_floor_not_as_failures():
    ens = failed_ensemble()
    ens.diagnostics |= {f"fixed_point_{k}": np.array([0, n, n]) for k, n in
                        (("iterations", 30), ("max_iterations", 9), ("unconverged_steps", 0), ("stagnated_steps", 4))}
    ens.attrs |= {"solver": "fixed_point", "path_steps": 10,
                  "config": "integrator: {solver: fixed_point, max_iter: 9, tol: 1.0e-15, on_fail: nan}\n"}
    [line] = summary.solver_lines(ens)
    assert line.startswith("8 of 10 path-steps stopped at the fixed-point iteration's round-off floor")
    assert "not failed" in line and "did not converge" not in line


# --- what a run preserves: the drift of the invariants its system declares ------------------------------------
HEAVY_TOP = ["system=heavy_top", "plan.paths=30", "plan.T=2", "plan.dt=0.1", "plan.output_dt=0.5"]


@pytest.fixture(scope="module")
def heavy_top_runs(tmp_path_factory):
    """The heavy top by TMK (keeps the Casimirs) and by the trapezoidal rule (does not), observing H alone."""
    root = tmp_path_factory.mktemp("runs")
    return {method: sgi_run.run(sgi_run.compose([f"output_root={root}", "progress=off", f"integrator={method}"]
                                                + HEAVY_TOP)) for method in ("tmk", "lp_trapezoidal")}


def test_the_casimirs_drift_is_in_every_table_at_round_off_for_tmk_only(heavy_top_runs):
    for method, bound in (("tmk", lambda d: 0 < d < 1e-13), ("lp_trapezoidal", lambda d: d > 1e-6)):
        run = heavy_top_runs[method]
        assert [r["observable"] for r in run.summary] == ["H", "C1", "C2"]     # H observed, the Casimirs not
        h, *casimirs = run.summary
        assert h[summary.DRIFT_COLUMN] == "" and h["mean"] != ""
        for row in casimirs:
            drift = row[summary.DRIFT_COLUMN]
            assert drift == run.ensemble.invariant_drift[row["observable"]][-1] and bound(drift), (method, row)
            assert row["mean"] == "" and row["nonfinite_paths"] == 0 and row["paths"] == 30
        with open(run.run_dir / "summary.csv") as f:
            stored = list(csv.DictReader(f))
        assert list(stored[0]) == summary.COLUMNS + [summary.DRIFT_COLUMN]
        assert [float(r[summary.DRIFT_COLUMN]) for r in stored[1:]] == [r[summary.DRIFT_COLUMN] for r in casimirs]
        md = (run.run_dir / "summary.md").read_text()
        assert f"| {summary.DRIFT_COLUMN} |" in md and f"| {casimirs[0][summary.DRIFT_COLUMN]:.6g} |" in md
        text = rendered(run.summary, 200)
        assert "drift" in text and f"{casimirs[1][summary.DRIFT_COLUMN]:.3g}" in text
        assert "largest drift: of each invariant the system declares" in " ".join(text.split())


def test_an_observed_invariant_has_its_drift_in_its_own_row(runs_root):
    run = sgi_run.run(sgi_run.compose(runs_root + HEAVY_TOP + ["integrator=tmk", "plan.observables=[C2,H]"]))
    assert [r["observable"] for r in run.summary] == ["C2", "H", "C1"]
    c2 = run.summary[0]
    assert c2["mean"] == pytest.approx(1.0) and 0 < c2[summary.DRIFT_COLUMN] < 1e-13


def test_a_cached_run_shows_the_drift_too(heavy_top_runs):
    run = heavy_top_runs["lp_trapezoidal"]
    again = sgi_run.run(run.ensemble.config)
    assert again.cached and not again.stale and again.summary == run.summary


@pytest.mark.parametrize("width", [40, 80, 200])
def test_a_drift_row_is_never_cut_and_shows_dashes_for_what_it_lacks(heavy_top_runs, width):
    text = rendered(heavy_top_runs["tmk"].summary, width)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    assert "±  " not in text and " ± -" not in text        # no empty mean and s.e.
    assert all(f"{r[summary.DRIFT_COLUMN]:.3g}" in text for r in heavy_top_runs["tmk"].summary[1:])


def test_a_system_without_invariants_writes_and_shows_nothing_new(kubo_run):
    _, result = kubo_run
    assert result.setup.system.invariants() == () and result.ensemble.invariant_drift == {}
    assert all(summary.DRIFT_COLUMN not in r for r in result.summary)
    with open(result.run_dir / "summary.csv") as f:
        assert next(csv.reader(f)) == summary.COLUMNS
    assert "drift" not in (result.run_dir / "summary.md").read_text() and "drift" not in rendered(result.summary, 200)
    with h5py.File(result.path, "r") as f:
        assert "invariant_drift" not in f


@dataclasses.dataclass(frozen=True)
class AdditiveHarmonic(CanonicalSystem):
    """A harmonic oscillator with additive noise, whose exact mean energy H(q0, p0) + sigma^2 t / 2 is written in
    Python floats, as a contributor would: a start of 1e200 overflows it (no check() refuses it)."""
    sigma: float = 0.1
    q0: float = 1.0

    def hamiltonian(self, q, p):
        return 0.5 * jnp.sum(p**2 + q**2)

    def noise_hamiltonians(self, q, p):
        return jnp.array([-self.sigma * jnp.sum(q)])

    def initial_state(self, key):
        return jnp.array([self.q0, 0.0])

    def reference_mean(self, observable):
        h0 = 0.5 * self.q0**2
        return (lambda t: h0 + 0.5 * self.sigma**2 * t) if observable == "H" else None


@pytest.fixture
def registered_harmonic():
    before = dict(systems.SYSTEMS)
    sgi_run.register_system("additive_harmonic", AdditiveHarmonic)
    yield
    systems.SYSTEMS.clear()
    systems.SYSTEMS.update(before)


def test_an_exact_mean_that_overflows_is_refused_in_one_line_before_the_run(registered_harmonic, tmp_path):
    """The summary compares every mean with the system's exact one: where that overflows, the run is refused
    (one line naming the system, its method and the time) before it computes, not a traceback after."""
    plan = sgi_run.plan(paths=10, T=1)
    with pytest.raises(sgi_run.ConfigError) as err:
        sgi_run.simulate(AdditiveHarmonic(q0=1e200), "midpoint", plan, output_root=tmp_path)
    assert str(err.value) == ("system=AdditiveHarmonic(sigma=0.1, q0=1e+200) is not allowed: parameters whose exact "
                              "mean of H (AdditiveHarmonic.reference_mean) is a finite number (it raises "
                              "OverflowError: (34, 'Numerical result out of range'))")
    assert not list(tmp_path.rglob("*.h5"))


def test_reference_values_that_are_not_finite_name_the_time_or_the_limit():
    class Infinite(Kubo):
        def reference_mean(self, observable):
            return lambda t: np.where(t > 0.5, np.inf, 1.0)

        def ergodic_mean(self, observable):
            return math.nan

    with pytest.raises(sgi_run.ConfigError, match=r"exact mean of H \(Infinite.reference_mean\) is a finite number "
                                                   r"\(it is inf at t=1\)$"):
        summary.check_reference_values(Infinite(), ["H"], [0.0, 0.5, 1.0])
    with pytest.raises(sgi_run.ConfigError, match=r"ergodic limit of H \(Infinite.ergodic_mean\) is a finite number "
                                                   r"\(it is nan\)$"):
        summary.check_reference_values(Infinite(), ["H"], [0.0, 0.5])
    summary.check_reference_values(Kubo(), ["H", "q"], np.linspace(0, 10, 11))    # finite: nothing refused
