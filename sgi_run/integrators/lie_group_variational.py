r"""The stochastic Lie-group variational integrator with the Cayley retraction (Gay-Balmaz & Wu 2024, Prop. 3.1 and
eqs. (54), (57), (58), (60), (62), (63)) on SO(3) (the rigid body, so(3)*) and SO(3) x R^3 (the heavy
top, se(3)*), written with this package's generator: :math:`\sigma(\bar\mu) = \Delta t\,\nabla h(\bar\mu) +
\sum_i\overline{\Delta W^i}\nabla h_i(\bar\mu)`, an element :math:`(\sigma_\xi, \sigma_b)` of the algebra.

With :math:`X = \Delta t\,\xi = \tfrac12\sigma_\xi(\bar\mu)` and the dual right-trivialised Cayley derivative
:math:`M_\pm(X)P = [d_{\pm X}\mathrm{cay}^{-1}]^*P = P \pm \tfrac12 X\times P + q\,(X\cdot P)X`, one step solves
:math:`M_+A = \Pi_n`, :math:`M_+B = M_-A - \sigma_b\times\tilde\Gamma` for :math:`S = A + B`, i.e. (closed form of
Gay-Balmaz & Wu (2024) eqs. (54), (60)) :math:`S = M_+^{-1}[(I + Q)\Pi_n - \sigma_b\times\tilde\Gamma]`, :math:`Q = \mathrm{cay}(-X)`,
:math:`\tilde\Gamma = Q\Gamma_n`, :math:`\bar\mu = (S/2, \tilde\Gamma)`: a fixed point in the three numbers X
(the paper's contraction (64)). Then, since :math:`M_-M_+^{-1} = Q` for every q,

.. math::
    \Pi_{n+1} = Q^2\Pi_n - (Q\sigma_b)\times\Gamma_{n+1},\qquad \Gamma_{n+1} = Q^2\Gamma_n,\qquad
    R_{n+1} = R_n\,\mathrm{cay}(X)^2

(twice cay(X), not cay(2X)). Every iterate keeps :math:`|\Pi|` (rigid body), :math:`|\Gamma|`,
:math:`\Pi\cdot\Gamma` and :math:`R\Pi` exactly, whatever the solve does.

The two variants of q are data: ``paper`` :math:`q = -\tfrac14`, what Gay-Balmaz & Wu (2024) prints and the only one
that conserves the deterministic energy exactly (App. 10.1); ``exact`` :math:`q = +\tfrac14`, the true dual of
the Cayley derivative, the only one that is a Lie-Poisson map (Prop. 4.4). The increments are the engine's:
``plan.truncate=log_dt`` is the paper's :math:`D_{\Delta t} = \sqrt{4|\ln\Delta t|\Delta t}` (55).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax

from sgi_run.core import lie
from sgi_run.core.errors import ConfigError
from sgi_run.core.linalg import cross, inner, join_vectors, matmul
from sgi_run.core.tableau import coefficient_array
from sgi_run.integrators.base import SolverStats
from sgi_run.integrators.lie_poisson import LiePoissonIntegrator

DTAU_VARIANTS = ("paper", "exact")


@dataclasses.dataclass(frozen=True)
class CayleyTableau:
    """The dual Cayley derivative's coefficients: ``linear`` (1/2) and one ``quadratic`` q per variant."""
    linear: float
    quadratic: dict[str, float]

    @classmethod
    def from_config(cls, spec, params, key="integrator.tableau") -> CayleyTableau:
        if spec.get("retraction") != "cayley":
            raise ConfigError(f"{key}.retraction", spec.get("retraction"), "cayley")
        quadratic = spec.get("quadratic")
        if not (hasattr(quadratic, "keys") and set(quadratic.keys()) == set(DTAU_VARIANTS)):
            raise ConfigError(f"{key}.quadratic", quadratic, f"one number per variant {list(DTAU_VARIANTS)}")
        linear = coefficient_array(spec.get("linear"), params, f"{key}.linear", ())
        return cls(float(linear), {v: float(coefficient_array(quadratic[v], params, f"{key}.quadratic.{v}", ()))
                                   for v in DTAU_VARIANTS})

    def config(self) -> dict:
        """The mapping ``from_config`` reads back to this tableau."""
        return {"retraction": "cayley", "linear": self.linear, "quadratic": dict(self.quadratic)}

    def conditions(self) -> dict[str, float]:
        return {"(retraction) M_-(X) M_+(X)^-1 = cay(-X): linear = 1/2": self.linear - 0.5,
                "(exact) the dual of d cay^-1 = I - X^/2 + X X^T/4: quadratic[exact] = 1/4":
                    self.quadratic["exact"] - 0.25}


def _cayley_solve(x, v, q, linear):
    """:math:`M_+(X)^{-1}v` in closed form: :math:`M_+ = (I + \\tfrac12\\hat X)(I + qXX^\\top)`, and
    :math:`(I + \\tfrac12\\hat X)^{-1}w = (w - \\tfrac12X\\times w + \\tfrac14(X\\cdot w)X)/(1 + |X|^2/4)`."""
    xx = inner(x, x)
    w = cross(x, v)          # (I + a X^)^-1 v = (v - a X x v + a^2 (X.v) X) / (1 + a^2 |X|^2)
    p = (v - linear * w + linear**2 * inner(x, v) * x) / (1 + linear**2 * xx)
    return p - q * inner(x, p) / (1 + q * xx) * x


