"""Statistics of one run's curves that checks and plots share: window averages and their standard
errors (per-path time averages where the run took them), histogram densities, bin averages and the
departure of one kept path from a value, the heavy top's effective potential from a kept path's momenta, the
rigid body's energy on its momentum sphere, the choice of a kept path by a rule, an ensemble's spread, and the
solvability map of the Cayley LGVI's implicit equations."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from sgi_run.core.fields import is_number
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


# --- the heavy top's effective potential from a run's momenta (Gay-Balmaz & Wu 2024 section 8, Figs 3, 10, 13) -------
POTENTIAL_STATISTICS = ("argmin", "min", "root_low", "root_high", "depth", "min_curvature", "E_prime")


def potential_from_run(data: RunData, at: float | None, path: int = 0):
    """(V(theta) as a function of numpy theta, E', t) of kept path ``path`` at output time ``at`` (None: the
    final time): V(theta; p_psi(t), p_phi(t)) = (p_phi - p_psi cos theta)^2 / (2 I1 sin^2 theta) + Mgh cos theta
    with the run's recorded p_psi, p_phi and E_prime and its system's I1 (inertia[0]) and Mgh (``mg``); None
    when the run has no output time ``at``."""
    from sgi_run.systems.heavy_top import effective_potential as potential

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


# --- the rigid body on its momentum sphere (Gay-Balmaz & Wu 2024 sections 6.1 and 7, Figs 1, 2) ----------------------
def sphere_points(radius: float, n_theta: int, n_phi: int):
    """(theta (n_theta,), phi (n_phi,), points (n_theta, n_phi, 3)): a polar-azimuthal mesh of the sphere of
    ``radius``, both poles and both ends of [0, 2 pi] included (Gay-Balmaz & Wu 2024 Fig. 14; 91 x 181 is the project's choice)."""
    theta, phi = np.linspace(0.0, np.pi, n_theta), np.linspace(0.0, 2 * np.pi, n_phi)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    return theta, phi, radius * np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1)


def sphere_energy(system, radius: float, n_theta: int = 121, n_phi: int = 241):
    """(theta, phi, E) on a mesh of the momentum sphere |Pi| = radius, E the run's own ``system.hamiltonian``
    (never retyped): its level sets are the energy contours of Gay-Balmaz & Wu (2024) Figs 1, 2."""
    import jax

    theta, phi, points = sphere_points(radius, n_theta, n_phi)
    energy = jax.vmap(system.hamiltonian)(points.reshape(-1, 3))
    return theta, phi, np.asarray(energy, float).reshape(points.shape[:2])


def separatrix_energy(system, radius: float) -> float:
    """The energy of the separatrix on the sphere |Pi| = radius: that of the intermediate principal axis (the
    unstable equilibria), the middle of E(radius e_i) over the three axes; 1/4 for I = diag(1, 2, 3), |Pi| = 1."""
    return float(sorted(float(system.hamiltonian(radius * e)) for e in np.eye(3))[1])


def energy_levels(system, radius: float, count: int) -> tuple[np.ndarray, float]:
    """(levels, separatrix): ``count`` energies evenly inside (min E, max E) on the sphere |Pi| = radius (the
    axes' energies) and the separatrix's, which is always among the contours drawn."""
    axes = sorted(float(system.hamiltonian(radius * e)) for e in np.eye(3))
    levels = np.linspace(axes[0], axes[-1], count + 2)[1:-1]
    return levels, axes[1]


SELECTION_RULES = ("least_energy_change", "farthest_crossing")


