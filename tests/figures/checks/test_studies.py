"""Check kinds on convergence studies (synthetic studies): each one can PASS and can FAIL, and reports its
MC error."""
import math

import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.figures.checks import validate
from sgi_run.figures.results import FAIL, PASS, SKIP
from tests.figures.checks.helpers import DTS, WEAK, check, study


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
    """norm: sup fits a strong study's sup-in-time RMS errors (Gay-Balmaz & Wu's (2024) e_sup): slope 1/2 here, while the
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
    assert ok.margin_se == pytest.approx(1e-3 / 3e-4) and "|error| = 9.3 SE" in ok.detail
    assert ok.measured().startswith("error of the mean at dt=0.25 = -0.0028 ± 0.0003 (band")
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


def test_invariant_drift_pass_fail_and_skip_without_the_invariant():
    import dataclasses
    drifting = dataclasses.replace(study(WEAK), invariants=("C2",), drift_max=np.array([[3e-15], [1e-14], [2e-3], [1e-16]]))
    fail = check("invariant_drift", drifting, invariant="C2", max=1e-12)
    assert fail.verdict == FAIL and fail.value == 2e-3 and "at dt=0.125" in fail.detail
    kept = dataclasses.replace(drifting, drift_max=np.array([[3e-15], [1e-14], [2e-15], [1e-16]]))
    assert check("invariant_drift", kept, invariant="C2", max=1e-12).verdict == PASS
    skipped = check("invariant_drift", study(WEAK), invariant="C2", max=1e-12)
    assert skipped.verdict == SKIP and "recorded no drift of C2" in skipped.detail
