"""Acceptance checks: generic kinds, each a verdict on one run's mean curve against a band.

A check kind is a function ``(series, **parameters) -> Measurement``; ``evaluate`` turns the
measurement into a ``CheckResult`` with the verdict. Every measured value carries its Monte Carlo
standard error where one exists, and ``margin_se`` says how many standard errors the value lies
inside (+) or outside (-) the band, so a PASS or FAIL that MC noise could flip is visible.

Verdicts: PASS, FAIL, or SKIP when the run does not reach the time the criterion is about (a
smoke run with T=500 cannot say anything about t=5000).

Parameters every kind takes: ``observable`` (which of the run's recorded observables the curve is;
default: the experiment's) and ``tolerance_se`` (default 0): a value outside the band by at most
that many of its standard errors still PASSes, for bands calibrated at more paths than a reduced
profile runs (the margin in SE is always reported). Kinds that need more than one curve (the
whole-state snapshots, other observables, the system's reference values) take ``data``, the
run's ``RunData``, filled in by ``evaluate``.

Kinds registered with ``study=True`` judge a convergence study (a run with ``plan=convergence``)
instead of a mean curve: they take its ``engine.convergence.ConvergenceResult`` (errors against dt,
their SEs, the fitted order and its bootstrap interval) and no ``observable`` (a study's is its
``plan.observable``).
"""
from __future__ import annotations

import builtins
import inspect
import math
from typing import Callable, Mapping

import numpy as np

from sgi_run.core.errors import ConfigError
from sgi_run.figures.results import (FAIL, PASS, SKIP, SOLVER_STATISTICS, Band, CheckResult, Measurement, RunData,
                                     Series, StudyData, as_run_data)
from sgi_run.figures.statistics import (POTENTIAL_STATISTICS, SELECTION_RULES, _difference_se, _nanargmax,
                                       bin_averages, departure, ensemble_spread, histogram_density, increment_text,
                                       potential_from_run, potential_statistic, select_path, solvability_map,
                                       valid_increments, window_average)


# --- the registry ---------------------------------------------------------------------------------
CHECK_KINDS: dict[str, Callable[..., Measurement]] = {}
STUDY_KINDS: set[str] = set()     # the kinds that judge a convergence study, not a mean curve


def check_kind(name: str, study: bool = False):
    def register(fn):
        CHECK_KINDS[name] = fn
        if study:
            STUDY_KINDS.add(name)
        return fn
    return register


def kinds_for(study: bool) -> list[str]:
    """The check kinds for a convergence study (``study``) or for an ensemble run."""
    return sorted(k for k in CHECK_KINDS if (k in STUDY_KINDS) == study)


def kind_mismatch(run: str, study: bool) -> str:
    """What is allowed instead of a kind that does not fit the run (a ``study`` or not)."""
    if study:
        return f"a check kind for a convergence study (run {run} is one: plan=convergence): {kinds_for(True)}"
    return f"a check kind for an ensemble run (run {run} is not a convergence study): {kinds_for(False)}"


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
def identical_to(series: Series, *, other: Series, rtol: float = 1e-12, at: float | None = "all") -> Measurement:
    """The run's mean curve equals another run's to round-off: max_t |E - E_other| / |E_other| <= rtol
    (e.g. Heun and R2 on the Kubo oscillator, the same map given the same increments); with ``at``,
    at that one time only (e.g. t = 0: the same initial condition)."""
    if at != "all":
        i, j = series.index_at(at), other.index_at(at)
        if i is None or j is None:
            return _skip(at, series, Band(None, rtol))
        rel = abs(series.mean[i] - other.mean[j]) / builtins.max(abs(other.mean[j]), np.finfo(float).tiny)
        return Measurement(float(rel), None, float(series.t[i]), Band(None, rtol), "relative difference")
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(series.mean - other.mean) / np.maximum(np.abs(other.mean), np.finfo(float).tiny)
    i = _nanargmax(rel)
    return Measurement(float(rel[i]), None, float(series.t[i]), Band(None, rtol), "relative difference")


@check_kind("value_at")
def value_at(series: Series, *, data: RunData, min: float | None = None, max: float | None = None,
             at: float | None = None, reference=None, relative_to_initial: str | None = None,
             floor: float = 0.0) -> Measurement:
    """E(t) - reference at one time (default: the final time) lies in [min, max]. ``reference``: a
    number or a system reference value (``RunData.reference``); none: E(t) itself. With
    ``relative_to_initial`` the value is divided by max(|E(that observable)(0)|, floor)."""
    band, i = Band(min, max), series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    ref = data.reference(reference)
    scale = _initial_scale(data, relative_to_initial, floor)
    sem = float(series.sem[i]) / scale if np.isfinite(series.sem[i]) else None
    detail = f"E = {series.mean[i]:.5g}" + (f", reference {ref:.5g}" if reference is not None else "")
    detail += f", relative to {scale:.4g}" if relative_to_initial else ""
    return Measurement(float(series.mean[i] - ref) / scale, sem, float(series.t[i]), band, detail)


def _initial_scale(data: RunData, observable: str | None, floor: float) -> float:
    """max(|E(observable)(0)|, floor), or 1 without an observable (Fig 4.10: H_ref = max(H0, 0.5))."""
    return builtins.max(abs(float(data.curve(observable).mean[0])), floor) if observable else 1.0


@check_kind("agrees_at")
def agrees_at(series: Series, *, data: RunData, reference, at: float | None = None, k: float = 4.0) -> Measurement:
    """|E(t) - reference| <= k SE(t) at one time (a sampler or an ergodic limit against its exact value)."""
    band, i = Band(None, k), series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    ref = data.reference(reference)
    err = series.mean[i] - ref
    z = abs(err) / series.sem[i] if series.sem[i] > 0 else (0.0 if abs(err) <= 1e-12 * max(1, abs(ref)) else math.inf)
    return Measurement(float(z), None, float(series.t[i]), band,
                       f"E = {series.mean[i]:.6g} ± {series.sem[i]:.2g}, exact {ref:.6g}, error {z:.2f} SE")


@check_kind("window_mean")
def window_mean(series: Series, *, data: RunData, start: float, end: float, min: float | None = None,
                max: float | None = None, reference=None, absolute: bool = False) -> Measurement:
    """The time average of E(t) over the output times in [start, end], minus ``reference`` (its
    absolute value with ``absolute: true``, for "deviates by more than"), lies in [min, max]; its
    SE is the window's SE bound (``window_average``)."""
    band, window = Band(min, max), window_average(series, start, end)
    if window is None:
        return Measurement(math.nan, None, end, band, skipped=f"the window [{start:g}, {end:g}] is beyond T={series.t[-1]:g}")
    ref = data.reference(reference)
    mean, se = window
    return Measurement(abs(mean - ref) if absolute else mean - ref, se, None, band,
                       f"mean over [{start:g}, {end:g}] = {mean:.5g}" + (f", reference {ref:.5g}" if reference is not None else ""))


