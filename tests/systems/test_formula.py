"""Systems written as formulas in the config (sgi_run/systems/formula.py): the parser's whitelist and the
formula systems' numbers against the built-in systems they restate."""
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run.config import build_system
from sgi_run.core.errors import ConfigError
from sgi_run.systems.formula import FormulaSystem, jax_function, parse

NAMES = ["q", "p", "beta"]


# --- the parser --------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, refused", [
    ("__import__('os').system('echo hi')", "a call of '__import__('os').system'"),
    ("q.__class__", "an attribute"),
    ("open('x')", "a call of 'open'"),
    ("lambda: 1", "a lambda"),
    ("[q for q in p]", "a comprehension"),
    ("'text'", "the constant 'text'"),
    ("r*q", "the name 'r'"),
    ("gamma(q)", "a call of 'gamma'"),
    ("q +* p", "a syntax error"),
    ("I*q", "the name 'I'"),
    ("1j*q", "the constant 1j"),
    ("sqrt(-1)*q", "not a complex or infinite number"),
    ("q/0", "not a complex or infinite number"),
    ("p[0]", "a subscript"),
    ("q if p else 1", "Python's IfExp"),
    ("sin(q, p)", "sin with other than 1"),
    ("10**10**10", "not a finite float64"),
    ("1e999*q", "not a finite float64"),
    ("-" * 300 + "q", "nested more than"),
    ("(" * 300 + "q" + ")" * 300, "too many nested parentheses"),
])
def test_the_parser_refuses_anything_but_the_whitelist_in_one_line(text, refused):
    with pytest.raises(ConfigError) as err:
        parse("H", text, NAMES)
    message = str(err.value)
    assert "\n" not in message and message.startswith("H=") and refused in message
    assert "the names q, p, beta" in message and "sin, cos" in message   # what is allowed


