"""Acceptance checks: generic kinds, each a verdict on one run's mean curve against a band.

A check kind is a function ``(series, **parameters) -> Measurement``; ``evaluate`` turns the
measurement into a ``CheckResult`` with the verdict. Every measured value carries its Monte Carlo
standard error where one exists, and ``margin_se`` says how many standard errors the value lies
inside (+) or outside (-) the band, so a PASS or FAIL that MC noise could flip is visible.

Verdicts: PASS, FAIL, or SKIP when the run does not reach the time the criterion is about (a
smoke run with T=500 cannot say anything about t=5000).
"""
from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Callable, Mapping

import numpy as np

from sgi_run.core.errors import ConfigError

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclasses.dataclass(frozen=True)
class Series:
    """One run's E(observable)(t), its MC standard error, and the exact mean on the same times."""
    t: np.ndarray
    mean: np.ndarray
    sem: np.ndarray
    exact: np.ndarray | None = None
    # The numerical method's own exact E and its expected MC standard error at this path count
    # (engine.linear_oracle), for linear systems; None elsewhere.
    oracle_mean: np.ndarray | None = None
    oracle_sem: np.ndarray | None = None

    def index_at(self, t: float | None) -> int | None:
        """Index of output time ``t`` (None: the final time); None when the run has no such time."""
        if t is None:
            return len(self.t) - 1
        hits = np.flatnonzero(np.isclose(self.t, t, rtol=1e-9, atol=1e-9))
        return int(hits[0]) if hits.size else None

    def require_oracle(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        if self.oracle_mean is None:
            raise ConfigError("checks.kind", kind, "a kind that needs no method oracle (set `oracle:` in the experiment)")
        return self.oracle_mean, self.oracle_sem

    def require_exact(self, kind: str) -> np.ndarray:
        if self.exact is None:
            raise ConfigError("checks.kind", kind, "a kind that needs no exact reference (this system has none)")
        return self.exact


@dataclasses.dataclass(frozen=True)
class Band:
    """The accepted interval; either end may be open (None)."""
    lo: float | None = None
    hi: float | None = None

    def contains(self, x: float) -> bool:
        return math.isfinite(x) and (self.lo is None or x >= self.lo) and (self.hi is None or x <= self.hi)

    def margin(self, x: float) -> float:
        """Signed distance to the nearest end: positive inside, negative outside."""
        ends = [x - self.lo] if self.lo is not None else []
        ends += [self.hi - x] if self.hi is not None else []
        return min(ends) if ends else math.inf

    def __str__(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"[{self.lo:.4g}, {self.hi:.4g}]"
        if self.lo is not None:
            return f">= {self.lo:.4g}"
        return f"<= {self.hi:.4g}" if self.hi is not None else "any"


@dataclasses.dataclass(frozen=True)
class Measurement:
    value: float
    se: float | None          # MC standard error of value; None when value is already in SE units
    t: float | None           # the output time the value refers to (None: all times)
    band: Band
    detail: str = ""
    skipped: str = ""         # why the check could not be evaluated on this run


@dataclasses.dataclass(frozen=True)
class CheckResult:
    id: str
    kind: str
    run: str
    criterion: str
    verdict: str
    value: float
    se: float | None
    t: float | None
    band: str
    margin_se: float | None   # (distance inside the band) / se; None when se is absent or zero
    detail: str

    def measured(self) -> str:
        """The value, its SE, the time and the band, as text (or why the check was skipped)."""
        if self.verdict == SKIP:
            return self.detail
        value = f"{self.value:.4g}" + (f" ± {self.se:.2g}" if self.se is not None else "")
        at = f" at t={self.t:g}" if self.t is not None else ""
        margin = f"; {self.margin_se:+.1f} SE from the band's edge" if self.margin_se is not None else ""
        extra = f"; {self.detail}" if self.detail else ""
        return f"{value}{at} (band {self.band}{margin}{extra})"

    def line(self) -> str:
        """One line for the verdict file: ``PASS  id [run]: value ± se at t=... (band ...)``."""
        return f"{self.verdict}  {self.id} [{self.run}]: {self.measured()}"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


# --- the registry ---------------------------------------------------------------------------------
CHECK_KINDS: dict[str, Callable[..., Measurement]] = {}


def check_kind(name: str):
    def register(fn):
        CHECK_KINDS[name] = fn
        return fn
    return register


def _skip(t, series: Series, band: Band) -> Measurement:
    return Measurement(math.nan, None, t, band, skipped=f"t={t:g} is not an output time of this run (T={series.t[-1]:g})")


@check_kind("ratio_at")
def ratio_at(series: Series, *, min: float | None = None, max: float | None = None,
             at: float | None = None) -> Measurement:
    """E(t) / exact(t) at one time (default: the final time) lies in [min, max]."""
    band, i = Band(min, max), series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    exact = series.require_exact("ratio_at")[i]
    return Measurement(series.mean[i] / exact, series.sem[i] / abs(exact), float(series.t[i]), band)


@check_kind("relative_error_at")
def relative_error_at(series: Series, *, max: float, at: float | None = None) -> Measurement:
    """|E(t) / exact(t) - 1| at one time (default: the final time) is at most max."""
    band, i = Band(None, max), series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    exact = series.require_exact("relative_error_at")[i]
    return Measurement(abs(series.mean[i] / exact - 1), series.sem[i] / abs(exact), float(series.t[i]), band)


@check_kind("max_abs_error")
def max_abs_error(series: Series, *, min: float | None = None, max: float | None = None) -> Measurement:
    """max_t |E(t) - exact(t)| lies in [min, max] (either end may be left open); the SE is the one
    at the maximising time."""
    err = np.abs(series.mean - series.require_exact("max_abs_error"))
    i = _nanargmax(err)
    return Measurement(float(err[i]), float(series.sem[i]), float(series.t[i]), Band(min, max))


@check_kind("within_factor")
def within_factor(series: Series, *, factor: float) -> Measurement:
    """E(t) stays within a factor of exact(t) at every time: max_t max(E/exact, exact/E) <= factor."""
    ratio = series.mean / series.require_exact("within_factor")
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(ratio > 0, np.maximum(ratio, 1 / ratio), np.inf)
    i = _nanargmax(spread)
    se = series.sem[i] / abs(series.exact[i]) * (1 if ratio[i] >= 1 else 1 / ratio[i] ** 2)
    return Measurement(float(spread[i]), float(se), float(series.t[i]), Band(None, factor))


@check_kind("monotone_decay")
def monotone_decay(series: Series, *, tolerance_se: float = 2.0) -> Measurement:
    """E(t) never rises from one output time to the next by more than tolerance_se standard errors
    of the difference. The SE of a difference is taken as sqrt(se_i^2 + se_j^2), i.e. ignoring the
    (positive) correlation between times of the same paths; that overstates it, so a rise counted
    as a violation is a real one."""
    rise = np.diff(series.mean)
    se_diff = np.hypot(series.sem[:-1], series.sem[1:])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se_diff > 0, rise / se_diff, np.where(rise > 0, np.inf, -np.inf))
    i = _nanargmax(z)
    detail = f"largest step E(t={series.t[i + 1]:g}) - E(t={series.t[i]:g}) = {rise[i]:.3g}"
    return Measurement(float(z[i]), None, float(series.t[i + 1]), Band(None, tolerance_se), detail)


@check_kind("agrees_with_exact")
def agrees_with_exact(series: Series, *, k: float = 4.0) -> Measurement:
    """|E(t) - exact(t)| <= k SE(t) at every output time. Where SE is zero (a deterministic initial
    state) the two must agree to round-off."""
    exact = series.require_exact("agrees_with_exact")
    err = np.abs(series.mean - exact)
    roundoff = 1e-12 * np.maximum(1.0, np.abs(exact))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(series.sem > 0, err / series.sem, np.where(err <= roundoff, 0.0, np.inf))
    i = _nanargmax(z)
    return Measurement(float(z[i]), None, float(series.t[i]), Band(None, k),
                       f"largest |error| {err[i]:.3g} = {z[i]:.2f} SE")


@check_kind("agrees_with_oracle")
def agrees_with_oracle(series: Series, *, k: float = 4.0) -> Measurement:
    """|E(t) - E_method(t)| <= k sigma(t) at every output time, where E_method is the method's own
    exact mean and sigma the standard error the oracle predicts for this many paths (spec 000,
    Figure 4.1 criterion 1). Where sigma is zero the two must agree to round-off."""
    mean, sigma = series.require_oracle("agrees_with_oracle")
    err = np.abs(series.mean - mean)
    roundoff = 1e-12 * np.maximum(1.0, np.abs(mean))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sigma > 0, err / sigma, np.where(err <= roundoff, 0.0, np.inf))
    i = _nanargmax(z)
    return Measurement(float(z[i]), None, float(series.t[i]), Band(None, k),
                       f"largest |E - E_method| {err[i]:.3g} = {z[i]:.2f} sigma")


