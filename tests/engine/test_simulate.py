import pytest
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.engine.ensemble import run_shards
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import Simulator
from sgi_run.systems import Kubo


@dataclasses.dataclass(frozen=True)
class BlowsUpAboveUnitEnergy(Kubo):
    """A harmonic oscillator (beta = nu = 0, so H is nearly constant along numerical paths)
    started at q0 ~ N(0,1), whose forcing is NaN where H > 1: the paths with q0^2/2 > 1 fail."""
    beta: float = 0.0
    nu: float = 0.0

    def initial_state(self, key):
        return jnp.array([jax.random.normal(key), 0.0])

    def forcing(self, q, p):
        return 0.0 * jnp.sqrt(1.0 - self.hamiltonian(q, p)) * p



@pytest.mark.slow
def test_shard_count_does_not_change_the_numbers(make_integrator):
    integrator = make_integrator("heun")
    base = dict(paths=1000, dt=0.05, T=2.0, output_dt=0.5, keep_paths=5, observables=["H", "q"])
    one = run_shards(Simulator(Kubo(nu=0.3), integrator, Plan(**base, shards=1)), None)
    seven = run_shards(Simulator(Kubo(nu=0.3), integrator, Plan(**base, shards=7)), None)
    assert np.array_equal(one.moments.count, seven.moments.count)
    assert np.allclose(one.moments.mean, seven.moments.mean, rtol=1e-13, atol=1e-15)
    assert np.allclose(one.moments.var, seven.moments.var, rtol=1e-11)
    for name in ("q", "p", "H"):
        assert np.array_equal(one.kept[name], seven.kept[name])


@pytest.mark.slow
def test_nonfinite_paths_are_counted_and_excluded(make_integrator):
    plan = Plan(paths=500, dt=0.1, T=1.0, output_dt=0.5, shards=3, keep_paths=500, observables=["H", "q"])
    result = run_shards(Simulator(BlowsUpAboveUnitEnergy(), make_integrator("heun"), plan), None)
    # All paths are kept, so the engine's counts can be checked path by path.
    failed = ~np.isfinite(result.kept["q"][:, -1])
    bad = int(failed.sum())
    assert 50 < bad < 120  # about P(q0^2/2 > 1) = 16% of 500
    assert result.nonfinite[0] == 0 and result.nonfinite[-1] == bad
    assert result.moments.count[-1, 0] == plan.paths - bad
    good_h = result.kept["H"][~failed, -1]
    assert np.isclose(result.moments.mean[-1, 0], good_h.mean(), rtol=1e-12)


def test_implicit_blow_up_is_counted_not_raised(make_integrator):
    plan = Plan(paths=200, dt=0.1, T=0.5, output_dt=0.5, keep_paths=200)
    result = run_shards(Simulator(BlowsUpAboveUnitEnergy(), make_integrator("midpoint"), plan), None)
    assert 0 < result.nonfinite[-1] == np.sum(~np.isfinite(result.kept["q"][:, -1]))


@pytest.mark.slow
def test_newton_iterations_are_recorded(make_integrator):
    plan = Plan(paths=50, dt=0.1, T=1.0, output_dt=0.5)
    result = run_shards(Simulator(Kubo(), make_integrator("dirk"), plan), None)
    per_step = result.newton_iterations[1:] / (50 * plan.steps_per_output)
    assert np.all((per_step >= 2) & (per_step <= 6)) and result.newton_max[1:].max() <= 6


@pytest.mark.slow
def test_change_observables_are_paired_differences_from_t0(make_integrator):
    from sgi_run.systems import VlasovLorentz
    plan = Plan(paths=300, dt=0.05, T=2.0, output_dt=1.0, keep_paths=300, observables=["H", "H_change"])
    result = run_shards(Simulator(VlasovLorentz(), make_integrator("rs2"), plan), None)
    h, dh = result.kept["H"], result.kept["H_change"]
    assert np.allclose(dh, h - h[:, :1], atol=1e-14)
    assert np.all(dh[:, 0] == 0.0)
    m = result.moments
    # The paired SE is the spread of the change, far below the spread of H itself.
    assert m.sem[-1, 1] < 0.2 * m.sem[-1, 0]


def test_unknown_change_observable_is_refused():
    import pytest

    from sgi_run.core.errors import ConfigError
    from sgi_run.engine.simulate import observable_functions
    with pytest.raises(ConfigError, match="plan.observables='energy_change'.*H_change"):
        observable_functions(Kubo(), ["H", "energy_change"])


