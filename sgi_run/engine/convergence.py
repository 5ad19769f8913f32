"""Convergence studies: errors at several step sizes, their Monte Carlo standard errors and the
fitted order with a bootstrap confidence interval, run by the ensemble engine itself.

A study runs in the ensemble engine as a system of its own, every path carrying its state at every step
size, a reference and the running sups of its errors and drifts (``engine.lock_step``: ``Levels`` and its
``LockStep``). So a study has shards, checkpoints, solver counts and a memory estimate like any run, and its
errors are online moments of per-path quantities.

*Strong* errors (RMS over paths of the final state's distance, in the system space's distance, and
of its supremum over the level's step times) share one Brownian path per sample across step sizes.
The reference is the exact path ``system.exact_state(t, W(t))`` or a run of the same integrator at
a finer step on the same Brownian path, or of the method ``plan.reference_method`` names: every method's
study of a system with the same plan then meets the same reference numbers. With ``plan.weak_observable``
a strong study also measures the weak error of that observable on its paths.

*Weak* errors (error of E(observable)(T)) are mean differences. With Gaussian increments the levels
share one Brownian path (common random numbers: against a fine reference the per-path difference has
a far smaller variance than either mean). Three-point increments cannot be summed from a finer grid,
so each step size, and the fine reference, draws its own independent variables (a stream of its own
per path). An order is fitted only over the step sizes whose error is resolvable above the Monte
Carlo noise (|error| > 2 SE); its interval is a bootstrap over the paths' final values.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from sgi_run.engine import invariants
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.lock_step import REFERENCE_SOLVER_COUNTS, Levels, lock_step

RESOLVABLE_SE = 2.0     # by default an error counts as resolved when |error| > RESOLVABLE_SE * SE (plan.resolvable_se)
CI_LEVEL = 95.0


@dataclasses.dataclass
class StrongErrors:
    dts: np.ndarray
    rms: np.ndarray          # RMS error at T for each dt
    sem: np.ndarray          # Monte Carlo standard error of each RMS (delta method)
    order: float             # least-squares slope of log rms against log dt
    order_ci: tuple[float, float]  # 95% interval of the slope from a path bootstrap


def _local_slopes(dts: np.ndarray, error: np.ndarray, resolvable: np.ndarray) -> np.ndarray:
    """Slope between each dt and the next coarser one; nan for the coarsest and wherever either error is not
    resolvable (a slope between two noise values means nothing)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = np.diff(np.log(np.abs(error))) / np.diff(np.log(dts))
    both = resolvable[1:] & resolvable[:-1]
    return np.concatenate([[np.nan], np.where(both, slopes, np.nan)])


@dataclasses.dataclass
class WeakErrors:
    """A strong study's weak error of ``observable`` (plan.weak_observable) on the same paths: E f(level)(T) -
    E f(reference)(T) per step size, a per-path difference against a fine reference (common random numbers),
    else against the exact mean; its SE, resolvable points, fitted order and bootstrap interval as ``_fit``'s."""
    observable: str
    error: np.ndarray
    se: np.ndarray
    resolvable: np.ndarray
    order: float
    order_ci: tuple[float, float]
    note: str = ""

    def local_slopes(self, dts: np.ndarray) -> np.ndarray:
        return _local_slopes(np.asarray(dts), self.error, self.resolvable)


