r"""Particles of the Vlasov equation with collisions, as stochastic forced Hamiltonian systems
(Kraus & Tyranowski 2021, section 4.3).

Sign convention for both (Kraus & Tyranowski 2021 section 4.3, as read in docs/papers/kraus_tyranowski_2021.md): :math:`H = \tfrac12|V|^2 - \phi(X)` and the electric
field is :math:`E = -\nabla\phi`, so the acceleration is :math:`\dot V = -E = +\nabla\phi(X)`.
Positions are never wrapped here: the implicit stages need continuous coordinates, and the
potentials are periodic (period 1/2 in each variable), so wrap mod 1 only for histograms.

Initial positions have the density :math:`1 + \epsilon\cos2\pi x` on [0, 1). The paper draws them by
rejection sampling; ``sample_cosine_perturbed`` draws the same law exactly, with a fixed count of
uniforms per path and no failure case.
"""
from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core.errors import require
from sgi_run.systems.canonical import CanonicalSystem


# --- shared initial law of the positions ------------------------------------------------------------
def sample_cosine_perturbed(key: jax.Array, eps: float) -> jax.Array:
    r"""One draw of :math:`x \in [0, 1)` with density :math:`1 + \epsilon\cos2\pi x`, :math:`|\epsilon| \le 1`.

    Exact, with four uniforms. For :math:`\epsilon \ge 0` the density is the mixture
    :math:`(1-\epsilon)\cdot1 + \epsilon\cdot(1+\cos2\pi x)`. On :math:`(-\tfrac12, \tfrac12)` the second
    part is :math:`2\cos^2\pi x`, and :math:`s = \sin\pi x` then has the semicircle density
    :math:`\tfrac2\pi\sqrt{1-s^2}` (as :math:`ds = \pi\cos\pi x\,dx`): the law of the first coordinate
    of a uniform point in the unit disk, :math:`\sqrt{u_1}\cos2\pi u_2`. So :math:`x = \arcsin(s)/\pi`.
    :math:`\epsilon < 0` is the same law shifted by 1/2.
    """
    u_pick, u_flat, u1, u2 = jax.random.uniform(key, (4,))
    bump = jnp.arcsin(jnp.sqrt(u1) * jnp.cos(2 * jnp.pi * u2)) / jnp.pi
    x = jnp.where(u_pick < abs(eps), bump, u_flat)
    return jnp.mod(x + (0.5 if eps < 0 else 0.0), 1.0)


def cosine_perturbed_density(x, eps: float):
    """The density 1 + eps cos(2 pi x) on [0, 1) (numpy)."""
    return 1 + eps * np.cos(2 * np.pi * np.asarray(x, dtype=float))


def cosine_perturbed_cdf(x, eps: float):
    """Its distribution function on [0, 1]: x + eps sin(2 pi x) / (2 pi) (numpy)."""
    x = np.asarray(x, dtype=float)
    return x + eps * np.sin(2 * np.pi * x) / (2 * np.pi)


def _quad(f, lo, hi) -> float:
    from scipy import integrate  # scipy only for reference values, off the import path of a run
    return integrate.quad(f, lo, hi, limit=200)[0]


def _normal_pdf(v, var=1.0):
    return np.exp(-np.asarray(v, dtype=float) ** 2 / (2 * var)) / np.sqrt(2 * np.pi * var)


