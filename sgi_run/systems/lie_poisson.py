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
import functools
from typing import Callable, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import lie
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.systems.base import System, require


# A view with more entries than this (a 10 x 10 matrix) is read back as itself, not entry by entry.
COMPONENTS_MAX = 12


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

    @property
    def carries_attitude(self) -> bool:
        """Whether the state also carries a group element (only the Lie-group variational integrator moves it)."""
        return False

    # --- derived ------------------------------------------------------------------------------------
    def gradient(self, f, mu):
        """The gradient of a real function under the algebra's pairing: jax.grad gives df/dx - i df/dy for a
        complex entry, the pairing Re tr(A^H B) wants its conjugate; then projected onto the algebra
        (f may be defined off it)."""
        g = jax.tree.map(lambda x: jnp.conj(x) if jnp.iscomplexobj(x) else x, jax.grad(f)(mu))
        return self.algebra.project(g)

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
        """The sorted eigenvalues of the Hermitian i M(mu) (spec 004 section 0.3; M the algebra's matrix
        form, block by block for a product): kept by isospectral methods to round-off."""
        blocks = self.algebra.to_matrix(self.dual(z))
        blocks = blocks if isinstance(blocks, tuple) else (blocks,)
        return jnp.sort(jnp.concatenate([jnp.linalg.eigvalsh(1j * m) for m in blocks]))

    def casimir_observables(self) -> dict[str, Callable]:
        """The Casimirs a run can record: by default every one the algebra has (a system whose algebra has
        too many to compute each output, su(128), names its own)."""
        return {name: (lambda z, name=name: self.algebra.casimirs(self.dual(z))[name])
                for name in self.algebra.casimirs(self.dual(self.zero_state()))}

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


def _vector(key: str, value, n: int = 3) -> None:
    require(key, value, np.ndim(value) == 1 and len(value) == n, f"{n} numbers")


# How far from orthogonal an initial attitude may be (a rotation typed with 16 digits is within 1e-15).
ROTATION_TOL = 1e-12


def euler_angles(r):
    r"""z-x-z Euler angles :math:`(\phi, \theta, \psi)` of :math:`R = R_z(\phi)R_x(\theta)R_z(\psi)` (spec 002
    2.8, P9): :math:`\theta = \arccos R_{33}`, :math:`\phi = \mathrm{atan2}(R_{13}, -R_{23})`,
    :math:`\psi = \mathrm{atan2}(R_{31}, R_{32})`, both mod :math:`2\pi`."""
    theta = jnp.arccos(jnp.clip(r[2, 2], -1.0, 1.0))
    phi = jnp.mod(jnp.arctan2(r[0, 2], -r[1, 2]), 2 * jnp.pi)
    psi = jnp.mod(jnp.arctan2(r[2, 0], r[2, 1]), 2 * jnp.pi)
    return phi, theta, psi


# Where Euler-angle diagnostics divide by sin(theta) they use at least this (spec 002 P10).
SIN_THETA_MIN = 1e-8


def effective_potential(theta, p_psi, p_phi, i1: float, mgh: float):
    r""":math:`V(\theta; p_\psi, p_\phi) = \frac{(p_\phi - p_\psi\cos\theta)^2}{2I_1\sin^2\theta} + Mgh\cos\theta`
    of the symmetric heavy top (spec 002 2.8), with :math:`\sin\theta` at least ``SIN_THETA_MIN``."""
    s = jnp.maximum(jnp.abs(jnp.sin(theta)), SIN_THETA_MIN)
    return (p_phi - p_psi * jnp.cos(theta)) ** 2 / (2 * i1 * s**2) + mgh * jnp.cos(theta)