@dataclasses.dataclass
class ConvergenceResult:
    error_kind: str          # strong | weak
    reference: str           # exact | fine
    samples: str             # shared (one Brownian path per sample across dts) | independent
    dts: np.ndarray          # coarse to fine
    error: np.ndarray        # strong: RMS final-state error; weak: E(obs)_dt(T) - reference
    se: np.ndarray           # Monte Carlo standard error of each error
    resolvable: np.ndarray   # |error| > resolvable_se * se: the points the order is fitted on
    order: float             # slope of log|error| against log dt; nan when < 2 points resolvable
    order_ci: tuple[float, float]  # 95% path-bootstrap interval (nan without bootstrap or order)
    nonfinite: np.ndarray    # paths excluded at each dt because a state went non-finite
    paths: int
    note: str = ""           # what the fit could and could not use, in words
    # Strong studies: sqrt(E sup_k |z_dt(t_k) - z_ref(t_k)|^2) over the level's step times, and its SE.
    sup_error: np.ndarray | None = None
    sup_se: np.ndarray | None = None
    resolvable_se: float = RESOLVABLE_SE   # the threshold of ``resolvable`` (plan.resolvable_se)
    # plan.invariants=declared: the system's invariants and, per step size, the largest drift of each over the
    # paths and the level's step times, max |I(z_k) - I(z_0)| (levels, invariants); NaN where every path went
    # non-finite.
    invariants: tuple[str, ...] = ()
    drift_max: np.ndarray | None = None
    weak: WeakErrors | None = None      # plan.weak_observable's weak error on a strong study's paths
    # With an implicit plan.reference_method: the path-steps (coarse lock-steps) in which some solve of the
    # reference failed or stagnated, kept apart from the method's (the engine's solver counts).
    reference_unconverged: int | None = None
    reference_stagnated: int | None = None

    def sup_fit(self) -> tuple[np.ndarray, float, str]:
        """The sup-in-time errors' resolvable points, their fitted order (no bootstrap) and its note; a strong
        study only (Gay-Balmaz & Wu's (2024) e_sup: the sup-in-time error of its Theorem 6.1)."""
        resolvable, order, _, note = _fit(self.dts, self.sup_error, self.sup_se, None, 0, 0, self.resolvable_se)
        return resolvable, order, note

    @property
    def local_slopes(self) -> np.ndarray:
        """Slope between each dt and the next coarser one; nan for the coarsest and wherever
        either error is not resolvable (a slope between two noise values means nothing)."""
        return _local_slopes(self.dts, self.error, self.resolvable)


# --- statistics ----------------------------------------------------------------------------------
def _slope(dts: np.ndarray, errors: np.ndarray) -> float:
    return float(np.polyfit(np.log(dts), np.log(np.abs(errors)), 1)[0])


