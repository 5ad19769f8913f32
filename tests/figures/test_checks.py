"""Check kinds on synthetic curves: each one can PASS and can FAIL, and reports its MC error."""
import math

import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.figures.checks import evaluate, validate
from sgi_run.figures.results import FAIL, PASS, SKIP, Series

T = np.arange(0.0, 101.0, 10.0)
EXACT = 2 * np.exp(-0.01 * T)


def series(mean, sem=1e-3, exact=EXACT):
    return Series(T, np.asarray(mean, float), np.full_like(T, sem) if np.isscalar(sem) else sem, exact)


def check(kind, s, **params):
    spec = {"id": "c", "kind": kind, **params}
    validate(spec, "test")
    return evaluate(spec, "run", s)


def test_ratio_at_pass_and_fail():
    ok = check("ratio_at", series(EXACT * 1.1), min=0.95, max=1.15, at=100)
    assert ok.verdict == PASS and ok.value == pytest.approx(1.1) and ok.t == 100
    assert ok.se == pytest.approx(1e-3 / EXACT[-1])
    assert ok.margin_se == pytest.approx(0.05 / ok.se)
    low = check("ratio_at", series(EXACT * 1.1), min=5)
    assert low.verdict == FAIL and low.margin_se < 0


def test_ratio_at_a_time_the_run_does_not_reach_is_skipped():
    result = check("ratio_at", series(EXACT), min=0.9, at=5000)
    assert result.verdict == SKIP and "5000" in result.detail


def test_relative_error_at():
    assert check("relative_error_at", series(EXACT * 1.2), max=0.25).verdict == PASS
    assert check("relative_error_at", series(EXACT * 0.7), max=0.25).verdict == FAIL


def test_max_abs_error_reports_the_worst_time_and_its_se():
    mean = EXACT.copy()
    mean[3] += 0.05
    sem = np.full_like(T, 1e-3)
    sem[3] = 2e-3
    result = check("max_abs_error", series(mean, sem), max=0.035)
    assert result.verdict == FAIL and result.t == 30 and result.value == pytest.approx(0.05)
    assert result.se == pytest.approx(2e-3)
    assert check("max_abs_error", series(EXACT + 0.01), max=0.035).verdict == PASS


def test_within_factor_both_directions():
    assert check("within_factor", series(EXACT * 1.4), factor=1.5).verdict == PASS
    assert check("within_factor", series(EXACT * 1.6), factor=1.5).verdict == FAIL
    below = check("within_factor", series(EXACT / 1.6), factor=1.5)
    assert below.verdict == FAIL and below.value == pytest.approx(1.6)


def test_monotone_decay_tolerates_noise_but_not_a_real_rise():
    noisy = EXACT.copy()
    noisy[5] = noisy[4] + 1e-3          # a rise of 0.7 SE of the difference: noise
    assert check("monotone_decay", series(noisy), tolerance_se=2).verdict == PASS
    rising = EXACT.copy()
    rising[5] = rising[4] + 0.01        # a rise of 7 SE
    result = check("monotone_decay", series(rising), tolerance_se=2)
    assert result.verdict == FAIL and result.t == 50 and result.value == pytest.approx(0.01 / math.hypot(1e-3, 1e-3))


def test_agrees_with_exact_within_k_se():
    rng = np.random.default_rng(0)
    sem = np.full_like(T, 1e-3)
    sem[0] = 0.0                        # deterministic initial state: must agree to round-off
    close = EXACT + rng.uniform(-2, 2, T.size) * sem
    assert check("agrees_with_exact", series(close, sem), k=4).verdict == PASS
    biased = EXACT + 6 * sem
    biased[0] = EXACT[0]
    assert check("agrees_with_exact", series(biased, sem), k=4).verdict == FAIL
    off_at_zero = close.copy()
    off_at_zero[0] += 1e-6
    assert check("agrees_with_exact", series(off_at_zero, sem), k=4).verdict == FAIL


def test_a_mean_over_no_finite_paths_fails():
    mean = EXACT.copy()
    mean[-1] = np.nan
    assert check("ratio_at", series(mean), min=0.5, max=2).verdict == FAIL
    assert check("max_abs_error", series(mean), max=1).verdict == FAIL


def test_result_line_names_verdict_value_se_and_band():
    line = check("ratio_at", series(EXACT * 1.1), min=0.95, max=1.15).line()
    assert line.startswith("PASS  c [run]: 1.1 ± ") and "band [0.95, 1.15]" in line


@pytest.mark.parametrize("spec, key", [
    ({"id": "c", "kind": "nope"}, "test.kind"),
    ({"id": "c", "kind": "ratio_at", "factor": 2}, "test.factor"),
    ({"id": "c", "kind": "within_factor"}, "test.factor"),
])
def test_bad_check_specs_are_refused(spec, key):
    with pytest.raises(ConfigError, match=key):
        validate(spec, "test")


def test_a_kind_that_needs_an_exact_curve_refuses_a_system_without_one():
    with pytest.raises(ConfigError):
        check("ratio_at", series(EXACT, exact=None), min=1)


