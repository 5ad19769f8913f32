"""Convergence studies: errors at several step sizes, their Monte Carlo standard errors and the
fitted order with a bootstrap confidence interval.

*Strong* errors (RMS over paths of the final-state error) share one Brownian path per sample
across step sizes: it is drawn on the finest grid and summed onto every coarser grid
(``core.noise.increments`` with ``refine``), so the error differences between step sizes are not
masked by different noise. The reference is the exact path ``system.exact_state(T, W(T))`` or a
run of the same integrator at a finer step on the same Brownian path.

*Weak* errors (error of E(observable)(T)) are mean differences. With Gaussian increments the
samples still share one Brownian path across step sizes (common random numbers: against a fine
reference the per-path difference has a far smaller variance than either mean). Three-point
increments cannot be summed from a finer grid, so each step size, and the fine reference, gets
its own independent samples (other path indices of the same seed). An order is fitted only over
the step sizes whose error is resolvable above the Monte Carlo noise (|error| > 2 SE).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import noise
from sgi_run.engine.plan import _whole_ratio

RESOLVABLE_SE = 2.0     # an error counts as resolved when |error| > RESOLVABLE_SE * SE
CI_LEVEL = 95.0


@dataclasses.dataclass
class StrongErrors:
    dts: np.ndarray
    rms: np.ndarray          # RMS error at T for each dt
    sem: np.ndarray          # Monte Carlo standard error of each RMS (delta method)
    order: float             # least-squares slope of log rms against log dt
    order_ci: tuple[float, float]  # 95% interval of the slope from a path bootstrap


@dataclasses.dataclass
class ConvergenceResult:
    error_kind: str          # strong | weak
    reference: str           # exact | fine
    samples: str             # shared (one Brownian path per sample across dts) | independent
    dts: np.ndarray          # coarse to fine
    error: np.ndarray        # strong: RMS final-state error; weak: E(obs)_dt(T) - reference
    se: np.ndarray           # Monte Carlo standard error of each error
    resolvable: np.ndarray   # |error| > RESOLVABLE_SE * se: the points the order is fitted on
    order: float             # slope of log|error| against log dt; nan when < 2 points resolvable
    order_ci: tuple[float, float]  # 95% path-bootstrap interval (nan without bootstrap or order)
    nonfinite: np.ndarray    # paths excluded at each dt because a state went non-finite
    paths: int
    note: str = ""           # what the fit could and could not use, in words

    @property
    def local_slopes(self) -> np.ndarray:
        """Slope between each dt and the next coarser one; nan for the coarsest and wherever
        either error is not resolvable (a slope between two noise values means nothing)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            slopes = np.diff(np.log(np.abs(self.error))) / np.diff(np.log(self.dts))
        both = self.resolvable[1:] & self.resolvable[:-1]
        return np.concatenate([[np.nan], np.where(both, slopes, np.nan)])


# --- simulation of final states ------------------------------------------------------------------
def simulator(system, integrator) -> Callable:
    """``run(z0, noise_keys, dt, steps, refine) -> z(T)`` for all paths, compiled once; the step
    size, step count and refinement are traced, so a whole study shares one compilation."""
    kind, m = integrator.noise_kind, system.noises

    @jax.jit
    def run(z0, noise_keys, dt, steps, refine):
        def one(k, z):
            xi = jax.vmap(lambda key: noise.coarse_increments(kind, key, k, dt / refine, m, refine))(noise_keys)
            return jax.vmap(lambda z, xi: integrator.step(system, z, dt, xi)[0])(z, xi)
        return jax.lax.fori_loop(0, steps, one, z0)

    return run


def final_states(system, integrator, dt: float, T: float, paths: int, seed: int, refine: int,
                 first_path: int = 0, run: Callable | None = None) -> jax.Array:
    """States at T of paths ``first_path ..`` of the run with root ``seed``, stepping with ``dt``;
    Gaussian increments are drawn ``refine`` times finer and summed. (paths, 2N)
    ``run``: a ``simulator(system, integrator)`` to reuse (saves a compilation per call)."""
    keys = noise.path_keys(seed, first_path, paths)
    noise_keys = jax.vmap(noise.noise_key)(keys)
    z0 = jax.vmap(lambda k: system.initial_state(noise.init_key(k)))(keys)
    run = run or simulator(system, integrator)
    return run(z0, noise_keys, float(dt), _whole_ratio(T, dt), refine)


