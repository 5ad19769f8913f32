"""Convergence studies: errors at several step sizes, their Monte Carlo standard errors and the
fitted order with a bootstrap confidence interval, run by the ensemble engine itself.

Every path of a study carries its state at every step size (the *levels*), a reference and, for
strong errors, the running supremum over time of each level's squared distance to the reference.
The engine's ``Simulator`` advances them in lock-step over the coarsest step: one coarse step draws
the increments of the finest grid in it, every level sums them onto its own grid (``noise.coarsen``,
truncated per level after summing, Gay-Balmaz & Wu (2024) and Ephrati et al. (2024)) and takes its steps, comparing with the
reference at each of its step times. The levels take their steps in one program (a scan over the
levels, a loop of each level's own count of steps, its step size an argument), so the method's step
is compiled once for every level, not once per level. So a study has shards, checkpoints, solver counts and a memory
estimate like any run, and its errors are online moments of per-path quantities (observables of the
study's state, ``Levels``).

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
from typing import ClassVar
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import noise
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.engine import invariants
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.plan import _whole_ratio
from sgi_run.integrators.base import SolverStats
from sgi_run.systems.base import System

# The reference method's solver counts a study keeps apart from the method's (Levels.counts_reference_solver).
REFERENCE_SOLVER_COUNTS = ("reference_unconverged", "reference_stagnated")
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


# --- the study's state and its lock-step -------------------------------------------------------
@dataclasses.dataclass(frozen=True, eq=False)
class Levels(System):
    """One path of a study: the system's state at every step size (``level<i>.<leaf>``), the reference
    (``reference.<leaf>`` for a fine run; the Brownian path ``W`` for the exact one), the coarse steps
    taken ``k``, the running sup of each level's squared distance to the reference and, with
    ``plan.invariants=declared``, the invariants' initial values and each level's running sup of their
    drift |I(z_k) - I(z_0)| over its step times. With ``counts_reference_solver`` (an implicit reference method
    of its own), the coarse steps in which a solve of the reference failed (``reference_unconverged``) or
    stagnated (``reference_stagnated``), so the engine's solver counts are the method's alone."""
    inner: System
    plan: ConvergencePlan
    shared: bool                     # the levels share one Brownian path (Gaussian increments)
    counts_reference_solver: bool = False
    structure: ClassVar[str] = "convergence"

    @property
    def levels(self) -> int:
        return len(self.plan.dts)

    @property
    def strong(self) -> bool:
        return self.plan.error == "strong"

    @property
    def invariant_names(self) -> tuple[str, ...]:
        return self.inner.invariants() if self.plan.invariants == "declared" else ()

    def invariant_values(self, z):
        """(invariants,) the declared invariants of a state of the system."""
        return invariants.values(self.inner, self.invariant_names, z)

    @property
    def space(self) -> StateSpace:
        inner = self.inner.space.leaves
        leaves = [Leaf(f"level{i}.{leaf.name}", leaf.shape, leaf.dtype) for i in range(self.levels) for leaf in inner]
        if self.plan.reference == "fine":
            leaves += [Leaf(f"reference.{leaf.name}", leaf.shape, leaf.dtype) for leaf in inner]
        elif self.strong:
            leaves += [Leaf("W", (self.inner.noises,))]
        leaves += [Leaf("k")] + ([Leaf("sup_sq_error", (self.levels,))] if self.strong else [])
        if self.invariant_names:
            count = len(self.invariant_names)
            leaves += [Leaf("invariants0", (count,)), Leaf("sup_drift", (self.levels, count))]
        if self.counts_reference_solver:
            leaves += [Leaf(name) for name in REFERENCE_SOLVER_COUNTS]
        return StateSpace(tuple(leaves))

    def part(self, z, prefix: str):
        """The system's state stored under ``prefix`` (``level0``, ``reference``)."""
        return self.inner.space.from_leaves({leaf.name: z[f"{prefix}.{leaf.name}"] for leaf in self.inner.space.leaves})

    def with_part(self, z, prefix: str, state) -> dict:
        return z | {f"{prefix}.{k}": v for k, v in self.inner.space.leaves_of(state).items()}

    def initial_state(self, key):
        z0 = self.inner.initial_state(key)
        z = {"k": jnp.zeros(())}
        for prefix in [f"level{i}" for i in range(self.levels)] + (["reference"] if self.plan.reference == "fine" else []):
            z = self.with_part(z, prefix, z0)
        if self.strong and self.plan.reference == "exact":
            z["W"] = jnp.zeros(self.inner.noises)
        if self.strong:
            z["sup_sq_error"] = jnp.zeros(self.levels)
        if self.invariant_names:
            z["invariants0"] = self.invariant_values(z0)
            z["sup_drift"] = jnp.zeros((self.levels, len(self.invariant_names)))
        if self.counts_reference_solver:
            z |= {name: jnp.zeros(()) for name in REFERENCE_SOLVER_COUNTS}
        return z

    def reference_state(self, z, t):
        """The reference path's state at time t (the current one for a fine run)."""
        if self.plan.reference == "fine":
            return self.part(z, "reference")
        return self.inner.exact_state(t, z["W"][0])

    def observables(self) -> dict[str, Callable]:
        """Strong: ``sq_error`` and ``sup_sq_error`` per level (and, with ``plan.weak_observable`` g,
        ``weak_error``: g(level) - g(reference) per level, or g(level) against the exact reference). Weak:
        ``difference`` f(level) - f(reference) per level (shared samples, fine reference), or ``value``
        f(level) per level, and f(reference) last when it is a fine run of its own samples. A path
        non-finite at any level is NaN at every level: the samples are paired. The reference's solver
        counts, when kept (``counts_reference_solver``), last."""
        levels = range(self.levels)
        t = lambda z: z["k"] * self.plan.dts[0]
        all_finite = lambda z: self.space.is_finite(z)
        paired = lambda f: (lambda z: jnp.where(all_finite(z), f(z), jnp.nan))
        drift = {"sup_drift": paired(lambda z: z["sup_drift"])} if self.invariant_names else {}
        drift |= {name: (lambda z, name=name: z[name]) for name in REFERENCE_SOLVER_COUNTS
                  if self.counts_reference_solver}
        if self.strong:
            distance = self.inner.space.distance
            # sq_error first: result_of reads the study's error from its first observable.
            return {"sq_error": paired(lambda z: jnp.stack([
                        distance(self.part(z, f"level{i}"), self.reference_state(z, t(z))) ** 2 for i in levels])),
                    "sup_sq_error": paired(lambda z: z["sup_sq_error"])} | self._weak_error(paired) | drift
        f = self.inner.observables()[self.plan.observable]
        values = lambda z: [f(self.part(z, f"level{i}")) for i in levels]
        if self.plan.reference == "fine" and self.shared:
            return {"difference": paired(lambda z: jnp.stack(values(z)) - f(self.part(z, "reference")))} | drift
        if self.plan.reference == "fine":
            return {"value": paired(lambda z: jnp.stack(values(z) + [f(self.part(z, "reference"))]))} | drift
        return {"value": paired(lambda z: jnp.stack(values(z)))} | drift

    def _weak_error(self, paired) -> dict[str, Callable]:
        """``weak_error`` of a strong study with ``plan.weak_observable``: per level g(level) - g(reference) on
        the path's own reference run, or g(level) (against the exact mean); none without the key."""
        if self.plan.weak_observable is None:
            return {}
        g = self.inner.observables()[self.plan.weak_observable]
        values = lambda z: jnp.stack([g(self.part(z, f"level{i}")) for i in range(self.levels)])
        if self.plan.reference == "fine":
            return {"weak_error": paired(lambda z: values(z) - g(self.part(z, "reference")))}
        return {"weak_error": paired(values)}


