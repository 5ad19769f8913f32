"""What a cell's measurements say of its method's claims (``integrators.claims``).

An order claim p (strong or weak, for the system's noise class) is an asymptotic statement, error = O(dt^p):
a measured order above it does not contradict it, one below does. So a claim holds (PASS) when the fitted
order's 95% bootstrap interval reaches up to p - ``ORDER_MARGIN`` and lies above zero, and fails (FAIL) when the
whole interval lies below p - ``ORDER_MARGIN``: the margin allows for step sizes not yet in the asymptotic regime,
stated here once for every cell. An interval that reaches the claim but also down to zero or below cannot tell the
claim from an error that does not decrease at all: too wide to confirm anything, it is ``UNRESOLVED``.
Before any verdict on a number, the run itself: a study with unconverged solves (``UNCONVERGED``) or paths that
went non-finite (``NON-FINITE``) is never shown as a good one, whatever its slope; one whose errors are not
resolvable above the Monte Carlo noise at two step sizes or more has no order (``UNRESOLVED``); a method that claims
nothing for the class has ``NO CLAIM``.

An invariant claim (``keeps: [casimirs]`` on a Lie-Poisson system, ``keeps: [quadratic]`` for its quadratic
invariants) holds when the invariant's largest drift over every path, step and step size stays within
``INVARIANT_TOLERANCE`` times max(1, its initial size): round-off and the solvers' tolerance, never a
discretisation error.
"""
from __future__ import annotations

import math

PASS, FAIL, UNRESOLVED, NO_CLAIM, UNCONVERGED, NONFINITE = (
    "PASS", "FAIL", "UNRESOLVED", "NO CLAIM", "UNCONVERGED", "NON-FINITE")
VERDICTS = (PASS, FAIL, UNCONVERGED, NONFINITE, UNRESOLVED, NO_CLAIM)
ORDER_MARGIN = 0.1
INVARIANT_TOLERANCE = 1e-9


# Noise classes from the narrowest: additive noise commutes, and commuting noise is a case of general noise.
NARROWEST_FIRST = ("additive", "commutative", "general")


def claimed_order(claims, kind: str, noise_class: str) -> float | None:
    """The order ``claims`` (``integrators.claims.Claims``) makes for ``kind`` on a system of ``noise_class``: its
    claim for that class, else its claim for the nearest broader class (an order proved for commuting noise holds for
    additive noise, which commutes); None where it claims nothing."""
    for broader in NARROWEST_FIRST[NARROWEST_FIRST.index(noise_class):]:
        order = claims.order(kind, broader)
        if order is not None:
            return order
    return None


def order_verdict(claimed: float | None, order: float, ci: tuple[float, float], *, unconverged: int = 0,
                  nonfinite: int = 0) -> str:
    """The verdict on an order claim (module docstring); ``ci`` the fitted order's interval (NaN: none, then the
    fitted order itself is compared)."""
    if unconverged:
        return UNCONVERGED
    if nonfinite:
        return NONFINITE
    if claimed is None:
        return NO_CLAIM
    if not math.isfinite(order):
        return UNRESOLVED
    low, high = (ci[0], ci[1]) if math.isfinite(ci[0]) and math.isfinite(ci[1]) else (order, order)
    if high < claimed - ORDER_MARGIN:
        return FAIL
    return PASS if low > 0 else UNRESOLVED


def run_failed(cell: dict) -> bool:
    """Whether a fitting cell's study itself failed (an UNCONVERGED or NON-FINITE verdict, strong or weak: a weak-only
    cell has no strong verdict): its numbers are flagged on the plots and never recommended."""
    return any(cell.get(f"{kind}_verdict") in (UNCONVERGED, NONFINITE) for kind in ("strong", "weak"))


def kept_invariants(keeps, structure: str, invariants, quadratic) -> tuple[str, ...]:
    """The system's declared invariants a method claiming ``keeps`` says it keeps exactly."""
    kept = set()
    if "casimirs" in keeps and structure == "lie_poisson":
        kept |= set(invariants)
    if "quadratic" in keeps:
        kept |= set(quadratic)
    return tuple(name for name in invariants if name in kept)


def invariant_verdict(claimed: tuple[str, ...], drifts: dict[str, float], sizes: dict[str, float], *,
                      unconverged: int = 0) -> str:
    """The verdict on the invariants a method claims to keep: each one's largest drift (``drifts``, NaN: every
    path non-finite) against the tolerance times max(1, |its initial value|) (``sizes``)."""
    if not claimed:
        return NO_CLAIM
    if unconverged:
        return UNCONVERGED
    for name in claimed:
        drift = drifts.get(name, math.nan)
        if not (math.isfinite(drift) and drift <= INVARIANT_TOLERANCE * max(1.0, abs(sizes.get(name, 1.0)))):
            return FAIL
    return PASS
