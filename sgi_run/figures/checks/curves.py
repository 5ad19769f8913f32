"""Check kinds on a run's mean curve E(t): against the exact curve, the method's oracle, a band, a system
reference value, a window average or another run's curve; and the run's health along it (its non-finite
paths, its divergence) and the system's reference values themselves."""
from __future__ import annotations

import builtins
import math

import numpy as np

from sgi_run.figures.checks.registry import _skip, check_kind
from sgi_run.figures.results import Band, Measurement, RunData, Series
from sgi_run.figures.statistics import _difference_se, _nanargmax, window_average


@check_kind("ratio_at", quantity="E/exact")
def ratio_at(series: Series, *, min: float | None = None, max: float | None = None,
             at: float | None = None) -> Measurement:
    """E(t) / exact(t) at one time (default: the final time) lies in [min, max]."""
    band, i = Band(min, max), series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    exact = series.require_exact("ratio_at")[i]
    return Measurement(series.mean[i] / exact, series.sem[i] / abs(exact), float(series.t[i]), band)


@check_kind("relative_error_at", quantity="|E/exact - 1|")
def relative_error_at(series: Series, *, max: float, at: float | None = None) -> Measurement:
    """|E(t) / exact(t) - 1| at one time (default: the final time) is at most max."""
    band, i = Band(None, max), series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    exact = series.require_exact("relative_error_at")[i]
    return Measurement(abs(series.mean[i] / exact - 1), series.sem[i] / abs(exact), float(series.t[i]), band)


@check_kind("max_abs_error", quantity="max_t |E - exact|")
def max_abs_error(series: Series, *, min: float | None = None, max: float | None = None) -> Measurement:
    """max_t |E(t) - exact(t)| lies in [min, max] (either end may be left open); the SE is the one
    at the maximising time."""
    err = np.abs(series.mean - series.require_exact("max_abs_error"))
    i = _nanargmax(err)
    return Measurement(float(err[i]), float(series.sem[i]), float(series.t[i]), Band(min, max))


@check_kind("within_factor", quantity="max_t max(E/exact, exact/E)")
def within_factor(series: Series, *, factor: float) -> Measurement:
    """E(t) stays within a factor of exact(t) at every time: max_t max(E/exact, exact/E) <= factor."""
    ratio = series.mean / series.require_exact("within_factor")
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(ratio > 0, np.maximum(ratio, 1 / ratio), np.inf)
    i = _nanargmax(spread)
    se = series.sem[i] / abs(series.exact[i]) * (1 if ratio[i] >= 1 else 1 / ratio[i] ** 2)
    return Measurement(float(spread[i]), float(se), float(series.t[i]), Band(None, factor))


@check_kind("monotone_decay", quantity="largest rise between output times", unit="SE")
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


@check_kind("agrees_with_exact", quantity="max_t |E - exact|", unit="SE")
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


@check_kind("agrees_with_oracle", quantity="max_t |E - E_method|", unit="σ (the oracle's SE at this path count)")
def agrees_with_oracle(series: Series, *, k: float = 4.0) -> Measurement:
    """|E(t) - E_method(t)| <= k sigma(t) at every output time, where E_method is the method's own
    exact mean and sigma the standard error the oracle predicts for this many paths (the project's
    criterion for Kraus & Tyranowski (2021) Figure 4.1). Where sigma is zero the two must agree to round-off."""
    mean, sigma = series.require_oracle("agrees_with_oracle")
    err = np.abs(series.mean - mean)
    roundoff = 1e-12 * np.maximum(1.0, np.abs(mean))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sigma > 0, err / sigma, np.where(err <= roundoff, 0.0, np.inf))
    i = _nanargmax(z)
    return Measurement(float(z[i]), None, float(series.t[i]), Band(None, k),
                       f"largest |E - E_method| {err[i]:.3g} = {z[i]:.2f} sigma")


