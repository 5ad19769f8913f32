"""The exact-of-method moment oracle on the Kubo oscillator, and Monte Carlo against it."""
import numpy as np
import pytest

from sgi_run.engine.ensemble import run_shards
from sgi_run.engine.linear_oracle import method_moments
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import Simulator
from sgi_run.systems import Kubo

# Kraus & Tyranowski (2021) Figure 4.1, values computed independently by the project: E(H)(5000) of each method.
SPEC_E5000 = [("midpoint", 0.5, 0.025456), ("dirk", 0.5, 0.016212), ("stormer_verlet", 0.2, 0.14532),
              ("heun", 0.02, 3.0127), ("r2", 0.02, 3.0127), ("e1", 0.02, 0.0050673)]


@pytest.mark.parametrize("name, dt, expected", SPEC_E5000)
def test_oracle_matches_the_spec_table(name, dt, expected, make_integrator):
    plan = Plan(paths=1, dt=dt, T=5000.0, output_dt=1000.0)
    mm = method_moments(Kubo(), make_integrator(name), plan)
    assert mm.mean_H[0] == pytest.approx(2.0) and mm.var_H[0] == pytest.approx(0.0, abs=1e-12)
    assert mm.mean_H[-1] == pytest.approx(expected, rel=2e-4)


def test_e1_oracle_sees_the_dz_correlation(make_integrator):
    """Burrage & Burrage's E1 (cited, not printed, by Kraus & Tyranowski 2021): E1(0.01) gives 0.010614 only with the correct (dW, dZ) pair."""
    plan = Plan(paths=1, dt=0.01, T=5000.0, output_dt=5000.0)
    assert method_moments(Kubo(), make_integrator("e1"), plan).mean_H[-1] == pytest.approx(0.010614, rel=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["midpoint", "dirk", "stormer_verlet", "heun", "e1"])
def test_monte_carlo_agrees_with_the_oracle(name, make_integrator):
    """Every output time within 4 standard errors, and the standard error itself within 20%."""
    system, integrator = Kubo(nu=0.3), make_integrator(name)
    plan = Plan(paths=4000, dt=0.1, T=4.0, output_dt=0.5)
    mm = method_moments(system, integrator, plan)
    mc = run_shards(Simulator(system, integrator, plan), None).moments
    z = (mc.mean[1:, 0] - mm.mean_H[1:]) / mm.expected_sem(plan.paths)[1:]
    assert np.all(np.abs(z) < 4), z
    assert np.allclose(mc.sem[1:, 0], mm.expected_sem(plan.paths)[1:], rtol=0.2)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["midpoint", "dirk", "stormer_verlet", "heun", "e1", "srkw2", "rs2"])
def test_the_step_size_as_an_argument_keeps_the_step_matrices_to_round_off(name, make_integrator):
    """One program per system and method, the step size its argument: the same matrices, to round-off, as the
    step with the step size written in as a constant (as the oracle computed them before)."""
    import jax
    import jax.numpy as jnp

    from sgi_run.engine.linear_oracle import _nodes, step_matrices
    system, integrator = Kubo(), make_integrator(name)
    for dt in (0.5, 0.05):
        xi, _ = _nodes(integrator.noise_kind, dt, 120, 30)
        columns = lambda x: jax.vmap(lambda e: integrator.step(system, e, dt, x)[0])(jnp.eye(2)).T
        constant = np.asarray(jax.jit(jax.vmap(columns))(jnp.asarray(xi)))
        np.testing.assert_allclose(step_matrices(system, integrator, dt, xi), constant, rtol=0, atol=1e-14)
