"""The Cayley LGVI (Gay-Balmaz & Wu 2024, Prop. 3.1, eqs. (28), (54)-(63)) on the rigid body and the heavy top."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run.core import lie
from sgi_run.integrators.base import SolverStats
from sgi_run.integrators.lie_group_variational import CayleyLGVI, _cayley_solve
from sgi_run.systems import HeavyTop, RigidBody
from tests.integrators.test_lie_poisson import assert_same_to_round_off, path

EYE = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
THETA0 = 0.15 * np.pi
R0_TOP = ((1.0, 0.0, 0.0), (0.0, np.cos(THETA0), np.sin(THETA0)), (0.0, -np.sin(THETA0), np.cos(THETA0)))


def rigid_body(amplitude=0.0, **changes):
    """Gay-Balmaz & Wu's (2024) rigid body (Sec. 6.1, 7) with its attitude."""
    return RigidBody(**{"inertia": (1.0, 2.0, 3.0), "noise_kind": "linear", "noise_amplitude": amplitude,
                        "pi0": (-0.5878, 0.0, 0.8090), "R0": EYE, **changes})


def heavy_top(case="det", **changes):
    """Gay-Balmaz & Wu's (2024) heavy top (Sec. 8) with its attitude."""
    return HeavyTop(**{"inertia": (0.1, 0.1, 1.0), "chi": (0.0, 0.0, 0.98), "gravity_sign": 1.0, "pi0": (0.0, 0.0, 1.0),
                       "gamma0": tuple(np.asarray(R0_TOP).T @ [0.0, 0.0, 1.0]), "R0": R0_TOP, "noise_case": case,
                       **changes})


@pytest.mark.parametrize("q", [-0.25, 0.25])
def test_closed_form_solve_and_the_cayley_identity(q):
    """M_+(X)^-1 v in closed form equals the dense solve, and M_-(X) M_+(X)^-1 = cay(-X) for either q (P1)."""
    x, v = jnp.array([0.3, -0.2, 0.5]), jnp.array([0.1, 0.7, -0.4])
    m = lambda sign: jnp.eye(3) + sign * 0.5 * lie.hat(x) + q * jnp.outer(x, x)
    assert float(jnp.abs(_cayley_solve(x, v, q, 0.5) - jnp.linalg.solve(m(1), v)).max()) < 1e-15
    assert float(jnp.abs(m(-1) @ jnp.linalg.inv(m(1)) - lie.SO3().cayley(-x)).max()) < 1e-15


@pytest.mark.slow
def test_deterministic_rigid_body_paper_variant(make_integrator):
    """Fig. 1, the project's criterion 2: the paper variant keeps the energy exactly (App. 10.1), |Pi| and R Pi to round-off,
    and passes the reference positions at t = 5, 20, 40, 50 (independent prototype, within 2e-3)."""
    system = rigid_body()
    states, stats = path(make_integrator("lgvi_cayley"), system, 0.01, 5000)
    pi, r = states["pi"], states["R"]
    energy = 0.5 * jnp.sum(pi**2 / jnp.array([1.0, 2.0, 3.0]), axis=1)
    assert float(jnp.abs(energy - system.hamiltonian(jnp.array(system.pi0))).max()) < 1e-13
    assert float(jnp.abs(jnp.linalg.norm(pi, axis=1) - np.linalg.norm(system.pi0)).max()) < 1e-13
    assert float(jnp.abs(jnp.einsum("kij,kj->ki", r, pi) - jnp.array(system.pi0)).max()) < 1e-13
    expected = {5: (-0.3662, -0.9196, 0.1420), 20: (-0.4303, 0.8008, 0.4165), 40: (-0.3684, 0.9161, -0.1581),
                50: (-0.4412, -0.7768, 0.4493)}
    for t, value in expected.items():
        assert np.abs(np.asarray(pi[100 * t - 1]) - value).max() < 2e-3
    assert int(stats.unconverged.sum()) == 0 and float(stats.iterations.mean()) <= 8


def one_step_map(integrator, system, dt):
    return lambda p: integrator.advance(system, system.state(p, jnp.eye(3)), dt, jnp.zeros((1, 3)))[0]["pi"]


@pytest.mark.slow
def test_only_the_exact_variant_is_a_lie_poisson_map(make_integrator):
    """The Cayley variants (sign of [d cay^-1]^*, docs/papers/gay_balmaz_wu.md): D Phi hat(Pi) D Phi^T = hat(Phi(Pi)) for the one-step map: the exact variant to round-off,
    the paper variant not (measured here 8.5e-12, 8.5e-8 and 6.9e-6 at dt = 0.01, 0.1, 0.3: O(dt^4), also by
    central differences; the spec's prototype reported 1.6e-9 and 1.5e-6 at 0.01 and 0.1)."""
    system, p = rigid_body(), jnp.array([-0.5878, 0.0, 0.8090])
    defects = {}
    for variant in ("paper", "exact"):
        phi = one_step_map(make_integrator("lgvi_cayley", dtau_variant=variant, tol=1e-15), system, 0.3)
        jac = jax.jacfwd(phi)(p)
        defects[variant] = float(jnp.abs(jac @ lie.hat(p) @ jac.T - lie.hat(phi(p))).max())
    assert defects["exact"] < 1e-13 and defects["paper"] > 1e-6


