import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import sgi_run
from sgi_run.config import build_system
from sgi_run.core.errors import ConfigError
from sgi_run.systems import VlasovLenardBernstein, VlasovLorentz
from sgi_run.systems.vlasov import cosine_perturbed_cdf, sample_cosine_perturbed

SAMPLES = 100_000


def draw(sampler, n=SAMPLES, seed=0):
    """n draws of ``sampler(key)``, one key each, as the engine does (vmap under jit)."""
    return np.asarray(jax.jit(jax.vmap(sampler))(jax.random.split(jax.random.key(seed), n)))


def mean_within(samples, expected, k=4.0):
    return abs(samples.mean() - expected) < k * samples.std() / np.sqrt(len(samples))


# --- the shared position sampler ---------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.25, -0.6, 1.0])
def test_position_sampler_has_the_cosine_density(eps):
    x = draw(lambda k: sample_cosine_perturbed(k, eps))
    assert x.min() >= 0 and x.max() <= 1
    assert stats.kstest(x, lambda t: cosine_perturbed_cdf(t, eps)).pvalue > 1e-3
    # Histogram against the density: chi-square over 40 equal bins.
    edges = np.linspace(0, 1, 41)
    observed = np.histogram(x, edges)[0]
    expected = SAMPLES * np.diff(cosine_perturbed_cdf(edges, eps))
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # E[cos 2 pi X] = eps / 2.
    assert mean_within(np.cos(2 * np.pi * x), eps / 2)


# --- Lenard-Bernstein ------------------------------------------------------------------------------
@pytest.mark.parametrize("x,v", [(0.0, 0.0), (0.25, 0.0), (0.125, 1.5), (0.31, -2.0), (1.7, 0.4)])
def test_lb_force_sign_and_fields(x, v):
    """Kraus & Tyranowski (2021) Sec. 4.3.1, signs as resolved in docs/papers/kraus_tyranowski_2021.md: dV = (-E0 cos(4 pi X) - nu mu V) dt + sqrt(nu) D dW."""
    s = VlasovLenardBernstein(nu=0.1, mu=2.0, D2=3.0, E0=3.0)
    z = jnp.array([x, v])
    assert np.allclose(s.drift(z), [v, -3.0 * np.cos(4 * np.pi * x) - 0.1 * 2.0 * v], rtol=1e-13, atol=1e-14)
    assert np.allclose(s.noise_fields(z), [[0.0, np.sqrt(0.1 * 3.0)]], rtol=1e-14)
    assert np.allclose(s.ito_drift(z), s.drift(z), rtol=1e-14)   # additive noise
    assert float(s.energy(z)) == pytest.approx(0.5 * v**2 + 3.0 / (4 * np.pi) * np.sin(4 * np.pi * x))


def test_lb_acceleration_at_x0_is_minus_E0():
    """At x = 0 the field is E = E0 and the acceleration is -E(X) = +phi'(X) = -E0, not +E0."""
    assert float(VlasovLenardBernstein().drift(jnp.array([0.0, 0.0]))[1]) == pytest.approx(-3.0)


def test_lb_ergodic_values():
    """(4.13) and Sec. 4.3.1 numbers (signs as in docs/papers/kraus_tyranowski_2021.md)."""
    s = VlasovLenardBernstein()
    assert s.ergodic_energy() == pytest.approx(0.4717045, abs=1e-7)
    assert s.ergodic_mean("sin4pix") == pytest.approx(-0.1185238, abs=1e-7)
    assert s.ergodic_mean("v") == 0.0 and s.ergodic_mean("x") is None
    assert s.reference_mean("H") is None   # only the limit is known
    assert VlasovLenardBernstein(nu=0.0).ergodic_energy() is None


def test_lb_ergodic_energy_is_the_gibbs_mean_of_h():
    """Bessel closed form against direct quadrature of H against the Gibbs marginals (4.10)."""
    s = VlasovLenardBernstein(mu=1.3, D2=1.7, E0=5.0)
    kinetic = integrate.quad(lambda v: 0.5 * v * v * s.gibbs_density_v(v), -np.inf, np.inf)[0]
    potential = integrate.quad(lambda x: s.kappa * np.sin(4 * np.pi * x) * s.gibbs_density_x(x), 0, 1)[0]
    assert s.ergodic_energy() == pytest.approx(kinetic + potential, rel=1e-10)


def test_lb_gibbs_marginals():
    s = VlasovLenardBernstein()
    assert integrate.quad(s.gibbs_density_x, 0, 1)[0] == pytest.approx(1, rel=1e-10)
    assert integrate.quad(s.gibbs_density_v, -np.inf, np.inf)[0] == pytest.approx(1, rel=1e-10)
    x = np.linspace(0, 1, 4001)
    assert s.gibbs_density_x(x).max() == pytest.approx(1.25174, abs=1e-5)   # at sin 4 pi x = -1
    assert s.gibbs_density_x(x).min() == pytest.approx(0.77652, abs=1e-5)
    assert s.gibbs_density_v(0.0) == pytest.approx(1 / np.sqrt(2 * np.pi))  # N(0, D^2 / 2 mu) = N(0, 1)


