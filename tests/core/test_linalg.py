import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.core.linalg import solve


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 4, 8, 9])
def test_matches_numpy(n):
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=(n, n)), rng.normal(size=n)
    assert np.allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)


def test_needs_pivoting():
    a = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    b = np.array([1.0, 2.0, 3.0])
    assert np.allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-13)
    swap = np.array([[0.0, 1.0], [1.0, 0.0]])          # 2 x 2: Cramer's rule needs no pivot
    assert np.allclose(solve(swap, b[:2]), [2.0, 1.0], rtol=1e-15)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3, 6, 8, 9])
def test_matrix_right_hand_sides_and_the_inverse_operator(n):
    """The chord method's frozen Jacobian: an explicit inverse up to UNROLL_MAX unknowns, LU above."""
    from sgi_run.core.linalg import inverse_operator
    rng = np.random.default_rng(10 + n)
    a, b = rng.normal(size=(n, n)), rng.normal(size=(n, 3))
    assert np.allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    apply = inverse_operator(a)
    assert np.allclose(apply(b[:, 0]), np.linalg.solve(a, b[:, 0]), rtol=1e-10, atol=1e-12)


def test_complex_products_are_three_real_ones_to_round_off():
    """matmul: Gauss's three real products for complex matrices (normwise round-off: within a few n eps
    |A| |B| of the complex product), the plain product for real ones, batched like @."""
    from sgi_run.core.linalg import matmul
    rng = np.random.default_rng(3)
    n = 64
    a, b = (rng.normal(size=(2, n, n)) + 1j * rng.normal(size=(2, n, n)) for _ in range(2))
    exact = np.einsum("bij,bjk->bik", a.astype(np.clongdouble), b.astype(np.clongdouble))
    bound = 4 * n * np.finfo(float).eps * np.abs(a).max() * np.abs(b).max()
    assert 0 < np.abs(np.asarray(matmul(a, b)) - exact).max() <= bound
    real = rng.normal(size=(n, n))
    assert np.array_equal(np.asarray(matmul(real, real)), np.asarray(jnp.asarray(real) @ jnp.asarray(real)))