def with_oracle(mean, sem, oracle_mean, oracle_sem):
    return Series(T, np.asarray(mean, float), np.asarray(sem, float), EXACT, np.asarray(oracle_mean, float),
                  np.asarray(oracle_sem, float))


def test_agrees_with_oracle():
    sigma = np.r_[0.0, np.full(len(T) - 1, 1e-3)]
    ok = check("agrees_with_oracle", with_oracle(EXACT + 3e-3 * (T > 0), sigma, EXACT, sigma), k=4)
    assert ok.verdict == PASS and ok.value == pytest.approx(3.0)
    off = check("agrees_with_oracle", with_oracle(EXACT + 5e-3 * (T > 0), sigma, EXACT, sigma), k=4)
    assert off.verdict == FAIL and off.value == pytest.approx(5.0)
    start = check("agrees_with_oracle", with_oracle(EXACT + 1e-6, sigma, EXACT, sigma), k=4)
    assert start.verdict == FAIL and start.t == 0   # zero sigma at t = 0: round-off agreement only


def test_mc_error_matches_oracle():
    sigma = np.full(len(T), 1e-3)
    assert check("mc_error_matches_oracle", with_oracle(EXACT, 1.1 * sigma, EXACT, sigma), rtol=0.2).verdict == PASS
    fail = check("mc_error_matches_oracle", with_oracle(EXACT, 1.5 * sigma, EXACT, sigma), rtol=0.2)
    assert fail.verdict == FAIL and fail.value == pytest.approx(1.5)


def test_oracle_kinds_need_an_oracle():
    with pytest.raises(ConfigError, match="oracle"):
        check("agrees_with_oracle", series(EXACT))


def test_identical_to_another_run():
    a = series(EXACT * 1.1)
    same = evaluate({"id": "c", "kind": "identical_to", "other": "b", "rtol": 1e-12}, "a", a,
                    {"b": series(EXACT * 1.1 * (1 + 1e-15))})
    assert same.verdict == PASS
    differ = evaluate({"id": "c", "kind": "identical_to", "other": "b", "rtol": 1e-12}, "a", a,
                      {"b": series(EXACT * 1.1 * (1 + 1e-9))})
    assert differ.verdict == FAIL and differ.value == pytest.approx(1e-9, rel=1e-3)


def test_max_abs_error_can_demand_a_large_error():
    assert check("max_abs_error", series(EXACT + 0.5), min=0.4).verdict == PASS
    assert check("max_abs_error", series(EXACT + 0.1), min=0.4).verdict == FAIL


# --- kinds that look at more of a run (RunData): windows, other observables, snapshots --------------
from sgi_run.figures.results import RunData  # noqa: E402
from sgi_run.systems import VlasovLenardBernstein  # noqa: E402

LB = VlasovLenardBernstein()


def run_data(curves: dict, snapshot=None, paths=1000):
    return RunData({k: series(v, exact=None) if not isinstance(v, Series) else v for k, v in curves.items()},
                   "H", LB, (lambda t: snapshot) if snapshot is not None else (lambda t: None), paths)


def data_check(kind, data, **params):
    spec = {"id": "c", "kind": kind, **params}
    validate(spec, "test")
    return evaluate(spec, "run", data)


def test_window_mean_against_a_system_reference_value():
    h_erg = LB.ergodic_energy()
    curve = np.where(T >= 50, h_erg + 0.0115, 3.0)
    data = run_data({"H": curve})
    result = data_check("window_mean", data, start=50, end=100, reference="ergodic_energy", min=-0.01, max=0.01)
    assert result.verdict == FAIL and result.value == pytest.approx(0.0115) and result.se == pytest.approx(1e-3)
    # 2 SE of tolerance accepts a value 1.5 SE outside the band: reduced path counts.
    assert data_check("window_mean", data, start=50, end=100, reference="ergodic_energy", min=-0.01, max=0.01,
                      tolerance_se=2).verdict == PASS
    assert data_check("window_mean", data, start=50, end=100, reference="ergodic_energy", absolute=True,
                      min=0.1).verdict == FAIL
    assert data_check("window_mean", data, start=50, end=500, min=0).verdict == SKIP


def test_reference_names_a_system_value_or_is_refused():
    data = run_data({"H": EXACT, "sin4pix": np.full_like(T, -0.1185)})
    ok = data_check("agrees_at", data, observable="sin4pix", reference="ergodic_mean:sin4pix", k=4)
    assert ok.verdict == PASS and ok.value < 1
    with pytest.raises(ConfigError, match="checks.reference"):
        data_check("agrees_at", data, reference="no_such_value")
    with pytest.raises(ConfigError, match="checks.observable"):
        data_check("value_at", data, observable="v", min=0)


def test_max_abs_value_relative_to_the_initial_energy():
    drift = 0.03 * T / 100
    data = run_data({"H": np.full_like(T, 0.2), "H_change": drift})
    # H0 = 0.2 < floor 0.5: relative to 0.5, the largest |drift| 0.03 is 0.06
    result = data_check("max_abs_value", data, observable="H_change", relative_to_initial="H", floor=0.5, max=0.05)
    assert result.verdict == FAIL and result.value == pytest.approx(0.06) and result.t == 100
    assert data_check("max_abs_value", data, observable="H_change", end=50, max=0.02).verdict == PASS
    grows = data_check("value_at", data, observable="H_change", relative_to_initial="H", floor=0.5, min=0.05)
    assert grows.verdict == PASS and grows.value == pytest.approx(0.06)