def test_the_parser_never_runs_the_text(tmp_path, monkeypatch):
    """The refused call of os.system would have made a file: the text is parsed, not run."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError):
        parse("H", "__import__('os').system('touch made')", NAMES)
    assert not (tmp_path / "made").exists()


def test_the_parser_reads_the_whitelist():
    import sympy
    q, p, beta = sympy.symbols("q p beta", real=True)
    expression = parse("H", "-beta*(p**2 + q**2)/2 + sin(q)*exp(p) - abs(q) + atan2(q, p) + pi + 0.1", NAMES)
    assert expression == (-beta * (p**2 + q**2) / 2 + sympy.sin(q) * sympy.exp(p) - sympy.Abs(q)
                          + sympy.atan2(q, p) + sympy.pi + sympy.Rational(1, 10))


def test_a_formula_function_is_float64_under_grad_jit_and_vmap():
    f = jax_function(parse("H", "beta*(p**2 + q**2)/2 + 0.1*cos(q)", NAMES), NAMES)
    value = f(0.7, -1.3, 0.5)
    assert jnp.asarray(value).dtype == jnp.float64
    assert float(value) == pytest.approx(0.5 * (0.7**2 + 1.3**2) / 2 + 0.1 * np.cos(0.7), rel=1e-15)
    grad = jax.jit(jax.grad(f, argnums=(0, 1)))(0.7, -1.3, 0.5)
    assert grad[0].dtype == jnp.float64
    np.testing.assert_allclose(grad, [0.5 * 0.7 - 0.1 * np.sin(0.7), 0.5 * -1.3], rtol=1e-15)
    batch = jax.vmap(f, in_axes=(0, 0, None))(jnp.array([0.7, 1.0]), jnp.array([-1.3, 2.0]), 0.5)
    assert batch.dtype == jnp.float64 and batch.shape == (2,)


def test_a_literal_is_the_float64_it_names():
    """0.1 + 0.2 is kept exact (3/10) and divides to the float64 nearest 0.3; a literal to 17 digits stays itself."""
    f = jax_function(parse("F", "0.30000000000000004*q", ["q"]), ["q"])
    assert float(f(1.0)) == 0.30000000000000004


# --- the system --------------------------------------------------------------------------------------
def test_a_dimension_mismatch_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"^H='p\*\*2/2 \+ q\*\*2/2' .*the names q1, q2, p1, p2, .*not the name 'p'"):
        FormulaSystem(H="p**2/2 + q**2/2", noise=("q1",), dof=2)
    with pytest.raises(ConfigError, match=r"^F=.*a list of 2 formulas"):
        FormulaSystem(H="(p1**2 + p2**2 + q1**2 + q2**2)/2", noise=("q1",), F=("-p1",), dof=2)
    with pytest.raises(ConfigError, match=r"^noise_forcing=.*one forcing f_i per noise"):
        FormulaSystem(noise=("q", "p"), noise_forcing=("p",))


def test_a_parameter_no_formula_uses_is_refused_and_one_named_as_a_symbol_too():
    with pytest.raises(ConfigError, match=r"^zeta=0.3 .*a parameter its formulas use \(beta\)"):
        FormulaSystem(H="beta*p**2/2", parameters=(("beta", 1.0), ("zeta", 0.3)))
    with pytest.raises(ConfigError, match=r"^sin=1.0 "):
        FormulaSystem(parameters=(("sin", 1.0),))


@pytest.mark.parametrize("overrides, key", [
    (["system=kubo_formula", "system.H=q.__class__"], "system.H"),
    (["system=kubo_formula", "system.noise=[open(1)]"], "system.noise"),
    (["system=kubo_formula", "+system.zeta=0.3"], "system.zeta"),
    (["system=kubo_formula", "system.zeta=0.3"], "system.zeta"),
    (["system=kubo_formula", "system.parameters={beta: 1}"], "system.parameters"),
    (["system=kubo", "+system.zeta=0.3"], "system.zeta"),      # a built-in system takes no new key
])
def test_the_config_refuses_a_bad_formula_or_key_in_one_line(overrides, key):
    with pytest.raises(ConfigError) as err:
        sgi_run.compose(overrides)
    assert err.value.key == key and "\n" not in str(err.value)


def test_a_parameter_can_be_added_on_the_command_line():
    cfg = sgi_run.compose(["system=custom", "+system.omega=4", "system.H=p**2/2 + omega*q**2/2"])
    system = build_system(cfg.system)
    np.testing.assert_array_equal(system.drift(jnp.array([0.5, 1.0])), [1.0, -2.0])


def test_the_formula_system_pickles_by_its_texts():
    system = build_system(sgi_run.compose(["system=kubo_formula"]).system)
    again = pickle.loads(pickle.dumps(system))
    assert again == system and hash(again) == hash(system)
    z = jnp.array([0.7, -1.3])
    np.testing.assert_array_equal(again.ito_drift(z), system.ito_drift(z))


def _pair(formula, builtin, overrides=()):
    return tuple(build_system(sgi_run.compose([f"system={name}", *overrides]).system) for name in (formula, builtin))


PAIRS = [("kubo_formula", "kubo", ()), ("van_der_pol_formula", "van_der_pol", ()),
         ("kubo_formula", "kubo", ("system.beta=0.3",)), ("van_der_pol_formula", "van_der_pol", ("system.sigma=0.4",)),
         ("langevin_double_well_formula", "langevin_double_well", ()),
         ("langevin_double_well_formula", "langevin_double_well", ("system.c=0.3", "system.beta=2", "system.mass=2"))]


@pytest.mark.parametrize("formula, builtin, overrides", PAIRS)
def test_a_formula_file_has_the_builtin_fields(formula, builtin, overrides):
    ours, theirs = _pair(formula, builtin, overrides)
    assert ours.noises == theirs.noises
    np.testing.assert_array_equal(ours.initial_state(None), theirs.initial_state(None))
    for z in np.random.default_rng(0).normal(size=(5, 2)) * 2:
        for field in ("drift", "noise_fields", "ito_drift", "energy"):
            np.testing.assert_allclose(getattr(ours, field)(jnp.asarray(z)), getattr(theirs, field)(jnp.asarray(z)),
                                       rtol=1e-13, atol=1e-15, err_msg=field)


@pytest.mark.parametrize("formula, builtin, overrides, method", [
    *[(*pair, method) for pair in PAIRS for method in ("midpoint", "heun")],
    *[("langevin_double_well_formula", "langevin_double_well", overrides, method)
      for overrides in ((), ("system.c=0.3", "system.beta=2")) for method in ("midpoint", "svia", "svic")]])
def test_a_formula_file_steps_as_the_builtin(formula, builtin, overrides, method, make_integrator):
    """300 steps on the same Brownian increments: the same path to round-off."""
    integrator, dt, steps = make_integrator(method), 0.01, 300
    dw = np.sqrt(dt) * np.random.default_rng(1).normal(size=(steps, 1, 1))

    def path(system):
        step = lambda z, xi: (integrator.step(system, z, dt, xi)[0],) * 2
        return jax.jit(lambda z0: jax.lax.scan(step, z0, jnp.asarray(dw))[1])(system.initial_state(None))

    ours, theirs = _pair(formula, builtin, overrides)
    np.testing.assert_allclose(path(ours), path(theirs), rtol=1e-13, atol=1e-14)


def test_a_parameter_override_is_the_builtin_with_that_parameter():
    ours, theirs = _pair("kubo_formula", "kubo", ("system.beta=0.3",))
    assert dict(ours.parameters)["beta"] == 0.3 == theirs.beta
    z = jnp.array([0.7, -1.3])
    np.testing.assert_allclose(ours.noise_fields(z), theirs.noise_fields(z), rtol=1e-15)
    assert not np.allclose(ours.noise_fields(z), _pair("kubo_formula", "kubo")[0].noise_fields(z))


def test_a_run_of_kubo_formula_is_the_run_of_kubo(runs_root):
    """Through the whole pipeline (config, engine, statistics) at the same seed."""
    common = runs_root + ["integrator=midpoint", "plan.dt=0.05", "plan.T=2", "plan.output_dt=1", "plan.paths=64",
                          "cache=off"]
    ours, theirs = (sgi_run.run(sgi_run.compose([f"system={name}", *common])).ensemble
                    for name in ("kubo_formula", "kubo"))
    np.testing.assert_allclose(ours.mean("H"), theirs.mean("H"), rtol=1e-13)
    np.testing.assert_allclose(ours.paths["q"], theirs.paths["q"], rtol=1e-13, atol=1e-14)


def test_two_degrees_of_freedom():
    """q1, p1, q2, p2 and a forcing per degree of freedom: two coupled oscillators."""
    system = FormulaSystem(H="(p1**2 + p2**2)/2 + (q1**2 + q2**2)/2 + k*q1*q2", noise=("s*q1", "s*p2"),
                           F=("-c*p1", "0"), noise_forcing=(("0", "0"), ("0", "c*q2")), dof=2,
                           q0=(1.0, 0.5), p0=0.0, parameters=(("c", 0.1), ("k", 0.2), ("s", 0.3)))
    z = jnp.array([1.0, 0.5, 0.3, -0.2])
    np.testing.assert_allclose(system.drift(z), [0.3, -0.2, -1.0 - 0.2 * 0.5 - 0.1 * 0.3, -0.5 - 0.2 * 1.0],
                               rtol=1e-15)
    np.testing.assert_allclose(system.noise_fields(z), [[0, 0, -0.3, 0], [0, 0.3, 0, 0.1 * 0.5]], rtol=1e-15)
    np.testing.assert_array_equal(system.initial_state(None), [1.0, 0.5, 0.0, 0.0])


@pytest.mark.parametrize("overrides", [(), ("system.beta=2",)])
def test_the_langevin_formula_has_the_builtins_force_and_boltzmann_gibbs_means(overrides):
    ours, theirs = _pair("langevin_double_well_formula", "langevin_double_well", overrides)
    for q in (-1.7, 0.2, 1.3):
        np.testing.assert_allclose(ours.potential_force(jnp.array([q])), theirs.potential_force(jnp.array([q])),
                                   rtol=1e-15)
    for observable in ("H", "two_H", "kinetic_temperature"):
        assert ours.ergodic_mean(observable) == pytest.approx(theirs.ergodic_mean(observable), rel=1e-11)
    assert ours.overdamped_svia_mean("two_H") == pytest.approx(theirs.overdamped_svia_mean("two_H"), rel=1e-11)


def test_a_langevin_potential_is_a_formula_of_the_positions_alone():
    with pytest.raises(ConfigError, match=r"^system.potential='q\*p' .*not the name 'p'"):
        sgi_run.compose(["system=custom_langevin", "system.potential=q*p"])
    cfg = sgi_run.compose(["system=custom_langevin", "+system.k=3", "system.potential='k*(1 - cos(q))'",
                           "integrator=svia"])
    np.testing.assert_allclose(build_system(cfg.system).potential_force(jnp.array([0.5])), [-3 * np.sin(0.5)],
                               rtol=1e-15)


def test_a_potential_that_does_not_confine_has_no_boltzmann_gibbs_mean():
    """exp(-beta U) of U = -q^2 is not integrable: no reference, rather than a wrong one."""
    system = build_system(sgi_run.compose(["system=custom_langevin", "system.potential=-q**2"]).system)
    assert system.ergodic_mean("H") is None


def _cli(tmp_path, *args):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "sgi_run.cli", *args, f"output_root={tmp_path}/runs"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_formula_parameter_is_swept_and_cached_like_a_builtins(tmp_path):
    out = _cli(tmp_path, "-m", "system=kubo_formula", "system.beta=0.3,0.5", "plan.paths=16", "plan.T=1")
    assert out.returncode == 0, out.stderr
    assert len(list((tmp_path / "runs" / "custom-midpoint").glob("*/ensemble.h5"))) == 2
    again = _cli(tmp_path, "system=kubo_formula", "system.beta=0.3", "plan.paths=16", "plan.T=1")
    assert again.returncode == 0 and "cached" in again.stdout


def test_the_readmes_command_lines_compose(tmp_path):
    """As a shell passes them: Hydra reads a quoted formula with parentheses and spaces as one value."""
    out = _cli(tmp_path, "system=custom", "+system.omega=2", "system.H='p**2/2 + omega**2*q**2/2'",
               "system.noise=[0.1*q]", "--cfg", "job")
    assert out.returncode == 0, out.stderr
    assert "H: p**2/2 + omega**2*q**2/2" in out.stdout and "omega: 2" in out.stdout
    refused = _cli(tmp_path, "system=custom", "system.H='__import__(\"os\").system(\"echo hi\")'", "--cfg", "job")
    assert refused.returncode != 0 and refused.stderr.count("\n") == 1 and "system.H=" in refused.stderr
    assert "hi\n" not in refused.stdout
