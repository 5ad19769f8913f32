r"""Langevin systems of Bou-Rabee & Owhadi (Bou-Rabee & Owhadi 2007, eq. 1.1).

.. math::
    dq = M^{-1}p\,dt,\qquad dp = -\nabla U(q)\,dt - c\,M^{-1}p\,dt + \sigma\,dW,
    \qquad \sigma = \sqrt{2c/\beta},

with diagonal mass :math:`M` and one noise per coordinate. The config takes the friction ``c`` and
the inverse temperature ``beta``; :math:`\sigma` is derived (Bou-Rabee & Owhadi 2007 eq. 1.1; its Figs 2.1 and 2.2 are read as varying
``c`` at fixed ``beta``, so fixing :math:`\sigma` instead would move the reference line).

Written canonically, so every canonical integrator (midpoint, Heun, ...) runs on the flat systems
too: :math:`H = \tfrac12 p^\top M^{-1}p + U(q)`, :math:`F = -cM^{-1}p`, :math:`h_i = -\sigma q_i`
(additive noise: Ito and Stratonovich coincide). The splitting integrators (SVIA/B/C) use the
potential, ``c``, ``beta`` and ``mass`` directly.

The invariant (Boltzmann-Gibbs) measure is :math:`\propto e^{-\beta H}\,dq\,dp`; its means of the
energy observables are :meth:`LangevinSystem.equilibrium_mean`, computed here (quadrature or
closed forms), never typed in.
"""
from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core.errors import require
from sgi_run.systems.canonical import CanonicalSystem

# Observables whose Boltzmann-Gibbs means every Langevin system knows.
ENERGY_OBSERVABLES = ("H", "two_H", "kinetic_temperature")