@dataclasses.dataclass(frozen=True)
class Selection:
    """Which kept path a rule picks (Gay-Balmaz & Wu 2024 Fig. 1), and among how many qualifying paths."""
    rule: str
    path: int | None        # the picked kept path; None when no kept path qualifies
    qualifying: int         # the kept paths that satisfy the rule's condition
    kept: int               # the kept paths looked at
    score: float            # the picked path's max_t |E - E0| or max_t distance to the orbit (NaN: none picked)
    separatrix: float       # the separatrix energy the condition refers to

    def text(self) -> str:
        condition = {"least_energy_change": "never fall below", "farthest_crossing": "fall below"}[self.rule]
        picked = ("none picked" + (" (no deterministic orbit to measure from)" if self.qualifying else "")
                  if self.path is None else
                  f"picked path {self.path}: " + ("max_t |E - E0|" if self.rule == "least_energy_change"
                                                  else "max_t distance to the deterministic orbit")
                  + f" = {self.score:.4g}")
        return (f"{self.qualifying} of {self.kept} kept paths {condition} the separatrix E = {self.separatrix:.6g}; "
                f"{picked}")


def select_path(run: RunData, rule: str, orbit: RunData | None = None, view: str = "pi", energy: str = "H",
                end: float | None = None) -> Selection:
    """The project's reading of Gay-Balmaz & Wu (2024) Fig. 1's choice among the run's kept paths over the output times up to ``end`` (default: all):
    ``least_energy_change``, among the paths whose energy never falls below the separatrix, the one with the
    least max_t |E - E0| ("keeps close to the deterministic path"); ``farthest_crossing``, among the paths whose
    energy does fall below it (crossing the separatrix: the axis of rotation changes), the one farthest from the
    deterministic orbit, max_t of the distance from Pi(t) to the nearest point of ``orbit``'s kept path 0 (the
    orbit as a curve, not the point at the same time: phase drift is no departure). With no ``orbit`` the
    qualifying paths are counted and none is picked."""
    from sgi_run.core.errors import ConfigError

    if rule not in SELECTION_RULES:
        raise ConfigError("select", rule, f"one of {list(SELECTION_RULES)}")
    h_series = run.curve(energy)
    h_series.require_kept(f"select: {rule}")     # refuses a run that keeps no paths
    run.kept_view(view)                          # ... or does not keep this view
    last = len(h_series.t) - 1 if end is None else h_series.index_at(end)
    if last is None:
        raise ConfigError("end", end, f"an output time of the run (T = {h_series.t[-1]:g})")
    h = np.asarray(h_series.kept, float)[:, : last + 1]
    pi = np.asarray(run.kept[view], float)[:, : last + 1]
    separatrix = separatrix_energy(run.system, float(np.linalg.norm(pi[0, 0])))
    crossed = np.min(h, axis=1) < separatrix
    qualifying = np.flatnonzero(~crossed if rule == "least_energy_change" else crossed)
    picked, score = None, math.nan
    if qualifying.size and rule == "least_energy_change":
        change = np.max(np.abs(h[qualifying] - h[qualifying, :1]), axis=1)
        picked, score = int(qualifying[np.argmin(change)]), float(np.min(change))
    elif qualifying.size and orbit is not None:
        from scipy.spatial import cKDTree

        tree = cKDTree(orbit.kept_view(view, 0))
        distance = np.array([np.max(tree.query(pi[k])[0]) for k in qualifying])
        picked, score = int(qualifying[np.argmax(distance)]), float(np.max(distance))
    return Selection(rule, picked, int(qualifying.size), int(h.shape[0]), score, separatrix)


def ensemble_spread(run: RunData, at: float, view: str = "pi") -> float | None:
    """The mean pairwise Euclidean distance between the kept paths' ``view`` at output time ``at`` (the project's measure
    of the spread of Fig. 2's ensemble forecast); None when the run has no output time ``at``."""
    i = run.output_index(at)
    if i is None:
        return None
    x = np.asarray(run.kept[view], float)[:, i]
    gaps = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)
    n = x.shape[0]
    return float(np.sum(gaps) / (n * (n - 1))) if n > 1 else math.nan


# --- the solvability of the rigid body's implicit equations (Gay-Balmaz & Wu 2024 eqs. (54), (62), (63), Fig. 14) -----------------
SOLVABILITY_GRID = (91, 181)    # polar x azimuthal points (Gay-Balmaz & Wu 2024 Fig. 14; the project's grid)


