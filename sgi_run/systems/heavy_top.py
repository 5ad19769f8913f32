"""The stochastic heavy top on se(3)* (Luesink et al. (2023) and Gay-Balmaz & Wu (2024)), with its Euler-angle diagnostics."""
from __future__ import annotations

import dataclasses
from typing import ClassVar
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from sgi_run.core import lie
from sgi_run.core.errors import require
from sgi_run.systems.attitude import ROTATION_TOL, AttitudeCarrier, require_vector


def euler_angles(r):
    r"""z-x-z Euler angles :math:`(\phi, \theta, \psi)` of :math:`R = R_z(\phi)R_x(\theta)R_z(\psi)` (Gay-Balmaz & Wu 2024
    section 8; its printed R has a sign typo in entry (2,1), corrected here): :math:`\theta = \arccos R_{33}`, :math:`\phi = \mathrm{atan2}(R_{13}, -R_{23})`,
    :math:`\psi = \mathrm{atan2}(R_{31}, R_{32})`, both mod :math:`2\pi`."""
    theta = jnp.arccos(jnp.clip(r[2, 2], -1.0, 1.0))
    phi = jnp.mod(jnp.arctan2(r[0, 2], -r[1, 2]), 2 * jnp.pi)
    psi = jnp.mod(jnp.arctan2(r[2, 0], r[2, 1]), 2 * jnp.pi)
    return phi, theta, psi


# Where Euler-angle diagnostics divide by sin(theta) they use at least this (the project's guard: theta comes near 0 in Gay-Balmaz & Wu's (2024) case 3).
SIN_THETA_MIN = 1e-8


def effective_potential(theta, p_psi, p_phi, i1: float, mgh: float):
    r""":math:`V(\theta; p_\psi, p_\phi) = \frac{(p_\phi - p_\psi\cos\theta)^2}{2I_1\sin^2\theta} + Mgh\cos\theta`
    of the symmetric heavy top (Gay-Balmaz & Wu 2024 section 8, Figs 3, 10, 13), with :math:`\sin\theta` at least ``SIN_THETA_MIN``."""
    s = jnp.maximum(jnp.abs(jnp.sin(theta)), SIN_THETA_MIN)
    return (p_phi - p_psi * jnp.cos(theta)) ** 2 / (2 * i1 * s**2) + mgh * jnp.cos(theta)


