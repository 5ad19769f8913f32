"""Bad input is refused before any compute, with one line naming key, value and what is allowed."""
import re

import pytest

import sgi_run
from sgi_run.config import build, compose, config_hash, expand_sweeps
from sgi_run.core.errors import ConfigError


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


def test_sweep_expansion_keeps_each_value_as_typed():
    """The command line composes each job of expand_sweeps: null stays null, a quoted '1' a string."""
    typed = ["system.q0=null", "plan.fidelity='1'", "plan.T=${plan.dt}", "plan.observables=[H,'q']", "+plan.x=''"]
    assert expand_sweeps(typed) == [typed]
    assert refused(expand_sweeps(["system.q0=null"])[0]).startswith("system.q0=None ")


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


# --- issue 9: what does not fit, names set by groups, solver options ----------------------------------
def test_a_run_that_does_not_fit_in_memory_is_refused_naming_sizes(monkeypatch):
    monkeypatch.setenv("SGI_RUN_MEMORY_LIMIT", "64MiB")
    with pytest.raises(ConfigError) as err:
        compose(["plan.paths=2000000", "plan.shards=1"])
    text = str(err.value)
    assert text.startswith("plan.shards=1 is not allowed: a run that fits in memory: this one needs ")
    assert "64 MiB is SGI_RUN_MEMORY_LIMIT" in text and "more plan.shards" in text
    compose(["plan.paths=2000000"])           # the same paths in shards of 10^4 fit
    with pytest.raises(ConfigError, match="plan.output_dt"):
        compose(["plan.T=2000000", "plan.dt=1", "plan.keep_paths=0"])
    monkeypatch.setenv("SGI_RUN_MEMORY_LIMIT", "lots")
    with pytest.raises(ConfigError, match="SGI_RUN_MEMORY_LIMIT='lots'"):
        compose([])


def test_big_ensembles_fit_unless_they_keep_every_path(monkeypatch):
    """10^7 and 10^9 paths need a shard's memory, not the paths'; what grows with the paths (snapshots,
    per-path time averages) is refused before compute with the bytes it needs and the limit."""
    monkeypatch.setenv("SGI_RUN_MEMORY_LIMIT", "4GiB")
    for paths in (10**7, 10**9):
        compose([f"plan.paths={paths}", "plan.T=10", "plan.dt=0.1", "plan.output_dt=1", "plan.keep_paths=100"])
    with pytest.raises(ConfigError) as err:
        compose(["plan.paths=1000000000", "plan.snapshots=[0,10]"])
    assert str(err.value).startswith("plan.snapshots=(0, 10) is not allowed: a run that fits in memory: this one "
                                     "needs 89.9 GiB (89.4 GiB for plan.snapshots) and 4 GiB is SGI_RUN_MEMORY_LIMIT")
    with pytest.raises(ConfigError, match=r"^plan.time_average=\(0, 10\) is not allowed: .* \(22.4 GiB for plan.time_average\)"):
        compose(["plan.paths=1000000000", "plan.time_average=[0,10]"])


def test_the_memory_estimate_counts_what_the_plan_keeps():
    from sgi_run.config import build
    from sgi_run.engine.simulate import memory_estimate
    small = build(compose(["plan.keep_paths=0"]))
    kept = build(compose(["plan.keep_paths=1000"]))
    grow = lambda setup: memory_estimate(setup.system, setup.integrator, setup.plan)
    # 3 copies x 1000 kept paths x 101 times x (2 coordinates + 1 observable) x 8 bytes
    assert grow(kept).parts["plan.keep_paths"] - grow(small).parts["plan.keep_paths"] == 3 * 1000 * 101 * 3 * 8
    assert grow(small).describe().startswith("about ") and grow(small).describe().endswith("MiB of memory")


@pytest.mark.parametrize("key", ["system.name", "integrator.name", "integrator.family"])
def test_names_are_set_by_the_group_option(key):
    with pytest.raises(ConfigError, match=f"{key}='foo' is not allowed: set by the "):
        compose([f"{key}=foo"])


@pytest.mark.parametrize("override, allowed", [
    ("integrator.tol=-1", "a number in [2.22e-16, 1)"), ("integrator.tol=nan", "a number in [2.22e-16, 1)"),
    ("integrator.max_iter=0", "an integer in [1, 1000000]"), ("integrator.max_iter=2.5", "an integer"),
    ("integrator.tableau.a=[[x]]", "arithmetic over numbers"), ("integrator.tableau.alpha=null", "tableau")])
def test_every_solver_option_and_coefficient_is_checked(override, allowed):
    with pytest.raises(ConfigError, match=re.escape(allowed)) as err:
        compose([override])
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("override", ["+plan.foo=1", "+foo=1", "+system.foo=1", "+integrator.foo=1", "~plan.seed"])
def test_added_and_removed_keys_are_refused(override):
    with pytest.raises(ConfigError) as err:
        compose([override])
    assert "\n" not in str(err.value)


def test_system_parameters_are_typed_before_the_systems_own_checks():
    assert compose(["system=spherical_pendulum", "integrator=csvia", "system.mass=2"]).system.mass == 2
    with pytest.raises(ConfigError, match="system.q0=.* one number or 3 numbers"):
        compose(["system=spherical_pendulum", "integrator=csvia", "system.q0=[1,2]"])
    with pytest.raises(ConfigError, match=r"system.q0=\['a'\] is not allowed: a finite number, or a list"):
        compose(["system=spherical_pendulum", "integrator=csvia", "system.q0=[a]"])


