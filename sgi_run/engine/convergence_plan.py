"""The convergence-study plan (``plan=convergence``): validated numbers for an error-vs-dt study.

Like ``engine.plan.Plan``, every refusal is a one-line ``ConfigError`` naming the key (``plan.dts``),
the value and what is allowed, raised before anything is computed. ``fitted_to`` adds the checks
that need the system and the integrator and settles ``reference: auto``.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

from sgi_run.core import noise
from sgi_run.core.errors import ConfigError, require
from sgi_run.core.fields import choice, integer, list_of, real, text
from sgi_run.engine.plan import MAX_INDEX, Plan, _ratio, _whole_ratio, check_sharding, check_truncate, read_plan

ERRORS = ("strong", "weak")
INVARIANTS = ("none", "declared")
REFERENCES = ("exact", "fine", "auto")
# Each bootstrap resample is a least-squares fit in Python; a 95% interval needs a few thousand.
MAX_BOOTSTRAP = 100_000
# The order's interval is a percentile bootstrap over the paths (engine.convergence._fit). n paths have only
# C(2n - 1, n) distinct resamples: 3 at n = 2, 126 at n = 5 (fewer than the default 200 draws), 92378 at n = 10.
# Below 10 paths the 2.5% and 97.5% percentiles are ties among a few repeated resamples, not an interval.
MIN_BOOTSTRAP_PATHS = 10


def check_reference_method(name, system, reference_integrator) -> None:
    """Refuses a reference method that cannot run the fine reference: one that does not fit the system, or a
    weak method (three-point variables are no Brownian path: its run is no reference for a path)."""
    try:
        reference_integrator.check_fits(system)
    except ConfigError as err:
        raise ConfigError("plan.reference_method", name, err.allowed) from None
    if reference_integrator.noise_kind == "three_point":
        raise ConfigError("plan.reference_method", name,
                          f"a method of Gaussian increments: {reference_integrator.name} draws three-point "
                          "variables, which give no Brownian path to follow")


def has_exact_state(system) -> bool:
    """Whether the system knows its exact path ``exact_state(t, W(t))`` (one noise only)."""
    return callable(getattr(system, "exact_state", None)) and system.noises == 1


@dataclasses.dataclass(frozen=True)
class ConvergencePlan:
    dts: tuple[float, ...]          # stored coarse to fine
    paths: int = 4000
    T: float = 1.0
    error: str = "strong"           # strong: RMS of the final state; weak: error of E(observable)(T)
    reference: str = "auto"         # exact | fine | auto (exact where the system has one)
    reference_refine: int = 8       # the fine reference runs at min(dts) / reference_refine
    observable: str = "H"           # for weak errors
    seed: int = 0
    bootstrap: int = 200            # path resamples for the CI of the fitted order (0: no CI)
    kind: str = "convergence"
    shards: int | str = "auto"      # as an ensemble's: paths are run in shards, each checkpointed
    shard_size: int | str = 10000   # "auto": settled for the device (budget.fit_to_memory)
    checkpoint_every: int = 0       # a shard saves its progress every this many coarse steps (0: when finished)
    truncate: float | str | None = None   # null, a bound on |dW|, or log_dt: each level truncated after summing
    resolvable_se: float = 2.0      # the order is fitted on the errors above this many SEs (3 x 1.96: the project's choice, not in Ephrati et al. (2024))
    invariants: str = "none"        # declared: each level's largest drift of every invariant the system declares
    # An integrator option (conf/integrator/<name>.yaml) that runs the fine reference instead of the study's own
    # method, on the same Brownian path: every method's study with the same plan meets the same reference numbers.
    reference_method: str | None = None
    # A strong study's observable whose weak error E f(level)(T) - E f(reference)(T) is measured on the same paths.
    weak_observable: str | None = None

    DESCRIBED_AS: ClassVar[str] = "convergence plan"
    BUNDLED_OPTION: ClassVar[str] = "convergence"

    def __post_init__(self):
        self.check()
        object.__setattr__(self, "dts", tuple(sorted((float(d) for d in self.dts), reverse=True)))

    def check(self) -> None:
        require("plan.kind", self.kind, self.kind == "convergence", "'convergence'")
        real("plan.T", self.T, "a number > 0", above=0)
        dts = list(list_of("plan.dts", self.dts, "a list of at least two step sizes (an order is a slope)", at_least=2))
        # Two paths at least: every error carries a Monte Carlo standard error. Independent samples
        # (three-point increments) use paths of their own per step size and for the reference.
        most = MAX_INDEX // (len(dts) + 1)
        integer("plan.paths", self.paths,
                f"an integer in [2, 2^32 / (len(dts) + 1) = {most}) (samples are addressed by 32-bit path indices)",
                at_least=2, below=most)
        for dt in dts:
            # A null step size is shown in its list.
            real("plan.dts", self.dts if dt is None else dt, "step sizes > 0", above=0)
        for dt in dts:
            require("plan.dts", dt, _whole_ratio(self.T, dt) is not None, f"step sizes that divide T = {self.T}")
        require("plan.dts", sorted(dts, reverse=True), len(set(dts)) == len(dts), "distinct step sizes")
        finest = min(dts)
        for dt in dts:
            # One Brownian path per sample is drawn on the finest grid and summed onto the others.
            require("plan.dts", dt, _whole_ratio(dt, finest) is not None,
                    f"whole multiples of the finest step {finest}")
        choice("plan.error", self.error, ERRORS)
        choice("plan.reference", self.reference, REFERENCES)
        integer("plan.reference_refine", self.reference_refine,
                "an integer >= 2 (the fine reference step is min(dts) / reference_refine)", at_least=2)
        require("plan.observable", self.observable, isinstance(self.observable, str), "an observable name")
        integer("plan.seed", self.seed, "an integer in [0, 2^32)", at_least=0, below=2**32)
        integer("plan.bootstrap", self.bootstrap,
                f"an integer in [0, {MAX_BOOTSTRAP}] (resamples of the fitted order's 95% interval)",
                at_least=0, at_most=MAX_BOOTSTRAP)
        require("plan.paths", self.paths, self.bootstrap == 0 or self.paths >= MIN_BOOTSTRAP_PATHS,
                f"at least {MIN_BOOTSTRAP_PATHS} paths for the fitted order's bootstrap interval "
                f"(plan.bootstrap={self.bootstrap}), or plan.bootstrap=0 for no interval")
        coarsest = max(dts)
        for dt in dts:
            # The levels run in lock-step over the coarsest step: each takes a whole number of steps in it.
            require("plan.dts", dt, _whole_ratio(coarsest, dt) is not None,
                    f"step sizes that divide the coarsest, {coarsest}")
        check_truncate(self.truncate, f"null, a number > 0 (the bound on |dW|) or a rule {list(noise.TRUNCATION_RULES)} "
                       "(with every dt < 1)", rule_allowed=coarsest < 1)
        check_sharding(self)
        choice("plan.invariants", self.invariants, INVARIANTS,
               f"one of {list(INVARIANTS)} (declared: the largest drift of each invariant the system declares)")
        real("plan.resolvable_se", self.resolvable_se,
             "a number > 0 (an error enters the fitted order when it exceeds this many standard errors)", above=0)
        integer("plan.checkpoint_every", self.checkpoint_every,
                "an integer >= 0 (coarse steps between a shard's progress checkpoints; 0: none)", at_least=0)
        if self.reference_method is not None:
            text("plan.reference_method", self.reference_method, "null or the name of an integrator option")
            require("plan.reference_method", self.reference_method, self.reference != "exact",
                    "null with plan.reference=exact (a reference method runs a fine reference: reference fine or auto)")
        if self.weak_observable is not None:
            text("plan.weak_observable", self.weak_observable, "null or the name of an observable of the system")
            require("plan.weak_observable", self.weak_observable, self.error == "strong",
                    "null in a weak study (plan.observable is its observable)")

    # --- the checks that need the system and the integrator -------------------------------------
    def fitted_to(self, system, integrator, reference_integrator=None) -> ConvergencePlan:
        """This plan with ``reference`` settled to exact or fine (fine where ``reference_method`` names the method
        of a fine reference); refuses what the pair, and the reference method ``reference_integrator`` (built of
        ``reference_method``), cannot do."""
        if self.error == "strong" and integrator.noise_kind == "three_point":
            raise ConfigError("plan.error", self.error,
                              f"weak with the weak integrator {integrator.name} (three-point increments "
                              f"are not a Brownian path, so step sizes cannot share one)")
        allowed = list(system.observables())
        if self.observable not in allowed:
            raise ConfigError("plan.observable", self.observable, f"observables of {type(system).__name__}: {allowed}")
        if self.error == "strong":
            exact, what = has_exact_state(system), "exact path exact_state(t, W)"
        else:
            exact, what = system.reference_mean(self.observable) is not None, f"exact mean of {self.observable}"
        if self.reference == "exact" and not exact:
            raise ConfigError("plan.reference", self.reference,
                              f"fine or auto: {type(system).__name__} has no {what}")
        if reference_integrator is not None:
            check_reference_method(self.reference_method, system, reference_integrator)
        if self.weak_observable is not None and self.weak_observable not in allowed:
            raise ConfigError("plan.weak_observable", self.weak_observable,
                              f"null or an observable of {type(system).__name__}: {allowed}")
        if self.invariants == "declared" and not system.invariants():
            raise ConfigError("plan.invariants", self.invariants,
                              f"none: {type(system).__name__} declares no invariant with these parameters")
        resolved = self.reference if self.reference != "auto" else (
            "exact" if exact and self.reference_method is None else "fine")
        if (self.weak_observable is not None and resolved == "exact"
                and system.reference_mean(self.weak_observable) is None):
            raise ConfigError("plan.weak_observable", self.weak_observable,
                              f"null, or plan.reference=fine: {type(system).__name__} has no exact mean of "
                              f"{self.weak_observable} for the exact reference")
        plan = dataclasses.replace(self, reference=resolved)
        if plan.grid_steps >= MAX_INDEX:
            finest = "min(dts) / reference_refine" if resolved == "fine" else "min(dts)"
            raise ConfigError("plan.dts", list(plan.dts), f"step sizes whose finest grid ({finest} = {plan.grid_dt:.3g}) "
                              f"has fewer than 2^32 steps in T = {plan.T} (random numbers are addressed by 32-bit "
                              f"step indices; it has {plan.grid_steps:.3g})")
        return plan

    def grid_plan(self, observables) -> Plan:
        """The study as the engine runs it: paths stepped over the coarsest step (each step advances
        every level), statistics of ``observables`` at every coarse step, and every path's final values
        (for the bootstrap, and for the largest drift of an invariant over the paths)."""
        coarsest = max(self.dts)
        return Plan(paths=self.paths, dt=coarsest, T=self.T, output_dt=coarsest, observables=tuple(observables),
                    keep_paths=0, seed=self.seed, shards=self.shards, shard_size=self.shard_size,
                    time_average=(self.T, self.T) if self.bootstrap or self.invariants == "declared" else None,
                    checkpoint_every=self.checkpoint_every)

    @property
    def reference_dt(self) -> float | None:
        return self.dts[-1] / self.reference_refine if self.reference == "fine" else None

    @property
    def grid_dt(self) -> float:
        """The finest grid, on which every sample's Brownian path is drawn (with a settled reference)."""
        return self.reference_dt or self.dts[-1]

    @property
    def grid_steps(self) -> float:
        """Steps of the finest grid in [0, T] (inf where they overflow a float)."""
        return _ratio(self.T, self.grid_dt)

    @classmethod
    def from_mapping(cls, cfg) -> ConvergencePlan:
        return read_plan(cls, cfg)