def _as_float_vector(value) -> tuple[float, ...] | float:
    """A scalar stays a float; a list (YAML, Hydra) becomes a tuple of floats, so the frozen
    dataclass stays hashable and integer entries cannot make an integer state array."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(float(v) for v in value)
    return float(value)


def _quad(f, lo, hi) -> float:
    """The integral to ~1e-13; FloatingPointError where quad says it did not get there (extreme parameters):
    a reference value it cannot vouch for is no reference."""
    import warnings

    from scipy import integrate  # scipy only for reference values, off the import path of a run
    with warnings.catch_warnings():
        warnings.simplefilter("error", integrate.IntegrationWarning)
        try:
            return integrate.quad(f, lo, hi, limit=200, epsabs=1e-14, epsrel=1e-13)[0]
        except integrate.IntegrationWarning as warning:
            raise FloatingPointError(f"quadrature did not converge: {str(warning).splitlines()[0]}") from None


@dataclasses.dataclass(frozen=True)
class LangevinSystem(CanonicalSystem):
    """Base of the Langevin systems; subclasses give ``dof``, ``potential`` and ``mean_potential``.

    ``mass`` is the diagonal of :math:`M`: one number for all coordinates, or ``dof`` numbers.
    ``q0``, ``p0``: the deterministic initial condition (a number for ``dof`` = 1)."""

    c: float = 1.0
    beta: float = 1.0
    mass: float | tuple[float, ...] = 1.0
    q0: float | tuple[float, ...] = 0.0
    p0: float | tuple[float, ...] = 0.0

    # One noise per coordinate (the sum over i printed in Bou-Rabee & Owhadi's (2007) eq. 1.2 is spurious): noises = dof.
    dof: ClassVar[int] = 1
    noises: ClassVar[int] = 1

    # Made floats at construction; a formula system keeps the texts of its initial law (systems.formula).
    _float_fields: ClassVar[tuple[str, ...]] = ("mass", "q0", "p0")

    def __post_init__(self):
        for name in self._float_fields:
            object.__setattr__(self, name, _as_float_vector(getattr(self, name)))

    # --- parameters --------------------------------------------------------------------------------
    def check(self):
        require("c", self.c, self.c >= 0, "c >= 0 (friction)")
        require("beta", self.beta, self.beta > 0, "beta > 0 (inverse temperature)")
        for name in ("mass", "q0", "p0"):
            value = getattr(self, name)
            require(name, value, np.ndim(value) == 0 or len(value) == self.dof,
                    f"one number or {self.dof} numbers (one per coordinate)")
        require("mass", self.mass, bool(np.all(np.asarray(self.mass) > 0)), "positive mass(es)")

    @property
    def sigma(self) -> float:
        """Diffusion constant sqrt(2 c / beta) (Bou-Rabee & Owhadi 2007 eq. 1.1: beta = 2c / sigma^2)."""
        return math.sqrt(2 * self.c / self.beta)

    @property
    def mass_vector(self) -> jax.Array:
        """(dof,) diagonal of M."""
        return jnp.broadcast_to(jnp.asarray(self.mass, dtype=jnp.float64), (self.dof,))

    @property
    def kinetic_dimension(self) -> int:
        """d in the kinetic temperature p.M^{-1}p / d: the momentum's degrees of freedom."""
        return self.dof

    # --- physics -----------------------------------------------------------------------------------
    def potential(self, q):
        """U(q), a scalar."""
        raise NotImplementedError

    def potential_force(self, q):
        """-grad U(q), (dof,)."""
        return -jax.grad(self.potential)(q)

    def kinetic_energy(self, q, p):
        return 0.5 * jnp.sum(p**2 / self.mass_vector)

    def hamiltonian(self, q, p):
        return self.kinetic_energy(q, p) + self.potential(q)

    def forcing(self, q, p):
        return -self.c * p / self.mass_vector

    def noise_hamiltonians(self, q, p):
        # h_i = -sigma q_i, so the p-row of noise field i is -dh_i/dq = sigma e_i.
        return -self.sigma * q

    def initial_state(self, key):
        q0 = jnp.broadcast_to(jnp.asarray(self.q0, dtype=jnp.float64), (self.dof,))
        p0 = jnp.broadcast_to(jnp.asarray(self.p0, dtype=jnp.float64), (self.dof,))
        return jnp.concatenate([q0, p0])

    def observables(self):
        """H, each coordinate, ``two_H`` = 2H (what the paper plots, Figs 2.1 and 2.2) and
        ``kinetic_temperature`` = 2 K / d = p.M^{-1}p / d (the "instantaneous temperature" of Bou-Rabee & Owhadi (2007) section 2)."""
        named = super().observables()
        named["two_H"] = lambda z: 2 * self.energy(z)
        named["kinetic_temperature"] = lambda z: 2 * self.kinetic_energy(*self.split(z)) / self.kinetic_dimension
        return named

    # --- Boltzmann-Gibbs means ---------------------------------------------------------------------
    def mean_potential(self) -> float:
        """<U> under the configurational marginal exp(-beta U)."""
        raise NotImplementedError

    def equilibrium_mean(self, observable: str) -> float | None:
        r"""Exact mean of ``observable`` under :math:`\mu \propto e^{-\beta H}`, the t -> oo limit.

        The momentum is Gaussian with covariance :math:`M/\beta` on its d degrees of freedom, so
        :math:`\langle p^\top M^{-1}p\rangle = d/\beta` (kinetic temperature :math:`1/\beta`) and
        :math:`\langle H\rangle = d/2\beta + \langle U\rangle`. None for other observables, and
        without friction (c = 0: no noise, the dynamics is not ergodic)."""
        if self.c == 0 or observable not in ENERGY_OBSERVABLES:
            return None
        if observable == "kinetic_temperature":
            return 1 / self.beta
        return self._energy_mean(observable, self.mean_potential())

    def _energy_mean(self, observable: str, mean_potential: float) -> float:
        """<H> = d / 2 beta + <U> (momenta at temperature 1 / beta), or <2 H>, given <U>."""
        energy = self.kinetic_dimension / (2 * self.beta) + mean_potential
        return energy if observable == "H" else 2 * energy

    def overdamped_svia_mean(self, observable: str) -> float | None:
        r"""The limit of SVIA's stationary mean of ``observable`` as the friction c -> oo and then h -> 0 (not in the paper: the project's derivation):
        SVIA tends to Euler-Maruyama for the overdamped dynamics at inverse temperature :math:`2\beta`, so the
        positions' law is :math:`e^{-2\beta U}` while the momentum keeps its temperature :math:`1/\beta`:
        :math:`\langle 2H\rangle = d/\beta + 2\langle U\rangle_{2\beta}` (0.8033 for the double well at
        :math:`\beta = 1`). A reference for SVIA at large c only; None where ``equilibrium_mean`` has none."""
        if self.equilibrium_mean(observable) is None or observable == "kinetic_temperature":
            return None
        return self._energy_mean(observable, dataclasses.replace(self, beta=2 * self.beta).mean_potential())

    def ergodic_energy(self) -> float | None:
        """<H> under the Boltzmann-Gibbs measure; see ``equilibrium_mean``."""
        return self.ergodic_mean("H")

    def ergodic_mean(self, observable: str) -> float | None:
        """``equilibrium_mean`` (the name the other systems use for the ergodic limit), None (no reference)
        where extreme parameters put it beyond float64: omega = 1e300 (1 / omega^2), or beta = 1e300,
        whose Boltzmann weight underflows to 0 everywhere the quadrature looks."""
        try:
            value = self.equilibrium_mean(observable)
        except ArithmeticError:
            return None
        return value if value is None or math.isfinite(value) else None