@dataclasses.dataclass(frozen=True)
class AttitudeCarrier(LiePoissonSystem):
    """A body on SO(3) whose state may also carry its attitude R (body to space; paper 002): with ``R0`` set the
    state is the momentum leaves and ``R``, which only the Lie-group variational integrator evolves (its
    reconstruction); without it, the momentum alone, as papers 001 and 004 integrate it."""
    R0: tuple[tuple[float, ...], ...] | None = None

    momentum_leaves: ClassVar[tuple[str, ...]]

    def check(self):
        if self.R0 is not None:
            r, shown = np.asarray(self.R0), [list(row) for row in self.R0]
            require("R0", shown, r.ndim == 2 and r.shape == (3, 3), "a 3 x 3 rotation matrix (three rows of three), or null")
            require("R0", shown, np.abs(r.T @ r - np.eye(3)).max() <= ROTATION_TOL and np.linalg.det(r) > 0,
                    f"a rotation matrix: R^T R = I (to {ROTATION_TOL:g}) and det R = +1")

    @property
    def carries_attitude(self) -> bool:
        return self.R0 is not None

    @property
    def space(self) -> StateSpace:
        leaves = tuple(Leaf(name, (3,)) for name in self.momentum_leaves)
        if self.carries_attitude:
            leaves += (Leaf("R", (3, 3)),)
        return StateSpace(leaves, bare=len(leaves) == 1)

    def dual(self, z):
        names = self.momentum_leaves
        if len(names) == 1:
            return z[names[0]] if self.carries_attitude else z       # a bare leaf without the attitude
        return tuple(z[name] for name in names)

    def state(self, mu, attitude=None):
        names = self.momentum_leaves
        z = dict(zip(names, (mu,) if len(names) == 1 else mu))
        if self.carries_attitude:
            z["R"] = attitude
        return z if len(z) > 1 else z[names[0]]

    def attitude(self, z):
        return z["R"] if self.carries_attitude else None

    def initial_momentum(self):
        raise NotImplementedError

    def initial_state(self, key):
        r0 = None if self.R0 is None else jnp.asarray(self.R0, dtype=jnp.float64)
        return self.state(self.initial_momentum(), r0)