@check_kind("mc_error_matches_oracle")
def mc_error_matches_oracle(series: Series, *, rtol: float = 0.2) -> Measurement:
    """The measured max_t SE/E over the predicted max_t sigma/E_method (fourth-moment oracle) lies
    in [1 - rtol, 1 + rtol] (spec 000, Figure 4.1 criterion 2)."""
    mean, sigma = series.require_oracle("mc_error_matches_oracle")
    with np.errstate(divide="ignore", invalid="ignore"):
        measured = np.nanmax(np.where(np.abs(series.mean) > 0, series.sem / np.abs(series.mean), np.nan))
        predicted = np.nanmax(np.where(np.abs(mean) > 0, sigma / np.abs(mean), np.nan))
    return Measurement(float(measured / predicted), None, None, Band(1 - rtol, 1 + rtol),
                       f"max SE/E measured {measured:.3g}, predicted {predicted:.3g}")


@check_kind("identical_to")
def identical_to(series: Series, *, other: Series, rtol: float = 1e-12) -> Measurement:
    """The run's mean curve equals another run's to round-off: max_t |E - E_other| / |E_other| <= rtol
    (e.g. Heun and R2 on the Kubo oscillator, the same map given the same increments)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(series.mean - other.mean) / np.maximum(np.abs(other.mean), np.finfo(float).tiny)
    i = _nanargmax(rel)
    return Measurement(float(rel[i]), None, float(series.t[i]), Band(None, rtol), "relative difference")


def _nanargmax(x: np.ndarray) -> int:
    """Argmax that treats NaN (a mean over no finite paths) as the worst value."""
    return int(np.argmax(np.where(np.isnan(x), np.inf, x)))


# --- evaluation -----------------------------------------------------------------------------------
_NOT_PARAMETERS = ("id", "kind", "run", "runs", "criterion")


def parameters(spec: Mapping) -> dict:
    return {k: v for k, v in spec.items() if k not in _NOT_PARAMETERS}


def validate(spec: Mapping, where: str) -> None:
    """Refuse an unknown kind or a parameter the kind does not take, before any compute."""
    kind = spec.get("kind")
    if kind not in CHECK_KINDS:
        raise ConfigError(f"{where}.kind", kind, f"one of {sorted(CHECK_KINDS)}")
    signature = inspect.signature(CHECK_KINDS[kind])
    taken = [p for p in signature.parameters if p != "series"]
    for name in parameters(spec):
        if name not in taken:
            raise ConfigError(f"{where}.{name}", spec[name], f"a parameter of {kind}: {taken}")
    for name, p in signature.parameters.items():
        if name != "series" and p.default is inspect.Parameter.empty and name not in spec:
            raise ConfigError(f"{where}.{name}", None, f"a value ({kind} needs {name})")


def evaluate(spec: Mapping, run: str, series: Series, runs: Mapping[str, Series] | None = None) -> CheckResult:
    """Verdict of one check on one run; ``runs`` resolves a check's ``other`` run by id."""
    params = parameters(spec)
    if "other" in params:
        params["other"] = runs[params["other"]]
    m = CHECK_KINDS[spec["kind"]](series, **params)
    if m.skipped:
        verdict, margin = SKIP, None
    else:
        verdict = PASS if m.band.contains(m.value) else FAIL
        # Kinds whose value is already in SE units (z-scores) report no se and no margin.
        margin = m.band.margin(m.value) / m.se if m.se and math.isfinite(m.value) else None
    return CheckResult(id=spec["id"], kind=spec["kind"], run=run, criterion=spec.get("criterion", ""),
                       verdict=verdict, value=float(m.value), se=None if m.se is None else float(m.se),
                       t=m.t, band=str(m.band), margin_se=margin, detail=m.skipped or m.detail)