@dataclasses.dataclass(frozen=True)
class HeavyTop(AttitudeCarrier):
    r"""The stochastic heavy top on se(3)* (Luesink et al. 2023 section 5, eq. (39); Gay-Balmaz & Wu (2024)
    section 8): state :math:`(\pi, \gamma)`, :math:`h = k\,\pi\cdot I^{-1}\pi + s\,\chi\cdot\gamma`
    with ``kinetic_factor`` k = 1/2 and ``gravity_sign`` s = -1 (Luesink et al. 2023: eq. (39) is authoritative;
    Gay-Balmaz & Wu (2024) has s = +1 and :math:`\chi = mga`). Casimirs :math:`C_1 = \pi\cdot\gamma`, :math:`C_2 = |\gamma|^2`.

    Noise Hamiltonians by ``noise_case`` (``NOISE_CASES``; mg = :math:`|\chi|`, Gay-Balmaz & Wu's (2024) :math:`|a| = 1`):
    ``alpha`` (Luesink et al. 2023) :math:`\alpha\cdot\pi`; Gay-Balmaz & Wu's (2024) table: ``det`` none (one zero noise),
    ``piz`` (case 1) :math:`k\pi_z`, ``gz`` (case 2) :math:`mgk\gamma_z`, ``normpi2`` (2') :math:`k|\pi|^2`,
    ``gxgy`` (case 3) :math:`mgk_1\gamma_x, mgk_2\gamma_y`, ``pixpiy`` (3') :math:`k_1\pi_x, k_2\pi_y`.

    With the attitude (``R0``, :math:`\gamma_0 = R_0^\top e_z` required): the body axis in space
    :math:`Re_3`, the z-x-z Euler angles and their rates from :math:`\omega = I^{-1}\pi` (Gay-Balmaz & Wu 2024 section 8; the
    :math:`\sin\theta` division guarded at 1e-8, the project's choice), :math:`p_\psi = \pi_z`, :math:`p_\phi = \pi\cdot\gamma`,
    :math:`E' = E - p_\psi^2/(2I_3)` and the effective potential at the current angle."""
    inertia: float | tuple[float, ...] = (4.0, 4.0, 1.0)
    chi: float | tuple[float, ...] = (0.0, 0.0, 1.0)
    alpha: float | tuple[float, ...] = (0.01, 0.02, 0.03)
    pi0: float | tuple[float, ...] = (-float(np.sqrt(0.5)), float(np.sqrt(0.5)), 0.0)
    gamma0: float | tuple[float, ...] = (-float(np.sqrt(0.5)), float(np.sqrt(0.5)), 0.0)
    kinetic_factor: float = 0.5
    gravity_sign: float = -1.0
    noise_case: str = "alpha"
    k: float = 0.1
    k1: float = 0.1
    k2: float = 0.1

    NOISE_CASES: ClassVar[tuple[str, ...]] = ("alpha", "det", "piz", "gz", "normpi2", "gxgy", "pixpiy")
    momentum_leaves: ClassVar[tuple[str, ...]] = ("pi", "gamma")

    def check(self):
        super().check()
        for name in ("inertia", "chi", "alpha", "pi0", "gamma0"):
            require_vector(name, getattr(self, name))
        require("inertia", self.inertia, all(i > 0 for i in self.inertia), "three numbers > 0")
        require("gravity_sign", self.gravity_sign, self.gravity_sign in (-1.0, 1.0), "-1 or 1")
        require("noise_case", self.noise_case, self.noise_case in self.NOISE_CASES,
                f"one of {list(self.NOISE_CASES)} (Luesink et al. 2023: alpha; Gay-Balmaz & Wu's (2024) table: the others)")
        if self.R0 is not None:
            expected = np.asarray(self.R0).T @ np.array([0.0, 0.0, 1.0])
            require("gamma0", self.gamma0, np.abs(np.asarray(self.gamma0) - expected).max() <= ROTATION_TOL,
                    f"R0^T e_z = {np.round(expected, 15).tolist()} (the vertical seen in the body of attitude R0)")

    @property
    def noises(self) -> int:
        return len(self.noise_coefficients()[2])

    @property
    def algebra(self):
        return lie.SE3()

    @property
    def mg(self) -> float:
        return float(np.linalg.norm(self.chi))

    def hamiltonian(self, mu):
        pi, gamma = mu
        return (self.kinetic_factor * jnp.sum(pi**2 / jnp.asarray(self.inertia))
                + self.gravity_sign * jnp.dot(jnp.asarray(self.chi), gamma))

    def noise_coefficients(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The noise case as data, (a (m, 3), b (m, 3), c (m,)): h_i = a_i.pi + b_i.gamma + c_i |pi|^2 (every case
        of both papers is of this form)."""
        e, zero, mg = np.eye(3), np.zeros(3), self.mg
        a, b, c = {"alpha": ([self.alpha], [zero], [0.0]),
                   "det": ([zero], [zero], [0.0]),
                   "piz": ([self.k * e[2]], [zero], [0.0]),
                   "gz": ([zero], [mg * self.k * e[2]], [0.0]),
                   "normpi2": ([zero], [zero], [self.k]),
                   "gxgy": ([zero, zero], [mg * self.k1 * e[0], mg * self.k2 * e[1]], [0.0, 0.0]),
                   "pixpiy": ([self.k1 * e[0], self.k2 * e[1]], [zero, zero], [0.0, 0.0])}[self.noise_case]
        return np.asarray(a, float), np.asarray(b, float), np.asarray(c, float)

    def noise_hamiltonians(self, mu):
        pi, gamma = mu
        a, b, c = self.noise_coefficients()
        # Only the terms a case has: the step stays what it was for Luesink et al.'s (2023) alpha.pi.
        terms = [w @ x for w, x in ((a, pi), (b, gamma)) if w.any()] + ([c * jnp.dot(pi, pi)] if c.any() else [])
        return sum(terms) if terms else jnp.zeros(len(c))

    def initial_momentum(self):
        return jnp.asarray(self.pi0, dtype=jnp.float64), jnp.asarray(self.gamma0, dtype=jnp.float64)

    def euler_diagnostics(self, z) -> dict:
        """Euler angles, their rates and the conjugate momenta of a state with its attitude (Gay-Balmaz & Wu 2024 section 8, eq. (61))."""
        pi, gamma = self.dual(z)
        phi, theta, psi = euler_angles(self.attitude(z))
        omega = pi / jnp.asarray(self.inertia)
        s, c = jnp.sin(theta), jnp.cos(theta)
        omega_theta = omega[0] * jnp.cos(psi) - omega[1] * jnp.sin(psi)
        omega_phi = (omega[0] * jnp.sin(psi) + omega[1] * jnp.cos(psi)) / jnp.maximum(s, SIN_THETA_MIN)
        p_psi, p_phi = pi[2], jnp.dot(pi, gamma)
        e_prime = self.hamiltonian((pi, gamma)) - p_psi**2 / (2 * self.inertia[2])
        return {"phi": phi, "theta": theta, "psi": psi, "omega_phi": omega_phi, "omega_theta": omega_theta,
                "omega_psi": omega[2] - omega_phi * c, "p_psi": p_psi, "p_phi": p_phi, "E_prime": e_prime,
                "V": effective_potential(theta, p_psi, p_phi, self.inertia[0], self.mg)}

    def observables(self) -> dict[str, Callable]:
        named = super().observables()
        if self.carries_attitude:
            axis = lambda z: self.attitude(z)[:, 2]
            named |= {"body_axis": axis} | {f"body_axis{k + 1}": (lambda z, k=k: axis(z)[k]) for k in range(3)}
            for name in self.euler_diagnostics(self.initial_state(None)):
                named[name] = lambda z, name=name: self.euler_diagnostics(z)[name]
        return named