@dataclasses.dataclass(frozen=True)
class LangevinDoubleWell(LangevinSystem):
    r"""The paper's "cubic oscillator" (eq. 2.1): :math:`U = q^4/4 - q^2/2`, force
    :math:`q - q^3`, unit mass, n = 1. Wells at :math:`\pm1` (U = -1/4), barrier at 0.

    Default start: at rest at the bottom of the right-hand well, :math:`2H_0 = -1/2` (the project's choice for Fig. 2.1; not in the paper)."""

    q0: float | tuple[float, ...] = 1.0
    p0: float | tuple[float, ...] = 0.0

    def potential(self, q):
        return jnp.sum(q**4 / 4 - q**2 / 2)

    def mean_potential(self) -> float:
        r""":math:`\langle U\rangle = \int U e^{-\beta U}dq / \int e^{-\beta U}dq` by quadrature.

        At :math:`\beta = 1`: :math:`\langle q^4/2 - q^2\rangle = 2\langle U\rangle = -0.020898648244`,
        so :math:`2\langle H\rangle = 0.979101351756` (the caption of Fig. 2.1 rounds to 0.9791).
        The weight is shifted by :math:`\min U = -1/4` so it stays O(1) for large beta."""
        weight = lambda q: math.exp(-self.beta * (q**4 / 4 - q**2 / 2 + 0.25))
        # The integrand is symmetric and negligible beyond |q| = 10 for any beta that makes sense here.
        norm = _quad(weight, 0, math.inf)
        return _quad(lambda q: (q**4 / 4 - q**2 / 2) * weight(q), 0, math.inf) / norm


