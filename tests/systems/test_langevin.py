"""Langevin systems of Bou-Rabee & Owhadi (2007), (1.1), (2.1), (2.2): parameters, physics, Boltzmann-Gibbs means,
and the harmonic oracle's stationary covariances."""
import dataclasses
import math

import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.config import build_system
from sgi_run.core.errors import ConfigError
from sgi_run.systems import (SYSTEMS, CirclePendulum, ConstrainedLangevinSystem, LangevinDoubleWell, LangevinHarmonic,
                             SphericalPendulum)


def test_registered_with_their_config_names():
    assert SYSTEMS["langevin_double_well"] is LangevinDoubleWell
    assert SYSTEMS["langevin_harmonic"] is LangevinHarmonic
    assert SYSTEMS["spherical_pendulum"] is SphericalPendulum
    assert SYSTEMS["circle_pendulum"] is CirclePendulum


@pytest.mark.parametrize("c,beta", [(1.0, 1.0), (10.0, 1.0), (0.3, 2.5)])
def test_sigma_is_derived_from_c_and_beta(c, beta):
    """Bou-Rabee & Owhadi (2007) (1.1): beta = 2c / sigma^2; the noise field's p-row is sigma e_i."""
    s = LangevinDoubleWell(c=c, beta=beta)
    assert s.sigma == pytest.approx(math.sqrt(2 * c / beta), rel=1e-15)
    assert 2 * s.c / s.sigma**2 == pytest.approx(beta, rel=1e-14)
    assert np.allclose(s.noise_fields(jnp.array([0.4, -0.7])), [[0.0, s.sigma]], rtol=1e-15)


def test_double_well_fields_match_eq_2_1():
    s = LangevinDoubleWell(c=0.7)
    q, p = 0.4, -1.3
    assert np.allclose(s.drift(jnp.array([q, p])), [p, q - q**3 - 0.7 * p], rtol=1e-14)
    assert np.allclose(s.ito_drift(jnp.array([q, p])), s.drift(jnp.array([q, p])), rtol=1e-14)  # additive
    assert float(s.energy(jnp.array([q, p]))) == pytest.approx(p**2 / 2 + q**4 / 4 - q**2 / 2, rel=1e-14)


def test_mass_enters_kinetic_energy_and_friction():
    s = LangevinHarmonic(mass=2.0, c=0.5, omega=1.5)
    z = jnp.array([0.3, 0.8])
    assert np.allclose(s.drift(z), [0.8 / 2, -1.5**2 * 0.3 - 0.5 * 0.8 / 2], rtol=1e-14)


def test_observables_and_initial_values():
    s = LangevinDoubleWell()
    z0 = s.initial_state(None)
    obs = s.observables()
    assert {"H", "two_H", "kinetic_temperature", "q", "p"} <= set(obs)
    assert float(obs["two_H"](z0)) == -0.5                # Figure 2.1 check F1-7: 2H(0) = -0.5 exactly
    z = jnp.array([0.2, 1.5])
    assert float(obs["kinetic_temperature"](z)) == pytest.approx(1.5**2)
    pend = SphericalPendulum()
    assert float(pend.observables()["two_H"](pend.initial_state(None))) == -2.0   # Figure 2.2 check F2-8


def test_double_well_equilibrium_by_quadrature():
    """Bou-Rabee & Owhadi (2007) (2.1), Figure 2.1 check F1-1: 2<H> = 0.979101351756 at beta = 1; also the identity <q^4> - <q^2> = 1/beta."""
    s = LangevinDoubleWell(beta=1.0)
    assert s.equilibrium_mean("two_H") == pytest.approx(0.979101351756, abs=1e-6)
    assert s.equilibrium_mean("two_H") == pytest.approx(0.979101351756, abs=1e-11)
    assert s.ergodic_energy() == pytest.approx(s.equilibrium_mean("two_H") / 2, rel=1e-15)
    assert s.equilibrium_mean("kinetic_temperature") == 1.0
    # Independent route: 2<H> = 3/(2 beta) - <q^2>/2 for this U (integration by parts).
    from scipy import integrate
    for beta in (0.5, 1.0, 2.0):
        w = lambda q: np.exp(-beta * (q**4 / 4 - q**2 / 2))
        q2 = integrate.quad(lambda q: q * q * w(q), -np.inf, np.inf)[0] / integrate.quad(w, -np.inf, np.inf)[0]
        assert LangevinDoubleWell(beta=beta).equilibrium_mean("two_H") == pytest.approx(1.5 / beta - q2 / 2, rel=1e-10)


