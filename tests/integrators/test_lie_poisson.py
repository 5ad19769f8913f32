"""TMK, IM and TRAP on the heavy top and the rigid body (paper 001, spec 001 sections 1.2, 3, 5)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run.core import noise
from sgi_run.systems import HeavyTop, RigidBody, SineEuler


def path(integrator, system, dt, steps, seed=3):
    """One realisation, its increments drawn as the engine draws path 0's."""
    path_key = noise.path_keys(seed, 0, 1)[0]
    key = noise.noise_key(path_key)
    xi = jax.vmap(lambda k: noise.increments("gaussian", key, k, dt, system.noises))(jnp.arange(steps))
    step = jax.jit(lambda z, x: integrator.advance(system, z, dt, x))

    def body(z, x):
        z, stats = step(z, x)
        return z, (z, stats)
    _, (states, stats) = jax.lax.scan(body, system.initial_state(noise.init_key(path_key)), xi)
    return states, stats


DETERMINISTIC = HeavyTop(inertia=(4.0, 2.0, 1.0), alpha=(0.0, 0.0, 0.0))


def test_tmk_takes_the_plus_exponent(make_integrator):
    """P1: with the wrong sign every invariant is still kept, but the path is wrong: against IM at a ten
    times smaller step, TMK's deterministic heavy top at T = 1 agrees to O(dt^2)."""
    tmk, _ = path(make_integrator("tmk"), DETERMINISTIC, 0.01, 100)
    fine, _ = path(make_integrator("lp_midpoint"), DETERMINISTIC, 0.001, 1000)
    error = max(float(jnp.max(jnp.abs(tmk[k][-1] - fine[k][-1]))) for k in ("pi", "gamma"))
    assert error < 1e-4


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


def test_im_keeps_quadratic_casimirs_when_solved_tightly_and_trap_does_not(make_integrator):
    """P3: the midpoint rule keeps quadratic invariants exactly (at tol 1e-14); the trapezoidal rule does not."""
    system = HeavyTop(alpha=(0.3, 0.2, 0.1))
    im, _ = path(make_integrator("lp_midpoint"), system, 0.02, 500)
    trap, _ = path(make_integrator("lp_trapezoidal"), system, 0.02, 500)
    c2 = lambda s: np.abs(np.sum(s["gamma"] ** 2, axis=1) - 1).max()
    assert c2(im) < 1e-12 and c2(trap) > 1e-8


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


@pytest.mark.parametrize("inertia", [(4.0, 4.0, 1.0), (4.0, 2.0, 1.0)])
def test_tmk_is_second_order_against_a_tight_ode_solve(make_integrator, inertia):
    """Spec 001 consistency test (catches P1): deterministic heavy top at T = 1 against DOP853 (rtol 1e-13):
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


@pytest.mark.parametrize("ic_kind", ["real_even", "complex"])
def test_sine_euler_tmk_keeps_casimirs_and_direct_trap_does_not(make_integrator, ic_kind):
    """Spec 001 Figs 8-9, shortened to T = 200 at dt = 0.5: TMK's relative Casimir errors stay at round-off
    (<= 1e-11; the bands over T = 10^4 are 1e-10), TRAP applied directly drifts far above them."""
    system = SineEuler(ic_kind=ic_kind)
    relative = lambda states, name: np.abs(np.asarray(jax.vmap(system.observables()[name])(states)) /
                                           float(system.observables()[name](states[0])) - 1).max()
    tmk, stats = path(make_integrator("tmk"), system, 0.5, 400)
    trap, _ = path(make_integrator("lp_trapezoidal"), system, 0.5, 400)
    for name in ("C2", "C3"):
        assert relative(tmk, name) <= 1e-11 and relative(trap, name) >= 1e4 * max(relative(tmk, name), 1e-16)
    assert int(stats.unconverged.sum()) == 0 and np.isfinite(trap).all()


def test_sine_euler_tmk_is_second_order_and_keeps_energy_without_noise(make_integrator):
    system = SineEuler(noise_amplitude=0.0)
    reference, _ = path(make_integrator("tmk"), system, 0.1 / 16, 16 * 50)
    errors = [np.abs(path(make_integrator("tmk"), system, dt, round(5 / dt))[0][-1] - reference[-1]).max()
              for dt in (0.1, 0.05, 0.025)]
    order = np.polyfit(np.log([0.1, 0.05, 0.025]), np.log(errors), 1)[0]
    assert 1.8 <= order <= 2.2, (errors, order)
    long, _ = path(make_integrator("tmk"), system, 0.5, 400)
    energy = np.asarray(jax.vmap(system.energy)(long))
    assert np.abs(energy - energy[0]).max() <= 1e-12
