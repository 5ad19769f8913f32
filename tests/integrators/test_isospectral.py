"""IsoMP (Ephrati et al. 2024, eq. (26)) on every system with a matrix Lie algebra."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run.core import lie
from sgi_run.core.lie import skew_part2
from sgi_run.integrators.base import SolverStats
from sgi_run.integrators.isospectral import IsospectralIntegrator
from sgi_run.systems import Manakov, PointVortices, RigidBody, SineEuler, ZeitlinEuler
from sgi_run.systems.zeitlin import hbar
from sgi_run.systems.point_vortices import positions
from tests.integrators.test_lie_poisson import assert_same_to_round_off, ManakovTop, path


def matrix(system, z):
    blocks = system.algebra.to_matrix(system.dual(z))
    return jnp.stack(blocks) if isinstance(blocks, tuple) else blocks


@pytest.mark.slow
def test_one_step_solves_eq_26_and_is_a_cayley_similarity(make_integrator):
    """The midpoint X~ satisfies X~ = X_n + [Psi, X~]/2 + Psi X~ Psi/4 with Psi = Psi(X~) (P15: the generator
    at the midpoint), and X_n+1 = U X_n U^-1 with U = (I - Psi/2)^-1 (I + Psi/2)."""
    system, dt = Manakov(n=5), 0.05
    isomp = make_integrator("isomp")
    x_n = system.initial_state(None)
    dw = jnp.asarray(np.random.default_rng(1).normal(size=system.noises) * np.sqrt(dt))
    x_next, stats = isomp.advance(system, x_n, dt, dw[None])
    assert int(stats.unconverged.sum()) == 0
    psi = lambda x: -(dt * system.gradient(system.hamiltonian, x) + system.noise_generator(x, dw))
    # X_n+1 = (I + Psi/2) X~ (I - Psi/2) and X_n = (I - Psi/2) X~ (I + Psi/2): X~ from the pair
    eye = jnp.eye(5)
    p = psi(0.5 * (x_n + x_next))          # a start; the converged X~ is recovered below
    for _ in range(60):
        tilde = jnp.linalg.solve(eye - p / 2, x_n) @ jnp.linalg.inv(eye + p / 2)
        p = psi(tilde)
    residual = tilde - (x_n + 0.5 * (p @ tilde - tilde @ p) + 0.25 * p @ tilde @ p)
    assert float(jnp.abs(residual).max()) < 1e-14
    u = jnp.linalg.solve(eye - p / 2, eye + p / 2)
    assert float(jnp.abs(x_next - u @ x_n @ jnp.linalg.inv(u)).max()) < 1e-13


@pytest.mark.slow
@pytest.mark.parametrize("system", [RigidBody(), Manakov(), PointVortices(), SineEuler(ic_kind="complex"), ManakovTop()],
                         ids=lambda s: type(s).__name__)
def test_spectrum_is_kept_and_every_iterate_exactly_skew(make_integrator, system):
    """Theorems 4.5-4.6 and P20: the spectrum to round-off over 2000 stochastic steps at dt = 2^-6, every
    state exactly skew-Hermitian (max |X + X^*| = 0, not merely small)."""
    states, stats = path(make_integrator("isomp"), system, 2.0**-6, 2000)
    spectra = jax.vmap(system.spectrum)(states)
    scale = max(1.0, float(jnp.abs(spectra[0]).max()))
    assert float(jnp.abs(spectra - spectra[0]).max()) <= 1e-12 * scale
    m = jax.vmap(lambda z: matrix(system, z))(states)
    assert float(jnp.abs(m + jnp.conj(jnp.swapaxes(m, -1, -2))).max()) == 0.0
    assert int(stats.unconverged.sum()) == 0 and 3 <= float(stats.iterations.mean()) <= 20


@pytest.mark.slow
def test_a_long_manakov_path_keeps_its_spectrum_to_round_off(tmp_path):
    """Ephrati et al.'s Figure 6: one Manakov so(10) IsoMP path, 2.56 x 10^5 steps of 2^-8. X_n+1 takes Psi and
    the commutator at the solution X~ (Ephrati et al. 2024 (26)), and the spectrum drifts about 1e-14; taken from the last
    iteration instead (at the iterate before the solution), it drifted 4.1e-13."""
    cfg = sgi_run.compose(["system=manakov", "integrator=isomp", "plan.paths=1", "plan.keep_paths=1",
                           "plan.dt=0.00390625", "plan.output_dt=1", "plan.T=1000", "plan.truncate=log_dt",
                           "plan.seed=0", "plan.observables=[spectrum]", f"output_root={tmp_path}", "progress=off"])
    spectrum = sgi_run.load(sgi_run.run(cfg).path).paths["spectrum"][0]       # (times, 10)
    assert np.abs(spectrum - spectrum[0]).max() <= 1e-13


@pytest.mark.slow
def test_deterministic_rigid_body_is_second_order_and_keeps_energy(make_integrator):
    """The deterministic limit is Viviani's isospectral midpoint rule (the noise-free (26) of Ephrati et al. 2024 Sec. 4): order 2 against solve_ivp,
    |dH/H| <= 1e-5 at dt = 2^-8 (the contrast with Ephrati et al. 2024 Figure 4) over T = 20."""
    from scipy.integrate import solve_ivp
    system = RigidBody(noise_amplitude=0.0)
    z0 = np.asarray(system.initial_state(None))
    exact = solve_ivp(lambda t, x: np.asarray(system.drift(jnp.asarray(x))), (0, 1), z0, method="DOP853",
                      rtol=1e-13, atol=1e-14).y[:, -1]
    dts = (2.0**-4, 2.0**-5, 2.0**-6)
    errors = [np.abs(np.asarray(path(make_integrator("isomp"), system, dt, round(1 / dt))[0][-1]) - exact).max()
              for dt in dts]
    order = np.polyfit(np.log(dts), np.log(errors), 1)[0]
    assert 1.8 <= order <= 2.2, (errors, order)
    states, _ = path(make_integrator("isomp"), system, 2.0**-8, 20 * 256)
    energy = np.asarray(jax.vmap(system.energy)(states))
    assert np.abs(energy / energy[0] - 1).max() <= 1e-5


@pytest.mark.slow
def test_point_vortices_move_by_the_papers_vector_field(make_integrator):
    """Ephrati et al. (2024) Sec. 6.3: dx_i/dt = 1/(2 pi) sum_j G_i G_j x_i x x_j / (1 - x_i.x_j); small IsoMP steps agree."""
    system, dt = PointVortices(noise_amplitude=0.0), 1e-4
    z0 = system.initial_state(None)
    x = np.asarray(positions(z0))
    expected = np.zeros_like(x)
    for i in range(4):
        for j in range(4):
            if j != i:
                expected[i] += np.cross(x[i], x[j]) / (1 - x[i] @ x[j]) / (2 * np.pi)
    forward, _ = make_integrator("isomp").advance(system, z0, dt, jnp.zeros((1, 3)))
    backward, _ = make_integrator("isomp").advance(system, z0, -dt, jnp.zeros((1, 3)))
    moved = (np.asarray(positions(forward)) - np.asarray(positions(backward))) / (2 * dt)   # central: O(dt^2)
    assert np.allclose(moved, expected, rtol=0, atol=1e-8)


@pytest.mark.parametrize("overrides, start", [
    (["system=heavy_top", "integrator=isomp"], "integrator='isomp' is not allowed: a method for system 'HeavyTop' on se3"),
    (["system=kubo", "integrator=isomp"], "integrator='isomp' is not allowed: system 'Kubo' has structure 'canonical'"),
    (["system=rigid_body", "integrator=isomp", "integrator.solver=newton"],
     "integrator.solver='newton' is not allowed: fixed_point"),
])
def test_isomp_is_refused_where_it_does_not_apply(overrides, start):
    with pytest.raises(sgi_run.ConfigError) as err:
        sgi_run.compose(overrides)
    assert str(err.value).startswith(start) and "\n" not in str(err.value)


@pytest.mark.slow
def test_rigid_body_isomp_through_the_runner(runs_root):
    """The command of the issue, small: spectrum and Casimir kept in every path, iterations recorded."""
    result = sgi_run.run(sgi_run.compose(runs_root + ["system=rigid_body", "integrator=isomp", "plan.paths=50",
                                                      "plan.T=1", "plan.dt=0.00390625", "plan.output_dt=0.25",
                                                      "plan.truncate=log_dt", "plan.keep_paths=2",
                                                      "plan.observables=[H,C2,spectrum_change]"]))
    ens = result.ensemble
    assert ens.attrs["solver"] == "fixed_point" and ens.diagnostics["fixed_point_unconverged_steps"].sum() == 0
    assert np.abs(ens.paths["spectrum_change"]).max() < 1e-13 and np.abs(ens.paths["C2"] - 1).max() < 1e-13
    assert 4 <= ens.attrs["solver_iterations_per_step"] <= 10


def test_matrix_forms_turn_coadjoint_actions_into_commutators():
    rng = np.random.default_rng(3)
    so3, mu, s = lie.SO3(), jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
    assert np.allclose(so3.to_matrix(so3.ad_star(s, mu)), so3.to_matrix(mu) @ so3.to_matrix(s)
                       - so3.to_matrix(s) @ so3.to_matrix(mu), atol=1e-15)
    assert np.allclose(so3.from_matrix(so3.to_matrix(mu)), mu)
    assert lie.Product([lie.SO3(), lie.MatrixAlgebra(2)]).matrix_form and not lie.SE3().matrix_form
    assert not lie.Product([lie.SO3(), lie.SE3()]).matrix_form


@pytest.mark.slow
@pytest.mark.parametrize("system", [Manakov(n=4), PointVortices()], ids=lambda s: type(s).__name__)
def test_the_lie_poisson_integrators_run_on_the_new_systems(make_integrator, system):
    """One system, every method that fits it: TMK keeps every Casimir, the tight midpoint rule the
    quadratic ones (Luesink et al.'s (2023) integrators on Ephrati et al.'s (2024) systems)."""
    casimirs = lambda states: {k: np.asarray(v) for k, v in jax.vmap(lambda z: system.algebra.casimirs(system.dual(z)))(states).items()}
    for name in ("tmk", "lp_midpoint"):
        states, stats = path(make_integrator(name), system, 2.0**-6, 300)
        assert int(stats.unconverged.sum()) == 0
        for key, c in casimirs(states).items():
            if name == "tmk" or key.startswith("C2"):
                assert np.abs(c / c[0] - 1).max() < 1e-12, (name, key)


class IsoMPAsBefore(IsospectralIntegrator):
    """IsoMP as it was before issue 26: in matrix form (so(3) through hat), XLA's complex products, and Psi and
    C = Psi X~ evaluated once more at the solution for X_n+1. The reference implementation of the test below."""

    def advance(self, system, z, dt, xi):
        algebra, dw, theta = system.algebra, xi[0], self.tableau.theta
        x_n = algebra.to_matrix(system.dual(z))
        psi = lambda x: jax.tree.map(jnp.negative, algebra.to_matrix(system.generator(algebra.from_matrix(x), dt, dw)))
        block = lambda x_n, x, p: x_n + theta * skew_part2(p @ x) + 0.5 * theta**2 * skew_part2(p @ x @ p)
        sol = self.solve.fixed_point(lambda x: jax.tree.map(block, x_n, x, psi(x)), x_n)
        x_next = jax.tree.map(lambda x_n, x, p: x_n + 2 * theta * skew_part2(p @ x), x_n, sol.x, psi(sol.x))
        return system.space.project(system.state(algebra.from_matrix(x_next))), SolverStats.none().add(sol)


@pytest.mark.slow
@pytest.mark.parametrize("system", [ZeitlinEuler(N=32), RigidBody(), Manakov(), PointVortices()],
                         ids=lambda s: type(s).__name__)
def test_the_faster_step_keeps_every_number_to_round_off(make_integrator, system):
    """IsoMP in the algebra's coordinates (so(3) as vectors), its complex products as Gauss's three real ones
    (``core.linalg.matmul``) and X_n+1 from the last iteration's commutator against the step as it was: 30
    stochastic steps, every state to round-off and every step's iterations the same, on su(32), so(3), so(10)
    and a product of su(2)s."""
    isomp = make_integrator("isomp")
    before = IsoMPAsBefore(**{f.name: getattr(isomp, f.name) for f in dataclasses.fields(isomp)})
    dt = 0.1 * hbar(32) if isinstance(system, ZeitlinEuler) else 2.0**-6
    (states, stats), (reference, reference_stats) = (path(method, system, dt, 30) for method in (isomp, before))
    assert_same_to_round_off(states, reference)
    assert np.array_equal(stats.iterations, reference_stats.iterations)