def test_lb_initial_mean_energy():
    """Kraus & Tyranowski (2021) Sec. 4.3.1, (4.12): E(H)(0) = (1 + a(sigma^2 + v0^2)) / (2(1 + a)) = 3.041667."""
    assert VlasovLenardBernstein().initial_mean_energy() == pytest.approx(73 / 24, rel=1e-10)
    assert VlasovLenardBernstein(a=0.0, E0=0.0).initial_mean_energy() == pytest.approx(0.5, rel=1e-10)


@pytest.mark.slow
def test_lb_initial_sampler_against_4_12():
    s = VlasovLenardBernstein()
    z = draw(s.initial_state)
    x, v = z[:, 0], z[:, 1]
    assert stats.kstest(x, lambda t: cosine_perturbed_cdf(t, s.epsilon)).pvalue > 1e-3
    mix_cdf = lambda t: (stats.norm.cdf(t) + s.a * stats.norm.cdf(t, s.v0, s.sigma)) / (1 + s.a)
    assert stats.kstest(v, mix_cdf).pvalue > 1e-3
    assert mean_within(v, s.a * s.v0 / (1 + s.a))
    assert mean_within(v > 2.0, s.a / (1 + s.a) * stats.norm.sf(2.0, s.v0, s.sigma) + stats.norm.sf(2.0) / (1 + s.a))
    assert abs(np.corrcoef(x, v)[0, 1]) < 4 / np.sqrt(SAMPLES)   # independent
    assert mean_within(np.asarray(jax.vmap(s.energy)(z)), s.initial_mean_energy())


def test_lb_parameters_are_checked():
    for key, bad in [("D2", -2.0), ("mu", 0.0), ("epsilon", 1.5), ("sigma", 0.0), ("a", -0.1)]:
        with pytest.raises(ConfigError, match=f"system.{key}"):
            build_system({"name": "vlasov_lenard_bernstein", key: bad})


# --- Lorentz ------------------------------------------------------------------------------------------
def random_states(n=20, seed=3):
    return jax.random.normal(jax.random.key(seed), (n, 4)) * jnp.array([0.7, 0.7, 2.0, 2.0])


def test_lorentz_fields_match_4_15():
    s = VlasovLorentz(nu=0.02, E0=2.0)
    z = random_states()
    drift, noise, ito = (np.asarray(jax.jit(jax.vmap(f))(z)) for f in (s.drift, s.noise_fields, s.ito_drift))
    x, y, vx, vy = np.asarray(z).T
    c = np.sqrt(2 * 0.02)
    dphi = -2.0 * np.stack([np.cos(4 * np.pi * x) * np.sin(4 * np.pi * y),
                            np.sin(4 * np.pi * x) * np.cos(4 * np.pi * y)], axis=1)
    v = np.stack([vx, vy], axis=1)
    assert np.allclose(drift, np.hstack([v, dphi]), rtol=1e-12, atol=1e-13)
    assert np.allclose(noise[:, 0], np.stack([0 * x, 0 * x, c * vy, -c * vx], axis=1), rtol=1e-14)
    # Kraus & Tyranowski (2021) Sec. 4.3.2, Ito form (2.1)-(2.2): Ito drift in the p-rows is grad phi - nu V.
    assert np.allclose(ito, np.hstack([v, dphi - 0.02 * v]), rtol=1e-12, atol=1e-13)


def test_lorentz_noise_and_drift_are_tangent_to_energy_levels():
    """Kraus & Tyranowski (2021) (4.15)-(4.16), the misprint in (4.16) corrected: grad H . Y = 0 identically (fails with the paper's misprinted f)."""
    s = VlasovLorentz()
    tangency = jax.jit(jax.vmap(lambda z: jax.grad(s.energy)(z) @ jnp.stack([s.noise_fields(z)[0], s.drift(z)], 1)))
    along_noise, along_drift = np.asarray(tangency(random_states())).T
    assert np.abs(along_noise).max() < 1e-14
    assert np.abs(along_drift).max() < 1e-12


def test_lorentz_mean_energy_is_one_and_constant():
    s = VlasovLorentz()
    assert s.initial_mean_energy() == pytest.approx(1.0, abs=1e-10)
    assert np.allclose(s.reference_mean("H")(np.array([0.0, 10.0, 1e4])), 1.0, atol=1e-10)
    assert s.reference_mean("vx") is None


@pytest.mark.slow
def test_lorentz_initial_sampler_against_4_18():
    s = VlasovLorentz(eps1=0.25, eps2=-0.5)
    z = draw(s.initial_state, seed=1)
    for column, eps in [(0, 0.25), (1, -0.5)]:
        assert stats.kstest(z[:, column], lambda t: cosine_perturbed_cdf(t, eps)).pvalue > 1e-3
    for column in (2, 3):
        assert stats.kstest(z[:, column], stats.norm.cdf).pvalue > 1e-3
    assert abs(np.corrcoef(z.T)[np.triu_indices(4, 1)]).max() < 4 / np.sqrt(SAMPLES)
    assert mean_within(np.asarray(jax.vmap(s.energy)(z)), s.initial_mean_energy())