@check_kind("change_between")
def change_between(series: Series, *, start: float, end: float, min: float | None = None,
                   max: float | None = None) -> Measurement:
    """E(end) - E(start) lies in [min, max] (e.g. a curve still rising: spec 003 F1-5). The SE is
    hypot(SE(start), SE(end)), an upper bound: on the same paths the two values are positively
    correlated."""
    band, i, j = Band(min, max), series.index_at(start), series.index_at(end)
    if i is None or j is None:
        return _skip(end, series, band)
    return Measurement(float(series.mean[j] - series.mean[i]), float(math.hypot(series.sem[i], series.sem[j])),
                       float(series.t[j]), band, f"E({series.t[i]:g}) = {series.mean[i]:.5g}, E({series.t[j]:g}) = {series.mean[j]:.5g}")


@check_kind("settles_to_window")
def settles_to_window(series: Series, *, start: float, plateau: list, max: float) -> Measurement:
    """From ``start`` on, E(t) stays within ``max`` of its plateau P (the time average over
    ``plateau`` = [a, b]): max_{t >= start} |E(t) - P| (spec 003 F1-7). The SE is that of E at the
    worst time."""
    band, average = Band(None, max), window_average(series, *plateau)
    if average is None:
        return Measurement(math.nan, None, plateau[1], band, skipped=f"the window {list(plateau)} is beyond T={series.t[-1]:g}")
    deviation = np.where(series.t >= start - 1e-9, np.abs(series.mean - average[0]), -np.inf)
    i = _nanargmax(deviation)
    return Measurement(float(deviation[i]), float(series.sem[i]), float(series.t[i]), band,
                       f"plateau {average[0]:.5g} over [{plateau[0]:g}, {plateau[1]:g}]; E = {series.mean[i]:.5g}")


@check_kind("max_abs_value")
def max_abs_value(series: Series, *, data: RunData, min: float | None = None, max: float | None = None,
                  start: float = 0.0, end: float | None = None, relative_to_initial: str | None = None,
                  floor: float = 0.0) -> Measurement:
    """max |E(t)| over the output times in [start, end] (default: the whole run) lies in [min, max],
    e.g. the drift of an ``H_change`` curve. With ``relative_to_initial: H`` it is divided by
    max(|E(H)(0)|, floor) (spec 000, Figure 4.10: H_ref = max(H0, 0.5))."""
    band = Band(min, max)
    inside = (series.t >= start - 1e-9) & (series.t <= (series.t[-1] if end is None else end) + 1e-9)
    if end is not None and series.t[-1] < end - 1e-9:
        return Measurement(math.nan, None, end, band, skipped=f"t={end:g} is beyond T={series.t[-1]:g}")
    scale = _initial_scale(data, relative_to_initial, floor)
    detail = f"relative to {scale:.4g} = max(|E({relative_to_initial})(0)|, {floor:g})" if relative_to_initial else ""
    values = np.where(inside, np.abs(series.mean), -np.inf)
    i = _nanargmax(values)
    se = float(series.sem[i]) / scale if np.isfinite(series.sem[i]) else None
    return Measurement(float(np.abs(series.mean[i]) / scale), se, float(series.t[i]), band,
                       "; ".join(x for x in (f"E = {series.mean[i]:.4g}", detail) if x))


# --- single realisations: an observable along one kept path (plan.keep_paths) ---------------------------
def _along_path(series: Series, kind: str, path: int, start: float, end: float | None):
    """(x along kept path ``path``, the mask of output times in [start, end]), or a skip reason."""
    x = series.require_kept(kind, path)
    if end is not None and series.t[-1] < end - 1e-9:
        return x, None, f"t={end:g} is beyond T={series.t[-1]:g}"
    inside = (series.t >= start - 1e-9) & (series.t <= (series.t[-1] if end is None else end) + 1e-9)
    return x, inside, ""


def _deviation(series: Series, kind: str, reference: float | None, path: int, start: float, end: float | None,
               relative: bool = False, values: np.ndarray | None = None):
    """(|x(t) - x(0)| or |x(t) - reference| along a kept path, divided by |x(0)| (or |reference|) when
    ``relative``, -inf outside [start, end]; a skip reason). ``values``: x along the path instead of the
    observable (e.g. a kept vector's length)."""
    x, inside, skipped = _along_path(series, kind, path, start, end)
    if skipped:
        return None, skipped
    x = x if values is None else values
    deviation = np.abs(departure(x, x[0] if reference is None else reference, relative))
    # A non-finite value is the largest deviation there is (a blown-up path), never ignored.
    return np.where(inside, np.where(np.isfinite(deviation), deviation, np.inf), -np.inf), ""


def _chosen_paths(series: Series, data: RunData, kind: str, path: int, all_paths: bool, select: str | None,
                  other: RunData | None, end: float | None) -> tuple[list[int], str, str]:
    """(the kept paths a path check looks at, a note, a skip reason): ``path``; every kept path with
    ``all_paths``; or the one a rule picks (``select``, statistics.SELECTION_RULES, over the output times up to
    ``end``, with ``other`` the deterministic orbit) - none when no kept path qualifies, which fails the check."""
    if end is not None and series.t[-1] < end - 1e-9:
        return [], "", f"t={end:g} is beyond T={series.t[-1]:g}"
    if select is not None:
        if select == "farthest_crossing" and other is None:
            raise ConfigError("checks.other", None, "the run whose kept path 0 is the deterministic orbit "
                              "(farthest_crossing picks the path farthest from it)")
        chosen = select_path(data, select, other, end=end)
        return ([] if chosen.path is None else [chosen.path]), chosen.text(), ""
    if all_paths:
        series.require_kept(kind)     # refuses a run that keeps no paths
        return list(range(len(series.kept))), f"every kept path ({len(series.kept)})", ""
    return [path], f"path {path}", ""


