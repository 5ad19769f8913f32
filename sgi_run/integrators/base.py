"""What every integrator provides, and the system/integrator fit check.

An integrator is a pure one-step map ``step(system, z, dt, xi) -> (z_next, newton_iterations)``
for a single path (the engine ``vmap``s it), plus the kind of random variables ``xi`` it consumes
(``sgi_run.core.noise.NOISE_KINDS``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax

from sgi_run.core.errors import ConfigError
from sgi_run.core.tableau import check_conditions


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
        check_conditions(self.tableau.conditions(), f"integrator.tableau ({self.name})")

    @property
    def noise_kind(self) -> str:
        raise NotImplementedError

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
