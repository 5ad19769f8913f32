"""Point vortices on su(2)^4: the isomorphism with R^3, the Hamiltonian, the noise and the collision guard."""
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run.systems import PointVortices
from sgi_run.systems.point_vortices import matrices, positions


def test_su2_is_r3_with_the_cross_product():
    """[a^, b^] = (a x b)^, <a^, b^> = a.b / 2, x = 2 Re tr(s^* X) (the su(2) isomorphism of Ephrati et al. 2024 Sec. 6.3)."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(1, 3)), rng.normal(size=(1, 3))
    ma, mb = matrices(jnp.asarray(a))[0], matrices(jnp.asarray(b))[0]
    assert np.allclose(ma @ mb - mb @ ma, matrices(jnp.asarray(np.cross(a, b)))[0], atol=1e-15)
    assert np.isclose(float(jnp.real(jnp.sum(jnp.conj(ma) * mb))), float(a[0] @ b[0]) / 2)
    assert np.allclose(positions(matrices(jnp.asarray(a))), a)


@pytest.mark.slow
def test_hamiltonian_noise_and_initial_positions():
    system = PointVortices()
    z = system.initial_state(None)
    x = np.asarray(positions(z))
    assert np.allclose(np.linalg.norm(x, axis=1), 1) and np.allclose(x[0], [np.sqrt(0.5), 0, np.sqrt(0.5)])
    pairs = [(i, j) for i in range(4) for j in range(i + 1, 4)]
    expected = -sum(np.log(1 - x[i] @ x[j]) for i, j in pairs) / (4 * np.pi)
    assert float(system.energy(z)) == pytest.approx(expected, rel=1e-14)
    # the rigid-body noise on every vortex, shared: dx_i = -a sum_k x_ik (e_k x x_i) o dW^k
    dw = jnp.asarray([0.3, -0.2, 0.5])
    moved = np.asarray(positions(system.noise_action(z, dw)))
    expected_noise = -0.1 * sum(dw[k] * x[:, k, None] * np.cross(np.eye(3)[k], x) for k in range(3))
    assert np.allclose(moved, expected_noise, atol=1e-15)
    assert system.noises == 3 and PointVortices(noise_shared=False).noises == 12
    assert {"H", "spectrum", "x11", "x43", "C2_1", "C2_4"} <= set(system.observables())


def test_vortices_starting_in_collision_are_refused():
    with pytest.raises(sgi_run.ConfigError) as err:
        sgi_run.compose(["system=point_vortices", "integrator=isomp", "system.colatitudes=[0.5,0.5,1.0,2.0]",
                         "system.longitudes=[1.0,1.0,2.0,3.0]"])
    message = str(err.value)
    assert message.startswith("system.colatitudes=") and "collision" in message and "\n" not in message


def test_a_path_that_reaches_a_collision_ends_non_finite(make_integrator):
    """The guard inside the step: a pair closer than COLLISION makes the energy, and so the step, NaN; the
    engine counts such a path non-finite (never integrates through the singularity)."""
    system = PointVortices()
    theta = np.array([0.5, 0.5 + 1e-5, 1.5, 2.5])
    x = np.stack([np.sin(theta), np.zeros(4), np.cos(theta)], axis=1)
    z = matrices(jnp.asarray(x))
    assert np.isnan(float(system.energy(z)))
    z1, _ = make_integrator("isomp").advance(system, z, 0.01, jnp.zeros((1, 3)))
    assert not bool(system.space.is_finite(z1))