@check_kind("mc_error_matches_oracle", quantity="max_t SE/E measured / predicted")
def mc_error_matches_oracle(series: Series, *, rtol: float = 0.2) -> Measurement:
    """The measured max_t SE/E over the predicted max_t sigma/E_method (fourth-moment oracle) lies
    in [1 - rtol, 1 + rtol] (the project's criterion for Kraus & Tyranowski (2021) Figure 4.1)."""
    mean, sigma = series.require_oracle("mc_error_matches_oracle")
    with np.errstate(divide="ignore", invalid="ignore"):
        measured = np.nanmax(np.where(np.abs(series.mean) > 0, series.sem / np.abs(series.mean), np.nan))
        predicted = np.nanmax(np.where(np.abs(mean) > 0, sigma / np.abs(mean), np.nan))
    return Measurement(float(measured / predicted), None, None, Band(1 - rtol, 1 + rtol),
                       f"max SE/E measured {measured:.3g}, predicted {predicted:.3g}")


@check_kind("identical_to", quantity="max_t |E - E_other| / |E_other|")
def identical_to(series: Series, *, other: Series, rtol: float = 1e-12, at: float | None = "all") -> Measurement:
    """The run's mean curve equals another run's to round-off: max_t |E - E_other| / |E_other| <= rtol
    (e.g. Heun and R2 on the Kubo oscillator, the same map given the same increments); with ``at``,
    at that one time only (e.g. t = 0: the same initial condition)."""
    if at != "all":
        i, j = series.index_at(at), other.index_at(at)
        if i is None or j is None:
            return _skip(at, series, Band(None, rtol))
        rel = abs(series.mean[i] - other.mean[j]) / builtins.max(abs(other.mean[j]), np.finfo(float).tiny)
        return Measurement(float(rel), None, float(series.t[i]), Band(None, rtol), quantity="|E - E_other| / |E_other|")
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(series.mean - other.mean) / np.maximum(np.abs(other.mean), np.finfo(float).tiny)
    i = _nanargmax(rel)
    return Measurement(float(rel[i]), None, float(series.t[i]), Band(None, rtol))


@check_kind("value_at", quantity="E")
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
    quantity = "E - reference" if reference is not None else "E"
    quantity = f"({quantity}) / max(|E({relative_to_initial})(0)|, {floor:g})" if relative_to_initial else quantity
    return Measurement(float(series.mean[i] - ref) / scale, sem, float(series.t[i]), band, detail, quantity=quantity)


def _initial_scale(data: RunData, observable: str | None, floor: float) -> float:
    """max(|E(observable)(0)|, floor), or 1 without an observable (Fig 4.10: H_ref = max(H0, 0.5))."""
    return builtins.max(abs(float(data.curve(observable).mean[0])), floor) if observable else 1.0


@check_kind("agrees_at", quantity="|E - reference|", unit="SE")
def agrees_at(series: Series, *, data: RunData, reference, at: float | None = None, k: float = 4.0) -> Measurement:
    """|E(t) - reference| <= k SE(t) at one time (a sampler or an ergodic limit against its exact value)."""
    band, i = Band(None, k), series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    ref = data.reference(reference)
    err = series.mean[i] - ref
    z = abs(err) / series.sem[i] if series.sem[i] > 0 else (0.0 if abs(err) <= 1e-12 * max(1, abs(ref)) else math.inf)
    return Measurement(float(z), None, float(series.t[i]), band,
                       f"E = {series.mean[i]:.6g} ± {series.sem[i]:.2g}, reference {ref:.6g}")


@check_kind("window_mean", quantity="window mean")
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
    quantity = "window mean" if reference is None else "|window mean - reference|" if absolute else "window mean - reference"
    return Measurement(abs(mean - ref) if absolute else mean - ref, se, None, band,
                       f"mean over [{start:g}, {end:g}] = {mean:.5g}" + (f", reference {ref:.5g}" if reference is not None else ""),
                       quantity=quantity)


@check_kind("window_relative_deviation", quantity="(window mean - reference) / |reference|")
def window_relative_deviation(series: Series, *, data: RunData, start: float, end: float, reference,
                              min: float | None = None, max: float | None = None) -> Measurement:
    """(P - reference) / |reference|, P the time average of E(t) over [start, end], lies in [min, max]: how far
    a plateau is from the value a paper says it reaches, as a fraction of it (-0.16: 16% below). Its SE is the
    window's SE over |reference| (the reference is computed, not sampled)."""
    band, window = Band(min, max), window_average(series, start, end)
    if window is None:
        return Measurement(math.nan, None, end, band, skipped=f"the window [{start:g}, {end:g}] is beyond T={series.t[-1]:g}")
    ref = data.reference(reference)
    mean, se = window
    return Measurement((mean - ref) / abs(ref), se / abs(ref), None, band,
                       f"mean over [{start:g}, {end:g}] = {mean:.5g}, reference {ref:.6g}")