@dataclasses.dataclass(frozen=True)
class LangevinHarmonic(LangevinSystem):
    r"""Harmonic oscillator :math:`U = \omega^2 q^2/2` (not in the paper): every splitting
    scheme is then linear, so its stationary law is known exactly. A test oracle.

    Exact: :math:`\langle q^2\rangle = 1/\beta\omega^2`, :math:`\langle p^2\rangle = m/\beta`,
    :math:`\langle qp\rangle = 0`; observables ``q_sq``, ``p_sq``, ``qp`` measure them."""

    omega: float = 1.0
    q0: float | tuple[float, ...] = 1.0
    p0: float | tuple[float, ...] = 0.0

    def check(self):
        super().check()
        # The potential and the exact moments use omega^2: a float64 other than 0 and inf.
        require("omega", self.omega, 1e-154 < self.omega < 1e154,
                "omega > 0 in (1e-154, 1e154) (omega^2 a finite, non-zero float64)")

    def potential(self, q):
        return 0.5 * self.omega**2 * jnp.sum(q**2)

    def mean_potential(self) -> float:
        return self.dof / (2 * self.beta)   # equipartition

    def observables(self):
        named = super().observables()
        named["q_sq"] = lambda z: z[0] ** 2
        named["p_sq"] = lambda z: z[1] ** 2
        named["qp"] = lambda z: z[0] * z[1]
        return named

    def equilibrium_mean(self, observable):
        if self.c != 0 and observable in ("q_sq", "p_sq", "qp"):
            return {"q_sq": 1 / (self.beta * self.omega**2), "p_sq": float(self.mass_vector[0]) / self.beta,
                    "qp": 0.0}[observable]
        return super().equilibrium_mean(observable)

    # --- exact stationary law of each splitting scheme (not in the paper) ------------------------------------
    def splitting_linear_map(self, scheme: str, dt: float) -> tuple[np.ndarray, np.ndarray]:
        r"""(A, b) of the scheme's one step :math:`x_{k+1} = A x_k + b\,\eta_k`, :math:`x = (q, p)`,
        :math:`\eta \sim N(0, 1)`, written from Bou-Rabee & Owhadi's (2007) flat schemes, eqs. 1.2/4.1 and 4.2 (mass m, x = ch/m, a = e^{-x}):

        * ``svia``: :math:`p' = a p - h\omega^2 q + s\eta`, :math:`s^2 = m(1 - a^2)/\beta`
        * ``svib``: :math:`p' = (1 - x) p - h\omega^2 q + \sqrt{2ch/\beta}\,\eta`
        * ``svic``: :math:`p' = a p - a h\omega^2 q + s\eta`

        and :math:`q' = q + h p'/m` for all three. Independent of the integrator's code."""
        h, m, w2 = float(dt), float(self.mass_vector[0]), self.omega**2
        x = self.c * h / m
        a = math.exp(-x)
        ou = math.sqrt(-math.expm1(-2 * x) * m / self.beta)
        damping, force_weight, noise = {
            "svia": (a, 1.0, ou),
            "svib": (1 - x, 1.0, math.sqrt(2 * self.c * h / self.beta)),
            "svic": (a, a, ou),
        }[scheme]
        p_row = np.array([-h * force_weight * w2, damping])
        A = np.array([[1.0, 0.0], [0.0, 0.0]]) + np.outer([h / m, 1.0], p_row)
        b = np.array([h / m, 1.0]) * noise
        return A, b

    def splitting_stationary_covariance(self, scheme: str, dt: float) -> np.ndarray | None:
        r"""Stationary covariance of (q, p) under ``scheme`` (``svia`` | ``svib`` | ``svic``) with step
        ``dt``: the solution of :math:`\Sigma = A\Sigma A^\top + bb^\top`
        (``scipy.linalg.solve_discrete_lyapunov``). None where the chain has no stationary law
        (spectral radius of A >= 1, e.g. SVIB for :math:`2ch + h^2\omega^2 \ge 4`; the paper's h > 1/c understates it)."""
        from scipy.linalg import solve_discrete_lyapunov
        A, b = self.splitting_linear_map(scheme, dt)
        if np.max(np.abs(np.linalg.eigvals(A))) >= 1:
            return None
        return solve_discrete_lyapunov(A, np.outer(b, b))

    def splitting_stationary_moments(self, scheme: str, dt: float) -> dict[str, float]:
        r"""The project's closed forms (not in the paper; unit mass), :math:`a = e^{-ch}`:
        ``q_sq`` :math:`\langle q^2\rangle`, ``p_sq`` :math:`\langle p^2\rangle`, ``qp`` :math:`\langle qp\rangle`."""
        h, w2, beta = float(dt), self.omega**2, self.beta
        a = math.exp(-self.c * h)
        if scheme == "svia":
            den = beta * (2 * (1 + a) - h * h * w2)
            return {"q_sq": (1 + a) ** 2 / (w2 * den), "p_sq": 2 * (1 + a) / den, "qp": h * (1 + a) / den}
        if scheme == "svib":
            den = beta * (4 - 2 * self.c * h - h * h * w2)
            return {"q_sq": 2 * (2 - self.c * h) / (w2 * den), "p_sq": 4 / den, "qp": 2 * h / den}
        if scheme == "svic":
            den = beta * (2 * (1 + a) - a * h * h * w2)
            return {"q_sq": (1 + a) ** 2 / (a * w2 * den), "p_sq": 2 * (1 + a) / den, "qp": h * (1 + a) / den}
        raise ValueError(f"scheme={scheme!r}: one of svia, svib, svic")


