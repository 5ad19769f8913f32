"""Langevin splitting integrators SVIA/B/C and CSVIA/B/C (Bou-Rabee & Owhadi 2007, (4.1), (4.2), Sec. 6, Figs 2.1, 2.2)."""
import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.polynomial.hermite_e import hermegauss

import sgi_run
from sgi_run.core.errors import ConfigError
from sgi_run.integrators.langevin_splitting import LangevinSplitting
from sgi_run.systems import CirclePendulum, LangevinDoubleWell, LangevinHarmonic, SphericalPendulum
from sgi_run.systems.langevin import LangevinSystem

FLAT = ["svia", "svib", "svic"]
CONSTRAINED = ["csvia", "csvib", "csvic"]


@dataclasses.dataclass(frozen=True)
class CoupledWells(LangevinSystem):
    """Two coupled coordinates, so conformal symplecticity is a real 4x4 condition, not just det J."""
    dof = 2
    noises = 2

    def potential(self, q):
        return q[0] ** 4 / 4 - q[0] ** 2 / 2 + 0.5 * q[1] ** 2 + 0.3 * q[0] * q[1] + 0.1 * q[1] ** 4


@dataclasses.dataclass(frozen=True)
class FreeParticle(LangevinSystem):
    def potential(self, q):
        return 0.0 * jnp.sum(q)


def xi_of(eta, dt):
    """The engine's ``gaussian`` increments (1, m) for standard normals ``eta``."""
    return jnp.sqrt(dt) * jnp.atleast_1d(jnp.asarray(eta, dtype=jnp.float64))[None]


def conformal_factor(name, c, h):
    return 1 - c * h if name == "svib" else math.exp(-c * h)


# --- tableaux as data ---------------------------------------------------------------------------
def test_the_six_methods_differ_only_in_their_tableau(make_integrator):
    expected = {"svia": ("exact_ou", False, False), "svib": ("euler", False, False),
                "svic": ("exact_ou", True, False), "csvia": ("exact_ou", False, True),
                "csvib": ("euler", False, True), "csvic": ("exact_ou", True, True)}
    for name, (friction, damped, constrained) in expected.items():
        integrator = make_integrator(name)
        assert isinstance(integrator, LangevinSplitting) and integrator.noise_kind == "gaussian"
        t = integrator.tableau
        assert (t.friction, t.force_damped, t.constrained) == (friction, damped, constrained)
        assert max(abs(r) for r in t.conditions().values()) == 0.0


@pytest.mark.parametrize("tableau,key", [
    ({"friction": "exact", "force_damped": False, "constrained": False}, "friction"),
    ({"friction": "euler", "force_damped": "no", "constrained": False}, "force_damped"),
    ({"friction": "euler", "force_damped": False, "constrained": False, "gamma": 1}, "gamma"),
])
def test_a_bad_tableau_is_refused_with_one_line(make_integrator, tableau, key):
    with pytest.raises(ConfigError, match=f"integrator.tableau.{key}") as err:
        make_integrator("svia", tableau=tableau)
    assert "\n" not in str(err.value)


# --- flat schemes -----------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", FLAT)
@pytest.mark.parametrize("c,h", [(1.0, 0.25), (0.3, 0.1), (3.0, 0.5)])
def test_conformal_symplecticity_with_the_noise_fixed(make_integrator, name, c, h):
    """Bou-Rabee & Owhadi (2007) Thm 4.1/4.2, (1.3): J^T Jsym J = lambda Jsym, lambda = e^{-ch} (A, C), 1 - ch (B)."""
    integrator = make_integrator(name)
    system = CoupledWells(c=c)
    xi = xi_of([0.7, -1.2], h)
    z = jnp.array([0.4, -0.9, 1.1, 0.3])
    jac = jax.jacfwd(lambda z: integrator.step(system, z, h, xi)[0])(z)
    n = system.dof
    sym = np.block([[np.zeros((n, n)), np.eye(n)], [-np.eye(n), np.zeros((n, n))]])
    lam = conformal_factor(name, c, h)
    assert np.allclose(jac.T @ sym @ jac, lam * sym, rtol=0, atol=1e-14)
    assert float(jnp.linalg.det(jac)) == pytest.approx(lam**n, rel=1e-12)


