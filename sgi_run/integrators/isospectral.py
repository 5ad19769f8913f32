r"""The stochastic isospectral midpoint method, IsoMP (Ephrati et al. 2024, eq. (26)), on
any Lie-Poisson system whose algebra has a matrix form (``core.lie``: so(3) by ``hat``, so(n), su(N),
products block by block).

With the generator :math:`\tilde\Psi(\tilde X) = -M\big(\Delta t\,\nabla h(\tilde X) + \sum_k\Delta W^k
\nabla h_k(\tilde X)\big)` (:math:`M` the matrix form; :math:`-M(\nabla h)` is the paper's
:math:`\nabla H^*` in the paper's own normalisation, since :math:`M(\mathrm{ad}^*_s\mu) = [M(\mu), M(s)]`),
one step solves for the midpoint

.. math::
    \tilde X = X_n + \tfrac12[\tilde\Psi, \tilde X] + \tfrac14\tilde\Psi\tilde X\tilde\Psi,
    \qquad X_{n+1} = X_n + [\tilde\Psi, \tilde X]
    = (I + \tfrac12\tilde\Psi)\tilde X(I - \tfrac12\tilde\Psi),

a similarity by the Cayley transform of :math:`\tilde\Psi`: the spectrum and every Casimir
:math:`\mathrm{tr} f(X)` are kept for every step size (Thms 4.5, 4.6). The step runs in the algebra's own
coordinates (``core.lie``: ``isospectral_terms`` gives :math:`[\tilde\Psi, \tilde X]` and
:math:`\tilde\Psi\tilde X\tilde\Psi`; so(3) as vectors). For matrices the fixed-point iteration is
written so that every intermediate is exactly skew-Hermitian in floating point (without it the
isospectral flow's instability off the algebra blows the Manakov run up): with :math:`C = \tilde\Psi\tilde X`,
:math:`[\tilde\Psi, \tilde X] = C - C^*` and :math:`\tilde\Psi\tilde X\tilde\Psi = \tfrac12(Q - Q^*)`,
:math:`Q = C\tilde\Psi`. Its tolerance is relative to :math:`\max|X_n|` and it stops at its round-off floor
(the engine's fixed-point solver: ``tol``, ``max_iter``, stagnation exit). The increments are the
engine's: Ephrati et al.'s (2024) truncated ones with ``plan.truncate=log_dt`` (Ephrati et al. 2024 sections 4.2 and 6; each level of a
convergence study truncated after summing).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from sgi_run.core import linalg
from sgi_run.core.errors import ConfigError
from sgi_run.integrators.base import SolverStats
from sgi_run.integrators.lie_poisson import LiePoissonIntegrator, LiePoissonScheme

SCHEMES = ("isospectral_midpoint",)


@dataclasses.dataclass(frozen=True)
class IsospectralScheme(LiePoissonScheme):
    """The scheme and its Cayley weight theta: X_n = (I - theta Psi) X~ (I + theta Psi), X_n+1 =
    (I + theta Psi) X~ (I - theta Psi), so X_n+1 - X_n = 2 theta [Psi, X~]: consistent only at theta = 1/2."""
    schemes: ClassVar[tuple[str, ...]] = SCHEMES

    def conditions(self) -> dict[str, float]:
        return {"(consistency) 2 theta = 1": 2 * self.theta - 1}


@dataclasses.dataclass(frozen=True)
class IsospectralIntegrator(LiePoissonIntegrator):
    """Luesink et al.'s (2023) Lie-Poisson family's noise, unknowns and solver naming; its own step."""
    family: ClassVar[str] = "isospectral"
    solver: str = "fixed_point"

    def __post_init__(self):
        super().__post_init__()
        # Newton or chord updates are no commutators: their iterates would leave the algebra.
        if self.solver != "fixed_point":
            raise ConfigError("integrator.solver", self.solver,
                              "fixed_point (IsoMP's iterates are exactly skew-Hermitian only under its fixed-point map)")

    def check_fits(self, system) -> None:
        super().check_fits(system)
        algebra = system.algebra
        if not algebra.matrix_form:
            raise ConfigError("integrator", self.name,
                              f"a method for system '{type(system).__name__}' on {algebra.name}: {self.name} needs "
                              "a matrix Lie algebra (so(3), so(n), su(N) or products of them); tmk, lp_midpoint "
                              "and lp_trapezoidal fit every Lie-Poisson system")

    def advance(self, system, z, dt, xi):
        # In the algebra's own coordinates (``isospectral_terms``): its matrices where it is so(n) or su(N),
        # vectors for so(3).
        algebra, dw, theta = system.algebra, xi[0], self.tableau.theta
        x_n = self.solve.in_components(system.dual(z))

        def midpoint_of(x):
            # X~ = X_n + theta [Psi, X~] + theta^2 Psi X~ Psi; the commutator too, for X_n+1
            psi = jax.tree.map(jnp.negative, system.generator(x, dt, dw))
            commutator, sandwich = algebra.isospectral_terms(psi, x)
            return jax.tree.map(lambda x_n, c, s: x_n + theta * c + theta**2 * s, x_n, commutator, sandwich), commutator

        # X_n+1 = X_n + 2 theta [Psi, X~] with Psi and the commutator at the solution X~ (Ephrati et al. 2024 eq. (26)), not
        # the last iteration's (at the iterate before it: one evaluation fewer, 10-20% of an Euler-Zeitlin step):
        # that commutator is off by the last update, always the same way, and over the 2.56 x 10^5 steps of
        # Ephrati et al.'s Figure 6 the Manakov spectrum drifted 4.1e-13 instead of 1.1e-14.
        sol = self.solve.fixed_point(lambda x: midpoint_of(x)[0], x_n)
        x_next = jax.tree.map(lambda x_n, c: x_n + 2 * theta * c, x_n, midpoint_of(sol.x)[1])
        return system.space.project(system.state(linalg.join_vectors(x_next))), SolverStats.none().add(sol)