def test_double_well_overdamped_svia_limit_has_the_positions_at_twice_beta():
    """The project's analysis (docs/papers/bou_rabee_owhadi.md; not in the paper): SVIA as c -> oo is Euler-Maruyama at inverse temperature 2 beta for q, the momentum at 1/beta:
    2<H> = 1/beta + 2<U>_{2 beta}, 0.803 at beta = 1 (the SVIA diagnostic's limit line); <U>_{2 beta} by the
    integration-by-parts route of the test above, 2<U> = 1/(2 beta') - <q^2>/2 at beta' = 2 beta."""
    from scipy import integrate
    for beta in (0.5, 1.0):
        w = lambda q: np.exp(-2 * beta * (q**4 / 4 - q**2 / 2))
        q2 = integrate.quad(lambda q: q * q * w(q), -np.inf, np.inf)[0] / integrate.quad(w, -np.inf, np.inf)[0]
        limit = LangevinDoubleWell(beta=beta).overdamped_svia_mean("two_H")
        assert limit == pytest.approx(1 / beta + 1 / (4 * beta) - q2 / 2, rel=1e-10)
    assert LangevinDoubleWell(beta=1.0).overdamped_svia_mean("two_H") == pytest.approx(0.8033, abs=1e-4)
    assert LangevinDoubleWell(beta=1.0).overdamped_svia_mean("q") is None


def test_pendulum_equilibrium_matches_closed_form():
    """Bou-Rabee & Owhadi (2007) (2.2), Figure 2.2 check F2-1: 2<H> = 4/beta - 2 coth(beta) = 1.373929429001 at beta = 1 (quadrature in code)."""
    for beta in (0.5, 1.0, 3.0):
        s = SphericalPendulum(beta=beta)
        assert s.equilibrium_mean("two_H") == pytest.approx(4 / beta - 2 / math.tanh(beta), rel=1e-12)
    assert SphericalPendulum().equilibrium_mean("two_H") == pytest.approx(1.373929429001, abs=1e-6)
    assert SphericalPendulum().mean_potential() == pytest.approx(-0.313035285499, abs=1e-11)
    assert SphericalPendulum().equilibrium_mean("kinetic_temperature") == 1.0


def test_equilibrium_is_none_where_unknown():
    assert LangevinDoubleWell().equilibrium_mean("q") is None
    assert LangevinDoubleWell(c=0.0).equilibrium_mean("H") is None       # no noise: not ergodic
    assert LangevinHarmonic(beta=2.0, omega=2.0).equilibrium_mean("q_sq") == pytest.approx(1 / 8)


def test_pendulum_energy_uses_the_tangent_momentum():
    """Pitfall 10: a normal momentum component carries no energy."""
    s = SphericalPendulum()
    q = jnp.array([0.0, 0.6, -0.8])
    tangent = jnp.array([1.0, 0.0, 0.0])
    assert float(s.energy(jnp.concatenate([q, tangent + 5.0 * q]))) == pytest.approx(0.5 - 0.8, rel=1e-14)
    assert s.noises == 3 and s.structure == "constrained" and s.kinetic_dimension == 2


# --- general constraints (paper eq. 6.1-6.3) ----------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class GeneralSphere(ConstrainedLangevinSystem):
    """The unit sphere through the general machinery only (no closed forms)."""
    dof = 3
    noises = 3

    def constraint(self, q):
        return jnp.atleast_1d(q @ q - 1)

    def potential(self, q):
        return q[2]


def test_general_projection_is_the_sphere_formula_for_a_uniform_mass():
    q = jnp.array([0.0, 0.6, -0.8])
    p = jnp.array([0.7, -0.2, 1.9])
    for mass in (1.0, 2.5):
        general = GeneralSphere(mass=mass).tangent_momentum(q, p)
        assert np.allclose(general, SphericalPendulum(mass=mass).tangent_momentum(q, p), rtol=0, atol=1e-15)
        assert abs(float(general @ q)) <= 1e-15
    assert GeneralSphere().kinetic_dimension == 2 and CirclePendulum().kinetic_dimension == 1


def test_circle_projection_is_m_inverse_orthogonal_and_idempotent():
    """RATTLE (6.3): p_T = p + G^T nu with G M^-1 p_T = 0, for both constraints and a diagonal M."""
    s = CirclePendulum(mass=(1.0, 3.0, 2.0))
    q = jnp.array([0.6, 0.8, 0.0])
    p = jnp.array([1.3, -0.4, 0.9])
    p_t = s.tangent_momentum(q, p)
    G = s.constraint_jacobian(q)
    assert G.shape == (2, 3)
    assert np.allclose((G / s.mass_vector) @ p_t, 0.0, atol=1e-15)
    assert np.allclose(s.tangent_momentum(q, p_t), p_t, rtol=0, atol=1e-15)
    residual_of_normal = np.linalg.lstsq(np.asarray(G.T), np.asarray(p - p_t), rcond=None)[1]
    assert float(residual_of_normal.sum()) <= 1e-28      # p - p_T lies in the span of the gradients