@check_kind("path_deviation")
def path_deviation(series: Series, *, data: RunData, min: float | None = None, max: float | None = None,
                   reference: float | None = None, path: int = 0, start: float = 0.0,
                   end: float | None = None, relative: bool = False, norm_of: str | None = None,
                   all_paths: bool = False, select: str | None = None, other: RunData | None = None) -> Measurement:
    """One realisation: max_t |x(t) - x(0)| along kept path ``path`` (or |x(t) - reference|; divided by
    |x(0)| with ``relative``), over the output times in [start, end] (default: the whole run), lies in
    [min, max], e.g. the drift of a Casimir or of the energy (spec 001, Figs 4-9). A single path has no
    Monte Carlo SE. A vector observable (e.g. ``spectrum``) counts its largest entry's departure,
    relative to its largest |entry| at t = 0 (spec 004: max_k |lambda_k(t) - lambda_k(0)| / max|lambda(0)|).
    With ``norm_of`` (a kept state view, e.g. ``pi``) x is that vector's length (||pi(t)| - |pi(0)||: spec 002
    Fig. 1, on the sphere); with ``all_paths`` the largest over every kept path; with ``select`` (a rule of
    statistics.SELECTION_RULES, ``other`` the run whose kept path is the deterministic orbit) the path the rule
    picks, a FAIL when none qualifies (spec 002 Fig. 1: the path that keeps closest to the deterministic energy)."""
    band = Band(min, max)
    paths, note, skipped = _chosen_paths(series, data, "path_deviation", path, all_paths, select, other, end)
    if skipped or not paths:
        return Measurement(math.nan, None, end, band, note, skipped=skipped)
    worst = (-math.inf, 0, paths[0])
    for p in paths:
        values = np.linalg.norm(data.kept_view(norm_of, p), axis=-1) if norm_of else None
        deviation, skipped = _deviation(series, "path_deviation", reference, p, start, end, relative, values)
        i = _nanargmax(deviation)
        if not deviation[i] <= worst[0]:
            worst = (float(deviation[i]), i, p)
    value, i, p = worst
    x = np.linalg.norm(data.kept_view(norm_of, p), axis=-1) if norm_of else series.require_kept("path_deviation", p)
    name = f"|{norm_of}|" if norm_of else "x"
    origin = (f"{name}(0) = {x[0]:.17g}" if x.ndim == 1 else f"max |x(0)| = {np.max(np.abs(x[0])):.17g}") \
        if reference is None else f"reference {reference:g}"
    where = note if len(paths) == 1 and not all_paths else f"{note}, the largest on path {p}"
    return Measurement(value, None, float(series.t[i]), band, f"{where}; {origin}")


@check_kind("solver_statistic")
def solver_statistic(series: Series, *, data: RunData, statistic: str, min: float | None = None,
                     max: float | None = None) -> Measurement:
    """What the run's implicit solves did, over all its paths and steps (``statistic``: one of
    results.SOLVER_STATISTICS: iterations per step, the most in one step, the unconverged path-steps or
    their fraction) lies in [min, max] (spec 001: chord iterations against dt, TMK's non-convergence at
    large dt). A count, no Monte Carlo SE."""
    value = data.solver_statistic(statistic)
    if math.isnan(value):
        raise ConfigError("checks.statistic", statistic, "a statistic of an implicit method's solves (this run's "
                          "method has none)")
    return Measurement(value, None, None, Band(min, max), f"{SOLVER_STATISTICS[statistic]}; dt = {data.dt:g}")


@check_kind("path_deviation_ratio")
def path_deviation_ratio(series: Series, *, other: Series, min: float | None = None, max: float | None = None,
                         reference: float | None = None, path: int = 0) -> Measurement:
    """One realisation of two runs (the same random numbers: same seed and path index): max_t |x(t) -
    x(0)| of this run over that of ``other`` lies in [min, max] (e.g. IM's Casimir drift at least 100x
    TMK's, spec 001 Figs 4-5)."""
    mine, _ = _deviation(series, "path_deviation_ratio", reference, path, 0.0, None)
    theirs, _ = _deviation(other, "path_deviation_ratio", reference, path, 0.0, None)
    a, b = float(np.max(mine)), float(np.max(theirs))
    ratio = a / b if b > 0 else (math.inf if a > 0 else math.nan)
    return Measurement(ratio, None, None, Band(min, max), f"max |x(t) - x(0)| = {a:.3g} vs {b:.3g} (path {path})")


_STATISTICS = {"max": np.max, "min": np.min, "range": np.ptp, "max_abs": lambda x: np.max(np.abs(x)),
               "min_abs": lambda x: np.min(np.abs(x))}


@check_kind("path_difference")
def path_difference(series: Series, *, other: Series, min: float | None = None, max: float | None = None,
                    path: int = 0, end: float | None = None) -> Measurement:
    """Two runs, one realisation each: max_t |x(t) - x_other(t)| along kept path ``path`` of both, over
    their common output times up to ``end`` (SKIP when a run stops before it), lies in [min, max] (e.g. a
    stochastic path departs visibly from the deterministic one, spec 004 Figure 1)."""
    band = Band(min, max)
    if end is not None and builtins.min(series.t[-1], other.t[-1]) < end - 1e-9:
        return Measurement(math.nan, None, end, band, skipped=f"t={end:g} is beyond T={series.t[-1]:g}")
    mine, theirs = series.require_kept("path_difference", path), other.require_kept("path_difference", path)
    n = builtins.min(len(mine), len(theirs))
    if not np.allclose(series.t[:n], other.t[:n]):
        raise ConfigError("checks.other", "", "a run with the same output times")
    gap = np.abs(mine[:n] - theirs[:n])
    gap = np.where(np.isfinite(gap), gap, np.inf)
    gap = gap.max(axis=tuple(range(1, gap.ndim))) if gap.ndim > 1 else gap
    i = int(np.argmax(gap))
    return Measurement(float(gap[i]), None, float(series.t[i]), band, f"path {path}, {n} output times")