def test_exact_variant_energy_is_bounded_not_exact(make_integrator):
    """The Cayley variants: without noise the exact variant's energy error stays near 2.6e-7 (dt = 0.01, T = 50)."""
    system = rigid_body()
    states, _ = path(make_integrator("lgvi_cayley", dtau_variant="exact"), system, 0.01, 5000)
    energy = 0.5 * jnp.sum(states["pi"] ** 2 / jnp.array([1.0, 2.0, 3.0]), axis=1)
    error = float(jnp.abs(energy - system.hamiltonian(jnp.array(system.pi0))).max())
    assert 1e-8 < error < 1e-6


@pytest.mark.slow
def test_stochastic_rigid_body_keeps_the_sphere_and_the_spatial_momentum(make_integrator):
    """Fig. 1, the project's criteria 1 and 3, with strong noise (chi = 0.5) so that the energy visibly moves."""
    system = rigid_body(0.5)
    states, stats = path(make_integrator("lgvi_cayley"), system, 0.01, 2000)
    pi, r = states["pi"], states["R"]
    assert float(jnp.abs(jnp.linalg.norm(pi, axis=1) - np.linalg.norm(system.pi0)).max()) < 1e-13
    assert float(jnp.abs(jnp.einsum("kij,kj->ki", r, pi) - jnp.array(system.pi0)).max()) < 1e-12
    assert float(jnp.abs(jnp.einsum("kji,kjl->kil", r, r) - jnp.eye(3)).max()) < 1e-13
    energy = 0.5 * jnp.sum(pi**2 / jnp.array([1.0, 2.0, 3.0]), axis=1)
    assert float(jnp.ptp(energy)) > 1e-2 and int(stats.unconverged.sum()) == 0


@pytest.mark.parametrize("variant", ["paper", "exact"])
def test_half_step_momenta_are_the_steps_own_solution(make_integrator, variant):
    """Rigid-body step, eqs. (54), (57), (58) (Fig. 14): (A, B) solve M_+A = Pi, M_+B = M_-A at the X of the step's own solve: X = dt xi with
    xi = I^-1 S / 4 + sum_i chi_i dW_i / (2 dt), S = A + B, and the step's Pi_{n+1} = M_-(X) B = cay(-X)^2 Pi."""
    system, dt = rigid_body(0.02), 0.01
    integrator = make_integrator("lgvi_cayley", dtau_variant=variant, tol=1e-15)
    q = integrator.tableau.quadratic[variant]
    pi, dw = jnp.array([0.3, -0.8, 0.52]), jnp.array([0.42919, -0.1, 0.3])
    solved = integrator.half_step_momenta(system, pi, dt, dw)
    a, b = solved.a, solved.b
    x = dt * (0.25 * (a + b) / jnp.array([1.0, 2.0, 3.0]) + 0.5 * 0.02 * dw / dt)
    m = lambda sign: jnp.eye(3) + sign * 0.5 * lie.hat(x) + q * jnp.outer(x, x)
    assert float(jnp.abs(m(1) @ a - pi).max()) < 1e-15 and float(jnp.abs(m(1) @ b - m(-1) @ a).max()) < 1e-15
    stepped = integrator.advance(system, system.state(pi, jnp.eye(3)), dt, dw[None])[0]["pi"]
    assert float(jnp.abs(m(-1) @ b - stepped).max()) < 1e-15
    assert bool(solved.converged) and int(solved.iterations) <= 10
    assert float(jnp.hypot(jnp.linalg.norm(a), jnp.linalg.norm(b))) == pytest.approx(np.sqrt(2) * float(
        jnp.linalg.norm(pi)), rel=1e-4)


@pytest.mark.slow
def test_half_step_momenta_vmap_over_momenta_and_refuse_the_heavy_top(make_integrator):
    """Figure 14 solves every point of a sphere mesh at once; the heavy top's step has no (A, B) of eqs. (62)."""
    integrator = make_integrator("lgvi_cayley", tol=1e-15)
    points = jnp.eye(3)
    solved = jax.vmap(lambda p: integrator.half_step_momenta(rigid_body(0.02), p, 0.01, jnp.zeros(3)))(points)
    assert solved.a.shape == (3, 3) and bool(solved.converged.all()) and int(solved.iterations.max()) <= 10
    with pytest.raises(sgi_run.ConfigError, match="a rigid body"):
        integrator.half_step_momenta(heavy_top(), jnp.eye(3)[2], 0.01, jnp.zeros(0))


