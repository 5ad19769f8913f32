"""Check kinds on the whole ensemble at one time: snapshots of the paths' states (variances, densities,
constraint residuals, one state's spectrum), statistics and spreads over every kept path, the heavy top's
effective potential from a kept path's momenta, and the solvability map of the run's own integrator."""
from __future__ import annotations

import builtins
import math

import numpy as np

from sgi_run.core.fields import is_number
from sgi_run.figures import fields
from sgi_run.figures.checks.registry import _skip, check_kind
from sgi_run.figures.results import Band, Measurement, RunData, Series
from sgi_run.figures.statistics import (POTENTIAL_STATISTICS, SOLVABILITY_NEEDS, bin_averages, ensemble_spread, histogram_density,
                                       increment_text, potential_from_run, potential_statistic, solvability_map,
                                       valid_increments)

def _no_snapshot(at, band: Band) -> Measurement:
    when = "the final time" if at is None else f"t={at:g}"
    return Measurement(math.nan, None, at, band, skipped=f"the run stored no snapshot of the paths' states at {when} (plan.snapshots)")


@check_kind("snapshot_variance", quantity="Var")
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
                       f"Var({coordinate}) = {var:.5g} over {x.size} paths",
                       quantity=f"Var({coordinate})" + (" - reference" if reference is not None else ""))


@check_kind("constraint_residual", quantity="largest constraint residual")
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


@check_kind("density_l1", quantity="L1 distance of the histogram to the exact density")
def density_l1(series: Series, *, data: RunData, coordinate: str, at: float | None = None, density: str, bins: int,
               range: list, period: float | None = None, base: float = 0.05, k: float = 3.0) -> Measurement:
    """L1 distance between the normalised histogram of ``coordinate`` at snapshot time ``at`` and the
    exact density (a system method, e.g. ``gibbs_density_x``), bin by bin:
    sum |hist - exact bin average| * width <= base + k sqrt(bins / paths) (Kraus & Tyranowski 2021, Figs 4.8/4.9)."""
    x = data.samples(coordinate, at)
    if x is None:
        return _no_snapshot(at, Band(None, base))
    edges, hist = histogram_density(x, bins, *range, period=period)
    exact = bin_averages(getattr(data.system, density), edges)
    l1 = float(np.sum(np.abs(hist - exact) * np.diff(edges)))
    n = int(np.isfinite(x).sum())
    return Measurement(l1, None, at, Band(None, base + k * math.sqrt(bins / n)),
                       f"{bins} bins, {n} paths, against {density}")


@check_kind("ks_test", quantity="p", unit="(Kolmogorov-Smirnov p-value)")
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


# --- spectra of a snapshot (Ephrati et al. 2024 Figure 2) ------------------------------------------------------
SPECTRUM_QUANTITIES = ("enstrophy", "energy")


def _degrees_text(above: int | None, at_most: int | None) -> str:
    """"l > 10", "l <= 10", "10 < l <= 20" or "every l"."""
    if above is not None and at_most is not None:
        return f"{above} < l <= {at_most}"
    return f"l > {above}" if above is not None else f"l <= {at_most}" if at_most is not None else "every l"


@check_kind("spectrum_fraction", choices={"quantity": SPECTRUM_QUANTITIES},
            needs_system_method="enstrophy_spectrum(state)", quantity="fraction of the spectrum")
def spectrum_fraction(series: Series, *, data: RunData, quantity: str, at: float | None = None,
                      above: int | None = None, at_most: int | None = None, min: float | None = None,
                      max: float | None = None, path: int = 0) -> Measurement:
    """One path's state at snapshot time ``at`` (default: the last snapshot): the fraction of its
    ``quantity`` (``enstrophy``: S_l = sum_m omega_lm^2; ``energy``: E_l = S_l / (l(l+1))) in the degrees
    ``above`` < l <= ``at_most`` (either end open), from the system's ``enstrophy_spectrum(state) -> (S_l,
    E_l)``, lies in [min, max] (Ephrati et al. 2024 Figure 2: the cascade to small scales, the large-scale
    condensate). One realisation: no Monte Carlo SE. SKIP when the run stored no snapshot at ``at``."""
    band = Band(min, max)
    state = data.state(at, path)
    if state is None:
        return _no_snapshot(at, band)
    spectra = fields.method_of(data.system, "enstrophy_spectrum")(state)
    spectrum = np.asarray(spectra[SPECTRUM_QUANTITIES.index(quantity)], float)
    l = np.arange(spectrum.size)
    chosen = (l > (-1 if above is None else above)) & (l <= (spectrum.size if at_most is None else at_most))
    part, total = float(np.sum(spectrum[chosen])), float(np.sum(spectrum))
    t = at if at is not None else (data.snapshot_times[-1] if data.snapshot_times else None)
    return Measurement(part / total if total > 0 else math.nan, None, t, band,
                       f"path {path}: {quantity} in {_degrees_text(above, at_most)} = {part:.4g} of {total:.6g} "
                       f"(l = 0..{spectrum.size - 1})",
                       quantity=f"fraction of the {quantity} in {_degrees_text(above, at_most)}")


