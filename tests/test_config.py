"""Bad input is refused before any compute, with one line naming key, value and what is allowed."""
import pytest

import sgi_run
from sgi_run.config import build, compose, config_hash, expand_sweeps


def refused(overrides):
    with pytest.raises(sgi_run.ConfigError) as err:
        compose(overrides)
    message = str(err.value)
    assert "\n" not in message
    return message


def test_defaults_compose():
    cfg = compose([])
    assert (cfg.system.name, cfg.integrator.name, cfg.executor.name) == ("kubo", "midpoint", "local")
    setup = build(cfg)
    assert setup.plan.paths == cfg.plan.paths


def test_unknown_group_option():
    message = refused(["integrator=rk4"])
    assert message.startswith("integrator='rk4'") and "midpoint" in message and "dirk" in message


def test_unknown_key():
    message = refused(["plan.dtt=0.1"])
    assert message.startswith("plan.dtt=") and "'dt'" in message


def test_unknown_system_parameter():
    assert refused(["system.gamma=1"]).startswith("system.gamma=")


@pytest.mark.parametrize("override, key", [
    ("plan.dt=0", "plan.dt="), ("plan.dt=-0.5", "plan.dt="), ("plan.T=1.05", "plan.T="),
    ("plan.paths=0", "plan.paths="), ("system.nu=3", "system.nu="),
    ("plan.observables=[H,energy]", "plan.observables="), ("executor.name=mpi", "executor.name="),
    ("progress=maybe", "progress="),
])
def test_bad_values(override, key):
    assert refused([override]).startswith(key)


def test_incompatible_pair_is_refused():
    """An explicit SERK handles one noise; a two-noise system is refused before compute."""
    import dataclasses

    from sgi_run.integrators import make_integrator
    from sgi_run.systems import Kubo
    from tests.conftest import integrator_config

    @dataclasses.dataclass(frozen=True)
    class TwoNoiseKubo(Kubo):
        noises = 2

    with pytest.raises(sgi_run.ConfigError, match="at most 1 noise"):
        make_integrator(integrator_config("e1")).check_fits(TwoNoiseKubo())

    @dataclasses.dataclass(frozen=True)
    class LiePoissonStandIn(Kubo):
        structure = "lie_poisson"

    with pytest.raises(sgi_run.ConfigError, match="structure 'lie_poisson'") as err:
        make_integrator(integrator_config("midpoint")).check_fits(LiePoissonStandIn())
    assert str(err.value).startswith("integrator='midpoint'")


def test_sweeps_expand_to_every_job():
    jobs = expand_sweeps(["integrator=midpoint,dirk", "plan.dt=0.5,0.1", "plan.paths=10"])
    assert len(jobs) == 4 and ["integrator=dirk", "plan.dt=0.1", "plan.paths=10"] in jobs


def test_hash_ignores_display_keys_only():
    a = compose(["progress=off"])
    assert config_hash(a) == config_hash(compose(["progress=on", "output_root=/elsewhere"]))
    assert config_hash(a) != config_hash(compose(["plan.seed=1"]))


@pytest.mark.parametrize("override", ["plan.brownian_refine=2", "plan.truncate=1.0"])
def test_three_point_increments_refuse_refinement_and_truncation(override):
    assert refused(["integrator=srkw1", override]).startswith(override.split("=")[0] + "=")


def test_integer_values_of_float_parameters_become_floats(runs_root):
    """`system.q0=2` on the command line is an int; an implicit method must still run (its Newton
    solve differentiates the state, which must be a float array)."""
    from sgi_run.config import build_system
    system = build_system({"name": "kubo", "q0": 2, "p0": 0})
    assert isinstance(system.q0, float) and isinstance(system.p0, float)
    result = sgi_run.run(sgi_run.compose(runs_root + ["integrator=midpoint", "system.q0=2", "system.p0=0",
                                                      "plan.paths=10", "plan.T=1"]))
    assert result.ensemble.mean("H")[0] == 2.0