@check_kind("path_extent")
def path_extent(series: Series, *, data: RunData, statistic: str, min: float | None = None, max: float | None = None,
                path: int = 0, start: float = 0.0, end: float | None = None, norm_of: str | None = None,
                select: str | None = None, other: RunData | None = None) -> Measurement:
    """One realisation: ``statistic`` (max, min, range = max - min, max_abs, min_abs) of x(t) along kept
    path ``path`` over the output times in [start, end] lies in [min, max] (e.g. gamma3 in [0, 0.94],
    max |pi3| <= 1e-12: spec 001 Figs 1-3). With ``norm_of`` (a kept state view, e.g. ``pi``), x is
    that vector's Euclidean length |pi(t)| instead of the observable. A non-finite value fails every band. With
    ``select`` the path a rule picks (see ``path_deviation``; a FAIL when none qualifies), e.g. spec 002 Fig. 1:
    the minimum energy of the path that crosses the separatrix."""
    band = Band(min, max)
    if statistic not in _STATISTICS:
        raise ConfigError("checks.statistic", statistic, f"one of {sorted(_STATISTICS)}")
    paths, note, skipped = _chosen_paths(series, data, "path_extent", path, False, select, other, end)
    if skipped or not paths:
        return Measurement(math.nan, None, end, band, note, skipped=skipped)
    path = paths[0]
    x, inside, skipped = _along_path(series, "path_extent", path, start, end)
    if skipped:
        return Measurement(math.nan, None, end, band, skipped=skipped)
    if norm_of is not None:
        x = np.linalg.norm(data.kept_view(norm_of, path), axis=-1)
    x = x[inside]
    if not np.isfinite(x).all():
        return Measurement(math.nan, None, None, band, f"path {path} is not finite")
    i = {"max": np.argmax, "min": np.argmin, "max_abs": lambda v: np.argmax(np.abs(v)),
         "min_abs": lambda v: np.argmin(np.abs(v))}.get(statistic)
    t = float(series.t[inside][i(x)]) if i else None
    return Measurement(float(_STATISTICS[statistic](x)), None, t, band,
                       f"{note}: {statistic}{f' of |{norm_of}|' if norm_of else ''}; values in [{x.min():.6g}, {x.max():.6g}]")


@check_kind("path_period")
def path_period(series: Series, *, min: float | None = None, max: float | None = None, path: int = 0,
                start: float = 0.0, end: float | None = None) -> Measurement:
    """One realisation: the mean period of x(t) along kept path ``path``, from its upward crossings of
    the mid level (min + max) / 2 (interpolated between output times): (last - first) / (crossings - 1)
    lies in [min, max]. SKIP with fewer than two crossings (e.g. a smoke run shorter than a period)."""
    band = Band(min, max)
    x, inside, skipped = _along_path(series, "path_period", path, start, end)
    if skipped:
        return Measurement(math.nan, None, end, band, skipped=skipped)
    t, x = series.t[inside], x[inside]
    level = (np.nanmax(x) + np.nanmin(x)) / 2
    up = np.flatnonzero((x[:-1] < level) & (x[1:] >= level))
    crossings = t[up] + (t[up + 1] - t[up]) * (level - x[up]) / (x[up + 1] - x[up])
    if crossings.size < 2:
        return Measurement(math.nan, None, None, band,
                           skipped=f"fewer than two upward crossings of {level:.4g} in [{t[0]:g}, {t[-1]:g}]")
    period = (crossings[-1] - crossings[0]) / (crossings.size - 1)
    spread = np.ptp(np.diff(crossings)) if crossings.size > 2 else 0.0
    return Measurement(float(period), None, None, band,
                       f"path {path}: {crossings.size - 1} periods, spread of single periods {spread:.3g}")


@check_kind("abs_ratio_at")
def abs_ratio_at(series: Series, *, other: Series, min: float | None = None, max: float | None = None,
                 at: float | None = None) -> Measurement:
    """|E(t)| / |E_other(t)| at one time lies in [min, max] (e.g. RS1's drift at least 3x RS2's)."""
    band, i, j = Band(min, max), series.index_at(at), other.index_at(at)
    if i is None or j is None:
        return _skip(at, series, band)
    a, b = abs(series.mean[i]), abs(other.mean[j])
    ratio = a / b if b > 0 else math.inf
    se = ratio * math.hypot(series.sem[i] / a, other.sem[j] / b) if a > 0 and b > 0 else None
    return Measurement(float(ratio), se, float(series.t[i]), band, f"|E| = {a:.4g} vs {b:.4g}")


