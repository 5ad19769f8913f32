"""The Manakov system on so(n): the derived fields are Ephrati et al.'s (2024) (36)-(37)."""
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run.systems import Manakov


@pytest.mark.slow
def test_fields_are_eq_36_and_37():
    """dX = -[I^-1 X, X] dt - sum_{i<j} [0.1 X_ij (E_ij - E_ji), X] o dW^ij, moments 1 .. 45 row-major."""
    system = Manakov()
    d = system.moments
    assert sorted(d[np.triu_indices(10, 1)]) == list(range(1, 46)) and d[0, 1] == 1 and d[0, 9] == 9 and d[1, 2] == 10
    x = system.initial_state(None)
    assert np.array_equal(x, -x.T) and system.noises == 45
    inverse_inertia_x = x / jnp.asarray(d)
    assert np.allclose(system.drift(x), -(inverse_inertia_x @ x - x @ inverse_inertia_x), rtol=0, atol=1e-14)
    dw = jnp.asarray(np.random.default_rng(2).normal(size=45))
    z = np.zeros((10, 10))
    z[np.triu_indices(10, 1)] = dw
    b = -0.1 * (z + z.T) * x            # sum of the generators -grad H_ij, the Hadamard form of Ephrati et al. 2024 Sec. 6.2
    assert np.allclose(system.noise_in_algebra(x, dw), b @ x - x @ b, rtol=0, atol=1e-13)
    assert float(system.energy(x)) == pytest.approx(float(jnp.sum(jnp.triu(x, 1) ** 2 / d)))


@pytest.mark.parametrize("override, start", [("system.n=2", "system.n=2 is not allowed"),
                                             ("system.noise_amplitude=-0.1", "system.noise_amplitude=-0.1 is not allowed")])
def test_bad_parameters_are_refused(override, start):
    with pytest.raises(sgi_run.ConfigError) as err:
        sgi_run.compose(["system=manakov", "integrator=isomp", override])
    assert str(err.value).startswith(start) and "\n" not in str(err.value)
