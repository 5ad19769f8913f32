"""Check kinds registered with ``study=True``: they judge a convergence study (a run with
``plan=convergence``), its errors against dt, their SEs and the fitted order, not a mean curve."""
from __future__ import annotations

import math

import numpy as np

from sgi_run.figures.checks.registry import check_kind
from sgi_run.figures.results import Band, Measurement
from sgi_run.figures.statistics import _nanargmax


# --- convergence studies (plan=convergence) ---------------------------------------------------------
Z_95 = 1.959964   # a 95% interval of a normal estimate is ±Z_95 SE


def _dt_index(study, dt: float) -> int | None:
    hits = np.flatnonzero(np.isclose(study.dts, dt, rtol=1e-9, atol=0.0))
    return int(hits[0]) if hits.size else None


def _dts_text(dts) -> str:
    return ", ".join(f"{d:g}" for d in dts)


@check_kind("fitted_order", study=True, choices={"norm": ("terminal", "sup")}, quantity="fitted order")
def fitted_order(study, *, min: float | None = None, max: float | None = None, norm: str = "terminal") -> Measurement:
    """The fitted order (least-squares slope of log|error| against log dt over the step sizes whose
    error is resolvable, |error| > plan.resolvable_se SE, 2 by default) lies in [min, max]. Its SE is read off the 95% path-bootstrap
    interval (width / 3.92); none without a bootstrap. SKIP when no order could be fitted (fewer than
    two resolvable errors), with the study's reason. ``norm: sup`` fits a strong study's sup-in-time
    errors sqrt(E max_k |z_k - z_ref(t_k)|^2) instead (no bootstrap interval)."""
    band = Band(min, max)
    if norm == "sup":
        if study.sup_error is None:
            return Measurement(math.nan, None, None, band, skipped="a weak study has no sup-in-time error")
        resolvable, order, note = study.sup_fit()
        if not math.isfinite(order):
            return Measurement(math.nan, None, None, band, skipped=note or "no order fitted")
        return Measurement(order, None, None, band, f"sup-in-time RMS errors; no bootstrap interval; fitted on dt = "
                           f"{_dts_text(study.dts[resolvable])}", quantity="fitted order (sup-in-time errors)")
    if not math.isfinite(study.order):
        return Measurement(math.nan, None, None, band, skipped=study.note or "no order fitted")
    low, high = study.order_ci
    interval = math.isfinite(low) and math.isfinite(high)
    se = (high - low) / (2 * Z_95) if interval else None
    ci = f"95% CI [{low:.3f}, {high:.3f}] (path bootstrap)" if interval else "no bootstrap interval"
    return Measurement(float(study.order), se, None, band,
                       f"{ci}; fitted on dt = {_dts_text(study.dts[study.resolvable])}")


@check_kind("resolved_levels", study=True, unit="step sizes resolvable")
def resolved_levels(study, *, min: float | None = None, max: float | None = None) -> Measurement:
    """How many step sizes have an error resolvable above the Monte Carlo noise (|error| > plan.resolvable_se
    SE): the ones the order is fitted on (the project's choice: at least three at reduced fidelity). SKIP when the
    study has fewer step sizes than ``min`` (a smoke profile)."""
    if min is not None and len(study.dts) < min:
        return Measurement(math.nan, None, None, Band(min, max),
                           skipped=f"this profile runs {len(study.dts)} step sizes, fewer than {min:g}")
    resolved = study.dts[study.resolvable]
    return Measurement(float(len(resolved)), None, None, Band(min, max),
                       f"resolved at dt = {_dts_text(resolved) or 'none'} (|error| > {study.resolvable_se:g} SE)")


@check_kind("error_at", study=True, quantity="error")
def error_at(study, *, dt: float, min: float | None = None, max: float | None = None,
             absolute: bool = False) -> Measurement:
    """The error at step size ``dt`` (strong: the RMS error; weak: the signed error of the mean, its
    absolute value with ``absolute: true``) lies in [min, max], with its Monte Carlo SE. SKIP when
    ``dt`` is not a step size of the study."""
    band, i = Band(min, max), _dt_index(study, dt)
    if i is None:
        return Measurement(math.nan, None, None, band,
                           skipped=f"dt={dt:g} is not a step size of this study (dts: {_dts_text(study.dts)})")
    error, se = float(study.error[i]), float(study.se[i])
    resolved = "" if study.resolvable[i] else ", not resolvable"
    what = ("RMS error" if study.error_kind == "strong" else "error of the mean") + f" at dt={study.dts[i]:g}"
    return Measurement(abs(error) if absolute else error, se, None, band,
                       f"|error| = {abs(error) / se if se > 0 else math.inf:.1f} SE{resolved}",
                       quantity=f"|{what}|" if absolute else what)


@check_kind("errors_decrease", study=True, quantity="largest rise of |error| to a finer step", unit="SE")
def errors_decrease(study, *, k: float = 2.0) -> Measurement:
    """|error| never grows from one step size to the next finer one by more than k standard errors of
    the difference, sqrt(se_i^2 + se_j^2) (which overstates it for errors on shared paths, so a rise
    counted as a violation is a real one). The value is the largest such rise in SEs."""
    err = np.abs(study.error)
    rise = err[1:] - err[:-1]
    se_diff = np.hypot(study.se[1:], study.se[:-1])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se_diff > 0, rise / se_diff, np.where(rise > 0, np.inf, -np.inf))
    i = _nanargmax(z)
    return Measurement(float(z[i]), None, None, Band(None, k),
                       f"largest rise |error|(dt={study.dts[i + 1]:g}) - |error|(dt={study.dts[i]:g}) = {rise[i]:.3g}")


@check_kind("invariant_drift", study=True, quantity="largest drift")
def invariant_drift(study, *, invariant: str, max: float) -> Measurement:
    """The largest drift |I(z_k) - I(z_0)| of the declared invariant ``invariant`` over every path and step of
    every step size (a study with ``plan.invariants=declared``) is at most ``max``: a method that keeps it exactly
    keeps it to round-off. SKIP when the study recorded no such invariant."""
    band = Band(None, max)
    if invariant not in study.invariants:
        recorded = list(study.invariants) or "none (plan.invariants=none)"
        return Measurement(math.nan, None, None, band, skipped=f"the study recorded no drift of {invariant}: {recorded}")
    drift = study.drift_max[:, study.invariants.index(invariant)]
    i = _nanargmax(drift)
    return Measurement(float(drift[i]), None, None, band, f"at dt={study.dts[i]:g}; per step size: "
                       + ", ".join(f"{d:.2g}" for d in drift), quantity=f"largest drift of {invariant}")