def test_abs_ratio_and_identical_at_one_time():
    a, b = run_data({"H": -0.03 * T / 100}), run_data({"H": 0.005 * T / 100})
    r = evaluate({"id": "c", "kind": "abs_ratio_at", "other": "b", "min": 3, "at": 100}, "a", a, {"b": b})
    assert r.verdict == PASS and r.value == pytest.approx(6.0)
    same_start = evaluate({"id": "c", "kind": "identical_to", "other": "b", "at": 0}, "a", a, {"b": b})
    assert same_start.verdict == PASS
    assert evaluate({"id": "c", "kind": "identical_to", "other": "b"}, "a", a, {"b": b}).verdict == FAIL


def test_max_relative_se_is_rescaled_to_the_papers_path_count():
    data = run_data({"H": series(np.full_like(T, 2.0), sem=2e-2)}, paths=10000)   # SE/E = 0.01
    result = data_check("max_relative_se", data, max=1.5e-3, reference_paths=1000000)
    assert result.verdict == PASS and result.value == pytest.approx(1e-3)
    assert data_check("max_relative_se", data, max=5e-3).verdict == FAIL


def test_snapshot_variance_and_its_standard_error():
    rng = np.random.default_rng(1)
    v = rng.normal(0.0, 1.0, 40000)
    data = run_data({"H": EXACT}, snapshot={"x": rng.uniform(size=v.size), "v": v})
    ok = data_check("snapshot_variance", data, coordinate="v", reference="ergodic_mean:v_sq", min=-0.04, max=0.04)
    assert ok.verdict == PASS and ok.se == pytest.approx(np.sqrt(2 / v.size), rel=0.05)
    wide = run_data({"H": EXACT}, snapshot={"x": v, "v": 1.1 * v})
    assert data_check("snapshot_variance", wide, coordinate="v", reference=1.0, min=-0.04, max=0.04).verdict == FAIL
    assert data_check("snapshot_variance", run_data({"H": EXACT}), coordinate="v", max=1).verdict == SKIP


def test_density_l1_tells_the_gibbs_marginal_from_the_initial_one():
    """Samples of the Gibbs x-marginal (rejection from uniform) pass; samples of the initial
    positions (1 + eps cos 2 pi x) fail; positions are wrapped mod 1 first."""
    rng = np.random.default_rng(2)
    u = rng.uniform(size=400000)
    peak = LB.gibbs_density_x(np.linspace(0, 1, 2001)).max()
    gibbs = u[rng.uniform(size=u.size) * peak < LB.gibbs_density_x(u)][:100000] + rng.integers(-3, 3, 100000)
    spec = dict(coordinate="x", density="gibbs_density_x", bins=50, range=[0, 1], period=1, base=0.0, k=3)
    ok = data_check("density_l1", run_data({"H": EXACT}, snapshot={"x": gibbs, "v": gibbs}), **spec)
    assert ok.verdict == PASS and ok.value < 0.02
    initial = u[rng.uniform(size=u.size) * 1.25 < LB.initial_density_x(u)][:100000]
    assert data_check("density_l1", run_data({"H": EXACT}, snapshot={"x": initial, "v": initial}), **spec).verdict == FAIL


def test_ks_test_of_the_initial_positions():
    rng = np.random.default_rng(3)
    u = rng.uniform(size=200000)
    initial = u[rng.uniform(size=u.size) * 1.25 < LB.initial_density_x(u)]
    spec = dict(coordinate="x", cdf="initial_cdf_x", min_p=1e-3)
    assert data_check("ks_test", run_data({"H": EXACT}, snapshot={"x": initial, "v": u}), **spec).verdict == PASS
    assert data_check("ks_test", run_data({"H": EXACT}, snapshot={"x": u, "v": u}), **spec).verdict == FAIL


def test_blow_up_kinds_read_the_nonfinite_counts():
    import dataclasses
    stable = run_data({"H": np.full_like(T, 1.0)})
    stable = dataclasses.replace(stable, nonfinite=np.zeros(T.size, int))
    blows = dataclasses.replace(run_data({"H": np.r_[1.0, 1.0, 5e6, np.full(T.size - 3, np.nan)]}),
                                nonfinite=np.r_[0, 0, 0, 10, np.full(T.size - 4, 1000)])
    assert data_check("all_finite", stable).verdict == PASS
    assert data_check("all_finite", blows).verdict == FAIL
    first = data_check("diverged_by", blows, at=25)
    assert first.verdict == PASS and first.value == 20          # |E| > 1e6 at t = 20
    assert data_check("diverged_by", stable, at=25).verdict == FAIL   # never: infinity
    gone = data_check("nonfinite_fraction_at", blows, at=50, min=0.99)
    assert gone.verdict == PASS and gone.value == 1.0


