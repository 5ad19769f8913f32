import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import sgi_run
from sgi_run.config import build_system
from sgi_run.core.errors import ConfigError
from sgi_run.systems import VanDerPol

POINTS = [(1.0, 1.0), (-0.3, 2.2), (1.7, -0.4)]


@pytest.mark.parametrize("q,p", POINTS)
def test_fields_match_eq_4_6(q, p):
    s = VanDerPol(nu=0.3, sigma=0.2)
    z = jnp.array([q, p])
    assert np.allclose(s.drift(z), [p, -q + 0.3 * (1 - q**2) * p], rtol=1e-14)
    assert np.allclose(s.noise_fields(z), [[0.0, 0.2]], rtol=1e-14)
    # Additive noise: Ito and Stratonovich drifts coincide.
    assert np.allclose(s.ito_drift(z), s.drift(z), rtol=1e-14)
    assert float(s.energy(z)) == pytest.approx(0.5 * (q**2 + p**2))


def test_ergodic_reference_is_the_papers_monte_carlo_number_only_at_its_parameters():
    assert VanDerPol().ergodic_energy() == 2.3165
    assert VanDerPol(q0=3.0, p0=0.0).ergodic_energy() == 2.3165   # the limit forgets the start
    assert VanDerPol(nu=0.002).ergodic_energy() is None
    assert VanDerPol().reference_mean("H") is None                # no exact E(H)(t)


def test_averaging_estimate():
    """Kraus & Tyranowski (2021) Sec. 4.2 (stochastic averaging, docs/papers/kraus_tyranowski_2021.md): 2.31596, within the reference's Monte Carlo uncertainty of 2.3165."""
    value = VanDerPol().averaging_ergodic_energy()
    assert value == pytest.approx(2.31596, abs=1e-5)
    assert abs(value - VanDerPol().ergodic_energy()) < 2e-3


@pytest.mark.parametrize("nu,sigma", [(0.001, 0.05), (0.01, 0.3)])
def test_averaging_estimate_is_a_truncated_gaussian_mean(nu, sigma):
    """exp(lam (E - E^2/4)) on E >= 0 is N(2, 2/lam) cut at 0: an independent formula."""
    scale = np.sqrt(2 / (2 * nu / sigma**2))
    expected = stats.truncnorm.mean(-2 / scale, np.inf, loc=2, scale=scale)
    assert VanDerPol(nu=nu, sigma=sigma).averaging_ergodic_energy() == pytest.approx(expected, rel=1e-8)
    assert VanDerPol(nu=0.0).averaging_ergodic_energy() is None


def test_parameters_are_checked():
    with pytest.raises(ConfigError, match="system.sigma"):
        build_system({"name": "van_der_pol", "sigma": -0.1})
    with pytest.raises(ConfigError, match="system.nu"):
        build_system({"name": "van_der_pol", "nu": -1})


def test_runs_end_to_end(runs_root):
    cfg = sgi_run.compose(runs_root + ["system=van_der_pol", "integrator=midpoint", "plan.dt=0.05",
                                       "plan.T=1", "plan.output_dt=0.5", "plan.paths=200"])
    ens = sgi_run.run(cfg).ensemble
    assert list(ens.observables["H"]["count"]) == [200, 200, 200]
    assert ens.mean("H")[0] == pytest.approx(1.0) and ens.sem("H")[0] == 0   # deterministic start
    # Noise sigma^2/2 per unit time feeds E(H) (damping is negligible at t = 1): E(H)(1) ~ 1.00125.
    assert abs(ens.mean("H")[-1] - 1.0) < 5 * ens.sem("H")[-1] + 2e-3
    assert set(ens.paths) == {"q", "p", "H"}