def valid_increments(increments) -> bool:
    """A list of increment vectors whose entries are numbers or "D" / "-D" (the truncation bound)."""
    entry = lambda v: is_number(v) or v in ("D", "-D")
    return (isinstance(increments, list) and len(increments) > 0
            and all(isinstance(w, list) and len(w) > 0 and all(entry(v) for v in w) for w in increments))


def increment_vector(spec: list, bound: float | None) -> np.ndarray:
    """One fixed truncated increment vector: its entries, "D" and "-D" being +-the run's truncation bound
    D_dt = sqrt(4 |ln dt| dt) (plan.truncate, computed, never typed), clipped to [-D_dt, D_dt] like every
    increment the run draws."""
    from sgi_run.core.errors import ConfigError

    if bound is None and any(isinstance(v, str) for v in spec):
        raise ConfigError("increments", spec, "numbers only: the run has no truncation bound D (plan.truncate)")
    values = np.array([(bound if v == "D" else -bound) if isinstance(v, str) else float(v) for v in spec])
    return values if bound is None else np.clip(values, -bound, bound)


def increment_text(spec: list, bound: float | None) -> str:
    """"(D, D, D), D = 0.42919" or "(0.1, -0.1, 0.1)"."""
    entries = ", ".join(str(v) if isinstance(v, str) else f"{float(v):g}" for v in spec)
    return f"ΔW = ({entries})" + (f", D = {bound:.5g}" if any(isinstance(v, str) for v in spec) else "")


@dataclasses.dataclass(frozen=True)
class SolvabilityMap:
    """The half-step momenta (A, B) of eqs. (62) solved at every point of a (theta, phi) mesh of a sphere."""
    theta: np.ndarray
    phi: np.ndarray
    norm: np.ndarray         # ||(A, B)|| = sqrt(|A|^2 + |B|^2), (n_theta, n_phi)
    a: np.ndarray            # |A|
    b: np.ndarray            # |B|
    iterations: np.ndarray   # the solve's iterations (map evaluations) at each point
    converged: np.ndarray    # whether it converged there
    increment: np.ndarray    # the fixed increments


# What a solvability map calls on its run's integrator, as a refusal names it (the panel and the check).
SOLVABILITY_NEEDS = "half_step_momenta(system, pi, dt, dw) (lgvi_cayley has)"


def solvability_map(run: RunData, spec: list, radius: float = 1.0, grid=SOLVABILITY_GRID) -> SolvabilityMap:
    """Gay-Balmaz & Wu's (2024) Figure 14 from the run's own integrator and system: for the fixed truncated increments
    ``spec`` (``increment_vector``) and the run's dt, the step's implicit equations solved by the integrator's
    own ``half_step_momenta`` at every momentum of a polar x azimuthal mesh of the sphere |Pi| = ``radius``
    (vmapped), computed once per run, increments, radius and grid."""
    import jax
    import jax.numpy as jnp

    from sgi_run.core.errors import ConfigError

    solve = getattr(run.integrator, "half_step_momenta", None)
    if solve is None:
        raise ConfigError("integrator", getattr(run.integrator, "name", None),
                          "an integrator whose implicit solve gives the half-step momenta (A, B): lgvi_cayley")
    key = ("solvability", tuple(str(v) for v in spec), float(radius), tuple(grid))
    if key not in run.memo:
        dw = jnp.asarray(increment_vector(spec, run.increment_bound))
        theta, phi, points = sphere_points(radius, *grid)
        solved = jax.jit(jax.vmap(lambda p: solve(run.system, p, run.dt, dw)))(jnp.asarray(points.reshape(-1, 3)))
        shape = points.shape[:2]
        a, b = (np.linalg.norm(np.asarray(v, float), axis=-1).reshape(shape) for v in (solved.a, solved.b))
        run.memo[key] = SolvabilityMap(theta, phi, np.hypot(a, b), a, b, np.asarray(solved.iterations).reshape(shape),
                                       np.asarray(solved.converged).reshape(shape), np.asarray(dw))
    return run.memo[key]