def test_window_difference_ranks_errors_and_orders_plateaus():
    ref = LB.ergodic_energy()
    close, far = run_data({"H": np.full_like(T, ref + 0.01)}), run_data({"H": np.full_like(T, ref - 0.05)})
    diverged = run_data({"H": np.full_like(T, np.nan)})
    spec = {"id": "c", "kind": "window_difference", "other": "o", "start": 50, "end": 100,
            "reference": "ergodic_energy", "min": 0}
    ranked = evaluate(spec, "a", close, {"o": far})
    assert ranked.verdict == PASS and ranked.value == pytest.approx(0.04)
    assert evaluate(spec, "a", far, {"o": close}).verdict == FAIL
    assert evaluate(spec, "a", far, {"o": diverged}).verdict == PASS     # diverged: infinitely far
    order = {"id": "c", "kind": "window_difference", "other": "o", "start": 50, "end": 100, "min": 0}
    assert evaluate(order, "a", close, {"o": far}).value == pytest.approx(0.06)


def test_change_between_sees_a_curve_still_rising():
    rising = check("change_between", series(T * 2.0), start=50, end=100, min=0)
    assert rising.verdict == PASS and rising.value == pytest.approx(100.0) and rising.t == 100
    assert rising.se == pytest.approx(math.hypot(1e-3, 1e-3))
    assert check("change_between", series(EXACT), start=50, end=100, min=0).verdict == FAIL
    assert check("change_between", series(EXACT), start=50, end=500, min=0).verdict == SKIP


def test_settles_to_window_measures_the_worst_excursion_after_start():
    curve = np.full_like(T, 1.0)
    curve[:2] = -0.5            # the transient before t = 20 does not count
    curve[5] = 1.08             # an excursion at t = 50 does
    settled = check("settles_to_window", series(curve), start=20, plateau=[60, 100], max=0.05)
    assert settled.verdict == FAIL and settled.t == 50 and settled.value == pytest.approx(0.08)
    curve[5] = 1.03
    assert check("settles_to_window", series(curve), start=20, plateau=[60, 100], max=0.05).verdict == PASS
    assert check("settles_to_window", series(curve), start=20, plateau=[60, 200], max=0.05).verdict == SKIP


def test_constraint_residual_on_the_sphere():
    from sgi_run.systems.langevin import SphericalPendulum
    q = np.array([[0.0, 0.6], [0.0, 0.0], [-1.0, 0.8]])
    p = np.array([[1.0, -0.8], [0.5, 0.0], [0.0, 0.6]])
    snap = {**{f"q{i + 1}": q[i] for i in range(3)}, **{f"p{i + 1}": p[i] for i in range(3)}}
    data = RunData({"H": series(EXACT, exact=None)}, "H", SphericalPendulum(), lambda t: snap, 2)
    assert data_check("constraint_residual", data, max=1e-12).verdict == PASS
    snap["q1"] = q[0] * (1 + 1e-9)
    assert data_check("constraint_residual", data, max=1e-12).verdict == FAIL


# --- per-path time averages (plan.time_average) --------------------------------------------------
def _with_path_averages(level, per_path, window=(50.0, 100.0)):
    return Series(T, np.full_like(T, level), np.full_like(T, 0.05), None, path_average=np.asarray(per_path, float),
                  average_window=window)


def test_window_mean_uses_the_exact_se_of_per_path_averages():
    rng = np.random.default_rng(0)
    per_path = 1.0 + 0.1 * rng.standard_normal(400)
    exact_se = per_path.std(ddof=1) / 20
    result = data_check("window_mean", run_data({"H": _with_path_averages(1.0, per_path)}), start=50, end=100)
    assert result.value == pytest.approx(per_path.mean()) and result.se == pytest.approx(exact_se)
    # Another window: the per-path averages do not apply, and the SE is the single-time bound again.
    other = data_check("window_mean", run_data({"H": _with_path_averages(1.0, per_path)}), start=60, end=100)
    assert other.se == pytest.approx(0.05)


def test_window_difference_pairs_runs_that_share_random_numbers():
    """Two methods on the same noise, both above the reference: each plateau spreads by 0.1 across
    paths, their difference by 0.014. The paired SE sees that; the independent combination would not."""
    rng = np.random.default_rng(1)
    common = 0.1 * rng.standard_normal(400)
    a = 1.05 + common + 0.01 * rng.standard_normal(400)
    c = 1.08 + common + 0.01 * rng.standard_normal(400)
    spec = {"id": "c", "kind": "window_difference", "other": "o", "start": 50, "end": 100, "reference": 1.0, "min": 0}
    runs = {"o": run_data({"H": _with_path_averages(c.mean(), c)})}
    ranked = evaluate(spec, "a", run_data({"H": _with_path_averages(a.mean(), a)}), runs)
    assert ranked.verdict == PASS and "paired SE" in ranked.detail
    assert ranked.value == pytest.approx(abs(c.mean() - 1) - abs(a.mean() - 1))
    assert ranked.se == pytest.approx((c - a).std(ddof=1) / 20, rel=0.2)   # same signs: the plain difference
    assert ranked.se < 0.2 * math.hypot(a.std(ddof=1), c.std(ddof=1)) / 20   # 9x sharper
    order = evaluate({**spec, "reference": None}, "a", run_data({"H": _with_path_averages(a.mean(), a)}), runs)
    assert order.value == pytest.approx(a.mean() - c.mean())
    assert order.se == pytest.approx((c - a).std(ddof=1) / 20)            # P - Q, paired
    lonely = evaluate(spec, "a", run_data({"H": _with_path_averages(a.mean(), a[:300])}), runs)
    assert "paired" not in lonely.detail        # different path counts: no pairs


