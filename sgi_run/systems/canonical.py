r"""Stochastic forced Hamiltonian systems in canonical coordinates (Kraus & Tyranowski 2021, eq. 1.1).

.. math::
    dq = \partial_p H\,dt + \sum_i \partial_p h_i \circ dW^i,\qquad
    dp = (-\partial_q H + F)\,dt + \sum_i (-\partial_q h_i + f_i) \circ dW^i.

A system is written once, as its physics: ``hamiltonian``, ``noise_hamiltonians``, ``forcing``,
``noise_forcing`` and an initial condition. Gradients come from ``jax.grad``; the drift field
:math:`X`, the noise fields :math:`Y_i` and the Ito drift :math:`X + \tfrac12\sum_i (DY_i)Y_i` are
derived here. State vectors are ``z = (q, p)`` of length ``2 * dof``.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple
from collections.abc import Callable

import jax
import jax.numpy as jnp

from sgi_run.core.space import Leaf, StateSpace
from sgi_run.systems.base import System


class HamiltonianParts(NamedTuple):
    """Everything a partitioned method needs at one stage value (q, p)."""
    dH_dq: jax.Array   # (N,)
    dH_dp: jax.Array   # (N,)
    force: jax.Array   # (N,)  F
    dh_dq: jax.Array   # (m, N)
    dh_dp: jax.Array   # (m, N)
    noise_force: jax.Array  # (m, N)  f_i


@dataclasses.dataclass(frozen=True)
class CanonicalSystem(System):
    """A forced stochastic Hamiltonian system in canonical coordinates; subclasses are frozen
    dataclasses whose fields are the system's parameters."""

    structure: ClassVar[str] = "canonical"
    dof: ClassVar[int] = 1
    coordinates: ClassVar[tuple[str, ...]] = ("q", "p")

    @property
    def space(self) -> StateSpace:
        """One flat leaf ``z = (q, p)`` (what canonical integrators step), read back by coordinate."""
        views = {name: (lambda z, i=i: z[i]) for i, name in enumerate(self.coordinates)}
        return StateSpace((Leaf("z", (2 * self.dof,)),), bare=True, views=views)

    # --- physics, written by each system -------------------------------------------------
    def hamiltonian(self, q, p):
        raise NotImplementedError

    def noise_hamiltonians(self, q, p):
        """(m,) values h_i(q, p)."""
        raise NotImplementedError

    def forcing(self, q, p):
        return jnp.zeros_like(p)

    def noise_forcing(self, q, p):
        return jnp.zeros((self.noises,) + p.shape, dtype=p.dtype)

    # --- derived ---------------------------------------------------------------------------
    def split(self, z):
        return z[: self.dof], z[self.dof:]

    def parts(self, q, p) -> HamiltonianParts:
        dH_dq, dH_dp = jax.grad(self.hamiltonian, argnums=(0, 1))(q, p)
        dh_dq, dh_dp = jax.jacrev(self.noise_hamiltonians, argnums=(0, 1))(q, p)
        return HamiltonianParts(dH_dq, dH_dp, self.forcing(q, p), dh_dq, dh_dp, self.noise_forcing(q, p))

    def drift(self, z):
        """X(z) = (dH/dp, -dH/dq + F)."""
        c = self.parts(*self.split(z))
        return jnp.concatenate([c.dH_dp, -c.dH_dq + c.force])

    def noise_fields(self, z):
        """(m, 2N): row i is Y_i(z) = (dh_i/dp, -dh_i/dq + f_i)."""
        c = self.parts(*self.split(z))
        return jnp.concatenate([c.dh_dp, -c.dh_dq + c.noise_force], axis=1)

    def noise_action(self, z, dw):
        """sum_i Y_i(z) dw_i, from the noise fields of the noise Hamiltonians."""
        return dw @ self.noise_fields(z)

    def ito_drift(self, z):
        """Drift of the equivalent Ito SDE, X + 1/2 sum_i (DY_i) Y_i (paper eq. 2.1, corrected 2.2)."""
        y = self.noise_fields(z)
        dy = jax.jacfwd(self.noise_fields)(z)  # (m, 2N, 2N)
        return self.drift(z) + 0.5 * jnp.einsum("iab,ib->a", dy, y)

    def energy(self, z):
        return self.hamiltonian(*self.split(z))

    def observables(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """Named scalar functions of the state: ``H`` and each coordinate by its physical name."""
        named = {"H": self.energy}
        for i, name in enumerate(self.coordinates):
            named[name] = lambda z, i=i: z[i]
        return named
