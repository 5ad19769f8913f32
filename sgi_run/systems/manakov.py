r"""The stochastic Manakov (generalised rigid body) system on so(n) (Ephrati et al. 2024 section 6.2),
as its physics: :math:`X` a real n x n antisymmetric matrix,
:math:`H_0 = \tfrac12\mathrm{tr}((\mathcal I^{-1}X)^TX) = \sum_{i<j}X_{ij}^2/d_{ij}` with :math:`d_{ij}` the
1-based row-major index of (i, j) in the strict upper triangle (eq. (36): the moments 1 .. n(n-1)/2,
a generic diagonal inertia, not Manakov's integrable one: implemented as printed), and one noise per pair i < j, :math:`H_{ij} = a X_{ij}^2`, so that the
gradient on so(n) is :math:`a X_{ij}(E_{ij} - E_{ji})` (eq. (37)). The initial condition is not in the
paper (the project's choice): upper-triangular entries i.i.d. N(0, 1) from ``ic_seed``, the same for every path.
"""
from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from sgi_run.core import lie
from sgi_run.core.errors import require
from sgi_run.core.fields import integer
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.systems.lie_poisson import LiePoissonSystem


@dataclasses.dataclass(frozen=True)
class Manakov(LiePoissonSystem):
    """The stochastic Manakov system on so(``n``) (Ephrati et al. 2024 section 6.2): ``noise_amplitude``, the random start's
    seed ``ic_seed`` (``system=manakov``)."""

    n: int = 10
    noise_amplitude: float = 0.1
    ic_seed: int = 0

    def check(self):
        integer("n", self.n, "an integer >= 3 (so(n))", at_least=3)
        require("noise_amplitude", self.noise_amplitude, self.noise_amplitude >= 0, "a number >= 0")
        integer("ic_seed", self.ic_seed, "an integer >= 0", at_least=0)

    @property
    def noises(self) -> int:
        return self.n * (self.n - 1) // 2

    @property
    def algebra(self):
        return lie.MatrixAlgebra(self.n, complex=False)

    @property
    def space(self) -> StateSpace:
        return StateSpace((Leaf("X", (self.n, self.n)),), bare=True)

    @property
    def moments(self) -> np.ndarray:
        """d_ij (symmetric, 1 .. n(n-1)/2 on the strict upper triangle; 1 on the diagonal, never used)."""
        d = np.ones((self.n, self.n))
        upper = np.triu_indices(self.n, 1)
        d[upper] = np.arange(1, len(upper[0]) + 1)
        return np.triu(d, 1) + np.triu(d, 1).T + np.eye(self.n)

    def hamiltonian(self, x):
        return 0.5 * jnp.sum(x**2 / jnp.asarray(self.moments))

    def noise_hamiltonians(self, x):
        return self.noise_amplitude * x[jnp.triu_indices(self.n, 1)] ** 2

    def initial_state(self, key):
        upper = np.zeros((self.n, self.n))
        upper[np.triu_indices(self.n, 1)] = np.random.default_rng(self.ic_seed).standard_normal(self.noises)
        return jnp.asarray(upper - upper.T)