# --- convergence studies (plan=convergence) ---------------------------------------------------------
DTS = np.array([0.5, 0.25, 0.125, 0.0625])


def study(error, se=1e-4, order=2.0, ci=(1.9, 2.1), note="", kind="weak"):
    from sgi_run.engine.convergence import ConvergenceResult
    error = np.asarray(error, float)
    se = np.full_like(error, se) if np.isscalar(se) else np.asarray(se, float)
    return ConvergenceResult(kind, "exact", "independent", DTS, error, se, np.abs(error) > 2 * se, order, ci,
                             np.zeros(len(DTS), int), 1000, note)


WEAK = [-1.2e-2, -2.8e-3, -6.5e-4, -1.6e-4]     # SRKw2 on Kubo, spec 000 section 2.10


def test_fitted_order_pass_and_fail_with_its_se_from_the_bootstrap_interval():
    ok = check("fitted_order", study(WEAK, order=2.1, ci=(1.9, 2.3)), min=1.6, max=2.6)
    assert ok.verdict == PASS and ok.value == pytest.approx(2.1) and ok.t is None
    assert ok.se == pytest.approx(0.4 / (2 * 1.959964), rel=1e-6)
    assert ok.margin_se == pytest.approx(0.5 / ok.se)
    assert "95% CI [1.900, 2.300] (path bootstrap)" in ok.detail and "dt = 0.5, 0.25, 0.125" in ok.detail
    low = check("fitted_order", study(WEAK, order=1.02, ci=(0.98, 1.06)), min=1.6, max=2.6)
    assert low.verdict == FAIL and low.margin_se < -10
    assert check("fitted_order", study(WEAK, order=1.3, ci=(1.0, 1.6)), min=1.6, tolerance_se=2).verdict == PASS


def test_fitted_order_without_a_fitted_order_is_skipped_with_the_studys_reason():
    note = "errors not resolvable above Monte Carlo noise (|error| <= 2 SE at dt = 0.125, 0.0625): no order fitted"
    result = check("fitted_order", study(WEAK, se=1e-2, order=math.nan, ci=(math.nan, math.nan), note=note), min=1.6)
    assert result.verdict == SKIP and result.detail == note and result.line().startswith("SKIP  c [run]: errors not")
    no_ci = check("fitted_order", study(WEAK, order=2.0, ci=(math.nan, math.nan)), min=1.6, max=2.6)
    assert no_ci.verdict == PASS and no_ci.se is None and "no bootstrap interval" in no_ci.detail


def test_fitted_order_of_the_sup_in_time_errors():
    """norm: sup fits a strong study's sup-in-time RMS errors (paper 002's e_sup): slope 1/2 here, while the
    terminal errors have slope 1; a weak study has none (SKIP); an unknown norm is refused at load."""
    import dataclasses
    terminal = 1e-2 * DTS / DTS[0]
    strong = dataclasses.replace(study(terminal, se=1e-5, order=1.0, kind="strong"),
                                 sup_error=0.1 * np.sqrt(DTS / DTS[0]), sup_se=np.full(4, 1e-4))
    sup = check("fitted_order", strong, min=0.4, max=0.6, norm="sup")
    assert sup.verdict == PASS and sup.value == pytest.approx(0.5) and "sup-in-time" in sup.detail
    assert check("fitted_order", strong, min=0.4, max=0.6).verdict == FAIL
    assert check("fitted_order", study(WEAK), min=0.4, norm="sup").verdict == SKIP
    with pytest.raises(ConfigError, match=r"^checks\[0\].norm='max' is not allowed: one of \['sup', 'terminal'\]"):
        validate({"id": "c", "kind": "fitted_order", "norm": "max"}, "checks[0]")


def test_error_at_one_step_size_with_its_se():
    ok = check("error_at", study(WEAK, se=[3e-4] * 4), dt=0.25, min=-3.8e-3, max=-1.8e-3)
    assert ok.verdict == PASS and ok.value == pytest.approx(-2.8e-3) and ok.se == pytest.approx(3e-4)
    assert ok.margin_se == pytest.approx(1e-3 / 3e-4) and "at dt=0.25; |error| = 9.3 SE" in ok.detail
    assert check("error_at", study(WEAK), dt=0.25, min=-2.775e-3, max=-2.765e-3).verdict == FAIL
    assert check("error_at", study(WEAK), dt=0.25, min=-2.775e-3, max=-2.765e-3, tolerance_se=0.5).verdict == PASS
    absolute = check("error_at", study(WEAK), dt=0.0625, max=2e-4, absolute=True)
    assert absolute.verdict == PASS and absolute.value == pytest.approx(1.6e-4) and "not resolvable" in absolute.detail


def test_error_at_a_step_size_the_study_has_not_is_skipped():
    result = check("error_at", study(WEAK), dt=0.0078125, min=0, max=1)
    assert result.verdict == SKIP
    assert result.detail == "dt=0.0078125 is not a step size of this study (dts: 0.5, 0.25, 0.125, 0.0625)"