def _gibbs_identity_sides(integrator, system, q, p, h, nodes=60):
    r"""Bou-Rabee & Owhadi (2007) Thm 5.2: the one-step density from e^{-beta H} at (q, p),
    E_eta[e^{-beta H}(Phi_eta^{-1}(q, p)) |det D Phi_eta^{-1}|], and e^{-beta H(qbar, p + h U'(qbar))}.
    Phi_eta^{-1} is read off the integrator's own step: q' = qbar + h p', and p' is affine in pbar."""
    beta = system.beta
    qbar = q - h * p
    x, w = hermegauss(nodes)
    w = w / math.sqrt(2 * math.pi)
    step = lambda zbar, eta: integrator.step(system, zbar, h, xi_of(eta, h))[0]

    @jax.vmap
    def at_node(eta):
        offset = step(jnp.array([qbar, 0.0]), eta)[1]
        slope = jax.jacfwd(lambda pb: step(jnp.array([qbar, pb]), eta)[1])(0.0)
        zbar = jnp.array([qbar, (p - offset) / slope])
        det = jnp.linalg.det(jax.jacfwd(lambda z: step(z, eta))(zbar))
        return zbar, step(zbar, eta), jnp.exp(-beta * system.energy(zbar)) / jnp.abs(det)

    _zbar, image, density = jax.jit(at_node)(jnp.asarray(x))
    assert np.allclose(image, np.tile([q, p], (nodes, 1)), rtol=1e-13, atol=1e-13)   # really the inverse
    lhs = float(w @ density)
    force = float(system.potential_force(jnp.array([qbar]))[0])
    rhs = math.exp(-beta * float(system.energy(jnp.array([qbar, p - h * force]))))
    return lhs, rhs


POINTS = [(0.3, 0.5), (1.2, -0.8), (-0.7, 1.1)]


@pytest.mark.slow
@pytest.mark.parametrize("c,h", [(1.0, 0.25), (0.3, 0.1)])
def test_one_step_gibbs_identity_holds_for_svia(make_integrator, c, h):
    system = LangevinDoubleWell(c=c)
    for q, p in POINTS:
        lhs, rhs = _gibbs_identity_sides(make_integrator("svia"), system, q, p, h)
        assert lhs == pytest.approx(rhs, rel=1e-12)


def test_one_step_gibbs_identity_fails_for_svic(make_integrator):
    """The regression check that A and C are not swapped (docs/papers/bou_rabee_owhadi.md)."""
    system = LangevinDoubleWell(c=1.0)
    errors = [abs(lhs / rhs - 1) for lhs, rhs in
              (_gibbs_identity_sides(make_integrator("svic"), system, q, p, 0.25) for q, p in POINTS)]
    assert max(errors) > 1e-2


@pytest.mark.slow
@pytest.mark.parametrize("name", FLAT)
@pytest.mark.parametrize("c,h", [(1.0, 0.25), (0.3, 0.1), (5.0, 0.3), (1e4, 0.25)])
def test_free_particle_stationary_momentum_variance(make_integrator, name, c, h):
    """Free particle (U = 0): p' = lambda p + s eta, read off the step; Var p = s^2 / (1 - lambda^2) is 1/beta
    for A and C at every h, and 2/(beta (2 - ch)) for B (no stationary law for ch > 2)."""
    integrator, system = make_integrator(name), FreeParticle(c=c, beta=2.0)
    p_next = lambda p, eta: integrator.step(system, jnp.array([0.3, p]), h, xi_of(eta, h))[0][1]
    lam = float(jax.grad(p_next, argnums=0)(0.0, 0.0))
    s = float(jax.grad(p_next, argnums=1)(0.0, 0.0))
    if name == "svib":
        if c * h >= 2:
            assert abs(lam) >= 1
            return
        expected = 2 / (system.beta * (2 - c * h))
    else:
        expected = 1 / system.beta
    assert s**2 / (1 - lam**2) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name", ["svia", "svic"])
