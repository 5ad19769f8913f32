"""The registry, validate and evaluate: refusals of bad specs in one line, kinds that do not fit the run,
and how a result shows its verdict, value and band."""
import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.figures.checks import evaluate, validate
from sgi_run.figures.results import FAIL, PASS, CheckResult, RunData, counts_text, verdict_counts
from tests.figures.checks.helpers import EXACT, WEAK, T, check, series, study


def test_result_line_names_verdict_value_se_and_band():
    line = check("ratio_at", series(EXACT * 1.1), min=0.95, max=1.15).line()
    assert line.startswith("PASS  c [run]: E/exact = 1.1 ± ") and "band [0.95, 1.15]" in line


def test_every_kind_says_what_its_value_is():
    """A verdict line never shows a bare number: each kind names its value or its unit (or both)."""
    from sgi_run.figures.checks import CHECK_KINDS
    unnamed = [name for name, record in CHECK_KINDS.items() if not (record.quantity or record.unit)]
    assert not unnamed


def test_a_value_in_standard_errors_and_a_p_value_say_so():
    at_zero = check("agrees_with_exact", series(EXACT + 2e-3 * (T == 0)))
    assert at_zero.measured().startswith("max_t |E - exact| = 2 SE at t=0 (band <= 4")
    from scipy import stats
    x = stats.norm.ppf((np.arange(400) + 0.5) / 400)
    data = RunData({"H": series(EXACT)}, "H", _Normal(), lambda t: {"x": x})
    result = evaluate({"id": "c", "kind": "ks_test", "coordinate": "x", "cdf": "cdf_x", "at": 0}, "run", data)
    assert result.measured().startswith("p = 1 (Kolmogorov-Smirnov p-value) at t=0 (band >= 0.001")


class _Normal:
    @staticmethod
    def cdf_x(x):
        from scipy import stats
        return stats.norm.cdf(x)


def test_a_value_a_record_keeps_as_null_reads_back_as_nan():
    import math
    result = check("ratio_at", series(EXACT * 1.1), min=0.95, max=1.15)
    back = CheckResult(**{**result.as_dict(), "value": None})
    assert math.isnan(back.value) and back.measured().startswith("E/exact = nan ± ")


def test_by_construction_is_judged_but_counted_apart():
    spec = {"id": "c", "kind": "ratio_at", "min": 2.0, "by_construction": True}
    validate(spec, "test")
    failed = evaluate(spec, "run", series(EXACT * 1.1))
    passed = check("ratio_at", series(EXACT * 1.1), min=0.95)
    assert failed.verdict == FAIL and failed.by_construction and not passed.by_construction
    counts = verdict_counts([failed, passed, passed.as_dict()])
    assert counts == {"PASS": 2, "FAIL": 0, "SKIP": 0, "by construction": 1, "by construction FAIL": 1}
    assert counts_text(counts) == "2 PASS, 0 FAIL, 0 SKIP; 1 by construction (1 FAIL)"


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_by_construction_other_than_true_or_false_is_refused_in_one_line(value):
    with pytest.raises(ConfigError) as err:
        validate({"id": "c", "kind": "ratio_at", "by_construction": value}, "test")
    assert str(err.value).startswith(f"test.by_construction={value!r}") and "\n" not in str(err.value)


@pytest.mark.parametrize("spec, key", [
    ({"id": "c", "kind": "nope"}, "test.kind"),
    ({"id": "c", "kind": "ratio_at", "factor": 2}, "test.factor"),
    ({"id": "c", "kind": "within_factor"}, "test.factor"),
])
def test_bad_check_specs_are_refused(spec, key):
    with pytest.raises(ConfigError, match=key):
        validate(spec, "test")


def test_study_kinds_judge_studies_and_the_others_mean_curves():
    from sgi_run.figures.results import StudyData
    spec = {"id": "c", "kind": "fitted_order", "min": 1.6}
    assert evaluate(spec, "srkw2", StudyData(study(WEAK), "H", 2.0)).verdict == PASS
    with pytest.raises(ConfigError, match=r"^checks.kind='fitted_order' is not allowed: a check kind for an ensemble run "
                                          r"\(run mid is not a convergence study\): \['abs_ratio_at'"):
        evaluate(spec, "mid", series(EXACT))
    with pytest.raises(ConfigError, match=r"a check kind for a convergence study \(run srkw2 is one: plan=convergence\): "
                                          r"\['error_at', 'errors_decrease', 'fitted_order', 'invariant_drift', 'resolved_levels'\]"):
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


def test_a_band_shows_its_ends_with_the_digits_they_were_given():
    from sgi_run.figures.results import Band
    assert str(Band(0.95, 1.15)) == "[0.95, 1.15]" and str(Band(None, 1e-12)) == "<= 1e-12"
    assert str(Band(1.41420, 1.41426)) == "[1.4142, 1.41426]"
    assert str(Band(1 / 3, 1 / 3 + 1e-7)) == "[0.3333333, 0.3333334]"     # computed ends: as many as tell them apart
