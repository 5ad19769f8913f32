"""The public API (``sgi_run.__init__``, written in ``sgi_run.api``): ``help(sgi_run)`` reads as its page, each
entry point documents itself with an example that runs, and the objects run as the command line's config."""
import dataclasses
import doctest
import inspect
import os
import pydoc

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run import systems
from sgi_run.config import compose, config_hash, run_dir_for
from sgi_run.integrators.lda_prk import LdAPartitionedRK, LdAPRKTableau
from sgi_run.runner import SimulatorBuilder
from sgi_run.systems import CanonicalSystem, Kubo

FUNCTIONS = ["simulate", "integrator", "plan", "convergence_plan", "formula_system", "register_system", "step",
             "draw", "initial_state", "compose", "run", "load"]
CLASSES = ["Ensemble", "RunResult", "ConfigError"]
PUBLIC = FUNCTIONS + CLASSES


def documented():
    """The package, every public function and class, the Ensemble's public methods and properties, and the
    systems module (its class registry)."""
    methods = [member for name, member in vars(sgi_run.Ensemble).items()
               if not name.startswith("_") and (callable(member) or isinstance(member, property))]
    return [sgi_run, systems, systems.register] + [getattr(sgi_run, name) for name in PUBLIC] + methods


def test_help_lists_the_public_api_and_no_absolute_path():
    text = pydoc.render_doc(sgi_run, renderer=pydoc.plaintext)
    assert set(PUBLIC) <= set(sgi_run.__all__)
    for name in FUNCTIONS:
        assert f"\n    {name}(" in text, name
    for name in CLASSES:
        assert f"class {name}" in text, name
    assert all(name in inspect.getdoc(sgi_run) for name in PUBLIC)
    assert "__dir__" not in vars(sgi_run) and "__getattr__" not in vars(sgi_run)
    shown = text.split("\nFILE\n")[0]      # pydoc's own FILE section says where the package is
    assert str(sgi_run.config.CONF_DIR) not in shown and os.path.dirname(sgi_run.__file__) not in shown


def test_public_signatures_name_no_private_type():
    for name in FUNCTIONS:
        signature = str(inspect.signature(getattr(sgi_run, name)))
        assert all(private not in signature for private in ("ConfigSource", "BuiltConfig", " _")), (name, signature)


@pytest.mark.slow
@pytest.mark.parametrize("obj", documented(), ids=lambda obj: getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or obj.fget.__qualname__)
def test_each_entry_point_has_an_example_that_runs(obj, tmp_path, monkeypatch):
    """Examples run in a scratch directory (their runs go to its outputs/runs; they share one small
    config, so all but the first reuse it). A class an example registers is gone after it."""
    monkeypatch.chdir(tmp_path)
    target = obj.fget if isinstance(obj, property) else obj
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(target, globs={"sgi_run": sgi_run}) if t.examples]
    assert tests, f"{target} has no example"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    registered = dict(systems.SYSTEMS)
    try:
        for test in tests:
            runner.run(test)
    finally:
        systems.SYSTEMS.clear()
        systems.SYSTEMS.update(registered)
    assert runner.summarize(verbose=False).failed == 0


# --- objects run as the command line's config -----------------------------------------------------------------
@pytest.mark.slow
def test_objects_run_as_the_same_overrides_do(tmp_path):
    """Same config hash, run directory, numbers; the CLI's config then finds the objects' run in the cache."""
    root = tmp_path / "runs"
    made = sgi_run.simulate(Kubo(nu=0.01), sgi_run.integrator("dirk", tol=1e-10),
                            sgi_run.plan(paths=50, T=2, seed=3), output_root=root)
    cfg = compose(["system.nu=0.01", "integrator=dirk", "integrator.tol=1e-10", "plan.paths=50", "plan.T=2",
                   "plan.seed=3", f"output_root={root}", "progress=off"])
    assert config_hash(made.ensemble.config) == config_hash(cfg)
    assert made.run_dir == run_dir_for(cfg) and not made.cached
    again = sgi_run.run(cfg)
    assert again.cached and np.array_equal(again.ensemble.mean("H"), made.ensemble.mean("H"))