def _dual_cayley(x, p, q, linear):
    """:math:`M(X)P = P + \\mathrm{linear}\\,X\\times P + q\\,(X\\cdot P)X`: :math:`M_+` with linear = 1/2,
    :math:`M_-` with linear = -1/2 (the dual right-trivialised Cayley derivative at +X and -X)."""
    return p + linear * cross(x, p) + q * inner(x, p) * x


class HalfStepMomenta(NamedTuple):
    """One rigid-body step's half-step momenta (A, B) of eqs. (62) and how its solve went."""
    a: jax.Array
    b: jax.Array
    iterations: jax.Array
    converged: jax.Array


@dataclasses.dataclass(frozen=True)
class CayleyLGVI(LiePoissonIntegrator):
    """Cayley LGVI on so(3)* and se(3)* (the state may carry the attitude R; ``system.R0``)."""
    family: ClassVar[str] = "lie_group_variational"
    evolves_attitude: ClassVar[bool] = True
    dtau_variant: str = "paper"
    solver: str = "fixed_point"

    def __post_init__(self):
        super().__post_init__()
        if self.dtau_variant not in DTAU_VARIANTS:
            raise ConfigError("integrator.dtau_variant", self.dtau_variant,
                              f"one of {list(DTAU_VARIANTS)} (paper: q = -1/4 as printed; exact: q = +1/4)")

    def check_fits(self, system) -> None:
        super().check_fits(system)
        if not isinstance(system.algebra, (lie.SO3, lie.SE3)):
            raise ConfigError("integrator", self.name,
                              f"a method for system '{type(system).__name__}' on {system.algebra.name}: "
                              f"{self.name} is the Cayley LGVI on SO(3) and SO(3) x R^3 (rigid_body, heavy_top)")

    def newton_unknowns(self, system) -> int:
        return 6 if isinstance(system.algebra, lie.SE3) else 3

    def advance(self, system, z, dt, xi):
        dw = xi[0]
        so3 = lie.SO3()
        semidirect, mu = isinstance(system.algebra, lie.SE3), self.solve.in_components(system.dual(z))
        pi, gamma = mu if semidirect else (mu, None)
        sol = self._solve(system, mu, dt, dw)
        x, b = sol.x if semidirect else (sol.x, None)
        rotate = lambda v: so3.cayley_rotate(-x, v)       # Q v, Q = cay(-X)
        pi_next = rotate(rotate(pi))
        if semidirect:
            gamma_next = rotate(rotate(gamma))
            mu_next = (pi_next - cross(rotate(b), gamma_next), gamma_next)
        else:
            mu_next = pi_next
        attitude = system.attitude(z)
        if attitude is not None:
            forward = so3.cayley(x)
            attitude = matmul(matmul(attitude, forward), forward)
        return system.state(join_vectors(mu_next), attitude), SolverStats.none().add(sol)

    def _solve(self, system, mu, dt, dw):
        """The fixed point of one step from the dual element ``mu`` (increments ``dw``): X = dt xi (rigid body),
        or X with the torque generator b = sigma_b (heavy top: gravity and the Gamma-noises, evaluated at the mean
        like everything else); the paper's contraction (64), solved as ``integrator.solver`` says."""
        q, linear = self.tableau.quadratic[self.dtau_variant], self.tableau.linear
        so3 = lie.SO3()
        semidirect = isinstance(system.algebra, lie.SE3)
        pi, gamma = mu if semidirect else (mu, None)

        def mean_of(u):
            x, b = u if semidirect else (u, None)
            if semidirect:
                gamma_half = so3.cayley_rotate(-x, gamma)
                return 0.5 * _cayley_solve(x, pi + so3.cayley_rotate(-x, pi) - cross(b, gamma_half), q, linear), gamma_half
            return 0.5 * _cayley_solve(x, pi + so3.cayley_rotate(-x, pi), q, linear)

        def unknowns_of(sigma):
            return (0.5 * sigma[0], sigma[1]) if semidirect else 0.5 * sigma

        start = unknowns_of(system.generator(mu, dt, dw))
        return self.solve.fixed_point(lambda u: unknowns_of(system.generator(mean_of(u), dt, dw)), start)

    def half_step_momenta(self, system, pi, dt, dw) -> HalfStepMomenta:
        """The rigid body's (A, B) of eqs. (62) for one step from momentum ``pi`` with fixed increments ``dw``:
        :math:`M_+A = \\Pi`, :math:`M_+B = M_-A` at the X the step's own solve converges to (Gay-Balmaz & Wu 2024 eqs. (54), (62), (63); the step
        itself needs only S = A + B), with that solve's iterations and converged flag. Gay-Balmaz & Wu's (2024) Figure 14
        maps :math:`\\|(A, B)\\|` over the sphere to show the equations are solvable with A, B bounded."""
        if not isinstance(system.algebra, lie.SO3):
            raise ConfigError("integrator", self.name, f"a rigid body (so(3)*) for the half-step momenta (A, B) of "
                              f"eqs. (62); {type(system).__name__} is on {system.algebra.name}")
        q, linear = self.tableau.quadratic[self.dtau_variant], self.tableau.linear
        pi = self.solve.in_components(pi)
        sol = self._solve(system, pi, dt, dw)
        a = _cayley_solve(sol.x, pi, q, linear)
        b = _cayley_solve(sol.x, _dual_cayley(sol.x, a, q, -linear), q, linear)
        return HalfStepMomenta(join_vectors(a), join_vectors(b), sol.iterations, sol.converged)
