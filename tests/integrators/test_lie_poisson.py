"""TMK, IM and TRAP on the heavy top and the rigid body (Luesink et al. 2023, Sections 2-6)."""
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run.config import build
from sgi_run.core import lie, noise
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.engine import programs
from sgi_run.systems import HeavyTop, RigidBody, SineEuler
from sgi_run.systems.lie_poisson import LiePoissonSystem


# path() steps through compiled calls of CHUNK steps each, the step size an argument: one program per (method,
# system) serves every step size and length these tests use (compiling one per step size and length took most
# of these tests' time). Each is a multiple of 4 steps but one (50 = 12 x 4 + 2: one program more).
CHUNK = 4


def _stepper(integrator, system, length: int):
    """``(z, noise key, first step, dt) -> (z, (states, stats))``: ``length`` steps of one path, its increments
    drawn as the engine draws them. One program per (method, system, length) in the process (engine.programs)."""
    def build():
        def run(z, noise_key, first, dt):
            def body(z, k):
                z, stats = integrator.advance(system, z, dt, noise.increments("gaussian", noise_key, k, dt, system.noises))
                return z, (z, stats)
            return jax.lax.scan(body, z, first + jnp.arange(length))
        return jax.jit(run)

    return programs.shared("test path steps", (integrator, system, length), build)


def path(integrator, system, dt, steps, seed=3):
    """One realisation of ``steps`` steps, its increments drawn as the engine draws path 0's: the states after
    each step and each step's SolverStats."""
    path_key = noise.path_keys(seed, 0, 1)[0]
    z, parts, done = system.initial_state(noise.init_key(path_key)), [], 0
    while done < steps:
        length = min(CHUNK, steps - done)
        z, part = _stepper(integrator, system, length)(z, noise.noise_key(path_key), done, dt)
        parts.append(part)
        done += length
    return jax.tree.map(lambda *chunks: jnp.concatenate(chunks), *parts)


def assert_same_to_round_off(states, reference, rtol=1e-13):
    """Two paths' states (``path``) equal to round-off: each leaf within rtol of max(1, its largest entry)."""
    for leaf, expected in zip(jax.tree.leaves(states), jax.tree.leaves(reference)):
        assert float(jnp.abs(leaf - expected).max()) <= rtol * max(1.0, float(jnp.abs(expected).max()))


DETERMINISTIC = HeavyTop(inertia=(4.0, 2.0, 1.0), alpha=(0.0, 0.0, 0.0))


@pytest.mark.slow
def test_tmk_takes_the_plus_exponent(make_integrator):
    """P1: with the wrong sign every invariant is still kept, but the path is wrong: against IM at a ten
    times smaller step, TMK's deterministic heavy top at T = 1 agrees to O(dt^2)."""
    tmk, _ = path(make_integrator("tmk"), DETERMINISTIC, 0.01, 100)
    fine, _ = path(make_integrator("lp_midpoint"), DETERMINISTIC, 0.001, 1000)
    error = max(float(jnp.max(jnp.abs(tmk[k][-1] - fine[k][-1]))) for k in ("pi", "gamma"))
    assert error < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("inertia", [(4.0, 4.0, 1.0), (4.0, 2.0, 1.0)])
def test_tmk_keeps_casimirs_to_round_off_and_energy_without_noise(make_integrator, inertia):
    stochastic, stats = path(make_integrator("tmk"), HeavyTop(inertia=inertia), 0.01, 2000)
    assert np.abs(np.sum(stochastic["pi"] * stochastic["gamma"], axis=1) - 1).max() < 1e-13
    assert np.abs(np.sum(stochastic["gamma"] ** 2, axis=1) - 1).max() < 1e-13
    assert int(stats.unconverged.sum()) == 0 and 2 <= float(stats.iterations.mean()) <= 8
    system = HeavyTop(inertia=inertia, alpha=(0.0, 0.0, 0.0))
    deterministic, _ = path(make_integrator("tmk"), system, 0.01, 2000)
    energy = jax.vmap(lambda p, g: system.hamiltonian((p, g)))(deterministic["pi"], deterministic["gamma"])
    assert np.abs(energy - energy[0]).max() < 1e-13


