r"""Lie algebras as small objects: bracket, pairing, coadjoint action, exact exponentials, Casimirs.

Every algebra is defined from one operator, the coadjoint action :math:`\mathrm{ad}^*_\sigma\mu`,
fixed by :math:`\langle\mathrm{ad}^*_\sigma\mu,\eta\rangle = \langle\mu,[\sigma,\eta]\rangle` for the
algebra's own pairing (Luesink et al. 2023 section 2): the Lie-Poisson drift is
:math:`F(\mu) = \mathrm{ad}^*_{\nabla h(\mu)}\mu`, and ``coadjoint_exp(sigma, mu)`` is
:math:`e^{A(\sigma)}\mu` with :math:`A(\sigma)\mu = \mathrm{ad}^*_\sigma\mu`, the exact flow of
:math:`\dot\mu = \mathrm{ad}^*_\sigma\mu` for unit time (the TMK update; Luesink et al.'s (2023) Lemma 4.1 and Algorithm 1 print the other sign, see docs/papers/luesink_2023.md).
Elements and duals are kept in the algebra's own form, never through a dense basis:

- ``SO3``: vectors of R^3, :math:`[\xi,\eta] = \xi\times\eta`, dot pairing, Rodrigues' exponential
  and the Cayley map; Casimir :math:`|\pi|^2`.
- ``SE3``: pairs :math:`(\xi, b)` of R^3 (semidirect so(3) x R^3), duals :math:`(\pi,\gamma)`; the
  closed-form exponential (Luesink et al. 2023 section 5); Casimirs :math:`\pi\cdot\gamma`, :math:`|\gamma|^2`.
- ``MatrixAlgebra``: so(n) (real antisymmetric) or su(N) (complex skew-Hermitian, traceless) as
  n x n matrices, :math:`[A, B] = AB - BA`, pairing :math:`\mathrm{Re\,tr}(A^\dagger B)`, exponential by
  ``eigh`` of the Hermitian :math:`iA`; Casimirs :math:`\mathrm{tr}((i\mu)^k)` (su(N)), :math:`\mathrm{tr}(\mu^{2k})` (so(n)).
- ``Product``: a direct product of algebras, elements as tuples, everything componentwise.

``matrix_form``: whether the algebra has a matrix representation ``to_matrix`` (a Lie algebra
isomorphism onto matrices, with ``from_matrix`` its inverse) in which the coadjoint action is the
commutator, :math:`M(\mathrm{ad}^*_s\mu) = [M(\mu), M(s)]`: so(3) by ``hat``, so(n) and su(N) as they
are, products block by block; what the isospectral methods (Ephrati et al. 2024) integrate. se(3) has none.
Such an algebra also gives ``isospectral_terms(p, x)``: the commutator :math:`[P, X]` and the product
:math:`PXP` of :math:`P = M(p)`, :math:`X = M(x)`, in its own coordinates (the isospectral midpoint map's two
terms; so(3) as vectors, without forming a matrix).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from sgi_run.core.linalg import cross, inner, join_vectors, matmul

# Below this rotation angle the closed forms use their Taylor series (no 0/0).
SMALL_ANGLE = 1e-4


def hat(v):
    """The antisymmetric matrix of v: hat(v) w = v x w."""
    v = join_vectors(v)
    return jnp.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]], dtype=jnp.result_type(v, 0.0))


def vee(m):
    """The vector of an antisymmetric 3 x 3 matrix (the inverse of ``hat``)."""
    return jnp.array([m[2, 1], m[0, 2], m[1, 0]])


def hat_polynomial(xi, v, alpha, beta):
    """(I + alpha hat(xi) + beta hat(xi)^2) v = v + alpha xi x v + beta xi x (xi x v), without the matrix: every
    closed form of so(3) and se(3) is such a polynomial (Rodrigues' exp(hat xi) and its transpose, se(3)'s V);
    building the matrix and its square cost TMK's coadjoint exponential most of its time."""
    w = cross(xi, v)
    return v + alpha * w + beta * cross(xi, w)


def skew_part2(a):
    """a - a^*: twice the skew-Hermitian part, exactly skew-Hermitian in floating point."""
    return a - jnp.conj(jnp.swapaxes(a, -1, -2))


def _rotation_coefficients(theta2):
    """sin(t)/t, (1 - cos t)/t^2, (t - sin t)/t^3 of t = sqrt(theta2), with Taylor series near 0."""
    small = theta2 < SMALL_ANGLE**2
    t2 = jnp.where(small, 1.0, theta2)          # no 0/0 in the branch that is not taken
    t = jnp.sqrt(t2)
    a = jnp.where(small, 1 - theta2 / 6 + theta2**2 / 120, jnp.sin(t) / t)
    b = jnp.where(small, 0.5 - theta2 / 24 + theta2**2 / 720, (1 - jnp.cos(t)) / t2)
    c = jnp.where(small, 1 / 6 - theta2 / 120 + theta2**2 / 5040, (t - jnp.sin(t)) / (t2 * t))
    return a, b, c


