"""Check kinds on individual kept paths (plan.keep_paths): one realisation's drift, extent, period or
difference from another run's, the kept path a selection rule picks, and what the run's implicit solves did
(its solver statistics, per path and step)."""
from __future__ import annotations

import builtins
import math

import numpy as np

from sgi_run.core.errors import ConfigError
from sgi_run.figures.checks.registry import OBSERVABLE, check_kind
from sgi_run.figures.results import SOLVER_STATISTICS, Band, Measurement, RunData, Series
from sgi_run.figures.statistics import SELECTION_RULES, _nanargmax, departure, select_path


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


@check_kind("path_deviation", choices={"select": SELECTION_RULES}, quantity="max_t |{x} - {x}(0)|")
def path_deviation(series: Series, *, data: RunData, min: float | None = None, max: float | None = None,
                   reference: float | None = None, path: int = 0, start: float = 0.0,
                   end: float | None = None, relative: bool = False, norm_of: str | None = None,
                   all_paths: bool = False, select: str | None = None, other: RunData | None = None) -> Measurement:
    """One realisation: max_t |x(t) - x(0)| along kept path ``path`` (or |x(t) - reference|; divided by
    |x(0)| with ``relative``), over the output times in [start, end] (default: the whole run), lies in
    [min, max], e.g. the drift of a Casimir or of the energy (Luesink et al. 2023, Figs 4-9). A single path has no
    Monte Carlo SE. A vector observable (e.g. ``spectrum``) counts its largest entry's departure,
    relative to its largest |entry| at t = 0 (Ephrati et al. 2024 Figs 4, 6, 8, 10, relative: max_k |lambda_k(t) - lambda_k(0)| / max|lambda(0)|).
    With ``norm_of`` (a kept state view, e.g. ``pi``) x is that vector's length (||pi(t)| - |pi(0)||: Gay-Balmaz & Wu (2024)
    Fig. 1, on the sphere); with ``all_paths`` the largest over every kept path; with ``select`` (a rule of
    statistics.SELECTION_RULES, ``other`` the run whose kept path is the deterministic orbit) the path the rule
    picks, a FAIL when none qualifies (Gay-Balmaz & Wu 2024 Fig. 1: the path that keeps closest to the deterministic energy)."""
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
    name = f"|{norm_of}|" if norm_of else OBSERVABLE    # the observable's name, filled in by evaluate
    origin = (f"{name}(0) = {x[0]:.17g}" if x.ndim == 1 else f"max |{name}(0)| = {np.max(np.abs(x[0])):.17g}") \
        if reference is None else f"reference {reference:g}"
    where = note if len(paths) == 1 and not all_paths else f"{note}, the largest on path {p}"
    start_value = f"{name}(0)" if reference is None else "reference"
    quantity = f"max_t |{name} - {start_value}|" + (f" / |{start_value}|" if relative else "")
    return Measurement(value, None, float(series.t[i]), band, f"{where}; {origin}", quantity=quantity)


@check_kind("solver_statistic", choices={"statistic": SOLVER_STATISTICS}, quantity="solver statistic")
def solver_statistic(series: Series, *, data: RunData, statistic: str, min: float | None = None,
                     max: float | None = None) -> Measurement:
    """What the run's implicit solves did, over all its paths and steps (``statistic``: one of
    results.SOLVER_STATISTICS: iterations per step, the most in one step, the unconverged path-steps or
    their fraction) lies in [min, max] (Luesink et al.'s (2023) text: chord iterations against dt, TMK's non-convergence at
    large dt). A count, no Monte Carlo SE."""
    value = data.solver_statistic(statistic)
    if math.isnan(value):
        raise ConfigError("checks.statistic", statistic, "a statistic of an implicit method's solves (this run's "
                          "method has none)")
    return Measurement(value, None, None, Band(min, max), f"dt = {data.dt:g}", quantity=SOLVER_STATISTICS[statistic])