def test_large_friction_neither_overflows_nor_loses_the_noise(make_integrator, name):
    """The schemes in expanded form (expm1): ch = 2500 is fine (e^{ch} would overflow): p' = h F (A) or 0 (C), plus eta/sqrt(beta)."""
    system = LangevinDoubleWell(c=1e4)
    z, _ = make_integrator(name).step(system, jnp.array([0.5, 3.0]), 0.25, xi_of(0.8, 0.25))
    expected_p = 0.8 + (0.25 * (0.5 - 0.5**3) if name == "svia" else 0.0)
    assert np.allclose(z, [0.5 + 0.25 * expected_p, expected_p], rtol=1e-14)


def test_svia_without_friction_is_symplectic_euler(make_integrator):
    """c = 0 (the deterministic map (1.4)/(5.4)) gives a = 1 and no noise."""
    system, h = LangevinDoubleWell(c=0.0), 0.25
    z, iterations = make_integrator("svia").step(system, jnp.array([0.5, 0.2]), h, xi_of(1.7, h))
    p = 0.2 + h * (0.5 - 0.5**3)
    assert np.allclose(z, [0.5 + h * p, p], rtol=1e-15) and int(iterations) == 0


@pytest.mark.slow
@pytest.mark.parametrize("name", FLAT)
def test_step_is_the_oracles_linear_map_on_the_harmonic_oscillator(make_integrator, name):
    """The system's (A, b) (written from the paper's (4.1), (4.2)) is the integrator's step, mass 1 and mass 2."""
    for mass in (1.0, 2.0):
        system, h = LangevinHarmonic(c=0.7, beta=1.3, omega=1.4, mass=mass), 0.2
        step = lambda z, eta: make_integrator(name).step(system, z, h, xi_of(eta, h))[0]
        A, b = system.splitting_linear_map(name, h)
        assert np.allclose(jax.jacfwd(step)(jnp.zeros(2), 0.0), A, rtol=1e-14, atol=1e-15)
        assert np.allclose(jax.jacfwd(step, argnums=1)(jnp.zeros(2), 0.0), b, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("name", FLAT)
def test_harmonic_stationary_moments_by_monte_carlo(name, runs_root):
    """4000 paths, 200 steps of h = 0.25 at c = 1 (relaxed: e^{-t/2} ~ 1e-11); each
    second moment within 4 SE of the scheme's closed form (the harmonic oracle)."""
    cfg = sgi_run.compose(runs_root + ["system=langevin_harmonic", f"integrator={name}", "plan.dt=0.25",
                                       "plan.T=50", "plan.output_dt=50", "plan.paths=4000", "plan.keep_paths=0",
                                       "plan.observables=[q_sq,p_sq,qp]"])
    ens = sgi_run.run(cfg).ensemble
    closed = LangevinHarmonic().splitting_stationary_moments(name, 0.25)
    for key, value in closed.items():
        mean, se = ens.mean(key)[-1], ens.sem(key)[-1]
        assert abs(mean - value) < 4 * se, (key, mean, se, value)
    if name == "svic":   # the test can tell a scheme from the exact law: C's <q^2> = 1.158 vs 1
        assert abs(ens.mean("q_sq")[-1] - 1.0) > 4 * ens.sem("q_sq")[-1]


# --- constrained schemes ------------------------------------------------------------------------
def great_circle_step(q, p_star, h):
    """The closed form of the constrained step (Bou-Rabee & Owhadi 2007 Sec. 6): v the tangent part of p*, kappa = sqrt(1 - h^2 |v|^2),
    q' = kappa q + h v, p' = kappa v - h |v|^2 q."""
    v = p_star - (p_star @ q) * q
    kappa = jnp.sqrt(1 - h**2 * (v @ v))
    return jnp.concatenate([kappa * q + h * v, kappa * v - h * (v @ v) * q])


def _random_tangent_states(key, count, speed=1.5):
    kq, kp = jax.random.split(key)
    q = jax.random.normal(kq, (count, 3))
    q = q / jnp.linalg.norm(q, axis=1, keepdims=True)
    p = speed * jax.random.normal(kp, (count, 3))
    p = p - jnp.sum(p * q, axis=1, keepdims=True) * q
    return q, p


@pytest.mark.slow
@pytest.mark.parametrize("name", CONSTRAINED)
def test_quadratic_shake_equals_the_great_circle_closed_form(make_integrator, name):
    integrator, system, h = make_integrator(name), SphericalPendulum(c=1.0), 0.1
    q, p = _random_tangent_states(jax.random.key(3), 50)
    eta = jax.random.normal(jax.random.key(4), (50, 3))
    for qi, pi, ei in zip(q, p, eta):
        z, iterations = integrator.step(system, jnp.concatenate([qi, pi]), h, xi_of(ei, h))
        p_star = integrator.momentum_update(system, qi, pi, h, xi_of(ei, h))
        assert np.allclose(z, great_circle_step(qi, p_star, h), rtol=0, atol=1e-13)
        v = p_star - (p_star @ qi) * qi
        assert float(jnp.linalg.norm(z[3:])) == pytest.approx(float(jnp.linalg.norm(v)), rel=1e-13)
        assert int(iterations) == 0


def test_normal_noise_has_no_effect(make_integrator):
    """Bou-Rabee & Owhadi (2007) Sec. 6: only the tangent part of p* matters, so a noise along q changes nothing."""
    integrator, system, h = make_integrator("csvia"), SphericalPendulum(), 0.1
    q, p = jnp.array([0.0, 0.6, -0.8]), jnp.array([0.5, 0.0, 0.0])
    eta = jnp.array([0.3, -1.0, 0.4])
    z1 = integrator.step(system, jnp.concatenate([q, p]), h, xi_of(eta, h))[0]
    z2 = integrator.step(system, jnp.concatenate([q, p]), h, xi_of(eta + 2.5 * q, h))[0]
    assert np.allclose(z1, z2, rtol=0, atol=1e-14)


@pytest.mark.parametrize("name", CONSTRAINED)
def test_constraints_hold_to_round_off_over_many_steps(make_integrator, name):
    """Figure 2.2 check F2-2: ||q| - 1| and |q.p| <= 1e-12 at every one of 2000 steps (h = 0.1, c = 1)."""
    integrator, system, h, steps, paths = make_integrator(name), SphericalPendulum(c=1.0), 0.1, 2000, 16
    z0 = jnp.tile(system.initial_state(None), (paths, 1))
    keys = jax.random.split(jax.random.key(7), steps)
    step_all = jax.vmap(lambda z, xi: integrator.step(system, z, h, xi)[0])

    def one(z, key):
        z = step_all(z, jnp.sqrt(h) * jax.random.normal(key, (paths, 1, 3)))
        q, p = z[:, :3], z[:, 3:]
        return z, (jnp.max(jnp.abs(jnp.linalg.norm(q, axis=1) - 1)), jnp.max(jnp.abs(jnp.sum(q * p, axis=1))))

    z, (norm_err, tangent_err) = jax.jit(lambda z: jax.lax.scan(one, z, keys))(z0)
    assert bool(jnp.all(jnp.isfinite(z)))
    assert float(norm_err.max()) <= 1e-12 and float(tangent_err.max()) <= 1e-12


def test_shake_failure_is_a_nan_path_the_engine_counts(runs_root):
    """SHAKE failure (the project's resolution, docs/papers/bou_rabee_owhadi.md): h|v| = 0.1 * 100 > 1 has no real SHAKE root; the paths become NaN, are
    counted as non-finite and leave the statistics, and nothing raises."""
    cfg = sgi_run.compose(runs_root + ["system=spherical_pendulum", "integrator=csvia", "system.p0=[0,100,0]",
                                       "plan.dt=0.1", "plan.T=0.2", "plan.output_dt=0.1", "plan.paths=20",
                                       "plan.keep_paths=0", "plan.observables=[two_H]"])
    ens = sgi_run.run(cfg).ensemble
    assert list(ens.diagnostics["nonfinite_paths"]) == [0, 20, 20]
    assert list(ens.observables["two_H"]["count"]) == [20, 0, 0]


# --- SHAKE by Newton on any constraint (paper eq. 6.2-6.3) ------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", CONSTRAINED)
@pytest.mark.parametrize("mass", [1.0, 2.5])
def test_newton_shake_equals_the_closed_form_on_the_sphere(make_integrator, name, mass):
    closed, by_newton = make_integrator(name), make_integrator(name, shake="newton")
    system, h = SphericalPendulum(c=1.0, mass=mass), 0.1
    q, p = _random_tangent_states(jax.random.key(5), 30)
    z = jnp.concatenate([q, p], axis=1)
    xi = jnp.sqrt(h) * jax.random.normal(jax.random.key(6), (30, 1, 3))
    z_closed, no_iterations = jax.vmap(lambda z, xi: closed.step(system, z, h, xi))(z, xi)
    z_newton, iterations = jax.vmap(lambda z, xi: by_newton.step(system, z, h, xi))(z, xi)
    assert np.allclose(z_newton, z_closed, rtol=0, atol=1e-13)
    assert int(no_iterations.max()) == 0 and 1 <= int(iterations.min()) and int(iterations.max()) <= 6


@pytest.mark.parametrize("key,value", [("shake", "exact"), ("tol", 0.0), ("max_iter", 0), ("max_iter", 2.5)])
def test_bad_shake_options_are_refused(make_integrator, key, value):
    with pytest.raises(ConfigError, match=f"integrator.{key}") as err:
        make_integrator("csvia", **{key: value})
    assert "\n" not in str(err.value)


def test_newton_shake_without_a_solution_is_nan_after_max_iter(make_integrator):
    """h|v| = 10 > 1: the SHAKE equation has no real root, Newton cannot converge, the path is NaN."""
    by_newton, h = make_integrator("csvia", shake="newton", max_iter=20), 0.1
    z, iterations = by_newton.step(SphericalPendulum(c=0.0), jnp.array([0.0, 0.0, -1.0, 0.0, 100.0, 0.0]), h,
                                   xi_of(jnp.zeros(3), h))
    assert bool(jnp.all(jnp.isnan(z))) and int(iterations) == 20


@pytest.mark.parametrize("name", CONSTRAINED)
def test_two_constraints_and_a_mass_matrix_hold_to_round_off_over_many_steps(make_integrator, name):
    """The circle |q| = 1, q3 = 0 (k = 2) with M = diag(1, 3, 2): |g(q)| and |G M^-1 p| <= 1e-12 at
    every one of 2000 steps (h = 0.1, c = 1)."""
    integrator, h, steps, paths = make_integrator(name), 0.1, 2000, 16
    system = CirclePendulum(c=1.0, mass=(1.0, 3.0, 2.0))
    z0 = jnp.tile(system.initial_state(None), (paths, 1))
    keys = jax.random.split(jax.random.key(8), steps)
    step_all = jax.vmap(lambda z, xi: integrator.step(system, z, h, xi))

    def residual(z):
        q, p = system.split(z)
        hidden = (system.constraint_jacobian(q) / system.mass_vector) @ p
        return jnp.max(jnp.abs(jnp.concatenate([system.constraint(q), hidden])))

    def one(z, key):
        z, iterations = step_all(z, jnp.sqrt(h) * jax.random.normal(key, (paths, 1, 3)))
        return z, (jnp.max(jax.vmap(residual)(z)), jnp.max(iterations))

    z, (worst, iterations) = jax.jit(lambda z: jax.lax.scan(one, z, keys))(z0)
    assert bool(jnp.all(jnp.isfinite(z)))
    assert float(worst.max()) <= 1e-12
    assert 1 <= int(iterations.max()) <= 6


@pytest.mark.slow
def test_csvia_samples_the_circle_gibbs_measure_with_its_mass_metric(runs_root):
    """CSVIA with the Newton SHAKE on the circle with M = diag(1, 3, 2), c = 1, h = 0.025, from rest at
    the bottom: at t = 30, 40, 50, 60 <q2> is the mass-metric value -0.3969 (the uniform-mass value
    -0.4464 is 0.05 away) and the kinetic temperature is 1/beta. Band: CSVIA's O(ch) bias (0.02)
    plus 3 SE of the per-path time averages."""
    cfg = sgi_run.compose(runs_root + ["system=circle_pendulum", "integrator=csvia", "system.c=1.0",
                                       "system.mass=[1.0,3.0,2.0]", "plan.dt=0.025", "plan.T=60",
                                       "plan.output_dt=10", "plan.paths=4000", "plan.keep_paths=0",
                                       "plan.observables=[two_H]", "plan.snapshots=[30,40,50,60]"])
    run = sgi_run.run(cfg)
    system = CirclePendulum(c=1.0, mass=(1.0, 3.0, 2.0))
    snaps = [run.ensemble.snapshot(t) for t in (30.0, 40.0, 50.0, 60.0)]
    q2 = np.mean([s["q2"] for s in snaps], axis=0)
    kinetic = np.mean([sum(s[f"p{i}"] ** 2 / m for i, m in zip((1, 2, 3), (1.0, 3.0, 2.0))) for s in snaps], axis=0)
    se = lambda x: x.std(ddof=1) / math.sqrt(x.size)
    exact, uniform_mass = system.mean_potential(), CirclePendulum().mean_potential()
    assert abs(q2.mean() - exact) <= 0.02 + 3 * se(q2)
    assert abs(q2.mean() - uniform_mass) > 0.02 + 3 * se(q2)
    assert abs(kinetic.mean() - 1.0) <= 0.02 + 3 * se(kinetic)
    assert run.ensemble.diagnostics["nonfinite_paths"].max() == 0


def test_a_newton_shake_failure_is_counted_by_the_engine(runs_root):
    cfg = sgi_run.compose(runs_root + ["system=circle_pendulum", "integrator=csvia", "system.p0=[100,0,0]",
                                       "integrator.max_iter=10", "plan.dt=0.1", "plan.T=0.2",
                                       "plan.output_dt=0.1", "plan.paths=20", "plan.keep_paths=0",
                                       "plan.observables=[two_H]"])
    ens = sgi_run.run(cfg).ensemble
    assert list(ens.diagnostics["nonfinite_paths"]) == [0, 20, 20]
    assert list(ens.observables["two_H"]["count"]) == [20, 0, 0]


@pytest.mark.parametrize("system,integrator", [
    ("spherical_pendulum", "svia"),
    ("langevin_double_well", "csvia"),
    ("spherical_pendulum", "midpoint"),
    ("circle_pendulum", "svia"),
    ("kubo", "svib"),                   # canonical, but not a Langevin system (no U, c, beta)
])
def test_integrators_that_do_not_fit_are_refused_with_one_line(system, integrator):
    with pytest.raises(ConfigError, match="integrator") as err:
        sgi_run.compose([f"system={system}", f"integrator={integrator}"])
    assert "\n" not in str(err.value)


def test_a_canonical_integrator_runs_on_a_flat_langevin_system(runs_root):
    cfg = sgi_run.compose(runs_root + ["system=langevin_double_well", "integrator=heun", "plan.dt=0.05",
                                       "plan.T=1", "plan.output_dt=1", "plan.paths=200", "plan.keep_paths=0",
                                       "plan.observables=[two_H,kinetic_temperature]"])
    ens = sgi_run.run(cfg).ensemble
    assert list(ens.observables["two_H"]["count"]) == [200, 200]
    assert ens.mean("two_H")[0] == -0.5
