r"""Damped Kubo oscillator (Kraus & Tyranowski 2021, section 4.1).

:math:`H = h/\beta = \tfrac12(p^2 + q^2)`, :math:`F = -\nu p`, :math:`f = -\beta\nu p`, so the
noise field is :math:`\beta` times the drift field and every path is the deterministic damped
oscillator run on the random clock :math:`\tau(t) = t + \beta W(t)`. That gives the exact path
(4.1) and the exact mean energy (4.2)-(4.3) used as oracles.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax.numpy as jnp
import numpy as np

from sgi_run.core.errors import require
from sgi_run.systems.canonical import CanonicalSystem


@dataclasses.dataclass(frozen=True)
class Kubo(CanonicalSystem):
    """The damped Kubo oscillator (Kraus & Tyranowski 2021 section 4.1): noise strength ``beta``, damping ``nu``, start
    ``(q0, p0)`` (``system=kubo``)."""

    # Linear with multiplicative noise and a fixed start: every method's step is z' = M(xi) z, so the
    # method's own exact moments are known (engine.linear_oracle).
    linear: ClassVar[bool] = True

    beta: float = 0.5
    nu: float = 0.001
    q0: float = 2.0
    p0: float = 0.0

    def check(self):
        require("beta", self.beta, self.beta >= 0, "beta >= 0")
        # The exact solution (4.1) is the underdamped one.
        require("nu", self.nu, 0 <= self.nu < 2, "0 <= nu < 2 (underdamped)")
        # The energy and its exact mean (4.2) square the start: past ~1.3e154 they overflow a float64.
        larger = "q0" if abs(self.q0) >= abs(self.p0) else "p0"
        with np.errstate(all="ignore"):
            finite = np.isfinite(self.q0 * self.q0 + self.p0 * self.p0) and np.isfinite(self.exact_mean_energy(0.0))
        require(larger, getattr(self, larger), bool(finite),
                "a start whose energy (q0^2 + p0^2) / 2 and exact mean (4.2) are finite float64 numbers "
                f"(|q0|, |p0| below ~{np.sqrt(np.finfo(float).max / 2):.2g})")

    def hamiltonian(self, q, p):
        return 0.5 * jnp.sum(p**2 + q**2)

    def noise_hamiltonians(self, q, p):
        return jnp.array([self.beta * self.hamiltonian(q, p)])

    def forcing(self, q, p):
        return -self.nu * p

    def noise_forcing(self, q, p):
        return (-self.beta * self.nu * p)[None]

    def initial_state(self, key):
        return jnp.array([self.q0, self.p0])

    def invariants(self) -> tuple[str, ...]:
        """H without damping: the noise Hamiltonian is beta H, which Poisson-commutes with H."""
        return ("H",) if self.nu == 0 else ()

    # --- exact solutions --------------------------------------------------------------------
    @property
    def omega(self) -> float:
        return 0.5 * np.sqrt(4.0 - self.nu**2)

    def exact_state(self, t, w):
        """(4.1): the state at time t on the path whose Brownian motion has W(t) = w."""
        tau = t + self.beta * w
        om, nu, q0, p0 = self.omega, self.nu, self.q0, self.p0
        decay = jnp.exp(-nu * tau / 2)
        c, s = jnp.cos(om * tau), jnp.sin(om * tau)
        q = decay * (q0 * c + (p0 + nu * q0 / 2) / om * s)
        p = decay * (p0 * c - (q0 + nu * p0 / 2) / om * s)
        return jnp.stack([q, p], axis=-1)

    def exact_mean_energy(self, t):
        """(4.2)-(4.3): the exact mean energy E[H] at time t."""
        t = np.asarray(t, dtype=float)
        # As float64s: an overflow is inf (refused by check), never a Python OverflowError.
        nu, beta, q0, p0 = (np.float64(v) for v in (self.nu, self.beta, self.q0, self.p0))
        a = 2 * (p0**2 + q0**2 + nu * p0 * q0) / (4 - nu**2)
        b = -(nu**2 * (p0**2 + q0**2) + 4 * nu * p0 * q0) / (2 * (4 - nu**2))
        c = nu * (q0**2 - p0**2) / (2 * np.sqrt(4 - nu**2))
        phase = 2 * (1 - beta**2 * nu) * self.omega * t
        return (a * np.exp(-nu * (2 - beta**2 * nu) / 2 * t)
                + np.exp(-((2 - nu**2) * beta**2 + nu) * t) * (b * np.cos(phase) + c * np.sin(phase)))

    def reference_mean(self, observable):
        return self.exact_mean_energy if observable == "H" else None