@pytest.mark.slow
def test_an_integrator_of_ones_own_from_a_tableau_object(tmp_path):
    """The midpoint rule's tableau as an object: the bundled method's numbers, filed under its own name."""
    half, one = np.array([[0.5]]), np.array([1.0])
    tableau = LdAPRKTableau(a=half, abar=half, ahat=half, b=half, bbar=half, bhat=half,
                            alpha=one, alphahat=one, beta=one, betahat=one)
    mine = sgi_run.simulate(Kubo(), LdAPartitionedRK(name="my_midpoint", tableau=tableau),
                            sgi_run.plan(paths=30, T=1), output_root=tmp_path)
    bundled = sgi_run.simulate(Kubo(), "midpoint", sgi_run.plan(paths=30, T=1), output_root=tmp_path)
    assert mine.run_dir.parent.name == "kubo-my_midpoint"
    np.testing.assert_array_equal(mine.ensemble.mean("H"), bundled.ensemble.mean("H"))


@pytest.mark.parametrize("call, message", [
    (lambda: sgi_run.integrator("dirk", lam=0.3),
     "integrator.lam=0.3 is not allowed: a known key; 'integrator' has ['claims', 'family', 'iterations', "
     "'max_iter', 'name', 'norm', 'on_fail', 'parameters', 'solver', 'tableau', 'tol']"),
    (lambda: sgi_run.integrator("dirk", family="lda_prk"),
     "integrator.family='lda_prk' is not allowed: set by the integrator group: choose integrator=<option>, one of"),
    (lambda: sgi_run.integrator("midpoint", tol=-1.0), "integrator.tol=-1.0 is not allowed"),
    (lambda: sgi_run.plan(pahts=10), "plan.pahts=10 is not allowed: a known key; 'plan' has"),
    (lambda: sgi_run.plan(dt=0.3, T=1), "plan.T=1 is not allowed: a whole multiple of plan.dt = 0.3"),
    (lambda: sgi_run.convergence_plan(kind="ensemble"), "plan.kind='ensemble' is not allowed: set by the plan group"),
    (lambda: sgi_run.formula_system("kubo"), "kind='kubo' is not allowed: one of ['custom', 'custom_constrained_"),
    (lambda: sgi_run.formula_system(H="p**2/2", noise=["0.1*p"], unused=1.0), "system.unused=1.0 is not allowed"),
    (lambda: sgi_run.simulate(Kubo(nu=3), "midpoint", sgi_run.plan(paths=10, T=1)),
     "system.nu=3.0 is not allowed: 0 <= nu < 2 (underdamped)"),
    (lambda: sgi_run.simulate(Kubo(nu="x"), "midpoint", sgi_run.plan(paths=10, T=1)),
     "system.nu='x' is not allowed: a finite number"),
    (lambda: sgi_run.simulate(systems.HeavyTop(), "heun", sgi_run.plan(paths=10, T=1)),
     "integrator='heun' is not allowed: system 'HeavyTop' has structure 'lie_poisson'"),
    (lambda: sgi_run.simulate(Kubo(), "midpoint", sgi_run.plan(paths=10, T=1), executor="dusk"),
     "executor='dusk' is not allowed: one of ['dask', 'local', 'slurm']"),
    (lambda: sgi_run.simulate(Kubo(), "midpoint", sgi_run.plan(paths=10, T=1), cache="never"),
     "cache='never' is not allowed: one of ['reuse', 'refresh_stale', 'off']"),
    (lambda: sgi_run.simulate(Kubo(), "midpoint", sgi_run.plan(observables=["E"], paths=10, T=1)),
     "plan.observables='E' is not allowed: observables of Kubo"),
])
def test_a_bad_argument_is_one_line_naming_the_key_the_value_and_what_is_allowed(call, message, tmp_path,
                                                                                  monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sgi_run.ConfigError) as refused:
        call()
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)


@dataclasses.dataclass(frozen=True)
class Quartic(CanonicalSystem):
    """A system of a test's own: defined in an importable module, as a dask worker needs."""
    k: float = 1.0
    sigma: float = 0.1

    def hamiltonian(self, q, p):
        return jnp.sum(p**2) / 2 + self.k * jnp.sum(q**4) / 4

    def noise_hamiltonians(self, q, p):
        return jnp.array([self.sigma * jnp.sum(q)])

    def initial_state(self, key):
        return jnp.array([1.0, 0.0])