def test_errors_decrease_tolerates_noise_but_not_a_real_rise():
    strong = [4.0e-2, 1.8e-2, 8.5e-3, 4.1e-3]
    assert check("errors_decrease", study(strong, kind="strong"), k=2).verdict == PASS
    noisy = [1.2e-2, 2.8e-3, 6.5e-4, 8.0e-4]     # a rise of 1.1 SE at the unresolvable fine end
    assert check("errors_decrease", study(noisy), k=2).verdict == PASS
    rising = check("errors_decrease", study([1.2e-2, 2.8e-3, 3.5e-3, 1e-4]), k=2)
    assert rising.verdict == FAIL and rising.value == pytest.approx(7e-4 / math.hypot(1e-4, 1e-4))
    assert "|error|(dt=0.125) - |error|(dt=0.25)" in rising.detail


def test_study_kinds_judge_studies_and_the_others_mean_curves():
    from sgi_run.figures.results import StudyData
    spec = {"id": "c", "kind": "fitted_order", "min": 1.6}
    assert evaluate(spec, "srkw2", StudyData(study(WEAK), "H", 2.0)).verdict == PASS
    with pytest.raises(ConfigError, match=r"^checks.kind='fitted_order' is not allowed: a check kind for an ensemble run "
                                          r"\(run mid is not a convergence study\): \['abs_ratio_at'"):
        evaluate(spec, "mid", series(EXACT))
    with pytest.raises(ConfigError, match=r"a check kind for a convergence study \(run srkw2 is one: plan=convergence\): "
                                          r"\['error_at', 'errors_decrease', 'fitted_order', 'resolved_levels'\]"):
        evaluate({"id": "c", "kind": "ratio_at", "min": 1}, "srkw2", StudyData(study(WEAK)))


@pytest.mark.parametrize("spec, key", [
    ({"id": "c", "kind": "fitted_order", "observable": "H"}, "test.observable"),
    ({"id": "c", "kind": "fitted_order", "at": 1}, "test.at"),
    ({"id": "c", "kind": "error_at", "min": 0}, "test.dt"),
    ({"id": "c", "kind": "error_at", "dt": "1/128"}, "test.dt"),
    ({"id": "c", "kind": "fitted_order", "min": "1.6"}, "test.min"),
    ({"id": "c", "kind": "error_at", "dt": 0.25, "absolute": "yes"}, "test.absolute"),
])
def test_bad_study_check_specs_are_refused_in_one_line(spec, key):
    with pytest.raises(ConfigError) as err:
        validate(spec, "test")
    assert str(err.value).startswith(f"{key}=") and "\n" not in str(err.value)


# --- single realisations: an observable along a kept path ---------------------------------------------
def kept(path, *more):
    """A one-path run (mean = the path, no SE) with its kept path(s)."""
    paths = np.array([path, *more], float)
    return Series(T, paths[0], np.full_like(T, np.nan), None, kept=paths)


DRIFT = 1 + 1e-9 * T / 100          # a Casimir drifting to 1e-9 at t = 100
ROUNDOFF = 1 + 1e-14 * np.sin(T)    # one conserved to round-off


def test_path_deviation_pass_and_fail():
    ok = check("path_deviation", kept(ROUNDOFF), max=1e-12)
    assert ok.verdict == PASS and ok.value == pytest.approx(np.abs(1e-14 * np.sin(T)).max(), rel=0.02) and ok.se is None
    bad = check("path_deviation", kept(DRIFT), max=1e-12)
    assert bad.verdict == FAIL and bad.value == pytest.approx(1e-9) and bad.t == 100
    assert check("path_deviation", kept(DRIFT), min=1e-11, max=1e-6).verdict == PASS
    assert check("path_deviation", kept(ROUNDOFF), min=1e-11, max=1e-6).verdict == FAIL


def test_path_deviation_from_a_number_and_over_a_window():
    offset = kept(np.full_like(T, 1.5))
    assert check("path_deviation", offset, max=1e-12).verdict == PASS          # from x(0): constant
    assert check("path_deviation", offset, reference=1, max=1e-12).verdict == FAIL
    assert check("path_deviation", kept(DRIFT), max=3.1e-10, end=30).verdict == PASS
    assert check("path_deviation", kept(DRIFT), max=1e-9, end=500).verdict == SKIP   # beyond the run


def test_path_deviation_relative_to_its_start():
    """Figs 8-9 of paper 001: |x(t) - x(0)| / |x(0)|; a Casimir of size 0.05 drifting by 1e-9 is 2e-8 relative."""
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


