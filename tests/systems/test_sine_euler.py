"""The sine-Euler equations: the derived matrix drift and noise are Luesink et al.'s (2023) (S6.37)."""
import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.systems import SineEuler


@pytest.mark.parametrize("cls, key, value", [(SineEuler, "n", 4), (SineEuler, "n", 1), (SineEuler, "ic_kind", "foo"),
                                             (SineEuler, "noise_amplitude", -1.0)])
def test_bad_parameters_are_refused(cls, key, value):
    with pytest.raises(ConfigError, match=f"^{key}="):
        cls(**{key: value}).check()


@pytest.mark.slow
@pytest.mark.parametrize("ic_kind", ["real_even", "complex"])
def test_sine_euler_fields_are_s6_37(ic_kind):
    """The matrix drift and noise, derived from h and h_i through ad*, have the coefficients of (S6.37):
    d omega_m = sum_n c(m, n) omega_{m+n} (omega_{-n} / |n|^2 dt + sum_i zeta_{i,-n} o dW^i)."""
    import jax
    system = SineEuler(ic_kind=ic_kind)
    b = system.basis
    w = system.initial_state(jax.random.key(4))
    omega = np.asarray(b.coefficients(w))
    k, index = (b.n - 1) // 2, {tuple(m): i for i, m in enumerate(b.modes)}
    zeta = np.zeros((2, len(b.modes)))
    for i, modes in enumerate((((1, 1), (-1, -1)), ((1, -1), (-1, 1)))):
        for m in modes:
            zeta[i, index[m]] = 0.1

    def s6_37(dt, dw):
        out = np.zeros(len(b.modes), complex)
        for i, m in enumerate(b.modes):
            for j, n in enumerate(b.modes):
                total = tuple(((m[a] + n[a] + k) % b.n) - k for a in (0, 1))
                if total != (0, 0):
                    c = np.sin(b.eps * (m[0] * n[1] - m[1] * n[0])) / b.eps
                    minus = index[(-n[0], -n[1])]
                    out[i] += c * omega[index[total]] * (omega[minus] / b.squared[j] * dt + zeta[:, minus] @ dw)
        return out
    dw = np.array([0.3, -0.7])
    assert np.allclose(b.coefficients(system.drift(w)), s6_37(1.0, np.zeros(2)), rtol=0, atol=1e-15)
    assert np.allclose(b.coefficients(system.noise_in_algebra(w, jnp.asarray(dw))), s6_37(0.0, dw), rtol=0, atol=1e-15)
    assert float(jnp.abs(w + jnp.conj(w).T).max()) == 0 and abs(complex(jnp.trace(w))) < 1e-15
    assert np.allclose(omega[b.negative], np.conj(omega), atol=1e-15)
    assert (np.abs(omega.imag).max() < 1e-15) == (ic_kind == "real_even")