@check_kind("window_deviation_ratio", quantity="(P - reference) / (P_other - reference)")
def window_deviation_ratio(series: Series, *, other: Series, data: RunData, start: float, end: float, reference,
                           min: float | None = None, max: float | None = None) -> Measurement:
    """(P - reference) / (P_other - reference), P and P_other the time averages over [start, end] of this run
    and ``other``: how a bias scales between two runs (this run at step size h/2, the other at h: about 1/2 for
    an O(h) bias, 1/4 for O(h^2)). The SE is the first-order (delta-method) one of the ratio with the two window
    SEs taken as independent: runs at different step sizes draw different increments, so their plateaus are
    nearly uncorrelated even from the same seed."""
    band, mine, theirs = Band(min, max), window_average(series, start, end), window_average(other, start, end)
    if mine is None or theirs is None:
        return Measurement(math.nan, None, end, band, skipped=f"the window [{start:g}, {end:g}] is beyond T")
    ref = data.reference(reference)
    (p, se_p), (q, se_q) = mine, theirs
    a, b = p - ref, q - ref
    if b == 0 or not math.isfinite(b):
        return Measurement(math.nan, None, None, band, f"P_other - reference = {b:.4g}: no ratio")
    ratio = a / b
    return Measurement(ratio, math.hypot(se_p / b, a * se_q / b ** 2), None, band,
                       f"P - ref = {a:.4g} ± {se_p:.2g}, P_other - ref = {b:.4g} ± {se_q:.2g} (ref {ref:.6g})")


@check_kind("change_between", quantity="E(end) - E(start)")
def change_between(series: Series, *, start: float, end: float, min: float | None = None,
                   max: float | None = None) -> Measurement:
    """E(end) - E(start) lies in [min, max] (e.g. a curve still rising: the project's criterion for Bou-Rabee & Owhadi (2007) Fig. 2.1). The SE is
    hypot(SE(start), SE(end)), an upper bound: on the same paths the two values are positively
    correlated."""
    band, i, j = Band(min, max), series.index_at(start), series.index_at(end)
    if i is None or j is None:
        return _skip(end, series, band)
    return Measurement(float(series.mean[j] - series.mean[i]), float(math.hypot(series.sem[i], series.sem[j])),
                       float(series.t[j]), band, f"E({series.t[i]:g}) = {series.mean[i]:.5g}, E({series.t[j]:g}) = {series.mean[j]:.5g}")


@check_kind("settles_to_window", quantity="max_{t >= start} |E - plateau|")
def settles_to_window(series: Series, *, start: float, plateau: list, max: float) -> Measurement:
    """From ``start`` on, E(t) stays within ``max`` of its plateau P (the time average over
    ``plateau`` = [a, b]): max_{t >= start} |E(t) - P| (the project's criterion for Bou-Rabee & Owhadi (2007) Fig. 2.1). The SE is that of E at the
    worst time."""
    band, average = Band(None, max), window_average(series, *plateau)
    if average is None:
        return Measurement(math.nan, None, plateau[1], band, skipped=f"the window {list(plateau)} is beyond T={series.t[-1]:g}")
    deviation = np.where(series.t >= start - 1e-9, np.abs(series.mean - average[0]), -np.inf)
    i = _nanargmax(deviation)
    return Measurement(float(deviation[i]), float(series.sem[i]), float(series.t[i]), band,
                       f"plateau {average[0]:.5g} over [{plateau[0]:g}, {plateau[1]:g}]; E = {series.mean[i]:.5g}")


