"""Check kinds on a run's mean curve (synthetic curves): each one can PASS and can FAIL, and reports its MC
error."""
import math

import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.figures.checks import evaluate
from sgi_run.figures.results import FAIL, PASS, SKIP, Series
from tests.figures.checks.helpers import EXACT, LB, T, check, data_check, run_data, series


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


def test_window_relative_deviation_is_the_plateaus_fraction_off_the_reference():
    ref = LB.ergodic_energy()
    low = run_data({"H": np.where(T >= 50, 0.84 * ref, 3.0)})     # 16% below over the window, off it before
    result = data_check("window_relative_deviation", low, start=50, end=100, reference="ergodic_energy",
                        min=-0.2, max=-0.1)
    assert result.verdict == PASS and result.value == pytest.approx(-0.16) and result.se == pytest.approx(1e-3 / ref)
    assert data_check("window_relative_deviation", low, start=50, end=100, reference="ergodic_energy",
                      min=-0.05, max=0.05).verdict == FAIL
    assert data_check("window_relative_deviation", low, start=50, end=500, reference=1.0).verdict == SKIP
    with pytest.raises(ConfigError, match="reference"):     # no reference, no deviation: refused before compute
        data_check("window_relative_deviation", low, start=50, end=100)


def test_window_deviation_ratio_says_how_a_bias_scales_between_two_runs():
    ref = LB.ergodic_energy()
    coarse, half = run_data({"H": np.full_like(T, ref - 0.2)}), run_data({"H": np.full_like(T, ref - 0.1)})
    spec = {"id": "c", "kind": "window_deviation_ratio", "other": "o", "start": 50, "end": 100,
            "reference": "ergodic_energy", "min": 0.4, "max": 0.6}
    halved = evaluate(spec, "a", half, {"o": coarse})
    assert halved.verdict == PASS and halved.value == pytest.approx(0.5)
    assert halved.se == pytest.approx(math.hypot(1e-3 / 0.2, 0.1 * 1e-3 / 0.2 ** 2))
    assert evaluate(spec, "a", coarse, {"o": half}).verdict == FAIL       # a bias that doubles
    on_the_line = run_data({"H": np.full_like(T, ref)})
    assert evaluate(spec, "a", half, {"o": on_the_line}).verdict == FAIL  # no bias at h: no ratio


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