def brownian_endpoint(system, T: float, dt_fine: float, paths: int, seed: int) -> jax.Array:
    """W(T) of each path: the sum of its finest-grid increments. (paths, m)"""
    keys = jax.vmap(noise.noise_key)(noise.path_keys(seed, 0, paths))
    n = _whole_ratio(T, dt_fine)
    return jax.vmap(lambda k: noise.increments("gaussian", k, 0, T, system.noises, refine=n)[0])(keys)


def _refine(dt: float, grid: float) -> int:
    refine = _whole_ratio(dt, grid)
    if refine is None:
        raise ValueError(f"dt={dt} is not a whole multiple of the finest dt={grid}")
    return refine


# --- statistics ----------------------------------------------------------------------------------
def _slope(dts: np.ndarray, errors: np.ndarray) -> float:
    return float(np.polyfit(np.log(dts), np.log(np.abs(errors)), 1)[0])


def _fit(dts, error, se, resampled_errors: Callable[[np.random.Generator], np.ndarray],
         bootstrap: int, seed: int) -> tuple[np.ndarray, float, tuple[float, float], str]:
    """Resolvable points, fitted order, its bootstrap CI, and a note on what was fitted."""
    with np.errstate(invalid="ignore"):
        resolvable = np.abs(error) > RESOLVABLE_SE * se
    unresolved = ", ".join(f"{d:g}" for d in dts[~resolvable])
    if resolvable.sum() < 2:
        note = (f"errors not resolvable above Monte Carlo noise (|error| <= {RESOLVABLE_SE:g} SE at "
                f"dt = {unresolved}): no order fitted; use more paths or larger steps")
        return resolvable, float("nan"), (float("nan"), float("nan")), note
    note = "" if resolvable.all() else (f"order fitted on the {resolvable.sum()} step sizes resolvable above "
                                        f"Monte Carlo noise; |error| <= {RESOLVABLE_SE:g} SE at dt = {unresolved}")
    order = _slope(dts[resolvable], error[resolvable])
    if bootstrap == 0:
        return resolvable, order, (float("nan"), float("nan")), note
    rng = np.random.default_rng(seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        boots = np.array([_slope(dts[resolvable], resampled_errors(rng)[resolvable]) for _ in range(bootstrap)])
    half = (100.0 - CI_LEVEL) / 2
    low, high = np.nanpercentile(boots, [half, 100.0 - half])
    return resolvable, order, (float(low), float(high)), note


def _finite_paths(*states: jax.Array) -> np.ndarray:
    return np.all([np.all(np.isfinite(np.asarray(z)), axis=1) for z in states], axis=0)


# --- strong errors -------------------------------------------------------------------------------
def _strong_statistics(sq: np.ndarray):
    """RMS, its delta-method SE, and a path-bootstrap of the RMS, from squared errors (dts, paths)."""
    n = sq.shape[1]
    rms = np.sqrt(sq.mean(axis=1))
    se = sq.std(axis=1, ddof=1) / np.sqrt(n) / (2 * rms)
    resampled = lambda rng: np.sqrt(sq[:, rng.integers(0, n, n)].mean(axis=1))
    return rms, se, resampled


def strong_errors(system, integrator, exact: Callable, T: float, dts: Sequence[float],
                  paths: int, seed: int = 0, bootstrap: int = 200) -> StrongErrors:
    """RMS final-state error against ``exact(T, W(T))`` on one shared Brownian path per sample."""
    dts = np.sort(np.asarray(dts, float))[::-1]
    finest = dts[-1]
    w_T = brownian_endpoint(system, T, finest, paths, seed)
    z_exact = jax.vmap(lambda w: exact(T, w[0]))(w_T)
    run = simulator(system, integrator)
    sq = np.array([np.asarray(jnp.sum((final_states(system, integrator, float(dt), T, paths, seed,
                                                    _refine(dt, finest), run=run) - z_exact) ** 2, axis=1))
                   for dt in dts])                          # (dts, paths)
    rms, sem, resampled = _strong_statistics(sq)
    _, order, ci, _ = _fit(dts, rms, sem, resampled, bootstrap, seed)
    return StrongErrors(dts, rms, sem, order, ci)


def strong_study(system, integrator, T: float, dts: Sequence[float], paths: int, seed: int = 0,
                 bootstrap: int = 200, reference: str = "exact", reference_refine: int = 8,
                 on_step_size: Callable[[float], None] | None = None) -> ConvergenceResult:
    """Strong errors against the exact path or a fine run of the same integrator."""
    dts = np.sort(np.asarray(dts, float))[::-1]
    grid = dts[-1] if reference == "exact" else dts[-1] / reference_refine
    run = simulator(system, integrator)
    if reference == "exact":
        w_T = brownian_endpoint(system, T, grid, paths, seed)
        z_ref = jax.vmap(lambda w: system.exact_state(T, w[0]))(w_T)
    else:
        z_ref = final_states(system, integrator, grid, T, paths, seed, refine=1, run=run)
    states = []
    for dt in dts:
        states.append(final_states(system, integrator, float(dt), T, paths, seed, _refine(dt, grid), run=run))
        if on_step_size:
            on_step_size(float(dt))
    # The samples are paired across dts, so a path is used only where it is finite everywhere.
    keep = _finite_paths(z_ref, *states)
    sq = np.array([np.sum((np.asarray(z) - np.asarray(z_ref))[keep] ** 2, axis=1) for z in states])
    rms, se, resampled = _strong_statistics(sq)
    resolvable, order, ci, note = _fit(dts, rms, se, resampled, bootstrap, seed)
    nonfinite = np.array([int(np.sum(~_finite_paths(z))) for z in states])
    return ConvergenceResult("strong", reference, "shared", dts, rms, se, resolvable, order, ci,
                             nonfinite, paths, note)


# --- weak errors ---------------------------------------------------------------------------------
def weak_study(system, integrator, T: float, dts: Sequence[float], paths: int, seed: int = 0,
               bootstrap: int = 200, reference: str = "exact", reference_refine: int = 8,
               observable: str = "H", on_step_size: Callable[[float], None] | None = None) -> ConvergenceResult:
    """Error of E(observable)(T) against the exact mean or a fine run, with Monte Carlo SEs."""
    dts = np.sort(np.asarray(dts, float))[::-1]
    f = jax.vmap(system.observables()[observable])
    shared = integrator.noise_kind != "three_point"
    grid = dts[-1] if reference == "exact" else dts[-1] / reference_refine
    run = simulator(system, integrator)

    def values(dt, block):
        # Shared: the same paths (0 ..) on the finest grid. Independent: path block ``block``.
        refine, first = (_refine(dt, grid), 0) if shared else (1, block * paths)
        return np.asarray(f(final_states(system, integrator, float(dt), T, paths, seed, refine, first, run)))

    runs = []
    for i, dt in enumerate(dts):
        runs.append(values(dt, i))
        if on_step_size:
            on_step_size(float(dt))
    if reference == "exact":
        ref = np.full(paths, float(system.reference_mean(observable)(T)))
    else:
        ref = values(grid, len(dts))
    nonfinite = np.array([int(np.sum(~np.isfinite(v))) for v in runs])

    if shared:
        keep = np.all(np.isfinite(np.vstack(runs + [ref])), axis=0)
        diff = np.vstack(runs)[:, keep] - ref[keep]           # (dts, paths): paired differences
        n = diff.shape[1]
        error, se = diff.mean(axis=1), diff.std(axis=1, ddof=1) / np.sqrt(n)
        resampled = lambda rng: diff[:, rng.integers(0, n, n)].mean(axis=1)
    else:
        runs = [v[np.isfinite(v)] for v in runs]
        ref = ref[np.isfinite(ref)]
        ref_var = ref.var(ddof=1) / ref.size if reference == "fine" else 0.0
        error = np.array([v.mean() - ref.mean() for v in runs])
        se = np.sqrt([v.var(ddof=1) / v.size + ref_var for v in runs])
        pick = lambda rng, v: v[rng.integers(0, v.size, v.size)]

        def resampled(rng):
            ref_mean = pick(rng, ref).mean()
            return np.array([pick(rng, v).mean() - ref_mean for v in runs])

    resolvable, order, ci, note = _fit(dts, error, se, resampled, bootstrap, seed)
    return ConvergenceResult("weak", reference, "shared" if shared else "independent", dts, error, se,
                             resolvable, order, ci, nonfinite, paths, note)


def study(system, integrator, plan, on_step_size=None) -> ConvergenceResult:
    """The study a ``ConvergencePlan`` (with its reference settled by ``fitted_to``) asks for."""
    common = dict(T=plan.T, dts=plan.dts, paths=plan.paths, seed=plan.seed, bootstrap=plan.bootstrap,
                  reference=plan.reference, reference_refine=plan.reference_refine, on_step_size=on_step_size)
    if plan.error == "strong":
        return strong_study(system, integrator, **common)
    return weak_study(system, integrator, observable=plan.observable, **common)
