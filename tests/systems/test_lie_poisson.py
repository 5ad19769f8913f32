"""Lie-Poisson systems: the derived drift and noise are the papers' equations."""
import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.systems import HeavyTop, RigidBody, SineEuler

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


def test_rigid_body_fields_are_paper_004s_vector_sde():
    """dx = x x I^-1 x dt - 0.1 sum_i x_i (e_i x x) o dW^i (spec 004 section 1.1)."""
    body = RigidBody()
    x, dw = jnp.asarray(RNG.normal(size=3)), jnp.asarray(RNG.normal(size=3))
    assert np.allclose(body.drift(x), jnp.cross(x, x / jnp.array(body.inertia)), rtol=1e-14)
    expected = -0.1 * sum(x[i] * dw[i] * jnp.cross(jnp.eye(3)[i], x) for i in range(3))
    assert np.allclose(body.noise_action(x, dw), expected, rtol=1e-14)
    names = set(body.observables())
    assert {"H", "C2", "pi1", "pi2", "pi3"} <= names


@pytest.mark.parametrize("cls, key, value", [(HeavyTop, "inertia", (1.0, 2.0)), (HeavyTop, "inertia", (1.0, -2.0, 1.0)),
                                             (HeavyTop, "inertia", (1.0, 0.0, 1.0)), (HeavyTop, "alpha", (1.0, 2.0)),
                                             (HeavyTop, "gravity_sign", 0.5), (RigidBody, "noise_kind", "cubic"),
                                             (RigidBody, "inertia", (0.0, 1.0, 1.0)), (SineEuler, "n", 4),
                                             (SineEuler, "n", 1), (SineEuler, "ic_kind", "foo"),
                                             (RigidBody, "noise_amplitude", -0.1), (SineEuler, "noise_amplitude", -1.0)])
def test_bad_parameters_are_refused(cls, key, value):
    with pytest.raises(ConfigError, match=f"^{key}="):
        cls(**{key: value}).check()


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