@pytest.mark.slow
def test_im_keeps_quadratic_casimirs_when_solved_tightly_and_trap_does_not(make_integrator):
    """P3: the midpoint rule keeps quadratic invariants exactly (at tol 1e-14); the trapezoidal rule does not."""
    system = HeavyTop(alpha=(0.3, 0.2, 0.1))
    im, _ = path(make_integrator("lp_midpoint"), system, 0.02, 500)
    trap, _ = path(make_integrator("lp_trapezoidal"), system, 0.02, 500)
    c2 = lambda s: np.abs(np.sum(s["gamma"] ** 2, axis=1) - 1).max()
    assert c2(im) < 1e-12 and c2(trap) > 1e-8


@pytest.mark.slow
def test_rigid_body_tmk_keeps_its_casimir(make_integrator):
    states, _ = path(make_integrator("tmk"), RigidBody(), 2.0**-6, 640)
    assert np.abs(np.sum(states**2, axis=1) - 1).max() < 1e-13


@pytest.mark.parametrize("overrides, start", [
    (["system=kubo", "integrator=tmk"], "integrator='tmk' is not allowed: system 'Kubo' has structure 'canonical'"),
    (["system=heavy_top", "integrator=midpoint"], "integrator='midpoint' is not allowed: system 'HeavyTop' has structure 'lie_poisson'"),
    (["system=heavy_top", "integrator=tmk", "integrator.tableau.scheme=rk4"], "integrator.tableau.scheme='rk4' is not allowed"),
])
def test_integrators_and_systems_of_other_structures_are_refused(overrides, start):
    with pytest.raises(sgi_run.ConfigError) as err:
        sgi_run.compose(overrides)
    assert str(err.value).startswith(start) and "\n" not in str(err.value)


@pytest.mark.slow
def test_heavy_top_tmk_through_the_runner(runs_root):
    """The headline command, small: chord iterations in the diagnostics, Casimirs exact in every path."""
    result = sgi_run.run(sgi_run.compose(runs_root + ["system=heavy_top", "integrator=tmk", "plan.paths=20",
                                                      "plan.T=1", "plan.dt=0.01", "plan.output_dt=0.5",
                                                      "plan.observables=[H,C1,C2]", "plan.keep_paths=2"]))
    ens = result.ensemble
    assert ens.attrs["solver"] == "chord" and ens.diagnostics["chord_iterations"][1:].min() > 0
    assert ens.diagnostics["chord_unconverged_steps"].sum() == 0
    assert np.abs(ens.paths["C1"] - 1).max() < 1e-14 and np.abs(ens.paths["C2"] - 1).max() < 1e-14
    assert ens.paths["pi"].shape == (2, 3, 3) and ens.paths["gamma"].shape == (2, 3, 3)


@pytest.mark.slow
@pytest.mark.parametrize("inertia", [(4.0, 4.0, 1.0), (4.0, 2.0, 1.0)])
def test_tmk_is_second_order_against_a_tight_ode_solve(make_integrator, inertia):
    """Luesink et al. (2023) Sec. 5, consistency test (catches a wrong sign of the TMK exponent, docs/papers/luesink_2023.md): deterministic heavy top at T = 1 against DOP853 (rtol 1e-13):
    error <= 5e-6 at dt = 0.01, observed order in [1.8, 2.2] over dt = 0.02, 0.01, 0.005."""
    from scipy.integrate import solve_ivp
    system = HeavyTop(inertia=inertia, alpha=(0.0, 0.0, 0.0))
    rhs = lambda t, y: np.concatenate([np.asarray(v) for v in system.drift((jnp.asarray(y[:3]), jnp.asarray(y[3:])))])
    z0 = system.initial_state(None)
    exact = solve_ivp(rhs, (0, 1), np.concatenate([z0["pi"], z0["gamma"]]), method="DOP853", rtol=1e-13, atol=1e-14).y[:, -1]
    errors = []
    for dt in (0.02, 0.01, 0.005):
        states, _ = path(make_integrator("tmk"), system, dt, round(1 / dt))
        errors.append(np.abs(np.concatenate([states["pi"][-1], states["gamma"][-1]]) - exact).max())
    order = np.polyfit(np.log([0.02, 0.01, 0.005]), np.log(errors), 1)[0]
    assert errors[1] <= 5e-6 and 1.8 <= order <= 2.2, (errors, order)


