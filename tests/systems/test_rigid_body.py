"""The rigid body: the derived drift and noise are Ephrati et al.'s (2024) vector SDE."""
import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.systems import RigidBody

RNG = np.random.default_rng(7)


def test_rigid_body_fields_are_paper_004s_vector_sde():
    """dx = x x I^-1 x dt - 0.1 sum_i x_i (e_i x x) o dW^i (Ephrati et al. 2024 Sec. 6.1)."""
    body = RigidBody()
    x, dw = jnp.asarray(RNG.normal(size=3)), jnp.asarray(RNG.normal(size=3))
    assert np.allclose(body.drift(x), jnp.cross(x, x / jnp.array(body.inertia)), rtol=1e-14)
    expected = -0.1 * sum(x[i] * dw[i] * jnp.cross(jnp.eye(3)[i], x) for i in range(3))
    assert np.allclose(body.noise_action(x, dw), expected, rtol=1e-14)
    names = set(body.observables())
    assert {"H", "C2", "pi1", "pi2", "pi3"} <= names


@pytest.mark.parametrize("cls, key, value", [(RigidBody, "noise_kind", "cubic"), (RigidBody, "inertia", (0.0, 1.0, 1.0)),
                                             (RigidBody, "noise_amplitude", -0.1)])
def test_bad_parameters_are_refused(cls, key, value):
    with pytest.raises(ConfigError, match=f"^{key}="):
        cls(**{key: value}).check()