@pytest.mark.slow
def test_snapshots_hold_every_paths_state_whatever_the_shards(make_integrator):
    base = dict(paths=101, dt=0.05, T=2.0, output_dt=0.5, snapshots=[0, 2.0], keep_paths=101)
    runs = [run_shards(Simulator(Kubo(nu=0.3), make_integrator("heun"), Plan(**base, shards=s)), None) for s in (1, 4)]
    for r in runs:
        assert r.snapshots.shape == (2, 101, 2)
        assert np.array_equal(r.snapshots[1, :, 0], r.kept["q"][:, -1])
        assert np.array_equal(r.snapshots[0, :, 1], r.kept["p"][:, 0])
    assert np.array_equal(runs[0].snapshots, runs[1].snapshots)


def test_snapshot_times_must_be_output_times():
    import pytest

    from sgi_run.core.errors import ConfigError
    with pytest.raises(ConfigError, match="plan.snapshots"):
        Plan(paths=10, dt=0.1, T=2.0, output_dt=0.5, snapshots=[0.7])
    with pytest.raises(ConfigError, match="plan.snapshots"):
        Plan(paths=10, dt=0.1, T=2.0, output_dt=0.5, snapshots=[3.0])
    assert Plan(paths=10, dt=0.1, T=2.0, output_dt=0.5, snapshots=[2.0, 0]).snapshot_indices == [0, 4]


def test_time_averages_are_every_paths_mean_over_the_window_whatever_the_shards(make_integrator):
    base = dict(paths=101, dt=0.05, T=2.0, output_dt=0.5, keep_paths=101, observables=["H", "q"],
                time_average=[1.0, 2.0])
    runs = [run_shards(Simulator(Kubo(nu=0.3), make_integrator("heun"), Plan(**base, shards=s)), None) for s in (1, 4)]
    for r in runs:
        assert r.time_averages.shape == (101, 2)
        assert np.allclose(r.time_averages[:, 0], r.kept["H"][:, 2:].mean(axis=1), rtol=1e-14)   # t = 1, 1.5, 2
    assert np.array_equal(runs[0].time_averages, runs[1].time_averages)
    without = run_shards(Simulator(Kubo(nu=0.3), make_integrator("heun"), Plan(**{**base, "time_average": None})), None)
    assert without.time_averages is None


def test_a_path_nonfinite_in_the_window_has_no_time_average(make_integrator):
    plan = Plan(paths=300, dt=0.1, T=1.0, output_dt=0.5, keep_paths=300, time_average=[0.5, 1.0])
    result = run_shards(Simulator(BlowsUpAboveUnitEnergy(), make_integrator("heun"), plan), None)
    failed = ~np.all(np.isfinite(result.kept["H"][:, 1:]), axis=1)
    assert failed.any() and np.array_equal(np.isnan(result.time_averages[:, 0]), failed)


def test_time_average_window_must_be_output_times():
    import pytest

    from sgi_run.core.errors import ConfigError
    for bad in ([0.7, 2.0], [1.0, 3.0], [2.0, 1.0], [1.0]):
        with pytest.raises(ConfigError, match="plan.time_average"):
            Plan(paths=10, dt=0.1, T=2.0, output_dt=0.5, time_average=bad)
    assert list(Plan(paths=10, dt=0.1, T=2.0, output_dt=0.5, time_average=[1.0, 2.0]).time_average_indices) == [2, 3, 4]


@pytest.mark.slow
def test_a_truncation_rule_is_its_bound_at_the_plan_step(make_integrator):
    from sgi_run.core import noise
    base = dict(paths=300, dt=0.5, T=2.0, output_dt=0.5, keep_paths=300, observables=["H"])
    by_rule, by_bound, untruncated = (run_shards(Simulator(Kubo(beta=1.0), make_integrator("heun"), Plan(**base, truncate=t)), None)
                                      for t in ("log_dt", noise.truncation_bound("log_dt", 0.5), None))
    assert np.array_equal(by_rule.kept["q"], by_bound.kept["q"])
    assert not np.array_equal(by_rule.kept["q"], untruncated.kept["q"])


# --- the step size is an argument of the compiled programs --------------------------------------------
def _programs(system, integrator, plan) -> tuple[str, str, str]:
    """The text of the three programs a shard runs: a block's draws, the steps through it, the statistics."""
    from sgi_run.core import noise
    sim = Simulator(system, integrator, plan)
    size = plan.paths_per_shard
    keys = noise.path_keys(plan.seed, 0, size)
    noise_keys, valid = jax.vmap(noise.noise_key)(keys), jnp.ones(size, bool)
    z0, _ = sim._initial(keys, valid)
    xi = sim._draws(noise_keys, 0, sim.block_steps, sim.dt, sim.bound)
    return (sim._draws.lower(noise_keys, 0, sim.block_steps, sim.dt, sim.bound).as_text(),
            sim._steps.lower((z0, sim._no_drift, *sim._no_counts), z0, xi, valid, sim.dt).as_text(),
            sim._statistics_of.lower(z0, z0, valid, sim._no_drift).as_text())