@pytest.mark.slow
@pytest.mark.parametrize("ic_kind", ["real_even", "complex"])
def test_sine_euler_tmk_keeps_casimirs_and_direct_trap_does_not(make_integrator, ic_kind):
    """Luesink et al. (2023) Figs 8-9, shortened to T = 200 at dt = 0.5: TMK's relative Casimir errors stay at round-off
    (<= 1e-11; the bands over T = 10^4 are 1e-10), TRAP applied directly drifts far above them."""
    system = SineEuler(ic_kind=ic_kind)
    relative = lambda states, name: np.abs(np.asarray(jax.vmap(system.observables()[name])(states)) /
                                           float(system.observables()[name](states[0])) - 1).max()
    tmk, stats = path(make_integrator("tmk"), system, 0.5, 400)
    trap, _ = path(make_integrator("lp_trapezoidal"), system, 0.5, 400)
    for name in ("C2", "C3"):
        assert relative(tmk, name) <= 1e-11 and relative(trap, name) >= 1e4 * max(relative(tmk, name), 1e-16)
    assert int(stats.unconverged.sum()) == 0 and np.isfinite(trap).all()


@pytest.mark.slow
def test_sine_euler_tmk_is_second_order_and_keeps_energy_without_noise(make_integrator):
    """Luesink et al. (2023) Sec. 6, consistency tests: deterministic sine-Euler TMK is second order at T = 5 and keeps H to
    <= 1e-12 over T = 1000 (2000 steps at dt = 0.5)."""
    system = SineEuler(noise_amplitude=0.0)
    reference, _ = path(make_integrator("tmk"), system, 0.1 / 16, 16 * 50)
    errors = [np.abs(path(make_integrator("tmk"), system, dt, round(5 / dt))[0][-1] - reference[-1]).max()
              for dt in (0.1, 0.05, 0.025)]
    order = np.polyfit(np.log([0.1, 0.05, 0.025]), np.log(errors), 1)[0]
    assert 1.8 <= order <= 2.2, (errors, order)
    long, _ = path(make_integrator("tmk"), system, 0.5, 2000)
    energy = np.asarray(jax.vmap(system.energy)(long))
    assert np.abs(energy - energy[0]).max() <= 1e-12


@pytest.mark.slow
def test_tmk_is_strong_order_one_on_the_stochastic_heavy_top(runs_root):
    """Luesink et al. (2023), strong convergence (a statement without a figure): one (commutative) noise, so order 1 (Remark 4.2). RMS error of
    the state at T = 1 against a fine TMK reference (dt = 2^-9), 200 samples, dt = 2^-3 .. 2^-6. alpha is
    ten times the paper's so that the noise's first-order error dwarfs the deterministic second-order one
    (1.3e-4 at dt = 1/8, against 1.7e-2 here) and the fit measures the stochastic order."""
    study = sgi_run.run(sgi_run.compose(runs_root + [
        "system=heavy_top", "integrator=tmk", "system.alpha=[0.3,0.2,0.1]", "plan=convergence", "plan.paths=200",
        "plan.T=1", "plan.dts=[0.125,0.0625,0.03125,0.015625]", "plan.reference=fine", "plan.reference_refine=8"]))
    r = study.result
    assert r.reference == "fine" and r.paths == 200 and r.nonfinite.sum() == 0
    assert np.all(r.error > 3 * r.se) and r.resolvable.all(), (r.error, r.se)
    assert np.all(np.diff(r.error) < 0)
    assert 0.7 <= r.order <= 1.3 and r.order_ci[0] <= r.order <= r.order_ci[1], (r.order, r.order_ci, r.error)


