r"""Splitting integrators for Langevin systems of Bou-Rabee & Owhadi (Bou-Rabee & Owhadi 2007).
One implementation; the six methods SVIA/B/C and CSVIA/B/C are data (``conf/integrator/*.yaml``).

Per coordinate j, with :math:`x_j = ch/m_j`, :math:`F = -\nabla U` and :math:`\eta \sim N(0, I)`
(:math:`\eta = \Delta W/\sqrt h`), the momentum update is

.. math::
    p^* = \lambda(x_j)\,p_k + h\,w(x_j)\,F(q_k) + \sqrt{m_j\,v(x_j)/\beta}\;\eta_k

with the tableau choosing

* ``friction: exact_ou``: :math:`\lambda = e^{-x}`, :math:`v = 1 - e^{-2x}`: the exact
  Ornstein-Uhlenbeck step of :math:`dp = -(c/m)p\,dt + \sigma dW` (``expm1``, and never
  :math:`e^{ch}`, so :math:`ch > 709` neither overflows nor loses digits);
* ``friction: euler``: :math:`\lambda = 1 - x`, :math:`v = 2x`: Euler-Maruyama, noise
  :math:`\sigma\sqrt h` (SVIB, eq. 4.2);
* ``force_damped``: :math:`w = \lambda` (SVIC: the force is damped, "BOA") or :math:`w = 1`
  (SVIA, eq. 1.2/4.1 with the garbled noise term read as in docs/papers/bou_rabee_owhadi.md: the force is not damped, "OBA").

Flat (``constrained: false``, Bou-Rabee & Owhadi (2007) Fig. 2.1): :math:`p_{k+1} = p^*`, :math:`q_{k+1} = q_k + h M^{-1}p_{k+1}`
(symplectic Euler: force at the old q, drift with the new p).

Constrained (``constrained: true``; paper eq. 2.2-2.3 and 6.2-6.3) on
:math:`g(q) = 0`, :math:`G = \partial g/\partial q`: SHAKE with the constraint force along the old
gradient, :math:`\hat p = p^* + G(q_k)^\top\mu`, :math:`q_{k+1} = q_k + hM^{-1}\hat p`,
:math:`g(q_{k+1}) = 0`, then the RATTLE-type projection (2.3)/(6.3) of :math:`\hat p` onto the cotangent
space at :math:`q_{k+1}` (:math:`G(q_{k+1})M^{-1}p_{k+1} = 0`). On the unit sphere the SHAKE equation is
a quadratic with a closed-form root; on any other manifold (or with ``shake: newton``) it is solved for
the k multipliers by the integrator's solver (Newton, or chord: ``integrator.solver``). No solution (a
negative discriminant, or a solve not converging) makes the path NaN, which the engine counts (the project's
choice: never clamped; ``on_fail: count`` keeps the last iterate and counts the step instead).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from sgi_run.core import solvers
from sgi_run.core.errors import ConfigError
from sgi_run.core.fields import boolean, choice
from sgi_run.integrators.base import ImplicitIntegrator, SolverStats
from sgi_run.systems import SYSTEMS
from sgi_run.systems.langevin import ConstrainedLangevinSystem, LangevinSystem

FRICTIONS = ("exact_ou", "euler")
SHAKE_SOLVERS = ("auto", "newton")
# Newton SHAKE stops at |g(q)| <= tol (1 + |h mu|): the constraint must hold to round-off (the project's
# check of Bou-Rabee & Owhadi (2007) Fig. 2.2: 1e-12 after 2000 steps), and at quadratic convergence the extra iteration this costs is cheap.
SHAKE_TOL = 1e-14


@dataclasses.dataclass(frozen=True)
class LangevinSplittingTableau:
    friction: str          # exact_ou | euler
    force_damped: bool     # the force term carries the damping factor (SVIC) or not (SVIA, SVIB)
    constrained: bool      # SHAKE/RATTLE on a constraint manifold (CSVI*) or flat space (SVI*)

    @classmethod
    def from_config(cls, spec, params, key="integrator.tableau") -> LangevinSplittingTableau:
        spec = dict(spec)
        choice(f"{key}.friction", spec.get("friction"), FRICTIONS)
        for flag in ("force_damped", "constrained"):
            boolean(f"{key}.{flag}", spec.get(flag))
        unknown = sorted(set(spec) - {"friction", "force_damped", "constrained"})
        if unknown:
            raise ConfigError(f"{key}.{unknown[0]}", spec[unknown[0]], "friction, force_damped, constrained")
        return cls(spec["friction"], spec["force_damped"], spec["constrained"])

    # --- the three coefficient functions of x = c h / m ---------------------------------------------
    def damping(self, x):
        """lambda(x): the momentum's factor per step."""
        return jnp.exp(-x) if self.friction == "exact_ou" else 1 - x

    def force_weight(self, x):
        """w(x): the factor on h F."""
        return self.damping(x) if self.force_damped else jnp.ones_like(x)

    def noise_variance(self, x):
        """v(x): the momentum noise variance in units of m / beta."""
        return -jnp.expm1(-2 * x) if self.friction == "exact_ou" else 2 * x

    def conditions(self) -> dict[str, float]:
        r"""Consistency with the Langevin SDE (weak order 1) as :math:`x = ch/m \to 0`:
        :math:`\lambda(0) = 1`, :math:`\lambda'(0) = -1` (friction rate c/m), :math:`w(0) = 1`,
        and :math:`v'(0) = 2` (noise variance :math:`\sigma^2 h = 2ch/\beta`, i.e. fluctuation-dissipation)."""
        zero = jnp.zeros(())
        return {
            "damping(0) = 1": float(self.damping(zero) - 1),
            "damping'(0) = -1": float(jax.grad(self.damping)(zero) + 1),
            "force_weight(0) = 1": float(self.force_weight(zero) - 1),
            "noise_variance(0) = 0": float(self.noise_variance(zero)),
            "noise_variance'(0) = 2": float(jax.grad(self.noise_variance)(zero) - 2),
        }