@pytest.fixture
def registered():
    """register_system for one test: the registry as it was after (restored in place: config holds it too)."""
    before = dict(systems.SYSTEMS)
    yield sgi_run.register_system
    systems.SYSTEMS.clear()
    systems.SYSTEMS.update(before)


@pytest.mark.slow
def test_a_system_of_ones_own_runs_once_registered_and_a_worker_finds_it(registered, tmp_path):
    plan = sgi_run.plan(paths=20, T=1)
    with pytest.raises(sgi_run.ConfigError, match="an instance of a registered class"):
        sgi_run.simulate(Quartic(), "midpoint", plan, output_root=tmp_path)
    registered("quartic", Quartic)
    registered("quartic", Quartic)      # a notebook cell run twice
    result = sgi_run.simulate(Quartic(k=0.5), "midpoint", plan, output_root=tmp_path)
    assert result.run_dir.parent.name == "quartic-midpoint" and result.ensemble.config.system.k == 0.5
    builder = SimulatorBuilder.of(result.ensemble.config, result.setup.plan)
    assert builder.system_class == (__name__, "Quartic")
    del systems.SYSTEMS["quartic"]      # a worker process: what it registers from the builder
    assert builder().system == Quartic(k=0.5)
    with pytest.raises(sgi_run.ConfigError, match="name='kubo' is not allowed: a name that is not a built-in"):
        registered("kubo", Quartic)
    with pytest.raises(sgi_run.ConfigError, match="cls=.* is not allowed: a System subclass"):
        registered("thing", dict)


def test_a_worker_cannot_import_a_class_defined_in_main(registered):
    InMain = dataclasses.make_dataclass("InMain", [("k", float, 1.0)], bases=(Quartic,), frozen=True)
    InMain.__module__ = "__main__"
    registered("in_main", InMain)
    cfg = sgi_run.config.run_config(InMain(), sgi_run.integrator("midpoint"), sgi_run.plan(paths=10, T=1),
                                    {"name": "dask"})
    with pytest.raises(sgi_run.ConfigError, match="executor='dask' is not allowed: local for the system InMain"):
        SimulatorBuilder.of(cfg, sgi_run.plan(paths=10, T=1))


# --- one step, in one's own JAX code ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("method", ["midpoint", "e1"])
def test_jit_and_vmap_of_step_give_the_engines_numbers(method, tmp_path):
    """Every kept path of a run, step by step from draw and initial_state: the engine's numbers (e1 takes dW and
    dZ, midpoint solves)."""
    kubo, integrator = Kubo(nu=0.1), sgi_run.integrator(method)
    dt, steps, paths = 0.1, 10, 6
    result = sgi_run.simulate(kubo, integrator, sgi_run.plan(paths=paths, dt=dt, T=1, keep_paths=paths, seed=7),
                              output_root=tmp_path)
    index = jnp.arange(paths)
    z = jax.vmap(lambda p: sgi_run.initial_state(kubo, 7, p))(index)
    step = jax.jit(jax.vmap(lambda z, xi: sgi_run.step(kubo, integrator, z, dt, xi)))
    for k in range(steps):
        z = step(z, jax.vmap(lambda p: sgi_run.draw(kubo, integrator, 7, p, k, dt))(index))
    kept = result.ensemble.paths
    np.testing.assert_allclose(np.stack([kept["q"][:, -1], kept["p"][:, -1]], axis=1), z, rtol=1e-13, atol=0)


def test_step_refuses_float32_saying_what_to_do():
    kubo, midpoint = Kubo(), sgi_run.integrator("midpoint")
    with jax.enable_x64(False), pytest.raises(sgi_run.ConfigError,
                                              match=r'call jax.config.update\("jax_enable_x64", True\) before'):
        sgi_run.step(kubo, midpoint, jnp.zeros(2), 0.1, jnp.zeros((1, 1)))


def test_compose_takes_a_config_directory_of_ones_own(tmp_path):
    (tmp_path / "plan").mkdir()
    (tmp_path / "plan" / "small.yaml").write_text("defaults:\n  - default\n  - _self_\npaths: 10\nT: 1.0\n")
    assert sgi_run.compose(["plan=small"], config_dir=tmp_path).plan.paths == 10
    with pytest.raises(sgi_run.ConfigError, match="--config-dir=.* is not allowed: an existing directory"):
        sgi_run.compose([], config_dir=tmp_path / "absent")