@pytest.mark.slow
def test_deterministic_heavy_top_keeps_its_momenta_and_bounds_the_energy(make_integrator):
    """Fig. 5: p_psi, p_phi and |Gamma|^2 to 1e-12, max |E - E0| in [1e-7, 1e-4] (6.7e-6 by an independent prototype),
    Gamma = R^T e_z, and theta between the turning points 0.15 pi and 0.59161 (Fig. 4)."""
    system = heavy_top()
    states, _ = path(make_integrator("lgvi_cayley"), system, 0.01, 5000)
    observe = jax.vmap(lambda z: {name: f(z) for name, f in system.observables().items()
                                  if name in ("H", "p_psi", "p_phi", "C2", "theta")})
    values = observe(states)
    z0 = system.initial_state(None)
    assert float(jnp.abs(values["p_psi"] - 1).max()) < 1e-12
    assert float(jnp.abs(values["p_phi"] - np.cos(THETA0)).max()) < 1e-12
    assert float(jnp.abs(values["C2"] - 1).max()) < 1e-12
    assert 1e-7 < float(jnp.abs(values["H"] - system.observables()["H"](z0)).max()) < 1e-4
    assert float(jnp.abs(states["gamma"] - states["R"][:, 2, :]).max()) < 1e-13
    assert 0.4712 - 2e-3 < float(values["theta"].min()) and float(values["theta"].max()) < 0.59161 + 2e-3


@pytest.mark.slow
@pytest.mark.parametrize("case", ["piz", "gz", "gxgy", "normpi2", "pixpiy"])
def test_stochastic_heavy_top_cases(make_integrator, case):
    """Every noise case keeps |Gamma|^2 and p_phi = Pi.Gamma (Noether) exactly; p_psi is kept exactly by the cases
    that commute with it (piz, gz, normpi2) and moves under gxgy and pixpiy (Sec. 8); the Euler-angle identity
    E' = V(theta) + I1 omega_theta^2 / 2 holds at every step (Sec. 8, 1e-9)."""
    system = heavy_top(case, **({"k1": 0.01, "k2": 0.01} if case == "pixpiy" else {}))
    states, stats = path(make_integrator("lgvi_cayley"), system, 0.01, 3000)
    names = ("p_psi", "p_phi", "C2", "E_prime", "V", "omega_theta")
    values = jax.vmap(lambda z: {n: system.observables()[n](z) for n in names})(states)
    assert float(jnp.abs(values["C2"] - 1).max()) < 1e-12
    assert float(jnp.abs(values["p_phi"] - np.cos(THETA0)).max()) < 1e-12
    moved = float(jnp.abs(values["p_psi"] - 1).max())
    assert (moved > 1e-3) if case in ("gxgy", "pixpiy") else (moved < 1e-12)
    identity = values["E_prime"] - values["V"] - 0.5 * 0.1 * values["omega_theta"] ** 2
    assert float(jnp.abs(identity).max()) < 1e-9 and int(stats.unconverged.sum()) == 0


@pytest.mark.parametrize("overrides, start", [
    (["integrator.dtau_variant=cayley"], "integrator.dtau_variant='cayley' is not allowed: one of ['paper', 'exact']"),
    (["system.R0=[[1,0,0],[0,1,0],[0,0.1,1]]"], "system.R0=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.1, 1.0]] is not allowed: a rotation matrix"),
    (["system.R0=[[1,0,0],[0,1,0],[0,0,-1]]"], "system.R0=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, -1.0]] is not allowed: a rotation matrix"),
    (["system.inertia=[1,-2,3]"], "system.inertia=(1.0, -2.0, 3.0) is not allowed: three numbers > 0"),
    (["system=heavy_top_gay_balmaz_wu", "system.noise_case=case4"], "system.noise_case='case4' is not allowed: one of"),
    (["system=heavy_top_gay_balmaz_wu", "system.gamma0=[0,0,1]"], "system.gamma0=(0.0, 0.0, 1.0) is not allowed: R0^T e_z"),
    # R0 is the system's default, the integrator what was typed: the refusal names the integrator.
    (["integrator=tmk"], "integrator='tmk' is not allowed: one that fits the default system.R0=[[1.0, 0.0, 0.0], "
                         "[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] (null with tmk"),
    (["integrator=tmk", "system.R0=[[1,0,0],[0,1,0],[0,0,1]]"],
     "system.R0=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] is not allowed: null with tmk"),
    # R0 is the system's default, the integrator what was typed: the refusal names the integrator.
    (["integrator=isomp"], "integrator='isomp' is not allowed: one that fits the default system.R0=[[1.0, 0.0, 0.0], "
                         "[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] (null with isomp"),
    (["integrator=isomp", "system.R0=[[1,0,0],[0,1,0],[0,0,1]]"],
     "system.R0=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] is not allowed: null with isomp"),
    (["system=manakov"], "integrator='lgvi_cayley' is not allowed: a method for system 'Manakov' on so(10)"),
    (["system=kubo"], "integrator='lgvi_cayley' is not allowed: system 'Kubo' has structure 'canonical'"),
])
def test_bad_input_is_refused_in_one_line(overrides, start):
    with pytest.raises(sgi_run.ConfigError) as err:
        sgi_run.compose(["system=rigid_body_gay_balmaz_wu", "integrator=lgvi_cayley"] + overrides)
    assert str(err.value).startswith(start) and "\n" not in str(err.value)