@pytest.mark.slow
def test_runs_that_differ_only_in_step_size_compile_the_same_programs(make_integrator):
    """A step-size scan (a figure's dt sweep, a user's multirun over plan.dt) lowers to the same programs, which
    JAX's compilation cache then compiles once: the step size and the truncation bound are their arguments. The
    draws do not depend on the method, nor the statistics on the method or the noise."""
    midpoint, heun = make_integrator("midpoint"), make_integrator("heun")
    plan = lambda dt, **more: Plan(paths=20, dt=dt, T=4 * dt, output_dt=2 * dt, observables=["H"], **more)
    texts = {dt: _programs(Kubo(), midpoint, plan(dt)) for dt in (0.1, 0.05, 0.3)}
    assert len(set(texts.values())) == 1
    assert _programs(Kubo(), midpoint, plan(0.1, truncate="log_dt")) == _programs(Kubo(), midpoint, plan(0.2, truncate=1.5))
    draws, steps, statistics = _programs(Kubo(), heun, plan(0.2))
    assert draws == texts[0.1][0] and statistics == texts[0.1][2] and steps != texts[0.1][1]
    assert _programs(Kubo(beta=0.3), midpoint, plan(0.1))[0] == texts[0.1][0]
    # ... while a block of another length is another program
    longer = _programs(Kubo(), midpoint, Plan(paths=20, dt=0.1, T=0.4, output_dt=0.4, observables=["H"]))
    assert longer[0] != texts[0.1][0] and longer[1] != texts[0.1][1] and longer[2] == texts[0.1][2]


@pytest.mark.slow
@pytest.mark.parametrize("system, integrator", [("kubo", "midpoint"), ("kubo", "e1"), ("kubo", "srkw2"),
                                                ("langevin_harmonic", "svia"), ("heavy_top", "tmk")])
def test_the_step_size_as_an_argument_keeps_every_number_to_round_off(system, integrator):
    """The engine's paths against the same method stepped with the step size written into the program as a
    constant (as the engine compiled it before): equal to round-off, for an implicit, a pair-increment, a weak,
    a Langevin and a Lie-Poisson method."""
    from sgi_run.config import compose_setup
    from sgi_run.core import noise
    _, setup = compose_setup([f"system={system}", f"integrator={integrator}", "plan.paths=3", "plan.T=1",
                              "plan.dt=0.05", "plan.output_dt=0.05", "plan.keep_paths=3"])
    system, integrator, plan = setup.system, setup.integrator, setup.plan
    engine = run_shards(Simulator(system, integrator, plan), None)
    steps = round(plan.T / plan.dt)
    dt = float(plan.dt)
    for path in range(plan.paths):
        path_key = noise.path_keys(plan.seed, path, 1)[0]
        key = noise.noise_key(path_key)
        xi = jax.vmap(lambda k: noise.increments(integrator.noise_kind, key, k, dt, system.noises))(jnp.arange(steps))
        step = jax.jit(lambda z, x: integrator.advance(system, z, dt, x)[0])
        z, states = system.initial_state(noise.init_key(path_key)), []
        for x in xi:
            z = step(z, x)
            states.append(z)
        for name, view in system.space.view_functions().items():
            by_hand = np.stack([np.asarray(view(z)) for z in states])
            kept = np.asarray(engine.kept[name][path, 1:])
            assert np.max(np.abs(kept - by_hand) / np.maximum(np.abs(by_hand), 1.0)) <= 1e-13, (name, path)


@pytest.mark.parametrize("overrides", [["system=rigid_body", "integrator=isomp"], ["system=kubo", "integrator=e1"]])
def test_a_block_of_draws_is_every_paths_own_draw_paths_last(overrides):
    """A block (steps, rows, m, paths) holds, at each step and path, what ``noise.increments`` draws for that
    path and step alone (three noises of the rigid body, E1's (dW, dZ)), to round-off: the block's transform
    is vectorised over the paths, and a vectorised erfinv rounds differently from a lone one by an ulp."""
    from sgi_run.config import compose_setup
    from sgi_run.core import noise
    _, setup = compose_setup(overrides + ["plan.paths=50", "plan.dt=0.01", "plan.T=1"])
    sim = Simulator(setup.system, setup.integrator, setup.plan)
    _, noise_keys = sim._keys(0, 50)
    block = np.asarray(sim._draws(noise_keys, 7, 5, sim.dt, sim.bound))
    kind, m = setup.integrator.noise_kind, setup.system.noises
    alone = np.array([[np.asarray(noise.increments(kind, noise_keys[p], 7 + k, sim.dt, m)) for p in range(50)]
                      for k in range(5)])
    assert block.shape == (5,) + alone.shape[2:] + (50,)
    assert np.allclose(np.moveaxis(block, -1, 1), alone, rtol=1e-15, atol=1e-18)
