import numpy as np
import pytest

from sgi_run.core.linalg import solve


@pytest.mark.parametrize("n", [1, 2, 4, 8, 9])
def test_matches_numpy(n):
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=(n, n)), rng.normal(size=n)
    assert np.allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)


def test_needs_pivoting():
    a = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    b = np.array([1.0, 2.0, 3.0])
    assert np.allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-13)