@pytest.mark.slow
@pytest.mark.parametrize("system", ["rigid_body", "heavy_top"])
def test_headline_commands_run_without_an_attitude(runs_root, system):
    """`sgi-run system=rigid_body integrator=lgvi_cayley` (and heavy_top): the default configs carry no attitude,
    the Casimirs are kept in every path."""
    casimirs = ("C2",) if system == "rigid_body" else ("C1", "C2")
    result = sgi_run.run(sgi_run.compose(runs_root + [f"system={system}", "integrator=lgvi_cayley", "plan.paths=8",
                                                      "plan.T=1", "plan.dt=0.01", "plan.keep_paths=8",
                                                      f"plan.observables=[H,{','.join(casimirs)}]"]))
    ens = result.ensemble
    assert ens.attrs["solver"] == "fixed_point" and ens.diagnostics["fixed_point_unconverged_steps"].sum() == 0
    for name in casimirs:
        assert np.abs(ens.paths[name] - ens.paths[name][:, :1]).max() < 1e-13


class CayleyAsBefore(CayleyLGVI):
    """The Cayley LGVI as it was before issue 26: every rotation through the 3 x 3 matrix cay(-X). The reference
    implementation of the test below."""

    def advance(self, system, z, dt, xi):
        cayley, semidirect, mu = lie.SO3().cayley, isinstance(system.algebra, lie.SE3), system.dual(z)
        pi, gamma = mu if semidirect else (mu, None)
        sol = self._solve(system, mu, dt, xi[0])
        x, b = sol.x if semidirect else (sol.x, None)
        rotate = cayley(-x)
        pi_next = rotate @ (rotate @ pi)
        if semidirect:
            gamma_next = rotate @ (rotate @ gamma)
            mu_next = (pi_next - jnp.cross(rotate @ b, gamma_next), gamma_next)
        else:
            mu_next = pi_next
        attitude = system.attitude(z)
        if attitude is not None:
            attitude = attitude @ cayley(x) @ cayley(x)
        return system.state(mu_next, attitude), SolverStats.none().add(sol)

    def _solve(self, system, mu, dt, dw):
        q, linear, cayley = self.tableau.quadratic[self.dtau_variant], self.tableau.linear, lie.SO3().cayley
        semidirect = isinstance(system.algebra, lie.SE3)
        pi, gamma = mu if semidirect else (mu, None)

        def mean_of(u):
            x, b = u if semidirect else (u, None)
            rotate = cayley(-x)
            if semidirect:
                gamma_half = rotate @ gamma
                return 0.5 * _cayley_solve(x, pi + rotate @ pi - jnp.cross(b, gamma_half), q, linear), gamma_half
            return 0.5 * _cayley_solve(x, pi + rotate @ pi, q, linear)

        unknowns_of = lambda sigma: (0.5 * sigma[0], sigma[1]) if semidirect else 0.5 * sigma
        start = unknowns_of(system.generator(mu, dt, dw))
        return self.solve.fixed_point(lambda u: unknowns_of(system.generator(mean_of(u), dt, dw)), start)


@pytest.mark.slow
@pytest.mark.parametrize("system", [rigid_body(amplitude=0.1), heavy_top("gxgy")], ids=["rigid_body", "heavy_top"])
def test_rotating_vectors_without_the_cayley_matrix_keeps_every_number_to_round_off(make_integrator, system):
    """Q v by ``SO3.cayley_rotate`` (vector arithmetic, no 3 x 3 matrix) against the step as it was: 30 stochastic
    steps of the rigid body and the heavy top with their attitudes, every state to round-off, iterations equal."""
    lgvi = make_integrator("lgvi_cayley")
    before = CayleyAsBefore(**{f.name: getattr(lgvi, f.name) for f in dataclasses.fields(lgvi)})
    (states, stats), (reference, reference_stats) = (path(method, system, 2.0**-6, 30) for method in (lgvi, before))
    assert_same_to_round_off(states, reference)
    assert np.array_equal(stats.iterations, reference_stats.iterations)