@dataclasses.dataclass(frozen=True)
class LangevinSplitting(ImplicitIntegrator):
    family: ClassVar[str] = "langevin_splitting"
    fits: ClassVar[tuple[str, ...]] = ("canonical", "constrained")
    # SHAKE solve of the constrained methods: ``auto`` takes the closed form where the system has one
    # (the unit sphere) and the solver elsewhere; ``newton`` always the solver (to cross-check the closed form).
    shake: str = "auto"
    tol: float = SHAKE_TOL
    fixed_point_form: ClassVar[bool] = False     # SHAKE is a root equation g(q(lambda)) = 0

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.shake, str) or self.shake not in SHAKE_SOLVERS:
            raise ConfigError("integrator.shake", self.shake, f"one of {list(SHAKE_SOLVERS)}")

    @property
    def noise_kind(self) -> str:
        return "gaussian"

    def newton_unknowns(self, system) -> int:
        closed_form = not self.tableau.constrained or (system.unit_sphere and self.shake == "auto")
        return 0 if closed_form else system.constraints    # the SHAKE multipliers

    def check_fits(self, system) -> None:
        # Flat methods need the Langevin parts (U, c, beta, mass), not just a canonical structure;
        # constrained methods need a constraint, and flat ones must not step off it.
        wanted = "constrained" if self.tableau.constrained else "canonical"
        if system.structure != wanted or not isinstance(system, LangevinSystem):
            fitting = sorted(n for n, cls in SYSTEMS.items()
                             if issubclass(cls, LangevinSystem) and cls.structure == wanted)
            raise ConfigError("integrator", self.name,
                              f"system '{type(system).__name__}' does not fit; {self.name} integrates "
                              f"Langevin systems with structure '{wanted}': {fitting}")
        super().check_fits(system)

    def momentum_update(self, system: LangevinSystem, q, p, dt, xi):
        """p* of the module docstring, for one path; eta = dW / sqrt(dt) from ``xi`` (1, dof)."""
        t = self.tableau
        m = system.mass_vector
        x = system.c * dt / m
        eta = xi[0] / jnp.sqrt(dt)
        noise_scale = jnp.sqrt(m * t.noise_variance(x) / system.beta)
        return t.damping(x) * p + dt * t.force_weight(x) * system.potential_force(q) + noise_scale * eta

    def solver_name(self, system) -> str | None:
        return "shake" if self.newton_unknowns(system) else None

    def advance(self, system, z, dt, xi):
        q, p = system.split(z)
        p_star = self.momentum_update(system, q, p, dt, xi)
        if not self.tableau.constrained:
            return jnp.concatenate([q + dt * p_star / system.mass_vector, p_star]), SolverStats.none()
        if system.unit_sphere and self.shake == "auto":
            return shake_rattle_sphere(q, p_star, dt, system.mass_vector[0]), SolverStats.none()
        return shake_rattle_solved(system, q, p_star, dt, self.solve)


