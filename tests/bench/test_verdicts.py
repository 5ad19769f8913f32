"""Claims against measurements: an order below the claim fails, one above does not; a run that did not converge or
lost paths is never a PASS."""
import math

from sgi_run.bench import verdicts as v


def test_an_order_claim_holds_when_the_interval_reaches_it():
    assert v.order_verdict(1.0, 0.95, (0.85, 1.02)) == v.PASS
    assert v.order_verdict(1.0, 0.85, (0.8, 0.91)) == v.PASS          # within the margin
    assert v.order_verdict(1.0, 0.6, (0.52, 0.7)) == v.FAIL
    assert v.order_verdict(0.5, 1.0, (0.9, 1.1)) == v.PASS            # better than claimed: no contradiction


def test_an_interval_down_to_zero_confirms_nothing_but_one_below_the_claim_still_fails():
    # The heavy top's weak order of lp_trapezoidal at 1000 paths: 0.49 in [-0.78, 1.79].
    assert v.order_verdict(1.0, 0.49, (-0.78, 1.79)) == v.UNRESOLVED
    assert v.order_verdict(1.0, 1.0, (0.0, 2.0)) == v.UNRESOLVED
    assert v.order_verdict(1.0, 0.1, (-0.4, 0.5)) == v.FAIL           # resolved errors that do not decrease
    assert v.order_verdict(1.0, -0.2, (math.nan, math.nan)) == v.FAIL


def test_no_interval_compares_the_fitted_order():
    assert v.order_verdict(1.0, 0.95, (math.nan, math.nan)) == v.PASS
    assert v.order_verdict(1.0, 0.5, (math.nan, math.nan)) == v.FAIL


def test_runs_that_failed_are_never_a_pass_and_no_claim_is_said():
    assert v.order_verdict(1.0, 1.0, (0.9, 1.1), unconverged=3) == v.UNCONVERGED
    assert v.order_verdict(1.0, 1.0, (0.9, 1.1), nonfinite=1) == v.NONFINITE
    assert v.order_verdict(None, 1.0, (0.9, 1.1)) == v.NO_CLAIM
    assert v.order_verdict(1.0, math.nan, (math.nan, math.nan)) == v.UNRESOLVED


def test_kept_invariants_follow_the_claim_and_the_structure():
    assert v.kept_invariants(["casimirs"], "lie_poisson", ("C2", "C4"), ("C2",)) == ("C2", "C4")
    assert v.kept_invariants(["casimirs"], "canonical", ("H",), ("H",)) == ()
    assert v.kept_invariants(["quadratic"], "lie_poisson", ("C2", "C4"), ("C2",)) == ("C2",)
    assert v.kept_invariants([], "lie_poisson", ("C2",), ("C2",)) == ()


def test_an_invariant_claim_fails_on_a_drift_beyond_round_off_or_every_path_lost():
    assert v.invariant_verdict(("C2",), {"C2": 3e-13}, {"C2": 1.0}) == v.PASS
    assert v.invariant_verdict(("C2",), {"C2": 5e-8}, {"C2": 100.0}) == v.PASS     # relative to its size
    assert v.invariant_verdict(("C2",), {"C2": 1e-6}, {"C2": 1.0}) == v.FAIL
    assert v.invariant_verdict(("C2",), {"C2": math.nan}, {"C2": 1.0}) == v.FAIL
    assert v.invariant_verdict((), {}, {}) == v.NO_CLAIM


def test_a_claim_for_a_broader_noise_class_holds_for_a_narrower_one():
    from sgi_run.integrators.claims import Claims
    claims = Claims({"additive": None, "commutative": 1.0, "general": 0.5}, {"additive": 2.0, "commutative": None,
                                                                             "general": None}, (), "test")
    assert v.claimed_order(claims, "strong", "additive") == 1.0
    assert v.claimed_order(claims, "strong", "general") == 0.5
    assert v.claimed_order(claims, "weak", "additive") == 2.0
    assert v.claimed_order(claims, "weak", "commutative") is None