@dataclasses.dataclass(frozen=True, eq=False)
class LockStep:
    """One coarse step of every level and the reference (the study's ``integrator`` for the engine).

    ``reference_integrator`` (``plan.reference_method``; None: the study's own) runs the fine reference on
    the same Brownian path. With shared samples one draw of the finest grid serves both: the pair
    (dW, dZ) where either takes it, and a method or reference of Gaussian increments takes its row dW,
    the same numbers it would draw alone (``core.noise``: dW is the same draw in both kinds). With
    independent samples (a three-point method) the reference draws its own Gaussian increments of the
    finest grid from its block of path indices, the levels their three-point variables."""
    integrator: object
    levels: Levels
    reference_integrator: object = None

    @property
    def reference(self):
        """The fine reference's method."""
        return self.integrator if self.reference_integrator is None else self.reference_integrator

    @property
    def drawn_kind(self) -> str:
        """The kind of the variables drawn per step: with shared samples the pair wherever the method or the
        reference takes it; with independent samples the levels' (the reference's are counted apart)."""
        kinds = {self.integrator.noise_kind, self.reference.noise_kind}
        if not self.levels.shared:
            return self.integrator.noise_kind
        return "gaussian_pair" if "gaussian_pair" in kinds else self.integrator.noise_kind

    @property
    def plan(self) -> ConvergencePlan:
        return self.levels.plan

    @property
    def grid_steps(self) -> int:
        """Steps of the finest grid in one coarse step."""
        return _whole_ratio(self.plan.dts[0], self.plan.grid_dt)

    def refine(self, dt: float) -> int:
        return _whole_ratio(dt, self.plan.grid_dt)

    @property
    def values_per_step(self) -> int:
        m = self.levels.inner.noises
        if self.levels.shared:
            return noise.NOISE_KINDS[self.drawn_kind] * m * self.grid_steps
        reference_rows = noise.NOISE_KINDS[self.reference.noise_kind]
        return m * (sum(self.grid_steps // self.refine(dt) for dt in self.plan.dts) + reference_rows * self.grid_steps)

    def solver_name(self, system) -> str | None:
        """The method's solver: the engine's solver counts are the method's (a reference method's are counted
        apart, ``Levels.counts_reference_solver``)."""
        return self.integrator.solver_name(self.levels.inner)

    def noise_keys(self, seed: int, first: int, size: int):
        """The noise streams of paths ``first ..``: their own (shared), or, for independent samples, those
        of other path indices of the same seed, one block of ``plan.paths`` indices per step size and
        one for the fine reference. A reference method's takes the paths' own (the first block), the
        levels the next: its Brownian paths are those a shared-sample study of the plan gives its reference,
        so every method's study of the system with the plan, three-point or Gaussian, meets the same
        reference numbers."""
        keys = lambda block: jax.vmap(noise.noise_key)(noise.path_keys(seed, block * self.plan.paths + first, size))
        if self.levels.shared:
            return keys(0)
        names = [f"level{i}" for i in range(len(self.plan.dts))] + (["reference"] if self.plan.reference == "fine" else [])
        if self.reference_integrator is not None:
            names = names[-1:] + names[:-1]
        return {name: keys(block) for block, name in enumerate(names)}

    def draw(self, key, k):
        """One path's variables of coarse step k: the finest grid's increments (shared), or every
        level's (and the fine reference's) three-point variables at its own step indices; a reference
        method's, its Gaussian increments of the finest grid."""
        m, n = self.levels.inner.noises, self.grid_steps
        if self.levels.shared:
            return noise.fine_increments(self.drawn_kind, key, k, self.plan.grid_dt, m, n)
        dts = {f"level{i}": dt for i, dt in enumerate(self.plan.dts)} | {"reference": self.plan.grid_dt}
        own = lambda name: jax.vmap(lambda j: noise.three_point(key[name], k * (n // self.refine(dts[name])) + j,
                                                                 dts[name], m))(jnp.arange(n // self.refine(dts[name])))
        drawn = {name: own(name) for name in key if name != "reference" or self.reference_integrator is None}
        if "reference" in key and self.reference_integrator is not None:
            drawn["reference"] = noise.fine_increments(self.reference.noise_kind, key["reference"], k,
                                                       self.plan.grid_dt, m, n)
        return drawn

    def _reference_steps(self, z0, xi):
        """The fine reference's steps through one coarse step: (its state, its state after every step, SolverStats)."""
        system = self.levels.inner

        def one(z, x):
            z, stats = self.reference.advance(system, z, self.plan.grid_dt, x)
            return z, (z, stats)

        z, (path, stats) = jax.lax.scan(one, z0, xi)
        return z, path, stats.over_steps()

    def _level_steps(self, states, xi, reference_path, invariants0=None):
        """Every level's steps through one coarse step, in one program: a scan over the levels, each taking
        its own count of steps of its own size (a loop whose count is an argument), so the method's step is
        compiled once for all of them, not once per level. ``states`` are stacked over the levels; ``xi``
        holds every level's variables one level after another (level i's from ``starts[i]``): padding
        each level to the finest grid's count instead held levels x grid variables per path, most of a
        study's memory. For a strong study, each step's running sup of the squared distance to the
        reference at that step's time; given ``invariants0``, each level's running sup of the drift
        |I(z) - I(z_0)| of the declared invariants through its steps. (states, sups, drifts, SolverStats)"""
        system, plan, n = self.levels.inner, self.plan, self.grid_steps
        refines = [self.refine(level_dt) for level_dt in plan.dts]
        counts = [n // r for r in refines]

        def level(_, inputs):
            z0, dt, count, r, start = inputs

            def one(j, carry):
                z, sup, drift, total = carry
                z, stats = self.integrator.advance(system, z, dt, xi[start + j])
                if reference_path is not None:
                    target = jax.tree.map(lambda p: p[(j + 1) * r - 1], reference_path)
                    sup = jnp.maximum(sup, system.space.distance(z, target) ** 2)
                if invariants0 is not None:
                    drift = invariants.running_sup(drift, self.levels.invariant_values(z), invariants0)
                return z, sup, drift, total.merge(stats)

            drift0 = jnp.zeros(() if invariants0 is None else invariants0.shape)
            z, sup, drift, total = jax.lax.fori_loop(0, count, one, (z0, jnp.zeros(()), drift0, SolverStats.none()))
            return None, (z, sup, drift, total)

        starts = np.cumsum([0] + counts[:-1])
        inputs = (states, jnp.asarray(plan.dts), jnp.asarray(counts), jnp.asarray(refines), jnp.asarray(starts))
        _, (states, sups, drifts, stats) = jax.lax.scan(level, None, inputs)
        return states, sups, drifts, stats.over_steps()

    def advance(self, system: Levels, z, dt, xi):
        plan, n = self.plan, self.grid_steps
        inner = system.inner
        bound = lambda dt: noise.truncation_bound(plan.truncate, dt)

        def variables(dt, name, kind):
            """A level's (the reference's) variables: the finest grid's summed onto its step, as many rows as its
            method takes; or, for independent samples, its own draws."""
            if not system.shared:
                return xi[name] if kind == "three_point" else noise.coarsen(xi[name], plan.grid_dt, 1, bound(dt))
            summed = noise.coarsen(xi, plan.grid_dt, self.refine(dt), bound(dt))
            return summed[:, :noise.NOISE_KINDS[kind]] if summed.shape[1] > noise.NOISE_KINDS[kind] else summed

        out = dict(z)
        reference_path, total = None, SolverStats.none()
        if plan.reference == "fine":
            ref, path, reference_stats = self._reference_steps(
                system.part(z, "reference"), variables(plan.grid_dt, "reference", self.reference.noise_kind))
            if system.counts_reference_solver:
                for name, failed in zip(REFERENCE_SOLVER_COUNTS, (reference_stats.unconverged, reference_stats.stagnated)):
                    out[name] = z[name] + failed
            else:
                total = reference_stats
            out = system.with_part(out, "reference", ref)
            reference_path = path if system.strong else None
        elif system.strong:
            w = z["W"] + jnp.cumsum(xi[:, 0], axis=0)                   # W at the grid times of this step
            times = (z["k"] * n + jnp.arange(1, n + 1)) * plan.grid_dt
            reference_path = jax.vmap(inner.exact_state)(times, w[:, 0])
            out["W"] = w[-1]
        levels = range(len(plan.dts))
        stacked = lambda parts: jax.tree.map(lambda *leaves: jnp.stack(leaves), *parts)
        states, sups, drifts, stats = self._level_steps(
            stacked([system.part(z, f"level{i}") for i in levels]),
            jnp.concatenate([variables(d, f"level{i}", self.integrator.noise_kind) for i, d in enumerate(plan.dts)]),
            reference_path,
            z["invariants0"] if system.invariant_names else None)
        for i in levels:
            out = system.with_part(out, f"level{i}", jax.tree.map(lambda leaf: leaf[i], states))
        if system.strong:
            out["sup_sq_error"] = jnp.maximum(z["sup_sq_error"], sups)
        if system.invariant_names:
            out["sup_drift"] = jnp.maximum(z["sup_drift"], drifts)
        out["k"] = z["k"] + 1
        return out, total.merge(stats)


# --- running a study -------------------------------------------------------------------------------
def lock_step(system, integrator, plan: ConvergencePlan, reference_integrator=None) -> LockStep:
    """A study's lock-step: its levels share one Brownian path unless the method's variables are three-point.
    ``reference_integrator`` (``plan.reference_method``; None: the method) runs its fine reference."""
    counts = (reference_integrator is not None and plan.reference == "fine"
              and reference_integrator.solver_name(system) is not None)
    levels = Levels(system, plan, shared=integrator.noise_kind != "three_point", counts_reference_solver=counts)
    return LockStep(integrator, levels, reference_integrator)


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