def _fit(dts, error, se, resampled_errors: Callable[[np.random.Generator], np.ndarray],
         bootstrap: int, seed: int, resolvable_se: float = RESOLVABLE_SE
         ) -> tuple[np.ndarray, float, tuple[float, float], str]:
    """Resolvable points (|error| > resolvable_se SE), fitted order, its bootstrap CI, and a note on what
    was fitted."""
    with np.errstate(invalid="ignore"):
        resolvable = np.abs(error) > resolvable_se * se
    unresolved = ", ".join(f"{d:g}" for d in dts[~resolvable])
    if resolvable.sum() < 2:
        note = (f"errors not resolvable above Monte Carlo noise (|error| <= {resolvable_se:g} SE at "
                f"dt = {unresolved}): no order fitted; use more paths or larger steps")
        return resolvable, float("nan"), (float("nan"), float("nan")), note
    note = "" if resolvable.all() else (f"order fitted on the {resolvable.sum()} step sizes resolvable above "
                                        f"Monte Carlo noise; |error| <= {resolvable_se:g} SE at dt = {unresolved}")
    order = _slope(dts[resolvable], error[resolvable])
    if bootstrap == 0:
        return resolvable, order, (float("nan"), float("nan")), note
    rng = np.random.default_rng(seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        boots = np.array([_slope(dts[resolvable], resampled_errors(rng)[resolvable]) for _ in range(bootstrap)])
    half = (100.0 - CI_LEVEL) / 2
    low, high = np.nanpercentile(boots, [half, 100.0 - half])
    return resolvable, order, (float(low), float(high)), note


# --- running a study -------------------------------------------------------------------------------
def simulator(system, integrator, plan: ConvergencePlan, reference_integrator=None):
    """The engine's ``Simulator`` of a study (a settled ``plan``: ``plan.fitted_to(system, integrator,
    reference_integrator)``)."""
    from sgi_run.engine.simulate import Simulator
    step = lock_step(system, integrator, plan, reference_integrator)
    return Simulator(step.levels, step, plan.grid_plan(list(step.levels.observables())))


def study(system, integrator, plan: ConvergencePlan, store=None, on_output=None, on_shard_done=None,
          reference_integrator=None):
    """Run a settled study (resuming ``store``'s checkpoints): (ConvergenceResult, the engine's result)."""
    from sgi_run.engine.ensemble import run_shards
    sim = simulator(system, integrator, plan, reference_integrator)
    ensemble = run_shards(sim, store, on_output, on_shard_done)
    return result_of(sim, ensemble), ensemble


def result_of(sim, ensemble) -> ConvergenceResult:
    """The study's errors, SEs and fitted order from the engine's moments at T (and, for the order's
    bootstrap interval, the paths' final values)."""
    levels: Levels = sim.system
    plan, dts = levels.plan, np.asarray(levels.plan.dts)
    m = ensemble.moments
    mean, var, count = (sim.split_entries(x[-1], 0) for x in (m.mean_or_nan, m.var, m.count))
    per_path = sim.split_entries(ensemble.time_averages, 1) if ensemble.time_averages is not None else None
    name = next(iter(sim.observable_shapes))
    mean, var, count = mean[name], var[name], count[name]
    n_levels = len(dts)
    if levels.strong:
        error = np.sqrt(mean)
        se = np.sqrt(var / count) / (2 * error)
        values = per_path[name] if per_path is not None else None
        if values is not None:
            values = values[np.all(np.isfinite(values), axis=1)].T            # (levels, finite paths)
        resampled = lambda rng: np.sqrt(values[:, rng.integers(0, values.shape[1], values.shape[1])].mean(axis=1))
    elif name == "difference" or plan.reference == "exact":
        exact = float(levels.inner.reference_mean(plan.observable)(plan.T)) if plan.reference == "exact" else 0.0
        error, se = mean - exact, np.sqrt(var / count)
        values = per_path[name].T if per_path is not None else None

        def resampled(rng):
            if levels.shared:     # paired: one resample of the paths for every level
                finite = values[:, np.all(np.isfinite(values), axis=0)]
                return finite[:, rng.integers(0, finite.shape[1], finite.shape[1])].mean(axis=1) - exact
            return np.array([_pick(rng, v).mean() for v in values]) - exact
    else:
        # Independent samples per level and for the fine reference (three-point increments).
        error = mean[:n_levels] - mean[n_levels]
        se = np.sqrt(var[:n_levels] / count[:n_levels] + var[n_levels] / count[n_levels])
        values = per_path[name].T if per_path is not None else None

        def resampled(rng):
            reference = _pick(rng, values[n_levels]).mean()
            return np.array([_pick(rng, v).mean() for v in values[:n_levels]]) - reference
    resolvable, order, ci, note = _fit(dts, error, se, resampled, plan.bootstrap if per_path is not None else 0,
                                       plan.seed, plan.resolvable_se)
    nonfinite = np.full(n_levels, int(ensemble.nonfinite[-1]))
    if nonfinite[-1] >= plan.paths:     # nothing was measured: no Monte Carlo noise to blame
        note = f"every one of the {plan.paths} paths went non-finite: no error is computed"
    sup = None
    if levels.strong:
        sup_mean, sup_var = (sim.split_entries(x[-1], 0)["sup_sq_error"] for x in (m.mean_or_nan, m.var))
        sup = (np.sqrt(sup_mean), np.sqrt(sup_var / count) / (2 * np.sqrt(sup_mean)))
    reference_counts = {}
    if levels.counts_reference_solver:
        totals = sim.split_entries(m.mean_or_nan[-1] * m.count[-1], 0)
        reference_counts = {name: int(round(float(np.nan_to_num(totals[name])))) for name in REFERENCE_SOLVER_COUNTS}
    return ConvergenceResult(plan.error, plan.reference, "shared" if levels.shared else "independent", dts,
                             error[:n_levels], se[:n_levels], resolvable, order, ci, nonfinite, plan.paths, note,
                             *(sup or (None, None)), resolvable_se=plan.resolvable_se,
                             invariants=levels.invariant_names, drift_max=_largest_drift(levels, per_path),
                             weak=_weak_errors(sim, ensemble, per_path), **reference_counts)


def _weak_errors(sim, ensemble, per_path) -> WeakErrors | None:
    """A strong study's weak error of ``plan.weak_observable`` (its ``weak_error`` observable), fitted as a weak
    study's with shared samples: against the exact mean, or the mean of per-path differences to the reference."""
    levels: Levels = sim.system
    plan, dts = levels.plan, np.asarray(levels.plan.dts)
    if not levels.strong or plan.weak_observable is None:
        return None
    m = ensemble.moments
    mean, var, count = (sim.split_entries(x[-1], 0)["weak_error"] for x in (m.mean_or_nan, m.var, m.count))
    exact = float(levels.inner.reference_mean(plan.weak_observable)(plan.T)) if plan.reference == "exact" else 0.0
    error, se = mean - exact, np.sqrt(var / count)
    values = per_path["weak_error"].T if per_path is not None else None

    def resampled(rng):     # paired: one resample of the paths for every level
        finite = values[:, np.all(np.isfinite(values), axis=0)]
        return finite[:, rng.integers(0, finite.shape[1], finite.shape[1])].mean(axis=1) - exact
    resolvable, order, ci, note = _fit(dts, error, se, resampled, plan.bootstrap if per_path is not None else 0,
                                       plan.seed, plan.resolvable_se)
    return WeakErrors(plan.weak_observable, error, se, resolvable, order, ci, note)


def _largest_drift(levels: Levels, per_path) -> np.ndarray | None:
    """(levels, invariants): the largest of the paths' running sups of each invariant's drift (NaN where no path
    stayed finite), or None when the study records none."""
    if not levels.invariant_names:
        return None
    return np.asarray(invariants.largest(per_path["sup_drift"]))    # (paths, levels, invariants), NaN: non-finite


def _pick(rng, v):
    v = v[np.isfinite(v)]
    return v[rng.integers(0, v.size, v.size)]


# --- the same studies from Python, without a config ---------------------------------------------------
def _plan(system, integrator, reference_integrator=None, **keys) -> ConvergencePlan:
    keys["dts"] = [float(d) for d in keys["dts"]]
    if reference_integrator is not None:
        keys["reference_method"] = reference_integrator.name
    return ConvergencePlan(**keys).fitted_to(system, integrator, reference_integrator)


def strong_study(system, integrator, T: float, dts: Sequence[float], paths: int, seed: int = 0,
                 bootstrap: int = 200, reference: str = "exact", reference_refine: int = 8,
                 on_step_size: Callable | None = None, reference_integrator=None,
                 weak_observable: str | None = None) -> ConvergenceResult:
    """Strong errors against the exact path or a fine run of the same integrator, or of
    ``reference_integrator`` (with ``reference="fine"`` or ``"auto"``); with ``weak_observable``, its weak
    error on the same paths too (``result.weak``)."""
    plan = _plan(system, integrator, reference_integrator, dts=dts, T=T, paths=paths, seed=seed, bootstrap=bootstrap,
                 error="strong", reference=reference, reference_refine=reference_refine,
                 weak_observable=weak_observable)
    return study(system, integrator, plan, reference_integrator=reference_integrator)[0]


def weak_study(system, integrator, T: float, dts: Sequence[float], paths: int, seed: int = 0,
               bootstrap: int = 200, reference: str = "exact", reference_refine: int = 8,
               observable: str = "H", on_step_size: Callable | None = None,
               resolvable_se: float = 2.0, reference_integrator=None) -> ConvergenceResult:
    """Error of E(observable)(T) against the exact mean or a fine run (of the same integrator, or of
    ``reference_integrator``), with Monte Carlo SEs; errors within ``resolvable_se`` SEs of zero are
    reported, not fitted."""
    plan = _plan(system, integrator, reference_integrator, dts=dts, T=T, paths=paths, seed=seed, bootstrap=bootstrap,
                 error="weak", reference=reference, reference_refine=reference_refine, observable=observable,
                 resolvable_se=resolvable_se)
    return study(system, integrator, plan, reference_integrator=reference_integrator)[0]


def strong_errors(system, integrator, exact: Callable, T: float, dts: Sequence[float],
                  paths: int, seed: int = 0, bootstrap: int = 200) -> StrongErrors:
    """RMS final-state error against the exact path on one shared Brownian path per sample."""
    r = strong_study(system, integrator, T, dts, paths, seed, bootstrap, reference="exact")
    return StrongErrors(r.dts, r.error, r.se, r.order, r.order_ci)