# --- Lenard-Bernstein collisions ----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class VlasovLenardBernstein(CanonicalSystem):
    r"""Vlasov-Fokker-Planck with Lenard-Bernstein collisions (paper eqs. 4.7-4.13).

    :math:`H = \tfrac12V^2 - \phi(X)`, :math:`\phi = -\tfrac{E_0}{4\pi}\sin4\pi x`, :math:`F = -\nu\mu V`,
    :math:`h = -\sqrt\nu D X`, :math:`f = 0`:

    .. math:: dX = V\,dt,\qquad dV = (-E_0\cos4\pi X - \nu\mu V)\,dt + \sqrt\nu D\,dW .

    ``D2`` is :math:`D^2` (the paper's :math:`D = \sqrt2`, so ``D2 = 2``): YAML cannot write
    :math:`\sqrt2`, and every formula but the noise amplitude :math:`\sqrt{\nu D^2}` uses :math:`D^2`
    (Gibbs temperature :math:`D^2/2\mu`). Initial law (4.12): :math:`X` with density
    :math:`1+\epsilon\cos2\pi x`, independent of :math:`V \sim \tfrac1{1+a}N(0,1) + \tfrac a{1+a}N(v_0,\sigma^2)`.
    """
    coordinates = ("x", "v")

    nu: float = 0.01
    mu: float = 1.0
    D2: float = 2.0
    E0: float = 3.0
    epsilon: float = 0.25
    a: float = 0.5
    v0: float = 4.0
    sigma: float = 0.5

    def check(self):
        require("nu", self.nu, self.nu >= 0, "nu >= 0")
        require("mu", self.mu, self.mu > 0, "mu > 0")
        require("D2", self.D2, self.D2 > 0, "D2 > 0 (D2 = D^2; the paper's D = sqrt(2) is D2 = 2)")
        require("E0", self.E0, self.E0 >= 0, "E0 >= 0")
        require("epsilon", self.epsilon, abs(self.epsilon) <= 1, "|epsilon| <= 1 (a density)")
        require("a", self.a, self.a >= 0, "a >= 0 (weight of the bump)")
        require("sigma", self.sigma, self.sigma > 0, "sigma > 0 (width of the bump)")

    # --- physics ----------------------------------------------------------------------------------
    def potential(self, x):
        """phi(x) = -(E0 / 4 pi) sin(4 pi x) (4.11); E = -phi' = E0 cos(4 pi x)."""
        return -self.E0 / (4 * jnp.pi) * jnp.sin(4 * jnp.pi * x)

    def hamiltonian(self, q, p):
        return 0.5 * jnp.sum(p**2) - jnp.sum(self.potential(q))

    def noise_hamiltonians(self, q, p):
        return jnp.array([-jnp.sqrt(self.nu * self.D2) * jnp.sum(q)])

    def forcing(self, q, p):
        return -self.nu * self.mu * p

    def initial_state(self, key):
        kx, kv = jax.random.split(key)
        k_pick, k_normal = jax.random.split(kv)
        in_bump = jax.random.uniform(k_pick) < self.a / (1 + self.a)
        n = jax.random.normal(k_normal)
        v = jnp.where(in_bump, self.v0 + self.sigma * n, n)
        return jnp.stack([sample_cosine_perturbed(kx, self.epsilon), v])

    def observables(self):
        """H, x, v and ``sin4pix`` = sin(4 pi X): the one statistic that tells a sign error in both
        force and H apart from the right answer (the sign convention above; ergodic value -0.1185)."""
        named = super().observables()
        named["sin4pix"] = lambda z: jnp.sin(4 * jnp.pi * z[0])
        named["cos2pix"] = lambda z: jnp.cos(2 * jnp.pi * z[0])   # the initial law's perturbation
        named["v_sq"] = lambda z: z[1] ** 2
        return named

    # --- densities (numpy, for figures and tests) ----------------------------------------------------
    @property
    def kappa(self) -> float:
        """Depth scale of the potential, E0 / 4 pi (phi = -kappa sin 4 pi x)."""
        return self.E0 / (4 * math.pi)

    @property
    def gibbs_coupling(self) -> float:
        """b = (2 mu / D^2) kappa: the Gibbs x-marginal is exp(-b sin 4 pi x) / I0(b)."""
        return 2 * self.mu / self.D2 * self.kappa

    def initial_density_x(self, x):
        return cosine_perturbed_density(x, self.epsilon)

    def initial_cdf_x(self, x):
        return cosine_perturbed_cdf(x, self.epsilon)

    def initial_density_v(self, v):
        w = self.a / (1 + self.a)
        return (1 - w) * _normal_pdf(v) + w * _normal_pdf(np.asarray(v) - self.v0, self.sigma**2)

    def gibbs_density_x(self, x):
        r"""x-marginal of the invariant (Gibbs) density (4.10) on [0, 1): :math:`e^{-b\sin4\pi x}/I_0(b)`.

        (Kraus & Tyranowski 2021 Figs 4.8/4.9 compare final-time histograms with this, the marginals of eq. 4.10, not with the initial law.)"""
        from scipy.special import i0e
        b = self.gibbs_coupling
        # i0e(b) = exp(-b) I0(b) keeps large b finite.
        return np.exp(-b * np.sin(4 * np.pi * np.asarray(x, dtype=float)) - b) / i0e(b)

    def gibbs_density_v(self, v):
        """v-marginal of the Gibbs density: N(0, D^2 / (2 mu))."""
        return _normal_pdf(v, self.D2 / (2 * self.mu))

    # --- reference values ---------------------------------------------------------------------------
    def initial_mean_energy(self) -> float:
        """E(H)(0) by quadrature of H against the initial density (4.12): 3.041667 for the paper's
        parameters (kinetic (1 + a(sigma^2 + v0^2)) / (2(1 + a)); the potential part averages to 0)."""
        kinetic = _quad(lambda v: 0.5 * v * v * self.initial_density_v(v), -np.inf, np.inf)
        potential = _quad(lambda x: self.kappa * np.sin(4 * np.pi * x) * self.initial_density_x(x), 0, 1)
        return kinetic + potential

    def initial_mean(self, observable: str) -> float | None:
        """E[observable] under the initial law (4.12), by quadrature: ``v`` a v0/(1+a) = 4/3,
        ``v_sq`` (1 + a(sigma^2 + v0^2))/(1+a) = 6.08333, ``cos2pix`` eps/2 = 0.125, ``H`` 3.041667."""
        in_v = {"v": lambda v: v, "v_sq": lambda v: v * v}
        in_x = {"x": lambda x: x, "cos2pix": lambda x: np.cos(2 * np.pi * x), "sin4pix": lambda x: np.sin(4 * np.pi * x)}
        if observable == "H":
            return self.initial_mean_energy()
        if observable in in_v:
            return _quad(lambda v: in_v[observable](v) * self.initial_density_v(v), -np.inf, np.inf)
        if observable in in_x:
            return _quad(lambda x: in_x[observable](x) * self.initial_density_x(x), 0, 1)
        return None

    def ergodic_mean(self, observable: str) -> float | None:
        r"""Exact mean of ``observable`` under the Gibbs measure (4.10), the limit of E(.)(t) as t -> oo
        (the system is ergodic for nu > 0: Mattingly-Stuart-Higham, the paper's ref. [85], Thm 3.2).

        ``H``: :math:`H^{\rm erg} = D^2/4\mu - \kappa I_1(b)/I_0(b)` (4.13), 0.4717045 for the paper's
        parameters (the paper prints 0.471705); ``sin4pix``: :math:`-I_1(b)/I_0(b)` = -0.11852;
        ``v``: 0; ``v_sq``: the Gibbs temperature D^2 / 2 mu (= Var V, 1 for the paper's parameters).
        None for other observables, or without collisions (nu = 0)."""
        if self.nu == 0:
            return None
        from scipy.special import i0e, i1e
        b = self.gibbs_coupling
        mean_sin = -i1e(b) / i0e(b)   # E[sin 4 pi X] under exp(-b sin 4 pi x) / I0(b)
        return {"H": self.D2 / (4 * self.mu) + self.kappa * mean_sin, "sin4pix": mean_sin, "v": 0.0,
                "v_sq": self.D2 / (2 * self.mu)}.get(observable)

    def ergodic_energy(self) -> float | None:
        """H^erg (4.13), exact; see ``ergodic_mean``."""
        return self.ergodic_mean("H")


