r"""Lie-Poisson integrators (Luesink et al. 2023, sections 2-4): one family, three solves of the same
equation :math:`d\mu = F(\mu)\,dt + \sum_i G_i(\mu)\circ dW^i`, generic over the system's algebra.

- ``tmk`` (the paper's trapezoidal Munthe-Kaas method): solve for the algebra element
  :math:`\sigma = \Delta t\,\nabla h(\bar\mu) + \sum_i\Delta W^i\nabla h_i(\bar\mu)` with
  :math:`\bar\mu = \tfrac12(\mu_n + e^{A(\sigma)}\mu_n)`, then :math:`\mu_{n+1} = e^{A(\sigma)}\mu_n`,
  :math:`A(\sigma)\mu = \mathrm{ad}^*_\sigma\mu` (the "+" exponent). Every iterate lies on the
  coadjoint orbit, so Casimirs are kept to round-off whatever the solve does; by default the chord
  method with its Jacobian at :math:`\sigma = 0`, restarted from 0 every step (Luesink et al. 2023 section 4, the chord method).
- ``midpoint`` (IM applied directly): :math:`\mu_{n+1} = \mu_n + \Delta t F(\bar\mu) + \sum_i\Delta W^i G_i(\bar\mu)`,
  :math:`\bar\mu = \tfrac12(\mu_n + \mu_{n+1})`; by default fixed-point iteration.
- ``trapezoidal`` (TRAP applied directly): :math:`\mu_{n+1} = \mu_n + \tfrac12[\Delta t(F(\mu_n) + F(\mu_{n+1}))
  + \sum_i\Delta W^i(G_i(\mu_n) + G_i(\mu_{n+1}))]`; by default Newton.

The tableau holds the scheme and its weight :math:`\theta` (the mean point
:math:`(1-\theta)\mu_n + \theta\mu_{n+1}`, the trapezoid's :math:`(1-\theta)F_n + \theta F_{n+1}`),
checked against the second-order (symmetry) condition :math:`\theta = 1/2` of all three methods. The
solver, tolerance, norm and failure policy are options (``ImplicitIntegrator``).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from sgi_run.core import linalg
from sgi_run.core.errors import ConfigError
from sgi_run.core.tableau import coefficient_array
from sgi_run.integrators.base import ImplicitIntegrator, SolverStats

SCHEMES = ("tmk", "midpoint", "trapezoidal")


@dataclasses.dataclass(frozen=True)
class LiePoissonScheme:
    scheme: str
    theta: float = 0.5
    schemes: ClassVar[tuple[str, ...]] = SCHEMES

    @classmethod
    def from_config(cls, spec, params, key="integrator.tableau") -> LiePoissonScheme:
        scheme = spec.get("scheme")
        if scheme not in cls.schemes:
            raise ConfigError(f"{key}.scheme", scheme, f"one of {list(cls.schemes)}")
        theta = coefficient_array(spec.get("theta", 0.5), params, f"{key}.theta", ())
        return cls(scheme, float(theta))

    def conditions(self) -> dict[str, float]:
        """Second order (and time symmetry) of the mean point or the trapezoid."""
        return {"(second order) theta = 1/2": self.theta - 0.5}


def _add(*trees):
    return jax.tree.map(lambda *xs: sum(xs), *trees)


def _scale(c, tree):
    return jax.tree.map(lambda x: c * x, tree)


@dataclasses.dataclass(frozen=True)
class LiePoissonIntegrator(ImplicitIntegrator):
    family: ClassVar[str] = "lie_poisson"
    fits: ClassVar[tuple[str, ...]] = ("lie_poisson",)

    @property
    def noise_kind(self) -> str:
        return "gaussian"

    # Whether its step also moves the attitude a state may carry (system.R0): only the Lie-group variational
    # integrator reconstructs it; the others evolve the momentum alone.
    evolves_attitude: ClassVar[bool] = False

    def check_fits(self, system) -> None:
        super().check_fits(system)
        if system.carries_attitude and not self.evolves_attitude:
            raise ConfigError("system.R0", list(map(list, system.R0)),
                              f"null with {self.name}, which evolves the momentum only (the attitude R is "
                              "reconstructed by lgvi_cayley)")

    def newton_unknowns(self, system) -> int:
        leaves = jax.tree.leaves(system.dual(system.zero_state()))
        return sum(x.size * (2 if jnp.iscomplexobj(x) else 1) for x in leaves)

    def solver_name(self, system) -> str | None:
        return self.solver

    def advance(self, system, z, dt, xi):
        mu, dw = self.solve.in_components(system.dual(z)), xi[0]
        scheme, theta = self.tableau.scheme, self.tableau.theta
        between = lambda a, b: _add(_scale(1.0 - theta, a), _scale(theta, b))
        if scheme == "tmk":
            algebra = system.algebra

            def sigma_of(sigma):
                mean = between(mu, algebra.coadjoint_exp(sigma, mu))
                return system.generator(mean, dt, dw)

            mu_split = linalg.split_vectors(mu)

            def linearized(sigma):
                # exp(ad*_sigma) mu = mu + ad*_sigma mu + O(sigma^2): sigma_of's value and Jacobian at sigma = 0,
                # where the chord method takes its Jacobian (through the exponential's closed form, forward-mode
                # AD was most of a heavy-top TMK step); on sigma's and mu's vectors as components (the solver's)
                return system.generator(between(mu_split, _add(mu_split, algebra.ad_star(sigma, mu_split))), dt, dw)
            zero = jax.tree.map(jnp.zeros_like, mu)
            sol = self.solve.fixed_point(sigma_of, zero, linearization=linearized)
            mu_next = algebra.coadjoint_exp(sol.x, mu)
        elif scheme == "midpoint":
            def mean_of(mean):
                step = _add(_scale(dt, system.drift(mean)), system.noise_in_algebra(mean, dw))
                return _add(mu, _scale(theta, step))
            sol = self.solve.fixed_point(mean_of, mu)
            mu_next = _add(_scale(1.0 / theta, sol.x), _scale(1.0 - 1.0 / theta, mu))
        else:
            start = _add(_scale(dt, system.drift(mu)), system.noise_in_algebra(mu, dw))

            def next_of(nxt):
                end = _add(_scale(dt, system.drift(nxt)), system.noise_in_algebra(nxt, dw))
                return _add(mu, between(start, end))
            sol = self.solve.fixed_point(next_of, mu)
            mu_next = sol.x
        # The space's projection (identity but where the geometry needs one: the reality condition of Luesink et al.'s (2023) sine-Euler, section 6).
        return system.space.project(system.state(linalg.join_vectors(mu_next))), SolverStats.none().add(sol)
