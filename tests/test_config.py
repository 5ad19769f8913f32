"""Bad input is refused before any compute, with one line naming key, value and what is allowed."""
import math
import re

import numpy as np
import pytest

import sgi_run
from sgi_run.config import ConfigSource, build, compose, config_hash, expand_sweeps
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


def test_fidelity_is_no_plan_key_an_old_override_or_plan_file_that_sets_it_is_refused(tmp_path):
    """A fidelity is a figure's profile (sgi-figures --fidelity), never a run's: the plan has no such key."""
    import shutil
    from sgi_run.config import CONF_DIR, ConfigSource
    for plan, key in (("default", "'dt'"), ("convergence", "'dts'")):
        message = refused([f"plan={plan}", "plan.fidelity=smoke"])
        assert message.startswith("plan.fidelity='smoke' is not allowed: a known key; 'plan' has [") and key in message
    old = shutil.copytree(CONF_DIR, tmp_path / "conf")
    with (old / "plan" / "default.yaml").open("a") as f:
        f.write("fidelity: reduced\n")
    with pytest.raises(ConfigError) as err:
        compose([], ConfigSource(primary=str(old)))
    assert str(err.value).startswith("plan.fidelity='reduced' is not allowed: a key of the ensemble plan: [")


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


def test_a_glob_sweeps_over_the_options_of_its_group_it_matches():
    assert expand_sweeps(["integrator=glob(svi*)", "plan.dt=0.5"]) == [
        [f"integrator={name}", "plan.dt=0.5"] for name in ("svia", "svib", "svic")]


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


# --- issue 9: names set by groups, solver options (what does not fit: tests/engine/test_budget.py) ---
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


@pytest.mark.parametrize("annotation", [complex, "list[float]"])
def test_a_system_parameter_annotated_with_a_type_no_config_value_has_is_a_clear_error(monkeypatch, annotation):
    """A contributor's parameter annotation outside the config's parameter types is a TypeError naming the class,
    the parameter, its annotation and the annotations allowed (not a bare KeyError), set in the config or not."""
    import dataclasses

    from sgi_run.config import build_system
    from sgi_run.system_parameters import PARAMETER_TYPES
    from sgi_run.systems import SYSTEMS, Kubo

    contributed = dataclasses.make_dataclass("Contributed", [("phase", annotation, dataclasses.field(default=1j))],
                                             bases=(Kubo,), frozen=True)
    monkeypatch.setitem(SYSTEMS, "contributed", contributed)
    shown = annotation if isinstance(annotation, str) else annotation.__name__
    for cfg in ({"name": "contributed"}, {"name": "contributed", "phase": 0.5}):
        with pytest.raises(TypeError) as err:
            build_system(cfg)
        assert str(err.value) == (f"Contributed.phase is annotated {shown!r}: a system parameter's annotation is one of "
                                  f"{sorted(PARAMETER_TYPES)} (the types a config value is checked and converted to)")


def test_every_system_declares_parameter_types_a_config_value_has():
    """What the TypeError above guards against, checked for every registered system at once."""
    from sgi_run.config import check_parameter_types
    from sgi_run.system_parameters import PARAMETER_TYPES
    from sgi_run.systems import SYSTEMS

    for cls in SYSTEMS.values():
        assert set(check_parameter_types(cls).values()) <= set(PARAMETER_TYPES), cls


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


def test_a_plan_file_of_ones_own_with_only_paths_is_refused_naming_the_missing_keys(tmp_path):
    (tmp_path / "plan").mkdir()
    (tmp_path / "plan" / "mine.yaml").write_text("paths: 100\n")
    with pytest.raises(ConfigError) as err:
        compose(["plan=mine"], ConfigSource(added=str(tmp_path)))
    assert str(err.value).startswith("plan='mine' is not allowed: a plan that sets dt, T, output_dt (")


def test_an_output_root_with_a_name_too_long_for_the_file_system_is_one_line(tmp_path):
    """A name of 300 bytes: "File name too long" was a traceback at the first look at the run directory."""
    root = f"{tmp_path}/{'a' * 300}/runs"
    assert refused([f"output_root={root}"]) == (f"output_root={root!r} is not allowed: a directory whose names are "
                                                f"each at most 255 bytes, the file system's limit (one has 300)")
    compose([f"output_root={tmp_path}/{'a' * 255}"])          # 255: allowed


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