# --- Lorentz (pitch-angle) collisions -------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class VlasovLorentz(CanonicalSystem):
    r"""Vlasov with Lorentz (pitch-angle) collisions (paper eqs. 4.14-4.20), in 2D.

    :math:`q = (X, Y)`, :math:`p = (V_x, V_y)`, :math:`H = \tfrac12|V|^2 - \phi`,
    :math:`\phi = -\tfrac{E_0}{4\pi}\sin4\pi x\sin4\pi y`, :math:`F = 0`, :math:`h = 0`,
    :math:`f = \sqrt{2\nu}(V_y, -V_x)`. The noise only rotates the velocity, so :math:`\nabla H\cdot Y = 0`
    and :math:`H` is conserved along every path (Stratonovich, 4.20); hence :math:`E(H)` is constant.
    Ito drift in the p-rows: :math:`\nabla\phi - \nu V`. Initial law (4.18): X, Y independent with
    densities :math:`1 + \epsilon_{1,2}\cos2\pi(\cdot)`, :math:`V \sim N(0, I_2)`.
    """
    dof = 2
    coordinates = ("x", "y", "vx", "vy")

    nu: float = 0.005
    E0: float = 3.0
    eps1: float = 0.25
    eps2: float = 0.25

    def check(self):
        require("nu", self.nu, self.nu >= 0, "nu >= 0")
        require("E0", self.E0, self.E0 >= 0, "E0 >= 0")
        require("eps1", self.eps1, abs(self.eps1) <= 1, "|eps1| <= 1 (a density)")
        require("eps2", self.eps2, abs(self.eps2) <= 1, "|eps2| <= 1 (a density)")

    def potential(self, q):
        """phi(x, y) = -(E0 / 4 pi) sin(4 pi x) sin(4 pi y) (4.17)."""
        return -self.E0 / (4 * jnp.pi) * jnp.sin(4 * jnp.pi * q[0]) * jnp.sin(4 * jnp.pi * q[1])

    def hamiltonian(self, q, p):
        return 0.5 * jnp.sum(p**2) - self.potential(q)

    def noise_hamiltonians(self, q, p):
        return jnp.zeros((1,), dtype=p.dtype)

    def noise_forcing(self, q, p):
        # The paper's (4.16) prints f = sqrt(2 nu) (Vx, -Vy): a typo. It contradicts the SDE (4.15)
        # (dVx = ... + sqrt(2 nu) Vy o dW, dVy = ... - sqrt(2 nu) Vx o dW) and would change
        # |V|^2 along paths (grad H . Y = sqrt(2 nu)(Vx^2 - Vy^2) != 0), breaking (4.20).
        # The rotation generator below gives grad H . Y = sqrt(2 nu)(Vx Vy - Vy Vx) = 0.
        return (jnp.sqrt(2 * self.nu) * jnp.stack([p[1], -p[0]]))[None]

    def initial_state(self, key):
        kx, ky, kv = jax.random.split(key, 3)
        x = sample_cosine_perturbed(kx, self.eps1)
        y = sample_cosine_perturbed(ky, self.eps2)
        return jnp.concatenate([jnp.stack([x, y]), jax.random.normal(kv, (2,))])

    # --- reference values ---------------------------------------------------------------------------
    def initial_mean_energy(self) -> float:
        """E(H)(0) by quadrature against the initial density (4.18): 1 for the paper's parameters
        (kinetic 1; the potential part is a product of integrals of sin 4 pi x (1 + eps cos 2 pi x),
        which vanish)."""
        kinetic = 2 * _quad(lambda v: 0.5 * v * v * _normal_pdf(v), -np.inf, np.inf)
        factor = lambda eps: _quad(lambda x: np.sin(4 * np.pi * x) * cosine_perturbed_density(x, eps), 0, 1)
        potential = self.E0 / (4 * math.pi) * factor(self.eps1) * factor(self.eps2)
        return kinetic + potential

    def reference_mean(self, observable):
        """E(H)(t) = E(H)(0) for all t (4.19): H is conserved pathwise."""
        if observable != "H":
            return None
        value = self.initial_mean_energy()
        return lambda t: np.full(np.shape(t), value)
