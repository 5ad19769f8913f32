"""Statistics of one run's curves that checks and plots share: window averages and their standard
errors (per-path time averages where the run took them), histogram densities, bin averages and the
departure of one kept path from a value, the heavy top's effective potential from a kept path's momenta."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from sgi_run.figures.results import RunData, Series


def departure(x: np.ndarray, origin, relative: bool = False) -> np.ndarray:
    """x(t) - origin along one kept path, divided by max |origin| with ``relative``; a vector observable
    ((t, entries), e.g. a spectrum) gives its largest entry's |departure| at each time."""
    with np.errstate(divide="ignore", invalid="ignore"):
        y = (x - origin) / (np.max(np.abs(origin)) if relative else 1.0)
    return np.max(np.abs(y), axis=1) if y.ndim == 2 else y


def window_average(series: Series, start: float, end: float) -> tuple[float, float] | None:
    """(time average of E over the output times in [start, end], its SE), or None when the run
    stops more than one output interval short of ``end`` (a run at dt = 0.15 ends at 999.9, not
    1000). With per-path time averages over exactly this window (``plan.time_average``) the SE is
    exact: sd(path averages) / sqrt(finite paths). Without them it is a bound, the average
    single-time SE (the SE of a mean of correlated estimates is at most the mean of their SEs)."""
    averages = _path_averages(series, start, end)
    if averages is not None:
        finite = averages[np.isfinite(averages)]
        if finite.size < 2:
            return math.nan, math.nan
        return float(finite.mean()), float(finite.std(ddof=1) / math.sqrt(finite.size))
    inside = (series.t >= start - 1e-9) & (series.t <= end + 1e-9)
    spacing = series.t[1] - series.t[0] if len(series.t) > 1 else 0.0
    if series.t[-1] < end - spacing - 1e-9 or not inside.any():
        return None
    return float(np.mean(series.mean[inside])), float(np.mean(series.sem[inside]))


def has_path_averages(series: Series, start: float, end: float) -> bool:
    """Whether ``window_average`` over [start, end] uses per-path time averages (an exact SE)."""
    return _path_averages(series, start, end) is not None


def _path_averages(series: Series, start: float, end: float) -> np.ndarray | None:
    """The run's per-path time averages, if they were taken over exactly [start, end]."""
    window = series.average_window
    if series.path_average is None or window is None:
        return None
    return series.path_average if np.allclose(window, (start, end), rtol=0, atol=1e-9) else None


def _difference_se(series: Series, other: Series, start: float, end: float, sign_p: float,
                   sign_q: float) -> tuple[float, bool]:
    """(SE of sign_q * Q - sign_p * P from the per-path differences, True) when both runs have per-path
    time averages over the window for the same number of paths (path i of each is a pair; pairs are
    independent across i), else (nan, False). Pairs with a non-finite member are left out."""
    a, b = _path_averages(series, start, end), _path_averages(other, start, end)
    if a is None or b is None or a.shape != b.shape:
        return math.nan, False
    d = sign_q * b - sign_p * a
    d = d[np.isfinite(d)]
    return (float(d.std(ddof=1) / math.sqrt(d.size)), True) if d.size >= 2 else (math.nan, False)


def histogram_density(samples: np.ndarray, bins: int, lo: float, hi: float, period: float | None = None):
    """(edges, density): a histogram normalised by *all* finite samples, so mass outside [lo, hi]
    shows as a deficit; positions on a periodic domain are wrapped into [0, period) first."""
    x = samples[np.isfinite(samples)]
    if period:
        x = np.mod(x, period)
    counts, edges = np.histogram(x, bins=bins, range=(lo, hi))
    return edges, counts / (x.size * np.diff(edges))


def bin_averages(density: Callable, edges: np.ndarray, nodes: int = 16) -> np.ndarray:
    """Average of ``density`` over each bin (Gauss-Legendre, ``nodes`` points per bin)."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    half, mid = np.diff(edges) / 2, (edges[:-1] + edges[1:]) / 2
    return (density(mid[:, None] + half[:, None] * x) * w).sum(axis=1) / 2


def _nanargmax(x: np.ndarray) -> int:
    """Argmax that treats NaN (a mean over no finite paths) as the worst value."""
    return int(np.argmax(np.where(np.isnan(x), np.inf, x)))


# --- the heavy top's effective potential from a run's momenta (spec 002 section 2.8, Figs 3, 10, 13) -------
POTENTIAL_STATISTICS = ("argmin", "min", "root_low", "root_high", "depth", "min_curvature", "E_prime")


def potential_from_run(data: RunData, at: float | None, path: int = 0):
    """(V(theta) as a function of numpy theta, E', t) of kept path ``path`` at output time ``at`` (None: the
    final time): V(theta; p_psi(t), p_phi(t)) = (p_phi - p_psi cos theta)^2 / (2 I1 sin^2 theta) + Mgh cos theta
    with the run's recorded p_psi, p_phi and E_prime and its system's I1 (inertia[0]) and Mgh (``mg``); None
    when the run has no output time ``at``."""
    from sgi_run.systems.lie_poisson import effective_potential as potential

    curves = {name: data.curve(name) for name in ("p_psi", "p_phi", "E_prime")}
    i = curves["p_psi"].index_at(at)
    if i is None:
        return None
    p_psi, p_phi, e_prime = (float(c.require_kept("effective_potential", path)[i]) for c in curves.values())
    i1, mgh = float(data.system.inertia[0]), data.system.mg
    return (lambda theta: np.asarray(potential(np.asarray(theta, float), p_psi, p_phi, i1, mgh), float)), e_prime, \
        float(curves["p_psi"].t[i])


def potential_statistic(v, e_prime: float, statistic: str, window=(0.2, 1.0)) -> float:
    """One number about V on (0, pi): its minimiser (``argmin``, a 20001-point grid refined by a bounded
    scalar minimisation), its minimum (``min``), the roots of V = E' below and above the minimiser
    (``root_low``, ``root_high``, brentq; NaN where V stays below E'), E' - min V (``depth``), E' itself, or
    the least second difference quotient of V over ``window`` (``min_curvature``: > 0 where V is convex)."""
    from scipy import optimize

    if statistic == "E_prime":
        return e_prime
    if statistic == "min_curvature":
        theta = np.linspace(window[0], window[1], 2001)
        return float(np.min(np.diff(v(theta), 2)) / (theta[1] - theta[0]) ** 2)
    theta = np.linspace(1e-3, np.pi - 1e-3, 20001)
    values = v(theta)
    k = int(np.argmin(values))
    lo, hi = theta[max(k - 1, 0)], theta[min(k + 1, theta.size - 1)]
    best = optimize.minimize_scalar(lambda x: float(v(x)), bounds=(lo, hi), method="bounded",
                                    options={"xatol": 1e-12})
    argmin, v_min = float(best.x), float(best.fun)
    if statistic in ("argmin", "min", "depth"):
        return {"argmin": argmin, "min": v_min, "depth": e_prime - v_min}[statistic]
    side = theta < argmin if statistic == "root_low" else theta > argmin
    above = side & (values > e_prime)
    if not above.any():
        return math.nan
    edge = theta[np.flatnonzero(above)[-1 if statistic == "root_low" else 0]]
    a, b = (edge, argmin) if statistic == "root_low" else (argmin, edge)
    return float(optimize.brentq(lambda x: float(v(x)) - e_prime, a, b, xtol=1e-14))
