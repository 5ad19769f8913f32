r"""Stochastic point vortices on the sphere, :math:`\mathfrak{su}(2)^n` (Ephrati et al. 2024 section 6.3),
as their physics: vortex i is :math:`X_i = \check x_i = \sum_k x_{ik}s_k`,
:math:`s_k = -\tfrac{i}{2}\sigma_k` (the Pauli matrices; :math:`[\check a, \check b] = (a\times b)^\vee`), a
unit vector :math:`x_i` on the sphere. Hamiltonian (eq. (38) in its scale-invariant cosine form; the printed one squares the norms)
:math:`H_0 = -\tfrac1{4\pi}\sum_{i<j}\Gamma_i\Gamma_j\log(1 - c_{ij})`,
:math:`c_{ij} = \mathrm{Re\,tr}(X_i^*X_j)/(\|X_i\|\|X_j\|)`. Noise (eq. (39), garbled in print, read as three shared noise Hamiltonians): the rigid-body noise on every
vortex, :math:`\nabla_{X_i}H_k = a\,x_{ik}s_k`, i.e. :math:`H_k = \tfrac a4\sum_i x_{ik}^2`, k = 1, 2, 3, shared
by all vortices (``noise_shared``), or one triple per vortex. Integrated in the 2 x 2 representation (the
isospectral methods depend on the representation; Ephrati et al. (2024) uses this one). Initial positions are not in the paper (the project's choice): four generic
unit vectors by colatitude and longitude. Two vortices closer than ``COLLISION`` (1 - c_ij) are a
collision: refused at t = 0, and a path that reaches one ends non-finite (counted), never integrated
through the singularity.
"""
from __future__ import annotations

import dataclasses
import jax.numpy as jnp
import numpy as np

from sgi_run.core import lie
from sgi_run.core.errors import require
from sgi_run.core.fields import boolean
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.systems.lie_poisson import LiePoissonSystem

# s_k = -i sigma_k / 2
PAULI = np.array([[[0, 1], [1, 0]], [[0, -1j], [1j, 0]], [[1, 0], [0, -1]]])
SU2_BASIS = -0.5j * PAULI
COLLISION = 1e-8


def positions(x):
    """x_ik = 2 Re tr(s_k^* X_i): (vortices, 3) from (vortices, 2, 2)."""
    return 2 * jnp.real(jnp.einsum("kab,iab->ik", jnp.conj(jnp.asarray(SU2_BASIS)), x))


def matrices(v):
    """The inverse of ``positions``: (vortices, 2, 2) from (vortices, 3)."""
    return jnp.einsum("ik,kab->iab", v, jnp.asarray(SU2_BASIS))


@dataclasses.dataclass(frozen=True)
class PointVortices(LiePoissonSystem):
    """Stochastic point vortices on the sphere (Ephrati et al. 2024 section 6.3): one circulation per vortex
    (``circulations``), ``noise_amplitude``, one noise for all of them or one each (``noise_shared``)
    (``system=point_vortices``)."""

    circulations: float | tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)
    noise_amplitude: float = 0.1
    noise_shared: bool = True
    colatitudes: float | tuple[float, ...] = (np.pi / 4, np.pi / 3, np.pi / 2, 2 * np.pi / 3)
    longitudes: float | tuple[float, ...] = (0.0, np.pi / 2, np.pi, 3 * np.pi / 2)

    def check(self):
        n = np.size(self.circulations)
        require("circulations", self.circulations, np.ndim(self.circulations) == 1 and n >= 2, "a list of >= 2 numbers")
        for key in ("colatitudes", "longitudes"):
            require(key, getattr(self, key), np.ndim(getattr(self, key)) == 1 and np.size(getattr(self, key)) == n,
                    f"{n} angles (one per vortex, radians)")
        require("noise_amplitude", self.noise_amplitude, self.noise_amplitude >= 0, "a number >= 0")
        boolean("noise_shared", self.noise_shared)
        gap = self._closest(np.asarray(self.unit_vectors()))
        require("colatitudes", self.colatitudes, gap >= COLLISION,
                f"vortices that do not start in collision (1 - cos of the smallest angle is {gap:.3g} < {COLLISION:g})")

    @property
    def count(self) -> int:
        return int(np.size(self.circulations))

    @property
    def noises(self) -> int:
        return 3 if self.noise_shared else 3 * self.count

    @property
    def algebra(self):
        return lie.Product([lie.MatrixAlgebra(2)] * self.count)

    @property
    def space(self) -> StateSpace:
        return StateSpace((Leaf("X", (self.count, 2, 2), "complex128"),), bare=True, views={"x": positions})

    def dual(self, z):
        return tuple(z[i] for i in range(self.count))

    def state(self, mu):
        return jnp.stack(mu)

    def unit_vectors(self):
        theta, phi = np.asarray(self.colatitudes, float), np.asarray(self.longitudes, float)
        return np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], axis=1)

    @staticmethod
    def _closest(v) -> float:
        """min over pairs of 1 - cos(angle), for unit vectors v (numpy)."""
        cos = v @ v.T
        return float(np.min(1 - cos[np.triu_indices(len(v), 1)]))

    def hamiltonian(self, mu):
        x = jnp.stack(mu)
        norms = jnp.sqrt(jnp.sum(jnp.abs(x) ** 2, axis=(1, 2)))
        c = jnp.real(jnp.einsum("iab,jab->ij", jnp.conj(x), x)) / (norms[:, None] * norms[None, :])
        i, j = np.triu_indices(self.count, 1)
        gap = 1 - c[i, j]
        gamma = jnp.asarray(self.circulations, float)
        # A collision makes the energy (and so the step) non-finite: the path ends there, counted.
        gap = jnp.where(gap < COLLISION, jnp.nan, 1.0) * gap    # NaN in the value and in its gradient
        return -jnp.sum(gamma[i] * gamma[j] * jnp.log(gap)) / (4 * jnp.pi)

    def noise_hamiltonians(self, mu):
        squares = positions(jnp.stack(mu)) ** 2 * (self.noise_amplitude / 4)    # (vortices, 3)
        return jnp.sum(squares, axis=0) if self.noise_shared else squares.reshape(-1)

    def initial_state(self, key):
        return matrices(jnp.asarray(self.unit_vectors()))