@check_kind("max_relative_se")
def max_relative_se(series: Series, *, data: RunData, max: float, reference_paths: int | None = None) -> Measurement:
    """max_t SE(t) / |E(t)|, rescaled to ``reference_paths`` paths (x sqrt(paths / reference_paths)),
    is at most ``max``: the paper's "maximum relative Monte Carlo error" at its own path count."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(series.mean) > 0, series.sem / np.abs(series.mean), np.nan)
    i = _nanargmax(np.nan_to_num(rel, nan=-np.inf))
    factor = math.sqrt(data.paths / reference_paths) if reference_paths and data.paths else 1.0
    return Measurement(float(rel[i] * factor), None, float(series.t[i]), Band(None, max),
                       f"max SE/E = {rel[i]:.3g} at {data.paths} paths" + (f", = {rel[i] * factor:.3g} at {reference_paths}" if reference_paths else ""))


@check_kind("snapshot_variance")
def snapshot_variance(series: Series, *, data: RunData, coordinate: str, at: float | None = None, min: float | None = None,
                      max: float | None = None, reference=None) -> Measurement:
    """Var(coordinate) over the paths' states at snapshot time ``at``, minus ``reference``, lies in
    [min, max]. SE of a sample variance: sqrt((m4 - s^4) / n) with m4 the fourth central moment."""
    band, x = Band(min, max), data.samples(coordinate, at)
    if x is None:
        return _no_snapshot(at, band)
    x = x[np.isfinite(x)]
    var, m4 = np.var(x, ddof=1), np.mean((x - x.mean()) ** 4)
    ref = data.reference(reference)
    return Measurement(float(var - ref), float(np.sqrt(builtins.max(m4 - var**2, 0.0) / x.size)), at, band,
                       f"Var({coordinate}) = {var:.5g} over {x.size} paths")


@check_kind("reference_value")
def reference_value(series: Series, *, data: RunData, reference, min: float | None = None,
                    max: float | None = None) -> Measurement:
    """A reference value the system computes (e.g. ``equilibrium_mean:two_H`` by quadrature) lies in
    [min, max]: the paper's printed value, checked against the code's, never used in its place."""
    return Measurement(data.reference(reference), None, None, Band(min, max), f"computed {reference}")


@check_kind("constraint_residual")
def constraint_residual(series: Series, *, data: RunData, at: float | None = None, max: float = 1e-12) -> Measurement:
    """The largest constraint residual over the finite paths at snapshot time ``at`` (the system's
    ``constraint_residual``, e.g. | |q| - 1 | and |q . p| on the sphere) is at most ``max``."""
    states = data.snapshot(at)
    if states is None:
        return _no_snapshot(at, Band(None, max))
    residual = np.asarray(data.system.constraint_residual(states))
    finite = residual[np.isfinite(residual)]
    return Measurement(float(finite.max()) if finite.size else math.nan, None, at, Band(None, max),
                       f"over {finite.size} finite paths")


@check_kind("all_finite")
def all_finite(series: Series, *, data: RunData, max: int = 0) -> Measurement:
    """At most ``max`` paths (default none) went non-finite at any output time."""
    worst = int(np.max(data.nonfinite)) if data.nonfinite is not None else 0
    i = int(np.argmax(data.nonfinite)) if data.nonfinite is not None else 0
    return Measurement(float(worst), None, float(series.t[i]) if worst else None, Band(None, max),
                       f"most non-finite paths at one time: {worst} of {data.paths}")


@check_kind("nonfinite_fraction_at")
def nonfinite_fraction_at(series: Series, *, data: RunData, at: float | None = None, min: float | None = None,
                          max: float | None = None) -> Measurement:
    """The fraction of paths that are non-finite at one time (default: the final time) lies in [min, max]
    (a method's blow-up, or a constraint solve with no solution, spec 003 F1-4 / F2-4)."""
    band, i = Band(min, max), series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    count = int(data.nonfinite[i]) if data.nonfinite is not None else 0
    return Measurement(count / data.paths, None, float(series.t[i]), band, f"{count} of {data.paths} paths")


@check_kind("diverged_by")
def diverged_by(series: Series, *, data: RunData, at: float, mean_above: float = 1e6) -> Measurement:
    """The run is declared diverged no later than ``at``: the first output time where some path is
    non-finite or |E| exceeds ``mean_above`` (spec 003 pitfall 19); infinity when it never does."""
    first = data.diverged_at(series, mean_above)
    return Measurement(first, None, None, Band(None, at),
                       "never" if math.isinf(first) else f"first non-finite path or |E| > {mean_above:g} at t={first:g}")


@check_kind("window_difference")
def window_difference(series: Series, *, other: Series, start: float, end: float, min: float | None = None,
                      max: float | None = None, reference=None, data: RunData) -> Measurement:
    """Compares the time averages P (over [start, end]) of this run and ``other``. Without
    ``reference``: P - P_other lies in [min, max] (e.g. > 0: increases with c). With it:
    |P_other - ref| - |P - ref| lies in [min, max] (> 0: this run is the closer one; a diverged
    other run counts as infinitely far).

    SE: with per-path time averages of both runs over this window, that of the path-by-path
    difference (paired: runs that share their random numbers, like A, B and C at one c, have a much
    smaller SE of the difference than of each); otherwise the two window SEs combined as independent."""
    band, mine, theirs = Band(min, max), window_average(series, start, end), window_average(other, start, end)
    if mine is None or theirs is None:
        return Measurement(math.nan, None, end, band, skipped=f"the window [{start:g}, {end:g}] is beyond T")
    (p, se_p), (q, se_q) = mine, theirs
    ref = None if reference is None else data.reference(reference)
    # The difference as a linear combination sign_q * Q - sign_p * P (+ a constant): Q - P (the SE of
    # P - Q) without a reference, |Q - ref| - |P - ref| with one.
    sign_p, sign_q = (1.0, 1.0) if ref is None else (math.copysign(1, p - ref), math.copysign(1, q - ref))
    se, paired = _difference_se(series, other, start, end, sign_p, sign_q)
    se = se if paired else math.hypot(se_p, se_q)
    how = "; paired SE" if paired else ""
    if ref is None:
        return Measurement(p - q, se, None, band, f"P = {p:.5g}, P_other = {q:.5g}{how}")
    far = abs(q - ref) if math.isfinite(q) else math.inf
    return Measurement(far - abs(p - ref), se if math.isfinite(far) else None, None, band,
                       f"|P - ref| = {abs(p - ref):.4g}, |P_other - ref| = {far:.4g} (ref {ref:.6g}){how}")


def _no_snapshot(at, band: Band) -> Measurement:
    when = "the final time" if at is None else f"t={at:g}"
    return Measurement(math.nan, None, at, band, skipped=f"the run stored no snapshot of the paths' states at {when} (plan.snapshots)")


@check_kind("density_l1")
def density_l1(series: Series, *, data: RunData, coordinate: str, at: float | None = None, density: str, bins: int,
               range: list, period: float | None = None, base: float = 0.05, k: float = 3.0) -> Measurement:
    """L1 distance between the normalised histogram of ``coordinate`` at snapshot time ``at`` and the
    exact density (a system method, e.g. ``gibbs_density_x``), bin by bin:
    sum |hist - exact bin average| * width <= base + k sqrt(bins / paths) (spec 000, Figs 4.8/4.9)."""
    x = data.samples(coordinate, at)
    if x is None:
        return _no_snapshot(at, Band(None, base))
    edges, hist = histogram_density(x, bins, *range, period=period)
    exact = bin_averages(getattr(data.system, density), edges)
    l1 = float(np.sum(np.abs(hist - exact) * np.diff(edges)))
    n = int(np.isfinite(x).sum())
    return Measurement(l1, None, at, Band(None, base + k * math.sqrt(bins / n)),
                       f"{bins} bins, {n} paths, against {density}")


@check_kind("ks_test")
def ks_test(series: Series, *, data: RunData, coordinate: str, at: float | None = None, cdf: str,
            period: float | None = None, min_p: float = 1e-3) -> Measurement:
    """Kolmogorov-Smirnov test of the paths' ``coordinate`` at snapshot time ``at`` against a system
    distribution function (e.g. ``initial_cdf_x``): the p-value is at least ``min_p``."""
    from scipy import stats

    x = data.samples(coordinate, at)
    if x is None:
        return _no_snapshot(at, Band(min_p, None))
    x = x[np.isfinite(x)]
    result = stats.kstest(np.mod(x, period) if period else x, getattr(data.system, cdf))
    return Measurement(float(result.pvalue), None, at, Band(min_p, None),
                       f"KS statistic {result.statistic:.3g} over {x.size} samples")


# --- spectra of a snapshot (spec 004 section 3.9) ------------------------------------------------------
SPECTRUM_QUANTITIES = ("enstrophy", "energy")
# Check kinds that call a method of the run's system: refused before any compute where it has none.
SYSTEM_METHODS = {"spectrum_fraction": "enstrophy_spectrum"}


def _degrees_text(above: int | None, at_most: int | None) -> str:
    """"l > 10", "l <= 10", "10 < l <= 20" or "every l"."""
    if above is not None and at_most is not None:
        return f"{above} < l <= {at_most}"
    return f"l > {above}" if above is not None else f"l <= {at_most}" if at_most is not None else "every l"


@check_kind("spectrum_fraction")
def spectrum_fraction(series: Series, *, data: RunData, quantity: str, at: float | None = None,
                      above: int | None = None, at_most: int | None = None, min: float | None = None,
                      max: float | None = None, path: int = 0) -> Measurement:
    """One path's state at snapshot time ``at`` (default: the last snapshot): the fraction of its
    ``quantity`` (``enstrophy``: S_l = sum_m omega_lm^2; ``energy``: E_l = S_l / (l(l+1))) in the degrees
    ``above`` < l <= ``at_most`` (either end open), from the system's ``enstrophy_spectrum(state) -> (S_l,
    E_l)``, lies in [min, max] (spec 004 section 3.9: the cascade to small scales, the large-scale
    condensate). One realisation: no Monte Carlo SE. SKIP when the run stored no snapshot at ``at``."""
    band = Band(min, max)
    state = data.state(at, path)
    if state is None:
        return _no_snapshot(at, band)
    spectrum = np.asarray(data.system.enstrophy_spectrum(state)[SPECTRUM_QUANTITIES.index(quantity)], float)
    l = np.arange(spectrum.size)
    chosen = (l > (-1 if above is None else above)) & (l <= (spectrum.size if at_most is None else at_most))
    part, total = float(np.sum(spectrum[chosen])), float(np.sum(spectrum))
    t = at if at is not None else (data.snapshot_times[-1] if data.snapshot_times else None)
    return Measurement(part / total if total > 0 else math.nan, None, t, band,
                       f"path {path}: {quantity} in {_degrees_text(above, at_most)} = {part:.4g} of {total:.6g} "
                       f"(l = 0..{spectrum.size - 1})")


# --- the heavy top's effective potential from a run's momenta (spec 002 section 2.8, Figs 3, 10, 13) -------
@check_kind("effective_potential")
def effective_potential(series: Series, *, data: RunData, statistic: str, at: float | None = 0.0,
                        minus_at: float | None = None, absolute: bool = False, min: float | None = None,
                        max: float | None = None, path: int = 0, window: list | None = None) -> Measurement:
    """The symmetric heavy top's effective potential V(theta; p_psi(t), p_phi(t)) and reduced energy E'(t),
    both from kept path ``path`` of the run at output time ``at`` (its observables p_psi, p_phi, E_prime):
    ``statistic`` (one of POTENTIAL_STATISTICS, see ``potential_statistic``) lies in [min, max]. With
    ``minus_at`` the value is the statistic at ``at`` minus the one at ``minus_at`` (its absolute value with
    ``absolute: true``), e.g. |E'(20) - E'(0)| (spec 002 Figs 3, 10, 13). One realisation: no SE. SKIP when
    the run has no output time ``at`` (or ``minus_at``)."""
    band = Band(min, max)
    window = tuple(window) if window else (0.2, 1.0)
    values, details = [], []
    for when in (at, minus_at) if minus_at is not None else (at,):
        found = potential_from_run(data, when, path)
        if found is None:
            return _skip(when, series, band)
        v, e_prime, t = found
        values.append(potential_statistic(v, e_prime, statistic, window))
        details.append(f"{statistic}(t={t:g}) = {values[-1]:.6g} (E' = {e_prime:.6g})")
    value = values[0] - values[1] if len(values) == 2 else values[0]
    value = abs(value) if absolute else value
    return Measurement(float(value), None, float(series.t[series.index_at(at)]), band, f"path {path}: " + "; ".join(details))


# --- a statistic over every kept path (spec 002 Figs 6-13: the fraction of seeds that ...) ------------------
PER_PATH = ("value", "change", "abs_change", "running_min", "running_max")
ACROSS_PATHS = ("fraction_above", "fraction_below", "median")


@check_kind("across_paths")
def across_paths(series: Series, *, per_path: str, statistic: str, at: float | None = None, threshold: float = 0.0,
                 start: float = 0.0, min: float | None = None, max: float | None = None) -> Measurement:
    """A statistic over the run's kept paths, each path reduced to one number ``per_path``: x(at) (``value``),
    x(at) - x(0) (``change``), |x(at) - x(0)| (``abs_change``), or the least/largest x over the output times in
    [start, at] (``running_min``/``running_max``). ``statistic``: the fraction of paths above or below
    ``threshold`` (binomial SE sqrt(p(1 - p)/n)) or the median (SE 1.2533 sd/sqrt(n), the normal approximation)
    lies in [min, max] (spec 002: e.g. |E'(20) - E'(0)| > 0.01 in 94% of 200 seeds, the median running min of
    theta). SKIP when the run stops before ``at``."""
    band = Band(min, max)
    series.require_kept("across_paths")          # refuses a run that keeps no paths
    x = np.asarray(series.kept, float)
    i = series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    inside = (series.t >= start - 1e-9) & (np.arange(len(series.t)) <= i)
    values = {"value": lambda: x[:, i], "change": lambda: x[:, i] - x[:, 0],
              "abs_change": lambda: np.abs(x[:, i] - x[:, 0]),
              "running_min": lambda: np.min(x[:, inside], axis=1),
              "running_max": lambda: np.max(x[:, inside], axis=1)}[per_path]()
    n = values.size
    if statistic == "median":
        value = float(np.median(values))
        se = float(1.2533 * np.std(values, ddof=1) / math.sqrt(n)) if n > 1 else None
    else:
        value = float(np.mean(values > threshold if statistic == "fraction_above" else values < threshold))
        se = math.sqrt(value * (1 - value) / n) if 0 < value < 1 else None
    return Measurement(value, se, float(series.t[i]), band,
                       f"{per_path} over {n} kept paths: 5-95% [{np.percentile(values, 5):.4g}, "
                       f"{np.percentile(values, 95):.4g}], median {np.median(values):.4g}")


# --- the rigid body's kept paths on its momentum sphere (spec 002 Figs 1, 2) ----------------------------
@check_kind("path_selection")
def path_selection(series: Series, *, data: RunData, select: str, other: RunData | None = None,
                   min: float | None = None, max: float | None = None, end: float | None = None) -> Measurement:
    """How many kept paths satisfy a selection rule's condition (statistics.SELECTION_RULES, over the output times
    up to ``end``; SKIP when the run stops before it) lies in [min, max]: spec 002 Fig. 1 criterion 5 (both paths
    exist among the candidates) and Fig. 2 (some member crossed the separatrix by t = 50, some never did). The
    detail names the path the rule picks (with ``other``, the deterministic orbit, for ``farthest_crossing``)."""
    band = Band(min, max)
    if end is not None and series.t[-1] < end - 1e-9:
        return Measurement(math.nan, None, end, band, skipped=f"t={end:g} is beyond T={series.t[-1]:g}")
    chosen = select_path(data, select, other, end=end)
    return Measurement(float(chosen.qualifying), None, end, band, chosen.text())


def _largest_spread(data: RunData, times, view: str) -> tuple[float | None, str]:
    """(the largest mean pairwise distance over ``times``, as text per time); None when a time is not an output."""
    spreads = {float(t): ensemble_spread(data, t, view) for t in (times if isinstance(times, list) else [times])}
    if any(v is None for v in spreads.values()):
        return None, ""
    return builtins.max(spreads.values()), ", ".join(f"spread({t:g}) = {v:.4g}" for t, v in spreads.items())


@check_kind("ensemble_spread")
def spread_check(series: Series, *, data: RunData, at: float | list, minus_at: float | list | None = None,
                 view: str = "pi", min: float | None = None, max: float | None = None) -> Measurement:
    """The ensemble's spread at output time ``at``, the mean pairwise Euclidean distance between the kept paths'
    ``view`` (spec 002 P15), minus the spread at ``minus_at``, lies in [min, max]. A list of times takes the
    largest spread over them: spec 002 Fig. 2, spread(5) < spread(20) < max(spread(40), spread(50)) (the
    spread saturates on the sphere, P15). Kept paths of one run: no Monte Carlo SE. SKIP when a time is not an
    output time of the run."""
    band = Band(min, max)
    value, text = _largest_spread(data, at, view)
    if value is not None and minus_at is not None:
        subtracted, more = _largest_spread(data, minus_at, view)
        value, text = (None, "") if subtracted is None else (value - subtracted, f"{text}; {more}")
    if value is None:
        return Measurement(math.nan, None, None, band, skipped=f"t={at} or {minus_at} is not an output time "
                           f"of this run (T={series.t[-1]:g})")
    return Measurement(float(value), None, None, band, f"{text} ({len(data.kept[view])} kept paths)")


# --- the solvability of the Cayley LGVI's implicit equations (spec 002 section 2.4, Fig. 14) ----------------
SOLVABILITY_STATISTICS = ("norm_min", "norm_max", "max_abs_A", "max_abs_B", "max_iterations", "unconverged")


@check_kind("solvability")
def solvability(series: Series, *, data: RunData, statistic: str, increments: list, radius: float = 1.0,
                min: float | None = None, max: float | None = None) -> Measurement:
    """Paper 002's Figure 14 from the run's own integrator: the rigid body's implicit equations (62) solved for
    (A, B) at every point of the 91 x 181 mesh of the sphere |Pi| = ``radius`` for each fixed truncated increment
    vector of ``increments`` (numbers, or "D" / "-D": +-the run's truncation bound), at the run's dt;
    ``statistic`` over every point and vector lies in [min, max]: the least (``norm_min``) or largest
    (``norm_max``) ||(A, B)|| = sqrt(|A|^2 + |B|^2), the largest |A| or |B|, the most iterations of the solve in
    one point, the points where it did not converge (spec 002 Fig. 14: all converge in <= 10 iterations at tol
    1e-15, |A|, |B| <= 2, ||(A, B)|| in sqrt 2 (1 +- 4e-5)). A deterministic map: no SE."""
    maps = [solvability_map(data, w, radius) for w in increments]
    per_map = {"norm_min": lambda m: float(np.min(m.norm)), "norm_max": lambda m: float(np.max(m.norm)),
               "max_abs_A": lambda m: float(np.max(m.a)), "max_abs_B": lambda m: float(np.max(m.b)),
               "max_iterations": lambda m: float(np.max(m.iterations)),
               "unconverged": lambda m: float(np.sum(~m.converged))}[statistic]
    values = [per_map(m) for m in maps]
    combine = {"norm_min": builtins.min, "unconverged": sum}.get(statistic, builtins.max)
    points = maps[0].norm.size
    detail = "; ".join(f"{increment_text(w, data.increment_bound)}: {v:.9g}" for w, v in zip(increments, values))
    return Measurement(float(combine(values)), None, None, Band(min, max),
                       f"{statistic} over {points} points each, dt = {data.dt:g}: {detail}")


# --- convergence studies (plan=convergence) ---------------------------------------------------------
Z_95 = 1.959964   # a 95% interval of a normal estimate is ±Z_95 SE


def _dt_index(study, dt: float) -> int | None:
    hits = np.flatnonzero(np.isclose(study.dts, dt, rtol=1e-9, atol=0.0))
    return int(hits[0]) if hits.size else None


def _dts_text(dts) -> str:
    return ", ".join(f"{d:g}" for d in dts)


@check_kind("fitted_order", study=True)
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
                           f"{_dts_text(study.dts[resolvable])}")
    if not math.isfinite(study.order):
        return Measurement(math.nan, None, None, band, skipped=study.note or "no order fitted")
    low, high = study.order_ci
    interval = math.isfinite(low) and math.isfinite(high)
    se = (high - low) / (2 * Z_95) if interval else None
    ci = f"95% CI [{low:.3f}, {high:.3f}] (path bootstrap)" if interval else "no bootstrap interval"
    return Measurement(float(study.order), se, None, band,
                       f"{ci}; fitted on dt = {_dts_text(study.dts[study.resolvable])}")


