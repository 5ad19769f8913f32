"""What every integrator provides, and the system/integrator fit check.

An integrator is a pure one-step map ``advance(system, z, dt, xi) -> (z_next, SolverStats)`` for a
single path (the engine ``vmap``s it), plus the kind of random variables ``xi`` it consumes
(``sgi_run.core.noise.NOISE_KINDS``) and the name of the solver its implicit steps use
(``solver(system)``: its iterations and unconverged steps are the run's diagnostics under that
name). ``step`` is the same map returning the iteration count alone. The engine passes ``dt`` as a
traced scalar (one compiled program serves every step size), so a method computes with it and never
branches on it in Python.
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import solvers
from sgi_run.core.errors import ConfigError
from sgi_run.core.tableau import check_conditions


class SolverStats(NamedTuple):
    """What one step's solves took, for one path."""
    iterations: jax.Array     # int32: iterations summed over the step's solves
    unconverged: jax.Array    # bool: some solve of the step failed (neither converged nor stagnated)
    stagnated: jax.Array      # bool: some fixed-point solve stopped at its round-off floor

    @classmethod
    def none(cls) -> SolverStats:
        """An explicit step: nothing solved."""
        return cls(jnp.int32(0), jnp.bool_(False), jnp.bool_(False))

    def add(self, result: solvers.SolveResult) -> SolverStats:
        failed = ~result.converged & ~result.stagnated
        return self.merge(SolverStats(result.iterations, failed, result.stagnated))

    def merge(self, other: SolverStats) -> SolverStats:
        """Two solves of one step: iterations summed, any failure or stagnation."""
        return SolverStats(self.iterations + other.iterations, self.unconverged | other.unconverged,
                           self.stagnated | other.stagnated)

    def over_steps(self) -> SolverStats:
        """Stats stacked over steps (a scan's output) as one step's."""
        return SolverStats(self.iterations.sum(), self.unconverged.any(), self.stagnated.any())


@dataclasses.dataclass(frozen=True)
class Integrator:
    name: str
    # The method's coefficients; ``tableau.conditions()`` gives the residuals of the family's
    # order (and structure) conditions, all checked when the integrator is built.
    tableau: Any = None
    family: ClassVar[str]
    # System structures this family can integrate, and the most noises it handles (None: any).
    fits: ClassVar[tuple[str, ...]] = ("canonical",)
    max_noises: ClassVar[int | None] = None

    def __post_init__(self):
        # Huge finite coefficients overflow in the residuals: an inf residual refuses the tableau,
        # without numpy's warnings on the way.
        with np.errstate(all="ignore"):
            conditions = self.tableau.conditions()
        check_conditions(conditions, f"integrator.tableau ({self.name})")

    @property
    def noise_kind(self) -> str:
        raise NotImplementedError

    def solver_name(self, system) -> str | None:
        """The solver of this integrator's implicit steps on ``system`` (None: explicit): the name
        its iterations and unconverged steps are stored under."""
        return None

    def newton_unknowns(self, system) -> int:
        """The most unknowns one Newton solve of a step takes, per path (0: explicit). Its Jacobian
        and forward-mode temporaries grow as their square: the engine's memory estimate counts them."""
        return 0

    def jacobian_unknowns(self, system) -> int:
        """The unknowns of the Jacobians its solves build (what the memory estimate counts)."""
        return self.newton_unknowns(system)

    def advance(self, system, z, dt, xi: jax.Array) -> tuple[Any, SolverStats]:
        raise NotImplementedError

    def step(self, system, z, dt, xi: jax.Array) -> tuple[Any, jax.Array]:
        """``advance`` with the solver iterations alone."""
        z_next, stats = self.advance(system, z, dt, xi)
        return z_next, stats.iterations

    def check_fits(self, system) -> None:
        if system.structure not in self.fits:
            raise ConfigError("integrator", self.name,
                              f"system '{type(system).__name__}' has structure '{system.structure}'; "
                              f"{self.family} integrators fit {list(self.fits)}")
        if self.max_noises is not None and system.noises > self.max_noises:
            raise ConfigError("integrator", self.name,
                              f"{self.family} handles at most {self.max_noises} noise(s); "
                              f"the system has {system.noises}")


@dataclasses.dataclass(frozen=True)
class ImplicitIntegrator(Integrator):
    """A family whose steps solve equations; the solver and its settings are options
    (``integrator.solver=chord``, ``tol``, ``max_iter``, ``norm``, ``on_fail``, ``iterations``; ``core.solvers``)."""
    tol: float = solvers.DEFAULT_TOL
    max_iter: int = solvers.DEFAULT_MAX_ITER
    solver: str = "newton"
    norm: str = "max"
    on_fail: str = "nan"
    iterations: int | None = None
    # Every equation the family solves is a fixed point x = g(x) (so fixed-point iteration may solve it).
    fixed_point_form: ClassVar[bool] = True

    def __post_init__(self):
        super().__post_init__()
        self.solve.check(self.fixed_point_form)

    @property
    def solve(self) -> solvers.SolverOptions:
        return solvers.SolverOptions(self.solver, self.tol, self.max_iter, self.norm, self.on_fail, self.iterations)

    def solver_name(self, system) -> str | None:
        return self.solver if self.newton_unknowns(system) else None

    def jacobian_unknowns(self, system) -> int:
        """Fixed-point iteration builds no Jacobian."""
        return 0 if self.solver == "fixed_point" else self.newton_unknowns(system)


def combine(coefficients, values):
    """sum_j c_j v_j over the nonzero c_j only, for explicit stages: a stage nobody uses is then
    dead code that jit removes (RS1 never evaluates a(H0_2)), and 0 * inf never turns a finite sum
    into NaN."""
    terms = [c * v for c, v in zip(coefficients, values) if c != 0]
    return sum(terms) if terms else 0.0
