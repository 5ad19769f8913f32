import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.systems import Kubo


def test_fields_come_from_the_hamiltonians():
    s = Kubo(beta=0.5, nu=0.3)
    z = jnp.array([0.7, -1.3])
    q, p = z
    assert np.allclose(s.drift(z), [p, -q - 0.3 * p])
    assert np.allclose(s.noise_fields(z), [[0.5 * p, 0.5 * (-q - 0.3 * p)]])


def test_ito_drift_matches_closed_form():
    """Kraus & Tyranowski (2021) Sec. 4.1 (checks the Ito correction (2.2), with its typo corrected: docs/papers/kraus_tyranowski_2021.md)."""
    b, nu = 0.5, 0.3
    s = Kubo(beta=b, nu=nu)
    q, p = 0.7, -1.3
    expected = [p - b**2 / 2 * (q + nu * p), -q - nu * p + b**2 / 2 * (-p + nu * q + nu**2 * p)]
    assert np.allclose(s.ito_drift(jnp.array([q, p])), expected, rtol=1e-14)


@pytest.mark.slow
def test_exact_path_solves_the_clock_changed_ode():
    """(4.1) as a function of tau = t + beta W solves dz/dtau = K z."""
    s = Kubo(beta=0.5, nu=0.3, q0=2.0, p0=-0.4)
    z_of_tau = lambda tau: s.exact_state(tau, 0.0)
    for tau in [0.0, 0.9, 3.7]:
        z = z_of_tau(tau)
        assert np.allclose(jax.jacfwd(z_of_tau)(tau), s.drift(z), rtol=1e-12)
    assert np.allclose(z_of_tau(0.0), [2.0, -0.4])


def test_exact_mean_energy_reference_values():
    """Kraus & Tyranowski (2021) (4.2)-(4.3): reference values for beta = 0.5, nu = 0.001, (q0, p0) = (2, 0)."""
    s = Kubo()
    expected = {0: 2.0, 1000: 0.735851, 2000: 0.270738, 3000: 0.0996115, 4000: 0.0366496, 5000: 0.0134843}
    for t, value in expected.items():
        assert s.exact_mean_energy(t) == pytest.approx(value, rel=2e-6)


def test_exact_mean_energy_is_the_mean_of_the_exact_path():
    """(4.2) against Monte Carlo over W(t) ~ N(0, t) of H along (4.1): two independent formulas."""
    s = Kubo(beta=0.5, nu=0.3, q0=2.0, p0=0.5)
    t, n = 3.0, 400_000
    w = np.sqrt(t) * np.random.default_rng(1).normal(size=n)
    h = 0.5 * np.sum(np.asarray(s.exact_state(t, jnp.asarray(w))) ** 2, axis=1)
    assert abs(h.mean() - s.exact_mean_energy(t)) < 4 * h.std() / np.sqrt(n)


def test_parameters_are_checked():
    with pytest.raises(ConfigError, match="nu"):
        Kubo(nu=2.5).check()
    with pytest.raises(ConfigError, match="beta"):
        Kubo(beta=-1).check()


@pytest.mark.parametrize("override, key", [("system.q0=1e308", "system.q0"), ("system.q0=1e200", "system.q0"),
                                           ("system.p0=-1e155", "system.p0")])
def test_a_start_whose_energy_overflows_is_refused_before_compute(override, key):
    """(4.2) squares q0 and p0: beyond ~9.5e153 the energy and the exact mean overflow a float64."""
    import sgi_run
    with pytest.raises(sgi_run.ConfigError) as err:
        sgi_run.compose([override])
    assert err.value.key == key and "finite" in err.value.allowed
    sgi_run.compose(["system.q0=1e150"])
