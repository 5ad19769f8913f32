"""The stochastic sine-Euler equations: Zeitlin's truncation on su(N) in the Zeitlin basis (Luesink et al. 2023)."""
from __future__ import annotations

import dataclasses
import functools
from typing import ClassVar
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import lie
from sgi_run.core.errors import require
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.systems.lie_poisson import LiePoissonSystem


class ZeitlinBasis:
    r"""The Zeitlin basis of su(N), N odd (Luesink et al. 2023 section 6): modes m in [-K, K]^2 \ {0}, K = (N-1)/2,
    :math:`T_m = J_m/(2i\varepsilon)`, :math:`J_m = e^{-i\varepsilon m_1m_2} g^{m_1} h^{m_2}` with
    :math:`g = \mathrm{diag}(e^{2i\varepsilon k})`, h the cyclic shift, :math:`\varepsilon = 2\pi/N`;
    :math:`[T_m, T_n] = c(m, n)\,T_{m+n}`, :math:`\mathrm{tr}(T_mT_n) = -\tfrac{N}{4\varepsilon^2}\delta_{m+n}`.
    ``matrix(omega)`` and ``coefficients(W)`` map between the N^2 - 1 coefficients and su(N)."""

    def __init__(self, n: int):
        self.n, self.eps = n, 2 * np.pi / n
        k = (n - 1) // 2
        self.modes = np.array([(a, b) for a in range(-k, k + 1) for b in range(-k, k + 1) if (a, b) != (0, 0)])
        g = np.diag(np.exp(2j * self.eps * np.arange(n)))
        shift = np.roll(np.eye(n), 1, axis=0)
        power = lambda m, e: np.linalg.matrix_power(m, e % n)
        self.T = np.stack([np.exp(-1j * self.eps * a * b) * power(g, a) @ power(shift, b) / (2j * self.eps)
                           for a, b in self.modes])                         # (modes, N, N)
        self.norm = -n / (4 * self.eps**2)                                  # tr(T_m T_-m)
        self.negative = np.array([self.index(-a, -b) for a, b in self.modes])
        self.squared = np.sum(self.modes**2, axis=1).astype(float)          # |m|^2

    def index(self, a: int, b: int) -> int:
        return int(np.flatnonzero((self.modes[:, 0] == a) & (self.modes[:, 1] == b))[0])

    def matrix(self, omega):
        return jnp.einsum("m,mij->ij", omega, jnp.asarray(self.T))

    def coefficients(self, w):
        """omega_m = tr(W T_-m) / tr(T_m T_-m)."""
        t_negative = jnp.asarray(self.T[self.negative])
        return jnp.einsum("ij,mji->m", w, t_negative) / self.norm


@dataclasses.dataclass(frozen=True)
class SineEuler(LiePoissonSystem):
    r"""The stochastic sine-Euler equations, Zeitlin's truncation on su(N) (Luesink et al. 2023 section 6),
    as the N x N skew-Hermitian vorticity matrix W. Equation (S6.37) is
    :math:`dW = [dP, W]`, :math:`dP = \sum_n(\omega_n/|n|^2\,dt + \sum_i\zeta_{i,n}\circ dW^i)T_n`; with this
    package's pairing that is the Lie-Poisson equation of :math:`h = -\tfrac{N}{8\varepsilon^2}\sum_m|\omega_m|^2/|m|^2`
    and :math:`h_i = -\mathrm{Re\,tr}(Z_i^\dagger W)`, :math:`Z_i = \sum_m\zeta_{i,m}T_m`. Noise:
    :math:`\zeta_1` = ``noise_amplitude`` at (1, 1) and (-1, -1), :math:`\zeta_2` at (1, -1) and (-1, 1).
    Initial coefficients of the half-plane modes U(-1/2, 1/2) per path, :math:`\omega_{-m} = \bar\omega_m`;
    ``ic_kind`` ``real_even`` (real, the paper's "four-dimensional state vector") or ``complex``. The state
    is projected after every step onto su(N) (and, real_even, the real even subspace).
    Observables: ``H`` = :math:`\tfrac12\sum_m|\omega_m|^2/|m|^2`, Casimirs ``C2`` = tr((iW)^2) = -tr(W^2),
    ``C3`` = tr((iW)^3) = Im tr(W^3)."""
    noises: ClassVar[int] = 2
    n: int = 3
    noise_amplitude: float = 0.1
    ic_kind: str = "real_even"

    IC_KINDS: ClassVar[tuple[str, ...]] = ("real_even", "complex")

    def check(self):
        require("n", self.n, self.n >= 3 and self.n % 2 == 1, "an odd integer >= 3")
        require("ic_kind", self.ic_kind, self.ic_kind in self.IC_KINDS, f"one of {list(self.IC_KINDS)}")
        require("noise_amplitude", self.noise_amplitude, self.noise_amplitude >= 0, "a number >= 0")

    @property
    def basis(self) -> ZeitlinBasis:
        return _zeitlin_basis(self.n)

    @property
    def algebra(self):
        return lie.MatrixAlgebra(self.n)

    @property
    def space(self) -> StateSpace:
        return StateSpace((Leaf("W", (self.n, self.n), "complex128"),), bare=True, project=self.project)

    def project(self, w):
        """Exactly skew-Hermitian and traceless; real_even: coefficients real and even."""
        b = self.basis
        omega = b.coefficients(w)
        omega = 0.5 * (omega + jnp.conj(omega[b.negative]))
        if self.ic_kind == "real_even":
            omega = jnp.real(0.5 * (omega + omega[b.negative])).astype(jnp.complex128)
        w = b.matrix(omega)
        return 0.5 * (w - jnp.conj(w).T)

    def energy(self, w):
        omega = self.basis.coefficients(w)
        return 0.5 * jnp.sum(jnp.abs(omega) ** 2 / self.basis.squared)

    def hamiltonian(self, w):
        """-(N / 8 eps^2) sum |omega_m|^2 / |m|^2: its gradient under Re tr(A^H B) is -P (the stream matrix)."""
        return self.basis.norm * self.energy(w)

    def noise_matrices(self):
        b = self.basis
        zeta = np.zeros((2, len(b.modes)))
        for i, modes in enumerate((((1, 1), (-1, -1)), ((1, -1), (-1, 1)))):
            for m in modes:
                zeta[i, b.index(*m)] = self.noise_amplitude
        return jnp.einsum("im,mab->iab", zeta, jnp.asarray(b.T))

    def noise_hamiltonians(self, w):
        return -jnp.real(jnp.einsum("iab,ab->i", jnp.conj(self.noise_matrices()), w))

    def initial_state(self, key):
        b = self.basis
        half = np.array([i for i, (a, c) in enumerate(b.modes) if a > 0 or (a == 0 and c > 0)])
        re, im = jax.random.uniform(key, (2, len(half)), minval=-0.5, maxval=0.5)
        values = re + (1j * im if self.ic_kind == "complex" else 0)
        omega = jnp.zeros(len(b.modes), jnp.complex128).at[half].set(values)
        omega = omega.at[b.negative[half]].set(jnp.conj(values))
        return self.project(b.matrix(omega))

    def observables(self) -> dict[str, Callable]:
        casimirs = lambda w: self.algebra.casimirs(w)
        return {"H": self.energy, "C2": lambda w: casimirs(w)["C2"], "C3": lambda w: casimirs(w)["C3"]}


@functools.cache
def _zeitlin_basis(n: int) -> ZeitlinBasis:
    return ZeitlinBasis(n)