@pytest.mark.slow
def test_an_ensemble_of_10_4_heavy_tops_gives_e_h_and_its_standard_error(runs_root):
    """The stochastic heavy top (the paper's alpha), 10^4 paths through the runner: E[H](t) and its SE in
    ensemble.h5 read back exactly; at t = 0 the mean is H(z0) with SE 0; at T the SE is positive and is
    the standard deviation of the 10^4 kept final energies over 100."""
    cfg = sgi_run.compose(runs_root + ["system=heavy_top", "integrator=tmk", "plan.paths=10000", "plan.T=1",
                                       "plan.dt=0.01", "plan.output_dt=0.25", "plan.observables=[H]",
                                       "plan.keep_paths=10000"])
    result = sgi_run.run(cfg)
    ens, back = result.ensemble, sgi_run.load(result.path)
    assert result.path.name == "ensemble.h5" and back.verified and not ens.verified
    assert np.array_equal(back.t, [0, 0.25, 0.5, 0.75, 1.0]) and np.array_equal(back.observables["H"]["count"], [10**4] * 5)
    assert np.array_equal(back.mean("H"), ens.mean("H")) and np.array_equal(back.sem("H"), ens.sem("H"))
    system = build(cfg).system
    assert back.mean("H")[0] == float(system.energy(system.initial_state(None))) and back.sem("H")[0] == 0
    kept = back.paths["H"]
    assert kept.shape == (10**4, 5) and np.array_equal(kept[:, 0], np.full(10**4, back.mean("H")[0]))
    assert np.allclose(back.mean("H"), kept.mean(axis=0), rtol=1e-13, atol=0)
    assert np.allclose(back.sem("H")[1:], kept[:, 1:].std(axis=0, ddof=1) / 100, rtol=1e-10, atol=0)
    assert np.all(back.sem("H")[1:] > 0) and np.all(np.diff(back.sem("H")) > 0) and back.sem("H")[-1] < 1e-2
    assert abs(back.mean("H")[-1] - back.mean("H")[0]) < 5 * back.sem("H")[-1] + 1e-3
    assert back.diagnostics["nonfinite_paths"].sum() == 0 and back.diagnostics["chord_unconverged_steps"].sum() == 0


@dataclasses.dataclass(frozen=True)
class ManakovTop(LiePoissonSystem):
    """A free rigid body on so(4)*, written here as its physics only: M skew, M = Omega I + I Omega,
    h = 1/4 sum_ij M_ij^2 / (I_i + I_j); one SALT noise 0.3 M_12 and one quadratic 0.1 M_34^2."""
    noises: ClassVar[int] = 2
    inertia: tuple = (1.0, 2.0, 3.0, 5.0)
    algebra = property(lambda self: lie.MatrixAlgebra(4, complex=False))
    space = property(lambda self: StateSpace((Leaf("M", (4, 4)),), bare=True))

    def hamiltonian(self, m):
        i = jnp.asarray(self.inertia)
        return 0.25 * jnp.sum(m**2 / (i[:, None] + i[None, :]))

    def noise_hamiltonians(self, m):
        return jnp.stack([0.3 * m[0, 1], 0.1 * m[2, 3] ** 2])

    def initial_state(self, key):
        upper = jnp.zeros((4, 4)).at[jnp.triu_indices(4, 1)].set(jnp.array([0.2, -0.6, -0.9, 0.2, -0.6, 0.2]))
        return upper - upper.T


@pytest.mark.slow
def test_a_new_lie_poisson_system_needs_no_integrator_code(make_integrator):
    """so(4) (MatrixAlgebra(4, complex=False)) runs under all three schemes: TMK keeps both Casimirs
    tr(M^2), tr(M^4) to round-off; the midpoint rule (tol 1e-14) keeps tr(M^2), quadratic; TRAP runs."""
    system = ManakovTop()
    z0 = system.initial_state(None)
    initial = {k: float(v) for k, v in system.algebra.casimirs(z0).items()}
    assert set(initial) == {"C2", "C4"} and {"H", "C2", "C4"} <= set(system.observables())
    relative = lambda states, name: float(np.abs(np.asarray(jax.vmap(system.algebra.casimirs)(states)[name])
                                                 / initial[name] - 1).max())
    runs = {name: path(make_integrator(name), system, 0.01, 500) for name in ("tmk", "lp_midpoint", "lp_trapezoidal")}
    (tmk, tmk_stats), (im, im_stats), (trap, _) = runs.values()
    assert relative(tmk, "C2") <= 1e-12 and relative(tmk, "C4") <= 1e-12
    assert int(tmk_stats.unconverged.sum()) == 0 and int(im_stats.unconverged.sum()) == 0
    assert relative(im, "C2") <= 1e-12
    assert np.isfinite(trap).all() and relative(trap, "C2") > 1e-9
    for states in (tmk, im, trap):
        assert np.abs(states + np.swapaxes(states, 1, 2)).max() < 1e-13
    assert np.abs(tmk[-1] - z0).max() > 0.1       # it moved