@dataclasses.dataclass(frozen=True)
class SO3:
    name: str = "so3"

    def bracket(self, a, b):
        return cross(a, b)

    def pair(self, mu, eta):
        return inner(mu, eta)

    def ad_star(self, s, mu):
        return cross(mu, s)

    def exp(self, xi):
        """Rodrigues: the rotation matrix exp(hat(xi))."""
        a, b, _ = _rotation_coefficients(inner(xi, xi))
        h = hat(xi)
        return jnp.eye(3) + a * h + b * matmul(h, h)

    def cayley(self, xi):
        """cay(hat(xi)) = (I - hat(xi)/2)^-1 (I + hat(xi)/2), in closed form."""
        h = hat(xi)
        return jnp.eye(3) + (h + 0.5 * matmul(h, h)) / (1 + inner(xi, xi) / 4)

    def cayley_rotate(self, xi, v):
        """cay(hat(xi)) v without the matrix: v + (xi x v + xi x (xi x v) / 2) / (1 + |xi|^2 / 4) (a fixed-point
        iteration of the Cayley LGVI rotates two vectors; building the matrix and its square cost more)."""
        w = cross(xi, v)
        return v + (w + 0.5 * cross(xi, w)) / (1 + inner(xi, xi) / 4)

    def coadjoint_exp(self, xi, pi):
        """exp(ad*_xi) pi = exp(hat(xi))^T pi = (I - a hat(xi) + b hat(xi)^2) pi (``hat_polynomial``)."""
        a, b, _ = _rotation_coefficients(inner(xi, xi))
        return hat_polynomial(xi, pi, -a, b)

    def casimirs(self, pi) -> dict:
        return {"C2": inner(pi, pi)}

    def project(self, a):
        return a

    # The 3 x 3 representation: hat(ad*_s mu) = [hat mu, hat s].
    matrix_form: ClassVar[bool] = True

    def to_matrix(self, x):
        return hat(x)

    def from_matrix(self, m):
        return vee(m)

    def isospectral_terms(self, p, x):
        """[P, X] and P X P of P = hat(p), X = hat(x), as vectors: p x x and -(p . x) p (hat(a) hat(b) hat(a)
        = -(a . b) hat(a)). Two 3 x 3 products and their hats cost an IsoMP iteration on the rigid body most
        of its time."""
        return cross(p, x), -inner(p, x) * p


@dataclasses.dataclass(frozen=True)
class SE3:
    """se(3) = so(3) x R^3 (semidirect); elements (xi, b), duals (pi, gamma), each a pair of 3-vectors."""
    name: str = "se3"

    def bracket(self, a, b):
        (x1, b1), (x2, b2) = a, b
        return cross(x1, x2), cross(x1, b2) - cross(x2, b1)

    def pair(self, mu, eta):
        return inner(mu[0], eta[0]) + inner(mu[1], eta[1])

    def ad_star(self, s, mu):
        (xi, b), (pi, gamma) = s, mu
        return cross(pi, xi) + cross(gamma, b), cross(gamma, xi)

    def coadjoint_exp(self, s, mu):
        """exp(ad*_(xi, b)) (pi, gamma) = (R^T (pi + gamma x V b), R^T gamma), R = exp(hat xi) (Luesink et al. 2023 section 5),
        V = I + bb hat(xi) + c hat(xi)^2, as vector arithmetic (``hat_polynomial``)."""
        (xi, b), (pi, gamma) = s, mu
        a, bb, c = _rotation_coefficients(inner(xi, xi))
        rotate_back = lambda v: hat_polynomial(xi, v, -a, bb)
        return rotate_back(pi + cross(gamma, hat_polynomial(xi, b, bb, c))), rotate_back(gamma)

    def casimirs(self, mu) -> dict:
        pi, gamma = mu
        return {"C1": inner(pi, gamma), "C2": inner(gamma, gamma)}

    def project(self, a):
        return a

    # ad* on se(3)* is no commutator of matrices representing mu and s: no isospectral methods here.
    matrix_form: ClassVar[bool] = False


@jax.custom_jvp
def expm_skew(s):
    """exp(s) of a skew-Hermitian s, by ``eigh`` of the Hermitian i s: s = V diag(lam) V^H, lam = -i w."""
    w, v = jnp.linalg.eigh(1j * s)
    return (v * jnp.exp(-1j * w)) @ jnp.conj(v).T


@expm_skew.defjvp
def _expm_skew_jvp(primals, tangents):
    """d exp(s)[ds] = V (phi o (V^H ds V)) V^H with phi_jk = (e^lam_j - e^lam_k) / (lam_j - lam_k) (e^lam_k
    where they coincide): the derivative of ``eigh`` alone is undefined at repeated eigenvalues (at
    s = 0, where a chord method takes its Jacobian), this one is not."""
    (s,), (ds,) = primals, tangents
    w, v = jnp.linalg.eigh(1j * s)
    lam = -1j * w
    e = jnp.exp(lam)
    diff = lam[:, None] - lam[None, :]
    close = jnp.abs(diff) < 1e-6
    phi = jnp.where(close, e[None, :] * (1 + diff / 2 + diff**2 / 6),
                    (e[:, None] - e[None, :]) / jnp.where(close, 1.0, diff))
    vh = jnp.conj(v).T
    return (v * e) @ vh, v @ (phi * (vh @ ds @ v)) @ vh


