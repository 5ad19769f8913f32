import jax.numpy as jnp
import numpy as np

from sgi_run.core.newton import newton_solve


def test_solves_nonlinear_system():
    res = lambda x: jnp.array([x[0] ** 2 + x[1] - 3.0, x[0] - x[1] ** 3 + 7.0])
    sol = newton_solve(res, jnp.array([2.0, 1.5]))
    assert bool(sol.converged) and np.allclose(res(sol.x), 0.0, atol=1e-12)
    assert 1 < int(sol.iterations) < 20


def test_no_solution_gives_nan_not_a_half_answer():
    sol = newton_solve(lambda x: x**2 + 1.0, jnp.array([0.5]), max_iter=30)
    assert not bool(sol.converged) and np.isnan(sol.x).all() and int(sol.iterations) <= 30