@check_kind("resolved_levels", study=True)
def resolved_levels(study, *, min: float | None = None, max: float | None = None) -> Measurement:
    """How many step sizes have an error resolvable above the Monte Carlo noise (|error| > plan.resolvable_se
    SE): the ones the order is fitted on (spec 004: at least three at reduced fidelity). SKIP when the
    study has fewer step sizes than ``min`` (a smoke profile)."""
    if min is not None and len(study.dts) < min:
        return Measurement(math.nan, None, None, Band(min, max),
                           skipped=f"this profile runs {len(study.dts)} step sizes, fewer than {min:g}")
    resolved = study.dts[study.resolvable]
    return Measurement(float(len(resolved)), None, None, Band(min, max),
                       f"resolved at dt = {_dts_text(resolved) or 'none'} (|error| > {study.resolvable_se:g} SE)")


@check_kind("error_at", study=True)
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
    return Measurement(abs(error) if absolute else error, se, None, band,
                       f"at dt={study.dts[i]:g}; |error| = {abs(error) / se if se > 0 else math.inf:.1f} SE{resolved}")


@check_kind("errors_decrease", study=True)
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


# --- evaluation -----------------------------------------------------------------------------------
_NOT_PARAMETERS = ("id", "kind", "run", "runs", "criterion", "observable", "tolerance_se")
_FILLED_IN = ("series", "study", "data")   # supplied by evaluate, never written in a check