def shake_rattle_sphere(q, p_star, dt, mass=1.0):
    r"""The SHAKE steps of Bou-Rabee & Owhadi (2007) eqs. 2.2-2.3 on the unit sphere, mass m. With :math:`A = q + hp^*/m` and :math:`s = h\mu/m`,
    the constraint :math:`|A + sq|^2 = 1` is the quadratic
    :math:`|q|^2s^2 + 2(A\cdot q)s + |A|^2 - 1 = 0`; its root that vanishes as h -> 0, in
    cancellation-free form, is :math:`s = (1 - |A|^2)/((A\cdot q) + \sqrt D)`,
    :math:`D = (A\cdot q)^2 - |q|^2(|A|^2 - 1)` (the other root jumps to the antipode, pitfall 13).
    :math:`|q|^2` is used as computed, not 1, so round-off does not accumulate.

    D < 0 (equivalently :math:`h|v|/m > 1`, v the tangent part of :math:`p^*`): no real solution;
    the path becomes NaN, which the engine counts as non-finite (pitfall 12), never clamped."""
    a = q + dt * p_star / mass
    a_dot_q, q_sq, a_sq = a @ q, q @ q, a @ a
    disc = a_dot_q**2 - q_sq * (a_sq - 1)
    failed = ~(disc >= 0)   # also catches a NaN discriminant
    s = (1 - a_sq) / (a_dot_q + jnp.sqrt(jnp.where(failed, 0.0, disc)))
    q_next = a + s * q
    p_hat = mass * (q_next - q) / dt
    # Projection (2.3): p = p_hat + h q_next Lambda^2 with q_next . p = 0.
    p_next = p_hat - (q_next @ p_hat) / (q_next @ q_next) * q_next
    z_next = jnp.concatenate([q_next, p_next])
    return jnp.where(failed, jnp.nan, z_next)


def shake_rattle_solved(system: ConstrainedLangevinSystem, q, p_star, dt,
                        solve: solvers.SolverOptions = solvers.SolverOptions(tol=SHAKE_TOL)):
    r"""Paper eq. 6.2-6.3 for any constraint g (k equations) and diagonal mass M.

    SHAKE: with :math:`A = q_k + hM^{-1}p^*` and :math:`\lambda = h\mu \in \mathbb R^k`, solve
    :math:`g(A + M^{-1}G(q_k)^\top\lambda) = 0` by ``solve`` (Newton) from :math:`\lambda = 0` (the root that
    vanishes as h -> 0); :math:`\hat p = M(q_{k+1} - q_k)/h`. RATTLE: :math:`p_{k+1} = \hat p + G^\top\nu`
    with :math:`G(q_{k+1})M^{-1}p_{k+1} = 0`, the system's ``tangent_momentum``. A solve that does not
    converge (no solution nearby) gives NaN, counted by the engine. Returns (z, SolverStats)."""
    m = system.mass_vector
    normal_old = system.constraint_jacobian(q).T / m[:, None]     # (n, k): M^-1 G(q_k)^T
    a = q + dt * p_star / m
    position = lambda lam: a + normal_old @ lam
    solved = solve.root(lambda lam: system.constraint(position(lam)), jnp.zeros(system.constraints, dtype=q.dtype))
    q_next = position(solved.x)
    p_next = system.tangent_momentum(q_next, m * (q_next - q) / dt)
    return jnp.concatenate([q_next, p_next]), SolverStats.none().add(solved)
