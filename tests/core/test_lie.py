"""Lie algebras (core.lie): exponentials against scipy, ad* against its definition, Jacobi, Casimirs."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg

from sgi_run.core.lie import SE3, SO3, MatrixAlgebra, Product, hat, vee
from sgi_run.core.solvers import real_coordinates

RNG = np.random.default_rng(3)


def skew(n, complex_):
    x = RNG.normal(size=(n, n)) + (1j * RNG.normal(size=(n, n)) if complex_ else 0)
    a = x - np.conj(x).T
    return jnp.asarray(a - np.trace(a) / n * np.eye(n) if complex_ else a)


def element(algebra):
    """A random element of the algebra (also used as a dual element: the pairing identifies them)."""
    if isinstance(algebra, SO3):
        return jnp.asarray(RNG.normal(size=3))
    if isinstance(algebra, SE3):
        return jnp.asarray(RNG.normal(size=3)), jnp.asarray(RNG.normal(size=3))
    if isinstance(algebra, MatrixAlgebra):
        return skew(algebra.n, algebra.complex)
    return tuple(element(f) for f in algebra.factors)


ALGEBRAS = [SO3(), SE3(), MatrixAlgebra(4, complex=False), MatrixAlgebra(3), MatrixAlgebra(5),
            Product([MatrixAlgebra(2), MatrixAlgebra(2), SO3()])]
IDS = [a.name for a in ALGEBRAS]


def close(a, b, tol=1e-12):
    return all(np.allclose(x, y, rtol=0, atol=tol) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.mark.parametrize("algebra", ALGEBRAS, ids=IDS)
def test_ad_star_is_defined_by_the_pairing(algebra):
    for _ in range(5):
        s, mu, eta = element(algebra), element(algebra), element(algebra)
        assert float(algebra.pair(algebra.ad_star(s, mu), eta)) == pytest.approx(
            float(algebra.pair(mu, algebra.bracket(s, eta))), abs=1e-12)


@pytest.mark.parametrize("algebra", ALGEBRAS, ids=IDS)
def test_jacobi_identity(algebra):
    a, b, c = element(algebra), element(algebra), element(algebra)
    br = algebra.bracket
    total = jax.tree.map(lambda x, y, z: x + y + z, br(a, br(b, c)), br(b, br(c, a)), br(c, br(a, b)))
    assert close(total, jax.tree.map(jnp.zeros_like, total))


@pytest.mark.parametrize("algebra", ALGEBRAS, ids=IDS)
def test_casimirs_are_invariant_under_the_coadjoint_flow(algebra):
    for scale in (1e-6, 0.3, 3.0):
        s = jax.tree.map(lambda x: scale * x, element(algebra))
        mu = element(algebra)
        before, after = algebra.casimirs(mu), algebra.casimirs(algebra.coadjoint_exp(s, mu))
        assert before.keys() == after.keys() and len(before) >= 1
        for name in before:
            assert float(after[name]) == pytest.approx(float(before[name]), rel=1e-12, abs=1e-12), (name, scale)


@pytest.mark.parametrize("algebra", ALGEBRAS, ids=IDS)
def test_coadjoint_exp_is_the_exponential_of_ad_star(algebra):
    """exp(A(s)) mu with A(s) mu = ad*_s mu, by scipy's expm of A over the real coordinates of mu."""
    s, mu = element(algebra), element(algebra)
    flat, back = real_coordinates(mu)
    a = jax.jacfwd(lambda v: real_coordinates(algebra.ad_star(s, back(v)))[0])(flat)
    assert close(algebra.coadjoint_exp(s, mu), back(scipy.linalg.expm(np.asarray(a)) @ np.asarray(flat)), tol=1e-11)


@pytest.mark.parametrize("theta", [0.0, 1e-6, 1e-3, 0.7, 3.0])
def test_rodrigues_and_cayley_against_scipy(theta):
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    xi = jnp.asarray(theta * axis)
    so3 = SO3()
    assert np.allclose(so3.exp(xi), scipy.linalg.expm(np.asarray(hat(xi))), rtol=0, atol=1e-14)
    h = np.asarray(hat(xi))
    cayley = np.linalg.solve(np.eye(3) - h / 2, np.eye(3) + h / 2)
    assert np.allclose(so3.cayley(xi), cayley, rtol=0, atol=1e-14)
    assert np.allclose(vee(hat(xi)), xi)


@pytest.mark.parametrize("n, complex_", [(3, False), (6, False), (3, True), (16, True)])
def test_matrix_exp_against_scipy(n, complex_):
    algebra, s = MatrixAlgebra(n, complex=complex_), skew(n, complex_)
    g = np.asarray(algebra.exp(s))
    assert np.allclose(g, scipy.linalg.expm(np.asarray(s)), rtol=0, atol=1e-12)
    assert np.allclose(np.conj(g).T @ g, np.eye(n), rtol=0, atol=1e-13) and np.isrealobj(g) == (not complex_)


def test_se3_coadjoint_exp_keeps_the_heavy_top_casimirs_for_a_tiny_rotation():
    """theta below SMALL_ANGLE takes the Taylor branch: still the exact flow (Rodrigues' formula for Luesink et al. 2023 Sec. 5)."""
    algebra = SE3()
    s = (jnp.array([1e-7, -2e-7, 0.5e-7]), jnp.array([0.3, 0.1, -0.2]))
    mu = (jnp.array([-0.7, 0.7, 0.0]), jnp.array([-0.7, 0.7, 0.0]))
    a = jax.jacfwd(lambda v: jnp.concatenate(algebra.ad_star(s, (v[:3], v[3:]))))(jnp.concatenate(mu))
    expected = scipy.linalg.expm(np.asarray(a)) @ np.concatenate(mu)
    assert np.allclose(np.concatenate(algebra.coadjoint_exp(s, mu)), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize("n, complex_", [(3, True), (4, False)])
def test_the_exponential_has_a_derivative_at_zero_and_elsewhere(n, complex_):
    """A chord method differentiates exp(A(sigma)) mu at sigma = 0, where every eigenvalue repeats: the
    derivative is ad*_ds mu there, and matches finite differences at a generic point."""
    algebra, mu, ds = MatrixAlgebra(n, complex=complex_), skew(n, complex_), skew(n, complex_)
    zero = jnp.zeros((n, n), mu.dtype)
    _, at_zero = jax.jvp(lambda s: algebra.coadjoint_exp(s, mu), (zero,), (ds,))
    assert np.allclose(at_zero, algebra.ad_star(ds, mu), rtol=0, atol=1e-13)
    s, h = skew(n, complex_), 1e-6
    _, derivative = jax.jvp(algebra.exp, (s,), (ds,))
    difference = (algebra.exp(s + h * ds) - algebra.exp(s - h * ds)) / (2 * h)
    assert np.allclose(derivative, difference, rtol=0, atol=1e-8)