@dataclasses.dataclass(frozen=True)
class RigidBody(AttitudeCarrier):
    r"""The free rigid body on so(3)* (paper 004 section 6.1, paper 002 sections 6.1 and 7): momentum
    :math:`\pi`, :math:`h = \tfrac12\pi\cdot I^{-1}\pi`. Noise ``quadratic`` (paper 004):
    :math:`h_i = \tfrac{a}{2}\pi_i^2`, so :math:`\nabla h_i = a\,\pi_i e_i`; ``linear`` (paper 002):
    :math:`h_i = a\,e_i\cdot\pi`; ``vector`` (paper 002's commuting case, spec 3.15): one noise
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
        _vector("inertia", self.inertia)
        require("inertia", self.inertia, all(i > 0 for i in self.inertia), "three numbers > 0")
        _vector("pi0", self.pi0)
        _vector("noise_vector", self.noise_vector)
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
        """Also ``sin2pi_sum`` = sin 2 pi x1 + sin 2 pi x2 + sin 2 pi x3, the weak test function of paper 004
        (Figure 5 right, spec 3.3, after Brehier-Cohen-Jahnke); with the attitude, ``J`` = R pi and its
        components."""
        named = super().observables() | {"sin2pi_sum": lambda z: jnp.sum(jnp.sin(2 * jnp.pi * self.dual(z)))}
        if self.carries_attitude:
            spatial = lambda z: self.attitude(z) @ self.dual(z)
            named |= {"J": spatial} | {f"J{k + 1}": (lambda z, k=k: spatial(z)[k]) for k in range(3)}
        return named


@dataclasses.dataclass(frozen=True)
class HeavyTop(AttitudeCarrier):
    r"""The stochastic heavy top on se(3)* (paper 001 section 5, spec 001 section 2.1; paper 002 section 8,
    spec 002 section 1.4): state :math:`(\pi, \gamma)`, :math:`h = k\,\pi\cdot I^{-1}\pi + s\,\chi\cdot\gamma`
    with ``kinetic_factor`` k = 1/2 and ``gravity_sign`` s = -1 (paper 001, P2: eq. (39) is authoritative;
    paper 002 has s = +1 and :math:`\chi = mga`). Casimirs :math:`C_1 = \pi\cdot\gamma`, :math:`C_2 = |\gamma|^2`.

    Noise Hamiltonians by ``noise_case`` (``NOISE_CASES``; mg = :math:`|\chi|`, paper 002's :math:`|a| = 1`):
    ``alpha`` (paper 001) :math:`\alpha\cdot\pi`; paper 002's table: ``det`` none (one zero noise),
    ``piz`` (case 1) :math:`k\pi_z`, ``gz`` (case 2) :math:`mgk\gamma_z`, ``normpi2`` (2') :math:`k|\pi|^2`,
    ``gxgy`` (case 3) :math:`mgk_1\gamma_x, mgk_2\gamma_y`, ``pixpiy`` (3') :math:`k_1\pi_x, k_2\pi_y`.

    With the attitude (``R0``, :math:`\gamma_0 = R_0^\top e_z` required): the body axis in space
    :math:`Re_3`, the z-x-z Euler angles and their rates from :math:`\omega = I^{-1}\pi` (spec 2.8; the
    :math:`\sin\theta` division guarded at 1e-8, P10), :math:`p_\psi = \pi_z`, :math:`p_\phi = \pi\cdot\gamma`,
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
            _vector(name, getattr(self, name))
        require("inertia", self.inertia, all(i > 0 for i in self.inertia), "three numbers > 0")
        require("gravity_sign", self.gravity_sign, self.gravity_sign in (-1.0, 1.0), "-1 or 1")
        require("noise_case", self.noise_case, self.noise_case in self.NOISE_CASES,
                f"one of {list(self.NOISE_CASES)} (paper 001: alpha; paper 002's table: the others)")
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
        # Only the terms a case has: the step stays what it was for paper 001's alpha.pi.
        terms = [w @ x for w, x in ((a, pi), (b, gamma)) if w.any()] + ([c * jnp.dot(pi, pi)] if c.any() else [])
        return sum(terms) if terms else jnp.zeros(len(c))

    def initial_momentum(self):
        return jnp.asarray(self.pi0, dtype=jnp.float64), jnp.asarray(self.gamma0, dtype=jnp.float64)

    def euler_diagnostics(self, z) -> dict:
        """Euler angles, their rates and the conjugate momenta of a state with its attitude (spec 2.8)."""
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


class ZeitlinBasis:
    r"""The Zeitlin basis of su(N), N odd (spec 001 section 2.2): modes m in [-K, K]^2 \ {0}, K = (N-1)/2,
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
    r"""The stochastic sine-Euler equations, Zeitlin's truncation on su(N) (paper 001 section 6, spec 001
    section 2.2), as the N x N skew-Hermitian vorticity matrix W. Equation (S6.37) is
    :math:`dW = [dP, W]`, :math:`dP = \sum_n(\omega_n/|n|^2\,dt + \sum_i\zeta_{i,n}\circ dW^i)T_n`; with this
    package's pairing that is the Lie-Poisson equation of :math:`h = -\tfrac{N}{8\varepsilon^2}\sum_m|\omega_m|^2/|m|^2`
    and :math:`h_i = -\mathrm{Re\,tr}(Z_i^\dagger W)`, :math:`Z_i = \sum_m\zeta_{i,m}T_m`. Noise (P8):
    :math:`\zeta_1` = ``noise_amplitude`` at (1, 1) and (-1, -1), :math:`\zeta_2` at (1, -1) and (-1, 1).
    Initial coefficients of the half-plane modes U(-1/2, 1/2) per path, :math:`\omega_{-m} = \bar\omega_m`;
    ``ic_kind`` ``real_even`` (real, the paper's "four-dimensional state vector") or ``complex``. The state
    is projected after every step onto su(N) (and, real_even, the real even subspace): P6, P7.
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
        """Exactly skew-Hermitian and traceless; real_even: coefficients real and even (P6, P7)."""
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