def test_circle_equilibrium_by_quadrature():
    """Uniform mass: <q2> = -I1(beta)/I0(beta); a diagonal mass weights the circle by its metric
    sqrt(m1 sin^2 + m2 cos^2), so it moves the configurational law (and m3 does not)."""
    from scipy.special import i0, i1
    for beta in (0.5, 1.0, 3.0):
        s = CirclePendulum(beta=beta)
        assert s.mean_potential() == pytest.approx(-i1(beta) / i0(beta), abs=1e-12)
        assert s.equilibrium_mean("two_H") == pytest.approx(1 / beta - 2 * i1(beta) / i0(beta), abs=1e-12)
    assert CirclePendulum().equilibrium_mean("two_H") == pytest.approx(0.107220068207, abs=1e-11)
    heavy_sides = CirclePendulum(mass=(1.0, 3.0, 2.0)).mean_potential()
    assert heavy_sides == pytest.approx(CirclePendulum(mass=(1.0, 3.0, 7.0)).mean_potential(), abs=1e-14)
    assert heavy_sides > CirclePendulum().mean_potential() + 0.04


@pytest.mark.slow
def test_general_constraint_residual_of_a_snapshot():
    """max(|g(q)|, |G M^-1 p|) per path: on the manifold with a tangent momentum, off the plane by
    1e-9, and with a momentum that is tangent only for the wrong mass."""
    s = CirclePendulum(mass=(1.0, 3.0, 2.0))
    states = {"q1": np.array([0.6, 0.6, 0.6]), "q2": np.array([0.8, 0.8, 0.8]), "q3": np.array([0.0, 1e-9, 0.0]),
              "p1": np.array([-0.8, -0.8, -0.8]), "p2": np.array([1.8, 1.8, 0.6]), "p3": np.zeros(3)}
    residual = s.constraint_residual(states)
    assert residual[0] <= 1e-15
    assert residual[1] == pytest.approx(1e-9, rel=1e-6)
    assert residual[2] == pytest.approx(0.64, rel=1e-12)   # 2 q . M^-1 p = 2 (-0.48 + 0.16)


@pytest.mark.parametrize("name,key,value", [
    ("langevin_double_well", "c", -0.1),
    ("langevin_double_well", "beta", 0.0),
    ("langevin_double_well", "beta", -1.0),
    ("langevin_double_well", "mass", -1.0),
    ("langevin_harmonic", "omega", 0.0),
    ("spherical_pendulum", "q0", [0.0, 0.0, -2.0]),
    ("spherical_pendulum", "p0", [0.0, 0.0, 1.0]),
    ("spherical_pendulum", "mass", [1.0, 2.0, 1.0]),
    ("circle_pendulum", "q0", [0.0, -1.0, 0.1]),
    ("circle_pendulum", "p0", [0.0, 0.0, 1.0]),
    ("circle_pendulum", "mass", [1.0, 2.0]),
    ("spherical_pendulum", "q0", [0.0, 1.0]),
])
def test_bad_parameters_are_refused_with_one_line(name, key, value):
    with pytest.raises(ConfigError, match=f"system.{key}") as err:
        build_system({"name": name, key: value})
    assert "\n" not in str(err.value)


def test_lists_from_yaml_become_float_tuples():
    s = build_system({"name": "spherical_pendulum", "q0": [0, 0, -1], "p0": [1, 0, 0]})
    assert s.q0 == (0.0, 0.0, -1.0) and s.initial_state(None).dtype == jnp.float64
    hash(s)   # still a hashable frozen dataclass


# --- the harmonic oracle (not in the paper) -----------------------------------------------------------------
@pytest.mark.parametrize("scheme", ["svia", "svib", "svic"])
@pytest.mark.parametrize("c,h,beta,omega", [(1.0, 0.25, 1.0, 1.0), (0.3, 0.1, 2.0, 1.5), (3.0, 0.2, 0.5, 0.7)])
def test_lyapunov_covariance_matches_the_closed_forms(scheme, c, h, beta, omega):
    s = LangevinHarmonic(c=c, beta=beta, omega=omega)
    cov = s.splitting_stationary_covariance(scheme, h)
    closed = s.splitting_stationary_moments(scheme, h)
    assert np.allclose([cov[0, 0], cov[1, 1], cov[0, 1]], [closed["q_sq"], closed["p_sq"], closed["qp"]],
                       rtol=1e-12, atol=1e-14)


def test_spec_examples_of_stationary_moments():
    """Harmonic-oracle examples at beta = omega = 1, h = 0.25: (<q^2>, <p^2>)."""
    expected = {1.0: {"svia": (0.9053, 1.0179), "svib": (1.0182, 1.1636), "svic": (1.1579, 1.0139)},
                10.0: {"svia": (0.5571, 1.0297), "svic": (6.607, 1.0024)}}
    for c, table in expected.items():
        s = LangevinHarmonic(c=c)
        for scheme, (q2, p2) in table.items():
            cov = s.splitting_stationary_covariance(scheme, 0.25)
            assert (cov[0, 0], cov[1, 1]) == pytest.approx((q2, p2), abs=6e-4)
    assert LangevinHarmonic(c=10.0).splitting_stationary_covariance("svib", 0.25) is None   # ch > 2: unstable
