"""The free rigid body on so(3)* (Gay-Balmaz & Wu (2024) and Ephrati et al. (2024))."""
from __future__ import annotations

import dataclasses
from typing import ClassVar
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from sgi_run.core import lie
from sgi_run.core.errors import require
from sgi_run.systems.attitude import AttitudeCarrier, require_vector


@dataclasses.dataclass(frozen=True)
class RigidBody(AttitudeCarrier):
    r"""The free rigid body on so(3)* (Ephrati et al. 2024 section 6.1, Gay-Balmaz & Wu (2024) sections 6.1 and 7): momentum
    :math:`\pi`, :math:`h = \tfrac12\pi\cdot I^{-1}\pi`. Noise ``quadratic`` (Ephrati et al. 2024):
    :math:`h_i = \tfrac{a}{2}\pi_i^2`, so :math:`\nabla h_i = a\,\pi_i e_i`; ``linear`` (Gay-Balmaz & Wu 2024):
    :math:`h_i = a\,e_i\cdot\pi`; ``vector`` (Gay-Balmaz & Wu's (2024) commuting case of Theorem 6.1): one noise
    :math:`h_1 = a\,\chi\cdot\pi`, :math:`\chi` = ``noise_vector``. Casimir :math:`|\pi|^2`. With the attitude
    (``R0``): the spatial momentum :math:`J = R\pi` (Noether; ``J1``..``J3``)."""
    inertia: float | tuple[float, ...] = (2.0, 1.0, 2.0 / 3.0)
    noise_amplitude: float = 0.1
    noise_kind: str = "quadratic"
    noise_vector: float | tuple[float, ...] = (0.0, 0.0, 1.0)
    pi0: float | tuple[float, ...] = (float(np.sin(1.1)), 0.0, float(np.cos(1.1)))

    NOISE_KINDS: ClassVar[tuple[str, ...]] = ("quadratic", "linear", "vector")
    momentum_leaves: ClassVar[tuple[str, ...]] = ("pi",)

    def check(self):
        super().check()
        require_vector("inertia", self.inertia)
        require("inertia", self.inertia, all(i > 0 for i in self.inertia), "three numbers > 0")
        require_vector("pi0", self.pi0)
        require_vector("noise_vector", self.noise_vector)
        require("noise_kind", self.noise_kind, self.noise_kind in self.NOISE_KINDS, f"one of {list(self.NOISE_KINDS)}")
        require("noise_amplitude", self.noise_amplitude, self.noise_amplitude >= 0, "a number >= 0")

    @property
    def noises(self) -> int:
        return 1 if self.noise_kind == "vector" else 3

    @property
    def algebra(self):
        return lie.SO3()

    def hamiltonian(self, mu):
        return 0.5 * jnp.sum(mu**2 / jnp.asarray(self.inertia))

    def noise_hamiltonians(self, mu):
        if self.noise_kind == "quadratic":
            return 0.5 * self.noise_amplitude * mu**2
        if self.noise_kind == "vector":
            return self.noise_amplitude * jnp.dot(jnp.asarray(self.noise_vector), mu)[None]
        return self.noise_amplitude * mu

    def initial_momentum(self):
        return jnp.asarray(self.pi0, dtype=jnp.float64)

    def observables(self) -> dict[str, Callable]:
        """Also ``sin2pi_sum`` = sin 2 pi x1 + sin 2 pi x2 + sin 2 pi x3, the weak test function of Ephrati et al. (2024)
        (Figure 5 right, after Brehier-Cohen-Jahnke); with the attitude, ``J`` = R pi and its
        components."""
        named = super().observables() | {"sin2pi_sum": lambda z: jnp.sum(jnp.sin(2 * jnp.pi * self.dual(z)))}
        if self.carries_attitude:
            spatial = lambda z: self.attitude(z) @ self.dual(z)
            named |= {"J": spatial} | {f"J{k + 1}": (lambda z, k=k: spatial(z)[k]) for k in range(3)}
        return named