def parameters(spec: Mapping) -> dict:
    return {k: v for k, v in spec.items() if k not in _NOT_PARAMETERS}


_TYPES = {"float": "a number", "float | None": "a number or null", "int": "an integer",
          "int | None": "an integer or null", "bool": "true or false", "str": "a name", "str | None": "a name or null"}


def _typed(value, annotation: str) -> bool:
    """Whether ``value`` is of a parameter's simple annotated type (other annotations: anything)."""
    if value is None:
        return annotation not in _TYPES or annotation.endswith("| None")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return {"float": number, "float | None": number, "bool": isinstance(value, bool),
            "int": number and float(value).is_integer(), "int | None": number and float(value).is_integer(),
            "str": isinstance(value, str), "str | None": isinstance(value, str)}.get(annotation, True)


# Parameters that name one of a few things: refused at load, before any compute.
_CHOICES = {("path_extent", "statistic"): _STATISTICS, ("solver_statistic", "statistic"): SOLVER_STATISTICS,
            ("spectrum_fraction", "quantity"): SPECTRUM_QUANTITIES, ("fitted_order", "norm"): ("terminal", "sup"),
            ("effective_potential", "statistic"): POTENTIAL_STATISTICS, ("path_deviation", "select"): SELECTION_RULES,
            ("path_extent", "select"): SELECTION_RULES, ("path_selection", "select"): SELECTION_RULES,
            ("solvability", "statistic"): SOLVABILITY_STATISTICS, ("across_paths", "per_path"): PER_PATH,
            ("across_paths", "statistic"): ACROSS_PATHS}