def test_convergence_studies_that_cannot_be_done_are_refused(monkeypatch):
    compose(["plan=convergence"])
    for override, key in [("plan.paths=1000000000000", "plan.paths="), ("plan.bootstrap=1000000000000", "plan.bootstrap="),
                          ("plan.dts=[2e-300,1e-300]", "plan.dts="), ("plan.kind=ensemble", "plan.kind=")]:
        assert refused(["plan=convergence", override]).startswith(key)
    # A study is an ensemble of every step size's paths (issue 10): one shard of 10^8 paths does not fit,
    # while a long strong study no longer draws every fine increment of [0, T] at once.
    monkeypatch.setenv("SGI_RUN_MEMORY_LIMIT", "1GiB")
    message = refused(["plan=convergence", "plan.paths=100000000", "plan.shards=1"])
    assert message.startswith("plan.shards=1") and "1 GiB is SGI_RUN_MEMORY_LIMIT" in message
    compose(["plan=convergence", "plan.T=100", "plan.dts=[0.01,0.005]"])


@pytest.mark.parametrize("value", ["1", "null", "''", "[a]"])
def test_output_root_is_a_path(value):
    assert refused([f"output_root={value}"]).startswith("output_root=")


@pytest.mark.parametrize("override, start", [
    ("integrator.parameters.lam=abc", "integrator.parameters.lam='abc' is not allowed: a finite number"),
    ("integrator.parameters.lam=nan", "integrator.parameters.lam=nan"),
    ("integrator.tableau=null", "integrator.tableau=None is not allowed: the lda_prk coefficients"),
    ("integrator.tol=1e-320", "integrator.tol=1e-320 is not allowed: a tolerance: a number in [2.22e-16, 1)")])
def test_integrator_parameters_and_tableau_name_their_key(override, start):
    assert refused(["integrator=dirk", override]).startswith(start)


@pytest.mark.parametrize("value", ["2.5", "abc", "true"])
def test_a_weak_order_is_an_integer_never_rounded(value):
    assert refused(["integrator=srkw1", f"integrator.tableau.weak_order={value}"]).startswith(
        "integrator.tableau.weak_order=")


def test_a_tableau_overflowing_its_conditions_is_refused_without_warnings():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert refused(["integrator=dirk", "integrator.parameters.lam=1e308"]).startswith("integrator.tableau (dirk)=")


@pytest.mark.parametrize("override", ["plan.dt=1e-320", "plan.dt=1e-9"])
def test_more_steps_than_random_numbers_can_address_name_dt(override):
    assert refused([override]).startswith("plan.dt=")


def test_the_largest_paper_experiment_fits_in_1_gib(monkeypatch):
    """Figure 4.7 at the paper's counts (10^7 paths in shards of 10^4, every path's final state kept for
    densities) is accepted on a small machine: the memory estimate refuses only what cannot run. (Every
    experiment at every fidelity fits in 1 GiB too; tests/figures compose all of them at paper counts.)"""
    from sgi_run.figures.experiment import compose_runs, discover
    from tests.conftest import ROOT
    monkeypatch.setenv("SGI_RUN_MEMORY_LIMIT", "1GiB")
    [exp] = discover(ROOT / "experiments", only=["fig4_7"])
    assert max(cfg.plan.paths for cfg in compose_runs(exp, "paper").values()) == 10**7


# --- Lie-Poisson systems (paper 001): the bad inputs, through compose as a user types them --------
@pytest.mark.parametrize("overrides, message", [
    (["system=sine_euler", "integrator=tmk", "system.n=4"], "system.n=4 is not allowed: an odd integer >= 3"),
    (["system=sine_euler", "integrator=tmk", "system.n=1"], "system.n=1 is not allowed: an odd integer >= 3"),
    (["system=sine_euler", "integrator=tmk", "system.ic_kind=foo"],
     "system.ic_kind='foo' is not allowed: one of ['real_even', 'complex']"),
    (["system=heavy_top", "integrator=tmk", "system.alpha=[1,2]"], "system.alpha=(1.0, 2.0) is not allowed: 3 numbers"),
    (["system=heavy_top", "integrator=tmk", "system.alpha=[1,2,3,4]"],
     "system.alpha=(1.0, 2.0, 3.0, 4.0) is not allowed: 3 numbers"),
    (["system=heavy_top", "integrator=tmk", "system.inertia=[4,4]"], "system.inertia=(4.0, 4.0) is not allowed: 3 numbers"),
    (["system=heavy_top", "integrator=tmk", "system.inertia=[1,0,1]"],
     "system.inertia=(1.0, 0.0, 1.0) is not allowed: three numbers > 0"),
    (["system=rigid_body", "integrator=tmk", "system.inertia=[2,-1,1]"],
     "system.inertia=(2.0, -1.0, 1.0) is not allowed: three numbers > 0"),
    (["system=kubo", "integrator=tmk"],
     "integrator='tmk' is not allowed: system 'Kubo' has structure 'canonical'; lie_poisson integrators fit ['lie_poisson']"),
    (["system=heavy_top", "integrator=midpoint"],
     "integrator='midpoint' is not allowed: system 'HeavyTop' has structure 'lie_poisson'; lda_prk integrators fit ['canonical']"),
], ids=["even-n", "n-1", "ic_kind", "alpha-2", "alpha-4", "inertia-2", "inertia-zero", "inertia-negative",
        "tmk-on-kubo", "midpoint-on-heavy_top"])
def test_lie_poisson_bad_inputs_are_refused_naming_key_value_and_what_is_allowed(overrides, message):
    assert refused(overrides) == message
