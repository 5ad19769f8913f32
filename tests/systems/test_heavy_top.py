"""The heavy top: the derived drift and noise are Luesink et al.'s (2023) equation (39)."""
import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.systems import HeavyTop

RNG = np.random.default_rng(7)


def test_heavy_top_fields_are_eq_39():
    """d pi = (pi x omega + chi x gamma) dt + pi x alpha o dW, d gamma = gamma x omega dt + gamma x alpha o dW."""
    top = HeavyTop(inertia=(4.0, 2.0, 1.0))
    pi, gamma, dw = jnp.asarray(RNG.normal(size=3)), jnp.asarray(RNG.normal(size=3)), 0.37
    omega = pi / jnp.array([4.0, 2.0, 1.0])
    chi, alpha = jnp.array(top.chi), jnp.array(top.alpha)
    f_pi, f_gamma = top.drift((pi, gamma))
    assert np.allclose(f_pi, jnp.cross(pi, omega) + jnp.cross(chi, gamma), rtol=1e-14)
    assert np.allclose(f_gamma, jnp.cross(gamma, omega), rtol=1e-14)
    g = top.noise_action({"pi": pi, "gamma": gamma}, jnp.array([dw]))
    assert np.allclose(g["pi"], dw * jnp.cross(pi, alpha), rtol=1e-14)
    assert np.allclose(g["gamma"], dw * jnp.cross(gamma, alpha), rtol=1e-14)
    z0 = top.initial_state(None)
    assert float(top.energy(z0)) == pytest.approx(0.1875) and float(HeavyTop().energy(z0)) == pytest.approx(0.125)
    casimirs = {name: float(f(z0)) for name, f in top.observables().items() if name in ("C1", "C2")}
    assert casimirs == pytest.approx({"C1": 1.0, "C2": 1.0})


@pytest.mark.parametrize("cls, key, value", [(HeavyTop, "inertia", (1.0, 2.0)), (HeavyTop, "inertia", (1.0, -2.0, 1.0)),
                                             (HeavyTop, "inertia", (1.0, 0.0, 1.0)), (HeavyTop, "alpha", (1.0, 2.0)),
                                             (HeavyTop, "gravity_sign", 0.5)])
def test_bad_parameters_are_refused(cls, key, value):
    with pytest.raises(ConfigError, match=f"^{key}="):
        cls(**{key: value}).check()
