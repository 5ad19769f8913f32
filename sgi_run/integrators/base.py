"""What every integrator provides, and the system/integrator fit check.

An integrator is a pure one-step map ``step(system, z, dt, xi) -> (z_next, newton_iterations)``
for a single path (the engine ``vmap``s it), plus the kind of random variables ``xi`` it consumes
(``sgi_run.core.noise.NOISE_KINDS``).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import jax
import numpy as np

from sgi_run.core.errors import ConfigError
from sgi_run.core.tableau import check_conditions


# More solver iterations than this per step means the solve is not converging: refused as an option.
MAX_ITER_LIMIT = 10**6
# A relative tolerance below float64 round-off is met only by an exact zero: every path would fail.
MIN_TOL = float(np.finfo(np.float64).eps)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


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
        self._check_solver_options()

    def _check_solver_options(self) -> None:
        """The options every implicit family's solver takes (Newton, SHAKE): tol and max_iter."""
        tol, max_iter = getattr(self, "tol", None), getattr(self, "max_iter", None)
        if tol is not None and not (_is_number(tol) and MIN_TOL <= tol < 1):
            raise ConfigError("integrator.tol", tol, f"a tolerance: a number in [{MIN_TOL:.3g}, 1) (float64 round-off and up)")
        if max_iter is not None and not (isinstance(max_iter, int) and not isinstance(max_iter, bool)
                                         and 1 <= max_iter <= MAX_ITER_LIMIT):
            raise ConfigError("integrator.max_iter", max_iter, f"an integer in [1, {MAX_ITER_LIMIT}]")

    @property
    def noise_kind(self) -> str:
        raise NotImplementedError

    def newton_unknowns(self, system) -> int:
        """The most unknowns one Newton solve of a step takes, per path (0: explicit). Its Jacobian
        and forward-mode temporaries grow as their square: the engine's memory estimate counts them."""
        return 0

    def step(self, system, z: jax.Array, dt, xi: jax.Array) -> tuple[jax.Array, jax.Array]:
        raise NotImplementedError

    def check_fits(self, system) -> None:
        if system.structure not in self.fits:
            raise ConfigError("integrator", self.name,
                              f"system '{type(system).__name__}' has structure '{system.structure}'; "
                              f"{self.family} integrators fit {list(self.fits)}")
        if self.max_noises is not None and system.noises > self.max_noises:
            raise ConfigError("integrator", self.name,
                              f"{self.family} handles at most {self.max_noises} noise(s); "
                              f"the system has {system.noises}")


def combine(coefficients, values):
    """sum_j c_j v_j over the nonzero c_j only, for explicit stages: a stage nobody uses is then
    dead code that jit removes (RS1 never evaluates a(H0_2)), and 0 * inf never turns a finite sum
    into NaN."""
    terms = [c * v for c, v in zip(coefficients, values) if c != 0]
    return sum(terms) if terms else 0.0