@pytest.mark.parametrize("overrides, start", [
    (["integrator=dirk", "integrator.parameters.lam=1e308"], "integrator.parameters.lam=1e+308 is not allowed: "),
    (["integrator.tableau.alpha=[-1e308]"], "integrator.tableau.alpha=[-1e+308] is not allowed: ")])
def test_a_tableau_overflowing_its_conditions_is_refused_without_warnings(overrides, start):
    """The refusal names the coefficient typed (the tableau's residuals are derived from it) and says
    what went wrong: an overflow, not a residual of inf."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        message = refused(overrides)
    assert message.startswith(start + "finite coefficients whose order conditions are finite"), message


def test_a_huge_coefficient_is_refused_by_its_key_with_the_condition_it_misses():
    """a = 1e308 does not overflow midpoint's conditions (alpha*abar + alpha*a is 1e308, finite): the
    tableau is refused for the condition it misses, named with its residual, on the key typed."""
    message = refused(["integrator.tableau.a=[[1e308]]"])
    assert message.startswith("integrator.tableau.a=[[1e+308]] is not allowed: a tableau satisfying all of ")
    assert message.endswith("to 1e-12 ((3.16) alpha*abar + alpha*a misses by 1e+308)")


@pytest.mark.parametrize("override", ["plan.dt=1e-320", "plan.dt=1e-9"])
def test_more_steps_than_random_numbers_can_address_name_dt(override):
    assert refused([override]).startswith("plan.dt=")


@pytest.mark.slow
def test_the_largest_paper_experiment_fits_in_1_gib(monkeypatch):
    """Figure 4.7 at the paper's counts (10^7 paths in shards of 10^4, every path's final state kept for
    densities) is accepted on a small machine: the memory estimate refuses only what cannot run. (Every
    experiment at every fidelity fits in 1 GiB too; tests/figures compose all of them at paper counts.)"""
    from sgi_run.figures.pipeline import compose_runs
    from sgi_run.figures.experiment import discover
    from tests.conftest import ROOT
    monkeypatch.setenv("SGI_RUN_MEMORY_LIMIT", "1GiB")
    [exp] = discover(ROOT / "experiments", only=["fig4_7"])
    assert max(cfg.plan.paths for cfg in compose_runs(exp, "paper").values()) == 10**7


# --- Lie-Poisson systems (Luesink et al. 2023): the bad inputs, through compose as a user types them --------
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


# --- issue 24: a default never contradicts what the user typed ---------------------------------------
def typed_keys(overrides):
    return {o.split("=", 1)[0] for o in overrides}


@pytest.mark.parametrize("overrides", [
    ["plan.paths=5"],                                                    # keep_paths: auto, min(10, paths)
    ["system=heavy_top", "integrator=tmk", "plan.paths=4"],
    ["system=zeitlin_euler", "integrator=isomp", "plan.paths=3"],
    ["plan.T=0.5"], ["plan.T=1.5"], ["plan.dt=2"],                       # output_dt: auto, on the grid
    ["system=zeitlin_euler", "integrator=isomp"],                        # shard_size: auto fits the memory
    ["plan.dt=0.3"], ["plan=convergence", "plan.T=0.1"],                 # T and dts: the typed key is named
    ["system=heavy_top"], ["system=manakov"], ["system=sine_euler"], ["system=rigid_body"],   # integrator
    ["system=circle_pendulum"], ["system=langevin_harmonic"],
    ["system=zeitlin_euler", "integrator=isomp", "system.N=8"],          # ic_lmax: auto, min(10, N-1)
    ["system=point_vortices", "integrator=tmk", "system.circulations=[1,1,1]"],   # colatitudes: named
])
def test_a_default_adapts_to_the_values_the_user_typed(overrides):
    """Only a value the user gave may be refused: composing with one allowed override is never refused by
    a key the user did not type (a default that depends on it adapts)."""
    try:
        compose(overrides)
    except ConfigError as err:
        assert err.key in typed_keys(overrides), str(err)


def test_adapted_defaults_keep_the_hash_of_runs_made_before():
    """keep_paths: auto and output_dt: auto hash as the numbers they settle to (10 and 1.0 for the default
    plan), as the plan files spelled them before."""
    assert config_hash(compose([])) == config_hash(compose(["plan.keep_paths=10", "plan.output_dt=1.0"]))
    assert config_hash(compose(["plan.paths=5"])) == config_hash(compose(["plan.paths=5", "plan.keep_paths=5"]))
    plan = build(compose(["plan.paths=5", "plan.T=0.5"])).plan
    assert (plan.keep_paths, plan.output_dt) == (5, 0.5)
    assert build(compose(["plan.dt=2"])).plan.output_dt == 2.0


@pytest.mark.parametrize("overrides, start", [
    (["plan.paths=20", "output_root=~/x"], "output_root='~/x' is not allowed: "),
    (["plan.paths=20", "plan.T=${nowhere}"], "plan.T='${nowhere}' is not allowed: "),
])
def test_an_unreadable_value_names_its_key_and_value_only(overrides, start):
    message = refused(overrides)
    assert message.startswith(start) and "plan.paths=20" not in message


@pytest.mark.parametrize("overrides, message", [
    (["plan.dt=0.3"], "plan.dt=0.3 is not allowed: one that fits the default plan.T=100.0 (a whole multiple of "
                      "plan.dt = 0.3 (or a plan.dt that divides it)), or set plan.T too"),
    (["plan=convergence", "plan.T=0.1"], "plan.T=0.1 is not allowed: one that fits the default plan.dts=0.125 "
                                         "(step sizes that divide T = 0.1), or set plan.dts too"),
    (["system=heavy_top"], "system='heavy_top' is not allowed: one that fits the default integrator='midpoint' "
                           "(system 'HeavyTop' has structure 'lie_poisson'; lda_prk integrators fit ['canonical']), or "
                           "choose integrator=one of ['lgvi_cayley', 'lp_midpoint', 'lp_trapezoidal', 'tmk']"),
])
def test_a_typed_value_that_contradicts_a_default_is_refused_by_its_own_key(overrides, message):
    """A default the user did not type (plan.T, the integrator) never takes the blame: the key typed does,
    and the line says which default it contradicts. The horizon T is physics: it never changes silently."""
    assert refused(overrides) == message


def test_the_initial_modes_adapt_to_a_small_zeitlin_matrix_and_keep_the_hash_of_runs_made_before():
    """ic_lmax: auto is 10 (the paper's) where N > 10, else every mode, N - 1; hashed as that number."""
    zeitlin = ["system=zeitlin_euler", "integrator=isomp"]
    assert build(compose(zeitlin + ["system.N=8"])).system.ic_lmax == 7
    assert build(compose(zeitlin + ["system.N=16"])).system.ic_lmax == 10
    assert config_hash(compose(zeitlin)) == config_hash(compose(zeitlin + ["system.ic_lmax=10"]))
    assert config_hash(compose(zeitlin + ["system.N=8"])) == config_hash(compose(zeitlin + ["system.N=8", "system.ic_lmax=7"]))


def test_initial_positions_are_physics_a_vortex_count_that_misses_them_is_named():
    """The default positions are four vortices': three circulations are refused by their own key (the
    positions are never invented)."""
    assert refused(["system=point_vortices", "integrator=tmk", "system.circulations=[1,1,1]"]) == (
        "system.circulations=[1, 1, 1] is not allowed: one that fits the default system.colatitudes=(0.7853981633974483, "
        "1.0471975511965976, 1.5707963267948966, 2.0943951023931953) (3 angles (one per vortex, radians)), "
        "or set system.colatitudes too")


def test_on_fail_nan_typed_hashes_as_the_default_rule():
    """integrator.on_fail=nan arrives as the float nan, the file's as the string: one rule, one hash."""
    assert config_hash(compose(["integrator.on_fail=nan"])) == config_hash(compose([]))
    assert config_hash(compose(["integrator.on_fail=count"])) != config_hash(compose([]))


def _built_in_systems() -> list[str]:
    """Every system class the package registers (``systems.SYSTEMS``), not the formula ones (``custom*``, whose
    parameters are a user's): a new system is tested here without being listed by hand."""
    from sgi_run.systems import SYSTEMS
    return sorted(name for name in SYSTEMS if not name.startswith("custom"))


@pytest.mark.parametrize("system_option", _built_in_systems())
def test_extreme_parameters_are_refused_or_give_no_reference_never_a_traceback(system_option):
    """Every float parameter at 1e300, 1e-300, -1e300 is refused (one ConfigError line) or builds a system
    whose reference values are finite numbers or None (none known), never an OverflowError from
    omega^2 = 1e600 or a ZeroDivisionError from a Boltzmann weight that underflows. (The system alone:
    compose and the run's build at each value would take half a minute.)"""
    from sgi_run.composition import composed_groups
    from sgi_run.config import build_system, as_python
    defaults = as_python(composed_groups((f"system={system_option}",)).system)
    floats = [k for k, v in defaults.items() if isinstance(v, float) or (
        isinstance(v, list) and v and all(isinstance(x, float) for x in v))]
    for key in floats:
        for extreme in (1e300, 1e-300, -1e300):
            value = extreme if isinstance(defaults[key], float) else [extreme] * len(defaults[key])
            try:
                system = build_system(defaults | {key: value})
            except ConfigError:
                continue
            for name in system.observables():
                exact, ergodic = system.reference_mean(name), system.ergodic_mean(name)
                assert exact is None or np.all(np.isfinite(exact(np.array([0.0, 1.0])))), (key, value, name)
                assert ergodic is None or math.isfinite(ergodic), (key, value, name)


@pytest.mark.parametrize("overrides, start", [
    (["system=langevin_harmonic", "integrator=svia", "system.omega=1e200"], "system.omega=1e+200 is not allowed: "),
    (["system=langevin_harmonic", "integrator=svia", "system.omega=1e-300"], "system.omega=1e-300 is not allowed: ")])
def test_an_omega_whose_square_is_not_a_float_is_refused(overrides, start):
    assert refused(overrides).startswith(start)


def test_a_boltzmann_weight_that_underflows_gives_no_reference():
    cfg = compose(["system=langevin_double_well", "integrator=svia", "system.beta=1e300", "plan.paths=10"])
    assert build(cfg).system.ergodic_mean("H") is None


@pytest.mark.parametrize("alpha", ["''", "[]"])
def test_an_empty_tableau_vector_is_refused_by_its_own_key_not_by_the_default_matrix(alpha):
    """The config fuzz found alpha='' refused as integrator.tableau.a=[[0.5]]: the default took the blame."""
    message = refused([f"integrator.tableau.alpha={alpha}"])
    assert message.startswith(f"integrator.tableau.alpha={alpha} is not allowed: ") and "default integrator.tableau.a" in message


# --- issue 45: a --config-dir of one's own ------------------------------------------------------------------------
@pytest.mark.parametrize("name, says", [
    ("system/kubo.yaml", "its system/kubo.yaml would be ignored, as Hydra finds {conf}/system/kubo.yaml first "
                         "(name yours my_kubo.yaml and choose system=my_kubo)"),
    ("config.yaml", "its config.yaml would be ignored, as Hydra finds {conf}/config.yaml first "
                    "(name yours my_config.yaml and choose --config-name my_config)")])
def test_a_config_dir_file_that_a_built_in_one_would_shadow_is_refused_by_name(name, says, tmp_path):
    """Hydra searches --config-dir after the primary config directory: a file of a built-in name would be ignored."""
    from sgi_run.config import CONF_DIR, ConfigSource
    (tmp_path / "system").mkdir()
    (tmp_path / name).write_text("defaults:\n  - config\n  - _self_\n" if name == "config.yaml" else "name: kubo\nnu: 0.9\n")
    (tmp_path / "system" / "my_kubo.yaml").write_text("name: kubo\nnu: 0.9\n")      # a name of its own: fine
    with pytest.raises(ConfigError) as err:
        compose(["system=my_kubo"], ConfigSource(added=str(tmp_path)))
    assert str(err.value) == f"--config-dir='{tmp_path}' is not allowed: configs of names of their own: " + \
        says.format(conf=CONF_DIR)
    (tmp_path / name).unlink()
    mine = compose(["system=my_kubo"], ConfigSource(added=str(tmp_path)))
    assert mine.system.nu == 0.9 and config_hash(mine) != config_hash(compose([]))


def test_the_built_in_directory_as_a_config_dir_adds_nothing_and_is_no_shadow():
    from sgi_run.config import CONF_DIR, ConfigSource
    assert compose([], ConfigSource(added=str(CONF_DIR))) == compose([])


@pytest.mark.parametrize("blank", ["", " "])
def test_a_blank_config_dir_is_refused_not_read_as_the_working_directory(blank):
    from sgi_run.config import ConfigSource
    with pytest.raises(ConfigError) as err:
        compose([], ConfigSource(added=blank))
    assert str(err.value) == f"--config-dir={blank!r} is not allowed: an existing directory"


@pytest.mark.parametrize("name, overrides, subdir", [
    ("config", [], ".hydra"), ("config", ["hydra.output_subdir=meta", "plan.seed=1,2"], "meta"),
    ("config", ["hydra.output_subdir=null"], None),
    ("config", ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"], ".hydra"),   # a launcher's key, with its launcher
    ("mine", [], "record")])
def test_where_hydra_would_write_the_jobs_record(name, overrides, subdir, tmp_path):
    """hydra.output_subdir as the command line and the primary config set it: the run writes Hydra's record there."""
    from sgi_run.config import ConfigSource, hydra_node
    (tmp_path / "mine.yaml").write_text("defaults:\n  - config\n  - _self_\nhydra:\n  output_subdir: record\n")
    assert hydra_node(overrides, ConfigSource(name=name, added=str(tmp_path))).output_subdir == subdir


# --- a convergence study's reference method (plan.reference_method) and weak observable --------------------
STUDY = ["plan=convergence", "plan.paths=20", "plan.dts=[0.25,0.125]", "plan.bootstrap=0"]


def test_a_study_without_the_new_keys_keeps_its_hash():
    """Hashes of studies composed before plan.reference_method and plan.weak_observable existed (null: unhashed)."""
    assert config_hash(compose(["plan=convergence"])) == "3ef661dc732d"
    assert config_hash(compose(["plan=convergence", "system=rigid_body", "integrator=lp_midpoint",
                                "plan.reference=fine"])) == "9a72bca011b6"
    assert config_hash(compose([])) == "f7595c3a9b5f"


def test_a_reference_method_is_built_and_hashed_with_its_own_settings(monkeypatch):
    lie_poisson = ["system=rigid_body", "integrator=isomp", *STUDY]
    setup = build(compose([*lie_poisson, "plan.reference_method=lp_trapezoidal"]))
    assert setup.reference_integrator.name == "lp_trapezoidal" and setup.plan.reference == "fine"
    assert build(compose(lie_poisson)).reference_integrator is None
    hashes = {m: config_hash(compose([*lie_poisson, f"plan.reference_method={m}"])) for m in ("lp_trapezoidal", "tmk")}
    assert len(set(hashes.values()) | {config_hash(compose(lie_poisson))}) == 3
    # The reference option's settings are hashed (editing its YAML re-runs the study), its claims are not.
    node = sgi_run.config.reference_integrator_node("tmk")
    monkeypatch.setattr(sgi_run.config, "group_node", lambda *args: node | {"tol": 1e-6})
    assert config_hash(compose([*lie_poisson, "plan.reference_method=tmk"])) != hashes["tmk"]
    monkeypatch.setattr(sgi_run.config, "group_node", lambda *args: node | {"claims": {"strong_order": 1}})
    assert config_hash(compose([*lie_poisson, "plan.reference_method=tmk"])) == hashes["tmk"]
    assert config_hash(compose([*lie_poisson, "plan.weak_observable=H"])) != config_hash(compose(lie_poisson))


@pytest.mark.parametrize("overrides, allowed", [
    (["plan.reference_method=no_such_method"], "null or an integrator option: one of ["),
    (["plan.reference_method=tmk"], "system 'Kubo' has structure 'canonical'"),
    (["plan.reference_method=srkw2"], "a method of Gaussian increments: srkw2 draws three-point variables"),
    (["plan.reference=exact", "plan.reference_method=heun"], "null with plan.reference=exact"),
])
def test_a_reference_method_that_cannot_run_the_reference_is_refused(overrides, allowed):
    message = refused([*STUDY, *overrides])
    assert message.startswith("plan.reference_method=") and allowed in message, message


@pytest.mark.parametrize("overrides, allowed", [
    (["plan.weak_observable=E"], "null or an observable of Kubo: ['H', 'q', 'p']"),
    (["plan.weak_observable=q"], "Kubo has no exact mean of q"),
    (["plan.error=weak", "plan.weak_observable=H"], "null in a weak study"),
])
def test_a_weak_observable_that_cannot_be_measured_is_refused(overrides, allowed):
    message = refused([*STUDY, *overrides])
    assert message.startswith("plan.weak_observable=") and allowed in message, message