@pytest.mark.slow
@pytest.mark.parametrize("overrides, enough", [(["system=rigid_body", "integrator=isomp"], 12),
                                               (["system=rigid_body", "integrator=lgvi_cayley"], 10),
                                               (["system=heavy_top", "integrator=lp_midpoint"], 10)])
def test_untested_iterations_keep_the_statistics_within_tol_and_the_counts(overrides, enough, tmp_path):
    """Issue 26: integrator.iterations=K (K iterations before the stopping rule is first tested): one is the
    default bit for bit; more than the loop takes give its statistics to within the tolerance, with every solve
    converged as in the default."""
    from sgi_run.config import compose_setup
    from sgi_run.runner import run
    from sgi_run.summary import solver_counts

    def ensemble(*extra):
        cfg, setup = compose_setup([*overrides, "plan.paths=64", "plan.dt=0.01", "plan.T=1", "cache=off",
                                    f"output_root={tmp_path}", "progress=off", *extra])
        return run(cfg, setup=setup).ensemble

    default, first, many = ensemble(), ensemble("integrator.iterations=1"), ensemble(f"integrator.iterations={enough}")
    assert solver_counts(default) == solver_counts(first) == solver_counts(many)
    for name, stats in default.observables.items():
        assert np.array_equal(first.observables[name]["mean"], stats["mean"])
        scale = np.abs(stats["mean"]).max() + 1e-300
        assert np.abs(many.observables[name]["mean"] - stats["mean"]).max() <= 1e-12 * scale


@pytest.mark.slow
@pytest.mark.parametrize("system", [HeavyTop(), RigidBody()], ids=lambda s: type(s).__name__)
def test_tmk_as_vector_arithmetic_with_a_linearized_jacobian_keeps_every_number_to_round_off(make_integrator,
                                                                                             monkeypatch, system):
    """TMK with the coadjoint exponentials of so(3) and se(3) as vector arithmetic (``lie.hat_polynomial``) and the
    chord's Jacobian from the exponential's linearization against TMK as it was before issue 26 (the matrices
    exp(hat xi) and V, the Jacobian through the exponential itself): 30 stochastic steps, every state to
    round-off, every step's iterations the same."""
    import collections

    from sgi_run.core import solvers

    def so3_before(self, xi, pi):
        return self.exp(xi).T @ pi

    def se3_before(self, s, mu):
        (xi, b), (pi, gamma) = s, mu
        a, bb, c = lie._rotation_coefficients(jnp.dot(xi, xi))
        h = lie.hat(xi)
        rotation, v = jnp.eye(3) + a * h + bb * h @ h, jnp.eye(3) + bb * h + c * h @ h
        return rotation.T @ (pi + jnp.cross(gamma, v @ b)), rotation.T @ gamma

    states, stats = path(make_integrator("tmk"), system, 2.0**-6, 30)
    monkeypatch.setattr(lie.SO3, "coadjoint_exp", so3_before)
    monkeypatch.setattr(lie.SE3, "coadjoint_exp", se3_before)
    newton_solve = solvers.newton_solve
    monkeypatch.setattr(solvers, "newton_solve", lambda *a, linearization=None, **k: newton_solve(*a, **k))
    monkeypatch.setattr(programs, "_programs", collections.OrderedDict())     # the step traced anew
    before, stats_before = path(make_integrator("tmk"), system, 2.0**-6, 30)
    assert_same_to_round_off(states, before)
    assert np.array_equal(stats.iterations, stats_before.iterations)