# --- the heavy top's effective potential from a run's momenta (Gay-Balmaz & Wu 2024 section 8, Figs 3, 10, 13) -------
@check_kind("effective_potential", choices={"statistic": POTENTIAL_STATISTICS}, quantity="statistic of V")
def effective_potential(series: Series, *, data: RunData, statistic: str, at: float | None = 0.0,
                        minus_at: float | None = None, absolute: bool = False, min: float | None = None,
                        max: float | None = None, path: int = 0, window: list | None = None) -> Measurement:
    """The symmetric heavy top's effective potential V(theta; p_psi(t), p_phi(t)) and reduced energy E'(t),
    both from kept path ``path`` of the run at output time ``at`` (its observables p_psi, p_phi, E_prime):
    ``statistic`` (one of POTENTIAL_STATISTICS, see ``potential_statistic``) lies in [min, max]. With
    ``minus_at`` the value is the statistic at ``at`` minus the one at ``minus_at`` (its absolute value with
    ``absolute: true``), e.g. |E'(20) - E'(0)| (Gay-Balmaz & Wu 2024 Figs 3, 10, 13). One realisation: no SE. SKIP when
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
    what = _POTENTIAL_TEXT[statistic]
    quantity = what if minus_at is None else f"{what} (t={at:g}) - {what} (t={minus_at:g})"
    return Measurement(float(value), None, float(series.t[series.index_at(at)]), band, f"path {path}: " + "; ".join(details),
                       quantity=f"|{quantity}|" if absolute else quantity)


# How a verdict line names each of POTENTIAL_STATISTICS.
_POTENTIAL_TEXT = {"argmin": "argmin_θ V(θ)", "min": "min_θ V(θ)", "root_low": "lower root of V(θ) = E'",
                   "root_high": "upper root of V(θ) = E'", "depth": "E' - min_θ V(θ)",
                   "min_curvature": "min V''(θ) over the window", "E_prime": "E'"}


# --- a statistic over every kept path (Gay-Balmaz & Wu 2024 Figs 6-13: the fraction of seeds that ...) ------------------
PER_PATH = ("value", "change", "abs_change", "running_min", "running_max")
ACROSS_PATHS = ("fraction_above", "fraction_below", "median")


@check_kind("across_paths", choices={"per_path": PER_PATH, "statistic": ACROSS_PATHS}, quantity="statistic over the kept paths")
def across_paths(series: Series, *, per_path: str, statistic: str, at: float | None = None, threshold: float = 0.0,
                 start: float = 0.0, min: float | None = None, max: float | None = None) -> Measurement:
    """A statistic over the run's kept paths, each path reduced to one number ``per_path``: x(at) (``value``),
    x(at) - x(0) (``change``), |x(at) - x(0)| (``abs_change``), or the least/largest x over the output times in
    [start, at] (``running_min``/``running_max``). ``statistic``: the fraction of paths above or below
    ``threshold`` (binomial SE sqrt(p(1 - p)/n)) or the median (SE 1.2533 sd/sqrt(n), the normal approximation)
    lies in [min, max] (the project's criteria for Gay-Balmaz & Wu (2024) Figs 6-13: e.g. |E'(20) - E'(0)| > 0.01 in 94% of 200 seeds, the median running min of
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
    quantity = (f"median of the paths' {per_path}" if statistic == "median" else
                f"fraction of paths with {per_path} {'>' if statistic == 'fraction_above' else '<'} {threshold:g}")
    return Measurement(value, se, float(series.t[i]), band,
                       f"{per_path} over {n} kept paths: 5-95% [{np.percentile(values, 5):.4g}, "
                       f"{np.percentile(values, 95):.4g}], median {np.median(values):.4g}", quantity=quantity)


# --- the rigid body's kept paths on its momentum sphere (Gay-Balmaz & Wu 2024 Figs 1, 2) ----------------------------
def _times(value, empty: bool) -> bool:
    """Whether ``value`` is an output time or a non-empty list of them (or, with ``empty``, null)."""
    return (empty and value is None) or is_number(value) or (isinstance(value, list) and len(value) > 0
                                                              and all(is_number(v) for v in value))


def _largest_spread(data: RunData, times, view: str) -> tuple[float | None, str]:
    """(the largest mean pairwise distance over ``times``, as text per time); None when a time is not an output."""
    spreads = {float(t): ensemble_spread(data, t, view) for t in (times if isinstance(times, list) else [times])}
    if any(v is None for v in spreads.values()):
        return None, ""
    return builtins.max(spreads.values()), ", ".join(f"spread({t:g}) = {v:.4g}" for t, v in spreads.items())


@check_kind("ensemble_spread", quantity="spread",
            shapes={"at": (lambda v: _times(v, empty=False), "an output time or a list of them"),
                    "minus_at": (lambda v: _times(v, empty=True), "an output time, a list of them or null")})
def spread_check(series: Series, *, data: RunData, at: float | list, minus_at: float | list | None = None,
                 view: str = "pi", min: float | None = None, max: float | None = None) -> Measurement:
    """The ensemble's spread at output time ``at``, the mean pairwise Euclidean distance between the kept paths'
    ``view`` (the project's measure: Gay-Balmaz & Wu (2024) gives no numbers for Fig. 2), minus the spread at ``minus_at``, lies in [min, max]. A list of times takes the
    largest spread over them: the project's criterion for Gay-Balmaz & Wu (2024) Fig. 2, spread(5) < spread(20) < max(spread(40), spread(50)) (the
    spread saturates on the sphere). Kept paths of one run: no Monte Carlo SE. SKIP when a time is not an
    output time of the run."""
    band = Band(min, max)
    value, text = _largest_spread(data, at, view)
    if value is not None and minus_at is not None:
        subtracted, more = _largest_spread(data, minus_at, view)
        value, text = (None, "") if subtracted is None else (value - subtracted, f"{text}; {more}")
    if value is None:
        return Measurement(math.nan, None, None, band, skipped=f"t={at} or {minus_at} is not an output time "
                           f"of this run (T={series.t[-1]:g})")
    quantity = f"spread({at})" + (f" - spread({minus_at})" if minus_at is not None else "")
    return Measurement(float(value), None, None, band, f"{text} ({len(data.kept[view])} kept paths)",
                       quantity=quantity.replace("[", "max(").replace("]", ")"))


# --- the solvability of the Cayley LGVI's implicit equations (Gay-Balmaz & Wu 2024 eqs. (54), (62), (63), Fig. 14) ----------------
SOLVABILITY_STATISTICS = ("norm_min", "norm_max", "max_abs_A", "max_abs_B", "max_iterations", "unconverged")


@check_kind("solvability", choices={"statistic": SOLVABILITY_STATISTICS}, quantity="statistic of the solves",
            shapes={"increments": (valid_increments, 'a list of increment vectors, entries numbers or "D" / '
                                   '"-D" (+-the truncation bound), e.g. [[0, 0, 0], [D, D, D]]')},
            needs_integrator_method=SOLVABILITY_NEEDS)
def solvability(series: Series, *, data: RunData, statistic: str, increments: list, radius: float = 1.0,
                min: float | None = None, max: float | None = None) -> Measurement:
    """Gay-Balmaz & Wu's (2024) Figure 14 from the run's own integrator: the rigid body's implicit equations (62) solved for
    (A, B) at every point of the 91 x 181 mesh of the sphere |Pi| = ``radius`` for each fixed truncated increment
    vector of ``increments`` (numbers, or "D" / "-D": +-the run's truncation bound), at the run's dt;
    ``statistic`` over every point and vector lies in [min, max]: the least (``norm_min``) or largest
    (``norm_max``) ||(A, B)|| = sqrt(|A|^2 + |B|^2), the largest |A| or |B|, the most iterations of the solve in
    one point, the points where it did not converge (Gay-Balmaz & Wu 2024 Fig. 14: all converge in <= 10 iterations at tol
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
                       f"over {points} points each, dt = {data.dt:g}: {detail}", quantity=statistic)