@dataclasses.dataclass(frozen=True)
class ConstrainedLangevinSystem(LangevinSystem):
    r"""Langevin dynamics on the manifold :math:`\Sigma = \{q : g(q) = 0\}`, :math:`g: \mathbb R^n \to
    \mathbb R^k` (Bou-Rabee & Owhadi 2007 section 6, eq. 6.1-6.3): the constraint force :math:`G^\top\lambda`,
    :math:`G = \partial g/\partial q`, keeps q on :math:`\Sigma` and p on the cotangent space
    :math:`G M^{-1} p = 0`. The noise is ambient: one per coordinate of :math:`\mathbb R^n` (pitfall 11).

    A subclass writes ``potential`` and ``constraint`` (and sets ``dof`` = n, ``constraints`` = k); the
    constrained integrators (CSVIA/B/C) solve its SHAKE equations by Newton (``jax.jacfwd`` of g), so a new
    constrained system is its physics only. ``structure = "constrained"``: only those integrators fit.

    The energy uses the cotangent part of p, so a p off the cotangent space is not counted as kinetic
    energy (pitfall 10), and the kinetic temperature divides by d = n - k."""

    structure: ClassVar[str] = "constrained"
    constraints: ClassVar[int] = 1
    # The unit sphere |q| = 1 has a closed-form SHAKE solve (of Bou-Rabee & Owhadi (2007) eqs. 2.2-2.3), which the integrators use.
    unit_sphere: ClassVar[bool] = False

    def constraint(self, q):
        """g(q), (k,)."""
        raise NotImplementedError

    def constraint_jacobian(self, q):
        """G(q) = dg/dq, (k, n)."""
        return jax.jacfwd(self.constraint)(q)

    def check(self):
        super().check()
        residual_q, residual_p = (max(float(jnp.max(jnp.abs(r))) for r in residuals) for residuals in zip(
            *(self._residuals(*self.split(z)) for z in self.checked_starts())))
        require("q0", self.q0, residual_q <= 1e-12, f"a point on the constraint manifold (|g(q0)| = {residual_q:.3g})")
        require("p0", self.p0, residual_p <= 1e-12, "a momentum tangent to the manifold at q0 (G(q0) M^-1 p0 = 0)")

    def checked_starts(self) -> tuple:
        """The initial states ``check`` finds on the manifold: the one start (a random initial law: some draws)."""
        return (self.initial_state(None),)

    @property
    def kinetic_dimension(self) -> int:
        return self.dof - self.constraints

    def tangent_momentum(self, q, p):
        r"""The cotangent part of p at q: :math:`p - G^\top(GM^{-1}G^\top)^{-1}GM^{-1}p`, the projection
        of RATTLE (paper eq. 2.3 / 6.3)."""
        G = self.constraint_jacobian(q)
        G_minv = G / self.mass_vector
        return p - G.T @ jnp.linalg.solve(G_minv @ G.T, G_minv @ p)

    def kinetic_energy(self, q, p):
        return 0.5 * jnp.sum(self.tangent_momentum(q, p) ** 2 / self.mass_vector)

    def _residuals(self, q, p):
        return self.constraint(q), (self.constraint_jacobian(q) / self.mass_vector) @ p

    def constraint_residual(self, states) -> np.ndarray:
        """Per path, max(|g(q)|, |G(q) M^-1 p|) of a snapshot (coordinate name -> (paths,) arrays): the
        constraint and the hidden (momentum) constraint."""
        z = jnp.stack([jnp.asarray(states[name]) for name in self.coordinates], axis=1)
        worst = lambda z: jnp.max(jnp.abs(jnp.concatenate(self._residuals(*self.split(z)))))
        return np.asarray(jax.vmap(worst)(z))


