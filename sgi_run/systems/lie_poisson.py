r"""Stochastic Lie-Poisson systems (papers 001, 002, 004), written once as their physics.

.. math::
    d\mu = \mathrm{ad}^*_{\nabla h(\mu)}\mu\,dt + \sum_i \mathrm{ad}^*_{\nabla h_i(\mu)}\mu \circ dW^i

(left-invariant, spec 001 section 1.2). A system gives its algebra (``core.lie``), ``hamiltonian(mu)``,
``noise_hamiltonians(mu)`` (m values), the initial state and how its state's leaves form the algebra's
dual element (``dual``/``state``); the drift :math:`F` and the noise action
:math:`\sum_i G_i\,dW^i = \mathrm{ad}^*_{\nabla\langle dW, h\rangle}\mu` (one coadjoint action, never a
dense Jacobian) are derived with ``jax.grad``. Observables: ``H`` and the algebra's Casimirs, plus the
state's components.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import lie
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.systems.base import System, require


@dataclasses.dataclass(frozen=True)
class LiePoissonSystem(System):
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

    # --- derived ------------------------------------------------------------------------------------
    def drift(self, mu):
        """F(mu) = ad*_{grad h(mu)} mu, in the algebra's form."""
        return self.algebra.ad_star(jax.grad(self.hamiltonian)(mu), mu)

    def noise_generator(self, mu, dw):
        """sum_i dW_i grad h_i(mu): the algebra element the increments move mu along."""
        return jax.grad(lambda m: jnp.dot(dw, self.noise_hamiltonians(m)))(mu)

    def noise_in_algebra(self, mu, dw):
        """sum_i G_i(mu) dW_i = ad*_{sum_i dW_i grad h_i(mu)} mu (linear in the generator)."""
        return self.algebra.ad_star(self.noise_generator(mu, dw), mu)

    def noise_action(self, z, dw):
        return self.state(self.noise_in_algebra(self.dual(z), dw))

    def energy(self, z):
        return self.hamiltonian(self.dual(z))

    def observables(self) -> dict[str, Callable]:
        named = {"H": self.energy}
        named.update({name: (lambda z, name=name: self.algebra.casimirs(self.dual(z))[name])
                      for name in self.algebra.casimirs(self.dual(self.zero_state()))})
        for view, f in self.space.view_functions().items():
            shape = jax.eval_shape(f, self.zero_state()).shape
            for index in np.ndindex(shape):
                suffix = "".join(str(i + 1) for i in index)
                named[f"{view}{suffix}"] = lambda z, f=f, index=index: f(z)[index]
        return named

    def zero_state(self):
        return self.space.from_leaves({leaf.name: jnp.zeros(leaf.shape, leaf.dtype) for leaf in self.space.leaves})


def _vector(key: str, value, n: int = 3) -> None:
    require(key, value, np.ndim(value) == 1 and len(value) == n, f"{n} numbers")


@dataclasses.dataclass(frozen=True)
class RigidBody(LiePoissonSystem):
    r"""The free rigid body on so(3)* (paper 004 section 6.1, paper 002 section 6.1): momentum
    :math:`\pi`, :math:`h = \tfrac12\pi\cdot I^{-1}\pi`. Noise ``quadratic`` (paper 004):
    :math:`h_i = \tfrac{a}{2}\pi_i^2`, so :math:`\nabla h_i = a\,\pi_i e_i`; ``linear`` (paper 002):
    :math:`h_i = a\,e_i\cdot\pi`. Casimir :math:`|\pi|^2`."""
    noises: ClassVar[int] = 3
    inertia: float | tuple[float, ...] = (2.0, 1.0, 2.0 / 3.0)
    noise_amplitude: float = 0.1
    noise_kind: str = "quadratic"
    pi0: float | tuple[float, ...] = (float(np.sin(1.1)), 0.0, float(np.cos(1.1)))

    NOISE_KINDS: ClassVar[tuple[str, ...]] = ("quadratic", "linear")

    def check(self):
        _vector("inertia", self.inertia)
        require("inertia", self.inertia, all(i > 0 for i in self.inertia), "three numbers > 0")
        _vector("pi0", self.pi0)
        require("noise_kind", self.noise_kind, self.noise_kind in self.NOISE_KINDS, f"one of {list(self.NOISE_KINDS)}")

    @property
    def algebra(self):
        return lie.SO3()

    @property
    def space(self) -> StateSpace:
        return StateSpace((Leaf("pi", (3,)),), bare=True)

    def hamiltonian(self, mu):
        return 0.5 * jnp.sum(mu**2 / jnp.asarray(self.inertia))

    def noise_hamiltonians(self, mu):
        if self.noise_kind == "quadratic":
            return 0.5 * self.noise_amplitude * mu**2
        return self.noise_amplitude * mu

    def initial_state(self, key):
        return jnp.asarray(self.pi0, dtype=jnp.float64)


@dataclasses.dataclass(frozen=True)
class HeavyTop(LiePoissonSystem):
    r"""The stochastic heavy top on se(3)* (paper 001 section 5, spec 001 section 2.1): state
    :math:`(\pi, \gamma)`, :math:`h = k\,\pi\cdot I^{-1}\pi + s\,\chi\cdot\gamma` with ``kinetic_factor``
    k = 1/2 and ``gravity_sign`` s = -1 (P2: eq. (39) is authoritative), one noise
    :math:`h_1 = \alpha\cdot\pi`. Casimirs :math:`C_1 = \pi\cdot\gamma`, :math:`C_2 = |\gamma|^2`."""
    noises: ClassVar[int] = 1
    inertia: float | tuple[float, ...] = (4.0, 4.0, 1.0)
    chi: float | tuple[float, ...] = (0.0, 0.0, 1.0)
    alpha: float | tuple[float, ...] = (0.01, 0.02, 0.03)
    pi0: float | tuple[float, ...] = (-float(np.sqrt(0.5)), float(np.sqrt(0.5)), 0.0)
    gamma0: float | tuple[float, ...] = (-float(np.sqrt(0.5)), float(np.sqrt(0.5)), 0.0)
    kinetic_factor: float = 0.5
    gravity_sign: float = -1.0

    def check(self):
        for name in ("inertia", "chi", "alpha", "pi0", "gamma0"):
            _vector(name, getattr(self, name))
        require("inertia", self.inertia, all(i > 0 for i in self.inertia), "three numbers > 0")
        require("gravity_sign", self.gravity_sign, self.gravity_sign in (-1.0, 1.0), "-1 or 1")

    @property
    def algebra(self):
        return lie.SE3()

    @property
    def space(self) -> StateSpace:
        return StateSpace((Leaf("pi", (3,)), Leaf("gamma", (3,))))

    def dual(self, z):
        return z["pi"], z["gamma"]

    def state(self, mu):
        return {"pi": mu[0], "gamma": mu[1]}

    def hamiltonian(self, mu):
        pi, gamma = mu
        return (self.kinetic_factor * jnp.sum(pi**2 / jnp.asarray(self.inertia))
                + self.gravity_sign * jnp.dot(jnp.asarray(self.chi), gamma))

    def noise_hamiltonians(self, mu):
        return jnp.dot(jnp.asarray(self.alpha), mu[0])[None]

    def initial_state(self, key):
        return {"pi": jnp.asarray(self.pi0, dtype=jnp.float64), "gamma": jnp.asarray(self.gamma0, dtype=jnp.float64)}