@dataclasses.dataclass(frozen=True)
class MatrixAlgebra:
    """so(n) (``complex=False``: real antisymmetric) or su(N) (``complex=True``: skew-Hermitian,
    traceless) as n x n matrices."""
    n: int
    complex: bool = True

    @property
    def name(self) -> str:
        return f"{'su' if self.complex else 'so'}({self.n})"

    def bracket(self, a, b):
        return a @ b - b @ a

    def pair(self, mu, eta):
        return jnp.real(jnp.sum(jnp.conj(mu) * eta))

    def project(self, a):
        """The orthogonal projection (for the pairing) of an n x n matrix onto the algebra."""
        skew = 0.5 * skew_part2(a)
        return skew - jnp.trace(skew) / self.n * jnp.eye(self.n) if self.complex else jnp.real(skew)

    def ad_star(self, s, mu):
        """[mu, s] for skew s: Re tr(mu^H [s, eta]) = Re tr([mu, s]^H eta)."""
        return mu @ s - s @ mu

    def exp(self, s):
        """exp(s) of a skew-Hermitian (or real antisymmetric) s (``expm_skew``)."""
        g = expm_skew(s.astype(jnp.complex128))
        return g if self.complex else jnp.real(g)

    def coadjoint_exp(self, s, mu):
        """exp(ad*_s) mu = exp(-s) mu exp(s): the flow of mu' = [mu, s]."""
        g = self.exp(s)
        return jnp.conj(g).T @ mu @ g

    # Elements are their own matrices: ad*_s mu = [mu, s].
    matrix_form: ClassVar[bool] = True

    def to_matrix(self, x):
        return x

    def from_matrix(self, m):
        return m

    def isospectral_terms(self, p, x):
        """[P, X] and P X P for skew P, X, each exactly skew in floating point (the isospectral flow is
        unstable off the algebra): with C = P X, [P, X] = C - C^* and P X P = (Q - Q^*) / 2, Q = C P."""
        c = matmul(p, x)
        return skew_part2(c), 0.5 * skew_part2(matmul(c, p))

    def casimirs(self, mu) -> dict:
        """su(N): C_k = tr((i mu)^k), k = 2 .. N, the power sums of the eigenvalues of the Hermitian
        i mu (real). so(n): C_k = tr(mu^k) for even k (odd powers of an antisymmetric matrix are
        traceless)."""
        x = 1j * mu if self.complex else mu
        out, power = {}, x
        for k in range(2, self.n + 1):
            power = power @ x
            if self.complex or k % 2 == 0:
                out[f"C{k}"] = jnp.real(jnp.trace(power))
        return out


@dataclasses.dataclass(frozen=True)
class Product:
    """A direct product of algebras: elements and duals are tuples, one entry per factor; Casimirs are
    named by factor, ``C2_1``, ``C2_2``, ... (1-based, names a command line can type)."""
    factors: tuple

    def __init__(self, factors: Sequence):
        object.__setattr__(self, "factors", tuple(factors))

    @property
    def name(self) -> str:
        return " x ".join(f.name for f in self.factors)

    def bracket(self, a, b):
        return tuple(f.bracket(x, y) for f, x, y in zip(self.factors, a, b))

    def pair(self, mu, eta):
        return sum(f.pair(x, y) for f, x, y in zip(self.factors, mu, eta))

    def ad_star(self, s, mu):
        return tuple(f.ad_star(x, y) for f, x, y in zip(self.factors, s, mu))

    def coadjoint_exp(self, s, mu):
        return tuple(f.coadjoint_exp(x, y) for f, x, y in zip(self.factors, s, mu))

    def casimirs(self, mu) -> dict:
        return {f"{name}_{i + 1}": c for i, (f, x) in enumerate(zip(self.factors, mu))
                for name, c in f.casimirs(x).items()}

    def project(self, a):
        return tuple(f.project(x) for f, x in zip(self.factors, a))

    @property
    def matrix_form(self) -> bool:
        return all(f.matrix_form for f in self.factors)

    def to_matrix(self, x):
        """One matrix per factor (block-diagonal, kept as its blocks)."""
        return tuple(f.to_matrix(y) for f, y in zip(self.factors, x))

    def from_matrix(self, m):
        return tuple(f.from_matrix(y) for f, y in zip(self.factors, m))

    def isospectral_terms(self, p, x):
        terms = [f.isospectral_terms(a, b) for f, a, b in zip(self.factors, p, x)]
        return tuple(t[0] for t in terms), tuple(t[1] for t in terms)