@dataclasses.dataclass(frozen=True)
class SphericalPendulum(ConstrainedLangevinSystem):
    r"""Spherical pendulum at uniform temperature (paper eq. 2.2): :math:`q \in \mathbb R^3`
    on :math:`|q| = 1`, :math:`U = q_3` exactly as printed (so it hangs at :math:`-e_3`, pitfall 9),
    3-dimensional ambient noise (pitfall 11), uniform mass (the paper's is 1).

    The constrained integrators use the closed-form SHAKE solve of Bou-Rabee & Owhadi (2007) eqs. 2.2-2.3 here (``unit_sphere``).
    :math:`H = \tfrac12|p - (p\cdot q)q/|q|^2|^2/m + q_3` (pitfall 10), kinetic temperature over d = 2.
    Default start: at rest at the bottom, :math:`2H_0 = -2`."""

    dof: ClassVar[int] = 3
    noises: ClassVar[int] = 3
    coordinates: ClassVar[tuple[str, ...]] = ("q1", "q2", "q3", "p1", "p2", "p3")
    unit_sphere: ClassVar[bool] = True

    q0: float | tuple[float, ...] = (0.0, 0.0, -1.0)
    p0: float | tuple[float, ...] = (0.0, 0.0, 0.0)

    def check(self):
        require("mass", self.mass, np.ndim(self.mass) == 0 or len(set(self.mass)) == 1,
                "one number: a uniform mass (the closed-form SHAKE solve on the sphere, Bou-Rabee & Owhadi (2007) section 6, assumes M = m I)")
        super().check()

    def constraint(self, q):
        return jnp.atleast_1d(q @ q - 1)

    def tangent_momentum(self, q, p):
        # The general projection reduces to this for M = m I; written out, it is Bou-Rabee & Owhadi's (2007) formula for the sphere (section 6).
        return p - (jnp.dot(p, q) / jnp.dot(q, q)) * q

    def constraint_residual(self, states) -> np.ndarray:
        """Per path, max(| |q| - 1 |, |q . p|) of a snapshot: the constraint's two residuals (Bou-Rabee & Owhadi 2007 section 6),
        each at most 1e-12 in the project's check of Fig. 2.2."""
        q = np.stack([states[f"q{i}"] for i in (1, 2, 3)])
        p = np.stack([states[f"p{i}"] for i in (1, 2, 3)])
        return np.maximum(np.abs(np.linalg.norm(q, axis=0) - 1), np.abs(np.sum(q * p, axis=0)))

    def potential(self, q):
        return q[2]

    def mean_potential(self) -> float:
        r""":math:`\langle q_3\rangle`: on the sphere :math:`q_3` has density :math:`\propto e^{-\beta z}` on
        [-1, 1] (area element :math:`\sin\varphi\,d\varphi = dz`; a uniform mass only scales the area),
        by quadrature; it equals :math:`1/\beta - \coth\beta` = -0.313035285499 at beta = 1, so
        :math:`2\langle H\rangle = 4/\beta - 2\coth\beta` = 1.373929429001 (Fig. 2.2 caption: 1.37393).
        Shifted by e^{-beta}."""
        weight = lambda z: math.exp(-self.beta * (z + 1))
        return _quad(lambda z: z * weight(z), -1, 1) / _quad(weight, -1, 1)


@dataclasses.dataclass(frozen=True)
class CirclePendulum(ConstrainedLangevinSystem):
    r"""A pendulum on the unit circle of the plane :math:`q_3 = 0` in :math:`\mathbb R^3`, written with
    two constraints :math:`g = (|q|^2 - 1,\; q_3)` and :math:`U = q_2` (it hangs at :math:`-e_2`). Not
    in the paper: a system for the general (k = 2, Newton) SHAKE of paper eq. 6.2-6.3, with a diagonal
    mass matrix and an exact equilibrium.

    On :math:`q = (\cos\theta, \sin\theta, 0)` the mass metric is
    :math:`g_{\theta\theta} = m_1\sin^2\theta + m_2\cos^2\theta`, so the configurational marginal of
    :math:`e^{-\beta H}` on the cotangent bundle is :math:`\propto e^{-\beta\sin\theta}\sqrt{g_{\theta\theta}}\,d\theta`
    (for a uniform mass :math:`\langle U\rangle = -I_1(\beta)/I_0(\beta)`), and d = 1.
    Default start: at rest at the bottom, :math:`2H_0 = -2`."""

    dof: ClassVar[int] = 3
    noises: ClassVar[int] = 3
    constraints: ClassVar[int] = 2
    coordinates: ClassVar[tuple[str, ...]] = ("q1", "q2", "q3", "p1", "p2", "p3")

    q0: float | tuple[float, ...] = (0.0, -1.0, 0.0)
    p0: float | tuple[float, ...] = (0.0, 0.0, 0.0)

    def constraint(self, q):
        return jnp.stack([q @ q - 1, q[2]])

    def potential(self, q):
        return q[1]

    def mean_potential(self) -> float:
        m1, m2 = (float(m) for m in self.mass_vector[:2])
        volume = lambda th: math.sqrt(m1 * math.sin(th) ** 2 + m2 * math.cos(th) ** 2)
        weight = lambda th: math.exp(-self.beta * (math.sin(th) + 1)) * volume(th)
        return _quad(lambda th: math.sin(th) * weight(th), 0, 2 * math.pi) / _quad(weight, 0, 2 * math.pi)
