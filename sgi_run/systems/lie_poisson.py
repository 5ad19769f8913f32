r"""Stochastic Lie-Poisson systems (Luesink et al. 2023, Gay-Balmaz & Wu 2024, Ephrati et al. 2024), written once as their physics.

.. math::
    d\mu = \mathrm{ad}^*_{\nabla h(\mu)}\mu\,dt + \sum_i \mathrm{ad}^*_{\nabla h_i(\mu)}\mu \circ dW^i

(left-invariant, Luesink et al. (2023) eqs. (7), (15)). A system gives its algebra (``core.lie``), ``hamiltonian(mu)``,
``noise_hamiltonians(mu)`` (m values), the initial state and how its state's leaves form the algebra's
dual element (``dual``/``state``); the drift :math:`F` and the noise action
:math:`\sum_i G_i\,dW^i = \mathrm{ad}^*_{\nabla\langle dW, h\rangle}\mu` (one coadjoint action, never a
dense Jacobian) are derived with ``jax.grad``. Observables: ``H`` and the algebra's Casimirs, plus the
state's components.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import linalg
from sgi_run.systems.base import System


# A view with more entries than this (a 10 x 10 matrix) is read back as itself, not entry by entry.
COMPONENTS_MAX = 12


@dataclasses.dataclass(frozen=True)
class LiePoissonSystem(System):
    """The base of a stochastic Lie-Poisson system: its ``algebra``, Hamiltonian ``hamiltonian(mu)`` and noise
    Hamiltonians ``noise_hamiltonians(mu)``; the drift, the noise fields and the Casimirs follow (module docstring)."""

    structure: ClassVar[str] = "lie_poisson"

    # --- physics, written by each system ---------------------------------------------------------
    @property
    def algebra(self):
        raise NotImplementedError

    def hamiltonian(self, mu):
        raise NotImplementedError

    def noise_hamiltonians(self, mu):
        """(m,) values h_i(mu)."""
        raise NotImplementedError

    def dual(self, z):
        """The algebra's dual element of a state (default: the state itself)."""
        return z

    def state(self, mu):
        """The state of a dual element (the inverse of ``dual``)."""
        return mu

    @property
    def carries_attitude(self) -> bool:
        """Whether the state also carries a group element (only the Lie-group variational integrator moves it)."""
        return False

    # --- derived ------------------------------------------------------------------------------------
    def gradient(self, f, mu):
        """The gradient of a real function under the algebra's pairing: jax.grad gives df/dx - i df/dy for a
        complex entry, the pairing Re tr(A^H B) wants its conjugate; then projected onto the algebra
        (f may be defined off it). A dual element split into components (an implicit step's iterate,
        ``linalg.split_vectors``) gets its gradient split too; f itself sees arrays."""
        g = jax.tree.map(lambda x: jnp.conj(x) if jnp.iscomplexobj(x) else x, jax.grad(f)(linalg.join_vectors(mu)))
        g = self.algebra.project(g)
        return linalg.split_vectors(g) if linalg.is_split(mu) else g

    def drift(self, mu):
        """F(mu) = ad*_{grad h(mu)} mu, in the algebra's form."""
        return self.algebra.ad_star(self.gradient(self.hamiltonian, mu), mu)

    def noise_generator(self, mu, dw):
        """sum_i dW_i grad h_i(mu): the algebra element the increments move mu along."""
        return self.gradient(lambda m: jnp.dot(dw, self.noise_hamiltonians(m)), mu)

    def generator(self, mu, dt, dw):
        """dt grad h(mu) + sum_i dW_i grad h_i(mu): the algebra element one step's implicit methods (TMK's
        sigma, IsoMP's Psi) are built from; a system may compute it at once (su(N): one transform pair)."""
        return jax.tree.map(lambda a, b: dt * a + b, self.gradient(self.hamiltonian, mu), self.noise_generator(mu, dw))

    def noise_in_algebra(self, mu, dw):
        """sum_i G_i(mu) dW_i = ad*_{sum_i dW_i grad h_i(mu)} mu (linear in the generator)."""
        return self.algebra.ad_star(self.noise_generator(mu, dw), mu)

    def noise_action(self, z, dw):
        return self.state(self.noise_in_algebra(self.dual(z), dw))

    def energy(self, z):
        return self.hamiltonian(self.dual(z))

    def spectrum(self, z):
        """The sorted eigenvalues of the Hermitian i M(mu) (the eigenvalue diagnostic of Ephrati et al. (2024) Figs 4, 6, 8, 10; M the algebra's matrix
        form, block by block for a product): kept by isospectral methods to round-off."""
        blocks = self.algebra.to_matrix(self.dual(z))
        blocks = blocks if isinstance(blocks, tuple) else (blocks,)
        return jnp.sort(jnp.concatenate([jnp.linalg.eigvalsh(1j * m) for m in blocks]))

    def casimir_observables(self) -> dict[str, Callable]:
        """The Casimirs a run can record: by default every one the algebra has (a system whose algebra has
        too many to compute each output, su(128), names its own)."""
        return {name: (lambda z, name=name: self.algebra.casimirs(self.dual(z))[name])
                for name in self.algebra.casimirs(self.dual(self.zero_state()))}

    def invariants(self) -> tuple[str, ...]:
        """The Casimirs: the coadjoint orbit is kept by the flow whatever h and the h_i are."""
        return tuple(self.casimir_observables())

    def observables(self) -> dict[str, Callable]:
        """``H``, the Casimirs (``casimir_observables``), ``spectrum`` (matrix algebras; with at most COMPONENTS_MAX
        eigenvalues also each one, ``lambda1``, ...) and the components of every view with at most
        COMPONENTS_MAX entries (real)."""
        named = {"H": self.energy} | self.casimir_observables()
        if self.algebra.matrix_form:
            named["spectrum"] = self.spectrum
            size = jax.eval_shape(self.spectrum, self.zero_state()).shape[0]
            if size <= COMPONENTS_MAX:      # lambda1 <= lambda2 <= ...: each eigenvalue's departure drawn apart
                named.update({f"lambda{k + 1}": (lambda z, k=k: self.spectrum(z)[k]) for k in range(size)})
        for view, f in self.space.view_functions().items():
            spec = jax.eval_shape(f, self.zero_state())
            if np.prod(spec.shape, dtype=int) > COMPONENTS_MAX or jnp.issubdtype(spec.dtype, jnp.complexfloating):
                continue
            for index in np.ndindex(spec.shape):
                suffix = "".join(str(i + 1) for i in index)
                named[f"{view}{suffix}"] = lambda z, f=f, index=index: f(z)[index]
        return named

    def zero_state(self):
        return self.space.from_leaves({leaf.name: jnp.zeros(leaf.shape, leaf.dtype) for leaf in self.space.leaves})