def test_spectrum_fraction_of_a_snapshot_state():
    """Spec 004 section 3.9: the enstrophy (energy) fraction in chosen degrees of one path's state, from the
    system's enstrophy_spectrum; a synthetic su(6) state with S_l = 1, 2, 3, 4, 5 on l = 1..5."""
    from sgi_run.figures.results import RunData
    from sgi_run.systems.zeitlin import ZeitlinEuler, degrees, hbar, matrix_quflow

    system = ZeitlinEuler(N=6)
    l = degrees(6)
    omega = np.where(l > 0, np.sqrt(l / np.maximum(2 * l + 1, 1)), 0.0)        # S_l = (2l+1) l / (2l+1) = l
    x = matrix_quflow(omega) / hbar(6)
    snaps = {0.0: {"X": x[None]}, 5.0: {"X": np.stack([x, 2 * x])}}
    data = RunData({"H": series(EXACT, exact=None)}, "H", system, lambda t: snaps.get(5.0 if t is None else t), 1,
                   snapshot_times=(0.0, 5.0))
    enstrophy = {"id": "c", "kind": "spectrum_fraction", "quantity": "enstrophy", "at": 0.0, "above": 2}
    validate(enstrophy, "test")
    high = evaluate({**enstrophy, "min": 0.8}, "run", data)          # (3 + 4 + 5) / 15
    assert high.verdict == PASS and high.value == pytest.approx(12 / 15, rel=1e-12) and high.t == 0.0
    assert high.se is None and "l > 2" in high.detail
    assert evaluate({**enstrophy, "max": 0.7}, "run", data).verdict == FAIL
    band = evaluate({**enstrophy, "at_most": 4}, "run", data)         # 2 < l <= 4: (3 + 4) / 15
    assert band.value == pytest.approx(7 / 15, rel=1e-12) and "2 < l <= 4" in band.detail
    energy = {"id": "c", "kind": "spectrum_fraction", "quantity": "energy", "at_most": 1, "path": 1}
    validate(energy, "test")
    last = evaluate(energy, "run", data)          # the last snapshot by default; E_l = l / (l(l+1)) = 1/(l+1)
    expected = 0.5 / sum(1 / (k + 1) for k in range(1, 6))
    assert last.value == pytest.approx(expected, rel=1e-12) and last.t == 5.0 and last.verdict == PASS
    assert evaluate({**enstrophy, "at": 50.0}, "run", data).verdict == SKIP
    with pytest.raises(ConfigError, match="path"):
        evaluate({**enstrophy, "path": 1}, "run", data)        # one path stored at t = 0
    with pytest.raises(ConfigError, match=r"^test\.quantity='vorticity' is not allowed: one of "):
        validate({**enstrophy, "quantity": "vorticity"}, "test")
    with pytest.raises(ConfigError, match=r"^test\.above=10\.5 is not allowed: an integer"):
        validate({**enstrophy, "above": 10.5}, "test")


def test_effective_potential_of_the_heavy_top_from_a_runs_momenta():
    """Spec 002 section 2.8: V(theta; p_psi = 1, p_phi = cos 0.15 pi) has its minimum 0.861102 at 0.528597,
    and V = E' = 0.873186 at 0.471239 (= 0.15 pi) and 0.591606; a later E' shows as a change of E'."""
    from types import SimpleNamespace

    from sgi_run.figures.results import RunData
    p_phi, e_prime = math.cos(0.15 * math.pi), 0.5 + 0.98 * math.cos(0.15 * math.pi) - 0.5
    curves = {"p_psi": kept(np.ones_like(T)), "p_phi": kept(np.full_like(T, p_phi)),
              "E_prime": kept(np.where(T < 20, e_prime, e_prime + 0.1))}
    run = RunData(curves, "p_psi", system=SimpleNamespace(inertia=(0.1, 0.1, 1.0), mg=0.98))
    expected = {"argmin": 0.528597, "min": 0.861102, "root_low": 0.15 * math.pi, "root_high": 0.591606,
                "E_prime": 0.873186}
    for statistic, value in expected.items():
        spec = {"id": "c", "kind": "effective_potential", "statistic": statistic, "at": 0,
                "min": value - 2e-6, "max": value + 2e-6}
        validate(spec, "test")
        result = evaluate(spec, "run", run)
        assert result.verdict == PASS, (statistic, result.value)
    convex = {"id": "c", "kind": "effective_potential", "statistic": "min_curvature", "window": [0.2, 1.0], "min": 0}
    assert evaluate(convex, "run", run).verdict == PASS
    change = {"id": "c", "kind": "effective_potential", "statistic": "E_prime", "at": 20, "minus_at": 0,
              "absolute": True, "min": 0.01}
    result = evaluate(change, "run", run)
    assert result.verdict == PASS and result.value == pytest.approx(0.1)
    assert evaluate({**change, "min": 0.2}, "run", run).verdict == FAIL
    assert evaluate({**change, "at": 500}, "run", run).verdict == SKIP
    with pytest.raises(ConfigError, match="statistic"):
        validate({**change, "statistic": "median"}, "test")


# --- the rigid body's kept paths on its momentum sphere (spec 002 Figs 1, 2) -------------------------------
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


