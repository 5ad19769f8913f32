"""A convergence study's state and its step, for the ensemble engine (``engine.convergence`` runs them).

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
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import ClassVar

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


def lock_step(system, integrator, plan: ConvergencePlan, reference_integrator=None) -> LockStep:
    """A study's lock-step: its levels share one Brownian path unless the method's variables are three-point.
    ``reference_integrator`` (``plan.reference_method``; None: the method) runs its fine reference."""
    counts = (reference_integrator is not None and plan.reference == "fine"
              and reference_integrator.solver_name(system) is not None)
    levels = Levels(system, plan, shared=integrator.noise_kind != "three_point", counts_reference_solver=counts)
    return LockStep(integrator, levels, reference_integrator)