@check_kind("max_abs_value", quantity="max_t |E|")
def max_abs_value(series: Series, *, data: RunData, min: float | None = None, max: float | None = None,
                  start: float = 0.0, end: float | None = None, relative_to_initial: str | None = None,
                  floor: float = 0.0) -> Measurement:
    """max |E(t)| over the output times in [start, end] (default: the whole run) lies in [min, max],
    e.g. the drift of an ``H_change`` curve. With ``relative_to_initial: H`` it is divided by
    max(|E(H)(0)|, floor) (the project's criterion for Kraus & Tyranowski (2021) Figure 4.10: H_ref = max(H0, 0.5))."""
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
                       "; ".join(x for x in (f"E = {series.mean[i]:.4g}", detail) if x),
                       quantity="max_t |E| / scale" if relative_to_initial else None)


@check_kind("abs_ratio_at", quantity="|E| / |E_other|")
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


@check_kind("max_relative_se", quantity="max_t SE/|E|")
def max_relative_se(series: Series, *, data: RunData, max: float, reference_paths: int | None = None) -> Measurement:
    """max_t SE(t) / |E(t)|, rescaled to ``reference_paths`` paths (x sqrt(paths / reference_paths)),
    is at most ``max``: the paper's "maximum relative Monte Carlo error" at its own path count."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(series.mean) > 0, series.sem / np.abs(series.mean), np.nan)
    i = _nanargmax(np.nan_to_num(rel, nan=-np.inf))
    factor = math.sqrt(data.paths / reference_paths) if reference_paths and data.paths else 1.0
    return Measurement(float(rel[i] * factor), None, float(series.t[i]), Band(None, max),
                       f"max SE/E = {rel[i]:.3g} at {data.paths} paths" + (f", = {rel[i] * factor:.3g} at {reference_paths}" if reference_paths else ""))


@check_kind("reference_value", quantity="reference value")
def reference_value(series: Series, *, data: RunData, reference, min: float | None = None,
                    max: float | None = None) -> Measurement:
    """A reference value the system computes (e.g. ``equilibrium_mean:two_H`` by quadrature) lies in
    [min, max]: the paper's printed value, checked against the code's, never used in its place."""
    return Measurement(data.reference(reference), None, None, Band(min, max), "computed by the code",
                       quantity=str(reference))


@check_kind("all_finite", quantity="most non-finite paths at one time", unit="paths")
def all_finite(series: Series, *, data: RunData, max: int = 0) -> Measurement:
    """At most ``max`` paths (default none) went non-finite at any output time."""
    worst = int(np.max(data.nonfinite)) if data.nonfinite is not None else 0
    i = int(np.argmax(data.nonfinite)) if data.nonfinite is not None else 0
    return Measurement(float(worst), None, float(series.t[i]) if worst else None, Band(None, max),
                       f"of {data.paths}")


@check_kind("nonfinite_fraction_at", quantity="fraction of paths non-finite")
def nonfinite_fraction_at(series: Series, *, data: RunData, at: float | None = None, min: float | None = None,
                          max: float | None = None) -> Measurement:
    """The fraction of paths that are non-finite at one time (default: the final time) lies in [min, max]
    (a method's blow-up, or a constraint solve with no solution, Bou-Rabee & Owhadi (2007) Figs 2.1 / 2.2)."""
    band, i = Band(min, max), series.index_at(at)
    if i is None:
        return _skip(at, series, band)
    count = int(data.nonfinite[i]) if data.nonfinite is not None else 0
    return Measurement(count / data.paths, None, float(series.t[i]), band, f"{count} of {data.paths} paths")


@check_kind("diverged_by", quantity="time the run is declared diverged")
def diverged_by(series: Series, *, data: RunData, at: float, mean_above: float = 1e6) -> Measurement:
    """The run is declared diverged no later than ``at``: the first output time where some path is
    non-finite or |E| exceeds ``mean_above`` (the project's divergence rule; not in Bou-Rabee & Owhadi (2007)); infinity when it never does."""
    first = data.diverged_at(series, mean_above)
    return Measurement(first, None, None, Band(None, at),
                       "never" if math.isinf(first) else f"first non-finite path or |E| > {mean_above:g} at t={first:g}")


@check_kind("window_difference", quantity="P - P_other")
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
                       f"|P - ref| = {abs(p - ref):.4g}, |P_other - ref| = {far:.4g} (ref {ref:.6g}){how}",
                       quantity="|P_other - ref| - |P - ref|")