@check_kind("path_deviation_ratio", quantity="max_t |{x} - {x}(0)| / that of the other run")
def path_deviation_ratio(series: Series, *, other: Series, min: float | None = None, max: float | None = None,
                         reference: float | None = None, path: int = 0) -> Measurement:
    """One realisation of two runs (the same random numbers: same seed and path index): max_t |x(t) -
    x(0)| of this run over that of ``other`` lies in [min, max] (e.g. IM's Casimir drift at least 100x
    TMK's, Luesink et al. (2023) Figs 4-5)."""
    mine, _ = _deviation(series, "path_deviation_ratio", reference, path, 0.0, None)
    theirs, _ = _deviation(other, "path_deviation_ratio", reference, path, 0.0, None)
    a, b = float(np.max(mine)), float(np.max(theirs))
    ratio = a / b if b > 0 else (math.inf if a > 0 else math.nan)
    return Measurement(ratio, None, None, Band(min, max), f"max |x(t) - x(0)| = {a:.3g} vs {b:.3g} (path {path})")


_STATISTICS = {"max": np.max, "min": np.min, "range": np.ptp, "max_abs": lambda x: np.max(np.abs(x)),
               "min_abs": lambda x: np.min(np.abs(x))}


@check_kind("path_difference", quantity="max_t |{x} - {x}_other|")
def path_difference(series: Series, *, other: Series, min: float | None = None, max: float | None = None,
                    path: int = 0, end: float | None = None) -> Measurement:
    """Two runs, one realisation each: max_t |x(t) - x_other(t)| along kept path ``path`` of both, over
    their common output times up to ``end`` (SKIP when a run stops before it), lies in [min, max] (e.g. a
    stochastic path departs visibly from the deterministic one, Ephrati et al. (2024) Figure 1)."""
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


@check_kind("path_extent", choices={"statistic": _STATISTICS, "select": SELECTION_RULES}, quantity="{x}")
def path_extent(series: Series, *, data: RunData, statistic: str, min: float | None = None, max: float | None = None,
                path: int = 0, start: float = 0.0, end: float | None = None, norm_of: str | None = None,
                select: str | None = None, other: RunData | None = None) -> Measurement:
    """One realisation: ``statistic`` (max, min, range = max - min, max_abs, min_abs) of x(t) along kept
    path ``path`` over the output times in [start, end] lies in [min, max] (e.g. gamma3 in [0, 0.94],
    max |pi3| <= 1e-12: Luesink et al. (2023) Figs 1-3). With ``norm_of`` (a kept state view, e.g. ``pi``), x is
    that vector's Euclidean length |pi(t)| instead of the observable. A non-finite value fails every band. With
    ``select`` the path a rule picks (see ``path_deviation``; a FAIL when none qualifies), e.g. Gay-Balmaz & Wu (2024) Fig. 1:
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
    name = f"|{norm_of}|" if norm_of else OBSERVABLE
    quantity = {"max": f"max_t {name}", "min": f"min_t {name}", "range": f"max_t {name} - min_t {name}",
                "max_abs": f"max_t |{name}|", "min_abs": f"min_t |{name}|"}[statistic]
    return Measurement(float(_STATISTICS[statistic](x)), None, t, band,
                       f"{note}: values in [{x.min():.6g}, {x.max():.6g}]", quantity=quantity)


@check_kind("path_period", quantity="mean period")
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


# --- the rigid body's kept paths on its momentum sphere (Gay-Balmaz & Wu 2024 Figs 1, 2) ----------------------------
@check_kind("path_selection", choices={"select": SELECTION_RULES}, unit="kept paths qualify")
def path_selection(series: Series, *, data: RunData, select: str, other: RunData | None = None,
                   min: float | None = None, max: float | None = None, end: float | None = None) -> Measurement:
    """How many kept paths satisfy a selection rule's condition (statistics.SELECTION_RULES, over the output times
    up to ``end``; SKIP when the run stops before it) lies in [min, max]: the project's criterion for Gay-Balmaz & Wu (2024) Fig. 1 (both paths
    exist among the candidates) and Fig. 2 (some member crossed the separatrix by t = 50, some never did). The
    detail names the path the rule picks (with ``other``, the deterministic orbit, for ``farthest_crossing``)."""
    band = Band(min, max)
    if end is not None and series.t[-1] < end - 1e-9:
        return Measurement(math.nan, None, end, band, skipped=f"t={end:g} is beyond T={series.t[-1]:g}")
    chosen = select_path(data, select, other, end=end)
    return Measurement(float(chosen.qualifying), None, end, band, chosen.text())