# Parameters of a given shape: refused at load with what they must be.
_SHAPES = {("solvability", "increments"): (valid_increments, 'a list of increment vectors, entries numbers or "D" / '
                                          '"-D" (+-the truncation bound), e.g. [[0, 0, 0], [D, D, D]]'),
           ("ensemble_spread", "at"): (lambda v: _times(v, empty=False), "an output time or a list of them"),
           ("ensemble_spread", "minus_at"): (lambda v: _times(v, empty=True), "an output time, a list of them or null")}


def _times(value, empty: bool) -> bool:
    number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    return (empty and value is None) or number(value) or (isinstance(value, list) and len(value) > 0
                                                           and all(number(v) for v in value))


def validate(spec: Mapping, where: str) -> None:
    """Refuse an unknown kind, a parameter the kind does not take or of the wrong type, or a missing
    one, before any compute."""
    kind = spec.get("kind")
    if kind not in CHECK_KINDS:
        raise ConfigError(f"{where}.kind", kind, f"one of {sorted(CHECK_KINDS)}")
    signature = inspect.signature(CHECK_KINDS[kind])
    taken = [p for p in signature.parameters if p not in _FILLED_IN]
    general = ["tolerance_se"] if kind in STUDY_KINDS else ["observable", "tolerance_se"]
    if kind in STUDY_KINDS and "observable" in spec:
        raise ConfigError(f"{where}.observable", spec["observable"], f"a parameter of {kind}: {taken + general} "
                          "(a convergence study's observable is its plan.observable)")
    for name in parameters(spec):
        if name not in taken:
            raise ConfigError(f"{where}.{name}", spec[name], f"a parameter of {kind}: {taken + general}")
        annotation = signature.parameters[name].annotation
        if not _typed(spec[name], annotation):
            raise ConfigError(f"{where}.{name}", spec[name], f"{_TYPES[annotation]} ({kind}.{name})")
    for (name_kind, name), allowed in _CHOICES.items():
        if name_kind == kind and name in spec and spec[name] not in allowed:
            raise ConfigError(f"{where}.{name}", spec[name], f"one of {sorted(allowed)} ({kind}.{name})")
    for (name_kind, name), (fits, allowed) in _SHAPES.items():
        if name_kind == kind and name in spec and not fits(spec[name]):
            raise ConfigError(f"{where}.{name}", spec[name], f"{allowed} ({kind}.{name})")
    tolerance = spec.get("tolerance_se", 0)
    if not (isinstance(tolerance, (int, float)) and tolerance >= 0):
        raise ConfigError(f"{where}.tolerance_se", tolerance, "a number >= 0")
    for name, p in signature.parameters.items():
        if name not in _FILLED_IN and p.default is inspect.Parameter.empty and name not in spec:
            raise ConfigError(f"{where}.{name}", None, f"a value ({kind} needs {name})")


def evaluate(spec: Mapping, run: str, data: RunData | Series | StudyData,
             runs: Mapping[str, RunData | Series] | None = None) -> CheckResult:
    """Verdict of one check on one run (its ``RunData``, or just its curve; a convergence study's
    ``StudyData`` or ``ConvergenceResult`` for the study kinds); ``runs`` resolves a check's ``other``
    run by id."""
    fn = CHECK_KINDS[spec["kind"]]
    params = parameters(spec)
    study = spec["kind"] in STUDY_KINDS
    if study != (isinstance(data, StudyData) or hasattr(data, "order_ci")):
        raise ConfigError("checks.kind", spec["kind"], kind_mismatch(run, not study))
    if study:
        m = fn(data.result if isinstance(data, StudyData) else data, **params)
    else:
        data = as_run_data(data)
        observable = spec.get("observable")
        if "other" in params:    # the other run's curve, or all of it for a kind that looks at more (an orbit)
            other = as_run_data(runs[params["other"]])
            wants_run = "RunData" in str(inspect.signature(fn).parameters["other"].annotation)
            params["other"] = other if wants_run else other.curve(observable)
        if "data" in inspect.signature(fn).parameters:
            params["data"] = data
        m = fn(data.curve(observable), **params)
    if m.skipped:
        verdict, margin = SKIP, None
    else:
        # Kinds whose value is already in SE units (z-scores) report no se and no margin.
        margin = m.band.margin(m.value) / m.se if m.se and math.isfinite(m.value) else None
        tolerance = spec.get("tolerance_se", 0)
        inside = m.band.contains(m.value) or (tolerance > 0 and margin is not None and margin >= -tolerance)
        verdict = PASS if inside else FAIL
    return CheckResult(id=spec["id"], kind=spec["kind"], run=run, criterion=spec.get("criterion", ""),
                       verdict=verdict, value=float(m.value), se=None if m.se is None else float(m.se),
                       t=m.t, band=str(m.band), margin_se=margin, detail=m.skipped or m.detail, digits=m.band.digits())
