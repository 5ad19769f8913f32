"""Check kinds on synthetic curves: each one can PASS and can FAIL, and reports its MC error."""
import math

import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.figures.checks import FAIL, PASS, SKIP, Band, Series, evaluate, validate

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


def test_band_text_and_margin():
    assert str(Band(None, 0.035)) == "<= 0.035" and str(Band(5, None)) == ">= 5"
    assert Band(1, 2).margin(1.5) == pytest.approx(0.5) and Band(1, 2).margin(3) == pytest.approx(-1)


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