def test_ensemble_spread_and_its_growth_between_times():
    """Spec 002 P15: the mean pairwise distance of the kept paths' pi; a list of times takes the largest."""
    from sgi_run.figures.results import RunData
    pi = np.zeros((3, len(T), 3))
    pi[1, :, 0], pi[2, :, 1] = T / 100, T / 50          # at T = 100: distances 1, 2 and sqrt 5
    run = RunData({"pi1": kept(*pi[:, :, 0])}, "pi1", kept={"pi": pi})
    spec = {"id": "c", "kind": "ensemble_spread", "at": 100, "min": 1.7, "max": 1.8}
    validate(spec, "test")
    result = evaluate(spec, "run", run)
    assert result.verdict == PASS and result.value == pytest.approx((1 + 2 + np.sqrt(5)) / 3)
    growth = evaluate({**spec, "at": [50, 100], "minus_at": 10, "min": 0, "max": None}, "run", run)
    assert growth.verdict == PASS and growth.value == pytest.approx((1 + 2 + np.sqrt(5)) * 0.9 / 3)
    assert evaluate({**spec, "at": 500}, "run", run).verdict == SKIP
    with pytest.raises(ConfigError, match=r"^test\.at=\[\] is not allowed: an output time"):
        validate({**spec, "at": []}, "test")


# --- the solvability map of the Cayley LGVI's implicit equations (spec 002 Fig. 14) ------------------------
def test_solvability_of_the_rigid_bodys_implicit_equations_from_the_runs_integrator(make_integrator):
    """Spec 002 Fig. 14 [MEASURED]: converged everywhere in <= 10 iterations, ||(A, B)|| = sqrt 2 (1 +- 4e-5),
    [1.4142145, 1.4142224] without noise; "D" is the run's truncation bound."""
    from sgi_run.figures.results import RunData
    from sgi_run.systems import RigidBody
    system = RigidBody(inertia=(1.0, 2.0, 3.0), noise_kind="linear", noise_amplitude=0.02, pi0=(-0.5878, 0.0, 0.809))
    run = RunData({"H": kept(np.ones_like(T))}, "H", system, dt=0.01, integrator=make_integrator("lgvi_cayley", tol=1e-15),
                  increment_bound=float(np.sqrt(4 * abs(np.log(0.01)) * 0.01)))
    spec = {"id": "c", "kind": "solvability", "statistic": "norm_max", "increments": [[0, 0, 0], ["D", "D", "D"]],
            "min": 1.41420, "max": 1.41426}
    validate(spec, "test")
    result = evaluate(spec, "map", run)
    assert result.verdict == PASS and "ΔW = (D, D, D), D = 0.42919" in result.detail and "16471 points" in result.detail
    zero = evaluate({**spec, "increments": [[0, 0, 0]], "min": 1.4142145, "max": 1.4142225}, "map", run)
    assert zero.verdict == PASS and zero.value == pytest.approx(1.4142224, abs=1e-7)
    assert evaluate({**spec, "statistic": "max_iterations", "min": None, "max": 10}, "map", run).verdict == PASS
    assert evaluate({**spec, "statistic": "unconverged", "min": None, "max": 0}, "map", run).value == 0
    assert len(run.memo) == 2          # one map per increment vector, computed once
    for bad in ([[0, "E", 0]], [], [1, 2]):
        with pytest.raises(ConfigError, match=r"^test\.increments=.* is not allowed: a list of increment vectors"):
            validate({**spec, "increments": bad}, "test")


def test_a_band_shows_its_ends_with_the_digits_they_were_given():
    from sgi_run.figures.results import Band
    assert str(Band(0.95, 1.15)) == "[0.95, 1.15]" and str(Band(None, 1e-12)) == "<= 1e-12"
    assert str(Band(1.41420, 1.41426)) == "[1.4142, 1.41426]"
    assert str(Band(1 / 3, 1 / 3 + 1e-7)) == "[0.3333333, 0.3333334]"     # computed ends: as many as tell them apart


def test_across_paths_fractions_and_medians_of_per_path_values():
    """Spec 002 Figs 7, 9, 12: a statistic over every kept path, each reduced to x(at), |x(at) - x(0)| or its
    running min/max; the fraction carries the binomial SE, the median its normal-approximation SE."""
    ramps = [1 + c * T / 100 for c in (0.0, 0.005, 0.02, 0.05)]      # |x(100) - x(0)| = 0, 0.005, 0.02, 0.05
    run = kept(*ramps)
    moved = check("across_paths", run, per_path="abs_change", at=100, statistic="fraction_above", threshold=0.01,
                  min=0.4)
    assert moved.verdict == PASS and moved.value == 0.5 and moved.se == pytest.approx(0.25)
    assert check("across_paths", run, per_path="abs_change", at=100, statistic="fraction_above", threshold=0.01,
                 min=0.9).verdict == FAIL
    median = check("across_paths", run, per_path="value", at=50, statistic="median", min=1.0, max=1.02)
    assert median.verdict == PASS and median.value == pytest.approx(1 + 0.0125 / 2)
    lowest = check("across_paths", kept(np.cos(T / 20), np.sin(T / 20) + 2), per_path="running_min", at=40,
                   statistic="fraction_below", threshold=0.0, max=0)
    assert lowest.verdict == FAIL and lowest.value == 0.5          # cos dips below 0 by t = 40, sin + 2 never
    assert check("across_paths", run, per_path="value", at=55, statistic="median").verdict == SKIP
    for key, value in (("per_path", "mean"), ("statistic", "mode")):
        with pytest.raises(ConfigError, match=rf"^test\.{key}='{value}' is not allowed: one of"):
            validate({"id": "c", "kind": "across_paths", "per_path": "value", "statistic": "median", key: value}, "test")