def test_lorentz_parameters_are_checked():
    with pytest.raises(ConfigError, match="system.eps2"):
        build_system({"name": "vlasov_lorentz", "eps2": -1.2})
    with pytest.raises(ConfigError, match="system.nu"):
        build_system({"name": "vlasov_lorentz", "nu": -0.1})


# --- end to end ---------------------------------------------------------------------------------------
RUN = ["integrator=midpoint", "plan.dt=0.05", "plan.T=1", "plan.output_dt=0.5", "plan.paths=200"]


@pytest.mark.slow
def test_lb_runs_end_to_end(runs_root):
    cfg = sgi_run.compose(runs_root + ["system=vlasov_lenard_bernstein", "plan.observables=[H,sin4pix]"] + RUN)
    result = sgi_run.run(cfg)
    ens = result.ensemble
    assert list(ens.observables["H"]["count"]) == [200, 200, 200]
    assert abs(ens.mean("H")[0] - VlasovLenardBernstein().initial_mean_energy()) < 4 * ens.sem("H")[0]
    assert set(ens.paths) == {"x", "v", "H", "sin4pix"}
    assert np.all(np.isfinite(ens.mean("sin4pix")))


@pytest.mark.slow
def test_lorentz_runs_end_to_end(runs_root):
    result = sgi_run.run(sgi_run.compose(runs_root + ["system=vlasov_lorentz"] + RUN))
    ens = result.ensemble
    assert list(ens.observables["H"]["count"]) == [200, 200, 200]
    assert abs(ens.mean("H")[0] - 1.0) < 4 * ens.sem("H")[0]
    assert {r["observable"]: r for r in result.summary}["H"]["reference"] == pytest.approx(1.0)
    assert set(ens.paths) == {"x", "y", "vx", "vy", "H"}


@pytest.mark.slow
def test_lorentz_midpoint_nearly_conserves_h_along_paths(runs_root):
    """Midpoint is exact for the quadratic kinetic part the noise rotates; only the potential gives
    an O(dt^2) bounded error (about 1e-3 at dt = 0.01, 3e-2 at dt = 0.05). With the misprinted f,
    H would wander by ~sqrt(2 nu t) |V|^2 ~ 0.3."""
    cfg = sgi_run.compose(runs_root + ["system=vlasov_lorentz", "integrator=midpoint", "plan.dt=0.01",
                                       "plan.T=5", "plan.output_dt=0.5", "plan.paths=10", "plan.keep_paths=10"])
    h = sgi_run.run(cfg).ensemble.paths["H"]
    assert h.shape == (10, 11)
    assert np.abs(h - h[:, :1]).max() < 3e-3


@pytest.mark.slow
@pytest.mark.parametrize("name", ["midpoint", "dirk", "stormer_verlet"])
def test_lorentz_without_field_lda_methods_conserve_speed_to_round_off(name, make_integrator):
    """Kraus & Tyranowski (2021) Figure 4.10, as a unit test: with E0 = 0 the noise only rotates V, and the midpoint rule
    (so DIRK, its two substeps) preserves quadratic invariants; SV's velocity substeps are Cayley
    rotations. |V|^2 is kept to round-off for any dW, even large ones."""
    system, integrator = VlasovLorentz(E0=0.0), make_integrator(name)
    z = jnp.array([0.3, 0.7, 1.2, -0.4])
    for dw in (0.05, -0.8, 2.5):
        z, _ = integrator.step(system, z, 0.1, jnp.array([[dw]]))
        assert float(z[2] ** 2 + z[3] ** 2) == pytest.approx(1.2**2 + 0.4**2, rel=1e-13)


def test_lb_initial_means_by_quadrature():
    """Kraus & Tyranowski (2021) Figure 4.5: the sampler's targets, in closed form for the paper's parameters."""
    lb = VlasovLenardBernstein()
    a, v0, s = lb.a, lb.v0, lb.sigma
    assert lb.initial_mean("v") == pytest.approx(a * v0 / (1 + a), rel=1e-10)
    assert lb.initial_mean("v_sq") == pytest.approx((1 + a * (s**2 + v0**2)) / (1 + a), rel=1e-10)
    assert lb.initial_mean("cos2pix") == pytest.approx(lb.epsilon / 2, rel=1e-10)
    assert lb.initial_mean("H") == pytest.approx(3.041667, abs=1e-6)
    assert lb.initial_mean("no_such") is None
    assert lb.ergodic_mean("v_sq") == pytest.approx(1.0)
    assert lb.initial_cdf_x(1.0) == pytest.approx(1.0) and lb.initial_cdf_x(0.0) == 0.0
